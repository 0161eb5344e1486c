//! `NodeResourcesLeastAllocated` (legacy priority `LeastRequestedPriority`): favours nodes with
//! the most free cpu and memory. Per resource `(capacity - requested) * 100 / capacity` (0 when
//! the capacity is 0 or the request exceeds it), averaged over cpu and memory with weight 1 each,
//! in integer arithmetic. `requested` counts 100m / 200 MiB for containers without requests.
//! Follows `pkg/scheduler/framework/plugins/noderesources/least_allocated.go` (v1.22).

use super::cpu_mem_alloc_req;
use crate::framework::types::NodeInfo;
use crate::framework::{CycleState, MAX_NODE_SCORE, PodInfo, ScorePlugin, Status};

/// Plugin name.
pub const NAME: &str = "NodeResourcesLeastAllocated";

/// The LeastAllocated scorer.
#[derive(Debug, Default, Clone, Copy)]
pub struct LeastAllocated;

/// `leastRequestedScore`.
#[inline]
pub fn least_requested_score(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 || requested > capacity {
        return 0;
    }
    (capacity - requested) * MAX_NODE_SCORE / capacity
}

impl ScorePlugin for LeastAllocated {
    fn name(&self) -> &'static str {
        NAME
    }

    #[inline]
    fn score(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let [(ac, rc), (am, rm)] = cpu_mem_alloc_req(pod, node);
        Ok((least_requested_score(rc, ac) + least_requested_score(rm, am)) / 2)
    }
}
