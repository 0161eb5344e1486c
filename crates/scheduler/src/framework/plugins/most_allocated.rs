//! `NodeResourcesMostAllocated` (legacy priority `MostRequestedPriority`): favours the fullest
//! nodes (bin packing). Per resource `requested * 100 / capacity` with the request clamped to the
//! capacity (0 when the capacity is 0), averaged over cpu and memory in integer arithmetic.
//! Follows `pkg/scheduler/framework/plugins/noderesources/most_allocated.go` (v1.22).

use super::cpu_mem_alloc_req;
use crate::framework::types::NodeInfo;
use crate::framework::{CycleState, MAX_NODE_SCORE, PodInfo, ScorePlugin, Status};

/// Plugin name.
pub const NAME: &str = "NodeResourcesMostAllocated";

/// The MostAllocated scorer.
#[derive(Debug, Default, Clone, Copy)]
pub struct MostAllocated;

/// `mostRequestedScore`.
#[inline]
pub fn most_requested_score(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 {
        return 0;
    }
    requested.min(capacity) * MAX_NODE_SCORE / capacity
}

impl ScorePlugin for MostAllocated {
    fn name(&self) -> &'static str {
        NAME
    }

    #[inline]
    fn score(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let [(ac, rc), (am, rm)] = cpu_mem_alloc_req(pod, node);
        Ok((most_requested_score(rc, ac) + most_requested_score(rm, am)) / 2)
    }
}
