//! Legacy predicate/priority names → Scheduling Framework plugins, weights and plugin arguments,
//! as kube-scheduler v1.22 translates a Policy.
//!
//! Upstream: kubernetes/kubernetes `pkg/scheduler/framework/plugins/legacy_registry.go`
//! @054d429d9f8bc8de4fc82e6cf2281e12a13fe1f2 (v1.21/v1.22) and `pkg/scheduler/factory.go`
//! `createFromPolicy` / `create` (v1.22):
//! - each predicate entry becomes a *key*: a registered name (`PodFitsPorts` is an alias of
//!   `PodFitsHostPorts`), or, for a free name with an argument, `CheckServiceAffinity`
//!   (`serviceAffinity`: labels appended to `ServiceAffinityArgs.affinityLabels`) or
//!   `CheckNodeLabelPresence` (`labelsPresence`: labels appended to `NodeLabelArgs`
//!   present/absent). A registered name ignores its argument. The mandatory
//!   `PodToleratesNodeTaints` and `CheckNodeUnschedulable` are always added, and filter plugins
//!   are appended in `predicateOrdering`; a plugin produced twice keeps its first place
//!   (`GeneralPredicates` = NodeResourcesFit, NodeName, NodePorts, NodeAffinity);
//! - each priority entry becomes a key with a weight (`priorityKeys[key] = weight`: a repeated
//!   key keeps the **last** weight). `EqualPriority` is skipped before anything else is looked
//!   at; `ServiceSpreadingPriority` is an alias of `SelectorSpreadPriority`; a free name with an
//!   argument becomes `ServiceAffinity` (`serviceAntiAffinity`: label appended to
//!   `antiAffinityLabelsPreference`), `NodeLabel` (`labelPreference`: label appended to the
//!   present/absent preferences) or `RequestedToCapacityRatio` (`RequestedToCapacityRatioArgs`
//!   copied as written). Score plugins are appended in **sorted key order**
//!   (`AppendPriorityConfigs`); the `NodeLabel` and `ServiceAffinity` weights are the key's
//!   weight × the number of preferences; a weight of 0 becomes 1 (`NewFramework`);
//! - `predicates: null` / `priorities: null` select `DefaultPredicates` / `DefaultPriorities`;
//!   `[]` selects only the mandatory predicates / no score plugin;
//! - `hardPodAffinitySymmetricWeight` (when non-zero) sets `InterPodAffinityArgs`, extenders'
//!   `ignoredByScheduler` resources set `NodeResourcesFitArgs.ignoredResources`, and the plugins'
//!   `New` checks run on the arguments (`NodeLabel` conflicts, `RequestedToCapacityRatio` shape
//!   and weights, and a plugin configured without the arguments it needs).
//!
//! Resolution gives the translation with the `DefaultPodTopologySpread` feature gate **off**:
//! `SelectorSpreadPriority` → the `SelectorSpread` plugin. v1.22 defaults the gate on, which maps
//! the name to `PodTopologySpread` with system-default constraints instead;
//! [`ResolvedPolicy::with_feature_gates`] (`feature_gates.rs`) applies that, and every caller
//! that schedules (the binary, the hot reload) calls it with the process's `--feature-gates`.
//!
//! Resolution ([`resolve`]) knows every v1.22 name whether or not this build implements its
//! plugin. [`check_implemented`] then applies what this build has ([`IMPLEMENTED_FILTER_PLUGINS`],
//! [`IMPLEMENTED_SCORE_PLUGINS`], [`EXTENDERS_IMPLEMENTED`]): a name whose plugin is missing fails
//! with "not supported yet" (never ignored); defaults (null keys, no policy file) are restricted
//! to the implemented plugins and the omissions are reported. Every v1.22 name is implemented
//! now, so for this build that check passes everything through; it remains the guard against a
//! plugin missing from the lists (tested with smaller synthetic sets).

use std::collections::BTreeMap;
use std::fmt;

use super::args::{
    InterPodAffinityArgs, NodeLabelArgs, NodeResourcesFitArgs, PluginArgs,
    RequestedToCapacityRatioArgs, ServiceAffinityArgs,
};
use super::error::PolicyError;
use super::locate::{FieldPath, Source};
use super::types::{LegacyExtender, Policy, PredicateArgument, PriorityArgument};

/// Filter plugins mini-scheduler implements, by framework name.
pub const IMPLEMENTED_FILTER_PLUGINS: &[&str] = &[
    "NodeUnschedulable",
    "NodeName",
    "NodePorts",
    "NodeAffinity",
    "NodeResourcesFit",
    "VolumeRestrictions",
    "TaintToleration",
    "NodeLabel",
    "ServiceAffinity",
    "PodTopologySpread",
    "InterPodAffinity",
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
    "NodeLabel",
    "ServiceAffinity",
    "RequestedToCapacityRatio",
    "ImageLocality",
    "NodePreferAvoidPods",
    "NodeAffinity",
    "TaintToleration",
    "InterPodAffinity",
    "PodTopologySpread",
    // GPU placement (mini-scheduler's, not v1.22's): the FGD paper's scorers.
    "GpuBestFit",
    "GpuClustering",
    "GpuDotProduct",
    "GpuFragmentation",
    "GpuFragmentationStranding",
    "GpuPacking",
];

/// Whether this build calls HTTP extenders (it does: [`crate::extender`]). Were it false, a
/// policy with `extenders` would resolve (validated, in [`ResolvedPolicy::extenders`]) but fail
/// to load with "not supported yet".
pub const EXTENDERS_IMPLEMENTED: bool = true;

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

/// Predicate keys a free-named entry with an argument resolves to.
const SERVICE_AFFINITY_PREDICATE: &str = "CheckServiceAffinity";
const NODE_LABEL_PREDICATE: &str = "CheckNodeLabelPresence";

/// Priorities registered in v1.22's legacy registry and their score plugin (with
/// `DefaultPodTopologySpread` off for `SelectorSpreadPriority`; see
/// [`ResolvedPolicy::with_feature_gates`] for the gate-on translation). `NodeLabel`, `ServiceAffinity`
/// and `RequestedToCapacityRatio` are the keys custom priorities (with an argument) resolve to;
/// they are registered names too. The `Gpu*`, `BestFitPriority` and `DotProductPriority` keys are
/// mini-scheduler's GPU placement scorers (the FGD paper's, not v1.22's).
const PRIORITIES: &[(&str, &str)] = &[
    (
        "BalancedResourceAllocation",
        "NodeResourcesBalancedAllocation",
    ),
    ("BestFitPriority", "GpuBestFit"),
    ("DotProductPriority", "GpuDotProduct"),
    ("EvenPodsSpreadPriority", "PodTopologySpread"),
    ("GpuClusteringPriority", "GpuClustering"),
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
const NODE_LABEL_PRIORITY: &str = "NodeLabel";
const SERVICE_AFFINITY_PRIORITY: &str = "ServiceAffinity";
const REQUESTED_TO_CAPACITY_RATIO_PRIORITY: &str = "RequestedToCapacityRatio";

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

/// Filter plugins of kube-scheduler v1.22's default profile (DefaultProvider), in upstream order,
/// with the legacy predicate each stands for (shown in explanations). [`default_provider`] keeps
/// those this build implements.
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
/// the legacy priority each stands for. [`default_provider`] keeps those this build implements.
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

/// A filter plugin to run, with the legacy names that asked for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedFilter {
    /// Framework plugin name (after `check_implemented`: one of
    /// [`IMPLEMENTED_FILTER_PLUGINS`]).
    pub plugin: &'static str,
    /// Predicate names (as written in the policy, or the canonical name for defaults and
    /// mandatory predicates) that produced this plugin.
    pub legacy_names: Vec<String>,
}

/// A score plugin to run with its weight, with the legacy names that asked for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedScore {
    /// Framework plugin name (after `check_implemented`: one of
    /// [`IMPLEMENTED_SCORE_PLUGINS`]).
    pub plugin: &'static str,
    /// Multiplier of the plugin's normalized score (0..=100), ≥ 1.
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
    /// Plugin arguments (the profile's `PluginConfig`).
    pub args: PluginArgs,
    /// The policy's extenders, validated (`ValidatePolicy`), in policy order.
    pub extenders: Vec<LegacyExtender>,
    /// Run every filter even after one failed.
    pub always_check_all_predicates: bool,
    /// `hardPodAffinitySymmetricWeight`, 1 when the policy leaves it unset (0); the same as
    /// `args.inter_pod_affinity.hard_pod_affinity_weight`.
    pub hard_pod_affinity_symmetric_weight: i32,
    /// Human-readable remarks: skipped `EqualPriority`, mandatory predicates added, defaults
    /// omitted because not implemented.
    pub notes: Vec<String>,
}

impl ResolvedPolicy {
    /// Whether `plugin` runs as a filter or a score plugin.
    pub fn has_plugin(&self, plugin: &str) -> bool {
        self.filters.iter().any(|f| f.plugin == plugin)
            || self.scores.iter().any(|s| s.plugin == plugin)
    }
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
        let mut args: Vec<(&str, String)> = Vec::new();
        if let Some(a) = self
            .args
            .node_label
            .as_ref()
            .filter(|_| self.has_plugin("NodeLabel"))
        {
            args.push(("NodeLabel", a.to_string()));
        }
        if let Some(a) = self
            .args
            .service_affinity
            .as_ref()
            .filter(|_| self.has_plugin("ServiceAffinity"))
        {
            args.push(("ServiceAffinity", a.to_string()));
        }
        if let Some(a) = self
            .args
            .requested_to_capacity_ratio
            .as_ref()
            .filter(|_| self.has_plugin("RequestedToCapacityRatio"))
        {
            args.push(("RequestedToCapacityRatio", a.to_string()));
        }
        if self.has_plugin("InterPodAffinity") {
            args.push((
                "InterPodAffinity",
                format!(
                    "hardPodAffinityWeight={}",
                    self.args.inter_pod_affinity.hard_pod_affinity_weight
                ),
            ));
        }
        if let Some(a) = self
            .args
            .pod_topology_spread
            .as_ref()
            .filter(|_| self.has_plugin("PodTopologySpread"))
        {
            args.push((
                "PodTopologySpread",
                format!("defaultingType={:?}", a.defaulting_type),
            ));
        }
        if !self.args.node_resources_fit.ignored_resources.is_empty() {
            args.push((
                "NodeResourcesFit",
                format!(
                    "ignoredResources=[{}]",
                    self.args.node_resources_fit.ignored_resources.join(", ")
                ),
            ));
        }
        if !args.is_empty() {
            writeln!(f, "plugin args:")?;
            let aw = args.iter().map(|(p, _)| p.len()).max().unwrap_or(0);
            for (plugin, text) in &args {
                writeln!(f, "  {plugin:<aw$}  {text}")?;
            }
        }
        if !self.extenders.is_empty() {
            writeln!(
                f,
                "extenders (in policy order; ignorable ones are called last):"
            )?;
            for (i, e) in self.extenders.iter().enumerate() {
                let verbs: Vec<String> = [
                    ("filter", &e.filter_verb),
                    ("prioritize", &e.prioritize_verb),
                    ("preempt", &e.preempt_verb),
                    ("bind", &e.bind_verb),
                ]
                .iter()
                .filter(|(_, v)| !v.is_empty())
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
                writeln!(
                    f,
                    "  {:>2}. {}  {}  weight={}{}",
                    i + 1,
                    e.url_prefix,
                    verbs.join(" "),
                    e.weight,
                    if e.ignorable { "  ignorable" } else { "" }
                )?;
            }
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

/// kube-scheduler v1.22's default profile restricted to the plugins this build implements; used
/// when no policy file is given.
///
/// Upstream: `pkg/scheduler/apis/config/v1beta1/default_plugins.go` `getDefaultPlugins` and
/// `applyFeatureGates` (v1.21/v1.22; same lists as `TestAlgorithmProviderCompatibility` in
/// `pkg/scheduler/apis/config/testing/compatibility_test.go` @05c351a9), with
/// `DefaultPodTopologySpread` off, which appends `SelectorSpread` weight 1: the tables
/// [`DEFAULT_PROVIDER_FILTERS`] and [`DEFAULT_PROVIDER_SCORES`], filtered by
/// [`IMPLEMENTED_FILTER_PLUGINS`] / [`IMPLEMENTED_SCORE_PLUGINS`] (so the defaults grow as
/// plugins are registered). What is left out is listed in `notes` for callers to log. Plugin
/// arguments are v1.22's defaults (`InterPodAffinity` hardPodAffinityWeight 1). Like a resolved
/// Policy, this is the gate-off profile: [`ResolvedPolicy::with_feature_gates`] with v1.22's
/// default gates drops `SelectorSpread` and gives `PodTopologySpread` `defaultingType: System`,
/// exactly `TestAlgorithmProviderCompatibility`'s list.
pub fn default_provider() -> ResolvedPolicy {
    let mut omitted_filters = Vec::new();
    let mut filters = Vec::new();
    for (plugin, legacy) in DEFAULT_PROVIDER_FILTERS {
        if IMPLEMENTED_FILTER_PLUGINS.contains(plugin) {
            filters.push(ResolvedFilter {
                plugin,
                legacy_names: vec![(*legacy).to_string()],
            });
        } else {
            omitted_filters.push(*plugin);
        }
    }
    let mut omitted_scores = Vec::new();
    let mut scores = Vec::new();
    for (plugin, weight, legacy) in DEFAULT_PROVIDER_SCORES {
        if IMPLEMENTED_SCORE_PLUGINS.contains(plugin) {
            scores.push(ResolvedScore {
                plugin,
                weight: *weight,
                legacy_names: vec![(*legacy).to_string()],
            });
        } else {
            omitted_scores.push(format!("{plugin} ({weight})"));
        }
    }
    let mut notes = vec![
        "no policy file: kube-scheduler v1.22's default plugins restricted to what \
         mini-scheduler implements"
            .to_string(),
    ];
    if !omitted_filters.is_empty() {
        notes.push(format!(
            "default filter plugins omitted (not supported yet): {}",
            omitted_filters.join(", ")
        ));
    }
    if !omitted_scores.is_empty() {
        notes.push(format!(
            "default score plugins omitted (not supported yet): {}",
            omitted_scores.join(", ")
        ));
    }
    ResolvedPolicy {
        filters,
        scores,
        args: PluginArgs::default(),
        extenders: Vec::new(),
        always_check_all_predicates: false,
        hard_pod_affinity_symmetric_weight: 1,
        notes,
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

/// `appendToPluginSet` for scores: a plugin already present keeps its place **and its first
/// weight**. Upstream's comment says "Keep the max weight", but the loop assigns to a copy
/// (`for _, e := range set.Enabled { ... e.Weight = *weight }`), so the first weight stays. No two
/// priority keys share a score plugin in the gate-off mapping built here; with
/// `DefaultPodTopologySpread` on, `SelectorSpreadPriority` and `EvenPodsSpreadPriority` do, and
/// [`ResolvedPolicy::with_feature_gates`] applies the same first-weight rule.
fn append_score(
    scores: &mut Vec<ResolvedScore>,
    plugin: &'static str,
    weight: i64,
    names: &[String],
) {
    match scores.iter_mut().find(|s| s.plugin == plugin) {
        Some(s) => {
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

/// Inputs [`resolve`] and [`check_implemented`] need besides the policy.
pub(crate) struct ResolveInput<'s, 'a> {
    pub(crate) src: &'s Source<'a>,
    pub(crate) predicates_key: &'static str,
    pub(crate) predicates_key_present: bool,
    pub(crate) priorities_key_present: bool,
}

/// Where each label of a [`NodeLabelArgs`] list came from (for error locations).
#[derive(Default)]
struct NodeLabelOrigins {
    present: Vec<FieldPath>,
    absent: Vec<FieldPath>,
    present_preference: Vec<FieldPath>,
    absent_preference: Vec<FieldPath>,
}

/// `ConfigProducerArgs` while the entries are processed, with the field paths that set them.
#[derive(Default)]
struct ArgsAcc {
    node_label: Option<NodeLabelArgs>,
    node_label_origins: NodeLabelOrigins,
    service_affinity: Option<ServiceAffinityArgs>,
    requested_to_capacity_ratio: Option<(RequestedToCapacityRatioArgs, FieldPath)>,
    /// First entry that names a plugin needing arguments by its registered key (to locate
    /// "configured without arguments" errors): `CheckNodeLabelPresence`, `NodeLabel`,
    /// `CheckServiceAffinity`, `ServiceAffinity`, `RequestedToCapacityRatio`.
    registered_use: BTreeMap<&'static str, FieldPath>,
}

/// Canonical key, weight and bookkeeping of one priority key.
struct PriorityKey {
    weight: i64,
    names: Vec<String>,
    first: usize,
    last_path: FieldPath,
}

/// `predicates` → set of predicate keys with the names as written (`ProcessPredicatePolicy`).
fn resolve_predicates(
    policy: &Policy,
    input: &ResolveInput<'_, '_>,
    acc: &mut ArgsAcc,
    warnings: &mut Vec<String>,
    notes: &mut Vec<String>,
) -> Result<BTreeMap<&'static str, Vec<String>>, PolicyError> {
    let src = input.src;
    let root = FieldPath::root();
    let mut pred_keys: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    let Some(list) = &policy.predicates else {
        for name in DEFAULT_PREDICATES {
            pred_keys.insert(name, vec![(*name).to_string()]);
        }
        notes.push("predicates not set: kube-scheduler v1.22 default predicates".to_string());
        return Ok(pred_keys);
    };
    for (i, pred) in list.iter().enumerate() {
        let path = root.clone().key(input.predicates_key).index(i);
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
        let key = if let Some((key, _)) = predicate_plugins(canonical) {
            if pred.argument.is_some() {
                warnings.push(format!(
                    "{}: predicate \"{}\" is a registered name: its argument is ignored, as in kube-scheduler v1.22",
                    src.value(&path.clone().key("argument")),
                    pred.name
                ));
            }
            if key == NODE_LABEL_PREDICATE || key == SERVICE_AFFINITY_PREDICATE {
                acc.registered_use
                    .entry(key)
                    .or_insert_with(|| path.clone().key("name"));
            }
            key
        } else if let Some(arg) = &pred.argument {
            let arg_path = path.clone().key("argument");
            if let Some(sa) = &arg.service_affinity {
                acc.service_affinity
                    .get_or_insert_with(Default::default)
                    .affinity_labels
                    .extend(sa.labels.iter().cloned());
                SERVICE_AFFINITY_PREDICATE
            } else if let Some(lp) = &arg.labels_presence {
                let a = acc.node_label.get_or_insert_with(Default::default);
                let o = &mut acc.node_label_origins;
                let lp_path = arg_path.key("labelsPresence");
                let (labels, origins) = if lp.presence {
                    (&mut a.present_labels, &mut o.present)
                } else {
                    (&mut a.absent_labels, &mut o.absent)
                };
                labels.extend(lp.labels.iter().cloned());
                origins.extend(lp.labels.iter().map(|_| lp_path.clone()));
                NODE_LABEL_PREDICATE
            } else {
                // Unreachable: an argument has exactly one member here.
                return Err(unknown_predicate(src, &path, &pred.name));
            }
        } else {
            return Err(unknown_predicate(src, &path, &pred.name));
        };
        let names = pred_keys.entry(key).or_default();
        if !names.contains(&pred.name) {
            names.push(pred.name.clone());
        }
    }
    Ok(pred_keys)
}

fn unknown_predicate(src: &Source<'_>, path: &FieldPath, name: &str) -> PolicyError {
    let location = src.value(&path.clone().key("name"));
    if let Some((_, reason)) = REMOVED_PREDICATES.iter().find(|(n, _)| *n == name) {
        return PolicyError::RemovedName {
            location,
            kind: "predicate",
            name: name.to_string(),
            field: format!("{path}.name"),
            reason,
        };
    }
    PolicyError::UnknownName {
        location,
        kind: "predicate",
        name: name.to_string(),
        field: format!("{path}.name"),
        suggestion: suggest_predicate(name),
    }
}

fn unknown_priority(src: &Source<'_>, path: &FieldPath, name: &str) -> PolicyError {
    let location = src.value(&path.clone().key("name"));
    if let Some((_, reason)) = REMOVED_PRIORITIES.iter().find(|(n, _)| *n == name) {
        return PolicyError::RemovedName {
            location,
            kind: "priority",
            name: name.to_string(),
            field: format!("{path}.name"),
            reason,
        };
    }
    PolicyError::UnknownName {
        location,
        kind: "priority",
        name: name.to_string(),
        field: format!("{path}.name"),
        suggestion: suggest_priority(name),
    }
}

/// `priorities` → map priority key → weight (`ProcessPriorityPolicy`, `EqualPriority` skipped).
fn resolve_priorities(
    policy: &Policy,
    input: &ResolveInput<'_, '_>,
    acc: &mut ArgsAcc,
    warnings: &mut Vec<String>,
    notes: &mut Vec<String>,
) -> Result<BTreeMap<&'static str, PriorityKey>, PolicyError> {
    let src = input.src;
    let root = FieldPath::root();
    let mut keys: BTreeMap<&'static str, PriorityKey> = BTreeMap::new();
    let Some(list) = &policy.priorities else {
        for (name, weight) in DEFAULT_PRIORITIES {
            keys.insert(
                name,
                PriorityKey {
                    weight: *weight,
                    names: vec![(*name).to_string()],
                    first: 0,
                    last_path: root.clone(),
                },
            );
        }
        notes.push("priorities not set: kube-scheduler v1.22 default priorities".to_string());
        return Ok(keys);
    };
    for (i, prio) in list.iter().enumerate() {
        let path = root.clone().key("priorities").index(i);
        if prio.name == EQUAL_PRIORITY {
            let note = "EqualPriority: skipped (kube-scheduler v1.18+ registers no plugin; every node would score equally)";
            if !notes.iter().any(|n| n == note) {
                notes.push(note.to_string());
            }
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
        let key = if let Some((key, _)) = priority_plugin(canonical) {
            if prio.argument.is_some() {
                warnings.push(format!(
                    "{}: priority \"{}\" is a registered name: its argument is ignored, as in kube-scheduler v1.22",
                    src.value(&path.clone().key("argument")),
                    prio.name
                ));
            }
            if matches!(
                key,
                NODE_LABEL_PRIORITY
                    | SERVICE_AFFINITY_PRIORITY
                    | REQUESTED_TO_CAPACITY_RATIO_PRIORITY
            ) {
                acc.registered_use
                    .entry(key)
                    .or_insert_with(|| path.clone().key("name"));
            }
            key
        } else if let Some(arg) = &prio.argument {
            let arg_path = path.clone().key("argument");
            if let Some(saa) = &arg.service_anti_affinity {
                acc.service_affinity
                    .get_or_insert_with(Default::default)
                    .anti_affinity_labels_preference
                    .push(saa.label.clone());
                SERVICE_AFFINITY_PRIORITY
            } else if let Some(lp) = &arg.label_preference {
                let a = acc.node_label.get_or_insert_with(Default::default);
                let o = &mut acc.node_label_origins;
                let (labels, origins) = if lp.presence {
                    (&mut a.present_labels_preference, &mut o.present_preference)
                } else {
                    (&mut a.absent_labels_preference, &mut o.absent_preference)
                };
                labels.push(lp.label.clone());
                origins.push(arg_path.key("labelPreference"));
                NODE_LABEL_PRIORITY
            } else if let Some(r) = &arg.requested_to_capacity_ratio_arguments {
                acc.requested_to_capacity_ratio = Some((
                    RequestedToCapacityRatioArgs {
                        shape: r.shape.clone(),
                        resources: r.resources.clone(),
                    },
                    arg_path.key("requestedToCapacityRatioArguments"),
                ));
                REQUESTED_TO_CAPACITY_RATIO_PRIORITY
            } else {
                return Err(unknown_priority(src, &path, &prio.name));
            }
        } else {
            return Err(unknown_priority(src, &path, &prio.name));
        };
        match keys.get_mut(key) {
            Some(k) => {
                if k.weight != prio.weight {
                    warnings.push(format!(
                        "{}: priority {key} is listed twice ({} and {path}) with weights {} and {}; \
                         kube-scheduler v1.22 keeps the last one: weight {}",
                        src.value(&path.clone().key("weight")),
                        root.clone().key("priorities").index(k.first),
                        k.weight,
                        prio.weight,
                        prio.weight
                    ));
                }
                k.weight = prio.weight;
                k.last_path = path.clone();
                if !k.names.contains(&prio.name) {
                    k.names.push(prio.name.clone());
                }
            }
            None => {
                keys.insert(
                    key,
                    PriorityKey {
                        weight: prio.weight,
                        names: vec![prio.name.clone()],
                        first: i,
                        last_path: path.clone(),
                    },
                );
            }
        }
    }
    if list.is_empty() {
        notes.push(
            "priorities is []: no score plugins; every feasible node scores the same and the pick is random"
                .to_string(),
        );
    }
    Ok(keys)
}

/// `int32(w)` as Go converts it.
fn go_int32(w: i64) -> i32 {
    w as i32
}

/// Translates a decoded, validated policy into plugins, weights and arguments for **every**
/// v1.22 name, whether or not this build implements the plugins ([`check_implemented`] decides
/// that). Warnings go to `warnings`.
///
/// # Errors
/// In document order: [`PolicyError::Argument`] (argument with ≠ 1 member), then
/// [`PolicyError::RemovedName`] / [`PolicyError::UnknownName`]; then the failures v1.22 hits
/// when it builds the profile: a `NodeLabel`/`ServiceAffinity` priority without arguments (v1.22
/// crashes), extenders ignoring resources without `NodeResourcesFit`, and the plugins' `New`
/// checks ([`PolicyError::Argument`] with upstream's `initializing plugin "X": ...` text).
pub(crate) fn resolve(
    policy: &Policy,
    input: &ResolveInput<'_, '_>,
    warnings: &mut Vec<String>,
) -> Result<ResolvedPolicy, PolicyError> {
    let src = input.src;
    let root = FieldPath::root();
    let mut notes = Vec::new();
    let mut acc = ArgsAcc::default();
    let mut pred_keys = resolve_predicates(policy, input, &mut acc, warnings, &mut notes)?;
    for m in MANDATORY_PREDICATES {
        if !pred_keys.contains_key(m) {
            pred_keys.insert(m, vec![(*m).to_string()]);
            notes.push(format!(
                "{m}: added (mandatory predicate: kube-scheduler v1.18+ always configures it)"
            ));
        }
    }
    let prio_keys = resolve_priorities(policy, input, &mut acc, warnings, &mut notes)?;

    // ---- filters in predicateOrdering (it lists every key).
    let mut filters = Vec::new();
    for (key, plugins) in PREDICATES {
        if let Some(names) = pred_keys.get(key) {
            for plugin in *plugins {
                append_filter(&mut filters, plugin, names);
            }
        }
    }

    // ---- scores: sorted keys (AppendPriorityConfigs).
    let mut scores = Vec::new();
    for (key, k) in &prio_keys {
        let Some((_, plugin)) = priority_plugin(key) else {
            continue;
        };
        let count = match *key {
            NODE_LABEL_PRIORITY | SERVICE_AFFINITY_PRIORITY => {
                let n = if *key == NODE_LABEL_PRIORITY {
                    acc.node_label.as_ref().map(|a| {
                        a.present_labels_preference.len() + a.absent_labels_preference.len()
                    })
                } else {
                    acc.service_affinity
                        .as_ref()
                        .map(|a| a.anti_affinity_labels_preference.len())
                };
                let Some(n) = n else {
                    let (arg, plugin_args) = if *key == NODE_LABEL_PRIORITY {
                        ("labelPreference", "NodeLabelArgs")
                    } else {
                        ("serviceAntiAffinity", "ServiceAffinityArgs")
                    };
                    return Err(PolicyError::Argument {
                        location: src.value(&k.last_path.clone().key("name")),
                        message: format!(
                            "priority \"{key}\" has no {arg} argument and no entry of the policy gives {key} \
                             arguments: kube-scheduler v1.22 crashes on this policy (its {key} config producer \
                             reads {plugin_args} through a nil pointer); use a custom priority with a {arg} \
                             argument instead"
                        ),
                    });
                };
                Some(n)
            }
            _ => None,
        };
        let mut weight = match count {
            Some(n) => {
                let n = i64::try_from(n).unwrap_or(i64::MAX);
                k.weight.checked_mul(n).ok_or_else(|| PolicyError::Argument {
                    location: src.value(&k.last_path.clone().key("weight")),
                    message: format!(
                        "priority {key}: weight {} × {n} entries overflows a 64-bit score weight",
                        k.weight
                    ),
                })?
            }
            None => k.weight,
        };
        let go_weight = match count {
            Some(n) => go_int32(k.weight).wrapping_mul(n as i32),
            None => go_int32(k.weight),
        };
        if i64::from(go_weight) != weight {
            warnings.push(format!(
                "{}: score plugin {plugin} gets weight {weight}; kube-scheduler v1.22 stores plugin weights as \
                 int32 and would use {go_weight}",
                src.value(&k.last_path.clone().key("weight"))
            ));
        }
        if weight == 0 {
            // `NewFramework`: "a weight of zero is not permitted" → 1.
            notes.push(format!(
                "{plugin}: configured by priority \"{key}\" without any preference, so its weight (weight × 0 \
                 entries) is 0, which kube-scheduler v1.22 raises to 1; every node scores 0 with it"
            ));
            weight = 1;
        }
        append_score(&mut scores, plugin, weight, &k.names);
    }

    // ---- arguments.
    let hard = policy.hard_pod_affinity_symmetric_weight;
    let mut args = PluginArgs {
        node_label: acc.node_label.clone(),
        service_affinity: acc.service_affinity.clone(),
        requested_to_capacity_ratio: acc
            .requested_to_capacity_ratio
            .as_ref()
            .map(|(a, _)| a.clone()),
        inter_pod_affinity: InterPodAffinityArgs {
            hard_pod_affinity_weight: if hard == 0 { 1 } else { hard },
        },
        node_resources_fit: NodeResourcesFitArgs::default(),
        // Set by `ResolvedPolicy::with_feature_gates` (gate-off translation here).
        pod_topology_spread: None,
    };
    let has = |plugin: &str| {
        filters.iter().any(|f: &ResolvedFilter| f.plugin == plugin)
            || scores.iter().any(|s: &ResolvedScore| s.plugin == plugin)
    };
    if hard != 0 && !scores.iter().any(|s| s.plugin == "InterPodAffinity") {
        notes.push(format!(
            "hardPodAffinitySymmetricWeight: {hard} sets InterPodAffinityArgs.hardPodAffinityWeight, which only \
             the InterPodAffinity score plugin (InterPodAffinityPriority) uses; this policy does not configure it"
        ));
    }

    // ---- extenders (`Configurator.create`): ignoredByScheduler resources → NodeResourcesFit.
    let ext_path = root.clone().key("extenders");
    let mut first_ignored: Option<FieldPath> = None;
    for (i, e) in policy.extenders.iter().enumerate() {
        if !e.preempt_verb.is_empty() {
            notes.push(format!(
                "extenders[{i}].preemptVerb {:?} is not called: mini-scheduler does not preempt",
                e.preempt_verb
            ));
        }
        for (j, r) in e.managed_resources.iter().enumerate() {
            if r.ignored_by_scheduler {
                args.node_resources_fit
                    .ignored_resources
                    .push(r.name.clone());
                first_ignored.get_or_insert_with(|| {
                    ext_path.clone().index(i).key("managedResources").index(j)
                });
            }
        }
    }
    if let Some(p) = first_ignored.filter(|_| !has("NodeResourcesFit")) {
        return Err(PolicyError::Argument {
            location: src.value(&p),
            message: "can't find NodeResourcesFitArgs in plugin config (kube-scheduler v1.22: an extender's \
                      ignoredByScheduler resources configure the NodeResourcesFit filter, which this policy does \
                      not run; add PodFitsResources or GeneralPredicates)"
                .to_string(),
        });
    }

    // ---- the plugins' `New` checks on their arguments.
    let init_error = |plugin: &str, path: &FieldPath, detail: String| PolicyError::Argument {
        location: src.value(path),
        message: format!("initializing plugin \"{plugin}\": {detail}"),
    };
    let missing = |key: &str, plugin: &str, kind: &str| {
        let path = acc
            .registered_use
            .get(key)
            .cloned()
            .unwrap_or_else(FieldPath::root);
        init_error(
            plugin,
            &path,
            format!(
                "want args to be of type {kind}, got <nil> (kube-scheduler v1.22 runs {plugin} only with \
                 arguments from a custom predicate or priority)"
            ),
        )
    };
    if has("NodeLabel") {
        match &args.node_label {
            None => {
                let key = if acc.registered_use.contains_key(NODE_LABEL_PREDICATE) {
                    NODE_LABEL_PREDICATE
                } else {
                    NODE_LABEL_PRIORITY
                };
                return Err(missing(key, "NodeLabel", "NodeLabelArgs"));
            }
            Some(a) => {
                if let Err(detail) = a.validate() {
                    let o = &acc.node_label_origins;
                    let path = first_conflict(&a.present_labels, &a.absent_labels, &o.absent)
                        .or_else(|| {
                            first_conflict(
                                &a.present_labels_preference,
                                &a.absent_labels_preference,
                                &o.absent_preference,
                            )
                        })
                        .unwrap_or_else(FieldPath::root);
                    return Err(init_error("NodeLabel", &path, detail));
                }
            }
        }
    }
    if has("ServiceAffinity") && args.service_affinity.is_none() {
        return Err(missing(
            SERVICE_AFFINITY_PREDICATE,
            "ServiceAffinity",
            "ServiceAffinityArgs",
        ));
    }
    if has("RequestedToCapacityRatio") {
        match &acc.requested_to_capacity_ratio {
            None => {
                return Err(missing(
                    REQUESTED_TO_CAPACITY_RATIO_PRIORITY,
                    "RequestedToCapacityRatio",
                    "RequestedToCapacityRatioArgs",
                ));
            }
            Some((a, path)) => {
                a.validate()
                    .map_err(|detail| init_error("RequestedToCapacityRatio", path, detail))?;
                if a.resources.is_empty() {
                    warnings.push(format!(
                        "{}: requestedToCapacityRatioArguments has no resources: kube-scheduler v1.22 applies no \
                         default on the Policy path, so RequestedToCapacityRatio scores every node 0; list the \
                         resources to score, e.g. [{{\"name\":\"cpu\",\"weight\":1}},{{\"name\":\"memory\",\"weight\":1}}]",
                        src.value(path)
                    ));
                }
            }
        }
    }

    Ok(ResolvedPolicy {
        filters,
        scores,
        args,
        extenders: policy.extenders.clone(),
        always_check_all_predicates: policy.always_check_all_predicates,
        hard_pod_affinity_symmetric_weight: if hard == 0 { 1 } else { hard },
        notes,
    })
}

/// Where the first absent label that conflicts with a present one came from.
fn first_conflict(
    present: &[String],
    absent: &[String],
    origins: &[FieldPath],
) -> Option<FieldPath> {
    absent
        .iter()
        .position(|l| present.contains(l))
        .and_then(|i| origins.get(i).cloned())
}

/// What a build implements: the framework names of its filter and score plugins, and whether
/// it calls extenders. [`check_implemented`] applies [`BUILD`]; tests apply smaller sets.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Implemented {
    /// Filter plugins, by framework name.
    pub filters: &'static [&'static str],
    /// Score plugins, by framework name.
    pub scores: &'static [&'static str],
    /// Whether HTTP extenders are called.
    pub extenders: bool,
}

/// This build: [`IMPLEMENTED_FILTER_PLUGINS`], [`IMPLEMENTED_SCORE_PLUGINS`],
/// [`EXTENDERS_IMPLEMENTED`].
pub(crate) const BUILD: Implemented = Implemented {
    filters: IMPLEMENTED_FILTER_PLUGINS,
    scores: IMPLEMENTED_SCORE_PLUGINS,
    extenders: EXTENDERS_IMPLEMENTED,
};

impl Implemented {
    fn has_filters(&self, plugins: &[&str]) -> bool {
        plugins.iter().all(|p| self.filters.contains(p))
    }

    fn has_score(&self, plugin: &str) -> bool {
        self.scores.contains(&plugin)
    }
}

/// Applies what this build implements ([`BUILD`]) to a resolution: a predicate or priority
/// entry whose plugin is missing fails with "not supported yet" (first such entry in document
/// order: predicates, priorities, then extenders while [`EXTENDERS_IMPLEMENTED`] is false);
/// defaults (`null` keys) drop the plugins this build lacks, with a warning and a note listing
/// them.
///
/// Every v1.22 name is implemented now, so this never fails or drops anything for this build
/// (the legacy Policy API is frozen at v1.22: no name will be added). It stays as the guard that
/// turns a plugin missing from [`IMPLEMENTED_FILTER_PLUGINS`] / [`IMPLEMENTED_SCORE_PLUGINS`]
/// (e.g. one unregistered while reworked) into an error naming `file:line:column` and the
/// entry, instead of a profile that cannot be built; its behaviour is tested with smaller sets.
///
/// # Errors
/// [`PolicyError::Unsupported`].
pub(crate) fn check_implemented(
    policy: &Policy,
    resolved: &mut ResolvedPolicy,
    input: &ResolveInput<'_, '_>,
    warnings: &mut Vec<String>,
) -> Result<(), PolicyError> {
    check_implemented_in(&BUILD, policy, resolved, input, warnings)
}

/// [`check_implemented`] against the set `imp`.
///
/// # Errors
/// [`PolicyError::Unsupported`].
pub(crate) fn check_implemented_in(
    imp: &Implemented,
    policy: &Policy,
    resolved: &mut ResolvedPolicy,
    input: &ResolveInput<'_, '_>,
    warnings: &mut Vec<String>,
) -> Result<(), PolicyError> {
    let src = input.src;
    let root = FieldPath::root();
    match &policy.predicates {
        None => {
            let mut used = Vec::new();
            let mut omitted = Vec::new();
            let mut omitted_names = Vec::new();
            for name in DEFAULT_PREDICATES {
                let Some((key, plugins)) = predicate_plugins(name) else {
                    continue;
                };
                if imp.has_filters(plugins) {
                    used.push(key);
                } else {
                    omitted.push(format!("{key} ({})", plugins.join(", ")));
                    omitted_names.push(key);
                }
            }
            if !omitted.is_empty() {
                resolved.filters.retain(|f| imp.filters.contains(&f.plugin));
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
                resolved.notes.push(format!(
                    "default predicates omitted (not supported yet): {}",
                    omitted_names.join(", ")
                ));
            }
        }
        Some(list) => {
            for (i, pred) in list.iter().enumerate() {
                let path = root.clone().key(input.predicates_key).index(i);
                let canonical = PREDICATE_ALIASES
                    .iter()
                    .find(|(a, _)| *a == pred.name)
                    .map_or(pred.name.as_str(), |(_, c)| *c);
                let (what, plugins): (String, &[&str]) = match predicate_plugins(canonical) {
                    Some((_, plugins)) => (
                        format!(
                            "predicate \"{}\" (plugin {}) at {path}.name",
                            pred.name,
                            plugins.join(", ")
                        ),
                        plugins,
                    ),
                    None => {
                        let Some(arg) = &pred.argument else { continue };
                        let (member, plugin) = if arg.service_affinity.is_some() {
                            ("serviceAffinity", &["ServiceAffinity"][..])
                        } else {
                            ("labelsPresence", &["NodeLabel"][..])
                        };
                        (
                            format!(
                                "custom predicate \"{}\" with a {member} argument (plugin {}) at {path}",
                                pred.name, plugin[0]
                            ),
                            plugin,
                        )
                    }
                };
                if !imp.has_filters(plugins) {
                    return Err(PolicyError::Unsupported {
                        location: src.value(&path.key("name")),
                        what,
                    });
                }
            }
        }
    }
    match &policy.priorities {
        None => {
            let mut used = Vec::new();
            let mut omitted = Vec::new();
            let mut omitted_names = Vec::new();
            for (name, weight) in DEFAULT_PRIORITIES {
                let Some((key, plugin)) = priority_plugin(name) else {
                    continue;
                };
                if imp.has_score(plugin) {
                    used.push(format!("{key} {weight}"));
                } else {
                    omitted.push(format!("{key} {weight} ({plugin})"));
                    omitted_names.push(key);
                }
            }
            if !omitted.is_empty() {
                resolved.scores.retain(|s| imp.has_score(s.plugin));
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
                resolved.notes.push(format!(
                    "default priorities omitted (not supported yet): {}",
                    omitted_names.join(", ")
                ));
            }
        }
        Some(list) => {
            for (i, prio) in list.iter().enumerate() {
                if prio.name == EQUAL_PRIORITY {
                    continue;
                }
                let path = root.clone().key("priorities").index(i);
                let canonical = PRIORITY_ALIASES
                    .iter()
                    .find(|(a, _)| *a == prio.name)
                    .map_or(prio.name.as_str(), |(_, c)| *c);
                let (what, plugin) = match priority_plugin(canonical) {
                    Some((_, plugin)) => (
                        format!(
                            "priority \"{}\" (score plugin {plugin}) at {path}.name",
                            prio.name
                        ),
                        plugin,
                    ),
                    None => {
                        let Some(arg) = &prio.argument else { continue };
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
                        (
                            format!(
                                "custom priority \"{}\" with a {member} argument (score plugin {plugin}) at {path}",
                                prio.name
                            ),
                            plugin,
                        )
                    }
                };
                if !imp.has_score(plugin) {
                    return Err(PolicyError::Unsupported {
                        location: src.value(&path.key("name")),
                        what,
                    });
                }
            }
        }
    }
    if !policy.extenders.is_empty() && !imp.extenders {
        return Err(PolicyError::Unsupported {
            location: src.key(&root.key("extenders")),
            what: format!("\"extenders\" ({} configured)", policy.extenders.len()),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// Resolve `text`, then apply `imp` as loading applies [`BUILD`].
    fn check_with(
        imp: &Implemented,
        text: &str,
    ) -> Result<(ResolvedPolicy, Vec<String>), PolicyError> {
        let src = Source::new("p.json", text);
        let decoded = super::super::decode::decode(&src).unwrap();
        let input = ResolveInput {
            src: &src,
            predicates_key: decoded.predicates_key,
            predicates_key_present: decoded.predicates_key_present,
            priorities_key_present: decoded.priorities_key_present,
        };
        let mut warnings = Vec::new();
        let mut resolved = resolve(&decoded.policy, &input, &mut warnings).unwrap();
        check_implemented_in(imp, &decoded.policy, &mut resolved, &input, &mut warnings)?;
        Ok((resolved, warnings))
    }

    /// This build implements every v1.22 name: explicit lists, defaults and extenders load
    /// untouched.
    #[test]
    fn this_build_implements_every_v1_22_name() {
        for (name, plugins) in PREDICATES {
            assert!(BUILD.has_filters(plugins), "{name}");
        }
        for (name, plugin) in PRIORITIES {
            assert!(BUILD.has_score(plugin), "{name}");
        }
        let text = r#"{"kind":"Policy","apiVersion":"v1",
            "extenders":[{"urlPrefix":"http://e","filterVerb":"filter","weight":1}]}"#;
        let (r, warnings) = check_with(&BUILD, text).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(r.extenders.len(), 1);
        assert!(r.has_plugin("InterPodAffinity") && r.has_plugin("VolumeBinding"));
    }

    /// The guard for a plugin missing from the build (synthetic sets without InterPodAffinity
    /// and without extenders): an explicit name fails with "not supported yet" at its
    /// `file:line:column`; `null` lists drop the plugin with a warning and a note; extenders
    /// fail at their key.
    #[test]
    fn a_plugin_missing_from_the_build_is_refused_or_dropped_from_defaults() {
        const FILTERS: &[&str] = &[
            "NodeUnschedulable",
            "NodeName",
            "NodePorts",
            "NodeAffinity",
            "NodeResourcesFit",
            "TaintToleration",
        ];
        const SCORES: &[&str] = &["NodeResourcesLeastAllocated"];
        let imp = Implemented {
            filters: FILTERS,
            scores: SCORES,
            extenders: false,
        };
        let explicit = "{\"kind\":\"Policy\",\"apiVersion\":\"v1\",\n\"predicates\":[{\"name\":\"PodFitsResources\"},\n  {\"name\":\"MatchInterPodAffinity\"}],\"priorities\":[]}";
        let e = check_with(&imp, explicit).unwrap_err();
        assert!(matches!(e, PolicyError::Unsupported { .. }), "{e}");
        assert_eq!(
            e.to_string(),
            "p.json:3:11: predicate \"MatchInterPodAffinity\" (plugin InterPodAffinity) at \
             predicates[1].name is not supported yet by mini-scheduler"
        );
        let priority = r#"{"kind":"Policy","apiVersion":"v1","predicates":[],
            "priorities":[{"name":"InterPodAffinityPriority","weight":2}]}"#;
        let e = check_with(&imp, priority).unwrap_err().to_string();
        assert!(
            e.contains("priority \"InterPodAffinityPriority\" (score plugin InterPodAffinity)"),
            "{e}"
        );
        // Defaults: dropped, reported.
        let (r, warnings) = check_with(&imp, r#"{"kind":"Policy","apiVersion":"v1"}"#).unwrap();
        assert!(!r.has_plugin("InterPodAffinity"));
        assert!(r.filters.iter().all(|f| FILTERS.contains(&f.plugin)));
        assert!(r.scores.iter().all(|s| SCORES.contains(&s.plugin)));
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(
            warnings[0].contains("omitted, not supported yet: ")
                && warnings[0].contains("MatchInterPodAffinity (InterPodAffinity)"),
            "{}",
            warnings[0]
        );
        assert!(
            r.notes
                .iter()
                .any(|n| n.starts_with("default predicates omitted")),
            "{:?}",
            r.notes
        );
        // Extenders.
        let ext = r#"{"kind":"Policy","apiVersion":"v1","predicates":[],"priorities":[],
            "extenders":[{"urlPrefix":"http://e","filterVerb":"filter","weight":1}]}"#;
        let e = check_with(&imp, ext).unwrap_err().to_string();
        assert!(
            e.starts_with("p.json:2:13: \"extenders\" (1 configured) is not supported yet"),
            "{e}"
        );
    }

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
        // Every implemented plugin is one v1.22 knows (or the always-on GpuShare).
        for p in IMPLEMENTED_FILTER_PLUGINS {
            assert!(PREDICATES.iter().any(|(_, ps)| ps.contains(p)), "{p}");
        }
        for p in IMPLEMENTED_SCORE_PLUGINS {
            assert!(PRIORITIES.iter().any(|(_, ps)| ps == p), "{p}");
        }
        // The default provider names only plugins the legacy tables know.
        for (p, _) in DEFAULT_PROVIDER_FILTERS {
            assert!(PREDICATES.iter().any(|(_, ps)| ps.contains(p)), "{p}");
        }
        for (p, _, legacy) in DEFAULT_PROVIDER_SCORES {
            assert_eq!(priority_plugin(legacy).map(|(_, x)| x), Some(*p), "{p}");
        }
    }

    #[test]
    fn append_score_keeps_first_place_and_first_weight() {
        // legacy_registry.go appendToPluginSet: the weight is assigned to a range copy, so the
        // first weight stays although the comment says "Keep the max weight".
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
        assert_eq!(scores[0].weight, 2);
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
        assert!(is_implemented_name("MatchInterPodAffinity"));
        assert!(is_implemented_name("EvenPodsSpreadPriority"));
        assert!(is_implemented_name("MaxCinderVolumeCount"));
        assert!(is_implemented_name("PodFitsPorts") && is_implemented_name("EqualPriority"));
        assert!(is_implemented_name("CheckNodeLabelPresence"));
        assert!(is_implemented_name("ImageLocalityPriority"));
        assert_eq!(suggest_predicate("Zzzzzzzzzzzzzzzz"), None);
        assert_eq!(suggest_priority("LeastRequested"), None);
        assert_eq!(
            suggest_priority("LeastRequestPriority"),
            Some("LeastRequestedPriority")
        );
        assert_eq!(suggest_priority("EqualPriorty"), Some("EqualPriority"));
    }

    #[test]
    fn default_provider_is_v1_22_defaults_restricted_to_implemented() {
        let d = default_provider();
        let want_filters: Vec<&str> = DEFAULT_PROVIDER_FILTERS
            .iter()
            .map(|(p, _)| *p)
            .filter(|p| IMPLEMENTED_FILTER_PLUGINS.contains(p))
            .collect();
        let filters: Vec<&str> = d.filters.iter().map(|f| f.plugin).collect();
        assert_eq!(filters, want_filters);
        // Every plugin of v1.22's DefaultProvider is implemented: its whole profile, in upstream
        // order (TestAlgorithmProviderCompatibility), SelectorSpread (gate off) appended.
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
                "VolumeZone",
                "PodTopologySpread",
                "InterPodAffinity",
            ]
        );
        let scores: Vec<(&str, i64)> = d.scores.iter().map(|s| (s.plugin, s.weight)).collect();
        assert_eq!(
            scores,
            [
                ("NodeResourcesBalancedAllocation", 1),
                ("ImageLocality", 1),
                ("InterPodAffinity", 1),
                ("NodeResourcesLeastAllocated", 1),
                ("NodeAffinity", 1),
                ("NodePreferAvoidPods", 10000),
                ("PodTopologySpread", 2),
                ("TaintToleration", 1),
                ("SelectorSpread", 1),
            ]
        );
        for f in &d.filters {
            assert!(IMPLEMENTED_FILTER_PLUGINS.contains(&f.plugin));
        }
        for s in &d.scores {
            assert!(IMPLEMENTED_SCORE_PLUGINS.contains(&s.plugin));
        }
        // Omitted plugins are listed, and only those.
        let omitted_filters: Vec<&str> = d
            .notes
            .iter()
            .filter_map(|n| n.strip_prefix("default filter plugins omitted (not supported yet): "))
            .flat_map(|l| l.split(", "))
            .collect();
        for (p, _) in DEFAULT_PROVIDER_FILTERS {
            let listed = omitted_filters.contains(p);
            assert_eq!(listed, !IMPLEMENTED_FILTER_PLUGINS.contains(p), "{p}");
        }
        for (p, w, _) in DEFAULT_PROVIDER_SCORES {
            let listed = d.notes.iter().any(|n| n.contains(&format!("{p} ({w})")));
            assert_eq!(listed, !IMPLEMENTED_SCORE_PLUGINS.contains(p), "{p}");
        }
        assert_eq!(d.args.inter_pod_affinity.hard_pod_affinity_weight, 1);
    }
}
