//! `SelectorSpread` (legacy priorities `SelectorSpreadPriority` and `ServiceSpreadingPriority`):
//! spreads the pods selected by the same Services, ReplicationController, ReplicaSet or
//! StatefulSet over nodes and zones. Follows
//! `pkg/scheduler/framework/plugins/selectorspread/selector_spread.go` and
//! `helper.DefaultSelector` (v1.22).
//!
//! Score = number of pods on the node in the pod's namespace, not terminating, matched by the
//! pod's default selector. NormalizeScore: `100 * (maxNode - count) / maxNode` (100 when every
//! count is 0); when feasible nodes carry zone labels, blended with the zone score as
//! `node * 1/3 + zone * 2/3`. Pods with `topologySpreadConstraints` are skipped (score 0).

use crate::framework::types::NodeInfo;
use crate::framework::{CycleState, MAX_NODE_SCORE, PodInfo, ScoreMode, ScorePlugin, Status};
use crate::labels::LabelSelector;
use crate::snapshot::Snapshot;

/// Plugin name.
pub const NAME: &str = "SelectorSpread";
/// Weight of the zone score (`zoneWeighting`).
pub const ZONE_WEIGHTING: f64 = 2.0 / 3.0;

/// The SelectorSpread scorer.
#[derive(Debug, Default, Clone, Copy)]
pub struct SelectorSpread;

struct PreScoreState {
    selector: LabelSelector,
}

/// `countMatchingPods`.
pub fn count_matching_pods(namespace: &str, selector: &LabelSelector, node: &NodeInfo) -> i64 {
    if node.pods.is_empty() || selector.is_empty() {
        return 0;
    }
    node.pods
        .iter()
        .filter(|p| p.namespace == namespace && !p.terminating && selector.matches(&p.labels))
        .count() as i64
}

impl ScorePlugin for SelectorSpread {
    fn name(&self) -> &'static str {
        NAME
    }

    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        _feasible: &[u32],
    ) -> Result<ScoreMode, Status> {
        if pod.has_topology_spread_constraints {
            return Ok(ScoreMode::Uniform(0));
        }
        let selector = snapshot.default_selector(pod);
        if selector.is_empty() {
            // Every count is 0, so NormalizeScore gives every node the maximum.
            return Ok(ScoreMode::Uniform(MAX_NODE_SCORE));
        }
        state.write(NAME, PreScoreState { selector });
        Ok(ScoreMode::PerNode)
    }

    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let s = state
            .read::<PreScoreState>(NAME)
            .ok_or_else(|| Status::error("error reading \"PreScoreSelectorSpread\" from cycleState"))?;
        Ok(count_matching_pods(&pod.namespace, &s.selector, node))
    }

    fn normalize_score(
        &self,
        _state: &CycleState,
        _pod: &PodInfo,
        snapshot: &Snapshot,
        feasible: &[u32],
        scores: &mut [i64],
    ) -> Result<(), Status> {
        let nodes = snapshot.nodes();
        let mut counts_by_zone: Vec<(&str, i64)> = Vec::new();
        let mut max_by_node = 0i64;
        for (s, &i) in scores.iter().zip(feasible) {
            max_by_node = max_by_node.max(*s);
            let zone = nodes[i as usize].zone.as_str();
            if zone.is_empty() {
                continue;
            }
            match counts_by_zone.iter_mut().find(|(z, _)| *z == zone) {
                Some((_, c)) => *c += *s,
                None => counts_by_zone.push((zone, *s)),
            }
        }
        let max_by_zone = counts_by_zone.iter().map(|(_, c)| *c).max().unwrap_or(0);
        let have_zones = !counts_by_zone.is_empty();
        let max = MAX_NODE_SCORE as f64;
        for (s, &i) in scores.iter_mut().zip(feasible) {
            let mut f = max;
            if max_by_node > 0 {
                f = max * ((max_by_node - *s) as f64 / max_by_node as f64);
            }
            if have_zones {
                let zone = nodes[i as usize].zone.as_str();
                if !zone.is_empty() {
                    let mut zone_score = max;
                    if max_by_zone > 0 {
                        let c = counts_by_zone
                            .iter()
                            .find(|(z, _)| *z == zone)
                            .map_or(0, |(_, c)| *c);
                        zone_score = max * ((max_by_zone - c) as f64 / max_by_zone as f64);
                    }
                    f = f * (1.0 - ZONE_WEIGHTING) + ZONE_WEIGHTING * zone_score;
                }
            }
            *s = f as i64;
        }
        Ok(())
    }
}
