//! [`PodInfo`]: a pod with its requests, ports, affinity, tolerations and volumes computed
//! once (`framework.PodInfo` plus the PreFilter states of the resource, port and affinity
//! plugins, v1.22 `pkg/scheduler/framework/types.go` `calculateResource`).
//!
//! A `PodInfo` is compact: the cache holds one for every pod on every node (150,000 in
//! kube-scheduler's supported envelope), so it keeps what scheduling reads and what a Binding,
//! an Event, a status patch and a victim's DELETE name (namespace, name, uid, resourceVersion),
//! not the API object. The `v1.Pod` rides along only while the pod is pending
//! ([`PodInfo::object`]): the extenders are sent it (`ExtenderArgs.Pod`), the score-only inputs
//! of the pod being scheduled (container images, preferred node affinity) come with it, the
//! queue's `isPodUpdated` reads it, and a `FailedScheduling` status patch compares its
//! conditions. Cluster mode builds a `PodInfo` from the pod's wire form
//! ([`PodInfo::from_wire`]) and keeps the object as the JSON text the watch delivered, decoded
//! on first read, with the score-only inputs decoded beside it (scheduling a pod never decodes
//! it whole); its cache drops both once the pod is bound ([`PodInfo::without_object`]). `simulate`, which holds a file's worth
//! of pods, keeps the decoded objects ([`PodInfo::from_pod`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use thiserror::Error;

use super::gpu::{
    ANNOTATION_GPU_INDEXES, GPU_MILLI_PER_DEVICE, GpuRequest, RESOURCE_GPU, RESOURCE_GPU_MILLI,
};
use super::resource::{DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST, Resource, parse_list};
use super::taints::{Toleration, TolerationOperator};
use super::terms::{
    PodAffinityTerms, SpreadConstraint, parse_pod_affinity, parse_spread_constraints,
};
use super::volumes::{DiskVolume, PodVolumeRefs};
use super::wire::{ContainerImages, PodObject, SpecStatusRef, WireContainer, WirePod, WirePodSpec};
use crate::labels::{Labels, NodeSelector};
use crate::quantity::QuantityError;

/// A pod field that failed to parse, with the field path it came from.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("invalid pod {pod}: field {field}: {source}")]
pub struct PodError {
    /// `namespace/name`.
    pub pod: String,
    /// Field path, e.g. `spec.containers[0].resources.requests[cpu]`.
    pub field: String,
    /// What is wrong with the value.
    pub source: PodFieldError,
}

/// What is wrong with a pod field.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PodFieldError {
    /// A malformed or negative resource quantity.
    #[error(transparent)]
    Quantity(#[from] QuantityError),
    /// A label selector that `metav1.LabelSelectorAsSelector` rejects (the upstream message).
    #[error("{0}")]
    Selector(String),
    /// The spec or status of a pod a watch or a LIST delivered is not pod-shaped JSON (the
    /// decoder's message; [`WirePod::spec_status`]). An API server never sends one.
    #[error("{0}")]
    Decode(String),
}

/// A host port used by a container (`HostPortInfo` key): IP (`0.0.0.0` when unset), protocol
/// (`TCP` when unset) and port (> 0).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HostPort {
    /// Host IP; `0.0.0.0` means every address.
    pub ip: String,
    /// `TCP`, `UDP` or `SCTP`.
    pub protocol: String,
    /// Port number (1..=65535).
    pub port: i32,
}

impl HostPort {
    /// Whether this port conflicts with `other` (`HostPortInfo.CheckConflict`): same protocol and
    /// port, and the same IP or either side `0.0.0.0`.
    pub fn conflicts(&self, other: &HostPort) -> bool {
        self.port == other.port
            && self.protocol == other.protocol
            && (self.ip == other.ip || self.ip == "0.0.0.0" || other.ip == "0.0.0.0")
    }
}

/// The controlling owner of a pod (`metav1.GetControllerOf`: the owner reference with
/// `controller: true`), as SelectorSpread's default selector and NodePreferAvoidPods read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerRef {
    /// `apiVersion`, e.g. `apps/v1`.
    pub api_version: String,
    /// `kind`, e.g. `ReplicaSet`.
    pub kind: String,
    /// The owner's name (same namespace as the pod).
    pub name: String,
    /// The owner's UID.
    pub uid: String,
}

/// A pod with everything the plugins need computed once (`framework.PodInfo` plus the
/// PreFilter states of the resource, port and affinity plugins).
#[derive(Debug, Clone)]
pub struct PodInfo {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// UID (may be empty for pods read from files).
    pub uid: String,
    /// Labels.
    pub labels: Labels,
    /// `spec.priority` (0 when unset).
    pub priority: i32,
    /// `metadata.creationTimestamp`.
    pub creation_timestamp: Option<Timestamp>,
    /// `spec.schedulerName` (`default-scheduler` when unset, as the API server defaults it).
    pub scheduler_name: String,
    /// `spec.nodeName` (empty when unassigned).
    pub node_name: String,
    /// Requests used for fitting: max(sum of containers, max of init containers) + overhead.
    pub requests: Resource,
    /// CPU requested for scoring, millicores, with 100m per container that requests none.
    pub non_zero_milli_cpu: i64,
    /// Memory requested for scoring, bytes, with 200 MiB per container that requests none.
    pub non_zero_memory: i64,
    /// CPU this pod adds when *it* is scored (`calculatePodResourceRequest`, v1.22): as
    /// [`PodInfo::non_zero_milli_cpu`] except that the cpu overhead is added with
    /// `Quantity.Value()` (whole cores, rounded up, counted as millicores), exactly as v1.22
    /// does; once the pod is on a node, its overhead counts in millicores.
    pub score_milli_cpu: i64,
    /// Memory this pod adds when it is scored (`calculatePodResourceRequest`), bytes.
    pub score_memory: i64,
    /// Host ports of all containers (port > 0).
    pub host_ports: Vec<HostPort>,
    /// `spec.nodeSelector`.
    pub node_selector: Labels,
    /// Required node affinity (`requiredDuringSchedulingIgnoredDuringExecution`).
    pub required_node_affinity: Option<NodeSelector>,
    /// Tolerations.
    pub tolerations: Vec<Toleration>,
    /// Disk volumes that can conflict on a node.
    pub disk_volumes: Vec<DiskVolume>,
    /// Claim-backed and inline attachable volumes, for the volume plugins (VolumeBinding,
    /// VolumeZone, the volume limits).
    pub volumes: PodVolumeRefs,
    /// GPU demand (count 0 = none).
    pub gpu: GpuRequest,
    /// GPU devices recorded on the pod (annotation [`ANNOTATION_GPU_INDEXES`]).
    pub gpu_indexes: Option<Vec<u32>>,
    /// True when the pod sets `topologySpreadConstraints` (SelectorSpread then skips it).
    pub has_topology_spread_constraints: bool,
    /// Inter-pod affinity and anti-affinity terms, selectors compiled (InterPodAffinity).
    pub pod_affinity: PodAffinityTerms,
    /// `spec.topologySpreadConstraints`, selectors compiled (PodTopologySpread).
    pub topology_spread_constraints: Vec<SpreadConstraint>,
    /// True when `metadata.deletionTimestamp` is set.
    pub terminating: bool,
    /// `metadata.resourceVersion` (empty when unset, e.g. pods read from files): the version a
    /// Binding, an Event's `regarding` and the read barrier compare.
    pub resource_version: String,
    /// `status.startTime` (preemption's `MoreImportantPod` orders victims by it; `None` stands
    /// for *now*, as `util.GetPodStartTime`).
    pub start_time: Option<Timestamp>,
    /// `status.nominatedNodeName` (empty when unset).
    pub nominated_node_name: String,
    /// `spec.preemptionPolicy` is `Never` (the pod does not preempt).
    pub preempt_never: bool,
    /// The controlling owner reference, if any.
    pub controller: Option<ControllerRef>,
    /// The API object, kept while the pod is pending (see the module docs; decoded, or its
    /// JSON text decoded on first read); none once the cache holds the pod as bound, unless
    /// cluster mode keeps the objects for an extender that is not `nodeCacheCapable` (v1.22
    /// sends it the victims of preemption as full `v1.Pod`s).
    pub object: PodObject,
}

impl PodInfo {
    /// `namespace/name`.
    pub fn key(&self) -> String {
        super::wire::namespaced_key(&self.namespace, &self.name)
    }

    /// The decoded `v1.Pod`, while it is kept ([`PodInfo::object`]).
    pub fn object(&self) -> Option<&core::Pod> {
        self.object.get()
    }

    /// `spec.containers[*].image` in order, `""` for a container without one, while the object
    /// is kept (none otherwise): ImageLocality's input, without decoding the kept text
    /// ([`PodObject::container_images`]).
    pub fn container_images(&self) -> ContainerImages<'_> {
        self.object.container_images()
    }

    /// `spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution` while the
    /// object is kept (empty otherwise): NodeAffinity's score input, without decoding the kept
    /// text ([`PodObject::preferred_node_affinity`]).
    pub fn preferred_node_affinity(&self) -> &[core::PreferredSchedulingTerm] {
        self.object.preferred_node_affinity()
    }

    /// This pod without its API object: what the cache keeps of a bound pod.
    #[must_use]
    pub fn without_object(mut self) -> PodInfo {
        self.object = PodObject::none();
        self
    }

    /// Build from a `v1.Pod`, keeping the object ([`PodInfo::object`]).
    ///
    /// # Errors
    /// [`PodError`] naming the field when a resource quantity is malformed or negative, or a
    /// pod affinity or topology spread label selector does not parse.
    pub fn from_pod(pod: core::Pod) -> Result<PodInfo, PodError> {
        PodInfo::from_arc(Arc::new(pod))
    }

    /// [`PodInfo::from_pod`] of a shared `v1.Pod` (kept as [`PodInfo::object`] without a copy).
    ///
    /// # Errors
    /// As [`PodInfo::from_pod`].
    pub fn from_arc(pod: Arc<core::Pod>) -> Result<PodInfo, PodError> {
        let no_spec = core::PodSpec::default();
        let spec = pod.spec.as_ref().unwrap_or(&no_spec);
        let status = pod.status.as_ref();
        let fields = SpecFields {
            containers: &spec.containers,
            init_containers: spec.init_containers.as_deref().unwrap_or_default(),
            overhead: spec.overhead.as_ref(),
            affinity: spec.affinity.as_ref(),
            tolerations: spec.tolerations.as_deref().unwrap_or_default(),
            volumes: spec.volumes.as_deref().unwrap_or_default(),
            topology_spread_constraints: spec.topology_spread_constraints.as_ref(),
            priority: spec.priority,
            scheduler_name: spec.scheduler_name.as_deref(),
            node_name: spec.node_name.as_deref(),
            node_selector: spec.node_selector.as_ref(),
            preemption_policy: spec.preemption_policy.as_deref(),
            start_time: status.and_then(|s| s.start_time.as_ref()),
            nominated_node_name: status.and_then(|s| s.nominated_node_name.as_deref()),
        };
        let info = build(&pod.metadata, &fields)?;
        Ok(Identity::of(&pod.metadata).into_info(info, PodObject::decoded(pod)))
    }

    /// Build from a pod as a watch or a LIST delivered it ([`WirePod`]: the scheduling fields
    /// decoded, the object's text kept), keeping the object as that text, decoded only if
    /// something reads it ([`PodInfo::object`]). The same fields, defaults and errors as
    /// [`PodInfo::from_pod`] of the whole object.
    ///
    /// # Errors
    /// As [`PodInfo::from_pod`]; also [`PodFieldError::Decode`] (field `spec`) when the
    /// scheduling fields of a pod decoded lazily from its text are not pod-shaped
    /// ([`WirePod::spec_status`]).
    pub fn from_wire(pod: &WirePod) -> Result<PodInfo, PodError> {
        let info = Self::from_wire_fields(&pod.metadata, pod.spec_status())?;
        Ok(Identity::of(&pod.metadata).into_info(info, pod.object()))
    }

    /// [`PodInfo::from_wire`] of a pod the caller is done with: its identity strings and
    /// labels are moved into the `PodInfo` rather than copied (what a watch event's pod
    /// becomes in the cluster-mode handlers). On error the pod is handed back as it was.
    ///
    /// # Errors
    /// As [`PodInfo::from_wire`], with the pod.
    pub fn from_wire_owned(mut pod: WirePod) -> Result<PodInfo, (PodError, WirePod)> {
        let info = {
            let (meta, fields) = pod.metadata_and_spec_status();
            Self::from_wire_fields(meta, fields)
        };
        match info {
            Ok(info) => {
                let object = pod.object();
                Ok(Identity::take(&mut pod.metadata).into_info(info, object))
            }
            Err(e) => Err((e, pod)),
        }
    }

    /// [`build`] of a wire pod's metadata and scheduling fields ([`WirePod::spec_status`]).
    fn from_wire_fields(meta: &ObjectMeta, fields: SpecStatusRef<'_>) -> Result<PodInfo, PodError> {
        let no_spec = WirePodSpec::default();
        let (spec, status) = fields.map_err(|message| PodError {
            pod: super::wire::namespaced_key(
                meta.namespace.as_deref().unwrap_or("default"),
                meta.name.as_deref().unwrap_or_default(),
            ),
            field: "spec".to_string(),
            source: PodFieldError::Decode(message.to_string()),
        })?;
        let spec = spec.unwrap_or(&no_spec);
        let fields = SpecFields {
            containers: &spec.containers,
            init_containers: spec.init_containers.as_deref().unwrap_or_default(),
            overhead: spec.overhead.as_ref(),
            affinity: spec.affinity.as_ref(),
            tolerations: spec.tolerations.as_deref().unwrap_or_default(),
            volumes: spec.volumes.as_deref().unwrap_or_default(),
            topology_spread_constraints: spec.topology_spread_constraints.as_ref(),
            priority: spec.priority,
            scheduler_name: spec.scheduler_name.as_deref(),
            node_name: spec.node_name.as_deref(),
            node_selector: spec.node_selector.as_ref(),
            preemption_policy: spec.preemption_policy.as_deref(),
            start_time: status.and_then(|s| s.start_time.as_ref()),
            nominated_node_name: status.and_then(|s| s.nominated_node_name.as_deref()),
        };
        build(meta, &fields)
    }
}

/// The identity of a pod (namespace, name, uid, labels, resourceVersion), which [`build`]
/// leaves empty: copied from a shared object's metadata, or moved out of a wire pod's.
struct Identity {
    namespace: String,
    name: String,
    uid: String,
    labels: Labels,
    resource_version: String,
}

impl Identity {
    /// Copied from `meta`.
    fn of(meta: &ObjectMeta) -> Identity {
        Identity {
            namespace: meta.namespace.clone().unwrap_or_else(|| "default".into()),
            name: meta.name.clone().unwrap_or_default(),
            uid: meta.uid.clone().unwrap_or_default(),
            labels: meta.labels.clone().unwrap_or_default(),
            resource_version: meta.resource_version.clone().unwrap_or_default(),
        }
    }

    /// Moved out of `meta` (those fields are left unset there).
    fn take(meta: &mut ObjectMeta) -> Identity {
        Identity {
            namespace: meta.namespace.take().unwrap_or_else(|| "default".into()),
            name: meta.name.take().unwrap_or_default(),
            uid: meta.uid.take().unwrap_or_default(),
            labels: meta.labels.take().unwrap_or_default(),
            resource_version: meta.resource_version.take().unwrap_or_default(),
        }
    }

    /// `info` (as [`build`] made it) with this identity.
    fn into_info(self, info: PodInfo, object: PodObject) -> PodInfo {
        PodInfo {
            namespace: self.namespace,
            name: self.name,
            uid: self.uid,
            labels: self.labels,
            resource_version: self.resource_version,
            object,
            ..info
        }
    }
}

/// A container as [`build`] reads it: its requests and its ports (`v1.Container` or the wire
/// form).
trait ContainerFields {
    fn requests(&self) -> Option<&BTreeMap<String, Quantity>>;
    fn ports(&self) -> &[core::ContainerPort];
}

impl ContainerFields for core::Container {
    fn requests(&self) -> Option<&BTreeMap<String, Quantity>> {
        self.resources.as_ref()?.requests.as_ref()
    }
    fn ports(&self) -> &[core::ContainerPort] {
        self.ports.as_deref().unwrap_or_default()
    }
}

impl ContainerFields for WireContainer {
    fn requests(&self) -> Option<&BTreeMap<String, Quantity>> {
        self.resources.as_ref()?.requests.as_ref()
    }
    fn ports(&self) -> &[core::ContainerPort] {
        self.ports.as_deref().unwrap_or_default()
    }
}

/// The spec and status fields [`build`] reads, borrowed from a `v1.Pod` or a [`WirePod`].
struct SpecFields<'a, C> {
    containers: &'a [C],
    init_containers: &'a [C],
    overhead: Option<&'a BTreeMap<String, Quantity>>,
    affinity: Option<&'a core::Affinity>,
    tolerations: &'a [core::Toleration],
    volumes: &'a [core::Volume],
    topology_spread_constraints: Option<&'a Vec<core::TopologySpreadConstraint>>,
    priority: Option<i32>,
    scheduler_name: Option<&'a str>,
    node_name: Option<&'a str>,
    node_selector: Option<&'a BTreeMap<String, String>>,
    preemption_policy: Option<&'a str>,
    start_time: Option<&'a Time>,
    nominated_node_name: Option<&'a str>,
}

/// The compact [`PodInfo`] (no object) of a pod's metadata and scheduling fields.
fn build<C: ContainerFields>(
    meta: &ObjectMeta,
    spec: &SpecFields<'_, C>,
) -> Result<PodInfo, PodError> {
    let namespace = meta.namespace.as_deref().unwrap_or("default");
    let name = meta.name.as_deref().unwrap_or_default();
    let key = || format!("{namespace}/{name}");
    let err = |(field, source): (String, QuantityError)| PodError {
        pod: key(),
        field,
        source: source.into(),
    };

    let mut requests = Resource::default();
    let mut non0_cpu = 0i64;
    let mut non0_mem = 0i64;
    let mut host_ports = Vec::new();
    for (i, c) in spec.containers.iter().enumerate() {
        let list = parse_list(c.requests(), || {
            format!("spec.containers[{i}].resources.requests")
        })
        .map_err(err)?;
        let (mut cpu, mut mem) = (None, None);
        for (n, milli, value) in &list {
            requests.add_named(n, *milli, *value);
            if *n == "cpu" {
                cpu = Some(*milli);
            } else if *n == "memory" {
                mem = Some(*value);
            }
        }
        non0_cpu = non0_cpu.saturating_add(cpu.unwrap_or(DEFAULT_MILLI_CPU_REQUEST));
        non0_mem = non0_mem.saturating_add(mem.unwrap_or(DEFAULT_MEMORY_REQUEST));
        for p in c.ports() {
            if let Some(hp) = p.host_port.filter(|hp| *hp > 0) {
                host_ports.push(HostPort {
                    ip: p
                        .host_ip
                        .clone()
                        .filter(|s| !s.is_empty())
                        .unwrap_or_else(|| "0.0.0.0".into()),
                    protocol: p
                        .protocol
                        .clone()
                        .filter(|s| !s.is_empty())
                        .unwrap_or_else(|| "TCP".into()),
                    port: hp,
                });
            }
        }
    }
    for (i, c) in spec.init_containers.iter().enumerate() {
        let list = parse_list(c.requests(), || {
            format!("spec.initContainers[{i}].resources.requests")
        })
        .map_err(err)?;
        let (mut cpu, mut mem) = (None, None);
        for (n, milli, value) in &list {
            requests.max_named(n, *milli, *value);
            if *n == "cpu" {
                cpu = Some(*milli);
            } else if *n == "memory" {
                mem = Some(*value);
            }
        }
        non0_cpu = non0_cpu.max(cpu.unwrap_or(DEFAULT_MILLI_CPU_REQUEST));
        non0_mem = non0_mem.max(mem.unwrap_or(DEFAULT_MEMORY_REQUEST));
    }
    let overhead = parse_list(spec.overhead, || "spec.overhead".to_string()).map_err(err)?;
    let (mut score_cpu, mut score_mem) = (non0_cpu, non0_mem);
    for (n, _, value) in &overhead {
        if *n == "cpu" {
            score_cpu = score_cpu.saturating_add(*value);
        } else if *n == "memory" {
            score_mem = score_mem.saturating_add(*value);
        }
    }
    for (n, milli, value) in &overhead {
        requests.add_named(n, *milli, *value);
        if *n == "cpu" {
            non0_cpu = non0_cpu.saturating_add(*milli);
        } else if *n == "memory" {
            non0_mem = non0_mem.saturating_add(*value);
        }
    }

    let required_node_affinity = spec
        .affinity
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|na| {
            na.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .map(NodeSelector::compile);

    let tolerations = spec
        .tolerations
        .iter()
        .map(|t| Toleration {
            key: t.key.clone().unwrap_or_default(),
            operator: match t.operator.as_deref() {
                None | Some("") | Some("Equal") => TolerationOperator::Equal,
                Some("Exists") => TolerationOperator::Exists,
                Some(_) => TolerationOperator::Invalid,
            },
            value: t.value.clone().unwrap_or_default(),
            effect: t.effect.clone().filter(|e| !e.is_empty()),
        })
        .collect();

    let disk_volumes = spec
        .volumes
        .iter()
        .filter_map(|v| {
            if let Some(g) = &v.gce_persistent_disk {
                Some(DiskVolume::GcePd {
                    pd_name: g.pd_name.clone(),
                    read_only: g.read_only.unwrap_or(false),
                })
            } else if let Some(a) = &v.aws_elastic_block_store {
                Some(DiskVolume::AwsEbs {
                    volume_id: a.volume_id.clone(),
                })
            } else if let Some(r) = &v.rbd {
                Some(DiskVolume::Rbd {
                    monitors: r.monitors.clone(),
                    pool: r.pool.clone().unwrap_or_else(|| "rbd".into()),
                    image: r.image.clone(),
                    read_only: r.read_only.unwrap_or(false),
                })
            } else {
                v.iscsi.as_ref().map(|i| DiskVolume::Iscsi {
                    iqn: i.iqn.clone(),
                    read_only: i.read_only.unwrap_or(false),
                })
            }
        })
        .collect();

    let selector_err = |(field, message): (String, String)| PodError {
        pod: key(),
        field,
        source: PodFieldError::Selector(message),
    };
    let pod_affinity = parse_pod_affinity(namespace, spec.affinity).map_err(selector_err)?;
    let topology_spread_constraints =
        parse_spread_constraints(spec.topology_spread_constraints).map_err(selector_err)?;
    let volumes = PodVolumeRefs::parse(name, spec.volumes);

    let whole = requests.scalar(RESOURCE_GPU);
    let share = requests.scalar(RESOURCE_GPU_MILLI);
    let gpu = if whole > 0 {
        GpuRequest {
            count: u32::try_from(whole).unwrap_or(u32::MAX),
            milli: GPU_MILLI_PER_DEVICE,
        }
    } else if share > 0 {
        GpuRequest {
            count: 1,
            milli: u32::try_from(share.min(i64::from(GPU_MILLI_PER_DEVICE))).unwrap_or(0),
        }
    } else {
        GpuRequest::default()
    };
    let gpu_indexes = meta
        .annotations
        .as_ref()
        .and_then(|a| a.get(ANNOTATION_GPU_INDEXES))
        .map(|s| {
            s.split(',')
                .filter_map(|x| x.trim().parse::<u32>().ok())
                .collect::<Vec<_>>()
        });

    let controller = meta
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
        .map(|o| ControllerRef {
            api_version: o.api_version.clone(),
            kind: o.kind.clone(),
            name: o.name.clone(),
            uid: o.uid.clone(),
        });
    Ok(PodInfo {
        // The identity is filled in by the caller ([`Identity`]).
        uid: String::new(),
        labels: Labels::new(),
        priority: spec.priority.unwrap_or(0),
        creation_timestamp: meta.creation_timestamp.as_ref().map(|t| t.0),
        scheduler_name: spec
            .scheduler_name
            .filter(|s| !s.is_empty())
            .unwrap_or("default-scheduler")
            .to_string(),
        node_name: spec.node_name.unwrap_or_default().to_string(),
        requests,
        non_zero_milli_cpu: non0_cpu,
        non_zero_memory: non0_mem,
        score_milli_cpu: score_cpu,
        score_memory: score_mem,
        host_ports,
        node_selector: spec.node_selector.cloned().unwrap_or_default(),
        required_node_affinity,
        tolerations,
        disk_volumes,
        volumes,
        gpu,
        gpu_indexes,
        has_topology_spread_constraints: spec
            .topology_spread_constraints
            .is_some_and(|c| !c.is_empty()),
        pod_affinity,
        topology_spread_constraints,
        terminating: meta.deletion_timestamp.is_some(),
        resource_version: String::new(),
        start_time: spec.start_time.map(|t| t.0),
        nominated_node_name: spec.nominated_node_name.unwrap_or_default().to_string(),
        preempt_never: spec.preemption_policy == Some("Never"),
        controller,
        object: PodObject::none(),
        namespace: String::new(),
        name: String::new(),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};

    use super::*;

    /// A pod using every field the model reads, as JSON.
    fn rich_pod() -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": "rich", "namespace": "ns", "uid": "u-1", "resourceVersion": "77",
                "creationTimestamp": "2026-01-02T03:04:05Z",
                "deletionTimestamp": "2026-01-02T03:05:05Z",
                "labels": {"app": "web", "tier": "front"},
                "annotations": {ANNOTATION_GPU_INDEXES: "1, 3", "other": "x"},
                "ownerReferences": [
                    {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u-rs", "controller": true}
                ],
                "managedFields": [{"manager": "kubectl", "operation": "Update"}]
            },
            "spec": {
                "containers": [
                    {"name": "a", "image": "nginx:1", "command": ["sh"], "env": [{"name": "E", "value": "v"}],
                     "resources": {"requests": {"cpu": "250m", "memory": "1Gi", "nvidia.com/gpu": "2"},
                                   "limits": {"cpu": "1"}},
                     "ports": [{"containerPort": 80, "hostPort": 8080},
                               {"containerPort": 53, "hostPort": 53, "protocol": "UDP", "hostIP": "10.0.0.1"},
                               {"containerPort": 90}]},
                    {"name": "b", "image": "busybox"}
                ],
                "initContainers": [
                    {"name": "i", "resources": {"requests": {"cpu": "2", "ephemeral-storage": "1Gi"}}}
                ],
                "overhead": {"cpu": "1500m", "memory": "10Mi"},
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}
                        ]},
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {"weight": 3, "preference": {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}}
                        ]
                    },
                    "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}
                    ]},
                    "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 5, "podAffinityTerm": {"labelSelector": {"matchExpressions": [
                            {"key": "app", "operator": "NotIn", "values": ["x"]}]},
                            "namespaces": ["other"], "topologyKey": "kubernetes.io/hostname"}}
                    ]}
                },
                "tolerations": [
                    {"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"},
                    {"operator": "Exists"},
                    {"key": "odd", "operator": "Sometimes", "effect": ""}
                ],
                "volumes": [
                    {"name": "g", "gcePersistentDisk": {"pdName": "pd", "readOnly": true}},
                    {"name": "e", "awsElasticBlockStore": {"volumeID": "vol-1"}},
                    {"name": "r", "rbd": {"monitors": ["m1"], "image": "img"}},
                    {"name": "s", "iscsi": {"targetPortal": "t", "iqn": "iqn.x", "lun": 0}},
                    {"name": "c", "persistentVolumeClaim": {"claimName": "claim"}},
                    {"name": "cm", "configMap": {"name": "cfg"}}
                ],
                "topologySpreadConstraints": [
                    {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                     "labelSelector": {"matchLabels": {"app": "web"}}}
                ],
                "priority": 1000,
                "schedulerName": "mine",
                "nodeName": "n1",
                "nodeSelector": {"disk": "ssd"},
                "preemptionPolicy": "Never"
            },
            "status": {
                "phase": "Pending",
                "startTime": "2026-01-02T03:04:06Z",
                "nominatedNodeName": "n2",
                "conditions": [{"type": "PodScheduled", "status": "False"}]
            }
        })
    }

    /// The wire decode ([`PodInfo::from_wire`]) gives the very PodInfo the whole object's
    /// ([`PodInfo::from_pod`]) does, every field, for a pod using everything the model reads, a
    /// bare one, and one without a spec; and the same error for a malformed one. The whole
    /// object is decoded from the kept text on demand, equal to the one decoded at once.
    #[test]
    fn wire_decode_matches_the_whole_object() {
        let bare = serde_json::json!({"metadata": {"name": "bare"}, "spec": {"containers": [{"name": "c"}]}});
        let no_spec = serde_json::json!({"metadata": {"name": "nospec", "namespace": "x"}});
        for v in [rich_pod(), bare, no_spec] {
            let text = v.to_string();
            let whole: core::Pod = serde_json::from_value(v).unwrap();
            let wire = WirePod::from_json(&text).unwrap();
            let a = PodInfo::from_pod(whole.clone()).unwrap();
            let b = PodInfo::from_wire(&wire).unwrap();
            assert_eq!(b.object(), Some(&whole));
            assert_eq!(
                format!("{:?}", a.without_object()),
                format!("{:?}", b.without_object())
            );
        }
        let mut bad = rich_pod();
        bad["spec"]["initContainers"][0]["resources"]["requests"]["cpu"] = "2x".into();
        let whole: core::Pod = serde_json::from_value(bad.clone()).unwrap();
        let wire = WirePod::from_json(&bad.to_string()).unwrap();
        let (a, b) = (PodInfo::from_pod(whole), PodInfo::from_wire(&wire));
        assert!(a.is_err());
        assert_eq!(a.unwrap_err(), b.unwrap_err());
        let mut bad = rich_pod();
        bad["spec"]["topologySpreadConstraints"][0]["labelSelector"] =
            serde_json::json!({"matchExpressions": [{"key": "k", "operator": "In"}]});
        let whole: core::Pod = serde_json::from_value(bad.clone()).unwrap();
        let wire = WirePod::from_json(&bad.to_string()).unwrap();
        let (a, b) = (PodInfo::from_pod(whole), PodInfo::from_wire(&wire));
        assert!(a.is_err());
        assert_eq!(a.unwrap_err(), b.unwrap_err());
    }

    /// [`PodInfo::from_wire_owned`] gives what [`PodInfo::from_wire`] does (every field, the
    /// object's text kept), for pods decoded at once and lazily (as a watch delivers them);
    /// a malformed pod comes back as it was, metadata and text, with the same error.
    #[test]
    fn from_wire_owned_matches_from_wire_and_hands_back_a_malformed_pod() {
        let bare = serde_json::json!({"metadata": {"name": "bare"}, "spec": {"containers": [{"name": "c"}]}});
        let no_meta = serde_json::json!({"spec": {"containers": [{"name": "c"}]}});
        for v in [rich_pod(), bare, no_meta] {
            let text = v.to_string();
            for wire in [
                WirePod::from_json(&text).unwrap(),
                serde_json::from_str::<WirePod>(&text).unwrap(),
            ] {
                let a = PodInfo::from_wire(&wire).unwrap();
                let b = PodInfo::from_wire_owned(wire).unwrap();
                assert_eq!(b.object(), a.object());
                assert!(b.object().is_some());
                assert_eq!(
                    format!("{:?}", a.without_object()),
                    format!("{:?}", b.without_object())
                );
            }
        }
        let mut bad = rich_pod();
        bad["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "-1".into();
        let not_pod_shaped =
            serde_json::json!({"metadata": {"name": "n", "uid": "u"}, "spec": {"containers": 7}});
        for v in [bad, not_pod_shaped] {
            let text = v.to_string();
            let wire = serde_json::from_str::<WirePod>(&text).unwrap();
            let want = PodInfo::from_wire(&wire).unwrap_err();
            let (e, back) = PodInfo::from_wire_owned(wire.clone()).unwrap_err();
            assert_eq!(e, want);
            assert_eq!(back.metadata, wire.metadata);
            assert_eq!(back.object().get(), wire.object().get());
            assert_eq!(back.spec_status().err(), wire.spec_status().err());
        }
    }

    /// The score-only inputs (container images, preferred node affinity) read from the wire
    /// form equal those of the whole object, for a pod with both (a container without an image
    /// among them), a bare one and one without a spec; reading them leaves the kept text
    /// undecoded; a pod without its object has none.
    #[test]
    fn score_inputs_come_without_decoding_the_object() {
        let mut rich = rich_pod();
        rich["spec"]["containers"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::json!({"name": "no-image"}));
        let bare = serde_json::json!({"metadata": {"name": "bare"}, "spec": {"containers": [{"name": "c"}]}});
        let no_spec = serde_json::json!({"metadata": {"name": "nospec", "namespace": "x"}});
        for v in [rich, bare, no_spec] {
            let text = v.to_string();
            let whole: core::Pod = serde_json::from_value(v).unwrap();
            let a = PodInfo::from_pod(whole.clone()).unwrap();
            let b = PodInfo::from_wire(&WirePod::from_json(&text).unwrap()).unwrap();
            // As a watch delivers it: the scheduling fields decoded on first use.
            let c = PodInfo::from_wire(&serde_json::from_str::<WirePod>(&text).unwrap()).unwrap();
            let images: Vec<String> = whole
                .spec
                .iter()
                .flat_map(|s| &s.containers)
                .map(|c| c.image.clone().unwrap_or_default())
                .collect();
            let preferred = whole
                .spec
                .as_ref()
                .and_then(|s| s.affinity.as_ref())
                .and_then(|a| a.node_affinity.as_ref())
                .and_then(|n| {
                    n.preferred_during_scheduling_ignored_during_execution
                        .clone()
                })
                .unwrap_or_default();
            for info in [&a, &b, &c] {
                assert_eq!(info.container_images().len(), images.len());
                assert_eq!(info.container_images().collect::<Vec<_>>(), images);
                assert_eq!(info.preferred_node_affinity(), &preferred[..]);
            }
            assert!(!b.object.is_decoded(), "{text}");
            assert!(!c.object.is_decoded(), "{text}");
            assert_eq!(b.object(), Some(&whole));
            assert_eq!(c.object(), Some(&whole));
            let b = b.without_object();
            assert_eq!(b.container_images().count(), 0);
            assert!(b.preferred_node_affinity().is_empty());
        }
        let rich =
            PodInfo::from_wire(&WirePod::from_json(&rich_pod().to_string()).unwrap()).unwrap();
        assert_eq!(
            rich.container_images().collect::<Vec<_>>(),
            ["nginx:1", "busybox"]
        );
        assert_eq!(rich.preferred_node_affinity().len(), 1);
    }

    /// The identity and status fields the controller and preemption read are decoded into the
    /// compact fields, so that a pod without its object ([`PodInfo::without_object`]) loses
    /// nothing scheduling reads.
    #[test]
    fn compact_fields_outlive_the_object() {
        let start: Timestamp = "2026-01-02T03:04:05Z".parse().unwrap();
        let owner = |name: &str, controller: Option<bool>| OwnerReference {
            api_version: "apps/v1".into(),
            kind: "ReplicaSet".into(),
            name: name.into(),
            uid: format!("uid-{name}"),
            controller,
            ..Default::default()
        };
        let pod = core::Pod {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some("p".into()),
                namespace: Some("ns".into()),
                uid: Some("u1".into()),
                resource_version: Some("42".into()),
                owner_references: Some(vec![owner("other", None), owner("rs", Some(true))]),
                ..Default::default()
            },
            spec: Some(core::PodSpec {
                preemption_policy: Some("Never".into()),
                ..Default::default()
            }),
            status: Some(core::PodStatus {
                start_time: Some(Time(start)),
                nominated_node_name: Some("n9".into()),
                ..Default::default()
            }),
        };
        let info = PodInfo::from_pod(pod).unwrap();
        assert!(info.object().is_some());
        let info = info.without_object();
        assert!(info.object().is_none());
        assert_eq!(info.key(), "ns/p");
        assert_eq!(info.uid, "u1");
        assert_eq!(info.resource_version, "42");
        assert_eq!(info.start_time, Some(start));
        assert_eq!(info.nominated_node_name, "n9");
        assert!(info.preempt_never);
        assert_eq!(
            info.controller,
            Some(ControllerRef {
                api_version: "apps/v1".into(),
                kind: "ReplicaSet".into(),
                name: "rs".into(),
                uid: "uid-rs".into(),
            })
        );
        let bare = PodInfo::from_pod(core::Pod::default()).unwrap();
        assert_eq!(
            (
                bare.resource_version.as_str(),
                bare.start_time,
                bare.preempt_never
            ),
            ("", None, false)
        );
        assert!(bare.controller.is_none() && bare.nominated_node_name.is_empty());
    }
}
