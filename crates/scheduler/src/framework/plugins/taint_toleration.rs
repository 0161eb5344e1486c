//! `TaintToleration` filter (legacy predicate `PodToleratesNodeTaints`, always on): every node
//! taint with effect `NoSchedule` or `NoExecute` must be tolerated; `PreferNoSchedule` is
//! ignored here. Follows `pkg/scheduler/framework/plugins/tainttoleration` (v1.22) and
//! `v1helper.FindMatchingUntoleratedTaint`.

use crate::framework::types::{NodeInfo, TaintEffect};
use crate::framework::{Code, CycleState, FastCheck, FilterPlugin, PodInfo, Status};
use crate::snapshot::NodeHot;

/// Plugin name.
pub const NAME: &str = "TaintToleration";

/// The TaintToleration filter.
#[derive(Debug, Default, Clone, Copy)]
pub struct TaintToleration;

impl FilterPlugin for TaintToleration {
    fn name(&self) -> &'static str {
        NAME
    }

    fn fast_check(&self, _pod: &PodInfo) -> Option<FastCheck> {
        Some(FastCheck {
            forbidden_flags: NodeHot::FILTER_TAINTS,
            fits: None,
        })
    }

    #[inline]
    fn filter(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if !node.has_filter_taints {
            return Status::success();
        }
        let untolerated = node.taints.iter().find(|t| {
            matches!(
                t.effect,
                Some(TaintEffect::NoSchedule) | Some(TaintEffect::NoExecute)
            ) && !pod.tolerations.iter().any(|tol| tol.tolerates(t))
        });
        match untolerated {
            None => Status::success(),
            Some(t) => Status::new(
                Code::UnschedulableAndUnresolvable,
                format!(
                    "node(s) had taint {{{}: {}}}, that the pod didn't tolerate",
                    t.key, t.value
                ),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::plugins::testutil::{filter_via_batch, node, outcome, pod, want};

    type Tol = (&'static str, &'static str, &'static str, &'static str);
    type TaintSpec = (&'static str, &'static str, &'static str);

    /// Upstream `kubernetes/kubernetes`
    /// `pkg/scheduler/framework/plugins/tainttoleration/taint_toleration_test.go`,
    /// `TestTaintTolerationFilter`: the 9 rows read from post-1.24 copies (index ids 340204713 and
    /// 145891250; rows unchanged since ~v1.18) with the v1.22 reason text
    /// `node(s) had taint {K: V}, that the pod didn't tolerate` restored (the copies read carry the
    /// PR #109119 text "had untolerated taint"). Harness as upstream: Filter only.
    #[test]
    fn test_taint_toleration_filter() {
        struct Case {
            name: &'static str,
            tolerations: Vec<Tol>,
            taints: Vec<TaintSpec>,
            want: (Code, Vec<String>),
        }
        let cases = vec![
            Case {
                name: "A pod having no tolerations can't be scheduled onto a node with nonempty taints",
                tolerations: vec![],
                taints: vec![("dedicated", "user1", "NoSchedule")],
                want: want(
                    Code::UnschedulableAndUnresolvable,
                    &["node(s) had taint {dedicated: user1}, that the pod didn't tolerate"],
                ),
            },
            Case {
                name: "A pod which can be scheduled on a dedicated node assigned to user1 with effect NoSchedule",
                tolerations: vec![("dedicated", "", "user1", "NoSchedule")],
                taints: vec![("dedicated", "user1", "NoSchedule")],
                want: want(Code::Success, &[]),
            },
            Case {
                name: "A pod which can't be scheduled on a dedicated node assigned to user2 with effect NoSchedule",
                tolerations: vec![("dedicated", "Equal", "user2", "NoSchedule")],
                taints: vec![("dedicated", "user1", "NoSchedule")],
                want: want(
                    Code::UnschedulableAndUnresolvable,
                    &["node(s) had taint {dedicated: user1}, that the pod didn't tolerate"],
                ),
            },
            Case {
                name: "A pod can be scheduled onto the node, with a toleration uses operator Exists that tolerates the taints on the node",
                tolerations: vec![("foo", "Exists", "", "NoSchedule")],
                taints: vec![("foo", "bar", "NoSchedule")],
                want: want(Code::Success, &[]),
            },
            Case {
                name: "A pod has multiple tolerations, node has multiple taints, all the taints are tolerated, pod can be scheduled onto the node",
                tolerations: vec![
                    ("dedicated", "Equal", "user2", "NoSchedule"),
                    ("foo", "Exists", "", "NoSchedule"),
                ],
                taints: vec![
                    ("dedicated", "user2", "NoSchedule"),
                    ("foo", "bar", "NoSchedule"),
                ],
                want: want(Code::Success, &[]),
            },
            Case {
                name: "A pod has a toleration that keys and values match the taint on the node, but (non-empty) effect doesn't match, can't be scheduled onto the node",
                tolerations: vec![("foo", "Equal", "bar", "PreferNoSchedule")],
                taints: vec![("foo", "bar", "NoSchedule")],
                want: want(
                    Code::UnschedulableAndUnresolvable,
                    &["node(s) had taint {foo: bar}, that the pod didn't tolerate"],
                ),
            },
            Case {
                name: "The pod has a toleration that keys and values match the taint on the node, the effect of toleration is empty, and the effect of taint is NoSchedule. Pod can be scheduled onto the node",
                tolerations: vec![("foo", "Equal", "bar", "")],
                taints: vec![("foo", "bar", "NoSchedule")],
                want: want(Code::Success, &[]),
            },
            Case {
                name: "The pod has a toleration that key and value don't match the taint on the node, but the effect of taint on node is PreferNoSchedule. Pod can be scheduled onto the node",
                tolerations: vec![("dedicated", "Equal", "user2", "NoSchedule")],
                taints: vec![("dedicated", "user1", "PreferNoSchedule")],
                want: want(Code::Success, &[]),
            },
            Case {
                name: "The pod has no toleration, but the effect of taint on node is PreferNoSchedule. Pod can be scheduled onto the node",
                tolerations: vec![],
                taints: vec![("dedicated", "user1", "PreferNoSchedule")],
                want: want(Code::Success, &[]),
            },
        ];
        for c in cases {
            let mut p = pod("pod1");
            for (k, op, v, e) in &c.tolerations {
                p = p.toleration(k, op, v, e);
            }
            let mut n = node("nodeA");
            for (k, v, e) in &c.taints {
                n = n.taint(k, v, e);
            }
            let (state, p, n) = (CycleState::new(), p.info(), n.info());
            let got = TaintToleration.filter(&state, &p, &n);
            assert_eq!(outcome(&got), c.want, "{}", c.name);
            let batch = filter_via_batch(&TaintToleration, &state, &p, &n);
            assert_eq!(outcome(&batch), c.want, "{}: filter_nodes", c.name);
        }
    }
}
