//! PodTopologySpread PreScore, Score and NormalizeScore (v1.22 `podtopologyspread/scoring.go`).

use std::collections::HashSet;

use super::{
    LABEL_HOSTNAME, NAME, PairCounts, PodTopologySpread, count_pods_match_selector,
    node_has_all_keys,
};
use crate::framework::plugins::node_affinity;
use crate::framework::plugins::score_feasible;
use crate::framework::{CycleState, MAX_NODE_SCORE, ScoreMode, ScorePlugin, Status};
use crate::model::NodeInfo;
use crate::model::PodInfo;
use crate::model::{SpreadConstraint, WhenUnsatisfiable};
use crate::snapshot::Snapshot;

/// `preScoreStateKey` = `"PreScore" + Name`.
const PRE_SCORE_STATE_KEY: &str = "PreScorePodTopologySpread";

/// `preScoreState`.
#[derive(Debug, Default)]
pub(crate) struct PreScoreState {
    /// The `ScheduleAnyway` constraints.
    pub(crate) constraints: Vec<SpreadConstraint>,
    /// `IgnoredNodes`: feasible nodes lacking a topology key; they score 0.
    pub(crate) ignored_nodes: HashSet<String>,
    /// `TopologyPairToPodCounts`: matching pods per topology pair, for the domains of the
    /// feasible, non-ignored nodes (hostname domains are counted during Score).
    pub(crate) topology_pair_to_pod_counts: PairCounts<i64>,
    /// `TopologyNormalizingWeight` per constraint: `ln(number of domains + 2)`.
    pub(crate) topology_normalizing_weight: Vec<f64>,
}

/// `topologyNormalizingWeight`: `ln(size + 2)`, so counts in topologies with few domains weigh
/// less than in topologies with many.
pub fn topology_normalizing_weight(size: usize) -> f64 {
    ((size + 2) as f64).ln()
}

/// `scoreForCount`: `cnt * weight + (maxSkew - 1)`, with `maxSkew - 1` in Go's wrapping `int32`
/// arithmetic (a cluster file is not API-validated: `maxSkew` may be `i32::MIN`).
pub fn score_for_count(cnt: i64, max_skew: i32, tp_weight: f64) -> f64 {
    cnt as f64 * tp_weight + f64::from(max_skew.wrapping_sub(1))
}

impl PodTopologySpread {
    /// `initPreScoreState` + `PreScore`; `None` when the pod has no `ScheduleAnyway` constraint
    /// (every node then scores [`MAX_NODE_SCORE`]).
    pub(crate) fn compute_pre_score_state(
        &self,
        pod: &PodInfo,
        snapshot: &Snapshot,
        feasible: &[u32],
    ) -> Option<PreScoreState> {
        let constraints = self.constraints(pod, snapshot, WhenUnsatisfiable::ScheduleAnyway);
        if constraints.is_empty() {
            return None;
        }
        // "Only require that nodes have all the topology labels if using non-system-default
        // spreading rules" (requireAllTopologies, kubernetes/kubernetes#105046).
        let require_all = !pod.topology_spread_constraints.is_empty() || !self.system_defaulted;
        let nodes = snapshot.nodes();
        let mut s = PreScoreState {
            topology_pair_to_pod_counts: PairCounts::new(&constraints),
            constraints,
            ..Default::default()
        };
        let mut topo_size = vec![0usize; s.constraints.len()];
        for &i in feasible {
            let node = &nodes[i as usize];
            if require_all && !node_has_all_keys(&node.labels, &s.constraints) {
                s.ignored_nodes.insert(node.name.clone());
                continue;
            }
            for (j, c) in s.constraints.iter().enumerate() {
                if c.topology_key == LABEL_HOSTNAME {
                    continue;
                }
                // A node without the key is the domain "" (`node.Labels[key]`).
                let v = node.labels.get(&c.topology_key).map_or("", String::as_str);
                if s.topology_pair_to_pod_counts.ensure(j, v) {
                    topo_size[j] += 1;
                }
            }
        }
        s.topology_normalizing_weight = s
            .constraints
            .iter()
            .zip(&topo_size)
            .map(|(c, &size)| {
                let sz = if c.topology_key == LABEL_HOSTNAME {
                    feasible.len() - s.ignored_nodes.len()
                } else {
                    size
                };
                topology_normalizing_weight(sz)
            })
            .collect();

        // processAllNode: every node that matches the pod's node affinity/selector and (when
        // required) has all keys adds its matching pods to the domains of the feasible nodes.
        for node in nodes {
            if node.pods.is_empty()
                || !node_affinity::matches(pod, node)
                || (require_all && !node_has_all_keys(&node.labels, &s.constraints))
            {
                continue;
            }
            for (j, c) in s.constraints.iter().enumerate() {
                let value = node.labels.get(&c.topology_key).map_or("", String::as_str);
                let Some(count) = s.topology_pair_to_pod_counts.get_mut(j, value) else {
                    continue;
                };
                *count += count_pods_match_selector(node, &c.selector, &pod.namespace);
            }
        }
        Some(s)
    }
}

/// `Score`: 0 for an ignored node; else the truncated sum over constraints of
/// `scoreForCount(matching pods in the node's domain, maxSkew, weight)`.
fn node_score(s: &PreScoreState, pod: &PodInfo, node: &NodeInfo) -> i64 {
    if !s.ignored_nodes.is_empty() && s.ignored_nodes.contains(&node.name) {
        return 0;
    }
    let mut score = 0f64;
    for (j, (c, &w)) in s
        .constraints
        .iter()
        .zip(&s.topology_normalizing_weight)
        .enumerate()
    {
        if let Some(v) = node.labels.get(&c.topology_key) {
            let cnt = if c.topology_key == LABEL_HOSTNAME {
                count_pods_match_selector(node, &c.selector, &pod.namespace)
            } else {
                s.topology_pair_to_pod_counts.get(j, v).unwrap_or(0)
            };
            score += score_for_count(cnt, c.max_skew, w);
        }
    }
    score as i64
}

fn read_state(state: &CycleState) -> Result<&PreScoreState, Status> {
    state
        .read::<PreScoreState>(PRE_SCORE_STATE_KEY)
        .ok_or_else(|| Status::error("error reading \"PreScorePodTopologySpread\" from cycleState"))
}

impl ScorePlugin for PodTopologySpread {
    fn name(&self) -> &'static str {
        NAME
    }

    /// `Uniform(100)` when the pod has no `ScheduleAnyway` constraint: v1.22 scores every node 0
    /// and NormalizeScore maps an all-zero list to [`MAX_NODE_SCORE`].
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        feasible: &[u32],
    ) -> Result<ScoreMode, Status> {
        match self.compute_pre_score_state(pod, snapshot, feasible) {
            None => Ok(ScoreMode::Uniform(MAX_NODE_SCORE)),
            Some(s) => {
                state.write(PRE_SCORE_STATE_KEY, s);
                Ok(ScoreMode::PerNode)
            }
        }
    }

    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        Ok(node_score(read_state(state)?, pod, node))
    }

    /// [`ScorePlugin::score`] over the feasible nodes, reading the PreScore state once.
    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        feasible: &[u32],
        out: &mut [i64],
    ) -> Result<(), Status> {
        let s = read_state(state)?;
        score_feasible(snapshot, feasible, out, |n| node_score(s, pod, n));
        Ok(())
    }

    /// `NormalizeScore`: ignored nodes 0; when the largest score is 0 every other node gets
    /// [`MAX_NODE_SCORE`]; else `100 * (max + min - score) / max` in integers.
    fn normalize_score(
        &self,
        state: &CycleState,
        _pod: &PodInfo,
        snapshot: &Snapshot,
        feasible: &[u32],
        scores: &mut [i64],
    ) -> Result<(), Status> {
        let s = read_state(state)?;
        let nodes = snapshot.nodes();
        let ignored = |i: u32| {
            !s.ignored_nodes.is_empty() && s.ignored_nodes.contains(&nodes[i as usize].name)
        };
        let mut min_score = i64::MAX;
        let mut max_score = 0i64;
        for (&score, &i) in scores.iter().zip(feasible) {
            if ignored(i) {
                continue;
            }
            min_score = min_score.min(score);
            max_score = max_score.max(score);
        }
        for (score, &i) in scores.iter_mut().zip(feasible) {
            if ignored(i) {
                *score = 0;
            } else if max_score == 0 {
                *score = MAX_NODE_SCORE;
            } else {
                *score = MAX_NODE_SCORE * (max_score + min_score - *score) / max_score;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "scoring_test.rs"]
mod tests;
