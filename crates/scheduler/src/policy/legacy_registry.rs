//! The legacy registry's name tables: predicate and priority names → Scheduling Framework
//! plugins, aliases, defaults, mandatory predicates and removed names, as kube-scheduler v1.22
//! knows them, and the default provider's plugins. Transcribed from upstream; the translation
//! of a Policy through these tables is [`super::resolve`], its result [`super::ResolvedPolicy`].
//!
//! Upstream: kubernetes/kubernetes `pkg/scheduler/framework/plugins/legacy_registry.go`
//! @054d429d9f8bc8de4fc82e6cf2281e12a13fe1f2 (v1.21/v1.22) and
//! `pkg/scheduler/apis/config/v1beta1/default_plugins.go` (v1.22).
//!
//! Every plugin these tables name is one this build provides (`framework::new_filter`
//! / `new_score`; the policy tests iterate the tables to prove it), so every v1.22 name loads.

use std::sync::LazyLock;

/// Predicates registered in v1.22's legacy registry with their filter plugins, in
/// `predicateOrdering` (which lists all 19 keys).
pub(super) const PREDICATES: &[(&str, &[&str])] = &[
    ("CheckNodeUnschedulable", &["NodeUnschedulable"]),
    (
        "GeneralPredicates",
        &["NodeResourcesFit", "NodeName", "NodePorts", "NodeAffinity"],
    ),
    ("HostName", &["NodeName"]),
    ("PodFitsHostPorts", &["NodePorts"]),
    ("MatchNodeSelector", &["NodeAffinity"]),
    ("PodFitsResources", &["NodeResourcesFit"]),
    ("NoDiskConflict", &["VolumeRestrictions"]),
    ("PodToleratesNodeTaints", &["TaintToleration"]),
    ("CheckNodeLabelPresence", &["NodeLabel"]),
    ("CheckServiceAffinity", &["ServiceAffinity"]),
    ("MaxEBSVolumeCount", &["EBSLimits"]),
    ("MaxGCEPDVolumeCount", &["GCEPDLimits"]),
    ("MaxCSIVolumeCountPred", &["NodeVolumeLimits"]),
    ("MaxAzureDiskVolumeCount", &["AzureDiskLimits"]),
    ("MaxCinderVolumeCount", &["CinderLimits"]),
    ("CheckVolumeBinding", &["VolumeBinding"]),
    ("NoVolumeZoneConflict", &["VolumeZone"]),
    ("EvenPodsSpread", &["PodTopologySpread"]),
    ("MatchInterPodAffinity", &["InterPodAffinity"]),
];

/// `PodFitsPorts` → `PodFitsHostPorts` ("For compatibility reasons").
pub(super) const PREDICATE_ALIASES: &[(&str, &str)] = &[("PodFitsPorts", "PodFitsHostPorts")];

/// Always configured (`mandatoryPredicates`), in the order they are reported.
pub(super) const MANDATORY_PREDICATES: &[&str] =
    &["CheckNodeUnschedulable", "PodToleratesNodeTaints"];

/// `DefaultPredicates` (used when `predicates` is null), sorted.
pub(super) const DEFAULT_PREDICATES: &[&str] = &[
    "CheckNodeUnschedulable",
    "CheckVolumeBinding",
    "EvenPodsSpread",
    "GeneralPredicates",
    "MatchInterPodAffinity",
    "MaxAzureDiskVolumeCount",
    "MaxCSIVolumeCountPred",
    "MaxEBSVolumeCount",
    "MaxGCEPDVolumeCount",
    "NoDiskConflict",
    "NoVolumeZoneConflict",
    "PodToleratesNodeTaints",
];

/// Predicate keys a free-named entry with an argument resolves to.
pub(super) const SERVICE_AFFINITY_PREDICATE: &str = "CheckServiceAffinity";
pub(super) const NODE_LABEL_PREDICATE: &str = "CheckNodeLabelPresence";

/// Priorities registered in v1.22's legacy registry and their score plugin (with
/// `DefaultPodTopologySpread` off for `SelectorSpreadPriority`; see
/// [`super::ResolvedPolicy::with_feature_gates`] for the gate-on translation). `NodeLabel`, `ServiceAffinity`
/// and `RequestedToCapacityRatio` are the keys custom priorities (with an argument) resolve to;
/// they are registered names too. The `Gpu*`, `BestFitPriority` and `DotProductPriority` keys are
/// mini-scheduler's GPU placement scorers (the FGD paper's, not v1.22's).
pub(super) const PRIORITIES: &[(&str, &str)] = &[
    (
        "BalancedResourceAllocation",
        "NodeResourcesBalancedAllocation",
    ),
    ("BestFitPriority", "GpuBestFit"),
    ("DotProductPriority", "GpuDotProduct"),
    ("EvenPodsSpreadPriority", "PodTopologySpread"),
    ("GpuClusteringPriority", "GpuClustering"),
    (
        "GpuFragmentationCpuPackingPriority",
        "GpuFragmentationCpuPacking",
    ),
    ("GpuFragmentationFinePriority", "GpuFragmentationFine"),
    (
        "GpuFragmentationInstancesPriority",
        "GpuFragmentationInstances",
    ),
    ("GpuFragmentationPriority", "GpuFragmentation"),
    (
        "GpuFragmentationStrandingPriority",
        "GpuFragmentationStranding",
    ),
    ("GpuPackingPriority", "GpuPacking"),
    ("ImageLocalityPriority", "ImageLocality"),
    ("InterPodAffinityPriority", "InterPodAffinity"),
    ("LeastRequestedPriority", "NodeResourcesLeastAllocated"),
    ("MostRequestedPriority", "NodeResourcesMostAllocated"),
    ("NodeAffinityPriority", "NodeAffinity"),
    ("NodeLabel", "NodeLabel"),
    ("NodePreferAvoidPodsPriority", "NodePreferAvoidPods"),
    ("RequestedToCapacityRatio", "RequestedToCapacityRatio"),
    ("SelectorSpreadPriority", "SelectorSpread"),
    ("ServiceAffinity", "ServiceAffinity"),
    ("TaintTolerationPriority", "TaintToleration"),
];

/// Priority keys custom entries resolve to (also registered names).
pub(super) const NODE_LABEL_PRIORITY: &str = "NodeLabel";
pub(super) const SERVICE_AFFINITY_PRIORITY: &str = "ServiceAffinity";
pub(super) const REQUESTED_TO_CAPACITY_RATIO_PRIORITY: &str = "RequestedToCapacityRatio";

/// `ServiceSpreadingPriority` → `SelectorSpreadPriority`.
pub(super) const PRIORITY_ALIASES: &[(&str, &str)] =
    &[("ServiceSpreadingPriority", "SelectorSpreadPriority")];

/// Skipped by `createFromPolicy` in v1.18+ (no plugin).
pub(super) const EQUAL_PRIORITY: &str = "EqualPriority";

/// `DefaultPriorities` (used when `priorities` is null), sorted by name.
pub(super) const DEFAULT_PRIORITIES: &[(&str, i64)] = &[
    ("BalancedResourceAllocation", 1),
    ("EvenPodsSpreadPriority", 2),
    ("ImageLocalityPriority", 1),
    ("InterPodAffinityPriority", 1),
    ("LeastRequestedPriority", 1),
    ("NodeAffinityPriority", 1),
    ("NodePreferAvoidPodsPriority", 10000),
    ("SelectorSpreadPriority", 1),
    ("TaintTolerationPriority", 1),
];

const NODE_CONDITION_REASON: &str = "with TaintNodesByCondition (beta v1.12, GA v1.17) node conditions became taints \
     (node.kubernetes.io/not-ready, unreachable, memory-pressure, disk-pressure, pid-pressure, network-unavailable) \
     and kube-scheduler stopped registering the node-condition predicates; the mandatory PodToleratesNodeTaints \
     predicate (TaintToleration plugin, always on) enforces them now: delete this entry";

/// Names older releases registered that v1.22 does not know.
const REMOVED_PREDICATES: &[(&str, &str)] = &[
    ("CheckNodeCondition", NODE_CONDITION_REASON),
    ("CheckNodeMemoryPressure", NODE_CONDITION_REASON),
    ("CheckNodeDiskPressure", NODE_CONDITION_REASON),
    ("CheckNodePIDPressure", NODE_CONDITION_REASON),
    (
        "PodToleratesNodeNoExecuteTaints",
        "kube-scheduler v1.22 no longer registers it; PodToleratesNodeTaints (TaintToleration plugin, always on) \
         checks NoSchedule and NoExecute taints: delete this entry",
    ),
];

const REMOVED_PRIORITIES: &[(&str, &str)] = &[(
    "ResourceLimitsPriority",
    "it was an alpha priority behind the ResourceLimitsPriorityFunction feature gate and kube-scheduler v1.22 \
     no longer registers it; there is no replacement: delete this entry",
)];

/// Filter plugins of kube-scheduler v1.22's default profile (DefaultProvider), in upstream order,
/// with the legacy predicate each stands for (shown in explanations); see
/// [`super::default_provider`].
pub const DEFAULT_PROVIDER_FILTERS: &[(&str, &str)] = &[
    ("NodeUnschedulable", "CheckNodeUnschedulable"),
    ("NodeName", "HostName"),
    ("TaintToleration", "PodToleratesNodeTaints"),
    ("NodeAffinity", "MatchNodeSelector"),
    ("NodePorts", "PodFitsHostPorts"),
    ("NodeResourcesFit", "PodFitsResources"),
    ("VolumeRestrictions", "NoDiskConflict"),
    ("EBSLimits", "MaxEBSVolumeCount"),
    ("GCEPDLimits", "MaxGCEPDVolumeCount"),
    ("NodeVolumeLimits", "MaxCSIVolumeCountPred"),
    ("AzureDiskLimits", "MaxAzureDiskVolumeCount"),
    ("VolumeBinding", "CheckVolumeBinding"),
    ("VolumeZone", "NoVolumeZoneConflict"),
    ("PodTopologySpread", "EvenPodsSpread"),
    ("InterPodAffinity", "MatchInterPodAffinity"),
];

/// Score plugins of kube-scheduler v1.22's default profile with their weights, in upstream order,
/// `SelectorSpread` appended as `applyFeatureGates` does with `DefaultPodTopologySpread` off, with
/// the legacy priority each stands for; see [`super::default_provider`].
pub const DEFAULT_PROVIDER_SCORES: &[(&str, i64, &str)] = &[
    (
        "NodeResourcesBalancedAllocation",
        1,
        "BalancedResourceAllocation",
    ),
    ("ImageLocality", 1, "ImageLocalityPriority"),
    ("InterPodAffinity", 1, "InterPodAffinityPriority"),
    ("NodeResourcesLeastAllocated", 1, "LeastRequestedPriority"),
    ("NodeAffinity", 1, "NodeAffinityPriority"),
    ("NodePreferAvoidPods", 10000, "NodePreferAvoidPodsPriority"),
    ("PodTopologySpread", 2, "EvenPodsSpreadPriority"),
    ("TaintToleration", 1, "TaintTolerationPriority"),
    ("SelectorSpread", 1, "SelectorSpreadPriority"),
];

/// The predicate key `name` is registered as, with its filter plugins (aliases not followed).
pub(super) fn predicate_plugins(name: &str) -> Option<(&'static str, &'static [&'static str])> {
    PREDICATES.iter().find(|(n, _)| *n == name).copied()
}

/// The priority key `name` is registered as, with its score plugin (aliases not followed).
pub(super) fn priority_plugin(name: &str) -> Option<(&'static str, &'static str)> {
    PRIORITIES.iter().find(|(n, _)| *n == name).copied()
}

/// The registered predicate name an alias stands for; any other name unchanged.
pub(super) fn canonical_predicate(name: &str) -> &str {
    PREDICATE_ALIASES
        .iter()
        .find(|(a, _)| *a == name)
        .map_or(name, |(_, c)| *c)
}

/// The registered priority name an alias stands for; any other name unchanged.
pub(super) fn canonical_priority(name: &str) -> &str {
    PRIORITY_ALIASES
        .iter()
        .find(|(a, _)| *a == name)
        .map_or(name, |(_, c)| *c)
}

/// Predicate names kube-scheduler v1.22 accepts, in `predicateOrdering`, each alias after its
/// registered name.
pub(super) fn valid_predicates() -> &'static [&'static str] {
    static NAMES: LazyLock<Vec<&'static str>> = LazyLock::new(predicate_names);
    &NAMES
}

/// Priority names kube-scheduler v1.22 accepts, sorted, each alias after its registered name,
/// `EqualPriority` (accepted and skipped) last.
pub(super) fn valid_priorities() -> &'static [&'static str] {
    static NAMES: LazyLock<Vec<&'static str>> = LazyLock::new(priority_names);
    &NAMES
}

fn predicate_names() -> Vec<&'static str> {
    let mut v = Vec::new();
    for (name, _) in PREDICATES {
        v.push(*name);
        v.extend(
            PREDICATE_ALIASES
                .iter()
                .filter(|(_, c)| c == name)
                .map(|(a, _)| *a),
        );
    }
    v
}

fn priority_names() -> Vec<&'static str> {
    let mut v = Vec::new();
    for (name, _) in PRIORITIES {
        v.push(*name);
        v.extend(
            PRIORITY_ALIASES
                .iter()
                .filter(|(_, c)| c == name)
                .map(|(a, _)| *a),
        );
    }
    v.push(EQUAL_PRIORITY);
    v
}

/// Why a predicate name older releases registered is gone from v1.22, if it is one.
pub(super) fn removed_predicate(name: &str) -> Option<&'static str> {
    REMOVED_PREDICATES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, reason)| *reason)
}

/// Why a priority name older releases registered is gone from v1.22, if it is one.
pub(super) fn removed_priority(name: &str) -> Option<&'static str> {
    REMOVED_PRIORITIES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, reason)| *reason)
}

/// Levenshtein distance over ASCII-lowercased characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.to_ascii_lowercase().chars().collect();
    let b: Vec<char> = b.to_ascii_lowercase().chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// Nearest candidate within a third of the name's length (at least 2 edits), if any.
fn nearest<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).max(2);
    candidates
        .map(|c| (edit_distance(name, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// The predicate name (registered or alias) nearest to a misspelt one.
pub(super) fn suggest_predicate(name: &str) -> Option<&'static str> {
    let all = PREDICATES
        .iter()
        .map(|(n, _)| *n)
        .chain(PREDICATE_ALIASES.iter().map(|(a, _)| *a));
    nearest(name, all)
}

/// The priority name (registered, alias or `EqualPriority`) nearest to a misspelt one.
pub(super) fn suggest_priority(name: &str) -> Option<&'static str> {
    let all = PRIORITIES
        .iter()
        .map(|(n, _)| *n)
        .chain(PRIORITY_ALIASES.iter().map(|(a, _)| *a))
        .chain(std::iter::once(EQUAL_PRIORITY));
    nearest(name, all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_consistent() {
        // predicateOrdering lists every registered predicate exactly once.
        assert_eq!(PREDICATES.len(), 19);
        for (i, (a, _)) in PREDICATES.iter().enumerate() {
            assert!(PREDICATES[i + 1..].iter().all(|(b, _)| a != b));
        }
        for name in DEFAULT_PREDICATES.iter().chain(MANDATORY_PREDICATES) {
            assert!(predicate_plugins(name).is_some(), "{name}");
        }
        for (name, _) in DEFAULT_PRIORITIES {
            assert!(priority_plugin(name).is_some(), "{name}");
        }
        for (alias, name) in PREDICATE_ALIASES {
            assert!(predicate_plugins(name).is_some(), "{alias}");
            assert_eq!(canonical_predicate(alias), *name);
        }
        for (alias, name) in PRIORITY_ALIASES {
            assert!(priority_plugin(name).is_some(), "{alias}");
            assert_eq!(canonical_priority(alias), *name);
        }
        // Sorted tables (BTreeMap order = Go sort.Strings order).
        assert!(DEFAULT_PRIORITIES.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(PRIORITIES.windows(2).all(|w| w[0].0 < w[1].0));
        // The default provider names only plugins the legacy tables know.
        for (p, legacy) in DEFAULT_PROVIDER_FILTERS {
            assert!(PREDICATES.iter().any(|(_, ps)| ps.contains(p)), "{p}");
            assert!(predicate_plugins(legacy).is_some(), "{legacy}");
        }
        for (p, _, legacy) in DEFAULT_PROVIDER_SCORES {
            assert_eq!(priority_plugin(legacy).map(|(_, x)| x), Some(*p), "{p}");
        }
        // Removed names are not registered ones.
        for (name, _) in REMOVED_PREDICATES {
            assert!(!valid_predicates().contains(name), "{name}");
        }
        for (name, _) in REMOVED_PRIORITIES {
            assert!(!valid_priorities().contains(name), "{name}");
        }
    }

    #[test]
    fn nearest_names() {
        assert_eq!(suggest_predicate("PodFitsPort"), Some("PodFitsPorts"));
        assert_eq!(suggest_predicate("hostname"), Some("HostName"));
        assert_eq!(
            suggest_predicate("MatchInterPodAfinity"),
            Some("MatchInterPodAffinity")
        );
        assert_eq!(suggest_predicate("Zzzzzzzzzzzzzzzz"), None);
        assert_eq!(suggest_priority("LeastRequested"), None);
        assert_eq!(
            suggest_priority("LeastRequestPriority"),
            Some("LeastRequestedPriority")
        );
        assert_eq!(suggest_priority("EqualPriorty"), Some("EqualPriority"));
    }

    #[test]
    fn valid_names_list_aliases_after_their_names() {
        let p = valid_predicates();
        assert_eq!(p.len(), PREDICATES.len() + PREDICATE_ALIASES.len());
        let i = p.iter().position(|n| *n == "PodFitsHostPorts").unwrap_or(0);
        assert_eq!(p[i + 1], "PodFitsPorts");
        let q = valid_priorities();
        assert_eq!(q.last(), Some(&EQUAL_PRIORITY));
        let i = q
            .iter()
            .position(|n| *n == "SelectorSpreadPriority")
            .unwrap_or(0);
        assert_eq!(q[i + 1], "ServiceSpreadingPriority");
    }
}
