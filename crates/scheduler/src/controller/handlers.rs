//! The event handlers of cluster mode (v1.22 `eventhandlers.go`), as a pure struct over the
//! [`Cache`] and the [`PriorityQueue`]: each watch event updates the cache (nodes, assigned
//! pods, the mirrored kinds) or the queue (pending pods), and moves unschedulable pods when it
//! may make them fit. No I/O and no clock of its own (`now` is passed in), so it is unit-tested
//! without an API server.
//!
//! The pod's lifecycle through the controller (`mod.rs` drives the transitions marked *loop*;
//! the cache's own states are in [`crate::cache`]):
//!
//! ```text
//!  pending watch         pop + cycle            assume + Reserve (loop)
//!  Apply ───────> queued ─────────> scheduling ───────────────────────> assumed
//!                  ^  ^                 │ no fit / error (loop)            │ bind task
//!                  │  └─────────────────┘ requeued (unschedulable/backoff) │
//!                  │                                                      ├─ Bound ──> bound ──> assigned
//!                  │  forget_pod + requeue_after_failed_bind               │  (finish_binding)   (watch confirms)
//!                  └───────────────────────────────── Failed / NotLeading ┤
//!                                                      / PreBindFailed     └─ AlreadyAssigned: forgotten, dropped
//! ```
//!
//! - **pending** ([`EventHandlers::pending`]): the pending watch lists the pod; it is in the
//!   queue (active, backoff or unschedulable) unless the loop popped it.
//! - **assumed**: the loop chose a node and [`Cache::assume`] accounted it; it left `pending`
//!   and the queue. A newer pending version seen meanwhile is kept aside
//!   (`latest_pending`) in case the binding fails.
//! - **bound**: the Binding was written; the assigned watch confirms it (Assumed → Added in the
//!   cache) and removes any pending entry.
//! - **forgotten → requeued**: the binding failed; [`Cache::forget_pod`] undoes assume and
//!   Reserve, and [`EventHandlers::requeue_after_failed_bind`] queues the newest version again as
//!   unschedulable, judged against its own attempt's scheduling cycle. A pod deleted or bound
//!   elsewhere meanwhile is not queued.
//! - **malformed**: a pending pod whose spec cannot be read is kept in `malformed`, reported once
//!   per distinct problem by the leader ([`EventHandlers::unreported_malformed`]).

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::core::v1 as core;
use kube::runtime::watcher::Event as WatchEvent;
use kube::{Resource, ResourceExt};
use tracing::{debug, warn};

use super::binder::Attempt;
use super::mirror::Mirrored;
use super::watch::{KeepsObjects, Kind, Tracked, WatchMsg, key_of, split_key};
use crate::cache::Cache;
use crate::model::{PodInfo, WirePod};
use crate::queue::{ClusterEvent, PriorityQueue, QueuedPodInfo};

/// A pending pod whose spec could not be read.
struct Malformed {
    pod: Arc<core::Pod>,
    message: String,
    reported: bool,
}

/// The scheduler's view of the cluster, fed by the watches: the cache, the queue and the
/// bookkeeping of the pods between them (see the module docs).
pub(super) struct EventHandlers {
    /// Nodes, assigned and assumed pods, and the mirrored kinds.
    pub(super) cache: Cache,
    /// Pending pods waiting for a scheduling cycle.
    pub(super) queue: PriorityQueue,
    /// Relist bookkeeping per watch.
    tracked: HashMap<Kind, Tracked>,
    /// Assigned pods by key, as last seen by the assigned watch.
    assigned: HashMap<String, Arc<PodInfo>>,
    /// Pending pods by key: queued, or popped and being scheduled.
    pub(super) pending: HashMap<String, Arc<PodInfo>>,
    /// Pending pods whose spec could not be read, by key.
    malformed: HashMap<String, Malformed>,
    /// The newest pending-watch version of a pod seen while it was assumed (requeued if the
    /// binding fails).
    pub(super) latest_pending: HashMap<String, Arc<PodInfo>>,
    /// The highest resourceVersion of an assigned-pod watch event handled so far (the read
    /// barrier's LIST applies only if it is newer).
    assigned_rv: u64,
    /// The pending pods nominated to nodes (the queue's nominator in v1.22): from their
    /// `status.nominatedNodeName`, or set in memory by preemption before its patch lands.
    pub(super) nominator: crate::preemption::Nominator,
    /// PodDisruptionBudgets by key, as preemption reads them.
    pub(super) pdbs: std::collections::BTreeMap<String, crate::preemption::Pdb>,
    /// The profiles' scheduler names: pending pods naming another are not ours (v1.22
    /// `responsibleForPod`). Empty: every pod the pending watch delivers (its field selector
    /// names the one profile).
    scheduler_names: Vec<String>,
    /// Keep the API objects of nodes and assigned pods in the cache ([`NodeInfo::object`],
    /// [`PodInfo::object`]): only when an extender that is not `nodeCacheCapable` is
    /// configured, which v1.22 sends `v1.Node`s (and, for preemption, victim `v1.Pod`s).
    /// Otherwise the cache holds the compact model alone. Held (`Some`) while objects are
    /// kept: the node and assigned-pod watches then decode whole objects ([`KeepsObjects`];
    /// only the fields the compact model reads otherwise, as the cache would drop the rest).
    keep_objects: Option<KeepsObjects>,
    /// The pods seen (pending and assigned) counted by shape: the typical pods of the GPU
    /// fragmentation scorers ([`crate::framework::plugins::gpu_frag::TypicalPodCounter`]).
    /// Maintained only while [`EventHandlers::typical_on`]; empty otherwise.
    pub(super) typical: crate::framework::plugins::gpu_frag::TypicalPodCounter,
    /// Some profile has a scorer that reads the typical pods, so [`EventHandlers::typical`]
    /// is kept up to date on every pod event (otherwise that bookkeeping would cost each
    /// event for nothing).
    typical_on: bool,
}

/// An object's `metadata.resourceVersion` as a number (the API double's and etcd's are
/// integers; an opaque one is `None`).
fn resource_version<K: Resource>(o: &K) -> Option<u64> {
    o.meta().resource_version.as_deref()?.parse().ok()
}

/// [`resource_version`] of a cached pod.
fn info_resource_version(p: &PodInfo) -> Option<u64> {
    p.resource_version.parse().ok()
}

/// A read barrier LIST being applied page by page (see [`EventHandlers::apply_read_barrier`]
/// for what it does): the pages of one consistent LIST at `list_rv`, each applied as it
/// arrives, so that the 150,000 pods of a large cluster are never all held at once. A page is
/// applied only while the assigned watch is still behind the LIST: once the watch has
/// delivered an event past `list_rv` (say the deletion of a pod a later page still lists), it
/// is the newer truth and the rest of the LIST is ignored, as a LIST the watch was already
/// past is ignored whole.
pub(super) struct ReadBarrier {
    list_rv: u64,
    /// Keys listed so far (the pods not listed at the end are gone).
    listed: HashSet<String>,
    /// Pods newly seen assigned so far.
    fresh: usize,
    /// The watch got to or past the LIST: nothing more is applied.
    passed: bool,
}

impl ReadBarrier {
    /// A barrier for a LIST at `list_rv`.
    pub(super) fn new(list_rv: u64) -> ReadBarrier {
        ReadBarrier {
            list_rv,
            listed: HashSet::new(),
            fresh: 0,
            passed: false,
        }
    }

    /// Apply one page of the LIST to `h`.
    pub(super) fn page(&mut self, h: &mut EventHandlers, pods: Vec<WirePod>, now: Instant) {
        for p in pods {
            self.passed |= self.list_rv <= h.assigned_rv;
            if self.passed {
                return;
            }
            let key = key_of(&p);
            let known = h.assigned.get(&key).map(|a| info_resource_version(a));
            if known.is_none() || known.flatten() < resource_version(&p) {
                self.fresh += usize::from(known.is_none());
                h.apply_assigned(p, now);
            }
            self.listed.insert(key);
        }
    }

    /// The LIST's last page was applied: remove the assigned pods it did not list. Returns how
    /// many pods were newly seen assigned, or `None` when the watch got to or past the LIST
    /// (then it, not the LIST, removes what is gone).
    pub(super) fn finish(mut self, h: &mut EventHandlers, now: Instant) -> Option<usize> {
        self.passed |= self.list_rv <= h.assigned_rv;
        if self.passed {
            return None;
        }
        let gone: Vec<String> = h
            .assigned
            .keys()
            .filter(|k| !self.listed.contains(*k))
            .cloned()
            .collect();
        for k in gone {
            h.remove_assigned(&k, now);
        }
        Some(self.fresh)
    }
}

impl EventHandlers {
    /// Empty, over `cache` and `queue`.
    pub(super) fn new(cache: Cache, queue: PriorityQueue) -> EventHandlers {
        EventHandlers {
            cache,
            queue,
            tracked: Kind::ALL.iter().map(|k| (*k, Tracked::default())).collect(),
            assigned: HashMap::new(),
            pending: HashMap::new(),
            malformed: HashMap::new(),
            latest_pending: HashMap::new(),
            assigned_rv: 0,
            nominator: crate::preemption::Nominator::new(),
            pdbs: std::collections::BTreeMap::new(),
            scheduler_names: Vec::new(),
            keep_objects: None,
            typical: Default::default(),
            typical_on: true,
        }
    }

    /// Whether the typical pods are counted ([`EventHandlers::set_typical_pods_counted`]).
    pub(super) fn with_typical_pods_counted(mut self, on: bool) -> EventHandlers {
        self.typical_on = on;
        self
    }

    /// Count the typical pods from now on (`on`: some profile reads them, e.g. after a policy
    /// reload added FGD), or stop. Turned on, the counter is rebuilt from the pods held now —
    /// assigned, pending, and assumed (being bound, which the counter keeps too) — so that it
    /// holds what it would have had it been maintained all along; turned off, it is emptied.
    pub(super) fn set_typical_pods_counted(&mut self, on: bool) {
        if on == self.typical_on {
            return;
        }
        self.typical_on = on;
        self.typical = Default::default();
        if !on {
            return;
        }
        let mut pods: HashMap<String, &Arc<PodInfo>> =
            self.cache.assumed_pods().map(|p| (p.key(), p)).collect();
        pods.extend(self.assigned.iter().map(|(k, p)| (k.clone(), p)));
        pods.extend(self.pending.iter().map(|(k, p)| (k.clone(), p)));
        for (k, p) in pods {
            self.typical.set(&k, Some(p));
        }
    }

    /// [`crate::framework::plugins::gpu_frag::TypicalPodCounter::set`], while counted.
    fn set_typical(&mut self, key: &str, pod: Option<&PodInfo>) {
        if self.typical_on {
            self.typical.set(key, pod);
        }
    }

    /// Keep the API objects of nodes and assigned pods (see [`EventHandlers::keep_objects`]'s
    /// field docs): set when an extender that is not `nodeCacheCapable` is configured.
    pub(super) fn with_kept_objects(mut self, keep: bool) -> EventHandlers {
        let _ = self.set_kept_objects(keep);
        self
    }

    /// [`EventHandlers::with_kept_objects`] after a policy reload: objects read from now on.
    /// Returns whether keeping turned on: the nodes and assigned pods cached so far have no
    /// object (they were decoded without it), so the caller restarts their watches and
    /// awaits the relists ([`EventHandlers::expect_relist`]) before a scheduling cycle may
    /// send them to an extender. Turned off, the objects held are dropped at once
    /// ([`EventHandlers::drop_kept_objects`]): nothing reads them any more.
    pub(super) fn set_kept_objects(&mut self, keep: bool) -> bool {
        if keep == self.keep_objects.is_some() {
            return false;
        }
        self.keep_objects = keep.then(KeepsObjects::new);
        if !keep {
            self.drop_kept_objects();
        }
        keep
    }

    /// Keeping turned off: every cached node and assigned pod is replaced by itself without
    /// its API object, as the watches will deliver them from now on. Without this, a reload
    /// that removed the last extender that is not `nodeCacheCapable` left the objects of the
    /// whole cluster in memory (most of the 1.5 GB issue 12 measured at 5,000 nodes and 150,000
    /// pods with whole objects) until each object's next update, which for a bound pod may
    /// never come. Each node is rebuilt from its object and each pod re-added, as a watch
    /// update that changed nothing would be (the same accounting, no queue move); the pending
    /// pods keep theirs (they always do). Nodes and pods already without an object are left
    /// alone.
    fn drop_kept_objects(&mut self) {
        let nodes: Vec<Arc<core::Node>> = self
            .cache
            .snapshot()
            .nodes()
            .iter()
            .filter_map(|n| n.object.clone())
            .collect();
        for n in nodes {
            // A cached node was built from this object, so it builds again.
            if let Ok(ni) =
                crate::model::NodeInfo::from_node_without_object(Arc::unwrap_or_clone(n))
            {
                self.cache.update_node(ni);
            }
        }
        for (key, pi) in &mut self.assigned {
            if pi.object.is_some() {
                let slim = Arc::new(PodInfo::clone(pi).without_object());
                // Re-added only where the cache holds this very pod (not one it refused, nor
                // a newer incarnation assumed before this one's deletion arrived).
                if self
                    .cache
                    .added_pod(key)
                    .is_some_and(|c| Arc::ptr_eq(c, pi))
                {
                    let _ = self.cache.update_pod(slim.clone());
                }
                *pi = slim;
            }
        }
    }

    /// The watch of `kind` was restarted ([`super::watch::Watches::restart`] returned
    /// `epoch`): [`EventHandlers::synced`] is false until the new watch has relisted, which
    /// holds scheduling cycles and the read barrier's LIST as the first list does.
    pub(super) fn expect_relist(&mut self, kind: Kind, epoch: u64) {
        self.tracked.entry(kind).or_default().expect_restart(epoch);
    }

    /// Only pending pods whose `spec.schedulerName` is one of `names` are queued (for a pending
    /// watch that cannot select them by name: several profiles).
    pub(super) fn with_scheduler_names(mut self, names: Vec<String>) -> EventHandlers {
        self.scheduler_names = names;
        self
    }

    /// `p` is a pending pod of one of our profiles.
    fn responsible_for(&self, p: &WirePod) -> bool {
        self.scheduler_names.is_empty()
            || p.scheduler_name()
                .is_some_and(|n| self.scheduler_names.iter().any(|s| s == n))
    }

    /// Every watch has listed once, and every restarted watch has relisted since
    /// ([`EventHandlers::expect_relist`]).
    pub(super) fn synced(&self) -> bool {
        self.tracked.values().all(Tracked::ready)
    }

    /// The malformed pod versions not reported yet, now marked reported: the leader reports
    /// them as FailedScheduling (followers do not call this, so that a new leader reports what
    /// its predecessor may not have).
    pub(super) fn unreported_malformed(&mut self) -> Vec<(Arc<core::Pod>, String)> {
        let mut reports = Vec::new();
        for m in self.malformed.values_mut().filter(|m| !m.reported) {
            m.reported = true;
            reports.push((m.pod.clone(), m.message.clone()));
        }
        reports
    }

    pub(super) fn handle(&mut self, m: WatchMsg, now: Instant) {
        match m {
            WatchMsg::Node(ev) => self.node_event(ev, true, now),
            WatchMsg::SlimNode(ev) => self.node_event(ev, false, now),
            WatchMsg::Restarted { kind, epoch } => {
                self.tracked.entry(kind).or_default().restarted(epoch);
            }
            WatchMsg::AssignedPod(ev) => {
                // The assigned pods' keys are `assigned`'s (a pod the cache refused as
                // malformed is not there, and has nothing to remove).
                let gone = self
                    .tracked
                    .entry(Kind::AssignedPods)
                    .or_default()
                    .observe_held(&ev, &self.assigned);
                for gone in gone {
                    self.remove_assigned(&gone, now);
                }
                if let WatchEvent::Apply(p) | WatchEvent::InitApply(p) | WatchEvent::Delete(p) = &ev
                    && let Some(rv) = resource_version(p)
                {
                    self.assigned_rv = self.assigned_rv.max(rv);
                }
                match ev {
                    WatchEvent::Apply(p) | WatchEvent::InitApply(p) => self.apply_assigned(p, now),
                    WatchEvent::Delete(p) => self.remove_assigned(&key_of(&p), now),
                    WatchEvent::Init | WatchEvent::InitDone => {}
                }
            }
            WatchMsg::PendingPod(ev) => {
                // The pod's key, once for the relist bookkeeping and the handlers.
                let key = match &ev {
                    WatchEvent::Apply(p) | WatchEvent::InitApply(p) | WatchEvent::Delete(p) => {
                        Some(key_of(p))
                    }
                    WatchEvent::Init | WatchEvent::InitDone => None,
                };
                let gone = self
                    .tracked
                    .entry(Kind::PendingPods)
                    .or_default()
                    .observe_keyed(&ev, key.as_deref());
                for gone in gone {
                    self.remove_pending(&gone);
                }
                match (ev, key) {
                    (WatchEvent::Apply(p) | WatchEvent::InitApply(p), Some(key))
                        if self.responsible_for(&p) =>
                    {
                        self.upsert_pending(key, p, now);
                    }
                    (WatchEvent::Delete(_), Some(key)) => self.remove_pending(&key),
                    _ => {}
                }
            }
            WatchMsg::Service(ev) => self.mirror(ev, now),
            WatchMsg::Rc(ev) => self.mirror(ev, now),
            WatchMsg::Rs(ev) => self.mirror(ev, now),
            WatchMsg::Ss(ev) => self.mirror(ev, now),
            WatchMsg::Namespace(ev) => self.mirror(ev, now),
            WatchMsg::Pv(ev) => self.mirror(*ev, now),
            WatchMsg::Pvc(ev) => self.mirror(ev, now),
            WatchMsg::StorageClass(ev) => self.mirror(ev, now),
            WatchMsg::CsiNode(ev) => self.mirror(ev, now),
            WatchMsg::Pdb(ev) => {
                for gone in self.track(Kind::PodDisruptionBudgets, &ev) {
                    self.pdbs.remove(&gone);
                }
                match ev {
                    WatchEvent::Apply(p) | WatchEvent::InitApply(p) => {
                        self.pdbs
                            .insert(key_of(&p), crate::preemption::Pdb::from_k8s(&p));
                    }
                    WatchEvent::Delete(p) => {
                        self.pdbs.remove(&key_of(&p));
                    }
                    WatchEvent::Init | WatchEvent::InitDone => {}
                }
            }
        }
    }

    /// A node watch event: relist deletions, add/update (and the queue move it may trigger),
    /// delete. The node's object is kept ([`EventHandlers::keep_objects`]) only if `whole`:
    /// decoded whole ([`WatchMsg::Node`]), not with only the fields the compact model reads
    /// ([`WatchMsg::SlimNode`], decoded before keeping turned on), which is cached without
    /// an object until the node watch's relist brings it whole.
    fn node_event(&mut self, ev: WatchEvent<core::Node>, whole: bool, now: Instant) {
        for gone in self.track(Kind::Nodes, &ev) {
            let _ = self.cache.remove_node(&gone);
        }
        match ev {
            WatchEvent::Apply(n) | WatchEvent::InitApply(n) => {
                let name = n.name_any();
                let ni = if whole && self.keep_objects.is_some() {
                    crate::model::NodeInfo::from_node(n)
                } else {
                    crate::model::NodeInfo::from_node_without_object(n)
                };
                match ni {
                    Ok(ni) => {
                        let old = self.cache.snapshot().node(&name);
                        let existed = old.is_some();
                        // nodeSchedulingPropertiesChange (eventhandlers.go, v1.22): only
                        // changes that can make a pod fit move unschedulable pods.
                        let changed = old.is_none_or(|o| {
                            o.allocatable != ni.allocatable
                                || o.labels != ni.labels
                                || o.taints != ni.taints
                                || o.unschedulable != ni.unschedulable
                        });
                        if existed {
                            self.cache.update_node(ni);
                        } else {
                            self.cache.add_node(ni);
                        }
                        if !changed {
                            return;
                        }
                        let event = if existed {
                            ClusterEvent::NodeUpdate
                        } else {
                            ClusterEvent::NodeAdd
                        };
                        self.queue.move_all_to_active_or_backoff(event, now, None);
                    }
                    Err(e) => {
                        warn!(node = %name, error = %e, "Ignoring node with a malformed status")
                    }
                }
            }
            WatchEvent::Delete(n) => {
                let _ = self.cache.remove_node(&n.name_any());
            }
            WatchEvent::Init | WatchEvent::InitDone => {}
        }
    }

    /// An assigned pod added or updated (from the assigned watch or the read barrier's LIST):
    /// it leaves the pending pods and the queue, counts on its node, and may move
    /// unschedulable pods whose affinity it satisfies.
    fn apply_assigned(&mut self, p: WirePod, now: Instant) {
        let key = key_of(&p);
        // The event's pod is not read again: its identity moves into the model.
        match PodInfo::from_wire_owned(p) {
            Ok(pi) => {
                // Bound: the cache keeps the compact model only (see `keep_objects`).
                let pi = Arc::new(if self.keep_objects.is_some() {
                    pi
                } else {
                    pi.without_object()
                });
                // Bound by someone else (or by us): no longer pending.
                if let Some(old) = self.pending.remove(&key) {
                    self.queue.delete(&old);
                    self.nominator.delete_nominated_pod_if_exists(&old.uid);
                }
                if let Err(e) = self.cache.add_pod(pi.clone()) {
                    debug!(pod = %key, error = %e, "Cache refused assigned pod");
                }
                let event = if self.assigned.contains_key(&key) {
                    ClusterEvent::AssignedPodUpdate
                } else {
                    ClusterEvent::AssignedPodAdd
                };
                self.assigned_pod_event(&pi, event, now);
                self.set_typical(&key, Some(&pi));
                self.assigned.insert(key, pi);
            }
            Err((e, _)) => {
                warn!(pod = %key, error = %e, "Assigned pod with a malformed spec is not counted")
            }
        }
    }

    /// The read barrier of a new term: a consistent LIST of the assigned pods (resourceVersion
    /// `list_rv`, at or past the term's Lease acquisition), applied as the newer truth when the
    /// assigned watch is behind it. Pods the LIST shows bound that the watch has not delivered
    /// yet (the previous leader's last Bindings) count on their nodes and leave the queue;
    /// assigned pods it no longer lists are removed; a pod the watch already shows at the same
    /// or a newer version is left alone. Returns how many pods were newly seen assigned, or
    /// `None` when the watch was already at or past the LIST (nothing to apply).
    ///
    /// The whole LIST at once: [`ReadBarrier`] applies it page by page.
    #[cfg(test)]
    pub(super) fn apply_read_barrier(
        &mut self,
        list_rv: u64,
        pods: Vec<WirePod>,
        now: Instant,
    ) -> Option<usize> {
        let mut rb = ReadBarrier::new(list_rv);
        rb.page(self, pods, now);
        rb.finish(self, now)
    }

    /// `AssignedPodAdded` / `AssignedPodUpdated` (v1.22 scheduling queue): an assigned pod may
    /// satisfy the required pod affinity of unschedulable pods; move those whose terms match it.
    fn assigned_pod_event(&mut self, pod: &PodInfo, event: ClusterEvent, now: Instant) {
        // Borrowed, not cloned per event (the cache and the queue are apart).
        let ns_labels = self.cache.snapshot().namespace_labels(&pod.namespace);
        let matches = |p: &PodInfo| {
            p.pod_affinity
                .required_affinity
                .iter()
                .any(|t| t.matches(&pod.namespace, &pod.labels, ns_labels))
        };
        self.queue
            .move_all_to_active_or_backoff(event, now, Some(&matches));
    }

    /// A watch event of a kind the cache mirrors as it is: relist deletions, add/update (and the
    /// queue move it may trigger), delete.
    fn mirror<K: Mirrored>(&mut self, ev: WatchEvent<K>, now: Instant) {
        for gone in self.track(K::KIND, &ev) {
            let (ns, name) = split_key(&gone);
            K::remove(&mut self.cache, ns, name);
        }
        match ev {
            WatchEvent::Apply(o) | WatchEvent::InitApply(o) => {
                if let Some(event) = K::upsert(&mut self.cache, o) {
                    self.queue.move_all_to_active_or_backoff(event, now, None);
                }
            }
            WatchEvent::Delete(o) => {
                K::remove(&mut self.cache, &o.namespace_or_default(), &o.name_any());
            }
            WatchEvent::Init | WatchEvent::InitDone => {}
        }
    }

    fn track<K: Resource>(&mut self, kind: Kind, ev: &WatchEvent<K>) -> Vec<String> {
        self.tracked.entry(kind).or_default().observe(ev)
    }

    fn remove_assigned(&mut self, key: &str, now: Instant) {
        if let Some(pi) = self.assigned.remove(key) {
            if self.typical_on {
                self.typical.set(key, self.pending.get(key).map(|p| &**p));
            }
            let _ = self.cache.remove_pod(&pi);
            self.queue
                .move_all_to_active_or_backoff(ClusterEvent::AssignedPodDelete, now, None);
        }
    }

    fn remove_pending(&mut self, key: &str) {
        self.malformed.remove(key);
        self.latest_pending.remove(key);
        if let Some(pi) = self.pending.remove(key) {
            if self.typical_on {
                self.typical.set(key, self.assigned.get(key).map(|p| &**p));
            }
            self.queue.delete(&pi);
            self.nominator.delete_nominated_pod_if_exists(&pi.uid);
        }
    }

    /// A pending pod (`key`: its [`key_of`]) added or updated.
    fn upsert_pending(&mut self, key: String, p: WirePod, now: Instant) {
        if p.metadata.deletion_timestamp.is_some() {
            self.remove_pending(&key);
            return;
        }
        // An older pending version of a pod the assigned watch or the read barrier already
        // shows bound (the two watches are not ordered with each other): not pending.
        if let Some(a) = self.assigned.get(&key)
            && (a.uid.is_empty() || p.metadata.uid.as_deref() == Some(a.uid.as_str()))
        {
            return;
        }
        // The event's pod is read again only if it is malformed: its identity moves into the
        // model otherwise.
        match PodInfo::from_wire_owned(p) {
            Ok(pi) => {
                self.malformed.remove(&key);
                if self.cache.is_assumed(&key) {
                    // Being bound by us; the assigned watch will confirm it. Keep the newest
                    // version (possibly a new incarnation with another UID) in case the binding
                    // fails.
                    self.latest_pending.insert(key, Arc::new(pi));
                    return;
                }
                let pi = Arc::new(pi);
                self.set_typical(&key, Some(&pi));
                let old = self.pending.insert(key, pi.clone());
                // The queue's Add / Update keep the nominator in step (v1.22
                // `AddNominatedPod(pod, "")` / `UpdateNominatedPod`).
                match &old {
                    Some(o) => self.nominator.update_nominated_pod(o, pi.clone()),
                    None => self.nominator.add_nominated_pod(pi.clone(), ""),
                }
                if old.is_some() {
                    self.queue.update(old.as_deref(), pi, now);
                } else {
                    self.queue.add(pi, now);
                }
            }
            Err((e, p)) => {
                // A malformed pod cannot be scheduled until it is fixed: tell its owner once
                // per distinct problem, as FailedScheduling, and carry on. (Our own status patch
                // bumps its resourceVersion without changing the problem: no second report.)
                if let Some(old) = self.pending.remove(&key) {
                    self.set_typical(&key, None);
                    self.queue.delete(&old);
                }
                let message = e.to_string();
                if self.malformed.get(&key).map(|m| &m.message) != Some(&message) {
                    warn!(pod = %key, error = %e, "Pod cannot be scheduled: malformed spec");
                    // The report is written from the whole object (decoded here, once per
                    // distinct problem); one the text does not decode as names the pod by
                    // its metadata alone.
                    let pod = p.object().arc().unwrap_or_else(|| {
                        Arc::new(core::Pod {
                            metadata: p.metadata.clone(),
                            ..Default::default()
                        })
                    });
                    self.malformed.insert(
                        key,
                        Malformed {
                            pod,
                            message,
                            reported: false,
                        },
                    );
                }
            }
        }
    }

    /// FailedScheduling for each malformed pod version not yet reported, if this replica leads
    /// (followers only remember them, so that a new leader reports what its predecessor may not
    /// have).
    /// Undo an assumption whose binding did not happen and queue the pod again — the newest
    /// version seen meanwhile, or the one we had if the pending watch still lists it. Nothing
    /// is queued when the watch already shows the pod bound (the forget fails) or gone.
    pub(super) fn requeue_after_failed_bind(
        &mut self,
        key: &str,
        pod: Arc<PodInfo>,
        attempt: Attempt,
        now: Instant,
    ) {
        if self.cache.forget_pod(&pod).is_err() {
            self.latest_pending.remove(key);
            return;
        }
        let still_pending = self
            .tracked
            .get(&Kind::PendingPods)
            .is_some_and(|t| t.known.contains(key));
        match self.latest_pending.remove(key) {
            Some(latest) => self.requeue_pending_after(latest, attempt, now),
            None if still_pending => self.requeue_pending_after(pod, attempt, now),
            None => {}
        }
    }

    /// Queue a new incarnation of a pod seen while the old one was being bound (its first
    /// attempt, judged against the queue's current scheduling `cycle`).
    pub(super) fn requeue_pending(&mut self, pod: Arc<PodInfo>, cycle: i64, now: Instant) {
        let attempt = Attempt {
            cycle,
            attempts: 1,
            initial_attempt_timestamp: now,
        };
        self.requeue_pending_after(pod, attempt, now);
    }

    /// Queue `pod` again as unschedulable after `attempt` failed (`AddUnschedulableIfNotPresent`
    /// with the attempt's own scheduling cycle).
    fn requeue_pending_after(&mut self, pod: Arc<PodInfo>, attempt: Attempt, now: Instant) {
        let key = pod.key();
        if self.pending.contains_key(&key) {
            return;
        }
        self.set_typical(&key, Some(&pod));
        self.pending.insert(key, pod.clone());
        let mut qp = QueuedPodInfo::new(pod.clone(), now);
        qp.attempts = attempt.attempts.max(1);
        // The pod's scheduling latency still counts from its first entry into the queue.
        qp.initial_attempt_timestamp = attempt.initial_attempt_timestamp;
        match self
            .queue
            .add_unschedulable_if_not_present(qp, attempt.cycle, now)
        {
            // v1.22 AddUnschedulableIfNotPresent ends with AddNominatedPod(pod, ""): a pod
            // whose binding failed gets back the nomination its status carries (assume dropped
            // it), so lower-priority pods stay off its room while it backs off.
            Ok(_) => self.nominator.add_nominated_pod(pod, ""),
            Err(e) => debug!(error = %e, "Pod already queued again"),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::cache::PodState;
    use crate::queue::QueueConfig;

    fn handlers() -> EventHandlers {
        EventHandlers::new(Cache::new(None), PriorityQueue::new(QueueConfig::default()))
    }

    fn node(name: &str, cpu: &str) -> core::Node {
        let mut n = core::Node::default();
        n.metadata.name = Some(name.into());
        n.status = Some(core::NodeStatus {
            allocatable: Some(
                [
                    (
                        "cpu".to_string(),
                        k8s_openapi::apimachinery::pkg::api::resource::Quantity(cpu.into()),
                    ),
                    (
                        "pods".to_string(),
                        k8s_openapi::apimachinery::pkg::api::resource::Quantity("110".into()),
                    ),
                ]
                .into(),
            ),
            ..Default::default()
        });
        n
    }

    /// The wire form of `p`, as the pod watches deliver it.
    fn w(p: core::Pod) -> WirePod {
        WirePod::from_pod(&p).unwrap()
    }

    fn pod(name: &str, node: Option<&str>) -> core::Pod {
        let mut p = core::Pod::default();
        p.metadata.name = Some(name.into());
        p.metadata.namespace = Some("default".into());
        p.metadata.uid = Some(format!("uid-{name}"));
        p.spec = Some(core::PodSpec {
            node_name: node.map(str::to_string),
            containers: vec![core::Container {
                name: "c".into(),
                ..Default::default()
            }],
            ..Default::default()
        });
        p
    }

    /// List every kind once (empty), so the handlers report synced.
    fn sync_all(h: &mut EventHandlers, now: Instant) {
        use WatchEvent::{Init, InitDone};
        let msgs: Vec<fn() -> Vec<WatchMsg>> = vec![
            || vec![WatchMsg::Node(Init), WatchMsg::Node(InitDone)],
            || vec![WatchMsg::AssignedPod(Init), WatchMsg::AssignedPod(InitDone)],
            || vec![WatchMsg::PendingPod(Init), WatchMsg::PendingPod(InitDone)],
            || vec![WatchMsg::Service(Init), WatchMsg::Service(InitDone)],
            || vec![WatchMsg::Rc(Init), WatchMsg::Rc(InitDone)],
            || vec![WatchMsg::Rs(Init), WatchMsg::Rs(InitDone)],
            || vec![WatchMsg::Ss(Init), WatchMsg::Ss(InitDone)],
            || vec![WatchMsg::Namespace(Init), WatchMsg::Namespace(InitDone)],
            || {
                vec![
                    WatchMsg::Pv(Box::new(Init)),
                    WatchMsg::Pv(Box::new(InitDone)),
                ]
            },
            || vec![WatchMsg::Pvc(Init), WatchMsg::Pvc(InitDone)],
            || {
                vec![
                    WatchMsg::StorageClass(Init),
                    WatchMsg::StorageClass(InitDone),
                ]
            },
            || vec![WatchMsg::CsiNode(Init), WatchMsg::CsiNode(InitDone)],
            || vec![WatchMsg::Pdb(Init), WatchMsg::Pdb(InitDone)],
        ];
        for (i, f) in msgs.iter().enumerate() {
            assert!(!h.synced(), "synced before watch {i} listed");
            for m in f() {
                h.handle(m, now);
            }
        }
        assert!(h.synced());
    }

    /// The typical pods are counted only while some profile reads them: off, pod events
    /// leave the counter empty; turned on (a policy reload adding FGD), it is rebuilt from the
    /// pods held — assigned, pending and assumed — to what it would hold had it counted all
    /// along; turned off again, it is emptied.
    #[test]
    fn typical_pods_are_counted_only_while_needed_and_rebuilt_when_turned_on() {
        let now = Instant::now();
        let feed = |h: &mut EventHandlers| {
            sync_all(h, now);
            h.handle(WatchMsg::Node(WatchEvent::Apply(node("n1", "4"))), now);
            for name in ["a", "b", "c"] {
                h.handle(
                    WatchMsg::PendingPod(WatchEvent::Apply(w(pod(name, None)))),
                    now,
                );
            }
            h.handle(
                WatchMsg::AssignedPod(WatchEvent::Apply(w(pod("a", Some("n1"))))),
                now,
            );
            h.handle(
                WatchMsg::AssignedPod(WatchEvent::Apply(w(pod("d", Some("n1"))))),
                now,
            );
            // b is being bound: assumed, out of the pending pods.
            let b = h.pending.remove("default/b").unwrap();
            h.queue.delete(&b);
            let result = crate::schedule_one::ScheduleResult::on_node("n1");
            h.cache.assume(b, &result).unwrap();
        };
        let mut always = handlers();
        feed(&mut always);
        assert_eq!(always.typical.len(), 4, "a, b (assumed), c, d");
        let mut h = handlers().with_typical_pods_counted(false);
        feed(&mut h);
        assert!(h.typical.is_empty());
        assert_eq!(h.typical.typical_pods(), None);
        h.set_typical_pods_counted(true);
        assert_eq!(h.typical.len(), 4);
        let pods = |h: &mut EventHandlers| h.typical.typical_pods().map(|t| t.pods.clone());
        assert_eq!(pods(&mut h), pods(&mut always));
        // Counted from now on.
        h.handle(
            WatchMsg::PendingPod(WatchEvent::Delete(w(pod("c", None)))),
            now,
        );
        assert_eq!(h.typical.len(), 3);
        h.set_typical_pods_counted(false);
        assert!(h.typical.is_empty());
    }

    /// Synced only once every kind has listed; a pending pod is queued, and leaves the queue
    /// when the assigned watch shows it bound (by anyone), which the cache then counts.
    #[test]
    fn pending_pod_is_queued_then_bound_elsewhere() {
        let now = Instant::now();
        let mut h = handlers();
        sync_all(&mut h, now);
        h.handle(WatchMsg::Node(WatchEvent::Apply(node("n1", "4"))), now);
        h.handle(
            WatchMsg::PendingPod(WatchEvent::Apply(w(pod("p", None)))),
            now,
        );
        assert!(h.pending.contains_key("default/p"));
        assert_eq!(h.queue.pending_pods().active, 1);
        h.handle(
            WatchMsg::AssignedPod(WatchEvent::Apply(w(pod("p", Some("n1"))))),
            now,
        );
        assert!(!h.pending.contains_key("default/p"));
        assert_eq!(h.queue.pending_pods().active, 0);
        assert_eq!(h.cache.pod_state("default/p"), Some(PodState::Added));
    }

    fn at(mut p: core::Pod, rv: u64) -> core::Pod {
        p.metadata.resource_version = Some(rv.to_string());
        p
    }

    /// The read barrier's LIST, newer than the assigned watch, shows a pod bound that the
    /// watch has not delivered: it leaves the queue and counts on its node; an assigned pod the
    /// LIST no longer has is removed; a late pending event of the bound pod does not queue it
    /// again. A LIST the watch is already past changes nothing.
    #[test]
    fn read_barrier_applies_a_newer_list_of_assigned_pods() {
        let now = Instant::now();
        let mut h = handlers();
        sync_all(&mut h, now);
        h.handle(WatchMsg::Node(WatchEvent::Apply(node("n1", "4"))), now);
        h.handle(
            WatchMsg::PendingPod(WatchEvent::Apply(w(at(pod("p", None), 5)))),
            now,
        );
        h.handle(
            WatchMsg::AssignedPod(WatchEvent::Apply(w(at(pod("old", Some("n1")), 6)))),
            now,
        );
        assert_eq!(h.queue.pending_pods().active, 1);
        // The watch is at 6: an older LIST is not applied.
        assert_eq!(
            h.apply_read_barrier(6, vec![w(at(pod("p", Some("n1")), 6))], now),
            None
        );
        assert_eq!(h.queue.pending_pods().active, 1);
        // The LIST at 9: p bound (at 8), old gone.
        assert_eq!(
            h.apply_read_barrier(9, vec![w(at(pod("p", Some("n1")), 8))], now),
            Some(1)
        );
        assert!(!h.pending.contains_key("default/p"));
        assert_eq!(h.queue.pending_pods().active, 0);
        assert_eq!(h.cache.pod_state("default/p"), Some(PodState::Added));
        assert_eq!(h.cache.pod_state("default/old"), None);
        // The pending watch, lagging, still delivers p unbound: it stays out of the queue.
        h.handle(
            WatchMsg::PendingPod(WatchEvent::Apply(w(at(pod("p", None), 7)))),
            now,
        );
        assert!(!h.pending.contains_key("default/p"));
        assert_eq!(h.queue.pending_pods().active, 0);
    }

    /// A read barrier LIST applied page by page: pages apply while the assigned watch is
    /// behind the LIST; once the watch delivers an event past it (here the deletion of a pod a
    /// later page still lists), the rest is ignored and nothing is removed as gone.
    #[test]
    fn read_barrier_pages_stop_once_the_watch_passes_the_list() {
        let now = Instant::now();
        let mut h = handlers();
        sync_all(&mut h, now);
        h.handle(WatchMsg::Node(WatchEvent::Apply(node("n1", "4"))), now);
        h.handle(
            WatchMsg::AssignedPod(WatchEvent::Apply(w(at(pod("old", Some("n1")), 3)))),
            now,
        );
        let mut rb = ReadBarrier::new(9);
        rb.page(&mut h, vec![w(at(pod("a", Some("n1")), 5))], now);
        assert_eq!(h.cache.pod_state("default/a"), Some(PodState::Added));
        // The watch: b bound at 6, deleted at 10 (past the LIST).
        h.handle(
            WatchMsg::AssignedPod(WatchEvent::Delete(w(at(pod("b", Some("n1")), 10)))),
            now,
        );
        rb.page(&mut h, vec![w(at(pod("b", Some("n1")), 6))], now);
        assert_eq!(h.cache.pod_state("default/b"), None);
        assert_eq!(rb.finish(&mut h, now), None);
        // `old` (not listed) stays: the watch, past the LIST, removes what is gone.
        assert_eq!(h.cache.pod_state("default/old"), Some(PodState::Added));
        // A LIST the watch stays behind: every page applies, the unlisted pod is removed.
        let mut rb = ReadBarrier::new(12);
        rb.page(&mut h, vec![w(at(pod("a", Some("n1")), 5))], now);
        rb.page(&mut h, vec![w(at(pod("c", Some("n1")), 11))], now);
        assert_eq!(rb.finish(&mut h, now), Some(1));
        assert_eq!(h.cache.pod_state("default/c"), Some(PodState::Added));
        assert_eq!(h.cache.pod_state("default/old"), None);
    }

    /// The cache keeps the compact model only: a pending pod carries its object (the
    /// extenders and the status patch read it), a bound pod and a node do not, unless an
    /// extender that is not `nodeCacheCapable` makes the handlers keep them; the compact fields
    /// a Binding, an Event and the read barrier need are there either way.
    #[test]
    fn cache_keeps_no_api_objects_unless_an_extender_needs_them() {
        let now = Instant::now();
        for keep in [false, true] {
            let mut h = handlers().with_kept_objects(keep);
            h.handle(WatchMsg::Node(WatchEvent::Apply(node("n1", "4"))), now);
            h.handle(
                WatchMsg::PendingPod(WatchEvent::Apply(w(at(pod("p", None), 3)))),
                now,
            );
            assert!(h.pending["default/p"].object.is_some());
            h.handle(
                WatchMsg::AssignedPod(WatchEvent::Apply(w(at(pod("a", Some("n1")), 4)))),
                now,
            );
            let snapshot = h.cache.snapshot();
            let n1 = snapshot.node("n1").unwrap();
            assert_eq!(n1.object.is_some(), keep);
            let a = &n1.pods[0];
            assert_eq!(a.object.is_some(), keep);
            assert_eq!(
                (a.uid.as_str(), a.resource_version.as_str()),
                ("uid-a", "4")
            );
            assert_eq!(h.assigned["default/a"].object.is_some(), keep);
        }
    }

    /// A policy reload that starts keeping objects: the node and assigned pod cached slim (no
    /// object) get their whole objects from the restarted watches' relists, and the handlers
    /// are not synced (no scheduling cycle) until both relists end. Meanwhile a node decoded
    /// slim before the reload but handled after it (the race) is cached without an object,
    /// never as if whole, and an `InitDone` of the old watches or of an earlier restart does
    /// not end the wait.
    #[test]
    fn keeping_objects_turned_on_relists_nodes_and_assigned_pods_whole() {
        let now = Instant::now();
        let mut whole_node = node("n1", "4");
        if let Some(st) = whole_node.status.as_mut() {
            st.capacity = st.allocatable.clone();
        }
        let assigned = pod("a", Some("n1"));
        let slim_pod = |p: &core::Pod| {
            let json = serde_json::to_string(p).unwrap();
            WirePod::deserialize_without_object(&mut serde_json::Deserializer::from_str(&json))
                .unwrap()
        };
        let mut h = handlers();
        sync_all(&mut h, now);
        // Nobody keeps objects: the watches deliver slim nodes and pods without their text.
        h.handle(WatchMsg::SlimNode(WatchEvent::Apply(node("n1", "4"))), now);
        h.handle(
            WatchMsg::AssignedPod(WatchEvent::Apply(slim_pod(&assigned))),
            now,
        );
        let object = |h: &EventHandlers| h.cache.snapshot().node("n1").unwrap().object.clone();
        let pod_object = |h: &EventHandlers| h.assigned["default/a"].object().cloned();
        assert!(object(&h).is_none() && pod_object(&h).is_none());

        // The reload: keeping turns on (once), both watches are restarted (here twice, the
        // second restart being the one awaited).
        assert!(h.set_kept_objects(true));
        assert!(!h.set_kept_objects(true), "no second relist while kept");
        for kind in [Kind::Nodes, Kind::AssignedPods] {
            h.expect_relist(kind, 1);
            h.expect_relist(kind, 2);
        }
        assert!(!h.synced());
        // The old node watch's last messages: a node decoded slim, an InitDone.
        h.handle(WatchMsg::SlimNode(WatchEvent::Apply(node("n1", "4"))), now);
        assert!(object(&h).is_none(), "a slim node is not taken for whole");
        h.handle(WatchMsg::Node(WatchEvent::InitDone), now);
        // The first restart's watch (aborted) got as far as its marker and an InitDone.
        h.handle(
            WatchMsg::Restarted {
                kind: Kind::Nodes,
                epoch: 1,
            },
            now,
        );
        h.handle(WatchMsg::Node(WatchEvent::InitDone), now);
        assert!(
            !h.synced(),
            "only the awaited restart's relist ends the wait"
        );

        // The restarted watches relist, decoding whole.
        for kind in [Kind::Nodes, Kind::AssignedPods] {
            h.handle(WatchMsg::Restarted { kind, epoch: 2 }, now);
        }
        h.handle(WatchMsg::Node(WatchEvent::Init), now);
        h.handle(
            WatchMsg::Node(WatchEvent::InitApply(whole_node.clone())),
            now,
        );
        h.handle(WatchMsg::Node(WatchEvent::InitDone), now);
        let n1 = object(&h).expect("the relisted node has its object");
        assert_eq!(
            n1.status.as_ref().and_then(|s| s.capacity.as_ref()),
            whole_node.status.as_ref().and_then(|s| s.capacity.as_ref())
        );
        assert!(!h.synced(), "the assigned pods are still relisting");
        h.handle(WatchMsg::AssignedPod(WatchEvent::Init), now);
        h.handle(
            WatchMsg::AssignedPod(WatchEvent::InitApply(w(assigned.clone()))),
            now,
        );
        h.handle(WatchMsg::AssignedPod(WatchEvent::InitDone), now);
        assert!(h.synced());
        assert_eq!(pod_object(&h).as_ref(), Some(&assigned));
        let snapshot = h.cache.snapshot();
        let cached = &snapshot.node("n1").unwrap().pods;
        assert_eq!(cached.len(), 1);
        assert_eq!(cached[0].object(), Some(&assigned));

        // Turned off again: no relist asked for, and the objects held are dropped at once
        // (not at each object's next update, which for a bound pod may never come), the
        // accounting unchanged; a pending pod keeps its object.
        h.handle(
            WatchMsg::PendingPod(WatchEvent::Apply(w(pod("p", None)))),
            now,
        );
        let before = h.cache.snapshot().node("n1").unwrap().clone();
        assert!(!h.set_kept_objects(false));
        assert!(h.synced());
        assert!(object(&h).is_none(), "the node's object is dropped");
        assert!(!h.assigned["default/a"].object.is_some());
        let snapshot = h.cache.snapshot();
        let n1 = snapshot.node("n1").unwrap();
        assert_eq!(n1.pods.len(), 1);
        assert!(
            !n1.pods[0].object.is_some(),
            "the cached pod's object is dropped"
        );
        assert!(Arc::ptr_eq(&n1.pods[0], &h.assigned["default/a"]));
        assert_eq!(
            (&n1.allocatable, &n1.requested, &n1.labels),
            (&before.allocatable, &before.requested, &before.labels)
        );
        assert_eq!(h.cache.pod_state("default/a"), Some(PodState::Added));
        assert!(h.pending["default/p"].object.is_some());
    }

    /// A relist that no longer lists an object deletes it: a node gone while the watch was
    /// down leaves the cache; a pending pod gone leaves the queue.
    #[test]
    fn relist_deletes_what_it_no_longer_lists() {
        let now = Instant::now();
        let mut h = handlers();
        sync_all(&mut h, now);
        h.handle(WatchMsg::Node(WatchEvent::Apply(node("n1", "4"))), now);
        h.handle(WatchMsg::Node(WatchEvent::Apply(node("n2", "4"))), now);
        h.handle(
            WatchMsg::PendingPod(WatchEvent::Apply(w(pod("p", None)))),
            now,
        );
        h.handle(WatchMsg::Node(WatchEvent::Init), now);
        h.handle(WatchMsg::Node(WatchEvent::InitApply(node("n2", "4"))), now);
        h.handle(WatchMsg::Node(WatchEvent::InitDone), now);
        assert!(h.cache.snapshot().node("n1").is_none());
        assert!(h.cache.snapshot().node("n2").is_some());
        h.handle(WatchMsg::PendingPod(WatchEvent::Init), now);
        h.handle(WatchMsg::PendingPod(WatchEvent::InitDone), now);
        assert!(h.pending.is_empty());
        assert_eq!(h.queue.pending_pods().active, 0);
    }

    /// The assigned watch's relist removes the assigned pods it no longer lists (its present
    /// keys are the handlers' own map of assigned pods, not a second set).
    #[test]
    fn assigned_relist_removes_the_pods_it_no_longer_lists() {
        let now = Instant::now();
        let mut h = handlers();
        sync_all(&mut h, now);
        h.handle(WatchMsg::Node(WatchEvent::Apply(node("n1", "4"))), now);
        for name in ["a", "b"] {
            h.handle(
                WatchMsg::AssignedPod(WatchEvent::Apply(w(pod(name, Some("n1"))))),
                now,
            );
        }
        h.handle(WatchMsg::AssignedPod(WatchEvent::Init), now);
        h.handle(
            WatchMsg::AssignedPod(WatchEvent::InitApply(w(pod("b", Some("n1"))))),
            now,
        );
        h.handle(WatchMsg::AssignedPod(WatchEvent::InitDone), now);
        assert_eq!(h.cache.pod_state("default/a"), None);
        assert_eq!(h.cache.pod_state("default/b"), Some(PodState::Added));
        assert!(h.tracked[&Kind::AssignedPods].known.is_empty());
    }

    /// A malformed pending pod is kept for one report per distinct problem, and is not queued.
    #[test]
    fn malformed_pod_is_reported_once() {
        let now = Instant::now();
        let mut h = handlers();
        let mut bad = pod("bad", None);
        if let Some(spec) = bad.spec.as_mut() {
            spec.containers[0].resources = Some(core::ResourceRequirements {
                requests: Some(
                    [(
                        "cpu".to_string(),
                        k8s_openapi::apimachinery::pkg::api::resource::Quantity("abc".into()),
                    )]
                    .into(),
                ),
                ..Default::default()
            });
        }
        h.handle(WatchMsg::PendingPod(WatchEvent::Apply(w(bad.clone()))), now);
        assert!(h.pending.is_empty());
        let reports = h.unreported_malformed();
        assert_eq!(reports.len(), 1);
        assert!(reports[0].1.contains("abc"), "{}", reports[0].1);
        // The same problem again (our own status patch bumped it): no second report.
        h.handle(WatchMsg::PendingPod(WatchEvent::Apply(w(bad))), now);
        assert!(h.unreported_malformed().is_empty());
        // Fixed: queued.
        h.handle(
            WatchMsg::PendingPod(WatchEvent::Apply(w(pod("bad", None)))),
            now,
        );
        assert!(h.pending.contains_key("default/bad"));
    }

    /// A preemptor whose binding fails is queued again with its nomination (v1.22
    /// `AddUnschedulableIfNotPresent` → `AddNominatedPod(pod, "")`; assume dropped it), so
    /// lower-priority pods keep off the room it made while it backs off.
    #[test]
    fn failed_binding_requeues_with_the_nomination() {
        use crate::framework::NominatedPods;
        let now = Instant::now();
        let mut h = handlers();
        sync_all(&mut h, now);
        h.handle(WatchMsg::Node(WatchEvent::Apply(node("n1", "4"))), now);
        let mut p = pod("p", None);
        p.status = Some(core::PodStatus {
            nominated_node_name: Some("n1".into()),
            ..Default::default()
        });
        h.handle(WatchMsg::PendingPod(WatchEvent::Apply(w(p))), now);
        assert_eq!(h.nominator.nominated_pods_for_node("n1").len(), 1);
        // The cycle's success, as the controller handles it: assume, drop the nomination.
        let qp = h.queue.pop().unwrap();
        let pi = qp.pod.clone();
        let placed = crate::schedule_one::ScheduleResult::on_node("n1");
        let assumed = h.cache.assume(pi.clone(), &placed).unwrap();
        h.nominator.delete_nominated_pod_if_exists(&pi.uid);
        h.pending.remove("default/p");
        h.queue.delete(&pi);
        assert!(h.nominator.nominated_pods_for_node("n1").is_empty());
        // The binding fails: queued again, nominated again.
        let attempt = Attempt {
            cycle: h.queue.scheduling_cycle(),
            attempts: 1,
            initial_attempt_timestamp: now,
        };
        h.requeue_after_failed_bind("default/p", assumed.pod, attempt, now);
        assert!(h.pending.contains_key("default/p"));
        assert_eq!(h.nominator.nominated_node(&pi.uid), Some("n1"));
        assert_eq!(h.nominator.nominated_pods_for_node("n1").len(), 1);
    }

    /// A node added moves unschedulable pods back to the active queue (NodeAdd).
    #[test]
    fn node_add_moves_unschedulable_pods() {
        let now = Instant::now();
        let mut h = handlers();
        h.handle(
            WatchMsg::PendingPod(WatchEvent::Apply(w(pod("p", None)))),
            now,
        );
        let qp = h.queue.pop().unwrap();
        let cycle = h.queue.scheduling_cycle();
        h.queue
            .add_unschedulable_if_not_present(qp, cycle, now)
            .unwrap();
        assert_eq!(h.queue.pending_pods().unschedulable, 1);
        h.handle(WatchMsg::Node(WatchEvent::Apply(node("n1", "4"))), now);
        assert_eq!(h.queue.pending_pods().unschedulable, 0);
        // An unchanged node (same allocatable, labels, taints) moves nothing.
        let later = now + std::time::Duration::from_secs(60);
        h.queue.flush_backoff(later);
        let qp = h.queue.pop().unwrap();
        let cycle = h.queue.scheduling_cycle();
        h.queue
            .add_unschedulable_if_not_present(qp, cycle, now)
            .unwrap();
        h.handle(WatchMsg::Node(WatchEvent::Apply(node("n1", "4"))), now);
        assert_eq!(h.queue.pending_pods().unschedulable, 1);
    }
    /// With several profiles the pending watch delivers every pending pod: only those whose
    /// `schedulerName` names a profile are queued (v1.22 `responsibleForPod`); a relist keeps
    /// them apart the same way.
    #[test]
    fn several_profiles_queue_only_their_pods() {
        let now = Instant::now();
        let mut h = handlers().with_scheduler_names(vec!["a".into(), "b".into()]);
        sync_all(&mut h, now);
        let named = |name: &str, scheduler: Option<&str>| {
            let mut p = pod(name, None);
            if let Some(s) = p.spec.as_mut() {
                s.scheduler_name = scheduler.map(str::to_string);
            }
            p
        };
        for (name, scheduler) in [
            ("pa", Some("a")),
            ("pb", Some("b")),
            ("pc", Some("c")),
            ("pn", None),
        ] {
            h.handle(
                WatchMsg::PendingPod(WatchEvent::Apply(w(named(name, scheduler)))),
                now,
            );
        }
        let mut queued: Vec<&str> = h.pending.keys().map(String::as_str).collect();
        queued.sort_unstable();
        assert_eq!(queued, ["default/pa", "default/pb"]);
        assert_eq!(h.queue.pending_pods().active, 2);
        h.handle(WatchMsg::PendingPod(WatchEvent::Init), now);
        h.handle(
            WatchMsg::PendingPod(WatchEvent::InitApply(w(named("pc", Some("c"))))),
            now,
        );
        h.handle(
            WatchMsg::PendingPod(WatchEvent::InitApply(w(named("pb", Some("b"))))),
            now,
        );
        h.handle(WatchMsg::PendingPod(WatchEvent::InitDone), now);
        let queued: Vec<&str> = h.pending.keys().map(String::as_str).collect();
        assert_eq!(queued, ["default/pb"]);
    }
}
