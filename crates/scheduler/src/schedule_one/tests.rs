//! Tests of the whole cycle.

#![allow(clippy::unwrap_used)]

use super::testutil::{ByName, codes, framework_of};
use super::*;
use crate::framework::Status;
use crate::framework::plugins::testutil::{node, pod, snapshot};
use crate::model::NodeInfo;

/// Absurd quantities saturate instead of wrapping: the pod fits nowhere, no panic.
#[test]
fn huge_requests_do_not_overflow() {
    let fwk = Framework::from_policy(&crate::policy::default_provider()).unwrap();
    let snap = snapshot(
        vec![node("n1").allocatable(&[("cpu", "4"), ("memory", "8Gi"), ("pods", "110")])],
        &[pod("r").container(&[("memory", "1Gi")]).node("n1")],
    );
    let mut algo = Algorithm::new(100, 1);
    for p in [
        pod("a")
            .container(&[("memory", "5E")])
            .container(&[("memory", "5E")]),
        pod("b").container(&[("memory", "9223372036854775807")]),
    ] {
        let p = p.info();
        match algo.schedule(&fwk, &snap, &p, false) {
            Err(ScheduleError::Fit(fe)) => assert_eq!(
                fe.to_string(),
                "0/1 nodes are available: 1 Insufficient memory."
            ),
            other => panic!("{other:?}"),
        }
    }
}

/// The extension points each outcome reaches, as v1.22 observes them
/// (`scheduler_framework_extension_point_duration_seconds`): RunPreFilterPlugins,
/// findNodesThatPassFilters (Success unless a filter errs: nodes that do not fit are no
/// error), RunPreScorePlugins and RunScorePlugins (not run for a single feasible node).
#[test]
fn cycle_timings_cover_the_points_the_cycle_reached() {
    use Code::{Error, Success, UnschedulableAndUnresolvable};
    let fwk = Framework::from_policy(&crate::policy::default_provider()).unwrap();
    let big = |n: &str| node(n).allocatable(&[("cpu", "4"), ("memory", "8Gi"), ("pods", "110")]);
    let small = pod("a").container(&[("cpu", "1")]).info();
    let mut algo = Algorithm::new(100, 1);

    let two = snapshot(vec![big("n1"), big("n2")], &[]);
    algo.schedule(&fwk, &two, &small, false).unwrap();
    assert_eq!(codes(algo.last_timings()), [Some(Success); 4]);

    let one = snapshot(vec![big("n1")], &[]);
    algo.schedule(&fwk, &one, &small, false).unwrap();
    assert_eq!(
        codes(algo.last_timings()),
        [Some(Success), Some(Success), None, None]
    );

    let huge = pod("h").container(&[("cpu", "100")]).info();
    assert!(matches!(
        algo.schedule(&fwk, &two, &huge, false),
        Err(ScheduleError::Fit(_))
    ));
    assert_eq!(
        codes(algo.last_timings()),
        [Some(Success), Some(Success), None, None]
    );

    let empty = snapshot(vec![], &[]);
    assert!(matches!(
        algo.schedule(&fwk, &empty, &small, false),
        Err(ScheduleError::NoNodesAvailable)
    ));
    assert_eq!(codes(algo.last_timings()), [None; 4]);

    // A PreFilter that rejects the pod ends PreFilter with its code.
    struct Rejects;
    impl crate::framework::FilterPlugin for Rejects {
        fn name(&self) -> &'static str {
            "Rejects"
        }
        fn pre_filter(&self, _: &mut CycleState, _: &PodInfo, _: &Snapshot) -> Status {
            Status::new(UnschedulableAndUnresolvable, "never")
        }
        fn filter(&self, _: &CycleState, _: &PodInfo, _: &NodeInfo) -> Status {
            Status::success()
        }
    }
    let rejecting = framework_of(vec![Box::new(Rejects)], false);
    assert!(algo.schedule(&rejecting, &two, &small, false).is_err());
    assert_eq!(
        codes(algo.last_timings()),
        [Some(UnschedulableAndUnresolvable), None, None, None]
    );

    // A filter Error: Filter ends with Error.
    let broken = framework_of(vec![ByName::boxed("Broken", Error, &["n1"])], false);
    assert!(algo.schedule(&broken, &two, &small, false).is_err());
    assert_eq!(
        codes(algo.last_timings()),
        [Some(Success), Some(Error), None, None]
    );
}
