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
use crate::framework::{CycleState, FilterPlugin, PodInfo, Status};
use crate::snapshot::{NodeHot, Snapshot};

/// `FilterPlugin::filter_nodes` with a fast path: nodes whose [`NodeHot`] row satisfies `passes`
/// are kept without calling `filter`; the others get the full per-node `filter`, so the outcome
/// is the per-node one (the fast path only ever *accepts*, and only when certain).
#[inline]
pub(crate) fn retain_with_fast_path<P: FilterPlugin>(
    plugin: &P,
    state: &CycleState,
    pod: &PodInfo,
    snapshot: &Snapshot,
    candidates: &mut Vec<u32>,
    failed: &mut Vec<(u32, Status)>,
    passes: impl Fn(&NodeHot) -> bool,
) {
    let hot = snapshot.hot();
    let nodes = snapshot.nodes();
    candidates.retain(|&i| {
        if passes(&hot[i as usize]) {
            return true;
        }
        let s = plugin.filter(state, pod, &nodes[i as usize]);
        if s.is_success() {
            true
        } else {
            failed.push((i, s.with_plugin(plugin.name())));
            false
        }
    });
}

/// `ScorePlugin::score_nodes` for the cpu/memory scorers: `f([(alloc, requested); cpu, memory])`
/// per feasible node from its [`NodeHot`] row, the same numbers their `score` reads from a
/// [`NodeInfo`].
#[inline]
pub(crate) fn score_from_hot(
    pod: &PodInfo,
    snapshot: &Snapshot,
    feasible: &[u32],
    out: &mut [i64],
    f: impl Fn([(i64, i64); 2]) -> i64,
) {
    let hot = snapshot.hot();
    for (o, &i) in out.iter_mut().zip(feasible) {
        let h = &hot[i as usize];
        *o = f([
            (h.alloc_milli_cpu, h.nz_milli_cpu + pod.score_milli_cpu),
            (h.alloc_memory, h.nz_memory + pod.score_memory),
        ]);
    }
}

/// `(allocatable, requested)` of cpu (millicores) and memory (bytes) for resource scoring
/// (`calculateResourceAllocatableRequest`, v1.22): the node's non-zero requested plus the
/// incoming pod's scoring request ([`PodInfo::score_milli_cpu`], [`PodInfo::score_memory`]).
#[inline]
pub(crate) fn cpu_mem_alloc_req(pod: &PodInfo, node: &NodeInfo) -> [(i64, i64); 2] {
    [
        (
            node.allocatable.milli_cpu,
            node.non_zero_requested.milli_cpu + pod.score_milli_cpu,
        ),
        (
            node.allocatable.memory,
            node.non_zero_requested.memory + pod.score_memory,
        ),
    ]
}

/// The weighted average of per-resource scores over the resources the node has (v1.22
/// `resourceAllocationScorer.score` drops a resource whose allocatable is 0; with none left the
/// score is 0). cpu and memory weigh 1 each, integer division as upstream.
#[inline]
pub(crate) fn average_over_allocatable(
    pairs: [(i64, i64); 2],
    per_resource: impl Fn(i64, i64) -> i64,
) -> i64 {
    match (pairs[0].0 != 0, pairs[1].0 != 0) {
        (true, true) => {
            (per_resource(pairs[0].1, pairs[0].0) + per_resource(pairs[1].1, pairs[1].0)) / 2
        }
        (true, false) => per_resource(pairs[0].1, pairs[0].0),
        (false, true) => per_resource(pairs[1].1, pairs[1].0),
        (false, false) => 0,
    }
}
