//! `simulate` on the bundled demo cluster: each predicate and priority visible in one run, with
//! kube-scheduler's FailedScheduling texts.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use scheduler::policy;
use scheduler::sim::{self, Cluster, PodOutcome, PodStatus, SimulationConfig};

/// `simulate` as the binary runs it: the sample policy under the default feature gates.
fn run(seed: u64, explain: bool) -> Vec<PodOutcome> {
    run_with(seed, explain, &policy::FeatureGates::default())
}

fn run_with(seed: u64, explain: bool, gates: &policy::FeatureGates) -> Vec<PodOutcome> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut cluster = Cluster::default();
    sim::files::read_cluster_file(&mut cluster, &root.join("config/demo-cluster.yaml")).unwrap();
    let mut loaded =
        policy::load_policy_file(&root.join("config/policy-config-file.json")).unwrap();
    loaded.resolved = loaded.resolved.with_feature_gates(gates);
    let cfg = SimulationConfig {
        scheduler_name: "mini-scheduler".into(),
        seed,
        percentage_of_nodes_to_score: 0,
        explain,
    };
    sim::simulate(cluster, &loaded.resolved, &cfg)
        .unwrap()
        .report
        .pods
}

fn by_name(pods: &[PodOutcome]) -> BTreeMap<String, PodOutcome> {
    pods.iter()
        .map(|p| (format!("{}/{}", p.namespace, p.name), p.clone()))
        .collect()
}

#[test]
fn demo_placements_follow_the_predicates() {
    let pods = by_name(&run(0, false));
    // nodeSelector disktype=ssd leaves only node-a1.
    assert_eq!(pods["shop/db-0"].node.as_deref(), Some("node-a1"));
    // hostPort 80 is taken on node-b1 by the running ingress-0.
    assert_eq!(pods["kube-system/ingress-1"].status, PodStatus::Scheduled);
    assert_ne!(
        pods["kube-system/ingress-1"].node.as_deref(),
        Some("node-b1")
    );
    // Only the tainted V100 node takes GPU pods; devices are chosen per pod.
    assert_eq!(pods["ml/train-0"].node.as_deref(), Some("gpu-b3"));
    assert_eq!(pods["ml/train-0"].gpu_indexes, Some(vec![0, 1]));
    assert_eq!(pods["ml/notebook-0"].node.as_deref(), Some("gpu-b3"));
    assert_eq!(pods["ml/notebook-0"].gpu_indexes, Some(vec![2]));
    // The exact FailedScheduling texts.
    assert_eq!(
        pods["default/batch-huge"].message,
        "0/6 nodes are available: 1 node(s) were unschedulable, 2 Insufficient memory, 5 Insufficient cpu."
    );
    assert_eq!(
        pods["default/pinned"].message,
        "0/6 nodes are available: 1 node(s) were unschedulable, 5 node(s) didn't match Pod's node affinity/selector."
    );
    assert_eq!(pods["default/other-scheduler"].status, PodStatus::Skipped);
    assert_eq!(pods["default/besteffort"].status, PodStatus::Scheduled);
    // The ReplicaSet's third replica goes to zone eu-west-b, which has none yet. The fourth:
    // PodTopologySpread's system defaults (DefaultPodTopologySpread on, v1.22's default) still
    // prefer node-b1 (90 against 80) but not by enough to beat node-a2's resource scores; the
    // SelectorSpread plugin (gate off) weighs the zone more and keeps it on node-b1.
    assert_eq!(pods["shop/web-7d9f-ccccc"].node.as_deref(), Some("node-b1"));
    assert_eq!(pods["shop/web-7d9f-ddddd"].node.as_deref(), Some("node-a2"));
    let off = by_name(&run_with(
        0,
        false,
        &policy::FeatureGates {
            default_pod_topology_spread: false,
        },
    ));
    for p in ["shop/web-7d9f-ccccc", "shop/web-7d9f-ddddd"] {
        assert_eq!(off[p].node.as_deref(), Some("node-b1"), "{p}");
    }
}

#[test]
fn queue_order_is_priority_then_creation_time() {
    let pods = run(0, false);
    let queued: Vec<String> = pods
        .iter()
        .filter(|p| p.status != PodStatus::Skipped)
        .map(|p| p.name.clone())
        .collect();
    // db-0 has priority 1000; the others have priority 0 and follow creationTimestamp.
    assert_eq!(
        queued,
        [
            "db-0",
            "web-7d9f-ccccc",
            "web-7d9f-ddddd",
            "ingress-1",
            "train-0",
            "notebook-0",
            "batch-huge",
            "pinned",
            "besteffort"
        ]
    );
}

#[test]
fn explain_reports_every_node() {
    let pods = by_name(&run(0, true));
    let db = &pods["shop/db-0"];
    let diag = db.diagnosis.as_ref().unwrap();
    assert_eq!(diag.len(), 5, "{diag:?}");
    assert_eq!(
        diag["node-b2"],
        vec!["node(s) were unschedulable".to_string()]
    );
    let scores = db.scores.as_ref().unwrap();
    let a1 = &scores["node-a1"];
    assert_eq!(
        a1.plugins.keys().cloned().collect::<Vec<_>>(),
        vec![
            "BalancedResourceAllocation".to_string(),
            "LeastRequestedPriority".to_string(),
            "ServiceSpreadingPriority".to_string()
        ]
    );
    assert_eq!(a1.total, a1.plugins.values().sum::<i64>());
}

#[test]
fn same_seed_same_placements() {
    let a: Vec<_> = run(7, false).into_iter().map(|p| p.node).collect();
    let b: Vec<_> = run(7, false).into_iter().map(|p| p.node).collect();
    assert_eq!(a, b);
}
