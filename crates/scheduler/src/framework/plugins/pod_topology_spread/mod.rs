//! `PodTopologySpread` (legacy predicate `EvenPodsSpread`, priority `EvenPodsSpreadPriority`):
//! `topologySpreadConstraints` with `whenUnsatisfiable: DoNotSchedule` as a filter (maxSkew), and
//! with `ScheduleAnyway` as a score.
//!
//! Follows kube-scheduler v1.22 `pkg/scheduler/framework/plugins/podtopologyspread`
//! (`common.go`, `filtering.go`, `scoring.go`, `plugin.go`). Copies read: `scoring.go` (index id
//! 320840452, v1.20/21-era; v1.22 differs only in using the framework's parallelizer),
//! `filtering.go` as quoted in the discussion of kubernetes/kubernetes#106971 (v1.22:
//! `pl.parallelizer`, `nodeaffinity.GetRequiredNodeAffinity`), `pkg/scheduler/apis/config/v1beta2/defaults.go`
//! (kubernetes/kubernetes @0cd75e8fec62a2531637e80bb950ac9983cac1b0, same defaulting as v1.22).
//!
//! Defaulting follows the `DefaultPodTopologySpread` feature gate (`policy::FeatureGates`, set
//! by `--feature-gates`). On, as v1.22 defaults it, `SelectorSpreadPriority` and the default
//! profile configure `defaultingType: System`: pods without `topologySpreadConstraints` get
//! hostname/3 and zone/5 `ScheduleAnyway` constraints over the pods their Services / controllers
//! select ([`PodTopologySpread::system_defaulting`]); `EvenPodsSpreadPriority` alone configures
//! `List`. Off, v1beta2 `SetDefaults_PodTopologySpreadArgs` sets `defaultingType: List` and the
//! Policy path passes no `defaultConstraints`, so such pods get no constraint at all
//! ([`PodTopologySpread::new`]).
//!
//! v1.22 behaviours kept on purpose: in PreFilter, the pods of *every* node whose topology value
//! is a domain of an eligible node are counted, including nodes the pod's node affinity/selector
//! excludes (kubernetes/kubernetes#106971, changed in v1.24 by #107009); counts are keyed by
//! topology pair, so two constraints with the same key share them (the API server rejects such
//! duplicates). Not ported: PreFilterExtensions (`AddPod`/`RemovePod`, used by preemption) and the
//! `minDomains`, `nodeAffinityPolicy`, `nodeTaintsPolicy` and `matchLabelKeys` fields, which
//! v1.22 does not have.

mod filtering;
mod scoring;

pub use filtering::{ERR_REASON_CONSTRAINTS_NOT_MATCH, ERR_REASON_NODE_LABEL_NOT_MATCH};

use crate::labels::Labels;
use crate::model::NodeInfo;
use crate::model::PodInfo;
use crate::model::{Selector, SpreadConstraint, WhenUnsatisfiable};
use crate::snapshot::Snapshot;

/// Plugin name.
pub const NAME: &str = "PodTopologySpread";

/// `v1.LabelHostname`: per-node domains, counted during Score rather than in PreScore.
pub const LABEL_HOSTNAME: &str = "kubernetes.io/hostname";
/// `v1.LabelTopologyZone`.
pub const LABEL_TOPOLOGY_ZONE: &str = "topology.kubernetes.io/zone";

/// The PodTopologySpread filter and scorer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodTopologySpread {
    /// `defaultConstraints` applied to pods without `topologySpreadConstraints`; their
    /// selectors are ignored and replaced by the pod's default selector (Services, RC, RS, SS).
    default_constraints: Vec<SpreadConstraint>,
    /// `systemDefaulted`: `defaultingType: System`. Scoring then does not require a node to carry
    /// every topology key for a pod without its own constraints (kubernetes/kubernetes#105046,
    /// in release-1.22 since v1.22.5 via #106604).
    system_defaulted: bool,
}

impl PodTopologySpread {
    /// `defaultingType: List` without `defaultConstraints`: what v1.22 configures for a Policy
    /// when `DefaultPodTopologySpread` is off.
    pub fn new() -> PodTopologySpread {
        PodTopologySpread::default()
    }

    /// `defaultingType: List` with these `defaultConstraints` (their `labelSelector` must be
    /// unset, as `ValidatePodTopologySpreadArgs` requires; it is ignored here).
    pub fn with_default_constraints(constraints: Vec<SpreadConstraint>) -> PodTopologySpread {
        PodTopologySpread {
            default_constraints: constraints,
            system_defaulted: false,
        }
    }

    /// `defaultingType: System` (`systemDefaultConstraints`): hostname maxSkew 3 and zone
    /// maxSkew 5, both `ScheduleAnyway`; nodes without a zone label are still scored for pods
    /// that get these defaults (`requireAllTopologies` is false for them).
    pub fn system_defaulting() -> PodTopologySpread {
        let c = |key: &str, max_skew| SpreadConstraint {
            max_skew,
            topology_key: key.to_string(),
            when_unsatisfiable: WhenUnsatisfiable::ScheduleAnyway,
            selector: Selector::Nothing,
        };
        PodTopologySpread {
            default_constraints: vec![c(LABEL_HOSTNAME, 3), c(LABEL_TOPOLOGY_ZONE, 5)],
            system_defaulted: true,
        }
    }

    /// The pod's constraints with `when_unsatisfiable` == `action`
    /// (`filterTopologySpreadConstraints`), or when it has none at all, the default constraints
    /// with `action` and its default selector (`buildDefaultConstraints`; none when nothing
    /// selects the pod).
    pub(crate) fn constraints(
        &self,
        pod: &PodInfo,
        snapshot: &Snapshot,
        action: WhenUnsatisfiable,
    ) -> Vec<SpreadConstraint> {
        if !pod.topology_spread_constraints.is_empty() {
            return pod
                .topology_spread_constraints
                .iter()
                .filter(|c| c.when_unsatisfiable == action)
                .cloned()
                .collect();
        }
        if !self
            .default_constraints
            .iter()
            .any(|c| c.when_unsatisfiable == action)
        {
            return Vec::new();
        }
        let selector = snapshot.default_selector(pod);
        if selector.is_empty() {
            return Vec::new();
        }
        self.default_constraints
            .iter()
            .filter(|c| c.when_unsatisfiable == action)
            .map(|c| SpreadConstraint {
                selector: Selector::Match(selector.clone()),
                ..c.clone()
            })
            .collect()
    }
}

/// Counts per topology pair (`TpPairToMatchNum`, `TopologyPairToPodCounts`), stored per distinct
/// topology key ("slot") so that the per-node lookups hash only the node's value. Constraints
/// that share a key share the slot, as upstream's pair-keyed maps do.
#[derive(Debug, Default)]
pub(crate) struct PairCounts<T> {
    /// The distinct topology keys.
    keys: Vec<String>,
    /// Per key: topology value → count.
    values: Vec<std::collections::HashMap<String, T>>,
    /// Per constraint: its key's slot.
    slot_of: Vec<usize>,
}

impl<T: Copy + Default> PairCounts<T> {
    /// Slots for `constraints`, all empty.
    pub(crate) fn new(constraints: &[SpreadConstraint]) -> PairCounts<T> {
        let mut pc = PairCounts {
            keys: Vec::new(),
            values: Vec::new(),
            slot_of: Vec::with_capacity(constraints.len()),
        };
        for c in constraints {
            let slot = match pc.keys.iter().position(|k| *k == c.topology_key) {
                Some(i) => i,
                None => {
                    pc.keys.push(c.topology_key.clone());
                    pc.values.push(std::collections::HashMap::new());
                    pc.keys.len() - 1
                }
            };
            pc.slot_of.push(slot);
        }
        pc
    }

    /// Create the pair (constraint `i`'s key, `value`) with count 0 when absent; true when it
    /// was created.
    #[inline]
    pub(crate) fn ensure(&mut self, i: usize, value: &str) -> bool {
        let m = &mut self.values[self.slot_of[i]];
        if m.contains_key(value) {
            false
        } else {
            m.insert(value.to_string(), T::default());
            true
        }
    }

    /// The count of the pair, when it exists.
    #[inline]
    pub(crate) fn get(&self, i: usize, value: &str) -> Option<T> {
        self.values[self.slot_of[i]].get(value).copied()
    }

    /// The count of the pair, when it exists, mutably.
    #[inline]
    pub(crate) fn get_mut(&mut self, i: usize, value: &str) -> Option<&mut T> {
        self.values[self.slot_of[i]].get_mut(value)
    }

    /// The counts of constraint `i`'s key.
    pub(crate) fn values_of(&self, i: usize) -> impl Iterator<Item = T> + '_ {
        self.values[self.slot_of[i]].values().copied()
    }

    /// Every pair `(key, value, count)`, for tests and debugging.
    #[allow(dead_code)]
    pub(crate) fn pairs(&self) -> Vec<(String, String, T)> {
        self.keys
            .iter()
            .zip(&self.values)
            .flat_map(|(k, m)| m.iter().map(move |(v, n)| (k.clone(), v.clone(), *n)))
            .collect()
    }
}

/// `nodeLabelsMatchSpreadConstraints`: the node has every topology key.
#[inline]
pub(crate) fn node_has_all_keys(labels: &Labels, constraints: &[SpreadConstraint]) -> bool {
    constraints
        .iter()
        .all(|c| labels.contains_key(&c.topology_key))
}

/// `countPodsMatchSelector`: pods on the node in `namespace`, not terminating, whose labels
/// match `selector`.
#[inline]
pub(crate) fn count_pods_match_selector(
    node: &NodeInfo,
    selector: &Selector,
    namespace: &str,
) -> i64 {
    if matches!(selector, Selector::Nothing) {
        return 0;
    }
    node.pods
        .iter()
        .filter(|p| !p.terminating && p.namespace == namespace && selector.matches(&p.labels))
        .count() as i64
}
