//! The scheduling framework: plugin traits, [`Status`], [`CycleState`] and the plugin runtime.
//!
//! Mirrors `pkg/scheduler/framework/interface.go` (v1.22) for the extension points this
//! scheduler runs in its scheduling cycle: PreFilter, Filter, PreScore, Score and NormalizeScore.
//! Plugins are synchronous functions over a pod ([`PodInfo`]) and a node ([`NodeInfo`]); batch
//! entry points ([`FilterPlugin::filter_nodes`], [`ScorePlugin::score_nodes`]) let the runtime
//! make one dynamic call per plugin and pod instead of one per node.

pub mod plugins;
mod runtime;

use std::any::Any;
use std::borrow::Cow;
use std::collections::HashMap;

use crate::model::{GPU_MILLI_PER_DEVICE, GpuRequest};
use crate::model::{NodeInfo, PodInfo};
use crate::snapshot::{NodeColumns, NodeHot, Snapshot};
pub use runtime::{
    Framework, FrameworkError, NoNominatedPods, NominatedPods, ScoreBreakdown, WeightedScore,
    new_filter, new_score,
};

/// Highest score a Score plugin may return after NormalizeScore (`framework.MaxNodeScore`).
pub const MAX_NODE_SCORE: i64 = 100;
/// Lowest score after NormalizeScore (`framework.MinNodeScore`).
pub const MIN_NODE_SCORE: i64 = 0;

/// Status codes (`framework.Code`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Code {
    /// The plugin ran and the pod may continue.
    Success,
    /// An internal error: the pod is retried with backoff.
    Error,
    /// The pod does not fit; preemption might help.
    Unschedulable,
    /// The pod does not fit and preemption cannot help (e.g. node selector mismatch).
    UnschedulableAndUnresolvable,
    /// A Permit plugin asks the pod to wait.
    Wait,
    /// PreFilter/PreScore: the plugin has nothing to do for this pod; skip its Filter/Score.
    Skip,
}

impl Code {
    /// The name upstream's `Code.String()` gives (the `status` label of the framework metrics).
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Success => "Success",
            Code::Error => "Error",
            Code::Unschedulable => "Unschedulable",
            Code::UnschedulableAndUnresolvable => "UnschedulableAndUnresolvable",
            Code::Wait => "Wait",
            Code::Skip => "Skip",
        }
    }
}

/// The outcome of running a plugin (`framework.Status`): a code, human-readable reasons (the
/// texts that end up in `FailedScheduling` events) and the name of the plugin that produced it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// The code.
    pub code: Code,
    /// Reasons, e.g. `Insufficient cpu`.
    pub reasons: Vec<Cow<'static, str>>,
    /// The plugin that failed, when known.
    pub plugin: &'static str,
}

impl Status {
    /// A success status (allocates nothing).
    pub const fn success() -> Status {
        Status {
            code: Code::Success,
            reasons: Vec::new(),
            plugin: "",
        }
    }

    /// A Skip status (PreFilter/PreScore).
    pub const fn skip() -> Status {
        Status {
            code: Code::Skip,
            reasons: Vec::new(),
            plugin: "",
        }
    }

    /// A status with one reason.
    pub fn new(code: Code, reason: impl Into<Cow<'static, str>>) -> Status {
        Status {
            code,
            reasons: vec![reason.into()],
            plugin: "",
        }
    }

    /// An `Error` status.
    pub fn error(reason: impl Into<Cow<'static, str>>) -> Status {
        Status::new(Code::Error, reason)
    }

    /// True for `Success`.
    pub fn is_success(&self) -> bool {
        self.code == Code::Success
    }

    /// True for `Skip`.
    pub fn is_skip(&self) -> bool {
        self.code == Code::Skip
    }

    /// True for `Unschedulable` or `UnschedulableAndUnresolvable`.
    pub fn is_unschedulable(&self) -> bool {
        matches!(
            self.code,
            Code::Unschedulable | Code::UnschedulableAndUnresolvable
        )
    }

    /// Record the plugin that produced this status.
    pub fn with_plugin(mut self, plugin: &'static str) -> Status {
        self.plugin = plugin;
        self
    }

    /// The reasons joined with `, ` (`Status.Message()`).
    pub fn message(&self) -> String {
        self.reasons.join(", ")
    }
}

/// Per-cycle scratch space shared by the plugins of one scheduling attempt
/// (`framework.CycleState`): PreFilter/PreScore write a value under their plugin name and
/// Filter/Score read it back.
#[derive(Default)]
pub struct CycleState {
    data: HashMap<&'static str, Box<dyn Any + Send + Sync>>,
}

impl CycleState {
    /// An empty state.
    pub fn new() -> CycleState {
        CycleState::default()
    }

    /// Store `value` under `key` (usually the plugin name).
    pub fn write<T: Any + Send + Sync>(&mut self, key: &'static str, value: T) {
        self.data.insert(key, Box::new(value));
    }

    /// Read the value stored under `key`, if it has type `T`.
    pub fn read<T: Any + Send + Sync>(&self, key: &'static str) -> Option<&T> {
        self.data.get(key).and_then(|b| b.downcast_ref::<T>())
    }

    /// Remove everything (reuse between cycles without reallocating).
    pub fn clear(&mut self) {
        self.data.clear();
    }
}

/// A sufficient condition for a filter to pass a node, checked on the node's entries in the
/// snapshot's [`NodeColumns`] (one [`NodeHot`] record). The runtime ANDs the checks of all
/// active filters and runs the per-node filters only on the nodes the combined check does not
/// pass, so a fast check may be conservative (reject too much) but must never accept a node its
/// filter would reject.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FastCheck {
    /// The node passes only if none of these [`NodeHot`] flags is set.
    pub forbidden_flags: u32,
    /// When set, the node passes only if it has room for one more pod and for this many more
    /// millicores of cpu and bytes of memory of fit requests (both ≥ 0: a filter with a
    /// negative request gives no fast check).
    pub fits: Option<(i64, i64)>,
    /// When set, the node passes only if this many more `nvidia.com/gpu` (devices) and
    /// `alibabacloud.com/gpu-milli` (milli-GPU) of fit requests are free
    /// ([`NodeHot::free_gpu`]).
    pub gpu_fits: Option<(i64, i64)>,
    /// When set, the node passes only if its devices have room for this request: `count` idle
    /// devices for whole GPUs, one device with `milli` free for a share (`GpuShare`).
    pub gpu_devices: Option<GpuRequest>,
}

impl FastCheck {
    /// Both conditions at once.
    pub fn and(self, other: FastCheck) -> FastCheck {
        FastCheck {
            forbidden_flags: self.forbidden_flags | other.forbidden_flags,
            fits: match (self.fits, other.fits) {
                (None, f) | (f, None) => f,
                (Some((c1, m1)), Some((c2, m2))) => Some((c1.max(c2), m1.max(m2))),
            },
            gpu_fits: match (self.gpu_fits, other.gpu_fits) {
                (None, f) | (f, None) => f,
                (Some((g1, m1)), Some((g2, m2))) => Some((g1.max(g2), m1.max(m2))),
            },
            gpu_devices: match (self.gpu_devices, other.gpu_devices) {
                (None, d) | (d, None) => d,
                (Some(a), Some(b)) => Some(GpuRequest {
                    count: a.count.max(b.count),
                    milli: a.milli.max(b.milli),
                }),
            },
        }
    }

    /// Whether the node with entries `h` satisfies the condition.
    ///
    /// The fit part reads `free = allocatable - requested` (saturating): with a request
    /// `q >= 0`, `free >= q` implies `allocatable >= q + requested`, NodeResourcesFit's test.
    #[inline(always)]
    pub fn passes(&self, h: &NodeHot) -> bool {
        h.flags & self.forbidden_flags == 0
            && self.fits.is_none_or(|(cpu, mem)| {
                h.free_pods >= 1 && h.free_milli_cpu >= cpu && h.free_memory >= mem
            })
            && self.gpu_parts_pass(h.free_gpu, h.free_gpu_milli, h.gpu_idle, h.gpu_free_max)
    }

    /// [`FastCheck::passes`] on node `i` of the columns, reading only the columns it needs.
    #[inline(always)]
    pub fn passes_at(&self, c: &NodeColumns, i: usize) -> bool {
        c.flags[i] & self.forbidden_flags == 0
            && self.fits.is_none_or(|(cpu, mem)| {
                c.free_pods[i] >= 1 && c.free_milli_cpu[i] >= cpu && c.free_memory[i] >= mem
            })
            && (self.gpu_fits.is_none() && self.gpu_devices.is_none()
                || self.gpu_parts_pass(
                    c.free_gpu[i],
                    c.free_gpu_milli[i],
                    c.gpu_idle[i],
                    c.gpu_free_max[i],
                ))
    }

    #[inline(always)]
    fn gpu_parts_pass(&self, free_gpu: i64, free_milli: i64, idle: u32, free_max: u32) -> bool {
        self.gpu_fits
            .is_none_or(|(gpu, milli)| free_gpu >= gpu && free_milli >= milli)
            && self.gpu_devices.is_none_or(|r| {
                if r.milli >= GPU_MILLI_PER_DEVICE {
                    idle >= r.count
                } else {
                    r.count <= 1 && free_max >= r.milli
                }
            })
    }
}

/// A decision a plugin's Reserve takes for the chosen node (`framework.ReservePlugin`, the
/// decision half). The scheduling cycle only reads the snapshot, so the decision travels out in
/// [`ScheduleResult::reservations`](crate::schedule_one::ScheduleResult::reservations) and the caller applies
/// it together with assuming the pod; a failure after that is undone with the pod (Unreserve).
#[derive(Debug, Clone, PartialEq)]
pub enum Reservation {
    /// VolumeBinding: the PV/PVC bindings and provisionings chosen for the node, to assume
    /// ([`crate::volume::binder::assume_pod_volumes`]) and write in PreBind.
    Volumes(std::sync::Arc<crate::volume::PodVolumes>),
}

// The Kubernetes objects inside hold no floating-point fields, so equality is total.
impl Eq for Reservation {}

/// A Filter plugin (with its optional PreFilter). Filters decide whether a pod *can* run on a
/// node; the first failing filter's status explains why not.
pub trait FilterPlugin: Send + Sync {
    /// The framework plugin name (`NodeResourcesFit`, ...).
    fn name(&self) -> &'static str;

    /// PreFilter: prepare per-pod state. Return [`Status::skip`] when the plugin has nothing to
    /// check for this pod (its Filter is then not called), or an unschedulable status to reject
    /// the pod on every node.
    fn pre_filter(&self, _state: &mut CycleState, _pod: &PodInfo, _snapshot: &Snapshot) -> Status {
        Status::success()
    }

    /// Filter one node.
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status;

    /// The code [`FilterPlugin::filter`] returns on this node, without building its reasons:
    /// the search records a node that fails by plugin and code, and builds the status (the
    /// text of the FailedScheduling message) only when a cycle reports it. The default calls
    /// `filter`; a plugin whose failure text costs an allocation (a `format!`, a `Vec`)
    /// overrides it, and must return exactly `filter(..).code`.
    fn filter_code(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Code {
        self.filter(state, pod, node).code
    }

    /// Reserve, decision half: what this plugin needs reserved for `pod` on the chosen `node`,
    /// read from its cycle state (only called when PreFilter did not skip). The default
    /// reserves nothing.
    ///
    /// # Errors
    /// An `Error` status aborts the scheduling attempt.
    fn reserve(
        &self,
        _state: &CycleState,
        _pod: &PodInfo,
        _node: &NodeInfo,
    ) -> Result<Option<Reservation>, Status> {
        Ok(None)
    }

    /// A sufficient condition for [`FilterPlugin::filter`] to pass, for this pod, checkable on
    /// the node's column entries; `None` when the plugin has none.
    fn fast_check(&self, _pod: &PodInfo) -> Option<FastCheck> {
        None
    }

    /// Filter a batch: keep in `candidates` (indexes into [`Snapshot::nodes`]) the nodes that
    /// pass, push the others with their status onto `failed`. The default calls
    /// [`FilterPlugin::filter`] per node; it is monomorphised per plugin, so the per-node call is
    /// static. Nodes that pass the plugin's [`FilterPlugin::fast_check`] on their
    /// [`Snapshot::columns`] entries are kept without calling `filter`.
    fn filter_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        candidates: &mut Vec<u32>,
        failed: &mut Vec<(u32, Status)>,
    ) {
        let nodes = snapshot.nodes();
        let cols = snapshot.columns();
        let fast = self.fast_check(pod);
        candidates.retain(|&i| {
            if fast.is_some_and(|f| f.passes_at(cols, i as usize)) {
                return true;
            }
            let s = self.filter(state, pod, &nodes[i as usize]);
            if s.is_success() {
                true
            } else {
                failed.push((i, s.with_plugin(self.name())));
                false
            }
        });
    }
}

/// What PreScore decided for a Score plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScoreMode {
    /// Score every feasible node.
    PerNode,
    /// Every feasible node gets this normalized score; Score and NormalizeScore are not called.
    /// Used when the outcome is known in advance (e.g. SelectorSpread for a pod that no
    /// Service or controller selects), so the result is identical at no per-node cost.
    Uniform(i64),
}

/// The resource scorers whose raw score is a pure function of a node's cpu/memory column
/// entries ([`NodeColumns`]) and the pod's scoring request, already on the 0..=100 scale (no
/// NormalizeScore). The runtime computes all of them, weighted, in one pass over the feasible
/// nodes instead of one pass per plugin
/// ([`plugins::node_resources_columns`]: reciprocals, exact).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HotScorer {
    /// `NodeResourcesLeastAllocated`.
    LeastAllocated,
    /// `NodeResourcesMostAllocated`.
    MostAllocated,
    /// `NodeResourcesBalancedAllocation`.
    BalancedAllocation,
}

impl HotScorer {
    /// The score from `[(allocatable, requested) of cpu, of memory]`.
    #[inline(always)]
    pub fn score(self, pairs: [(i64, i64); 2]) -> i64 {
        match self {
            HotScorer::LeastAllocated => plugins::average_over_allocatable(
                pairs,
                plugins::least_allocated::least_requested_score,
            ),
            HotScorer::MostAllocated => plugins::average_over_allocatable(
                pairs,
                plugins::most_allocated::most_requested_score,
            ),
            HotScorer::BalancedAllocation => {
                let [(ac, rc), (am, rm)] = pairs;
                plugins::balanced_allocation::balanced_score(rc, ac, rm, am)
            }
        }
    }
}

/// A Score plugin with its PreScore and NormalizeScore.
pub trait ScorePlugin: Send + Sync {
    /// The framework plugin name (`NodeResourcesLeastAllocated`, ...).
    fn name(&self) -> &'static str;

    /// PreScore: prepare per-pod state for the feasible nodes.
    ///
    /// # Errors
    /// An `Error` status aborts the scheduling attempt.
    fn pre_score(
        &self,
        _state: &mut CycleState,
        _pod: &PodInfo,
        _snapshot: &Snapshot,
        _feasible: &[u32],
    ) -> Result<ScoreMode, Status> {
        Ok(ScoreMode::PerNode)
    }

    /// When the plugin is one of the [`HotScorer`]s: which one. Its `score` must then equal
    /// `HotScorer::score` on the node's column entries.
    fn hot_scorer(&self) -> Option<HotScorer> {
        None
    }

    /// Raw score of one node.
    ///
    /// # Errors
    /// An `Error` status aborts the scheduling attempt.
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status>;

    /// Raw scores of the feasible nodes into `out` (same order as `feasible`). Resource scorers
    /// override it to read [`Snapshot::columns`] with the same results as `score`. The
    /// workers may call it on disjoint parts of the feasible nodes at once: each node's score
    /// must depend on that node alone (NormalizeScore sees them all).
    ///
    /// # Errors
    /// The first `Error` status of [`ScorePlugin::score`].
    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        feasible: &[u32],
        out: &mut [i64],
    ) -> Result<(), Status> {
        let nodes = snapshot.nodes();
        for (o, &i) in out.iter_mut().zip(feasible) {
            *o = self.score(state, pod, &nodes[i as usize])?;
        }
        Ok(())
    }

    /// The GPU devices this scorer would take for `pod` on the chosen `node` (Reserve follows
    /// the scorer: FGD takes the device that leaves the least fragmentation). `None` lets the
    /// default choice ([`NodeInfo::pick_gpus`]) decide; the first score plugin that answers wins.
    fn gpu_indexes(
        &self,
        _state: &CycleState,
        _pod: &PodInfo,
        _snapshot: &Snapshot,
        _node: &NodeInfo,
    ) -> Option<Vec<u32>> {
        None
    }

    /// NormalizeScore: map raw scores into `0..=MAX_NODE_SCORE` in place. The default leaves
    /// them as they are (for plugins whose raw score is already on that scale).
    ///
    /// # Errors
    /// An `Error` status aborts the scheduling attempt.
    fn normalize_score(
        &self,
        _state: &CycleState,
        _pod: &PodInfo,
        _snapshot: &Snapshot,
        _feasible: &[u32],
        _scores: &mut [i64],
    ) -> Result<(), Status> {
        Ok(())
    }
}
