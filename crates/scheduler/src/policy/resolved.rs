//! What the scheduler runs, resolved from a Policy ([`super::resolve`]) or from kube-scheduler
//! v1.22's default profile ([`default_provider`]): filter plugins in order, score plugins with
//! their weights, plugin arguments and extenders; and how `policy check` shows it.

use std::fmt;

use super::args::PluginArgs;
use super::legacy_registry::{DEFAULT_PROVIDER_FILTERS, DEFAULT_PROVIDER_SCORES};
use super::types::LegacyExtender;

/// A filter plugin to run, with the legacy names that asked for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedFilter {
    /// Framework plugin name (one `framework::runtime::new_filter` builds).
    pub plugin: &'static str,
    /// Predicate names (as written in the policy, or the canonical name for defaults and
    /// mandatory predicates) that produced this plugin.
    pub legacy_names: Vec<String>,
}

/// A score plugin to run with its weight, with the legacy names that asked for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedScore {
    /// Framework plugin name (one `framework::runtime::new_score` builds).
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
    /// Human-readable remarks: defaults used, skipped `EqualPriority`, mandatory predicates
    /// added, settings that have no effect.
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

/// kube-scheduler v1.22's default profile; used when no policy file is given.
///
/// Upstream: `pkg/scheduler/apis/config/v1beta1/default_plugins.go` `getDefaultPlugins` and
/// `applyFeatureGates` (v1.21/v1.22; same lists as `TestAlgorithmProviderCompatibility` in
/// `pkg/scheduler/apis/config/testing/compatibility_test.go` @05c351a9), with
/// `DefaultPodTopologySpread` off, which appends `SelectorSpread` weight 1: the tables
/// [`DEFAULT_PROVIDER_FILTERS`] and [`DEFAULT_PROVIDER_SCORES`]. Plugin arguments are v1.22's
/// defaults (`InterPodAffinity` hardPodAffinityWeight 1). Like a resolved Policy, this is the
/// gate-off profile: [`ResolvedPolicy::with_feature_gates`] with v1.22's default gates drops
/// `SelectorSpread` and gives `PodTopologySpread` `defaultingType: System`, exactly
/// `TestAlgorithmProviderCompatibility`'s list.
pub fn default_provider() -> ResolvedPolicy {
    let filters = DEFAULT_PROVIDER_FILTERS
        .iter()
        .map(|(plugin, legacy)| ResolvedFilter {
            plugin,
            legacy_names: vec![(*legacy).to_string()],
        })
        .collect();
    let scores = DEFAULT_PROVIDER_SCORES
        .iter()
        .map(|(plugin, weight, legacy)| ResolvedScore {
            plugin,
            weight: *weight,
            legacy_names: vec![(*legacy).to_string()],
        })
        .collect();
    ResolvedPolicy {
        filters,
        scores,
        args: PluginArgs::default(),
        extenders: Vec::new(),
        always_check_all_predicates: false,
        hard_pod_affinity_symmetric_weight: 1,
        notes: vec!["no policy file: kube-scheduler v1.22's default plugins".to_string()],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// v1.22's DefaultProvider: its whole profile, in upstream order
    /// (TestAlgorithmProviderCompatibility), SelectorSpread (gate off) appended.
    #[test]
    fn default_provider_is_v1_22_defaults() {
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
                "VolumeZone",
                "PodTopologySpread",
                "InterPodAffinity",
            ]
        );
        assert_eq!(d.filters[1].legacy_names, ["HostName"]);
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
        assert_eq!(d.scores[5].legacy_names, ["NodePreferAvoidPodsPriority"]);
        assert_eq!(d.args.inter_pod_affinity.hard_pod_affinity_weight, 1);
        assert_eq!(d.hard_pod_affinity_symmetric_weight, 1);
        assert_eq!(
            d.notes,
            ["no policy file: kube-scheduler v1.22's default plugins"]
        );
    }
}
