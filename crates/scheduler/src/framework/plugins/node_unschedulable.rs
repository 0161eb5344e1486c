//! `NodeUnschedulable` (legacy predicate `CheckNodeUnschedulable`, always on): a node with
//! `spec.unschedulable: true` accepts only pods tolerating `node.kubernetes.io/unschedulable`
//! with effect `NoSchedule`. Follows `pkg/scheduler/framework/plugins/nodeunschedulable` (v1.22).

use crate::framework::types::{NodeInfo, Taint, TaintEffect};
use crate::framework::{Code, CycleState, FilterPlugin, PodInfo, Status};

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
