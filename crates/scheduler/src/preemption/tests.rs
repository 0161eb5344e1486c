//! Tables transcribed from v1.22's `default_preemption_test.go` (`TestPostFilter`,
//! `TestDryRunPreemption`, `TestSelectBestCandidate`, `TestPodEligibleToPreemptOthers`,
//! `TestNodesWherePreemptionMightHelp`, `TestPreempt`), case names as upstream. Upstream seeds
//! Go's RNG with 4 and sets parallelism 1 where the result depends on the offset; the offsets
//! that seed gives (4, 1, 3 over 5 nodes) are injected here.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::policy::v1 as policy;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;

use super::*;
use crate::extender::fake::{
    FakeExtender, error_predicate, false_predicate, only_node_predicate, true_predicate,
};
use crate::extender::{
    Extender, ExtenderBindingArgs, ExtenderError, ExtenderFilterResult, HostPriority, Victims,
};
use crate::framework::plugins::testutil::{NodeB, PodB, node, pod};
use crate::framework::{CycleState, FilterPlugin, new_filter};
use crate::model::NodeInfo;
use crate::policy::PluginArgs;

const NEG: i32 = -100;
const LOW: i32 = 0;
const MID: i32 = 100;
const HIGH: i32 = 1000;
const VERY_HIGH: i32 = 10000;

type Res = (&'static str, &'static str);
const SMALL: [Res; 2] = [("cpu", "100m"), ("memory", "100")];
const MEDIUM: [Res; 2] = [("cpu", "200m"), ("memory", "200")];
const LARGE: [Res; 2] = [("cpu", "300m"), ("memory", "300")];
const VERY_LARGE: [Res; 2] = [("cpu", "500m"), ("memory", "500")];

/// `st.MakePod().Name(n).UID(n)`.
fn p(name: &str) -> PodB {
    let mut b = pod(name);
    b.0.metadata.uid = Some(name.into());
    b
}

trait PodExt {
    fn prio(self, p: i32) -> Self;
    fn req(self, r: &[Res]) -> Self;
    fn start(self, nanos: i64) -> Self;
    fn nominated(self, node: &str) -> Self;
    fn preemption_policy(self, policy: &str) -> Self;
    fn anti_affinity_exists(self, key: &str, topology_key: &str) -> Self;
    fn spread(self, max_skew: i32, topology_key: &str, exists: &str) -> Self;
}

impl PodExt for PodB {
    fn prio(mut self, p: i32) -> Self {
        self.0.spec.as_mut().unwrap().priority = Some(p);
        self
    }
    fn req(self, r: &[Res]) -> Self {
        self.container(r)
    }
    fn start(mut self, nanos: i64) -> Self {
        let t = k8s_openapi::jiff::Timestamp::from_nanosecond(i128::from(nanos)).unwrap();
        self.0
            .status
            .get_or_insert_with(Default::default)
            .start_time = Some(meta::Time(t));
        self
    }
    fn nominated(mut self, node: &str) -> Self {
        self.0
            .status
            .get_or_insert_with(Default::default)
            .nominated_node_name = Some(node.into());
        self
    }
    fn preemption_policy(mut self, policy: &str) -> Self {
        self.0.spec.as_mut().unwrap().preemption_policy = Some(policy.into());
        self
    }
    fn anti_affinity_exists(mut self, key: &str, topology_key: &str) -> Self {
        self.0.spec.as_mut().unwrap().affinity = Some(core::Affinity {
            pod_anti_affinity: Some(core::PodAntiAffinity {
                required_during_scheduling_ignored_during_execution: Some(vec![
                    core::PodAffinityTerm {
                        label_selector: Some(exists_selector(key)),
                        topology_key: topology_key.into(),
                        ..Default::default()
                    },
                ]),
                ..Default::default()
            }),
            ..Default::default()
        });
        self
    }
    fn spread(mut self, max_skew: i32, topology_key: &str, exists: &str) -> Self {
        self.0
            .spec
            .as_mut()
            .unwrap()
            .topology_spread_constraints
            .get_or_insert_with(Default::default)
            .push(core::TopologySpreadConstraint {
                max_skew,
                topology_key: topology_key.into(),
                when_unsatisfiable: "DoNotSchedule".into(),
                label_selector: Some(exists_selector(exists)),
                ..Default::default()
            });
        self
    }
}

fn exists_selector(key: &str) -> meta::LabelSelector {
    meta::LabelSelector {
        match_expressions: Some(vec![meta::LabelSelectorRequirement {
            key: key.into(),
            operator: "Exists".into(),
            values: None,
        }]),
        ..Default::default()
    }
}

/// `st.MakeNode().Name(..).Capacity(res)` (pods 32 unless given), labelled from a
/// `hostname/zone/region` name as upstream's dry-run tests do.
fn n(name: &str, res: &[Res]) -> NodeB {
    let parts: Vec<&str> = name.split('/').collect();
    let mut list: Vec<Res> = vec![("pods", "32")];
    for r in res {
        list.retain(|(k, _)| k != &r.0);
        list.push(*r);
    }
    let mut b = node(parts[0]).capacity(&list).allocatable(&list);
    for (k, v) in ["hostname", "zone", "region"].iter().zip(&parts) {
        b = b.label(k, v);
    }
    b
}

fn snap(nodes: Vec<NodeB>, pods: &[PodB]) -> Snapshot {
    crate::framework::plugins::testutil::snapshot(nodes, pods)
}

/// `st.FakeFilterPlugin`: counts its calls and returns a fixed code on every node.
struct FakeFilter {
    code: Code,
    calls: Arc<AtomicUsize>,
}

impl FilterPlugin for FakeFilter {
    fn name(&self) -> &'static str {
        "FakeFilter"
    }
    fn filter(&self, _: &CycleState, _: &PodInfo, _: &NodeInfo) -> Status {
        self.calls.fetch_add(1, Ordering::Relaxed);
        if self.code == Code::Success {
            Status::success()
        } else {
            Status::new(self.code, "injecting failure")
        }
    }
}

/// `st.NewTrueFilterPlugin`, `NewFalseFilterPlugin`, `NewMatchFilterPlugin`.
struct Simple(&'static str);

impl FilterPlugin for Simple {
    fn name(&self) -> &'static str {
        self.0
    }
    fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let ok = match self.0 {
            "TrueFilter" => true,
            "FalseFilter" => false,
            _ => pod.name == node.name,
        };
        if ok {
            Status::success()
        } else {
            Status::new(Code::Unschedulable, "Fake filter failed")
        }
    }
}

fn plugin(name: &str) -> Box<dyn FilterPlugin> {
    match name {
        "TrueFilter" => Box::new(Simple("TrueFilter")),
        "FalseFilter" => Box::new(Simple("FalseFilter")),
        "MatchFilter" => Box::new(Simple("MatchFilter")),
        _ => new_filter(name, &PluginArgs::default()).unwrap(),
    }
}

fn fwk(filters: Vec<Box<dyn FilterPlugin>>) -> Framework {
    Framework {
        filters,
        scores: Vec::new(),
        run_all_filters: false,
    }
}

const FIT: &str = "NodeResourcesFit";

fn pdb(match_app: &str, allowed: i32, disrupted: &[&str]) -> Pdb {
    Pdb::from_k8s(&policy::PodDisruptionBudget {
        metadata: meta::ObjectMeta {
            namespace: Some("default".into()),
            ..Default::default()
        },
        spec: Some(policy::PodDisruptionBudgetSpec {
            selector: Some(meta::LabelSelector {
                match_labels: Some([("app".to_string(), match_app.to_string())].into()),
                ..Default::default()
            }),
            ..Default::default()
        }),
        status: Some(policy::PodDisruptionBudgetStatus {
            disruptions_allowed: Some(allowed),
            disrupted_pods: (!disrupted.is_empty()).then(|| {
                disrupted
                    .iter()
                    .map(|d| {
                        (
                            d.to_string(),
                            meta::Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH),
                        )
                    })
                    .collect()
            }),
            ..Default::default()
        }),
    })
}

/// Candidates as `(node, sorted victim names, PDB violations)`, sorted by node.
fn summary(c: &[Candidate]) -> Vec<(String, Vec<String>, i64)> {
    let mut out: Vec<_> = c
        .iter()
        .map(|c| {
            let mut v: Vec<String> = c.victims.pods.iter().map(|p| p.name.clone()).collect();
            v.sort();
            (c.name.clone(), v, c.victims.num_pdb_violations)
        })
        .collect();
    out.sort();
    out
}

fn want(c: &[(&str, &[&str], i64)]) -> Vec<(String, Vec<String>, i64)> {
    c.iter()
        .map(|(n, v, k)| (n.to_string(), v.iter().map(|s| s.to_string()).collect(), *k))
        .collect()
}

struct DryRunCase {
    name: &'static str,
    args: Option<PreemptionArgs>,
    plugins: &'static [&'static str],
    nodes: &'static [&'static str],
    test_pods: Vec<PodB>,
    init_pods: Vec<PodB>,
    pdbs: Vec<Pdb>,
    fake_filter_rc: Code,
    /// The offset of each cycle (upstream: `rand.Seed(4)`; irrelevant when every node is
    /// scanned).
    offsets: &'static [usize],
    expected: Vec<Vec<(&'static str, &'static [&'static str], i64)>>,
    expected_num_filter_called: &'static [usize],
}

fn dry_run_case(name: &'static str) -> DryRunCase {
    DryRunCase {
        name,
        args: None,
        plugins: &[FIT],
        nodes: &["node1", "node2"],
        test_pods: vec![],
        init_pods: vec![],
        pdbs: vec![],
        fake_filter_rc: Code::Success,
        offsets: &[0],
        expected: vec![vec![]],
        expected_num_filter_called: &[0],
    }
}

fn five_mid_large(prios: [i32; 5], labels: [bool; 5]) -> Vec<PodB> {
    (0..5)
        .map(|i| {
            let name = format!("p{}", i + 1);
            let mut b = p(&name)
                .node(&format!("node{}", i + 1))
                .prio(prios[i])
                .req(&LARGE);
            if labels[i] {
                b = b.label("app", "foo");
            }
            b
        })
        .collect()
}

#[test]
fn test_dry_run_preemption() {
    let five = &["node1", "node2", "node3", "node4", "node5"];
    let two_mid_large = || {
        vec![
            p("p1").node("node1").prio(MID).req(&LARGE),
            p("p2").node("node2").prio(MID).req(&LARGE),
        ]
    };
    let pdb_pods = |k: usize| {
        (1..=k)
            .map(|i| {
                p(&format!("p1.{i}"))
                    .node("node1")
                    .label("app", "foo")
                    .prio(MID)
                    .req(&MEDIUM)
            })
            .collect::<Vec<_>>()
    };
    let cases = vec![
        DryRunCase {
            plugins: &["FalseFilter"],
            test_pods: vec![p("p").prio(HIGH)],
            init_pods: vec![
                p("p1").node("node1").prio(MID),
                p("p2").node("node2").prio(MID),
            ],
            expected: vec![vec![]],
            expected_num_filter_called: &[2],
            ..dry_run_case("a pod that does not fit on any node")
        },
        DryRunCase {
            plugins: &["TrueFilter"],
            test_pods: vec![p("p").prio(HIGH)],
            init_pods: vec![
                p("p1").node("node1").prio(MID),
                p("p2").node("node2").prio(MID),
            ],
            expected: vec![vec![("node1", &[], 0), ("node2", &[], 0)]],
            expected_num_filter_called: &[4],
            ..dry_run_case("a pod that fits with no preemption")
        },
        DryRunCase {
            plugins: &["MatchFilter"],
            // Named "node1" to fit the MatchFilter plugin.
            test_pods: vec![p("node1").prio(HIGH)],
            init_pods: vec![
                p("p1").node("node1").prio(MID),
                p("p2").node("node2").prio(MID),
            ],
            expected: vec![vec![("node1", &[], 0)]],
            expected_num_filter_called: &[3],
            ..dry_run_case("a pod that fits on one node with no preemption")
        },
        DryRunCase {
            test_pods: vec![p("p").prio(HIGH).req(&LARGE)],
            init_pods: two_mid_large(),
            expected: vec![vec![("node1", &["p1"], 0), ("node2", &["p2"], 0)]],
            expected_num_filter_called: &[4],
            ..dry_run_case("a pod that fits on both nodes when lower priority pods are preempted")
        },
        DryRunCase {
            test_pods: vec![p("p").prio(LOW).req(&LARGE)],
            init_pods: two_mid_large(),
            expected: vec![vec![]],
            expected_num_filter_called: &[0],
            ..dry_run_case(
                "a pod that would fit on the nodes, but other pods running are higher priority, no preemption would happen",
            )
        },
        DryRunCase {
            test_pods: vec![p("p").prio(HIGH).req(&LARGE)],
            init_pods: vec![
                p("p1.1").node("node1").prio(LOW).req(&SMALL),
                p("p1.2").node("node1").prio(MID).req(&LARGE),
                p("p2").node("node2").prio(MID).req(&LARGE),
            ],
            expected: vec![vec![("node1", &["p1.2"], 0), ("node2", &["p2"], 0)]],
            expected_num_filter_called: &[5],
            ..dry_run_case(
                "medium priority pod is preempted, but lower priority one stays as it is small",
            )
        },
        DryRunCase {
            test_pods: vec![p("p").prio(HIGH).req(&LARGE)],
            init_pods: vec![
                p("p1.1").node("node1").prio(MID).req(&SMALL),
                p("p1.2").node("node1").prio(LOW).req(&SMALL),
                p("p1.3").node("node1").prio(MID).req(&MEDIUM),
                p("p1.4").node("node1").prio(HIGH).req(&SMALL),
                p("p2").node("node2").prio(HIGH).req(&LARGE),
            ],
            expected: vec![vec![("node1", &["p1.2", "p1.3"], 0)]],
            expected_num_filter_called: &[4],
            ..dry_run_case("mixed priority pods are preempted")
        },
        DryRunCase {
            test_pods: vec![p("p").prio(HIGH).req(&LARGE)],
            init_pods: vec![
                p("p1.1").node("node1").prio(LOW).req(&SMALL).start(5),
                p("p1.2").node("node1").prio(LOW).req(&SMALL).start(4),
                p("p1.3").node("node1").prio(MID).req(&MEDIUM).start(3),
                p("p1.4").node("node1").prio(HIGH).req(&SMALL).start(2),
                p("p2").node("node2").prio(HIGH).req(&LARGE).start(1),
            ],
            expected: vec![vec![("node1", &["p1.1", "p1.3"], 0)]],
            // No preemption would happen on node2 and no filter call is counted.
            expected_num_filter_called: &[4],
            ..dry_run_case(
                "mixed priority pods are preempted, pick later StartTime one when priorities are equal",
            )
        },
        DryRunCase {
            plugins: &[FIT, "InterPodAffinity"],
            test_pods: vec![p("p").label("foo", "").prio(HIGH).req(&SMALL)],
            init_pods: vec![
                p("p1.1")
                    .node("node1")
                    .label("foo", "")
                    .prio(LOW)
                    .req(&SMALL)
                    .anti_affinity_exists("foo", "hostname"),
                p("p1.2").node("node1").prio(MID).req(&SMALL),
                p("p1.3").node("node1").prio(HIGH).req(&SMALL),
                p("p2").node("node2").prio(HIGH).req(&SMALL),
            ],
            expected: vec![vec![("node1", &["p1.1"], 0)]],
            expected_num_filter_called: &[3],
            ..dry_run_case("pod with anti-affinity is preempted")
        },
        DryRunCase {
            plugins: &["PodTopologySpread"],
            nodes: &["node-a/zone1", "node-b/zone1", "node-x/zone2"],
            test_pods: vec![
                p("p")
                    .label("foo", "")
                    .prio(HIGH)
                    .spread(1, "zone", "foo")
                    .spread(1, "hostname", "foo"),
            ],
            init_pods: vec![
                p("pod-a1").node("node-a").label("foo", "").prio(MID),
                p("pod-a2").node("node-a").label("foo", "").prio(LOW),
                p("pod-b1").node("node-b").label("foo", "").prio(LOW),
                p("pod-x1").node("node-x").label("foo", "").prio(HIGH),
                p("pod-x2").node("node-x").label("foo", "").prio(HIGH),
            ],
            expected: vec![vec![("node-a", &["pod-a2"], 0), ("node-b", &["pod-b1"], 0)]],
            // node-a (3), node-b (2), node-x (0)
            expected_num_filter_called: &[5],
            ..dry_run_case("preemption to resolve pod topology spread filter failure")
        },
        DryRunCase {
            test_pods: vec![p("p").prio(HIGH).req(&LARGE)],
            init_pods: two_mid_large(),
            fake_filter_rc: Code::Unschedulable,
            expected: vec![vec![]],
            expected_num_filter_called: &[2],
            ..dry_run_case(
                "get Unschedulable in the preemption phase when the filter plugins filtering the nodes",
            )
        },
        DryRunCase {
            nodes: &["node1"],
            test_pods: vec![p("p").prio(HIGH).req(&VERY_LARGE)],
            init_pods: pdb_pods(2),
            pdbs: vec![pdb("foo", 1, &[])],
            expected: vec![vec![("node1", &["p1.1", "p1.2"], 1)]],
            expected_num_filter_called: &[3],
            ..dry_run_case("preemption with violation of same pdb")
        },
        DryRunCase {
            nodes: &["node1"],
            test_pods: vec![p("p").prio(HIGH).req(&VERY_LARGE)],
            init_pods: pdb_pods(2),
            pdbs: vec![pdb("foo", 1, &["p2"])],
            expected: vec![vec![("node1", &["p1.1", "p1.2"], 1)]],
            expected_num_filter_called: &[3],
            ..dry_run_case(
                "preemption with violation of the pdb with pod whose eviction was processed, the victim doesn't belong to DisruptedPods",
            )
        },
        DryRunCase {
            nodes: &["node1"],
            test_pods: vec![p("p").prio(HIGH).req(&VERY_LARGE)],
            init_pods: pdb_pods(2),
            pdbs: vec![pdb("foo", 1, &["p1.2"])],
            expected: vec![vec![("node1", &["p1.1", "p1.2"], 0)]],
            expected_num_filter_called: &[3],
            ..dry_run_case(
                "preemption with violation of the pdb with pod whose eviction was processed, the victim belongs to DisruptedPods",
            )
        },
        DryRunCase {
            nodes: &["node1"],
            test_pods: vec![p("p").prio(HIGH).req(&VERY_LARGE)],
            init_pods: pdb_pods(3),
            pdbs: vec![pdb("foo", 1, &["p1.3"])],
            expected: vec![vec![("node1", &["p1.1", "p1.2", "p1.3"], 1)]],
            expected_num_filter_called: &[4],
            ..dry_run_case(
                "preemption with violation of the pdb with pod whose eviction was processed, the victim which belongs to DisruptedPods is treated as 'nonViolating'",
            )
        },
        DryRunCase {
            args: Some(PreemptionArgs {
                min_candidate_nodes_percentage: 40,
                min_candidate_nodes_absolute: 1,
            }),
            nodes: five,
            test_pods: vec![p("p").prio(HIGH).req(&LARGE)],
            init_pods: five_mid_large([MID; 5], [false; 5]),
            // cycle=0 => offset=4 => node5 (yes), node1 (yes)
            offsets: &[4],
            expected: vec![vec![("node1", &["p1"], 0), ("node5", &["p5"], 0)]],
            expected_num_filter_called: &[4],
            ..dry_run_case(
                "all nodes are possible candidates, but DefaultPreemptionArgs limits to 2",
            )
        },
        DryRunCase {
            args: Some(PreemptionArgs {
                min_candidate_nodes_percentage: 40,
                min_candidate_nodes_absolute: 1,
            }),
            nodes: five,
            test_pods: vec![p("p").prio(HIGH).req(&LARGE)],
            init_pods: five_mid_large([MID, VERY_HIGH, MID, MID, VERY_HIGH], [false; 5]),
            // cycle=0 => offset=4 => node5 (no), node1 (yes), node2 (no), node3 (yes)
            offsets: &[4],
            expected: vec![vec![("node1", &["p1"], 0), ("node3", &["p3"], 0)]],
            expected_num_filter_called: &[4],
            ..dry_run_case(
                "some nodes are not possible candidates, DefaultPreemptionArgs limits to 2",
            )
        },
        DryRunCase {
            args: Some(PreemptionArgs {
                min_candidate_nodes_percentage: 40,
                min_candidate_nodes_absolute: 1,
            }),
            nodes: five,
            test_pods: vec![
                p("tp1").prio(HIGH).req(&LARGE),
                p("tp2").prio(HIGH).req(&LARGE),
                p("tp3").prio(HIGH).req(&LARGE),
            ],
            init_pods: five_mid_large([MID; 5], [false; 5]),
            offsets: &[4, 1, 3],
            expected: vec![
                // cycle=0 => offset=4 => node5 (yes), node1 (yes)
                vec![("node1", &["p1"], 0), ("node5", &["p5"], 0)],
                // cycle=1 => offset=1 => node2 (yes), node3 (yes)
                vec![("node2", &["p2"], 0), ("node3", &["p3"], 0)],
                // cycle=2 => offset=3 => node4 (yes), node5 (yes)
                vec![("node4", &["p4"], 0), ("node5", &["p5"], 0)],
            ],
            expected_num_filter_called: &[4, 4, 4],
            ..dry_run_case("preemption offset across multiple scheduling cycles and wrap around")
        },
        DryRunCase {
            args: Some(PreemptionArgs {
                min_candidate_nodes_percentage: 40,
                min_candidate_nodes_absolute: 2,
            }),
            nodes: five,
            test_pods: vec![p("p").prio(HIGH).req(&LARGE)],
            init_pods: five_mid_large([MID; 5], [true, true, false, false, true]),
            pdbs: vec![pdb("foo", 0, &[])],
            // cycle=0 => offset=4 => node5 (yes, pdb), node1 (yes, pdb), node2 (no, pdb),
            // node3 (yes)
            offsets: &[4],
            expected: vec![vec![
                ("node1", &["p1"], 1),
                ("node3", &["p3"], 0),
                ("node5", &["p5"], 1),
            ]],
            expected_num_filter_called: &[8],
            ..dry_run_case(
                "preemption looks past numCandidates until a non-PDB violating node is found",
            )
        },
    ];
    assert_eq!(cases.len(), 19);
    for tt in cases {
        let nodes: Vec<NodeB> = tt.nodes.iter().map(|name| n(name, &VERY_LARGE)).collect();
        let snapshot = snap(nodes, &tt.init_pods);
        let calls = Arc::new(AtomicUsize::new(0));
        let mut filters: Vec<Box<dyn FilterPlugin>> = vec![Box::new(FakeFilter {
            code: tt.fake_filter_rc,
            calls: calls.clone(),
        })];
        filters.extend(tt.plugins.iter().map(|n| plugin(n)));
        let f = fwk(filters);
        let mut potential: Vec<u32> = (0..snapshot.len() as u32).collect();
        potential.sort_by_key(|&i| snapshot.nodes()[i as usize].name.clone());
        let args = tt.args.unwrap_or_default();
        let mut prev = 0;
        for (cycle, tp) in tt.test_pods.iter().enumerate() {
            let pi = tp.clone().info();
            let num = calculate_num_candidates(&args, potential.len() as i32) as usize;
            let offset = tt.offsets.get(cycle).copied().unwrap_or(0);
            let (got, _) = dry_run_preemption(
                &f,
                &snapshot,
                &pi,
                &potential,
                &tt.pdbs,
                offset,
                num,
                &Nominator::new(),
            );
            let now = calls.load(Ordering::Relaxed);
            assert_eq!(
                now - prev,
                tt.expected_num_filter_called[cycle],
                "{}: cycle {cycle}: filter calls",
                tt.name
            );
            prev = now;
            assert_eq!(
                summary(&got),
                want(&tt.expected[cycle]),
                "{}: cycle {cycle}",
                tt.name
            );
        }
    }
}

#[test]
fn test_select_best_candidate() {
    struct Case {
        name: &'static str,
        nodes: &'static [&'static str],
        pod: PodB,
        pods: Vec<PodB>,
        expected: &'static [&'static str],
    }
    let three = &["node1", "node2", "node3"];
    let e = 0i64;
    let cases = vec![
        Case {
            name: "No node needs preemption",
            nodes: &["node1"],
            pod: p("p").prio(HIGH).req(&LARGE),
            pods: vec![p("p1").node("node1").prio(MID).req(&SMALL).start(e)],
            expected: &["node1"],
        },
        Case {
            name: "a pod that fits on both nodes when lower priority pods are preempted",
            nodes: &["node1", "node2"],
            pod: p("p").prio(HIGH).req(&LARGE),
            pods: vec![
                p("p1").node("node1").prio(MID).req(&LARGE).start(e),
                p("p2").node("node2").prio(MID).req(&LARGE).start(e),
            ],
            expected: &["node1", "node2"],
        },
        Case {
            name: "node with min highest priority pod is picked",
            nodes: three,
            pod: p("p").prio(HIGH).req(&VERY_LARGE),
            pods: vec![
                p("p1.1").node("node1").prio(MID).req(&MEDIUM).start(e),
                p("p1.2").node("node1").prio(MID).req(&LARGE).start(e),
                p("p2.1").node("node2").prio(MID).req(&MEDIUM).start(e),
                p("p2.2").node("node2").prio(LOW).req(&MEDIUM).start(e),
                p("p3.1").node("node3").prio(LOW).req(&MEDIUM).start(e),
                p("p3.2").node("node3").prio(LOW).req(&MEDIUM).start(e),
            ],
            expected: &["node3"],
        },
        Case {
            name: "when highest priorities are the same, minimum sum of priorities is picked",
            nodes: three,
            pod: p("p").prio(HIGH).req(&VERY_LARGE),
            pods: vec![
                p("p1.1").node("node1").prio(MID).req(&MEDIUM).start(e),
                p("p1.2").node("node1").prio(MID).req(&LARGE).start(e),
                p("p2.1").node("node2").prio(MID).req(&LARGE).start(e),
                p("p2.2").node("node2").prio(LOW).req(&MEDIUM).start(e),
                p("p3.1").node("node3").prio(MID).req(&MEDIUM).start(e),
                p("p3.2").node("node3").prio(MID).req(&MEDIUM).start(e),
            ],
            expected: &["node2"],
        },
        Case {
            name: "when highest priority and sum are the same, minimum number of pods is picked",
            nodes: three,
            pod: p("p").prio(HIGH).req(&VERY_LARGE),
            pods: vec![
                p("p1.1").node("node1").prio(MID).req(&SMALL).start(e),
                p("p1.2").node("node1").prio(NEG).req(&SMALL).start(e),
                p("p1.3").node("node1").prio(MID).req(&SMALL).start(e),
                p("p1.4").node("node1").prio(NEG).req(&SMALL).start(e),
                p("p2.1").node("node2").prio(MID).req(&LARGE).start(e),
                p("p2.2").node("node2").prio(NEG).req(&MEDIUM).start(e),
                p("p3.1").node("node3").prio(MID).req(&MEDIUM).start(e),
                p("p3.2").node("node3").prio(NEG).req(&SMALL).start(e),
                p("p3.3").node("node3").prio(LOW).req(&SMALL).start(e),
            ],
            expected: &["node2"],
        },
        Case {
            // pickOneNodeForPreemption adjusts pod priorities when finding the sum of the
            // victims. This test ensures that the logic works correctly.
            name: "sum of adjusted priorities is considered",
            nodes: three,
            pod: p("p").prio(HIGH).req(&VERY_LARGE),
            pods: vec![
                p("p1.1").node("node1").prio(MID).req(&SMALL).start(e),
                p("p1.2").node("node1").prio(NEG).req(&SMALL).start(e),
                p("p1.3").node("node1").prio(NEG).req(&SMALL).start(e),
                p("p2.1").node("node2").prio(MID).req(&LARGE).start(e),
                p("p2.2").node("node2").prio(NEG).req(&MEDIUM).start(e),
                p("p3.1").node("node3").prio(MID).req(&MEDIUM).start(e),
                p("p3.2").node("node3").prio(NEG).req(&SMALL).start(e),
                p("p3.3").node("node3").prio(LOW).req(&SMALL).start(e),
            ],
            expected: &["node2"],
        },
        Case {
            name: "non-overlapping lowest high priority, sum priorities, and number of pods",
            nodes: &["node1", "node2", "node3", "node4"],
            pod: p("p").prio(VERY_HIGH).req(&VERY_LARGE),
            pods: vec![
                p("p1.1").node("node1").prio(MID).req(&SMALL).start(e),
                p("p1.2").node("node1").prio(LOW).req(&SMALL).start(e),
                p("p1.3").node("node1").prio(LOW).req(&SMALL).start(e),
                p("p2.1").node("node2").prio(HIGH).req(&LARGE).start(e),
                p("p3.1").node("node3").prio(MID).req(&MEDIUM).start(e),
                p("p3.2").node("node3").prio(LOW).req(&SMALL).start(e),
                p("p3.3").node("node3").prio(LOW).req(&SMALL).start(e),
                p("p3.4").node("node3").prio(LOW).req(&MEDIUM).start(e),
                p("p4.1").node("node4").prio(MID).req(&MEDIUM).start(e),
                p("p4.2").node("node4").prio(MID).req(&SMALL).start(e),
                p("p4.3").node("node4").prio(MID).req(&SMALL).start(e),
                p("p4.4").node("node4").prio(NEG).req(&SMALL).start(e),
            ],
            expected: &["node1"],
        },
        Case {
            name: "same priority, same number of victims, different start time for each node's pod",
            nodes: three,
            pod: p("p").prio(HIGH).req(&VERY_LARGE),
            pods: vec![
                p("p1.1").node("node1").prio(MID).req(&MEDIUM).start(2),
                p("p1.2").node("node1").prio(MID).req(&MEDIUM).start(2),
                p("p2.1").node("node2").prio(MID).req(&MEDIUM).start(3),
                p("p2.2").node("node2").prio(MID).req(&MEDIUM).start(3),
                p("p3.1").node("node3").prio(MID).req(&MEDIUM).start(1),
                p("p3.2").node("node3").prio(MID).req(&MEDIUM).start(1),
            ],
            expected: &["node2"],
        },
        Case {
            name: "same priority, same number of victims, different start time for all pods",
            nodes: three,
            pod: p("p").prio(HIGH).req(&VERY_LARGE),
            pods: vec![
                p("p1.1").node("node1").prio(MID).req(&MEDIUM).start(4),
                p("p1.2").node("node1").prio(MID).req(&MEDIUM).start(2),
                p("p2.1").node("node2").prio(MID).req(&MEDIUM).start(5),
                p("p2.2").node("node2").prio(MID).req(&MEDIUM).start(1),
                p("p3.1").node("node3").prio(MID).req(&MEDIUM).start(3),
                p("p3.2").node("node3").prio(MID).req(&MEDIUM).start(6),
            ],
            expected: &["node3"],
        },
        Case {
            name: "different priority, same number of victims, different start time for all pods",
            nodes: three,
            pod: p("p").prio(HIGH).req(&VERY_LARGE),
            pods: vec![
                p("p1.1").node("node1").prio(LOW).req(&MEDIUM).start(4),
                p("p1.2").node("node1").prio(MID).req(&MEDIUM).start(2),
                p("p2.1").node("node2").prio(MID).req(&MEDIUM).start(6),
                p("p2.2").node("node2").prio(LOW).req(&MEDIUM).start(1),
                p("p3.1").node("node3").prio(LOW).req(&MEDIUM).start(3),
                p("p3.2").node("node3").prio(MID).req(&MEDIUM).start(5),
            ],
            expected: &["node2"],
        },
    ];
    assert_eq!(cases.len(), 10);
    for tt in cases {
        let nodes: Vec<NodeB> = tt.nodes.iter().map(|name| n(name, &VERY_LARGE)).collect();
        let snapshot = snap(nodes, &tt.pods);
        let f = fwk(vec![plugin(FIT)]);
        let potential: Vec<u32> = (0..snapshot.len() as u32).collect();
        let args = PreemptionArgs::default();
        let num = calculate_num_candidates(&args, potential.len() as i32) as usize;
        let pi = tt.pod.info();
        // Every offset must give an allowed node (upstream draws one at random).
        for offset in 0..potential.len() {
            let (candidates, _) = dry_run_preemption(
                &f,
                &snapshot,
                &pi,
                &potential,
                &[],
                offset,
                num,
                &Nominator::new(),
            );
            let s = select_candidate(&candidates).unwrap();
            assert!(
                tt.expected.contains(&s.name.as_str()),
                "{}: offset {offset}: expect any node in {:?}, but got {}",
                tt.name,
                tt.expected,
                s.name
            );
        }
    }
}

#[test]
fn test_pod_eligible_to_preempt_others() {
    struct Case {
        name: &'static str,
        pod: PodB,
        pods: Vec<PodB>,
        nodes: &'static [&'static str],
        nominated_node_status: Option<Status>,
        expected: bool,
    }
    let cases = vec![
        Case {
            name: "Pod with nominated node",
            pod: p("p_with_nominated_node").prio(HIGH).nominated("node1"),
            pods: vec![p("p1").prio(LOW).node("node1").terminating()],
            nodes: &["node1"],
            nominated_node_status: Some(Status::new(
                Code::UnschedulableAndUnresolvable,
                "node(s) had taint {node.kubernetes.io/unreachable: }, that the pod didn't tolerate",
            )),
            expected: true,
        },
        Case {
            name: "Pod with nominated node, but without nominated node status",
            pod: p("p_without_status").prio(HIGH).nominated("node1"),
            pods: vec![p("p1").prio(LOW).node("node1").terminating()],
            nodes: &["node1"],
            nominated_node_status: None,
            expected: false,
        },
        Case {
            name: "Pod without nominated node",
            pod: p("p_without_nominated_node").prio(HIGH),
            pods: vec![],
            nodes: &[],
            nominated_node_status: None,
            expected: true,
        },
        Case {
            name: "Pod with 'PreemptNever' preemption policy",
            pod: p("p_with_preempt_never_policy")
                .prio(HIGH)
                .preemption_policy("Never"),
            pods: vec![],
            nodes: &[],
            nominated_node_status: None,
            expected: false,
        },
    ];
    for tt in cases {
        let snapshot = snap(tt.nodes.iter().map(|x| node(x)).collect(), &tt.pods);
        assert_eq!(
            pod_eligible_to_preempt_others(
                &tt.pod.info(),
                &snapshot,
                tt.nominated_node_status.as_ref()
            ),
            tt.expected,
            "{}",
            tt.name
        );
    }
}

#[test]
fn test_nodes_where_preemption_might_help() {
    use Code::{Unschedulable as U, UnschedulableAndUnresolvable as UU};
    // Only the codes matter; the reasons are upstream's constants.
    type Case = (
        &'static str,
        Vec<(&'static str, Code, &'static str)>,
        &'static [&'static str],
    );
    let cases: Vec<Case> = vec![
        (
            "No node should be attempted",
            vec![
                (
                    "node1",
                    UU,
                    "node(s) didn't match Pod's node affinity/selector",
                ),
                ("node2", UU, "node(s) didn't match the requested node name"),
                (
                    "node3",
                    UU,
                    "node(s) had taint {}, that the pod didn't tolerate",
                ),
                ("node4", UU, "node(s) didn't have the requested labels"),
            ],
            &[],
        ),
        (
            "ErrReasonAffinityNotMatch should be tried as it indicates that the pod is unschedulable due to inter-pod affinity or anti-affinity",
            vec![
                (
                    "node1",
                    U,
                    "node(s) didn't match pod affinity/anti-affinity rules",
                ),
                ("node2", UU, "node(s) didn't match the requested node name"),
                ("node3", UU, "node(s) were unschedulable"),
            ],
            &["node1", "node4"],
        ),
        (
            "pod with both pod affinity and anti-affinity should be tried",
            vec![
                (
                    "node1",
                    U,
                    "node(s) didn't match pod affinity/anti-affinity rules",
                ),
                ("node2", UU, "node(s) didn't match the requested node name"),
            ],
            &["node1", "node3", "node4"],
        ),
        (
            "ErrReasonAffinityRulesNotMatch should not be tried as it indicates that the pod is unschedulable due to inter-pod affinity, but ErrReasonAffinityNotMatch should be tried as it indicates that the pod is unschedulable due to inter-pod affinity or anti-affinity",
            vec![
                ("node1", UU, "node(s) didn't match pod affinity rules"),
                (
                    "node2",
                    U,
                    "node(s) didn't match pod affinity/anti-affinity rules",
                ),
            ],
            &["node2", "node3", "node4"],
        ),
        (
            "Mix of failed predicates works fine",
            vec![
                ("node1", UU, "node(s) had no available disk"),
                ("node2", U, "Insufficient memory"),
            ],
            &["node2", "node3", "node4"],
        ),
        (
            "Node condition errors should be considered unresolvable",
            vec![("node1", UU, "node(s) had unknown conditions")],
            &["node2", "node3", "node4"],
        ),
        (
            "ErrVolume... errors should not be tried as it indicates that the pod is unschedulable due to no matching volumes for pod on node",
            vec![
                ("node1", UU, "node(s) had no available volume zone"),
                ("node2", UU, "node(s) had volume node affinity conflict"),
                (
                    "node3",
                    UU,
                    "node(s) didn't find available persistent volumes to bind",
                ),
            ],
            &["node4"],
        ),
        (
            "ErrReasonConstraintsNotMatch should be tried as it indicates that the pod is unschedulable due to topology spread constraints",
            vec![
                (
                    "node1",
                    U,
                    "node(s) didn't match pod topology spread constraints",
                ),
                ("node2", UU, "node(s) didn't match the requested node name"),
                (
                    "node3",
                    U,
                    "node(s) didn't match pod topology spread constraints",
                ),
            ],
            &["node1", "node3", "node4"],
        ),
        (
            "UnschedulableAndUnresolvable status should be skipped but Unschedulable should be tried",
            vec![("node2", UU, ""), ("node3", U, ""), ("node4", UU, "")],
            &["node1", "node3"],
        ),
        (
            "ErrReasonNodeLabelNotMatch should not be tried as it indicates that the pod is unschedulable due to node doesn't have the required label",
            vec![
                (
                    "node2",
                    UU,
                    "node(s) didn't match pod topology spread constraints (missing required label)",
                ),
                ("node3", U, ""),
                ("node4", UU, ""),
            ],
            &["node1", "node3"],
        ),
    ];
    assert_eq!(cases.len(), 10);
    let snapshot = snap(
        ["node1", "node2", "node3", "node4"]
            .iter()
            .map(|x| node(x))
            .collect(),
        &[],
    );
    for (name, statuses, expected) in cases {
        let m: BTreeMap<String, Status> = statuses
            .into_iter()
            .map(|(n, c, r)| (n.to_string(), Status::new(c, r)))
            .collect();
        let (nodes, unresolvable) = nodes_where_preemption_might_help(&snapshot, &m);
        let got: Vec<&str> = nodes
            .iter()
            .map(|&i| snapshot.nodes()[i as usize].name.as_str())
            .collect();
        assert_eq!(got, expected, "{name}");
        assert_eq!(unresolvable.len(), 4 - expected.len(), "{name}");
        assert!(
            unresolvable
                .values()
                .all(|s| s.message() == REASON_NOT_HELPFUL),
            "{name}"
        );
    }
}

#[test]
fn test_post_filter() {
    struct Case {
        name: &'static str,
        pod: PodB,
        pods: Vec<PodB>,
        nodes: Vec<NodeB>,
        filtered: Vec<(&'static str, Code)>,
        want_node: Option<&'static str>,
        want_message: &'static str,
        extenders: Vec<FakeExtender>,
    }
    let one_pod: [Res; 1] = [("pods", "1")];
    let node_res: [Res; 2] = [("cpu", "200m"), ("memory", "400")];
    use Code::{Unschedulable as U, UnschedulableAndUnresolvable as UU};
    let cases = vec![
        Case {
            name: "pod with higher priority can be made schedulable",
            pod: p("p").prio(HIGH),
            pods: vec![p("p1").node("node1")],
            nodes: vec![n("node1", &one_pod)],
            filtered: vec![("node1", U)],
            want_node: Some("node1"),
            want_message: "",
            extenders: vec![],
        },
        Case {
            name: "pod with tied priority is still unschedulable",
            pod: p("p"),
            pods: vec![p("p1").node("node1")],
            nodes: vec![n("node1", &one_pod)],
            filtered: vec![("node1", U)],
            want_node: None,
            want_message: "0/1 nodes are available: 1 No victims found on node node1 for preemptor pod p.",
            extenders: vec![],
        },
        Case {
            name: "preemption should respect filteredNodesStatuses",
            pod: p("p").prio(HIGH),
            pods: vec![p("p1").node("node1")],
            nodes: vec![n("node1", &one_pod)],
            filtered: vec![("node1", UU)],
            want_node: None,
            want_message: "0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
            extenders: vec![],
        },
        Case {
            name: "pod can be made schedulable on one node",
            pod: p("p").prio(MID),
            pods: vec![
                p("p1").prio(HIGH).node("node1"),
                p("p2").prio(LOW).node("node2"),
            ],
            nodes: vec![n("node1", &one_pod), n("node2", &one_pod)],
            filtered: vec![("node1", U), ("node2", U)],
            want_node: Some("node2"),
            want_message: "",
            extenders: vec![],
        },
        Case {
            name: "preemption result filtered out by extenders",
            pod: p("p").prio(HIGH),
            pods: vec![p("p1").node("node1"), p("p2").node("node2")],
            nodes: vec![n("node1", &one_pod), n("node2", &one_pod)],
            filtered: vec![("node1", U), ("node2", U)],
            want_node: Some("node1"),
            want_message: "",
            extenders: vec![FakeExtender {
                name: "FakeExtender1".into(),
                ..FakeExtender::with_predicates(vec![only_node_predicate("node1")])
            }],
        },
        Case {
            name: "no candidate nodes found, no enough resource after removing low priority pods",
            pod: p("p").prio(HIGH).req(&LARGE),
            pods: vec![p("p1").node("node1"), p("p2").node("node2")],
            nodes: vec![n("node1", &node_res), n("node2", &node_res)],
            filtered: vec![("node1", U), ("node2", U)],
            want_node: None,
            want_message: "0/2 nodes are available: 2 Insufficient cpu.",
            extenders: vec![],
        },
        Case {
            name: "no candidate nodes found with mixed reasons, no lower priority pod and no enough CPU resource",
            pod: p("p").prio(HIGH).req(&LARGE),
            pods: vec![p("p1").node("node1").prio(HIGH), p("p2").node("node2")],
            nodes: vec![n("node1", &one_pod), n("node2", &node_res)],
            filtered: vec![("node1", U), ("node2", U)],
            want_node: None,
            want_message: "0/2 nodes are available: 1 Insufficient cpu, 1 No victims found on node node1 for preemptor pod p.",
            extenders: vec![],
        },
        Case {
            name: "no candidate nodes found with mixed reason, 2 UnschedulableAndUnresolvable nodes and 2 nodes don't have enough CPU resource",
            pod: p("p").prio(HIGH).req(&LARGE),
            pods: vec![p("p1").node("node1"), p("p2").node("node2")],
            nodes: vec![
                n("node1", &node_res),
                n("node2", &node_res),
                n("node3", &node_res),
                n("node4", &node_res),
            ],
            filtered: vec![("node3", UU), ("node4", UU)],
            want_node: None,
            want_message: "0/4 nodes are available: 2 Insufficient cpu, 2 Preemption is not helpful for scheduling.",
            extenders: vec![],
        },
    ];
    for tt in cases {
        let snapshot = snap(tt.nodes, &tt.pods);
        let f = fwk(vec![plugin(FIT)]);
        let m: BTreeMap<String, Status> = tt
            .filtered
            .iter()
            .map(|(n, c)| (n.to_string(), Status::new(*c, "")))
            .collect();
        let mut pl = DefaultPreemption::new(PreemptionArgs::default(), 4);
        let extenders: Vec<Arc<dyn Extender>> = tt
            .extenders
            .into_iter()
            .map(|e| Arc::new(e) as Arc<dyn Extender>)
            .collect();
        let r = pl.post_filter(
            &f,
            &snapshot,
            &tt.pod.info(),
            &m,
            &[],
            &Nominator::new(),
            &extenders,
        );
        assert_eq!(r.nominated_node.as_deref(), tt.want_node, "{}", tt.name);
        if tt.want_node.is_some() {
            assert!(r.status.is_success(), "{}", tt.name);
        } else {
            assert_eq!(r.status.code, Code::Unschedulable, "{}", tt.name);
            assert_eq!(r.status.message(), tt.want_message, "{}", tt.name);
        }
    }
}

#[test]
fn test_preempt() {
    struct Case {
        name: &'static str,
        pod: PodB,
        pods: Vec<PodB>,
        nodes: &'static [&'static str],
        plugin: &'static str,
        expected_node: Option<&'static str>,
        expected_pods: &'static [&'static str],
        extenders: Vec<FakeExtender>,
    }
    let basic_pods = || {
        vec![
            p("p1.1").node("node1").prio(LOW).req(&SMALL),
            p("p1.2").node("node1").prio(LOW).req(&SMALL),
            p("p2.1").node("node2").prio(HIGH).req(&LARGE),
            p("p3.1").node("node3").prio(MID).req(&MEDIUM),
        ]
    };
    let three = &["node1", "node2", "node3"];
    let cases = vec![
        Case {
            name: "basic preemption logic",
            pod: p("p")
                .prio(HIGH)
                .req(&VERY_LARGE)
                .preemption_policy("PreemptLowerPriority"),
            pods: basic_pods(),
            nodes: three,
            plugin: FIT,
            expected_node: Some("node1"),
            expected_pods: &["p1.1", "p1.2"],
            extenders: vec![],
        },
        Case {
            name: "preemption for topology spread constraints",
            pod: p("p")
                .label("foo", "")
                .prio(HIGH)
                .spread(1, "zone", "foo")
                .spread(1, "hostname", "foo"),
            pods: vec![
                p("p-a1").node("node-a").label("foo", "").prio(HIGH),
                p("p-a2").node("node-a").label("foo", "").prio(HIGH),
                p("p-b1").node("node-b").label("foo", "").prio(LOW),
                p("p-x1").node("node-x").label("foo", "").prio(HIGH),
                p("p-x2").node("node-x").label("foo", "").prio(HIGH),
            ],
            nodes: &["node-a/zone1", "node-b/zone1", "node-x/zone2"],
            plugin: "PodTopologySpread",
            expected_node: Some("node-b"),
            expected_pods: &["p-b1"],
            extenders: vec![],
        },
        Case {
            name: "Scheduler extenders allow only node1, otherwise node3 would have been chosen",
            pod: p("p")
                .prio(HIGH)
                .req(&VERY_LARGE)
                .preemption_policy("PreemptLowerPriority"),
            pods: vec![
                p("p1.1").node("node1").prio(MID).req(&SMALL),
                p("p1.2").node("node1").prio(LOW).req(&SMALL),
                p("p2.1").node("node3").prio(MID).req(&LARGE),
            ],
            nodes: three,
            plugin: FIT,
            expected_node: Some("node1"),
            expected_pods: &["p1.1", "p1.2"],
            extenders: vec![
                FakeExtender::with_predicates(vec![true_predicate()]),
                FakeExtender::with_predicates(vec![only_node_predicate("node1")]),
            ],
        },
        Case {
            name: "Scheduler extenders do not allow any preemption",
            pod: p("p")
                .prio(HIGH)
                .req(&VERY_LARGE)
                .preemption_policy("PreemptLowerPriority"),
            pods: vec![
                p("p1.1").node("node1").prio(MID).req(&SMALL),
                p("p1.2").node("node1").prio(LOW).req(&SMALL),
                p("p2.1").node("node2").prio(MID).req(&LARGE),
            ],
            nodes: three,
            plugin: FIT,
            expected_node: None,
            expected_pods: &[],
            extenders: vec![FakeExtender::with_predicates(vec![false_predicate()])],
        },
        Case {
            name: "One scheduler extender allows only node1, the other returns error but ignorable. Only node1 would be chosen",
            pod: p("p")
                .prio(HIGH)
                .req(&VERY_LARGE)
                .preemption_policy("PreemptLowerPriority"),
            pods: vec![
                p("p1.1").node("node1").prio(MID).req(&SMALL),
                p("p1.2").node("node1").prio(LOW).req(&SMALL),
                p("p2.1").node("node2").prio(MID).req(&LARGE),
            ],
            nodes: three,
            plugin: FIT,
            expected_node: Some("node1"),
            expected_pods: &["p1.1", "p1.2"],
            extenders: vec![
                FakeExtender {
                    ignorable: true,
                    ..FakeExtender::with_predicates(vec![error_predicate()])
                },
                FakeExtender::with_predicates(vec![only_node_predicate("node1")]),
            ],
        },
        Case {
            name: "One scheduler extender allows only node1, but it is not interested in given pod, otherwise node1 would have been chosen",
            pod: p("p")
                .prio(HIGH)
                .req(&VERY_LARGE)
                .preemption_policy("PreemptLowerPriority"),
            pods: vec![
                p("p1.1").node("node1").prio(MID).req(&SMALL),
                p("p1.2").node("node1").prio(LOW).req(&SMALL),
                p("p2.1").node("node2").prio(MID).req(&LARGE),
            ],
            nodes: &["node1", "node2"],
            plugin: FIT,
            // Sum of priorities of all victims on node1 is larger than node2, node2 is chosen.
            expected_node: Some("node2"),
            expected_pods: &["p2.1"],
            extenders: vec![
                FakeExtender {
                    un_interested: true,
                    ..FakeExtender::with_predicates(vec![only_node_predicate("node1")])
                },
                FakeExtender::with_predicates(vec![true_predicate()]),
            ],
        },
        Case {
            name: "no preempting in pod",
            pod: p("p")
                .prio(HIGH)
                .req(&VERY_LARGE)
                .preemption_policy("Never"),
            pods: basic_pods(),
            nodes: three,
            plugin: FIT,
            expected_node: None,
            expected_pods: &[],
            extenders: vec![],
        },
        Case {
            name: "PreemptionPolicy is nil",
            pod: p("p").prio(HIGH).req(&VERY_LARGE),
            pods: basic_pods(),
            nodes: three,
            plugin: FIT,
            expected_node: Some("node1"),
            expected_pods: &["p1.1", "p1.2"],
            extenders: vec![],
        },
    ];
    for tt in cases {
        let nodes: Vec<NodeB> = tt.nodes.iter().map(|name| n(name, &VERY_LARGE)).collect();
        let snapshot = snap(nodes.clone(), &tt.pods);
        let f = fwk(vec![plugin(tt.plugin)]);
        let mut pl = DefaultPreemption::new(PreemptionArgs::default(), 4);
        let extenders: Vec<Arc<dyn Extender>> = tt
            .extenders
            .into_iter()
            .map(|e| Arc::new(e) as Arc<dyn Extender>)
            .collect();
        let r = pl.post_filter(
            &f,
            &snapshot,
            &tt.pod.clone().info(),
            &BTreeMap::new(),
            &[],
            &Nominator::new(),
            &extenders,
        );
        assert_eq!(r.nominated_node.as_deref(), tt.expected_node, "{}", tt.name);
        let mut victims: Vec<&str> = r.victims.iter().map(|v| v.name.as_str()).collect();
        victims.sort();
        assert_eq!(victims, tt.expected_pods, "{}", tt.name);
        let Some(node) = r.nominated_node else {
            continue;
        };
        // Mark the victims terminating and preempt again: no more preemption.
        let pods: Vec<PodB> = tt
            .pods
            .iter()
            .map(|x| {
                let name = x.0.metadata.name.clone().unwrap();
                if victims.contains(&name.as_str()) {
                    x.clone().terminating()
                } else {
                    x.clone()
                }
            })
            .collect();
        let snapshot = snap(nodes, &pods);
        let again = pl.post_filter(
            &f,
            &snapshot,
            &tt.pod.clone().nominated(&node).info(),
            &BTreeMap::new(),
            &[],
            &Nominator::new(),
            &extenders,
        );
        assert!(
            again.nominated_node.is_none() && again.victims.is_empty(),
            "{}: didn't expect any more preemption, got {:?}",
            tt.name,
            again.nominated_node
        );
    }
}

#[test]
fn victims_are_ordered_pdb_violating_first_and_the_pdb_budget_is_spent_in_importance_order() {
    // Two pods of one PDB allowing 1 disruption, plus an unprotected one: the budget goes to
    // the more important PDB pod, the less important one is the violating victim and comes
    // first, as v1.22 leaves it (no re-sort).
    let snapshot = snap(
        vec![n("node1", &VERY_LARGE)],
        &[
            p("a")
                .node("node1")
                .label("app", "foo")
                .prio(MID)
                .req(&MEDIUM)
                .start(1),
            p("b")
                .node("node1")
                .label("app", "foo")
                .prio(MID)
                .req(&MEDIUM)
                .start(2),
            p("c").node("node1").prio(LOW).req(&SMALL),
        ],
    );
    let f = fwk(vec![plugin(FIT)]);
    let pi = p("p").prio(HIGH).req(&VERY_LARGE).info();
    let mut work = snapshot.clone();
    let (victims, violations) = select_victims_on_node(
        &f,
        &mut work,
        &pi,
        0,
        &[pdb("foo", 1, &[])],
        &Nominator::new(),
    )
    .unwrap();
    let names: Vec<&str> = victims.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["b", "a", "c"]);
    assert_eq!(violations, 1);
    // The snapshot is restored.
    assert_eq!(work.nodes()[0].pods.len(), 3);
    assert_eq!(work.nodes()[0].requested, snapshot.nodes()[0].requested);
}

#[test]
fn nominated_pods_of_equal_or_higher_priority_count_on_their_node() {
    // A node with room for one pod of LARGE; a HIGH pod nominated there takes the room from a
    // MID pod but not from a VERY_HIGH one, and never from itself.
    let snapshot = snap(vec![n("node1", &VERY_LARGE)], &[]);
    let f = fwk(vec![plugin(FIT)]);
    let mut nom = Nominator::new();
    let nominated = p("nom").prio(HIGH).req(&LARGE).info();
    nom.add_nominated_pod(Arc::new(nominated.clone()), "node1");
    let mut work = snapshot.clone();
    let on = nom.nominated_pods_for_node("node1");
    let mid = p("mid").prio(MID).req(&LARGE).info();
    let s = f.run_filter_plugins_with_nominated_pods(&mid, &mut work, 0, on);
    assert_eq!(s.code, Code::Unschedulable);
    let very_high = p("vh").prio(VERY_HIGH).req(&LARGE).info();
    assert!(
        f.run_filter_plugins_with_nominated_pods(&very_high, &mut work, 0, on)
            .is_success()
    );
    assert!(
        f.run_filter_plugins_with_nominated_pods(&nominated, &mut work, 0, on)
            .is_success()
    );
    assert!(
        work.nodes()[0].pods.is_empty(),
        "the nominated pod is taken off again"
    );
    // The preemptor takes over lower-priority nominations on its node.
    let lower = lower_priority_nominated_pods(&nom, &very_high, "node1");
    assert_eq!(lower.len(), 1);
    assert!(lower_priority_nominated_pods(&nom, &mid, "node1").is_empty());
}

#[test]
fn num_candidates_and_offset() {
    let d = PreemptionArgs::default();
    assert_eq!(calculate_num_candidates(&d, 50), 50);
    assert_eq!(calculate_num_candidates(&d, 1000), 100);
    assert_eq!(calculate_num_candidates(&d, 5000), 500);
    let a = PreemptionArgs {
        min_candidate_nodes_percentage: 40,
        min_candidate_nodes_absolute: 1,
    };
    assert_eq!(calculate_num_candidates(&a, 5), 2);
    let mut pl = DefaultPreemption::new(d, 1);
    for _ in 0..100 {
        let (o, k) = pl.get_offset_and_num_candidates(7);
        assert!(o < 7);
        assert_eq!(k, 7);
    }
}

#[test]
fn the_scheduling_cycle_counts_nominated_pods_and_prefers_the_nominated_node() {
    use crate::schedule_one::Algorithm;
    // Two nodes with room for one LARGE pod each.
    let snapshot = snap(vec![n("node1", &VERY_LARGE), n("node2", &VERY_LARGE)], &[]);
    let f = fwk(vec![plugin(FIT)]);
    let mut nom = Nominator::new();
    nom.add_nominated_pod(Arc::new(p("nom").prio(HIGH).req(&LARGE).info()), "node1");
    for seed in 0..8 {
        let mut algo = Algorithm::new(100, seed);
        // A lower-priority pod must leave node1 to the nominated pod.
        let mid = p("mid").prio(MID).req(&LARGE).info();
        let r = algo
            .schedule_with_nominated(&f, &snapshot, &mid, false, &nom)
            .unwrap();
        assert_eq!(r.node, "node2", "seed {seed}");
        // Without the nominator node1 is as good as node2.
        let very_high = p("vh").prio(VERY_HIGH).req(&LARGE).info();
        let r = algo
            .schedule_with_nominated(&f, &snapshot, &very_high, false, &nom)
            .unwrap();
        assert!(["node1", "node2"].contains(&r.node.as_str()));
        // A pod nominated to node2 takes node2 without a search.
        let preferred = p("pref").prio(MID).req(&SMALL).nominated("node2").info();
        let r = algo
            .schedule_with_nominated(&f, &snapshot, &preferred, false, &nom)
            .unwrap();
        assert_eq!(
            (r.node.as_str(), r.feasible_nodes),
            ("node2", 1),
            "seed {seed}"
        );
    }
    // Both nodes taken by nominations of higher priority: a FitError naming the resource.
    nom.add_nominated_pod(Arc::new(p("nom2").prio(HIGH).req(&LARGE).info()), "node2");
    let mid = p("mid").prio(MID).req(&LARGE).info();
    let e = Algorithm::new(100, 1)
        .schedule_with_nominated(&f, &snapshot, &mid, false, &nom)
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "0/2 nodes are available: 2 Insufficient cpu, 2 Insufficient memory."
    );
}

/// A `ProcessPreemption` answer as a function of the map received.
type Answer = dyn Fn(&BTreeMap<String, Victims>) -> Result<BTreeMap<String, Victims>, ExtenderError>
    + Send
    + Sync;

/// An extender whose `ProcessPreemption` answer is computed by a function of the map it gets.
struct Scripted {
    preempts: bool,
    ignorable: bool,
    calls: AtomicUsize,
    answer: Box<Answer>,
}

impl Scripted {
    fn new(
        answer: impl Fn(&BTreeMap<String, Victims>) -> Result<BTreeMap<String, Victims>, ExtenderError>
        + Send
        + Sync
        + 'static,
    ) -> Scripted {
        Scripted {
            preempts: true,
            ignorable: false,
            calls: AtomicUsize::new(0),
            answer: Box::new(answer),
        }
    }
}

impl Extender for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }
    fn filter(&self, _: &PodInfo, _: &[&NodeInfo]) -> Result<ExtenderFilterResult, ExtenderError> {
        unreachable!("not called by preemption")
    }
    fn prioritize(
        &self,
        _: &PodInfo,
        _: &[&NodeInfo],
    ) -> Result<(Vec<HostPriority>, i64), ExtenderError> {
        unreachable!("not called by preemption")
    }
    fn bind(&self, _: &ExtenderBindingArgs) -> Result<(), ExtenderError> {
        unreachable!("not called by preemption")
    }
    fn is_binder(&self) -> bool {
        false
    }
    fn is_interested(&self, _: &PodInfo) -> bool {
        true
    }
    fn is_ignorable(&self) -> bool {
        self.ignorable
    }
    fn supports_preemption(&self) -> bool {
        self.preempts
    }
    fn process_preemption(
        &self,
        _: &PodInfo,
        victims: &BTreeMap<String, Victims>,
        _: &Snapshot,
    ) -> Result<BTreeMap<String, Victims>, ExtenderError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        (self.answer)(victims)
    }
}

fn candidate(node: &str, victim: &str) -> Candidate {
    Candidate {
        name: node.into(),
        victims: Victims {
            pods: vec![Arc::new(p(victim).info())],
            num_pdb_violations: 1,
        },
    }
}

fn names(c: &[Candidate]) -> Vec<&str> {
    c.iter().map(|c| c.name.as_str()).collect()
}

/// `CallExtenders`: each preempting extender rewrites the map in turn; the dry-run order is kept
/// for the nodes left, added nodes come last; an empty map ends the loop; errors fail the
/// attempt unless the extender is ignorable.
#[test]
fn call_extenders_chains_preempting_extenders() {
    let snapshot = snap(vec![n("node1", &LARGE)], &[]);
    let pod = p("p").prio(HIGH).info();
    let cands = || {
        vec![
            candidate("node3", "a"),
            candidate("node1", "b"),
            candidate("node2", "c"),
        ]
    };
    let ext = |e: Scripted| -> Arc<dyn Extender> { Arc::new(e) };

    // No extenders, or none that preempts: unchanged (and not called).
    let out = call_extenders(&[], &pod, &snapshot, cands()).unwrap();
    assert_eq!(names(&out), ["node3", "node1", "node2"]);
    assert_eq!(out[0].victims.num_pdb_violations, 1);
    let silent = Arc::new(Scripted {
        preempts: false,
        ..Scripted::new(|_| Ok(BTreeMap::new()))
    });
    let as_dyn: Arc<dyn Extender> = silent.clone();
    let out = call_extenders(&[as_dyn], &pod, &snapshot, cands()).unwrap();
    assert_eq!(names(&out), ["node3", "node1", "node2"]);
    assert_eq!(silent.calls.load(Ordering::SeqCst), 0);

    // The first drops node1 and adds node0; the second sees that map and drops node2.
    let drop_add = ext(Scripted::new(|m| {
        let mut m = m.clone();
        m.remove("node1");
        m.insert("node0".into(), candidate("node0", "d").victims);
        Ok(m)
    }));
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    let drop2 = ext(Scripted::new(move |m| {
        *seen2.lock().unwrap() = m.keys().cloned().collect::<Vec<_>>();
        let mut m = m.clone();
        m.remove("node2");
        Ok(m)
    }));
    let out = call_extenders(&[drop_add, drop2], &pod, &snapshot, cands()).unwrap();
    assert_eq!(*seen.lock().unwrap(), ["node0", "node2", "node3"]);
    assert_eq!(names(&out), ["node3", "node0"]);

    // An empty answer ends the loop: the next extender is not called.
    let empty = ext(Scripted::new(|_| Ok(BTreeMap::new())));
    let next = Arc::new(Scripted::new(|m| Ok(m.clone())));
    let out = call_extenders(&[empty, next.clone()], &pod, &snapshot, cands()).unwrap();
    assert!(out.is_empty());
    assert_eq!(next.calls.load(Ordering::SeqCst), 0);

    // Errors: skipped when ignorable, else the attempt's Error status.
    let failing = |ignorable| {
        ext(Scripted {
            ignorable,
            ..Scripted::new(|_| Err(ExtenderError::new("extender down")))
        })
    };
    let out = call_extenders(&[failing(true)], &pod, &snapshot, cands()).unwrap();
    assert_eq!(names(&out), ["node3", "node1", "node2"]);
    let s = call_extenders(&[failing(false)], &pod, &snapshot, cands()).unwrap_err();
    assert_eq!(s.code, Code::Error);
    assert_eq!(s.message(), "extender down");
}

/// PostFilter with extenders: one that removes every candidate leaves the pod Unschedulable
/// without a message and nominates nothing; a failing one is the PostFilter's Error.
#[test]
fn post_filter_with_extenders_that_remove_everything_or_fail() {
    let one_pod: [Res; 1] = [("pods", "1")];
    let snapshot = snap(vec![n("node1", &one_pod)], &[p("p1").node("node1")]);
    let f = fwk(vec![plugin(FIT)]);
    let m: BTreeMap<String, Status> = [("node1".to_string(), Status::new(Code::Unschedulable, ""))]
        .into_iter()
        .collect();
    let pod = p("p").prio(HIGH).info();
    let mut pl = DefaultPreemption::new(PreemptionArgs::default(), 4);
    let none: Arc<dyn Extender> = Arc::new(Scripted::new(|_| Ok(BTreeMap::new())));
    let r = pl.post_filter(&f, &snapshot, &pod, &m, &[], &Nominator::new(), &[none]);
    assert_eq!(r.status.code, Code::Unschedulable);
    assert_eq!(r.status.message(), "");
    assert_eq!(r.nominated_node, None);
    assert!(r.victims.is_empty());
    assert_eq!(names(&r.candidates), ["node1"]);
    assert_eq!(r.after_extenders.as_deref().map(names), Some(vec![]));
    let down: Arc<dyn Extender> =
        Arc::new(Scripted::new(|_| Err(ExtenderError::new("extender down"))));
    let r = pl.post_filter(&f, &snapshot, &pod, &m, &[], &Nominator::new(), &[down]);
    assert_eq!(r.status.code, Code::Error);
    assert_eq!(r.status.message(), "extender down");
    assert_eq!(r.nominated_node, None);
    // Kept as they are: the chosen node and its victims come from the extender's answer.
    let keep: Arc<dyn Extender> = Arc::new(Scripted::new(|m| Ok(m.clone())));
    let r = pl.post_filter(&f, &snapshot, &pod, &m, &[], &Nominator::new(), &[keep]);
    assert_eq!(r.nominated_node.as_deref(), Some("node1"));
    assert_eq!(r.victims.len(), 1);
    assert_eq!(r.after_extenders.as_deref().map(names), Some(vec!["node1"]));
}
