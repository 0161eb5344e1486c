//! The FGD paper's replay method (Weng et al., USENIX ATC'23, and its artifact's simulator) as
//! options of `simulate`, usable with any policy:
//!
//! * **order** (`--shuffle-seed N`): the pending pods sorted by name, then shuffled (Fisher–Yates)
//!   with a generator seeded with N; the queue then keeps that order (no PrioritySort);
//! * **inflation** (`--inflate F`): after the shuffled pods, clones `<name>-tuned-<i>` (i = 0, 1,
//!   …) of pods drawn uniformly with replacement, with the same generator, are appended while
//!   the total GPU request is at most F × the cluster's GPU capacity, so the last clone takes it
//!   past; when the pods already ask for more than that (F below their share), pods drawn at
//!   random are removed until the total is at most F × capacity;
//! * **no retry**: each pod is tried once; a pod that fits nowhere is dropped (every `simulate`
//!   run works that way);
//! * **timeline** (`--timeline FILE`): one CSV row per pod tried, `pod, arrived_gpu_milli,
//!   allocated_gpu_milli, capacity_gpu_milli, fragment_gpu_milli` — arrived counts the GPU
//!   request of every pod tried so far, failed ones included; allocated is the milli-GPU on the
//!   devices; fragment is the cluster fragmentation for the workload's typical pods
//!   ([`crate::framework::plugins::gpu_frag`]);
//! * **figures**: "unallocated GPU % at arrived X %" = `100 − 100 · allocated / capacity` at the
//!   first row whose arrived ≥ X % of capacity ([`unallocated_at`]), in the JSON summary.
//!
//! GPU requests are `count × milli-GPU per device` (a whole GPU is 1000).

use std::collections::BTreeMap;
use std::io::{self, Write};

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde::Serialize;

use crate::framework::plugins::gpu_frag::{
    FragMemo, FragModel, NodeGpuState, TypicalPod, TypicalPods,
};
use crate::model::PodInfo;
use crate::schedule_one::TieBreak;
use crate::snapshot::Snapshot;

/// The arrived-workload points (in % of GPU capacity) reported in the summary.
pub const REPORTED_ARRIVED_PERCENT: &[u32] = &[50, 75, 80, 90, 95, 100, 105, 110, 120, 130];

/// Replay options of a simulation (all off by default: the plain `simulate`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplayOptions {
    /// Shuffle the pending pods (sorted by name first) with this seed.
    pub shuffle_seed: Option<u64>,
    /// Inflate (or deflate) the pending pods to this multiple of the GPU capacity.
    pub inflate: Option<f64>,
    /// How ties among the best nodes are broken.
    pub tie_break: TieBreak,
    /// Record the timeline (also implied by `shuffle_seed` and `inflate`).
    pub timeline: bool,
}

impl ReplayOptions {
    /// Whether the run records the timeline and reports the replay figures.
    pub fn records(&self) -> bool {
        self.timeline || self.shuffle_seed.is_some() || self.inflate.is_some()
    }
}

/// A replay option that cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    /// `--inflate` is not a positive finite number.
    #[error("--inflate {0}: must be a positive number")]
    BadFactor(String),
    /// `--inflate` on a cluster without GPU devices.
    #[error("--inflate: the cluster has no GPU devices to inflate the workload against")]
    NoCapacity,
    /// `--inflate` above what the pods ask for, with pods that ask for no GPU.
    #[error(
        "--inflate: the pending pods request no GPU, so no number of clones reaches the target"
    )]
    NoGpuRequest,
}

/// An entry of a scheduling queue: a pod, possibly with what the queue keeps beside it (the
/// simulation's profile index).
pub trait QueuedPod: Clone {
    /// The pod.
    fn pod(&self) -> &PodInfo;
    /// The pod, to rename a clone.
    fn pod_mut(&mut self) -> &mut PodInfo;
}

impl QueuedPod for PodInfo {
    fn pod(&self) -> &PodInfo {
        self
    }
    fn pod_mut(&mut self) -> &mut PodInfo {
        self
    }
}

impl<T: Clone> QueuedPod for (T, PodInfo) {
    fn pod(&self) -> &PodInfo {
        &self.1
    }
    fn pod_mut(&mut self) -> &mut PodInfo {
        &mut self.1
    }
}

/// The GPU request of a pod, milli-GPU.
pub fn gpu_request_milli(pod: &PodInfo) -> u64 {
    u64::from(pod.gpu.count) * u64::from(pod.gpu.milli)
}

/// Sort `pods` by name (then namespace) and shuffle them with a generator seeded with `seed`;
/// the generator is returned for the inflation draws.
pub fn shuffle<T: QueuedPod>(pods: &mut [T], seed: u64) -> StdRng {
    pods.sort_by(|a, b| {
        let (a, b) = (a.pod(), b.pod());
        a.name
            .cmp(&b.name)
            .then_with(|| a.namespace.cmp(&b.namespace))
    });
    let mut rng = StdRng::seed_from_u64(seed);
    for i in (1..pods.len()).rev() {
        let j = rng.random_range(0..=i);
        pods.swap(i, j);
    }
    rng
}

/// Inflate `pods` to `factor` × `capacity_milli` of GPU request (see the module docs), drawing
/// with `rng`. Returns the number of clones added (negative: pods removed).
///
/// # Errors
/// [`ReplayError`] for a factor that is not positive and finite, a cluster without GPU
/// capacity, or pods that request no GPU when clones are needed.
pub fn inflate<T: QueuedPod>(
    pods: &mut Vec<T>,
    factor: f64,
    capacity_milli: u64,
    rng: &mut StdRng,
) -> Result<i64, ReplayError> {
    if !(factor.is_finite() && factor > 0.0) {
        return Err(ReplayError::BadFactor(factor.to_string()));
    }
    if capacity_milli == 0 {
        return Err(ReplayError::NoCapacity);
    }
    let target = factor * capacity_milli as f64;
    let mut total: u64 = pods.iter().map(|p| gpu_request_milli(p.pod())).sum();
    if total as f64 > target {
        let before = pods.len() as i64;
        while total as f64 > target && !pods.is_empty() {
            let i = rng.random_range(0..pods.len());
            total -= gpu_request_milli(pods[i].pod());
            pods.remove(i);
        }
        return Ok(pods.len() as i64 - before);
    }
    if total == 0 {
        return Err(ReplayError::NoGpuRequest);
    }
    let originals = pods.len();
    let mut i = 0i64;
    while total as f64 <= target {
        let src = &pods[rng.random_range(0..originals)];
        let mut clone = src.clone();
        clone.pod_mut().name = format!("{}-tuned-{i}", src.pod().name);
        // A pod of its own (the nominator tells pods apart by UID).
        clone.pod_mut().uid = format!("{}-tuned-{i}", src.pod().uid);
        total += gpu_request_milli(clone.pod());
        pods.push(clone);
        i += 1;
    }
    Ok(i)
}

/// One row of the timeline: the state after a pod was tried.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TimelineRow {
    /// `namespace/name` of the pod tried.
    pub pod: String,
    /// GPU request of every pod tried so far, milli-GPU.
    pub arrived_gpu_milli: u64,
    /// Milli-GPU allocated on the devices.
    pub allocated_gpu_milli: u64,
    /// Devices × 1000.
    pub capacity_gpu_milli: u64,
    /// Cluster fragmentation for the typical pods, milli-GPU.
    pub fragment_gpu_milli: f64,
}

/// `100 − 100 · allocated / capacity` at the first row whose arrived ≥ `percent` % of capacity;
/// `None` when no row reaches it (or there is no capacity).
pub fn unallocated_at(rows: &[TimelineRow], percent: f64) -> Option<f64> {
    rows.iter()
        .find(|r| {
            r.capacity_gpu_milli > 0
                && r.arrived_gpu_milli as f64 >= percent / 100.0 * r.capacity_gpu_milli as f64
        })
        .map(|r| 100.0 - 100.0 * r.allocated_gpu_milli as f64 / r.capacity_gpu_milli as f64)
}

/// Write `rows` as CSV with the header
/// `pod,arrived_gpu_milli,allocated_gpu_milli,capacity_gpu_milli,fragment_gpu_milli`.
///
/// # Errors
/// The writer's.
pub fn write_timeline_csv(out: &mut impl Write, rows: &[TimelineRow]) -> io::Result<()> {
    writeln!(
        out,
        "pod,arrived_gpu_milli,allocated_gpu_milli,capacity_gpu_milli,fragment_gpu_milli"
    )?;
    for r in rows {
        // Kubernetes names hold no comma or quote; quote anyway when one does.
        let pod = if r.pod.contains([',', '"', '\n']) {
            format!("\"{}\"", r.pod.replace('"', "\"\""))
        } else {
            r.pod.clone()
        };
        writeln!(
            out,
            "{pod},{},{},{},{:.1}",
            r.arrived_gpu_milli, r.allocated_gpu_milli, r.capacity_gpu_milli, r.fragment_gpu_milli
        )?;
    }
    Ok(())
}

/// The replay figures of the JSON summary.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplaySummary {
    /// `--shuffle-seed`.
    pub shuffle_seed: Option<u64>,
    /// `--inflate`.
    pub inflate: Option<f64>,
    /// `random` or `nodeName`.
    pub tie_break: &'static str,
    /// Clones appended by the inflation (negative: pods removed).
    pub inflated_pods: i64,
    /// Typical pod shapes of the workload.
    pub typical_pods: usize,
    /// Devices × 1000.
    pub capacity_gpu_milli: u64,
    /// GPU request of all pods tried.
    pub arrived_gpu_milli: u64,
    /// Milli-GPU allocated at the end.
    pub allocated_gpu_milli: u64,
    /// Cluster fragmentation at the end, milli-GPU.
    pub fragment_gpu_milli: f64,
    /// Unallocated GPU % at arrived X % of capacity (the points of
    /// [`REPORTED_ARRIVED_PERCENT`] the run reached), keyed by X.
    pub unallocated_gpu_percent_at_arrived: BTreeMap<u32, f64>,
}

/// Milli-GPU allocated on a node's devices.
fn allocated_milli(n: &crate::model::NodeInfo) -> u64 {
    n.gpu_used.iter().map(|&u| u64::from(u.min(1000))).sum()
}

/// The timeline under construction.
pub struct ReplayRecorder {
    /// The options.
    pub options: ReplayOptions,
    /// Clones appended (negative: removed).
    pub inflated_pods: i64,
    typical: std::sync::Arc<TypicalPods>,
    memo: FragMemo,
    node_fragment: Vec<f64>,
    node_allocated: Vec<u64>,
    arrived: u64,
    allocated: u64,
    capacity: u64,
    buf: Vec<u32>,
    /// The rows so far.
    pub rows: Vec<TimelineRow>,
}

impl ReplayRecorder {
    /// A recorder for `snapshot` (its state before the first pod) and typical pods `typical`.
    pub fn new(
        options: ReplayOptions,
        typical: std::sync::Arc<TypicalPods>,
        snapshot: &Snapshot,
    ) -> ReplayRecorder {
        let mut r = ReplayRecorder {
            options,
            inflated_pods: 0,
            typical,
            memo: FragMemo::new(),
            node_fragment: Vec::with_capacity(snapshot.len()),
            node_allocated: Vec::with_capacity(snapshot.len()),
            arrived: 0,
            allocated: 0,
            capacity: 0,
            buf: Vec::new(),
            rows: Vec::new(),
        };
        for n in snapshot.nodes() {
            let st = NodeGpuState::of(n, &mut r.buf);
            let f = r.memo.fragment(&st, &r.typical, FragModel::default());
            r.node_fragment.push(f);
            r.capacity += n.gpu_used.len() as u64 * 1000;
            let a = allocated_milli(n);
            r.allocated += a;
            r.node_allocated.push(a);
        }
        r
    }

    /// Record the pod `key` with GPU request `request` (milli) tried; `node` is the index of the
    /// node it was placed on (already accounted in `snapshot`), `None` when it failed.
    pub fn record(&mut self, key: String, request: u64, node: Option<u32>, snapshot: &Snapshot) {
        self.arrived += request;
        if let Some(i) = node
            && let Some(n) = snapshot.nodes().get(i as usize)
        {
            let a = allocated_milli(n);
            self.allocated = self.allocated + a - self.node_allocated[i as usize];
            self.node_allocated[i as usize] = a;
            let st = NodeGpuState::of(n, &mut self.buf);
            self.node_fragment[i as usize] =
                self.memo.fragment(&st, &self.typical, FragModel::default());
        }
        self.rows.push(TimelineRow {
            pod: key,
            arrived_gpu_milli: self.arrived,
            allocated_gpu_milli: self.allocated,
            capacity_gpu_milli: self.capacity,
            fragment_gpu_milli: self.node_fragment.iter().sum(),
        });
    }

    /// The summary figures.
    pub fn summary(&self) -> ReplaySummary {
        ReplaySummary {
            shuffle_seed: self.options.shuffle_seed,
            inflate: self.options.inflate,
            tie_break: match self.options.tie_break {
                TieBreak::Random => "random",
                TieBreak::NodeName => "nodeName",
                TieBreak::NodeOrder(_) => "nodeOrder",
            },
            inflated_pods: self.inflated_pods,
            typical_pods: self.typical.pods.len(),
            capacity_gpu_milli: self.capacity,
            arrived_gpu_milli: self.arrived,
            allocated_gpu_milli: self.allocated,
            fragment_gpu_milli: self.node_fragment.iter().sum(),
            unallocated_gpu_percent_at_arrived: REPORTED_ARRIVED_PERCENT
                .iter()
                .filter_map(|&x| unallocated_at(&self.rows, f64::from(x)).map(|v| (x, v)))
                .collect(),
        }
    }
}

/// Where a cluster's unallocated GPU sits, seen from the workload's typical GPU pods (the
/// diagnosis of `fgd_study --explain-unallocated`). Every free milli-GPU of every device falls
/// in exactly one class, checked in this order for the device:
///
/// * `model` — no typical GPU pod may run on the node's GPU model (GPU-model constraints);
/// * `shape` — no typical GPU pod allowed on the model fits the device's free share (with as
///   many devices of that room on the node as it needs): fractional leftovers on partly used
///   devices, or too few free devices for the multi-GPU pods;
/// * `cpu` — some typical GPU pod fits the devices, but none of those has its CPU request on
///   the node's free CPU;
/// * `memory` — some fits the devices and the CPU, none also its (mean) memory request;
/// * `usable` — a typical GPU pod fits entirely (GPU, CPU and memory): the GPU is idle
///   because no pod that came asked for it, not because it is stranded.
///
/// All fields are milli-GPU; `free = model + shape + cpu + memory + usable`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UnallocatedBreakdown {
    /// Devices × 1000.
    pub capacity: u64,
    /// Unallocated milli-GPU.
    pub free: u64,
    /// On nodes whose GPU model no typical GPU pod may use.
    pub model: u64,
    /// On devices whose free share no typical GPU pod fits.
    pub shape: u64,
    /// Usable by a typical pod's GPU demand, but the node lacks its CPU.
    pub cpu: u64,
    /// GPU and CPU fit a typical pod, but the node lacks its memory.
    pub memory: u64,
    /// A typical GPU pod fits entirely.
    pub usable: u64,
}

/// Whether a pod restricted to GPU models `models` (`None`: any) may run on a node labelled
/// with GPU model `node_model`.
fn model_allows(models: Option<&Vec<String>>, node_model: Option<&str>) -> bool {
    models.is_none_or(|ms| node_model.is_some_and(|nm| ms.iter().any(|m| m == nm)))
}

/// The per-device share a GPU demand `(count, milli)` needs (a whole device for 1000).
fn device_need(milli: u32) -> u32 {
    milli.min(crate::model::GPU_MILLI_PER_DEVICE)
}

/// [`UnallocatedBreakdown`] of `snapshot`'s nodes for the typical pods `tp` (CPU-only typical
/// pods play no part: they use no GPU).
pub fn unallocated_breakdown(snapshot: &Snapshot, tp: &TypicalPods) -> UnallocatedBreakdown {
    unallocated_by_model(snapshot, tp)
        .values()
        .fold(UnallocatedBreakdown::default(), |a, b| a.plus(b))
}

impl UnallocatedBreakdown {
    /// The field-wise sum.
    pub fn plus(self, o: &UnallocatedBreakdown) -> UnallocatedBreakdown {
        UnallocatedBreakdown {
            capacity: self.capacity + o.capacity,
            free: self.free + o.free,
            model: self.model + o.model,
            shape: self.shape + o.shape,
            cpu: self.cpu + o.cpu,
            memory: self.memory + o.memory,
            usable: self.usable + o.usable,
        }
    }
}

/// [`unallocated_breakdown`] per GPU model (the node label [`crate::model::LABEL_GPU_MODEL`];
/// `""` for nodes without it), each with the capacity of that model's nodes.
pub fn unallocated_by_model(
    snapshot: &Snapshot,
    tp: &TypicalPods,
) -> BTreeMap<String, UnallocatedBreakdown> {
    let gpu_pods: Vec<&TypicalPod> = tp.pods.iter().filter(|m| m.shape.gpu.0 > 0).collect();
    let mut out: BTreeMap<String, UnallocatedBreakdown> = BTreeMap::new();
    let mut free = Vec::new();
    for n in snapshot.nodes() {
        let st = NodeGpuState::of(n, &mut free);
        if st.free.is_empty() {
            continue;
        }
        let b = out
            .entry(st.model.unwrap_or_default().to_string())
            .or_default();
        b.capacity += st.free.len() as u64 * 1000;
        let allowed: Vec<&TypicalPod> = gpu_pods
            .iter()
            .copied()
            .filter(|m| model_allows(m.shape.models.as_ref(), st.model))
            .collect();
        for &f in st.free.iter().filter(|&&f| f > 0) {
            // The allowed typical pods whose GPU demand this device can be part of.
            let fit: Vec<&TypicalPod> = allowed
                .iter()
                .copied()
                .filter(|m| {
                    let need = device_need(m.shape.gpu.1);
                    f >= need
                        && st.free.iter().filter(|&&x| x >= need).count() >= m.shape.gpu.0 as usize
                })
                .collect();
            let cpu = |m: &TypicalPod| m.shape.milli_cpu <= st.free_cpu;
            let class = if allowed.is_empty() {
                &mut b.model
            } else if fit.is_empty() {
                &mut b.shape
            } else if !fit.iter().any(|m| cpu(m)) {
                &mut b.cpu
            } else if !fit.iter().any(|m| cpu(m) && m.memory <= st.free_memory) {
                &mut b.memory
            } else {
                &mut b.usable
            };
            *class += u64::from(f);
            b.free += u64::from(f);
        }
    }
    out
}

/// Why a pod fitted no node, judged on its GPU, CPU and memory requests alone (the checks the
/// openb pods meet: `NodeResourcesFit` and `GpuShare`); the first that holds of:
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum FailureCause {
    /// The nodes of the GPU models it may use have less free GPU in all than it asks for.
    GpuExhausted,
    /// They have enough free GPU in all, but no node has the devices with room for it
    /// (fragmented).
    GpuFragmented,
    /// Some node has the devices, but none of those has its CPU.
    Cpu,
    /// Some node has the devices and the CPU, none of those also its memory.
    Memory,
    /// A node has the devices, CPU and memory: another check failed it (pods per node,
    /// taints, …).
    Other,
}

impl FailureCause {
    /// Every cause, in declaration order.
    pub const ALL: [FailureCause; 5] = [
        FailureCause::GpuExhausted,
        FailureCause::GpuFragmented,
        FailureCause::Cpu,
        FailureCause::Memory,
        FailureCause::Other,
    ];

    /// Short name (`gpu-exhausted`, `gpu-fragmented`, `cpu`, `memory`, `other`).
    pub fn name(self) -> &'static str {
        match self {
            FailureCause::GpuExhausted => "gpu-exhausted",
            FailureCause::GpuFragmented => "gpu-fragmented",
            FailureCause::Cpu => "cpu",
            FailureCause::Memory => "memory",
            FailureCause::Other => "other",
        }
    }
}

/// [`FailureCause`] of `pod` on `snapshot` (the state when it failed).
pub fn failure_cause(snapshot: &Snapshot, pod: &PodInfo) -> FailureCause {
    let models = crate::model::typical_pods::pod_gpu_models(pod);
    let mut free_total = 0u64;
    let (mut devices, mut cpu, mut memory) = (false, false, false);
    let mut buf = Vec::new();
    for n in snapshot.nodes() {
        let st = NodeGpuState::of(n, &mut buf);
        if pod.gpu.count > 0 {
            if !model_allows(models.as_ref(), st.model) {
                continue;
            }
            free_total += st.free.iter().map(|&f| u64::from(f)).sum::<u64>();
            let need = device_need(pod.gpu.milli);
            if st.free.iter().filter(|&&f| f >= need).count() < pod.gpu.count as usize {
                continue;
            }
        }
        devices = true;
        if pod.requests.milli_cpu > st.free_cpu {
            continue;
        }
        cpu = true;
        if pod.requests.memory > st.free_memory {
            continue;
        }
        memory = true;
    }
    if !devices {
        if free_total < gpu_request_milli(pod) {
            FailureCause::GpuExhausted
        } else {
            FailureCause::GpuFragmented
        }
    } else if !cpu {
        FailureCause::Cpu
    } else if !memory {
        FailureCause::Memory
    } else {
        FailureCause::Other
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::sim::{Cluster, PodStatus, Simulation, SimulationConfig, openb};

    /// Two nodes: `n0` with 2 V100 GPUs and 8 cores, `n1` with one T4 and 4 cores.
    const NODES: &str = "sn,cpu_milli,memory_mib,gpu,model\n\
        n0,8000,65536,2,V100M16\n\
        n1,4000,65536,1,T4\n";

    /// Four pods: a 500-milli share, a whole GPU, a CPU-only pod and two whole GPUs (too many
    /// for any node once the others are placed).
    const PODS: &str = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n\
        p-c,1000,1024,1,500\n\
        p-a,1000,1024,1,1000\n\
        p-d,1000,1024,0,0\n\
        p-b,1000,1024,2,1000\n";

    fn cluster() -> Cluster {
        let mut c = Cluster::default();
        openb::parse_nodes(&mut c, "nodes.csv", NODES).unwrap();
        openb::parse_pods(&mut c, "pods.csv", PODS, "mini-scheduler").unwrap();
        c
    }

    fn queue() -> Vec<PodInfo> {
        cluster()
            .pods
            .into_iter()
            .map(|mut p| {
                crate::sim::default_requests_from_limits(&mut p);
                PodInfo::from_pod(p).unwrap()
            })
            .collect()
    }

    fn names(pods: &[PodInfo]) -> Vec<&str> {
        pods.iter().map(|p| p.name.as_str()).collect()
    }

    /// The same seed gives the same order whatever the input order (pods are sorted by name
    /// first); the seeds give different orders.
    #[test]
    fn shuffle_is_deterministic_and_starts_from_name_order() {
        let mut a = queue();
        let mut b = queue();
        b.reverse();
        shuffle(&mut a, 42);
        shuffle(&mut b, 42);
        assert_eq!(names(&a), names(&b));
        let orders: std::collections::BTreeSet<Vec<String>> = (0..20)
            .map(|seed| {
                let mut q = queue();
                shuffle(&mut q, seed);
                q.iter().map(|p| p.name.clone()).collect()
            })
            .collect();
        assert!(orders.len() > 5, "{orders:?}");
        let mut sorted = queue();
        sorted.sort_by(|x, y| x.name.cmp(&y.name));
        assert_eq!(names(&sorted), ["p-a", "p-b", "p-c", "p-d"]);
    }

    /// Clones are appended while the total is at most the target: the last one takes it past.
    /// Deflation removes pods until the total is at most the target.
    #[test]
    fn inflation_stops_just_past_the_target() {
        // 500 + 1000 + 0 + 2000 = 3500 milli over 3000 of capacity.
        let capacity = 3000;
        for (seed, factor) in [(1u64, 2.0), (2, 1.3), (3, 5.0)] {
            let mut q = queue();
            let mut rng = shuffle(&mut q, seed);
            let added = inflate(&mut q, factor, capacity, &mut rng).unwrap();
            let target = factor * capacity as f64;
            let total: u64 = q.iter().map(gpu_request_milli).sum();
            let last = gpu_request_milli(q.last().unwrap());
            assert!(total as f64 > target, "{total} > {target}");
            assert!(
                (total - last) as f64 <= target,
                "{} <= {target}",
                total - last
            );
            assert_eq!(q.len() as i64, 4 + added);
            for (i, p) in q[4..].iter().enumerate() {
                assert!(p.name.ends_with(&format!("-tuned-{i}")), "{}", p.name);
                let src = p.name.rsplit_once("-tuned-").unwrap().0;
                assert!(["p-a", "p-b", "p-c", "p-d"].contains(&src));
            }
        }
        // Same seed, same clones.
        let run = || {
            let mut q = queue();
            let mut rng = shuffle(&mut q, 7);
            inflate(&mut q, 3.0, capacity, &mut rng).unwrap();
            q.into_iter().map(|p| p.name).collect::<Vec<_>>()
        };
        assert_eq!(run(), run());
        // Deflation: at most 1000 milli may remain.
        let mut q = queue();
        let mut rng = shuffle(&mut q, 1);
        let removed = inflate(&mut q, 1.0 / 3.0, capacity, &mut rng).unwrap();
        assert!(removed < 0);
        assert!(q.iter().map(gpu_request_milli).sum::<u64>() <= 1000);
        // Bad factors and a cluster without GPUs.
        let mut q = queue();
        assert!(matches!(
            inflate(&mut q, 0.0, capacity, &mut rng),
            Err(ReplayError::BadFactor(_))
        ));
        assert!(matches!(
            inflate(&mut q, f64::NAN, capacity, &mut rng),
            Err(ReplayError::BadFactor(_))
        ));
        assert_eq!(
            inflate(&mut q, 1.3, 0, &mut rng),
            Err(ReplayError::NoCapacity)
        );
        let mut cpu_only: Vec<PodInfo> = queue().into_iter().filter(|p| p.gpu.count == 0).collect();
        assert_eq!(
            inflate(&mut cpu_only, 1.3, capacity, &mut rng),
            Err(ReplayError::NoGpuRequest)
        );
    }

    /// A pod that fits nowhere while no pod has a lower priority skips DefaultPreemption's dry
    /// run (no node can have a victim): the outcomes are those of a run that does the dry run
    /// (`--explain` always does), whatever the order.
    #[test]
    fn failed_pods_without_victims_skip_the_dry_run_with_the_same_outcomes() {
        let policy = crate::policy::parse_policy(
            "p.yaml",
            "kind: Policy\napiVersion: v1\npriorities:\n- name: BestFitPriority\n  weight: 1\n",
        )
        .unwrap()
        .resolved;
        let profile = crate::profile::Profile::from_resolved(policy, "p.yaml").unwrap();
        for seed in 0..6u64 {
            let run = |explain: bool| {
                let cfg = SimulationConfig {
                    scheduler_name: "mini-scheduler".into(),
                    seed,
                    percentage_of_nodes_to_score: 100,
                    explain,
                };
                let opts = ReplayOptions {
                    shuffle_seed: Some(seed),
                    inflate: Some(3.0),
                    tie_break: TieBreak::NodeName,
                    timeline: true,
                };
                Simulation::with_replay(cluster(), &profile, &cfg, opts)
                    .unwrap()
                    .map(|o| (o.name, o.status, o.node, o.nominated_node_name))
                    .collect::<Vec<_>>()
            };
            let (fast, dry_run) = (run(false), run(true));
            assert!(fast.iter().any(|o| o.1 == PodStatus::Unschedulable));
            assert_eq!(fast, dry_run, "seed {seed}");
        }
    }

    /// The timeline of a replay in name order (BestFit, ties by node name): each row adds the
    /// pod's request to arrived, its placement to allocated, and the cluster fragment follows
    /// the typical pods (the four shapes, 25 % each).
    #[test]
    fn timeline_arithmetic() {
        let policy = crate::policy::parse_policy(
            "p.yaml",
            "kind: Policy\napiVersion: v1\npriorities:\n- name: BestFitPriority\n  weight: 1\n",
        )
        .unwrap()
        .resolved;
        let cfg = SimulationConfig {
            scheduler_name: "mini-scheduler".into(),
            seed: 0,
            percentage_of_nodes_to_score: 100,
            explain: false,
        };
        let opts = ReplayOptions {
            tie_break: TieBreak::NodeName,
            timeline: true,
            ..Default::default()
        };
        let profile = crate::profile::Profile::from_resolved(policy, "p.yaml").unwrap();
        let mut run = Simulation::with_replay(cluster(), &profile, &cfg, opts).unwrap();
        let outcomes: Vec<(String, PodStatus, Option<String>)> =
            run.by_ref().map(|o| (o.name, o.status, o.node)).collect();
        // Input order (no shuffle): p-c (share) → n1 (BestFit: the fuller node after it);
        // p-a (whole) → n0 (n1's device is shared); p-d (CPU only) → n1 (2 cores left vs 6);
        // p-b (two whole GPUs) fits nowhere.
        assert_eq!(
            outcomes,
            [
                ("p-c".into(), PodStatus::Scheduled, Some("n1".into())),
                ("p-a".into(), PodStatus::Scheduled, Some("n0".into())),
                ("p-d".into(), PodStatus::Scheduled, Some("n1".into())),
                ("p-b".into(), PodStatus::Unschedulable, None),
            ]
        );
        let rows = run.timeline().unwrap().to_vec();
        let arrived: Vec<u64> = rows.iter().map(|r| r.arrived_gpu_milli).collect();
        let allocated: Vec<u64> = rows.iter().map(|r| r.allocated_gpu_milli).collect();
        assert_eq!(arrived, [500, 1500, 1500, 3500]);
        assert_eq!(allocated, [500, 1500, 1500, 1500]);
        assert!(rows.iter().all(|r| r.capacity_gpu_milli == 3000));
        assert_eq!(rows[0].pod, "default/p-c");
        // Before the first pod: n0 (1000, 1000), 8 cores: CPU-only → 2000, the others fit
        // (0): 0.25·2000 = 500; n1 (1000), 4 cores: CPU-only 1000, two whole 1000: 500.
        // After p-c, and to the end: n0 free (0, 1000) once p-a is there, 7 cores; n1 free
        // (500), 2 cores.
        // n0: CPU-only pod → 1000; share → 0; whole → 0; two whole → 1000: 0.25·2000 = 500.
        // n1: CPU-only → 500; share (fits, 1 core ≤ 2) → 0; whole → 500; two → 500:
        // 0.25·1500 = 375.
        assert!(
            rows.iter().all(|r| r.fragment_gpu_milli == 875.0),
            "{rows:?}"
        );
        // Unallocated at arrived X %: the first row with arrived ≥ X % of 3000.
        assert_eq!(
            unallocated_at(&rows, 10.0),
            Some(100.0 - 100.0 * 500.0 / 3000.0)
        );
        assert_eq!(unallocated_at(&rows, 50.0), Some(50.0));
        assert_eq!(unallocated_at(&rows, 100.0), Some(50.0));
        assert_eq!(unallocated_at(&rows, 120.0), None);
        let s = run.summary().replay.unwrap();
        assert_eq!(s.arrived_gpu_milli, 3500);
        assert_eq!(s.allocated_gpu_milli, 1500);
        assert_eq!(s.unallocated_gpu_percent_at_arrived.get(&100), Some(&50.0));
        assert_eq!(s.typical_pods, 4);
        let mut csv = Vec::new();
        write_timeline_csv(&mut csv, &rows).unwrap();
        let csv = String::from_utf8(csv).unwrap();
        assert_eq!(csv.lines().nth(1), Some("default/p-c,500,500,3000,875.0"));
    }

    /// Worked example of the diagnosis. Typical pods (each 1/3): A, 4 cores and 8 GiB with a
    /// whole V100; B, 1 core and 1 GiB with 500 milli of a V100; C, CPU only. Nodes (V100 unless
    /// said):
    /// * `k80`: a K80 model, 2 idle devices: neither A nor B may use it → `model` 2000;
    /// * `frag`: devices free 300 and 1000, room to spare: the 300 fits neither A nor B →
    ///   `shape` 300; A fits the idle one → `usable` 1000;
    /// * `cpu`: one idle device, 500 millicores free: A and B fit the device, neither has its
    ///   CPU → `cpu` 1000;
    /// * `mem`: one idle device, 8 cores but 512 MiB free: A and B lack memory → `memory` 1000.
    #[test]
    fn unallocated_breakdown_and_failure_causes_worked_example() {
        use crate::framework::plugins::gpu_frag::PodShape;
        use crate::framework::plugins::testutil::{node, pod, term};
        use crate::model::{LABEL_GPU_MODEL, RESOURCE_GPU, RESOURCE_GPU_MILLI};

        let v100 = Some(vec!["V100".to_string()]);
        let shape = |cpu: i64, gpu: (u32, u32), models: Option<Vec<String>>| PodShape {
            milli_cpu: cpu,
            gpu,
            models,
        };
        let tp = TypicalPods::from_counts(vec![
            (shape(4000, (1, 1000), v100.clone()), 1, 8 << 30),
            (shape(1000, (1, 500), v100.clone()), 1, 1 << 30),
            (shape(1000, (0, 0), None), 1, 1 << 30),
        ]);
        let gpu_node = |name: &str, model: &str, cpu: &str, mem: &str, gpus: &str| {
            node(name)
                .allocatable(&[
                    ("cpu", cpu),
                    ("memory", mem),
                    ("pods", "110"),
                    (RESOURCE_GPU, gpus),
                ])
                .label(LABEL_GPU_MODEL, model)
        };
        let mut snapshot = Snapshot::new();
        for n in [
            gpu_node("k80", "K80", "8", "64Gi", "2").info(),
            gpu_node("frag", "V100", "32", "64Gi", "2")
                .info_with(&[pod("a").container(&[("cpu", "1"), (RESOURCE_GPU_MILLI, "700")])]),
            gpu_node("cpu", "V100", "8", "64Gi", "1")
                .info_with(&[pod("b").container(&[("cpu", "7500m")])]),
            gpu_node("mem", "V100", "8", "16Gi", "1")
                .info_with(&[pod("c").container(&[("cpu", "1"), ("memory", "15872Mi")])]),
        ] {
            snapshot.add_node(n).unwrap();
        }
        let b = unallocated_breakdown(&snapshot, &tp);
        assert_eq!(
            b,
            UnallocatedBreakdown {
                capacity: 6000,
                free: 5300,
                model: 2000,
                shape: 300,
                cpu: 1000,
                memory: 1000,
                usable: 1000,
            }
        );

        let by_model = unallocated_by_model(&snapshot, &tp);
        assert_eq!(by_model.len(), 2);
        assert_eq!(by_model["K80"].model, 2000);
        assert_eq!(by_model["K80"].capacity, 2000);
        assert_eq!(by_model["V100"].free, 3300);

        let gpus = |n: &str| pod("p").container(&[("cpu", "1"), (RESOURCE_GPU, n)]);
        let cause = |p: PodInfo| failure_cause(&snapshot, &p);
        // 8 whole GPUs: 5,300 milli free in all.
        assert_eq!(cause(gpus("8").info()), FailureCause::GpuExhausted);
        // 3: enough in all, no node has three idle devices.
        assert_eq!(cause(gpus("3").info()), FailureCause::GpuFragmented);
        // 2 on a V100: 3,300 free on the V100 nodes, none has two idle devices (k80 does).
        let on_v100 =
            gpus("2").required_affinity(vec![term(&[(LABEL_GPU_MODEL, "In", &["V100"])])]);
        assert_eq!(cause(on_v100.info()), FailureCause::GpuFragmented);
        assert_eq!(cause(gpus("2").info()), FailureCause::Other);
        // One GPU with 40 cores: every node has an idle device, none 40 cores.
        let big_cpu = pod("p").container(&[("cpu", "40"), (RESOURCE_GPU, "1")]);
        assert_eq!(cause(big_cpu.info()), FailureCause::Cpu);
        let big_mem = pod("p").container(&[("cpu", "1"), ("memory", "100Gi"), (RESOURCE_GPU, "1")]);
        assert_eq!(cause(big_mem.info()), FailureCause::Memory);
        // A CPU-only pod asks for no device: only CPU and memory count.
        assert_eq!(
            cause(pod("p").container(&[("cpu", "64")]).info()),
            FailureCause::Cpu
        );
    }
}
