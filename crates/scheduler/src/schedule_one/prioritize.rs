//! Scoring the feasible nodes (v1.22 `prioritizeNodes`): PreScore, Score and NormalizeScore of
//! each score plugin, Σ weight × score per node, then the scoring extenders' part. When no
//! score plugin is configured every node scores 1 (0 with extenders).
//!
//! Three fast paths give the totals the plain sum would: a plugin whose PreScore finds the same
//! score for every node ([`ScoreMode::Uniform`]) is left out of the totals (a constant cannot
//! change the choice) and added to the reported ones; the cpu/memory scorers ([`HotScorer`])
//! run fused, in one pass over the snapshot's node columns ([`add_fused`]), unless the cycle
//! explains its scores; when the search already computed their weighted sum on the nodes it
//! found feasible (the `search` fused pass), that sum is taken as it is.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::error::ScheduleError;
use super::workers::Workers;
use crate::extender::{self, Extender, MAX_EXTENDER_PRIORITY};
use crate::framework::plugins::node_resources_columns::ScoreInput;
use crate::framework::{
    CycleState, Framework, HotScorer, MAX_NODE_SCORE, MIN_NODE_SCORE, ScoreBreakdown, ScoreMode,
    Status,
};
use crate::model::{NodeInfo, PodInfo};
use crate::snapshot::Snapshot;

/// Fewest feasible nodes a worker scores: below, the parts' start-up costs more than they save.
const MIN_PART: usize = 512;

/// What the search computed: the cpu/memory scorers with their weights, and their weighted sum
/// per feasible node (taken into [`Scoring::totals`] by a swap of the buffers when those sums
/// are the totals; the caller's buffer then holds no sums).
pub(super) type Searched<'a> = (&'a [(HotScorer, i64)], &'a mut Vec<i64>);

/// Scoring buffers kept across cycles, with the last call's totals and timings.
#[derive(Default)]
pub(super) struct Scoring {
    /// Per feasible node (in the order given), the total used to pick the host: Σ weight ×
    /// score over the plugins whose scores differ between nodes, plus the extenders' part.
    pub(super) totals: Vec<i64>,
    /// Whether `totals` are exactly the search's sums (no other plugin or extender scored per
    /// node): `selectHost` may then read the search's per-chunk tops.
    pub(super) totals_are_searched: bool,
    plugin_scores: Vec<i64>,
    /// The cpu/memory scorers of this cycle with their weights (kept to reuse the buffer).
    fused: Vec<(HotScorer, i64)>,
    /// PreScore time, summed over the score plugins, and whether one of them failed.
    pub(super) pre_score_duration: std::time::Duration,
    pub(super) pre_score_failed: bool,
    /// Time the extenders' prioritize calls took (not part of `Score`).
    pub(super) extender_score_duration: std::time::Duration,
}

/// What an explaining cycle reports besides the totals.
#[derive(Default)]
pub(super) struct Explained {
    /// The uniform plugins' part, the same for every node, not in [`Scoring::totals`].
    uniform_total: i64,
    /// Per score plugin, in framework order, the normalized score of each feasible node (only
    /// when explaining).
    per_plugin: Vec<Vec<i64>>,
    /// Per scoring extender, `Extender(<name>)` and its scaled score of each feasible node
    /// (only when explaining).
    extenders: Vec<(String, Vec<i64>)>,
}

impl Scoring {
    /// Clears the timings of the last call.
    pub(super) fn reset_timings(&mut self) {
        self.pre_score_duration = std::time::Duration::ZERO;
        self.pre_score_failed = false;
        self.extender_score_duration = std::time::Duration::ZERO;
    }

    /// `prioritizeNodes`: fills [`Scoring::totals`] for `feasible`. With `explain`, every
    /// plugin is scored per node and the per-plugin scores are kept. `searched`: the
    /// cpu/memory scorers with weights the search computed and their weighted sum per node of
    /// `feasible`; used when PreScore leaves exactly those scorers per node (the sums are then
    /// what [`add_fused`] would add).
    ///
    /// # Errors
    /// [`ScheduleError::Plugin`]: a PreScore, Score or NormalizeScore failed, or a normalized
    /// score is outside `0..=100`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn prioritize_nodes(
        &mut self,
        fwk: &Framework,
        workers: &Workers,
        extenders: &[Arc<dyn Extender>],
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        feasible: &[u32],
        explain: bool,
        searched: Option<Searched<'_>>,
    ) -> Result<Explained, ScheduleError> {
        let m = feasible.len();
        self.totals.clear();
        self.totals_are_searched = false;
        // Whether a plugin scored per node into `totals` (besides the cpu/memory scorers).
        let mut per_node = false;
        let mut out = Explained::default();
        if fwk.scores.is_empty() {
            // "If no priority configs are provided, then all nodes will have a score of one."
            // (v1.22: only when no extender is configured either; else the plugin part is 0.)
            self.totals
                .resize(m, if extenders.is_empty() { 1 } else { 0 });
        } else {
            // `totals` is filled lazily: zeros for the first plugin that adds per node, or the
            // search's sums taken as they are.
            self.fused.clear();
            for ws in &fwk.scores {
                let p = &ws.plugin;
                let plugin_err = |s: Status| ScheduleError::Plugin {
                    plugin: p.name().into(),
                    message: s.message(),
                };
                let pre_score_start = std::time::Instant::now();
                let mode = p.pre_score(state, pod, snapshot, feasible);
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
                        out.uniform_total += v * ws.weight;
                        if explain {
                            out.per_plugin.push(vec![v; m]);
                        }
                        continue;
                    }
                    ScoreMode::PerNode if !explain && p.hot_scorer().is_some() => {
                        if let Some(h) = p.hot_scorer() {
                            self.fused.push((h, ws.weight));
                        }
                        continue;
                    }
                    ScoreMode::PerNode => {
                        self.plugin_scores.resize(m, 0);
                        let state: &CycleState = state;
                        workers
                            .for_parts(feasible, &mut self.plugin_scores, MIN_PART, |f, o| {
                                p.score_nodes(state, pod, snapshot, f, o)
                            })
                            .map_err(plugin_err)?;
                        p.normalize_score(state, pod, snapshot, feasible, &mut self.plugin_scores)
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
                if !per_node {
                    self.totals.resize(m, 0);
                }
                per_node = true;
                for (t, &s) in self.totals.iter_mut().zip(&self.plugin_scores) {
                    *t += s * w;
                }
                if explain {
                    out.per_plugin.push(self.plugin_scores.clone());
                }
            }
            let searched = searched
                .filter(|(hot, sums)| *hot == self.fused.as_slice() && sums.len() == m)
                .map(|(_, sums)| sums);
            if let (false, Some(sums)) = (self.fused.is_empty(), searched) {
                if per_node {
                    for (t, &s) in self.totals.iter_mut().zip(sums.iter()) {
                        *t += s;
                    }
                } else {
                    // Every other plugin was uniform: the totals are the sums.
                    std::mem::swap(&mut self.totals, sums);
                    self.totals_are_searched = true;
                }
            } else if !self.fused.is_empty() {
                if !per_node {
                    self.totals.resize(m, 0);
                }
                let fused = &self.fused;
                let _: Result<(), ()> =
                    workers.for_parts(feasible, &mut self.totals, MIN_PART, |f, t| {
                        add_fused(t, fused, pod, snapshot, f);
                        Ok(())
                    });
            }
            // Every plugin uniform: the totals are 0.
            self.totals.resize(m, 0);
        }
        if m > 1 && !extenders.is_empty() {
            self.totals_are_searched = false;
            self.add_extender_scores(extenders, pod, snapshot, feasible, explain, &mut out);
        }
        Ok(out)
    }

    /// The extenders' part of `prioritizeNodes`: Σ score × weight, scaled to the plugins'
    /// 0..=100 range (× MAX_NODE_SCORE / MAX_EXTENDER_PRIORITY = 10). Go's int64 arithmetic
    /// wraps; so does this.
    fn add_extender_scores(
        &mut self,
        extenders: &[Arc<dyn Extender>],
        pod: &PodInfo,
        snapshot: &Snapshot,
        feasible: &[u32],
        explain: bool,
        out: &mut Explained,
    ) {
        let nodes = snapshot.nodes();
        let input: Vec<&NodeInfo> = feasible.iter().map(|&i| &nodes[i as usize]).collect();
        let scale = MAX_NODE_SCORE / MAX_EXTENDER_PRIORITY;
        let extenders_start = std::time::Instant::now();
        let scored = extender::prioritize_with_extenders(extenders, pod, &input);
        self.extender_score_duration = extenders_start.elapsed();
        if !scored.is_empty() && out.uniform_total != 0 {
            // Unbounded extender scores can wrap: the uniform plugin part, left out of the
            // totals because a constant cannot change the order, must be in them now for the
            // wrapped sums (and so the choice) to be Go's.
            for t in self.totals.iter_mut() {
                *t = t.wrapping_add(out.uniform_total);
            }
            out.uniform_total = 0;
        }
        for es in scored {
            for (t, &sc) in self.totals.iter_mut().zip(&es.scores) {
                *t = t.wrapping_add(sc.wrapping_mul(es.weight).wrapping_mul(scale));
            }
            if explain {
                out.extenders.push((
                    format!("Extender({})", es.extender),
                    es.scores.iter().map(|s| s.wrapping_mul(scale)).collect(),
                ));
            }
        }
    }
}

impl Explained {
    /// Per feasible node, by name, its total (with the uniform part) and each plugin's and
    /// extender's score, for `explain`.
    pub(super) fn breakdowns(
        &self,
        fwk: &Framework,
        snapshot: &Snapshot,
        feasible: &[u32],
        totals: &[i64],
    ) -> BTreeMap<String, ScoreBreakdown> {
        let nodes = snapshot.nodes();
        feasible
            .iter()
            .enumerate()
            .map(|(j, &ni)| {
                (
                    nodes[ni as usize].name.clone(),
                    ScoreBreakdown {
                        total: totals[j].wrapping_add(self.uniform_total),
                        plugins: fwk
                            .scores
                            .iter()
                            .zip(&self.per_plugin)
                            .map(|(ws, v)| (ws.display_name.clone(), v[j]))
                            .chain(self.extenders.iter().map(|(name, v)| (name.clone(), v[j])))
                            .collect(),
                    },
                )
            })
            .collect()
    }
}

/// The fused resource scorers in one pass over the feasible nodes' column entries: each node's
/// numbers are read once and every scorer computed from them
/// ([`ScoreInput`], exact).
fn add_fused(
    totals: &mut [i64],
    fused: &[(HotScorer, i64)],
    pod: &PodInfo,
    snapshot: &Snapshot,
    feasible: &[u32],
) {
    let cols = snapshot.columns();
    let (cpu, mem) = (pod.score_milli_cpu, pod.score_memory);
    let input = |i: u32| ScoreInput::at(cols, i as usize, cpu, mem);
    match *fused {
        // The DefaultProvider and the sample policy pair.
        [
            (HotScorer::LeastAllocated, wl),
            (HotScorer::BalancedAllocation, wb),
        ]
        | [
            (HotScorer::BalancedAllocation, wb),
            (HotScorer::LeastAllocated, wl),
        ] => {
            for (t, &i) in totals.iter_mut().zip(feasible) {
                let s = input(i);
                *t += wl * s.least_allocated() + wb * s.balanced_allocation();
            }
        }
        _ => {
            for (t, &i) in totals.iter_mut().zip(feasible) {
                let s = input(i);
                *t += fused.iter().map(|&(h, w)| w * s.score(h)).sum::<i64>();
            }
        }
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

#[cfg(test)]
#[path = "prioritize_test.rs"]
mod tests;
