//! Finding the nodes a pod fits on (v1.22 `findNodesThatFitPod`): the PreFilter plugins, the
//! filter plugins over the nodes in NodeTree order from a rotating start index until
//! `numFeasibleNodesToFind` nodes fit (`findNodesThatPassFilters`), then the filtering
//! extenders (`findNodesThatPassExtenders`).
//!
//! Nodes are filtered in chunks of [`CHUNK`], each chunk by one of three strategies that give the
//! same verdicts: [`filter_running_all`] (`alwaysCheckAllPredicates`: every filter on every node,
//! reasons merged), [`filter_with_fast_check`] (every active filter has a [`FastCheck`]: one
//! combined check decides most nodes, the others run the filters in order), and
//! [`filter_plugin_by_plugin`] (each filter's batch entry point over the whole chunk).
//!
//! Two things keep the search from doing per-node work nobody reads:
//!
//! - **Fused scoring.** When the profile has cpu/memory scorers ([`HotScorer`]), the worker
//!   that filters a chunk also computes their weighted sum on each node that fits, from the
//!   node columns it has just read ([`Search::totals`], in the order of
//!   [`Search::feasible`]); `prioritize` takes that part of the totals instead of a second
//!   pass over the feasible nodes when PreScore leaves the same scorers per node.
//! - **Deferred statuses.** On the fast-check path a node that fails is recorded by node and
//!   failing filter ([`FilterPlugin::filter_code`](crate::framework::FilterPlugin::filter_code):
//!   no reason text is built); [`Search::materialize_statuses`] builds the statuses, with the
//!   same `filter` calls, only when the cycle reports them (no node fits, `explain`, filtering
//!   extenders). `Error` statuses are recorded at once.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::error::{FitError, NodeStatuses, ScheduleError};
use super::select_host::Top;
use super::workers::{Claims, PartJob, Workers};
use crate::extender::{self, Extender};
use crate::framework::plugins::node_resources_columns::{ScoreInput, least_balanced};
use crate::framework::{Code, CycleState, FastCheck, Framework, HotScorer, NominatedPods, Status};
use crate::model::{NodeInfo, PodInfo};
use crate::snapshot::{NodeColumns, NodeHot, Snapshot};

/// Below this many nodes every node is searched (`minFeasibleNodesToFind`).
pub const MIN_FEASIBLE_NODES_TO_FIND: usize = 100;
/// Lower bound of the adaptive percentage (`minFeasibleNodesPercentageToFind`).
pub const MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND: i64 = 5;
/// `DefaultPercentageOfNodesToScore`: 0 means adaptive.
pub const DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE: i32 = 0;

/// Nodes filtered per step of the search; the search checks between steps whether it has found
/// enough nodes or hit an error.
const CHUNK: usize = 256;

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

/// `RunPreFilterPlugins`: fills `active` with the indices of the filters that run on the nodes
/// (a filter whose PreFilter returns `Skip` does not).
///
/// # Errors
/// With the status code PreFilter ended on: a PreFilter that finds the pod unschedulable gives
/// [`ScheduleError::Fit`] with its status for every node; one that fails gives
/// [`ScheduleError::ExtensionPoint`] (`running PreFilter plugin "X": ...`).
pub(super) fn run_pre_filter_plugins(
    fwk: &Framework,
    state: &mut CycleState,
    pod: &PodInfo,
    snapshot: &Snapshot,
    active: &mut Vec<usize>,
) -> Result<(), (Code, ScheduleError)> {
    active.clear();
    for (i, f) in fwk.filters.iter().enumerate() {
        let s = f.pre_filter(state, pod, snapshot);
        match s.code {
            Code::Success => active.push(i),
            Code::Skip => {}
            Code::Unschedulable | Code::UnschedulableAndUnresolvable => {
                let code = s.code;
                let s = s.with_plugin(f.name());
                let statuses = (0..snapshot.len() as u32).map(|i| (i, s.clone())).collect();
                let fit = FitError::new(pod.key(), snapshot.len(), NodeStatuses::Indexed(statuses));
                return Err((code, ScheduleError::Fit(fit)));
            }
            _ => {
                // v1.22 RunPreFilterPlugins: `running PreFilter plugin %q: %w`.
                let e = ScheduleError::ExtensionPoint {
                    plugin: f.name().into(),
                    message: format!("running PreFilter plugin {:?}: {}", f.name(), s.message()),
                };
                return Err((Code::Error, e));
            }
        }
    }
    Ok(())
}

/// The verdicts of one search, kept across cycles to reuse the buffers.
#[derive(Default)]
pub(super) struct Search {
    /// Nodes (snapshot indices) that passed every filter, in search order.
    pub(super) feasible: Vec<u32>,
    /// Nodes that failed, with the status (attributed to its plugin).
    pub(super) failed: Vec<(u32, Status)>,
    /// Nodes that failed whose status is not built yet: `(node, index of the failing filter in
    /// fwk.filters)`, its code Unschedulable or UnschedulableAndUnresolvable
    /// ([`Search::materialize_statuses`]).
    pub(super) deferred: Vec<(u32, u32)>,
    /// When [`Search::scored`]: per node of `feasible`, Σ weight × score of the cycle's
    /// cpu/memory scorers ([`Filters::hot`]).
    pub(super) totals: Vec<i64>,
    /// Whether the last search filled `totals`.
    pub(super) scored: bool,
    /// When [`Search::scored`]: the top of `totals` in each run of it that one chunk filled,
    /// in order (the running best of the chunks, for `selectHost`).
    pub(super) tops: Vec<Top>,
    /// Per active filter, its own fast check (the fast-check strategy: a node that fails the
    /// combined check skips the filters whose own check it passes).
    own: Vec<FastCheck>,
    /// The chunks of one round of the search, filtered by the workers.
    chunks: Vec<Chunk>,
    /// The column scan offered to the scan helpers ([`dense_round`]), reused across rounds.
    job: Arc<DenseJob>,
    /// Tests: the caller never waits for a helper's chunk (it scans again those not done).
    #[cfg(test)]
    pub(super) impatient: bool,
    /// Tests: rounds run by [`dense_round`].
    #[cfg(test)]
    pub(super) dense_rounds: usize,
}

/// One chunk of the search order: its nodes before filtering, then those that passed, and the
/// statuses of those that failed.
#[derive(Default)]
struct Chunk {
    /// Nodes of the order in the chunk.
    take: usize,
    nodes: Vec<u32>,
    failed: Vec<(u32, Status)>,
    /// As [`Search::deferred`].
    deferred: Vec<(u32, u32)>,
    /// As [`Search::totals`], per node of `nodes` once filtered (when scoring). Each strategy
    /// empties it before it fills it; the dense scan writes its sums in it and compacts them
    /// in place (the buffer keeps its length across cycles: no zeroing per chunk).
    totals: Vec<i64>,
    /// The top of `totals`.
    top: Top,
    /// The dense scan's per-node state ([`Dense::scan`]), scratch kept across cycles.
    state: Vec<u64>,
    /// [`compact_dense`]'s taint quick rejects not yet in `deferred`, scratch kept across
    /// cycles.
    rejected: Vec<u32>,
}

/// What the filters of one search need besides the nodes.
pub(super) struct Filters<'a> {
    pub(super) fwk: &'a Framework,
    pub(super) state: &'a CycleState,
    pub(super) pod: &'a PodInfo,
    pub(super) snapshot: &'a Snapshot,
    /// The filters PreFilter kept ([`run_pre_filter_plugins`]), by index in `fwk.filters`.
    pub(super) active: &'a [usize],
    /// The pods nominated to each node, counted by [`nominated_pods_check`].
    pub(super) nominated: &'a dyn NominatedPods,
    /// The cpu/memory scorers to compute on the nodes that fit, with their weights, in
    /// framework order; empty for none.
    pub(super) hot: &'a [(HotScorer, i64)],
}

/// The part of [`Filters`] the workers share (the nominated pods are checked by the caller).
#[derive(Clone, Copy)]
struct ChunkFilters<'a> {
    fwk: &'a Framework,
    state: &'a CycleState,
    pod: &'a PodInfo,
    snapshot: &'a Snapshot,
    active: &'a [usize],
    /// The fast-check strategy's own check of each active filter (same order as `active`).
    own: &'a [FastCheck],
    score: Fused<'a>,
}

/// The scorers a chunk computes on its nodes that fit.
#[derive(Clone, Copy)]
enum Fused<'a> {
    /// None: the search does not score.
    Off,
    /// LeastAllocated and BalancedAllocation with these weights (the sample policy's and the
    /// DefaultProvider's pair).
    LeastBalanced(i64, i64),
    /// Any other set.
    Any(&'a [(HotScorer, i64)]),
}

impl Fused<'_> {
    fn of(hot: &[(HotScorer, i64)]) -> Fused<'_> {
        match *hot {
            [] => Fused::Off,
            [
                (HotScorer::LeastAllocated, wl),
                (HotScorer::BalancedAllocation, wb),
            ]
            | [
                (HotScorer::BalancedAllocation, wb),
                (HotScorer::LeastAllocated, wl),
            ] => Fused::LeastBalanced(wl, wb),
            _ => Fused::Any(hot),
        }
    }

    /// Σ weight × score on node `i` (`ScoreInput`: exact, see `node_resources_columns`).
    #[inline(always)]
    fn total(self, cols: &crate::snapshot::NodeColumns, i: usize, cpu: i64, mem: i64) -> i64 {
        match self {
            Fused::Off => 0,
            Fused::LeastBalanced(wl, wb) => {
                let s = ScoreInput::at(cols, i, cpu, mem);
                wl * s.least_allocated() + wb * s.balanced_allocation()
            }
            Fused::Any(hot) => {
                let s = ScoreInput::at(cols, i, cpu, mem);
                hot.iter().map(|&(h, w)| w * s.score(h)).sum()
            }
        }
    }
}

impl Search {
    /// `findNodesThatPassFilters`: runs the active filters over the nodes in `snapshot.order()`
    /// rotated to `start`, until `to_find` nodes fit, every node was seen, or a filter returned
    /// an `Error` (the search stops after that chunk, as upstream cancels its parallel search).
    /// Returns how many nodes of the order were examined: the next start index advances by it.
    /// The `to_find`-th feasible node is the last one examined; nodes of its chunk beyond it
    /// are neither counted nor reported.
    ///
    /// The order is cut into chunks of [`CHUNK`] nodes; each round filters as many chunks as
    /// the nodes still to find need (at least one per worker) on the workers at once, then
    /// takes their verdicts chunk by chunk, in order, as a one-worker search would, and drops
    /// the chunks beyond the stop: the result is the same for any number of workers.
    pub(super) fn find_nodes_that_pass_filters(
        &mut self,
        filters: &Filters<'_>,
        to_find: usize,
        start: usize,
        workers: &Workers,
    ) -> usize {
        let Filters {
            fwk,
            state,
            pod,
            snapshot,
            active,
            hot,
            ..
        } = *filters;
        let n = snapshot.len();
        let order = snapshot.order();
        self.clear();
        // When every active filter has a fast check, the combined check decides most nodes.
        for &fi in active {
            match fwk.filters[fi].fast_check(pod) {
                Some(f) => self.own.push(f),
                None => break,
            }
        }
        // TaintToleration's check is the taints flag alone.
        let taint_only = FastCheck {
            forbidden_flags: NodeHot::FILTER_TAINTS,
            ..FastCheck::default()
        };
        // The flag would send each tainted node to the per-node filters, for TaintToleration
        // to pass it whenever the pod tolerates its taints (GPU nodes tainted for the GPU pods
        // that tolerate the taint: most nodes of such a cluster, and every pod that asks for a
        // GPU). So a pod that tolerates every NoSchedule/NoExecute taint the nodes carry has no
        // taint check (the plugin passes every node), and one that tolerates some has the
        // flags of the taint sets it does not tolerate whole instead
        // ([`Snapshot::untolerated_taint_flags`]). One that tolerates none keeps the flag, which
        // the dense scan rejects by itself.
        // (Decided once per cycle: the dense scan's quick reject below reads it too.)
        let tolerates_none =
            snapshot.has_filter_taints() && snapshot.tolerates_no_filter_taint(pod);
        if snapshot.has_filter_taints() && !tolerates_none {
            let check = if snapshot.tolerates_every_filter_taint(pod) {
                FastCheck::default()
            } else {
                FastCheck {
                    forbidden_flags: snapshot.untolerated_taint_flags(pod),
                    ..FastCheck::default()
                }
            };
            for (&fi, own) in active.iter().zip(self.own.iter_mut()) {
                if fwk.filters[fi].name() == crate::framework::plugins::taint_toleration::NAME
                    && *own == taint_only
                {
                    *own = check;
                }
            }
        }
        let combined_fast = (self.own.len() == active.len()).then(|| {
            self.own
                .iter()
                .fold(FastCheck::default(), |acc, f| acc.and(*f))
        });
        // The nominated pods' check drops nodes after the workers: then the search does not
        // score (prioritize computes the scores).
        self.scored = !hot.is_empty() && filters.nominated.is_empty();
        let score = if self.scored {
            Fused::of(hot)
        } else {
            Fused::Off
        };
        let strategy = if fwk.run_all_filters {
            Strategy::RunAll
        } else if let Some(fast) = combined_fast {
            // TaintToleration's check is the taints flag alone (unless relaxed above), and no
            // other filter's reads it.
            let mut taint = None;
            let mut others_read_taints = false;
            for (&fi, own) in active.iter().zip(&self.own) {
                if fwk.filters[fi].name() == crate::framework::plugins::taint_toleration::NAME
                    && *own == taint_only
                {
                    taint = Some(fi as u32);
                } else if own.forbidden_flags & NodeHot::FILTER_TAINTS != 0 {
                    others_read_taints = true;
                }
            }
            // (Without a tainted node there is nothing to reject: the scan keeps its plain
            // loop.)
            let taint_reject = taint.filter(|_| !others_read_taints && tolerates_none);
            match Dense::of(fast, score, pod, snapshot, taint_reject) {
                Some(d) => Strategy::Dense(d),
                None => Strategy::Fast(fast),
            }
        } else {
            Strategy::PluginByPlugin
        };
        let shared = ChunkFilters {
            fwk,
            state,
            pod,
            snapshot,
            active,
            own: &self.own,
            score,
        };
        let mut processed = 0usize;
        'search: while processed < n && self.feasible.len() < to_find {
            let need = to_find - self.feasible.len();
            let left = (n - processed).div_ceil(CHUNK);
            let round = if workers.count() == 1 {
                1
            } else {
                need.div_ceil(CHUNK).max(workers.count()).min(left)
            };
            if self.chunks.len() < round {
                self.chunks.resize_with(round, Chunk::default);
            }
            // The rotated order without a division per node: [start.., ..start].
            let mut from = start + processed;
            let mut rest = n - processed;
            for c in &mut self.chunks[..round] {
                let take = CHUNK.min(rest);
                c.take = take;
                c.nodes.clear();
                c.failed.clear();
                c.deferred.clear();
                let f = if from >= n { from - n } else { from };
                if f + take <= n {
                    c.nodes.extend_from_slice(&order[f..f + take]);
                } else {
                    c.nodes.extend_from_slice(&order[f..]);
                    c.nodes.extend_from_slice(&order[..f + take - n]);
                }
                from += take;
                rest -= take;
            }
            match strategy {
                Strategy::Dense(d) if round >= MIN_SHARED_ROUND && workers.count() > 1 => {
                    #[cfg(not(test))]
                    let impatient = false;
                    #[cfg(test)]
                    let impatient = {
                        self.dense_rounds += 1;
                        self.impatient
                    };
                    dense_round(
                        &mut self.job,
                        &mut self.chunks[..round],
                        d,
                        &shared,
                        workers,
                        impatient,
                    );
                }
                // Too few chunks to share: on the calling thread (no rayon wake and wait).
                Strategy::Dense(d) => {
                    for c in &mut self.chunks[..round] {
                        filter_dense(&shared, d, c);
                    }
                }
                _ => workers.run(&mut self.chunks[..round], |_, c| {
                    strategy.filter(&shared, c)
                }),
            }
            for c in &mut self.chunks[..round] {
                let take = c.take;
                if !filters.nominated.is_empty() {
                    nominated_pods_check(filters, &mut c.nodes, &mut c.failed);
                }
                let need = to_find - self.feasible.len();
                if c.nodes.len() >= need {
                    // Stop at the `to_find`-th feasible node: drop what lies beyond it.
                    let last = c.nodes[need - 1];
                    // Position `k` of the chunk is `order[base + k]`, wrapped (`base + k < 2n`).
                    let base = start + processed;
                    let at = |k: usize| {
                        let i = base + k;
                        order[if i >= n { i - n } else { i }]
                    };
                    // Every node of the chunk kept: the `need`-th is at `need - 1`.
                    let pos_last = if c.nodes.len() == take {
                        need - 1
                    } else {
                        (0..take).position(|k| at(k) == last).unwrap_or(take - 1)
                    };
                    c.nodes.truncate(need);
                    if self.scored {
                        c.totals.truncate(need);
                        c.top = Top::of_scores(&c.totals);
                    }
                    let beyond = |ni: u32| (pos_last + 1..take).any(|k| at(k) == ni);
                    self.failed
                        .extend(c.failed.drain(..).filter(|(ni, _)| !beyond(*ni)));
                    self.deferred
                        .extend(c.deferred.drain(..).filter(|(ni, _)| !beyond(*ni)));
                    processed += pos_last + 1;
                    self.feasible.extend_from_slice(&c.nodes);
                    Self::add_scores(self.scored, &mut self.totals, &mut self.tops, c);
                    break 'search;
                }
                self.feasible.extend_from_slice(&c.nodes);
                Self::add_scores(self.scored, &mut self.totals, &mut self.tops, c);
                processed += take;
                // An Error status aborts the attempt; upstream cancels the search as soon as one
                // is sent, so do not take the remaining nodes.
                let error = c.failed.iter().any(|(_, s)| s.code == Code::Error);
                self.failed.append(&mut c.failed);
                self.deferred.append(&mut c.deferred);
                if error {
                    break 'search;
                }
            }
        }
        debug_assert!(!self.scored || self.totals.len() == self.feasible.len());
        processed
    }

    /// The scores of chunk `c` into `totals` and `tops`, when the search scores.
    fn add_scores(scored: bool, totals: &mut Vec<i64>, tops: &mut Vec<Top>, c: &Chunk) {
        if scored {
            totals.extend_from_slice(&c.totals);
            tops.push(c.top);
        }
    }

    /// Empties the verdicts of the last search (the buffers stay).
    fn clear(&mut self) {
        self.feasible.clear();
        self.failed.clear();
        self.deferred.clear();
        self.totals.clear();
        self.tops.clear();
        self.scored = false;
        self.own.clear();
    }

    /// Number of nodes that failed, statuses built or not.
    pub(super) fn num_failed(&self) -> usize {
        self.failed.len() + self.deferred.len()
    }

    /// Builds the status of every deferred failure (the failing filter's `filter` on the node,
    /// attributed to the plugin) into [`Search::failed`]: what the cycle reports is then the
    /// same as if every status had been built during the search.
    pub(super) fn materialize_statuses(
        &mut self,
        fwk: &Framework,
        state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) {
        let nodes = snapshot.nodes();
        for (ni, fi) in self.deferred.drain(..) {
            let f = &fwk.filters[fi as usize];
            let s = f.filter(state, pod, &nodes[ni as usize]);
            debug_assert!(s.is_unschedulable(), "{}: {s:?}", f.name());
            self.failed.push((ni, s.with_plugin(f.name())));
        }
    }

    /// `evaluateNominatedNode` (v1.22 `PreferNominatedNode`): when the pod carries a
    /// `status.nominatedNodeName` that is in the snapshot, run the filters (with the nominated
    /// pods) and the filtering extenders on that node alone. Returns true when it passed: it is
    /// then the only feasible node. A failure or an error falls back to the full search, as
    /// upstream only logs it.
    pub(super) fn evaluate_nominated_node(
        &mut self,
        filters: &Filters<'_>,
        extenders: &[Arc<dyn Extender>],
    ) -> bool {
        let Filters {
            fwk,
            state,
            pod,
            snapshot,
            active,
            nominated,
            ..
        } = *filters;
        let nnn = pod.nominated_node_name.as_str();
        let Some(ni) = (!nnn.is_empty())
            .then(|| snapshot.node_index(nnn))
            .flatten()
        else {
            return false;
        };
        self.clear();
        if !fwk
            .run_filter_plugins(state, active, pod, &snapshot.nodes()[ni as usize])
            .is_success()
        {
            return false;
        }
        self.feasible.push(ni);
        if !nominated.is_empty() {
            nominated_pods_check(filters, &mut self.feasible, &mut self.failed);
        }
        if self.feasible.is_empty()
            || self
                .find_nodes_that_pass_extenders(extenders, pod, snapshot)
                .is_err()
        {
            self.feasible.clear();
            self.failed.clear();
            return false;
        }
        if self.feasible.is_empty() {
            self.failed.clear();
            return false;
        }
        self.failed.clear();
        true
    }

    /// The first `Error` status a filter returned, as the cycle's error (v1.22
    /// `RunFilterPlugins` returns it as `running %q filter plugin: %w`,
    /// `findNodesThatPassFilters` as the cycle's error); nodes that do not fit are no error.
    pub(super) fn filter_error(&self) -> Option<ScheduleError> {
        let (_, s) = self.failed.iter().find(|(_, s)| s.code == Code::Error)?;
        Some(ScheduleError::ExtensionPoint {
            plugin: s.plugin.into(),
            message: format!("running {:?} filter plugin: {}", s.plugin, s.message()),
        })
    }

    /// `findNodesThatPassExtenders`, only when an extender filters for this pod: the feasible
    /// nodes the extenders reject move to the failed ones. Returns the statuses of every failed
    /// node by name (extenders report nodes by name; `failed` is then empty), or `None` when no
    /// extender was asked.
    ///
    /// # Errors
    /// [`ScheduleError::Extender`]: an extender that is not ignorable failed.
    pub(super) fn find_nodes_that_pass_extenders(
        &mut self,
        extenders: &[Arc<dyn Extender>],
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> Result<Option<BTreeMap<String, Status>>, ScheduleError> {
        if self.feasible.is_empty()
            || !extenders
                .iter()
                .any(|e| e.is_filter() && e.is_interested(pod))
        {
            return Ok(None);
        }
        let nodes = snapshot.nodes();
        let mut by_name: BTreeMap<String, Status> = self
            .failed
            .drain(..)
            .map(|(ni, s)| (nodes[ni as usize].name.clone(), s))
            .collect();
        extender::find_nodes_that_pass_extenders(
            extenders,
            pod,
            snapshot,
            &mut self.feasible,
            &mut by_name,
        )
        .map_err(|(extender, e)| ScheduleError::Extender {
            extender,
            message: e.message,
        })?;
        Ok(Some(by_name))
    }
}

/// `alwaysCheckAllPredicates`: every active filter on every node of `chunk`; a node that fails
/// goes to `failed` with the reasons of all its failing filters merged (the code
/// `UnschedulableAndUnresolvable` if one said so). An `Error` status ends the node's filters
/// and is recorded alone, as v1.22 `RunFilterPlugins` returns it at once.
fn filter_running_all(
    filters: &ChunkFilters<'_>,
    chunk: &mut Vec<u32>,
    failed: &mut Vec<(u32, Status)>,
) {
    let nodes: &[NodeInfo] = filters.snapshot.nodes();
    chunk.retain(|&ni| {
        let mut merged: Option<Status> = None;
        for &fi in filters.active {
            let f = &filters.fwk.filters[fi];
            let s = f.filter(filters.state, filters.pod, &nodes[ni as usize]);
            if !s.is_success() {
                let s = s.with_plugin(f.name());
                if !s.is_unschedulable() {
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
                failed.push((ni, s));
                false
            }
        }
    });
}

/// `RunFilterPluginsWithNominatedPods`, pass 1, for the nodes of `chunk` that passed the
/// filters (pass 2, the filters without the nominated pods, is what they just passed): a node
/// to which pods of priority ≥ the pod's are nominated must also fit the pod with those pods on
/// it; one that does not moves to `failed` with that status.
fn nominated_pods_check(
    filters: &Filters<'_>,
    chunk: &mut Vec<u32>,
    failed: &mut Vec<(u32, Status)>,
) {
    let pod = filters.pod;
    let nodes = filters.snapshot.nodes();
    // A copy of the snapshot to add the nominated pods to, made only when needed.
    let mut work: Option<crate::snapshot::Snapshot> = None;
    chunk.retain(|&ni| {
        let on = filters
            .nominated
            .nominated_pods_for_node(&nodes[ni as usize].name);
        if !on
            .iter()
            .any(|p| p.priority >= pod.priority && p.uid != pod.uid)
        {
            return true;
        }
        let work = work.get_or_insert_with(|| filters.snapshot.clone());
        let s = filters
            .fwk
            .run_filter_plugins_with_nominated_pods(pod, work, ni, on);
        if s.is_success() {
            true
        } else {
            failed.push((ni, s));
            false
        }
    });
}

/// The active filters on node `ni`, which failed the combined fast check, in order, each
/// skipped when the node passes that filter's own fast check: true when all pass; else the
/// first failure is recorded by filter and code ([`Chunk::deferred`]; an `Error` with its
/// status in `failed`).
fn filter_one_failing_fast_check(
    filters: &ChunkFilters<'_>,
    ni: u32,
    failed: &mut Vec<(u32, Status)>,
    deferred: &mut Vec<(u32, u32)>,
) -> bool {
    #[cfg(test)]
    PER_NODE_FILTER_NODES.with(|n| n.set(n.get() + 1));
    let cols = filters.snapshot.columns();
    let node: &NodeInfo = &filters.snapshot.nodes()[ni as usize];
    for (&fi, own) in filters.active.iter().zip(filters.own) {
        if own.passes_at(cols, ni as usize) {
            continue;
        }
        let f = &filters.fwk.filters[fi];
        match f.filter_code(filters.state, filters.pod, node) {
            Code::Success => {}
            Code::Unschedulable | Code::UnschedulableAndUnresolvable => {
                deferred.push((ni, fi as u32));
                return false;
            }
            _ => {
                let s = f.filter(filters.state, filters.pod, node);
                failed.push((ni, s.with_plugin(f.name())));
                return false;
            }
        }
    }
    true
}

/// The column scan of [`Strategy::Dense`]: the combined fast check without its GPU parts, and
/// the fused LeastAllocated + BalancedAllocation in floats, over runs of consecutive node
/// indexes (the snapshot's NodeTree order is its index order), in loops without per-node calls
/// or branches on plugin lists that the compiler vectorises.
#[derive(Clone, Copy)]
struct Dense {
    /// [`FastCheck::forbidden_flags`] but [`NodeHot::FILTER_TAINTS`].
    forbidden: u32,
    /// [`NodeHot::FILTER_TAINTS`] when the check forbids it, else 0.
    taints: u32,
    /// The index in `fwk.filters` of TaintToleration when it rejects every node with the
    /// taints flag for this pod ([`Snapshot::tolerates_no_filter_taint`]) and no other filter's
    /// check reads that flag: a node that passes every other part of the check but has the flag
    /// fails TaintToleration first, and is recorded as such without running the filters.
    taint_reject: Option<u32>,
    /// Whether the check has a fit part (then `pods`, `cpu` and `mem` are not negative).
    fit: bool,
    /// Free pod slots a node needs (1 when the check has a fit part, else no bound).
    pods: i64,
    /// Free cpu (millicores) and memory (bytes) a node needs.
    cpu: i64,
    mem: i64,
    /// `(LeastAllocated weight, BalancedAllocation weight, pod's scoring cpu, memory)`, the
    /// requests as floats, when the search scores.
    score: Option<(i64, i64, f64, f64)>,
}

/// Largest weight the float kernel takes (`weight * 100` stays far below `2^51`).
const DENSE_MAX_WEIGHT: i64 = 1 << 20;

impl Dense {
    /// The dense scan for this search, when it applies: no GPU part in the check, a fit part
    /// (if any) that asks no negative amount, the snapshot's order is its index order, and the
    /// search scores nothing or exactly the LeastAllocated + BalancedAllocation pair with
    /// weights up to [`DENSE_MAX_WEIGHT`] for a pod whose scoring requests are in `0..2^52`.
    fn of(
        fast: FastCheck,
        score: Fused<'_>,
        pod: &PodInfo,
        snapshot: &Snapshot,
        taint_reject: Option<u32>,
    ) -> Option<Dense> {
        if fast.gpu_fits.is_some() || fast.gpu_devices.is_some() || !snapshot.order_is_index() {
            return None;
        }
        let score = match score {
            Fused::Off => None,
            Fused::LeastBalanced(wl, wb) => {
                let range = 0..1i64 << 52;
                let (cpu, mem) = (pod.score_milli_cpu, pod.score_memory);
                if !(1..=DENSE_MAX_WEIGHT).contains(&wl)
                    || !(1..=DENSE_MAX_WEIGHT).contains(&wb)
                    || !range.contains(&cpu)
                    || !range.contains(&mem)
                {
                    return None;
                }
                Some((wl, wb, cpu as f64, mem as f64))
            }
            Fused::Any(_) => return None,
        };
        let (pods, (cpu, mem)) = match fast.fits {
            Some((cpu, mem)) if cpu < 0 || mem < 0 => return None,
            Some(f) => (1, f),
            None => (i64::MIN, (i64::MIN, i64::MIN)),
        };
        Some(Dense {
            fit: fast.fits.is_some(),
            forbidden: fast.forbidden_flags & !NodeHot::FILTER_TAINTS,
            taints: fast.forbidden_flags & NodeHot::FILTER_TAINTS,
            taint_reject: taint_reject
                .filter(|_| fast.forbidden_flags & NodeHot::FILTER_TAINTS != 0),
            pods,
            cpu,
            mem,
            score,
        })
    }

    /// [`Dense::scan`] over `state.len()` nodes from `first`, wrapping to node 0 after the last.
    fn scan_from(&self, cols: &NodeColumns, first: usize, state: &mut [u64], totals: &mut [i64]) {
        let len = state.len();
        let a = len.min(cols.len().saturating_sub(first));
        self.scan(cols, first, &mut state[..a], &mut totals[..a]);
        if a < len {
            self.scan(cols, 0, &mut state[a..], &mut totals[a..len]);
        }
    }

    /// Whether every node of a scan's `state` passed and (when `scoring`) has its exact score.
    fn all_pass(scoring: bool, state: &[u64]) -> bool {
        let full = if scoring { 3 } else { 1 };
        // (A reduction without an early exit: vectorised.)
        state.iter().fold(u64::MAX, |a, &s| a & s) & full == full
    }

    /// [`Dense::all_pass`] of a scan and, when true, the top of its totals (what
    /// [`compact_dense`] needs of a chunk where every node passed).
    fn summary(scoring: bool, state: &[u64], sums: &[i64]) -> Option<Top> {
        Dense::all_pass(scoring, state).then(|| {
            if scoring {
                Top::of_scores(sums)
            } else {
                Top::default()
            }
        })
    }

    /// Nodes `lo..lo + state.len()`: `state[k]` bit 1 when node `lo + k` passes the check, bit
    /// 2 when `totals[k]` holds its exact fused score (else the node needs the exact path), bit
    /// 4 when [`Dense::taint_reject`] is set and the node fails the check by the taints flag
    /// alone (the quick reject: TaintToleration is its first failing filter). One pass over
    /// the columns, in 64-bit lanes only (baseline x86-64 vectorises it).
    fn scan(&self, cols: &NodeColumns, lo: usize, state: &mut [u64], totals: &mut [i64]) {
        if self.taint_reject.is_some() {
            self.scan_with::<true>(cols, lo, state, totals);
        } else {
            self.scan_with::<false>(cols, lo, state, totals);
        }
    }

    /// [`Dense::scan`], with bit 4 when `TAINT_REJECT` (one function each: the plain loop
    /// compiles as it would alone).
    #[inline(never)]
    fn scan_with<const TAINT_REJECT: bool>(
        &self,
        cols: &NodeColumns,
        lo: usize,
        state: &mut [u64],
        totals: &mut [i64],
    ) {
        let len = state.len();
        let hi = lo + len;
        let totals = &mut totals[..len];
        let (flags, pods, cpu, mem) = (
            &cols.flags[lo..hi],
            &cols.free_pods[lo..hi],
            &cols.free_milli_cpu[lo..hi],
            &cols.free_memory[lo..hi],
        );
        // With the quick reject, the check without the taints flag, then the flag splits the
        // nodes that pass it.
        let forbidden = if TAINT_REJECT {
            self.forbidden
        } else {
            self.forbidden | self.taints
        };
        debug_assert!(!TAINT_REJECT || self.taints == NodeHot::FILTER_TAINTS);
        // `free >= need` for `need >= 0` is `free >= 0 && free - need >= 0` (no overflow then):
        // a node fails the fit part when the sign bit of the or of those is set (baseline
        // x86-64 has no 64-bit compare to vectorise); without a fit part the mask drops it.
        let (np, nc, nm) = (self.pods, self.cpu, self.mem);
        let fit_mask = -i64::from(self.fit);
        // (Macros, not closures: the loops must inline them to vectorise.)
        macro_rules! verdict {
            ($k:expr) => {{
                let k = $k;
                let bad = -i64::from(flags[k] & forbidden != 0);
                let x = ((pods[k]
                    | pods[k].wrapping_sub(np)
                    | cpu[k]
                    | cpu[k].wrapping_sub(nc)
                    | mem[k]
                    | mem[k].wrapping_sub(nm))
                    & fit_mask)
                    | bad;
                let p = (!x as u64) >> 63;
                if TAINT_REJECT {
                    // (`taints` is the flag: shifts, no compare.)
                    let pt = p
                        & (u64::from(flags[k] & NodeHot::FILTER_TAINTS)
                            >> NodeHot::FILTER_TAINTS.trailing_zeros());
                    (p ^ pt) | (pt << 2)
                } else {
                    p
                }
            }};
        }
        let Some((wl, wb, pc, pm)) = self.score else {
            for (k, s) in state.iter_mut().enumerate() {
                *s = verdict!(k);
            }
            return;
        };
        let (cc, ic, nzc) = (
            &cols.alloc_milli_cpu_f[lo..hi],
            &cols.inv_milli_cpu[lo..hi],
            &cols.nz_milli_cpu_f[lo..hi],
        );
        let (cm, im, nzm) = (
            &cols.alloc_memory_f[lo..hi],
            &cols.inv_memory[lo..hi],
            &cols.nz_memory_f[lo..hi],
        );
        // One loop per weighting, so that no branch on the weights is left in the loop body.
        macro_rules! score {
            ($total:expr) => {
                for k in 0..len {
                    let (least, balanced, exact) =
                        least_balanced(nzc[k] + pc, cc[k], ic[k], nzm[k] + pm, cm[k], im[k]);
                    totals[k] = $total(least, balanced);
                    let in_range = flags[k] & NodeHot::SCORE_OUT_OF_RANGE == 0;
                    state[k] = verdict!(k) | (u64::from(exact & in_range) << 1);
                }
            };
        }
        // Weights 1 (the sample policy's, the DefaultProvider's): an integer add.
        if wl == 1 && wb == 1 {
            score!(|l: i64, b: i64| l.wrapping_add(b));
        } else {
            score!(|l: i64, b: i64| wl.wrapping_mul(l).wrapping_add(wb.wrapping_mul(b)));
        }
    }
}

/// [`filter_with_fast_check`] by [`Dense::scan`]: the same verdicts, statuses and totals. The
/// chunk's nodes are consecutive indexes from its first, wrapping to 0 after the last node.
/// The scan writes into the chunk's buffers (no copy, no zeroing once they have grown).
fn filter_dense(filters: &ChunkFilters<'_>, d: Dense, c: &mut Chunk) {
    let len = c.nodes.len();
    let mut state = std::mem::take(&mut c.state);
    if state.len() < len {
        state.resize(CHUNK.max(len), 0);
    }
    if c.totals.len() < len {
        c.totals.resize(len, 0);
    }
    if let Some(&first) = c.nodes.first() {
        d.scan_from(
            filters.snapshot.columns(),
            first as usize,
            &mut state[..len],
            &mut c.totals[..len],
        );
    }
    compact_dense(filters, d, c, &state[..len], None);
    c.state = state;
}

/// The verdicts of [`Dense::scan_from`] on chunk `c` (`state` per node of the chunk, the sums
/// in `c.totals[..len]` when scoring) into the chunk: the nodes that pass stay, with their
/// totals (compacted in place); the nodes of the taint quick reject (state bit 4) go to
/// `deferred` as TaintToleration's; the others run the filters
/// ([`filter_one_failing_fast_check`]); a node that passes without an exact fused score gets
/// it from the exact path. `summary` is [`Dense::summary`] of the scan when the worker that
/// scanned computed it.
///
/// The nodes that pass with their score and the quick rejects (every node of a heterogeneous
/// cluster but the few that are full) take no branch of their own: each node is written at
/// the next kept place and at the next rejected place, and the counts advance by its bits.
fn compact_dense(
    filters: &ChunkFilters<'_>,
    d: Dense,
    c: &mut Chunk,
    state: &[u64],
    summary: Option<Option<Top>>,
) {
    let cols = filters.snapshot.columns();
    let len = c.nodes.len();
    let scoring = d.score.is_some();
    debug_assert!(state.len() == len && (!scoring || c.totals.len() >= len));
    debug_assert!(
        c.nodes
            .iter()
            .enumerate()
            .all(|(k, &ni)| ni as usize == (c.nodes[0] as usize + k) % cols.len())
    );
    let (cpu, mem) = (filters.pod.score_milli_cpu, filters.pod.score_memory);
    let Chunk {
        nodes: chunk,
        failed,
        deferred,
        totals,
        rejected,
        ..
    } = c;
    // Every node passed and has its score (the usual case): nothing to compact.
    let top = summary.unwrap_or_else(|| {
        let sums: &[i64] = if scoring { &totals[..len] } else { &[] };
        Dense::summary(scoring, state, sums)
    });
    if let Some(top) = top {
        totals.truncate(if scoring { len } else { 0 });
        c.top = top;
        return;
    }
    // (Not scoring, the totals moved along are dropped at the end.)
    if totals.len() < len {
        totals.resize(len, 0);
    }
    if rejected.len() < len {
        rejected.resize(CHUNK.max(len), 0);
    }
    let done = done_states(scoring);
    let (state, chunk, totals) = (&state[..len], &mut chunk[..len], &mut totals[..len]);
    let rejected = &mut rejected[..len];
    let mut kept = 0;
    let mut nr = 0;
    for k in 0..len {
        let s = state[k];
        let ni = chunk[k];
        // (`kept <= k` and `nr <= k`: the node and the sum at `k` are read before anything
        // is written there.)
        chunk[kept] = ni;
        totals[kept] = totals[k];
        rejected[nr] = ni;
        kept += (s & 1) as usize;
        nr += ((s >> 2) & 1) as usize;
        if (done >> (s & 7)) & 1 != 0 {
            continue;
        }
        if s & 1 != 0 {
            // Passed without an exact fused score: the exact path's.
            totals[kept - 1] = filters.score.total(cols, ni as usize, cpu, mem);
            continue;
        }
        // The filters record their failure after the quick rejects before it.
        flush_taint_rejects(filters, d, &rejected[..nr], deferred);
        nr = 0;
        if filter_one_failing_fast_check(filters, ni, failed, deferred) {
            // (`chunk[kept]` is the node already.)
            totals[kept] = filters.score.total(cols, ni as usize, cpu, mem);
            kept += 1;
        }
    }
    flush_taint_rejects(filters, d, &rejected[..nr], deferred);
    c.nodes.truncate(kept);
    c.totals.truncate(if scoring { kept } else { 0 });
    c.top = Top::of_scores(&c.totals);
}

/// The scan states (`state & 7`) that need nothing more after the scan, as bits of a mask
/// (`done >> (state & 7) & 1`): a node that passes with its score (3; 1 when not scoring), a
/// taint quick reject (4, 6 with a score it does not need). [`compact_dense`] and
/// [`compact_clean`] agree on it.
const fn done_states(scoring: bool) -> u64 {
    if scoring { 0x58 } else { 0x5a }
}

/// [`compact_dense`] on a scan helper, for a chunk of `state.len()` nodes from `first` (wrapping
/// to 0 at `n`) where every node passed with its score or is a taint quick reject: the nodes
/// kept and their `sums` into `kept_nodes` and `kept_sums`, the quick rejects into `rejected`,
/// in order; `(kept, rejected)` counts. `None` as soon as a node needs the filters or the exact
/// path (the caller then compacts the chunk itself). The buffers hold at least `state.len()`.
#[allow(clippy::too_many_arguments)]
fn compact_clean(
    scoring: bool,
    first: usize,
    n: usize,
    state: &[u64],
    sums: &[i64],
    kept_nodes: &mut [u32],
    kept_sums: &mut [i64],
    rejected: &mut [u32],
) -> Option<(usize, usize)> {
    let len = state.len();
    let done = done_states(scoring);
    let sums = sums.get(..len)?;
    let (kept_nodes, kept_sums) = (kept_nodes.get_mut(..len)?, kept_sums.get_mut(..len)?);
    let rejected = rejected.get_mut(..len)?;
    let (mut kept, mut nr) = (0, 0);
    let mut ni = first;
    for k in 0..len {
        let s = state[k];
        if (done >> (s & 7)) & 1 == 0 {
            return None;
        }
        let id = ni as u32;
        kept_nodes[kept] = id;
        kept_sums[kept] = sums[k];
        rejected[nr] = id;
        kept += (s & 1) as usize;
        nr += ((s >> 2) & 1) as usize;
        ni += 1;
        if ni == n {
            ni = 0;
        }
    }
    Some((kept, nr))
}

/// The taint quick rejects of [`compact_dense`] into `deferred`, as TaintToleration's.
fn flush_taint_rejects(
    filters: &ChunkFilters<'_>,
    d: Dense,
    rejected: &[u32],
    deferred: &mut Vec<(u32, u32)>,
) {
    let Some(fi) = d.taint_reject.filter(|_| !rejected.is_empty()) else {
        return;
    };
    for &ni in rejected {
        debug_assert_eq!(
            filters.fwk.filters[fi as usize].filter_code(
                filters.state,
                filters.pod,
                &filters.snapshot.nodes()[ni as usize]
            ),
            Code::UnschedulableAndUnresolvable
        );
    }
    #[cfg(test)]
    TAINT_QUICK_REJECTS.with(|n| n.set(n.get() + rejected.len()));
    deferred.extend(rejected.iter().map(|&ni| (ni, fi)));
}

#[cfg(test)]
thread_local! {
    /// Tests: nodes the dense scan's taint quick reject recorded on this thread.
    pub(super) static TAINT_QUICK_REJECTS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// Tests: nodes that failed the fast check and went to the per-node filters on this
    /// thread.
    pub(super) static PER_NODE_FILTER_NODES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Fewest chunks in a round for the dense scan to offer them to the scan helpers: below it
/// (2,048 nodes), the offer, the claims and the hand-back cost about what a helper saves
/// (`cycle_profile 1000 2000 1|2 template 3`), so one worker scans them.
const MIN_SHARED_ROUND: usize = 8;

/// How long the caller waits for the helpers to drop the job after a round before it leaves
/// the job to them and starts another (an allocation; the columns are not copied).
const RELEASE_PATIENCE: Duration = Duration::from_micros(2);

/// How long the caller waits for a part a scan helper claimed, when it has not timed a part
/// of its own yet.
const DEFAULT_PATIENCE: Duration = Duration::from_micros(20);

/// One part's [`Dense::scan_from`] output, written by the worker that claimed the part.
struct ScanOut {
    state: [u64; CHUNK],
    sums: [i64; CHUNK],
    /// [`Dense::summary`] of the scan.
    summary: Option<Top>,
    /// When not every node passed but no node needs the filters or the exact path
    /// ([`compact_clean`]): how many nodes were kept and rejected, and the top of their sums.
    compacted: Option<(usize, usize, Top)>,
    /// The nodes kept, their sums, and the taint quick rejects, when `compacted`.
    kept_nodes: [u32; CHUNK],
    kept_sums: [i64; CHUNK],
    rejected: [u32; CHUNK],
}

/// A round of the dense scan offered to the scan helpers: it shares the columns and owns its
/// outputs, so a helper needs nothing from the cycle's stack.
#[derive(Default)]
struct DenseJob {
    /// The snapshot's columns, while a round is on offer. Weak: a helper holds them only while
    /// it scans a part, so the snapshot's next change copies them only if a helper is held up
    /// in the middle of a part.
    cols: std::sync::Weak<NodeColumns>,
    dense: Option<Dense>,
    /// Per part (a chunk of the round): its first node index and its length.
    parts: Vec<(usize, usize)>,
    claims: Claims,
    outs: Vec<Mutex<Box<ScanOut>>>,
}

impl PartJob for DenseJob {
    fn claims(&self) -> &Claims {
        &self.claims
    }

    fn run_part(&self, i: usize) -> bool {
        let (Some(cols), Some(d)) = (self.cols.upgrade(), self.dense) else {
            return false;
        };
        let (first, len) = self.parts[i];
        let mut out = self.outs[i].lock().unwrap_or_else(|p| p.into_inner());
        let ScanOut {
            state,
            sums,
            summary,
            compacted,
            kept_nodes,
            kept_sums,
            rejected,
        } = &mut **out;
        let scoring = d.score.is_some();
        d.scan_from(&cols, first, &mut state[..len], &mut sums[..len]);
        *summary = Dense::summary(scoring, &state[..len], &sums[..len]);
        // (The caller compacts the chunk on its thread otherwise: a helper takes that part of
        // a heterogeneous cluster's work too.)
        *compacted = None;
        if summary.is_none()
            && let Some((kept, nr)) = compact_clean(
                scoring,
                first,
                cols.len(),
                &state[..len],
                &sums[..len],
                kept_nodes,
                kept_sums,
                rejected,
            )
        {
            let top = Top::of_scores(&kept_sums[..if scoring { kept } else { 0 }]);
            *compacted = Some((kept, nr, top));
        }
        true
    }
}

/// One round of [`Strategy::Dense`] on the workers: the chunks' column scans are offered to
/// the scan helpers ([`Workers::publish`]); the calling thread claims chunks from the front and
/// filters them whole ([`filter_dense`]), and compacts the helpers' scans
/// ([`compact_dense`]) in chunk order. A chunk a helper claimed but has not finished within
/// twice the time the caller took for one of its own is scanned again by the caller (the same
/// result), so the caller never waits on a helper that was not scheduled.
fn dense_round(
    slot: &mut Arc<DenseJob>,
    chunks: &mut [Chunk],
    d: Dense,
    filters: &ChunkFilters<'_>,
    workers: &Workers,
    impatient: bool,
) {
    if Arc::get_mut(slot).is_none() {
        // A helper held up past the last round still holds it: start another.
        *slot = Arc::default();
    }
    let Some(job) = Arc::get_mut(slot) else {
        for c in chunks.iter_mut() {
            filter_dense(filters, d, c);
        }
        return;
    };
    job.cols = Arc::downgrade(filters.snapshot.shared_columns());
    job.dense = Some(d);
    job.parts.clear();
    job.parts.extend(
        chunks
            .iter()
            .map(|c| (c.nodes.first().map_or(0, |&f| f as usize), c.nodes.len())),
    );
    job.claims.reset(chunks.len());
    if job.outs.len() < chunks.len() {
        job.outs.resize_with(chunks.len(), || {
            Mutex::new(Box::new(ScanOut {
                state: [0; CHUNK],
                sums: [0; CHUNK],
                summary: None,
                compacted: None,
                kept_nodes: [0; CHUNK],
                kept_sums: [0; CHUNK],
                rejected: [0; CHUNK],
            }))
        });
    }
    let offered = workers.publish(Arc::clone(slot) as Arc<dyn PartJob>);
    let job: &DenseJob = slot;
    let mut patience: Option<Duration> = None;
    for (i, c) in chunks.iter_mut().enumerate() {
        if job.claims.claim(i) {
            let t = Instant::now();
            filter_dense(filters, d, c);
            patience = Some(patience.unwrap_or_default().max(2 * t.elapsed()));
        } else if job.claims.wait_done(
            i,
            match patience {
                _ if impatient => Duration::ZERO,
                Some(p) => p,
                None => DEFAULT_PATIENCE,
            },
        ) {
            let out = job.outs[i].lock().unwrap_or_else(|p| p.into_inner());
            let len = c.nodes.len();
            c.totals.clear();
            if let (None, Some((kept, nr, top))) = (out.summary, out.compacted) {
                c.nodes.clear();
                c.nodes.extend_from_slice(&out.kept_nodes[..kept]);
                if d.score.is_some() {
                    c.totals.extend_from_slice(&out.kept_sums[..kept]);
                }
                flush_taint_rejects(filters, d, &out.rejected[..nr], &mut c.deferred);
                c.top = top;
                continue;
            }
            if d.score.is_some() {
                c.totals.extend_from_slice(&out.sums[..len]);
            }
            compact_dense(filters, d, c, &out.state[..len], Some(out.summary));
        } else {
            filter_dense(filters, d, c);
        }
    }
    if offered {
        workers.retract();
    }
    release(slot);
}

/// Drops the round's columns from the job once no helper holds it (briefly waiting for one
/// that is dropping it), or leaves the job to the helper that still does: the snapshot's
/// columns are then unshared again unless a helper was held up.
fn release(slot: &mut Arc<DenseJob>) {
    let start = Instant::now();
    let mut spins = 0u32;
    loop {
        if let Some(job) = Arc::get_mut(slot) {
            job.cols = std::sync::Weak::new();
            return;
        }
        std::hint::spin_loop();
        spins += 1;
        if spins.is_multiple_of(64) && start.elapsed() >= RELEASE_PATIENCE {
            *slot = Arc::default();
            return;
        }
    }
}

/// One pass with the combined fast check, scoring as it goes: nodes passing the check are
/// feasible; the others run the active filters in order, each skipped when the node passes
/// that filter's own fast check, and the first failure is recorded by filter and code
/// ([`Chunk::deferred`]; an `Error` with its status). Each node that fits gets its fused
/// score in [`Chunk::totals`].
fn filter_with_fast_check(filters: &ChunkFilters<'_>, fast: FastCheck, c: &mut Chunk) {
    c.totals.clear();
    let cols = filters.snapshot.columns();
    let (cpu, mem) = (filters.pod.score_milli_cpu, filters.pod.score_memory);
    let Chunk {
        nodes: chunk,
        failed,
        deferred,
        totals,
        ..
    } = c;
    let slow = |ni: u32, failed: &mut Vec<(u32, Status)>, deferred: &mut Vec<(u32, u32)>| {
        filter_one_failing_fast_check(filters, ni, failed, deferred)
    };
    let mut kept = 0;
    for r in 0..chunk.len() {
        let ni = chunk[r];
        if fast.passes_at(cols, ni as usize) || slow(ni, failed, deferred) {
            chunk[kept] = ni;
            kept += 1;
            if !matches!(filters.score, Fused::Off) {
                totals.push(filters.score.total(cols, ni as usize, cpu, mem));
            }
        }
    }
    chunk.truncate(kept);
    c.top = Top::of_scores(&c.totals);
}

/// [`Chunk::totals`] of the nodes left in the chunk, for the strategies that filter first.
fn score_chunk(filters: &ChunkFilters<'_>, c: &mut Chunk) {
    c.totals.clear();
    if matches!(filters.score, Fused::Off) {
        return;
    }
    let cols = filters.snapshot.columns();
    let (cpu, mem) = (filters.pod.score_milli_cpu, filters.pod.score_memory);
    c.totals.extend(
        c.nodes
            .iter()
            .map(|&ni| filters.score.total(cols, ni as usize, cpu, mem)),
    );
    c.top = Top::of_scores(&c.totals);
}

/// Each active filter's batch entry point ([`crate::framework::FilterPlugin::filter_nodes`])
/// over what is left of the chunk, in order: one dynamic call per plugin, not per node.
fn filter_plugin_by_plugin(
    filters: &ChunkFilters<'_>,
    chunk: &mut Vec<u32>,
    failed: &mut Vec<(u32, Status)>,
) {
    for &fi in filters.active {
        filters.fwk.filters[fi].filter_nodes(
            filters.state,
            filters.pod,
            filters.snapshot,
            chunk,
            failed,
        );
        if chunk.is_empty() {
            break;
        }
    }
}

/// How the nodes of a chunk are filtered (the same verdicts each way).
#[derive(Clone, Copy)]
enum Strategy {
    /// `alwaysCheckAllPredicates`: [`filter_running_all`].
    RunAll,
    /// Every active filter has a fast check: [`filter_with_fast_check`].
    Fast(FastCheck),
    /// As `Fast`, over consecutive node indexes in vectorised loops: [`filter_dense`].
    Dense(Dense),
    /// [`filter_plugin_by_plugin`].
    PluginByPlugin,
}

impl Strategy {
    fn filter(self, f: &ChunkFilters<'_>, c: &mut Chunk) {
        match self {
            Strategy::RunAll => {
                filter_running_all(f, &mut c.nodes, &mut c.failed);
                score_chunk(f, c);
            }
            Strategy::Fast(fast) => filter_with_fast_check(f, fast, c),
            Strategy::Dense(d) => filter_dense(f, d, c),
            Strategy::PluginByPlugin => {
                filter_plugin_by_plugin(f, &mut c.nodes, &mut c.failed);
                score_chunk(f, c);
            }
        }
    }
}

#[cfg(test)]
#[path = "find_feasible_test.rs"]
mod tests;
