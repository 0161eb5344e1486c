//! Tests of scoring.

#![allow(clippy::unwrap_used)]

use crate::framework::Framework;
use crate::framework::plugins::testutil::{node, pod, snapshot};
use crate::schedule_one::Algorithm;

/// v1.22 `NewFramework`: Σ weight × 100 must fit in an int64.
#[test]
fn weights_that_could_overflow_are_refused() {
    let policy = crate::policy::parse_policy(
        "inline",
        r#"{"kind":"Policy","apiVersion":"v1","priorities":[
            {"name":"LeastRequestedPriority","weight":900000000000000000}]}"#,
    )
    .unwrap()
    .resolved;
    assert!(matches!(
        Framework::from_policy(&policy),
        Err(crate::framework::FrameworkError::TotalScoreOverflow)
    ));
}

/// The fused, memoised resource scoring (no `explain`) picks exactly the node that the
/// per-plugin path (`explain`) picks, on a heterogeneous cluster where many nodes share a
/// state and many do not, pod after pod.
#[test]
fn fused_scoring_matches_the_per_plugin_path() {
    let policy = crate::policy::parse_policy(
        "inline",
        r#"{"kind":"Policy","apiVersion":"v1","predicates":[{"name":"PodFitsResources"}],
           "priorities":[{"name":"LeastRequestedPriority","weight":2},
                         {"name":"BalancedResourceAllocation","weight":3},
                         {"name":"MostRequestedPriority","weight":1}]}"#,
    )
    .unwrap()
    .resolved;
    let fwk = Framework::from_policy(&policy).unwrap();
    let mut x: u64 = 7;
    let mut rnd = |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    let sizes = [("2", "4Gi"), ("4", "16Gi"), ("8", "32Gi"), ("16", "64Gi")];
    let nodes: Vec<_> = (0..300)
        .map(|i| {
            let (c, m) = sizes[(rnd(4)) as usize];
            node(&format!("n{i}")).allocatable(&[("cpu", c), ("memory", m), ("pods", "110")])
        })
        .collect();
    let mut snap = snapshot(nodes, &[]);
    let mut fused = Algorithm::new(100, 42);
    let mut reference = Algorithm::new(100, 42);
    for k in 0..400 {
        let cpu = format!("{}m", 50 + rnd(900));
        let mem = format!("{}Mi", 64 + rnd(2000));
        let p = if k % 5 == 0 {
            pod(&format!("p{k}")).container(&[])
        } else {
            pod(&format!("p{k}")).container(&[("cpu", &cpu), ("memory", &mem)])
        }
        .info();
        let a = fused.schedule(&fwk, &snap, &p, false);
        let b = reference.schedule(&fwk, &snap, &p, true);
        match (a, b) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a.node, b.node, "pod {k}");
                let scores = b.scores.unwrap();
                let best = scores.values().map(|s| s.total).max().unwrap();
                assert_eq!(scores[&a.node].total, best, "pod {k}");
                snap.add_pod(std::sync::Arc::new(p), Some(&a.node), None)
                    .unwrap();
            }
            (Err(a), Err(b)) => assert_eq!(a, b),
            (a, b) => panic!("pod {k}: {a:?} vs {b:?}"),
        }
    }
}
