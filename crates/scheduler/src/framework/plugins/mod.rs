//! The plugins, one file each, named after kube-scheduler's framework plugins. The legacy Policy
//! predicate and priority names map onto them in [`crate::policy`].

pub mod balanced_allocation;
pub mod gpu_best_fit;
pub mod gpu_clustering;
pub mod gpu_dot_product;
pub mod gpu_fgd;
pub mod gpu_fgd_cpu;
pub mod gpu_frag;
pub mod gpu_packing;
pub mod gpu_share;
pub mod helper;
pub mod image_locality;
pub mod inter_pod_affinity;
pub mod least_allocated;
pub mod most_allocated;
pub mod node_affinity;
pub mod node_label;
pub mod node_name;
pub mod node_ports;
pub mod node_prefer_avoid_pods;
pub mod node_resources_columns;
pub mod node_resources_fit;
pub mod node_unschedulable;
pub mod node_volume_limits;
pub mod non_csi_limits;
pub mod pod_topology_spread;
pub mod requested_to_capacity_ratio;
pub mod selector_spread;
pub mod service_affinity;
pub mod taint_toleration;
pub mod volume_binding;
pub mod volume_restrictions;
pub mod volume_zone;

#[cfg(test)]
pub(crate) mod testutil;
#[cfg(test)]
pub(crate) mod testutil_topology;

use crate::framework::Status;
use crate::model::NodeInfo;
use crate::model::PodInfo;
use crate::snapshot::Snapshot;

/// `numerator * 100 / capacity` in integer arithmetic (truncating), for
/// `0 <= numerator <= capacity`, computed with one floating-point division when that is exact.
///
/// Why it is exact: with `a = numerator * 100` and `b = capacity` integers below 2^53, `a / b`
/// rounded to the nearest f64 can only land on the integer `k` above the true quotient `q < k`
/// if `k - q` is under half an ulp of `k`; but `k - q = (k*b - a)/b >= 1/b`, and half an ulp of
/// numbers up to 128 is 2^-47, so `b < 2^46` rules it out. Larger capacities (over 64 TiB of
/// memory) take the integer division. Integer division is 2–3× slower on the scoring hot path.
#[inline(always)]
pub(crate) fn percent_floor(numerator: i64, capacity: i64) -> i64 {
    const LIMIT: i64 = 1 << 46;
    const _: () = assert!(crate::framework::MAX_NODE_SCORE == 100);
    if capacity < LIMIT && numerator >= 0 {
        ((numerator * 100) as f64 / capacity as f64) as i64
    } else {
        // The quotient is at most 100; the product may not fit in an i64.
        (i128::from(numerator) * 100 / i128::from(capacity)) as i64
    }
}

/// `ScorePlugin::score_nodes` for the cpu/memory scorers: `scorer`'s score per feasible node
/// from the snapshot's columns ([`node_resources_columns`]), equal to what their `score` gives
/// on the node's [`NodeInfo`].
#[inline(always)]
pub(crate) fn score_from_columns(
    pod: &PodInfo,
    snapshot: &Snapshot,
    feasible: &[u32],
    out: &mut [i64],
    scorer: crate::framework::HotScorer,
) {
    let cols = snapshot.columns();
    let (cpu, mem) = (pod.score_milli_cpu, pod.score_memory);
    for (o, &i) in out.iter_mut().zip(feasible) {
        *o = node_resources_columns::ScoreInput::at(cols, i as usize, cpu, mem).score(scorer);
    }
}

/// `ScorePlugin::score_nodes` for the plugins that read their per-pod state once:
/// `score(node)` per feasible node, into `out` in the order of `feasible`. Generic, so the
/// closure is inlined: no dynamic call and no allocation per node.
#[inline(always)]
pub(crate) fn score_feasible(
    snapshot: &Snapshot,
    feasible: &[u32],
    out: &mut [i64],
    score: impl Fn(&NodeInfo) -> i64,
) {
    let nodes = snapshot.nodes();
    for (o, &i) in out.iter_mut().zip(feasible) {
        *o = score(&nodes[i as usize]);
    }
}

/// `FilterPlugin::filter_nodes` for the plugins that read their PreFilter state once: keeps
/// the candidates `filter` passes; each other one goes to `failed` with its status, attributed
/// to plugin `name`. Generic, so the closure is inlined.
#[inline(always)]
pub(crate) fn retain_passing(
    name: &'static str,
    snapshot: &Snapshot,
    candidates: &mut Vec<u32>,
    failed: &mut Vec<(u32, Status)>,
    filter: impl Fn(&NodeInfo) -> Status,
) {
    let nodes = snapshot.nodes();
    candidates.retain(|&i| {
        let st = filter(&nodes[i as usize]);
        if st.is_success() {
            true
        } else {
            failed.push((i, st.with_plugin(name)));
            false
        }
    });
}

/// `(allocatable, requested)` of cpu (millicores) and memory (bytes) for resource scoring
/// (`calculateResourceAllocatableRequest`, v1.22): the node's non-zero requested plus the
/// incoming pod's scoring request ([`PodInfo::score_milli_cpu`], [`PodInfo::score_memory`]).
#[inline(always)]
pub(crate) fn cpu_mem_alloc_req(pod: &PodInfo, node: &NodeInfo) -> [(i64, i64); 2] {
    [
        (
            node.allocatable.milli_cpu,
            node.non_zero_requested
                .milli_cpu
                .saturating_add(pod.score_milli_cpu),
        ),
        (
            node.allocatable.memory,
            node.non_zero_requested
                .memory
                .saturating_add(pod.score_memory),
        ),
    ]
}

/// The weighted average of per-resource scores over the resources the node has (v1.22
/// `resourceAllocationScorer.score` drops a resource whose allocatable is 0; with none left the
/// score is 0). cpu and memory weigh 1 each, integer division as upstream.
#[inline(always)]
pub fn average_over_allocatable(
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

#[cfg(test)]
mod tests {
    use super::percent_floor;

    #[test]
    fn percent_floor_equals_integer_division() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let caps = [
            1i64,
            3,
            7,
            100,
            250,
            4000,
            1 << 20,
            32 << 30,
            (1 << 46) - 1,
            1 << 46,
            1 << 50,
        ];
        for &cap in &caps {
            for num in [0, 1, cap / 3, cap / 2, cap - 1, cap] {
                assert_eq!(percent_floor(num, cap), num * 100 / cap, "{num}/{cap}");
            }
        }
        for _ in 0..200_000 {
            let cap = (next() % (1 << 46)) as i64 + 1;
            let num = (next() % (cap as u64 + 1)) as i64;
            assert_eq!(percent_floor(num, cap), num * 100 / cap, "{num}/{cap}");
            // Quotients just below an integer: num*100 = k*cap - 1.
            let k = (next() % 100) as i64 + 1;
            if (k * cap - 1) % 100 == 0 {
                let n = (k * cap - 1) / 100;
                assert_eq!(percent_floor(n, cap), n * 100 / cap, "{n}/{cap}");
            }
        }
        for cap in 1..2000i64 {
            for num in 0..=cap {
                assert_eq!(percent_floor(num, cap), num * 100 / cap, "{num}/{cap}");
            }
        }
    }
}
