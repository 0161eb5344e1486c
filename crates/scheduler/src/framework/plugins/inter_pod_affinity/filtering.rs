//! InterPodAffinity PreFilter and Filter (v1.22 `interpodaffinity/filtering.go`).

use std::borrow::Cow;

use super::{InterPodAffinity, NAME, TopologyCounts, add_count, count_of};
use crate::framework::plugins::retain_passing;
use crate::framework::{Code, CycleState, FilterPlugin, Status};
use crate::model::AffinityTerm;
use crate::model::NodeInfo;
use crate::model::PodInfo;
use crate::snapshot::Snapshot;

/// `ErrReasonAffinityNotMatch`: the first reason of every InterPodAffinity failure in v1.22.
pub const ERR_REASON_AFFINITY_NOT_MATCH: &str =
    "node(s) didn't match pod affinity/anti-affinity rules";
/// `ErrReasonAffinityRulesNotMatch`: the incoming pod's required affinity is not satisfied.
pub const ERR_REASON_AFFINITY_RULES_NOT_MATCH: &str = "node(s) didn't match pod affinity rules";
/// `ErrReasonAntiAffinityRulesNotMatch`: the incoming pod's required anti-affinity is violated.
pub const ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH: &str =
    "node(s) didn't match pod anti-affinity rules";
/// `ErrReasonExistingAntiAffinityRulesNotMatch`: an existing pod's required anti-affinity
/// forbids the incoming pod.
pub const ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH: &str =
    "node(s) didn't satisfy existing pods anti-affinity rules";

/// `preFilterStateKey` = `"PreFilter" + Name`.
const PRE_FILTER_STATE_KEY: &str = "PreFilterInterPodAffinity";

/// `preFilterState`: the topology pair counts of one incoming pod.
#[derive(Debug, Default)]
pub(crate) struct PreFilterState {
    /// Pairs where an existing pod's required anti-affinity term matches the incoming pod.
    pub(crate) existing_anti_affinity_counts: TopologyCounts,
    /// Pairs where existing pods match all of the incoming pod's required affinity terms (one
    /// count per term).
    pub(crate) affinity_counts: TopologyCounts,
    /// Pairs where existing pods match one of the incoming pod's required anti-affinity terms.
    pub(crate) anti_affinity_counts: TopologyCounts,
    /// The incoming pod's required affinity terms, namespace selectors resolved.
    required_affinity: Vec<AffinityTerm>,
    /// The incoming pod's required anti-affinity terms, namespace selectors resolved.
    required_anti_affinity: Vec<AffinityTerm>,
    /// The incoming pod matches all of its own required affinity terms
    /// (`podMatchesAllAffinityTerms(terms, pod)`; false when it has none).
    matches_own_affinity: bool,
}

/// `podMatchesAllAffinityTerms`: false for no terms; the terms' namespace selectors are already
/// merged into their namespaces, so no namespace labels are needed.
fn matches_all(terms: &[AffinityTerm], namespace: &str, labels: &crate::labels::Labels) -> bool {
    !terms.is_empty() && terms.iter().all(|t| t.matches(namespace, labels, None))
}

impl InterPodAffinity {
    /// `PreFilter` / `calPreFilterState`.
    pub(crate) fn compute_pre_filter_state(
        &self,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> Option<PreFilterState> {
        let own = &pod.pod_affinity;
        let has_own_terms =
            !own.required_affinity.is_empty() || !own.required_anti_affinity.is_empty();
        let anti_nodes = snapshot.nodes_with_required_anti_affinity();
        if !has_own_terms && anti_nodes.is_empty() {
            return None;
        }
        let nodes = snapshot.nodes();

        // getExistingAntiAffinityCounts: existing pods' required anti-affinity terms that match
        // the incoming pod, on the nodes that hold such pods.
        let ns_labels = snapshot.namespace_labels(&pod.namespace);
        let mut existing = TopologyCounts::new();
        for &i in anti_nodes {
            let node = &nodes[i as usize];
            for p in &node.pods_with_required_anti_affinity {
                for t in &p.pod_affinity.required_anti_affinity {
                    if t.matches(&pod.namespace, &pod.labels, ns_labels) {
                        add_count(&mut existing, node, &t.topology_key, 1);
                    }
                }
            }
        }
        if !has_own_terms && existing.is_empty() {
            // Nothing to check: every node passes.
            return None;
        }

        let required_affinity: Vec<AffinityTerm> = own
            .required_affinity
            .iter()
            .map(|t| snapshot.merged_term(t))
            .collect();
        let required_anti_affinity: Vec<AffinityTerm> = own
            .required_anti_affinity
            .iter()
            .map(|t| snapshot.merged_term(t))
            .collect();

        // getIncomingAffinityAntiAffinityCounts: existing pods matched by the incoming pod's
        // terms, over all nodes.
        let mut affinity_counts = TopologyCounts::new();
        let mut anti_affinity_counts = TopologyCounts::new();
        if has_own_terms {
            for node in nodes {
                for p in &node.pods {
                    if matches_all(&required_affinity, &p.namespace, &p.labels) {
                        for t in &required_affinity {
                            add_count(&mut affinity_counts, node, &t.topology_key, 1);
                        }
                    }
                    for t in &required_anti_affinity {
                        if t.matches(&p.namespace, &p.labels, None) {
                            add_count(&mut anti_affinity_counts, node, &t.topology_key, 1);
                        }
                    }
                }
            }
        }
        let matches_own_affinity = matches_all(&required_affinity, &pod.namespace, &pod.labels);
        Some(PreFilterState {
            existing_anti_affinity_counts: existing,
            affinity_counts,
            anti_affinity_counts,
            required_affinity,
            required_anti_affinity,
            matches_own_affinity,
        })
    }
}

/// `satisfyExistingPodsAntiAffinity`: no pair of the node (among the keys that carry counts)
/// has an existing pod whose anti-affinity matches the incoming pod. Upstream walks the node's
/// labels; walking the counted keys instead gives the same answer in O(keys).
fn satisfy_existing_pods_anti_affinity(s: &PreFilterState, node: &NodeInfo) -> bool {
    s.existing_anti_affinity_counts.iter().all(|(key, values)| {
        node.labels
            .get(key)
            .is_none_or(|v| values.get(v.as_str()).is_none_or(|c| *c <= 0))
    })
}

/// `satisfyPodAntiAffinity`.
fn satisfy_pod_anti_affinity(s: &PreFilterState, node: &NodeInfo) -> bool {
    if s.anti_affinity_counts.is_empty() {
        return true;
    }
    s.required_anti_affinity.iter().all(|t| {
        node.labels
            .get(&t.topology_key)
            .is_none_or(|v| count_of(&s.anti_affinity_counts, &t.topology_key, v) <= 0)
    })
}

/// `satisfyPodAffinity`, with the "first pod of a collection" rule: when no existing pod
/// matches the terms anywhere, a pod that matches its own terms may go on any node that has
/// every topology key.
fn satisfy_pod_affinity(s: &PreFilterState, node: &NodeInfo) -> bool {
    let mut pods_exist = true;
    for t in &s.required_affinity {
        match node.labels.get(&t.topology_key) {
            Some(v) => {
                if count_of(&s.affinity_counts, &t.topology_key, v) <= 0 {
                    pods_exist = false;
                }
            }
            // All topology labels must exist on the node.
            None => return false,
        }
    }
    pods_exist || (s.affinity_counts.is_empty() && s.matches_own_affinity)
}

fn unschedulable(code: Code, reason: &'static str) -> Status {
    Status {
        code,
        reasons: vec![
            Cow::Borrowed(ERR_REASON_AFFINITY_NOT_MATCH),
            Cow::Borrowed(reason),
        ],
        plugin: "",
    }
}

impl FilterPlugin for InterPodAffinity {
    fn name(&self) -> &'static str {
        NAME
    }

    /// Skip when the pod has no required (anti-)affinity term and no existing pod's required
    /// anti-affinity term matches it.
    fn pre_filter(&self, state: &mut CycleState, pod: &PodInfo, snapshot: &Snapshot) -> Status {
        match self.compute_pre_filter_state(pod, snapshot) {
            None => Status::skip(),
            Some(s) => {
                state.write(PRE_FILTER_STATE_KEY, s);
                Status::success()
            }
        }
    }

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
    Status::error("error reading \"PreFilterInterPodAffinity\" from cycleState: not found")
}

/// `Filter`: the incoming pod's affinity, then its anti-affinity, then the existing pods'
/// anti-affinity.
fn filter_node(s: &PreFilterState, node: &NodeInfo) -> Status {
    if !satisfy_pod_affinity(s, node) {
        return unschedulable(
            Code::UnschedulableAndUnresolvable,
            ERR_REASON_AFFINITY_RULES_NOT_MATCH,
        );
    }
    if !satisfy_pod_anti_affinity(s, node) {
        return unschedulable(
            Code::Unschedulable,
            ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
        );
    }
    if !satisfy_existing_pods_anti_affinity(s, node) {
        return unschedulable(
            Code::Unschedulable,
            ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
        );
    }
    Status::success()
}

#[cfg(test)]
#[path = "filtering_test.rs"]
mod tests;
