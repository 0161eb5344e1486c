//! `GpuBestFit` (Policy priority `BestFitPriority`): the FGD paper's "Best-fit" baseline. The
//! node left with the least CPU and GPU after the placement wins:
//! `score = ⌊100 · (1 − [½ · free CPU after / largest CPU + ½ · free GPU after / largest GPU])⌋`,
//! where "largest" is the biggest node of the cluster (openb: 128 cores, 8 GPUs) and free GPU is
//! summed over the node's devices, in milli-GPU. Memory is not scored. Devices: the default
//! best fit ([`NodeInfo::pick_gpus`]).

use crate::framework::{CycleState, ScoreMode, ScorePlugin, Status};
use crate::model::PodInfo;
use crate::model::{GPU_MILLI_PER_DEVICE, NodeInfo};
use crate::snapshot::Snapshot;

/// Plugin name.
pub const NAME: &str = "GpuBestFit";

/// The largest node of a snapshot: `(allocatable CPU in millicores, devices × 1000 milli-GPU)`,
/// each at least 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LargestNode {
    /// Millicores.
    pub milli_cpu: i64,
    /// Milli-GPU.
    pub gpu_milli: i64,
}

impl LargestNode {
    /// The per-dimension maximum over `snapshot`'s nodes.
    pub fn of(snapshot: &Snapshot) -> LargestNode {
        let mut l = LargestNode {
            milli_cpu: 1,
            gpu_milli: 1,
        };
        for n in snapshot.nodes() {
            l.milli_cpu = l.milli_cpu.max(n.allocatable.milli_cpu);
            l.gpu_milli = l.gpu_milli.max(gpu_capacity(n));
        }
        l
    }
}

/// A node's devices × 1000, milli-GPU.
pub fn gpu_capacity(node: &NodeInfo) -> i64 {
    node.gpu_used.len() as i64 * i64::from(GPU_MILLI_PER_DEVICE)
}

/// A node's free milli-GPU summed over its devices.
pub fn gpu_free(node: &NodeInfo) -> i64 {
    node.gpu_used
        .iter()
        .map(|&u| i64::from(GPU_MILLI_PER_DEVICE.saturating_sub(u)))
        .sum()
}

/// PreScore of the GPU tier scorers (GpuPacking, GpuClustering): a pod asking for no GPU gets
/// the same score, 0, on every node ([`ScoreMode::Uniform`]); a GPU pod is scored per node.
pub fn gpu_pods_only(pod: &PodInfo) -> ScoreMode {
    if pod.gpu.count == 0 {
        ScoreMode::Uniform(0)
    } else {
        ScoreMode::PerNode
    }
}

/// The pod's total GPU request, milli-GPU (count × per-device share).
pub fn pod_gpu_milli(pod: &PodInfo) -> i64 {
    i64::from(pod.gpu.count) * i64::from(pod.gpu.milli)
}

/// The BestFit score of `pod` on `node`.
pub fn best_fit_score(pod: &PodInfo, node: &NodeInfo, largest: LargestNode) -> i64 {
    let cpu_left = (node.allocatable.milli_cpu - node.requested.milli_cpu - pod.requests.milli_cpu)
        .max(0) as f64;
    let gpu_left = (gpu_free(node) - pod_gpu_milli(pod)).max(0) as f64;
    let left =
        0.5 * cpu_left / largest.milli_cpu as f64 + 0.5 * gpu_left / largest.gpu_milli as f64;
    ((100.0 * (1.0 - left)) as i64).clamp(0, 100)
}

/// The BestFit scorer.
#[derive(Debug, Default, Clone, Copy)]
pub struct GpuBestFit;

impl ScorePlugin for GpuBestFit {
    fn name(&self) -> &'static str {
        NAME
    }

    fn pre_score(
        &self,
        state: &mut CycleState,
        _pod: &PodInfo,
        snapshot: &Snapshot,
        _feasible: &[u32],
    ) -> Result<ScoreMode, Status> {
        state.write(NAME, LargestNode::of(snapshot));
        Ok(ScoreMode::PerNode)
    }

    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let largest = state
            .read::<LargestNode>(NAME)
            .ok_or_else(|| Status::error("GpuBestFit: PreScore state missing"))?;
        Ok(best_fit_score(pod, node, *largest))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::framework::plugins::testutil::{node, pod};
    use crate::model::{RESOURCE_GPU, RESOURCE_GPU_MILLI};

    /// Worked example: largest node 128 cores / 8 GPUs. A 4-core, 1-GPU pod on a 64-core,
    /// 2-GPU node with 16 cores and half a GPU used leaves 44 cores and 0.5 GPU:
    /// 1 − (½·44/128 + ½·500/8000) = 1 − (0.171875 + 0.03125) = 0.796875 → 79.
    #[test]
    fn worked_example() {
        let big = node("big")
            .allocatable(&[("cpu", "128"), (RESOURCE_GPU, "8")])
            .info();
        let n = node("n")
            .allocatable(&[("cpu", "64"), (RESOURCE_GPU, "2")])
            .info_with(&[pod("busy").container(&[("cpu", "16"), (RESOURCE_GPU_MILLI, "500")])]);
        let mut s = Snapshot::new();
        s.add_node(big).unwrap();
        s.add_node(n.clone()).unwrap();
        let largest = LargestNode::of(&s);
        assert_eq!(
            largest,
            LargestNode {
                milli_cpu: 128_000,
                gpu_milli: 8000
            }
        );
        let p = pod("p")
            .container(&[("cpu", "4"), (RESOURCE_GPU, "1")])
            .info();
        assert_eq!(best_fit_score(&p, &n, largest), 79);
        let mut state = CycleState::new();
        GpuBestFit.pre_score(&mut state, &p, &s, &[0, 1]).unwrap();
        assert_eq!(GpuBestFit.score(&state, &p, &n).unwrap(), 79);
        // An empty largest node keeps 124 cores and 7 GPUs: 1 − (0.484375 + 0.4375) → 7.
        assert_eq!(best_fit_score(&p, &s.nodes()[0], largest), 7);
    }
}
