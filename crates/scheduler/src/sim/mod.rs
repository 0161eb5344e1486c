//! `simulate`: run the real scheduling cycle over a cluster read from files, no API server.
//!
//! Before scheduling, objects are completed as the API server completes them on create:
//! `generateName` objects get a generated name ([`NameGenerator`], deterministic under the
//! seed) and every pod's containers get requests defaulted from their limits
//! ([`default_requests_from_limits`]). Cluster mode needs neither: the pods it reads were
//! stored by an API server that already did both.
//!
//! Pods with `spec.nodeName` already run and count against their node (unless `Succeeded` or
//! `Failed`). Pending pods whose `schedulerName` is unset or ours are queued by priority
//! (descending, as kube-scheduler's PrioritySort), then `creationTimestamp` (pods without one
//! first) and input order — kube-scheduler orders equal priorities by the time the pod entered
//! its queue, which for a batch read from files is best approximated by creation time — and
//! scheduled one at a time, each placement assumed into the cluster state before the next pod.
//! Pods for other schedulers, pods being deleted and duplicates are reported as `Skipped`.
//!
//! Volumes: PersistentVolumes, PersistentVolumeClaims, StorageClasses and CSINodes from the
//! files feed the volume plugins. With no binding cycle, a scheduled pod's VolumeBinding
//! reservation is assumed and then committed at once as PreBind and the PV controller would
//! leave it (static bindings bound; claims to provision annotated with the selected node), so
//! the pods after it see those PVs taken.
//!
//! [`Simulation`] hands out the outcomes one at a time, so that a report (with `--explain`,
//! every node's reasons for every pod) can be written as it is produced: memory stays bounded by
//! the cluster, not by the report. [`simulate`] collects them.

pub mod files;
pub mod openb;
pub mod replay;

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1 as apps;
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde::Serialize;
use thiserror::Error;

use crate::cache::Cache;
use crate::model::{GPU_MILLI_PER_DEVICE, NodeInfo, PodInfo};
use crate::policy::ResolvedPolicy;
use crate::profile::{Profile, ProfileError};
use crate::schedule_one::{Algorithm, ScheduleError};
use crate::snapshot::{Snapshot, SnapshotError};

/// Objects read from cluster files.
#[derive(Debug, Default, Clone)]
pub struct Cluster {
    /// Nodes.
    pub nodes: Vec<core::Node>,
    /// Pods, running and pending, in input order.
    pub pods: Vec<core::Pod>,
    /// Pods that did not decode; each is reported `Unschedulable` (or `Skipped`, as a
    /// well-formed pod in its place would be) with the decoding error.
    pub malformed_pods: Vec<MalformedPod>,
    /// Services.
    pub services: Vec<core::Service>,
    /// ReplicationControllers.
    pub replication_controllers: Vec<core::ReplicationController>,
    /// ReplicaSets.
    pub replica_sets: Vec<apps::ReplicaSet>,
    /// StatefulSets.
    pub stateful_sets: Vec<apps::StatefulSet>,
    /// Namespaces (labels for pod affinity `namespaceSelector`).
    pub namespaces: Vec<core::Namespace>,
    /// PersistentVolumes.
    pub persistent_volumes: Vec<core::PersistentVolume>,
    /// PersistentVolumeClaims.
    pub persistent_volume_claims: Vec<core::PersistentVolumeClaim>,
    /// StorageClasses.
    pub storage_classes: Vec<k8s_openapi::api::storage::v1::StorageClass>,
    /// CSINodes.
    pub csi_nodes: Vec<k8s_openapi::api::storage::v1::CSINode>,
    /// Where each named node was read (`file: document N[, items[K]]`), to name both places
    /// when a node name is read twice.
    pub node_origins: BTreeMap<String, String>,
    /// Things read but ignored.
    pub warnings: Vec<String>,
}

/// A pod whose object did not decode, with what could be read of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MalformedPod {
    /// Number of well-formed pods before it in the input (its place in [`Cluster::pods`]).
    pub position: usize,
    /// `metadata.namespace` (empty: `default`).
    pub namespace: String,
    /// `metadata.name` (empty when only `generateName` is set).
    pub name: String,
    /// `metadata.generateName`.
    pub generate_name: String,
    /// `spec.nodeName`.
    pub node_name: String,
    /// `spec.schedulerName`.
    pub scheduler_name: String,
    /// `status.phase`.
    pub phase: String,
    /// Whether `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    /// The decoding error (file, line, document, item, field).
    pub message: String,
}

/// An object of a cluster file that does not decode, or has no name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// Path of the file.
    pub file: String,
    /// 1-based line of the field (or of the nearest enclosing value found), 0 if unknown.
    pub line: usize,
    /// 1-based column, 0 if unknown.
    pub column: usize,
    /// 1-based YAML document (or JSON value) number.
    pub document: usize,
    /// Inside a `v1 List`: the item's path (`items[3]`).
    pub item: Option<String>,
    /// The object's kind.
    pub kind: String,
    /// The object's `namespace/name` when it has one.
    pub object: String,
    /// Field path inside the object (`spec.containers[0].resources.limits["nvidia.com/gpu"]`),
    /// empty for the whole object.
    pub path: String,
    /// Decoder message.
    pub message: String,
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.file)?;
        if self.line > 0 {
            write!(f, ":{}:{}", self.line, self.column.max(1))?;
        }
        write!(f, ": document {}", self.document)?;
        if let Some(item) = &self.item {
            write!(f, ", {item}")?;
        }
        if !self.kind.is_empty() {
            write!(f, ": {}", self.kind)?;
            if !self.object.is_empty() {
                write!(f, " {}", self.object)?;
            }
        }
        if !self.path.is_empty() {
            write!(f, ": {}", self.path)?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Errors of `simulate` input.
#[derive(Debug, Error)]
pub enum SimError {
    /// A file could not be read.
    #[error("{file}: {message}")]
    Read {
        /// Path.
        file: String,
        /// OS error.
        message: String,
    },
    /// Malformed YAML or JSON, or nesting deeper than [`crate::nesting::MAX_NESTING_DEPTH`].
    #[error("{file}:{line}:{column}: {message}")]
    Syntax {
        /// Path.
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// Parser message.
        message: String,
    },
    /// An object that does not decode as its kind, or has neither a name nor a generateName.
    #[error("{0}")]
    Decode(Box<DecodeError>),
    /// A malformed CSV row.
    #[error("{file}:{line}: {message}")]
    Csv {
        /// Path.
        file: String,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A node with a malformed quantity or a duplicate name (naming where it was read, when
    /// known).
    #[error("{0}")]
    Node(String),
    /// The policy does not build into a profile (plugins, extenders).
    #[error(transparent)]
    Profile(#[from] ProfileError),
    /// A replay option cannot be applied (`--inflate`).
    #[error(transparent)]
    Replay(#[from] replay::ReplayError),
}

impl From<Box<DecodeError>> for SimError {
    fn from(e: Box<DecodeError>) -> Self {
        SimError::Decode(e)
    }
}

/// Read an input file as text; the error names the file.
pub(crate) fn read_text(path: &std::path::Path) -> Result<String, SimError> {
    std::fs::read_to_string(path).map_err(|e| SimError::Read {
        file: path.display().to_string(),
        message: e.to_string(),
    })
}

/// Options of a simulation run.
#[derive(Debug, Clone)]
pub struct SimulationConfig {
    /// Our `schedulerName`.
    pub scheduler_name: String,
    /// Seed of the tie-breaking RNG and of generated names.
    pub seed: u64,
    /// `percentageOfNodesToScore` (0 = adaptive).
    pub percentage_of_nodes_to_score: i32,
    /// Record per-node diagnosis and scores.
    pub explain: bool,
}

/// Outcome of one pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, PartialOrd, Ord)]
pub enum PodStatus {
    /// Bound to a node by this run.
    Scheduled,
    /// No node fits (or the pod is malformed).
    Unschedulable,
    /// The attempt failed with an error, not a fit failure: an extender that cannot be reached
    /// or answers with an error, a plugin error, a Reserve failure (v1.22's `Error` status,
    /// `scheduler_schedule_attempts_total{result="error"}`). Not counted in `failureReasons`.
    Error,
    /// Not ours to schedule: another scheduler's, already assigned, or finished.
    Skipped,
}

/// Per-node score in an explanation.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct NodeScoreJson {
    /// Weighted total.
    pub total: i64,
    /// Normalized (0..100) score per Policy priority name.
    pub plugins: BTreeMap<String, i64>,
}

/// One pod in the report.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodOutcome {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Outcome.
    pub status: PodStatus,
    /// Chosen (or already assigned) node.
    pub node: Option<String>,
    /// `Successfully assigned ns/pod to node`, the FailedScheduling text, or why skipped.
    pub message: String,
    /// GPU devices chosen, for pods that request GPUs on nodes that count their devices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_indexes: Option<Vec<u32>>,
    /// With `--explain`: failed node → reasons.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diagnosis: Option<BTreeMap<String, Vec<String>>>,
    /// With `--explain`: feasible node → scores.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scores: Option<BTreeMap<String, NodeScoreJson>>,
}

/// Allocation of one resource over all nodes.
#[derive(Debug, Clone, Serialize)]
pub struct ResourceUsage {
    /// Resource name (`cpu` in millicores, `memory` and `ephemeral-storage` in bytes, `pods`,
    /// scalar resources in their units).
    pub resource: String,
    /// Requested by the pods on the nodes.
    pub allocated: i64,
    /// Sum of allocatable.
    pub allocatable: i64,
    /// allocated / allocatable (0 when nothing is allocatable).
    pub ratio: f64,
}

/// GPU allocation at device level.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GpuUsage {
    /// Number of GPU devices.
    pub devices: u64,
    /// Milli-GPU allocated over all devices (shares count by their fraction).
    pub allocated_milli: u64,
    /// devices × 1000.
    pub capacity_milli: u64,
    /// allocatedMilli / capacityMilli (the FGD paper's GPU allocation ratio).
    pub allocation_ratio: f64,
    /// Devices with nothing on them.
    pub idle_devices: u64,
}

/// Totals of a run.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Nodes.
    pub nodes: usize,
    /// Pods in the input.
    pub pods: usize,
    /// Pods by outcome (`Scheduled`, `Unschedulable`, `Error`, `Skipped`).
    pub by_status: BTreeMap<String, usize>,
    /// Unschedulable pods by failure reason (a pod counts once per reason).
    pub failure_reasons: BTreeMap<String, usize>,
    /// Allocation per resource.
    pub resources: Vec<ResourceUsage>,
    /// GPU devices.
    pub gpu: GpuUsage,
    /// Time spent scheduling (the scheduling cycles and their bookkeeping, not reading input
    /// nor writing output), seconds.
    pub wall_time_seconds: f64,
    /// Pods attempted per second of that time.
    pub pods_per_second: f64,
    /// With the replay options (`--shuffle-seed`, `--inflate`, `--timeline`): the FGD paper's
    /// figures ([`replay::ReplaySummary`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay: Option<replay::ReplaySummary>,
}

/// The whole report (`--output json`).
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Every input pod, in scheduling order for queued pods, after the skipped ones.
    pub pods: Vec<PodOutcome>,
    /// Totals.
    pub summary: Summary,
    /// Warnings (ignored objects, pods on unknown nodes).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// The state after a run, for assertions and further inspection.
pub struct Outcome {
    /// The report.
    pub report: Report,
    /// The final cluster state.
    pub snapshot: Snapshot,
}

/// The API server's `names.SimpleNameGenerator` (`k8s.io/apiserver/pkg/storage/names`): the
/// `generateName` prefix, cut to 58 bytes, followed by 5 characters drawn from
/// `k8s.io/apimachinery/pkg/util/rand`'s alphabet `bcdfghjklmnpqrstvwxz2456789`. Seeded, so a
/// simulation names the same objects the same way under the same `--seed`.
#[derive(Debug)]
pub struct NameGenerator {
    rng: StdRng,
}

impl NameGenerator {
    /// `utilrand`'s alphabet: no vowels, no `0`, `1`, `3`.
    pub const ALPHABET: &'static [u8] = b"bcdfghjklmnpqrstvwxz2456789";
    /// Random characters appended.
    pub const RANDOM_LENGTH: usize = 5;
    /// Longest prefix kept (`MaxGeneratedNameLength`: 63 − 5).
    pub const MAX_PREFIX_LENGTH: usize = 63 - Self::RANDOM_LENGTH;

    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        NameGenerator {
            rng: StdRng::seed_from_u64(seed),
        }
    }

    /// A name for an object with `generateName: base`.
    pub fn generate(&mut self, base: &str) -> String {
        let mut cut = base.len().min(Self::MAX_PREFIX_LENGTH);
        while !base.is_char_boundary(cut) {
            cut -= 1;
        }
        let mut name = base[..cut].to_string();
        for _ in 0..Self::RANDOM_LENGTH {
            let i = self.rng.random_range(0..Self::ALPHABET.len());
            name.push(char::from(Self::ALPHABET[i]));
        }
        name
    }
}

/// Gives every object of `cluster` that has a `generateName` and no name a generated name,
/// in input order (nodes, pods, then the other kinds), unique among the names of its kind and
/// namespace (the API server answers a clash with 409 AlreadyExists; here another name is
/// drawn).
pub fn generate_names(cluster: &mut Cluster, seed: u64) {
    let mut names = NameGenerator::new(seed);
    let mut taken: HashSet<(&'static str, String, String)> = HashSet::new();
    let key = |kind: &'static str, ns: &Option<String>, name: &str| {
        (kind, ns.clone().unwrap_or_default(), name.to_string())
    };
    macro_rules! each_meta {
        ($f:expr) => {
            for o in &mut cluster.nodes {
                $f("Node", &mut o.metadata);
            }
            for o in &mut cluster.pods {
                $f("Pod", &mut o.metadata);
            }
            for o in &mut cluster.services {
                $f("Service", &mut o.metadata);
            }
            for o in &mut cluster.replication_controllers {
                $f("ReplicationController", &mut o.metadata);
            }
            for o in &mut cluster.replica_sets {
                $f("ReplicaSet", &mut o.metadata);
            }
            for o in &mut cluster.stateful_sets {
                $f("StatefulSet", &mut o.metadata);
            }
            for o in &mut cluster.namespaces {
                $f("Namespace", &mut o.metadata);
            }
            for o in &mut cluster.persistent_volumes {
                $f("PersistentVolume", &mut o.metadata);
            }
            for o in &mut cluster.persistent_volume_claims {
                $f("PersistentVolumeClaim", &mut o.metadata);
            }
            for o in &mut cluster.storage_classes {
                $f("StorageClass", &mut o.metadata);
            }
            for o in &mut cluster.csi_nodes {
                $f("CSINode", &mut o.metadata);
            }
        };
    }
    each_meta!(|kind, m: &mut ObjectMeta| {
        if let Some(n) = m.name.as_deref().filter(|n| !n.is_empty()) {
            taken.insert(key(kind, &m.namespace, n));
        }
    });
    for p in &cluster.malformed_pods {
        if !p.name.is_empty() {
            let ns = Some(p.namespace.clone()).filter(|n| !n.is_empty());
            taken.insert(key("Pod", &ns, &p.name));
        }
    }
    let mut fresh = |kind: &'static str, ns: &Option<String>, base: &str| loop {
        let name = names.generate(base);
        if taken.insert(key(kind, ns, &name)) {
            return name;
        }
    };
    each_meta!(|kind, m: &mut ObjectMeta| {
        let base = m.generate_name.clone().unwrap_or_default();
        if m.name.as_deref().unwrap_or_default().is_empty() && !base.is_empty() {
            m.name = Some(fresh(kind, &m.namespace, &base));
        }
    });
    for p in &mut cluster.malformed_pods {
        if p.name.is_empty() && !p.generate_name.is_empty() {
            let ns = Some(p.namespace.clone()).filter(|n| !n.is_empty());
            p.name = fresh("Pod", &ns, &p.generate_name);
        }
    }
}

/// The API server's pod defaulting of requests (`SetDefaults_Pod`, `pkg/apis/core/v1/defaults.go`
/// in v1.22): for each container and init container with limits, every resource limited but not
/// requested is requested at its limit. A pod that asks `limits: {nvidia.com/gpu: 1}` requests
/// one GPU.
pub fn default_requests_from_limits(pod: &mut core::Pod) {
    let Some(spec) = pod.spec.as_mut() else {
        return;
    };
    let containers = spec
        .containers
        .iter_mut()
        .chain(spec.init_containers.iter_mut().flatten());
    for c in containers {
        let Some(res) = c.resources.as_mut() else {
            continue;
        };
        let Some(limits) = res.limits.as_ref() else {
            continue;
        };
        let requests = res.requests.get_or_insert_with(BTreeMap::new);
        for (name, q) in limits {
            requests.entry(name.clone()).or_insert_with(|| q.clone());
        }
    }
}

/// What decides a pod's fate before scheduling, read from a decoded or a malformed pod.
struct PodHeader {
    namespace: String,
    name: String,
    phase: String,
    node_name: String,
    scheduler_name: String,
    deleting: bool,
}

impl PodHeader {
    fn of(pod: &core::Pod) -> Self {
        let spec = pod.spec.as_ref();
        PodHeader {
            namespace: pod
                .metadata
                .namespace
                .clone()
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| "default".into()),
            name: pod.metadata.name.clone().unwrap_or_default(),
            phase: pod
                .status
                .as_ref()
                .and_then(|s| s.phase.clone())
                .unwrap_or_default(),
            node_name: spec.and_then(|s| s.node_name.clone()).unwrap_or_default(),
            scheduler_name: spec
                .and_then(|s| s.scheduler_name.clone())
                .unwrap_or_default(),
            deleting: pod.metadata.deletion_timestamp.is_some(),
        }
    }

    fn of_malformed(p: &MalformedPod) -> Self {
        PodHeader {
            namespace: match p.namespace.as_str() {
                "" => "default".into(),
                ns => ns.into(),
            },
            name: p.name.clone(),
            phase: p.phase.clone(),
            node_name: p.node_name.clone(),
            scheduler_name: p.scheduler_name.clone(),
            deleting: p.deleting,
        }
    }

    fn outcome(&self, status: PodStatus, node: Option<String>, message: String) -> PodOutcome {
        PodOutcome {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            status,
            node,
            message,
            gpu_indexes: None,
            diagnosis: None,
            scores: None,
        }
    }
}

/// One profile of a simulation: pods whose `spec.schedulerName` is `scheduler_name` are
/// scheduled with `profile`.
#[derive(Debug, Clone)]
pub struct SimProfile {
    /// The profile's scheduler name.
    pub scheduler_name: String,
    /// Its framework and extenders (from a Policy, or a configuration profile).
    pub profile: Profile,
    /// Its own `percentageOfNodesToScore` (v1 profiles), else the run's.
    pub percentage_of_nodes_to_score: Option<i32>,
}

/// A simulation run, handing out one [`PodOutcome`] at a time (it is an [`Iterator`]): first
/// the pods decided without scheduling (skipped, malformed), in input order, then each queued
/// pod as it is scheduled. [`Simulation::summary`] gives the totals once every outcome has been
/// taken.
pub struct Simulation {
    profiles: Vec<SimProfile>,
    /// The run's `percentageOfNodesToScore`, for profiles without their own.
    percentage_of_nodes_to_score: i32,
    /// The cluster state: placements go through the cache's assume, as in cluster mode.
    cache: Cache,
    algo: Algorithm,
    explain: bool,
    decided: std::vec::IntoIter<PodOutcome>,
    queue: std::vec::IntoIter<(usize, PodInfo)>,
    total_pods: usize,
    attempted: usize,
    busy: Duration,
    by_status: BTreeMap<String, usize>,
    failure_reasons: BTreeMap<String, usize>,
    warnings: Vec<String>,
    pod_width: usize,
    node_width: usize,
    replay: Option<replay::ReplayRecorder>,
}

impl Simulation {
    /// Builds the cluster state: generated names, defaulted requests, nodes, running pods,
    /// services, controllers, namespaces and volumes; queues the pending pods of
    /// `cfg.scheduler_name` (or without a `schedulerName`), scheduled with `profile`.
    ///
    /// # Errors
    /// [`SimError::Node`] for malformed nodes and node names read twice. Malformed pods do not
    /// stop the run: they are reported `Unschedulable`.
    pub fn new(
        cluster: Cluster,
        profile: &Profile,
        cfg: &SimulationConfig,
    ) -> Result<Self, SimError> {
        Self::with_replay(cluster, profile, cfg, replay::ReplayOptions::default())
    }

    /// As [`Simulation::new`], with the FGD paper's replay method ([`replay`]): the pending
    /// pods shuffled and inflated as `options` say (the queue then keeps that order), ties
    /// broken as it says, and the timeline recorded. The workload's typical pods (for the GPU
    /// fragmentation scorers and the timeline) are those of the running and pending pods read,
    /// before inflation.
    ///
    /// # Errors
    /// As [`Simulation::new`], and [`SimError::Replay`] for an inflation that cannot be done.
    pub fn with_replay(
        cluster: Cluster,
        profile: &Profile,
        cfg: &SimulationConfig,
        options: replay::ReplayOptions,
    ) -> Result<Self, SimError> {
        let profile = SimProfile {
            scheduler_name: cfg.scheduler_name.clone(),
            profile: profile.clone(),
            percentage_of_nodes_to_score: None,
        };
        Self::with_profiles_replay(cluster, vec![profile], cfg, options)
    }

    /// As [`Simulation::new`] with several profiles (a `KubeSchedulerConfiguration`'s): a pod
    /// is scheduled with the profile named by its `spec.schedulerName`, a pod without one with
    /// the first profile, and a pod naming no profile is skipped. `cfg.scheduler_name` is not
    /// used. The extenders are the first profile's (a configuration's extenders are global);
    /// one tie-breaking RNG and one rotating start index serve every profile, as
    /// kube-scheduler's one `genericScheduler` does.
    ///
    /// # Errors
    /// As [`Simulation::new`].
    pub fn with_profiles(
        cluster: Cluster,
        profiles: Vec<SimProfile>,
        cfg: &SimulationConfig,
    ) -> Result<Self, SimError> {
        Self::with_profiles_replay(cluster, profiles, cfg, replay::ReplayOptions::default())
    }

    /// [`Simulation::with_profiles`] with the replay options of [`Simulation::with_replay`].
    ///
    /// # Errors
    /// As [`Simulation::with_replay`].
    pub fn with_profiles_replay(
        mut cluster: Cluster,
        profiles: Vec<SimProfile>,
        cfg: &SimulationConfig,
        options: replay::ReplayOptions,
    ) -> Result<Self, SimError> {
        generate_names(&mut cluster, cfg.seed);
        // Nothing expires: with no binding cycle, each placement is confirmed at once.
        let mut cache = Cache::new(None);
        let mut warnings = std::mem::take(&mut cluster.warnings);
        for n in cluster.nodes {
            let name = n.metadata.name.clone().unwrap_or_default();
            let origin = match cluster.node_origins.get(&name) {
                Some(o) => format!("{o}: "),
                None => String::new(),
            };
            if name.is_empty() {
                return Err(SimError::Node(format!(
                    "{origin}a node has neither a name nor a generateName"
                )));
            }
            let ni = NodeInfo::from_node(n).map_err(|e| SimError::Node(format!("{origin}{e}")))?;
            if cache.snapshot().node_index(&ni.name).is_some() {
                let e = SnapshotError::DuplicateNode(ni.name);
                return Err(SimError::Node(format!("{origin}{e}")));
            }
            cache.add_node(ni);
        }
        for s in &cluster.services {
            cache.upsert_service(s);
        }
        for rc in &cluster.replication_controllers {
            cache.upsert_replication_controller(rc);
        }
        for rs in &cluster.replica_sets {
            cache.upsert_replica_set(rs);
        }
        for ss in &cluster.stateful_sets {
            cache.upsert_stateful_set(ss);
        }
        for ns in &cluster.namespaces {
            cache.upsert_namespace(ns);
        }
        {
            let volumes = cache.volumes_mut();
            for pv in cluster.persistent_volumes {
                volumes.upsert_pv(pv);
            }
            for pvc in cluster.persistent_volume_claims {
                volumes.upsert_pvc(pvc);
            }
            for sc in cluster.storage_classes {
                volumes.upsert_storage_class(sc);
            }
            for n in cluster.csi_nodes {
                volumes.upsert_csi_node(n);
            }
        }

        let total_pods = cluster.pods.len() + cluster.malformed_pods.len();
        let mut decided = Vec::new();
        let mut queue: Vec<(usize, usize, PodInfo)> = Vec::new();
        let mut seen = HashSet::new();
        let mut malformed = cluster.malformed_pods.into_iter().peekable();
        let mut pods = cluster.pods.into_iter().enumerate().peekable();
        loop {
            // Input order: a malformed pod came before the well-formed pod at its position.
            let malformed_first = match (malformed.peek(), pods.peek()) {
                (Some(m), Some((i, _))) => m.position <= *i,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => break,
            };
            let (i, pod) = match (malformed_first, malformed_first.then(|| malformed.next())) {
                (true, Some(Some(m))) => (usize::MAX, Err(m)),
                _ => match pods.next() {
                    Some((i, p)) => (i, Ok(p)),
                    None => break,
                },
            };
            let h = match &pod {
                Ok(p) => PodHeader::of(p),
                Err(m) => PodHeader::of_malformed(m),
            };
            if h.phase == "Succeeded" || h.phase == "Failed" {
                let node = (!h.node_name.is_empty()).then(|| h.node_name.clone());
                decided.push(h.outcome(
                    PodStatus::Skipped,
                    node,
                    format!("pod phase is {}", h.phase),
                ));
                continue;
            }
            let key = format!("{}/{}", h.namespace, h.name);
            if !seen.insert(key.clone()) {
                warnings.push(format!(
                    "pod {key} appears twice in the input; the second one is ignored"
                ));
                decided.push(h.outcome(
                    PodStatus::Skipped,
                    None,
                    "duplicate of an earlier pod with the same namespace/name".into(),
                ));
                continue;
            }
            let node_name = &h.node_name;
            if !node_name.is_empty() {
                let parsed = pod.map_err(|m| m.message).and_then(|mut p| {
                    default_requests_from_limits(&mut p);
                    PodInfo::from_pod(p).map_err(|e| e.to_string())
                });
                let message = match parsed {
                    // A pod on a node absent from the input is not counted (the cache would
                    // park it: it never schedules against it either).
                    Ok(pi) if cache.snapshot().node_index(node_name).is_none() => {
                        let e = SnapshotError::UnknownNode {
                            pod: pi.key(),
                            node: node_name.clone(),
                        };
                        warnings.push(e.to_string());
                        format!("assigned to unknown node {node_name}; not counted")
                    }
                    Ok(pi) => match cache.add_pod(Arc::new(pi)) {
                        Ok(()) => format!("already assigned to node {node_name}"),
                        Err(e) => {
                            warnings.push(e.to_string());
                            format!("already assigned to node {node_name}; not counted: {e}")
                        }
                    },
                    Err(e) => {
                        warnings.push(format!("{e}; not counted against node {node_name}"));
                        format!("already assigned to node {node_name}; not counted: {e}")
                    }
                };
                decided.push(h.outcome(PodStatus::Skipped, Some(node_name.clone()), message));
                continue;
            }
            if h.deleting {
                // skipPodSchedule (v1.22): a pod being deleted is not scheduled.
                decided.push(h.outcome(PodStatus::Skipped, None, "pod is being deleted".into()));
                continue;
            }
            let profile = if h.scheduler_name.is_empty() {
                Some(0)
            } else {
                profiles
                    .iter()
                    .position(|p| p.scheduler_name == h.scheduler_name)
            };
            let Some(profile) = profile.filter(|_| !profiles.is_empty()) else {
                let names: Vec<String> = profiles
                    .iter()
                    .map(|p| format!("{:?}", p.scheduler_name))
                    .collect();
                decided.push(h.outcome(
                    PodStatus::Skipped,
                    None,
                    format!(
                        "schedulerName is {:?}, not {}",
                        h.scheduler_name,
                        names.join(" or ")
                    ),
                ));
                continue;
            };
            let parsed = pod.map_err(|m| m.message).and_then(|mut p| {
                default_requests_from_limits(&mut p);
                PodInfo::from_pod(p).map_err(|e| e.to_string())
            });
            match parsed {
                Ok(pi) => queue.push((i, profile, pi)),
                Err(message) => decided.push(h.outcome(PodStatus::Unschedulable, None, message)),
            }
        }
        // PrioritySort: priority desc, creationTimestamp asc, input order (stable sort).
        queue.sort_by(|(ia, _, a), (ib, _, b)| {
            b.priority
                .cmp(&a.priority)
                .then(a.creation_timestamp.cmp(&b.creation_timestamp))
                .then(ia.cmp(ib))
        });
        let mut queue: Vec<(usize, PodInfo)> = queue.into_iter().map(|(_, f, p)| (f, p)).collect();

        // The workload's typical pods: the pods running and pending, before any inflation.
        let typical = Arc::new(crate::framework::plugins::gpu_frag::TypicalPods::from_pods(
            cache
                .snapshot()
                .nodes()
                .iter()
                .flat_map(|n| n.pods.iter().map(|p| &**p))
                .chain(queue.iter().map(|(_, p)| p)),
        ));
        cache.set_typical_pods(Some(typical.clone()));
        let mut inflated = 0i64;
        let mut rng = match options.shuffle_seed {
            Some(seed) => replay::shuffle(&mut queue, seed),
            None => StdRng::seed_from_u64(cfg.seed),
        };
        if let Some(f) = options.inflate {
            let capacity = gpu_usage(cache.snapshot()).capacity_milli;
            inflated = replay::inflate(&mut queue, f, capacity, &mut rng)?;
        }
        let recorder = options.records().then(|| {
            let mut r = replay::ReplayRecorder::new(options.clone(), typical, cache.snapshot());
            r.inflated_pods = inflated;
            r
        });
        let total_pods = usize::try_from(total_pods as i64 + inflated).unwrap_or(0);

        let pod_width = decided
            .iter()
            .map(|o| o.namespace.len() + o.name.len() + 1)
            .chain(
                queue
                    .iter()
                    .map(|(_, p)| p.namespace.len() + p.name.len() + 1),
            )
            .max()
            .unwrap_or(0)
            .max(3);
        let node_width = decided
            .iter()
            .filter_map(|o| o.node.as_ref().map(String::len))
            .chain(cache.snapshot().nodes().iter().map(|n| n.name.len()))
            .max()
            .unwrap_or(0)
            .max(4);

        let mut algo = Algorithm::new(cfg.percentage_of_nodes_to_score, cfg.seed);
        algo.set_tie_break(options.tie_break);
        // Extenders filter and score as in cluster mode; a simulation binds nothing, so an
        // extender's bind verb is not called.
        if let Some(first) = profiles.first() {
            algo.set_extenders(first.profile.extenders.clone());
        }
        let by_status = ["Scheduled", "Unschedulable", "Error", "Skipped"]
            .into_iter()
            .map(|s| (s.to_string(), 0))
            .collect();
        Ok(Simulation {
            profiles,
            percentage_of_nodes_to_score: cfg.percentage_of_nodes_to_score,
            cache,
            algo,
            explain: cfg.explain,
            decided: decided.into_iter(),
            attempted: queue.len(),
            queue: queue.into_iter(),
            total_pods,
            busy: Duration::ZERO,
            by_status,
            failure_reasons: BTreeMap::new(),
            warnings,
            pod_width,
            node_width,
            replay: recorder,
        })
    }

    /// The replay timeline so far (with the replay options), one row per pod tried.
    pub fn timeline(&self) -> Option<&[replay::TimelineRow]> {
        self.replay.as_ref().map(|r| r.rows.as_slice())
    }

    /// Widest `namespace/name` among the pods (at least 3), for aligned tables.
    pub fn pod_column_width(&self) -> usize {
        self.pod_width
    }

    /// Widest node name among the nodes and the pods' assigned nodes (at least 4).
    pub fn node_column_width(&self) -> usize {
        self.node_width
    }

    /// Warnings about the input (ignored objects, duplicates, pods on unknown nodes).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The cluster state (after the outcomes taken so far).
    pub fn snapshot(&self) -> &Snapshot {
        self.cache.snapshot()
    }

    /// The totals of the outcomes taken so far (all of them once the iterator is exhausted).
    pub fn summary(&self) -> Summary {
        let wall = self.busy.as_secs_f64();
        let snapshot = self.cache.snapshot();
        Summary {
            nodes: snapshot.len(),
            pods: self.total_pods,
            by_status: self.by_status.clone(),
            failure_reasons: self.failure_reasons.clone(),
            resources: resource_usage(snapshot),
            gpu: gpu_usage(snapshot),
            wall_time_seconds: wall,
            pods_per_second: if wall > 0.0 {
                self.attempted as f64 / wall
            } else {
                0.0
            },
            replay: self.replay.as_ref().map(replay::ReplayRecorder::summary),
        }
    }

    /// The final cluster state.
    pub fn into_snapshot(self) -> Snapshot {
        self.cache.into_snapshot()
    }

    /// Schedules one queued pod: the scheduling cycle, then the assumption and Reserve
    /// ([`Cache::assume`], as in cluster mode), then the binding cycle at once: PreBind's
    /// writes and the PV controller's completion ([`crate::volume::VolumeIndex::commit_pod_volumes`])
    /// and the watch's confirmation ([`Cache::add_pod`]).
    fn schedule(&mut self, profile: usize, pod: PodInfo) -> PodOutcome {
        let outcome = |pod: PodInfo, status, message| PodOutcome {
            namespace: pod.namespace,
            name: pod.name,
            status,
            node: None,
            message,
            gpu_indexes: None,
            diagnosis: None,
            scores: None,
        };
        let profile = &self.profiles[profile];
        self.algo.percentage_of_nodes_to_score = profile
            .percentage_of_nodes_to_score
            .unwrap_or(self.percentage_of_nodes_to_score);
        match self.algo.schedule(
            &profile.profile.framework,
            self.cache.snapshot(),
            &pod,
            self.explain,
        ) {
            Ok(r) => {
                let pod = Arc::new(pod);
                // A failure of assume or Reserve is a scheduling error (v1.22:
                // PodScheduleError, reason SchedulerError); nothing stays assumed.
                let assumed = match self.cache.assume(pod.clone(), &r) {
                    Ok(a) => a,
                    Err(e) => {
                        let mut o =
                            outcome(Arc::unwrap_or_clone(pod), PodStatus::Error, e.to_string());
                        o.diagnosis = r.diagnosis;
                        return o;
                    }
                };
                let key = pod.key();
                self.cache.volumes_mut().commit_pod_volumes(&key);
                // The node exists: the pod was just assumed on it.
                let _ = self.cache.add_pod(assumed.pod);
                let gpu = assumed.gpu_indexes;
                PodOutcome {
                    message: format!("Successfully assigned {key} to {}", r.node),
                    namespace: pod.namespace.clone(),
                    name: pod.name.clone(),
                    status: PodStatus::Scheduled,
                    node: Some(r.node),
                    gpu_indexes: gpu,
                    diagnosis: r.diagnosis,
                    scores: r.scores.map(|m| {
                        m.into_iter()
                            .map(|(n, b)| {
                                let plugins = b.plugins.into_iter().collect();
                                (
                                    n,
                                    NodeScoreJson {
                                        total: b.total,
                                        plugins,
                                    },
                                )
                            })
                            .collect()
                    }),
                }
            }
            Err(e) => {
                let message = e.to_string();
                match e {
                    ScheduleError::Fit(fe) => {
                        for r in fe.reason_histogram().keys() {
                            *self.failure_reasons.entry(r.clone()).or_insert(0) += 1;
                        }
                        let mut o = outcome(pod, PodStatus::Unschedulable, message);
                        o.diagnosis = self.explain.then(|| {
                            fe.node_to_status
                                .iter()
                                .map(|(n, s)| {
                                    (n.clone(), s.reasons.iter().map(|r| r.to_string()).collect())
                                })
                                .collect()
                        });
                        o
                    }
                    // v1.22 counts an empty cluster as unschedulable, not as an error.
                    ScheduleError::NoNodesAvailable => {
                        *self.failure_reasons.entry(message.clone()).or_insert(0) += 1;
                        outcome(pod, PodStatus::Unschedulable, message)
                    }
                    ScheduleError::Extender { .. }
                    | ScheduleError::Plugin { .. }
                    | ScheduleError::ExtensionPoint { .. } => {
                        outcome(pod, PodStatus::Error, message)
                    }
                }
            }
        }
    }
}

impl Iterator for Simulation {
    type Item = PodOutcome;

    fn next(&mut self) -> Option<PodOutcome> {
        let outcome = match self.decided.next() {
            Some(o) => o,
            None => {
                let (profile, pod) = self.queue.next()?;
                let started = Instant::now();
                let record = self
                    .replay
                    .is_some()
                    .then(|| (pod.key(), replay::gpu_request_milli(&pod)));
                let o = self.schedule(profile, pod);
                if let (Some(r), Some((key, request))) = (self.replay.as_mut(), record) {
                    let node = match (&o.status, &o.node) {
                        (PodStatus::Scheduled, Some(n)) => self.cache.snapshot().node_index(n),
                        _ => None,
                    };
                    r.record(key, request, node, self.cache.snapshot());
                }
                self.busy += started.elapsed();
                o
            }
        };
        *self
            .by_status
            .entry(format!("{:?}", outcome.status))
            .or_insert(0) += 1;
        Some(outcome)
    }
}

/// Run the simulation and collect the whole report ([`Simulation`] streams it instead), with
/// `policy` as resolved ([`Profile::from_resolved`]).
///
/// # Errors
/// [`SimError::Profile`] when the policy does not build, then as [`Simulation::new`].
pub fn simulate(
    cluster: Cluster,
    policy: &ResolvedPolicy,
    cfg: &SimulationConfig,
) -> Result<Outcome, SimError> {
    let profile = Profile::from_resolved(policy.clone(), "policy")?;
    let mut run = Simulation::new(cluster, &profile, cfg)?;
    let pods: Vec<PodOutcome> = run.by_ref().collect();
    let summary = run.summary();
    let warnings = std::mem::take(&mut run.warnings);
    Ok(Outcome {
        report: Report {
            pods,
            summary,
            warnings,
        },
        snapshot: run.into_snapshot(),
    })
}

/// Allocated vs allocatable per resource over all nodes.
pub fn resource_usage(snapshot: &Snapshot) -> Vec<ResourceUsage> {
    let mut rows: Vec<(String, i64, i64)> = vec![
        ("cpu".into(), 0, 0),
        ("memory".into(), 0, 0),
        ("ephemeral-storage".into(), 0, 0),
        ("pods".into(), 0, 0),
    ];
    let mut scalars: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    for n in snapshot.nodes() {
        rows[0].1 += n.requested.milli_cpu;
        rows[0].2 += n.allocatable.milli_cpu;
        rows[1].1 += n.requested.memory;
        rows[1].2 += n.allocatable.memory;
        rows[2].1 += n.requested.ephemeral_storage;
        rows[2].2 += n.allocatable.ephemeral_storage;
        rows[3].1 += n.pods.len() as i64;
        rows[3].2 += n.allocatable.allowed_pod_number;
        for (name, v) in &n.allocatable.scalar {
            scalars.entry(name.clone()).or_default().1 += v;
        }
        for (name, v) in &n.requested.scalar {
            scalars.entry(name.clone()).or_default().0 += v;
        }
    }
    rows.extend(scalars.into_iter().map(|(k, (a, c))| (k, a, c)));
    rows.into_iter()
        .filter(|(_, a, c)| *a != 0 || *c != 0)
        .map(|(resource, allocated, allocatable)| ResourceUsage {
            ratio: if allocatable > 0 {
                allocated as f64 / allocatable as f64
            } else {
                0.0
            },
            resource,
            allocated,
            allocatable,
        })
        .collect()
}

/// Device-level GPU allocation over all nodes.
pub fn gpu_usage(snapshot: &Snapshot) -> GpuUsage {
    let mut g = GpuUsage {
        devices: 0,
        allocated_milli: 0,
        capacity_milli: 0,
        allocation_ratio: 0.0,
        idle_devices: 0,
    };
    for n in snapshot.nodes() {
        for &u in &n.gpu_used {
            g.devices += 1;
            g.allocated_milli += u64::from(u.min(GPU_MILLI_PER_DEVICE));
            g.capacity_milli += u64::from(GPU_MILLI_PER_DEVICE);
            if u == 0 {
                g.idle_devices += 1;
            }
        }
    }
    if g.capacity_milli > 0 {
        g.allocation_ratio = g.allocated_milli as f64 / g.capacity_milli as f64;
    }
    g
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

    fn resources(requests: &[(&str, &str)], limits: &[(&str, &str)]) -> core::ResourceRequirements {
        let list = |l: &[(&str, &str)]| {
            (!l.is_empty()).then(|| {
                l.iter()
                    .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
                    .collect()
            })
        };
        core::ResourceRequirements {
            requests: list(requests),
            limits: list(limits),
            ..Default::default()
        }
    }

    #[test]
    fn requests_default_from_limits_per_resource() {
        let container = |name: &str, r| core::Container {
            name: name.into(),
            resources: Some(r),
            ..Default::default()
        };
        let mut pod = core::Pod {
            spec: Some(core::PodSpec {
                containers: vec![
                    container(
                        "a",
                        resources(&[("cpu", "100m")], &[("cpu", "1"), ("nvidia.com/gpu", "1")]),
                    ),
                    container("b", resources(&[("memory", "1Gi")], &[])),
                ],
                init_containers: Some(vec![container("init", resources(&[], &[("cpu", "2")]))]),
                ..Default::default()
            }),
            ..Default::default()
        };
        default_requests_from_limits(&mut pod);
        let spec = pod.spec.unwrap();
        let requests = |c: &core::Container| {
            c.resources
                .as_ref()
                .and_then(|r| r.requests.clone())
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k, v.0))
                .collect::<Vec<_>>()
        };
        // A request present is kept; a resource only limited is requested at its limit.
        assert_eq!(
            requests(&spec.containers[0]),
            [
                ("cpu".to_string(), "100m".to_string()),
                ("nvidia.com/gpu".to_string(), "1".to_string())
            ]
        );
        assert_eq!(
            requests(&spec.containers[1]),
            [("memory".to_string(), "1Gi".to_string())]
        );
        let init = &spec.init_containers.unwrap()[0];
        assert_eq!(requests(init), [("cpu".to_string(), "2".to_string())]);
    }

    #[test]
    fn generated_names_follow_the_api_server() {
        let mut g = NameGenerator::new(1);
        let name = g.generate("web-");
        assert_eq!(name.len(), 4 + NameGenerator::RANDOM_LENGTH);
        assert!(
            name[4..]
                .bytes()
                .all(|c| NameGenerator::ALPHABET.contains(&c))
        );
        let long = "x".repeat(70);
        assert_eq!(g.generate(&long).len(), 63);
        assert_eq!(NameGenerator::new(1).generate("web-"), name);
    }

    /// A malformed pod keeps its place among the pods decided before scheduling.
    #[test]
    fn malformed_pods_keep_their_input_order() {
        let pod = |name: &str, node: &str| core::Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            spec: Some(core::PodSpec {
                node_name: Some(node.into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let malformed = |position, name: &str| MalformedPod {
            position,
            namespace: String::new(),
            name: name.into(),
            generate_name: String::new(),
            node_name: String::new(),
            scheduler_name: String::new(),
            phase: String::new(),
            deleting: false,
            message: format!("{name} is malformed"),
        };
        let cluster = Cluster {
            pods: vec![pod("run-0", "gone"), pod("run-1", "gone")],
            malformed_pods: vec![malformed(1, "bad-a"), malformed(2, "bad-b")],
            ..Default::default()
        };
        let cfg = SimulationConfig {
            scheduler_name: "mini-scheduler".into(),
            seed: 0,
            percentage_of_nodes_to_score: 0,
            explain: false,
        };
        let out = simulate(cluster, &crate::policy::default_provider(), &cfg).unwrap();
        let order: Vec<(&str, PodStatus)> = out
            .report
            .pods
            .iter()
            .map(|o| (o.name.as_str(), o.status))
            .collect();
        assert_eq!(
            order,
            [
                ("run-0", PodStatus::Skipped),
                ("bad-a", PodStatus::Unschedulable),
                ("run-1", PodStatus::Skipped),
                ("bad-b", PodStatus::Unschedulable),
            ]
        );
        assert_eq!(out.report.pods[1].message, "bad-a is malformed");
        assert_eq!(out.report.summary.pods, 4);
    }
}
