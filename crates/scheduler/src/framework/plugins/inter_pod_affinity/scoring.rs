//! InterPodAffinity PreScore, Score and NormalizeScore (v1.22 `interpodaffinity/scoring.go`).

use super::{InterPodAffinity, NAME, TopologyCounts, add_count};
use crate::framework::plugins::score_feasible;
use crate::framework::{CycleState, MAX_NODE_SCORE, ScoreMode, ScorePlugin, Status};
use crate::labels::Labels;
use crate::model::NodeInfo;
use crate::model::PodInfo;
use crate::model::{AffinityTerm, WeightedAffinityTerm};
use crate::snapshot::Snapshot;

/// `preScoreStateKey` = `"PreScore" + Name`.
const PRE_SCORE_STATE_KEY: &str = "PreScoreInterPodAffinity";

/// `preScoreState`: topology key → value → summed weight.
#[derive(Debug, Default)]
pub(crate) struct PreScoreState {
    pub(crate) topology_score: TopologyCounts,
}

/// `scoreMap.processTerm`: add `weight * multiplier` to the pair of `node` for the term's
/// topology key when `(namespace, labels)` (a pod) matches the term.
#[allow(clippy::too_many_arguments)]
#[inline]
fn process_term(
    scores: &mut TopologyCounts,
    term: &AffinityTerm,
    weight: i32,
    namespace: &str,
    labels: &Labels,
    ns_labels: Option<&Labels>,
    node: &NodeInfo,
    multiplier: i32,
) {
    if term.matches(namespace, labels, ns_labels) {
        add_count(
            scores,
            node,
            &term.topology_key,
            i64::from(weight.wrapping_mul(multiplier)),
        );
    }
}

fn process_terms(
    scores: &mut TopologyCounts,
    terms: &[WeightedAffinityTerm],
    namespace: &str,
    labels: &Labels,
    ns_labels: Option<&Labels>,
    node: &NodeInfo,
    multiplier: i32,
) {
    for t in terms {
        process_term(
            scores, &t.term, t.weight, namespace, labels, ns_labels, node, multiplier,
        );
    }
}

impl InterPodAffinity {
    /// `processExistingPod`.
    #[allow(clippy::too_many_arguments)]
    fn process_existing_pod(
        &self,
        scores: &mut TopologyCounts,
        preferred_affinity: &[WeightedAffinityTerm],
        preferred_anti_affinity: &[WeightedAffinityTerm],
        ns_labels: Option<&Labels>,
        existing: &PodInfo,
        node: &NodeInfo,
        incoming: &PodInfo,
    ) {
        if node.labels.is_empty() {
            return;
        }
        // The incoming pod's soft terms against the existing pod; their namespace selectors are
        // merged into the namespaces, so no namespace labels are looked up.
        process_terms(
            scores,
            preferred_affinity,
            &existing.namespace,
            &existing.labels,
            None,
            node,
            1,
        );
        process_terms(
            scores,
            preferred_anti_affinity,
            &existing.namespace,
            &existing.labels,
            None,
            node,
            -1,
        );
        // The existing pod's hard affinity terms, mirrored with hardPodAffinityWeight.
        if self.hard_pod_affinity_weight > 0 {
            for t in &existing.pod_affinity.required_affinity {
                process_term(
                    scores,
                    t,
                    self.hard_pod_affinity_weight,
                    &incoming.namespace,
                    &incoming.labels,
                    ns_labels,
                    node,
                    1,
                );
            }
        }
        process_terms(
            scores,
            &existing.pod_affinity.preferred_affinity,
            &incoming.namespace,
            &incoming.labels,
            ns_labels,
            node,
            1,
        );
        process_terms(
            scores,
            &existing.pod_affinity.preferred_anti_affinity,
            &incoming.namespace,
            &incoming.labels,
            ns_labels,
            node,
            -1,
        );
    }

    /// `PreScore`: the topology scores, or `None` when there are none (every node then scores 0).
    pub(crate) fn compute_pre_score_state(
        &self,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> Option<PreScoreState> {
        let has_preferred = pod.pod_affinity.has_preferred();
        if !has_preferred && snapshot.nodes_with_affinity().is_empty() {
            return None;
        }
        let preferred_affinity: Vec<WeightedAffinityTerm> = pod
            .pod_affinity
            .preferred_affinity
            .iter()
            .map(|t| WeightedAffinityTerm {
                term: snapshot.merged_term(&t.term),
                weight: t.weight,
            })
            .collect();
        let preferred_anti_affinity: Vec<WeightedAffinityTerm> = pod
            .pod_affinity
            .preferred_anti_affinity
            .iter()
            .map(|t| WeightedAffinityTerm {
                term: snapshot.merged_term(&t.term),
                weight: t.weight,
            })
            .collect();
        let ns_labels = snapshot.namespace_labels(&pod.namespace);
        let nodes = snapshot.nodes();
        let mut scores = TopologyCounts::new();
        let mut process_node = |node: &NodeInfo, pods: &[std::sync::Arc<PodInfo>]| {
            for existing in pods {
                self.process_existing_pod(
                    &mut scores,
                    &preferred_affinity,
                    &preferred_anti_affinity,
                    ns_labels,
                    existing,
                    node,
                    pod,
                );
            }
        };
        if has_preferred {
            // Every pod of every node (not only the feasible ones) can match a soft term.
            for node in nodes {
                process_node(node, &node.pods);
            }
        } else {
            for &i in snapshot.nodes_with_affinity() {
                let node = &nodes[i as usize];
                process_node(node, &node.pods_with_affinity);
            }
        }
        (!scores.is_empty()).then_some(PreScoreState {
            topology_score: scores,
        })
    }
}

/// `Score`: the sum of the topology scores of the node's label values.
fn node_score(s: &PreScoreState, node: &NodeInfo) -> i64 {
    let mut score = 0i64;
    for (key, values) in &s.topology_score {
        if let Some(v) = node.labels.get(key) {
            score += values.get(v.as_str()).copied().unwrap_or(0);
        }
    }
    score
}

/// `NormalizeScore` (v1.22): min-max over the feasible nodes, `100 * (s - min) / (max - min)`
/// in floating point, truncated; every score 0 when all are equal.
pub(crate) fn normalize(scores: &mut [i64]) {
    let mut min = i64::MAX;
    let mut max = -i64::MAX;
    for &s in scores.iter() {
        max = max.max(s);
        min = min.min(s);
    }
    let diff = max.saturating_sub(min);
    for s in scores.iter_mut() {
        let mut f = 0f64;
        if diff > 0 {
            f = MAX_NODE_SCORE as f64 * ((*s - min) as f64 / diff as f64);
        }
        *s = f as i64;
    }
}

fn read_state(state: &CycleState) -> Result<&PreScoreState, Status> {
    state
        .read::<PreScoreState>(PRE_SCORE_STATE_KEY)
        .ok_or_else(|| Status::error("failed to read \"PreScoreInterPodAffinity\" from cycleState"))
}

impl ScorePlugin for InterPodAffinity {
    fn name(&self) -> &'static str {
        NAME
    }

    /// `Uniform(0)` when no topology score exists (no preferred term of the pod, no existing pod
    /// with scoring terms, or nothing matched): v1.22's NormalizeScore then leaves every raw
    /// score at 0.
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        _feasible: &[u32],
    ) -> Result<ScoreMode, Status> {
        match self.compute_pre_score_state(pod, snapshot) {
            None => Ok(ScoreMode::Uniform(0)),
            Some(s) => {
                state.write(PRE_SCORE_STATE_KEY, s);
                Ok(ScoreMode::PerNode)
            }
        }
    }

    fn score(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        Ok(node_score(read_state(state)?, node))
    }

    /// [`ScorePlugin::score`] over the feasible nodes, reading the PreScore state once.
    fn score_nodes(
        &self,
        state: &CycleState,
        _pod: &PodInfo,
        snapshot: &Snapshot,
        feasible: &[u32],
        out: &mut [i64],
    ) -> Result<(), Status> {
        let s = read_state(state)?;
        score_feasible(snapshot, feasible, out, |n| node_score(s, n));
        Ok(())
    }

    fn normalize_score(
        &self,
        _state: &CycleState,
        _pod: &PodInfo,
        _snapshot: &Snapshot,
        _feasible: &[u32],
        scores: &mut [i64],
    ) -> Result<(), Status> {
        normalize(scores);
        Ok(())
    }
}

#[cfg(test)]
#[path = "scoring_test.rs"]
mod tests;
