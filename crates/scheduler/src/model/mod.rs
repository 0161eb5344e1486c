//! The scheduler's own model of the cluster, the ground floor of the scheduling core: the data
//! the framework, its plugins, the snapshot, the cache, the queue and the volume code read,
//! decoded once from the API objects.
//!
//! - `resource`: [`Resource`] (cpu millicores, memory and ephemeral-storage bytes, pod count,
//!   scalar resources) and the scoring defaults;
//! - `pod_info`: [`PodInfo`] (a pod with its requests, ports, affinity, tolerations computed
//!   once) and [`HostPort`];
//! - `node_info`: [`NodeInfo`] (a node with its allocatable, what its pods request and the pods)
//!   and [`zone_key`];
//! - `taints`: [`Taint`], [`Toleration`];
//! - `gpu`: the GPU resource names, [`GpuRequest`] and the per-device accounting of a node;
//! - `terms`: parsed inter-pod affinity terms and topology spread constraints, selectors
//!   compiled;
//! - `volumes`: the pod volumes the volume plugins look at ([`PodVolumeRefs`], [`DiskVolume`]);
//! - `wire`: the partial wire form of a pod that cluster mode decodes watch events and LIST
//!   pages into ([`WirePod`]: the scheduling fields and the object's text), and [`PodObject`],
//!   a pod's API object kept decoded or as text decoded on first use.
//!
//! The model imports only the value modules (`quantity`, `labels`); the framework, the plugins,
//! the snapshot and everything above import it, never the reverse. Each item has one public
//! path, `crate::model::Name`.

mod gpu;
mod node_info;
mod pod_info;
mod resource;
mod taints;
mod terms;
pub mod typical_pods;
mod volumes;
mod wire;

#[cfg(test)]
mod tests;

pub use gpu::{
    ANNOTATION_GPU_INDEXES, GPU_MILLI_PER_DEVICE, GpuRequest, LABEL_GPU_MODEL, RESOURCE_GPU,
    RESOURCE_GPU_MILLI,
};
pub use node_info::{
    ANNOTATION_PREFER_AVOID_PODS, NodeError, NodeInfo, parse_prefer_avoid_pods, zone_key,
};
pub use pod_info::{ControllerRef, HostPort, PodError, PodFieldError, PodInfo};
pub use resource::{
    DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST, Resource, is_extended_resource_name,
    is_scalar_resource_name,
};
pub use taints::{Taint, TaintEffect, Toleration, TolerationOperator, tolerations_tolerate_taint};
pub use terms::{
    AffinityTerm, PodAffinityTerms, Selector, SpreadConstraint, WeightedAffinityTerm,
    WhenUnsatisfiable, compile_label_selector, parse_pod_affinity, parse_spread_constraints,
};
pub use volumes::{DiskVolume, InlineVolume, PodVolumeRefs, VolumeRef};
pub use wire::{
    ContainerImages, PodObject, WireContainer, WirePod, WirePodSpec, WirePodStatus, WireResources,
};
