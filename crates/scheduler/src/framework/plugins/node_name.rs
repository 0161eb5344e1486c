//! `NodeName` (legacy predicate `HostName`): a pod that names a node in `spec.nodeName` fits only
//! that node. Follows `pkg/scheduler/framework/plugins/nodename` (v1.22).

use crate::framework::{Code, CycleState, FilterPlugin, Status};
use crate::model::NodeInfo;
use crate::model::PodInfo;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::plugins::testutil::{filter_via_batch, node, outcome, pod, want};

    /// Upstream `kubernetes/kubernetes` `pkg/scheduler/framework/plugins/nodename/node_name_test.go`
    /// @ `054d429d9f8bc8de4fc82e6cf2281e12a13fe1f2`, `TestNodeName` (v1.20–v1.22 era; the table
    /// is unchanged in all versions). Reason text as since v1.21 (PR #97454, "requested node
    /// name"). Harness as upstream: Filter only. The 1.24+ PreFilterResult/Skip is not ported.
    #[test]
    fn test_node_name() {
        struct Case {
            name: &'static str,
            pod_node_name: &'static str,
            node: &'static str,
            want: (Code, Vec<String>),
        }
        let cases = vec![
            Case {
                name: "no host specified",
                pod_node_name: "",
                node: "",
                want: want(Code::Success, &[]),
            },
            Case {
                name: "host matches",
                pod_node_name: "foo",
                node: "foo",
                want: want(Code::Success, &[]),
            },
            Case {
                name: "host doesn't match",
                pod_node_name: "bar",
                node: "foo",
                want: want(Code::UnschedulableAndUnresolvable, &[ERR_REASON]),
            },
        ];
        for c in cases {
            let mut p = pod("p");
            if !c.pod_node_name.is_empty() {
                p = p.node(c.pod_node_name);
            }
            let (state, p, n) = (CycleState::new(), p.info(), node(c.node).info());
            let got = NodeName.filter(&state, &p, &n);
            assert_eq!(outcome(&got), c.want, "{}", c.name);
            let batch = filter_via_batch(&NodeName, &state, &p, &n);
            assert_eq!(outcome(&batch), c.want, "{}: filter_nodes", c.name);
        }
    }
}
