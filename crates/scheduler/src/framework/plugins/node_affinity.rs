//! `NodeAffinity` filter (legacy predicate `MatchNodeSelector`): the node's labels must contain
//! the pod's `spec.nodeSelector`, and match one term of its required node affinity. Follows
//! `pkg/scheduler/framework/plugins/nodeaffinity` and
//! `k8s.io/component-helpers/scheduling/corev1/nodeaffinity.GetRequiredNodeAffinity` (v1.22).
//!
//! Score (legacy priority `NodeAffinityPriority`): the sum of the weights of the pod's
//! `preferredDuringSchedulingIgnoredDuringExecution` terms the node matches (terms with weight 0
//! or no requirement are ignored), normalized with `DefaultNormalizeScore` (`100 × s / max`).
//! A pod without preferred terms scores 0 everywhere (PreScore `Uniform(0)`). A preferred term
//! that does not parse fails the pod's scheduling attempt (`NewPreferredSchedulingTerms` error).

use k8s_openapi::api::core::v1 as core;

use crate::framework::plugins::helper::default_normalize_score;
use crate::framework::{Code, CycleState, FilterPlugin, ScoreMode, ScorePlugin, Status};
use crate::labels::NodeSelectorTerm;
use crate::model::NodeInfo;
use crate::model::PodInfo;
use crate::snapshot::Snapshot;

/// Plugin name.
pub const NAME: &str = "NodeAffinity";
/// Failure reason (`ErrReasonPod`).
pub const ERR_REASON_POD: &str = "node(s) didn't match Pod's node affinity/selector";

/// The NodeAffinity filter.
#[derive(Debug, Default, Clone, Copy)]
pub struct NodeAffinity;

/// Whether `node` satisfies the pod's node selector and required node affinity.
pub fn matches(pod: &PodInfo, node: &NodeInfo) -> bool {
    pod.node_selector
        .iter()
        .all(|(k, v)| node.labels.get(k) == Some(v))
        && pod
            .required_node_affinity
            .as_ref()
            .is_none_or(|sel| sel.matches(&node.name, &node.labels))
}

impl FilterPlugin for NodeAffinity {
    fn name(&self) -> &'static str {
        NAME
    }

    fn pre_filter(&self, _state: &mut CycleState, pod: &PodInfo, _snapshot: &Snapshot) -> Status {
        if pod.node_selector.is_empty() && pod.required_node_affinity.is_none() {
            Status::skip()
        } else {
            Status::success()
        }
    }

    fn filter(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if matches(pod, node) {
            Status::success()
        } else {
            Status::new(Code::UnschedulableAndUnresolvable, ERR_REASON_POD)
        }
    }
}

/// CycleState key of the PreScore state (`preScoreStateKey`).
const PRE_SCORE_STATE_KEY: &str = "PreScoreNodeAffinity";

/// The pod's preferred terms, compiled, with their weights (`PreferredSchedulingTerms`).
struct PreScoreState {
    terms: Vec<(NodeSelectorTerm, i64)>,
}

/// `getPodPreferredNodeAffinity` / `NewPreferredSchedulingTerms` (component-helpers
/// nodeaffinity, v1.22): terms with weight 0 or no requirement are skipped; an unparsable term is
/// an error naming it.
fn preferred_terms(pod: &PodInfo) -> Result<Vec<(NodeSelectorTerm, i64)>, Status> {
    // Score-only: kept with the pending pod's object (`PodInfo::preferred_node_affinity`).
    let terms = pod.preferred_node_affinity();
    let mut out = Vec::new();
    let mut errs = Vec::new();
    for (i, t) in terms.iter().enumerate() {
        if t.weight == 0 || is_empty_term(&t.preference) {
            continue;
        }
        let term = NodeSelectorTerm::compile(&t.preference);
        if term.valid {
            out.push((term, i64::from(t.weight)));
        } else {
            errs.push(format!(
                "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[{i}].preference: \
                 invalid node selector term"
            ));
        }
    }
    if errs.is_empty() {
        Ok(out)
    } else {
        Err(Status::error(errs.join(", ")))
    }
}

/// `PreferredSchedulingTerms.Score`: the sum of the weights of the terms `node` matches.
fn preferred_score(terms: &[(NodeSelectorTerm, i64)], node: &NodeInfo) -> i64 {
    terms
        .iter()
        .filter(|(t, _)| t.matches_node(&node.name, &node.labels))
        .map(|(_, w)| *w)
        .sum()
}

/// `isEmptyNodeSelectorTerm`.
fn is_empty_term(t: &core::NodeSelectorTerm) -> bool {
    t.match_expressions.as_ref().is_none_or(Vec::is_empty)
        && t.match_fields.as_ref().is_none_or(Vec::is_empty)
}

impl ScorePlugin for NodeAffinity {
    fn name(&self) -> &'static str {
        NAME
    }

    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _snapshot: &Snapshot,
        _feasible: &[u32],
    ) -> Result<ScoreMode, Status> {
        let terms = preferred_terms(pod)?;
        if terms.is_empty() {
            // Every raw score is 0; DefaultNormalizeScore leaves 0.
            return Ok(ScoreMode::Uniform(0));
        }
        state.write(PRE_SCORE_STATE_KEY, PreScoreState { terms });
        Ok(ScoreMode::PerNode)
    }

    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        match state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) {
            Some(s) => Ok(preferred_score(&s.terms, node)),
            // "Fallback to calculate preferredNodeAffinity here when PreScore is disabled."
            None => Ok(preferred_score(&preferred_terms(pod)?, node)),
        }
    }

    /// [`ScorePlugin::score`] over the feasible nodes, reading the PreScore state (or parsing
    /// the terms, without PreScore) once.
    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        feasible: &[u32],
        out: &mut [i64],
    ) -> Result<(), Status> {
        let computed;
        let terms = match state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) {
            Some(s) => &s.terms,
            None => {
                computed = preferred_terms(pod)?;
                &computed
            }
        };
        super::score_feasible(snapshot, feasible, out, |n| preferred_score(terms, n));
        Ok(())
    }

    fn normalize_score(
        &self,
        _state: &CycleState,
        _pod: &PodInfo,
        _snapshot: &Snapshot,
        _feasible: &[u32],
        scores: &mut [i64],
    ) -> Result<(), Status> {
        default_normalize_score(false, scores);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use k8s_openapi::api::core::v1 as core;

    use super::*;
    use crate::framework::plugins::testutil::{
        PodB, field_term, filter_via_batch, node, outcome, pod, term, want,
    };

    fn na(terms: Vec<core::NodeSelectorTerm>) -> PodB {
        pod("p").required_affinity(terms)
    }

    /// A term with both `matchFields` (`metadata.name In [names]`) and `matchExpressions`.
    fn fields_and_exprs(names: &[&str], exprs: &[(&str, &str, &[&str])]) -> core::NodeSelectorTerm {
        core::NodeSelectorTerm {
            match_fields: field_term("In", names).match_fields,
            match_expressions: term(exprs).match_expressions,
        }
    }

    fn err_reason_pod() -> (Code, Vec<String>) {
        want(Code::UnschedulableAndUnresolvable, &[ERR_REASON_POD])
    }

    fn ok() -> (Code, Vec<String>) {
        want(Code::Success, &[])
    }

    struct Case {
        name: &'static str,
        pod: PodB,
        labels: &'static [(&'static str, &'static str)],
        node_name: &'static str,
        disable_pre_filter: bool,
        want: (Code, Vec<String>),
    }

    /// Upstream `kubernetes/kubernetes`
    /// `pkg/scheduler/framework/plugins/nodeaffinity/node_affinity_test.go`, `TestNodeAffinity`
    /// (Filter rows). Table from the v1.21-era copy (index id 253608810) plus the two "even if
    /// PreFilter is not called" rows of the newer copy
    /// (`kubernetes/kubernetes@022462ccaeb5664cfd0c860978624bb0619aaa01`), which v1.22 has; no exact
    /// v1.22 copy was available. Reason text is the v1.22 `ErrReasonPod` (with `/selector`).
    /// Not ported: the three `args.AddedAffinity` rows (argument not supported) and the 1.24+
    /// PreFilter Skip / PreFilterResult / "pod affinity terms conflict" rows. The harness runs
    /// PreFilter (which must not fail; this scheduler may return Skip, after which the framework
    /// treats the node as passing) and then Filter on every row, since the v1.22 Filter does not
    /// depend on PreFilter.
    #[test]
    fn test_node_affinity() {
        let cases = vec![
            Case {
                name: "no selector",
                pod: pod("p"),
                labels: &[],
                node_name: "",
                disable_pre_filter: false,
                want: ok(),
            },
            Case {
                name: "missing labels",
                pod: pod("p").node_selector("foo", "bar"),
                labels: &[],
                node_name: "",
                disable_pre_filter: false,
                want: err_reason_pod(),
            },
            Case {
                name: "same labels",
                pod: pod("p").node_selector("foo", "bar"),
                labels: &[("foo", "bar")],
                node_name: "",
                disable_pre_filter: false,
                want: ok(),
            },
            Case {
                name: "node labels are superset",
                pod: pod("p").node_selector("foo", "bar"),
                labels: &[("foo", "bar"), ("baz", "blah")],
                node_name: "",
                disable_pre_filter: false,
                want: ok(),
            },
            Case {
                name: "node labels are subset",
                pod: pod("p")
                    .node_selector("foo", "bar")
                    .node_selector("baz", "blah"),
                labels: &[("foo", "bar")],
                node_name: "",
                disable_pre_filter: false,
                want: err_reason_pod(),
            },
            Case {
                name: "Pod with matchExpressions using In operator that matches the existing node",
                pod: na(vec![term(&[("foo", "In", &["bar", "value2"])])]),
                labels: &[("foo", "bar")],
                node_name: "",
                disable_pre_filter: false,
                want: ok(),
            },
            Case {
                name: "Pod with matchExpressions using Gt operator that matches the existing node",
                pod: na(vec![term(&[("kernel-version", "Gt", &["0204"])])]),
                // We use two digit to denote major version and two digit for minor version.
                labels: &[("kernel-version", "0206")],
                node_name: "",
                disable_pre_filter: false,
                want: ok(),
            },
            Case {
                name: "Pod with matchExpressions using NotIn operator that matches the existing node",
                pod: na(vec![term(&[("mem-type", "NotIn", &["DDR", "DDR2"])])]),
                labels: &[("mem-type", "DDR3")],
                node_name: "",
                disable_pre_filter: false,
                want: ok(),
            },
            Case {
                name: "Pod with matchExpressions using Exists operator that matches the existing node",
                pod: na(vec![term(&[("GPU", "Exists", &[])])]),
                labels: &[("GPU", "NVIDIA-GRID-K1")],
                node_name: "",
                disable_pre_filter: false,
                want: ok(),
            },
            Case {
                name: "Pod with affinity that don't match node's labels won't schedule onto the node",
                pod: na(vec![term(&[("foo", "In", &["value1", "value2"])])]),
                labels: &[("foo", "bar")],
                node_name: "",
                disable_pre_filter: false,
                want: err_reason_pod(),
            },
            Case {
                // `NodeSelectorTerms: nil` (k8s-openapi has no nil/empty distinction here).
                name: "Pod with a nil []NodeSelectorTerm in affinity, can't match the node's labels and won't schedule onto the node",
                pod: na(vec![]),
                labels: &[("foo", "bar")],
                node_name: "",
                disable_pre_filter: false,
                want: err_reason_pod(),
            },
            Case {
                name: "Pod with an empty []NodeSelectorTerm in affinity, can't match the node's labels and won't schedule onto the node",
                pod: na(vec![]),
                labels: &[("foo", "bar")],
                node_name: "",
                disable_pre_filter: false,
                want: err_reason_pod(),
            },
            Case {
                name: "Pod with empty MatchExpressions is not a valid value will match no objects and won't schedule onto the node",
                pod: na(vec![term(&[])]),
                labels: &[("foo", "bar")],
                node_name: "",
                disable_pre_filter: false,
                want: err_reason_pod(),
            },
            Case {
                name: "Pod with no Affinity will schedule onto a node",
                pod: pod("p"),
                labels: &[("foo", "bar")],
                node_name: "",
                disable_pre_filter: false,
                want: ok(),
            },
            Case {
                name: "Pod with Affinity but nil NodeSelector will schedule onto a node",
                pod: pod("p").empty_node_affinity(),
                labels: &[("foo", "bar")],
                node_name: "",
                disable_pre_filter: false,
                want: ok(),
            },
            Case {
                name: "Pod with multiple matchExpressions ANDed that matches the existing node",
                pod: na(vec![term(&[
                    ("GPU", "Exists", &[]),
                    ("GPU", "NotIn", &["AMD", "INTER"]),
                ])]),
                labels: &[("GPU", "NVIDIA-GRID-K1")],
                node_name: "",
                disable_pre_filter: false,
                want: ok(),
            },
            Case {
                name: "Pod with multiple matchExpressions ANDed that doesn't match the existing node",
                pod: na(vec![term(&[
                    ("GPU", "Exists", &[]),
                    ("GPU", "In", &["AMD", "INTER"]),
                ])]),
                labels: &[("GPU", "NVIDIA-GRID-K1")],
                node_name: "",
                disable_pre_filter: false,
                want: err_reason_pod(),
            },
            Case {
                name: "Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels and will schedule onto the node",
                pod: na(vec![
                    term(&[("foo", "In", &["bar", "value2"])]),
                    term(&[("diffkey", "In", &["wrong", "value2"])]),
                ]),
                labels: &[("foo", "bar")],
                node_name: "",
                disable_pre_filter: false,
                want: ok(),
            },
            Case {
                name: "Pod with an Affinity and a PodSpec.NodeSelector(the old thing that we are deprecating) both are satisfied, will schedule onto the node",
                pod: na(vec![term(&[("foo", "Exists", &[])])]).node_selector("foo", "bar"),
                labels: &[("foo", "bar")],
                node_name: "",
                disable_pre_filter: false,
                want: ok(),
            },
            Case {
                name: "Pod with an Affinity matches node's labels but the PodSpec.NodeSelector(the old thing that we are deprecating) is not satisfied, won't schedule onto the node",
                pod: na(vec![term(&[("foo", "Exists", &[])])]).node_selector("foo", "bar"),
                labels: &[("foo", "barrrrrr")],
                node_name: "",
                disable_pre_filter: false,
                want: err_reason_pod(),
            },
            Case {
                name: "Pod with an invalid value in Affinity term won't be scheduled onto the node",
                pod: na(vec![term(&[(
                    "foo",
                    "NotIn",
                    &["invalid value: ___@#$%^"],
                )])]),
                labels: &[("foo", "bar")],
                node_name: "",
                disable_pre_filter: false,
                want: err_reason_pod(),
            },
            Case {
                name: "Pod with matchFields using In operator that matches the existing node",
                pod: na(vec![field_term("In", &["node_1"])]),
                labels: &[],
                node_name: "node_1",
                disable_pre_filter: false,
                want: ok(),
            },
            Case {
                name: "Pod with matchFields using In operator that does not match the existing node",
                pod: na(vec![field_term("In", &["node_1"])]),
                labels: &[],
                node_name: "node_2",
                disable_pre_filter: false,
                want: err_reason_pod(),
            },
            Case {
                name: "Pod with two terms: matchFields does not match, but matchExpressions matches",
                pod: na(vec![
                    field_term("In", &["node_1"]),
                    term(&[("foo", "In", &["bar"])]),
                ]),
                labels: &[("foo", "bar")],
                node_name: "node_2",
                disable_pre_filter: false,
                want: ok(),
            },
            Case {
                name: "Pod with one term: matchFields does not match, but matchExpressions matches",
                pod: na(vec![fields_and_exprs(
                    &["node_1"],
                    &[("foo", "In", &["bar"])],
                )]),
                labels: &[("foo", "bar")],
                node_name: "node_2",
                disable_pre_filter: false,
                want: err_reason_pod(),
            },
            Case {
                name: "Pod with one term: both matchFields and matchExpressions match",
                pod: na(vec![fields_and_exprs(
                    &["node_1"],
                    &[("foo", "In", &["bar"])],
                )]),
                labels: &[("foo", "bar")],
                node_name: "node_1",
                disable_pre_filter: false,
                want: ok(),
            },
            Case {
                name: "Pod with two terms: both matchFields and matchExpressions do not match",
                pod: na(vec![
                    field_term("In", &["node_1"]),
                    term(&[("foo", "In", &["not-match-to-bar"])]),
                ]),
                labels: &[("foo", "bar")],
                node_name: "node_2",
                disable_pre_filter: false,
                want: err_reason_pod(),
            },
            Case {
                name: "Matches node selector correctly even if PreFilter is not called",
                pod: pod("p").node_selector("foo", "bar"),
                labels: &[("foo", "bar"), ("baz", "blah")],
                node_name: "",
                disable_pre_filter: true,
                want: ok(),
            },
            Case {
                name: "Matches node affinity correctly even if PreFilter is not called",
                pod: na(vec![term(&[
                    ("GPU", "Exists", &[]),
                    ("GPU", "NotIn", &["AMD", "INTER"]),
                ])]),
                labels: &[("GPU", "NVIDIA-GRID-K1")],
                node_name: "",
                disable_pre_filter: true,
                want: ok(),
            },
        ];
        for c in cases {
            let mut n = node(c.node_name);
            for (k, v) in c.labels {
                n = n.label(k, v);
            }
            let n = n.info();
            let pod = c.pod.info();
            let mut state = CycleState::new();
            if !c.disable_pre_filter {
                let pre = NodeAffinity.pre_filter(&mut state, &pod, &Snapshot::new());
                assert!(
                    pre.is_success() || pre.is_skip(),
                    "{}: PreFilter: {pre:?}",
                    c.name
                );
            }
            let got = NodeAffinity.filter(&state, &pod, &n);
            assert_eq!(outcome(&got), c.want, "{}", c.name);
            let batch = filter_via_batch(&NodeAffinity, &state, &pod, &n);
            assert_eq!(outcome(&batch), c.want, "{}: filter_nodes", c.name);
        }
    }

    /// Scores of `pod` on `nodes`, each node `(name, labels)`: PreScore (a `Uniform` result
    /// stands for every node), raw `Score()` per node, `NormalizeScore` (upstream harness).
    fn priority_scores(p: PodB, nodes: &[(&str, &[(&str, &str)])]) -> Vec<(String, i64)> {
        let nodes: Vec<crate::framework::plugins::testutil::NodeB> = nodes
            .iter()
            .map(|(n, labels)| {
                let mut b = node(n);
                for (k, v) in *labels {
                    b = b.label(k, v);
                }
                b
            })
            .collect();
        let names: Vec<String> = nodes
            .iter()
            .map(|n| n.0.metadata.name.clone().unwrap())
            .collect();
        let snap = crate::framework::plugins::testutil::snapshot(nodes, &[]);
        let feasible: Vec<u32> = names.iter().map(|n| snap.node_index(n).unwrap()).collect();
        let pi = p.info();
        let mut state = CycleState::new();
        let mut scores = vec![0; feasible.len()];
        match NodeAffinity
            .pre_score(&mut state, &pi, &snap, &feasible)
            .unwrap()
        {
            ScoreMode::Uniform(v) => scores.fill(v),
            ScoreMode::PerNode => {
                NodeAffinity
                    .score_nodes(&state, &pi, &snap, &feasible, &mut scores)
                    .unwrap();
                NodeAffinity
                    .normalize_score(&state, &pi, &snap, &feasible, &mut scores)
                    .unwrap();
            }
        }
        names.into_iter().zip(scores).collect()
    }

    /// Upstream `nodeaffinity/node_affinity_test.go` `TestNodeAffinityPriority` (v1.21-era
    /// copy, index id 253608810; the v1.22 table). The two `args.AddedAffinity` rows are not
    /// ported (the argument does not exist in a Policy).
    #[test]
    fn test_node_affinity_priority() {
        const LABEL1: &[(&str, &str)] = &[("foo", "bar")];
        const LABEL2: &[(&str, &str)] = &[("key", "value")];
        const LABEL3: &[(&str, &str)] = &[("az", "az1")];
        const LABEL4: &[(&str, &str)] = &[("abc", "az11"), ("def", "az22")];
        const LABEL5: &[(&str, &str)] = &[("foo", "bar"), ("key", "value"), ("az", "az1")];
        let affinity1 = || pod("p").preferred_affinity(vec![(2, term(&[("foo", "In", &["bar"])]))]);
        let affinity2 = || {
            pod("p").preferred_affinity(vec![
                (2, term(&[("foo", "In", &["bar"])])),
                (4, term(&[("key", "In", &["value"])])),
                (
                    5,
                    term(&[
                        ("foo", "In", &["bar"]),
                        ("key", "In", &["value"]),
                        ("az", "In", &["az1"]),
                    ]),
                ),
            ])
        };
        let want = |v: &[(&str, i64)]| -> Vec<(String, i64)> {
            v.iter().map(|(n, s)| (n.to_string(), *s)).collect()
        };
        assert_eq!(
            priority_scores(
                pod("p"),
                &[
                    ("machine1", LABEL1),
                    ("machine2", LABEL2),
                    ("machine3", LABEL3)
                ]
            ),
            want(&[("machine1", 0), ("machine2", 0), ("machine3", 0)]),
            "all machines are same priority as NodeAffinity is nil"
        );
        assert_eq!(
            priority_scores(
                affinity1(),
                &[
                    ("machine1", LABEL4),
                    ("machine2", LABEL2),
                    ("machine3", LABEL3)
                ]
            ),
            want(&[("machine1", 0), ("machine2", 0), ("machine3", 0)]),
            "no machine macthes preferred scheduling requirements in NodeAffinity of pod so all machines' priority is zero"
        );
        assert_eq!(
            priority_scores(
                affinity1(),
                &[
                    ("machine1", LABEL1),
                    ("machine2", LABEL2),
                    ("machine3", LABEL3)
                ]
            ),
            want(&[("machine1", 100), ("machine2", 0), ("machine3", 0)]),
            "only machine1 matches the preferred scheduling requirements of pod"
        );
        assert_eq!(
            priority_scores(
                affinity2(),
                &[
                    ("machine1", LABEL1),
                    ("machine5", LABEL5),
                    ("machine2", LABEL2)
                ]
            ),
            want(&[("machine1", 18), ("machine5", 100), ("machine2", 36)]),
            "all machines matches the preferred scheduling requirements of pod but with different priorities "
        );
    }

    #[test]
    fn zero_weight_and_empty_preferred_terms_are_skipped_and_bad_terms_fail() {
        // Weight 0 and an empty term: no terms left, Uniform(0).
        let p = pod("p").preferred_affinity(vec![
            (0, term(&[("foo", "In", &["bar"])])),
            (3, core::NodeSelectorTerm::default()),
        ]);
        let snap = Snapshot::new();
        let mode = NodeAffinity
            .pre_score(&mut CycleState::new(), &p.info(), &snap, &[])
            .unwrap();
        assert_eq!(mode, ScoreMode::Uniform(0));
        // An unparsable term is an error status for the pod.
        let bad = pod("p").preferred_affinity(vec![(1, term(&[("foo", "In", &[])]))]);
        let err = NodeAffinity
            .pre_score(&mut CycleState::new(), &bad.info(), &snap, &[])
            .unwrap_err();
        assert_eq!(err.code, Code::Error);
        assert!(
            err.message()
                .contains("preferredDuringSchedulingIgnoredDuringExecution[0]")
        );
    }
}
