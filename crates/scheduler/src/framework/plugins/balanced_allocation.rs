//! `NodeResourcesBalancedAllocation` (legacy priority `BalancedResourceAllocation`), the
//! pre-1.23 formula: with `f = requested / capacity` for cpu and memory (1 when the capacity is
//! 0), each fraction clamped to 1 ("fractions might be greater than 1 because pods with no
//! requests get minimum values"), the score is `int((1 - |f_cpu - f_mem|) * 100)`. Follows
//! `pkg/scheduler/framework/plugins/noderesources/balanced_allocation.go` (v1.22); v1.23 replaced
//! it with a standard-deviation formula that this plugin does not use.

use super::cpu_mem_alloc_req;
use crate::framework::{CycleState, HotScorer, MAX_NODE_SCORE, ScorePlugin, Status};
use crate::model::NodeInfo;
use crate::model::PodInfo;
use crate::snapshot::Snapshot;

/// Plugin name.
pub const NAME: &str = "NodeResourcesBalancedAllocation";

/// The BalancedAllocation scorer.
#[derive(Debug, Default, Clone, Copy)]
pub struct BalancedAllocation;

#[inline(always)]
fn fraction_of_capacity(requested: i64, capacity: i64) -> f64 {
    if capacity == 0 {
        return 1.0;
    }
    requested as f64 / capacity as f64
}

/// `balancedResourceScorer` without volumes.
#[inline(always)]
pub fn balanced_score(cpu_req: i64, cpu_cap: i64, mem_req: i64, mem_cap: i64) -> i64 {
    let fc = fraction_of_capacity(cpu_req, cpu_cap);
    let fm = fraction_of_capacity(mem_req, mem_cap);
    let fc = fc.min(1.0);
    let fm = fm.min(1.0);
    ((1.0 - (fc - fm).abs()) * MAX_NODE_SCORE as f64) as i64
}

impl ScorePlugin for BalancedAllocation {
    fn name(&self) -> &'static str {
        NAME
    }

    fn hot_scorer(&self) -> Option<HotScorer> {
        Some(HotScorer::BalancedAllocation)
    }

    fn score_nodes(
        &self,
        _state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        feasible: &[u32],
        out: &mut [i64],
    ) -> Result<(), Status> {
        super::score_from_columns(pod, snapshot, feasible, out, HotScorer::BalancedAllocation);
        Ok(())
    }

    #[inline]
    fn score(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let [(ac, rc), (am, rm)] = cpu_mem_alloc_req(pod, node);
        Ok(balanced_score(rc, ac, rm, am))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::framework::plugins::testutil::{
        NodeB, PodB, cpu_and_memory, cpu_only, labels1, labels2, make_node, no_resources,
        non_zero_container, raw_scores,
    };

    /// Upstream `kubernetes/kubernetes`
    /// `pkg/scheduler/framework/plugins/noderesources/balanced_allocation_test.go`,
    /// `TestNodeResourcesBalancedAllocation`, the v1.22 copy (index id 19806462526: pre-stddev
    /// formula, `NewBalancedAllocation(nil, fh, feature.Features{EnablePodOverhead: true})`, no
    /// BalanceAttachedNodeVolumes row, with the nonZeroContainer row; the index gives no commit).
    /// Harness as upstream: raw `Score()` per node, no normalization. All 8 v1.22 rows ported.
    #[test]
    fn test_node_resources_balanced_allocation() {
        struct Case {
            name: &'static str,
            pod: PodB,
            nodes: Vec<NodeB>,
            pods: Vec<PodB>,
            expected: [i64; 2],
        }
        let cases = vec![
            // Node1 scores (remaining resources) on 0-MaxNodeScore scale
            // CPU Fraction: 0 / 4000 = 0%
            // Memory Fraction: 0 / 10000 = 0%
            // Node1 Score: MaxNodeScore - (0-0)*MaxNodeScore = MaxNodeScore
            // Node2 scores (remaining resources) on 0-MaxNodeScore scale
            // CPU Fraction: 0 / 4000 = 0 %
            // Memory Fraction: 0 / 10000 = 0%
            // Node2 Score: MaxNodeScore - (0-0)*MaxNodeScore = MaxNodeScore
            Case {
                name: "nothing scheduled, nothing requested",
                pod: no_resources(""),
                nodes: vec![
                    make_node("machine1", 4000, 10000),
                    make_node("machine2", 4000, 10000),
                ],
                pods: vec![],
                expected: [MAX_NODE_SCORE, MAX_NODE_SCORE],
            },
            // CPU Fraction: 3000 / 4000= 75%
            // Memory Fraction: 5000 / 10000 = 50%
            // Node1 Score: MaxNodeScore - (0.75-0.5)*MaxNodeScore = 75
            // CPU Fraction: 3000 / 6000= 50%
            // Memory Fraction: 5000/10000 = 50%
            // Node2 Score: MaxNodeScore - (0.5-0.5)*MaxNodeScore = MaxNodeScore
            Case {
                name: "nothing scheduled, resources requested, differently sized machines",
                pod: cpu_and_memory("machine2"),
                nodes: vec![
                    make_node("machine1", 4000, 10000),
                    make_node("machine2", 6000, 10000),
                ],
                pods: vec![],
                expected: [75, MAX_NODE_SCORE],
            },
            // CPU Fraction: 0 / 4000= 0%
            // Memory Fraction: 0 / 10000 = 0%
            // Node1 Score: MaxNodeScore - (0-0)*MaxNodeScore = MaxNodeScore
            // (Node2 identical) ... = MaxNodeScore
            Case {
                name: "no resources requested, pods scheduled",
                pod: no_resources(""),
                nodes: vec![
                    make_node("machine1", 4000, 10000),
                    make_node("machine2", 4000, 10000),
                ],
                pods: vec![
                    labels2(no_resources("machine1")),
                    labels1(no_resources("machine1")),
                    labels1(no_resources("machine2")),
                    labels1(no_resources("machine2")),
                ],
                expected: [MAX_NODE_SCORE, MAX_NODE_SCORE],
            },
            // Node1 scores on 0-MaxNodeScore scale
            // CPU Fraction: 300 / 250 = 100%
            // Memory Fraction: 600 / 10000 = 60%
            // Node1 Score: MaxNodeScore - (100-60)*MaxNodeScore = 60
            // Node2 scores on 0-MaxNodeScore scale
            // CPU Fraction: 100 / 250 = 40%
            // Memory Fraction: 200 / 10000 = 20%
            // Node2 Score: MaxNodeScore - (40-20)*MaxNodeScore= 80
            // (Memory is 3×200Mi / 1000Mi = 0.6 and 200Mi / 1000Mi = 0.2; cpu 300/250 = 1.2 is
            // clamped to 1.)
            Case {
                name: "no resources requested, pods scheduled",
                pod: non_zero_container(""),
                nodes: vec![
                    make_node("machine1", 250, 1000 * 1024 * 1024),
                    make_node("machine2", 250, 1000 * 1024 * 1024),
                ],
                pods: vec![
                    non_zero_container("machine1"),
                    non_zero_container("machine1"),
                ],
                expected: [60, 80],
            },
            // CPU Fraction: 6000 / 10000 = 60%
            // Memory Fraction: 0 / 20000 = 0%
            // Node1 Score: MaxNodeScore - (0.6-0)*MaxNodeScore = 40
            // CPU Fraction: 6000 / 10000 = 60%
            // Memory Fraction: 5000 / 20000 = 25%
            // Node2 Score: MaxNodeScore - (0.6-0.25)*MaxNodeScore = 65
            Case {
                name: "no resources requested, pods scheduled with resources",
                pod: no_resources(""),
                nodes: vec![
                    make_node("machine1", 10000, 20000),
                    make_node("machine2", 10000, 20000),
                ],
                pods: vec![
                    labels2(cpu_only("machine1")),
                    labels1(cpu_only("machine1")),
                    labels1(cpu_only("machine2")),
                    labels1(cpu_and_memory("machine2")),
                ],
                expected: [40, 65],
            },
            // CPU Fraction: 6000 / 10000 = 60%
            // Memory Fraction: 5000 / 20000 = 25%
            // Node1 Score: MaxNodeScore - (0.6-0.25)*MaxNodeScore = 65
            // CPU Fraction: 6000 / 10000 = 60%
            // Memory Fraction: 10000 / 20000 = 50%
            // Node2 Score: MaxNodeScore - (0.6-0.5)*MaxNodeScore = 90
            Case {
                name: "resources requested, pods scheduled with resources",
                pod: cpu_and_memory("machine2"),
                nodes: vec![
                    make_node("machine1", 10000, 20000),
                    make_node("machine2", 10000, 20000),
                ],
                pods: vec![cpu_only("machine1"), cpu_and_memory("machine2")],
                expected: [65, 90],
            },
            // CPU Fraction: 6000 / 10000 = 60%
            // Memory Fraction: 5000 / 20000 = 25%
            // Node1 Score: MaxNodeScore - (0.6-0.25)*MaxNodeScore = 65
            // CPU Fraction: 6000 / 10000 = 60%
            // Memory Fraction: 10000 / 50000 = 20%
            // Node2 Score: MaxNodeScore - (0.6-0.2)*MaxNodeScore = 60
            Case {
                name: "resources requested, pods scheduled with resources, differently sized machines",
                pod: cpu_and_memory("machine2"),
                nodes: vec![
                    make_node("machine1", 10000, 20000),
                    make_node("machine2", 10000, 50000),
                ],
                pods: vec![cpu_only("machine1"), cpu_and_memory("machine2")],
                expected: [65, 60],
            },
            // CPU Fraction: 6000 / 6000 = 1
            // Memory Fraction: 0 / 10000 = 0
            // Node1 Score: MaxNodeScore - (1 - 0) * MaxNodeScore = 0
            // CPU Fraction: 6000 / 6000 = 1
            // Memory Fraction 5000 / 10000 = 50%
            // Node2 Score: MaxNodeScore - (1 - 0.5) * MaxNodeScore = 50
            Case {
                name: "requested resources at node capacity",
                pod: cpu_only("machine1"),
                nodes: vec![
                    make_node("machine1", 6000, 10000),
                    make_node("machine2", 6000, 10000),
                ],
                pods: vec![cpu_only("machine1"), cpu_and_memory("machine2")],
                expected: [0, 50],
            },
        ];
        for c in cases {
            let got = raw_scores(&BalancedAllocation, c.pod, c.nodes, &c.pods);
            assert_eq!(got, c.expected, "{}", c.name);
        }
    }
}
