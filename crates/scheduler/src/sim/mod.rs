//! `simulate`: run the real scheduling cycle over a cluster read from files, no API server.
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

pub mod files;
pub mod openb;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::apps::v1 as apps;
use k8s_openapi::api::core::v1 as core;
use serde::Serialize;
use thiserror::Error;

use crate::framework::types::{GPU_MILLI_PER_DEVICE, NodeInfo, PodInfo};
use crate::framework::{Framework, FrameworkError};
use crate::policy::ResolvedPolicy;
use crate::schedule_one::{Algorithm, ScheduleError};
use crate::snapshot::Snapshot;

/// Objects read from cluster files.
#[derive(Debug, Default, Clone)]
pub struct Cluster {
    /// Nodes.
    pub nodes: Vec<core::Node>,
    /// Pods, running and pending, in input order.
    pub pods: Vec<core::Pod>,
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
    /// Things read but ignored.
    pub warnings: Vec<String>,
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
    /// Malformed YAML.
    #[error("{file}:{line}:{column}: {message}")]
    Yaml {
        /// Path.
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// Parser message.
        message: String,
    },
    /// An object that does not decode as its kind.
    #[error("{file}: document {document}: {kind}: {message}")]
    Decode {
        /// Path.
        file: String,
        /// 1-based YAML document number.
        document: usize,
        /// The object's kind.
        kind: String,
        /// Decoder message (names the field).
        message: String,
    },
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
    /// A node with a malformed quantity or a duplicate name.
    #[error("{0}")]
    Node(String),
    /// The policy names plugins this build lacks.
    #[error(transparent)]
    Framework(#[from] FrameworkError),
    /// An extender of the policy cannot be set up (URL, TLS material).
    #[error(transparent)]
    Extender(#[from] crate::extender::ExtenderConfigError),
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
    /// Seed of the tie-breaking RNG.
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
    /// GPU devices chosen, for pods that request GPUs.
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
    /// Pods by outcome.
    pub by_status: BTreeMap<String, usize>,
    /// Unschedulable pods by failure reason (a pod counts once per reason).
    pub failure_reasons: BTreeMap<String, usize>,
    /// Allocation per resource.
    pub resources: Vec<ResourceUsage>,
    /// GPU devices.
    pub gpu: GpuUsage,
    /// Wall time of the scheduling loop, seconds.
    pub wall_time_seconds: f64,
    /// Pods attempted per second of wall time.
    pub pods_per_second: f64,
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

/// Run the simulation.
///
/// # Errors
/// [`SimError::Node`] for malformed nodes, [`SimError::Framework`] for a policy naming missing
/// plugins, [`SimError::Extender`] for an extender that cannot be set up. Malformed pods do not stop the run: they are reported `Unschedulable`.
pub fn simulate(
    cluster: Cluster,
    policy: &ResolvedPolicy,
    cfg: &SimulationConfig,
) -> Result<Outcome, SimError> {
    let fwk = Framework::from_policy(policy)?;
    let mut snapshot = Snapshot::new();
    let mut warnings = cluster.warnings;
    for n in cluster.nodes {
        let ni = NodeInfo::from_node(n).map_err(|e| SimError::Node(e.to_string()))?;
        snapshot
            .add_node(ni)
            .map_err(|e| SimError::Node(e.to_string()))?;
    }
    for s in &cluster.services {
        snapshot.upsert_service(s);
    }
    for rc in &cluster.replication_controllers {
        snapshot.upsert_replication_controller(rc);
    }
    for rs in &cluster.replica_sets {
        snapshot.upsert_replica_set(rs);
    }
    for ss in &cluster.stateful_sets {
        snapshot.upsert_stateful_set(ss);
    }
    for ns in &cluster.namespaces {
        snapshot.upsert_namespace(ns);
    }
    {
        let volumes = snapshot.volumes_mut();
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

    let total_pods = cluster.pods.len();
    let mut outcomes = Vec::with_capacity(total_pods);
    let mut queue: Vec<(usize, PodInfo)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (i, pod) in cluster.pods.into_iter().enumerate() {
        let phase = pod
            .status
            .as_ref()
            .and_then(|s| s.phase.clone())
            .unwrap_or_default();
        let ns = pod
            .metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into());
        let name = pod.metadata.name.clone().unwrap_or_default();
        let node_name = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .unwrap_or_default();
        let scheduler_name = pod
            .spec
            .as_ref()
            .and_then(|s| s.scheduler_name.clone())
            .unwrap_or_default();
        let skipped = |message: String, node: Option<String>| PodOutcome {
            namespace: ns.clone(),
            name: name.clone(),
            status: PodStatus::Skipped,
            node,
            message,
            gpu_indexes: None,
            diagnosis: None,
            scores: None,
        };
        if phase == "Succeeded" || phase == "Failed" {
            outcomes.push(skipped(
                format!("pod phase is {phase}"),
                (!node_name.is_empty()).then_some(node_name),
            ));
            continue;
        }
        let key = format!("{ns}/{name}");
        if !seen.insert(key.clone()) {
            warnings.push(format!(
                "pod {key} appears twice in the input; the second one is ignored"
            ));
            outcomes.push(skipped(
                "duplicate of an earlier pod with the same namespace/name".into(),
                None,
            ));
            continue;
        }
        if !node_name.is_empty() {
            let message = match PodInfo::from_pod(pod) {
                Ok(pi) => {
                    let gpu = pi.gpu_indexes.clone();
                    match snapshot.add_pod(Arc::new(pi), None, gpu) {
                        Ok(()) => format!("already assigned to node {node_name}"),
                        Err(e) => {
                            warnings.push(e.to_string());
                            format!("assigned to unknown node {node_name}; not counted")
                        }
                    }
                }
                Err(e) => {
                    warnings.push(format!("{e}; not counted against node {node_name}"));
                    format!("already assigned to node {node_name}; not counted: {e}")
                }
            };
            outcomes.push(skipped(message, Some(node_name)));
            continue;
        }
        if pod.metadata.deletion_timestamp.is_some() {
            // skipPodSchedule (v1.22): a pod being deleted is not scheduled.
            outcomes.push(skipped("pod is being deleted".into(), None));
            continue;
        }
        if !scheduler_name.is_empty() && scheduler_name != cfg.scheduler_name {
            outcomes.push(skipped(
                format!(
                    "schedulerName is {scheduler_name:?}, not {:?}",
                    cfg.scheduler_name
                ),
                None,
            ));
            continue;
        }
        match PodInfo::from_pod(pod) {
            Ok(pi) => queue.push((i, pi)),
            Err(e) => outcomes.push(PodOutcome {
                namespace: ns,
                name,
                status: PodStatus::Unschedulable,
                node: None,
                message: e.to_string(),
                gpu_indexes: None,
                diagnosis: None,
                scores: None,
            }),
        }
    }
    // PrioritySort: priority desc, creationTimestamp asc, input order (stable sort).
    queue.sort_by(|(ia, a), (ib, b)| {
        b.priority
            .cmp(&a.priority)
            .then(a.creation_timestamp.cmp(&b.creation_timestamp))
            .then(ia.cmp(ib))
    });

    let mut algo = Algorithm::new(cfg.percentage_of_nodes_to_score, cfg.seed);
    // Extenders filter and score as in cluster mode; a simulation binds nothing, so an
    // extender's bind verb is not called.
    algo.set_extenders(crate::extender::build_extenders(&policy.extenders)?);
    let mut failure_reasons: BTreeMap<String, usize> = BTreeMap::new();
    let attempted = queue.len();
    let started = Instant::now();
    for (_, pod) in queue {
        match algo.schedule(&fwk, &snapshot, &pod, cfg.explain) {
            Ok(r) => {
                let mut assumed = pod.clone();
                assumed.node_name = r.node.clone();
                // Reserve: assume the volume bindings; with no binding cycle to fail, PreBind
                // and the PV controller's completion follow at once.
                if let Err(e) = reserve_volumes(&mut snapshot, &assumed, &r) {
                    *failure_reasons.entry(e.clone()).or_insert(0) += 1;
                    outcomes.push(PodOutcome {
                        namespace: pod.namespace,
                        name: pod.name,
                        status: PodStatus::Unschedulable,
                        node: None,
                        message: e,
                        gpu_indexes: None,
                        diagnosis: r.diagnosis,
                        scores: None,
                    });
                    continue;
                }
                let gpu = (pod.gpu.count > 0).then(|| r.gpu_indexes.clone());
                // The node exists: it was just chosen from the snapshot.
                let _ = snapshot.add_pod(Arc::new(assumed), Some(&r.node), gpu.clone());
                outcomes.push(PodOutcome {
                    message: format!("Successfully assigned {} to {}", pod.key(), r.node),
                    namespace: pod.namespace,
                    name: pod.name,
                    status: PodStatus::Scheduled,
                    node: Some(r.node),
                    gpu_indexes: gpu,
                    diagnosis: r.diagnosis,
                    scores: r.scores.map(|m| {
                        m.into_iter()
                            .map(|(n, b)| {
                                (
                                    n,
                                    NodeScoreJson {
                                        total: b.total,
                                        plugins: b.plugins.into_iter().collect(),
                                    },
                                )
                            })
                            .collect()
                    }),
                });
            }
            Err(e) => {
                let diagnosis = match &e {
                    ScheduleError::Fit(fe) => {
                        for r in fe.reason_histogram().keys() {
                            *failure_reasons.entry(r.clone()).or_insert(0) += 1;
                        }
                        cfg.explain.then(|| {
                            fe.node_to_status
                                .iter()
                                .map(|(n, s)| {
                                    (n.clone(), s.reasons.iter().map(|r| r.to_string()).collect())
                                })
                                .collect()
                        })
                    }
                    other => {
                        *failure_reasons.entry(other.to_string()).or_insert(0) += 1;
                        None
                    }
                };
                outcomes.push(PodOutcome {
                    namespace: pod.namespace,
                    name: pod.name,
                    status: PodStatus::Unschedulable,
                    node: None,
                    message: e.to_string(),
                    gpu_indexes: None,
                    diagnosis,
                    scores: None,
                });
            }
        }
    }
    let wall = started.elapsed().as_secs_f64();

    let mut by_status: BTreeMap<String, usize> = BTreeMap::new();
    for s in ["Scheduled", "Unschedulable", "Skipped"] {
        by_status.insert(s.into(), 0);
    }
    for o in &outcomes {
        *by_status.entry(format!("{:?}", o.status)).or_insert(0) += 1;
    }
    let summary = Summary {
        nodes: snapshot.len(),
        pods: total_pods,
        by_status,
        failure_reasons,
        resources: resource_usage(&snapshot),
        gpu: gpu_usage(&snapshot),
        wall_time_seconds: wall,
        pods_per_second: if wall > 0.0 {
            attempted as f64 / wall
        } else {
            0.0
        },
    };
    Ok(Outcome {
        report: Report {
            pods: outcomes,
            summary,
            warnings,
        },
        snapshot,
    })
}

/// Reserve for `simulate`: assume each volume reservation of `r` for `pod` on its node, then
/// commit it as PreBind and the PV controller would ([`crate::volume::VolumeIndex::commit_pod_volumes`]).
///
/// # Errors
/// The assumption failed (`running Reserve plugin "VolumeBinding": ...`); nothing stays assumed.
fn reserve_volumes(
    snapshot: &mut Snapshot,
    pod: &PodInfo,
    r: &crate::schedule_one::ScheduleResult,
) -> Result<(), String> {
    for res in &r.reservations {
        match res {
            crate::framework::Reservation::Volumes(v) => {
                let volumes = snapshot.volumes_mut();
                volumes.assume_pod_volumes(pod, &r.node, v).map_err(|e| {
                    format!(
                        "running Reserve plugin {:?}: {e}",
                        crate::framework::plugins::volume_binding::NAME
                    )
                })?;
                volumes.commit_pod_volumes(&pod.key());
            }
        }
    }
    Ok(())
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
