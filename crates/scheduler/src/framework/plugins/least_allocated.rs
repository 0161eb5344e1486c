//! `NodeResourcesLeastAllocated` (legacy priority `LeastRequestedPriority`): favours nodes with
//! the most free cpu and memory. Per resource `(capacity - requested) * 100 / capacity` (0 when
//! the capacity is 0 or the request exceeds it), averaged over cpu and memory with weight 1 each,
//! in integer arithmetic. `requested` counts 100m / 200 MiB for containers without requests.
//! Follows `pkg/scheduler/framework/plugins/noderesources/least_allocated.go` (v1.22).

use super::{average_over_allocatable, cpu_mem_alloc_req};
use crate::framework::{CycleState, HotScorer, ScorePlugin, Status};
use crate::model::NodeInfo;
use crate::model::PodInfo;
use crate::snapshot::Snapshot;

/// Plugin name.
pub const NAME: &str = "NodeResourcesLeastAllocated";

/// The LeastAllocated scorer.
#[derive(Debug, Default, Clone, Copy)]
pub struct LeastAllocated;

/// `leastRequestedScore`.
#[inline(always)]
pub fn least_requested_score(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 || requested > capacity {
        return 0;
    }
    // `(capacity - requested) * MAX_NODE_SCORE / capacity`, MAX_NODE_SCORE being 100.
    super::percent_floor(capacity - requested, capacity)
}

impl ScorePlugin for LeastAllocated {
    fn name(&self) -> &'static str {
        NAME
    }

    fn hot_scorer(&self) -> Option<HotScorer> {
        Some(HotScorer::LeastAllocated)
    }

    fn score_nodes(
        &self,
        _state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        feasible: &[u32],
        out: &mut [i64],
    ) -> Result<(), Status> {
        super::score_from_columns(pod, snapshot, feasible, out, HotScorer::LeastAllocated);
        Ok(())
    }

    #[inline]
    fn score(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        Ok(average_over_allocatable(
            cpu_mem_alloc_req(pod, node),
            least_requested_score,
        ))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::framework::MAX_NODE_SCORE;
    use crate::framework::plugins::testutil::{
        NodeB, PodB, cpu_and_memory, cpu_only, labels1, labels2, make_node, no_resources,
        raw_scores,
    };

    /// Upstream `kubernetes/kubernetes`
    /// `pkg/scheduler/framework/plugins/noderesources/least_allocated_test.go`,
    /// `TestNodeResourcesLeastAllocated`, the v1.22-era copy (index id 2162133085: 3-arg
    /// `runtime.NewFramework`, `feature.Features{EnablePodOverhead: true}`; the index gives no
    /// commit). Harness as upstream: snapshot of the existing pods and nodes, raw `Score()` per
    /// node, no normalization. Not ported (plugin arguments this scheduler does not take:
    /// cpu/memory weight 1 only): "Resources not set, ...", "... with different weight on CPU and
    /// memory, ...", the three weight-validation rows, and the two extended-resource rows.
    #[test]
    fn test_node_resources_least_allocated() {
        struct Case {
            name: &'static str,
            pod: PodB,
            nodes: Vec<NodeB>,
            pods: Vec<PodB>,
            expected: [i64; 2],
        }
        let cases = vec![
            // Node1 scores (remaining resources) on 0-MaxNodeScore scale
            // CPU Score: ((4000 - 0) * MaxNodeScore) / 4000 = MaxNodeScore
            // Memory Score: ((10000 - 0) * MaxNodeScore) / 10000 = MaxNodeScore
            // Node1 Score: (100 + 100) / 2 = 100
            // Node2 ... same = MaxNodeScore
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
            // CPU Score: ((4000 - 3000) * MaxNodeScore) / 4000 = 25
            // Memory Score: ((10000 - 5000) * MaxNodeScore) / 10000 = 50
            // Node1 Score: (25 + 50) / 2 = 37
            // CPU Score: ((6000 - 3000) * MaxNodeScore) / 6000 = 50
            // Memory Score: ((10000 - 5000) * MaxNodeScore) / 10000 = 50
            // Node2 Score: (50 + 50) / 2 = 50
            Case {
                name: "nothing scheduled, resources requested, differently sized machines",
                pod: cpu_and_memory("machine2"),
                nodes: vec![
                    make_node("machine1", 4000, 10000),
                    make_node("machine2", 6000, 10000),
                ],
                pods: vec![],
                expected: [37, 50],
            },
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
            // CPU Score: ((10000 - 6000) * MaxNodeScore) / 10000 = 40
            // Memory Score: ((20000 - 0) * MaxNodeScore) / 20000 = MaxNodeScore
            // Node1 Score: (40 + 100) / 2 = 70
            // CPU Score: ((10000 - 6000) * MaxNodeScore) / 10000 = 40
            // Memory Score: ((20000 - 5000) * MaxNodeScore) / 20000 = 75
            // Node2 Score: (40 + 75) / 2 = 57
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
                expected: [70, 57],
            },
            // CPU Score: ((10000 - 6000) * MaxNodeScore) / 10000 = 40
            // Memory Score: ((20000 - 5000) * MaxNodeScore) / 20000 = 75
            // Node1 Score: (40 + 75) / 2 = 57
            // CPU Score: ((10000 - 6000) * MaxNodeScore) / 10000 = 40
            // Memory Score: ((20000 - 10000) * MaxNodeScore) / 20000 = 50
            // Node2 Score: (40 + 50) / 2 = 45
            Case {
                name: "resources requested, pods scheduled with resources",
                pod: cpu_and_memory("machine2"),
                nodes: vec![
                    make_node("machine1", 10000, 20000),
                    make_node("machine2", 10000, 20000),
                ],
                pods: vec![cpu_only("machine1"), cpu_and_memory("machine2")],
                expected: [57, 45],
            },
            // CPU Score: ((10000 - 6000) * MaxNodeScore) / 10000 = 40
            // Memory Score: ((20000 - 5000) * MaxNodeScore) / 20000 = 75
            // Node1 Score: (40 + 75) / 2 = 57
            // CPU Score: ((10000 - 6000) * MaxNodeScore) / 10000 = 40
            // Memory Score: ((50000 - 10000) * MaxNodeScore) / 50000 = 80
            // Node2 Score: (40 + 80) / 2 = 60
            Case {
                name: "resources requested, pods scheduled with resources, differently sized machines",
                pod: cpu_and_memory("machine2"),
                nodes: vec![
                    make_node("machine1", 10000, 20000),
                    make_node("machine2", 10000, 50000),
                ],
                pods: vec![cpu_only("machine1"), cpu_and_memory("machine2")],
                expected: [57, 60],
            },
            // CPU Score: ((4000 - 6000) * MaxNodeScore) / 4000 = 0
            // Memory Score: ((10000 - 0) * MaxNodeScore) / 10000 = MaxNodeScore
            // Node1 Score: (0 + MaxNodeScore) / 2 = 50
            // CPU Score: ((4000 - 6000) * MaxNodeScore) / 4000 = 0
            // Memory Score: ((10000 - 5000) * MaxNodeScore) / 10000 = 50
            // Node2 Score: (0 + 50) / 2 = 25
            Case {
                name: "requested resources exceed node capacity",
                pod: cpu_only("machine1"),
                nodes: vec![
                    make_node("machine1", 4000, 10000),
                    make_node("machine2", 4000, 10000),
                ],
                pods: vec![cpu_only("machine1"), cpu_and_memory("machine2")],
                expected: [50, 25],
            },
            Case {
                name: "zero node resources, pods scheduled with resources",
                pod: no_resources(""),
                nodes: vec![make_node("machine1", 0, 0), make_node("machine2", 0, 0)],
                pods: vec![cpu_only("machine1"), cpu_and_memory("machine2")],
                expected: [0, 0],
            },
        ];
        for c in cases {
            let got = raw_scores(&LeastAllocated, c.pod, c.nodes, &c.pods);
            assert_eq!(got, c.expected, "{}", c.name);
        }
    }
}
