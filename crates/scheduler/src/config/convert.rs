//! A resolved Policy → the `KubeSchedulerConfiguration` that runs the same plugins.
//!
//! Follows what kube-scheduler v1.22's `createFromPolicy` builds from a Policy
//! (`pkg/scheduler/factory.go`, `pkg/scheduler/framework/plugins/legacy_registry.go`
//! @054d429d): one profile; QueueSort `PrioritySort`, PostFilter `DefaultPreemption`, Bind
//! `DefaultBinder`; the filter plugins in `predicateOrdering` with their PreFilter, Reserve and
//! PreBind points; the score plugins in sorted priority-key order with their PreScore points and
//! the weights the Policy resolves to; the plugin arguments; the extenders. Every point starts
//! from `disabled: [{name: "*"}]` (v1beta2) or `multiPoint.disabled: [{name: "*"}]` (v1beta3,
//! v1), because a Policy never merged kube-scheduler's default plugins in.
//!
//! Two priorities that resolve to one score plugin keep the **first** weight in sorted key
//! order, as v1.22 does: `appendToPluginSet` means to keep the larger one ("Keep the max
//! weight") but assigns to the loop's copy of the entry (`for _, e := range set.Enabled { ...
//! e.Weight = *weight }`), so the entry already in the set is never changed. With
//! `DefaultPodTopologySpread` on, `EvenPodsSpreadPriority` (weight 2 by default) sorts before
//! `SelectorSpreadPriority` and its weight is the one `PodTopologySpread` gets. The resolver
//! ([`crate::policy::ResolvedPolicy::with_feature_gates`]) already applies this; the conversion
//! copies the resolved weights.
//!
//! What a target version cannot express is left out and reported, one warning per plugin, with
//! the nearest equivalent ([`REMOVED_PLUGINS`]):
//! - from v1beta2 on (kube-scheduler v1.22 refuses them in a v1beta2 file: `was removed in
//!   version "kubescheduler.config.k8s.io/v1beta2"`): `NodeLabel`, `ServiceAffinity`,
//!   `NodePreferAvoidPods`;
//! - in v1: `SelectorSpread` (absent from v1, code removed in v1.29) and the cloud volume
//!   limits `EBSLimits`, `GCEPDLimits`, `AzureDiskLimits`, `CinderLimits` (refused by current
//!   v1 validation; `NodeVolumeLimits` counts their CSI-migrated volumes).
//!
//! `NodeResourcesLeastAllocated`, `NodeResourcesMostAllocated` and `RequestedToCapacityRatio`
//! are gone from v1beta2 on too, but their scoring lives on as `NodeResourcesFit`'s
//! `scoringStrategy` (`LeastAllocated` / `MostAllocated` over cpu:1, memory:1, or
//! `RequestedToCapacityRatio` with the Policy's shape and resources, shape scores kept on the
//! 0..=10 scale of every config API). A profile has one strategy: a Policy that combines them
//! keeps the first in score order and the others are reported and left out.

use std::fmt;

use super::types::{
    Extender, ExtenderManagedResource, ExtenderTlsConfig, InterPodAffinityArgs,
    KUBE_SCHEDULER_CONFIGURATION_KIND, KubeSchedulerConfiguration, KubeSchedulerProfile,
    NodeResourcesFitArgs, Plugin, PluginConfig, PluginSet, Plugins, PodTopologySpreadArgs,
    RequestedToCapacityRatioParam, ScoringStrategy,
};
use super::{ConfigVersion, duration::format_go_duration};
use crate::policy::{DefaultingType, LegacyExtender, LoadedPolicy, ResourceSpec};

/// Filter plugins that also run at PreFilter (v1.22's legacy registry producers).
pub(crate) const PRE_FILTER_PLUGINS: &[&str] = &[
    "NodeResourcesFit",
    "NodePorts",
    "NodeAffinity",
    "VolumeBinding",
    "InterPodAffinity",
    "PodTopologySpread",
    "ServiceAffinity",
];

/// Score plugins that also run at PreScore (v1.22's legacy registry producers).
pub(crate) const PRE_SCORE_PLUGINS: &[&str] = &[
    "PodTopologySpread",
    "SelectorSpread",
    "TaintToleration",
    "NodeAffinity",
    "InterPodAffinity",
];

/// The v1.22 resource score plugins that became `NodeResourcesFit` scoring strategies in
/// v1beta2, with the strategy type.
pub(crate) const RESOURCE_SCORERS: &[(&str, &str)] = &[
    ("NodeResourcesLeastAllocated", "LeastAllocated"),
    ("NodeResourcesMostAllocated", "MostAllocated"),
    ("RequestedToCapacityRatio", "RequestedToCapacityRatio"),
];

/// Plugins a configuration version no longer has: name, first version without it, what kube-
/// scheduler says, and the nearest equivalent.
pub const REMOVED_PLUGINS: &[(&str, ConfigVersion, &str)] = &[
    (
        "NodeLabel",
        ConfigVersion::V1beta2,
        "use NodeAffinity: for labelsPresence, pluginConfig NodeAffinity args \
         addedAffinity.requiredDuringSchedulingIgnoredDuringExecution with one term of Exists \
         (present labels) and DoesNotExist (absent labels) expressions, which is ANDed with every \
         pod's own affinity; for labelPreference, preferred node affinity terms on the pods or in \
         addedAffinity (NodeAffinity normalizes by the best node, so scores differ)",
    ),
    (
        "ServiceAffinity",
        ConfigVersion::V1beta2,
        "use InterPodAffinity: required pod affinity (serviceAffinity) or preferred pod \
         anti-affinity (serviceAntiAffinity) on the Service's pod labels, with the node label as \
         topologyKey, in the pods' specs",
    ),
    (
        "NodePreferAvoidPods",
        ConfigVersion::V1beta2,
        "use PreferNoSchedule taints on the nodes to avoid (TaintToleration scores them); the \
         scheduler.alpha.kubernetes.io/preferAvoidPods annotation is no longer read",
    ),
    (
        "SelectorSpread",
        ConfigVersion::V1,
        "use PodTopologySpread with pluginConfig defaultingType: System, which spreads a \
         Service's or controller's pods by hostname (maxSkew 3) and zone (maxSkew 5)",
    ),
    (
        "EBSLimits",
        ConfigVersion::V1,
        "use NodeVolumeLimits, which counts CSI-migrated EBS volumes against the CSINode limits",
    ),
    (
        "GCEPDLimits",
        ConfigVersion::V1,
        "use NodeVolumeLimits, which counts CSI-migrated GCE PD volumes against the CSINode limits",
    ),
    (
        "AzureDiskLimits",
        ConfigVersion::V1,
        "use NodeVolumeLimits, which counts CSI-migrated Azure Disk volumes against the CSINode \
         limits",
    ),
    (
        "CinderLimits",
        ConfigVersion::V1,
        "use NodeVolumeLimits, which counts CSI-migrated Cinder volumes against the CSINode limits",
    ),
];

/// The removal entry of `plugin` if `version` no longer has it.
pub(crate) fn removed_in(
    plugin: &str,
    version: ConfigVersion,
) -> Option<&'static (&'static str, ConfigVersion, &'static str)> {
    REMOVED_PLUGINS
        .iter()
        .find(|(name, since, _)| *name == plugin && version >= *since)
}

/// A configuration converted from a Policy, with what the user must know.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversion {
    /// The configuration (one profile).
    pub config: KubeSchedulerConfiguration,
    /// One line per plugin left out or setting without an equivalent, each starting with the
    /// policy's source name.
    pub warnings: Vec<String>,
}

impl Conversion {
    /// The configuration as YAML, the way kube-scheduler's `--config` files are usually written.
    pub fn to_yaml(&self) -> String {
        serde_yaml::to_string(&self.config).unwrap_or_default()
    }

    /// Whether nothing was left out: the configuration schedules exactly as the Policy.
    pub fn is_lossless(&self) -> bool {
        self.warnings.is_empty()
    }
}

/// A Policy that resolves but cannot be written in the target version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}: cannot convert to {version}: {message}")]
pub struct ConvertError {
    /// The policy's name as given.
    pub source_name: String,
    /// The target.
    pub version: ConfigVersion,
    /// What, naming the plugin or field and value.
    pub message: String,
}

/// Why plugins were left out, gathered per plugin.
struct Dropped {
    plugin: &'static str,
    at: Vec<&'static str>,
    legacy: Vec<String>,
    reason: String,
}

impl fmt::Display for Dropped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({} from {}) {}",
            self.plugin,
            self.at.join(" and "),
            self.legacy.join(", "),
            self.reason
        )
    }
}

fn note_dropped(
    dropped: &mut Vec<Dropped>,
    plugin: &'static str,
    at: &'static str,
    legacy: &[String],
    reason: impl FnOnce() -> String,
) {
    if let Some(d) = dropped.iter_mut().find(|d| d.plugin == plugin) {
        if !d.at.contains(&at) {
            d.at.push(at);
        }
        for n in legacy {
            if !d.legacy.contains(n) {
                d.legacy.push(n.clone());
            }
        }
        return;
    }
    dropped.push(Dropped {
        plugin,
        at: vec![at],
        legacy: legacy.to_vec(),
        reason: reason(),
    });
}

fn plugins_of(names: &[Plugin]) -> Option<PluginSet> {
    Some(PluginSet {
        enabled: names.to_vec(),
        disabled: Vec::new(),
    })
}

fn all_disabled(enabled: Vec<Plugin>) -> Option<PluginSet> {
    Some(PluginSet {
        enabled,
        disabled: vec![Plugin::named("*")],
    })
}

/// The configuration extender of a Policy extender: `enableHttps` → `enableHTTPS`, `httpTimeout`
/// nanoseconds → Go duration text (0 left out: both mean 5s).
pub fn extender_from_policy(e: &LegacyExtender) -> Extender {
    Extender {
        url_prefix: e.url_prefix.clone(),
        filter_verb: e.filter_verb.clone(),
        preempt_verb: e.preempt_verb.clone(),
        prioritize_verb: e.prioritize_verb.clone(),
        weight: e.weight,
        bind_verb: e.bind_verb.clone(),
        enable_https: e.enable_https,
        tls_config: e.tls_config.as_ref().map(|t| ExtenderTlsConfig {
            insecure: t.insecure,
            server_name: t.server_name.clone(),
            cert_file: t.cert_file.clone(),
            key_file: t.key_file.clone(),
            ca_file: t.ca_file.clone(),
            cert_data: t.cert_data.clone(),
            key_data: t.key_data.clone(),
            ca_data: t.ca_data.clone(),
        }),
        http_timeout: (e.http_timeout != 0).then(|| format_go_duration(e.http_timeout)),
        node_cache_capable: e.node_cache_capable,
        managed_resources: e
            .managed_resources
            .iter()
            .map(|r| ExtenderManagedResource {
                name: r.name.clone(),
                ignored_by_scheduler: r.ignored_by_scheduler,
            })
            .collect(),
        ignorable: e.ignorable,
    }
}

/// Converts a loaded Policy to a `KubeSchedulerConfiguration` of `version` whose one profile is
/// named `scheduler_name`.
///
/// `loaded.resolved` must carry the feature gates the scheduler runs with
/// ([`crate::policy::ResolvedPolicy::with_feature_gates`]); `source_name` prefixes warnings.
///
/// # Errors
/// [`ConvertError`] when a value has no representation in the target: a score weight above
/// `i32::MAX` (config weights are int32), or a `requestedToCapacityRatioArguments` resource
/// weight above 100 (`NodeResourcesFitArgs` accepts 1..=100).
pub fn convert_policy(
    loaded: &LoadedPolicy,
    source_name: &str,
    version: ConfigVersion,
    scheduler_name: &str,
) -> Result<Conversion, ConvertError> {
    let resolved = &loaded.resolved;
    let error = |message: String| ConvertError {
        source_name: source_name.to_string(),
        version,
        message,
    };
    let removed_reason = |plugin: &str| {
        removed_in(plugin, version).map(|(_, since, advice)| {
            format!(
                "is not a plugin of {} (gone from {} on): left out; {advice}",
                version.api_version(),
                since.name()
            )
        })
    };
    let mut dropped: Vec<Dropped> = Vec::new();
    let mut warnings = Vec::new();

    let (mut pre_filter, mut filter, mut reserve, mut pre_bind) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for f in &resolved.filters {
        if let Some(reason) = removed_reason(f.plugin) {
            note_dropped(&mut dropped, f.plugin, "filter", &f.legacy_names, || reason);
            continue;
        }
        if PRE_FILTER_PLUGINS.contains(&f.plugin) {
            pre_filter.push(Plugin::named(f.plugin));
        }
        filter.push(Plugin::named(f.plugin));
        if f.plugin == "VolumeBinding" {
            reserve.push(Plugin::named(f.plugin));
            pre_bind.push(Plugin::named(f.plugin));
        }
    }

    let (mut pre_score, mut score) = (Vec::new(), Vec::new());
    let mut strategy: Option<(ScoringStrategy, &'static str)> = None;
    for s in &resolved.scores {
        if let Some(reason) = removed_reason(s.plugin) {
            note_dropped(&mut dropped, s.plugin, "score", &s.legacy_names, || reason);
            continue;
        }
        let weight = i32::try_from(s.weight).map_err(|_| {
            error(format!(
                "score plugin {} has weight {}, above the int32 maximum of configuration weights",
                s.plugin, s.weight
            ))
        })?;
        let mut name = s.plugin;
        if let Some((_, kind)) = RESOURCE_SCORERS.iter().find(|(p, _)| *p == s.plugin) {
            if let Some((_, first)) = &strategy {
                let first = *first;
                note_dropped(&mut dropped, s.plugin, "score", &s.legacy_names, || {
                    format!(
                        "is NodeResourcesFit's scoringStrategy {kind} in {}, and a profile has one \
                         strategy, already {first}'s: left out; pick one resource scoring for the \
                         profile (or keep a kube-scheduler v1.22 Policy for this combination)",
                        version.api_version()
                    )
                });
                continue;
            }
            strategy = Some((scoring_strategy(loaded, kind, &error)?, s.plugin));
            name = "NodeResourcesFit";
        }
        if PRE_SCORE_PLUGINS.contains(&name) {
            pre_score.push(Plugin::named(name));
        }
        score.push(Plugin {
            name: name.to_string(),
            weight: Some(weight),
        });
    }

    let enabled =
        |name: &str| filter.iter().any(|p| p.name == name) || score.iter().any(|p| p.name == name);
    let mut plugin_config = Vec::new();
    if enabled("NodeResourcesFit") {
        let args = NodeResourcesFitArgs {
            ignored_resources: resolved.args.node_resources_fit.ignored_resources.clone(),
            ignored_resource_groups: Vec::new(),
            scoring_strategy: strategy.map(|(s, _)| s),
        };
        if args != NodeResourcesFitArgs::default() {
            plugin_config.push(PluginConfig {
                name: "NodeResourcesFit".into(),
                args: serde_yaml::to_value(args).ok(),
            });
        }
    }
    let hard = loaded.policy.hard_pod_affinity_symmetric_weight;
    if hard != 0 && score.iter().any(|p| p.name == "InterPodAffinity") {
        plugin_config.push(PluginConfig {
            name: "InterPodAffinity".into(),
            args: serde_yaml::to_value(InterPodAffinityArgs {
                hard_pod_affinity_weight: Some(hard),
            })
            .ok(),
        });
    }
    if enabled("PodTopologySpread") {
        let defaulting = match resolved.args.pod_topology_spread.as_ref() {
            Some(a) if a.defaulting_type == DefaultingType::System => "System",
            _ => "List",
        };
        plugin_config.push(PluginConfig {
            name: "PodTopologySpread".into(),
            args: serde_yaml::to_value(PodTopologySpreadArgs {
                default_constraints: Vec::new(),
                defaulting_type: Some(defaulting.to_string()),
            })
            .ok(),
        });
    }

    for d in &dropped {
        warnings.push(format!("{source_name}: {d}"));
    }
    if resolved.always_check_all_predicates {
        warnings.push(format!(
            "{source_name}: alwaysCheckAllPredicates: true has no KubeSchedulerConfiguration \
             equivalent: left out; every profile stops at a node's first failing filter, so \
             unschedulable pods report one reason per node"
        ));
    }
    if let Some(r) = &resolved.args.requested_to_capacity_ratio
        && r.resources.is_empty()
        && score.iter().any(|p| p.name == "NodeResourcesFit")
        && strategy_is_rtcr(&plugin_config)
    {
        warnings.push(format!(
            "{source_name}: requestedToCapacityRatioArguments has no resources, so the Policy scores every \
             node 0, while NodeResourcesFit defaults an empty resources list to cpu:1, memory:1: \
             scores change; list the resources to keep"
        ));
    }

    let pts_or_none = |v: Vec<Plugin>| (!v.is_empty()).then_some(v);
    let plugins = match version {
        ConfigVersion::V1beta2 => Plugins {
            queue_sort: all_disabled(vec![Plugin::named("PrioritySort")]),
            pre_filter: all_disabled(pre_filter),
            filter: all_disabled(filter),
            post_filter: all_disabled(vec![Plugin::named("DefaultPreemption")]),
            pre_score: all_disabled(pre_score),
            score: all_disabled(score),
            reserve: all_disabled(reserve),
            pre_bind: all_disabled(pre_bind),
            bind: all_disabled(vec![Plugin::named("DefaultBinder")]),
            ..Plugins::default()
        },
        ConfigVersion::V1beta3 | ConfigVersion::V1 => Plugins {
            multi_point: Some(PluginSet {
                enabled: Vec::new(),
                disabled: vec![Plugin::named("*")],
            }),
            queue_sort: plugins_of(&[Plugin::named("PrioritySort")]),
            pre_filter: pts_or_none(pre_filter).and_then(|v| plugins_of(&v)),
            filter: pts_or_none(filter).and_then(|v| plugins_of(&v)),
            post_filter: plugins_of(&[Plugin::named("DefaultPreemption")]),
            pre_score: pts_or_none(pre_score).and_then(|v| plugins_of(&v)),
            score: pts_or_none(score).and_then(|v| plugins_of(&v)),
            reserve: pts_or_none(reserve).and_then(|v| plugins_of(&v)),
            pre_bind: pts_or_none(pre_bind).and_then(|v| plugins_of(&v)),
            bind: plugins_of(&[Plugin::named("DefaultBinder")]),
            ..Plugins::default()
        },
    };

    let config = KubeSchedulerConfiguration {
        api_version: version.api_version().to_string(),
        kind: KUBE_SCHEDULER_CONFIGURATION_KIND.to_string(),
        profiles: vec![KubeSchedulerProfile {
            scheduler_name: Some(scheduler_name.to_string()),
            plugins: Some(plugins),
            plugin_config,
            ..KubeSchedulerProfile::default()
        }],
        extenders: resolved
            .extenders
            .iter()
            .map(extender_from_policy)
            .collect(),
        ..KubeSchedulerConfiguration::default()
    };
    Ok(Conversion { config, warnings })
}

fn strategy_is_rtcr(plugin_config: &[PluginConfig]) -> bool {
    plugin_config.iter().any(|c| {
        c.name == "NodeResourcesFit"
            && c.args
                .as_ref()
                .and_then(|a| a.get("scoringStrategy"))
                .and_then(|s| s.get("type"))
                .and_then(|t| t.as_str())
                == Some("RequestedToCapacityRatio")
    })
}

/// The `NodeResourcesFit` scoring strategy of one v1.22 resource score plugin.
fn scoring_strategy(
    loaded: &LoadedPolicy,
    kind: &str,
    error: &dyn Fn(String) -> ConvertError,
) -> Result<ScoringStrategy, ConvertError> {
    let default_resources = || {
        vec![
            ResourceSpec {
                name: "cpu".into(),
                weight: 1,
            },
            ResourceSpec {
                name: "memory".into(),
                weight: 1,
            },
        ]
    };
    if kind != "RequestedToCapacityRatio" {
        return Ok(ScoringStrategy {
            type_: kind.to_string(),
            resources: default_resources(),
            requested_to_capacity_ratio: None,
        });
    }
    let args = loaded
        .resolved
        .args
        .requested_to_capacity_ratio
        .clone()
        .unwrap_or_default();
    if let Some(r) = args.resources.iter().find(|r| r.weight > 100) {
        return Err(error(format!(
            "requestedToCapacityRatioArguments resource {} has weight {}; NodeResourcesFit's \
             scoringStrategy accepts resource weights 1..=100 (\"resource weight of {} not in \
             valid range (0, 100]\"): scale the weights down by a common factor",
            r.name, r.weight, r.name
        )));
    }
    Ok(ScoringStrategy {
        type_: kind.to_string(),
        resources: args.resources,
        requested_to_capacity_ratio: Some(RequestedToCapacityRatioParam { shape: args.shape }),
    })
}
