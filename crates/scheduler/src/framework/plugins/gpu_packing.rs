//! `GpuPacking` (Policy priority `GpuPackingPriority`): the FGD paper's "GPU Packing" baseline,
//! tiers on the GPU dimension only (CPU-only pods: every node equal):
//!
//! | tier | when | score |
//! |---|---|---|
//! | 1 | a share fits on a device already in use | `67 + ⌊33 · used after / 1000⌋` of that device (fuller is better) |
//! | 2 | the node has a device in use (the pod needs idle ones) | `34 + ⌊32 · node GPU used after / node GPU⌋` |
//! | 3 | every device of the node is idle | `⌊33 · node GPU used after / node GPU⌋` |
//!
//! The device taken is the default best fit ([`NodeInfo::pick_gpus`]): the fullest device with
//! room, which is the one tier 1 scores.

use super::gpu_best_fit::{gpu_capacity, gpu_pods_only, pod_gpu_milli};
use crate::framework::{CycleState, ScoreMode, ScorePlugin, Status};
use crate::model::PodInfo;
use crate::model::{GPU_MILLI_PER_DEVICE, NodeInfo};
use crate::snapshot::Snapshot;

/// Plugin name.
pub const NAME: &str = "GpuPacking";

/// The GpuPacking score of a GPU pod on `node`.
pub fn packing_score(pod: &PodInfo, node: &NodeInfo) -> i64 {
    let cap = gpu_capacity(node);
    if cap == 0 {
        return 0;
    }
    if pod.gpu.milli < GPU_MILLI_PER_DEVICE {
        let shared = node
            .gpu_used
            .iter()
            .filter(|&&u| u > 0 && GPU_MILLI_PER_DEVICE.saturating_sub(u) >= pod.gpu.milli)
            .max();
        if let Some(&u) = shared {
            let after = i64::from((u + pod.gpu.milli).min(GPU_MILLI_PER_DEVICE));
            return 67 + 33 * after / i64::from(GPU_MILLI_PER_DEVICE);
        }
    }
    let used: i64 = node.gpu_used.iter().map(|&u| i64::from(u)).sum();
    let after = (used + pod_gpu_milli(pod)).min(cap);
    if used > 0 {
        34 + 32 * after / cap
    } else {
        33 * after / cap
    }
}

/// The GpuPacking scorer.
#[derive(Debug, Default, Clone, Copy)]
pub struct GpuPacking;

impl ScorePlugin for GpuPacking {
    fn name(&self) -> &'static str {
        NAME
    }

    fn pre_score(
        &self,
        _state: &mut CycleState,
        pod: &PodInfo,
        _snapshot: &Snapshot,
        _feasible: &[u32],
    ) -> Result<ScoreMode, Status> {
        Ok(gpu_pods_only(pod))
    }

    fn score(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        Ok(packing_score(pod, node))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::plugins::testutil::{node, pod};
    use crate::model::{RESOURCE_GPU, RESOURCE_GPU_MILLI};

    /// Worked examples on 4-GPU nodes.
    #[test]
    fn worked_examples() {
        let four = || node("n").allocatable(&[("cpu", "64"), (RESOURCE_GPU, "4")]);
        let idle = four().info();
        let shared = four().info_with(&[pod("a").container(&[(RESOURCE_GPU_MILLI, "600")])]);
        let share = pod("s").container(&[(RESOURCE_GPU_MILLI, "300")]).info();
        let whole = pod("w").container(&[(RESOURCE_GPU, "2")]).info();
        // Tier 1: the 600-used device takes 300 → 900: 67 + ⌊33·0.9⌋ = 96.
        assert_eq!(packing_score(&share, &shared), 96);
        // Tier 2: two idle devices on a node using 600 of 4000 → 2600: 34 + ⌊32·0.65⌋ = 54.
        assert_eq!(packing_score(&whole, &shared), 54);
        // Tier 3: an idle node: 300 of 4000 → ⌊33·0.075⌋ = 2; 2000 of 4000 → 16.
        assert_eq!(packing_score(&share, &idle), 2);
        assert_eq!(packing_score(&whole, &idle), 16);
        // A share too big for the used device falls to tier 2: 600 + 500 of 4000 → 34 + 8.
        let big = pod("b").container(&[(RESOURCE_GPU_MILLI, "500")]).info();
        assert_eq!(packing_score(&big, &shared), 42);
    }
}
