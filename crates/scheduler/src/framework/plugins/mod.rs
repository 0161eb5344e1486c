//! The plugins, one file each, named after kube-scheduler's framework plugins. The legacy Policy
//! predicate and priority names map onto them in [`crate::policy`].

pub mod balanced_allocation;
pub mod gpu_share;
pub mod least_allocated;
pub mod most_allocated;
pub mod node_affinity;
pub mod node_name;
pub mod node_ports;
pub mod node_resources_fit;
pub mod node_unschedulable;
pub mod selector_spread;
pub mod taint_toleration;
pub mod volume_restrictions;

#[cfg(test)]
pub(crate) mod testutil;

pub use balanced_allocation::BalancedAllocation;
pub use gpu_share::GpuShare;
pub use least_allocated::LeastAllocated;
pub use most_allocated::MostAllocated;
pub use node_affinity::NodeAffinity;
pub use node_name::NodeName;
pub use node_ports::NodePorts;
pub use node_resources_fit::NodeResourcesFit;
pub use node_unschedulable::NodeUnschedulable;
pub use selector_spread::SelectorSpread;
pub use taint_toleration::TaintToleration;
pub use volume_restrictions::VolumeRestrictions;

use crate::framework::types::NodeInfo;
use crate::framework::PodInfo;

/// `(allocatable, requested)` of cpu (millicores) and memory (bytes) for resource scoring
/// (`calculateResourceAllocatableRequest`, v1.22): the node's non-zero requested plus the
/// incoming pod's non-zero request.
#[inline]
pub(crate) fn cpu_mem_alloc_req(pod: &PodInfo, node: &NodeInfo) -> [(i64, i64); 2] {
    [
        (
            node.allocatable.milli_cpu,
            node.non_zero_requested.milli_cpu + pod.non_zero_milli_cpu,
        ),
        (
            node.allocatable.memory,
            node.non_zero_requested.memory + pod.non_zero_memory,
        ),
    ]
}
