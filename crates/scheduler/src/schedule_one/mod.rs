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
//!
//! The parts, in the order a cycle runs them: `find_feasible` (PreFilter, the filters' search
//! and the filtering extenders), `prioritize` (the score plugins and the scoring extenders),
//! `select_host`, and `error` ([`FitError`] and its message). [`Algorithm::schedule`] runs them
//! and then the filters' Reserve.

mod error;
mod find_feasible;
mod prioritize;
mod select_host;
#[cfg(test)]
mod testutil;
mod workers;

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::SeedableRng;
use rand::rngs::StdRng;

pub use error::{FitError, NodeStatuses, ScheduleError};
pub use find_feasible::{
    DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND,
    MIN_FEASIBLE_NODES_TO_FIND, num_feasible_nodes_to_find,
};
pub use select_host::node_order_key;
pub use workers::DEFAULT_PARALLELISM;

use crate::extender::Extender;
use crate::framework::{
    Code, CycleState, Framework, NoNominatedPods, NominatedPods, ScoreBreakdown,
};
use crate::model::PodInfo;
use crate::snapshot::Snapshot;
use find_feasible::{Filters, Search};
use prioritize::Scoring;
use workers::Workers;

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

#[cfg(test)]
impl ScheduleResult {
    /// A test's cycle decision: `node` (snapshot index 0), one node examined and feasible, no
    /// GPU devices, no explain data, nothing reserved.
    pub(crate) fn on_node(node: &str) -> ScheduleResult {
        ScheduleResult {
            node: node.into(),
            node_index: 0,
            evaluated_nodes: 1,
            feasible_nodes: 1,
            gpu_indexes: Vec::new(),
            scores: None,
            diagnosis: None,
            reservations: Vec::new(),
        }
    }
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

/// How `selectHost` chooses among the nodes with the top total score.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TieBreak {
    /// Uniformly at random with the seeded RNG, as kube-scheduler does.
    #[default]
    Random,
    /// The node with the lowest name.
    NodeName,
    /// The first node of a pseudo-random order of the node names fixed by this seed
    /// ([`select_host::node_order_key`]): a first-fit over a shuffled node list, as the FGD
    /// paper's simulator does (it prefixes every node name with a seeded random rank and then
    /// takes the lowest name).
    NodeOrder(u64),
}

/// Scheduling algorithm state kept across cycles: the configuration, the RNG that breaks ties,
/// the rotating start index, and reusable buffers.
pub struct Algorithm {
    /// `percentageOfNodesToScore` (0 = adaptive, 100 = all).
    pub percentage_of_nodes_to_score: i32,
    rng: StdRng,
    tie_break: TieBreak,
    next_start_node_index: usize,
    search: Search,
    scoring: Scoring,
    timings: CycleTimings,
    /// The filters PreFilter kept for this cycle, by index.
    active: Vec<usize>,
    /// The profile's cpu/memory scorers with their weights, in framework order, that the
    /// search computes on the nodes it finds feasible (empty when explaining).
    hot: Vec<(crate::framework::HotScorer, i64)>,
    /// Compute the cpu/memory scores in the search (off only in tests of the unfused path).
    fuse: bool,
    state: CycleState,
    extenders: Vec<Arc<dyn Extender>>,
    /// The workers that filter and score (one until [`Algorithm::set_parallelism`]).
    workers: Workers,
}

impl Algorithm {
    /// A new algorithm with a seeded tie-breaking RNG.
    pub fn new(percentage_of_nodes_to_score: i32, seed: u64) -> Algorithm {
        Algorithm {
            percentage_of_nodes_to_score,
            rng: StdRng::seed_from_u64(seed),
            tie_break: TieBreak::Random,
            next_start_node_index: 0,
            search: Search::default(),
            scoring: Scoring::default(),
            timings: CycleTimings::default(),
            active: Vec::new(),
            hot: Vec::new(),
            fuse: true,
            state: CycleState::new(),
            extenders: Vec::new(),
            workers: Workers::default(),
        }
    }

    /// `parallelism` (`--parallelism`, `KubeSchedulerConfiguration.parallelism`, default
    /// [`DEFAULT_PARALLELISM`]): how many workers filter and score the nodes of a cycle, at most
    /// the cores the process may use run at once; 1 (or 0) runs everything on the calling
    /// thread. Results are the same for any value: the workers compute per node, and their
    /// results are taken in node order.
    pub fn set_parallelism(&mut self, parallelism: usize) {
        self.workers = Workers::new(parallelism);
    }

    /// Exactly `count` workers, even beyond the cores (tests of the determinism).
    #[cfg(test)]
    pub(crate) fn set_workers_exactly(&mut self, count: usize) {
        self.workers = Workers::with_count(count);
    }

    /// Whether the search computes the cpu/memory scores (tests of the unfused path).
    #[cfg(test)]
    pub(crate) fn set_fused(&mut self, fuse: bool) {
        self.fuse = fuse;
    }

    /// Workers that filter and score at once.
    pub fn workers(&self) -> usize {
        self.workers.count()
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
    /// [`crate::extender::build_extenders`]: non-ignorable first). Upstream passes them to `Schedule`
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
        self.schedule_with_nominated(fwk, snapshot, pod, explain, &NoNominatedPods)
    }

    /// [`Self::schedule`] with the pods nominated to nodes by preemption (the queue's
    /// nominator): on a node with nominated pods of priority ≥ the pod's, the pod must fit
    /// with and without them (`RunFilterPluginsWithNominatedPods`). A pod with a
    /// `status.nominatedNodeName` tries that node first and takes it if it passes the filters
    /// and the extenders (`PreferNominatedNode`, beta and on in v1.22).
    ///
    /// # Errors
    /// As [`Self::schedule`].
    pub fn schedule_with_nominated(
        &mut self,
        fwk: &Framework,
        snapshot: &Snapshot,
        pod: &PodInfo,
        explain: bool,
        nominated: &dyn NominatedPods,
    ) -> Result<ScheduleResult, ScheduleError> {
        let r = self.schedule_cycle(fwk, snapshot, pod, explain, nominated);
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
        nominated: &dyn NominatedPods,
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

        let pre_filter = find_feasible::run_pre_filter_plugins(
            fwk,
            &mut self.state,
            pod,
            snapshot,
            &mut self.active,
        );
        let pre_filter_code = pre_filter.as_ref().err().map_or(Code::Success, |(c, _)| *c);
        self.timings.pre_filter = Some((cycle_start.elapsed(), pre_filter_code));
        pre_filter.map_err(|(_, e)| e)?;

        let filter_start = std::time::Instant::now();
        let to_find = num_feasible_nodes_to_find(self.percentage_of_nodes_to_score, n);
        let start = self.next_start_node_index % n;
        self.hot.clear();
        if self.fuse && !explain {
            self.hot.extend(
                fwk.scores
                    .iter()
                    .filter_map(|ws| ws.plugin.hot_scorer().map(|h| (h, ws.weight))),
            );
        }
        let filters = Filters {
            fwk,
            state: &self.state,
            pod,
            snapshot,
            active: &self.active,
            nominated,
            hot: &self.hot,
        };
        // PreferNominatedNode: the node preemption nominated is tried alone first.
        let preferred = self
            .search
            .evaluate_nominated_node(&filters, &self.extenders);
        if !preferred {
            let processed =
                self.search
                    .find_nodes_that_pass_filters(&filters, to_find, start, &self.workers);
            // Feasible nodes are in search order (the filters preserve order within a chunk).
            self.next_start_node_index = (start + processed) % n;
        }
        let filter_error = self.search.filter_error();
        let filter_code = if filter_error.is_some() {
            Code::Error
        } else {
            Code::Success
        };
        self.timings.filter = Some((filter_start.elapsed(), filter_code));
        if let Some(e) = filter_error {
            return Err(e);
        }

        // The failures' statuses, when the cycle reports them.
        if explain || self.search.feasible.is_empty() || !self.extenders.is_empty() {
            self.search
                .materialize_statuses(fwk, &self.state, pod, snapshot);
        }
        // Statuses by node name when an extender filtered, else `search.failed` holds them.
        let statuses = if preferred {
            None
        } else {
            self.search
                .find_nodes_that_pass_extenders(&self.extenders, pod, snapshot)?
        };
        let num_failed = statuses
            .as_ref()
            .map_or(self.search.num_failed(), |m| m.len());

        let diagnosis = explain.then(|| match &statuses {
            Some(m) => m
                .iter()
                .map(|(n, s)| (n.clone(), s.reasons.iter().map(|r| r.to_string()).collect()))
                .collect::<BTreeMap<String, Vec<String>>>(),
            None => self
                .search
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

        if self.search.feasible.is_empty() {
            // The statuses move into the error as they are; names only when asked.
            let statuses = match statuses {
                Some(m) => NodeStatuses::Named(m),
                None => NodeStatuses::Indexed(std::mem::take(&mut self.search.failed)),
            };
            return Err(ScheduleError::Fit(FitError::new(pod.key(), n, statuses)));
        }

        let score_start = std::time::Instant::now();
        let feasible = std::mem::take(&mut self.search.feasible);
        let mut sums = std::mem::take(&mut self.search.totals);
        let searched = (self.search.scored && !preferred).then_some(&mut sums);
        self.scoring.reset_timings();
        let result = self.prioritize_and_select(fwk, snapshot, pod, &feasible, explain, searched);
        // (The buffer back; its contents may have moved into the scoring totals.)
        self.search.totals = sums;
        if feasible.len() > 1 {
            let pre_score = self.scoring.pre_score_duration;
            let score = score_start
                .elapsed()
                .saturating_sub(pre_score + self.scoring.extender_score_duration);
            let code = |ok: bool| if ok { Code::Success } else { Code::Error };
            self.timings.pre_score = Some((pre_score, code(!self.scoring.pre_score_failed)));
            if !self.scoring.pre_score_failed {
                self.timings.score = Some((score, code(result.is_ok())));
            }
        }
        let num_feasible = feasible.len();
        self.search.feasible = feasible;
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
            evaluated_nodes: num_failed + num_feasible,
            feasible_nodes: num_feasible,
            gpu_indexes,
            scores,
            diagnosis,
            reservations,
        })
    }

    /// `prioritizeNodes` and `selectHost` over the feasible nodes: a single feasible node is
    /// chosen without scoring unless the cycle explains its scores.
    #[allow(clippy::type_complexity)]
    fn prioritize_and_select(
        &mut self,
        fwk: &Framework,
        snapshot: &Snapshot,
        pod: &PodInfo,
        feasible: &[u32],
        explain: bool,
        searched: Option<&mut Vec<i64>>,
    ) -> Result<(u32, Option<BTreeMap<String, ScoreBreakdown>>), ScheduleError> {
        if feasible.len() == 1 && !explain {
            return Ok((feasible[0], None));
        }
        let explained = self.scoring.prioritize_nodes(
            fwk,
            &self.workers,
            &self.extenders,
            &mut self.state,
            pod,
            snapshot,
            feasible,
            explain,
            searched.map(|sums| (self.hot.as_slice(), sums)),
        )?;
        let chosen = if feasible.len() == 1 {
            feasible[0]
        } else {
            let totals = &self.scoring.totals;
            match self.tie_break {
                // The search's per-chunk tops when the totals are its sums.
                TieBreak::Random if self.scoring.totals_are_searched => {
                    feasible
                        [select_host::select_host_in_runs(totals, &self.search.tops, &mut self.rng)]
                }
                TieBreak::Random => feasible[select_host::select_host(totals, &mut self.rng)],
                TieBreak::NodeName => {
                    let nodes = snapshot.nodes();
                    feasible[select_host::select_host_by(totals, |a, b| {
                        nodes[feasible[a] as usize]
                            .name
                            .cmp(&nodes[feasible[b] as usize].name)
                    })]
                }
                TieBreak::NodeOrder(seed) => {
                    let nodes = snapshot.nodes();
                    feasible[select_host::select_host_by_key(totals, |j| {
                        let name = &nodes[feasible[j] as usize].name;
                        (select_host::node_order_key(seed, name), name.as_str())
                    })]
                }
            }
        };
        let scores =
            explain.then(|| explained.breakdowns(fwk, snapshot, feasible, &self.scoring.totals));
        Ok((chosen, scores))
    }
}

#[cfg(test)]
#[path = "differential_test.rs"]
mod differential_test;
#[cfg(test)]
#[path = "extenders_test.rs"]
mod extenders_test;
#[cfg(test)]
#[path = "parallel_test.rs"]
mod parallel_test;
#[cfg(test)]
#[path = "tests.rs"]
mod tests;
