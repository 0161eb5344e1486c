//! `NodeName` (legacy predicate `HostName`): a pod that names a node in `spec.nodeName` fits only
//! that node. Follows `pkg/scheduler/framework/plugins/nodename` (v1.22).

use crate::framework::types::NodeInfo;
use crate::framework::{Code, CycleState, FilterPlugin, PodInfo, Status};
use crate::snapshot::Snapshot;

/// Plugin name.
pub const NAME: &str = "NodeName";
/// Failure reason (`ErrReason`).
pub const ERR_REASON: &str = "node(s) didn't match the requested node name";

/// The NodeName filter.
#[derive(Debug, Default, Clone, Copy)]
pub struct NodeName;

impl FilterPlugin for NodeName {
    fn name(&self) -> &'static str {
        NAME
    }

    fn pre_filter(&self, _state: &mut CycleState, pod: &PodInfo, _snapshot: &Snapshot) -> Status {
        if pod.node_name.is_empty() {
            Status::skip()
        } else {
            Status::success()
        }
    }

    fn filter(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if pod.node_name.is_empty() || pod.node_name == node.name {
            Status::success()
        } else {
            Status::new(Code::UnschedulableAndUnresolvable, ERR_REASON)
        }
    }
}
