//! Legacy predicate/priority names → Scheduling Framework plugins, as kube-scheduler v1.22 does.
//!
//! Upstream: kubernetes/kubernetes `pkg/scheduler/framework/plugins/legacy_registry.go`
//! @054d429d9f8bc8de4fc82e6cf2281e12a13fe1f2 (v1.21/v1.22) and `pkg/scheduler/factory.go`
//! `createFromPolicy`:
//! - predicates become a *set* of keys (`PodFitsPorts` is an alias of `PodFitsHostPorts`), the
//!   mandatory `PodToleratesNodeTaints` and `CheckNodeUnschedulable` are always added, and filter
//!   plugins are appended in `predicateOrdering`; a plugin produced twice keeps its first place
//!   (`GeneralPredicates` = NodeResourcesFit, NodeName, NodePorts, NodeAffinity);
//! - priorities become a map key → weight (a repeated key keeps the **last** weight, since
//!   `priorityKeys[name] = weight`; `ServiceSpreadingPriority` is an alias of
//!   `SelectorSpreadPriority`; `EqualPriority` is skipped), and score plugins are appended in
//!   **sorted key order** (`AppendPriorityConfigs`); a plugin produced by two different keys keeps
//!   the max weight (`appendToPluginSet`, "Keep the max weight");
//! - `predicates: null` / `priorities: null` select `DefaultPredicates` / `DefaultPriorities`;
//!   `[]` selects only the mandatory predicates / no score plugin.
//!
//! `SelectorSpreadPriority` maps to the `SelectorSpread` plugin: the translation upstream applies
//! when the `DefaultPodTopologySpread` feature gate is **off** (v1.22 defaults it on and maps the
//! name to `PodTopologySpread` with system-default constraints instead). mini-scheduler follows the
//! gate-off mapping, which keeps the legacy Service/RC/RS/StatefulSet spreading semantics.
//!
//! mini-scheduler implements a subset of the plugins ([`IMPLEMENTED_FILTER_PLUGINS`],
//! [`IMPLEMENTED_SCORE_PLUGINS`]). A name v1.22 knows but whose plugin is not implemented fails
//! with "not supported yet"; it is never ignored. Defaults (null keys, no policy file) are
//! restricted to the implemented plugins and the omissions are reported.

use std::collections::BTreeMap;
use std::fmt;

use super::error::PolicyError;
use super::locate::{FieldPath, Source};
use super::types::{Policy, PredicateArgument, PriorityArgument};

/// Filter plugins mini-scheduler implements, by framework name.
pub const IMPLEMENTED_FILTER_PLUGINS: &[&str] = &[
    "NodeUnschedulable",
    "NodeName",
    "NodePorts",
    "NodeAffinity",
    "NodeResourcesFit",
    "VolumeRestrictions",
    "TaintToleration",
    "EBSLimits",
    "GCEPDLimits",
    "NodeVolumeLimits",
    "AzureDiskLimits",
    "CinderLimits",
    "VolumeBinding",
    "VolumeZone",
];

/// Score plugins mini-scheduler implements, by framework name.
pub const IMPLEMENTED_SCORE_PLUGINS: &[&str] = &[
    "NodeResourcesLeastAllocated",
    "NodeResourcesMostAllocated",
    "NodeResourcesBalancedAllocation",
    "SelectorSpread",
];

/// Predicates registered in v1.22's legacy registry with their filter plugins, in
/// `predicateOrdering` (which lists all 19 keys).
const PREDICATES: &[(&str, &[&str])] = &[
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
const PREDICATE_ALIASES: &[(&str, &str)] = &[("PodFitsPorts", "PodFitsHostPorts")];

/// Always configured (`mandatoryPredicates`), in the order they are reported.
const MANDATORY_PREDICATES: &[&str] = &["CheckNodeUnschedulable", "PodToleratesNodeTaints"];

/// `DefaultPredicates` (used when `predicates` is null), sorted.
const DEFAULT_PREDICATES: &[&str] = &[
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

/// Priorities registered in v1.22's legacy registry and their score plugin (with
/// `DefaultPodTopologySpread` off for `SelectorSpreadPriority`). `NodeLabel`, `ServiceAffinity`
/// and `RequestedToCapacityRatio` are the keys custom priorities (with an argument) resolve to.
const PRIORITIES: &[(&str, &str)] = &[
    (
        "BalancedResourceAllocation",
        "NodeResourcesBalancedAllocation",
    ),
    ("EvenPodsSpreadPriority", "PodTopologySpread"),
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

/// `ServiceSpreadingPriority` → `SelectorSpreadPriority`.
const PRIORITY_ALIASES: &[(&str, &str)] = &[("ServiceSpreadingPriority", "SelectorSpreadPriority")];

/// Skipped by `createFromPolicy` in v1.18+ (no plugin).
const EQUAL_PRIORITY: &str = "EqualPriority";

/// `DefaultPriorities` (used when `priorities` is null), sorted by name.
const DEFAULT_PRIORITIES: &[(&str, i64)] = &[
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

/// Filter plugins of kube-scheduler v1.22's default profile (DefaultProvider) that mini-scheduler
/// does not implement; [`default_provider`] omits them.
pub const DEFAULT_PROVIDER_OMITTED_FILTERS: &[&str] = &["PodTopologySpread", "InterPodAffinity"];

/// Score plugins (with weights) of kube-scheduler v1.22's default profile that mini-scheduler
/// does not implement; [`default_provider`] omits them.
pub const DEFAULT_PROVIDER_OMITTED_SCORES: &[(&str, i64)] = &[
    ("ImageLocality", 1),
    ("InterPodAffinity", 1),
    ("NodeAffinity", 1),
    ("NodePreferAvoidPods", 10000),
    ("PodTopologySpread", 2),
    ("TaintToleration", 1),
];

/// A filter plugin to run, with the legacy names that asked for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedFilter {
    /// Framework plugin name, one of [`IMPLEMENTED_FILTER_PLUGINS`].
    pub plugin: &'static str,
    /// Predicate names (as written in the policy, or the canonical name for defaults and
    /// mandatory predicates) that produced this plugin.
    pub legacy_names: Vec<String>,
}

/// A score plugin to run with its weight, with the legacy names that asked for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedScore {
    /// Framework plugin name, one of [`IMPLEMENTED_SCORE_PLUGINS`].
    pub plugin: &'static str,
    /// Multiplier of the plugin's normalized score (0..=100), in `1..MAX_WEIGHT`.
    pub weight: i64,
    /// Priority names (as written, or canonical for defaults) that produced this plugin.
    pub legacy_names: Vec<String>,
}

/// What the scheduler runs, resolved from a Policy (or from the default provider).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPolicy {
    /// Filter plugins in execution order.
    pub filters: Vec<ResolvedFilter>,
    /// Score plugins in kube-scheduler v1.22's order (sorted by legacy priority key).
    pub scores: Vec<ResolvedScore>,
    /// Run every filter even after one failed.
    pub always_check_all_predicates: bool,
    /// `hardPodAffinitySymmetricWeight`, 1 when the policy leaves it unset (0).
    pub hard_pod_affinity_symmetric_weight: i32,
    /// Human-readable remarks: skipped `EqualPriority`, mandatory predicates added, defaults
    /// omitted because not implemented.
    pub notes: Vec<String>,
}

impl fmt::Display for ResolvedPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "filter plugins (in order):")?;
        if self.filters.is_empty() {
            writeln!(f, "  (none)")?;
        }
        let fw = self
            .filters
            .iter()
            .map(|x| x.plugin.len())
            .max()
            .unwrap_or(0);
        for (i, filter) in self.filters.iter().enumerate() {
            writeln!(
                f,
                "  {:>2}. {:<fw$}  <- {}",
                i + 1,
                filter.plugin,
                filter.legacy_names.join(", ")
            )?;
        }
        writeln!(f, "score plugins (weight):")?;
        if self.scores.is_empty() {
            writeln!(
                f,
                "  (none: every feasible node scores the same; the pick is random)"
            )?;
        }
        let sw = self
            .scores
            .iter()
            .map(|x| x.plugin.len())
            .max()
            .unwrap_or(0);
        for score in &self.scores {
            writeln!(
                f,
                "  {:<sw$}  {:>5}  <- {}",
                score.plugin,
                score.weight,
                score.legacy_names.join(", ")
            )?;
        }
        writeln!(
            f,
            "alwaysCheckAllPredicates: {}",
            self.always_check_all_predicates
        )?;
        write!(
            f,
            "hardPodAffinitySymmetricWeight: {}",
            self.hard_pod_affinity_symmetric_weight
        )?;
        if !self.notes.is_empty() {
            write!(f, "\nnotes:")?;
            for note in &self.notes {
                write!(f, "\n  - {note}")?;
            }
        }
        Ok(())
    }
}

/// kube-scheduler v1.22's default profile restricted to the implemented plugins; used when no
/// policy file is given.
///
/// Upstream: `pkg/scheduler/apis/config/v1beta1/default_plugins.go` `getDefaultPlugins` and
/// `applyFeatureGates` (v1.21/v1.22; same lists as `TestAlgorithmProviderCompatibility` in
/// `pkg/scheduler/apis/config/testing/compatibility_test.go` @05c351a9), with
/// `DefaultPodTopologySpread` off, which appends `SelectorSpread` weight 1. Filters keep upstream
/// order: NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit,
/// VolumeRestrictions, EBSLimits, GCEPDLimits, NodeVolumeLimits, AzureDiskLimits, VolumeBinding,
/// VolumeZone. Scores: NodeResourcesBalancedAllocation 1, NodeResourcesLeastAllocated 1,
/// SelectorSpread 1. What is left out ([`DEFAULT_PROVIDER_OMITTED_FILTERS`],
/// [`DEFAULT_PROVIDER_OMITTED_SCORES`]) is listed in `notes` for callers to log.
pub fn default_provider() -> ResolvedPolicy {
    let filter = |plugin: &'static str, legacy: &str| ResolvedFilter {
        plugin,
        legacy_names: vec![legacy.to_string()],
    };
    let score = |plugin: &'static str, legacy: &str| ResolvedScore {
        plugin,
        weight: 1,
        legacy_names: vec![legacy.to_string()],
    };
    let omitted_scores: Vec<String> = DEFAULT_PROVIDER_OMITTED_SCORES
        .iter()
        .map(|(p, w)| format!("{p} ({w})"))
        .collect();
    ResolvedPolicy {
        filters: vec![
            filter("NodeUnschedulable", "CheckNodeUnschedulable"),
            filter("NodeName", "HostName"),
            filter("TaintToleration", "PodToleratesNodeTaints"),
            filter("NodeAffinity", "MatchNodeSelector"),
            filter("NodePorts", "PodFitsHostPorts"),
            filter("NodeResourcesFit", "PodFitsResources"),
            filter("VolumeRestrictions", "NoDiskConflict"),
            filter("EBSLimits", "MaxEBSVolumeCount"),
            filter("GCEPDLimits", "MaxGCEPDVolumeCount"),
            filter("NodeVolumeLimits", "MaxCSIVolumeCountPred"),
            filter("AzureDiskLimits", "MaxAzureDiskVolumeCount"),
            filter("VolumeBinding", "CheckVolumeBinding"),
            filter("VolumeZone", "NoVolumeZoneConflict"),
        ],
        scores: vec![
            score(
                "NodeResourcesBalancedAllocation",
                "BalancedResourceAllocation",
            ),
            score("NodeResourcesLeastAllocated", "LeastRequestedPriority"),
            score("SelectorSpread", "SelectorSpreadPriority"),
        ],
        always_check_all_predicates: false,
        hard_pod_affinity_symmetric_weight: 1,
        notes: vec![
            "no policy file: kube-scheduler v1.22's default plugins (DefaultPodTopologySpread off) \
             restricted to what mini-scheduler implements"
                .to_string(),
            format!(
                "default filter plugins omitted (not supported yet): {}",
                DEFAULT_PROVIDER_OMITTED_FILTERS.join(", ")
            ),
            format!(
                "default score plugins omitted (not supported yet): {}",
                omitted_scores.join(", ")
            ),
        ],
    }
}

fn predicate_plugins(name: &str) -> Option<(&'static str, &'static [&'static str])> {
    PREDICATES.iter().find(|(n, _)| *n == name).copied()
}

fn priority_plugin(name: &str) -> Option<(&'static str, &'static str)> {
    PRIORITIES.iter().find(|(n, _)| *n == name).copied()
}

fn filters_implemented(plugins: &[&str]) -> bool {
    plugins
        .iter()
        .all(|p| IMPLEMENTED_FILTER_PLUGINS.contains(p))
}

fn score_implemented(plugin: &str) -> bool {
    IMPLEMENTED_SCORE_PLUGINS.contains(&plugin)
}

/// Predicate names mini-scheduler accepts, in `predicateOrdering` plus the alias.
pub(crate) fn valid_predicates() -> Vec<&'static str> {
    let mut v = Vec::new();
    for (name, plugins) in PREDICATES {
        if filters_implemented(plugins) {
            v.push(*name);
            v.extend(
                PREDICATE_ALIASES
                    .iter()
                    .filter(|(_, c)| c == name)
                    .map(|(a, _)| *a),
            );
        }
    }
    v
}

/// Priority names mini-scheduler accepts.
pub(crate) fn valid_priorities() -> Vec<&'static str> {
    let mut v = Vec::new();
    for (name, plugin) in PRIORITIES {
        if score_implemented(plugin) {
            v.push(*name);
            v.extend(
                PRIORITY_ALIASES
                    .iter()
                    .filter(|(_, c)| c == name)
                    .map(|(a, _)| *a),
            );
        }
    }
    v.push(EQUAL_PRIORITY);
    v
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

/// Whether a predicate or priority name (canonical or alias) resolves to implemented plugins
/// (`EqualPriority` counts as implemented: it is accepted and skipped).
pub(crate) fn is_implemented_name(name: &str) -> bool {
    valid_predicates().contains(&name) || valid_priorities().contains(&name)
}

fn suggest_predicate(name: &str) -> Option<&'static str> {
    let all = PREDICATES
        .iter()
        .map(|(n, _)| *n)
        .chain(PREDICATE_ALIASES.iter().map(|(a, _)| *a));
    nearest(name, all)
}

fn suggest_priority(name: &str) -> Option<&'static str> {
    let all = PRIORITIES
        .iter()
        .map(|(n, _)| *n)
        .chain(PRIORITY_ALIASES.iter().map(|(a, _)| *a))
        .chain(std::iter::once(EQUAL_PRIORITY));
    nearest(name, all)
}

fn predicate_arg_count(arg: &PredicateArgument) -> usize {
    usize::from(arg.service_affinity.is_some()) + usize::from(arg.labels_presence.is_some())
}

fn priority_arg_count(arg: &PriorityArgument) -> usize {
    usize::from(arg.service_anti_affinity.is_some())
        + usize::from(arg.label_preference.is_some())
        + usize::from(arg.requested_to_capacity_ratio_arguments.is_some())
}

/// Appends a filter plugin unless present (first position wins), recording legacy names.
fn append_filter(filters: &mut Vec<ResolvedFilter>, plugin: &'static str, names: &[String]) {
    let idx = match filters.iter().position(|f| f.plugin == plugin) {
        Some(i) => i,
        None => {
            filters.push(ResolvedFilter {
                plugin,
                legacy_names: Vec::new(),
            });
            filters.len() - 1
        }
    };
    for n in names {
        if !filters[idx].legacy_names.contains(n) {
            filters[idx].legacy_names.push(n.clone());
        }
    }
}

/// `appendToPluginSet` for scores: a plugin already present keeps its place and the max weight.
fn append_score(
    scores: &mut Vec<ResolvedScore>,
    plugin: &'static str,
    weight: i64,
    names: &[String],
) {
    match scores.iter_mut().find(|s| s.plugin == plugin) {
        Some(s) => {
            s.weight = s.weight.max(weight);
            for n in names {
                if !s.legacy_names.contains(n) {
                    s.legacy_names.push(n.clone());
                }
            }
        }
        None => scores.push(ResolvedScore {
            plugin,
            weight,
            legacy_names: names.to_vec(),
        }),
    }
}

/// Inputs [`resolve`] needs besides the policy.
pub(crate) struct ResolveInput<'s, 'a> {
    pub(crate) src: &'s Source<'a>,
    pub(crate) predicates_key: &'static str,
    pub(crate) predicates_key_present: bool,
    pub(crate) priorities_key_present: bool,
}

/// `predicates` → filter plugins in `predicateOrdering` (mandatory predicates added).
fn resolve_predicates(
    policy: &Policy,
    input: &ResolveInput<'_, '_>,
    warnings: &mut Vec<String>,
    notes: &mut Vec<String>,
) -> Result<Vec<ResolvedFilter>, PolicyError> {
    let src = input.src;
    let root = FieldPath::root();
    // ---- predicates → set of canonical keys, with the names as written.
    let mut pred_keys: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    match &policy.predicates {
        None => {
            let mut used = Vec::new();
            let mut omitted = Vec::new();
            let mut omitted_names: Vec<&str> = Vec::new();
            for name in DEFAULT_PREDICATES {
                let Some((key, plugins)) = predicate_plugins(name) else {
                    continue;
                };
                if filters_implemented(plugins) {
                    pred_keys.insert(key, vec![key.to_string()]);
                    used.push(key);
                } else {
                    omitted.push(format!("{key} ({})", plugins.join(", ")));
                    omitted_names.push(key);
                }
            }
            let where_ = if input.predicates_key_present {
                src.key(&root.clone().key(input.predicates_key)).to_string()
            } else {
                src.name.to_string()
            };
            warnings.push(format!(
                "{where_}: \"{}\" is not set: using kube-scheduler v1.22's default predicates that \
                 mini-scheduler implements ({}); omitted, not supported yet: {}",
                input.predicates_key,
                used.join(", "),
                omitted.join(", ")
            ));
            notes.push(format!(
                "predicates not set: kube-scheduler v1.22 default predicates; omitted (not supported yet): {}",
                omitted_names.join(", ")
            ));
        }
        Some(list) => {
            for (i, pred) in list.iter().enumerate() {
                let path = root.clone().key(input.predicates_key).index(i);
                let name_loc = || src.value(&path.clone().key("name"));
                if let Some(arg) = &pred.argument {
                    let n = predicate_arg_count(arg);
                    if n != 1 {
                        return Err(PolicyError::Argument {
                            location: src.value(&path.clone().key("argument")),
                            message: format!(
                                "exactly 1 predicate argument is required, numArgs: {n}, predicate {}",
                                pred.name
                            ),
                        });
                    }
                }
                let canonical = PREDICATE_ALIASES
                    .iter()
                    .find(|(a, _)| *a == pred.name)
                    .map_or(pred.name.as_str(), |(_, c)| *c);
                if let Some((key, plugins)) = predicate_plugins(canonical) {
                    if !filters_implemented(plugins) {
                        return Err(PolicyError::Unsupported {
                            location: name_loc(),
                            what: format!(
                                "predicate \"{}\" (plugin {}) at {path}.name",
                                pred.name,
                                plugins.join(", ")
                            ),
                        });
                    }
                    if pred.argument.is_some() {
                        warnings.push(format!(
                            "{}: predicate \"{}\" is a registered name: its argument is ignored, as in kube-scheduler v1.22",
                            src.value(&path.clone().key("argument")),
                            pred.name
                        ));
                    }
                    let names = pred_keys.entry(key).or_default();
                    if !names.contains(&pred.name) {
                        names.push(pred.name.clone());
                    }
                    continue;
                }
                if let Some(arg) = &pred.argument {
                    let (member, plugin) = if arg.service_affinity.is_some() {
                        ("serviceAffinity", "ServiceAffinity")
                    } else {
                        ("labelsPresence", "NodeLabel")
                    };
                    return Err(PolicyError::Unsupported {
                        location: name_loc(),
                        what: format!(
                            "custom predicate \"{}\" with a {member} argument (plugin {plugin}) at {path}",
                            pred.name
                        ),
                    });
                }
                if let Some((_, reason)) = REMOVED_PREDICATES.iter().find(|(n, _)| *n == pred.name)
                {
                    return Err(PolicyError::RemovedName {
                        location: name_loc(),
                        kind: "predicate",
                        name: pred.name.clone(),
                        field: format!("{path}.name"),
                        reason,
                    });
                }
                return Err(PolicyError::UnknownName {
                    location: name_loc(),
                    kind: "predicate",
                    name: pred.name.clone(),
                    field: format!("{path}.name"),
                    suggestion: suggest_predicate(&pred.name),
                });
            }
        }
    }
    for m in MANDATORY_PREDICATES {
        if !pred_keys.contains_key(m) {
            pred_keys.insert(m, vec![(*m).to_string()]);
            notes.push(format!(
                "{m}: added (mandatory predicate: kube-scheduler v1.18+ always configures it)"
            ));
        }
    }
    let mut filters = Vec::new();
    for (key, plugins) in PREDICATES {
        if let Some(names) = pred_keys.get(key) {
            for plugin in *plugins {
                append_filter(&mut filters, plugin, names);
            }
        }
    }

    Ok(filters)
}

/// `priorities` → score plugins in sorted key order (`EqualPriority` skipped).
fn resolve_priorities(
    policy: &Policy,
    input: &ResolveInput<'_, '_>,
    warnings: &mut Vec<String>,
    notes: &mut Vec<String>,
) -> Result<Vec<ResolvedScore>, PolicyError> {
    let src = input.src;
    let root = FieldPath::root();
    // ---- priorities → map canonical key → (weight, names as written).
    let mut prio_keys: BTreeMap<&'static str, (i64, Vec<String>, usize)> = BTreeMap::new();
    match &policy.priorities {
        None => {
            let mut used = Vec::new();
            let mut omitted = Vec::new();
            let mut omitted_names: Vec<&str> = Vec::new();
            for (name, weight) in DEFAULT_PRIORITIES {
                match priority_plugin(name) {
                    Some((key, plugin)) if score_implemented(plugin) => {
                        prio_keys.insert(key, (*weight, vec![key.to_string()], 0));
                        used.push(format!("{key} {weight}"));
                    }
                    Some((key, plugin)) => {
                        omitted.push(format!("{key} {weight} ({plugin})"));
                        omitted_names.push(key);
                    }
                    None => omitted_names.push(name),
                }
            }
            let where_ = if input.priorities_key_present {
                src.key(&root.clone().key("priorities")).to_string()
            } else {
                src.name.to_string()
            };
            warnings.push(format!(
                "{where_}: \"priorities\" is not set: using kube-scheduler v1.22's default priorities that \
                 mini-scheduler implements ({}); omitted, not supported yet: {}",
                used.join(", "),
                omitted.join(", ")
            ));
            notes.push(format!(
                "priorities not set: kube-scheduler v1.22 default priorities; omitted (not supported yet): {}",
                omitted_names.join(", ")
            ));
        }
        Some(list) => {
            for (i, prio) in list.iter().enumerate() {
                let path = root.clone().key("priorities").index(i);
                let name_loc = || src.value(&path.clone().key("name"));
                if prio.name == EQUAL_PRIORITY {
                    notes.push(
                        "EqualPriority: skipped (kube-scheduler v1.18+ registers no plugin; every node would score equally)"
                            .to_string(),
                    );
                    continue;
                }
                if let Some(arg) = &prio.argument {
                    let n = priority_arg_count(arg);
                    if n != 1 {
                        return Err(PolicyError::Argument {
                            location: src.value(&path.clone().key("argument")),
                            message: format!(
                                "exactly 1 priority argument is required, numArgs: {n}, priority {}",
                                prio.name
                            ),
                        });
                    }
                }
                let canonical = PRIORITY_ALIASES
                    .iter()
                    .find(|(a, _)| *a == prio.name)
                    .map_or(prio.name.as_str(), |(_, c)| *c);
                if let Some((key, plugin)) = priority_plugin(canonical) {
                    if !score_implemented(plugin) {
                        return Err(PolicyError::Unsupported {
                            location: name_loc(),
                            what: format!(
                                "priority \"{}\" (score plugin {plugin}) at {path}.name",
                                prio.name
                            ),
                        });
                    }
                    if prio.argument.is_some() {
                        warnings.push(format!(
                            "{}: priority \"{}\" is a registered name: its argument is ignored, as in kube-scheduler v1.22",
                            src.value(&path.clone().key("argument")),
                            prio.name
                        ));
                    }
                    match prio_keys.get_mut(key) {
                        Some((weight, names, first)) => {
                            if *weight != prio.weight {
                                warnings.push(format!(
                                    "{}: priority {key} is listed twice ({} and {path}) with weights {} and {}; \
                                     kube-scheduler v1.22 keeps the last one: weight {}",
                                    src.value(&path.clone().key("weight")),
                                    root.clone().key("priorities").index(*first),
                                    weight,
                                    prio.weight,
                                    prio.weight
                                ));
                            }
                            *weight = prio.weight;
                            if !names.contains(&prio.name) {
                                names.push(prio.name.clone());
                            }
                        }
                        None => {
                            prio_keys.insert(key, (prio.weight, vec![prio.name.clone()], i));
                        }
                    }
                    continue;
                }
                if let Some(arg) = &prio.argument {
                    let (member, plugin) = if arg.service_anti_affinity.is_some() {
                        ("serviceAntiAffinity", "ServiceAffinity")
                    } else if arg.label_preference.is_some() {
                        ("labelPreference", "NodeLabel")
                    } else {
                        (
                            "requestedToCapacityRatioArguments",
                            "RequestedToCapacityRatio",
                        )
                    };
                    return Err(PolicyError::Unsupported {
                        location: name_loc(),
                        what: format!(
                            "custom priority \"{}\" with a {member} argument (score plugin {plugin}) at {path}",
                            prio.name
                        ),
                    });
                }
                if let Some((_, reason)) = REMOVED_PRIORITIES.iter().find(|(n, _)| *n == prio.name)
                {
                    return Err(PolicyError::RemovedName {
                        location: name_loc(),
                        kind: "priority",
                        name: prio.name.clone(),
                        field: format!("{path}.name"),
                        reason,
                    });
                }
                return Err(PolicyError::UnknownName {
                    location: name_loc(),
                    kind: "priority",
                    name: prio.name.clone(),
                    field: format!("{path}.name"),
                    suggestion: suggest_priority(&prio.name),
                });
            }
            if list.is_empty() {
                notes.push(
                    "priorities is []: no score plugins; every feasible node scores the same and the pick is random"
                        .to_string(),
                );
            }
        }
    }
    let mut scores = Vec::new();
    for (key, (weight, names, _)) in &prio_keys {
        if let Some((_, plugin)) = priority_plugin(key) {
            append_score(&mut scores, plugin, *weight, names);
        }
    }

    Ok(scores)
}

/// Translates a decoded, validated policy into plugins (strict: unknown, removed and unsupported
/// names are errors). Warnings go to `warnings`.
pub(crate) fn resolve(
    policy: &Policy,
    input: &ResolveInput<'_, '_>,
    warnings: &mut Vec<String>,
) -> Result<ResolvedPolicy, PolicyError> {
    let src = input.src;
    let root = FieldPath::root();
    let mut notes = Vec::new();
    let filters = resolve_predicates(policy, input, warnings, &mut notes)?;
    let scores = resolve_priorities(policy, input, warnings, &mut notes)?;

    // ---- extenders, hardPodAffinitySymmetricWeight.
    if !policy.extenders.is_empty() {
        return Err(PolicyError::Unsupported {
            location: src.key(&root.clone().key("extenders")),
            what: format!("\"extenders\" ({} configured)", policy.extenders.len()),
        });
    }
    let hard = policy.hard_pod_affinity_symmetric_weight;
    if hard != 0 {
        notes.push(format!(
            "hardPodAffinitySymmetricWeight: {hard} has no effect yet: it configures InterPodAffinity, \
             which mini-scheduler does not implement"
        ));
    }

    Ok(ResolvedPolicy {
        filters,
        scores,
        always_check_all_predicates: policy.always_check_all_predicates,
        hard_pod_affinity_symmetric_weight: if hard == 0 { 1 } else { hard },
        notes,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

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
        // Sorted tables (BTreeMap order = Go sort.Strings order).
        assert!(DEFAULT_PRIORITIES.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(PRIORITIES.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn append_score_keeps_first_place_and_max_weight() {
        // legacy_registry.go appendToPluginSet: "Keep the max weight."
        let mut scores = Vec::new();
        append_score(&mut scores, "SelectorSpread", 2, &["A".to_string()]);
        append_score(
            &mut scores,
            "NodeResourcesLeastAllocated",
            1,
            &["L".to_string()],
        );
        append_score(&mut scores, "SelectorSpread", 5, &["B".to_string()]);
        append_score(&mut scores, "SelectorSpread", 3, &["A".to_string()]);
        assert_eq!(scores[0].plugin, "SelectorSpread");
        assert_eq!(scores[0].weight, 5);
        assert_eq!(scores[0].legacy_names, ["A", "B"]);
        assert_eq!(scores[1].weight, 1);
    }

    #[test]
    fn nearest_names() {
        assert_eq!(suggest_predicate("PodFitsPort"), Some("PodFitsPorts"));
        assert_eq!(suggest_predicate("hostname"), Some("HostName"));
        assert_eq!(
            suggest_predicate("MatchInterPodAfinity"),
            Some("MatchInterPodAffinity")
        );
        assert!(!is_implemented_name("MatchInterPodAffinity"));
        assert!(is_implemented_name("PodFitsPorts") && is_implemented_name("EqualPriority"));
        assert_eq!(suggest_predicate("Zzzzzzzzzzzzzzzz"), None);
        assert_eq!(suggest_priority("LeastRequested"), None);
        assert_eq!(
            suggest_priority("LeastRequestPriority"),
            Some("LeastRequestedPriority")
        );
        assert_eq!(suggest_priority("EqualPriorty"), Some("EqualPriority"));
    }

    #[test]
    fn default_provider_matches_v1_22_defaults_restricted() {
        let d = default_provider();
        let filters: Vec<&str> = d.filters.iter().map(|f| f.plugin).collect();
        assert_eq!(
            filters,
            [
                "NodeUnschedulable",
                "NodeName",
                "TaintToleration",
                "NodeAffinity",
                "NodePorts",
                "NodeResourcesFit",
                "VolumeRestrictions",
                "EBSLimits",
                "GCEPDLimits",
                "NodeVolumeLimits",
                "AzureDiskLimits",
                "VolumeBinding",
                "VolumeZone"
            ]
        );
        let scores: Vec<(&str, i64)> = d.scores.iter().map(|s| (s.plugin, s.weight)).collect();
        assert_eq!(
            scores,
            [
                ("NodeResourcesBalancedAllocation", 1),
                ("NodeResourcesLeastAllocated", 1),
                ("SelectorSpread", 1)
            ]
        );
        assert!(
            d.notes
                .iter()
                .any(|n| n.contains("NodePreferAvoidPods (10000)"))
        );
        assert!(d.notes.iter().any(|n| n.contains("InterPodAffinity")));
        assert!(!d.notes.iter().any(|n| n.contains("VolumeBinding")));
        for f in &d.filters {
            assert!(IMPLEMENTED_FILTER_PLUGINS.contains(&f.plugin));
        }
        for s in &d.scores {
            assert!(IMPLEMENTED_SCORE_PLUGINS.contains(&s.plugin));
        }
    }
}
