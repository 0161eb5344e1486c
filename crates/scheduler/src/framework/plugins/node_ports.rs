//! `NodePorts` (legacy predicates `PodFitsHostPorts` / `PodFitsPorts`): the pod's host ports
//! must be free on the node: same protocol and port conflict when the host IPs are equal or
//! either is `0.0.0.0`. Follows `pkg/scheduler/framework/plugins/nodeports` (v1.22) and
//! `HostPortInfo.CheckConflict`.

use crate::framework::types::NodeInfo;
use crate::framework::{Code, CycleState, FilterPlugin, PodInfo, Status};
use crate::snapshot::Snapshot;

/// Plugin name.
pub const NAME: &str = "NodePorts";
/// Failure reason (`ErrReason`).
pub const ERR_REASON: &str = "node(s) didn't have free ports for the requested pod ports";

/// The NodePorts filter.
#[derive(Debug, Default, Clone, Copy)]
pub struct NodePorts;

impl FilterPlugin for NodePorts {
    fn name(&self) -> &'static str {
        NAME
    }

    fn pre_filter(&self, _state: &mut CycleState, pod: &PodInfo, _snapshot: &Snapshot) -> Status {
        if pod.host_ports.is_empty() {
            Status::skip()
        } else {
            Status::success()
        }
    }

    fn filter(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let conflict = pod
            .host_ports
            .iter()
            .any(|want| node.used_ports.iter().any(|used| want.conflicts(used)));
        if conflict {
            Status::new(Code::Unschedulable, ERR_REASON)
        } else {
            Status::success()
        }
    }
}
