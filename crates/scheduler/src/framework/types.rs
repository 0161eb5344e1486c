//! The scheduler's view of pods and nodes: [`PodInfo`] (a pod with its requests, ports,
//! affinity and tolerations computed once) and [`NodeInfo`] (a node with what is allocatable
//! and what its pods already request).
//!
//! Follows `pkg/scheduler/framework/types.go` (v1.22): `Resource`, `NodeInfo.Requested`,
//! `NodeInfo.NonZeroRequested`, `NodeInfo.UsedPorts`, `calculateResource`; and
//! `pkg/scheduler/util/non_zero.go` for the scoring-only defaults.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::jiff::Timestamp;
use thiserror::Error;

use super::topology_terms::{
    PodAffinityTerms, SpreadConstraint, parse_pod_affinity, parse_spread_constraints,
};
use crate::labels::{Labels, NodeSelector};
use crate::quantity::{self, QuantityError};

/// Milli-CPU counted for a container that requests no cpu, in scoring only
/// (`schedutil.DefaultMilliCPURequest`).
pub const DEFAULT_MILLI_CPU_REQUEST: i64 = 100;
/// Memory counted for a container that requests no memory, in scoring only
/// (`schedutil.DefaultMemoryRequest`, 200 MiB).
pub const DEFAULT_MEMORY_REQUEST: i64 = 200 * 1024 * 1024;

/// Extended resource for whole GPUs (count of devices).
pub const RESOURCE_GPU: &str = "nvidia.com/gpu";
/// Extended resource for a share of one GPU, in milli-GPU (1000 = a whole device).
pub const RESOURCE_GPU_MILLI: &str = "alibabacloud.com/gpu-milli";
/// Node label naming the GPU model (`P100`, `V100M16`, ...).
pub const LABEL_GPU_MODEL: &str = "alibabacloud.com/gpu-card-model";
/// Pod annotation recording the GPU device indexes chosen for it (`"0,3"`).
pub const ANNOTATION_GPU_INDEXES: &str = "mini-scheduler.io/gpu-indexes";
/// Milli-GPU of one device.
pub const GPU_MILLI_PER_DEVICE: u32 = 1000;

/// Sums saturate at `i64::MAX` (a request that large fits no node) instead of wrapping.
///
/// Amounts of resources: cpu in millicores, memory and ephemeral-storage in bytes, a pod count,
/// and scalar resources (hugepages-*, extended resources such as `nvidia.com/gpu`, attachable
/// volumes) by name. Mirrors `framework.Resource`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resource {
    /// CPU in millicores.
    pub milli_cpu: i64,
    /// Memory in bytes.
    pub memory: i64,
    /// Ephemeral storage in bytes.
    pub ephemeral_storage: i64,
    /// Pod count (only meaningful for allocatable).
    pub allowed_pod_number: i64,
    /// Scalar resources by name, kept sorted by name.
    pub scalar: Vec<(String, i64)>,
}

/// `v1helper.IsScalarResourceName`: extended, hugepages, prefixed native and attachable volume
/// resources.
pub fn is_scalar_resource_name(name: &str) -> bool {
    is_extended_resource_name(name)
        || name.starts_with("hugepages-")
        || name.contains("kubernetes.io/")
        || name.starts_with("attachable-volumes-")
}

/// `v1helper.IsExtendedResourceName`: a domain-prefixed name outside `kubernetes.io/` that does
/// not start with `requests.`.
pub fn is_extended_resource_name(name: &str) -> bool {
    name.contains('/') && !name.contains("kubernetes.io/") && !name.starts_with("requests.")
}

impl Resource {
    /// The amount of scalar resource `name` (0 when absent).
    pub fn scalar(&self, name: &str) -> i64 {
        self.scalar
            .iter()
            .find(|(n, _)| n == name)
            .map_or(0, |(_, v)| *v)
    }

    fn scalar_mut(&mut self, name: &str) -> &mut i64 {
        let pos = match self.scalar.binary_search_by(|(n, _)| n.as_str().cmp(name)) {
            Ok(p) => p,
            Err(p) => {
                self.scalar.insert(p, (name.to_string(), 0));
                p
            }
        };
        &mut self.scalar[pos].1
    }

    /// Set scalar resource `name` to `v`.
    pub fn set_scalar(&mut self, name: &str, v: i64) {
        *self.scalar_mut(name) = v;
    }

    /// Add one named quantity (the `Resource.Add` switch). Unknown non-scalar names are ignored,
    /// as upstream does.
    fn add_named(&mut self, name: &str, milli: i64, value: i64) {
        match name {
            "cpu" => self.milli_cpu = self.milli_cpu.saturating_add(milli),
            "memory" => self.memory = self.memory.saturating_add(value),
            "ephemeral-storage" => {
                self.ephemeral_storage = self.ephemeral_storage.saturating_add(value)
            }
            "pods" => self.allowed_pod_number = self.allowed_pod_number.saturating_add(value),
            n if is_scalar_resource_name(n) => {
                let s = self.scalar_mut(n);
                *s = s.saturating_add(value);
            }
            _ => {}
        }
    }

    fn max_named(&mut self, name: &str, milli: i64, value: i64) {
        match name {
            "cpu" => self.milli_cpu = self.milli_cpu.max(milli),
            "memory" => self.memory = self.memory.max(value),
            "ephemeral-storage" => self.ephemeral_storage = self.ephemeral_storage.max(value),
            "pods" => self.allowed_pod_number = self.allowed_pod_number.max(value),
            n if is_scalar_resource_name(n) => {
                let s = self.scalar_mut(n);
                *s = (*s).max(value);
            }
            _ => {}
        }
    }

    /// Add `other` into `self` (all fields).
    pub fn add(&mut self, other: &Resource) {
        self.milli_cpu = self.milli_cpu.saturating_add(other.milli_cpu);
        self.memory = self.memory.saturating_add(other.memory);
        self.ephemeral_storage = self
            .ephemeral_storage
            .saturating_add(other.ephemeral_storage);
        self.allowed_pod_number = self
            .allowed_pod_number
            .saturating_add(other.allowed_pod_number);
        for (n, v) in &other.scalar {
            let s = self.scalar_mut(n);
            *s = s.saturating_add(*v);
        }
    }

    /// Subtract `other` from `self` (all fields).
    pub fn sub(&mut self, other: &Resource) {
        self.milli_cpu = self.milli_cpu.saturating_sub(other.milli_cpu);
        self.memory = self.memory.saturating_sub(other.memory);
        self.ephemeral_storage = self
            .ephemeral_storage
            .saturating_sub(other.ephemeral_storage);
        self.allowed_pod_number = self
            .allowed_pod_number
            .saturating_sub(other.allowed_pod_number);
        for (n, v) in &other.scalar {
            let s = self.scalar_mut(n);
            *s = s.saturating_sub(*v);
        }
    }

    /// True when nothing is requested (`cpu`, `memory`, `ephemeral-storage` zero and no scalar
    /// entry at all, even a zero one: v1.22 `fitsRequest` tests `len(ScalarResources) == 0`).
    pub fn is_zero_request(&self) -> bool {
        self.milli_cpu == 0
            && self.memory == 0
            && self.ephemeral_storage == 0
            && self.scalar.is_empty()
    }
}

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
}

/// A quantity that failed to parse on a node.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("invalid node {node}: field {field}: {source}")]
pub struct NodeError {
    /// Node name.
    pub node: String,
    /// Field path, e.g. `status.allocatable[cpu]`.
    pub field: String,
    /// What is wrong with the value.
    pub source: QuantityError,
}

/// Parsed `(name, milli value, value)` triples of a resource list.
type ParsedList = Vec<(String, i64, i64)>;

fn parse_list(
    list: Option<&BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>,
    field: &str,
) -> Result<ParsedList, (String, QuantityError)> {
    let mut out = Vec::new();
    for (name, q) in list.into_iter().flatten() {
        let f = || format!("{field}[{name}]");
        let value = quantity::value(&q.0).map_err(|e| (f(), e))?;
        let milli = if name == "cpu" {
            quantity::milli_value(&q.0).map_err(|e| (f(), e))?
        } else {
            value.saturating_mul(1000)
        };
        if value < 0 || milli < 0 {
            return Err((f(), QuantityError::Negative(q.0.clone())));
        }
        out.push((name.clone(), milli, value));
    }
    Ok(out)
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

/// A taint or toleration effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaintEffect {
    /// `NoSchedule`.
    NoSchedule,
    /// `PreferNoSchedule`.
    PreferNoSchedule,
    /// `NoExecute`.
    NoExecute,
}

impl TaintEffect {
    fn parse(s: &str) -> Option<TaintEffect> {
        match s {
            "NoSchedule" => Some(TaintEffect::NoSchedule),
            "PreferNoSchedule" => Some(TaintEffect::PreferNoSchedule),
            "NoExecute" => Some(TaintEffect::NoExecute),
            _ => None,
        }
    }
}

/// A node taint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taint {
    /// Taint key.
    pub key: String,
    /// Taint value (may be empty).
    pub value: String,
    /// Effect; unknown effects are kept as `None` and never block scheduling.
    pub effect: Option<TaintEffect>,
}

/// A pod toleration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toleration {
    /// Key; empty with `Exists` tolerates every taint.
    pub key: String,
    /// `Exists` when true, `Equal` (the default) otherwise; unknown operators tolerate nothing.
    pub operator: TolerationOperator,
    /// Value compared under `Equal`.
    pub value: String,
    /// Effect; `None` matches every effect.
    pub effect: Option<String>,
}

/// Toleration operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TolerationOperator {
    /// `Equal` or empty.
    Equal,
    /// `Exists`.
    Exists,
    /// Anything else: tolerates nothing.
    Invalid,
}

impl Toleration {
    /// `Toleration.ToleratesTaint` (k8s.io/api/core/v1/toleration.go).
    pub fn tolerates(&self, taint: &Taint) -> bool {
        if let Some(e) = &self.effect {
            let te = match taint.effect {
                Some(TaintEffect::NoSchedule) => "NoSchedule",
                Some(TaintEffect::PreferNoSchedule) => "PreferNoSchedule",
                Some(TaintEffect::NoExecute) => "NoExecute",
                None => "",
            };
            if e != te {
                return false;
            }
        }
        if !self.key.is_empty() && self.key != taint.key {
            return false;
        }
        match self.operator {
            TolerationOperator::Equal => self.value == taint.value,
            TolerationOperator::Exists => true,
            TolerationOperator::Invalid => false,
        }
    }
}

/// A volume that can conflict with the same disk used by another pod on the node
/// (`VolumeRestrictions`, `isVolumeConflict`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiskVolume {
    /// GCE persistent disk by `pdName`.
    GcePd {
        /// Disk name.
        pd_name: String,
        /// Mounted read-only.
        read_only: bool,
    },
    /// AWS EBS by `volumeID`.
    AwsEbs {
        /// Volume ID.
        volume_id: String,
    },
    /// RBD image.
    Rbd {
        /// Ceph monitors.
        monitors: Vec<String>,
        /// Pool (`rbd` when unset, the API default).
        pool: String,
        /// Image.
        image: String,
        /// Mounted read-only.
        read_only: bool,
    },
    /// iSCSI target by IQN.
    Iscsi {
        /// Target IQN.
        iqn: String,
        /// Mounted read-only.
        read_only: bool,
    },
}

impl DiskVolume {
    /// Whether mounting `self` conflicts with `existing` already mounted on the node.
    pub fn conflicts(&self, existing: &DiskVolume) -> bool {
        match (self, existing) {
            (
                DiskVolume::GcePd { pd_name, read_only },
                DiskVolume::GcePd {
                    pd_name: e,
                    read_only: er,
                },
            ) => pd_name == e && !(*read_only && *er),
            (DiskVolume::AwsEbs { volume_id }, DiskVolume::AwsEbs { volume_id: e }) => {
                volume_id == e
            }
            (
                DiskVolume::Rbd {
                    monitors,
                    pool,
                    image,
                    read_only,
                },
                DiskVolume::Rbd {
                    monitors: em,
                    pool: ep,
                    image: ei,
                    read_only: er,
                },
            ) => {
                monitors.iter().any(|m| em.contains(m))
                    && pool == ep
                    && image == ei
                    && !(*read_only && *er)
            }
            (
                DiskVolume::Iscsi { iqn, read_only },
                DiskVolume::Iscsi {
                    iqn: e,
                    read_only: er,
                },
            ) => iqn == e && !(*read_only && *er),
            _ => false,
        }
    }
}

/// GPU demand of a pod: `count` devices with `milli` milli-GPU on each (1000 = whole devices).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GpuRequest {
    /// Number of devices.
    pub count: u32,
    /// Milli-GPU needed on each device (1..=1000).
    pub milli: u32,
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
    pub volumes: crate::volume::PodVolumeRefs,
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
    /// The pod object as read.
    pub pod: Arc<core::Pod>,
}

impl PodInfo {
    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// Build from a `v1.Pod`.
    ///
    /// # Errors
    /// [`PodError`] naming the field when a resource quantity is malformed or negative, or a
    /// pod affinity or topology spread label selector does not parse.
    pub fn from_pod(pod: core::Pod) -> Result<PodInfo, PodError> {
        let pod = Arc::new(pod);
        let meta = &pod.metadata;
        let namespace = meta.namespace.clone().unwrap_or_else(|| "default".into());
        let name = meta.name.clone().unwrap_or_default();
        let key = format!("{namespace}/{name}");
        let err = |(field, source): (String, QuantityError)| PodError {
            pod: key.clone(),
            field,
            source: source.into(),
        };
        let spec = pod.spec.clone().unwrap_or_default();

        let mut requests = Resource::default();
        let mut non0_cpu = 0i64;
        let mut non0_mem = 0i64;
        let mut host_ports = Vec::new();
        for (i, c) in spec.containers.iter().enumerate() {
            let list = parse_list(
                c.resources.as_ref().and_then(|r| r.requests.as_ref()),
                &format!("spec.containers[{i}].resources.requests"),
            )
            .map_err(err)?;
            let (mut cpu, mut mem) = (None, None);
            for (n, milli, value) in &list {
                requests.add_named(n, *milli, *value);
                if n == "cpu" {
                    cpu = Some(*milli);
                } else if n == "memory" {
                    mem = Some(*value);
                }
            }
            non0_cpu = non0_cpu.saturating_add(cpu.unwrap_or(DEFAULT_MILLI_CPU_REQUEST));
            non0_mem = non0_mem.saturating_add(mem.unwrap_or(DEFAULT_MEMORY_REQUEST));
            for p in c.ports.iter().flatten() {
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
        for (i, c) in spec.init_containers.iter().flatten().enumerate() {
            let list = parse_list(
                c.resources.as_ref().and_then(|r| r.requests.as_ref()),
                &format!("spec.initContainers[{i}].resources.requests"),
            )
            .map_err(err)?;
            let (mut cpu, mut mem) = (None, None);
            for (n, milli, value) in &list {
                requests.max_named(n, *milli, *value);
                if n == "cpu" {
                    cpu = Some(*milli);
                } else if n == "memory" {
                    mem = Some(*value);
                }
            }
            non0_cpu = non0_cpu.max(cpu.unwrap_or(DEFAULT_MILLI_CPU_REQUEST));
            non0_mem = non0_mem.max(mem.unwrap_or(DEFAULT_MEMORY_REQUEST));
        }
        let overhead = parse_list(spec.overhead.as_ref(), "spec.overhead").map_err(err)?;
        let (mut score_cpu, mut score_mem) = (non0_cpu, non0_mem);
        for (n, _, value) in &overhead {
            if n == "cpu" {
                score_cpu = score_cpu.saturating_add(*value);
            } else if n == "memory" {
                score_mem = score_mem.saturating_add(*value);
            }
        }
        for (n, milli, value) in &overhead {
            requests.add_named(n, *milli, *value);
            if n == "cpu" {
                non0_cpu = non0_cpu.saturating_add(*milli);
            } else if n == "memory" {
                non0_mem = non0_mem.saturating_add(*value);
            }
        }

        let required_node_affinity = spec
            .affinity
            .as_ref()
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|na| {
                na.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .map(NodeSelector::compile);

        let tolerations = spec
            .tolerations
            .iter()
            .flatten()
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
            .flatten()
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
            pod: key.clone(),
            field,
            source: PodFieldError::Selector(message),
        };
        let pod_affinity =
            parse_pod_affinity(&namespace, spec.affinity.as_ref()).map_err(selector_err)?;
        let topology_spread_constraints =
            parse_spread_constraints(spec.topology_spread_constraints.as_ref())
                .map_err(selector_err)?;
        let volumes =
            crate::volume::PodVolumeRefs::parse(&name, spec.volumes.as_deref().unwrap_or_default());

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

        Ok(PodInfo {
            namespace,
            name,
            uid: meta.uid.clone().unwrap_or_default(),
            labels: meta.labels.clone().unwrap_or_default(),
            priority: spec.priority.unwrap_or(0),
            creation_timestamp: meta.creation_timestamp.as_ref().map(|t| t.0),
            scheduler_name: spec
                .scheduler_name
                .clone()
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "default-scheduler".into()),
            node_name: spec.node_name.clone().unwrap_or_default(),
            requests,
            non_zero_milli_cpu: non0_cpu,
            non_zero_memory: non0_mem,
            score_milli_cpu: score_cpu,
            score_memory: score_mem,
            host_ports,
            node_selector: spec.node_selector.clone().unwrap_or_default(),
            required_node_affinity,
            tolerations,
            disk_volumes,
            volumes,
            gpu,
            gpu_indexes,
            has_topology_spread_constraints: spec
                .topology_spread_constraints
                .as_ref()
                .is_some_and(|c| !c.is_empty()),
            pod_affinity,
            topology_spread_constraints,
            terminating: meta.deletion_timestamp.is_some(),
            pod: pod.clone(),
        })
    }
}

/// `utilnode.GetZoneKey` (v1.22): `region:\0:zone`, each taken from the beta
/// `failure-domain.beta.kubernetes.io/` label when that key is present (even empty), else from
/// the GA `topology.kubernetes.io/` label; empty when both parts are empty.
pub fn zone_key(labels: &Labels) -> String {
    let get = |beta: &str, ga: &str| {
        labels
            .get(beta)
            .or_else(|| labels.get(ga))
            .cloned()
            .unwrap_or_default()
    };
    let zone = get(
        "failure-domain.beta.kubernetes.io/zone",
        "topology.kubernetes.io/zone",
    );
    let region = get(
        "failure-domain.beta.kubernetes.io/region",
        "topology.kubernetes.io/region",
    );
    if region.is_empty() && zone.is_empty() {
        String::new()
    } else {
        format!("{region}:\x00:{zone}")
    }
}

/// `(name, size)` of every name of every image in `status.images`, sorted by name, first image
/// listing a name wins (`addNodeImageStates`).
fn node_images(status: &core::NodeStatus) -> Vec<(String, i64)> {
    let mut out: Vec<(String, i64)> = Vec::new();
    for image in status.images.iter().flatten() {
        let size = image.size_bytes.unwrap_or(0);
        for name in image.names.iter().flatten() {
            if let Err(pos) = out.binary_search_by(|(n, _)| n.as_str().cmp(name)) {
                out.insert(pos, (name.clone(), size));
            }
        }
    }
    out
}

/// A node and the pods on it (`framework.NodeInfo`).
#[derive(Debug, Clone)]
pub struct NodeInfo {
    /// Node name.
    pub name: String,
    /// Labels.
    pub labels: Labels,
    /// Taints.
    pub taints: Vec<Taint>,
    /// True when the node has at least one `NoSchedule`/`NoExecute` taint.
    pub has_filter_taints: bool,
    /// `spec.unschedulable`.
    pub unschedulable: bool,
    /// `status.allocatable` (as v1.22, `status.capacity` is not read).
    pub allocatable: Resource,
    /// Sum of the requests of the pods on the node (fit accounting).
    pub requested: Resource,
    /// Sum of the scoring requests (non-zero cpu/memory defaults) of the pods on the node;
    /// only `milli_cpu` and `memory` are used.
    pub non_zero_requested: Resource,
    /// Pods on the node, assumed ones included.
    pub pods: Vec<Arc<PodInfo>>,
    /// The pods on the node with terms InterPodAffinity scoring reads from existing pods
    /// (required affinity, preferred affinity or anti-affinity;
    /// [`PodAffinityTerms::has_scoring_terms`]). Upstream's `PodsWithAffinity` also lists pods
    /// whose only terms are required anti-affinity, which scoring ignores.
    pub pods_with_affinity: Vec<Arc<PodInfo>>,
    /// The pods on the node with required anti-affinity terms
    /// (`NodeInfo.PodsWithRequiredAntiAffinity`).
    pub pods_with_required_anti_affinity: Vec<Arc<PodInfo>>,
    /// Host ports used by the pods on the node.
    pub used_ports: Vec<HostPort>,
    /// Milli-GPU used on each device; the length is the device count (allocatable
    /// `nvidia.com/gpu`).
    pub gpu_used: Vec<u32>,
    /// GPU devices chosen for each GPU pod on the node, keyed by `namespace/name`.
    pub gpu_assignments: BTreeMap<String, Vec<u32>>,
    /// `zone_key(labels)`.
    pub zone: String,
    /// Container images present on the node (`status.images`): `(name, size in bytes)` for every
    /// name of every image, sorted by name, one entry per name (the first image listing it).
    /// The snapshot counts the nodes per image from these (`ImageLocality`).
    pub images: Vec<(String, i64)>,
    /// Controllers whose pods the node prefers to avoid, as `(kind, uid)`, from the annotation
    /// [`ANNOTATION_PREFER_AVOID_PODS`] (`NodePreferAvoidPods`); empty when absent or unparsable.
    pub prefer_avoid_pods: Vec<(String, String)>,
    /// The node object as read.
    pub node: Arc<core::Node>,
}

/// Node annotation listing the controllers whose pods should avoid the node
/// (`v1.PreferAvoidPodsAnnotationKey`).
pub const ANNOTATION_PREFER_AVOID_PODS: &str = "scheduler.alpha.kubernetes.io/preferAvoidPods";

/// `v1helper.GetAvoidPodsFromNodeAnnotations` as `NodePreferAvoidPods` uses it: the
/// `(podSignature.podController.kind, .uid)` of every `preferAvoidPods` entry of the annotation
/// JSON (`v1.AvoidPods`), keys matched case-insensitively and `null` read as empty, like Go's
/// `encoding/json`. `None` when the JSON does not parse or a value has the wrong type (the
/// plugin then treats the node as not avoiding anything).
pub fn parse_prefer_avoid_pods(annotation: &str) -> Option<Vec<(String, String)>> {
    use serde_json::Value;
    fn field<'a>(obj: &'a serde_json::Map<String, Value>, key: &str) -> Option<&'a Value> {
        obj.get(key).or_else(|| {
            obj.iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(key))
                .map(|(_, v)| v)
        })
    }
    fn object(v: Option<&Value>) -> Option<Option<&serde_json::Map<String, Value>>> {
        match v {
            None | Some(Value::Null) => Some(None),
            Some(Value::Object(o)) => Some(Some(o)),
            Some(_) => None,
        }
    }
    fn string(v: Option<&Value>) -> Option<String> {
        match v {
            None | Some(Value::Null) => Some(String::new()),
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => None,
        }
    }
    let root: Value = serde_json::from_str(annotation).ok()?;
    let Some(root) = object(Some(&root))? else {
        return Some(Vec::new());
    };
    let entries = match field(root, "preferAvoidPods") {
        None | Some(Value::Null) => return Some(Vec::new()),
        Some(Value::Array(a)) => a,
        Some(_) => return None,
    };
    let mut out = Vec::new();
    for e in entries {
        let Some(e) = object(Some(e))? else {
            out.push((String::new(), String::new()));
            continue;
        };
        let sig = object(field(e, "podSignature"))?;
        let ctrl = match sig {
            Some(sig) => object(field(sig, "podController"))?,
            None => None,
        };
        match ctrl {
            Some(c) => out.push((string(field(c, "kind"))?, string(field(c, "uid"))?)),
            None => out.push((String::new(), String::new())),
        }
    }
    Some(out)
}

impl NodeInfo {
    /// Build an empty NodeInfo from a `v1.Node`.
    ///
    /// # Errors
    /// [`NodeError`] naming the field when an allocatable or capacity quantity is malformed.
    pub fn from_node(node: core::Node) -> Result<NodeInfo, NodeError> {
        let node = Arc::new(node);
        let name = node.metadata.name.clone().unwrap_or_default();
        let err = |(field, source): (String, QuantityError)| NodeError {
            node: name.clone(),
            field,
            source,
        };
        let status = node.status.clone().unwrap_or_default();
        // v1.22 `NodeInfo.SetNode` reads `status.allocatable` only; capacity is not a fallback.
        let mut allocatable = Resource::default();
        let alloc = parse_list(status.allocatable.as_ref(), "status.allocatable").map_err(err)?;
        for (n, milli, value) in &alloc {
            allocatable.add_named(n, *milli, *value);
        }
        let spec = node.spec.clone().unwrap_or_default();
        let taints: Vec<Taint> = spec
            .taints
            .iter()
            .flatten()
            .map(|t| Taint {
                key: t.key.clone(),
                value: t.value.clone().unwrap_or_default(),
                effect: TaintEffect::parse(&t.effect),
            })
            .collect();
        let labels = node.metadata.labels.clone().unwrap_or_default();
        let devices = usize::try_from(allocatable.scalar(RESOURCE_GPU).clamp(0, 1024)).unwrap_or(0);
        Ok(NodeInfo {
            has_filter_taints: taints.iter().any(|t| {
                matches!(
                    t.effect,
                    Some(TaintEffect::NoSchedule) | Some(TaintEffect::NoExecute)
                )
            }),
            taints,
            unschedulable: spec.unschedulable.unwrap_or(false),
            allocatable,
            requested: Resource::default(),
            non_zero_requested: Resource::default(),
            pods: Vec::new(),
            pods_with_affinity: Vec::new(),
            pods_with_required_anti_affinity: Vec::new(),
            used_ports: Vec::new(),
            gpu_used: vec![0; devices],
            gpu_assignments: BTreeMap::new(),
            zone: zone_key(&labels),
            images: node_images(&status),
            prefer_avoid_pods: node
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(ANNOTATION_PREFER_AVOID_PODS))
                .filter(|v| !v.is_empty())
                .and_then(|v| parse_prefer_avoid_pods(v))
                .unwrap_or_default(),
            labels,
            name,
            node,
        })
    }

    /// Account a pod on this node (`NodeInfo.AddPod`): requests, scoring requests, ports and GPU
    /// devices. GPU devices come from `gpu_indexes` when given (the annotation or a Reserve
    /// decision); otherwise they are chosen with [`NodeInfo::pick_gpus`].
    pub fn add_pod(&mut self, pod: Arc<PodInfo>, gpu_indexes: Option<Vec<u32>>) {
        self.requested.add(&pod.requests);
        self.non_zero_requested.milli_cpu = self
            .non_zero_requested
            .milli_cpu
            .saturating_add(pod.non_zero_milli_cpu);
        self.non_zero_requested.memory = self
            .non_zero_requested
            .memory
            .saturating_add(pod.non_zero_memory);
        self.used_ports.extend(pod.host_ports.iter().cloned());
        if pod.gpu.count > 0 {
            // Recorded devices are used only when they make sense on this node: one distinct
            // index per requested GPU, each below the device count; otherwise devices are chosen.
            let valid = |idx: &Vec<u32>| {
                let mut seen = idx.clone();
                seen.sort_unstable();
                seen.dedup();
                seen.len() == idx.len()
                    && idx.len() == pod.gpu.count as usize
                    && idx.iter().all(|&i| (i as usize) < self.gpu_used.len())
            };
            let idx = gpu_indexes
                .filter(valid)
                .or_else(|| pod.gpu_indexes.clone().filter(valid))
                .or_else(|| self.pick_gpus(pod.gpu))
                .unwrap_or_default();
            for &i in &idx {
                if let Some(u) = self.gpu_used.get_mut(i as usize) {
                    *u += pod.gpu.milli;
                }
            }
            self.gpu_assignments.insert(pod.key(), idx);
        }
        if pod.pod_affinity.has_scoring_terms() {
            self.pods_with_affinity.push(pod.clone());
        }
        if !pod.pod_affinity.required_anti_affinity.is_empty() {
            self.pods_with_required_anti_affinity.push(pod.clone());
        }
        self.pods.push(pod);
    }

    /// Remove a pod by `namespace/name` (`NodeInfo.RemovePod`). Returns false when the pod is not
    /// on this node.
    pub fn remove_pod(&mut self, namespace: &str, name: &str) -> bool {
        let Some(pos) = self
            .pods
            .iter()
            .position(|p| p.namespace == namespace && p.name == name)
        else {
            return false;
        };
        let pod = self.pods.swap_remove(pos);
        for list in [
            &mut self.pods_with_affinity,
            &mut self.pods_with_required_anti_affinity,
        ] {
            if let Some(i) = list.iter().position(|p| Arc::ptr_eq(p, &pod)) {
                list.swap_remove(i);
            }
        }
        self.requested.sub(&pod.requests);
        self.non_zero_requested.milli_cpu = self
            .non_zero_requested
            .milli_cpu
            .saturating_sub(pod.non_zero_milli_cpu);
        self.non_zero_requested.memory = self
            .non_zero_requested
            .memory
            .saturating_sub(pod.non_zero_memory);
        for hp in &pod.host_ports {
            if let Some(i) = self.used_ports.iter().position(|u| u == hp) {
                self.used_ports.swap_remove(i);
            }
        }
        if let Some(idx) = self.gpu_assignments.remove(&pod.key()) {
            for i in idx {
                if let Some(u) = self.gpu_used.get_mut(i as usize) {
                    *u = u.saturating_sub(pod.gpu.milli);
                }
            }
        }
        true
    }

    /// Whether `req` fits on this node's devices ([`NodeInfo::pick_gpus`] would return
    /// `Some`), without allocating.
    pub fn fits_gpus(&self, req: GpuRequest) -> bool {
        if req.count == 0 {
            return true;
        }
        let need = if req.milli >= GPU_MILLI_PER_DEVICE {
            GPU_MILLI_PER_DEVICE
        } else {
            req.milli
        };
        let usable = self
            .gpu_used
            .iter()
            .filter(|&&u| {
                if need >= GPU_MILLI_PER_DEVICE {
                    u == 0
                } else {
                    GPU_MILLI_PER_DEVICE.saturating_sub(u) >= need
                }
            })
            .count();
        usable >= req.count as usize
    }

    /// Choose GPU devices for `req` on this node, or `None` when they do not fit.
    ///
    /// Whole GPUs (`milli == 1000`) take the lowest-indexed fully free devices. A share of one
    /// GPU takes the device with the least free capacity that still fits (best fit), lowest
    /// index first among equals, which keeps whole devices free for whole-GPU pods.
    pub fn pick_gpus(&self, req: GpuRequest) -> Option<Vec<u32>> {
        if req.count == 0 {
            return Some(Vec::new());
        }
        if req.milli >= GPU_MILLI_PER_DEVICE {
            let free: Vec<u32> = self
                .gpu_used
                .iter()
                .enumerate()
                .filter(|(_, u)| **u == 0)
                .map(|(i, _)| i as u32)
                .take(req.count as usize)
                .collect();
            return (free.len() == req.count as usize).then_some(free);
        }
        let mut best: Option<(u32, u32)> = None;
        for (i, &u) in self.gpu_used.iter().enumerate() {
            let free = GPU_MILLI_PER_DEVICE.saturating_sub(u);
            if free >= req.milli && best.is_none_or(|(_, bf)| free < bf) {
                best = Some((i as u32, free));
            }
        }
        if req.count == 1 {
            return best.map(|(i, _)| vec![i]);
        }
        // Several shared devices: lowest-indexed devices with enough free share.
        let fit: Vec<u32> = self
            .gpu_used
            .iter()
            .enumerate()
            .filter(|(_, u)| GPU_MILLI_PER_DEVICE.saturating_sub(**u) >= req.milli)
            .map(|(i, _)| i as u32)
            .take(req.count as usize)
            .collect();
        (fit.len() == req.count as usize).then_some(fit)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::framework::plugins::testutil::{Res, pod, res};

    /// `GetNonzeroRequestForResource(resource, requests)` (v1.22 `pkg/scheduler/util`) for a pod
    /// with one container requesting `requests`: cpu and memory are the PodInfo scoring requests
    /// (defaulted when absent); ephemeral-storage and extended resources have no default and are
    /// the raw requests.
    fn nonzero_request_for_resource(pi: &PodInfo, resource: &str) -> i64 {
        match resource {
            "cpu" => pi.non_zero_milli_cpu,
            "memory" => pi.non_zero_memory,
            "ephemeral-storage" => pi.requests.ephemeral_storage,
            n => pi.requests.scalar(n),
        }
    }

    fn one_container(requests: &[(&str, &str)]) -> PodInfo {
        pod("p").container(requests).info()
    }

    /// Upstream `kubernetes/kubernetes` `pkg/scheduler/util/pod_resources_test.go`,
    /// `TestGetNonZeroRequest` (index ids 577831308 and 67449543919, post-1.23 copies; the table is
    /// the v1.22 `GetNonzeroRequests` one). Checked through the PodInfo scoring requests of a pod
    /// with one container.
    #[test]
    fn test_get_non_zero_request() {
        struct Case {
            name: &'static str,
            requests: &'static [(&'static str, &'static str)],
            expected_cpu: i64,
            expected_memory: i64,
        }
        let cases = vec![
            Case {
                name: "cpu_and_memory_not_found",
                requests: &[],
                expected_cpu: DEFAULT_MILLI_CPU_REQUEST,
                expected_memory: DEFAULT_MEMORY_REQUEST,
            },
            Case {
                name: "only_cpu_exist",
                requests: &[("cpu", "200m")],
                expected_cpu: 200,
                expected_memory: DEFAULT_MEMORY_REQUEST,
            },
            Case {
                name: "only_memory_exist",
                requests: &[("memory", "400Mi")],
                expected_cpu: DEFAULT_MILLI_CPU_REQUEST,
                expected_memory: 400 * 1024 * 1024,
            },
            Case {
                name: "cpu_memory_exist",
                requests: &[("cpu", "200m"), ("memory", "400Mi")],
                expected_cpu: 200,
                expected_memory: 400 * 1024 * 1024,
            },
        ];
        for c in cases {
            let pi = one_container(c.requests);
            assert_eq!(pi.non_zero_milli_cpu, c.expected_cpu, "{}: cpu", c.name);
            assert_eq!(pi.non_zero_memory, c.expected_memory, "{}: memory", c.name);
        }
    }

    /// Upstream `kubernetes/kubernetes` `pkg/scheduler/util/pod_resources_test.go`,
    /// `TestGetNonzeroRequestForResource` (index id 577831308, post-1.23), v1.22 rows only: the
    /// 1.23+ "useRequested is true" rows (`nonZero=false`) are not ported. cpu compared as
    /// MilliValue, the others as Value.
    #[test]
    fn test_get_nonzero_request_for_resource() {
        struct Case {
            name: &'static str,
            requests: &'static [(&'static str, &'static str)],
            resource: &'static str,
            expected_value: i64,
        }
        let cases = vec![
            Case {
                name: "extended_resource_not_found",
                requests: &[],
                resource: "intel.com/foo",
                expected_value: 0,
            },
            Case {
                name: "extended_resource_found",
                requests: &[("intel.com/foo", "4")],
                resource: "intel.com/foo",
                expected_value: 4,
            },
            Case {
                name: "cpu_not_found",
                requests: &[],
                resource: "cpu",
                expected_value: DEFAULT_MILLI_CPU_REQUEST,
            },
            Case {
                name: "memory_not_found",
                requests: &[],
                resource: "memory",
                expected_value: DEFAULT_MEMORY_REQUEST,
            },
            Case {
                name: "cpu_exist",
                requests: &[("cpu", "200m")],
                resource: "cpu",
                expected_value: 200,
            },
            Case {
                name: "memory_exist",
                requests: &[("memory", "400Mi")],
                resource: "memory",
                expected_value: 400 * 1024 * 1024,
            },
            Case {
                name: "ephemeralStorage_exist",
                requests: &[("ephemeral-storage", "400Mi")],
                resource: "ephemeral-storage",
                expected_value: 400 * 1024 * 1024,
            },
            Case {
                name: "ephemeralStorage_not_found",
                requests: &[],
                resource: "ephemeral-storage",
                expected_value: 0,
            },
        ];
        for c in cases {
            let pi = one_container(c.requests);
            assert_eq!(
                nonzero_request_for_resource(&pi, c.resource),
                c.expected_value,
                "{}",
                c.name
            );
        }
    }

    /// `computePodResourceRequest` (v1.22 `pkg/scheduler/framework/plugins/noderesources/fit.go`):
    /// max(sum of containers, each init container) per resource, plus overhead, on raw requests
    /// (`PodInfo::requests`). No upstream table exists for it; the cases are its doc-comment
    /// Example and the pod requests implied by `fit_test.go` `TestEnoughRequests` rows (see
    /// `noderesources-fit.md`, arithmetic notes).
    #[test]
    fn test_compute_pod_resource_request() {
        struct Case {
            name: &'static str,
            containers: Vec<Res>,
            init_containers: Vec<Res>,
            overhead: &'static [(&'static str, &'static str)],
            expected: Resource,
        }
        let r = |milli_cpu, memory| Resource {
            milli_cpu,
            memory,
            ..Default::default()
        };
        let mut ext = r(1, 1);
        ext.set_scalar("example.com/aaa", 6);
        let mut ext_init = r(1, 1);
        ext_init.set_scalar("example.com/aaa", 3);
        let cases = vec![
            Case {
                // Example: IC1 {CPU 2, Memory 1G}, IC2 {CPU 2, Memory 3G}, C1 {CPU 2, Memory 1G},
                // C2 {CPU 1, Memory 1G}. Result: CPU: 3, Memory: 3G.
                name: "doc comment example",
                containers: vec![res(2000, 1_000_000_000), res(1000, 1_000_000_000)],
                init_containers: vec![res(2000, 1_000_000_000), res(2000, 3_000_000_000)],
                overhead: &[],
                expected: r(3000, 3_000_000_000),
            },
            Case {
                // pod cpu = max(1, 3) = 3.
                name: "too many resources fails due to init container cpu",
                containers: vec![res(1, 1)],
                init_containers: vec![res(3, 1)],
                overhead: &[],
                expected: r(3, 1),
            },
            Case {
                name: "too many resources fails due to highest init container memory",
                containers: vec![res(1, 1)],
                init_containers: vec![res(1, 3), res(1, 2)],
                overhead: &[],
                expected: r(1, 3),
            },
            Case {
                // max(4, 5) = 5.
                name: "equal edge case for init container",
                containers: vec![res(4, 1)],
                init_containers: vec![res(5, 1)],
                overhead: &[],
                expected: r(5, 1),
            },
            Case {
                // 3+3 = 6 over containers (cpu 1+1, memory 1+1).
                name: "extended resource allocatable enforced for multiple containers",
                containers: vec![
                    res(1, 1).with("example.com/aaa", 3),
                    res(1, 1).with("example.com/aaa", 3),
                ],
                init_containers: vec![],
                overhead: &[],
                expected: {
                    let mut e = r(2, 2);
                    e.set_scalar("example.com/aaa", 6);
                    e
                },
            },
            Case {
                // init max(3, 3) = 3.
                name: "extended resource allocatable admits multiple init containers",
                containers: vec![Res::default()],
                init_containers: vec![
                    res(1, 1).with("example.com/aaa", 3),
                    res(1, 1).with("example.com/aaa", 3),
                ],
                overhead: &[],
                expected: ext_init,
            },
            Case {
                // max(6, 3) = 6.
                name: "extended resource allocatable enforced for multiple init containers",
                containers: vec![Res::default()],
                init_containers: vec![
                    res(1, 1).with("example.com/aaa", 6),
                    res(1, 1).with("example.com/aaa", 3),
                ],
                overhead: &[],
                expected: ext,
            },
            Case {
                // cpu 1+3 = 4, mem 1+13 = 14.
                name: "resources + pod overhead fits",
                containers: vec![res(1, 1)],
                init_containers: vec![],
                overhead: &[("cpu", "3m"), ("memory", "13")],
                expected: r(4, 14),
            },
            Case {
                // mem 1+15 = 16.
                name: "requests + overhead does not fit for memory",
                containers: vec![res(1, 1)],
                init_containers: vec![],
                overhead: &[("cpu", "1m"), ("memory", "15")],
                expected: r(2, 16),
            },
        ];
        for c in cases {
            let mut b = pod("p");
            for x in &c.containers {
                b = b.container_res(x);
            }
            for x in &c.init_containers {
                b = b.init_container_res(x);
            }
            if !c.overhead.is_empty() {
                b = b.overhead(c.overhead);
            }
            assert_eq!(b.info().requests, c.expected, "{}", c.name);
        }
    }
}
