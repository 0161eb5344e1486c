//! The workers change nothing: the same pods on the same nodes, with the same GPU devices,
//! messages and (explained) scores, for one worker and for several, on the bundled demo cluster
//! and on a slice of the openb trace (1,213 GPU nodes: several chunks of the search, so the
//! rounds of several chunks and the stop at `numFeasibleNodesToFind` inside a round are
//! exercised), with the adaptive percentage of nodes to score and with every node scored.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use crate::policy;
use crate::profile::Profile;
use crate::sim::{self, Cluster, Simulation, SimulationConfig};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn sample_profile() -> Profile {
    let loaded = policy::load_policy_file(&root().join("config/policy-config-file.json")).unwrap();
    let resolved = loaded
        .resolved
        .with_feature_gates(&policy::FeatureGates::default());
    Profile::from_resolved(resolved, "policy").unwrap()
}

/// Every outcome of a run of `cluster` with `workers` workers, as JSON (all fields compared).
fn outcomes(cluster: &Cluster, workers: usize, pct: i32, explain: bool) -> Vec<serde_json::Value> {
    let cfg = SimulationConfig {
        scheduler_name: "mini-scheduler".into(),
        seed: 3,
        percentage_of_nodes_to_score: pct,
        explain,
    };
    let mut run = Simulation::new(cluster.clone(), &sample_profile(), &cfg).unwrap();
    run.set_workers_exactly(workers);
    run.map(|o| serde_json::to_value(&o).unwrap()).collect()
}

fn assert_same_for_any_workers(cluster: &Cluster, pct: i32, explain: bool, what: &str) {
    let one = outcomes(cluster, 1, pct, explain);
    assert!(
        one.iter().any(|o| o["status"] == "Scheduled"),
        "{what}: nothing scheduled"
    );
    for workers in [2, 3, 8] {
        let many = outcomes(cluster, workers, pct, explain);
        assert_eq!(one.len(), many.len(), "{what}");
        for (a, b) in one.iter().zip(&many) {
            assert_eq!(a, b, "{what}, {workers} workers");
        }
    }
}

#[test]
fn demo_cluster_placements_do_not_depend_on_the_workers() {
    let mut cluster = Cluster::default();
    sim::files::read_cluster_file(&mut cluster, &root().join("config/demo-cluster.yaml")).unwrap();
    for (pct, explain) in [(0, false), (100, false), (100, true)] {
        assert_same_for_any_workers(&cluster, pct, explain, "demo cluster");
    }
}

#[test]
fn openb_placements_do_not_depend_on_the_workers() {
    let dir = root().join("data/openb");
    let mut cluster = Cluster::default();
    sim::openb::read_nodes(&mut cluster, &dir.join("openb_node_list_gpu_node.csv")).unwrap();
    sim::openb::read_pods(
        &mut cluster,
        &dir.join("openb_pod_list_default.csv"),
        "mini-scheduler",
    )
    .unwrap();
    assert_eq!(cluster.nodes.len(), 1213);
    // A slice of the trace: enough pods that nodes fill and scores differ.
    cluster.pods.truncate(150);
    for (pct, explain) in [(0, false), (100, false), (30, true)] {
        assert_same_for_any_workers(&cluster, pct, explain, "openb slice");
    }
}
