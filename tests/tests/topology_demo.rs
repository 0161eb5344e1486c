//! `simulate` on `config/topology-demo-cluster.yaml` with `config/topology-policy.json`:
//! required pod anti-affinity spreads replicas one per node, a zone spread constraint steers
//! replicas to the emptier zone, a `namespaceSelector` reads Namespace labels from the cluster
//! file, and `--explain` shows both topology priorities.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use scheduler::policy;
use scheduler::sim::{self, Cluster, PodOutcome, PodStatus, SimulationConfig};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn cluster() -> Cluster {
    let mut cluster = Cluster::default();
    sim::files::read_cluster_file(
        &mut cluster,
        &root().join("config/topology-demo-cluster.yaml"),
    )
    .unwrap();
    cluster
}

fn run(cluster: Cluster, seed: u64, explain: bool) -> BTreeMap<String, PodOutcome> {
    let loaded = policy::load_policy_file(&root().join("config/topology-policy.json")).unwrap();
    assert_eq!(loaded.resolved.hard_pod_affinity_symmetric_weight, 10);
    let cfg = SimulationConfig {
        scheduler_name: "mini-scheduler".into(),
        seed,
        percentage_of_nodes_to_score: 0,
        explain,
    };
    let outcome = sim::simulate(cluster, &loaded.resolved, &cfg).unwrap();
    // The incremental affinity node sets match the pods after every placement.
    assert!(outcome.snapshot.affinity_index_consistent());
    outcome
        .report
        .pods
        .into_iter()
        .map(|p| (format!("{}/{}", p.namespace, p.name), p))
        .collect()
}

fn zone(node: &str) -> &'static str {
    match node {
        "node-a1" | "node-a2" => "zone-a",
        "node-b1" | "node-b2" => "zone-b",
        _ => "none",
    }
}

#[test]
fn anti_affinity_spreads_replicas_and_spread_constraints_balance_zones() {
    for seed in 0..8 {
        let pods = run(cluster(), seed, false);
        // One web replica per node; the sixth finds every node taken.
        let web: BTreeSet<String> = (0..5)
            .map(|i| pods[&format!("shop/web-{i}")].node.clone().unwrap())
            .collect();
        assert_eq!(web.len(), 5, "seed {seed}: {web:?}");
        assert_eq!(pods["shop/web-5"].status, PodStatus::Unschedulable);
        assert_eq!(
            pods["shop/web-5"].message,
            "0/5 nodes are available: 5 node(s) didn't match pod affinity/anti-affinity rules, \
             5 node(s) didn't match pod anti-affinity rules."
        );
        // Two cache pods already run in zone-a: the next two must go to zone-b, and the zones
        // stay within maxSkew 1 after the third.
        for p in ["shop/cache-0", "shop/cache-1"] {
            assert_eq!(
                zone(pods[p].node.as_deref().unwrap()),
                "zone-b",
                "seed {seed}: {p}"
            );
        }
        let third = zone(pods["shop/cache-2"].node.as_deref().unwrap());
        assert!(
            third == "zone-a" || third == "zone-b",
            "seed {seed}: {third}"
        );
        // The ScheduleAnyway hostname constraint puts cache-0 and cache-1 on different nodes.
        assert_ne!(pods["shop/cache-0"].node, pods["shop/cache-1"].node);
        // namespaceSelector team=web finds db-0 (shop) in zone-b.
        assert_eq!(
            zone(pods["batch/reporter"].node.as_deref().unwrap()),
            "zone-b"
        );
        // Preferred affinity to db-0's node.
        assert_eq!(pods["shop/metrics"].node.as_deref(), Some("node-b2"));
    }
}

#[test]
fn explain_shows_topology_failures_and_scores() {
    let pods = run(cluster(), 0, true);
    let cache0 = &pods["shop/cache-0"];
    let diag = cache0.diagnosis.as_ref().unwrap();
    for n in ["node-a1", "node-a2"] {
        assert_eq!(
            diag[n],
            vec!["node(s) didn't match pod topology spread constraints".to_string()]
        );
    }
    assert_eq!(
        diag["node-c1"],
        vec![
            "node(s) didn't match pod topology spread constraints (missing required label)"
                .to_string()
        ]
    );
    let scores = cache0.scores.as_ref().unwrap();
    assert_eq!(
        scores.keys().cloned().collect::<Vec<_>>(),
        ["node-b1", "node-b2"]
    );
    for s in scores.values() {
        assert_eq!(
            s.plugins.keys().cloned().collect::<Vec<_>>(),
            [
                "EvenPodsSpreadPriority",
                "InterPodAffinityPriority",
                "LeastRequestedPriority"
            ]
        );
        // EvenPodsSpreadPriority has weight 2.
        assert_eq!(
            s.total,
            2 * s.plugins["EvenPodsSpreadPriority"]
                + s.plugins["InterPodAffinityPriority"]
                + s.plugins["LeastRequestedPriority"]
        );
    }
    // cache-1: node-b1 already holds cache-0, so the hostname spread scores it 0.
    let cache1 = pods["shop/cache-1"].scores.as_ref().unwrap();
    let b1 = &cache1[pods["shop/cache-0"].node.as_deref().unwrap()];
    assert_eq!(b1.plugins["EvenPodsSpreadPriority"], 0);
    // metrics: preferred pod affinity to the db pod's node.
    let metrics = pods["shop/metrics"].scores.as_ref().unwrap();
    assert_eq!(metrics["node-b2"].plugins["InterPodAffinityPriority"], 100);
    assert_eq!(metrics["node-a1"].plugins["InterPodAffinityPriority"], 0);
    // reporter: the nodes outside zone-b fail the required affinity.
    assert_eq!(
        pods["batch/reporter"].diagnosis.as_ref().unwrap()["node-a1"],
        vec![
            "node(s) didn't match pod affinity/anti-affinity rules".to_string(),
            "node(s) didn't match pod affinity rules".to_string()
        ]
    );
}

#[test]
fn namespace_selector_needs_the_namespace_objects() {
    let mut c = cluster();
    assert_eq!(c.namespaces.len(), 2);
    c.namespaces.clear();
    let pods = run(c, 0, false);
    assert_eq!(pods["batch/reporter"].status, PodStatus::Unschedulable);
    assert_eq!(
        pods["batch/reporter"].message,
        "0/5 nodes are available: 5 node(s) didn't match pod affinity rules, \
         5 node(s) didn't match pod affinity/anti-affinity rules."
    );
}
