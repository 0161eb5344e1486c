//! Upstream `pkg/scheduler/framework/plugins/podtopologyspread/filtering_test.go`, v1.20–v1.22-era
//! copy (index id 292524512: `st.MakePod().SpreadConstraint(maxSkew, key, mode, selector)`,
//! `TpPairToMatchNum map[topologyPair]*int32`): `TestPreFilterState`, `TestSingleConstraint`,
//! `TestMultipleConstraints`, `TestPreFilterDisabled`, case names upstream's. `TpKeyToCriticalPaths`
//! is compared through its first entry (the minimum), the only one Filter reads.
//!
//! Adaptation: the default-constraint cases give the pod's Service selector through a Service in
//! the pod's namespace, as upstream. Not ported: `TestPreFilterStateAddPod` /
//! `TestPreFilterStateRemovePod` (PreFilterExtensions for preemption) and `BenchmarkFilter`.
#![allow(clippy::unwrap_used)]

use k8s_openapi::api::core::v1 as core;

use super::*;
use crate::framework::plugins::testutil::{NodeB, PodB, node, outcome, service, want};
use crate::framework::plugins::testutil_topology::{
    sel_exists, sel_labels, st_pod, topology_snapshot,
};
use crate::model::{Selector, compile_label_selector};

fn zn(name: &str, zone: &str) -> NodeB {
    node(name).labels(&[("zone", zone), ("node", name)])
}

fn four_nodes() -> Vec<NodeB> {
    vec![
        zn("node-a", "zone1"),
        zn("node-b", "zone1"),
        zn("node-x", "zone2"),
        zn("node-y", "zone2"),
    ]
}

/// `st.MakePod().Name(name).Node(node).Label(k, "")...`.
fn on(name: &str, node_name: &str, labels: &[&str]) -> PodB {
    let mut b = st_pod(name).node(node_name);
    for l in labels {
        b = b.label(l, "");
    }
    b
}

fn foo() -> Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector> {
    Some(sel_exists("foo"))
}

fn bar() -> Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector> {
    Some(sel_exists("bar"))
}

/// `(maxSkew, topologyKey, selector)` of a constraint.
type C = (i32, &'static str, Selector);

fn c(
    max_skew: i32,
    key: &'static str,
    sel: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
) -> C {
    (max_skew, key, compile_label_selector(sel.as_ref()).unwrap())
}

struct Want {
    constraints: Vec<C>,
    /// `(key, min MatchNum)`.
    min: Vec<(&'static str, i32)>,
    /// `(key, value, count)`.
    pairs: Vec<(&'static str, &'static str, i32)>,
}

struct StateCase {
    name: &'static str,
    pod: PodB,
    nodes: Vec<NodeB>,
    existing: Vec<PodB>,
    services: Vec<core::Service>,
    default_constraints: Vec<SpreadConstraint>,
    /// `None` for upstream's empty `&preFilterState{}`.
    want: Option<Want>,
}

fn dflt(max_skew: i32, key: &str, when: WhenUnsatisfiable) -> SpreadConstraint {
    SpreadConstraint {
        max_skew,
        topology_key: key.into(),
        when_unsatisfiable: when,
        selector: Selector::Nothing,
    }
}

/// `TestPreFilterState`.
#[test]
fn test_pre_filter_state() {
    use WhenUnsatisfiable::{DoNotSchedule as DNS, ScheduleAnyway as SA};
    let five = || {
        vec![
            on("p-a1", "node-a", &["foo"]),
            on("p-a2", "node-a", &["foo"]),
            on("p-b1", "node-b", &["foo"]),
            on("p-y1", "node-y", &["foo"]),
            on("p-y2", "node-y", &["foo"]),
        ]
    };
    let seven = || {
        vec![
            on("p-a1", "node-a", &["foo"]),
            on("p-a2", "node-a", &["foo"]),
            on("p-b1", "node-b", &["foo"]),
            on("p-y1", "node-y", &["foo"]),
            on("p-y2", "node-y", &["foo"]),
            on("p-y3", "node-y", &["foo"]),
            on("p-y4", "node-y", &["foo"]),
        ]
    };
    let three_nodes = || {
        vec![
            zn("node-a", "zone1"),
            zn("node-b", "zone1"),
            zn("node-y", "zone2"),
        ]
    };
    let svc_foo_bar = || vec![service("", "", &[("foo", "bar")])];
    let cases = vec![
        StateCase {
            name: "clean cluster with one spreadConstraint",
            pod: st_pod("p").label("foo", "").spread_constraint(
                5,
                "zone",
                "DoNotSchedule",
                Some(sel_labels(&[("foo", "bar")])),
            ),
            nodes: four_nodes(),
            existing: vec![],
            services: vec![],
            default_constraints: vec![],
            want: Some(Want {
                constraints: vec![c(5, "zone", Some(sel_labels(&[("foo", "bar")])))],
                min: vec![("zone", 0)],
                pairs: vec![("zone", "zone1", 0), ("zone", "zone2", 0)],
            }),
        },
        StateCase {
            name: "normal case with one spreadConstraint",
            pod: st_pod("p")
                .label("foo", "")
                .spread_constraint(1, "zone", "DoNotSchedule", foo()),
            nodes: four_nodes(),
            existing: five(),
            services: vec![],
            default_constraints: vec![],
            want: Some(Want {
                constraints: vec![c(1, "zone", foo())],
                min: vec![("zone", 2)],
                pairs: vec![("zone", "zone1", 3), ("zone", "zone2", 2)],
            }),
        },
        StateCase {
            name: "normal case with one spreadConstraint, on a 3-zone cluster",
            pod: st_pod("p")
                .label("foo", "")
                .spread_constraint(1, "zone", "DoNotSchedule", foo()),
            nodes: {
                let mut n = four_nodes();
                n.push(zn("node-o", "zone3"));
                n.push(zn("node-p", "zone3"));
                n
            },
            existing: five(),
            services: vec![],
            default_constraints: vec![],
            want: Some(Want {
                constraints: vec![c(1, "zone", foo())],
                min: vec![("zone", 0)],
                pairs: vec![
                    ("zone", "zone1", 3),
                    ("zone", "zone2", 2),
                    ("zone", "zone3", 0),
                ],
            }),
        },
        StateCase {
            name: "namespace mismatch doesn't count",
            pod: st_pod("p")
                .label("foo", "")
                .spread_constraint(1, "zone", "DoNotSchedule", foo()),
            nodes: four_nodes(),
            existing: vec![
                on("p-a1", "node-a", &["foo"]),
                on("p-a2", "node-a", &["foo"]).namespace("ns1"),
                on("p-b1", "node-b", &["foo"]),
                on("p-y1", "node-y", &["foo"]).namespace("ns2"),
                on("p-y2", "node-y", &["foo"]),
            ],
            services: vec![],
            default_constraints: vec![],
            want: Some(Want {
                constraints: vec![c(1, "zone", foo())],
                min: vec![("zone", 1)],
                pairs: vec![("zone", "zone1", 2), ("zone", "zone2", 1)],
            }),
        },
        StateCase {
            name: "normal case with two spreadConstraints",
            pod: st_pod("p")
                .label("foo", "")
                .spread_constraint(1, "zone", "DoNotSchedule", foo())
                .spread_constraint(1, "node", "DoNotSchedule", foo()),
            nodes: four_nodes(),
            existing: seven(),
            services: vec![],
            default_constraints: vec![],
            want: Some(Want {
                constraints: vec![c(1, "zone", foo()), c(1, "node", foo())],
                min: vec![("zone", 3), ("node", 0)],
                pairs: vec![
                    ("zone", "zone1", 3),
                    ("zone", "zone2", 4),
                    ("node", "node-a", 2),
                    ("node", "node-b", 1),
                    ("node", "node-x", 0),
                    ("node", "node-y", 4),
                ],
            }),
        },
        StateCase {
            name: "soft spreadConstraints should be bypassed",
            pod: st_pod("p")
                .label("foo", "")
                .spread_constraint(1, "zone", "ScheduleAnyway", foo())
                .spread_constraint(1, "zone", "DoNotSchedule", foo())
                .spread_constraint(1, "node", "ScheduleAnyway", foo())
                .spread_constraint(1, "node", "DoNotSchedule", foo()),
            nodes: three_nodes(),
            existing: seven(),
            services: vec![],
            default_constraints: vec![],
            want: Some(Want {
                constraints: vec![c(1, "zone", foo()), c(1, "node", foo())],
                min: vec![("zone", 3), ("node", 1)],
                pairs: vec![
                    ("zone", "zone1", 3),
                    ("zone", "zone2", 4),
                    ("node", "node-a", 2),
                    ("node", "node-b", 1),
                    ("node", "node-y", 4),
                ],
            }),
        },
        StateCase {
            name: "different labelSelectors - simple version",
            pod: st_pod("p")
                .label("foo", "")
                .label("bar", "")
                .spread_constraint(1, "zone", "DoNotSchedule", foo())
                .spread_constraint(1, "node", "DoNotSchedule", bar()),
            nodes: three_nodes(),
            existing: vec![on("p-a", "node-a", &["foo"]), on("p-b", "node-b", &["bar"])],
            services: vec![],
            default_constraints: vec![],
            want: Some(Want {
                constraints: vec![c(1, "zone", foo()), c(1, "node", bar())],
                min: vec![("zone", 0), ("node", 0)],
                pairs: vec![
                    ("zone", "zone1", 1),
                    ("zone", "zone2", 0),
                    ("node", "node-a", 0),
                    ("node", "node-b", 1),
                    ("node", "node-y", 0),
                ],
            }),
        },
        StateCase {
            name: "different labelSelectors - complex pods",
            pod: st_pod("p")
                .label("foo", "")
                .label("bar", "")
                .spread_constraint(1, "zone", "DoNotSchedule", foo())
                .spread_constraint(1, "node", "DoNotSchedule", bar()),
            nodes: three_nodes(),
            existing: vec![
                on("p-a1", "node-a", &["foo"]),
                on("p-a2", "node-a", &["foo", "bar"]),
                on("p-b1", "node-b", &["foo"]),
                on("p-y1", "node-y", &["foo"]),
                on("p-y2", "node-y", &["foo", "bar"]),
                on("p-y3", "node-y", &["foo"]),
                on("p-y4", "node-y", &["foo", "bar"]),
            ],
            services: vec![],
            default_constraints: vec![],
            want: Some(Want {
                constraints: vec![c(1, "zone", foo()), c(1, "node", bar())],
                min: vec![("zone", 3), ("node", 0)],
                pairs: vec![
                    ("zone", "zone1", 3),
                    ("zone", "zone2", 4),
                    ("node", "node-a", 1),
                    ("node", "node-b", 0),
                    ("node", "node-y", 2),
                ],
            }),
        },
        StateCase {
            name: "two spreadConstraints, and with podAffinity",
            pod: st_pod("p")
                .label("foo", "")
                .node_affinity_not_in("node", &["node-x"])
                .spread_constraint(1, "zone", "DoNotSchedule", foo())
                .spread_constraint(1, "node", "DoNotSchedule", foo()),
            nodes: four_nodes(),
            existing: seven(),
            services: vec![],
            default_constraints: vec![],
            want: Some(Want {
                constraints: vec![c(1, "zone", foo()), c(1, "node", foo())],
                min: vec![("zone", 3), ("node", 1)],
                pairs: vec![
                    ("zone", "zone1", 3),
                    ("zone", "zone2", 4),
                    ("node", "node-a", 2),
                    ("node", "node-b", 1),
                    ("node", "node-y", 4),
                ],
            }),
        },
        StateCase {
            name: "default constraints and a service",
            pod: st_pod("p").label("foo", "bar").label("baz", "kar"),
            nodes: vec![],
            existing: vec![],
            services: svc_foo_bar(),
            default_constraints: vec![
                dflt(3, "node", DNS),
                dflt(2, "node", SA),
                dflt(5, "rack", DNS),
            ],
            want: Some(Want {
                constraints: vec![
                    c(3, "node", Some(sel_labels(&[("foo", "bar")]))),
                    c(5, "rack", Some(sel_labels(&[("foo", "bar")]))),
                ],
                min: vec![("node", i32::MAX), ("rack", i32::MAX)],
                pairs: vec![],
            }),
        },
        StateCase {
            name: "default constraints and a service that doesn't match",
            pod: st_pod("p").label("foo", "bar"),
            nodes: vec![],
            existing: vec![],
            services: vec![service("", "", &[("baz", "kep")])],
            default_constraints: vec![dflt(3, "node", DNS)],
            want: None,
        },
        StateCase {
            name: "default constraints and a service, but pod has constraints",
            pod: st_pod("p")
                .label("foo", "bar")
                .label("baz", "tar")
                .spread_constraint(
                    1,
                    "zone",
                    "DoNotSchedule",
                    Some(sel_labels(&[("baz", "tar")])),
                )
                .spread_constraint(
                    2,
                    "planet",
                    "ScheduleAnyway",
                    Some(sel_labels(&[("fot", "rok")])),
                ),
            nodes: vec![],
            existing: vec![],
            services: svc_foo_bar(),
            default_constraints: vec![dflt(2, "node", DNS)],
            want: Some(Want {
                constraints: vec![c(1, "zone", Some(sel_labels(&[("baz", "tar")])))],
                min: vec![("zone", i32::MAX)],
                pairs: vec![],
            }),
        },
        StateCase {
            name: "default soft constraints and a service",
            pod: st_pod("p").label("foo", "bar"),
            nodes: vec![],
            existing: vec![],
            services: svc_foo_bar(),
            default_constraints: vec![dflt(2, "node", SA)],
            want: None,
        },
    ];
    for tc in cases {
        let mut snap = topology_snapshot(tc.nodes, &tc.existing, &[]);
        for s in &tc.services {
            snap.upsert_service(s);
        }
        let pl = PodTopologySpread::with_default_constraints(tc.default_constraints);
        let got = pl.compute_pre_filter_state(&tc.pod.info(), &snap);
        let Some(w) = tc.want else {
            assert!(got.is_none(), "{}: {got:?}", tc.name);
            continue;
        };
        let got = got.unwrap_or_else(|| panic!("{}: no state", tc.name));
        let constraints: Vec<C> = got
            .constraints
            .iter()
            .map(|k| (k.max_skew, leak(&k.topology_key), k.selector.clone()))
            .collect();
        assert_eq!(constraints, w.constraints, "{}", tc.name);
        let min: Vec<(&str, i32)> = got
            .constraints
            .iter()
            .zip(&got.min_match_num)
            .map(|(k, m)| (k.topology_key.as_str(), *m))
            .collect();
        assert_eq!(min, w.min, "{}", tc.name);
        let mut pairs: Vec<(String, String, i32)> = got.tp_pair_to_match_num.pairs();
        pairs.sort();
        let mut want_pairs: Vec<(String, String, i32)> = w
            .pairs
            .iter()
            .map(|(k, v, n)| (k.to_string(), v.to_string(), *n))
            .collect();
        want_pairs.sort();
        assert_eq!(pairs, want_pairs, "{}", tc.name);
    }
}

fn leak(s: &str) -> &'static str {
    Box::leak(s.to_string().into_boxed_str())
}

/// `(name, pod, nodes, existing pods, code per node)`.
type CodeCase = (
    &'static str,
    PodB,
    Vec<NodeB>,
    Vec<PodB>,
    Vec<(&'static str, Code)>,
);

/// PreFilter then Filter on each node; the status code per node (upstream compares codes).
fn codes(pod: PodB, nodes: Vec<NodeB>, existing: &[PodB]) -> Vec<(String, Code)> {
    let names: Vec<String> = nodes
        .iter()
        .map(|n| n.0.metadata.name.clone().unwrap())
        .collect();
    let snap = topology_snapshot(nodes, existing, &[]);
    let pi = pod.info();
    let pl = PodTopologySpread::new();
    let mut state = CycleState::new();
    let pre = pl.pre_filter(&mut state, &pi, &snap);
    assert!(pre.is_success(), "preFilter failed with status: {pre:?}");
    names
        .into_iter()
        .map(|n| {
            let s = pl.filter(&state, &pi, snap.node(&n).unwrap());
            if !s.is_success() {
                // The texts behind the codes.
                let text = if s.code == Code::UnschedulableAndUnresolvable {
                    ERR_REASON_NODE_LABEL_NOT_MATCH
                } else {
                    ERR_REASON_CONSTRAINTS_NOT_MATCH
                };
                assert_eq!(outcome(&s), want(s.code, &[text]));
            }
            (n, s.code)
        })
        .collect()
}

fn codes_want(list: &[(&str, Code)]) -> Vec<(String, Code)> {
    list.iter().map(|(n, c)| (n.to_string(), *c)).collect()
}

/// `TestSingleConstraint`.
#[test]
fn test_single_constraint() {
    use Code::{Success as S, Unschedulable as U, UnschedulableAndUnresolvable as UU};
    let six = || {
        vec![
            on("p-a1", "node-a", &["foo"]),
            on("p-a2", "node-a", &["foo"]),
            on("p-b1", "node-b", &["foo"]),
            on("p-y1", "node-y", &["foo"]),
            on("p-y2", "node-y", &["foo"]),
            on("p-y3", "node-y", &["foo"]),
        ]
    };
    let cases: Vec<CodeCase> = vec![
        (
            "no existing pods",
            st_pod("p")
                .label("foo", "")
                .spread_constraint(1, "zone", "DoNotSchedule", foo()),
            four_nodes(),
            vec![],
            vec![("node-a", S), ("node-b", S), ("node-x", S), ("node-y", S)],
        ),
        (
            "no existing pods, incoming pod doesn't match itself",
            st_pod("p")
                .label("foo", "")
                .spread_constraint(1, "zone", "DoNotSchedule", bar()),
            four_nodes(),
            vec![],
            vec![("node-a", S), ("node-b", S), ("node-x", S), ("node-y", S)],
        ),
        (
            "existing pods in a different namespace do not count",
            st_pod("p")
                .label("foo", "")
                .spread_constraint(1, "zone", "DoNotSchedule", foo()),
            four_nodes(),
            vec![
                on("p-a1", "node-a", &["foo"]).namespace("ns1"),
                on("p-b1", "node-a", &["foo"]).namespace("ns2"),
                on("p-x1", "node-x", &["foo"]),
                on("p-y1", "node-y", &["foo"]),
            ],
            vec![("node-a", S), ("node-b", S), ("node-x", U), ("node-y", U)],
        ),
        (
            "pods spread across zones as 3/3, all nodes fit",
            st_pod("p")
                .label("foo", "")
                .spread_constraint(1, "zone", "DoNotSchedule", foo()),
            four_nodes(),
            six(),
            vec![("node-a", S), ("node-b", S), ("node-x", S), ("node-y", S)],
        ),
        (
            "pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
            st_pod("p")
                .label("foo", "")
                .spread_constraint(1, "zone", "DoNotSchedule", foo()),
            vec![
                zn("node-a", "zone1"),
                node("node-b").labels(&[("zon", "zone1"), ("node", "node-b")]),
                zn("node-x", "zone2"),
                zn("node-y", "zone2"),
            ],
            vec![
                on("p-a1", "node-a", &["foo"]),
                on("p-b1", "node-b", &["foo"]),
                on("p-x1", "node-x", &["foo"]),
                on("p-y1", "node-y", &["foo"]),
            ],
            vec![("node-a", S), ("node-b", UU), ("node-x", U), ("node-y", U)],
        ),
        (
            "pod cannot be scheduled as all nodes don't have label 'rack'",
            st_pod("p")
                .label("foo", "")
                .spread_constraint(1, "rack", "DoNotSchedule", foo()),
            vec![zn("node-a", "zone1"), zn("node-x", "zone2")],
            vec![],
            vec![("node-a", UU), ("node-x", UU)],
        ),
        (
            "pods spread across nodes as 2/1/0/3, only node-x fits",
            st_pod("p")
                .label("foo", "")
                .spread_constraint(1, "node", "DoNotSchedule", foo()),
            four_nodes(),
            six(),
            vec![("node-a", U), ("node-b", U), ("node-x", S), ("node-y", U)],
        ),
        (
            "pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
            st_pod("p")
                .label("foo", "")
                .spread_constraint(2, "node", "DoNotSchedule", foo()),
            four_nodes(),
            six(),
            vec![("node-a", U), ("node-b", S), ("node-x", S), ("node-y", U)],
        ),
        (
            "pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
            st_pod("p")
                .label("bar", "")
                .spread_constraint(1, "node", "DoNotSchedule", foo()),
            four_nodes(),
            six(),
            vec![("node-a", U), ("node-b", S), ("node-x", S), ("node-y", U)],
        ),
        (
            "incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
            st_pod("p")
                .label("foo", "")
                .node_affinity_in("node", &["node-a", "node-y"])
                .spread_constraint(1, "node", "DoNotSchedule", foo()),
            four_nodes(),
            six(),
            // node-b and node-x: "in real case, it's false" (NodeAffinity is not run here).
            vec![("node-a", S), ("node-b", S), ("node-x", S), ("node-y", U)],
        ),
        (
            "terminating Pods should be excluded",
            st_pod("p")
                .label("foo", "")
                .spread_constraint(1, "node", "DoNotSchedule", foo()),
            vec![
                node("node-a").labels(&[("node", "node-a")]),
                node("node-b").labels(&[("node", "node-b")]),
            ],
            vec![
                on("p-a", "node-a", &["foo"]).terminating(),
                on("p-b", "node-b", &["foo"]),
            ],
            vec![("node-a", S), ("node-b", U)],
        ),
    ];
    for (name, pod, nodes, existing, w) in cases {
        assert_eq!(codes(pod, nodes, &existing), codes_want(&w), "{name}");
    }
}

/// `TestMultipleConstraints`.
#[test]
fn test_multiple_constraints() {
    use Code::{Success as S, Unschedulable as U, UnschedulableAndUnresolvable as UU};
    let zone_node = |zone_sel: &str, node_sel: &str, labels: &[&str]| {
        let mut b = st_pod("p");
        for l in labels {
            b = b.label(l, "");
        }
        b.spread_constraint(1, "zone", "DoNotSchedule", Some(sel_exists(zone_sel)))
            .spread_constraint(1, "node", "DoNotSchedule", Some(sel_exists(node_sel)))
    };
    let cases: Vec<CodeCase> = vec![
        (
            "two Constraints on zone and node, spreads = [3/3, 2/1/0/3]",
            zone_node("foo", "foo", &["foo"]),
            four_nodes(),
            vec![
                on("p-a1", "node-a", &["foo"]),
                on("p-a2", "node-a", &["foo"]),
                on("p-b1", "node-b", &["foo"]),
                on("p-y1", "node-y", &["foo"]),
                on("p-y2", "node-y", &["foo"]),
                on("p-y3", "node-y", &["foo"]),
            ],
            vec![("node-a", U), ("node-b", U), ("node-x", S), ("node-y", U)],
        ),
        (
            "two Constraints on zone and node, spreads = [3/4, 2/1/0/4]",
            zone_node("foo", "foo", &["foo"]),
            four_nodes(),
            vec![
                on("p-a1", "node-a", &["foo"]),
                on("p-a2", "node-a", &["foo"]),
                on("p-b1", "node-b", &["foo"]),
                on("p-y1", "node-y", &["foo"]),
                on("p-y2", "node-y", &["foo"]),
                on("p-y3", "node-y", &["foo"]),
                on("p-y4", "node-y", &["foo"]),
            ],
            vec![("node-a", U), ("node-b", U), ("node-x", U), ("node-y", U)],
        ),
        (
            "Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]",
            zone_node("foo", "bar", &["foo", "bar"]),
            four_nodes(),
            vec![
                on("p-a1", "node-a", &["foo"]),
                on("p-y1", "node-y", &["bar"]),
            ],
            vec![("node-a", U), ("node-b", U), ("node-x", S), ("node-y", U)],
        ),
        (
            "Constraints hold different labelSelectors, spreads = [1/0, 0/0/1/1]",
            zone_node("foo", "bar", &["foo", "bar"]),
            four_nodes(),
            vec![
                on("p-a1", "node-a", &["foo"]),
                on("p-x1", "node-x", &["bar"]),
                on("p-y1", "node-y", &["bar"]),
            ],
            vec![("node-a", U), ("node-b", U), ("node-x", U), ("node-y", U)],
        ),
        (
            "Constraints hold different labelSelectors, spreads = [2/3, 1/0/0/1]",
            zone_node("foo", "bar", &["foo", "bar"]),
            four_nodes(),
            vec![
                on("p-a1", "node-a", &["foo"]),
                on("p-a2", "node-a", &["foo", "bar"]),
                on("p-y1", "node-y", &["foo"]),
                on("p-y2", "node-y", &["foo", "bar"]),
                on("p-y3", "node-y", &["foo"]),
            ],
            vec![("node-a", U), ("node-b", S), ("node-x", U), ("node-y", U)],
        ),
        (
            "Constraints hold different labelSelectors but pod doesn't match itself on 'zone' constraint",
            zone_node("foo", "bar", &["bar"]),
            four_nodes(),
            vec![
                on("p-a1", "node-a", &["foo"]),
                on("p-x1", "node-x", &["bar"]),
                on("p-y1", "node-y", &["bar"]),
            ],
            vec![("node-a", S), ("node-b", S), ("node-x", U), ("node-y", U)],
        ),
        (
            "two Constraints on zone and node, absence of label 'node' on node-x, spreads = [1/1, 1/0/0/1]",
            zone_node("foo", "foo", &["foo"]),
            vec![
                zn("node-a", "zone1"),
                zn("node-b", "zone1"),
                node("node-x").labels(&[("zone", "zone2")]),
                zn("node-y", "zone2"),
            ],
            vec![
                on("p-a1", "node-a", &["foo"]),
                on("p-y3", "node-y", &["foo"]),
            ],
            vec![("node-a", U), ("node-b", S), ("node-x", UU), ("node-y", U)],
        ),
    ];
    for (name, pod, nodes, existing, w) in cases {
        assert_eq!(codes(pod, nodes, &existing), codes_want(&w), "{name}");
    }
}

/// `TestPreFilterDisabled`.
#[test]
fn test_pre_filter_disabled() {
    let got =
        PodTopologySpread::new().filter(&CycleState::new(), &st_pod("p").info(), &node("n").info());
    assert_eq!(
        outcome(&got),
        want(
            Code::Error,
            &["reading \"PreFilterPodTopologySpread\" from cycleState: not found"]
        )
    );
}

/// Not upstream: v1.22 counts, in PreFilter, the pods of nodes that the pod's node affinity
/// excludes when their domain has an eligible node (kubernetes/kubernetes#106971: zoneA = 2,
/// zoneB = 1 in v1.22, where v1.24 counts zoneA = 0), and a nil `labelSelector` matches no pod,
/// not even the incoming one.
#[test]
fn v1_22_counting_quirks() {
    let nodes = || {
        vec![
            node("node-1").labels(&[("zone", "zoneA"), ("name", "1")]),
            node("node-2").labels(&[("zone", "zoneA"), ("name", "2")]),
            node("node-3").labels(&[("zone", "zoneB"), ("name", "3")]),
        ]
    };
    let existing = vec![
        on("p1", "node-2", &["foo"]),
        on("p2", "node-2", &["foo"]),
        on("p3", "node-3", &["foo"]),
    ];
    let pod = st_pod("p")
        .label("foo", "")
        .node_affinity_not_in("name", &["2"])
        .spread_constraint(1, "zone", "DoNotSchedule", foo());
    let snap = topology_snapshot(nodes(), &existing, &[]);
    let s = PodTopologySpread::new()
        .compute_pre_filter_state(&pod.clone().info(), &snap)
        .unwrap();
    assert_eq!(s.tp_pair_to_match_num.get(0, "zoneA"), Some(2));
    assert_eq!(s.tp_pair_to_match_num.get(0, "zoneB"), Some(1));
    assert_eq!(
        codes(pod, nodes(), &existing),
        codes_want(&[
            ("node-1", Code::Unschedulable),
            ("node-2", Code::Unschedulable),
            ("node-3", Code::Success)
        ])
    );

    let null = st_pod("p")
        .label("foo", "")
        .spread_constraint(1, "zone", "DoNotSchedule", None);
    let s = PodTopologySpread::new()
        .compute_pre_filter_state(&null.clone().info(), &snap)
        .unwrap();
    assert_eq!(s.tp_pair_to_match_num.get(0, "zoneA"), Some(0));
    assert_eq!(s.min_match_num, vec![0]);
    assert!(
        codes(null, nodes(), &existing)
            .iter()
            .all(|(_, c)| *c == Code::Success)
    );
}

/// Not upstream: pods without `DoNotSchedule` constraints (none, or only `ScheduleAnyway`)
/// skip PreFilter; the batch entry point agrees with `filter`.
#[test]
fn pre_filter_skips_without_hard_constraints() {
    let snap = topology_snapshot(four_nodes(), &[on("p-a1", "node-a", &["foo"])], &[]);
    let pl = PodTopologySpread::new();
    let mut st = CycleState::new();
    assert!(pl.pre_filter(&mut st, &st_pod("p").info(), &snap).is_skip());
    let soft = st_pod("p").spread_constraint(1, "zone", "ScheduleAnyway", foo());
    assert!(pl.pre_filter(&mut st, &soft.info(), &snap).is_skip());
    let hard = st_pod("p")
        .label("foo", "")
        .spread_constraint(1, "node", "DoNotSchedule", foo())
        .info();
    assert!(pl.pre_filter(&mut st, &hard, &snap).is_success());
    let mut candidates: Vec<u32> = (0..4).collect();
    let mut failed = Vec::new();
    pl.filter_nodes(&st, &hard, &snap, &mut candidates, &mut failed);
    assert_eq!(failed.len(), 1);
    assert_eq!(snap.nodes()[failed[0].0 as usize].name, "node-a");
    assert_eq!(candidates.len(), 3);
}
