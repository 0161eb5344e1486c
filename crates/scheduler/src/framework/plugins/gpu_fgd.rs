//! `GpuFragmentation` (Policy priority `GpuFragmentationPriority`): the FGD scorer of Weng et al.,
//! USENIX ATC'23 ("Fragmentation Gradient Descent"), and `GpuFragmentationStranding`
//! (`GpuFragmentationStrandingPriority`), our variant that also counts the GPUs a node strands
//! for lack of memory.
//!
//! A node's score is how much placing the pod there *reduces* the node's fragmentation for the
//! workload's typical pods ([`super::gpu_frag`]): `Δ = F_n(M) before − F_n(M) after`, in
//! milli-GPU, and `score = ⌊100 · sigmoid(Δ / 1000)⌋` (0..=100; 50 when nothing changes). For a
//! share of one GPU every device with room is tried and the best kept; that device is also the
//! one Reserve takes ([`ScorePlugin::gpu_indexes`]). Whole GPUs take the lowest-indexed free
//! devices (every choice leaves the same multiset of free shares, hence the same fragment).
//!
//! The typical pods come from the snapshot ([`Snapshot::typical_pods`]: the workload in
//! `simulate`; in cluster mode the pods the scheduler has seen, pending and bound, counted as
//! they change by [`super::gpu_frag::TypicalPodCounter`]); a snapshot without them uses the pods
//! on its nodes plus the pod being scheduled.

use std::sync::{Arc, Mutex};

use super::gpu_frag::{FragMemo, FragModel, NodeGpuState, TypicalPods};
use crate::framework::{CycleState, ScoreMode, ScorePlugin, Status};
use crate::model::PodInfo;
use crate::model::{GPU_MILLI_PER_DEVICE, LABEL_GPU_MODEL, NodeInfo};
use crate::snapshot::Snapshot;

/// Plugin name of the paper's FGD.
pub const NAME: &str = "GpuFragmentation";
/// Plugin name of the variant that also checks memory.
pub const NAME_STRANDING: &str = "GpuFragmentationStranding";

/// Plugin name of the variant with full resolution (our `GpuFragmentationFinePriority`).
pub const NAME_FINE: &str = "GpuFragmentationFine";

/// The FGD scorer.
#[derive(Debug, Default)]
pub struct GpuFragmentation {
    model: FragModel,
    /// Score the decrease itself, min–max normalised over the feasible nodes, instead of the
    /// floored sigmoid (which gives many nodes the same 0..=100 score).
    fine: bool,
    memo: Mutex<FragMemo>,
}

impl GpuFragmentation {
    /// The paper's FGD (CPU and GPU checked).
    pub fn new() -> GpuFragmentation {
        GpuFragmentation::default()
    }

    /// The stranding variant: typical pods also need their memory.
    pub fn stranding() -> GpuFragmentation {
        GpuFragmentation {
            model: FragModel {
                memory: true,
                ..FragModel::default()
            },
            ..GpuFragmentation::default()
        }
    }

    /// The full-resolution variant: the raw score is the decrease `Δ` in micro-GPU and
    /// NormalizeScore maps the feasible nodes' range onto 0..=100 (largest decrease 100), so
    /// nodes tie only when their decreases are within 1 % of the range.
    pub fn fine() -> GpuFragmentation {
        GpuFragmentation {
            fine: true,
            ..GpuFragmentation::default()
        }
    }

    /// The raw score of a decrease `delta` (milli-GPU).
    fn raw(&self, delta: f64) -> i64 {
        if self.fine {
            (delta * 1000.0).round() as i64
        } else {
            fgd_score(delta)
        }
    }
}

/// Min–max normalisation onto 0..=100, the largest raw score 100 (all 100 when they are equal).
pub fn normalize_min_max(scores: &mut [i64]) {
    let max = scores.iter().copied().max().unwrap_or(0);
    let min = scores.iter().copied().min().unwrap_or(0);
    for s in scores.iter_mut() {
        *s = if max == min {
            100
        } else {
            (i128::from(*s - min) * 100 / i128::from(max - min)) as i64
        };
    }
}

/// `⌊100 · sigmoid(Δ / 1000)⌋` for a fragmentation decrease `delta` in milli-GPU.
pub fn fgd_score(delta: f64) -> i64 {
    let s = 1.0 / (1.0 + (-delta / 1000.0).exp());
    ((s * 100.0) as i64).clamp(0, 100)
}

/// The best placement of `pod` on `node` for fragmentation: the decrease `Δ` (milli-GPU) and
/// the devices taken (empty for CPU-only pods and nodes without counted devices).
pub fn best_placement(
    memo: &mut FragMemo,
    tp: &TypicalPods,
    model: FragModel,
    pod: &PodInfo,
    node: &NodeInfo,
) -> (f64, Vec<u32>) {
    let (d, idx) = best_delta(memo, tp, model, pod, node);
    let idx = match idx {
        Choice::None => Vec::new(),
        Choice::Device(i) => vec![i],
        Choice::Default => node.pick_gpus(pod.gpu).unwrap_or_default(),
    };
    (d, idx)
}

/// The devices [`best_delta`] chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Choice {
    /// No device (CPU-only pod, no counted devices, or no fit).
    None,
    /// This device (a share).
    Device(u32),
    /// The default choice of whole devices ([`NodeInfo::pick_gpus`]).
    Default,
}

/// The free shares of a node's devices, on the stack for up to 8 devices.
struct Frees {
    buf: [u32; 8],
    heap: Vec<u32>,
    len: usize,
}

impl Frees {
    fn of(node: &NodeInfo) -> Frees {
        let mut f = Frees {
            buf: [0; 8],
            heap: Vec::new(),
            len: node.gpu_used.len(),
        };
        let free = node
            .gpu_used
            .iter()
            .map(|&u| GPU_MILLI_PER_DEVICE.saturating_sub(u));
        if f.len <= 8 {
            for (b, v) in f.buf.iter_mut().zip(free) {
                *b = v;
            }
        } else {
            f.heap = free.collect();
        }
        f
    }

    fn as_mut(&mut self) -> &mut [u32] {
        if self.len <= 8 {
            &mut self.buf[..self.len]
        } else {
            &mut self.heap
        }
    }
}

/// [`best_placement`] without allocating: the decrease and the choice of devices.
fn best_delta(
    memo: &mut FragMemo,
    tp: &TypicalPods,
    model: FragModel,
    pod: &PodInfo,
    node: &NodeInfo,
) -> (f64, Choice) {
    let mut frees = Frees::of(node);
    let after = frees.as_mut();
    let base = NodeGpuState {
        free_cpu: node.allocatable.milli_cpu - node.requested.milli_cpu,
        free_memory: node.allocatable.memory - node.requested.memory,
        model: node.labels.get(LABEL_GPU_MODEL).map(String::as_str),
        free: &[],
    };
    let mut memo = memo.node(base.model, tp, model);
    let before = memo.fragment(&NodeGpuState {
        free: after,
        ..base
    });
    // The node after the placement, devices aside.
    let base = NodeGpuState {
        free_cpu: base.free_cpu - pod.requests.milli_cpu,
        free_memory: base.free_memory - pod.requests.memory,
        ..base
    };
    if pod.gpu.count == 0 || after.is_empty() {
        let f = memo.fragment(&NodeGpuState {
            free: after,
            ..base
        });
        return (before - f, Choice::None);
    }
    if pod.gpu.count == 1 && pod.gpu.milli < GPU_MILLI_PER_DEVICE {
        let mut best: Option<(f64, u32)> = None;
        for i in 0..after.len() {
            let free = after[i];
            // Devices with the same free share leave the same multiset: try the first only.
            if free < pod.gpu.milli || after[..i].contains(&free) {
                continue;
            }
            after[i] = free - pod.gpu.milli;
            let d = before
                - memo.fragment(&NodeGpuState {
                    free: after,
                    ..base
                });
            after[i] = free;
            if best.is_none_or(|(bd, _)| d > bd) {
                best = Some((d, i as u32));
            }
        }
        return match best {
            Some((d, i)) => (d, Choice::Device(i)),
            None => (0.0, Choice::None),
        };
    }
    let Some(idx) = node.pick_gpus(pod.gpu) else {
        return (0.0, Choice::None);
    };
    for &i in &idx {
        after[i as usize] = after[i as usize].saturating_sub(pod.gpu.milli);
    }
    let f = memo.fragment(&NodeGpuState {
        free: after,
        ..base
    });
    (before - f, Choice::Default)
}

/// The typical pods a cycle uses: the snapshot's, else those of the pods on its nodes and `pod`.
pub(crate) fn typical_pods(snapshot: &Snapshot, pod: &PodInfo) -> Arc<TypicalPods> {
    match snapshot.typical_pods() {
        Some(tp) => tp.clone(),
        None => Arc::new(TypicalPods::from_pods(
            snapshot
                .nodes()
                .iter()
                .flat_map(|n| n.pods.iter().map(|p| &**p))
                .chain(std::iter::once(pod)),
        )),
    }
}

/// The devices Reserve takes for `pod` on `node` under the FGD scorers
/// ([`ScorePlugin::gpu_indexes`]): [`best_placement`]'s, with `tp` the typical pods PreScore
/// left (`None` when it did not run — a single feasible node — and [`typical_pods`] is asked
/// instead). `None` for a CPU-only pod or when nothing fits.
pub(crate) fn fragment_gpu_indexes(
    memo: &Mutex<FragMemo>,
    tp: Option<&Arc<TypicalPods>>,
    model: FragModel,
    snapshot: &Snapshot,
    pod: &PodInfo,
    node: &NodeInfo,
) -> Option<Vec<u32>> {
    if pod.gpu.count == 0 {
        return None;
    }
    let tp = match tp {
        Some(tp) => tp.clone(),
        None => typical_pods(snapshot, pod),
    };
    let mut memo = memo.lock().unwrap_or_else(|e| e.into_inner());
    let (_, idx) = best_placement(&mut memo, &tp, model, pod, node);
    (!idx.is_empty()).then_some(idx)
}

impl ScorePlugin for GpuFragmentation {
    fn name(&self) -> &'static str {
        if self.model.memory {
            NAME_STRANDING
        } else if self.fine {
            NAME_FINE
        } else {
            NAME
        }
    }

    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        _feasible: &[u32],
    ) -> Result<ScoreMode, Status> {
        state.write(self.name(), typical_pods(snapshot, pod));
        Ok(ScoreMode::PerNode)
    }

    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let tp = state
            .read::<Arc<TypicalPods>>(self.name())
            .ok_or_else(|| Status::error("GpuFragmentation: PreScore state missing"))?;
        let mut memo = self.memo.lock().unwrap_or_else(|e| e.into_inner());
        Ok(self.raw(best_delta(&mut memo, tp, self.model, pod, node).0))
    }

    fn normalize_score(
        &self,
        _state: &CycleState,
        _pod: &PodInfo,
        _snapshot: &Snapshot,
        _feasible: &[u32],
        scores: &mut [i64],
    ) -> Result<(), Status> {
        if self.fine {
            normalize_min_max(scores);
        }
        Ok(())
    }

    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        feasible: &[u32],
        out: &mut [i64],
    ) -> Result<(), Status> {
        let tp = state
            .read::<Arc<TypicalPods>>(self.name())
            .ok_or_else(|| Status::error("GpuFragmentation: PreScore state missing"))?;
        let mut memo = self.memo.lock().unwrap_or_else(|e| e.into_inner());
        let nodes = snapshot.nodes();
        for (o, &i) in out.iter_mut().zip(feasible) {
            *o = self.raw(best_delta(&mut memo, tp, self.model, pod, &nodes[i as usize]).0);
        }
        Ok(())
    }

    fn gpu_indexes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        node: &NodeInfo,
    ) -> Option<Vec<u32>> {
        let tp = state.read::<Arc<TypicalPods>>(self.name());
        fragment_gpu_indexes(&self.memo, tp, self.model, snapshot, pod, node)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::framework::plugins::gpu_frag::PodShape;
    use crate::framework::plugins::testutil::{node, pod};
    use crate::model::{LABEL_GPU_MODEL, RESOURCE_GPU, RESOURCE_GPU_MILLI};

    /// The fine variant scores the decrease in micro-GPU and spreads the feasible nodes'
    /// range over 0..=100: decreases of −300, −100 and +100 milli-GPU give 0, 50 and 100 (the
    /// sigmoid would give 42, 47 and 52).
    #[test]
    fn fine_variant_normalises_the_decrease() {
        let fine = GpuFragmentation::fine();
        assert_eq!(fine.name(), NAME_FINE);
        let mut s: Vec<i64> = [-300.0, -100.0, 100.0].map(|d| fine.raw(d)).to_vec();
        assert_eq!(s, vec![-300_000, -100_000, 100_000]);
        normalize_min_max(&mut s);
        assert_eq!(s, vec![0, 50, 100]);
        assert_eq!([-300.0, -100.0, 100.0].map(fgd_score), [42, 47, 52]);
        let mut same = vec![7, 7];
        normalize_min_max(&mut same);
        assert_eq!(same, vec![100, 100]);
    }

    #[test]
    fn sigmoid_score() {
        assert_eq!(fgd_score(0.0), 50);
        // sigmoid(1) = 0.731..., sigmoid(-1) = 0.268...
        assert_eq!(fgd_score(1000.0), 73);
        assert_eq!(fgd_score(-1000.0), 26);
        assert_eq!(fgd_score(1e9), 100);
        assert_eq!(fgd_score(-1e9), 0);
    }

    /// Worked example: the device FGD picks for a share, and the score of the choice.
    #[test]
    fn worked_example_prefers_the_device_that_leaves_usable_shares() {
        // Typical pods: 50 % whole-GPU pods, 50 % 600-milli shares; 1 core each.
        let tp = Arc::new(TypicalPods::from_counts(vec![
            (
                PodShape {
                    milli_cpu: 1000,
                    gpu: (1, 1000),
                    models: None,
                },
                1,
                0,
            ),
            (
                PodShape {
                    milli_cpu: 1000,
                    gpu: (1, 600),
                    models: None,
                },
                1,
                0,
            ),
        ]));
        // Node n: 2 devices, device 0 already holds 400 (free 600, 1000).
        let n = node("n")
            .allocatable(&[
                ("cpu", "8"),
                ("memory", "8Gi"),
                (RESOURCE_GPU, "2"),
                (RESOURCE_GPU_MILLI, "2000"),
            ])
            .label(LABEL_GPU_MODEL, "T4")
            .info_with(&[pod("busy").container(&[(RESOURCE_GPU_MILLI, "400")])]);
        assert_eq!(n.gpu_used, vec![400, 0]);
        let p = pod("p")
            .container(&[("cpu", "1"), (RESOURCE_GPU_MILLI, "600")])
            .info();
        // Before: the whole pod fits on device 1, device 0 (600) is fragment: 600; the share
        // fits both: 0. F = 0.5·600 = 300.
        // Device 1 → free (600, 400): the whole pod does not fit: 1000; the share fits on
        // device 0: fragment 400. F = 0.5·1000 + 0.5·400 = 700: Δ = −400, score
        // ⌊100·σ(−0.4)⌋ = 40.
        // Device 0 → free (0, 1000): whole fits, fragment 0; share fits, 0. F = 0: Δ = 300,
        // score ⌊100·σ(0.3)⌋ = 57.
        let mut memo = FragMemo::new();
        let (d, idx) = best_placement(&mut memo, &tp, FragModel::default(), &p, &n);
        assert_eq!((d, idx.clone()), (300.0, vec![0]));
        assert_eq!(fgd_score(d), 57);
        assert_eq!(fgd_score(-400.0), 40);

        let mut snapshot = Snapshot::new();
        snapshot.add_node(n.clone()).unwrap();
        snapshot.set_typical_pods(Some(tp));
        let plugin = GpuFragmentation::new();
        let mut state = CycleState::new();
        plugin.pre_score(&mut state, &p, &snapshot, &[0]).unwrap();
        let mut out = [0i64];
        plugin
            .score_nodes(&state, &p, &snapshot, &[0], &mut out)
            .unwrap();
        assert_eq!(out, [57]);
        assert_eq!(plugin.gpu_indexes(&state, &p, &snapshot, &n), Some(vec![0]));

        // A whole-GPU pod takes device 1: free (600, 0): the whole pod no longer fits (600),
        // the share does (0): F = 300, Δ = 0, score 50.
        let w = pod("w")
            .container(&[("cpu", "1"), (RESOURCE_GPU, "1")])
            .info();
        let (d, idx) = best_placement(
            &mut memo,
            &snapshot_tp(&snapshot),
            FragModel::default(),
            &w,
            &n,
        );
        assert_eq!((d, idx), (0.0, vec![1]));
    }

    fn snapshot_tp(s: &Snapshot) -> Arc<TypicalPods> {
        s.typical_pods().unwrap().clone()
    }

    /// The stranding variant counts a node's GPUs as fragment once its memory is short for the
    /// typical pods; FGD does not look at memory.
    #[test]
    fn stranding_counts_memory() {
        let tp = TypicalPods::from_counts(vec![(
            PodShape {
                milli_cpu: 1000,
                gpu: (1, 1000),
                models: None,
            },
            1,
            4 << 30,
        )]);
        let n = node("n")
            .allocatable(&[
                ("cpu", "8"),
                ("memory", "6Gi"),
                (RESOURCE_GPU, "2"),
                (RESOURCE_GPU_MILLI, "2000"),
            ])
            .info();
        // A CPU-only pod taking 4 GiB leaves 2 GiB: the two idle GPUs are stranded (Δ = −2000)
        // for the variant; FGD sees no change.
        let p = pod("p")
            .container(&[("cpu", "1"), ("memory", "4Gi")])
            .info();
        let mut memo = FragMemo::new();
        assert_eq!(
            best_placement(&mut memo, &tp, FragModel::default(), &p, &n).0,
            0.0
        );
        assert_eq!(
            best_placement(
                &mut memo,
                &tp,
                FragModel {
                    memory: true,
                    ..FragModel::default()
                },
                &p,
                &n
            )
            .0,
            -2000.0
        );
    }
}
