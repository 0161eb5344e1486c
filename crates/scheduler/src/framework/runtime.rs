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
        plugins::gpu_best_fit::NAME => Box::new(plugins::gpu_best_fit::GpuBestFit),
        plugins::gpu_clustering::NAME => Box::new(plugins::gpu_clustering::GpuClustering),
        plugins::gpu_dot_product::NAME => Box::new(plugins::gpu_dot_product::GpuDotProduct),
        plugins::gpu_packing::NAME => Box::new(plugins::gpu_packing::GpuPacking),
        plugins::gpu_fgd::NAME => Box::new(plugins::gpu_fgd::GpuFragmentation::new()),
        plugins::gpu_fgd::NAME_STRANDING => {
            Box::new(plugins::gpu_fgd::GpuFragmentation::stranding())
        }
        plugins::gpu_fgd::NAME_FINE => Box::new(plugins::gpu_fgd::GpuFragmentation::fine()),
        plugins::gpu_fgd_cpu::NAME => {
            Box::new(plugins::gpu_fgd_cpu::GpuFragmentationCpuPacking::new())
        }
        plugins::gpu_fgd_cpu::NAME_INSTANCES => {
            Box::new(plugins::gpu_fgd_cpu::GpuFragmentationCpuPacking::instances())
        }
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

/// The pods nominated to each node (v1.22 `framework.PodNominator`, read side): the queue's
/// nominator implements it; the filters of a pod count the nominated pods of equal or higher
/// priority on their node ([`Framework::run_filter_plugins_with_nominated_pods`]).
pub trait NominatedPods {
    /// `NominatedPodsForNode`: the pods nominated to `node`.
    fn nominated_pods_for_node(&self, node: &str) -> &[std::sync::Arc<super::PodInfo>];
    /// Whether no pod is nominated anywhere (lets a cycle skip the check).
    fn is_empty(&self) -> bool;
}

/// No nominated pods.
pub struct NoNominatedPods;

impl NominatedPods for NoNominatedPods {
    fn nominated_pods_for_node(&self, _node: &str) -> &[std::sync::Arc<super::PodInfo>] {
        &[]
    }
    fn is_empty(&self) -> bool {
        true
    }
}

/// Running the filters on one node outside the search of a scheduling cycle: what preemption
/// (`selectVictimsOnNode`) and the nominated-pod check need.
///
/// mini-scheduler's PreFilter plugins compute their state from the whole [`Snapshot`] and have
/// no `AddPod`/`RemovePod` extensions; where upstream updates the cycle state through
/// `RunPreFilterExtensionAddPod`/`RemovePod` after changing a cloned `NodeInfo`, these functions
/// take the changed snapshot and run PreFilter again on it, which gives the state those
/// extensions are written to reach.
impl Framework {
    /// `RunPreFilterPlugins` into a fresh `state`: fills `active` with the filters whose
    /// PreFilter did not return Skip. Returns the first non-success status (attributed to its
    /// plugin; an `Error` keeps its code), else Success.
    pub fn run_pre_filter_plugins(
        &self,
        state: &mut super::CycleState,
        pod: &super::PodInfo,
        snapshot: &crate::snapshot::Snapshot,
        active: &mut Vec<usize>,
    ) -> super::Status {
        active.clear();
        for (i, f) in self.filters.iter().enumerate() {
            let s = f.pre_filter(state, pod, snapshot);
            match s.code {
                super::Code::Success => active.push(i),
                super::Code::Skip => {}
                _ => return s.with_plugin(f.name()),
            }
        }
        super::Status::success()
    }

    /// `RunFilterPlugins` + `PluginToStatus.Merge` on one node: the active filters in order;
    /// the first failure ends the node unless `alwaysCheckAllPredicates` (then the reasons of
    /// every failing filter are merged, `UnschedulableAndUnresolvable` winning over
    /// `Unschedulable`); an `Error` ends it at once.
    pub fn run_filter_plugins(
        &self,
        state: &super::CycleState,
        active: &[usize],
        pod: &super::PodInfo,
        node: &super::NodeInfo,
    ) -> super::Status {
        let mut merged: Option<super::Status> = None;
        for &fi in active {
            let f = &self.filters[fi];
            let s = f.filter(state, pod, node);
            if s.is_success() {
                continue;
            }
            let s = s.with_plugin(f.name());
            if !s.is_unschedulable() || !self.run_all_filters {
                return s;
            }
            merged = Some(match merged {
                None => s,
                Some(mut m) => {
                    if s.code == super::Code::UnschedulableAndUnresolvable {
                        m.code = s.code;
                    }
                    m.reasons.extend(s.reasons);
                    m
                }
            });
        }
        merged.unwrap_or_else(super::Status::success)
    }

    /// PreFilter on `snapshot`, then the filters on node `node` of it: the whole check of one
    /// pod on one node as the snapshot stands.
    pub fn run_pre_filter_and_filter(
        &self,
        pod: &super::PodInfo,
        snapshot: &crate::snapshot::Snapshot,
        node: u32,
    ) -> super::Status {
        let mut state = super::CycleState::new();
        let mut active = Vec::new();
        let s = self.run_pre_filter_plugins(&mut state, pod, snapshot, &mut active);
        if !s.is_success() {
            return s;
        }
        self.run_filter_plugins(&state, &active, pod, &snapshot.nodes()[node as usize])
    }

    /// `RunFilterPluginsWithNominatedPods` (v1.22 `framework.go`) for `pod` on node `node` of
    /// `snapshot`, where `nominated` are the pods nominated to that node.
    ///
    /// Pass 1 adds to the node the nominated pods of priority ≥ the pod's (other than the pod
    /// itself, by UID) and filters with them; pass 2, only when pass 1 added pods and
    /// succeeded, filters without them. Both must pass: an unschedulable or error status of
    /// pass 1 is returned as is. Lower-priority nominations are ignored. `snapshot` is changed
    /// during pass 1 and restored before returning.
    pub fn run_filter_plugins_with_nominated_pods(
        &self,
        pod: &super::PodInfo,
        snapshot: &mut crate::snapshot::Snapshot,
        node: u32,
        nominated: &[std::sync::Arc<super::PodInfo>],
    ) -> super::Status {
        let added = add_nominated_pods(pod, snapshot, node, nominated);
        if !added.is_empty() {
            let s = self.run_pre_filter_and_filter(pod, snapshot, node);
            let node_name = snapshot.nodes()[node as usize].name.clone();
            for p in &added {
                snapshot.remove_pod(&node_name, &p.namespace, &p.name);
            }
            if !s.is_success() {
                return s;
            }
        }
        self.run_pre_filter_and_filter(pod, snapshot, node)
    }
}

/// `addNominatedPods`: account on node `node` the pods of `nominated` with priority ≥ `pod`'s
/// and another UID; returns those added (for the caller to remove).
fn add_nominated_pods(
    pod: &super::PodInfo,
    snapshot: &mut crate::snapshot::Snapshot,
    node: u32,
    nominated: &[std::sync::Arc<super::PodInfo>],
) -> Vec<std::sync::Arc<super::PodInfo>> {
    let node_name = snapshot.nodes()[node as usize].name.clone();
    let mut added = Vec::new();
    for p in nominated {
        if p.priority >= pod.priority && p.uid != pod.uid {
            // The node exists (it is indexed by `node`), so this cannot fail.
            if snapshot.add_pod(p.clone(), Some(&node_name), None).is_ok() {
                added.push(p.clone());
            }
        }
    }
    added
}
