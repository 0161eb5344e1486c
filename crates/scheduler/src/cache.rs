//! The scheduler cache: the nodes and assigned pods seen by the watches, plus the pods this
//! scheduler has *assumed* (bound, or being bound, but not yet seen assigned by the watch),
//! kept as a [`Snapshot`] that scheduling cycles read directly.
//!
//! Follows kube-scheduler's `pkg/scheduler/internal/cache/cache.go` and the state machine
//! documented in `pkg/scheduler/internal/cache/interface.go` (v1.22):
//!
//! ```text
//!   +-------------------------------------------+  +----+
//!   |                            Add            |  |    |
//!   |                                           |  |    | Update
//!   +      Assume                Add            v  v    |
//! Initial +--------> Assumed +------------+---> Added <--+
//!   ^                +   +               |       +
//!   |                |   |               |       |
//!   |                |   |           Add |       | Remove
//!   |                |   |               |       |
//!   |                |   |               +       |
//!   +----------------+   +-----------> Expired   +----> Deleted
//!         Forget             Expire
//! ```
//!
//! - [`Cache::assume`] (Initial → Assumed) accounts the pod on its node at once, so the next
//!   cycle sees the resources taken before the API server has answered the binding, then runs
//!   Reserve (VolumeBinding's PV/PVC bindings); a Reserve failure forgets the pod before it
//!   returns. It is the only way in, for cluster mode and `simulate` alike, and
//!   [`Cache::forget_pod`] the only way back: every failure after assume is undone the same way.
//! - [`Cache::finish_binding`] starts the expiry clock of an assumed pod; an assumed pod whose
//!   binding never finished never expires (upstream's `bindingFinished`).
//! - [`Cache::forget_pod`] (Assumed → Initial) undoes an assumption when binding failed,
//!   including VolumeBinding's assumed PV/PVC bindings (Unreserve). [`Cache::finish_binding`] keeps them: the API server's newer objects replace
//!   them through the watches.
//! - [`Cache::add_pod`] (Assumed → Added, or Initial/Expired → Added) confirms an assumed pod
//!   when the watch shows it assigned; if it was assigned to another node than assumed, it is
//!   moved there. A pod the scheduler never assumed (bound by someone else, or before this
//!   replica started) is simply added.
//! - [`Cache::cleanup_expired`] (Assumed → Expired) drops assumed pods whose binding finished
//!   more than the TTL ago without the watch confirming them.
//! - [`Cache::remove_pod`] (Added → Deleted).
//!
//! "Initial", "Expired" and "Deleted" pods are not kept. Pending pods (deleted or bound by
//! someone else while queued) are the queue's concern, not the cache's.
//!
//! Deviations, all towards accepting what a `kube-runtime` watcher delivers (it reports
//! `Apply` for both add and update, and a relist may replay objects):
//!
//! - [`Cache::add_pod`] of an Added pod updates it, and [`Cache::update_pod`] of an Assumed or
//!   unknown pod confirms or adds it (upstream returns an error for both).
//! - A watch event carrying another UID than the cached pod of the same `namespace/name` is a
//!   new incarnation: the old one is removed first (upstream's `updatePodInCache` does this
//!   for updates; the cache itself is keyed by UID there).
//! - A pod assigned to another node than the one it was added on is moved, where upstream
//!   exits the process ("SchedulerCache is corrupted").
//! - [`Cache::remove_pod`] removes an Assumed pod too (upstream refuses): the pod is gone.
//!
//! **Pods on unknown nodes.** Upstream keeps a placeholder `NodeInfo` holding such pods
//! outside the node tree. Here every pod records its node name; a pod whose node is not in the
//! snapshot is *parked*: remembered, not accounted, invisible to scheduling. When the node is
//! added, its parked pods are accounted on it. Removing a node parks its pods the same way (the
//! pod deletions may arrive later on their own watch, as upstream's `RemoveNode` notes), so a
//! node that comes back gets its pods back. Assuming a pod onto an unknown node is an error.
//!
//! **Expiry TTL.** `durationToExpireAssumedPod` was 30 s in v1.22.0 (`internalcache.New(30 *
//! time.Second, ...)` in `pkg/scheduler/factory.go`); kubernetes/kubernetes#106412 raised it
//! (v1.23: 15 min in `pkg/scheduler/scheduler.go`) after #106361 showed pods expiring during slow
//! bindings, and its v1.22 cherry-pick (#106633, v1.22.5) set it to 2 minutes, the last v1.22
//! value: [`DEFAULT_ASSUMED_POD_TTL`]. Later releases set it to 0, never expiring, which
//! `Cache::new(None)` reproduces.
//!
//! Everything is synchronous; `now` is passed in (a monotonic [`Instant`]) so tests control
//! time. The driver calls [`Cache::cleanup_expired`] every [`CLEAN_ASSUMED_PERIOD`].

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use foldhash::{HashMap, HashMapExt};
use k8s_openapi::api::apps::v1 as apps;
use k8s_openapi::api::core::v1 as core;

use crate::framework::Reservation;
use crate::model::{NodeInfo, PodInfo};
use crate::schedule_one::ScheduleResult;
use crate::snapshot::Snapshot;

/// How long an assumed pod whose binding finished may wait for the watch to confirm it: 2
/// minutes, `durationToExpireAssumedPod` of v1.22.5+ (see the module docs).
pub const DEFAULT_ASSUMED_POD_TTL: Duration = Duration::from_secs(120);
/// How often upstream runs `cleanupAssumedPods` (`cleanAssumedPeriod`): 1 s.
pub const CLEAN_ASSUMED_PERIOD: Duration = Duration::from_secs(1);

/// Why the cache refused an operation. Each variant is named after the operation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CacheError {
    /// [`Cache::assume_pod`]: the pod is already in the cache, or the node is unknown.
    #[error("assume pod {pod} on node {node}: {reason}")]
    AssumePod {
        /// `namespace/name`.
        pod: String,
        /// The node it was to be assumed on.
        node: String,
        /// What was wrong.
        reason: &'static str,
    },
    /// [`Cache::forget_pod`]: the pod is not assumed (or assumed on another node).
    #[error("forget pod {pod}: {reason}")]
    ForgetPod {
        /// `namespace/name`.
        pod: String,
        /// What was wrong.
        reason: String,
    },
    /// [`Cache::add_pod`] / [`Cache::update_pod`]: the pod has no `spec.nodeName`.
    #[error("add pod {pod}: the pod is not assigned to a node")]
    AddPod {
        /// `namespace/name`.
        pod: String,
    },
    /// [`Cache::remove_pod`]: the pod is not in the cache (under that UID).
    #[error("remove pod {pod}: not found in the scheduler cache")]
    RemovePod {
        /// `namespace/name`.
        pod: String,
    },
    /// [`Cache::remove_node`]: no such node.
    #[error("remove node {node}: not found")]
    RemoveNode {
        /// Node name.
        node: String,
    },
}

/// Why [`Cache::assume`] refused a placement; nothing stays assumed. Either is a scheduling
/// error (v1.22 `scheduleOne`: `recordSchedulingFailure(..., SchedulerError, "")`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AssumeError {
    /// `AssumePod` failed: the pod is already cached or the node is gone ("most probably the
    /// result of a bug", upstream says).
    #[error(transparent)]
    Assume(#[from] CacheError),
    /// A Reserve plugin failed (VolumeBinding: an object changed since the cycle read it).
    #[error("running Reserve plugin {plugin:?}: {message}")]
    Reserve {
        /// The plugin (`VolumeBinding`).
        plugin: &'static str,
        /// Its error.
        message: String,
    },
}

/// A placement [`Cache::assume`] accepted: what the binding cycle needs.
#[derive(Debug, Clone)]
pub struct Assumed {
    /// The pod as cached: `node_name` set to the chosen node.
    pub pod: Arc<PodInfo>,
    /// The chosen node.
    pub node: String,
    /// GPU devices chosen, on a node that counts them (for the binding annotation).
    pub gpu_indexes: Option<Vec<u32>>,
    /// VolumeBinding's assumed PV/PVC bindings when PreBind has API writes to make (`None`
    /// when the pod has no claim to bind).
    pub volumes: Option<crate::volume::AssumedPodVolumes>,
}

/// Where a cached pod is in the state machine (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodState {
    /// Assumed by this scheduler, not yet seen assigned by the watch.
    Assumed {
        /// When the assumption expires: `None` until [`Cache::finish_binding`] (or when the
        /// cache has no TTL).
        deadline: Option<Instant>,
        /// [`Cache::finish_binding`] was called.
        binding_finished: bool,
    },
    /// Seen assigned by the watch.
    Added,
}

/// One cached pod (`podState`).
#[derive(Debug, Clone)]
struct Entry {
    pod: Arc<PodInfo>,
    /// The node the pod is accounted on (or parked for).
    node: String,
    /// GPU devices, once known: kept so the pod gets the same devices when re-accounted.
    gpu_indexes: Option<Vec<u32>>,
    state: PodState,
}

/// The scheduler cache (see the module docs).
#[derive(Debug, Clone)]
pub struct Cache {
    ttl: Option<Duration>,
    snapshot: Snapshot,
    pods: HashMap<String, Entry>,
    /// Node name → keys of the pods on it, including parked pods of absent nodes.
    by_node: HashMap<String, BTreeSet<String>>,
    assumed: usize,
}

impl Default for Cache {
    fn default() -> Cache {
        Cache::new(Some(DEFAULT_ASSUMED_POD_TTL))
    }
}

impl Cache {
    /// An empty cache whose assumed pods expire `ttl` after their binding finished; `None`
    /// never expires them.
    pub fn new(ttl: Option<Duration>) -> Cache {
        Cache {
            ttl,
            snapshot: Snapshot::new(),
            pods: HashMap::new(),
            by_node: HashMap::new(),
            assumed: 0,
        }
    }

    /// The cluster state for the next scheduling cycle: nodes present, with their Added and
    /// Assumed pods accounted (parked pods are not).
    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    /// Set the workload's typical pods the GPU fragmentation scorers read
    /// ([`Snapshot::typical_pods`]).
    pub fn set_typical_pods(&mut self, tp: Option<Arc<crate::model::typical_pods::TypicalPods>>) {
        self.snapshot.set_typical_pods(tp);
    }

    /// The cluster state, the cache dropped ([`Cache::snapshot`]).
    pub fn into_snapshot(self) -> Snapshot {
        self.snapshot
    }

    /// True when `key` (`namespace/name`) is assumed and not yet confirmed.
    pub fn is_assumed(&self, key: &str) -> bool {
        matches!(
            self.pods.get(key).map(|e| e.state),
            Some(PodState::Assumed { .. })
        )
    }

    /// The state of `key` (`namespace/name`), `None` when not cached.
    pub fn pod_state(&self, key: &str) -> Option<PodState> {
        self.pods.get(key).map(|e| e.state)
    }

    /// The pod cached under `key` (`namespace/name`) once the watch confirmed it (Added, parked
    /// included); `None` when assumed or not cached.
    pub fn added_pod(&self, key: &str) -> Option<&Arc<PodInfo>> {
        self.pods
            .get(key)
            .filter(|e| matches!(e.state, PodState::Added))
            .map(|e| &e.pod)
    }

    /// The node `key` (`namespace/name`) is on (or parked for).
    pub fn pod_node(&self, key: &str) -> Option<&str> {
        self.pods.get(key).map(|e| e.node.as_str())
    }

    /// Cached pods (Assumed and Added, parked included).
    pub fn pod_count(&self) -> usize {
        self.pods.len()
    }

    /// Assumed pods.
    pub fn assumed_pod_count(&self) -> usize {
        self.assumed
    }

    /// The assumed pods (not yet confirmed by the watch), in no particular order.
    pub fn assumed_pods(&self) -> impl Iterator<Item = &Arc<PodInfo>> {
        self.pods
            .values()
            .filter(|e| matches!(e.state, PodState::Assumed { .. }))
            .map(|e| &e.pod)
    }

    /// Pods whose node is not in the snapshot.
    pub fn parked_pod_count(&self) -> usize {
        self.by_node
            .iter()
            .filter(|(n, _)| self.snapshot.node_index(n).is_none())
            .map(|(_, keys)| keys.len())
            .sum()
    }

    // ---- nodes ----

    /// `AddNode`/`UpdateNode`: add the node, or replace its object keeping its pods. A new node
    /// gets the pods parked for it. `node` must hold no pods ([`NodeInfo::from_node`]).
    pub fn add_node(&mut self, node: NodeInfo) {
        debug_assert!(
            node.pods.is_empty(),
            "add_node takes a NodeInfo without pods"
        );
        let name = node.name.clone();
        if self.snapshot.node_index(&name).is_some() {
            self.snapshot.update_node(node);
            return;
        }
        // A fresh name cannot be a duplicate.
        let _ = self.snapshot.add_node(node);
        let parked: Vec<String> = self
            .by_node
            .get(&name)
            .map(|k| k.iter().cloned().collect())
            .unwrap_or_default();
        for key in parked {
            self.account(&key);
        }
    }

    /// Same as [`Cache::add_node`] (an update of an unknown node adds it).
    pub fn update_node(&mut self, node: NodeInfo) {
        self.add_node(node);
    }

    /// `RemoveNode`: the node leaves the snapshot; its pods stay cached, parked, until their
    /// own deletions arrive or the node comes back.
    ///
    /// # Errors
    /// [`CacheError::RemoveNode`] when the node is not in the snapshot.
    pub fn remove_node(&mut self, name: &str) -> Result<(), CacheError> {
        match self.snapshot.remove_node(name) {
            Some(_) => Ok(()),
            None => Err(CacheError::RemoveNode { node: name.into() }),
        }
    }

    // ---- workload objects, for spreading ----

    /// Add or replace a Service ([`Snapshot::upsert_service`]).
    pub fn upsert_service(&mut self, svc: &core::Service) {
        self.snapshot.upsert_service(svc);
    }

    /// Remove a Service.
    pub fn remove_service(&mut self, namespace: &str, name: &str) {
        self.snapshot.remove_service(namespace, name);
    }

    /// Add or replace a ReplicationController.
    pub fn upsert_replication_controller(&mut self, rc: &core::ReplicationController) {
        self.snapshot.upsert_replication_controller(rc);
    }

    /// Remove a ReplicationController.
    pub fn remove_replication_controller(&mut self, namespace: &str, name: &str) {
        self.snapshot.remove_replication_controller(namespace, name);
    }

    /// Add or replace a ReplicaSet.
    pub fn upsert_replica_set(&mut self, rs: &apps::ReplicaSet) {
        self.snapshot.upsert_replica_set(rs);
    }

    /// Remove a ReplicaSet.
    pub fn remove_replica_set(&mut self, namespace: &str, name: &str) {
        self.snapshot.remove_replica_set(namespace, name);
    }

    /// Add or replace a StatefulSet.
    pub fn upsert_stateful_set(&mut self, ss: &apps::StatefulSet) {
        self.snapshot.upsert_stateful_set(ss);
    }

    /// Remove a StatefulSet.
    pub fn remove_stateful_set(&mut self, namespace: &str, name: &str) {
        self.snapshot.remove_stateful_set(namespace, name);
    }

    /// Add or replace a Namespace ([`Snapshot::upsert_namespace`]; labels for pod affinity
    /// `namespaceSelector`).
    pub fn upsert_namespace(&mut self, ns: &core::Namespace) {
        self.snapshot.upsert_namespace(ns);
    }

    /// Remove a Namespace.
    pub fn remove_namespace(&mut self, name: &str) {
        self.snapshot.remove_namespace(name);
    }

    // ---- volumes ----

    /// The PersistentVolumes, PersistentVolumeClaims, StorageClasses and CSINodes
    /// ([`Snapshot::volumes_mut`]); watch events apply here.
    pub fn volumes_mut(&mut self) -> &mut crate::volume::VolumeIndex {
        self.snapshot.volumes_mut()
    }

    // ---- pods ----

    /// Account `key` on its node when the node is present, recording the GPU devices chosen.
    fn account(&mut self, key: &str) {
        if let Some(e) = self.pods.get_mut(key) {
            Self::account_entry(&mut self.snapshot, key, e);
        }
    }

    /// [`Cache::account`] of an entry held apart from `pods` (being inserted): the same
    /// accounting without looking the key up again or copying the node's name.
    fn account_entry(snapshot: &mut Snapshot, key: &str, e: &mut Entry) {
        if snapshot.node_index(&e.node).is_none() {
            return;
        }
        if snapshot
            .add_pod(e.pod.clone(), Some(&e.node), e.gpu_indexes.clone())
            .is_ok()
        {
            let devices = snapshot
                .node(&e.node)
                .and_then(|n| n.gpu_assignments.get(key).cloned());
            e.gpu_indexes = devices.or(e.gpu_indexes.take());
        }
    }

    /// Insert a new entry and account it.
    fn insert(&mut self, key: String, mut entry: Entry) {
        if matches!(entry.state, PodState::Assumed { .. }) {
            self.assumed += 1;
        }
        // The node's name is copied only for its first pod.
        match self.by_node.get_mut(&entry.node) {
            Some(keys) => {
                keys.insert(key.clone());
            }
            None => {
                self.by_node
                    .insert(entry.node.clone(), BTreeSet::from([key.clone()]));
            }
        }
        Self::account_entry(&mut self.snapshot, &key, &mut entry);
        self.pods.insert(key, entry);
    }

    /// Remove an entry and unaccount it.
    fn evict(&mut self, key: &str) -> Option<Entry> {
        let e = self.pods.remove(key)?;
        if matches!(e.state, PodState::Assumed { .. }) {
            self.assumed -= 1;
        }
        if let Some(keys) = self.by_node.get_mut(&e.node) {
            keys.remove(key);
            if keys.is_empty() {
                self.by_node.remove(&e.node);
            }
        }
        self.snapshot
            .remove_pod(&e.node, &e.pod.namespace, &e.pod.name);
        Some(e)
    }

    /// v1.22 `scheduleOne` between the algorithm and the binding cycle: `assume` the pod on
    /// the node the cycle chose ([`ScheduleResult`]), with its GPU devices, then run Reserve:
    /// assume each of the result's [`Reservation`]s (VolumeBinding's PV/PVC bindings, so the
    /// next cycles see those PVs taken). A Reserve failure runs Unreserve and forgets the pod
    /// before returning. Undo a placement whose binding then fails with
    /// [`Cache::forget_pod`]; [`Cache::finish_binding`] ends a successful one.
    ///
    /// # Errors
    /// [`AssumeError::Assume`] when the pod is already cached or the node is gone,
    /// [`AssumeError::Reserve`] when a reservation cannot be assumed; nothing stays assumed.
    pub fn assume(
        &mut self,
        pod: Arc<PodInfo>,
        result: &ScheduleResult,
    ) -> Result<Assumed, AssumeError> {
        // No devices are recorded on a node that does not count them (GpuShare).
        let gpu_indexes = (pod.gpu.count > 0 && !result.gpu_indexes.is_empty())
            .then(|| result.gpu_indexes.clone());
        let cached = self.assume_pod(pod, &result.node, gpu_indexes.clone())?;
        let mut volumes = None;
        for r in &result.reservations {
            match r {
                Reservation::Volumes(v) => {
                    let index = self.snapshot.volumes_mut();
                    match crate::volume::binder::assume_pod_volumes(index, &cached, &result.node, v)
                    {
                        Ok(a) if a.all_bound => {}
                        Ok(a) => volumes = Some(a),
                        Err(e) => {
                            // Unreserve and forget: the pod was assumed just above, on this
                            // node, so forgetting it cannot fail.
                            let _ = self.forget_pod(&cached);
                            return Err(AssumeError::Reserve {
                                plugin: crate::framework::plugins::volume_binding::NAME,
                                message: e.to_string(),
                            });
                        }
                    }
                }
            }
        }
        Ok(Assumed {
            pod: cached,
            node: result.node.clone(),
            gpu_indexes,
            volumes,
        })
    }

    /// `AssumePod`: account `pod` on `node` now, before the binding is written, with GPU
    /// devices `gpu_indexes` when the Reserve step chose them. Returns the cached copy, whose
    /// `node_name` is `node` (the raw `pod.pod` object is left as it was).
    ///
    /// # Errors
    /// [`CacheError::AssumePod`] when the pod is already cached (assumed or added) or `node`
    /// is not in the snapshot; nothing changes.
    fn assume_pod(
        &mut self,
        pod: Arc<PodInfo>,
        node: &str,
        gpu_indexes: Option<Vec<u32>>,
    ) -> Result<Arc<PodInfo>, CacheError> {
        let key = pod.key();
        let err = |reason| CacheError::AssumePod {
            pod: key.clone(),
            node: node.into(),
            reason,
        };
        if self.pods.contains_key(&key) {
            return Err(err("the pod is already in the cache"));
        }
        if self.snapshot.node_index(node).is_none() {
            return Err(err("the node is not in the cache"));
        }
        let pod = if pod.node_name == node {
            pod
        } else {
            Arc::new(PodInfo {
                node_name: node.into(),
                ..(*pod).clone()
            })
        };
        tracing::debug!(pod = %key, node = %node, "Pod assumed");
        self.insert(
            key,
            Entry {
                pod: pod.clone(),
                node: node.into(),
                gpu_indexes,
                state: PodState::Assumed {
                    deadline: None,
                    binding_finished: false,
                },
            },
        );
        Ok(pod)
    }

    /// `FinishBinding`: the binding of assumed `key` (`namespace/name`) is done (successfully
    /// or not known to have failed); its expiry deadline becomes `now + ttl`. No-op for pods
    /// that are not assumed.
    pub fn finish_binding(&mut self, key: &str, now: Instant) {
        let ttl = self.ttl;
        if let Some(e) = self.pods.get_mut(key)
            && let PodState::Assumed { .. } = e.state
        {
            e.state = PodState::Assumed {
                deadline: ttl.map(|t| now + t),
                binding_finished: true,
            };
        }
        // The volume bindings were written: keep them assumed until the watch brings newer
        // objects, but there is nothing left to undo.
        if self.snapshot.volumes().has_assumed_pod(key) {
            self.snapshot.volumes_mut().finish_pod_volumes(key);
        }
    }

    /// `ForgetPod`: undo [`Cache::assume_pod`] (binding failed): the pod's resources are
    /// released. When `pod` carries a `node_name`, it must be the assumed node.
    ///
    /// VolumeBinding's Unreserve runs first and whatever `ForgetPod` then finds (v1.22
    /// `scheduleOne` calls `RunReservePluginsUnreserve` before, and independently of,
    /// `ForgetPod`): the pod's assumed PV/PVC bindings are reverted even when the pod itself is
    /// no longer assumed (e.g. the watch confirmed a binding whose reply was lost).
    ///
    /// # Errors
    /// [`CacheError::ForgetPod`] when the pod is not assumed (unknown, or already confirmed by
    /// the watch) or was assumed on another node; the pod's accounting does not change.
    pub fn forget_pod(&mut self, pod: &PodInfo) -> Result<(), CacheError> {
        let key = pod.key();
        // Unreserve of VolumeBinding: the pod's assumed PV/PVC bindings go.
        if self.snapshot.volumes().has_assumed_pod(&key) {
            self.snapshot.volumes_mut().revert_pod_volumes(&key);
        }
        let Some(e) = self.pods.get(&key) else {
            return Err(CacheError::ForgetPod {
                pod: key,
                reason: "the pod wasn't assumed".into(),
            });
        };
        if !pod.node_name.is_empty() && pod.node_name != e.node {
            return Err(CacheError::ForgetPod {
                reason: format!(
                    "the pod was assumed on {} but assigned to {}",
                    e.node, pod.node_name
                ),
                pod: key,
            });
        }
        if !matches!(e.state, PodState::Assumed { .. }) {
            return Err(CacheError::ForgetPod {
                pod: key,
                reason: "the pod wasn't assumed".into(),
            });
        }
        self.evict(&key);
        tracing::debug!(pod = %key, "Assumed pod forgotten");
        Ok(())
    }

    /// `AddPod` for a pod the watch shows assigned (`spec.nodeName` set):
    ///
    /// - Assumed → Added: confirmed; moved if it landed on another node than assumed; its
    ///   object is replaced by the watched one, keeping the assumed GPU devices unless the
    ///   pod records its own;
    /// - not cached (or expired) → Added, accounted on its node (parked if the node is
    ///   unknown);
    /// - Added → updated (as [`Cache::update_pod`]);
    /// - cached under another UID → the old incarnation is removed first.
    ///
    /// # Errors
    /// [`CacheError::AddPod`] when the pod has no `spec.nodeName`.
    pub fn add_pod(&mut self, pod: Arc<PodInfo>) -> Result<(), CacheError> {
        let key = pod.key();
        if pod.node_name.is_empty() {
            return Err(CacheError::AddPod { pod: key });
        }
        // The very object assumed (`simulate` confirms its placements at once): only the
        // state changes, the accounting stands.
        if let Some(e) = self.pods.get_mut(&key)
            && Arc::ptr_eq(&e.pod, &pod)
        {
            if matches!(e.state, PodState::Assumed { .. }) {
                e.state = PodState::Added;
                self.assumed -= 1;
            }
            return Ok(());
        }
        // The same incarnation on the node it is cached on (the watch confirming our own
        // binding, or an update): re-accounted with the new object in place, as evicting and
        // inserting it would, without copying its key and node name into the indexes again.
        if let Some(e) = self.pods.get_mut(&key)
            && (e.pod.uid.is_empty() || pod.uid.is_empty() || e.pod.uid == pod.uid)
            && e.node == pod.node_name
        {
            if matches!(e.state, PodState::Assumed { .. }) {
                self.assumed -= 1;
            }
            self.snapshot
                .remove_pod(&e.node, &e.pod.namespace, &e.pod.name);
            // Keep the devices known so far unless the pod names its own.
            if pod.gpu_indexes.is_some() {
                e.gpu_indexes.clone_from(&pod.gpu_indexes);
            }
            e.pod = pod;
            e.state = PodState::Added;
            Self::account_entry(&mut self.snapshot, &key, e);
            return Ok(());
        }
        let previous = match self.pods.get(&key) {
            Some(e) if !e.pod.uid.is_empty() && !pod.uid.is_empty() && e.pod.uid != pod.uid => {
                self.evict(&key);
                None
            }
            Some(_) => self.evict(&key),
            None => None,
        };
        if let Some(prev) = &previous
            && prev.node != pod.node_name
        {
            match prev.state {
                PodState::Assumed { .. } => tracing::info!(
                    pod = %key, assumed = %prev.node, node = %pod.node_name,
                    "Pod was added to a different node than it was assumed"
                ),
                PodState::Added => tracing::warn!(
                    pod = %key, previous = %prev.node, node = %pod.node_name,
                    "Pod updated on a different node than previously added to"
                ),
            }
        }
        // Same node: keep the devices known so far unless the pod names its own.
        let gpu_indexes = pod.gpu_indexes.clone().or_else(|| {
            previous
                .as_ref()
                .filter(|p| p.node == pod.node_name)
                .and_then(|p| p.gpu_indexes.clone())
        });
        let node = pod.node_name.clone();
        self.insert(
            key,
            Entry {
                pod,
                node,
                gpu_indexes,
                state: PodState::Added,
            },
        );
        Ok(())
    }

    /// `UpdatePod`: same as [`Cache::add_pod`]; the pod is re-accounted with its new object
    /// (upstream's `updatePod` is remove-then-add too).
    ///
    /// # Errors
    /// [`CacheError::AddPod`] when the pod has no `spec.nodeName`.
    pub fn update_pod(&mut self, pod: Arc<PodInfo>) -> Result<(), CacheError> {
        self.add_pod(pod)
    }

    /// `RemovePod`: the watch saw the assigned pod deleted (or no longer assigned, e.g.
    /// Succeeded/Failed); its resources are released, whatever its state.
    ///
    /// # Errors
    /// [`CacheError::RemovePod`] when no pod of that `namespace/name` is cached, or the cached
    /// one has another UID (a newer incarnation, kept).
    pub fn remove_pod(&mut self, pod: &PodInfo) -> Result<(), CacheError> {
        let key = pod.key();
        match self.pods.get(&key) {
            Some(e) if e.pod.uid.is_empty() || pod.uid.is_empty() || e.pod.uid == pod.uid => {
                self.evict(&key);
                Ok(())
            }
            _ => Err(CacheError::RemovePod { pod: key }),
        }
    }

    /// `cleanupAssumedPods`: expire the assumed pods whose binding finished and whose deadline
    /// is before `now` (strictly), releasing their resources. Pods still binding never expire.
    /// Returns the expired keys, sorted.
    pub fn cleanup_expired(&mut self, now: Instant) -> Vec<String> {
        let mut expired: Vec<String> = self
            .pods
            .iter()
            .filter(|(_, e)| match e.state {
                PodState::Assumed {
                    deadline: Some(d),
                    binding_finished: true,
                } => now > d,
                _ => false,
            })
            .map(|(k, _)| k.clone())
            .collect();
        expired.sort();
        for key in &expired {
            self.evict(key);
            tracing::info!(pod = %key, "Pod expired");
        }
        expired
    }
}

/// Cases follow `pkg/scheduler/internal/cache/cache_test.go` (v1.22), named in each test's
/// doc, plus the parked-pod and UID cases this cache adds.
#[cfg(test)]
#[path = "cache_properties.rs"]
mod cache_properties;

#[cfg(test)]
#[path = "cache_test.rs"]
mod tests;
