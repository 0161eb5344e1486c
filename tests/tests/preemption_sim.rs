//! `simulate` on the bundled `config/examples/preemption.yaml`: PriorityClasses resolved as the
//! admission plugin would, a PodDisruptionBudget steering the choice of node, the victims'
//! `Preempted` outcomes and the preemptor's nomination.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use scheduler::policy;
use scheduler::sim::{self, Cluster, PodOutcome, PodStatus, SimulationConfig};

fn run(seed: u64, explain: bool) -> sim::Report {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut cluster = Cluster::default();
    sim::files::read_cluster_file(&mut cluster, &root.join("config/examples/preemption.yaml"))
        .unwrap();
    let loaded = policy::load_policy_file(&root.join("config/policy-config-file.json")).unwrap();
    let resolved = loaded
        .resolved
        .with_feature_gates(&policy::FeatureGates::default());
    let cfg = SimulationConfig {
        scheduler_name: "mini-scheduler".into(),
        seed,
        percentage_of_nodes_to_score: 0,
        explain,
    };
    sim::simulate(cluster, &resolved, &cfg).unwrap().report
}

fn last_by_name(pods: &[PodOutcome]) -> BTreeMap<String, PodOutcome> {
    pods.iter()
        .map(|p| (format!("{}/{}", p.namespace, p.name), p.clone()))
        .collect()
}

#[test]
fn the_preemptor_evicts_the_unprotected_pods_and_takes_their_node() {
    for seed in 0..6 {
        let report = run(seed, false);
        assert!(report.warnings.is_empty(), "{:?}", report.warnings);
        let pods = last_by_name(&report.pods);
        let job = &pods["jobs/critical-job"];
        assert_eq!(job.status, PodStatus::Scheduled, "seed {seed}");
        assert_eq!(job.node.as_deref(), Some("node-3"));
        assert_eq!(job.nominated_node_name.as_deref(), Some("node-3"));
        for v in ["jobs/batch-3", "jobs/batch-4"] {
            assert_eq!(pods[v].status, PodStatus::Preempted, "{v}");
            assert_eq!(pods[v].node.as_deref(), Some("node-3"));
            assert_eq!(
                pods[v].message,
                "Preempted by jobs/critical-job on node node-3"
            );
        }
        // The victims' outcomes come right before the preemptor's.
        let order: Vec<String> = report
            .pods
            .iter()
            .map(|p| format!("{}/{}", p.namespace, p.name))
            .collect();
        let at = order.iter().position(|k| k == "jobs/critical-job").unwrap();
        assert_eq!(order[at - 2..at], ["jobs/batch-3", "jobs/batch-4"]);
        // Nothing else was touched: the PDB-protected web pods and node-1/node-2's batch pods.
        let preempted = report
            .pods
            .iter()
            .filter(|p| p.status == PodStatus::Preempted)
            .count();
        assert_eq!(preempted, 2);
        assert_eq!(report.summary.by_status["Preempted"], 2);
        // preemptionPolicy: Never (from its class) may not preempt; the default class's pod
        // finds nobody of lower priority.
        for p in ["jobs/nightly-report", "jobs/batch-5"] {
            assert_eq!(pods[p].status, PodStatus::Unschedulable, "{p}");
            assert_eq!(
                pods[p].message,
                "0/3 nodes are available: 3 Insufficient cpu."
            );
            assert_eq!(pods[p].nominated_node_name, None);
        }
    }
}

#[test]
fn explain_shows_the_candidates_and_the_victims() {
    let report = run(0, true);
    let pods = last_by_name(&report.pods);
    let pre = pods["jobs/critical-job"].preemption.clone().unwrap();
    assert_eq!(pre.nominated_node.as_deref(), Some("node-3"));
    assert_eq!(pre.victims, ["jobs/batch-3", "jobs/batch-4"]);
    let mut cands: Vec<(String, i64)> = pre
        .candidates
        .iter()
        .map(|c| (c.node.clone(), c.num_pdb_violations))
        .collect();
    cands.sort();
    assert_eq!(
        cands,
        [
            ("node-1".to_string(), 1),
            ("node-2".to_string(), 1),
            ("node-3".to_string(), 0)
        ]
    );
    let batch5 = pods["jobs/batch-5"].preemption.clone().unwrap();
    assert!(batch5.candidates.is_empty());
    assert!(
        batch5
            .message
            .contains("1 No victims found on node node-1 for preemptor pod batch-5"),
        "{}",
        batch5.message
    );
    let json = serde_json::to_value(&pods["jobs/critical-job"]).unwrap();
    assert_eq!(json["nominatedNodeName"], "node-3");
    assert_eq!(json["preemption"]["candidates"][0]["numPDBViolations"], 0);
}
