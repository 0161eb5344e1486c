//! Upstream `pkg/scheduler/framework/plugins/interpodaffinity/scoring_test.go`, v1.22-era copy
//! read from ahg-g/kubernetes @183dddeefe0249c691900db9eb90f28371a8e30c: `TestPreferredAffinity`
//! and `TestPreferredAffinityWithHardPodAffinitySymmetricWeight`, case names upstream's. The two
//! "invalid ... fails PreScore" cases fail when the pod is read here
//! ([`test_invalid_preferred_label_syntax`]).
#![allow(clippy::unwrap_used)]

use k8s_openapi::api::core::v1 as core;

use super::*;
use crate::framework::plugins::inter_pod_affinity::DEFAULT_HARD_POD_AFFINITY_WEIGHT;
use crate::framework::plugins::testutil::{NodeB, PodB, node, pod};
use crate::framework::plugins::testutil_topology::{
    exprs, namespace, preferred_affinity, required_affinity, term, term_ns, topology_snapshot,
    weighted,
};

const RG_CHINA: &[(&str, &str)] = &[("region", "China")];
const RG_INDIA: &[(&str, &str)] = &[("region", "India")];
const AZ_AZ1: &[(&str, &str)] = &[("az", "az1")];
const AZ_AZ2: &[(&str, &str)] = &[("az", "az2")];
const RG_CHINA_AZ_AZ1: &[(&str, &str)] = &[("region", "China"), ("az", "az1")];
const S1: &[(&str, &str)] = &[("security", "S1")];
const S2: &[(&str, &str)] = &[("security", "S2")];

/// `(name, incoming pod namespace, hardPodAffinityWeight, expected scores)`.
type HardCase = (&'static str, &'static str, i32, Vec<(&'static str, i64)>);

fn namespaces() -> Vec<core::Namespace> {
    vec![
        namespace("subteam1.team1", &[("team", "team1")]),
        namespace("subteam2.team1", &[("team", "team1")]),
        namespace("subteam1.team2", &[("team", "team2")]),
        namespace("subteam2.team2", &[("team", "team2")]),
    ]
}

/// `{Spec: {NodeName, Affinity}, ObjectMeta: {Namespace, Labels}}`.
fn p(ns: &str, node_name: &str, labels: &[(&str, &str)], affinity: Option<core::Affinity>) -> PodB {
    let mut b = pod("").namespace(ns).labels(labels);
    if !node_name.is_empty() {
        b = b.node(node_name);
    }
    if let Some(a) = affinity {
        b = b.affinity(a);
    }
    b
}

fn security_in(v: &str, key: &str) -> core::PodAffinityTerm {
    term(&[("security", "In", &[v])], key)
}

fn stay_with_s1_in_region() -> core::Affinity {
    preferred_affinity(vec![weighted(5, security_in("S1", "region"))], vec![])
}

fn stay_with_s2_in_region() -> core::Affinity {
    preferred_affinity(vec![weighted(6, security_in("S2", "region"))], vec![])
}

fn affinity3() -> core::Affinity {
    preferred_affinity(
        vec![
            weighted(
                8,
                term(
                    &[("security", "NotIn", &["S1"]), ("security", "In", &["S2"])],
                    "region",
                ),
            ),
            weighted(
                2,
                term(
                    &[
                        ("security", "Exists", &[]),
                        ("wrongkey", "DoesNotExist", &[]),
                    ],
                    "region",
                ),
            ),
        ],
        vec![],
    )
}

fn hard_affinity() -> core::Affinity {
    required_affinity(vec![
        term(&[("security", "In", &["S1", "value2"])], "region"),
        term(
            &[
                ("security", "Exists", &[]),
                ("wrongkey", "DoesNotExist", &[]),
            ],
            "region",
        ),
    ])
}

fn away_from_s1_in_az() -> core::Affinity {
    preferred_affinity(vec![], vec![weighted(5, security_in("S1", "az"))])
}

fn away_from_s2_in_az() -> core::Affinity {
    preferred_affinity(vec![], vec![weighted(5, security_in("S2", "az"))])
}

fn stay_with_s1_in_region_away_from_s2_in_az() -> core::Affinity {
    preferred_affinity(
        vec![weighted(8, security_in("S1", "region"))],
        vec![weighted(5, security_in("S2", "az"))],
    )
}

fn ns_selector_term() -> core::PodAffinityTerm {
    term_ns(
        security_in("S1", "region"),
        &["subteam2.team2"],
        Some(exprs(&[("team", "In", &["team1"])])),
    )
}

fn affinity_namespace_selector() -> core::Affinity {
    preferred_affinity(vec![weighted(5, ns_selector_term())], vec![])
}

fn anti_affinity_namespace_selector() -> core::Affinity {
    preferred_affinity(vec![], vec![weighted(5, ns_selector_term())])
}

fn nodes(list: &[(&str, &[(&str, &str)])]) -> Vec<NodeB> {
    list.iter()
        .map(|(name, labels)| node(name).labels(labels))
        .collect()
}

/// Upstream's harness: PreScore over all nodes, Score each, NormalizeScore. A `Uniform`
/// PreScore result stands for Score + NormalizeScore.
fn normalized(weight: i32, incoming: PodB, pods: &[PodB], nodes: Vec<NodeB>) -> Vec<(String, i64)> {
    let names: Vec<String> = nodes
        .iter()
        .map(|n| n.0.metadata.name.clone().unwrap())
        .collect();
    let snap = topology_snapshot(nodes, pods, &namespaces());
    let pi = incoming.info();
    let plugin = InterPodAffinity::new(weight);
    let feasible: Vec<u32> = names.iter().map(|n| snap.node_index(n).unwrap()).collect();
    let mut state = CycleState::new();
    let mut scores = vec![0; feasible.len()];
    match plugin.pre_score(&mut state, &pi, &snap, &feasible).unwrap() {
        ScoreMode::Uniform(v) => scores.fill(v),
        ScoreMode::PerNode => {
            plugin
                .score_nodes(&state, &pi, &snap, &feasible, &mut scores)
                .unwrap();
            plugin
                .normalize_score(&state, &pi, &snap, &feasible, &mut scores)
                .unwrap();
        }
    }
    names.into_iter().zip(scores).collect()
}

fn expect(list: &[(&str, i64)]) -> Vec<(String, i64)> {
    list.iter().map(|(n, s)| (n.to_string(), *s)).collect()
}

struct Case {
    name: &'static str,
    pod: PodB,
    pods: Vec<PodB>,
    nodes: Vec<NodeB>,
    expected: Vec<(&'static str, i64)>,
}

/// `TestPreferredAffinity` (hard pod affinity weight 1).
#[test]
fn test_preferred_affinity() {
    let three = || {
        nodes(&[
            ("machine1", RG_CHINA),
            ("machine2", RG_INDIA),
            ("machine3", AZ_AZ1),
        ])
    };
    let ns_pods = |third_ns: &str| {
        vec![
            p("subteam1.team1", "machine1", S1, None),
            p("subteam1.team1", "machine1", S1, None),
            p(third_ns, "machine1", S1, None),
            p("subteam2.team1", "machine2", S1, None),
        ]
    };
    let two_regions = || nodes(&[("machine1", RG_CHINA), ("machine2", RG_INDIA)]);
    let cases = vec![
        Case {
            name: "all machines are same priority as Affinity is nil",
            pod: p("", "", S1, None),
            pods: vec![],
            nodes: three(),
            expected: vec![("machine1", 0), ("machine2", 0), ("machine3", 0)],
        },
        Case {
            name: "Affinity: pod that matches topology key & pods in nodes will get high score comparing to otherswhich doesn't match either pods in nodes or in topology key",
            pod: p("", "", S1, Some(stay_with_s1_in_region())),
            pods: vec![
                p("", "machine1", S1, None),
                p("", "machine2", S2, None),
                p("", "machine3", S1, None),
            ],
            nodes: three(),
            expected: vec![("machine1", 100), ("machine2", 0), ("machine3", 0)],
        },
        Case {
            name: "All the nodes that have the same topology key & label value with one of them has an existing pod that match the affinity rules, have the same score",
            pod: p("", "", &[], Some(stay_with_s1_in_region())),
            pods: vec![p("", "machine1", S1, None)],
            nodes: nodes(&[
                ("machine1", RG_CHINA),
                ("machine2", RG_CHINA_AZ_AZ1),
                ("machine3", RG_INDIA),
            ]),
            expected: vec![("machine1", 100), ("machine2", 100), ("machine3", 0)],
        },
        Case {
            name: "Affinity: nodes in one region has more matching pods comparing to other region, so the region which has more matches will get high score",
            pod: p("", "", S1, Some(stay_with_s2_in_region())),
            pods: vec![
                p("", "machine1", S2, None),
                p("", "machine1", S2, None),
                p("", "machine2", S2, None),
                p("", "machine3", S2, None),
                p("", "machine4", S2, None),
                p("", "machine5", S2, None),
            ],
            nodes: nodes(&[
                ("machine1", RG_CHINA),
                ("machine2", RG_INDIA),
                ("machine3", RG_CHINA),
                ("machine4", RG_CHINA),
                ("machine5", RG_INDIA),
            ]),
            expected: vec![
                ("machine1", 100),
                ("machine2", 0),
                ("machine3", 100),
                ("machine4", 100),
                ("machine5", 0),
            ],
        },
        Case {
            name: "Affinity: different Label operators and values for pod affinity scheduling preference, including some match failures ",
            pod: p("", "", S1, Some(affinity3())),
            pods: vec![
                p("", "machine1", S1, None),
                p("", "machine2", S2, None),
                p("", "machine3", S1, None),
            ],
            nodes: three(),
            expected: vec![("machine1", 20), ("machine2", 100), ("machine3", 0)],
        },
        Case {
            name: "Affinity symmetry: considered only the preferredDuringSchedulingIgnoredDuringExecution in pod affinity symmetry",
            pod: p("", "", S2, None),
            pods: vec![
                p("", "machine1", S1, Some(stay_with_s1_in_region())),
                p("", "machine2", S2, Some(stay_with_s2_in_region())),
            ],
            nodes: three(),
            expected: vec![("machine1", 0), ("machine2", 100), ("machine3", 0)],
        },
        Case {
            name: "Affinity symmetry with namespace selector",
            pod: p("subteam1.team1", "", S1, None),
            pods: vec![
                p("", "machine1", S1, Some(affinity_namespace_selector())),
                p("", "machine2", S2, Some(stay_with_s2_in_region())),
            ],
            nodes: three(),
            expected: vec![("machine1", 100), ("machine2", 0), ("machine3", 0)],
        },
        Case {
            name: "AntiAffinity symmetry with namespace selector",
            pod: p("subteam1.team1", "", S1, None),
            pods: vec![
                p("", "machine1", S1, Some(anti_affinity_namespace_selector())),
                p("", "machine2", S2, Some(stay_with_s2_in_region())),
            ],
            nodes: three(),
            expected: vec![("machine1", 0), ("machine2", 100), ("machine3", 100)],
        },
        Case {
            name: "Affinity symmetry: considered RequiredDuringSchedulingIgnoredDuringExecution in pod affinity symmetry",
            pod: p("", "", S1, None),
            pods: vec![
                p("", "machine1", S1, Some(hard_affinity())),
                p("", "machine2", S2, Some(hard_affinity())),
            ],
            nodes: three(),
            expected: vec![("machine1", 100), ("machine2", 100), ("machine3", 0)],
        },
        Case {
            name: "Anti Affinity: pod that does not match existing pods in node will get high score ",
            pod: p("", "", S1, Some(away_from_s1_in_az())),
            pods: vec![p("", "machine1", S1, None), p("", "machine2", S2, None)],
            nodes: nodes(&[("machine1", AZ_AZ1), ("machine2", RG_CHINA)]),
            expected: vec![("machine1", 0), ("machine2", 100)],
        },
        Case {
            name: "Anti Affinity: pod that does not match topology key & match the pods in nodes will get higher score comparing to others ",
            pod: p("", "", S1, Some(away_from_s1_in_az())),
            pods: vec![p("", "machine1", S1, None), p("", "machine2", S1, None)],
            nodes: nodes(&[("machine1", AZ_AZ1), ("machine2", RG_CHINA)]),
            expected: vec![("machine1", 0), ("machine2", 100)],
        },
        Case {
            name: "Anti Affinity: one node has more matching pods comparing to other node, so the node which has more unmatches will get high score",
            pod: p("", "", S1, Some(away_from_s1_in_az())),
            pods: vec![
                p("", "machine1", S1, None),
                p("", "machine1", S1, None),
                p("", "machine2", S2, None),
            ],
            nodes: nodes(&[("machine1", AZ_AZ1), ("machine2", RG_INDIA)]),
            expected: vec![("machine1", 0), ("machine2", 100)],
        },
        Case {
            name: "Anti Affinity symmetry: the existing pods in node which has anti affinity match will get high score",
            pod: p("", "", S2, None),
            pods: vec![
                p("", "machine1", S1, Some(away_from_s2_in_az())),
                p("", "machine2", S2, Some(away_from_s1_in_az())),
            ],
            nodes: nodes(&[("machine1", AZ_AZ1), ("machine2", AZ_AZ2)]),
            expected: vec![("machine1", 0), ("machine2", 100)],
        },
        Case {
            name: "Affinity and Anti Affinity: considered only preferredDuringSchedulingIgnoredDuringExecution in both pod affinity & anti affinity",
            pod: p(
                "",
                "",
                S1,
                Some(stay_with_s1_in_region_away_from_s2_in_az()),
            ),
            pods: vec![p("", "machine1", S1, None), p("", "machine2", S1, None)],
            nodes: nodes(&[("machine1", RG_CHINA), ("machine2", AZ_AZ1)]),
            expected: vec![("machine1", 100), ("machine2", 0)],
        },
        Case {
            name: "Affinity and Anti Affinity: considering both affinity and anti-affinity, the pod to schedule and existing pods have the same labels",
            pod: p(
                "",
                "",
                S1,
                Some(stay_with_s1_in_region_away_from_s2_in_az()),
            ),
            pods: vec![
                p("", "machine1", S1, None),
                p("", "machine1", S1, None),
                p("", "machine2", S1, None),
                p("", "machine3", S1, None),
                p("", "machine3", S1, None),
                p("", "machine4", S1, None),
                p("", "machine5", S1, None),
            ],
            nodes: nodes(&[
                ("machine1", RG_CHINA_AZ_AZ1),
                ("machine2", RG_INDIA),
                ("machine3", RG_CHINA),
                ("machine4", RG_CHINA),
                ("machine5", RG_INDIA),
            ]),
            expected: vec![
                ("machine1", 100),
                ("machine2", 0),
                ("machine3", 100),
                ("machine4", 100),
                ("machine5", 0),
            ],
        },
        Case {
            name: "Affinity and Anti Affinity and symmetry: considered only preferredDuringSchedulingIgnoredDuringExecution in both pod affinity & anti affinity & symmetry",
            pod: p(
                "",
                "",
                S1,
                Some(stay_with_s1_in_region_away_from_s2_in_az()),
            ),
            pods: vec![
                p("", "machine1", S1, None),
                p("", "machine2", S2, None),
                p(
                    "",
                    "machine3",
                    &[],
                    Some(stay_with_s1_in_region_away_from_s2_in_az()),
                ),
                p("", "machine4", &[], Some(away_from_s1_in_az())),
            ],
            nodes: nodes(&[
                ("machine1", RG_CHINA),
                ("machine2", AZ_AZ1),
                ("machine3", RG_INDIA),
                ("machine4", AZ_AZ2),
            ]),
            expected: vec![
                ("machine1", 100),
                ("machine2", 0),
                ("machine3", 100),
                ("machine4", 0),
            ],
        },
        Case {
            name: "Avoid panic when partial nodes in a topology don't have pods with affinity",
            pod: p("", "", S1, None),
            pods: vec![
                p("", "machine1", S1, None),
                p(
                    "",
                    "machine2",
                    &[],
                    Some(stay_with_s1_in_region_away_from_s2_in_az()),
                ),
            ],
            nodes: nodes(&[("machine1", RG_CHINA), ("machine2", RG_CHINA)]),
            expected: vec![("machine1", 0), ("machine2", 0)],
        },
        Case {
            name: "Affinity with pods matching NamespaceSelector",
            pod: p(
                "subteam1.team1",
                "",
                S1,
                Some(affinity_namespace_selector()),
            ),
            pods: ns_pods("subteam1.team2"),
            nodes: two_regions(),
            expected: vec![("machine1", 100), ("machine2", 0)],
        },
        Case {
            name: "Affinity with pods matching both NamespaceSelector and Namespaces fields",
            pod: p(
                "subteam1.team1",
                "",
                S1,
                Some(affinity_namespace_selector()),
            ),
            pods: ns_pods("subteam2.team2"),
            nodes: two_regions(),
            expected: vec![("machine1", 100), ("machine2", 0)],
        },
        Case {
            name: "Affinity with pods matching NamespaceSelector",
            pod: p(
                "subteam1.team1",
                "",
                S1,
                Some(anti_affinity_namespace_selector()),
            ),
            pods: ns_pods("subteam1.team2"),
            nodes: two_regions(),
            expected: vec![("machine1", 0), ("machine2", 100)],
        },
        Case {
            name: "Affinity with pods matching both NamespaceSelector and Namespaces fields",
            pod: p(
                "subteam1.team1",
                "",
                S1,
                Some(anti_affinity_namespace_selector()),
            ),
            pods: ns_pods("subteam2.team2"),
            nodes: two_regions(),
            expected: vec![("machine1", 0), ("machine2", 100)],
        },
    ];
    for c in cases {
        assert_eq!(
            normalized(1, c.pod, &c.pods, c.nodes),
            expect(&c.expected),
            "{}",
            c.name
        );
    }
}

/// `TestPreferredAffinity` cases "invalid Affinity fails PreScore" and "invalid AntiAffinity
/// fails PreScore": the pod is rejected when read, with the value error upstream checks for.
#[test]
fn test_invalid_preferred_label_syntax() {
    let bad = |anti: bool| {
        let t = weighted(
            8,
            term(&[("security", "In", &["{{.bad-value.}}"])], "region"),
        );
        if anti {
            preferred_affinity(vec![], vec![t])
        } else {
            preferred_affinity(vec![t], vec![])
        }
    };
    for (name, anti, field) in [
        (
            "invalid Affinity fails PreScore",
            false,
            "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.labelSelector",
        ),
        (
            "invalid AntiAffinity fails PreScore",
            true,
            "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.labelSelector",
        ),
    ] {
        let e = PodInfo::from_pod(p("", "", &[], Some(bad(anti))).0).unwrap_err();
        assert_eq!(e.field, field, "{name}");
        assert!(
            e.to_string()
                .contains(r#"Invalid value: "{{.bad-value.}}""#),
            "{name}: {e}"
        );
    }
}

/// `TestPreferredAffinityWithHardPodAffinitySymmetricWeight`.
#[test]
fn test_preferred_affinity_with_hard_pod_affinity_symmetric_weight() {
    let hard_pod_affinity = || {
        required_affinity(vec![term_ns(
            term(&[("service", "In", &["S1"])], "region"),
            &["", "subteam2.team2"],
            Some(exprs(&[("team", "In", &["team1"])])),
        )])
    };
    let service_s1 = &[("service", "S1")];
    let cases: Vec<HardCase> = vec![
        (
            "with default weight",
            "",
            DEFAULT_HARD_POD_AFFINITY_WEIGHT,
            vec![("machine1", 100), ("machine2", 100), ("machine3", 0)],
        ),
        (
            "with zero weight",
            "",
            0,
            vec![("machine1", 0), ("machine2", 0), ("machine3", 0)],
        ),
        (
            "with no matching namespace",
            "subteam1.team2",
            DEFAULT_HARD_POD_AFFINITY_WEIGHT,
            vec![("machine1", 0), ("machine2", 0), ("machine3", 0)],
        ),
        (
            "with matching NamespaceSelector",
            "subteam1.team1",
            DEFAULT_HARD_POD_AFFINITY_WEIGHT,
            vec![("machine1", 100), ("machine2", 100), ("machine3", 0)],
        ),
        (
            "with matching Namespaces",
            "subteam2.team2",
            DEFAULT_HARD_POD_AFFINITY_WEIGHT,
            vec![("machine1", 100), ("machine2", 100), ("machine3", 0)],
        ),
    ];
    for (name, ns, weight, expected) in cases {
        let pods = vec![
            p("", "machine1", &[], Some(hard_pod_affinity())),
            p("", "machine2", &[], Some(hard_pod_affinity())),
        ];
        let got = normalized(
            weight,
            p(ns, "", service_s1, None),
            &pods,
            nodes(&[
                ("machine1", RG_CHINA),
                ("machine2", RG_INDIA),
                ("machine3", AZ_AZ1),
            ]),
        );
        assert_eq!(got, expect(&expected), "{name}");
    }
}

/// Not upstream: pods without preferred terms pay nothing while no existing pod has scoring
/// terms; pods with only required anti-affinity are not scoring terms; the per-node and batch
/// paths agree; v1.22's min-max normalization (min starts at `MaxInt64`) on all-positive raw
/// scores.
#[test]
fn uniform_when_nothing_scores_and_min_max_normalization() {
    let plugin = InterPodAffinity::default();
    let anti_only = p(
        "",
        "m1",
        S1,
        Some(core::Affinity {
            pod_anti_affinity: Some(core::PodAntiAffinity {
                required_during_scheduling_ignored_during_execution: Some(vec![security_in(
                    "S1", "region",
                )]),
                ..Default::default()
            }),
            ..Default::default()
        }),
    );
    let snap = topology_snapshot(
        nodes(&[("m1", RG_CHINA), ("m2", RG_INDIA)]),
        &[anti_only],
        &[],
    );
    assert!(snap.nodes_with_affinity().is_empty());
    let mut st = CycleState::new();
    assert_eq!(
        plugin
            .pre_score(&mut st, &p("", "", S1, None).info(), &snap, &[0, 1])
            .unwrap(),
        ScoreMode::Uniform(0)
    );
    let mut scores = vec![3, 5, 7];
    normalize(&mut scores);
    assert_eq!(scores, vec![0, 50, 100]);
    let mut equal = vec![4, 4];
    normalize(&mut equal);
    assert_eq!(equal, vec![0, 0]);
}

/// Not upstream: the Policy's `hardPodAffinitySymmetricWeight` reaches the plugin through
/// `Framework::from_policy` (0 in the Policy means unset: weight 1).
#[test]
fn policy_hard_pod_affinity_symmetric_weight_reaches_the_plugin() {
    use crate::framework::Framework;
    use crate::schedule_one::Algorithm;
    let app_web = || term(&[("app", "In", &["web"])], "zone");
    let existing = vec![
        p(
            "default",
            "n1",
            &[],
            Some(required_affinity(vec![app_web()])),
        ),
        p(
            "default",
            "n2",
            &[],
            Some(preferred_affinity(vec![weighted(50, app_web())], vec![])),
        ),
    ];
    let incoming = p("default", "", &[("app", "web")], None).info();
    let ipa_scores = |hard: &str| {
        let text = format!(
            r#"{{"kind":"Policy","apiVersion":"v1","predicates":[],
            "priorities":[{{"name":"InterPodAffinityPriority","weight":1}}]{hard}}}"#
        );
        let policy = crate::policy::parse_policy("p.json", &text)
            .unwrap()
            .resolved;
        let fwk = Framework::from_policy(&policy).unwrap();
        let snap = topology_snapshot(
            nodes(&[("n1", &[("zone", "z1")]), ("n2", &[("zone", "z2")])]),
            &existing,
            &[],
        );
        let r = Algorithm::new(100, 0)
            .schedule(&fwk, &snap, &incoming, true)
            .unwrap();
        let scores = r.scores.unwrap();
        (scores["n1"].plugins[0].1, scores["n2"].plugins[0].1, r.node)
    };
    // Raw: z1 = hard weight (n1's required term), z2 = 50 (n2's preferred term).
    assert_eq!(ipa_scores(""), (0, 100, "n2".to_string()));
    assert_eq!(
        ipa_scores(r#","hardPodAffinitySymmetricWeight":0"#),
        (0, 100, "n2".to_string())
    );
    assert_eq!(
        ipa_scores(r#","hardPodAffinitySymmetricWeight":100"#),
        (100, 0, "n1".to_string())
    );
}
