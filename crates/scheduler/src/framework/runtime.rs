//! The plugin runtime ([`Framework`]): the filter plugins in execution order and the score
//! plugins with their weights, built from a resolved Policy. Follows
//! `pkg/scheduler/framework/runtime/framework.go` (v1.22): `RunFilterPlugins` stops at the first
//! failing filter unless `alwaysCheckAllPredicates` (`runAllFilters`) is set, and the total score
//! of a node is `Σ weight × normalized score`.

use thiserror::Error;

use super::plugins;
use super::{FilterPlugin, ScorePlugin};
use crate::policy::{PluginArgs, ResolvedPolicy};

/// A plugin name in a resolved policy that this build does not provide.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FrameworkError {
    /// No filter plugin with this name.
    #[error("filter plugin {0:?} is not implemented")]
    UnknownFilter(String),
    /// No score plugin with this name.
    #[error("score plugin {0:?} is not implemented")]
    UnknownScore(String),
    /// A weight that is not positive.
    #[error("score plugin {0:?} has weight {1}; weights must be positive")]
    BadWeight(String, i64),
    /// Σ weight × 100 exceeds `i64::MAX` (v1.22 `NewFramework`'s check).
    #[error("total score of Score plugins could overflow")]
    TotalScoreOverflow,
}

/// A score plugin with its weight and the Policy name shown in explanations.
pub struct WeightedScore {
    /// The plugin.
    pub plugin: Box<dyn ScorePlugin>,
    /// Weight (≥ 1).
    pub weight: i64,
    /// Display name: the legacy Policy priority name when there is one, else the plugin name.
    pub display_name: String,
}

/// Per-node score explanation: normalized score of each plugin (by display name) and the total.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScoreBreakdown {
    /// Weighted total.
    pub total: i64,
    /// `(display name, normalized score 0..=100)` in plugin order.
    pub plugins: Vec<(String, i64)>,
}

/// The plugins of one scheduling profile.
pub struct Framework {
    /// Filters in execution order.
    pub filters: Vec<Box<dyn FilterPlugin>>,
    /// Score plugins with weights.
    pub scores: Vec<WeightedScore>,
    /// Run every filter on a node even after one failed (`alwaysCheckAllPredicates`).
    pub run_all_filters: bool,
}

/// A filter plugin by framework name, built with the profile's plugin arguments (a plugin that
/// takes none ignores `args`; the Policy resolver has already checked those that need them).
/// `None` when this build has no such filter.
pub fn new_filter(name: &str, args: &PluginArgs) -> Option<Box<dyn FilterPlugin>> {
    Some(match name {
        plugins::node_unschedulable::NAME => {
            Box::new(plugins::node_unschedulable::NodeUnschedulable)
        }
        plugins::node_name::NAME => Box::new(plugins::node_name::NodeName),
        plugins::node_ports::NAME => Box::new(plugins::node_ports::NodePorts),
        plugins::node_affinity::NAME => Box::new(plugins::node_affinity::NodeAffinity),
        // Extended resources the extenders manage with `ignoredByScheduler` (v1.22 `factory.go`
        // `create` gives them to NodeResourcesFit as `IgnoredResources`).
        plugins::node_resources_fit::NAME => {
            Box::new(plugins::node_resources_fit::NodeResourcesFit {
                ignored_resources: args.node_resources_fit.ignored_resources.clone(),
            })
        }
        plugins::volume_restrictions::NAME => {
            Box::new(plugins::volume_restrictions::VolumeRestrictions)
        }
        plugins::taint_toleration::NAME => Box::new(plugins::taint_toleration::TaintToleration),
        plugins::gpu_share::NAME => Box::new(plugins::gpu_share::GpuShare),
        plugins::node_label::NAME => Box::new(plugins::node_label::NodeLabel::new(
            args.node_label.clone().unwrap_or_default(),
        )),
        plugins::service_affinity::NAME => {
            Box::new(plugins::service_affinity::ServiceAffinity::new(
                args.service_affinity.clone().unwrap_or_default(),
            ))
        }
        plugins::inter_pod_affinity::NAME => {
            Box::new(plugins::inter_pod_affinity::InterPodAffinity::new(
                args.inter_pod_affinity.hard_pod_affinity_weight,
            ))
        }
        plugins::pod_topology_spread::NAME => Box::new(pod_topology_spread(args)),
        plugins::volume_zone::NAME => Box::new(plugins::volume_zone::VolumeZone),
        plugins::volume_binding::NAME => {
            Box::new(plugins::volume_binding::VolumeBinding::default())
        }
        plugins::node_volume_limits::NAME => {
            Box::new(plugins::node_volume_limits::NodeVolumeLimits::default())
        }
        "EBSLimits" => Box::new(plugins::non_csi_limits::NonCsiLimits::new(
            plugins::non_csi_limits::VolumeType::Ebs,
        )),
        "GCEPDLimits" => Box::new(plugins::non_csi_limits::NonCsiLimits::new(
            plugins::non_csi_limits::VolumeType::GcePd,
        )),
        "AzureDiskLimits" => Box::new(plugins::non_csi_limits::NonCsiLimits::new(
            plugins::non_csi_limits::VolumeType::AzureDisk,
        )),
        "CinderLimits" => Box::new(plugins::non_csi_limits::NonCsiLimits::new(
            plugins::non_csi_limits::VolumeType::Cinder,
        )),
        _ => return None,
    })
}

/// A score plugin by framework name, built with the profile's plugin arguments (see
/// [`new_filter`]). `None` when this build has no such score plugin.
pub fn new_score(name: &str, args: &PluginArgs) -> Option<Box<dyn ScorePlugin>> {
    Some(match name {
        plugins::least_allocated::NAME => Box::new(plugins::least_allocated::LeastAllocated),
        plugins::most_allocated::NAME => Box::new(plugins::most_allocated::MostAllocated),
        plugins::balanced_allocation::NAME => {
            Box::new(plugins::balanced_allocation::BalancedAllocation)
        }
        plugins::selector_spread::NAME => Box::new(plugins::selector_spread::SelectorSpread),
        plugins::node_label::NAME => Box::new(plugins::node_label::NodeLabel::new(
            args.node_label.clone().unwrap_or_default(),
        )),
        plugins::service_affinity::NAME => {
            Box::new(plugins::service_affinity::ServiceAffinity::new(
                args.service_affinity.clone().unwrap_or_default(),
            ))
        }
        plugins::requested_to_capacity_ratio::NAME => Box::new(
            plugins::requested_to_capacity_ratio::RequestedToCapacityRatio::new(
                &args.requested_to_capacity_ratio.clone().unwrap_or_default(),
            ),
        ),
        plugins::image_locality::NAME => Box::new(plugins::image_locality::ImageLocality),
        plugins::node_prefer_avoid_pods::NAME => {
            Box::new(plugins::node_prefer_avoid_pods::NodePreferAvoidPods)
        }
        plugins::node_affinity::NAME => Box::new(plugins::node_affinity::NodeAffinity),
        plugins::taint_toleration::NAME => Box::new(plugins::taint_toleration::TaintToleration),
        plugins::inter_pod_affinity::NAME => {
            Box::new(plugins::inter_pod_affinity::InterPodAffinity::new(
                args.inter_pod_affinity.hard_pod_affinity_weight,
            ))
        }
        plugins::pod_topology_spread::NAME => Box::new(pod_topology_spread(args)),
        _ => return None,
    })
}

/// `PodTopologySpread` with its `defaultingType` (List without constraints when unset).
fn pod_topology_spread(args: &PluginArgs) -> plugins::pod_topology_spread::PodTopologySpread {
    match args.pod_topology_spread.as_ref().map(|a| a.defaulting_type) {
        Some(crate::policy::DefaultingType::System) => {
            plugins::pod_topology_spread::PodTopologySpread::system_defaulting()
        }
        Some(crate::policy::DefaultingType::List) | None => {
            plugins::pod_topology_spread::PodTopologySpread::new()
        }
    }
}

impl Framework {
    /// Build the plugins of a resolved Policy. The `GpuShare` filter is appended after the
    /// policy's filters (it only acts on pods that request GPUs).
    ///
    /// # Errors
    /// [`FrameworkError`] when the policy names a plugin this build lacks or a bad weight.
    pub fn from_policy(policy: &ResolvedPolicy) -> Result<Framework, FrameworkError> {
        let mut filters = Vec::new();
        for f in &policy.filters {
            filters.push(
                new_filter(f.plugin, &policy.args)
                    .ok_or_else(|| FrameworkError::UnknownFilter(f.plugin.to_string()))?,
            );
        }
        if !policy
            .filters
            .iter()
            .any(|f| f.plugin == plugins::gpu_share::NAME)
        {
            filters.push(Box::new(plugins::gpu_share::GpuShare) as Box<dyn FilterPlugin>);
        }
        let mut scores = Vec::new();
        for s in &policy.scores {
            if s.weight <= 0 {
                return Err(FrameworkError::BadWeight(s.plugin.to_string(), s.weight));
            }
            scores.push(WeightedScore {
                plugin: new_score(s.plugin, &policy.args)
                    .ok_or_else(|| FrameworkError::UnknownScore(s.plugin.to_string()))?,
                weight: s.weight,
                display_name: s
                    .legacy_names
                    .first()
                    .cloned()
                    .unwrap_or_else(|| s.plugin.to_string()),
            });
        }
        // kube-scheduler refuses a profile whose weighted maximum could overflow an int64.
        let mut total: i64 = 0;
        for s in &scores {
            total = s
                .weight
                .checked_mul(super::MAX_NODE_SCORE)
                .and_then(|w| total.checked_add(w))
                .ok_or(FrameworkError::TotalScoreOverflow)?;
        }
        Ok(Framework {
            filters,
            scores,
            run_all_filters: policy.always_check_all_predicates,
        })
    }
}
