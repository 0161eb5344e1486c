//! `NodeAffinity` filter (legacy predicate `MatchNodeSelector`): the node's labels must contain
//! the pod's `spec.nodeSelector`, and match one term of its required node affinity. Follows
//! `pkg/scheduler/framework/plugins/nodeaffinity` and
//! `k8s.io/component-helpers/scheduling/corev1/nodeaffinity.GetRequiredNodeAffinity` (v1.22).

use crate::framework::types::NodeInfo;
use crate::framework::{Code, CycleState, FilterPlugin, PodInfo, Status};
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
}
