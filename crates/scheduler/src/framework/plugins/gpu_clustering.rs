//! `GpuClustering` (Policy priority `GpuClusteringPriority`): the FGD paper's "GPU Clustering"
//! baseline. Pods are grouped by GPU request class (count, milli-GPU per device); a node's
//! classes are those of the GPU pods on it. Tiers (CPU-only pods: every node equal):
//!
//! | tier | node | score |
//! |---|---|---|
//! | 1 | runs only pods of the pod's class | 75..=100 |
//! | 2 | runs several classes, the pod's among them | 50..=74 |
//! | 3 | runs only other classes | 25..=49 |
//! | 4 | runs no GPU pod | 0..=24 |
//!
//! Within a tier, less free GPU is better: `base + ⌊25 · node GPU used after / node GPU⌋`, capped
//! at the tier's top. Devices: the default best fit.
//!
//! The order of tiers 3 and 4 is our reading, chosen by measurement: our notes of the
//! authors' description put an idle node above a node running other classes, but that order
//! opens a fresh node for every new class and leaves 14.4 % of the GPUs unallocated on the
//! default trace (seeds 42–43) against the authors' 8.35 ± 0.58 %; a node of other classes
//! first (clustering, then packing) gives 8.9–9.4 %. See the README's GPU section.

use super::gpu_best_fit::{gpu_capacity, gpu_pods_only, pod_gpu_milli};
use crate::framework::types::NodeInfo;
use crate::framework::{CycleState, PodInfo, ScoreMode, ScorePlugin, Status};
use crate::snapshot::Snapshot;

/// Plugin name.
pub const NAME: &str = "GpuClustering";

/// The GpuClustering score of a GPU pod on `node`.
pub fn clustering_score(pod: &PodInfo, node: &NodeInfo) -> i64 {
    let class = (pod.gpu.count, pod.gpu.milli);
    let (mut same, mut other) = (false, false);
    for p in node.pods.iter().filter(|p| p.gpu.count > 0) {
        if (p.gpu.count, p.gpu.milli) == class {
            same = true;
        } else {
            other = true;
        }
    }
    let (base, top) = match (same, other) {
        (true, false) => (75, 100),
        (true, true) => (50, 74),
        (false, true) => (25, 49),
        (false, false) => (0, 24),
    };
    let cap = gpu_capacity(node);
    if cap == 0 {
        return base;
    }
    let used: i64 = node.gpu_used.iter().map(|&u| i64::from(u)).sum();
    let after = (used + pod_gpu_milli(pod)).min(cap);
    (base + 25 * after / cap).min(top)
}

/// The GpuClustering scorer.
#[derive(Debug, Default, Clone, Copy)]
pub struct GpuClustering;

impl ScorePlugin for GpuClustering {
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
        Ok(clustering_score(pod, node))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::plugins::testutil::{node, pod};
    use crate::framework::types::{RESOURCE_GPU, RESOURCE_GPU_MILLI};

    /// Worked examples on 4-GPU nodes for a 500-milli pod (class (1, 500)).
    #[test]
    fn worked_examples() {
        let four = || node("n").allocatable(&[("cpu", "64"), (RESOURCE_GPU, "4")]);
        let half = || pod("h").container(&[(RESOURCE_GPU_MILLI, "500")]);
        let p = half().info();
        // Only its class: 500 used + 500 → 1000 of 4000: 75 + ⌊25·0.25⌋ = 81.
        assert_eq!(clustering_score(&p, &four().info_with(&[half()])), 81);
        // Its class and a whole-GPU pod: 1500 + 500 of 4000 → 50 + 12 = 62.
        let whole = |name: &str| pod(name).container(&[(RESOURCE_GPU, "1")]);
        let mixed = four().info_with(&[half(), whole("w1")]);
        assert_eq!(clustering_score(&p, &mixed), 62);
        // Only other classes: 1000 + 500 of 4000 → 25 + 9 = 34.
        assert_eq!(clustering_score(&p, &four().info_with(&[whole("w1")])), 34);
        // Idle (no GPU pod): 500 of 4000 → 0 + 3 = 3, below every node already running GPU
        // pods.
        assert_eq!(clustering_score(&p, &four().info()), 3);
        // A CPU-only pod does not make a node non-idle.
        let cpu_only = four().info_with(&[pod("c").container(&[("cpu", "8")])]);
        assert_eq!(clustering_score(&p, &cpu_only), 3);
        // A full tier-2 node is capped at 74: three whole GPUs + 500 used, + 500.
        let full = four().info_with(&[half(), whole("w1"), whole("w2"), whole("w3")]);
        assert_eq!(clustering_score(&p, &full), 74);
    }
}
