//! Upstream `pkg/scheduler/framework/plugins/interpodaffinity/filtering_test.go`, v1.22-era copy
//! read from ahg-g/kubernetes @183dddeefe0249c691900db9eb90f28371a8e30c (the namespaceSelector
//! work that shipped in v1.21/v1.22: `disableNSSelector` field, `ParseError` PreFilter cases,
//! `ErrReasonAffinityNotMatch` as first reason). Case names are upstream's.
//!
//! Not ported: `TestPreFilterStateAddRemovePod` and `TestPreFilterStateClone` (PreFilterExtensions
//! for preemption, which this scheduler does not run). The two "fails PreFilter with an invalid
//! label syntax" cases fail earlier here: [`PodInfo::from_pod`] rejects the pod with a
//! [`crate::model::PodError`] naming the field (upstream: PreFilter returns
//! `UnschedulableAndUnresolvable` "parsing pod: ..."); the same value error text is checked.
#![allow(clippy::unwrap_used)]

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;

use super::*;
use crate::framework::plugins::testutil::{NodeB, PodB, node, outcome, want};
use crate::framework::plugins::testutil_topology::{
    namespace, term, term_ns, topology_snapshot, with_affinity_terms,
};

const DEFAULT_NAMESPACE: &str = "";
const POD_LABEL: &[(&str, &str)] = &[("service", "securityscan")];
const POD_LABEL2: &[(&str, &str)] = &[("security", "S1")];
const LABELS1: &[(&str, &str)] = &[("region", "r1"), ("zone", "z11")];

/// `namespaces` of upstream's tests (defined in scoring_test.go).
fn namespaces() -> Vec<core::Namespace> {
    vec![
        namespace("subteam1.team1", &[("team", "team1")]),
        namespace("subteam2.team1", &[("team", "team1")]),
        namespace("subteam1.team2", &[("team", "team2")]),
        namespace("subteam2.team2", &[("team", "team2")]),
    ]
}

fn ok() -> (Code, Vec<String>) {
    want(Code::Success, &[])
}

fn affinity_rules() -> (Code, Vec<String>) {
    want(
        Code::UnschedulableAndUnresolvable,
        &[
            ERR_REASON_AFFINITY_NOT_MATCH,
            ERR_REASON_AFFINITY_RULES_NOT_MATCH,
        ],
    )
}

fn anti_affinity_rules() -> (Code, Vec<String>) {
    want(
        Code::Unschedulable,
        &[
            ERR_REASON_AFFINITY_NOT_MATCH,
            ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
        ],
    )
}

fn existing_anti_affinity_rules() -> (Code, Vec<String>) {
    want(
        Code::Unschedulable,
        &[
            ERR_REASON_AFFINITY_NOT_MATCH,
            ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
        ],
    )
}

/// A pod `{Spec: {NodeName}, ObjectMeta: {Namespace, Labels}}` with no affinity.
fn plain(ns: &str, node_name: &str, labels: &[(&str, &str)]) -> PodB {
    let mut b = PodB::default_pod().namespace(ns).labels(labels);
    if !node_name.is_empty() {
        b = b.node(node_name);
    }
    b
}

impl PodB {
    fn default_pod() -> PodB {
        crate::framework::plugins::testutil::pod("")
    }
}

/// `labelSelector: {service In [securityscan, value2]}`.
fn svc_in(values: &[&str], key: &str) -> core::PodAffinityTerm {
    term(&[("service", "In", values)], key)
}

fn team1() -> meta::LabelSelector {
    crate::framework::plugins::testutil_topology::exprs(&[("team", "In", &["team1"])])
}

/// Run PreFilter and then Filter on each node (upstream's harness). A Skip from PreFilter
/// stands for a PreFilter that finds nothing to check: every node passes.
fn statuses(
    pod: PodB,
    pods: &[PodB],
    nodes: Vec<NodeB>,
    namespaces: &[core::Namespace],
) -> Vec<(Code, Vec<String>)> {
    let names: Vec<String> = nodes
        .iter()
        .map(|n| n.0.metadata.name.clone().unwrap())
        .collect();
    let snap = topology_snapshot(nodes, pods, namespaces);
    let pi = pod.info();
    let plugin = InterPodAffinity::default();
    let mut state = CycleState::new();
    let pre = plugin.pre_filter(&mut state, &pi, &snap);
    names
        .iter()
        .map(|n| {
            if pre.is_skip() {
                ok()
            } else {
                assert!(pre.is_success(), "prefilter failed with status: {pre:?}");
                outcome(&plugin.filter(&state, &pi, snap.node(n).unwrap()))
            }
        })
        .collect()
}

struct SingleCase {
    name: &'static str,
    pod: PodB,
    pods: Vec<PodB>,
    want: (Code, Vec<String>),
}

/// `TestRequiredAffinitySingleNode`, except the two invalid-selector cases (see
/// [`test_invalid_affinity_label_syntax`]).
#[test]
fn test_required_affinity_single_node() {
    let node1 = || node("machine1").labels(LABELS1);
    let existing = || vec![plain("", "machine1", POD_LABEL)];
    let cases = vec![
        SingleCase {
            name: "A pod that has no required pod affinity scheduling rules can schedule onto a node with no existing pods",
            pod: plain("", "", &[]),
            pods: vec![],
            want: ok(),
        },
        SingleCase {
            name: "satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In operator that matches the existing pod",
            pod: with_affinity_terms(
                DEFAULT_NAMESPACE,
                "",
                POD_LABEL2,
                vec![svc_in(&["securityscan", "value2"], "region")],
                vec![],
            ),
            pods: existing(),
            want: ok(),
        },
        SingleCase {
            name: "satisfies the pod with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using not in operator in labelSelector that matches the existing pod",
            pod: with_affinity_terms(
                DEFAULT_NAMESPACE,
                "",
                POD_LABEL2,
                vec![term(
                    &[("service", "NotIn", &["securityscan3", "value3"])],
                    "region",
                )],
                vec![],
            ),
            pods: existing(),
            want: ok(),
        },
        SingleCase {
            name: "Does not satisfy the PodAffinity with labelSelector because of diff Namespace",
            pod: with_affinity_terms(
                DEFAULT_NAMESPACE,
                "",
                POD_LABEL2,
                vec![term_ns(
                    svc_in(&["securityscan", "value2"], ""),
                    &["DiffNameSpace"],
                    None,
                )],
                vec![],
            ),
            pods: vec![plain("ns", "machine1", POD_LABEL)],
            want: affinity_rules(),
        },
        SingleCase {
            name: "Doesn't satisfy the PodAffinity because of unmatching labelSelector with the existing pod",
            pod: with_affinity_terms(
                DEFAULT_NAMESPACE,
                "",
                POD_LABEL,
                vec![svc_in(&["antivirusscan", "value2"], "")],
                vec![],
            ),
            pods: existing(),
            want: affinity_rules(),
        },
        SingleCase {
            name: "satisfies the PodAffinity with different label Operators in multiple RequiredDuringSchedulingIgnoredDuringExecution ",
            pod: with_affinity_terms(
                DEFAULT_NAMESPACE,
                "",
                POD_LABEL2,
                vec![
                    term(
                        &[
                            ("service", "Exists", &[]),
                            ("wrongkey", "DoesNotExist", &[]),
                        ],
                        "region",
                    ),
                    term(
                        &[
                            ("service", "In", &["securityscan"]),
                            ("service", "NotIn", &["WrongValue"]),
                        ],
                        "region",
                    ),
                ],
                vec![],
            ),
            pods: existing(),
            want: ok(),
        },
        SingleCase {
            name: "The labelSelector requirements(items of matchExpressions) are ANDed, the pod cannot schedule onto the node because one of the matchExpression item don't match.",
            pod: with_affinity_terms(
                DEFAULT_NAMESPACE,
                "",
                POD_LABEL2,
                vec![
                    term(
                        &[
                            ("service", "Exists", &[]),
                            ("wrongkey", "DoesNotExist", &[]),
                        ],
                        "region",
                    ),
                    term(
                        &[
                            ("service", "In", &["securityscan2"]),
                            ("service", "NotIn", &["WrongValue"]),
                        ],
                        "region",
                    ),
                ],
                vec![],
            ),
            pods: existing(),
            want: affinity_rules(),
        },
        SingleCase {
            name: "satisfies the PodAffinity and PodAntiAffinity with the existing pod",
            pod: with_affinity_terms(
                DEFAULT_NAMESPACE,
                "",
                POD_LABEL2,
                vec![svc_in(&["securityscan", "value2"], "region")],
                vec![svc_in(&["antivirusscan", "value2"], "node")],
            ),
            pods: existing(),
            want: ok(),
        },
        SingleCase {
            name: "satisfies the PodAffinity and PodAntiAffinity and PodAntiAffinity symmetry with the existing pod",
            pod: with_affinity_terms(
                DEFAULT_NAMESPACE,
                "",
                POD_LABEL2,
                vec![svc_in(&["securityscan", "value2"], "region")],
                vec![svc_in(&["antivirusscan", "value2"], "node")],
            ),
            pods: vec![with_affinity_terms(
                DEFAULT_NAMESPACE,
                "machine1",
                POD_LABEL,
                vec![],
                vec![svc_in(&["antivirusscan", "value2"], "node")],
            )],
            want: ok(),
        },
        SingleCase {
            name: "satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod",
            pod: with_affinity_terms(
                DEFAULT_NAMESPACE,
                "",
                POD_LABEL2,
                vec![svc_in(&["securityscan", "value2"], "region")],
                vec![svc_in(&["securityscan", "value2"], "zone")],
            ),
            pods: existing(),
            want: anti_affinity_rules(),
        },
        SingleCase {
            name: "satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity symmetry with the existing pod",
            pod: with_affinity_terms(
                DEFAULT_NAMESPACE,
                "",
                POD_LABEL,
                vec![svc_in(&["securityscan", "value2"], "region")],
                vec![svc_in(&["antivirusscan", "value2"], "node")],
            ),
            pods: vec![with_affinity_terms(
                DEFAULT_NAMESPACE,
                "machine1",
                POD_LABEL,
                vec![],
                vec![svc_in(&["securityscan", "value2"], "zone")],
            )],
            want: existing_anti_affinity_rules(),
        },
        SingleCase {
            name: "pod matches its own Label in PodAffinity and that matches the existing pod Labels",
            pod: with_affinity_terms(
                DEFAULT_NAMESPACE,
                "",
                POD_LABEL,
                vec![term(
                    &[("service", "NotIn", &["securityscan", "value2"])],
                    "region",
                )],
                vec![],
            ),
            pods: vec![plain("", "machine2", POD_LABEL)],
            want: affinity_rules(),
        },
        SingleCase {
            name: "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. doesn't satisfy PodAntiAffinity symmetry with the existing pod",
            pod: plain("", "", POD_LABEL),
            pods: vec![with_affinity_terms(
                DEFAULT_NAMESPACE,
                "machine1",
                POD_LABEL,
                vec![],
                vec![svc_in(&["securityscan", "value2"], "zone")],
            )],
            want: existing_anti_affinity_rules(),
        },
        SingleCase {
            name: "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. satisfy PodAntiAffinity symmetry with the existing pod",
            pod: plain("", "", POD_LABEL),
            pods: vec![with_affinity_terms(
                DEFAULT_NAMESPACE,
                "machine1",
                POD_LABEL,
                vec![],
                vec![term(
                    &[("service", "NotIn", &["securityscan", "value2"])],
                    "zone",
                )],
            )],
            want: ok(),
        },
        SingleCase {
            name: "satisfies the PodAntiAffinity with existing pod but doesn't satisfy PodAntiAffinity symmetry with incoming pod",
            pod: with_affinity_terms(
                DEFAULT_NAMESPACE,
                "",
                POD_LABEL,
                vec![],
                vec![
                    term(&[("service", "Exists", &[])], "region"),
                    term(&[("security", "Exists", &[])], "region"),
                ],
            ),
            pods: vec![with_affinity_terms(
                DEFAULT_NAMESPACE,
                "machine1",
                POD_LABEL2,
                vec![],
                vec![term(&[("security", "Exists", &[])], "zone")],
            )],
            want: anti_affinity_rules(),
        },
        SingleCase {
            name: "PodAntiAffinity symmetry check a1: incoming pod and existing pod partially match each other on AffinityTerms",
            pod: with_affinity_terms(
                DEFAULT_NAMESPACE,
                "",
                POD_LABEL,
                vec![],
                vec![
                    term(&[("service", "Exists", &[])], "zone"),
                    term(&[("security", "Exists", &[])], "zone"),
                ],
            ),
            pods: vec![with_affinity_terms(
                DEFAULT_NAMESPACE,
                "machine1",
                POD_LABEL2,
                vec![],
                vec![term(&[("security", "Exists", &[])], "zone")],
            )],
            want: anti_affinity_rules(),
        },
        SingleCase {
            name: "PodAntiAffinity symmetry check a2: incoming pod and existing pod partially match each other on AffinityTerms",
            pod: with_affinity_terms(
                DEFAULT_NAMESPACE,
                "",
                POD_LABEL2,
                vec![],
                vec![term(&[("security", "Exists", &[])], "zone")],
            ),
            pods: vec![with_affinity_terms(
                DEFAULT_NAMESPACE,
                "machine1",
                POD_LABEL,
                vec![],
                vec![
                    term(&[("service", "Exists", &[])], "zone"),
                    term(&[("security", "Exists", &[])], "zone"),
                ],
            )],
            want: existing_anti_affinity_rules(),
        },
        SingleCase {
            name: "PodAntiAffinity symmetry check b1: incoming pod and existing pod partially match each other on AffinityTerms",
            pod: with_affinity_terms(
                DEFAULT_NAMESPACE,
                "",
                &[("abc", ""), ("xyz", "")],
                vec![],
                vec![
                    term(&[("abc", "Exists", &[])], "zone"),
                    term(&[("def", "Exists", &[])], "zone"),
                ],
            ),
            pods: vec![with_affinity_terms(
                DEFAULT_NAMESPACE,
                "machine1",
                &[("def", ""), ("xyz", "")],
                vec![],
                vec![
                    term(&[("abc", "Exists", &[])], "zone"),
                    term(&[("def", "Exists", &[])], "zone"),
                ],
            )],
            want: anti_affinity_rules(),
        },
        SingleCase {
            name: "PodAntiAffinity symmetry check b2: incoming pod and existing pod partially match each other on AffinityTerms",
            pod: with_affinity_terms(
                DEFAULT_NAMESPACE,
                "",
                &[("def", ""), ("xyz", "")],
                vec![],
                vec![
                    term(&[("abc", "Exists", &[])], "zone"),
                    term(&[("def", "Exists", &[])], "zone"),
                ],
            ),
            pods: vec![with_affinity_terms(
                DEFAULT_NAMESPACE,
                "machine1",
                &[("abc", ""), ("xyz", "")],
                vec![],
                vec![
                    term(&[("abc", "Exists", &[])], "zone"),
                    term(&[("def", "Exists", &[])], "zone"),
                ],
            )],
            want: anti_affinity_rules(),
        },
        SingleCase {
            name: "affinity with NamespaceSelector",
            pod: with_affinity_terms(
                DEFAULT_NAMESPACE,
                "",
                POD_LABEL2,
                vec![term_ns(
                    svc_in(&["securityscan", "value2"], "region"),
                    &[],
                    Some(team1()),
                )],
                vec![],
            ),
            pods: vec![plain("subteam1.team1", "machine1", POD_LABEL)],
            want: ok(),
        },
        SingleCase {
            name: "affinity with non-matching NamespaceSelector",
            pod: with_affinity_terms(
                DEFAULT_NAMESPACE,
                "",
                POD_LABEL2,
                vec![term_ns(
                    svc_in(&["securityscan", "value2"], "region"),
                    &[],
                    Some(team1()),
                )],
                vec![],
            ),
            pods: vec![plain("subteam1.team2", "machine1", POD_LABEL)],
            want: affinity_rules(),
        },
        SingleCase {
            name: "anti-affinity with matching NamespaceSelector",
            pod: with_affinity_terms(
                "subteam1.team1",
                "",
                POD_LABEL2,
                vec![],
                vec![term_ns(
                    svc_in(&["securityscan", "value2"], "zone"),
                    &[],
                    Some(team1()),
                )],
            ),
            pods: vec![plain("subteam2.team1", "machine1", POD_LABEL)],
            want: anti_affinity_rules(),
        },
        SingleCase {
            name: "anti-affinity with matching all NamespaceSelector",
            pod: with_affinity_terms(
                "subteam1.team1",
                "",
                POD_LABEL2,
                vec![],
                vec![term_ns(
                    svc_in(&["securityscan", "value2"], "zone"),
                    &[],
                    Some(meta::LabelSelector::default()),
                )],
            ),
            pods: vec![plain("subteam2.team1", "machine1", POD_LABEL)],
            want: anti_affinity_rules(),
        },
        SingleCase {
            name: "anti-affinity with non-matching NamespaceSelector",
            pod: with_affinity_terms(
                "subteam1.team1",
                "",
                POD_LABEL2,
                vec![],
                vec![term_ns(
                    svc_in(&["securityscan", "value2"], "zone"),
                    &[],
                    Some(team1()),
                )],
            ),
            pods: vec![plain("subteam1.team2", "machine1", POD_LABEL)],
            want: ok(),
        },
    ];
    for c in cases {
        let got = statuses(c.pod, &c.pods, vec![node1()], &namespaces());
        assert_eq!(got, vec![c.want], "{}", c.name);
    }
}

/// `TestRequiredAffinitySingleNode` cases "PodAffinity fails PreFilter with an invalid affinity
/// label syntax" and "PodAntiAffinity fails PreFilter with an invalid antiaffinity label syntax":
/// upstream's message contains `Invalid value: "{{.bad-value.}}"`; here the pod is rejected
/// when it is read, with the same value error and the field path.
#[test]
fn test_invalid_affinity_label_syntax() {
    let bad = |aff: &str, anti: &str| {
        with_affinity_terms(
            DEFAULT_NAMESPACE,
            "",
            POD_LABEL,
            vec![svc_in(&[aff], "region")],
            vec![svc_in(&[anti, "value2"], "node")],
        )
    };
    let cases = [
        (
            "PodAffinity fails PreFilter with an invalid affinity label syntax",
            bad("{{.bad-value.}}", "antivirusscan"),
            "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector",
        ),
        (
            "PodAntiAffinity fails PreFilter with an invalid antiaffinity label syntax",
            bad("foo", "{{.bad-value.}}"),
            "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector",
        ),
    ];
    for (name, pod, field) in cases {
        let e = PodInfo::from_pod(pod.0).unwrap_err();
        assert_eq!(e.field, field, "{name}");
        assert!(
            e.to_string()
                .contains(r#"values[0][service]: Invalid value: "{{.bad-value.}}""#),
            "{name}: {e}"
        );
    }
}

struct MultiCase {
    name: &'static str,
    pod: PodB,
    pods: Vec<PodB>,
    nodes: Vec<NodeB>,
    want: Vec<(Code, Vec<String>)>,
}

/// `TestRequiredAffinityMultipleNodes` (the namespace lister holds `NS1` only).
#[test]
fn test_required_affinity_multiple_nodes() {
    let rg_china = &[("region", "China")];
    let rg_china_az1 = &[("region", "China"), ("az", "az1")];
    let rg_india = &[("region", "India")];
    let foo_in =
        |v: &str, key: &str| -> core::PodAffinityTerm { term(&[("foo", "In", &[v])], key) };
    let exists = |l: &str, key: &str| term(&[(l, "Exists", &[])], key);
    let rzh = |name: &str, zone: &str| {
        node(name).labels(&[("region", "r1"), ("zone", zone), ("hostname", name)])
    };
    let cases = vec![
        MultiCase {
            name: "A pod can be scheduled onto all the nodes that have the same topology key & label value with one of them has an existing pod that matches the affinity rules",
            pod: with_affinity_terms(
                DEFAULT_NAMESPACE,
                "",
                &[],
                vec![foo_in("bar", "region")],
                vec![],
            ),
            pods: vec![plain("", "machine1", &[("foo", "bar")]).name("p1")],
            nodes: vec![
                node("machine1").labels(rg_china),
                node("machine2").labels(rg_china_az1),
                node("machine3").labels(rg_india),
            ],
            want: vec![ok(), ok(), affinity_rules()],
        },
        MultiCase {
            name: "The affinity rule is to schedule all of the pods of this collection to the same zone. The first pod of the collection should not be blocked from being scheduled onto any node, even there's no existing pod that matches the rule anywhere.",
            pod: with_affinity_terms(
                DEFAULT_NAMESPACE,
                "",
                &[("foo", "bar"), ("service", "securityscan")],
                vec![foo_in("bar", "zone"), svc_in(&["securityscan"], "zone")],
                vec![],
            ),
            pods: vec![plain("", "nodeA", &[("foo", "bar")]).name("p1")],
            nodes: vec![
                node("nodeA").labels(&[("zone", "az1"), ("hostname", "h1")]),
                node("nodeB").labels(&[("zone", "az2"), ("hostname", "h2")]),
            ],
            want: vec![ok(), ok()],
        },
        MultiCase {
            name: "The first pod of the collection can only be scheduled on nodes labelled with the requested topology keys",
            pod: with_affinity_terms(
                DEFAULT_NAMESPACE,
                "",
                &[("foo", "bar"), ("service", "securityscan")],
                vec![foo_in("bar", "zone"), svc_in(&["securityscan"], "zone")],
                vec![],
            ),
            pods: vec![plain("", "nodeA", &[("foo", "bar")]).name("p1")],
            nodes: vec![
                node("nodeA").labels(&[("zoneLabel", "az1"), ("hostname", "h1")]),
                node("nodeB").labels(&[("zoneLabel", "az2"), ("hostname", "h2")]),
            ],
            want: vec![affinity_rules(), affinity_rules()],
        },
        MultiCase {
            name: "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB.",
            pod: with_affinity_terms(
                DEFAULT_NAMESPACE,
                "",
                &[],
                vec![],
                vec![foo_in("abc", "region")],
            ),
            pods: vec![plain("", "nodeA", &[("foo", "abc")])],
            nodes: vec![
                node("nodeA").labels(&[("region", "r1"), ("hostname", "nodeA")]),
                node("nodeB").labels(&[("region", "r1"), ("hostname", "nodeB")]),
            ],
            want: vec![anti_affinity_rules(), anti_affinity_rules()],
        },
        MultiCase {
            name: "This test ensures that anti-affinity matches a pod when any term of the anti-affinity rule matches a pod.",
            pod: with_affinity_terms(
                DEFAULT_NAMESPACE,
                "",
                &[],
                vec![],
                vec![foo_in("abc", "region"), svc_in(&["securityscan"], "zone")],
            ),
            pods: vec![plain(
                "",
                "nodeA",
                &[("foo", "abc"), ("service", "securityscan")],
            )],
            nodes: vec![rzh("nodeA", "z1"), rzh("nodeB", "z2")],
            want: vec![anti_affinity_rules(), anti_affinity_rules()],
        },
        MultiCase {
            name: "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB but can be scheduled onto nodeC",
            pod: with_affinity_terms(
                DEFAULT_NAMESPACE,
                "",
                &[],
                vec![],
                vec![foo_in("abc", "region")],
            ),
            pods: vec![plain("", "nodeA", &[("foo", "abc")])],
            nodes: vec![
                node("nodeA").labels(rg_china),
                node("nodeB").labels(rg_china_az1),
                node("nodeC").labels(rg_india),
            ],
            want: vec![anti_affinity_rules(), anti_affinity_rules(), ok()],
        },
        MultiCase {
            name: "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the inter pod affinity rule. The pod can not be scheduled onto nodeA, nodeB, but can be scheduled onto nodeC (NodeC has an existing pod that match the inter pod affinity rule but in different namespace)",
            pod: with_affinity_terms(
                "NS1",
                "",
                &[("foo", "123")],
                vec![],
                vec![foo_in("bar", "region")],
            ),
            pods: vec![
                plain("NS1", "nodeA", &[("foo", "bar")]),
                with_affinity_terms("NS2", "nodeC", &[], vec![], vec![foo_in("123", "region")]),
            ],
            nodes: vec![
                node("nodeA").labels(rg_china),
                node("nodeB").labels(rg_china_az1),
                node("nodeC").labels(rg_india),
            ],
            want: vec![anti_affinity_rules(), anti_affinity_rules(), ok()],
        },
        MultiCase {
            name: "Test existing pod's anti-affinity: if an existing pod has a term with invalid topologyKey, labelSelector of the term is firstly checked, and then topologyKey of the term is also checked",
            pod: plain("", "", &[("foo", "")]),
            pods: vec![with_affinity_terms(
                DEFAULT_NAMESPACE,
                "nodeA",
                &[],
                vec![],
                vec![exists("foo", "invalid-node-label")],
            )],
            nodes: vec![rzh("nodeA", "z1"), rzh("nodeB", "z1")],
            want: vec![ok(), ok()],
        },
        MultiCase {
            name: "Test incoming pod's anti-affinity: even if labelSelector matches, we still check if topologyKey matches",
            pod: with_affinity_terms(
                DEFAULT_NAMESPACE,
                "",
                &[],
                vec![],
                vec![exists("foo", "invalid-node-label")],
            ),
            pods: vec![plain("", "nodeA", &[("foo", "")])],
            nodes: vec![rzh("nodeA", "z1"), rzh("nodeB", "z1")],
            want: vec![ok(), ok()],
        },
        MultiCase {
            name: "Test existing pod's anti-affinity: incoming pod wouldn't considered as a fit as it violates each existingPod's terms on all nodes",
            pod: plain("", "", &[("foo", ""), ("bar", "")]),
            pods: vec![
                with_affinity_terms(
                    DEFAULT_NAMESPACE,
                    "nodeA",
                    &[],
                    vec![],
                    vec![exists("foo", "zone")],
                ),
                with_affinity_terms(
                    DEFAULT_NAMESPACE,
                    "nodeA",
                    &[],
                    vec![],
                    vec![exists("bar", "region")],
                ),
            ],
            nodes: vec![rzh("nodeA", "z1"), rzh("nodeB", "z2")],
            want: vec![
                existing_anti_affinity_rules(),
                existing_anti_affinity_rules(),
            ],
        },
        MultiCase {
            name: "Test incoming pod's anti-affinity: incoming pod wouldn't considered as a fit as it at least violates one anti-affinity rule of existingPod",
            pod: with_affinity_terms(
                DEFAULT_NAMESPACE,
                "",
                &[],
                vec![],
                vec![exists("foo", "zone"), exists("bar", "region")],
            ),
            pods: vec![
                plain("", "nodeA", &[("foo", "")]),
                plain("", "nodeB", &[("bar", "")]),
            ],
            nodes: vec![rzh("nodeA", "z1"), rzh("nodeB", "z2")],
            want: vec![anti_affinity_rules(), anti_affinity_rules()],
        },
        MultiCase {
            name: "Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when one term has invalid topologyKey",
            pod: plain("", "", &[("foo", ""), ("bar", "")]),
            pods: vec![with_affinity_terms(
                DEFAULT_NAMESPACE,
                "nodeA",
                &[],
                vec![],
                vec![exists("foo", "invalid-node-label"), exists("bar", "zone")],
            )],
            nodes: vec![rzh("nodeA", "z1"), rzh("nodeB", "z2")],
            want: vec![existing_anti_affinity_rules(), ok()],
        },
        MultiCase {
            name: "Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when one term has invalid topologyKey",
            pod: with_affinity_terms(
                DEFAULT_NAMESPACE,
                "",
                &[],
                vec![],
                vec![exists("foo", "invalid-node-label"), exists("bar", "zone")],
            ),
            pods: vec![plain("", "nodeA", &[("foo", ""), ("bar", "")]).name("podA")],
            nodes: vec![rzh("nodeA", "z1"), rzh("nodeB", "z2")],
            want: vec![anti_affinity_rules(), ok()],
        },
        MultiCase {
            name: "Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when all terms have valid topologyKey",
            pod: plain("", "", &[("foo", ""), ("bar", "")]),
            pods: vec![with_affinity_terms(
                DEFAULT_NAMESPACE,
                "nodeA",
                &[],
                vec![],
                vec![exists("foo", "region"), exists("bar", "zone")],
            )],
            nodes: vec![rzh("nodeA", "z1"), rzh("nodeB", "z2")],
            want: vec![
                existing_anti_affinity_rules(),
                existing_anti_affinity_rules(),
            ],
        },
        MultiCase {
            name: "Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's counted as a single term match - case when all terms have valid topologyKey",
            pod: with_affinity_terms(
                DEFAULT_NAMESPACE,
                "",
                &[],
                vec![],
                vec![exists("foo", "region"), exists("bar", "zone")],
            ),
            pods: vec![plain("", "nodeA", &[("foo", ""), ("bar", "")])],
            nodes: vec![rzh("nodeA", "z1"), rzh("nodeB", "z2")],
            want: vec![anti_affinity_rules(), anti_affinity_rules()],
        },
        MultiCase {
            name: "Test existing pod's anti-affinity: existingPod on nodeA and nodeB has at least one anti-affinity term matches incoming pod, so incoming pod can only be scheduled to nodeC",
            pod: plain("", "", &[("foo", ""), ("bar", "")]),
            pods: vec![
                with_affinity_terms(
                    DEFAULT_NAMESPACE,
                    "nodeA",
                    &[],
                    vec![],
                    vec![exists("foo", "zone"), exists("labelA", "zone")],
                ),
                with_affinity_terms(
                    DEFAULT_NAMESPACE,
                    "nodeB",
                    &[],
                    vec![],
                    vec![exists("bar", "zone"), exists("labelB", "zone")],
                ),
            ],
            nodes: vec![rzh("nodeA", "z1"), rzh("nodeB", "z2"), rzh("nodeC", "z3")],
            want: vec![
                existing_anti_affinity_rules(),
                existing_anti_affinity_rules(),
                ok(),
            ],
        },
        MultiCase {
            name: "Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all topologyKeys match",
            pod: with_affinity_terms(
                DEFAULT_NAMESPACE,
                "",
                &[],
                vec![exists("foo", "region"), exists("bar", "zone")],
                vec![],
            ),
            pods: vec![plain("", "nodeA", &[("foo", ""), ("bar", "")]).name("pod1")],
            nodes: vec![rzh("nodeA", "z1"), rzh("nodeB", "z1")],
            want: vec![ok(), ok()],
        },
        MultiCase {
            name: "Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all topologyKeys match, and the match logic should be satisfied on the same pod",
            pod: with_affinity_terms(
                DEFAULT_NAMESPACE,
                "",
                &[],
                vec![exists("foo", "region"), exists("bar", "zone")],
                vec![],
            ),
            pods: vec![
                plain("", "nodeA", &[("foo", "")]).name("pod1"),
                plain("", "nodeB", &[("bar", "")]).name("pod2"),
            ],
            nodes: vec![rzh("nodeA", "z1"), rzh("nodeB", "z2")],
            want: vec![affinity_rules(), affinity_rules()],
        },
    ];
    for c in cases {
        let got = statuses(c.pod, &c.pods, c.nodes, &[namespace("NS1", &[])]);
        assert_eq!(got, c.want, "{}", c.name);
    }
}

/// `TestPreFilterDisabled`: Filter without PreFilter state is an internal error.
#[test]
fn test_pre_filter_disabled() {
    let pi = plain("", "", &[]).info();
    let n = node("n").info();
    let got = InterPodAffinity::default().filter(&CycleState::new(), &pi, &n);
    assert_eq!(
        outcome(&got),
        want(
            Code::Error,
            &["error reading \"PreFilterInterPodAffinity\" from cycleState: not found"]
        )
    );
}

/// `TestGetTPMapMatchingIncomingAffinityAntiAffinity`: the affinity and anti-affinity counts of
/// the incoming pod's own terms.
#[test]
fn test_get_tp_map_matching_incoming_affinity_anti_affinity() {
    let terms = |keys: &[&str]| -> Vec<core::PodAffinityTerm> {
        keys.iter()
            .map(|k| term(&[(k, "Exists", &[])], "hostname"))
            .collect()
    };
    let new_pod = |labels: &[&str]| {
        let mut b = plain("", "nodeA", &[]).name("normal");
        for l in labels {
            b = b.label(l, "");
        }
        b
    };
    let node_a = || node("nodeA").labels(&[("hostname", "nodeA")]);
    let with = |name: &str, aff: &[&str], anti: &[&str]| {
        plain("", "", &[]).name(name).affinity(core::Affinity {
            pod_affinity: Some(core::PodAffinity {
                required_during_scheduling_ignored_during_execution: Some(terms(aff)),
                ..Default::default()
            }),
            pod_anti_affinity: Some(core::PodAntiAffinity {
                required_during_scheduling_ignored_during_execution: Some(terms(anti)),
                ..Default::default()
            }),
            ..Default::default()
        })
    };
    type Counts = Vec<(&'static str, &'static str, i64)>;
    let host_a = |n: i64| -> Counts { vec![("hostname", "nodeA", n)] };
    let cases: Vec<(&str, Vec<PodB>, PodB, Counts, Counts)> = vec![
        (
            "nil test",
            vec![],
            plain("", "", &[]).name("aaa-normal"),
            vec![],
            vec![],
        ),
        (
            "incoming pod without affinity/anti-affinity causes a no-op",
            vec![new_pod(&["aaa"])],
            plain("", "", &[]).name("aaa-normal"),
            vec![],
            vec![],
        ),
        (
            "no pod has label that violates incoming pod's affinity and anti-affinity",
            vec![new_pod(&["bbb"])],
            with("aaa-anti", &["aaa"], &["aaa"]),
            vec![],
            vec![],
        ),
        (
            "existing pod matches incoming pod's affinity and anti-affinity - single term case",
            vec![new_pod(&["aaa"])],
            with("affi-antiaffi", &["aaa"], &["aaa"]),
            host_a(1),
            host_a(1),
        ),
        (
            "existing pod matches incoming pod's affinity and anti-affinity - multiple terms case",
            vec![new_pod(&["aaa", "bbb"])],
            with("affi-antiaffi", &["aaa", "bbb"], &["aaa"]),
            host_a(2), // 2 one for each term.
            host_a(1),
        ),
        (
            "existing pod not match incoming pod's affinity but matches anti-affinity",
            vec![new_pod(&["aaa"])],
            with("affi-antiaffi", &["aaa", "bbb"], &["aaa", "bbb"]),
            vec![],
            host_a(1),
        ),
        (
            "incoming pod's anti-affinity has more than one term - existing pod violates partial term - case 1",
            vec![new_pod(&["aaa", "bbb"])],
            with("anaffi-antiaffiti", &["aaa", "ccc"], &["aaa", "ccc"]),
            vec![],
            host_a(1),
        ),
        (
            "incoming pod's anti-affinity has more than one term - existing pod violates partial term - case 2",
            vec![new_pod(&["bbb"])],
            with("affi-antiaffi", &["aaa", "bbb"], &["aaa", "bbb"]),
            vec![],
            host_a(1),
        ),
    ];
    let flat = |c: &TopologyCounts| -> Vec<(String, String, i64)> {
        let mut v: Vec<_> = c
            .iter()
            .flat_map(|(k, m)| m.iter().map(move |(val, n)| (k.clone(), val.clone(), *n)))
            .collect();
        v.sort();
        v
    };
    let owned = |c: Counts| -> Vec<(String, String, i64)> {
        c.into_iter()
            .map(|(k, v, n)| (k.to_string(), v.to_string(), n))
            .collect()
    };
    for (name, existing, pod, want_aff, want_anti) in cases {
        let snap = topology_snapshot(vec![node_a()], &existing, &[]);
        let pi = pod.info();
        let got = InterPodAffinity::default().compute_pre_filter_state(&pi, &snap);
        let (aff, anti) = got
            .map(|s| (flat(&s.affinity_counts), flat(&s.anti_affinity_counts)))
            .unwrap_or_default();
        assert_eq!(aff, owned(want_aff), "{name}: affinity");
        assert_eq!(anti, owned(want_anti), "{name}: anti-affinity");
    }
}

/// Not upstream: Skip is returned exactly when there is nothing to check, and the batch entry
/// point agrees with `filter`.
#[test]
fn pre_filter_skips_only_when_nothing_to_check() {
    let plugin = InterPodAffinity::default();
    let nodes = || {
        vec![
            node("a").labels(&[("zone", "z1")]),
            node("b").labels(&[("zone", "z2")]),
        ]
    };
    // No terms anywhere: Skip.
    let snap = topology_snapshot(nodes(), &[plain("", "a", &[("app", "x")])], &[]);
    let mut st = CycleState::new();
    assert!(
        plugin
            .pre_filter(&mut st, &plain("", "", &[("app", "x")]).info(), &snap)
            .is_skip()
    );
    // An existing pod's anti-affinity that does not match the incoming pod: still Skip.
    let guard = with_affinity_terms(
        "",
        "a",
        &[],
        vec![],
        vec![term(&[("app", "In", &["y"])], "zone")],
    );
    let snap = topology_snapshot(nodes(), std::slice::from_ref(&guard), &[]);
    assert_eq!(snap.nodes_with_required_anti_affinity().len(), 1);
    assert!(
        plugin
            .pre_filter(&mut st, &plain("", "", &[("app", "x")]).info(), &snap)
            .is_skip()
    );
    // One that matches: the node in its zone fails, through the batch path too.
    let pi = plain("", "", &[("app", "y")]).info();
    let mut st = CycleState::new();
    assert!(plugin.pre_filter(&mut st, &pi, &snap).is_success());
    let mut candidates = vec![0, 1];
    let mut failed = Vec::new();
    plugin.filter_nodes(&st, &pi, &snap, &mut candidates, &mut failed);
    assert_eq!(candidates, vec![snap.node_index("b").unwrap()]);
    assert_eq!(failed.len(), 1);
    assert_eq!(
        outcome(&failed[0].1),
        existing_anti_affinity_rules(),
        "{:?}",
        failed
    );
}

/// Not upstream: v1.22's InterPodAffinity counts terminating pods (`metadata.deletionTimestamp`
/// set), on both sides: a terminating pod still satisfies required affinity, still violates the
/// incoming pod's anti-affinity, and its own anti-affinity still applies. (Only
/// PodTopologySpread's `countPodsMatchSelector` skips them.)
#[test]
fn terminating_pods_still_count() {
    let nodes = || vec![node("machine1").labels(LABELS1)];
    let zone_term = || svc_in(&["securityscan"], "zone");
    let peer = plain("", "machine1", POD_LABEL).terminating();
    let follower = with_affinity_terms("", "", POD_LABEL2, vec![zone_term()], vec![]);
    assert_eq!(
        statuses(follower, std::slice::from_ref(&peer), nodes(), &[]),
        vec![ok()]
    );
    let avoider = with_affinity_terms("", "", POD_LABEL2, vec![], vec![zone_term()]);
    assert_eq!(
        statuses(avoider, std::slice::from_ref(&peer), nodes(), &[]),
        vec![anti_affinity_rules()]
    );
    let guard = with_affinity_terms(
        "",
        "machine1",
        POD_LABEL2,
        vec![],
        vec![term(&[("service", "In", &["securityscan"])], "zone")],
    )
    .terminating();
    assert_eq!(
        statuses(plain("", "", POD_LABEL), &[guard], nodes(), &[]),
        vec![existing_anti_affinity_rules()]
    );
}
