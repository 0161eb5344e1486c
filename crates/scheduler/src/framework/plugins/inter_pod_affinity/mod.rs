//! `InterPodAffinity` (legacy predicate `MatchInterPodAffinity`, priority
//! `InterPodAffinityPriority`): required pod affinity and anti-affinity as a filter, preferred
//! terms (and existing pods' required affinity, mirrored with `hardPodAffinityWeight`) as a
//! score.
//!
//! Follows kube-scheduler v1.22 `pkg/scheduler/framework/plugins/interpodaffinity`
//! (`filtering.go`, `scoring.go`, `plugin.go`) with the `PodAffinityNamespaceSelector` feature
//! gate on (beta and on by default in v1.22). Copies read: `filtering.go` (index id 180811201,
//! v1.22-era: `enableNamespaceSelector`, `ParseError`, parallelizer), `scoring.go` and
//! `plugin.go` from wu0407/kubernetes-code-analysis @3e258f30c2f20eb46689088924d1c98aa67a717e
//! (v1.22 with comments added).
//!
//! Cost: a pod without required terms pays nothing in PreFilter when no existing pod has
//! required anti-affinity ([`Snapshot::nodes_with_required_anti_affinity`], O(1)); a pod without
//! preferred terms pays nothing in PreScore when no existing pod has scoring terms
//! ([`Snapshot::nodes_with_affinity`]). Otherwise PreFilter/PreScore are O(pods) once per pod,
//! and Filter/Score are O(terms) per node, as upstream.
//!
//! Not ported: PreFilterExtensions `AddPod`/`RemovePod` (used by preemption, which this
//! scheduler does not run) and `EventsToRegister` (the controller moves pods on every cluster
//! event it handles).

mod filtering;
mod scoring;

use std::collections::HashMap;

pub use filtering::{
    ERR_REASON_AFFINITY_NOT_MATCH, ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH, ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
};

use crate::model::NodeInfo;
#[cfg(doc)]
use crate::snapshot::Snapshot;

/// Plugin name.
pub const NAME: &str = "InterPodAffinity";

/// `v1.DefaultHardPodAffinitySymmetricWeight`: the weight of an existing pod's required
/// affinity term when the incoming pod matches it (`InterPodAffinityArgs.HardPodAffinityWeight`
/// default).
pub const DEFAULT_HARD_POD_AFFINITY_WEIGHT: i32 = 1;

/// The InterPodAffinity filter and scorer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InterPodAffinity {
    hard_pod_affinity_weight: i32,
}

impl Default for InterPodAffinity {
    fn default() -> Self {
        InterPodAffinity::new(DEFAULT_HARD_POD_AFFINITY_WEIGHT)
    }
}

impl InterPodAffinity {
    /// A plugin with `InterPodAffinityArgs.HardPodAffinityWeight` = `hard_pod_affinity_weight`
    /// (Policy `hardPodAffinitySymmetricWeight`, 0..=100 after validation; 0 in a Policy means
    /// "unset" and the caller passes the default 1; 0 here disables the mirrored term, as upstream's
    /// `if pl.args.HardPodAffinityWeight > 0`).
    pub fn new(hard_pod_affinity_weight: i32) -> InterPodAffinity {
        InterPodAffinity {
            hard_pod_affinity_weight,
        }
    }

    /// The configured hard pod affinity weight.
    pub fn hard_pod_affinity_weight(&self) -> i32 {
        self.hard_pod_affinity_weight
    }
}

/// Counts per topology pair (`topologyToMatchedTermCount`), as topology key → value → count so
/// lookups borrow the node's label strings.
pub(crate) type TopologyCounts = HashMap<String, HashMap<String, i64>>;

/// `topologyToMatchedTermCount.update`: add `value` to the pair (`key`, node's value for `key`)
/// when the node has the label.
#[inline]
pub(crate) fn add_count(counts: &mut TopologyCounts, node: &NodeInfo, key: &str, value: i64) {
    if let Some(v) = node.labels.get(key) {
        match counts.get_mut(key) {
            Some(m) => match m.get_mut(v.as_str()) {
                Some(c) => *c += value,
                None => {
                    m.insert(v.clone(), value);
                }
            },
            None => {
                counts.insert(key.to_string(), HashMap::from([(v.clone(), value)]));
            }
        }
    }
}

/// The count of pair (`key`, `value`), 0 when absent.
#[inline]
pub(crate) fn count_of(counts: &TopologyCounts, key: &str, value: &str) -> i64 {
    counts
        .get(key)
        .and_then(|m| m.get(value))
        .copied()
        .unwrap_or(0)
}
