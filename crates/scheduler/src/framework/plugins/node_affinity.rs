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
