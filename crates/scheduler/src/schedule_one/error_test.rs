//! Tests of the FitError message.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use super::*;
use crate::framework::plugins::testutil::{node, pod, snapshot};
use crate::framework::plugins::{
    node_ports, node_ports::NodePorts, node_resources_fit::NodeResourcesFit,
};
use crate::framework::{Code, Framework, PodInfo};
use crate::schedule_one::Algorithm;
use crate::snapshot::Snapshot;

fn fit_error(num_all_nodes: usize, statuses: &[(&str, Status)]) -> FitError {
    FitError::new(
        "default/p".into(),
        num_all_nodes,
        NodeStatuses::Named(
            statuses
                .iter()
                .map(|(n, s)| (n.to_string(), s.clone()))
                .collect(),
        ),
    )
}

fn unschedulable(reasons: &[&'static str]) -> Status {
    Status {
        code: Code::Unschedulable,
        reasons: reasons.iter().map(|r| (*r).into()).collect(),
        plugin: "",
    }
}

fn schedule_err(fwk: &Framework, snap: &Snapshot, p: &PodInfo) -> FitError {
    match Algorithm::new(0, 1).schedule(fwk, snap, p, false) {
        Err(ScheduleError::Fit(e)) => e,
        other => panic!("expected a FitError, got {other:?}"),
    }
}

/// The `FitError.Error()` message (`0/%v nodes are available: %v.`, reasons counted per
/// node status and sorted as whole `"COUNT REASON"` strings) as v1.22 builds it, from
/// `generic-scheduler.md` (format read from v1.19–v1.21 `core.FitError` and post-1.22
/// `framework.FitError`; the post-1.22 `PostFilterMsg` suffix is not part of v1.22). Cases:
/// - `scheduler_test.go` `TestSchedulerFailedSchedulingReasons` (v1.22 era; 100 nodes with
///   cpu 2 / memory 100 / pods 10, pod asking cpu 4 / memory 500; the node count was recalled
///   in the note, not re-verified): every node fails NodeResourcesFit with both reasons, and
///   the message stays within 150 characters;
/// - `TestSchedulerNoPhantomPodAfterDelete` (v1.22 shape): one node, NodePorts conflict;
/// - `makePredicateError` format (`"0/1 nodes are available: %v."`) with the VolumeBinding
///   reason of `TestSchedulerWithVolumeBinding` (format only);
/// - derived from the `Error()` source, not an upstream row: lexicographic order of the
///   `"COUNT REASON"` strings, one count per reason of multi-reason statuses, and
///   `NumAllNodes` counting every node, not only the failed ones;
/// - `ErrNoNodesAvailable` text.
#[test]
fn test_fit_error_message() {
    // TestSchedulerFailedSchedulingReasons.
    let nodes: Vec<_> = (0..100)
        .map(|i| {
            let r = [("cpu", "2"), ("memory", "100"), ("pods", "10")];
            node(&format!("machine{i}")).capacity(&r).allocatable(&r)
        })
        .collect();
    let snap = snapshot(nodes, &[]);
    let fwk = Framework {
        filters: vec![Box::new(NodeResourcesFit::default())],
        scores: vec![],
        run_all_filters: false,
    };
    let p = pod("p")
        .container(&[("cpu", "4"), ("memory", "500")])
        .info();
    let err = schedule_err(&fwk, &snap, &p);
    assert_eq!(err.num_all_nodes, 100);
    assert_eq!(err.num_failed(), 100);
    let by_name = err.node_to_status(&snap);
    assert_eq!(by_name.len(), 100);
    assert!(by_name.contains_key("machine7"));
    for (n, s) in &by_name {
        assert_eq!(s.code, Code::Unschedulable, "{n}");
        assert_eq!(
            s.reasons,
            ["Insufficient cpu", "Insufficient memory"],
            "{n}"
        );
        assert_eq!(s.plugin, "NodeResourcesFit", "{n}");
    }
    let msg = err.to_string();
    assert_eq!(
        msg,
        "0/100 nodes are available: 100 Insufficient cpu, 100 Insufficient memory."
    );
    assert!(
        msg.len() <= 150,
        "message is too spammy: {} chars",
        msg.len()
    );

    // TestSchedulerNoPhantomPodAfterDelete: the port is taken by a pod on the only node.
    let mut snap = snapshot(vec![node("machine1")], &[]);
    let existing = pod("existing")
        .node("machine1")
        .host_port("", "TCP", 8080)
        .info();
    snap.add_pod(Arc::new(existing), None, None).unwrap();
    let fwk = Framework {
        filters: vec![Box::new(NodePorts)],
        scores: vec![],
        run_all_filters: false,
    };
    let p = pod("p").host_port("", "TCP", 8080).info();
    let err = schedule_err(&fwk, &snap, &p);
    assert_eq!(
        err.node_to_status(&snap)["machine1"].plugin,
        node_ports::NAME
    );
    assert_eq!(
        err.to_string(),
        "0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports."
    );

    // makePredicateError(failReason) format.
    let err = fit_error(
        1,
        &[(
            "machine1",
            unschedulable(&["node(s) had volume node affinity conflict"]),
        )],
    );
    assert_eq!(
        err.to_string(),
        "0/1 nodes are available: 1 node(s) had volume node affinity conflict."
    );

    // Derived from FitError.Error(): "10 ..." sorts before "2 ..." and "9 ..."; a node with
    // two reasons counts once for each; NumAllNodes is every node (25), not the 21 failed.
    let mut statuses = Vec::new();
    for i in 0..10 {
        statuses.push((format!("mem{i}"), unschedulable(&["Insufficient memory"])));
    }
    for i in 0..2 {
        statuses.push((
            format!("both{i}"),
            unschedulable(&["Insufficient cpu", "Insufficient memory"]),
        ));
    }
    for i in 0..9 {
        statuses.push((
            format!("affinity{i}"),
            Status::new(
                Code::UnschedulableAndUnresolvable,
                "node(s) didn't match Pod's node affinity/selector",
            ),
        ));
    }
    let statuses: Vec<(&str, Status)> = statuses
        .iter()
        .map(|(n, s)| (n.as_str(), s.clone()))
        .collect();
    assert_eq!(
        fit_error(25, &statuses).to_string(),
        "0/25 nodes are available: 12 Insufficient memory, 2 Insufficient cpu, \
         9 node(s) didn't match Pod's node affinity/selector."
    );

    // ErrNoNodesAvailable.
    assert_eq!(
        ScheduleError::NoNodesAvailable.to_string(),
        "no nodes available to schedule pods"
    );
}
