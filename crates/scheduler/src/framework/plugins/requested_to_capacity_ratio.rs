//! `RequestedToCapacityRatio` (custom priority with `requestedToCapacityRatioArguments`): scores
//! a node by a piecewise-linear function of each resource's utilization after placing the pod.
//!
//! Per configured resource: `utilization = requested × 100 / allocatable` (integer division;
//! `requested > allocatable` counts as 100), scored by the broken-linear shape whose scores are
//! the configured 0..=10 scores ×10; the node's score is `round(Σ score × weight / Σ weight)` over
//! the resources whose score is > 0 (0 when none). "Requested" is the node's scoring request plus
//! the pod's: cpu and memory use the non-zero defaults (100m / 200 MiB per container without a
//! request), ephemeral-storage and scalar resources the plain requests; a scalar resource the pod
//! does not request, or one the node does not have, is left out, as is any resource whose
//! allocatable is 0.
//!
//! Follows kubernetes/kubernetes `pkg/scheduler/framework/plugins/noderesources/requested_to_capacity_ratio.go`
//! and `resource_allocation.go` of v1.22 (index ids 1870788914 and 1354252291: utilization
//! `requested × 100 / capacity`, extended resources the pod does not request skipped) and
//! `helper/shape_score.go`. Arguments: [`RequestedToCapacityRatioArgs`] (validated by the Policy
//! resolver).

use crate::framework::plugins::helper::{FunctionShapePoint, broken_linear};
use crate::framework::{CycleState, MAX_NODE_SCORE, ScoreMode, ScorePlugin, Status};
use crate::model::PodInfo;
use crate::model::{NodeInfo, is_scalar_resource_name};
use crate::policy::{MAX_CUSTOM_PRIORITY_SCORE, RequestedToCapacityRatioArgs};
use crate::snapshot::Snapshot;

/// Plugin name.
pub const NAME: &str = "RequestedToCapacityRatio";
/// `maxUtilization`.
const MAX_UTILIZATION: i64 = 100;

/// The RequestedToCapacityRatio score plugin.
#[derive(Debug, Clone)]
pub struct RequestedToCapacityRatio {
    /// The shape with scores on the 0..=100 scale.
    shape: Vec<FunctionShapePoint>,
    /// `resourceToWeightMap`: resource name → weight (a repeated name keeps the last weight).
    resources: Vec<(String, i64)>,
}

impl RequestedToCapacityRatio {
    /// A plugin with `args`: shape scores are multiplied by
    /// `MAX_NODE_SCORE / MAX_CUSTOM_PRIORITY_SCORE` (= 10).
    pub fn new(args: &RequestedToCapacityRatioArgs) -> RequestedToCapacityRatio {
        let shape = args
            .shape
            .iter()
            .map(|p| FunctionShapePoint {
                utilization: i64::from(p.utilization),
                score: i64::from(p.score) * (MAX_NODE_SCORE / MAX_CUSTOM_PRIORITY_SCORE),
            })
            .collect();
        let mut resources: Vec<(String, i64)> = Vec::new();
        for r in &args.resources {
            match resources.iter_mut().find(|(n, _)| *n == r.name) {
                Some(e) => e.1 = r.weight,
                None => resources.push((r.name.clone(), r.weight)),
            }
        }
        RequestedToCapacityRatio { shape, resources }
    }

    /// `resourceScoringFunction`.
    fn resource_score(&self, requested: i64, capacity: i64) -> i64 {
        if capacity == 0 || requested > capacity {
            return broken_linear(&self.shape, MAX_UTILIZATION);
        }
        let utilization =
            (i128::from(requested) * i128::from(MAX_UTILIZATION) / i128::from(capacity)) as i64;
        broken_linear(&self.shape, utilization)
    }

    /// The score of `node` for `pod` (`resourceAllocationScorer.score` with this scorer).
    pub fn node_score(&self, pod: &PodInfo, node: &NodeInfo) -> i64 {
        let mut node_score: i64 = 0;
        let mut weight_sum: i64 = 0;
        for (resource, weight) in &self.resources {
            let Some((alloc, req)) = allocatable_requested(pod, node, resource) else {
                continue;
            };
            if alloc == 0 {
                continue;
            }
            let score = self.resource_score(req, alloc);
            if score > 0 {
                node_score = node_score.saturating_add(score.saturating_mul(*weight));
                weight_sum = weight_sum.saturating_add(*weight);
            }
        }
        if weight_sum == 0 {
            return 0;
        }
        (node_score as f64 / weight_sum as f64).round() as i64
    }
}

/// `calculateResourceAllocatableRequest` (v1.22): `(allocatable, node requested + pod request)`
/// of `resource`, or `None` for a scalar resource the pod does not request or the node lacks,
/// and for other names (`(0, 0)` upstream, then skipped).
fn allocatable_requested(pod: &PodInfo, node: &NodeInfo, resource: &str) -> Option<(i64, i64)> {
    let pod_request = pod_request(pod, resource);
    if skipped_for_pod(pod_request, resource) {
        return None;
    }
    match resource {
        "cpu" => Some((
            node.allocatable.milli_cpu,
            node.non_zero_requested
                .milli_cpu
                .saturating_add(pod_request),
        )),
        "memory" => Some((
            node.allocatable.memory,
            node.non_zero_requested.memory.saturating_add(pod_request),
        )),
        "ephemeral-storage" => Some((
            node.allocatable.ephemeral_storage,
            node.requested.ephemeral_storage.saturating_add(pod_request),
        )),
        n => node
            .allocatable
            .scalar
            .iter()
            .find(|(k, _)| k == n)
            .map(|(_, a)| (*a, node.requested.scalar(n).saturating_add(pod_request))),
    }
}

/// `calculatePodResourceRequest` (v1.22): the pod's request of `resource` (cpu and memory with
/// the non-zero defaults).
fn pod_request(pod: &PodInfo, resource: &str) -> i64 {
    match resource {
        "cpu" => pod.score_milli_cpu,
        "memory" => pod.score_memory,
        "ephemeral-storage" => pod.requests.ephemeral_storage,
        n if is_scalar_resource_name(n) => pod.requests.scalar(n),
        _ => 0,
    }
}

/// "If it's an extended resource, and the pod doesn't request it": the resource is left out on
/// every node.
fn skipped_for_pod(pod_request: i64, resource: &str) -> bool {
    pod_request == 0 && is_scalar_resource_name(resource)
}

impl ScorePlugin for RequestedToCapacityRatio {
    fn name(&self) -> &'static str {
        NAME
    }

    fn pre_score(
        &self,
        _state: &mut CycleState,
        pod: &PodInfo,
        _snapshot: &Snapshot,
        _feasible: &[u32],
    ) -> Result<ScoreMode, Status> {
        // No resource, a shape that is 0 everywhere, or only extended resources the pod does not
        // request (e.g. a GPU bin-packing policy and a pod without GPUs): every node scores 0.
        if self.shape.iter().all(|p| p.score == 0)
            || self
                .resources
                .iter()
                .all(|(r, _)| skipped_for_pod(pod_request(pod, r), r))
        {
            Ok(ScoreMode::Uniform(0))
        } else {
            Ok(ScoreMode::PerNode)
        }
    }

    fn score(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        Ok(self.node_score(pod, node))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::plugins::testutil::{NodeB, PodB, make_node, node, pod, raw_scores};
    use crate::policy::{ResourceSpec, UtilizationShapePoint};

    fn args(shape: &[(i32, i32)], resources: &[(&str, i64)]) -> RequestedToCapacityRatioArgs {
        RequestedToCapacityRatioArgs {
            shape: shape
                .iter()
                .map(|&(utilization, score)| UtilizationShapePoint { utilization, score })
                .collect(),
            resources: resources
                .iter()
                .map(|&(name, weight)| ResourceSpec {
                    name: name.into(),
                    weight,
                })
                .collect(),
        }
    }

    /// Upstream noderesources `makePod(node, milliCPU, memory)`: one container requesting
    /// exactly that (zeros included).
    fn make_pod(node_name: &str, milli_cpu: i64, memory: i64) -> PodB {
        let cpu = format!("{milli_cpu}m");
        let mem = memory.to_string();
        let p = pod("p").container(&[("cpu", cpu.as_str()), ("memory", mem.as_str())]);
        if node_name.is_empty() {
            p
        } else {
            p.node(node_name)
        }
    }

    /// Upstream `makeNodeWithExtendedResource(name, milliCPU, memory, extended)`: capacity and
    /// allocatable cpu, memory and the extended resources.
    fn ext_node(name: &str, milli_cpu: i64, memory: i64, ext: &[(&str, i64)]) -> NodeB {
        let cpu = format!("{milli_cpu}m");
        let mem = memory.to_string();
        let ext: Vec<(String, String)> = ext
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let mut list: Vec<(&str, &str)> = vec![("cpu", cpu.as_str()), ("memory", mem.as_str())];
        list.extend(ext.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        node(name).capacity(&list).allocatable(&list)
    }

    fn ext_pod(node_name: &str, req: &[(&str, &str)]) -> PodB {
        let p = pod("p").container(req);
        if node_name.is_empty() {
            p
        } else {
            p.node(node_name)
        }
    }

    /// Upstream `requested_to_capacity_ratio_test.go` `TestRequestedToCapacityRatio` (v1.21-era
    /// copy, index id 419779212; same rows in v1.22). Shape {0→10, 100→0}, cpu and memory weight
    /// 1; raw `Score()` per node.
    #[test]
    #[allow(clippy::type_complexity)]
    fn test_requested_to_capacity_ratio() {
        let plugin = RequestedToCapacityRatio::new(&args(
            &[(0, 10), (100, 0)],
            &[("memory", 1), ("cpu", 1)],
        ));
        let cases: Vec<(&str, PodB, Vec<NodeB>, Vec<PodB>, Vec<i64>)> = vec![
            (
                "nothing scheduled, nothing requested (default - least requested nodes have priority)",
                make_pod("", 0, 0),
                vec![
                    make_node("node1", 4000, 10000),
                    make_node("node2", 4000, 10000),
                ],
                vec![make_pod("node1", 0, 0), make_pod("node2", 0, 0)],
                vec![100, 100],
            ),
            (
                "nothing scheduled, resources requested, differently sized machines (default - least requested nodes have priority)",
                make_pod("", 3000, 5000),
                vec![
                    make_node("node1", 4000, 10000),
                    make_node("node2", 6000, 10000),
                ],
                vec![make_pod("node1", 0, 0), make_pod("node2", 0, 0)],
                vec![38, 50],
            ),
            (
                "no resources requested, pods scheduled with resources (default - least requested nodes have priority)",
                make_pod("", 0, 0),
                vec![
                    make_node("node1", 4000, 10000),
                    make_node("node2", 6000, 10000),
                ],
                vec![make_pod("node1", 3000, 5000), make_pod("node2", 3000, 5000)],
                vec![38, 50],
            ),
        ];
        for (name, p, nodes, mut existing, want) in cases {
            for (i, e) in existing.iter_mut().enumerate() {
                e.0.metadata.name = Some(format!("pod{i}"));
            }
            assert_eq!(raw_scores(&plugin, p, nodes, &existing), want, "{name}");
        }
    }

    /// Upstream `TestResourceBinPackingSingleExtended` (index id 419779212): shape {0→0, 100→1},
    /// `intel.com/foo` weight 1. Upstream's pods without a node (`{Spec: noResources}`) are
    /// not placed anywhere and are left out.
    #[test]
    fn test_resource_bin_packing_single_extended() {
        let plugin =
            RequestedToCapacityRatio::new(&args(&[(0, 0), (100, 1)], &[("intel.com/foo", 1)]));
        let nodes = || {
            vec![
                ext_node(
                    "machine1",
                    4000,
                    10000 * 1024 * 1024,
                    &[("intel.com/foo", 8)],
                ),
                ext_node(
                    "machine2",
                    4000,
                    10000 * 1024 * 1024,
                    &[("intel.com/foo", 4)],
                ),
            ]
        };
        let pod1 = |n: &str| ext_pod(n, &[("intel.com/foo", "2")]);
        let pod2 = |n: &str| ext_pod(n, &[("intel.com/foo", "4")]);
        let cases: Vec<(&str, PodB, Vec<PodB>, Vec<i64>)> = vec![
            (
                "nothing scheduled, nothing requested",
                pod("p"),
                vec![],
                vec![0, 0],
            ),
            (
                "resources requested, pods scheduled with less resources",
                pod1(""),
                vec![],
                vec![2, 5],
            ),
            (
                "resources requested, pods scheduled with resources, on node with existing pod running ",
                pod1(""),
                vec![pod1("machine2")],
                vec![2, 10],
            ),
            (
                "resources requested, pods scheduled with more resources",
                pod2(""),
                vec![],
                vec![5, 10],
            ),
        ];
        for (name, p, existing, want) in cases {
            assert_eq!(raw_scores(&plugin, p, nodes(), &existing), want, "{name}");
        }
    }

    /// Upstream `TestResourceBinPackingMultipleExtended` (index id 419779212): shape
    /// {0→0, 100→1}, `intel.com/foo` weight 3, `intel.com/bar` weight 5.
    #[test]
    fn test_resource_bin_packing_multiple_extended() {
        let plugin = RequestedToCapacityRatio::new(&args(
            &[(0, 0), (100, 1)],
            &[("intel.com/foo", 3), ("intel.com/bar", 5)],
        ));
        let nodes = || {
            vec![
                ext_node(
                    "machine1",
                    4000,
                    10000 * 1024 * 1024,
                    &[("intel.com/foo", 8), ("intel.com/bar", 4)],
                ),
                ext_node(
                    "machine2",
                    4000,
                    10000 * 1024 * 1024,
                    &[("intel.com/foo", 4), ("intel.com/bar", 8)],
                ),
            ]
        };
        let pod1 = |n: &str| ext_pod(n, &[("intel.com/foo", "2"), ("intel.com/bar", "2")]);
        let pod2 = |n: &str| ext_pod(n, &[("intel.com/foo", "4"), ("intel.com/bar", "2")]);
        let cases: Vec<(&str, PodB, Vec<PodB>, Vec<i64>)> = vec![
            (
                "nothing scheduled, nothing requested",
                pod("p"),
                vec![],
                vec![0, 0],
            ),
            (
                "resources requested, pods scheduled with less resources",
                pod1(""),
                vec![],
                vec![4, 3],
            ),
            (
                "resources requested, pods scheduled with resources, on node with existing pod running ",
                pod1(""),
                vec![pod1("machine2")],
                vec![4, 7],
            ),
            (
                "resources requested, pods scheduled with more resources",
                pod2(""),
                vec![],
                vec![5, 5],
            ),
        ];
        for (name, p, existing, want) in cases {
            assert_eq!(raw_scores(&plugin, p, nodes(), &existing), want, "{name}");
        }
    }

    #[test]
    fn shape_scores_are_scaled_and_uniform_cases_are_detected() {
        let p = RequestedToCapacityRatio::new(&args(&[(0, 0), (50, 7)], &[]));
        assert_eq!(p.shape[1].score, 70);
        let mode = p
            .pre_score(
                &mut CycleState::new(),
                &pod("p").info(),
                &Snapshot::new(),
                &[],
            )
            .ok();
        assert_eq!(mode, Some(ScoreMode::Uniform(0)), "no resources");
        // The per-node path agrees with the shortcut.
        assert_eq!(
            p.node_score(&pod("p").info(), &make_node("n", 1000, 1000).info()),
            0
        );
        let flat = RequestedToCapacityRatio::new(&args(&[(0, 0), (100, 0)], &[("cpu", 1)]));
        let mode = flat
            .pre_score(
                &mut CycleState::new(),
                &pod("p").info(),
                &Snapshot::new(),
                &[],
            )
            .ok();
        assert_eq!(mode, Some(ScoreMode::Uniform(0)), "flat zero shape");
        // A repeated resource keeps its last weight (`resourceToWeightMap[name] = weight`).
        let twice = RequestedToCapacityRatio::new(&args(&[(0, 0)], &[("cpu", 1), ("cpu", 4)]));
        assert_eq!(twice.resources, [("cpu".to_string(), 4)]);
    }

    /// Only extended resources the pod does not request: they are left out on every node, so
    /// the pod scores 0 everywhere without per-node work; a pod requesting one is scored.
    #[test]
    fn unrequested_extended_resources_score_uniformly() {
        let plugin =
            RequestedToCapacityRatio::new(&args(&[(0, 0), (100, 10)], &[("intel.com/foo", 1)]));
        let n = ext_node("n", 4000, 10000, &[("intel.com/foo", 4)]).info();
        let pre = |p: &PodInfo| {
            plugin
                .pre_score(&mut CycleState::new(), p, &Snapshot::new(), &[])
                .ok()
        };
        let plain = pod("p").container(&[("cpu", "1")]).info();
        assert_eq!(pre(&plain), Some(ScoreMode::Uniform(0)));
        assert_eq!(plugin.node_score(&plain, &n), 0);
        let foo = ext_pod("", &[("intel.com/foo", "2")]).info();
        assert_eq!(pre(&foo), Some(ScoreMode::PerNode));
        assert_eq!(plugin.node_score(&foo, &n), 50);
        // cpu is always scored (non-zero default).
        let cpu = RequestedToCapacityRatio::new(&args(
            &[(0, 0), (100, 10)],
            &[("intel.com/foo", 1), ("cpu", 1)],
        ));
        assert_eq!(
            cpu.pre_score(&mut CycleState::new(), &plain, &Snapshot::new(), &[])
                .ok(),
            Some(ScoreMode::PerNode)
        );
    }

    #[test]
    fn cpu_and_memory_use_the_non_zero_defaults() {
        // A pod without requests counts 100m / 200 MiB, as LeastAllocated's scoring request.
        let p = RequestedToCapacityRatio::new(&args(&[(0, 0), (100, 10)], &[("cpu", 1)]));
        let n = make_node("n", 1000, 1 << 30).info();
        let pi = pod("p").container(&[]).info();
        assert_eq!(p.node_score(&pi, &n), 10);
        // Over capacity counts as 100% utilization.
        let big = pod("p").container(&[("cpu", "2")]).info();
        assert_eq!(p.node_score(&big, &n), 100);
    }
}
