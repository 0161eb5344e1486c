//! The report of a run: one [`PodOutcome`] per input pod and the [`Summary`] with the
//! cluster's allocation per resource ([`resource_usage`]) and per GPU device ([`gpu_usage`]).

use std::collections::{BTreeMap, HashSet};

use serde::Serialize;

use super::replay;
use crate::model::GPU_MILLI_PER_DEVICE;
use crate::snapshot::Snapshot;

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
    /// Evicted by preemption to make room for a pod of higher priority (a second outcome of a
    /// pod that was running or scheduled earlier in the run): it leaves the cluster.
    Preempted,
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
    /// `status.nominatedNodeName`: the node preemption nominated for this pod.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nominated_node_name: Option<String>,
    /// With `--explain`, for a pod that tried to preempt: the candidates and the victims.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preemption: Option<PreemptionJson>,
}

/// What preemption considered for one pod (`--explain`).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PreemptionJson {
    /// The nodes where evicting lower-priority pods makes the pod fit, in dry-run order.
    pub candidates: Vec<PreemptionCandidateJson>,
    /// What the extenders with a `preemptVerb` left of them (nodes, victims), when any was
    /// called successfully.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after_extenders: Option<Vec<PreemptionCandidateJson>>,
    /// The node chosen (`pickOneNodeForPreemption`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nominated_node: Option<String>,
    /// The pods evicted from it (`namespace/name`), in eviction order.
    pub victims: Vec<String>,
    /// Why no node was chosen, when none was (the PostFilter status).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// One candidate node of [`PreemptionJson`].
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PreemptionCandidateJson {
    /// The node.
    pub node: String,
    /// Its victims (`namespace/name`).
    pub victims: Vec<String>,
    /// How many of them a PodDisruptionBudget protects.
    #[serde(rename = "numPDBViolations")]
    pub num_pdb_violations: i64,
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
    /// Pods by their last outcome (`Scheduled`, `Unschedulable`, `Error`, `Skipped`, and
    /// `Preempted` when preemption evicted pods): each pod counts once, so the counts add up to
    /// `pods`. A victim has two entries in the report's `pods` (its earlier `Skipped` or
    /// `Scheduled` outcome, then `Preempted`) but counts only as `Preempted`.
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

/// [`Summary::by_status`] as outcomes stream out: each pod counted once, by its last outcome.
#[derive(Debug, Clone)]
pub(crate) struct StatusCounts {
    counts: BTreeMap<String, usize>,
    /// `namespace/name` of the pods this run scheduled: a `Preempted` outcome of one of them
    /// replaces its `Scheduled`; of any other pod (one running from the start), its `Skipped`.
    scheduled: HashSet<String>,
}

impl StatusCounts {
    /// Zero for `Scheduled`, `Unschedulable`, `Error` and `Skipped` (`Preempted` appears with the
    /// first victim).
    pub(crate) fn new() -> StatusCounts {
        StatusCounts {
            counts: ["Scheduled", "Unschedulable", "Error", "Skipped"]
                .into_iter()
                .map(|s| (s.to_string(), 0))
                .collect(),
            scheduled: HashSet::new(),
        }
    }

    /// Count one outcome. Only pods on a node can be preempted, and those have had exactly one
    /// outcome before: `Scheduled` by this run, or `Skipped` as already assigned.
    pub(crate) fn record(&mut self, o: &PodOutcome) {
        let key = format!("{}/{}", o.namespace, o.name);
        match o.status {
            PodStatus::Scheduled => {
                self.scheduled.insert(key);
            }
            PodStatus::Preempted => {
                let earlier = if self.scheduled.remove(&key) {
                    PodStatus::Scheduled
                } else {
                    PodStatus::Skipped
                };
                if let Some(n) = self.counts.get_mut(&format!("{earlier:?}")) {
                    *n = n.saturating_sub(1);
                }
            }
            _ => {}
        }
        *self.counts.entry(format!("{:?}", o.status)).or_insert(0) += 1;
    }

    /// The counts so far.
    pub(crate) fn counts(&self) -> &BTreeMap<String, usize> {
        &self.counts
    }
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
