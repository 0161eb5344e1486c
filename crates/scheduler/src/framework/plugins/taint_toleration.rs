//! `TaintToleration` filter (legacy predicate `PodToleratesNodeTaints`, always on): every node
//! taint with effect `NoSchedule` or `NoExecute` must be tolerated; `PreferNoSchedule` is
//! ignored here. Follows `pkg/scheduler/framework/plugins/tainttoleration` (v1.22) and
//! `v1helper.FindMatchingUntoleratedTaint`.

use crate::framework::types::{NodeInfo, TaintEffect};
use crate::framework::{Code, CycleState, FilterPlugin, PodInfo, Status};

/// Plugin name.
pub const NAME: &str = "TaintToleration";

/// The TaintToleration filter.
#[derive(Debug, Default, Clone, Copy)]
pub struct TaintToleration;

impl FilterPlugin for TaintToleration {
    fn name(&self) -> &'static str {
        NAME
    }

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
