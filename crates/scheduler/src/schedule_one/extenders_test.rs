//! The cycle with extenders: filtering, scoring, failures (after v1.22's
//! `generic_scheduler_test.go` `TestGenericSchedulerWithExtenders`).

#![allow(clippy::unwrap_used)]

use std::sync::atomic::Ordering;

use super::*;
use crate::extender::fake::{
    FakeExtender, error_predicate, error_prioritizer, false_predicate, node1_prioritizer,
    node2_prioritizer, only_node_predicate, true_predicate,
};
use crate::framework::WeightedScore;
use crate::framework::plugins::testutil::{node, pod, snapshot as snap_of};
use crate::framework::{NodeInfo, ScoreMode, ScorePlugin, Status};

/// Upstream `node2PrioritizerPlugin` (`pkg/scheduler/testing/fake_extender.go`): 100 for
/// `node2`, 10 for the others.
struct Node2Prioritizer;

impl ScorePlugin for Node2Prioritizer {
    fn name(&self) -> &'static str {
        "Node2Prioritizer"
    }
    fn score(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        Ok(if node.name == "node2" { 100 } else { 10 })
    }
}

/// The `TrueFilter` profile (no filter rejects anything), with `Node2Prioritizer` at
/// `weight` when given.
fn framework(node2_prioritizer_weight: Option<i64>) -> Framework {
    Framework {
        filters: vec![],
        scores: node2_prioritizer_weight
            .map(|weight| WeightedScore {
                plugin: Box::new(Node2Prioritizer) as Box<dyn ScorePlugin>,
                weight,
                display_name: "Node2Prioritizer".into(),
            })
            .into_iter()
            .collect(),
        run_all_filters: false,
    }
}

fn arcs(v: Vec<FakeExtender>) -> Vec<Arc<dyn Extender>> {
    v.into_iter()
        .map(|e| Arc::new(e) as Arc<dyn Extender>)
        .collect()
}

fn with_prioritizer(
    e: FakeExtender,
    f: crate::extender::fake::PriorityFunc,
    prioritizer_weight: i64,
    weight: i64,
) -> FakeExtender {
    FakeExtender {
        prioritizers: vec![(f, prioritizer_weight)],
        weight,
        ..e
    }
}

/// Upstream `pkg/scheduler/core/extender_test.go` `TestGenericSchedulerWithExtenders`
/// (kubernetes/kubernetes @013f1ae12049b9f51053cd3fa16ae2c1af60057d, v1.21/v1.22: the
/// extenders are passed to `Schedule`), case names kept: `SuggestedHost`,
/// `EvaluatedNodes`, `FeasibleNodes`, or an error.
#[test]
fn test_generic_scheduler_with_extenders() {
    struct Case {
        name: &'static str,
        node2_prioritizer: Option<i64>,
        extenders: Vec<FakeExtender>,
        nodes: Vec<&'static str>,
        expected: Option<(&'static str, usize, usize)>,
    }
    let p = |preds| FakeExtender::with_predicates(preds);
    let cases = vec![
        Case {
            name: "test 1",
            node2_prioritizer: None,
            extenders: vec![p(vec![true_predicate()]), p(vec![error_predicate()])],
            nodes: vec!["node1", "node2"],
            expected: None,
        },
        Case {
            name: "test 2",
            node2_prioritizer: None,
            extenders: vec![p(vec![true_predicate()]), p(vec![false_predicate()])],
            nodes: vec!["node1", "node2"],
            expected: None,
        },
        Case {
            name: "test 3",
            node2_prioritizer: None,
            extenders: vec![
                p(vec![true_predicate()]),
                p(vec![only_node_predicate("node1")]),
            ],
            nodes: vec!["node1", "node2"],
            expected: Some(("node1", 2, 1)),
        },
        Case {
            name: "test 4",
            node2_prioritizer: None,
            extenders: vec![
                p(vec![only_node_predicate("node2")]),
                p(vec![only_node_predicate("node1")]),
            ],
            nodes: vec!["node1", "node2"],
            expected: None,
        },
        Case {
            name: "test 5",
            node2_prioritizer: None,
            extenders: vec![with_prioritizer(
                p(vec![true_predicate()]),
                error_prioritizer,
                10,
                1,
            )],
            nodes: vec!["node1"],
            expected: Some(("node1", 1, 1)),
        },
        Case {
            name: "test 6",
            node2_prioritizer: None,
            extenders: vec![
                with_prioritizer(p(vec![true_predicate()]), node1_prioritizer, 10, 1),
                with_prioritizer(p(vec![true_predicate()]), node2_prioritizer, 10, 5),
            ],
            nodes: vec!["node1", "node2"],
            expected: Some(("node2", 2, 2)),
        },
        Case {
            // node2 has higher score
            name: "test 7",
            node2_prioritizer: Some(20),
            extenders: vec![with_prioritizer(
                p(vec![true_predicate()]),
                node1_prioritizer,
                10,
                1,
            )],
            nodes: vec!["node1", "node2"],
            expected: Some(("node2", 2, 2)),
        },
        Case {
            // The scheduler must not send the pod to an uninterested extender: its
            // errors would fail the test.
            name: "test 8",
            node2_prioritizer: Some(1),
            extenders: vec![FakeExtender {
                un_interested: true,
                ..with_prioritizer(p(vec![error_predicate()]), error_prioritizer, 10, 0)
            }],
            nodes: vec!["node1", "node2"],
            expected: Some(("node2", 2, 2)),
        },
        Case {
            // Not failing in Filter/Prioritize when the extender errs and is ignorable.
            name: "test 9",
            node2_prioritizer: None,
            extenders: vec![
                FakeExtender {
                    ignorable: true,
                    ..p(vec![error_predicate()])
                },
                p(vec![only_node_predicate("node1")]),
            ],
            nodes: vec!["node1", "node2"],
            expected: Some(("node1", 2, 1)),
        },
    ];
    for c in cases {
        let fwk = framework(c.node2_prioritizer);
        let snap = snap_of(c.nodes.iter().map(|n| node(n)).collect(), &[]);
        let mut algo = Algorithm::new(DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE, 1);
        algo.set_extenders(arcs(c.extenders));
        let r = algo.schedule(&fwk, &snap, &pod("ignored").info(), false);
        match (c.expected, r) {
            (None, Err(_)) => {}
            (Some((host, evaluated, feasible)), Ok(r)) => {
                assert_eq!(
                    (r.node.as_str(), r.evaluated_nodes, r.feasible_nodes),
                    (host, evaluated, feasible),
                    "{}",
                    c.name
                );
            }
            (want, got) => panic!("{}: want {want:?}, got {got:?}", c.name),
        }
    }
}

/// The errors and FitError texts of the failing cases above: an extender's filter error
/// is passed on as is; nodes it filters out carry its messages in the FitError, counted
/// and sorted as `FitError.Error()` does.
#[test]
fn extender_failures_in_fit_error_text() {
    let fwk = framework(None);
    let snap = snap_of(vec![node("node1"), node("node2")], &[]);
    let run = |extenders: Vec<FakeExtender>| {
        let mut algo = Algorithm::new(0, 1);
        algo.set_extenders(arcs(extenders));
        algo.schedule(&fwk, &snap, &pod("p").info(), true)
    };
    // test 1: ErrorPredicateExtender.
    let e = run(vec![
        FakeExtender::with_predicates(vec![true_predicate()]),
        FakeExtender {
            name: "http://ext".into(),
            ..FakeExtender::with_predicates(vec![error_predicate()])
        },
    ])
    .unwrap_err();
    assert_eq!(
        e,
        ScheduleError::Extender {
            extender: "http://ext".into(),
            message: "some error".into()
        }
    );
    assert_eq!(e.to_string(), "some error");
    // test 4: each node rejected by one of the two extenders.
    let ScheduleError::Fit(fe) = run(vec![
        FakeExtender::with_predicates(vec![only_node_predicate("node2")]),
        FakeExtender::with_predicates(vec![only_node_predicate("node1")]),
    ])
    .unwrap_err() else {
        panic!("expected a FitError")
    };
    assert_eq!(
        fe.to_string(),
        "0/2 nodes are available: 1 FakeExtender: node \"node1\" failed, \
         1 FakeExtender: node \"node2\" failed."
    );
    // Plugin and extender reasons together: one node fails a filter plugin, the other
    // the extender (FailedAndUnresolvable).
    let fwk = Framework {
        filters: vec![Box::new(
            crate::framework::plugins::node_unschedulable::NodeUnschedulable,
        )],
        scores: vec![],
        run_all_filters: false,
    };
    let snap = snap_of(vec![node("node1").unschedulable(), node("node2")], &[]);
    let unresolvable: crate::extender::fake::FitPredicate =
        Box::new(|_, _| Status::new(Code::UnschedulableAndUnresolvable, "never"));
    let mut algo = Algorithm::new(0, 1);
    algo.set_extenders(arcs(vec![FakeExtender::with_predicates(vec![
        unresolvable,
    ])]));
    let ScheduleError::Fit(fe) = algo
        .schedule(&fwk, &snap, &pod("p").info(), false)
        .unwrap_err()
    else {
        panic!("expected a FitError")
    };
    assert_eq!(
        fe.to_string(),
        "0/2 nodes are available: 1 FakeExtender: node \"node2\" failed and unresolvable, \
         1 node(s) were unschedulable."
    );
    assert_eq!(
        fe.node_to_status(&snap)["node2"].code,
        Code::UnschedulableAndUnresolvable
    );
    assert_eq!(
        fe.node_to_status(&snap)["node1"].plugin,
        "NodeUnschedulable"
    );
}

/// prioritizeNodes arithmetic, read from the explanation: plugin total + Σ extender
/// score × extender weight × 10 (test 7's numbers: Node2Prioritizer weight 20 gives 200 /
/// 2000; the extender's prioritizer (weight 10) gives node1 10 × 10 = 100 and node2
/// 1 × 10 = 10, times extender weight 1, times 10).
#[test]
fn extender_scores_are_weighted_and_scaled() {
    let fwk = framework(Some(20));
    let snap = snap_of(vec![node("node1"), node("node2")], &[]);
    let mut algo = Algorithm::new(0, 1);
    algo.set_extenders(arcs(vec![FakeExtender {
        name: "ext".into(),
        ..with_prioritizer(
            FakeExtender::with_predicates(vec![true_predicate()]),
            node1_prioritizer,
            10,
            1,
        )
    }]));
    let r = algo.schedule(&fwk, &snap, &pod("p").info(), true).unwrap();
    let scores = r.scores.unwrap();
    assert_eq!(scores["node1"].total, 200 + 1000);
    assert_eq!(scores["node2"].total, 2000 + 100);
    assert_eq!(
        scores["node1"].plugins,
        [
            ("Node2Prioritizer".to_string(), 10),
            ("Extender(ext)".to_string(), 1000)
        ]
    );
    assert_eq!(r.node, "node2");

    // No score plugin: the plugin part is 0 when an extender is configured (upstream
    // gives every node 1 only when there are neither score plugins nor extenders).
    let fwk = framework(None);
    let mut algo = Algorithm::new(0, 1);
    algo.set_extenders(arcs(vec![with_prioritizer(
        FakeExtender::with_predicates(vec![true_predicate()]),
        node1_prioritizer,
        1,
        3,
    )]));
    let scores = algo
        .schedule(&fwk, &snap, &pod("p").info(), true)
        .unwrap()
        .scores
        .unwrap();
    assert_eq!(scores["node1"].total, 10 * 3 * 10);
    assert_eq!(scores["node2"].total, 3 * 10);
    let mut algo = Algorithm::new(0, 1);
    let scores = algo
        .schedule(&fwk, &snap, &pod("p").info(), true)
        .unwrap()
        .scores
        .unwrap();
    assert_eq!(scores["node1"].total, 1);
}

/// A plugin whose PreScore gives every node the same score.
struct Uniform50;

impl ScorePlugin for Uniform50 {
    fn name(&self) -> &'static str {
        "Uniform50"
    }
    fn pre_score(
        &self,
        _: &mut CycleState,
        _: &PodInfo,
        _: &Snapshot,
        _: &[u32],
    ) -> Result<ScoreMode, Status> {
        Ok(ScoreMode::Uniform(50))
    }
    fn score(&self, _: &CycleState, _: &PodInfo, _: &NodeInfo) -> Result<i64, Status> {
        Ok(50)
    }
}

/// An extender score near `i64::MAX / 10`: after × 10 the node total is close to
/// `i64::MAX`. Extender answers are not range-checked (as upstream).
fn huge_for_node1(_: &PodInfo, nodes: &[&NodeInfo]) -> Result<Vec<(String, i64)>, String> {
    Ok(nodes
        .iter()
        .map(|n| {
            let s = if n.name == "node1" { i64::MAX / 10 } else { 1 };
            (n.name.clone(), s)
        })
        .collect())
}

/// Out-of-range extender scores wrap like Go's int64 arithmetic, in the reported totals
/// too: no overflow panic when a uniform plugin score is added for the explanation.
#[test]
fn huge_extender_scores_wrap_in_explained_totals() {
    let fwk = Framework {
        filters: vec![],
        scores: vec![WeightedScore {
            plugin: Box::new(Uniform50) as Box<dyn ScorePlugin>,
            weight: 1,
            display_name: "Uniform50".into(),
        }],
        run_all_filters: false,
    };
    let snap = snap_of(vec![node("node1"), node("node2")], &[]);
    let mut algo = Algorithm::new(0, 1);
    algo.set_extenders(arcs(vec![with_prioritizer(
        FakeExtender::with_predicates(vec![true_predicate()]),
        huge_for_node1,
        1,
        1,
    )]));
    let r = algo.schedule(&fwk, &snap, &pod("p").info(), true).unwrap();
    let scores = r.scores.unwrap();
    assert_eq!(
        scores["node1"].total,
        (i64::MAX / 10).wrapping_mul(10).wrapping_add(50)
    );
    assert_eq!(scores["node2"].total, 10 + 50);
    assert_eq!(r.node, "node2", "the wrapped total is negative");
}

/// A single feasible node is chosen without asking extenders to score (test 5 has an
/// erroring prioritizer; here the call count shows it is not called at all), and a pod
/// no extender is interested in costs no call.
#[test]
fn single_feasible_node_and_uninterested_pods_make_no_calls() {
    let fwk = framework(None);
    let snap = snap_of(vec![node("node1"), node("node2")], &[]);
    let ext = Arc::new(with_prioritizer(
        FakeExtender::with_predicates(vec![only_node_predicate("node1")]),
        node1_prioritizer,
        1,
        1,
    ));
    let mut algo = Algorithm::new(0, 1);
    algo.set_extenders(vec![ext.clone()]);
    let r = algo.schedule(&fwk, &snap, &pod("p").info(), true).unwrap();
    assert_eq!(r.node, "node1");
    assert_eq!(ext.calls.load(Ordering::SeqCst), 1, "filter only");

    let quiet = Arc::new(FakeExtender {
        un_interested: true,
        ..FakeExtender::with_predicates(vec![error_predicate()])
    });
    let mut algo = Algorithm::new(0, 1);
    algo.set_extenders(vec![quiet.clone()]);
    algo.schedule(&fwk, &snap, &pod("p").info(), false).unwrap();
    assert_eq!(quiet.calls.load(Ordering::SeqCst), 0);
}

/// `ignoredByScheduler` managed resources are not checked by NodeResourcesFit (v1.22
/// `factory.go` passes them as `NodeResourcesFitArgs.IgnoredResources`); the others are.
#[test]
fn ignored_by_scheduler_resources_skip_node_resources_fit() {
    let policy = |ignored: bool| {
        crate::policy::parse_policy(
            "inline",
            &format!(
                r#"{{"kind":"Policy","apiVersion":"v1","predicates":[{{"name":"PodFitsResources"}}],
                   "priorities":[],"extenders":[{{"urlPrefix":"http://127.0.0.1:1","filterVerb":"filter",
                   "managedResources":[{{"name":"example.com/foo","ignoredByScheduler":{ignored}}}]}}]}}"#
            ),
        )
        .unwrap()
        .resolved
    };
    let snap = snap_of(
        vec![node("n1").allocatable(&[("cpu", "4"), ("memory", "8Gi"), ("pods", "10")])],
        &[],
    );
    let p = pod("p")
        .container(&[("cpu", "1"), ("example.com/foo", "2")])
        .info();
    let fwk = Framework::from_policy(&policy(true)).unwrap();
    let r = Algorithm::new(0, 1)
        .schedule(&fwk, &snap, &p, false)
        .unwrap();
    assert_eq!(r.node, "n1");
    let fwk = Framework::from_policy(&policy(false)).unwrap();
    let e = Algorithm::new(0, 1)
        .schedule(&fwk, &snap, &p, false)
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "0/1 nodes are available: 1 Insufficient example.com/foo."
    );
}

/// An extender whose `urlPrefix` Go's HTTP client cannot send to (v1.22's
/// compatibility_test.go `"/prefix"`): accepted; its failing call is skipped when it is
/// ignorable, and otherwise fails the pod with Go's error, as v1.22's
/// `findNodesThatPassExtenders` does.
#[cfg(feature = "http-extender")]
#[test]
fn extender_without_a_scheme_is_skipped_when_ignorable_else_fails_the_pod() {
    let policy = |ignorable: bool| {
        crate::policy::parse_policy(
            "inline",
            &format!(
                r#"{{"kind":"Policy","apiVersion":"v1","predicates":[{{"name":"PodFitsResources"}}],
                   "priorities":[],"extenders":[{{"urlPrefix":"/prefix","filterVerb":"filter",
                   "ignorable":{ignorable}}}]}}"#
            ),
        )
        .unwrap()
        .resolved
    };
    let snap = snap_of(
        vec![node("n1").allocatable(&[("cpu", "4"), ("memory", "8Gi"), ("pods", "10")])],
        &[],
    );
    let p = pod("p").container(&[("cpu", "1")]).info();
    let run = |ignorable: bool| {
        let resolved = policy(ignorable);
        let fwk = Framework::from_policy(&resolved).unwrap();
        let mut algo = Algorithm::new(0, 1);
        algo.set_extenders(crate::extender::build_extenders(&resolved.extenders).unwrap());
        algo.schedule(&fwk, &snap, &p, false)
    };
    assert_eq!(run(true).unwrap().node, "n1");
    let e = run(false).unwrap_err();
    assert!(matches!(e, ScheduleError::Extender { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        r#"Post "/prefix/filter": unsupported protocol scheme """#
    );
}
