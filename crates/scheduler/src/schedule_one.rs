//! The scheduling algorithm for one pod: filter → score → select host, and the [`FitError`]
//! that explains an unschedulable pod.
//!
//! Follows `pkg/scheduler/core/generic_scheduler.go` (v1.22): `findNodesThatFitPod` with
//! `numFeasibleNodesToFind` and a rotating start index, `prioritizeNodes` (all nodes score 1 when
//! there are no score plugins), `selectHost` (uniform random choice among the top-scored nodes by
//! reservoir sampling), and a single feasible node chosen without scoring. The search is
//! sequential, in NodeTree order from the start index, and stops at the `numFeasibleNodesToFind`-th
//! feasible node, so results are deterministic for a given seed.
//!
//! Extenders ([`Algorithm::set_extenders`]) run as in v1.22's `Schedule`: after the filter plugins
//! on the feasible nodes found (`findNodesThatPassExtenders`), and after the score plugins, their
//! scores × weight × 10 added to each node's total (`prioritizeNodes`); a single feasible node is
//! chosen without asking them to score.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use crate::extender::{self, Extender, MAX_EXTENDER_PRIORITY};
use crate::framework::{
    Code, CycleState, FastCheck, Framework, HotScorer, MAX_NODE_SCORE, MIN_NODE_SCORE, NodeInfo,
    PodInfo, ScoreBreakdown, ScoreMode, Status,
};
use crate::snapshot::Snapshot;

/// Below this many nodes every node is searched (`minFeasibleNodesToFind`).
pub const MIN_FEASIBLE_NODES_TO_FIND: usize = 100;
/// Lower bound of the adaptive percentage (`minFeasibleNodesPercentageToFind`).
pub const MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND: i64 = 5;
/// `DefaultPercentageOfNodesToScore`: 0 means adaptive.
pub const DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE: i32 = 0;

/// `numFeasibleNodesToFind`: how many feasible nodes to look for among `num_all_nodes`, given
/// `percentageOfNodesToScore` (0 = adaptive `50 - n/125`, at least 5%; ≥ 100 = all nodes).
pub fn num_feasible_nodes_to_find(
    percentage_of_nodes_to_score: i32,
    num_all_nodes: usize,
) -> usize {
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND || percentage_of_nodes_to_score >= 100 {
        return num_all_nodes;
    }
    let mut p = i64::from(percentage_of_nodes_to_score);
    if p <= 0 {
        p = 50 - num_all_nodes as i64 / 125;
        if p < MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND {
            p = MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND;
        }
    }
    let k = (num_all_nodes as i64 * p / 100) as usize;
    k.max(MIN_FEASIBLE_NODES_TO_FIND)
}

/// Why the pod fits on no node (`framework.FitError`): the status of every node that failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FitError {
    /// `namespace/name` of the pod.
    pub pod: String,
    /// Number of nodes in the snapshot.
    pub num_all_nodes: usize,
    /// Failed node name → status (`Diagnosis.NodeToStatusMap`).
    pub node_to_status: BTreeMap<String, Status>,
}

impl FitError {
    /// Reason → number of nodes, sorted like the message.
    pub fn reason_histogram(&self) -> BTreeMap<String, usize> {
        let mut h = BTreeMap::new();
        for s in self.node_to_status.values() {
            for r in &s.reasons {
                *h.entry(r.to_string()).or_insert(0) += 1;
            }
        }
        h
    }
}

impl fmt::Display for FitError {
    /// `0/%v nodes are available: <count> <reason>, ....` with the `"count reason"` strings
    /// sorted as strings, exactly as `FitError.Error()` builds them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = self
            .reason_histogram()
            .into_iter()
            .map(|(r, c)| format!("{c} {r}"))
            .collect();
        parts.sort();
        write!(
            f,
            "0/{} nodes are available: {}.",
            self.num_all_nodes,
            parts.join(", ")
        )
    }
}

/// A failed scheduling attempt.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    /// The snapshot has no nodes (`ErrNoNodesAvailable`).
    #[error("no nodes available to schedule pods")]
    NoNodesAvailable,
    /// No node fits.
    #[error("{0}")]
    Fit(FitError),
    /// An extender that is not ignorable failed to filter (transport error, non-200 answer,
    /// its `Error` text); the message is the extender's error as upstream passes it on.
    #[error("{message}")]
    Extender {
        /// The extender's name (URL prefix).
        extender: String,
        /// The error.
        message: String,
    },
    /// A plugin returned an error status.
    #[error("running {plugin} plugin: {message}")]
    Plugin {
        /// The plugin.
        plugin: String,
        /// The status message.
        message: String,
    },
    /// A PreFilter, Filter or Reserve plugin returned an `Error` status; `message` is the
    /// framework's whole text, as v1.22 `frameworkImpl` wraps it: `running PreFilter plugin
    /// "X": ...`, `running "X" filter plugin: ...`, `running Reserve plugin "X": ...`.
    #[error("{message}")]
    ExtensionPoint {
        /// The plugin.
        plugin: String,
        /// The error text.
        message: String,
    },
}

/// A successful scheduling decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleResult {
    /// The chosen node.
    pub node: String,
    /// Its index in the snapshot.
    pub node_index: u32,
    /// Nodes examined by the filters.
    pub evaluated_nodes: usize,
    /// Nodes that passed the filters.
    pub feasible_nodes: usize,
    /// GPU devices chosen on the node (empty when the pod requests none).
    pub gpu_indexes: Vec<u32>,
    /// With `explain`: per feasible node, the score breakdown.
    pub scores: Option<BTreeMap<String, ScoreBreakdown>>,
    /// With `explain`: nodes that failed a filter and their reasons.
    pub diagnosis: Option<BTreeMap<String, Vec<String>>>,
    /// What the filters' Reserve decided for the chosen node (e.g. VolumeBinding's PV/PVC
    /// bindings), for the caller to assume with the pod.
    pub reservations: Vec<crate::framework::Reservation>,
}

/// Time and outcome of each extension point the last [`Algorithm::schedule`] call ran, for
/// `scheduler_framework_extension_point_duration_seconds{extension_point, status}` (v1.22
/// observes them whatever the cycle's outcome); `None` for a point the cycle did not reach.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CycleTimings {
    /// The PreFilter plugins, with the status code they ended on (`Success`, or the rejecting
    /// plugin's `Unschedulable` / `UnschedulableAndUnresolvable` / `Error`).
    pub pre_filter: Option<(std::time::Duration, Code)>,
    /// Filtering the nodes (plugins only, not extenders): v1.22 times the whole
    /// `findNodesThatPassFilters`, not each node; `Error` when a filter failed with an error,
    /// else `Success` (nodes that do not fit are not errors).
    pub filter: Option<(std::time::Duration, Code)>,
    /// The PreScore plugins; absent when only one node was feasible (v1.22 returns it without
    /// scoring).
    pub pre_score: Option<(std::time::Duration, Code)>,
    /// Score + NormalizeScore, the weights and the host selection (not the extenders'
    /// prioritize calls, as upstream's `RunScorePlugins`); absent as `pre_score`, and when a
    /// PreScore plugin failed.
    pub score: Option<(std::time::Duration, Code)>,
}

/// `totals[j] += w * f([(alloc, requested) of cpu, of memory])` for each feasible node `j`,
/// monomorphised per scorer so the loop has no dynamic dispatch.
///
/// `f` is a pure function of the node's four numbers (the pod's request is fixed within a
/// cycle), and nodes of one pool in the same state share them, so results are memoised in a
/// small direct-mapped table keyed by exactly those numbers: a hit returns the value `f`
/// computed for an identical input, so the totals are the same as without it.
#[inline(always)]
fn add_weighted(
    totals: &mut [i64],
    feasible: &[u32],
    hot: &[crate::snapshot::NodeHot],
    cpu: i64,
    mem: i64,
    w: i64,
    f: impl Fn([(i64, i64); 2]) -> i64,
) {
    const SLOTS: usize = 64;
    let mut keys = [[i64::MIN; 4]; SLOTS];
    let mut vals = [0i64; SLOTS];
    for (t, &i) in totals.iter_mut().zip(feasible) {
        let h = &hot[i as usize];
        let key = [
            h.alloc_milli_cpu,
            h.nz_milli_cpu,
            h.alloc_memory,
            h.nz_memory,
        ];
        let mix =
            (key[0] ^ key[1].rotate_left(16) ^ key[2].rotate_left(32) ^ key[3].rotate_left(48))
                as u64;
        let slot = (mix.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58) as usize;
        let v = if keys[slot] == key {
            vals[slot]
        } else {
            let v = f(h.score_pairs(cpu, mem));
            keys[slot] = key;
            vals[slot] = v;
            v
        };
        *t += w * v;
    }
}

fn invalid_score(plugin: &str, score: i64) -> ScheduleError {
    ScheduleError::Plugin {
        plugin: plugin.into(),
        message: format!(
            "plugin {plugin:?} returns an invalid score {score}, it should in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing"
        ),
    }
}

/// How `selectHost` chooses among the nodes with the top total score.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TieBreak {
    /// Uniformly at random with the seeded RNG, as kube-scheduler does.
    #[default]
    Random,
    /// The node with the lowest name, as the FGD paper's simulator does.
    NodeName,
}

/// Scheduling algorithm state kept across cycles: the configuration, the RNG that breaks ties,
/// the rotating start index, and reusable buffers.
pub struct Algorithm {
    /// `percentageOfNodesToScore` (0 = adaptive, 100 = all).
    pub percentage_of_nodes_to_score: i32,
    rng: StdRng,
    tie_break: TieBreak,
    next_start_node_index: usize,
    candidates: Vec<u32>,
    failed: Vec<(u32, Status)>,
    chunk: Vec<u32>,
    totals: Vec<i64>,
    plugin_scores: Vec<i64>,
    /// PreScore time of the current cycle, summed over the score plugins, and whether one of
    /// them failed.
    pre_score_duration: std::time::Duration,
    pre_score_failed: bool,
    /// Time the extenders' prioritize calls took in the current cycle (not part of `Score`).
    extender_score_duration: std::time::Duration,
    timings: CycleTimings,
    active: Vec<usize>,
    state: CycleState,
    extenders: Vec<Arc<dyn Extender>>,
}

impl Algorithm {
    /// A new algorithm with a seeded tie-breaking RNG.
    pub fn new(percentage_of_nodes_to_score: i32, seed: u64) -> Algorithm {
        Algorithm {
            percentage_of_nodes_to_score,
            rng: StdRng::seed_from_u64(seed),
            tie_break: TieBreak::Random,
            next_start_node_index: 0,
            candidates: Vec::new(),
            failed: Vec::new(),
            chunk: Vec::new(),
            totals: Vec::new(),
            plugin_scores: Vec::new(),
            pre_score_duration: std::time::Duration::ZERO,
            pre_score_failed: false,
            extender_score_duration: std::time::Duration::ZERO,
            timings: CycleTimings::default(),
            active: Vec::new(),
            state: CycleState::new(),
            extenders: Vec::new(),
        }
    }

    /// How ties among the best-scored nodes are broken (default [`TieBreak::Random`]).
    pub fn set_tie_break(&mut self, tie_break: TieBreak) {
        self.tie_break = tie_break;
    }

    /// What the last [`Self::schedule`] call spent in each extension point.
    pub fn last_timings(&self) -> &CycleTimings {
        &self.timings
    }

    /// The extenders every cycle consults, in call order (see
    /// [`extender::build_extenders`]: non-ignorable first). Upstream passes them to `Schedule`
    /// (v1.22) or keeps them on `genericScheduler` (v1.21).
    pub fn set_extenders(&mut self, extenders: Vec<Arc<dyn Extender>>) {
        self.extenders = extenders;
    }

    /// The configured extenders.
    pub fn extenders(&self) -> &[Arc<dyn Extender>] {
        &self.extenders
    }

    /// Run one scheduling cycle for `pod` on `snapshot` (no mutation of the snapshot: the caller
    /// assumes the pod on the returned node).
    ///
    /// # Errors
    /// [`ScheduleError::Fit`] when no node fits, [`ScheduleError::NoNodesAvailable`] on an empty
    /// snapshot, [`ScheduleError::Plugin`] when a plugin fails internally.
    pub fn schedule(
        &mut self,
        fwk: &Framework,
        snapshot: &Snapshot,
        pod: &PodInfo,
        explain: bool,
    ) -> Result<ScheduleResult, ScheduleError> {
        let r = self.schedule_cycle(fwk, snapshot, pod, explain);
        // Release what the plugins kept (e.g. the volume index the volume plugins share), so
        // the snapshot's copy-on-write parts stay unshared between cycles.
        self.state.clear();
        r
    }

    fn schedule_cycle(
        &mut self,
        fwk: &Framework,
        snapshot: &Snapshot,
        pod: &PodInfo,
        explain: bool,
    ) -> Result<ScheduleResult, ScheduleError> {
        self.timings = CycleTimings::default();
        let n = snapshot.len();
        if n == 0 {
            return Err(ScheduleError::NoNodesAvailable);
        }
        debug_assert!(
            snapshot.hot_rows_consistent(),
            "NodeHot rows out of sync with NodeInfo"
        );
        let cycle_start = std::time::Instant::now();
        self.state.clear();
        let nodes = snapshot.nodes();

        // PreFilter.
        let mut active = std::mem::take(&mut self.active);
        active.clear();
        for (i, f) in fwk.filters.iter().enumerate() {
            let s = f.pre_filter(&mut self.state, pod, snapshot);
            match s.code {
                Code::Success => active.push(i),
                Code::Skip => {}
                Code::Unschedulable | Code::UnschedulableAndUnresolvable => {
                    self.timings.pre_filter = Some((cycle_start.elapsed(), s.code));
                    let s = s.with_plugin(f.name());
                    let node_to_status = nodes
                        .iter()
                        .map(|ni| (ni.name.clone(), s.clone()))
                        .collect();
                    return Err(ScheduleError::Fit(FitError {
                        pod: pod.key(),
                        num_all_nodes: n,
                        node_to_status,
                    }));
                }
                _ => {
                    self.timings.pre_filter = Some((cycle_start.elapsed(), Code::Error));
                    // v1.22 RunPreFilterPlugins: `running PreFilter plugin %q: %w`.
                    return Err(ScheduleError::ExtensionPoint {
                        plugin: f.name().into(),
                        message: format!(
                            "running PreFilter plugin {:?}: {}",
                            f.name(),
                            s.message()
                        ),
                    });
                }
            }
        }

        self.timings.pre_filter = Some((cycle_start.elapsed(), Code::Success));
        let filter_start = std::time::Instant::now();

        // When every active filter has a fast check, the combined check decides most nodes.
        let combined_fast = active.iter().try_fold(FastCheck::default(), |acc, &fi| {
            fwk.filters[fi].fast_check(pod).map(|f| acc.and(f))
        });

        // Filter, from the rotating start index in NodeTree order.
        let to_find = num_feasible_nodes_to_find(self.percentage_of_nodes_to_score, n);
        let order = snapshot.order();
        let start = self.next_start_node_index % n;
        self.candidates.clear();
        self.failed.clear();
        let mut processed = 0usize;
        const CHUNK: usize = 256;
        while processed < n && self.candidates.len() < to_find {
            let failed_from = self.failed.len();
            let take = CHUNK.min(n - processed);
            self.chunk.clear();
            // The rotated order without a division per node: [start.., ..start].
            let from = start + processed;
            if from >= n {
                self.chunk
                    .extend_from_slice(&order[from - n..from - n + take]);
            } else if from + take <= n {
                self.chunk.extend_from_slice(&order[from..from + take]);
            } else {
                self.chunk.extend_from_slice(&order[from..]);
                self.chunk.extend_from_slice(&order[..from + take - n]);
            }
            if fwk.run_all_filters {
                self.chunk.retain(|&ni| {
                    let mut merged: Option<Status> = None;
                    for &fi in &active {
                        let f = &fwk.filters[fi];
                        let s = f.filter(&self.state, pod, &nodes[ni as usize]);
                        if !s.is_success() {
                            let s = s.with_plugin(f.name());
                            if !s.is_unschedulable() {
                                // v1.22 RunFilterPlugins returns an Error status alone, at
                                // once, even when running all filters.
                                merged = Some(s);
                                break;
                            }
                            merged = Some(match merged {
                                None => s,
                                Some(mut m) => {
                                    if s.code == Code::UnschedulableAndUnresolvable {
                                        m.code = s.code;
                                    }
                                    m.reasons.extend(s.reasons);
                                    m
                                }
                            });
                        }
                    }
                    match merged {
                        None => true,
                        Some(s) => {
                            self.failed.push((ni, s));
                            false
                        }
                    }
                });
            } else if let Some(fast) = combined_fast {
                // One pass: nodes passing every filter's fast check are feasible; the others run
                // the filters in order, per node, and record the first failure.
                let hot = snapshot.hot();
                self.chunk.retain(|&ni| {
                    if fast.passes(&hot[ni as usize]) {
                        return true;
                    }
                    for &fi in &active {
                        let f = &fwk.filters[fi];
                        let s = f.filter(&self.state, pod, &nodes[ni as usize]);
                        if !s.is_success() {
                            self.failed.push((ni, s.with_plugin(f.name())));
                            return false;
                        }
                    }
                    true
                });
            } else {
                for &fi in &active {
                    fwk.filters[fi].filter_nodes(
                        &self.state,
                        pod,
                        snapshot,
                        &mut self.chunk,
                        &mut self.failed,
                    );
                    if self.chunk.is_empty() {
                        break;
                    }
                }
            }
            let need = to_find - self.candidates.len();
            if self.chunk.len() >= need {
                // Stop at the `to_find`-th feasible node: drop what lies beyond it.
                let last = self.chunk[need - 1];
                let pos_last = (0..take)
                    .position(|k| order[(start + processed + k) % n] == last)
                    .unwrap_or(take - 1);
                self.chunk.truncate(need);
                let beyond: Vec<u32> = (pos_last + 1..take)
                    .map(|k| order[(start + processed + k) % n])
                    .collect();
                self.failed.retain(|(ni, _)| !beyond.contains(ni));
                processed += pos_last + 1;
                self.candidates.extend_from_slice(&self.chunk);
                break;
            }
            self.candidates.extend_from_slice(&self.chunk);
            processed += take;
            // An Error status aborts the attempt (below); upstream cancels the search as soon as
            // one is sent, so do not filter the remaining nodes.
            if self.failed[failed_from..]
                .iter()
                .any(|(_, s)| s.code == Code::Error)
            {
                break;
            }
        }
        // Feasible nodes are in search order (the filters preserve order within a chunk).
        self.next_start_node_index = (start + processed) % n;
        self.active = active;
        // An Error status from a Filter aborts the attempt (v1.22 `RunFilterPlugins` returns it
        // as `running %q filter plugin: %w`, `findNodesThatPassFilters` as the cycle's error);
        // only failures are scanned.
        let filter_error = self.failed.iter().find(|(_, s)| s.code == Code::Error);
        self.timings.filter = Some((
            filter_start.elapsed(),
            if filter_error.is_some() {
                Code::Error
            } else {
                Code::Success
            },
        ));
        if let Some((_, s)) = filter_error {
            return Err(ScheduleError::ExtensionPoint {
                plugin: s.plugin.into(),
                message: format!("running {:?} filter plugin: {}", s.plugin, s.message()),
            });
        }

        // findNodesThatPassExtenders: only when an extender filters for this pod. Statuses are
        // then kept by node name, as extenders report nodes by name.
        let mut statuses: Option<BTreeMap<String, Status>> = None;
        if !self.candidates.is_empty()
            && self
                .extenders
                .iter()
                .any(|e| e.is_filter() && e.is_interested(pod))
        {
            let mut by_name: BTreeMap<String, Status> = self
                .failed
                .drain(..)
                .map(|(ni, s)| (nodes[ni as usize].name.clone(), s))
                .collect();
            let mut feasible = std::mem::take(&mut self.candidates);
            let r = extender::find_nodes_that_pass_extenders(
                &self.extenders,
                pod,
                snapshot,
                &mut feasible,
                &mut by_name,
            );
            self.candidates = feasible;
            if let Err((extender, e)) = r {
                return Err(ScheduleError::Extender {
                    extender,
                    message: e.message,
                });
            }
            statuses = Some(by_name);
        }
        let num_failed = statuses.as_ref().map_or(self.failed.len(), |m| m.len());

        let diagnosis = explain.then(|| match &statuses {
            Some(m) => m
                .iter()
                .map(|(n, s)| (n.clone(), s.reasons.iter().map(|r| r.to_string()).collect()))
                .collect::<BTreeMap<String, Vec<String>>>(),
            None => self
                .failed
                .iter()
                .map(|(ni, s)| {
                    (
                        nodes[*ni as usize].name.clone(),
                        s.reasons.iter().map(|r| r.to_string()).collect(),
                    )
                })
                .collect::<BTreeMap<String, Vec<String>>>(),
        });

        if self.candidates.is_empty() {
            let node_to_status = match statuses {
                Some(m) => m,
                None => self
                    .failed
                    .drain(..)
                    .map(|(ni, s)| (nodes[ni as usize].name.clone(), s))
                    .collect(),
            };
            return Err(ScheduleError::Fit(FitError {
                pod: pod.key(),
                num_all_nodes: n,
                node_to_status,
            }));
        }

        let score_start = std::time::Instant::now();
        let feasible = std::mem::take(&mut self.candidates);
        self.pre_score_duration = std::time::Duration::ZERO;
        self.pre_score_failed = false;
        self.extender_score_duration = std::time::Duration::ZERO;
        let result = self.prioritize_and_select(fwk, snapshot, pod, &feasible, explain);
        if feasible.len() > 1 {
            let pre_score = self.pre_score_duration;
            let score = score_start
                .elapsed()
                .saturating_sub(pre_score + self.extender_score_duration);
            let code = |ok: bool| if ok { Code::Success } else { Code::Error };
            self.timings.pre_score = Some((pre_score, code(!self.pre_score_failed)));
            if !self.pre_score_failed {
                self.timings.score = Some((score, code(result.is_ok())));
            }
        }
        self.candidates = feasible;
        let (chosen, scores) = result?;
        let node = &nodes[chosen as usize];
        // The devices follow the scorer that chooses them (FGD), else the default best fit.
        let gpu_indexes = fwk
            .scores
            .iter()
            .find_map(|ws| ws.plugin.gpu_indexes(&self.state, pod, snapshot, node))
            .or_else(|| node.pick_gpus(pod.gpu))
            .unwrap_or_default();
        let mut reservations = Vec::new();
        for &fi in &self.active {
            let f = &fwk.filters[fi];
            match f.reserve(&self.state, pod, node) {
                Ok(Some(r)) => reservations.push(r),
                Ok(None) => {}
                Err(s) => {
                    // v1.22 RunReservePluginsReserve: `running Reserve plugin %q: %w`.
                    return Err(ScheduleError::ExtensionPoint {
                        plugin: f.name().into(),
                        message: format!("running Reserve plugin {:?}: {}", f.name(), s.message()),
                    });
                }
            }
        }
        Ok(ScheduleResult {
            node: node.name.clone(),
            node_index: chosen,
            evaluated_nodes: num_failed + self.candidates.len(),
            feasible_nodes: self.candidates.len(),
            gpu_indexes,
            scores,
            diagnosis,
            reservations,
        })
    }

    #[allow(clippy::type_complexity)]
    fn prioritize_and_select(
        &mut self,
        fwk: &Framework,
        snapshot: &Snapshot,
        pod: &PodInfo,
        feasible: &[u32],
        explain: bool,
    ) -> Result<(u32, Option<BTreeMap<String, ScoreBreakdown>>), ScheduleError> {
        if feasible.len() == 1 && !explain {
            return Ok((feasible[0], None));
        }
        let nodes = snapshot.nodes();
        let m = feasible.len();
        self.totals.clear();
        let mut per_plugin: Vec<Vec<i64>> = Vec::new();
        let mut uniform_total = 0i64;
        if fwk.scores.is_empty() {
            // "If no priority configs are provided, then all nodes will have a score of one."
            // (v1.22: only when no extender is configured either; else the plugin part is 0.)
            self.totals
                .resize(m, if self.extenders.is_empty() { 1 } else { 0 });
        } else {
            self.totals.resize(m, 0);
            let mut fused: Vec<(HotScorer, i64)> = Vec::new();
            for ws in &fwk.scores {
                let p = &ws.plugin;
                let plugin_err = |s: Status| ScheduleError::Plugin {
                    plugin: p.name().into(),
                    message: s.message(),
                };
                let pre_score_start = std::time::Instant::now();
                let mode = p.pre_score(&mut self.state, pod, snapshot, feasible);
                self.pre_score_duration += pre_score_start.elapsed();
                self.pre_score_failed = mode.is_err();
                let mode = mode.map_err(plugin_err)?;
                self.plugin_scores.clear();
                match mode {
                    ScoreMode::Uniform(v) => {
                        if !(MIN_NODE_SCORE..=MAX_NODE_SCORE).contains(&v) {
                            return Err(invalid_score(p.name(), v));
                        }
                        // The same for every node: it cannot change the choice, so it is added
                        // to the reported totals only.
                        uniform_total += v * ws.weight;
                        if explain {
                            per_plugin.push(vec![v; m]);
                        }
                        continue;
                    }
                    ScoreMode::PerNode if !explain && p.hot_scorer().is_some() => {
                        if let Some(h) = p.hot_scorer() {
                            fused.push((h, ws.weight));
                        }
                        continue;
                    }
                    ScoreMode::PerNode => {
                        self.plugin_scores.resize(m, 0);
                        p.score_nodes(
                            &self.state,
                            pod,
                            snapshot,
                            feasible,
                            &mut self.plugin_scores,
                        )
                        .map_err(plugin_err)?;
                        p.normalize_score(
                            &self.state,
                            pod,
                            snapshot,
                            feasible,
                            &mut self.plugin_scores,
                        )
                        .map_err(plugin_err)?;
                    }
                }
                if let Some(&bad) = self
                    .plugin_scores
                    .iter()
                    .find(|s| !(MIN_NODE_SCORE..=MAX_NODE_SCORE).contains(*s))
                {
                    return Err(invalid_score(p.name(), bad));
                }
                let w = ws.weight;
                for (t, &s) in self.totals.iter_mut().zip(&self.plugin_scores) {
                    *t += s * w;
                }
                if explain {
                    per_plugin.push(self.plugin_scores.clone());
                }
            }
            if !fused.is_empty() {
                // The resource scorers in one pass: each node's hot row is read once.
                let hot = snapshot.hot();
                let (cpu, mem) = (pod.score_milli_cpu, pod.score_memory);
                let t = &mut self.totals;
                match fused.as_slice() {
                    // The DefaultProvider and the sample policy pair: one read of each row.
                    [
                        (HotScorer::LeastAllocated, wl),
                        (HotScorer::BalancedAllocation, wb),
                    ]
                    | [
                        (HotScorer::BalancedAllocation, wb),
                        (HotScorer::LeastAllocated, wl),
                    ] => {
                        let (wl, wb) = (*wl, *wb);
                        add_weighted(t, feasible, hot, cpu, mem, 1, |p| {
                            wl * HotScorer::LeastAllocated.score(p)
                                + wb * HotScorer::BalancedAllocation.score(p)
                        })
                    }
                    _ => {
                        for &(scorer, w) in &fused {
                            // One specialised loop per scorer, adding straight into the totals.
                            match scorer {
                                HotScorer::LeastAllocated => {
                                    add_weighted(t, feasible, hot, cpu, mem, w, |p| {
                                        HotScorer::LeastAllocated.score(p)
                                    })
                                }
                                HotScorer::MostAllocated => {
                                    add_weighted(t, feasible, hot, cpu, mem, w, |p| {
                                        HotScorer::MostAllocated.score(p)
                                    })
                                }
                                HotScorer::BalancedAllocation => {
                                    add_weighted(t, feasible, hot, cpu, mem, w, |p| {
                                        HotScorer::BalancedAllocation.score(p)
                                    })
                                }
                            }
                        }
                    }
                }
            }
        }

        // The extenders' part of prioritizeNodes: Σ score × weight, scaled to the plugins'
        // 0..=100 range (× MAX_NODE_SCORE / MAX_EXTENDER_PRIORITY = 10). Go's int64 arithmetic
        // wraps; so does this.
        let mut extender_explain: Vec<(String, Vec<i64>)> = Vec::new();
        if m > 1 && !self.extenders.is_empty() {
            let input: Vec<&NodeInfo> = feasible.iter().map(|&i| &nodes[i as usize]).collect();
            let scale = MAX_NODE_SCORE / MAX_EXTENDER_PRIORITY;
            let extenders_start = std::time::Instant::now();
            let scored = extender::prioritize_with_extenders(&self.extenders, pod, &input);
            self.extender_score_duration = extenders_start.elapsed();
            if !scored.is_empty() && uniform_total != 0 {
                // Unbounded extender scores can wrap: the uniform plugin part, left out of the
                // totals above because a constant cannot change the order, must be in them now
                // for the wrapped sums (and so the choice) to be Go's.
                for t in self.totals.iter_mut() {
                    *t = t.wrapping_add(uniform_total);
                }
                uniform_total = 0;
            }
            for es in scored {
                for (t, &sc) in self.totals.iter_mut().zip(&es.scores) {
                    *t = t.wrapping_add(sc.wrapping_mul(es.weight).wrapping_mul(scale));
                }
                if explain {
                    extender_explain.push((
                        format!("Extender({})", es.extender),
                        es.scores.iter().map(|s| s.wrapping_mul(scale)).collect(),
                    ));
                }
            }
        }

        let chosen = if feasible.len() == 1 {
            feasible[0]
        } else {
            // selectHost: a uniform choice among the nodes with the top total. Upstream does
            // it by reservoir sampling (one random draw per tie); drawing once the rank among
            // the ties gives the same distribution for a fraction of the cost.
            let mut max = i64::MIN;
            let mut ties = 0usize;
            for &t in &self.totals {
                if t > max {
                    max = t;
                    ties = 1;
                } else if t == max {
                    ties += 1;
                }
            }
            let best = if ties > 1 && self.tie_break == TieBreak::NodeName {
                self.totals
                    .iter()
                    .enumerate()
                    .filter(|(_, t)| **t == max)
                    .min_by(|(a, _), (b, _)| {
                        nodes[feasible[*a] as usize]
                            .name
                            .cmp(&nodes[feasible[*b] as usize].name)
                    })
                    .map_or(0, |(j, _)| j)
            } else {
                let pick = if ties > 1 {
                    self.rng.random_range(0..ties)
                } else {
                    0
                };
                self.totals
                    .iter()
                    .enumerate()
                    .filter(|(_, t)| **t == max)
                    .nth(pick)
                    .map_or(0, |(j, _)| j)
            };
            feasible[best]
        };

        let scores = explain.then(|| {
            feasible
                .iter()
                .enumerate()
                .map(|(j, &ni)| {
                    (
                        nodes[ni as usize].name.clone(),
                        ScoreBreakdown {
                            total: self.totals[j].wrapping_add(uniform_total),
                            plugins: fwk
                                .scores
                                .iter()
                                .zip(&per_plugin)
                                .map(|(ws, v)| (ws.display_name.clone(), v[j]))
                                .chain(
                                    extender_explain
                                        .iter()
                                        .map(|(name, v)| (name.clone(), v[j])),
                                )
                                .collect(),
                        },
                    )
                })
                .collect()
        });
        Ok((chosen, scores))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Arc;

    use super::*;
    use crate::framework::plugins::testutil::{node, pod, snapshot};

    /// Absurd quantities saturate instead of wrapping: the pod fits nowhere, no panic.
    #[test]
    fn huge_requests_do_not_overflow() {
        let fwk = Framework::from_policy(&crate::policy::default_provider()).unwrap();
        let snap = snapshot(
            vec![node("n1").allocatable(&[("cpu", "4"), ("memory", "8Gi"), ("pods", "110")])],
            &[pod("r").container(&[("memory", "1Gi")]).node("n1")],
        );
        let mut algo = Algorithm::new(100, 1);
        for p in [
            pod("a")
                .container(&[("memory", "5E")])
                .container(&[("memory", "5E")]),
            pod("b").container(&[("memory", "9223372036854775807")]),
        ] {
            let p = p.info();
            match algo.schedule(&fwk, &snap, &p, false) {
                Err(ScheduleError::Fit(fe)) => assert_eq!(
                    fe.to_string(),
                    "0/1 nodes are available: 1 Insufficient memory."
                ),
                other => panic!("{other:?}"),
            }
        }
    }

    /// v1.22 `NewFramework`: Σ weight × 100 must fit in an int64.
    #[test]
    fn weights_that_could_overflow_are_refused() {
        let policy = crate::policy::parse_policy(
            "inline",
            r#"{"kind":"Policy","apiVersion":"v1","priorities":[
                {"name":"LeastRequestedPriority","weight":900000000000000000}]}"#,
        )
        .unwrap()
        .resolved;
        assert!(matches!(
            Framework::from_policy(&policy),
            Err(crate::framework::FrameworkError::TotalScoreOverflow)
        ));
    }

    /// TestFairEvaluationForNodes (generic_scheduler_test.go, v1.22): with 500 feasible nodes
    /// and percentageOfNodesToScore 30, every cycle finds exactly numFeasibleNodesToFind nodes
    /// and the start index advances by that much, wrapping around, so every node gets its turn.
    #[test]
    fn fair_evaluation_for_nodes() {
        let nodes: Vec<_> = (0..500)
            .map(|i| node(&i.to_string()).allocatable(&[("pods", "110")]))
            .collect();
        let snap = snapshot(nodes, &[]);
        let policy = crate::policy::parse_policy(
            "inline",
            r#"{"kind":"Policy","apiVersion":"v1","predicates":[{"name":"PodFitsResources"}],"priorities":[]}"#,
        )
        .unwrap()
        .resolved;
        let fwk = Framework::from_policy(&policy).unwrap();
        let mut algo = Algorithm::new(30, 1);
        let to_find = num_feasible_nodes_to_find(30, 500);
        assert_eq!(to_find, 150);
        let p = pod("p").info();
        for i in 0..2 * (500 / to_find + 1) {
            let r = algo.schedule(&fwk, &snap, &p, false).unwrap();
            assert_eq!(r.feasible_nodes, to_find);
            assert_eq!(
                algo.next_start_node_index,
                (i + 1) * to_find % 500,
                "cycle {i}"
            );
        }
    }

    /// The search stops at the numFeasibleNodesToFind-th feasible node, whatever the chunking:
    /// nodes after it are neither counted as processed nor reported in the diagnosis.
    #[test]
    fn search_stops_at_the_last_needed_feasible_node() {
        let nodes: Vec<_> = (0..200)
            .map(|i| {
                let n = node(&format!("n{i:03}")).allocatable(&[("pods", "110")]);
                if i >= 100 { n.unschedulable() } else { n }
            })
            .collect();
        let snap = snapshot(nodes, &[]);
        let fwk = Framework::from_policy(&crate::policy::default_provider()).unwrap();
        let mut algo = Algorithm::new(0, 1);
        let p = pod("p").info();
        let r = algo.schedule(&fwk, &snap, &p, true).unwrap();
        assert_eq!(r.feasible_nodes, 100);
        assert_eq!(r.diagnosis.unwrap().len(), 0);
        assert_eq!(algo.next_start_node_index, 100);
        let r = algo.schedule(&fwk, &snap, &p, true).unwrap();
        // From n100: 100 cordoned nodes, then n000..n099.
        assert_eq!(r.feasible_nodes, 100);
        assert_eq!(r.diagnosis.unwrap().len(), 100);
        // processed = 100 failed + 100 feasible, from 100: (100 + 200) % 200.
        assert_eq!(algo.next_start_node_index, 100);
    }

    /// Differential test of the combined FastCheck pass: on nodes with taints, cordons,
    /// overcommitted resources and full pod slots, the feasible set and every failed node's
    /// reasons equal running each policy filter's `filter` on each node in order.
    #[test]
    fn fast_checks_agree_with_the_per_node_filters() {
        let fwk = Framework::from_policy(&crate::policy::default_provider()).unwrap();
        let mut x: u64 = 99;
        let mut rnd = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        let mut nodes = Vec::new();
        let mut running = Vec::new();
        for i in 0..120 {
            let name = format!("n{i}");
            let pods_cap = (1 + rnd(3)).to_string();
            let mut n = node(&name).allocatable(&[
                ("cpu", if rnd(2) == 0 { "2" } else { "4" }),
                ("memory", if rnd(2) == 0 { "4Gi" } else { "8Gi" }),
                ("pods", &pods_cap),
                ("ephemeral-storage", "10Gi"),
            ]);
            match rnd(6) {
                0 => n = n.unschedulable(),
                1 => n = n.taint("dedicated", "gpu", "NoSchedule"),
                2 => n = n.taint("soft", "x", "PreferNoSchedule"),
                _ => {}
            }
            nodes.push(n);
            for k in 0..rnd(3) {
                // Running pods may overcommit (they were bound by someone else).
                let cpu = format!("{}m", 500 + rnd(2000));
                let eph = if rnd(5) == 0 { "20Gi" } else { "1Gi" };
                running.push(
                    pod(&format!("r{i}-{k}"))
                        .container(&[("cpu", &cpu), ("memory", "1Gi"), ("ephemeral-storage", eph)])
                        .node(&name),
                );
            }
        }
        let snap = snapshot(nodes, &running);
        let mut algo = Algorithm::new(100, 5);
        for k in 0..60 {
            let cpu = format!("{}m", rnd(3000));
            let mut p = pod(&format!("p{k}")).container(&[("cpu", &cpu), ("memory", "1Gi")]);
            if rnd(3) == 0 {
                p = p.toleration("dedicated", "Equal", "gpu", "NoSchedule");
            }
            if rnd(4) == 0 {
                p = p.toleration(
                    "node.kubernetes.io/unschedulable",
                    "Exists",
                    "",
                    "NoSchedule",
                );
            }
            let p = p.info();
            let mut state = CycleState::new();
            let mut expected_failed = BTreeMap::new();
            for ni in snap.nodes() {
                for f in &fwk.filters {
                    if f.pre_filter(&mut state, &p, &snap).is_skip() {
                        continue;
                    }
                    let st = f.filter(&state, &p, ni);
                    if !st.is_success() {
                        let reasons: Vec<String> =
                            st.reasons.iter().map(|r| r.to_string()).collect();
                        expected_failed.insert(ni.name.clone(), reasons);
                        break;
                    }
                }
            }
            match algo.schedule(&fwk, &snap, &p, true) {
                Ok(r) => {
                    assert_eq!(r.diagnosis.unwrap(), expected_failed, "pod {k}");
                    assert_eq!(
                        r.feasible_nodes,
                        snap.len() - expected_failed.len(),
                        "pod {k}"
                    );
                }
                Err(ScheduleError::Fit(fe)) => {
                    let got: BTreeMap<String, Vec<String>> = fe
                        .node_to_status
                        .iter()
                        .map(|(n, s)| {
                            (n.clone(), s.reasons.iter().map(|r| r.to_string()).collect())
                        })
                        .collect();
                    assert_eq!(got, expected_failed, "pod {k}");
                    assert_eq!(expected_failed.len(), snap.len());
                }
                Err(e) => panic!("pod {k}: {e}"),
            }
        }
    }

    /// The fused, memoised resource scoring (no `explain`) picks exactly the node that the
    /// per-plugin path (`explain`) picks, on a heterogeneous cluster where many nodes share a
    /// state and many do not, pod after pod.
    #[test]
    fn fused_scoring_matches_the_per_plugin_path() {
        let policy = crate::policy::parse_policy(
            "inline",
            r#"{"kind":"Policy","apiVersion":"v1","predicates":[{"name":"PodFitsResources"}],
               "priorities":[{"name":"LeastRequestedPriority","weight":2},
                             {"name":"BalancedResourceAllocation","weight":3},
                             {"name":"MostRequestedPriority","weight":1}]}"#,
        )
        .unwrap()
        .resolved;
        let fwk = Framework::from_policy(&policy).unwrap();
        let mut x: u64 = 7;
        let mut rnd = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        let sizes = [("2", "4Gi"), ("4", "16Gi"), ("8", "32Gi"), ("16", "64Gi")];
        let nodes: Vec<_> = (0..300)
            .map(|i| {
                let (c, m) = sizes[(rnd(4)) as usize];
                node(&format!("n{i}")).allocatable(&[("cpu", c), ("memory", m), ("pods", "110")])
            })
            .collect();
        let mut snap = snapshot(nodes, &[]);
        let mut fused = Algorithm::new(100, 42);
        let mut reference = Algorithm::new(100, 42);
        for k in 0..400 {
            let cpu = format!("{}m", 50 + rnd(900));
            let mem = format!("{}Mi", 64 + rnd(2000));
            let p = if k % 5 == 0 {
                pod(&format!("p{k}")).container(&[])
            } else {
                pod(&format!("p{k}")).container(&[("cpu", &cpu), ("memory", &mem)])
            }
            .info();
            let a = fused.schedule(&fwk, &snap, &p, false);
            let b = reference.schedule(&fwk, &snap, &p, true);
            match (a, b) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(a.node, b.node, "pod {k}");
                    let scores = b.scores.unwrap();
                    let best = scores.values().map(|s| s.total).max().unwrap();
                    assert_eq!(scores[&a.node].total, best, "pod {k}");
                    snap.add_pod(std::sync::Arc::new(p), Some(&a.node), None)
                        .unwrap();
                }
                (Err(a), Err(b)) => assert_eq!(a, b),
                (a, b) => panic!("pod {k}: {a:?} vs {b:?}"),
            }
        }
    }
    use crate::framework::plugins::{NodePorts, NodeResourcesFit, node_ports};

    /// Upstream `kubernetes/kubernetes` `pkg/scheduler/core/generic_scheduler_test.go`,
    /// `TestNumFeasibleNodesToFind` (v1.22: `g.numFeasibleNodesToFind(numAllNodes)` on a
    /// `genericScheduler{percentageOfNodesToScore}`). Table read from index id 10260167 (a post-1.24
    /// `schedule_one_test.go`-style copy) and identical in older copies (ids 53190816046,
    /// 8381068759, 1288678901, 55511566435). The names say "50" but the threshold is
    /// `minFeasibleNodesToFind` = 100.
    #[test]
    fn test_num_feasible_nodes_to_find() {
        struct Case {
            name: &'static str,
            percentage_of_nodes_to_score: i32,
            num_all_nodes: usize,
            want_num_nodes: usize,
        }
        let cases = vec![
            Case {
                name: "not set percentageOfNodesToScore and nodes number not more than 50",
                percentage_of_nodes_to_score: DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE,
                num_all_nodes: 10,
                want_num_nodes: 10,
            },
            Case {
                name: "set percentageOfNodesToScore and nodes number not more than 50",
                percentage_of_nodes_to_score: 40,
                num_all_nodes: 10,
                want_num_nodes: 10,
            },
            Case {
                // 50 - 1000/125 = 42% of 1000.
                name: "not set percentageOfNodesToScore and nodes number more than 50",
                percentage_of_nodes_to_score: 0,
                num_all_nodes: 1000,
                want_num_nodes: 420,
            },
            Case {
                name: "set percentageOfNodesToScore and nodes number more than 50",
                percentage_of_nodes_to_score: 40,
                num_all_nodes: 1000,
                want_num_nodes: 400,
            },
            Case {
                // 50 - 6000/125 = 2%, clamped to 5% of 6000.
                name: "not set percentageOfNodesToScore and nodes number more than 50*125",
                percentage_of_nodes_to_score: 0,
                num_all_nodes: 6000,
                want_num_nodes: 300,
            },
            Case {
                name: "set percentageOfNodesToScore and nodes number more than 50*125",
                percentage_of_nodes_to_score: 40,
                num_all_nodes: 6000,
                want_num_nodes: 2400,
            },
        ];
        for c in cases {
            assert_eq!(
                num_feasible_nodes_to_find(c.percentage_of_nodes_to_score, c.num_all_nodes),
                c.want_num_nodes,
                "{}",
                c.name
            );
        }
    }

    fn fit_error(num_all_nodes: usize, statuses: &[(&str, Status)]) -> FitError {
        FitError {
            pod: "default/p".into(),
            num_all_nodes,
            node_to_status: statuses
                .iter()
                .map(|(n, s)| (n.to_string(), s.clone()))
                .collect(),
        }
    }

    fn unschedulable(reasons: &[&'static str]) -> Status {
        Status {
            code: Code::Unschedulable,
            reasons: reasons.iter().map(|r| (*r).into()).collect(),
            plugin: "",
        }
    }

    fn schedule_err(fwk: &Framework, snap: &Snapshot, p: &PodInfo) -> FitError {
        match Algorithm::new(0, 1).schedule(fwk, snap, p, false) {
            Err(ScheduleError::Fit(e)) => e,
            other => panic!("expected a FitError, got {other:?}"),
        }
    }

    /// The `FitError.Error()` message (`0/%v nodes are available: %v.`, reasons counted per
    /// node status and sorted as whole `"COUNT REASON"` strings) as v1.22 builds it, from
    /// `generic-scheduler.md` (format read from v1.19–v1.21 `core.FitError` and post-1.22
    /// `framework.FitError`; the post-1.22 `PostFilterMsg` suffix is not part of v1.22). Cases:
    /// - `scheduler_test.go` `TestSchedulerFailedSchedulingReasons` (v1.22 era; 100 nodes with
    ///   cpu 2 / memory 100 / pods 10, pod asking cpu 4 / memory 500; the node count was recalled
    ///   in the note, not re-verified): every node fails NodeResourcesFit with both reasons, and
    ///   the message stays within 150 characters;
    /// - `TestSchedulerNoPhantomPodAfterDelete` (v1.22 shape): one node, NodePorts conflict;
    /// - `makePredicateError` format (`"0/1 nodes are available: %v."`) with the VolumeBinding
    ///   reason of `TestSchedulerWithVolumeBinding` (format only);
    /// - derived from the `Error()` source, not an upstream row: lexicographic order of the
    ///   `"COUNT REASON"` strings, one count per reason of multi-reason statuses, and
    ///   `NumAllNodes` counting every node, not only the failed ones;
    /// - `ErrNoNodesAvailable` text.
    #[test]
    fn test_fit_error_message() {
        // TestSchedulerFailedSchedulingReasons.
        let nodes: Vec<_> = (0..100)
            .map(|i| {
                let r = [("cpu", "2"), ("memory", "100"), ("pods", "10")];
                node(&format!("machine{i}")).capacity(&r).allocatable(&r)
            })
            .collect();
        let snap = snapshot(nodes, &[]);
        let fwk = Framework {
            filters: vec![Box::new(NodeResourcesFit::default())],
            scores: vec![],
            run_all_filters: false,
        };
        let p = pod("p")
            .container(&[("cpu", "4"), ("memory", "500")])
            .info();
        let err = schedule_err(&fwk, &snap, &p);
        assert_eq!(err.num_all_nodes, 100);
        assert_eq!(err.node_to_status.len(), 100);
        for (n, s) in &err.node_to_status {
            assert_eq!(s.code, Code::Unschedulable, "{n}");
            assert_eq!(
                s.reasons,
                ["Insufficient cpu", "Insufficient memory"],
                "{n}"
            );
            assert_eq!(s.plugin, "NodeResourcesFit", "{n}");
        }
        let msg = err.to_string();
        assert_eq!(
            msg,
            "0/100 nodes are available: 100 Insufficient cpu, 100 Insufficient memory."
        );
        assert!(
            msg.len() <= 150,
            "message is too spammy: {} chars",
            msg.len()
        );

        // TestSchedulerNoPhantomPodAfterDelete: the port is taken by a pod on the only node.
        let mut snap = snapshot(vec![node("machine1")], &[]);
        let existing = pod("existing")
            .node("machine1")
            .host_port("", "TCP", 8080)
            .info();
        snap.add_pod(Arc::new(existing), None, None).unwrap();
        let fwk = Framework {
            filters: vec![Box::new(NodePorts)],
            scores: vec![],
            run_all_filters: false,
        };
        let p = pod("p").host_port("", "TCP", 8080).info();
        let err = schedule_err(&fwk, &snap, &p);
        assert_eq!(err.node_to_status["machine1"].plugin, node_ports::NAME);
        assert_eq!(
            err.to_string(),
            "0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports."
        );

        // makePredicateError(failReason) format.
        let err = fit_error(
            1,
            &[(
                "machine1",
                unschedulable(&["node(s) had volume node affinity conflict"]),
            )],
        );
        assert_eq!(
            err.to_string(),
            "0/1 nodes are available: 1 node(s) had volume node affinity conflict."
        );

        // Derived from FitError.Error(): "10 ..." sorts before "2 ..." and "9 ..."; a node with
        // two reasons counts once for each; NumAllNodes is every node (25), not the 21 failed.
        let mut statuses = Vec::new();
        for i in 0..10 {
            statuses.push((format!("mem{i}"), unschedulable(&["Insufficient memory"])));
        }
        for i in 0..2 {
            statuses.push((
                format!("both{i}"),
                unschedulable(&["Insufficient cpu", "Insufficient memory"]),
            ));
        }
        for i in 0..9 {
            statuses.push((
                format!("affinity{i}"),
                Status::new(
                    Code::UnschedulableAndUnresolvable,
                    "node(s) didn't match Pod's node affinity/selector",
                ),
            ));
        }
        let statuses: Vec<(&str, Status)> = statuses
            .iter()
            .map(|(n, s)| (n.as_str(), s.clone()))
            .collect();
        assert_eq!(
            fit_error(25, &statuses).to_string(),
            "0/25 nodes are available: 12 Insufficient memory, 2 Insufficient cpu, \
             9 node(s) didn't match Pod's node affinity/selector."
        );

        // ErrNoNodesAvailable.
        assert_eq!(
            ScheduleError::NoNodesAvailable.to_string(),
            "no nodes available to schedule pods"
        );
    }

    mod extenders {
        use std::sync::atomic::Ordering;

        use super::*;
        use crate::extender::fake::{
            FakeExtender, error_predicate, error_prioritizer, false_predicate, node1_prioritizer,
            node2_prioritizer, only_node_predicate, true_predicate,
        };
        use crate::framework::runtime::WeightedScore;
        use crate::framework::{ScorePlugin, plugins::testutil::snapshot as snap_of};

        /// Upstream `node2PrioritizerPlugin` (`pkg/scheduler/testing/fake_extender.go`): 100 for
        /// `node2`, 10 for the others.
        struct Node2Prioritizer;

        impl ScorePlugin for Node2Prioritizer {
            fn name(&self) -> &'static str {
                "Node2Prioritizer"
            }
            fn score(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
                Ok(if node.name == "node2" { 100 } else { 10 })
            }
        }

        /// The `TrueFilter` profile (no filter rejects anything), with `Node2Prioritizer` at
        /// `weight` when given.
        fn framework(node2_prioritizer_weight: Option<i64>) -> Framework {
            Framework {
                filters: vec![],
                scores: node2_prioritizer_weight
                    .map(|weight| WeightedScore {
                        plugin: Box::new(Node2Prioritizer) as Box<dyn ScorePlugin>,
                        weight,
                        display_name: "Node2Prioritizer".into(),
                    })
                    .into_iter()
                    .collect(),
                run_all_filters: false,
            }
        }

        fn arcs(v: Vec<FakeExtender>) -> Vec<Arc<dyn Extender>> {
            v.into_iter()
                .map(|e| Arc::new(e) as Arc<dyn Extender>)
                .collect()
        }

        fn with_prioritizer(
            e: FakeExtender,
            f: crate::extender::fake::PriorityFunc,
            prioritizer_weight: i64,
            weight: i64,
        ) -> FakeExtender {
            FakeExtender {
                prioritizers: vec![(f, prioritizer_weight)],
                weight,
                ..e
            }
        }

        /// Upstream `pkg/scheduler/core/extender_test.go` `TestGenericSchedulerWithExtenders`
        /// (kubernetes/kubernetes @013f1ae12049b9f51053cd3fa16ae2c1af60057d, v1.21/v1.22: the
        /// extenders are passed to `Schedule`), case names kept: `SuggestedHost`,
        /// `EvaluatedNodes`, `FeasibleNodes`, or an error.
        #[test]
        fn test_generic_scheduler_with_extenders() {
            struct Case {
                name: &'static str,
                node2_prioritizer: Option<i64>,
                extenders: Vec<FakeExtender>,
                nodes: Vec<&'static str>,
                expected: Option<(&'static str, usize, usize)>,
            }
            let p = |preds| FakeExtender::with_predicates(preds);
            let cases = vec![
                Case {
                    name: "test 1",
                    node2_prioritizer: None,
                    extenders: vec![p(vec![true_predicate()]), p(vec![error_predicate()])],
                    nodes: vec!["node1", "node2"],
                    expected: None,
                },
                Case {
                    name: "test 2",
                    node2_prioritizer: None,
                    extenders: vec![p(vec![true_predicate()]), p(vec![false_predicate()])],
                    nodes: vec!["node1", "node2"],
                    expected: None,
                },
                Case {
                    name: "test 3",
                    node2_prioritizer: None,
                    extenders: vec![
                        p(vec![true_predicate()]),
                        p(vec![only_node_predicate("node1")]),
                    ],
                    nodes: vec!["node1", "node2"],
                    expected: Some(("node1", 2, 1)),
                },
                Case {
                    name: "test 4",
                    node2_prioritizer: None,
                    extenders: vec![
                        p(vec![only_node_predicate("node2")]),
                        p(vec![only_node_predicate("node1")]),
                    ],
                    nodes: vec!["node1", "node2"],
                    expected: None,
                },
                Case {
                    name: "test 5",
                    node2_prioritizer: None,
                    extenders: vec![with_prioritizer(
                        p(vec![true_predicate()]),
                        error_prioritizer,
                        10,
                        1,
                    )],
                    nodes: vec!["node1"],
                    expected: Some(("node1", 1, 1)),
                },
                Case {
                    name: "test 6",
                    node2_prioritizer: None,
                    extenders: vec![
                        with_prioritizer(p(vec![true_predicate()]), node1_prioritizer, 10, 1),
                        with_prioritizer(p(vec![true_predicate()]), node2_prioritizer, 10, 5),
                    ],
                    nodes: vec!["node1", "node2"],
                    expected: Some(("node2", 2, 2)),
                },
                Case {
                    // node2 has higher score
                    name: "test 7",
                    node2_prioritizer: Some(20),
                    extenders: vec![with_prioritizer(
                        p(vec![true_predicate()]),
                        node1_prioritizer,
                        10,
                        1,
                    )],
                    nodes: vec!["node1", "node2"],
                    expected: Some(("node2", 2, 2)),
                },
                Case {
                    // The scheduler must not send the pod to an uninterested extender: its
                    // errors would fail the test.
                    name: "test 8",
                    node2_prioritizer: Some(1),
                    extenders: vec![FakeExtender {
                        un_interested: true,
                        ..with_prioritizer(p(vec![error_predicate()]), error_prioritizer, 10, 0)
                    }],
                    nodes: vec!["node1", "node2"],
                    expected: Some(("node2", 2, 2)),
                },
                Case {
                    // Not failing in Filter/Prioritize when the extender errs and is ignorable.
                    name: "test 9",
                    node2_prioritizer: None,
                    extenders: vec![
                        FakeExtender {
                            ignorable: true,
                            ..p(vec![error_predicate()])
                        },
                        p(vec![only_node_predicate("node1")]),
                    ],
                    nodes: vec!["node1", "node2"],
                    expected: Some(("node1", 2, 1)),
                },
            ];
            for c in cases {
                let fwk = framework(c.node2_prioritizer);
                let snap = snap_of(c.nodes.iter().map(|n| node(n)).collect(), &[]);
                let mut algo = Algorithm::new(DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE, 1);
                algo.set_extenders(arcs(c.extenders));
                let r = algo.schedule(&fwk, &snap, &pod("ignored").info(), false);
                match (c.expected, r) {
                    (None, Err(_)) => {}
                    (Some((host, evaluated, feasible)), Ok(r)) => {
                        assert_eq!(
                            (r.node.as_str(), r.evaluated_nodes, r.feasible_nodes),
                            (host, evaluated, feasible),
                            "{}",
                            c.name
                        );
                    }
                    (want, got) => panic!("{}: want {want:?}, got {got:?}", c.name),
                }
            }
        }

        /// The errors and FitError texts of the failing cases above: an extender's filter error
        /// is passed on as is; nodes it filters out carry its messages in the FitError, counted
        /// and sorted as `FitError.Error()` does.
        #[test]
        fn extender_failures_in_fit_error_text() {
            let fwk = framework(None);
            let snap = snap_of(vec![node("node1"), node("node2")], &[]);
            let run = |extenders: Vec<FakeExtender>| {
                let mut algo = Algorithm::new(0, 1);
                algo.set_extenders(arcs(extenders));
                algo.schedule(&fwk, &snap, &pod("p").info(), true)
            };
            // test 1: ErrorPredicateExtender.
            let e = run(vec![
                FakeExtender::with_predicates(vec![true_predicate()]),
                FakeExtender {
                    name: "http://ext".into(),
                    ..FakeExtender::with_predicates(vec![error_predicate()])
                },
            ])
            .unwrap_err();
            assert_eq!(
                e,
                ScheduleError::Extender {
                    extender: "http://ext".into(),
                    message: "some error".into()
                }
            );
            assert_eq!(e.to_string(), "some error");
            // test 4: each node rejected by one of the two extenders.
            let ScheduleError::Fit(fe) = run(vec![
                FakeExtender::with_predicates(vec![only_node_predicate("node2")]),
                FakeExtender::with_predicates(vec![only_node_predicate("node1")]),
            ])
            .unwrap_err() else {
                panic!("expected a FitError")
            };
            assert_eq!(
                fe.to_string(),
                "0/2 nodes are available: 1 FakeExtender: node \"node1\" failed, \
                 1 FakeExtender: node \"node2\" failed."
            );
            // Plugin and extender reasons together: one node fails a filter plugin, the other
            // the extender (FailedAndUnresolvable).
            let fwk = Framework {
                filters: vec![Box::new(crate::framework::plugins::NodeUnschedulable)],
                scores: vec![],
                run_all_filters: false,
            };
            let snap = snap_of(vec![node("node1").unschedulable(), node("node2")], &[]);
            let unresolvable: crate::extender::fake::FitPredicate =
                Box::new(|_, _| Status::new(Code::UnschedulableAndUnresolvable, "never"));
            let mut algo = Algorithm::new(0, 1);
            algo.set_extenders(arcs(vec![FakeExtender::with_predicates(vec![
                unresolvable,
            ])]));
            let ScheduleError::Fit(fe) = algo
                .schedule(&fwk, &snap, &pod("p").info(), false)
                .unwrap_err()
            else {
                panic!("expected a FitError")
            };
            assert_eq!(
                fe.to_string(),
                "0/2 nodes are available: 1 FakeExtender: node \"node2\" failed and unresolvable, \
                 1 node(s) were unschedulable."
            );
            assert_eq!(
                fe.node_to_status["node2"].code,
                Code::UnschedulableAndUnresolvable
            );
            assert_eq!(fe.node_to_status["node1"].plugin, "NodeUnschedulable");
        }

        /// prioritizeNodes arithmetic, read from the explanation: plugin total + Σ extender
        /// score × extender weight × 10 (test 7's numbers: Node2Prioritizer weight 20 gives 200 /
        /// 2000; the extender's prioritizer (weight 10) gives node1 10 × 10 = 100 and node2
        /// 1 × 10 = 10, times extender weight 1, times 10).
        #[test]
        fn extender_scores_are_weighted_and_scaled() {
            let fwk = framework(Some(20));
            let snap = snap_of(vec![node("node1"), node("node2")], &[]);
            let mut algo = Algorithm::new(0, 1);
            algo.set_extenders(arcs(vec![FakeExtender {
                name: "ext".into(),
                ..with_prioritizer(
                    FakeExtender::with_predicates(vec![true_predicate()]),
                    node1_prioritizer,
                    10,
                    1,
                )
            }]));
            let r = algo.schedule(&fwk, &snap, &pod("p").info(), true).unwrap();
            let scores = r.scores.unwrap();
            assert_eq!(scores["node1"].total, 200 + 1000);
            assert_eq!(scores["node2"].total, 2000 + 100);
            assert_eq!(
                scores["node1"].plugins,
                [
                    ("Node2Prioritizer".to_string(), 10),
                    ("Extender(ext)".to_string(), 1000)
                ]
            );
            assert_eq!(r.node, "node2");

            // No score plugin: the plugin part is 0 when an extender is configured (upstream
            // gives every node 1 only when there are neither score plugins nor extenders).
            let fwk = framework(None);
            let mut algo = Algorithm::new(0, 1);
            algo.set_extenders(arcs(vec![with_prioritizer(
                FakeExtender::with_predicates(vec![true_predicate()]),
                node1_prioritizer,
                1,
                3,
            )]));
            let scores = algo
                .schedule(&fwk, &snap, &pod("p").info(), true)
                .unwrap()
                .scores
                .unwrap();
            assert_eq!(scores["node1"].total, 10 * 3 * 10);
            assert_eq!(scores["node2"].total, 3 * 10);
            let mut algo = Algorithm::new(0, 1);
            let scores = algo
                .schedule(&fwk, &snap, &pod("p").info(), true)
                .unwrap()
                .scores
                .unwrap();
            assert_eq!(scores["node1"].total, 1);
        }

        /// A plugin whose PreScore gives every node the same score.
        struct Uniform50;

        impl ScorePlugin for Uniform50 {
            fn name(&self) -> &'static str {
                "Uniform50"
            }
            fn pre_score(
                &self,
                _: &mut CycleState,
                _: &PodInfo,
                _: &Snapshot,
                _: &[u32],
            ) -> Result<ScoreMode, Status> {
                Ok(ScoreMode::Uniform(50))
            }
            fn score(&self, _: &CycleState, _: &PodInfo, _: &NodeInfo) -> Result<i64, Status> {
                Ok(50)
            }
        }

        /// An extender score near `i64::MAX / 10`: after × 10 the node total is close to
        /// `i64::MAX`. Extender answers are not range-checked (as upstream).
        fn huge_for_node1(_: &PodInfo, nodes: &[&NodeInfo]) -> Result<Vec<(String, i64)>, String> {
            Ok(nodes
                .iter()
                .map(|n| {
                    let s = if n.name == "node1" { i64::MAX / 10 } else { 1 };
                    (n.name.clone(), s)
                })
                .collect())
        }

        /// Out-of-range extender scores wrap like Go's int64 arithmetic, in the reported totals
        /// too: no overflow panic when a uniform plugin score is added for the explanation.
        #[test]
        fn huge_extender_scores_wrap_in_explained_totals() {
            let fwk = Framework {
                filters: vec![],
                scores: vec![WeightedScore {
                    plugin: Box::new(Uniform50) as Box<dyn ScorePlugin>,
                    weight: 1,
                    display_name: "Uniform50".into(),
                }],
                run_all_filters: false,
            };
            let snap = snap_of(vec![node("node1"), node("node2")], &[]);
            let mut algo = Algorithm::new(0, 1);
            algo.set_extenders(arcs(vec![with_prioritizer(
                FakeExtender::with_predicates(vec![true_predicate()]),
                huge_for_node1,
                1,
                1,
            )]));
            let r = algo.schedule(&fwk, &snap, &pod("p").info(), true).unwrap();
            let scores = r.scores.unwrap();
            assert_eq!(
                scores["node1"].total,
                (i64::MAX / 10).wrapping_mul(10).wrapping_add(50)
            );
            assert_eq!(scores["node2"].total, 10 + 50);
            assert_eq!(r.node, "node2", "the wrapped total is negative");
        }

        /// A single feasible node is chosen without asking extenders to score (test 5 has an
        /// erroring prioritizer; here the call count shows it is not called at all), and a pod
        /// no extender is interested in costs no call.
        #[test]
        fn single_feasible_node_and_uninterested_pods_make_no_calls() {
            let fwk = framework(None);
            let snap = snap_of(vec![node("node1"), node("node2")], &[]);
            let ext = Arc::new(with_prioritizer(
                FakeExtender::with_predicates(vec![only_node_predicate("node1")]),
                node1_prioritizer,
                1,
                1,
            ));
            let mut algo = Algorithm::new(0, 1);
            algo.set_extenders(vec![ext.clone()]);
            let r = algo.schedule(&fwk, &snap, &pod("p").info(), true).unwrap();
            assert_eq!(r.node, "node1");
            assert_eq!(ext.calls.load(Ordering::SeqCst), 1, "filter only");

            let quiet = Arc::new(FakeExtender {
                un_interested: true,
                ..FakeExtender::with_predicates(vec![error_predicate()])
            });
            let mut algo = Algorithm::new(0, 1);
            algo.set_extenders(vec![quiet.clone()]);
            algo.schedule(&fwk, &snap, &pod("p").info(), false).unwrap();
            assert_eq!(quiet.calls.load(Ordering::SeqCst), 0);
        }

        /// `ignoredByScheduler` managed resources are not checked by NodeResourcesFit (v1.22
        /// `factory.go` passes them as `NodeResourcesFitArgs.IgnoredResources`); the others are.
        #[test]
        fn ignored_by_scheduler_resources_skip_node_resources_fit() {
            let policy = |ignored: bool| {
                crate::policy::parse_policy(
                    "inline",
                    &format!(
                        r#"{{"kind":"Policy","apiVersion":"v1","predicates":[{{"name":"PodFitsResources"}}],
                           "priorities":[],"extenders":[{{"urlPrefix":"http://127.0.0.1:1","filterVerb":"filter",
                           "managedResources":[{{"name":"example.com/foo","ignoredByScheduler":{ignored}}}]}}]}}"#
                    ),
                )
                .unwrap()
                .resolved
            };
            let snap = snap_of(
                vec![node("n1").allocatable(&[("cpu", "4"), ("memory", "8Gi"), ("pods", "10")])],
                &[],
            );
            let p = pod("p")
                .container(&[("cpu", "1"), ("example.com/foo", "2")])
                .info();
            let fwk = Framework::from_policy(&policy(true)).unwrap();
            let r = Algorithm::new(0, 1)
                .schedule(&fwk, &snap, &p, false)
                .unwrap();
            assert_eq!(r.node, "n1");
            let fwk = Framework::from_policy(&policy(false)).unwrap();
            let e = Algorithm::new(0, 1)
                .schedule(&fwk, &snap, &p, false)
                .unwrap_err();
            assert_eq!(
                e.to_string(),
                "0/1 nodes are available: 1 Insufficient example.com/foo."
            );
        }

        /// An extender whose `urlPrefix` Go's HTTP client cannot send to (v1.22's
        /// compatibility_test.go `"/prefix"`): accepted; its failing call is skipped when it is
        /// ignorable, and otherwise fails the pod with Go's error, as v1.22's
        /// `findNodesThatPassExtenders` does.
        #[test]
        fn extender_without_a_scheme_is_skipped_when_ignorable_else_fails_the_pod() {
            let policy = |ignorable: bool| {
                crate::policy::parse_policy(
                    "inline",
                    &format!(
                        r#"{{"kind":"Policy","apiVersion":"v1","predicates":[{{"name":"PodFitsResources"}}],
                           "priorities":[],"extenders":[{{"urlPrefix":"/prefix","filterVerb":"filter",
                           "ignorable":{ignorable}}}]}}"#
                    ),
                )
                .unwrap()
                .resolved
            };
            let snap = snap_of(
                vec![node("n1").allocatable(&[("cpu", "4"), ("memory", "8Gi"), ("pods", "10")])],
                &[],
            );
            let p = pod("p").container(&[("cpu", "1")]).info();
            let run = |ignorable: bool| {
                let resolved = policy(ignorable);
                let fwk = Framework::from_policy(&resolved).unwrap();
                let mut algo = Algorithm::new(0, 1);
                algo.set_extenders(crate::extender::build_extenders(&resolved.extenders).unwrap());
                algo.schedule(&fwk, &snap, &p, false)
            };
            assert_eq!(run(true).unwrap().node, "n1");
            let e = run(false).unwrap_err();
            assert!(matches!(e, ScheduleError::Extender { .. }), "{e:?}");
            assert_eq!(
                e.to_string(),
                r#"Post "/prefix/filter": unsupported protocol scheme """#
            );
        }
    }

    /// Filters that fail by node name, for the Error-status tests below.
    struct ByName {
        name: &'static str,
        code: Code,
        nodes: &'static [&'static str],
        calls: Arc<std::sync::atomic::AtomicUsize>,
    }

    impl ByName {
        fn boxed(
            name: &'static str,
            code: Code,
            nodes: &'static [&'static str],
        ) -> Box<dyn crate::framework::FilterPlugin> {
            ByName::counted(name, code, nodes, Default::default())
        }

        fn counted(
            name: &'static str,
            code: Code,
            nodes: &'static [&'static str],
            calls: Arc<std::sync::atomic::AtomicUsize>,
        ) -> Box<dyn crate::framework::FilterPlugin> {
            Box::new(ByName {
                name,
                code,
                nodes,
                calls,
            })
        }
    }

    impl crate::framework::FilterPlugin for ByName {
        fn name(&self) -> &'static str {
            self.name
        }

        fn filter(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> Status {
            self.calls
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if self.nodes.contains(&node.name.as_str()) {
                Status::new(self.code, format!("{} says no", self.name))
            } else {
                Status::success()
            }
        }
    }

    fn framework_of(
        filters: Vec<Box<dyn crate::framework::FilterPlugin>>,
        run_all_filters: bool,
    ) -> Framework {
        Framework {
            filters,
            scores: Vec::new(),
            run_all_filters,
        }
    }

    /// v1.22 `RunFilterPlugins` returns a filter's Error status at once, wrapped as `running
    /// %q filter plugin: %w`, also with `alwaysCheckAllPredicates` (runAllFilters) and after
    /// another filter found the node unschedulable: the attempt fails with that error. (Before
    /// the fix the merged status kept the Unschedulable code and the error was lost.)
    #[test]
    fn filter_error_aborts_the_attempt_even_when_running_all_filters() {
        let snap = snapshot(vec![node("n1"), node("n2")], &[]);
        let p = pod("p").info();
        for run_all in [false, true] {
            let fwk = framework_of(
                vec![
                    ByName::boxed("First", Code::Unschedulable, &["n1"]),
                    ByName::boxed("Broken", Code::Error, &["n1"]),
                ],
                run_all,
            );
            let r = Algorithm::new(100, 1).schedule(&fwk, &snap, &p, false);
            if run_all {
                match r {
                    Err(e @ ScheduleError::ExtensionPoint { .. }) => assert_eq!(
                        e.to_string(),
                        "running \"Broken\" filter plugin: Broken says no"
                    ),
                    other => panic!("{other:?}"),
                }
            } else {
                // Without runAllFilters the Unschedulable filter stops n1 first: n2 fits.
                assert_eq!(r.unwrap().node, "n2");
            }
        }
    }

    /// An Error on any node aborts the attempt even when other nodes fit, and the search stops
    /// there (upstream cancels the parallel search once an error is sent) instead of filtering
    /// the remaining nodes.
    #[test]
    fn filter_error_on_a_later_node_aborts_and_stops_the_search() {
        let names: Vec<String> = (0..600).map(|i| format!("n{i:03}")).collect();
        let snap = snapshot(names.iter().map(|n| node(n)).collect(), &[]);
        let p = pod("p").info();
        let calls: Arc<std::sync::atomic::AtomicUsize> = Default::default();
        let fwk = framework_of(
            vec![ByName::counted(
                "Broken",
                Code::Error,
                &["n010"],
                calls.clone(),
            )],
            false,
        );
        let mut algo = Algorithm::new(100, 1);
        let e = algo.schedule(&fwk, &snap, &p, false).unwrap_err();
        assert_eq!(
            e.to_string(),
            "running \"Broken\" filter plugin: Broken says no"
        );
        // The first chunk (256 nodes) was filtered, not all 600.
        assert_eq!(calls.load(std::sync::atomic::Ordering::Relaxed), 256);
        assert_eq!(algo.next_start_node_index, 256);
    }

    /// v1.22 `RunPreFilterPlugins` wraps an Error status as `running PreFilter plugin %q: %w`.
    #[test]
    fn prefilter_error_text() {
        struct Broken;
        impl crate::framework::FilterPlugin for Broken {
            fn name(&self) -> &'static str {
                "VolumeBinding"
            }
            fn pre_filter(&self, _: &mut CycleState, _: &PodInfo, _: &Snapshot) -> Status {
                Status::error("error getting PVC \"default/c\": could not find it")
            }
            fn filter(&self, _: &CycleState, _: &PodInfo, _: &NodeInfo) -> Status {
                Status::success()
            }
        }
        let snap = snapshot(vec![node("n1")], &[]);
        let fwk = framework_of(vec![Box::new(Broken)], false);
        let mut algo = Algorithm::new(100, 1);
        let e = algo
            .schedule(&fwk, &snap, &pod("p").info(), false)
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "running PreFilter plugin \"VolumeBinding\": error getting PVC \"default/c\": could not find it"
        );
        // RunPreFilterPlugins observes its duration with the Error code; nothing else ran.
        assert_eq!(
            codes(algo.last_timings()),
            [Some(Code::Error), None, None, None]
        );
    }

    fn codes(t: &CycleTimings) -> [Option<Code>; 4] {
        [t.pre_filter, t.filter, t.pre_score, t.score].map(|x| x.map(|(_, c)| c))
    }

    /// The extension points each outcome reaches, as v1.22 observes them
    /// (`scheduler_framework_extension_point_duration_seconds`): RunPreFilterPlugins,
    /// findNodesThatPassFilters (Success unless a filter errs: nodes that do not fit are no
    /// error), RunPreScorePlugins and RunScorePlugins (not run for a single feasible node).
    #[test]
    fn cycle_timings_cover_the_points_the_cycle_reached() {
        use Code::{Error, Success, UnschedulableAndUnresolvable};
        let fwk = Framework::from_policy(&crate::policy::default_provider()).unwrap();
        let big =
            |n: &str| node(n).allocatable(&[("cpu", "4"), ("memory", "8Gi"), ("pods", "110")]);
        let small = pod("a").container(&[("cpu", "1")]).info();
        let mut algo = Algorithm::new(100, 1);

        let two = snapshot(vec![big("n1"), big("n2")], &[]);
        algo.schedule(&fwk, &two, &small, false).unwrap();
        assert_eq!(codes(algo.last_timings()), [Some(Success); 4]);

        let one = snapshot(vec![big("n1")], &[]);
        algo.schedule(&fwk, &one, &small, false).unwrap();
        assert_eq!(
            codes(algo.last_timings()),
            [Some(Success), Some(Success), None, None]
        );

        let huge = pod("h").container(&[("cpu", "100")]).info();
        assert!(matches!(
            algo.schedule(&fwk, &two, &huge, false),
            Err(ScheduleError::Fit(_))
        ));
        assert_eq!(
            codes(algo.last_timings()),
            [Some(Success), Some(Success), None, None]
        );

        let empty = snapshot(vec![], &[]);
        assert!(matches!(
            algo.schedule(&fwk, &empty, &small, false),
            Err(ScheduleError::NoNodesAvailable)
        ));
        assert_eq!(codes(algo.last_timings()), [None; 4]);

        // A PreFilter that rejects the pod ends PreFilter with its code.
        struct Rejects;
        impl crate::framework::FilterPlugin for Rejects {
            fn name(&self) -> &'static str {
                "Rejects"
            }
            fn pre_filter(&self, _: &mut CycleState, _: &PodInfo, _: &Snapshot) -> Status {
                Status::new(UnschedulableAndUnresolvable, "never")
            }
            fn filter(&self, _: &CycleState, _: &PodInfo, _: &NodeInfo) -> Status {
                Status::success()
            }
        }
        let rejecting = framework_of(vec![Box::new(Rejects)], false);
        assert!(algo.schedule(&rejecting, &two, &small, false).is_err());
        assert_eq!(
            codes(algo.last_timings()),
            [Some(UnschedulableAndUnresolvable), None, None, None]
        );

        // A filter Error: Filter ends with Error.
        let broken = framework_of(vec![ByName::boxed("Broken", Error, &["n1"])], false);
        assert!(algo.schedule(&broken, &two, &small, false).is_err());
        assert_eq!(
            codes(algo.last_timings()),
            [Some(Success), Some(Error), None, None]
        );
    }
}
