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

mod admission;
pub mod files;
pub mod openb;
mod preemption;
pub mod replay;
mod report;

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1 as apps;
use k8s_openapi::api::core::v1 as core;
use rand::SeedableRng;
use rand::rngs::StdRng;
use thiserror::Error;

use crate::cache::Cache;
use crate::model::{NodeInfo, PodInfo};
use crate::policy::ResolvedPolicy;
use crate::profile::{Profile, ProfileError, SchedulerProfile};
use crate::schedule_one::{Algorithm, ScheduleError};
use crate::snapshot::{Snapshot, SnapshotError};

pub use admission::{
    NameGenerator, PriorityClasses, admit_priority, default_requests_from_limits, generate_names,
};
pub use report::{
    GpuUsage, NodeScoreJson, PodOutcome, PodStatus, PreemptionCandidateJson, PreemptionJson,
    Report, ResourceUsage, Summary, gpu_usage, resource_usage,
};

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
    /// PriorityClasses (besides the two built-in system classes).
    pub priority_classes: Vec<k8s_openapi::api::scheduling::v1::PriorityClass>,
    /// PodDisruptionBudgets (`policy/v1`), read by preemption.
    pub pod_disruption_budgets: Vec<k8s_openapi::api::policy::v1::PodDisruptionBudget>,
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

/// The state after a run, for assertions and further inspection.
pub struct Outcome {
    /// The report.
    pub report: Report,
    /// The final cluster state.
    pub snapshot: Snapshot,
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
            nominated_node_name: None,
            preemption: None,
        }
    }
}

/// A simulation run, handing out one [`PodOutcome`] at a time (it is an [`Iterator`]): first
/// the pods decided without scheduling (skipped, malformed), in input order, then each queued
/// pod as it is scheduled. [`Simulation::summary`] gives the totals once every outcome has been
/// taken.
pub struct Simulation {
    profiles: Vec<SchedulerProfile>,
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
    by_status: report::StatusCounts,
    failure_reasons: BTreeMap<String, usize>,
    warnings: Vec<String>,
    pod_width: usize,
    node_width: usize,
    replay: Option<replay::ReplayRecorder>,
    /// The pods nominated to nodes (by preemption, or read with `status.nominatedNodeName`).
    nominator: crate::preemption::Nominator,
    /// The cluster's PodDisruptionBudgets, as preemption reads them.
    pdbs: Vec<crate::preemption::Pdb>,
    /// The `DefaultPreemption` PostFilter (its offset RNG seeded from the run's seed).
    preemption: crate::preemption::DefaultPreemption,
    /// Outcomes produced ahead of the next pod's: the victims of a preemption, then the
    /// preemptor.
    pending: std::collections::VecDeque<PodOutcome>,
}

impl Simulation {
    /// `parallelism`: the workers that filter and score each pod's nodes (see
    /// [`Algorithm::set_parallelism`]; a new simulation has one). Placements do not depend on
    /// it.
    pub fn set_parallelism(&mut self, parallelism: usize) {
        self.algo.set_parallelism(parallelism);
    }

    /// Exactly `count` workers, beyond the machine's cores too (determinism tests).
    #[cfg(test)]
    pub(crate) fn set_workers_exactly(&mut self, count: usize) {
        self.algo.set_workers_exactly(count);
    }

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
        let profile = SchedulerProfile {
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
        profiles: Vec<SchedulerProfile>,
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
        profiles: Vec<SchedulerProfile>,
        cfg: &SimulationConfig,
        options: replay::ReplayOptions,
    ) -> Result<Self, SimError> {
        generate_names(&mut cluster, cfg.seed);
        admission::assign_uids(&mut cluster, cfg.seed);
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

        let priority_classes = PriorityClasses::new(&cluster.priority_classes);
        let pdbs: Vec<crate::preemption::Pdb> = cluster
            .pod_disruption_budgets
            .iter()
            .map(crate::preemption::Pdb::from_k8s)
            .collect();
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
                    admit_priority(&mut p, &priority_classes)?;
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
                admit_priority(&mut p, &priority_classes)?;
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
        // Queue Add: AddNominatedPod(pod, "") keeps the nominations the pods carry.
        let mut nominator = crate::preemption::Nominator::new();
        for (_, p) in &queue {
            nominator.add_nominated_pod(Arc::new(p.clone()), "");
        }

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
            by_status: report::StatusCounts::new(),
            failure_reasons: BTreeMap::new(),
            warnings,
            pod_width,
            node_width,
            replay: recorder,
            nominator,
            pdbs,
            preemption: crate::preemption::DefaultPreemption::new(
                crate::preemption::PreemptionArgs::default(),
                cfg.seed,
            ),
            pending: std::collections::VecDeque::new(),
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
            by_status: self.by_status.counts().clone(),
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

    /// One scheduling cycle for `pod` with `profile`, counting the nominated pods.
    fn attempt(
        &mut self,
        profile: usize,
        pod: &PodInfo,
    ) -> Result<crate::schedule_one::ScheduleResult, ScheduleError> {
        let profile = &self.profiles[profile];
        self.algo.percentage_of_nodes_to_score = profile
            .percentage_of_nodes_to_score
            .unwrap_or(self.percentage_of_nodes_to_score);
        self.algo.schedule_with_nominated(
            &profile.profile.framework,
            self.cache.snapshot(),
            pod,
            self.explain,
            &self.nominator,
        )
    }

    /// Assume, Reserve and bind `pod` on the node the cycle chose.
    fn bind(&mut self, pod: PodInfo, r: crate::schedule_one::ScheduleResult) -> PodOutcome {
        let pod = Arc::new(pod);
        // A failure of assume or Reserve is a scheduling error (v1.22:
        // PodScheduleError, reason SchedulerError); nothing stays assumed.
        let assumed = match self.cache.assume(pod.clone(), &r) {
            Ok(a) => a,
            Err(e) => {
                let mut o =
                    bare_outcome(Arc::unwrap_or_clone(pod), PodStatus::Error, e.to_string());
                o.diagnosis = r.diagnosis;
                return o;
            }
        };
        // assume: DeleteNominatedPodIfExists.
        self.nominator.delete_nominated_pod_if_exists(&pod.uid);
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
            nominated_node_name: None,
            preemption: None,
        }
    }

    /// The outcome of a failed cycle.
    fn failed(&mut self, pod: PodInfo, e: ScheduleError) -> PodOutcome {
        let message = e.to_string();
        match e {
            ScheduleError::Fit(fe) => {
                for r in fe.reason_histogram().keys() {
                    *self.failure_reasons.entry(r.clone()).or_insert(0) += 1;
                }
                let mut o = bare_outcome(pod, PodStatus::Unschedulable, message);
                o.diagnosis = self.explain.then(|| {
                    fe.node_to_status(self.cache.snapshot())
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
                bare_outcome(pod, PodStatus::Unschedulable, message)
            }
            ScheduleError::Extender { .. }
            | ScheduleError::Plugin { .. }
            | ScheduleError::ExtensionPoint { .. } => bare_outcome(pod, PodStatus::Error, message),
        }
    }
}

/// An outcome with only the pod, status and message.
fn bare_outcome(pod: PodInfo, status: PodStatus, message: String) -> PodOutcome {
    PodOutcome {
        namespace: pod.namespace,
        name: pod.name,
        status,
        node: None,
        message,
        gpu_indexes: None,
        diagnosis: None,
        scores: None,
        nominated_node_name: None,
        preemption: None,
    }
}

impl Iterator for Simulation {
    type Item = PodOutcome;

    fn next(&mut self) -> Option<PodOutcome> {
        let outcome = match self.pending.pop_front().or_else(|| self.decided.next()) {
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
                // A preemption's victims leave before the preemptor's outcome.
                match self.pending.pop_front() {
                    Some(first) => {
                        self.pending.push_back(o);
                        first
                    }
                    None => o,
                }
            }
        };
        self.by_status.record(&outcome);
        Some(outcome)
    }

    /// Exact: the outcomes decided at construction plus the pods still queued (one each).
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.decided.len() + self.queue.len();
        (n, Some(n))
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

#[cfg(test)]
mod tests;
