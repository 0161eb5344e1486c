//! `NodeResourcesBalancedAllocation` (legacy priority `BalancedResourceAllocation`), the
//! pre-1.23 formula: with `f = requested / capacity` for cpu and memory (1 when the capacity is
//! 0), a node where either fraction reaches 1 scores 0, otherwise
//! `int((1 - |f_cpu - f_mem|) * 100)`. Follows
//! `pkg/scheduler/framework/plugins/noderesources/balanced_allocation.go` (v1.22); v1.23 replaced
//! it with a standard-deviation formula that this plugin does not use.

use super::cpu_mem_alloc_req;
use crate::framework::types::NodeInfo;
use crate::framework::{CycleState, MAX_NODE_SCORE, PodInfo, ScorePlugin, Status};

/// Plugin name.
pub const NAME: &str = "NodeResourcesBalancedAllocation";

/// The BalancedAllocation scorer.
#[derive(Debug, Default, Clone, Copy)]
pub struct BalancedAllocation;

fn fraction_of_capacity(requested: i64, capacity: i64) -> f64 {
    if capacity == 0 {
        return 1.0;
    }
    requested as f64 / capacity as f64
}

/// `balancedResourceScorer` without volumes.
#[inline]
pub fn balanced_score(cpu_req: i64, cpu_cap: i64, mem_req: i64, mem_cap: i64) -> i64 {
    let fc = fraction_of_capacity(cpu_req, cpu_cap);
    let fm = fraction_of_capacity(mem_req, mem_cap);
    if fc >= 1.0 || fm >= 1.0 {
        return 0;
    }
    ((1.0 - (fc - fm).abs()) * MAX_NODE_SCORE as f64) as i64
}

impl ScorePlugin for BalancedAllocation {
    fn name(&self) -> &'static str {
        NAME
    }

    #[inline]
    fn score(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let [(ac, rc), (am, rm)] = cpu_mem_alloc_req(pod, node);
        Ok(balanced_score(rc, ac, rm, am))
    }
}
