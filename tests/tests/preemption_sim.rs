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
        // Each pod counts once, by its last outcome: the two victims as Preempted only.
        assert_eq!(report.summary.pods, 9);
        assert_eq!(
            report.summary.by_status,
            counts(&[
                ("Error", 0),
                ("Preempted", 2),
                ("Scheduled", 1),
                ("Skipped", 4),
                ("Unschedulable", 2)
            ])
        );
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

fn counts(pairs: &[(&str, usize)]) -> BTreeMap<String, usize> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

fn prio_pod(name: &str, priority: i32, node: Option<&str>) -> k8s_openapi::api::core::v1::Pod {
    let mut p = tests::objects::pod(name, &[("cpu", "1")]);
    let spec = p.spec.as_mut().unwrap();
    spec.priority = Some(priority);
    spec.node_name = node.map(String::from);
    p
}

/// One 1-cpu node.
fn one_node_cluster(pods: Vec<k8s_openapi::api::core::v1::Pod>) -> Cluster {
    Cluster {
        nodes: vec![tests::objects::node(
            "node-1",
            &[("cpu", "1"), ("memory", "1Gi"), ("pods", "10")],
        )],
        pods,
        ..Default::default()
    }
}

fn sim_config() -> SimulationConfig {
    SimulationConfig {
        scheduler_name: tests::replica::SCHEDULER_NAME.into(),
        seed: 1,
        percentage_of_nodes_to_score: 0,
        explain: false,
    }
}

/// A running pod (`Skipped`) evicted by a pending one of higher priority counts once, as
/// `Preempted`: the counts add up to the pods of the input.
#[test]
fn a_preempted_running_pod_counts_once() {
    let cluster = one_node_cluster(vec![
        prio_pod("running", 0, Some("node-1")),
        prio_pod("urgent", 1000, None),
    ]);
    let profile =
        scheduler::profile::Profile::default_provider(&policy::FeatureGates::default()).unwrap();
    let mut run = sim::Simulation::new(cluster, &profile, &sim_config()).unwrap();
    let outcomes: Vec<PodOutcome> = run.by_ref().collect();
    let statuses: Vec<(String, PodStatus)> = outcomes
        .iter()
        .map(|o| (o.name.clone(), o.status))
        .collect();
    assert_eq!(
        statuses,
        [
            ("running".to_string(), PodStatus::Skipped),
            ("running".to_string(), PodStatus::Preempted),
            ("urgent".to_string(), PodStatus::Scheduled),
        ]
    );
    let s = run.summary();
    assert_eq!(s.pods, 2);
    assert_eq!(
        s.by_status,
        counts(&[
            ("Error", 0),
            ("Preempted", 1),
            ("Scheduled", 1),
            ("Skipped", 0),
            ("Unschedulable", 0)
        ])
    );
}

/// With a shuffled queue (the replay options) a pod scheduled by the run can be preempted by a
/// later one: it then counts as `Preempted`, not also as `Scheduled`.
#[test]
fn a_preempted_pod_scheduled_by_the_run_counts_once() {
    let profile =
        scheduler::profile::Profile::default_provider(&policy::FeatureGates::default()).unwrap();
    let mut low_first_seen = false;
    for seed in 0..16 {
        let cluster =
            one_node_cluster(vec![prio_pod("low", 0, None), prio_pod("high", 1000, None)]);
        let options = sim::replay::ReplayOptions {
            shuffle_seed: Some(seed),
            ..Default::default()
        };
        let mut run =
            sim::Simulation::with_replay(cluster, &profile, &sim_config(), options).unwrap();
        let outcomes: Vec<PodOutcome> = run.by_ref().collect();
        let s = run.summary();
        assert_eq!(s.pods, 2, "seed {seed}");
        assert_eq!(
            s.by_status.values().sum::<usize>(),
            2,
            "seed {seed}: {:?}",
            s.by_status
        );
        if outcomes[0].name == "low" {
            low_first_seen = true;
            assert_eq!(outcomes[0].status, PodStatus::Scheduled, "seed {seed}");
            assert_eq!(outcomes[1].status, PodStatus::Preempted, "seed {seed}");
            assert_eq!(s.by_status["Scheduled"], 1, "seed {seed}");
            assert_eq!(s.by_status["Preempted"], 1, "seed {seed}");
        } else {
            assert_eq!(s.by_status["Scheduled"], 1, "seed {seed}");
            assert_eq!(s.by_status["Unschedulable"], 1, "seed {seed}");
        }
    }
    assert!(low_first_seen, "no seed put the low-priority pod first");
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
