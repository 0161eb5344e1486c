//! Builders for plugin unit tests, shaped like kube-scheduler's `st.MakePod()` /
//! `st.MakeNode()` test wrappers so upstream tables transcribe line by line.
#![allow(clippy::unwrap_used, dead_code, missing_docs)]

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1 as apps;
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;

use crate::framework::{Code, CycleState, FilterPlugin, ScorePlugin, Status};
use crate::model::{NodeInfo, PodInfo};
use crate::snapshot::Snapshot;

fn q(pairs: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
        .collect()
}

/// A pod under construction.
#[derive(Clone, Default)]
pub struct PodB(pub core::Pod);

pub fn pod(name: &str) -> PodB {
    PodB(core::Pod {
        metadata: meta::ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        spec: Some(core::PodSpec::default()),
        status: None,
    })
}

impl PodB {
    fn spec(&mut self) -> &mut core::PodSpec {
        self.0.spec.get_or_insert_with(Default::default)
    }
    pub fn namespace(mut self, ns: &str) -> Self {
        self.0.metadata.namespace = Some(ns.into());
        self
    }
    pub fn label(mut self, k: &str, v: &str) -> Self {
        self.0
            .metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert(k.into(), v.into());
        self
    }
    pub fn node(mut self, n: &str) -> Self {
        self.spec().node_name = Some(n.into());
        self
    }
    /// A container with requests given as `(resource, quantity)` pairs.
    pub fn container(mut self, req: &[(&str, &str)]) -> Self {
        let n = self.spec().containers.len();
        self.spec().containers.push(core::Container {
            name: format!("c{n}"),
            resources: Some(core::ResourceRequirements {
                requests: (!req.is_empty()).then(|| q(req)),
                ..Default::default()
            }),
            ..Default::default()
        });
        self
    }
    pub fn init_container(mut self, req: &[(&str, &str)]) -> Self {
        let n = self.spec().init_containers.as_ref().map_or(0, Vec::len);
        self.spec()
            .init_containers
            .get_or_insert_with(Default::default)
            .push(core::Container {
                name: format!("i{n}"),
                resources: Some(core::ResourceRequirements {
                    requests: (!req.is_empty()).then(|| q(req)),
                    ..Default::default()
                }),
                ..Default::default()
            });
        self
    }
    pub fn overhead(mut self, req: &[(&str, &str)]) -> Self {
        self.spec().overhead = Some(q(req));
        self
    }
    /// A container port `(hostIP, protocol, hostPort)` on a new container.
    pub fn host_port(mut self, ip: &str, proto: &str, port: i32) -> Self {
        let n = self.spec().containers.len();
        self.spec().containers.push(core::Container {
            name: format!("p{n}"),
            ports: Some(vec![core::ContainerPort {
                container_port: port,
                host_port: Some(port),
                host_ip: (!ip.is_empty()).then(|| ip.into()),
                protocol: (!proto.is_empty()).then(|| proto.into()),
                ..Default::default()
            }]),
            ..Default::default()
        });
        self
    }
    pub fn node_selector(mut self, k: &str, v: &str) -> Self {
        self.spec()
            .node_selector
            .get_or_insert_with(Default::default)
            .insert(k.into(), v.into());
        self
    }
    pub fn required_affinity(mut self, terms: Vec<core::NodeSelectorTerm>) -> Self {
        self.spec().affinity = Some(core::Affinity {
            node_affinity: Some(core::NodeAffinity {
                required_during_scheduling_ignored_during_execution: Some(core::NodeSelector {
                    node_selector_terms: terms,
                }),
                ..Default::default()
            }),
            ..Default::default()
        });
        self
    }
    pub fn toleration(mut self, key: &str, op: &str, value: &str, effect: &str) -> Self {
        self.spec()
            .tolerations
            .get_or_insert_with(Default::default)
            .push(core::Toleration {
                key: (!key.is_empty()).then(|| key.into()),
                operator: (!op.is_empty()).then(|| op.into()),
                value: (!value.is_empty()).then(|| value.into()),
                effect: (!effect.is_empty()).then(|| effect.into()),
                ..Default::default()
            });
        self
    }
    pub fn volume(mut self, v: core::Volume) -> Self {
        self.spec()
            .volumes
            .get_or_insert_with(Default::default)
            .push(v);
        self
    }
    pub fn owner(mut self, api_version: &str, kind: &str, name: &str) -> Self {
        self.0
            .metadata
            .owner_references
            .get_or_insert_with(Default::default)
            .push(meta::OwnerReference {
                api_version: api_version.into(),
                kind: kind.into(),
                name: name.into(),
                uid: format!("{name}-uid"),
                controller: Some(true),
                ..Default::default()
            });
        self
    }
    pub fn terminating(mut self) -> Self {
        self.0.metadata.deletion_timestamp =
            Some(meta::Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
        self
    }
    pub fn topology_spread(mut self) -> Self {
        self.spec().topology_spread_constraints = Some(vec![core::TopologySpreadConstraint {
            max_skew: 1,
            topology_key: "zone".into(),
            when_unsatisfiable: "DoNotSchedule".into(),
            ..Default::default()
        }]);
        self
    }
    /// A container whose requests are `r.ResourceList()` (upstream `newResourcePod`).
    pub fn container_res(mut self, r: &Res) -> Self {
        let n = self.spec().containers.len();
        self.spec().containers.push(core::Container {
            name: format!("c{n}"),
            resources: Some(core::ResourceRequirements {
                requests: Some(r.list()),
                ..Default::default()
            }),
            ..Default::default()
        });
        self
    }
    /// An init container whose requests are `r.ResourceList()` (upstream `newResourceInitPod`).
    pub fn init_container_res(mut self, r: &Res) -> Self {
        let n = self.spec().init_containers.as_ref().map_or(0, Vec::len);
        self.spec()
            .init_containers
            .get_or_insert_with(Default::default)
            .push(core::Container {
                name: format!("i{n}"),
                resources: Some(core::ResourceRequirements {
                    requests: Some(r.list()),
                    ..Default::default()
                }),
                ..Default::default()
            });
        self
    }
    /// One container carrying every `(protocol, hostIP, hostPort)` (upstream nodeports `newPod`).
    pub fn host_ports(mut self, ports: &[(&str, &str, i32)]) -> Self {
        let n = self.spec().containers.len();
        self.spec().containers.push(core::Container {
            name: format!("p{n}"),
            ports: Some(
                ports
                    .iter()
                    .map(|(proto, ip, port)| core::ContainerPort {
                        host_port: Some(*port),
                        host_ip: (!ip.is_empty()).then(|| ip.to_string()),
                        protocol: (!proto.is_empty()).then(|| proto.to_string()),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        });
        self
    }
    /// An affinity with a NodeAffinity but no required node selector (`Required: nil`).
    pub fn empty_node_affinity(mut self) -> Self {
        self.spec().affinity = Some(core::Affinity {
            node_affinity: Some(core::NodeAffinity::default()),
            ..Default::default()
        });
        self
    }
    /// A container running `image` (no requests).
    pub fn image(mut self, image: &str) -> Self {
        let n = self.spec().containers.len();
        self.spec().containers.push(core::Container {
            name: format!("c{n}"),
            image: Some(image.into()),
            ..Default::default()
        });
        self
    }
    /// `preferredDuringSchedulingIgnoredDuringExecution` node affinity terms `(weight, term)`.
    pub fn preferred_affinity(mut self, terms: Vec<(i32, core::NodeSelectorTerm)>) -> Self {
        let affinity = self.spec().affinity.get_or_insert_with(Default::default);
        affinity
            .node_affinity
            .get_or_insert_with(Default::default)
            .preferred_during_scheduling_ignored_during_execution = Some(
            terms
                .into_iter()
                .map(|(weight, preference)| core::PreferredSchedulingTerm { weight, preference })
                .collect(),
        );
        self
    }
    /// An ownerReference with an explicit uid and `controller` flag (upstream literals).
    pub fn owner_ref(
        mut self,
        kind: &str,
        name: &str,
        uid: &str,
        controller: Option<bool>,
    ) -> Self {
        self.0
            .metadata
            .owner_references
            .get_or_insert_with(Default::default)
            .push(meta::OwnerReference {
                kind: kind.into(),
                name: name.into(),
                uid: uid.into(),
                controller,
                ..Default::default()
            });
        self
    }
    pub fn info(self) -> PodInfo {
        PodInfo::from_pod(self.0).unwrap()
    }
}

/// `framework.Resource` as the fit tests write it: milli-cpu, memory bytes, ephemeral-storage
/// bytes and scalar resources.
#[derive(Clone, Debug, Default)]
pub struct Res {
    pub milli_cpu: i64,
    pub memory: i64,
    pub ephemeral_storage: i64,
    pub scalar: Vec<(&'static str, i64)>,
}

/// `framework.Resource{MilliCPU: c, Memory: m}`.
pub fn res(milli_cpu: i64, memory: i64) -> Res {
    Res {
        milli_cpu,
        memory,
        ..Default::default()
    }
}

impl Res {
    /// Add a scalar resource (`ScalarResources{name: v}`).
    pub fn with(mut self, name: &'static str, v: i64) -> Self {
        self.scalar.push((name, v));
        self
    }
    /// Set `EphemeralStorage`.
    pub fn eph(mut self, v: i64) -> Self {
        self.ephemeral_storage = v;
        self
    }
    /// `Resource.ResourceList()`: always cpu, memory, pods (0) and ephemeral-storage, plus every
    /// scalar key (even when 0).
    pub fn list(&self) -> BTreeMap<String, Quantity> {
        let mut m = BTreeMap::new();
        m.insert("cpu".to_string(), Quantity(format!("{}m", self.milli_cpu)));
        m.insert("memory".to_string(), Quantity(self.memory.to_string()));
        m.insert("pods".to_string(), Quantity("0".into()));
        m.insert(
            "ephemeral-storage".to_string(),
            Quantity(self.ephemeral_storage.to_string()),
        );
        for (n, v) in &self.scalar {
            m.insert(n.to_string(), Quantity(v.to_string()));
        }
        m
    }
}

/// `v1.Volume{GCEPersistentDisk: {PDName: pd}}`.
pub fn gce_pd_volume(pd: &str) -> core::Volume {
    core::Volume {
        name: "v".into(),
        gce_persistent_disk: Some(core::GCEPersistentDiskVolumeSource {
            pd_name: pd.into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// `v1.Volume{AWSElasticBlockStore: {VolumeID: id}}`.
pub fn aws_ebs_volume(id: &str) -> core::Volume {
    core::Volume {
        name: "v".into(),
        aws_elastic_block_store: Some(core::AWSElasticBlockStoreVolumeSource {
            volume_id: id.into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// `v1.Volume{RBD: {CephMonitors, RBDPool, RBDImage, FSType: "ext4"}}`.
pub fn rbd_volume(monitors: &[&str], pool: &str, image: &str) -> core::Volume {
    core::Volume {
        name: "v".into(),
        rbd: Some(core::RBDVolumeSource {
            monitors: monitors.iter().map(|m| m.to_string()).collect(),
            pool: Some(pool.into()),
            image: image.into(),
            fs_type: Some("ext4".into()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// `v1.Volume{ISCSI: {TargetPortal, IQN, FSType: "ext4", Lun: 0}}`.
pub fn iscsi_volume(target_portal: &str, iqn: &str) -> core::Volume {
    core::Volume {
        name: "v".into(),
        iscsi: Some(core::ISCSIVolumeSource {
            target_portal: target_portal.into(),
            iqn: iqn.into(),
            fs_type: Some("ext4".into()),
            lun: 0,
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn labels_of(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn object_meta(namespace: &str, name: &str) -> meta::ObjectMeta {
    meta::ObjectMeta {
        name: (!name.is_empty()).then(|| name.into()),
        namespace: Some(namespace.into()),
        ..Default::default()
    }
}

/// A Service in `namespace` named `name` (empty: no name) with `spec.selector`.
pub fn service(namespace: &str, name: &str, selector: &[(&str, &str)]) -> core::Service {
    core::Service {
        metadata: object_meta(namespace, name),
        spec: Some(core::ServiceSpec {
            selector: Some(labels_of(selector)),
            ..Default::default()
        }),
        status: None,
    }
}

/// A ReplicationController with `spec.selector`.
pub fn replication_controller(
    name: &str,
    namespace: &str,
    selector: &[(&str, &str)],
) -> core::ReplicationController {
    core::ReplicationController {
        metadata: object_meta(namespace, name),
        spec: Some(core::ReplicationControllerSpec {
            selector: Some(labels_of(selector)),
            ..Default::default()
        }),
        status: None,
    }
}

fn match_labels(selector: &[(&str, &str)]) -> meta::LabelSelector {
    meta::LabelSelector {
        match_labels: Some(labels_of(selector)),
        match_expressions: None,
    }
}

/// A ReplicaSet with `spec.selector.matchLabels`.
pub fn replica_set(name: &str, namespace: &str, selector: &[(&str, &str)]) -> apps::ReplicaSet {
    apps::ReplicaSet {
        metadata: object_meta(namespace, name),
        spec: apps::ReplicaSetSpec {
            selector: match_labels(selector),
            ..Default::default()
        },
        status: None,
    }
}

/// A StatefulSet with `spec.selector.matchLabels`.
pub fn stateful_set(name: &str, namespace: &str, selector: &[(&str, &str)]) -> apps::StatefulSet {
    apps::StatefulSet {
        metadata: object_meta(namespace, name),
        spec: apps::StatefulSetSpec {
            selector: match_labels(selector),
            ..Default::default()
        },
        status: None,
    }
}

pub fn term(exprs: &[(&str, &str, &[&str])]) -> core::NodeSelectorTerm {
    core::NodeSelectorTerm {
        match_expressions: Some(
            exprs
                .iter()
                .map(|(k, op, vals)| core::NodeSelectorRequirement {
                    key: k.to_string(),
                    operator: op.to_string(),
                    values: (!vals.is_empty())
                        .then(|| vals.iter().map(|s| s.to_string()).collect()),
                })
                .collect(),
        ),
        match_fields: None,
    }
}

pub fn field_term(op: &str, names: &[&str]) -> core::NodeSelectorTerm {
    core::NodeSelectorTerm {
        match_expressions: None,
        match_fields: Some(vec![core::NodeSelectorRequirement {
            key: "metadata.name".into(),
            operator: op.into(),
            values: Some(names.iter().map(|s| s.to_string()).collect()),
        }]),
    }
}

/// A node under construction.
#[derive(Clone)]
pub struct NodeB(pub core::Node);

pub fn node(name: &str) -> NodeB {
    NodeB(core::Node {
        metadata: meta::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        spec: Some(core::NodeSpec::default()),
        status: Some(core::NodeStatus::default()),
    })
}

impl NodeB {
    pub fn allocatable(mut self, res: &[(&str, &str)]) -> Self {
        self.0
            .status
            .get_or_insert_with(Default::default)
            .allocatable = Some(q(res));
        self
    }
    pub fn capacity(mut self, res: &[(&str, &str)]) -> Self {
        self.0.status.get_or_insert_with(Default::default).capacity = Some(q(res));
        self
    }
    pub fn label(mut self, k: &str, v: &str) -> Self {
        self.0
            .metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert(k.into(), v.into());
        self
    }
    pub fn taint(mut self, k: &str, v: &str, effect: &str) -> Self {
        self.0
            .spec
            .get_or_insert_with(Default::default)
            .taints
            .get_or_insert_with(Default::default)
            .push(core::Taint {
                key: k.into(),
                value: (!v.is_empty()).then(|| v.into()),
                effect: effect.into(),
                ..Default::default()
            });
        self
    }
    /// A `status.images` entry with these names and size in bytes.
    pub fn image(mut self, names: &[&str], size_bytes: i64) -> Self {
        self.0
            .status
            .get_or_insert_with(Default::default)
            .images
            .get_or_insert_with(Default::default)
            .push(core::ContainerImage {
                names: Some(names.iter().map(|n| n.to_string()).collect()),
                size_bytes: Some(size_bytes),
            });
        self
    }
    pub fn annotation(mut self, k: &str, v: &str) -> Self {
        self.0
            .metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(k.into(), v.into());
        self
    }
    pub fn unschedulable(mut self) -> Self {
        self.0
            .spec
            .get_or_insert_with(Default::default)
            .unschedulable = Some(true);
        self
    }
    /// A NodeInfo with `pods` on it.
    pub fn info_with(self, pods: &[PodB]) -> NodeInfo {
        let mut ni = NodeInfo::from_node(self.0).unwrap();
        for p in pods {
            ni.add_pod(Arc::new(p.clone().info()), None);
        }
        ni
    }
    pub fn info(self) -> NodeInfo {
        self.info_with(&[])
    }
}

/// noderesources `makeNode(name, milliCPU, memory)`: capacity == allocatable == cpu, memory.
pub fn make_node(name: &str, milli_cpu: i64, memory: i64) -> NodeB {
    let cpu = format!("{milli_cpu}m");
    let mem = memory.to_string();
    let list = [("cpu", cpu.as_str()), ("memory", mem.as_str())];
    node(name).capacity(&list).allocatable(&list)
}

/// A snapshot of `nodes` with each pod placed on the node named by its `spec.nodeName`.
pub fn snapshot(nodes: Vec<NodeB>, pods: &[PodB]) -> Snapshot {
    let mut s = Snapshot::new();
    for n in nodes {
        s.add_node(NodeInfo::from_node(n.0).unwrap()).unwrap();
    }
    for p in pods {
        let pi = p.clone().info();
        s.add_pod(Arc::new(pi), None, None).unwrap();
    }
    s
}

// Pod specs shared by the noderesources score tests (least/most/balanced allocation,
// `noderesources-common-helpers.md`). `node_name` "" leaves `spec.nodeName` unset.

fn on_node(p: PodB, node_name: &str) -> PodB {
    if node_name.is_empty() {
        p
    } else {
        p.node(node_name)
    }
}

/// `noResources`: no containers.
pub fn no_resources(node_name: &str) -> PodB {
    on_node(pod("p"), node_name)
}

/// `cpuOnly`: `[{cpu 1000m, memory 0}, {cpu 2000m, memory 0}]` (3000m, explicit 0 memory).
pub fn cpu_only(node_name: &str) -> PodB {
    on_node(
        pod("cpu-only")
            .container(&[("cpu", "1000m"), ("memory", "0")])
            .container(&[("cpu", "2000m"), ("memory", "0")]),
        node_name,
    )
}

/// `cpuAndMemory`: `[{cpu 1000m, memory 2000}, {cpu 2000m, memory 3000}]` (3000m, 5000 bytes).
pub fn cpu_and_memory(node_name: &str) -> PodB {
    on_node(
        pod("cpu-and-memory")
            .container(&[("cpu", "1000m"), ("memory", "2000")])
            .container(&[("cpu", "2000m"), ("memory", "3000")]),
        node_name,
    )
}

/// `nonZeroContainer`: one container without requests (100m / 200Mi when scored).
pub fn non_zero_container(node_name: &str) -> PodB {
    on_node(pod("non-zero").container(&[]), node_name)
}

/// `labels1` = `{foo: bar, baz: blah}`.
pub fn labels1(p: PodB) -> PodB {
    p.label("foo", "bar").label("baz", "blah")
}

/// `labels2` = `{bar: foo, baz: blah}`.
pub fn labels2(p: PodB) -> PodB {
    p.label("bar", "foo").label("baz", "blah")
}

/// The raw `Score()` of `pod` on every node, in `nodes` order, read from a snapshot holding
/// `existing` (upstream `cache.NewSnapshot(test.pods, test.nodes)` + `Score` per node).
pub fn raw_scores(
    plugin: &dyn ScorePlugin,
    pod: PodB,
    nodes: Vec<NodeB>,
    existing: &[PodB],
) -> Vec<i64> {
    let names: Vec<String> = nodes
        .iter()
        .map(|n| n.0.metadata.name.clone().unwrap_or_default())
        .collect();
    let snap = snapshot(nodes, existing);
    let pi = pod.info();
    let mut state = CycleState::new();
    let feasible: Vec<u32> = names.iter().map(|n| snap.node_index(n).unwrap()).collect();
    plugin.pre_score(&mut state, &pi, &snap, &feasible).unwrap();
    let scores: Vec<i64> = names
        .iter()
        .map(|n| plugin.score(&state, &pi, snap.node(n).unwrap()).unwrap())
        .collect();
    // The batch entry point the scheduler calls must agree with `score` on every node.
    let mut batch = vec![0; feasible.len()];
    plugin
        .score_nodes(&state, &pi, &snap, &feasible, &mut batch)
        .unwrap();
    assert_eq!(batch, scores, "score_nodes disagrees with score");
    scores
}

/// The verdict of the batch entry point `filter_nodes` (the one the scheduler calls) for `node`
/// alone in a snapshot: success when the node stays a candidate, else its failure status.
pub fn filter_via_batch(
    plugin: &dyn FilterPlugin,
    state: &CycleState,
    pod: &PodInfo,
    node: &NodeInfo,
) -> Status {
    let mut snap = Snapshot::new();
    snap.add_node(node.clone()).unwrap();
    let mut candidates = vec![0];
    let mut failed = Vec::new();
    plugin.filter_nodes(state, pod, &snap, &mut candidates, &mut failed);
    match (candidates.as_slice(), failed.as_slice()) {
        ([0], []) => Status::success(),
        ([], [(0, s)]) => s.clone(),
        other => panic!("filter_nodes left an inconsistent result: {other:?}"),
    }
}

/// `(code, reasons)` of a status: what upstream's `reflect.DeepEqual` on a v1.22 plugin status
/// compares (the failed plugin is recorded by the framework, not by the plugin).
pub fn outcome(s: &Status) -> (Code, Vec<String>) {
    (s.code, s.reasons.iter().map(|r| r.to_string()).collect())
}

/// The expected outcome `NewStatus(code, reasons...)`; `Code::Success` with no reasons is nil.
pub fn want(code: Code, reasons: &[&str]) -> (Code, Vec<String>) {
    (code, reasons.iter().map(|r| r.to_string()).collect())
}
