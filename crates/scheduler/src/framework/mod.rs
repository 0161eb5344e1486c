//! The scheduling framework: plugin traits, [`Status`], [`CycleState`] and the plugin runtime.
//!
//! Mirrors `pkg/scheduler/framework/interface.go` (v1.22) for the extension points this
//! scheduler runs in its scheduling cycle: PreFilter, Filter, PreScore, Score and NormalizeScore.
//! Plugins are synchronous functions over a pod ([`PodInfo`]) and a node ([`NodeInfo`]); batch
//! entry points ([`FilterPlugin::filter_nodes`], [`ScorePlugin::score_nodes`]) let the runtime
//! make one dynamic call per plugin and pod instead of one per node.

pub mod plugins;
pub mod runtime;
pub mod types;

use std::any::Any;
use std::borrow::Cow;
use std::collections::HashMap;

pub use runtime::{Framework, FrameworkError, ScoreBreakdown};
pub use types::{NodeInfo, PodInfo, Resource};

use crate::snapshot::Snapshot;

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

    /// Filter a batch: keep in `candidates` (indexes into [`Snapshot::nodes`]) the nodes that
    /// pass, push the others with their status onto `failed`. The default calls
    /// [`FilterPlugin::filter`] per node; it is monomorphised per plugin, so the per-node call is
    /// static. Hot plugins override it to read the compact [`Snapshot::hot`] rows and call
    /// `filter` only for the nodes the fast path cannot decide, so both paths give one answer.
    fn filter_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        candidates: &mut Vec<u32>,
        failed: &mut Vec<(u32, Status)>,
    ) {
        let nodes = snapshot.nodes();
        candidates.retain(|&i| {
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

    /// Raw score of one node.
    ///
    /// # Errors
    /// An `Error` status aborts the scheduling attempt.
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status>;

    /// Raw scores of the feasible nodes into `out` (same order as `feasible`). Resource scorers
    /// override it to read [`Snapshot::hot`] with the same arithmetic as `score`.
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
