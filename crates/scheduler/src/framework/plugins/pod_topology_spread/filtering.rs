//! PodTopologySpread PreFilter and Filter (v1.22 `podtopologyspread/filtering.go`).

use super::{NAME, PairCounts, PodTopologySpread, count_pods_match_selector, node_has_all_keys};
use crate::framework::plugins::{node_affinity, retain_passing};
use crate::framework::{Code, CycleState, FilterPlugin, Status};
use crate::model::NodeInfo;
use crate::model::PodInfo;
use crate::model::{SpreadConstraint, WhenUnsatisfiable};
use crate::snapshot::Snapshot;

/// `ErrReasonConstraintsNotMatch`.
pub const ERR_REASON_CONSTRAINTS_NOT_MATCH: &str =
    "node(s) didn't match pod topology spread constraints";
/// `ErrReasonNodeLabelNotMatch`: the node lacks a constraint's topology key.
pub const ERR_REASON_NODE_LABEL_NOT_MATCH: &str =
    "node(s) didn't match pod topology spread constraints (missing required label)";

/// `preFilterStateKey` = `"PreFilter" + Name`.
const PRE_FILTER_STATE_KEY: &str = "PreFilterPodTopologySpread";

/// `preFilterState`.
#[derive(Debug, Default)]
pub(crate) struct PreFilterState {
    /// The `DoNotSchedule` constraints.
    pub(crate) constraints: Vec<SpreadConstraint>,
    /// `TpPairToMatchNum`: matching pods per topology pair, for the domains of eligible nodes
    /// (a node that matches the pod's node affinity/selector and has every key).
    pub(crate) tp_pair_to_match_num: PairCounts<i32>,
    /// `TpKeyToCriticalPaths[key][0].MatchNum` per constraint: the smallest count of a domain of
    /// the constraint's key (`i32::MAX` when there is none).
    pub(crate) min_match_num: Vec<i32>,
    /// Per constraint: 1 when the incoming pod matches the constraint's selector, else 0
    /// (`selfMatchNum`, the same on every node).
    pub(crate) self_match_num: Vec<i64>,
}

impl PodTopologySpread {
    /// `calPreFilterState`; `None` when the pod has no `DoNotSchedule` constraint.
    pub(crate) fn compute_pre_filter_state(
        &self,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> Option<PreFilterState> {
        let constraints = self.constraints(pod, snapshot, WhenUnsatisfiable::DoNotSchedule);
        if constraints.is_empty() {
            return None;
        }
        let nodes = snapshot.nodes();
        let mut pairs = PairCounts::<i32>::new(&constraints);
        for node in nodes {
            // "If NodeAffinity or NodeSelector is defined, spreading is applied to nodes that
            // pass those filters", and the node must carry every topology key.
            if !node_affinity::matches(pod, node) || !node_has_all_keys(&node.labels, &constraints)
            {
                continue;
            }
            for (i, c) in constraints.iter().enumerate() {
                if let Some(v) = node.labels.get(&c.topology_key) {
                    pairs.ensure(i, v);
                }
            }
        }
        // processNode: over all nodes, as v1.22 does (see the module docs).
        for node in nodes {
            if node.pods.is_empty() {
                continue;
            }
            for (i, c) in constraints.iter().enumerate() {
                let value = node.labels.get(&c.topology_key).map_or("", String::as_str);
                let Some(count) = pairs.get_mut(i, value) else {
                    continue;
                };
                let n = count_pods_match_selector(node, &c.selector, &pod.namespace);
                *count = count.saturating_add(i32::try_from(n).unwrap_or(i32::MAX));
            }
        }
        let min_match_num = (0..constraints.len())
            .map(|i| pairs.values_of(i).min().unwrap_or(i32::MAX))
            .collect();
        let self_match_num = constraints
            .iter()
            .map(|c| i64::from(c.selector.matches(&pod.labels)))
            .collect();
        Some(PreFilterState {
            constraints,
            tp_pair_to_match_num: pairs,
            min_match_num,
            self_match_num,
        })
    }
}

impl FilterPlugin for PodTopologySpread {
    fn name(&self) -> &'static str {
        NAME
    }

    /// Skip when the pod has no `DoNotSchedule` constraint (v1.22's "empty preFilterState
    /// tolerates every pod").
    fn pre_filter(&self, state: &mut CycleState, pod: &PodInfo, snapshot: &Snapshot) -> Status {
        match self.compute_pre_filter_state(pod, snapshot) {
            None => Status::skip(),
            Some(s) => {
                state.write(PRE_FILTER_STATE_KEY, s);
                Status::success()
            }
        }
    }

    /// For every constraint: the node has the topology key, and
    /// `matching pods in the node's domain + (1 if the pod matches the selector) - minimum over
    /// domains <= maxSkew`.
    fn filter(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        match state.read::<PreFilterState>(PRE_FILTER_STATE_KEY) {
            Some(s) => filter_node(s, node),
            None => missing_state(),
        }
    }

    /// [`FilterPlugin::filter`] over the candidates, reading the PreFilter state once.
    fn filter_nodes(
        &self,
        state: &CycleState,
        _pod: &PodInfo,
        snapshot: &Snapshot,
        candidates: &mut Vec<u32>,
        failed: &mut Vec<(u32, Status)>,
    ) {
        let s = state.read::<PreFilterState>(PRE_FILTER_STATE_KEY);
        retain_passing(NAME, snapshot, candidates, failed, |n| match s {
            Some(s) => filter_node(s, n),
            None => missing_state(),
        });
    }
}

fn missing_state() -> Status {
    Status::error("reading \"PreFilterPodTopologySpread\" from cycleState: not found")
}

/// `Filter` on one node.
fn filter_node(s: &PreFilterState, node: &NodeInfo) -> Status {
    for (i, c) in s.constraints.iter().enumerate() {
        let Some(value) = node.labels.get(&c.topology_key) else {
            return Status::new(
                Code::UnschedulableAndUnresolvable,
                ERR_REASON_NODE_LABEL_NOT_MATCH,
            );
        };
        let match_num = s.tp_pair_to_match_num.get(i, value).unwrap_or(0);
        let skew = i64::from(match_num) + s.self_match_num[i] - i64::from(s.min_match_num[i]);
        if skew > i64::from(c.max_skew) {
            return Status::new(Code::Unschedulable, ERR_REASON_CONSTRAINTS_NOT_MATCH);
        }
    }
    Status::success()
}

#[cfg(test)]
#[path = "filtering_test.rs"]
mod tests;
