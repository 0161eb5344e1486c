//! `NodeUnschedulable` (legacy predicate `CheckNodeUnschedulable`, always on): a node with
//! `spec.unschedulable: true` accepts only pods tolerating `node.kubernetes.io/unschedulable`
//! with effect `NoSchedule`. Follows `pkg/scheduler/framework/plugins/nodeunschedulable` (v1.22).

use crate::framework::{Code, CycleState, FastCheck, FilterPlugin, PodInfo, Status};
use crate::framework::{NodeInfo, Taint, TaintEffect};
use crate::snapshot::NodeHot;

/// Plugin name.
pub const NAME: &str = "NodeUnschedulable";
/// Failure reason (`ErrReasonUnschedulable`).
pub const ERR_REASON_UNSCHEDULABLE: &str = "node(s) were unschedulable";

/// The NodeUnschedulable filter.
#[derive(Debug, Default, Clone, Copy)]
pub struct NodeUnschedulable;

impl FilterPlugin for NodeUnschedulable {
    fn name(&self) -> &'static str {
        NAME
    }

    fn fast_check(&self, _pod: &PodInfo) -> Option<FastCheck> {
        Some(FastCheck {
            forbidden_flags: NodeHot::UNSCHEDULABLE,
            ..FastCheck::default()
        })
    }

    #[inline]
    fn filter(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if !node.unschedulable {
            return Status::success();
        }
        let taint = Taint {
            key: "node.kubernetes.io/unschedulable".into(),
            value: String::new(),
            effect: Some(TaintEffect::NoSchedule),
        };
        if pod.tolerations.iter().any(|t| t.tolerates(&taint)) {
            Status::success()
        } else {
            Status::new(Code::UnschedulableAndUnresolvable, ERR_REASON_UNSCHEDULABLE)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::plugins::testutil::{filter_via_batch, node, outcome, pod, want};

    /// Upstream `kubernetes/kubernetes`
    /// `pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable_test.go`,
    /// `TestNodeUnschedulable`: the 3-row table is identical in the stored v1.17-era version
    /// @ `00a12c787cb55fa704576e899983e62d2a3d2dc6` and a newer copy (index id 443217320), so also
    /// in v1.22. Harness as upstream: Filter only.
    #[test]
    fn test_node_unschedulable() {
        struct Case {
            name: &'static str,
            tolerate_unschedulable: bool,
            unschedulable: bool,
            want: (Code, Vec<String>),
        }
        let cases = vec![
            Case {
                name: "Does not schedule pod to unschedulable node (node.Spec.Unschedulable==true)",
                tolerate_unschedulable: false,
                unschedulable: true,
                want: want(
                    Code::UnschedulableAndUnresolvable,
                    &[ERR_REASON_UNSCHEDULABLE],
                ),
            },
            Case {
                name: "Schedule pod to normal node",
                tolerate_unschedulable: false,
                unschedulable: false,
                want: want(Code::Success, &[]),
            },
            Case {
                name: "Schedule pod with toleration to unschedulable node (node.Spec.Unschedulable==true)",
                tolerate_unschedulable: true,
                unschedulable: true,
                want: want(Code::Success, &[]),
            },
        ];
        for c in cases {
            let mut p = pod("p");
            if c.tolerate_unschedulable {
                // `{Key: "node.kubernetes.io/unschedulable", Effect: NoSchedule}`, operator and
                // value empty.
                p = p.toleration("node.kubernetes.io/unschedulable", "", "", "NoSchedule");
            }
            let mut n = node("n");
            if c.unschedulable {
                n = n.unschedulable();
            }
            let (state, p, n) = (CycleState::new(), p.info(), n.info());
            let got = NodeUnschedulable.filter(&state, &p, &n);
            assert_eq!(outcome(&got), c.want, "{}", c.name);
            let batch = filter_via_batch(&NodeUnschedulable, &state, &p, &n);
            assert_eq!(outcome(&batch), c.want, "{}: filter_nodes", c.name);
        }
    }
}
