//! `GpuDotProduct` (Policy priority `DotProductPriority`): the FGD paper's "Dot-product"
//! (Tetris-style) baseline. The raw score is the dot product of the node's free (CPU, GPU)
//! vector and the pod's (CPU, GPU) request, each dimension divided by the largest node's
//! (openb: 128 cores, 8 GPUs): `(free CPU / L_cpu)·(pod CPU / L_cpu) + (free GPU / L_gpu)·(pod
//! GPU / L_gpu)`, free GPU summed over the devices and the pod's GPU as count × share. A larger
//! product means more free room where the pod needs it, so NormalizeScore reverses it over the
//! feasible nodes: `⌊100 · (max − raw) / (max − min)⌋` (all 100 when they are equal). Devices:
//! the default best fit.

use super::gpu_best_fit::{LargestNode, gpu_free, pod_gpu_milli};
use crate::framework::{CycleState, ScoreMode, ScorePlugin, Status};
use crate::model::NodeInfo;
use crate::model::PodInfo;
use crate::snapshot::Snapshot;

/// Plugin name.
pub const NAME: &str = "GpuDotProduct";

/// Raw scores are the dot product × this (integers).
pub const RAW_SCALE: f64 = 1e9;

/// The dot product of `pod` on `node`, × [`RAW_SCALE`].
pub fn dot_product_raw(pod: &PodInfo, node: &NodeInfo, largest: LargestNode) -> i64 {
    let (lc, lg) = (largest.milli_cpu as f64, largest.gpu_milli as f64);
    let free_cpu = (node.allocatable.milli_cpu - node.requested.milli_cpu).max(0) as f64;
    let dot = (free_cpu / lc) * (pod.requests.milli_cpu as f64 / lc)
        + (gpu_free(node) as f64 / lg) * (pod_gpu_milli(pod) as f64 / lg);
    (dot * RAW_SCALE) as i64
}

/// The DotProduct scorer.
#[derive(Debug, Default, Clone, Copy)]
pub struct GpuDotProduct;

impl ScorePlugin for GpuDotProduct {
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
            .ok_or_else(|| Status::error("GpuDotProduct: PreScore state missing"))?;
        Ok(dot_product_raw(pod, node, *largest))
    }

    fn normalize_score(
        &self,
        _state: &CycleState,
        _pod: &PodInfo,
        _snapshot: &Snapshot,
        _feasible: &[u32],
        scores: &mut [i64],
    ) -> Result<(), Status> {
        let max = scores.iter().copied().max().unwrap_or(0);
        let min = scores.iter().copied().min().unwrap_or(0);
        for s in scores.iter_mut() {
            *s = if max == min {
                100
            } else {
                (i128::from(max - *s) * 100 / i128::from(max - min)) as i64
            };
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::framework::plugins::testutil::{node, pod};
    use crate::model::RESOURCE_GPU;

    /// Worked example, largest node 128 cores / 8 GPUs, a 16-core 2-GPU pod:
    /// * empty 128-core 8-GPU node: 1·0.125 + 1·0.25 = 0.375;
    /// * empty 64-core 2-GPU node: 0.5·0.125 + 0.25·0.25 = 0.125;
    /// * a 96-core 4-GPU node: 0.75·0.125 + 0.5·0.25 = 0.21875.
    ///
    /// Reversed over [0.125, 0.375]: 0, 100 and ⌊100·0.15625/0.25⌋ = 62.
    #[test]
    fn worked_example() {
        let mk = |name: &str, cpu: &str, gpus: &str| {
            node(name)
                .allocatable(&[("cpu", cpu), (RESOURCE_GPU, gpus)])
                .info()
        };
        let mut s = Snapshot::new();
        for n in [mk("a", "128", "8"), mk("b", "64", "2"), mk("c", "96", "4")] {
            s.add_node(n).unwrap();
        }
        let p = pod("p")
            .container(&[("cpu", "16"), (RESOURCE_GPU, "2")])
            .info();
        let mut state = CycleState::new();
        GpuDotProduct
            .pre_score(&mut state, &p, &s, &[0, 1, 2])
            .unwrap();
        let mut raw: Vec<i64> = s
            .nodes()
            .iter()
            .map(|n| GpuDotProduct.score(&state, &p, n).unwrap())
            .collect();
        assert_eq!(raw, vec![375_000_000, 125_000_000, 218_750_000]);
        GpuDotProduct
            .normalize_score(&state, &p, &s, &[0, 1, 2], &mut raw)
            .unwrap();
        assert_eq!(raw, vec![0, 100, 62]);
    }
}
