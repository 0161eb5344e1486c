//! The GPU fragmentation measure of the FGD paper (Weng et al., *Beware of Fragmentation:
//! Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent*, USENIX ATC'23), shared
//! by the `GpuFragmentationPriority` scorer ([`super::gpu_fgd`]) and the replay timeline
//! ([`crate::sim::replay`]).
//!
//! * **Typical pods** ([`TypicalPods`]): the distinct pod shapes of the workload — CPU request
//!   (millicores), GPU count, milli-GPU per GPU, allowed GPU models — most popular first, kept
//!   until they cover 95 % of the pods (CPU-only pods included), with their popularities `p_m`
//!   renormalised to sum to 1.
//! * **Fragment of node n for typical pod m**, `F_n(m)`, in milli-GPU: the node's unallocated
//!   GPU that m could not use. All of it when m needs no GPU, when m may not run on the node's
//!   GPU model, when the node lacks the CPU for m, or when no (set of) device(s) has room for m;
//!   otherwise only the devices whose free share is below m's per-device request.
//! * **Node fragmentation** `F_n(M) = Σ_m p_m F_n(m)`; **cluster fragmentation** `Σ_n F_n(M)`.
//!
//! With [`FragModel::memory`] the node's free memory is checked against each typical pod's
//! (mean) memory request as its CPU is: the GPUs a node cannot use for lack of memory count as
//! fragment too (our "stranding" variant; the paper checks CPU only).
//!
//! With [`FragModel::instances`] (ours, `GpuFragmentationInstancesPriority`) a typical pod `m`
//! that fits also counts the GPUs the node's CPU (and memory) cannot feed: with `g` the
//! instances of `m` the devices hold (one per device with room for a share, `⌊devices with
//! room / count⌋` for whole GPUs) and `r` the instances the free CPU (and memory) feed, the
//! share `1 − r/g` of the GPU `m` could use is fragment too, weighted by [`INSTANCE_WEIGHT`].
//!
//! Results are memoised per node state ([`FragMemo`]): the fragment depends only on the node's
//! GPU model, on which typical pods' CPU (and memory) requests — with instances, which of their
//! multiples up to 8 — its free CPU (memory) covers, and on the multiset of its devices' free
//! shares, so identical nodes share one entry.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use crate::model::{GPU_MILLI_PER_DEVICE, LABEL_GPU_MODEL, NodeInfo};

pub use crate::model::typical_pods::{
    GpuRequestKey, PodShape, TYPICAL_POD_COVERAGE, TypicalPod, TypicalPodCounter, TypicalPods,
    pod_gpu_models,
};

/// Weight of the GPUs stranded by instances ([`FragModel::instances`]) in a typical pod's
/// fragment, beside FGD's own fragment (weight 1). Chosen by measurement
/// (`docs/gpu-study/variants.md`, round 3).
pub const INSTANCE_WEIGHT: f64 = 1.0;

/// Which node resources a typical pod must find besides its GPUs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FragModel {
    /// Also require the typical pod's memory (the paper requires CPU only).
    pub memory: bool,
    /// Also count the GPUs a node's CPU (and, with `memory`, memory) cannot feed, by instances
    /// ([`pod_fragment`]); the paper asks only whether one typical pod still fits.
    pub instances: bool,
}

/// What the fragmentation of a node depends on.
#[derive(Debug, Clone, Copy)]
pub struct NodeGpuState<'a> {
    /// Free CPU, millicores.
    pub free_cpu: i64,
    /// Free memory, bytes.
    pub free_memory: i64,
    /// GPU model label, if any.
    pub model: Option<&'a str>,
    /// Free milli-GPU of each device.
    pub free: &'a [u32],
}

impl<'a> NodeGpuState<'a> {
    /// The state of `node`, writing its devices' free shares into `buf`.
    pub fn of(node: &'a NodeInfo, buf: &'a mut Vec<u32>) -> NodeGpuState<'a> {
        buf.clear();
        buf.extend(
            node.gpu_used
                .iter()
                .map(|&u| GPU_MILLI_PER_DEVICE.saturating_sub(u)),
        );
        NodeGpuState {
            free_cpu: node.allocatable.milli_cpu - node.requested.milli_cpu,
            free_memory: node.allocatable.memory - node.requested.memory,
            model: node.labels.get(LABEL_GPU_MODEL).map(String::as_str),
            free: buf,
        }
    }
}

/// `F_n(m)`: the milli-GPU of a node in state `st` that typical pod `m` could not use.
pub fn pod_fragment(st: &NodeGpuState<'_>, m: &TypicalPod, model: FragModel) -> f64 {
    let total: u32 = st.free.iter().sum();
    if total == 0 {
        return 0.0;
    }
    let (count, milli) = m.shape.gpu;
    let stranded = count == 0
        || m.shape
            .models
            .as_ref()
            .is_some_and(|ms| st.model.is_none_or(|nm| !ms.iter().any(|x| x == nm)))
        || st.free_cpu < m.shape.milli_cpu
        || (model.memory && st.free_memory < m.memory);
    if stranded {
        return f64::from(total);
    }
    let need = milli.min(GPU_MILLI_PER_DEVICE);
    let usable = st.free.iter().filter(|&&f| f >= need).count();
    if usable < count as usize {
        return f64::from(total);
    }
    let frag = st.free.iter().filter(|&&f| f < need).sum::<u32>();
    if !model.instances {
        return f64::from(frag);
    }
    // Instances the devices hold (a share: one per device with room, whatever the room) and
    // instances the node's CPU (and memory) feed.
    let g = (usable / count as usize) as i64;
    let mut r = st.free_cpu / m.shape.milli_cpu.max(1);
    if model.memory && m.memory > 0 {
        r = r.min(st.free_memory / m.memory);
    }
    if r >= g {
        return f64::from(frag);
    }
    f64::from(frag) + INSTANCE_WEIGHT * f64::from(total - frag) * (1.0 - r as f64 / g as f64)
}

/// `F_n(M) = Σ_m p_m F_n(m)` without memoisation.
pub fn node_fragment(st: &NodeGpuState<'_>, tp: &TypicalPods, model: FragModel) -> f64 {
    tp.pods
        .iter()
        .map(|m| m.popularity * pod_fragment(st, m, model))
        .sum()
}

/// A fast hasher for the memo's `u128` keys (the keys are already well spread bit fields).
#[derive(Default)]
pub struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
    fn write_u128(&mut self, v: u128) {
        let x = (v as u64) ^ ((v >> 64) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = (x ^ (x >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        self.0 ^= self.0 >> 32;
    }
}

/// Entries kept before the memo starts over (bounds memory in a long-running scheduler).
const MEMO_CAPACITY: usize = 1 << 20;

/// Memoised `F_n(M)` per node state for one typical-pod distribution and [`FragModel`].
#[derive(Debug, Default)]
pub struct FragMemo {
    generation: u64,
    model: FragModel,
    models: Vec<String>,
    values: HashMap<u128, f64, BuildHasherDefault<KeyHasher>>,
    sorted: Vec<u32>,
}

impl FragMemo {
    /// An empty memo.
    pub fn new() -> FragMemo {
        FragMemo::default()
    }

    /// Empties the memo when `tp` or `model` is not the distribution or model it holds.
    fn sync(&mut self, tp: &TypicalPods, model: FragModel) {
        if self.generation != tp.generation || self.model != model {
            self.values.clear();
            self.models.clear();
            self.generation = tp.generation;
            self.model = model;
        }
    }

    /// The id of a GPU model in the keys (0: none), valid until the memo is next emptied.
    fn model_id(&mut self, model: Option<&str>) -> usize {
        match model {
            None => 0,
            Some(m) => match self.models.iter().position(|x| x == m) {
                Some(i) => i + 1,
                None => {
                    self.models.push(m.to_string());
                    self.models.len()
                }
            },
        }
    }

    /// The key of a state whose model has id `model_id`: model id (8 bits), CPU level (12),
    /// memory level (12), device count (4) and the free shares sorted descending (10 bits each,
    /// up to 8 devices). The levels are the typical pods' requests the free CPU (memory)
    /// covers, or with [`FragModel::instances`] their multiples up to 8 (an instance count
    /// only matters below the devices' count, at most 8 here). `None` when the state does not
    /// fit those fields (then it is computed, not memoised).
    fn key(&mut self, model_id: usize, st: &NodeGpuState<'_>, tp: &TypicalPods) -> Option<u128> {
        if st.free.len() > 8 {
            return None;
        }
        let (cpus, mems) = if self.model.instances {
            (&tp.cpu_multiples, &tp.mem_multiples)
        } else {
            (&tp.cpu_levels, &tp.mem_levels)
        };
        let cpu = cpus.partition_point(|&c| c <= st.free_cpu);
        let mem = if self.model.memory {
            mems.partition_point(|&c| c <= st.free_memory)
        } else {
            0
        };
        if model_id > 255 || cpu > 4095 || mem > 4095 {
            return None;
        }
        self.sorted.clear();
        self.sorted.extend_from_slice(st.free);
        self.sorted.sort_unstable_by(|a, b| b.cmp(a));
        let mut k: u128 = (model_id as u128) | ((cpu as u128) << 8) | ((mem as u128) << 20);
        k |= (st.free.len() as u128) << 32;
        for (i, &f) in self.sorted.iter().enumerate() {
            k |= u128::from(f.min(1023)) << (36 + 10 * i);
        }
        Some(k)
    }

    /// `F_n(M)` of state `st` under `tp` and `model`, memoised. A distribution or model other
    /// than the last one used empties the memo first.
    pub fn fragment(&mut self, st: &NodeGpuState<'_>, tp: &TypicalPods, model: FragModel) -> f64 {
        self.node(st.model, tp, model).fragment(st)
    }

    /// The memo for several states of one node (GPU model `gpu_model`) under `tp` and `model`:
    /// [`FragMemo::fragment`] with the model looked up once.
    pub fn node<'m>(
        &'m mut self,
        gpu_model: Option<&str>,
        tp: &'m TypicalPods,
        model: FragModel,
    ) -> NodeMemo<'m> {
        self.sync(tp, model);
        let model_id = self.model_id(gpu_model);
        NodeMemo {
            memo: self,
            tp,
            model,
            model_id,
        }
    }
}

/// [`FragMemo`] for the states of one node ([`FragMemo::node`]); every state passed must have
/// that node's GPU model.
pub struct NodeMemo<'m> {
    memo: &'m mut FragMemo,
    tp: &'m TypicalPods,
    model: FragModel,
    model_id: usize,
}

impl NodeMemo<'_> {
    /// `F_n(M)` of state `st`, memoised.
    pub fn fragment(&mut self, st: &NodeGpuState<'_>) -> f64 {
        let Some(k) = self.memo.key(self.model_id, st, self.tp) else {
            return node_fragment(st, self.tp, self.model);
        };
        if let Some(&v) = self.memo.values.get(&k) {
            return v;
        }
        if self.memo.values.len() >= MEMO_CAPACITY {
            self.memo.values.clear();
        }
        let v = node_fragment(st, self.tp, self.model);
        self.memo.values.insert(k, v);
        v
    }
}

/// The typical pods shared by scheduling cycles (see [`crate::snapshot::Snapshot::typical_pods`]).
pub type SharedTypicalPods = Arc<TypicalPods>;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::framework::plugins::testutil::{pod, term};
    use crate::model::{RESOURCE_GPU, RESOURCE_GPU_MILLI};

    fn shape(cpu: i64, count: u32, milli: u32) -> PodShape {
        PodShape {
            milli_cpu: cpu,
            gpu: (count, milli),
            models: None,
        }
    }

    fn typical(p: &[(PodShape, u64)]) -> TypicalPods {
        TypicalPods::from_counts(p.iter().map(|(s, n)| (s.clone(), *n, 0)).collect())
    }

    fn state(cpu: i64, free: &[u32]) -> NodeGpuState<'_> {
        NodeGpuState {
            free_cpu: cpu,
            free_memory: 0,
            model: Some("V100M16"),
            free,
        }
    }

    /// 95 % coverage: the shape that crosses 95 % is kept, the rest dropped, popularities
    /// renormalised over the kept pods.
    #[test]
    fn typical_pods_cover_95_percent() {
        let tp = typical(&[
            (shape(1000, 0, 0), 50),
            (shape(4000, 1, 1000), 30),
            (shape(2000, 1, 500), 16),
            (shape(8000, 8, 1000), 3),
            (shape(1000, 2, 1000), 1),
        ]);
        // 50 + 30 = 80 < 95, + 16 = 96 ≥ 95: three shapes, 96 pods.
        assert_eq!(tp.pods.len(), 3);
        assert_eq!(tp.pods[0].shape, shape(1000, 0, 0));
        assert!((tp.pods[0].popularity - 50.0 / 96.0).abs() < 1e-12);
        assert!((tp.pods[2].popularity - 16.0 / 96.0).abs() < 1e-12);
        assert_eq!(tp.cpu_levels, vec![1000, 2000, 4000]);
    }

    #[test]
    fn shapes_read_the_gpu_model_constraint() {
        let p = pod("p")
            .container(&[("cpu", "2"), (RESOURCE_GPU_MILLI, "500")])
            .required_affinity(vec![term(&[(LABEL_GPU_MODEL, "In", &["T4", "P100"])])])
            .info();
        let s = PodShape::of(&p);
        assert_eq!(s.milli_cpu, 2000);
        assert_eq!(s.gpu, (1, 500));
        assert_eq!(s.models, Some(vec!["P100".to_string(), "T4".to_string()]));
        let any = pod("q")
            .container(&[("cpu", "1"), (RESOURCE_GPU, "2")])
            .info();
        assert_eq!(PodShape::of(&any).models, None);
        assert_eq!(PodShape::of(&any).gpu, (2, 1000));
    }

    /// The paper's definition, case by case, on a node with devices free 1000, 1000, 600, 200
    /// (2,800 milli free) and 8 free cores.
    #[test]
    fn pod_fragment_worked_examples() {
        let free = [1000, 1000, 600, 200];
        let st = state(8000, &free);
        let tm = |s: PodShape| TypicalPod {
            shape: s,
            memory: 0,
            popularity: 1.0,
        };
        let none = FragModel::default();
        // A CPU-only pod uses no GPU: all 2,800 are fragment.
        assert_eq!(pod_fragment(&st, &tm(shape(1000, 0, 0)), none), 2800.0);
        // A 500-milli share fits on 1000, 1000, 600; only the 200 is fragment.
        assert_eq!(pod_fragment(&st, &tm(shape(1000, 1, 500)), none), 200.0);
        // A whole GPU: 600 + 200 are fragment.
        assert_eq!(pod_fragment(&st, &tm(shape(1000, 1, 1000)), none), 800.0);
        // Three whole GPUs do not fit: everything is fragment.
        assert_eq!(pod_fragment(&st, &tm(shape(1000, 3, 1000)), none), 2800.0);
        // Not enough CPU: everything.
        assert_eq!(pod_fragment(&st, &tm(shape(9000, 1, 500)), none), 2800.0);
        // A model constraint the node does not meet: everything.
        let mut t4 = shape(1000, 1, 500);
        t4.models = Some(vec!["T4".into()]);
        assert_eq!(pod_fragment(&st, &tm(t4.clone()), none), 2800.0);
        t4.models = Some(vec!["T4".into(), "V100M16".into()]);
        assert_eq!(pod_fragment(&st, &tm(t4), none), 200.0);
        // With the memory check, a node short of memory strands its GPUs.
        let mut short = tm(shape(1000, 1, 500));
        short.memory = 1;
        assert_eq!(pod_fragment(&st, &short, none), 200.0);
        assert_eq!(
            pod_fragment(
                &st,
                &short,
                FragModel {
                    memory: true,
                    ..FragModel::default()
                }
            ),
            2800.0
        );
        // A node without free GPU has no fragment.
        assert_eq!(
            pod_fragment(&state(0, &[0, 0]), &tm(shape(0, 0, 0)), none),
            0.0
        );
    }

    /// Cluster mode's counter: pods counted by key as they are added, updated and deleted; the
    /// distribution is rebuilt only after a change, and no pods give none.
    #[test]
    fn typical_pod_counter_follows_pod_events() {
        let share = |name: &str, milli: &str| {
            pod(name)
                .container(&[("cpu", "1"), ("memory", "1Gi"), (RESOURCE_GPU_MILLI, milli)])
                .info()
        };
        let whole = |name: &str| {
            pod(name)
                .container(&[("cpu", "2"), ("memory", "3Gi"), (RESOURCE_GPU, "1")])
                .info()
        };
        let mut c = TypicalPodCounter::new();
        assert!(c.typical_pods().is_none());
        for i in 0..3 {
            c.set(&format!("default/w{i}"), Some(&whole(&format!("w{i}"))));
        }
        c.set("default/s0", Some(&share("s0", "500")));
        let tp = c.typical_pods().unwrap();
        // 3 whole + 1 share: 75 % < 95 %, so both shapes, 0.75 and 0.25.
        assert_eq!(tp.pods.len(), 2);
        assert_eq!(tp.pods[0].shape, shape(2000, 1, 1000));
        assert!((tp.pods[0].popularity - 0.75).abs() < 1e-12);
        assert_eq!(tp.pods[0].memory, 3 << 30);
        // No change: the same distribution (the scorers' memo survives).
        assert!(Arc::ptr_eq(&tp, &c.typical_pods().unwrap()));
        // The same pod again (a status update, or bound to a node): no change either.
        c.set("default/s0", Some(&share("s0", "500")));
        assert!(Arc::ptr_eq(&tp, &c.typical_pods().unwrap()));
        // An update that changes the shape moves the pod from one count to the other.
        c.set("default/s0", Some(&share("s0", "300")));
        let tp2 = c.typical_pods().unwrap();
        assert!(!Arc::ptr_eq(&tp, &tp2));
        assert_eq!(tp2.pods[1].shape, shape(1000, 1, 300));
        assert_eq!(c.len(), 4);
        // Deleted pods leave; the last shape gone, none.
        c.set("default/s0", None);
        c.set("default/gone", None);
        let tp3 = c.typical_pods().unwrap();
        assert_eq!(tp3.pods.len(), 1);
        assert!((tp3.pods[0].popularity - 1.0).abs() < 1e-12);
        for i in 0..3 {
            c.set(&format!("default/w{i}"), None);
        }
        assert!(c.is_empty());
        assert!(c.typical_pods().is_none());
    }

    /// `F_n(M)` weights by popularity; the memo returns the same values, shares identical
    /// states whatever the device order, and starts over for another distribution.
    #[test]
    fn node_fragment_and_memo() {
        let tp = typical(&[(shape(1000, 0, 0), 1), (shape(1000, 1, 500), 1)]);
        let free = [1000, 1000, 600, 200];
        let st = state(8000, &free);
        // 0.5 × 2800 + 0.5 × 200.
        assert_eq!(node_fragment(&st, &tp, FragModel::default()), 1500.0);
        let mut memo = FragMemo::new();
        assert_eq!(memo.fragment(&st, &tp, FragModel::default()), 1500.0);
        let reordered = [200, 1000, 600, 1000];
        assert_eq!(
            memo.fragment(&state(8000, &reordered), &tp, FragModel::default()),
            1500.0
        );
        assert_eq!(memo.values.len(), 1);
        // Free CPU between the same typical levels shares the entry; below 1000 it differs.
        assert_eq!(
            memo.fragment(&state(1500, &free), &tp, FragModel::default()),
            1500.0
        );
        assert_eq!(memo.values.len(), 1);
        assert_eq!(
            memo.fragment(&state(500, &free), &tp, FragModel::default()),
            2800.0
        );
        let other = typical(&[(shape(1000, 0, 0), 1)]);
        assert_eq!(memo.fragment(&st, &other, FragModel::default()), 2800.0);
        assert_eq!(memo.values.len(), 1);
    }

    /// [`FragModel::instances`] on a node with devices free 1000, 1000, 1000, 400, 20 free
    /// cores and 64 GiB free memory.
    #[test]
    fn instances_count_the_gpus_the_cpu_cannot_feed() {
        let free = [1000, 1000, 1000, 400];
        let st = NodeGpuState {
            free_cpu: 20_000,
            free_memory: 64 << 30,
            model: Some("V100M16"),
            free: &free,
        };
        let tm = |s: PodShape, memory: i64| TypicalPod {
            shape: s,
            memory,
            popularity: 1.0,
        };
        let inst = FragModel {
            instances: true,
            ..FragModel::default()
        };
        let both = FragModel {
            memory: true,
            instances: true,
        };
        // A whole GPU with 8 cores: FGD counts only the 400. The three idle devices hold three
        // instances, the 20 cores feed two: a third of their 3,000 is stranded too.
        let whole = tm(shape(8000, 1, 1000), 0);
        assert_eq!(pod_fragment(&st, &whole, FragModel::default()), 400.0);
        assert_eq!(pod_fragment(&st, &whole, inst), 400.0 + 1000.0);
        // A 500-milli share with 4 cores: three devices with room, five instances' CPU: FGD's.
        assert_eq!(pod_fragment(&st, &tm(shape(4000, 1, 500), 0), inst), 400.0);
        // A 300-milli share with 12 cores: all four devices have room (one instance each), the
        // CPU feeds one: 3/4 of the 3,400 are stranded.
        assert_eq!(
            pod_fragment(&st, &tm(shape(12_000, 1, 300), 0), inst),
            2550.0
        );
        // Two whole GPUs with 8 cores: one instance on the devices, two on the CPU: FGD's.
        assert_eq!(pod_fragment(&st, &tm(shape(8000, 2, 1000), 0), inst), 400.0);
        // With memory: 30 GiB each feeds two of the whole-GPU pod (as the CPU): 1,400; 40 GiB
        // feeds one: 2/3 of the 3,000 stranded.
        assert_eq!(
            pod_fragment(&st, &tm(shape(8000, 1, 1000), 30 << 30), both),
            1400.0
        );
        assert_eq!(
            pod_fragment(&st, &tm(shape(8000, 1, 1000), 40 << 30), both),
            2400.0
        );
        // Without `memory` the memory is not looked at.
        assert_eq!(
            pod_fragment(&st, &tm(shape(8000, 1, 1000), 40 << 30), inst),
            1400.0
        );
    }

    /// The memo under [`FragModel::instances`] keys the free CPU and memory by the typical
    /// pods' multiples, so every state returns what [`node_fragment`] computes.
    #[test]
    fn instances_memo_matches_the_direct_computation() {
        let tp = TypicalPods::from_counts(vec![
            (shape(8000, 1, 1000), 2, 30 << 30),
            (shape(3000, 1, 500), 1, 8 << 30),
            (shape(12_000, 0, 0), 1, 16 << 30),
        ]);
        let model = FragModel {
            memory: true,
            instances: true,
        };
        let free = [1000, 1000, 600, 1000];
        let mut memo = FragMemo::new();
        let mut states = 0;
        for cpu in (0..40_000).step_by(700) {
            for mem_gib in (0..130).step_by(7) {
                let st = NodeGpuState {
                    free_cpu: cpu,
                    free_memory: mem_gib << 30,
                    model: Some("V100M16"),
                    free: &free,
                };
                states += 1;
                assert_eq!(
                    memo.fragment(&st, &tp, model),
                    node_fragment(&st, &tp, model),
                    "{cpu} millicores, {mem_gib} GiB"
                );
            }
        }
        assert!(
            memo.values.len() < states / 2,
            "{} of {states}",
            memo.values.len()
        );
    }
}
