//! Upstream `pkg/scheduler/framework/plugins/podtopologyspread/scoring_test.go`, v1.20–v1.22-era
//! copy (index id 408832065: `PreScore(ctx, cs, pod, nodes []*v1.Node)`): `TestPreScoreStateEmptyNodes`
//! and `TestPodTopologySpreadScore`, case names upstream's.
//!
//! Adaptation in `TestPreScoreStateEmptyNodes`: the copy read predates v1.22's
//! `helper.DefaultSelector`, which finds a pod's ReplicaSet through its controller
//! ownerReference (see [`Snapshot::default_selector`]); the cases whose ReplicaSet selects the pod
//! give the pod that ownerReference, and the "doesn't match" case gives it none. Not ported: the
//! benchmarks.
#![allow(clippy::unwrap_used)]

use k8s_openapi::api::apps::v1 as apps;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;

use super::*;
use crate::framework::plugins::pod_topology_spread::{LABEL_HOSTNAME, LABEL_TOPOLOGY_ZONE};
use crate::framework::plugins::testutil::{NodeB, PodB, node};
use crate::framework::plugins::testutil_topology::{
    sel_exists, sel_labels, st_pod, topology_snapshot,
};
use crate::model::{Selector, compile_label_selector};

fn rs(name: &str, selector: meta::LabelSelector) -> apps::ReplicaSet {
    apps::ReplicaSet {
        metadata: meta::ObjectMeta {
            name: Some(name.into()),
            namespace: Some(String::new()),
            ..Default::default()
        },
        spec: apps::ReplicaSetSpec {
            selector,
            ..Default::default()
        },
        status: None,
    }
}

fn dflt(max_skew: i32, key: &str, when: WhenUnsatisfiable) -> SpreadConstraint {
    SpreadConstraint {
        max_skew,
        topology_key: key.into(),
        when_unsatisfiable: when,
        selector: Selector::Nothing,
    }
}

type C = (i32, String, Selector);

fn c(max_skew: i32, key: &str, sel: meta::LabelSelector) -> C {
    (
        max_skew,
        key.to_string(),
        compile_label_selector(Some(&sel)).unwrap(),
    )
}

/// `(constraints, ignored nodes, topology pairs, domain counts of the normalizing weights)`.
type EmptyWant = (
    Vec<C>,
    Vec<&'static str>,
    Vec<(&'static str, &'static str)>,
    Vec<usize>,
);

/// `(name, pod, existing pods, nodes, failed nodes, expected scores)`.
type ScoreCase = (
    &'static str,
    PodB,
    Vec<PodB>,
    Vec<NodeB>,
    Vec<NodeB>,
    Vec<(&'static str, i64)>,
);

struct EmptyNodesCase {
    name: &'static str,
    pod: PodB,
    nodes: Vec<NodeB>,
    replica_sets: Vec<apps::ReplicaSet>,
    plugin: PodTopologySpread,
    /// `None`: upstream's state without constraints.
    want: Option<EmptyWant>,
}

/// `TestPreScoreStateEmptyNodes`: constraints, ignored nodes, topology pairs (all counts 0: no
/// pods) and the sizes the normalizing weights come from.
#[test]
fn test_pre_score_state_empty_nodes() {
    use WhenUnsatisfiable::{DoNotSchedule as DNS, ScheduleAnyway as SA};
    let hz = |name: &str, zone: &str| node(name).labels(&[("zone", zone), (LABEL_HOSTNAME, name)]);
    let cases = vec![
        EmptyNodesCase {
            name: "normal case",
            pod: st_pod("p")
                .label("foo", "")
                .spread_constraint(1, "zone", "ScheduleAnyway", Some(sel_exists("foo")))
                .spread_constraint(1, LABEL_HOSTNAME, "ScheduleAnyway", Some(sel_exists("foo"))),
            nodes: vec![
                hz("node-a", "zone1"),
                hz("node-b", "zone1"),
                hz("node-x", "zone2"),
            ],
            replica_sets: vec![],
            plugin: PodTopologySpread::new(),
            want: Some((
                vec![
                    c(1, "zone", sel_exists("foo")),
                    c(1, LABEL_HOSTNAME, sel_exists("foo")),
                ],
                vec![],
                vec![("zone", "zone1"), ("zone", "zone2")],
                vec![2, 3],
            )),
        },
        EmptyNodesCase {
            name: "node-x doesn't have label zone",
            pod: st_pod("p")
                .label("foo", "")
                .spread_constraint(1, "zone", "ScheduleAnyway", Some(sel_exists("foo")))
                .spread_constraint(1, LABEL_HOSTNAME, "ScheduleAnyway", Some(sel_exists("bar"))),
            nodes: vec![
                hz("node-a", "zone1"),
                hz("node-b", "zone1"),
                node("node-x").labels(&[(LABEL_HOSTNAME, "node-x")]),
            ],
            replica_sets: vec![],
            plugin: PodTopologySpread::new(),
            want: Some((
                vec![
                    c(1, "zone", sel_exists("foo")),
                    c(1, LABEL_HOSTNAME, sel_exists("bar")),
                ],
                vec!["node-x"],
                vec![("zone", "zone1")],
                vec![1, 2],
            )),
        },
        EmptyNodesCase {
            name: "system defaults constraints and a replica set",
            pod: st_pod("p").label("foo", "tar").label("baz", "sup").owner(
                "apps/v1",
                "ReplicaSet",
                "rs1",
            ),
            // The release-1.22 version of the case (kubernetes/kubernetes#106604, the cherry-pick
            // of #105046 in v1.22.5): nodes with no zone are not ignored under system defaults;
            // they form the zone "".
            nodes: vec![
                node("node-a").labels(&[(LABEL_HOSTNAME, "node-a"), (LABEL_TOPOLOGY_ZONE, "mars")]),
                node("node-b").labels(&[(LABEL_HOSTNAME, "node-b"), (LABEL_TOPOLOGY_ZONE, "mars")]),
                node("node-c").labels(&[(LABEL_HOSTNAME, "node-c")]),
                node("node-d").labels(&[(LABEL_HOSTNAME, "node-d")]),
            ],
            replica_sets: vec![rs("rs1", sel_exists("foo"))],
            plugin: PodTopologySpread::system_defaulting(),
            want: Some((
                vec![
                    c(3, LABEL_HOSTNAME, sel_exists("foo")),
                    c(5, LABEL_TOPOLOGY_ZONE, sel_exists("foo")),
                ],
                vec![],
                vec![(LABEL_TOPOLOGY_ZONE, "mars"), (LABEL_TOPOLOGY_ZONE, "")],
                vec![4, 2],
            )),
        },
        EmptyNodesCase {
            name: "defaults constraints and a replica set",
            pod: st_pod("p").label("foo", "tar").label("baz", "sup").owner(
                "apps/v1",
                "ReplicaSet",
                "rs1",
            ),
            nodes: vec![node("node-a").labels(&[
                ("rack", "rack1"),
                (LABEL_HOSTNAME, "node-a"),
                ("planet", "mars"),
            ])],
            replica_sets: vec![rs("rs1", sel_exists("foo"))],
            plugin: PodTopologySpread::with_default_constraints(vec![
                dflt(1, LABEL_HOSTNAME, SA),
                dflt(2, "rack", DNS),
                dflt(2, "planet", SA),
            ]),
            want: Some((
                vec![
                    c(1, LABEL_HOSTNAME, sel_exists("foo")),
                    c(2, "planet", sel_exists("foo")),
                ],
                vec![],
                vec![("planet", "mars")],
                vec![1, 1],
            )),
        },
        EmptyNodesCase {
            name: "defaults constraints and a replica set that doesn't match",
            pod: st_pod("p").label("foo", "bar").label("baz", "sup"),
            nodes: vec![node("node-a").labels(&[("planet", "mars")])],
            replica_sets: vec![rs("rs1", sel_exists("tar"))],
            plugin: PodTopologySpread::with_default_constraints(vec![dflt(2, "planet", SA)]),
            want: None,
        },
        EmptyNodesCase {
            name: "defaults constraints and a replica set, but pod has constraints",
            pod: st_pod("p")
                .label("foo", "bar")
                .label("baz", "sup")
                .owner("apps/v1", "ReplicaSet", "rs1")
                .spread_constraint(
                    1,
                    "zone",
                    "DoNotSchedule",
                    Some(sel_labels(&[("foo", "bar")])),
                )
                .spread_constraint(
                    2,
                    "planet",
                    "ScheduleAnyway",
                    Some(sel_labels(&[("baz", "sup")])),
                ),
            nodes: vec![node("node-a").labels(&[("planet", "mars"), ("galaxy", "andromeda")])],
            replica_sets: vec![rs("rs1", sel_exists("foo"))],
            plugin: PodTopologySpread::with_default_constraints(vec![dflt(2, "galaxy", SA)]),
            want: Some((
                vec![c(2, "planet", sel_labels(&[("baz", "sup")]))],
                vec![],
                vec![("planet", "mars")],
                vec![1],
            )),
        },
    ];
    for tc in cases {
        let names: Vec<String> = tc
            .nodes
            .iter()
            .map(|n| n.0.metadata.name.clone().unwrap())
            .collect();
        let mut snap = topology_snapshot(tc.nodes, &[], &[]);
        for r in &tc.replica_sets {
            snap.upsert_replica_set(r);
        }
        let feasible: Vec<u32> = names.iter().map(|n| snap.node_index(n).unwrap()).collect();
        let got = tc
            .plugin
            .compute_pre_score_state(&tc.pod.info(), &snap, &feasible);
        let Some((constraints, ignored, pairs, sizes)) = tc.want else {
            assert!(got.is_none(), "{}: {got:?}", tc.name);
            continue;
        };
        let got = got.unwrap_or_else(|| panic!("{}: no state", tc.name));
        let got_c: Vec<C> = got
            .constraints
            .iter()
            .map(|k| (k.max_skew, k.topology_key.clone(), k.selector.clone()))
            .collect();
        assert_eq!(got_c, constraints, "{}", tc.name);
        let mut got_ignored: Vec<&str> = got.ignored_nodes.iter().map(String::as_str).collect();
        got_ignored.sort();
        assert_eq!(got_ignored, ignored, "{}", tc.name);
        let mut got_pairs: Vec<(String, String, i64)> = got.topology_pair_to_pod_counts.pairs();
        got_pairs.sort();
        let mut want_pairs: Vec<(String, String, i64)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string(), 0))
            .collect();
        want_pairs.sort();
        assert_eq!(got_pairs, want_pairs, "{}", tc.name);
        let want_w: Vec<f64> = sizes
            .iter()
            .map(|s| topology_normalizing_weight(*s))
            .collect();
        assert_eq!(got.topology_normalizing_weight, want_w, "{}", tc.name);
    }
}

fn on(name: &str, node_name: &str, labels: &[&str]) -> PodB {
    let mut b = st_pod(name).node(node_name);
    for l in labels {
        b = b.label(l, "");
    }
    b
}

fn host(name: &str) -> NodeB {
    node(name).labels(&[(LABEL_HOSTNAME, name)])
}

fn zh(name: &str, zone: &str) -> NodeB {
    node(name).labels(&[("zone", zone), (LABEL_HOSTNAME, name)])
}

/// Upstream's harness: a snapshot of `nodes` + `failed_nodes`, PreScore on `nodes`, Score each,
/// NormalizeScore.
fn scores(
    pod: PodB,
    existing: &[PodB],
    nodes: Vec<NodeB>,
    failed: Vec<NodeB>,
) -> Vec<(String, i64)> {
    let names: Vec<String> = nodes
        .iter()
        .map(|n| n.0.metadata.name.clone().unwrap())
        .collect();
    let mut all = nodes;
    all.extend(failed);
    let snap = topology_snapshot(all, existing, &[]);
    let pi = pod.info();
    let feasible: Vec<u32> = names.iter().map(|n| snap.node_index(n).unwrap()).collect();
    let pl = PodTopologySpread::new();
    let mut state = CycleState::new();
    let mut out = vec![0; feasible.len()];
    match pl.pre_score(&mut state, &pi, &snap, &feasible).unwrap() {
        ScoreMode::Uniform(v) => out.fill(v),
        ScoreMode::PerNode => {
            for (o, n) in out.iter_mut().zip(&names) {
                *o = pl.score(&state, &pi, snap.node(n).unwrap()).unwrap();
            }
            let mut batch = vec![0; feasible.len()];
            pl.score_nodes(&state, &pi, &snap, &feasible, &mut batch)
                .unwrap();
            assert_eq!(batch, out, "score_nodes disagrees with score");
            pl.normalize_score(&state, &pi, &snap, &feasible, &mut out)
                .unwrap();
        }
    }
    names.into_iter().zip(out).collect()
}

fn expect(list: &[(&str, i64)]) -> Vec<(String, i64)> {
    list.iter().map(|(n, s)| (n.to_string(), *s)).collect()
}

/// `TestPodTopologySpreadScore`.
#[test]
fn test_pod_topology_spread_score() {
    let soft = |max_skew: i32, key: &str| {
        st_pod("p").label("foo", "").spread_constraint(
            max_skew,
            key,
            "ScheduleAnyway",
            Some(sel_exists("foo")),
        )
    };
    let zone_host = |zone_sel: &str, host_sel: &str| {
        st_pod("p")
            .label("foo", "")
            .label("bar", "")
            .spread_constraint(1, "zone", "ScheduleAnyway", Some(sel_exists(zone_sel)))
            .spread_constraint(
                1,
                LABEL_HOSTNAME,
                "ScheduleAnyway",
                Some(sel_exists(host_sel)),
            )
    };
    let pods_2_1_0_3 = || {
        vec![
            on("p-a1", "node-a", &["foo"]),
            on("p-a2", "node-a", &["foo"]),
            on("p-b1", "node-b", &["foo"]),
            on("p-d1", "node-d", &["foo"]),
            on("p-d2", "node-d", &["foo"]),
            on("p-d3", "node-d", &["foo"]),
        ]
    };
    let pods_4_2_1_3 = || {
        vec![
            on("p-a1", "node-a", &["foo"]),
            on("p-a2", "node-a", &["foo"]),
            on("p-a3", "node-a", &["foo"]),
            on("p-a4", "node-a", &["foo"]),
            on("p-b1", "node-b", &["foo"]),
            on("p-b2", "node-b", &["foo"]),
            on("p-x1", "node-x", &["foo"]),
            on("p-y1", "node-y", &["foo"]),
            on("p-y2", "node-y", &["foo"]),
            on("p-y3", "node-y", &["foo"]),
        ]
    };
    let abcd = || {
        vec![
            host("node-a"),
            host("node-b"),
            host("node-c"),
            host("node-d"),
        ]
    };
    let cases: Vec<ScoreCase> = vec![
        (
            "one constraint on node, no existing pods",
            soft(1, LABEL_HOSTNAME),
            vec![],
            vec![host("node-a"), host("node-b")],
            vec![],
            vec![("node-a", 100), ("node-b", 100)],
        ),
        (
            "one constraint on node, only one node is candidate",
            soft(1, LABEL_HOSTNAME),
            vec![
                on("p-a1", "node-a", &["foo"]),
                on("p-a2", "node-a", &["foo"]),
                on("p-b1", "node-b", &["foo"]),
            ],
            vec![host("node-a")],
            vec![host("node-b")],
            vec![("node-a", 100)],
        ),
        (
            "one constraint on node, all nodes have the same number of matching pods",
            soft(1, LABEL_HOSTNAME),
            vec![
                on("p-a1", "node-a", &["foo"]),
                on("p-b1", "node-b", &["foo"]),
            ],
            vec![host("node-a"), host("node-b")],
            vec![],
            vec![("node-a", 100), ("node-b", 100)],
        ),
        (
            "one constraint on node, all 4 nodes are candidates",
            soft(1, LABEL_HOSTNAME),
            pods_2_1_0_3(),
            abcd(),
            vec![],
            vec![
                ("node-a", 40),
                ("node-b", 80),
                ("node-c", 100),
                ("node-d", 0),
            ],
        ),
        (
            "one constraint on node, all 4 nodes are candidates, maxSkew=2",
            soft(2, LABEL_HOSTNAME),
            pods_2_1_0_3(),
            abcd(),
            vec![],
            vec![
                ("node-a", 50),
                ("node-b", 83),
                ("node-c", 100),
                ("node-d", 16),
            ],
        ),
        (
            "one constraint on node, all 4 nodes are candidates, maxSkew=3",
            soft(3, LABEL_HOSTNAME),
            vec![
                on("p-a1", "node-a", &["foo"]),
                on("p-a2", "node-a", &["foo"]),
                on("p-a3", "node-a", &["foo"]),
                on("p-a4", "node-a", &["foo"]),
                on("p-b1", "node-b", &["foo"]),
                on("p-b2", "node-b", &["foo"]),
                on("p-b3", "node-b", &["foo"]),
                on("p-c1", "node-c", &["foo"]),
                on("p-c2", "node-c", &["foo"]),
                on("p-d1", "node-d", &["foo"]),
            ],
            abcd(),
            vec![],
            vec![
                ("node-a", 33),
                ("node-b", 55),
                ("node-c", 77),
                ("node-d", 100),
            ],
        ),
        (
            "one constraint on node, 3 out of 4 nodes are candidates",
            soft(1, LABEL_HOSTNAME),
            pods_4_2_1_3(),
            vec![host("node-a"), host("node-b"), host("node-x")],
            vec![host("node-y")],
            vec![("node-a", 16), ("node-b", 66), ("node-x", 100)],
        ),
        (
            "one constraint on node, 3 out of 4 nodes are candidates, one node doesn't match topology key",
            soft(1, LABEL_HOSTNAME),
            pods_4_2_1_3(),
            vec![
                host("node-a"),
                node("node-b").labels(&[("n", "node-b")]),
                host("node-x"),
            ],
            vec![host("node-y")],
            vec![("node-a", 20), ("node-b", 0), ("node-x", 100)],
        ),
        (
            "one constraint on zone, 3 out of 4 nodes are candidates",
            soft(1, "zone"),
            pods_4_2_1_3(),
            vec![
                zh("node-a", "zone1"),
                zh("node-b", "zone1"),
                zh("node-x", "zone2"),
            ],
            vec![zh("node-y", "zone2")],
            vec![("node-a", 62), ("node-b", 62), ("node-x", 100)],
        ),
        (
            "two Constraints on zone and node, 2 out of 4 nodes are candidates",
            st_pod("p")
                .label("foo", "")
                .spread_constraint(1, "zone", "ScheduleAnyway", Some(sel_exists("foo")))
                .spread_constraint(1, LABEL_HOSTNAME, "ScheduleAnyway", Some(sel_exists("foo"))),
            vec![
                on("p-a1", "node-a", &["foo"]),
                on("p-a2", "node-a", &["foo"]),
                on("p-b1", "node-b", &["foo"]),
                on("p-x1", "node-x", &["foo"]),
                on("p-x2", "node-x", &["foo"]),
                on("p-y1", "node-y", &["foo"]),
                on("p-y2", "node-y", &["foo"]),
                on("p-y3", "node-y", &["foo"]),
                on("p-y4", "node-y", &["foo"]),
            ],
            vec![zh("node-a", "zone1"), zh("node-x", "zone2")],
            vec![zh("node-b", "zone1"), zh("node-y", "zone2")],
            vec![("node-a", 100), ("node-x", 54)],
        ),
        (
            "two Constraints on zone and node, with different labelSelectors",
            zone_host("foo", "bar"),
            vec![
                on("p-a1", "node-a", &["foo"]),
                on("p-b1", "node-b", &["foo", "bar"]),
                on("p-y1", "node-y", &["foo"]),
                on("p-y2", "node-y", &["bar"]),
            ],
            vec![
                zh("node-a", "zone1"),
                zh("node-b", "zone1"),
                zh("node-x", "zone2"),
                zh("node-y", "zone2"),
            ],
            vec![],
            vec![
                ("node-a", 75),
                ("node-b", 25),
                ("node-x", 100),
                ("node-y", 50),
            ],
        ),
        (
            "two Constraints on zone and node, with different labelSelectors, some nodes have 0 pods",
            zone_host("foo", "bar"),
            vec![
                on("p-b1", "node-b", &["bar"]),
                on("p-x1", "node-x", &["foo"]),
                on("p-y1", "node-y", &["foo", "bar"]),
            ],
            vec![
                zh("node-a", "zone1"),
                zh("node-b", "zone1"),
                zh("node-x", "zone2"),
                zh("node-y", "zone2"),
            ],
            vec![],
            vec![
                ("node-a", 100),
                ("node-b", 75),
                ("node-x", 50),
                ("node-y", 0),
            ],
        ),
        (
            "two Constraints on zone and node, with different labelSelectors, 3 out of 4 nodes are candidates",
            zone_host("foo", "bar"),
            vec![
                on("p-a1", "node-a", &["foo"]),
                on("p-b1", "node-b", &["foo", "bar"]),
                on("p-y1", "node-y", &["foo"]),
                on("p-y2", "node-y", &["bar"]),
            ],
            vec![
                zh("node-a", "zone1"),
                zh("node-b", "zone1"),
                zh("node-x", "zone2"),
            ],
            vec![zh("node-y", "zone2")],
            vec![("node-a", 75), ("node-b", 25), ("node-x", 100)],
        ),
        (
            "existing pods in a different namespace do not count",
            soft(1, LABEL_HOSTNAME),
            vec![
                on("p-a1", "node-a", &["foo"]).namespace("ns1"),
                on("p-a2", "node-a", &["foo"]),
                on("p-b1", "node-b", &["foo"]),
                on("p-b2", "node-b", &["foo"]),
            ],
            vec![host("node-a"), host("node-b")],
            vec![],
            vec![("node-a", 100), ("node-b", 50)],
        ),
        (
            "terminating Pods should be excluded",
            soft(1, LABEL_HOSTNAME),
            vec![
                on("p-a", "node-a", &["foo"]).terminating(),
                on("p-b", "node-b", &["foo"]),
            ],
            vec![host("node-a"), host("node-b")],
            vec![],
            vec![("node-a", 100), ("node-b", 0)],
        ),
    ];
    for (name, pod, existing, nodes, failed, want) in cases {
        assert_eq!(
            scores(pod, &existing, nodes, failed),
            expect(&want),
            "{name}"
        );
    }
}

/// Not upstream: without `ScheduleAnyway` constraints every node gets 100 (v1.22's all-zero raw
/// scores normalized) and PreScore costs nothing; `DoNotSchedule` constraints are not scored.
#[test]
fn uniform_max_without_soft_constraints() {
    let snap = topology_snapshot(vec![host("node-a"), host("node-b")], &[], &[]);
    let pl = PodTopologySpread::new();
    let mut st = CycleState::new();
    for pod in [
        st_pod("p"),
        st_pod("p").spread_constraint(1, LABEL_HOSTNAME, "DoNotSchedule", Some(sel_exists("foo"))),
    ] {
        assert_eq!(
            pl.pre_score(&mut st, &pod.info(), &snap, &[0, 1]).unwrap(),
            ScoreMode::Uniform(MAX_NODE_SCORE)
        );
    }
}

/// Not upstream: `maxSkew - 1` is Go `int32` arithmetic. A pod read from a cluster file is not
/// API-validated, so `maxSkew` can be `i32::MIN`; scoring it must wrap as v1.22 does (to
/// `MaxInt32`), not panic on overflow.
#[test]
fn max_skew_minus_one_wraps_like_go_int32() {
    assert_eq!(score_for_count(0, i32::MIN, 1.0), f64::from(i32::MAX));
    let pod = st_pod("p").label("foo", "").spread_constraint(
        i32::MIN,
        LABEL_HOSTNAME,
        "ScheduleAnyway",
        Some(sel_exists("foo")),
    );
    let got = scores(
        pod,
        &[on("p-a", "node-a", &["foo"])],
        vec![host("node-a"), host("node-b")],
        vec![],
    );
    // Raw scores 2147483647 + ln(4) → 2147483648 and 2147483647: node-b, with no matching pod,
    // scores higher.
    assert_eq!(got, expect(&[("node-a", 99), ("node-b", 100)]));
}

/// Not upstream (the regression kubernetes/kubernetes#102136 reports, fixed for release-1.22 by
/// #106604): with `defaultingType: System`, nodes without a zone label are not ignored for a pod
/// without constraints of its own, so hostname spreading still separates them. Raw scores:
/// node-a `2·ln(4) + 2` → 4, node-b `0 + 2` → 2 (no zone term: neither node has the label).
/// A pod with its own constraints still requires every key.
#[test]
fn system_defaults_score_nodes_without_zone() {
    let nodes = || vec![host("node-a"), host("node-b")];
    let owned = |name: &str, node_name: &str| {
        st_pod(name)
            .node(node_name)
            .label("foo", "")
            .owner("apps/v1", "ReplicaSet", "rs1")
    };
    let existing = [owned("p-a1", "node-a"), owned("p-a2", "node-a")];
    let mut snap = topology_snapshot(nodes(), &existing, &[]);
    snap.upsert_replica_set(&rs("rs1", sel_exists("foo")));
    let feasible = [0, 1];
    let pl = PodTopologySpread::system_defaulting();
    let run = |pod: PodB| {
        let pi = pod.info();
        let mut state = CycleState::new();
        let mut out = vec![0; 2];
        match pl.pre_score(&mut state, &pi, &snap, &feasible).unwrap() {
            ScoreMode::Uniform(v) => out.fill(v),
            ScoreMode::PerNode => {
                pl.score_nodes(&state, &pi, &snap, &feasible, &mut out)
                    .unwrap();
                pl.normalize_score(&state, &pi, &snap, &feasible, &mut out)
                    .unwrap();
            }
        }
        out
    };
    assert_eq!(run(owned("p", "")), vec![50, 100]);
    let explicit = owned("p", "").spread_constraint(
        1,
        LABEL_TOPOLOGY_ZONE,
        "ScheduleAnyway",
        Some(sel_exists("foo")),
    );
    assert_eq!(run(explicit), vec![0, 0]);
}
