//! Fixtures shared by mini-scheduler's benches: the object templates of kube-scheduler's
//! `scheduler_perf` (`test/integration/scheduler_perf`), so our figures compare with its
//! SchedulingBasic workload.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use scheduler::model::{NodeInfo, PodInfo};
use scheduler::policy::{self, ResolvedPolicy};
use scheduler::snapshot::Snapshot;

pub mod reference;

use reference::RefPod;

/// The product's sample policy, as shipped in `config/policy-config-file.json`.
pub const SAMPLE_POLICY: &str = include_str!("../../config/policy-config-file.json");

/// The sample policy resolved under the default feature gates, as the binary runs it.
///
/// # Panics
/// If the bundled policy does not load (a bug caught by the policy tests).
#[allow(clippy::expect_used)]
pub fn sample_policy() -> ResolvedPolicy {
    policy::parse_policy("config/policy-config-file.json", SAMPLE_POLICY)
        .expect("bundled policy loads")
        .resolved
        .with_feature_gates(&policy::FeatureGates::default())
}

fn q(pairs: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
        .collect()
}

/// scheduler_perf's node template (`IntegrationTestNodePreparer`): capacity cpu 4,
/// memory 32Gi, pods 110.
pub fn perf_node(i: usize) -> core::Node {
    let res = q(&[("cpu", "4"), ("memory", "32Gi"), ("pods", "110")]);
    core::Node {
        metadata: ObjectMeta {
            name: Some(format!("node-{i:05}")),
            labels: Some(BTreeMap::from([(
                "kubernetes.io/hostname".to_string(),
                format!("node-{i:05}"),
            )])),
            ..Default::default()
        },
        spec: Some(core::NodeSpec::default()),
        status: Some(core::NodeStatus {
            capacity: Some(res.clone()),
            allocatable: Some(res),
            ..Default::default()
        }),
    }
}

/// scheduler_perf's `pod-default.yaml`: one pause container with requests = limits =
/// cpu 100m, memory 500Mi, containerPort 80 (no host port).
pub fn perf_pod(i: usize, scheduler_name: &str) -> core::Pod {
    let res = q(&[("cpu", "100m"), ("memory", "500Mi")]);
    core::Pod {
        metadata: ObjectMeta {
            name: Some(format!("pod-{i:06}")),
            namespace: Some("sched-perf".into()),
            ..Default::default()
        },
        spec: Some(core::PodSpec {
            scheduler_name: Some(scheduler_name.into()),
            containers: vec![core::Container {
                name: "pause".into(),
                image: Some("registry.k8s.io/pause:3.9".into()),
                ports: Some(vec![core::ContainerPort {
                    container_port: 80,
                    ..Default::default()
                }]),
                resources: Some(core::ResourceRequirements {
                    limits: Some(res.clone()),
                    requests: Some(res),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: None,
    }
}

/// A snapshot of `nodes` perf nodes.
///
/// # Panics
/// Never for the fixed template (names are unique, quantities valid).
#[allow(clippy::expect_used)]
pub fn perf_snapshot(nodes: usize) -> Snapshot {
    let mut s = Snapshot::new();
    for i in 0..nodes {
        s.add_node(NodeInfo::from_node(perf_node(i)).expect("valid node"))
            .expect("unique node");
    }
    s
}

/// `n` perf pods as PodInfos.
///
/// # Panics
/// Never for the fixed template.
#[allow(clippy::expect_used)]
pub fn perf_pods(n: usize) -> Vec<Arc<PodInfo>> {
    (0..n)
        .map(|i| Arc::new(PodInfo::from_pod(perf_pod(i, "mini-scheduler")).expect("valid pod")))
        .collect()
}

/// `n` perf pods that tolerate the `NoSchedule` taint of [`openb_nodes`]
/// (`mini-scheduler.io/bench`, operator `Exists`): GPU pods on GPU nodes tainted for them,
/// which every such node admits.
///
/// # Panics
/// Never for the fixed template.
#[allow(clippy::expect_used)]
pub fn tolerating_perf_pods(n: usize) -> Vec<Arc<PodInfo>> {
    (0..n)
        .map(|i| {
            let mut p = perf_pod(i, "mini-scheduler");
            if let Some(spec) = p.spec.as_mut() {
                spec.tolerations = Some(vec![core::Toleration {
                    key: Some("mini-scheduler.io/bench".into()),
                    operator: Some("Exists".into()),
                    effect: Some("NoSchedule".into()),
                    ..Default::default()
                }]);
            }
            Arc::new(PodInfo::from_pod(p).expect("valid pod"))
        })
        .collect()
}

/// The sample policy's predicates and priorities plus the topology plugins:
/// `EvenPodsSpread` + `MatchInterPodAffinity`, `InterPodAffinityPriority` (1) and
/// `EvenPodsSpreadPriority` (2), as v1.22's defaults weigh them.
pub const TOPOLOGY_POLICY: &str = r#"{
  "kind": "Policy",
  "apiVersion": "v1",
  "predicates": [
    {"name": "PodFitsPorts"}, {"name": "PodFitsResources"}, {"name": "NoDiskConflict"},
    {"name": "MatchNodeSelector"}, {"name": "HostName"},
    {"name": "EvenPodsSpread"}, {"name": "MatchInterPodAffinity"}
  ],
  "priorities": [
    {"name": "LeastRequestedPriority", "weight": 1},
    {"name": "BalancedResourceAllocation", "weight": 1},
    {"name": "ServiceSpreadingPriority", "weight": 1},
    {"name": "InterPodAffinityPriority", "weight": 1},
    {"name": "EvenPodsSpreadPriority", "weight": 2}
  ]
}"#;

/// Zones of the topology bench (`topology.kubernetes.io/zone: zone-0..9`, round-robin).
pub const TOPOLOGY_ZONES: usize = 10;
/// Replicas per application in the topology bench: pods `i` and `j` belong to the same
/// application when `i / TOPOLOGY_GROUP == j / TOPOLOGY_GROUP`.
pub const TOPOLOGY_GROUP: usize = 100;

/// [`TOPOLOGY_POLICY`] resolved under the default feature gates.
///
/// # Panics
/// If the bundled policy does not load (a bug caught by the bench smoke run).
#[allow(clippy::expect_used)]
pub fn topology_policy() -> ResolvedPolicy {
    policy::parse_policy("topology-policy.json", TOPOLOGY_POLICY)
        .expect("topology policy loads")
        .resolved
        .with_feature_gates(&policy::FeatureGates::default())
}

/// [`perf_node`] in zone `zone-{i % TOPOLOGY_ZONES}`.
pub fn topology_node(i: usize) -> core::Node {
    let mut n = perf_node(i);
    n.metadata.labels.get_or_insert_with(BTreeMap::new).insert(
        "topology.kubernetes.io/zone".to_string(),
        format!("zone-{}", i % TOPOLOGY_ZONES),
    );
    n
}

/// A snapshot of `nodes` [`topology_node`]s.
///
/// # Panics
/// Never for the fixed template.
#[allow(clippy::expect_used)]
pub fn topology_snapshot(nodes: usize) -> Snapshot {
    let mut s = Snapshot::new();
    for i in 0..nodes {
        s.add_node(NodeInfo::from_node(topology_node(i)).expect("valid node"))
            .expect("unique node");
    }
    s
}

/// [`perf_pod`] of application `app-{i / TOPOLOGY_GROUP}` (label `app`), with scheduler_perf's
/// `pod-with-pod-anti-affinity.yaml` rule (required anti-affinity to its own application on
/// `kubernetes.io/hostname`) and a zone spread constraint (maxSkew 1, `DoNotSchedule`) over
/// its application.
pub fn topology_pod(i: usize, scheduler_name: &str) -> core::Pod {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
    let app = BTreeMap::from([("app".to_string(), format!("app-{}", i / TOPOLOGY_GROUP))]);
    let selector = || LabelSelector {
        match_labels: Some(app.clone()),
        match_expressions: None,
    };
    let mut p = perf_pod(i, scheduler_name);
    p.metadata.labels = Some(app.clone());
    if let Some(spec) = p.spec.as_mut() {
        spec.affinity = Some(core::Affinity {
            pod_anti_affinity: Some(core::PodAntiAffinity {
                required_during_scheduling_ignored_during_execution: Some(vec![
                    core::PodAffinityTerm {
                        label_selector: Some(selector()),
                        topology_key: "kubernetes.io/hostname".into(),
                        ..Default::default()
                    },
                ]),
                ..Default::default()
            }),
            ..Default::default()
        });
        spec.topology_spread_constraints = Some(vec![core::TopologySpreadConstraint {
            max_skew: 1,
            topology_key: "topology.kubernetes.io/zone".into(),
            when_unsatisfiable: "DoNotSchedule".into(),
            label_selector: Some(selector()),
            ..Default::default()
        }]);
    }
    p
}

/// `n` [`topology_pod`]s as PodInfos.
///
/// # Panics
/// Never for the fixed template.
#[allow(clippy::expect_used)]
pub fn topology_pods(n: usize) -> Vec<Arc<PodInfo>> {
    (0..n)
        .map(|i| Arc::new(PodInfo::from_pod(topology_pod(i, "mini-scheduler")).expect("valid pod")))
        .collect()
}

/// openb's GPU node list (`data/openb/openb_node_list_gpu_node.csv`, 1,213 nodes of 8 to 104
/// cores, 32 to 768 GiB, 1 to 8 GPUs of 7 models).
pub const OPENB_GPU_NODES: &str = include_str!("../../data/openb/openb_node_list_gpu_node.csv");

/// The heterogeneous cluster: openb's GPU node list repeated to `nodes` nodes (copy `k` of row
/// `r` is `openb-node-rrrr-k`), with openb's capacities and GPU model labels, and a
/// `NoSchedule` taint `mini-scheduler.io/bench=heterogeneous` on the rows `r ≡ 0 (mod 4)` and a
/// `PreferNoSchedule` one on the rows `r ≡ 1, 3 (mod 8)`, so capacities, labels and taints all
/// differ from node to node. (The sample policy names no taint predicate, but
/// PodToleratesNodeTaints is mandatory in v1.22's legacy registry, so TaintToleration filters
/// them: the perf pods tolerate nothing, and the tainted nodes are the scan's quick rejects.)
///
/// # Panics
/// If the bundled CSV does not parse (a bug caught by the bench smoke test).
#[allow(clippy::expect_used)]
pub fn openb_nodes(nodes: usize) -> Vec<core::Node> {
    let mut cluster = scheduler::sim::Cluster::default();
    scheduler::sim::openb::parse_nodes(
        &mut cluster,
        "openb_node_list_gpu_node.csv",
        OPENB_GPU_NODES,
    )
    .expect("bundled openb node list parses");
    let rows = cluster.nodes;
    (0..nodes)
        .map(|i| {
            let (r, k) = (i % rows.len(), i / rows.len());
            let mut n = rows[r].clone();
            let name = format!("{}-{k}", n.metadata.name.clone().unwrap_or_default());
            n.metadata
                .labels
                .get_or_insert_with(BTreeMap::new)
                .insert("kubernetes.io/hostname".to_string(), name.clone());
            n.metadata.name = Some(name);
            let effect = match r % 8 {
                0 | 4 => Some("NoSchedule"),
                1 | 3 => Some("PreferNoSchedule"),
                _ => None,
            };
            if let (Some(effect), Some(spec)) = (effect, n.spec.as_mut()) {
                spec.taints = Some(vec![core::Taint {
                    key: "mini-scheduler.io/bench".into(),
                    value: Some("heterogeneous".into()),
                    effect: effect.into(),
                    time_added: None,
                }]);
            }
            n
        })
        .collect()
}

/// A snapshot of [`openb_nodes`]`(nodes)`.
///
/// # Panics
/// Never for the bundled node list.
pub fn openb_snapshot(nodes: usize) -> Snapshot {
    snapshot_of(openb_nodes(nodes))
}

/// A snapshot of `nodes` (valid, uniquely named: the benches' own).
#[allow(clippy::expect_used)]
fn snapshot_of(nodes: Vec<core::Node>) -> Snapshot {
    let mut s = Snapshot::new();
    for n in nodes {
        s.add_node(NodeInfo::from_node(n).expect("valid node"))
            .expect("unique node");
    }
    s
}

/// [`openb_snapshot`]`(nodes)` whose first three nodes carry the control-plane taint
/// (`node-role.kubernetes.io/control-plane:NoSchedule`, as a kubeadm cluster's control-plane
/// nodes do) instead of their own: pods that tolerate the other nodes' `NoSchedule` taint
/// ([`tolerating_perf_pods`]) tolerate one of the cluster's taint sets and not the other.
///
/// # Panics
/// Never for the bundled node list.
pub fn openb_control_plane_snapshot(nodes: usize) -> Snapshot {
    let mut nodes = openb_nodes(nodes);
    for spec in nodes.iter_mut().take(3).filter_map(|n| n.spec.as_mut()) {
        spec.taints = Some(vec![core::Taint {
            key: "node-role.kubernetes.io/control-plane".into(),
            effect: "NoSchedule".into(),
            ..Default::default()
        }]);
    }
    snapshot_of(nodes)
}

/// `(allocatable cpu millicores, memory bytes, pods)` of every node of `s`, in snapshot order,
/// for the [`reference`] scans.
pub fn reference_allocatable(s: &Snapshot) -> Vec<(i64, i64, i64)> {
    s.nodes()
        .iter()
        .map(|n| {
            (
                n.allocatable.milli_cpu,
                n.allocatable.memory,
                n.allocatable.allowed_pod_number,
            )
        })
        .collect()
}

/// `pod`'s requests as the [`reference`] scans read them.
pub fn reference_pod(pod: &PodInfo) -> RefPod {
    RefPod {
        milli_cpu: pod.requests.milli_cpu,
        memory: pod.requests.memory,
        non_zero_milli_cpu: pod.non_zero_milli_cpu,
        non_zero_memory: pod.non_zero_memory,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The heterogeneous cluster repeats openb's rows under unique names, with varied shapes and
    /// taints.
    #[test]
    fn openb_nodes_scale_to_unique_varied_nodes() {
        let s = openb_snapshot(2500);
        assert_eq!(s.len(), 2500);
        let shapes: std::collections::BTreeSet<_> = reference_allocatable(&s).into_iter().collect();
        assert!(shapes.len() > 5, "{} node shapes", shapes.len());
        assert!(s.nodes().iter().any(|n| n.has_filter_taints));
        assert!(s.nodes_with_prefer_no_schedule_taints() > 0);
        assert!(s.node("openb-node-0000-2").is_some());
    }

    /// The tolerating pods tolerate every filter taint of the openb nodes, and with the
    /// control-plane nodes some of the cluster's taints but not all.
    #[test]
    fn tolerating_pods_tolerate_the_openb_taint_and_not_the_control_plane() {
        let pod = &tolerating_perf_pods(1)[0];
        assert!(openb_snapshot(100).tolerates_every_filter_taint(pod));
        let s = openb_control_plane_snapshot(100);
        assert!(!s.tolerates_every_filter_taint(pod));
        assert!(!s.tolerates_no_filter_taint(pod));
        assert_eq!(
            s.nodes().iter().filter(|n| n.has_filter_taints).count(),
            3 + 24
        );
    }
}
