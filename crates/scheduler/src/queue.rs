//! The scheduling queue: kube-scheduler's `PriorityQueue` from
//! `pkg/scheduler/internal/queue/scheduling_queue.go` (v1.22), without locks, goroutines or a
//! blocking `Pop`.
//!
//! Three sub-queues hold every pending pod exactly once:
//!
//! - **activeQ**: pods ready to be tried, ordered by `PrioritySort` (`spec.priority` descending,
//!   then the time the pod was added or last re-queued, earliest first; equal keys leave in
//!   insertion order, where upstream's heap is unspecified).
//! - **backoffQ**: pods waiting out their backoff, ordered by backoff expiry. The backoff of a
//!   pod is `podInitialBackoffSeconds` (1 s) doubled for every attempt after the first and
//!   capped at `podMaxBackoffSeconds` (10 s): 1, 2, 4, 8, 10, 10... s, counted from the time the
//!   pod was last queued ([`PriorityQueue::backoff_duration`]).
//! - **unschedulableQ**: pods whose last attempt failed. They leave it on a cluster event
//!   ([`PriorityQueue::move_all_to_active_or_backoff`]: node added or updated, assigned pod
//!   deleted...) or once they have waited longer than the unschedulable interval
//!   ([`PriorityQueue::flush_unschedulable`]), for backoffQ if still backing off, else activeQ.
//!
//! `moveRequestCycle`: [`PriorityQueue::pop`] counts scheduling cycles; every move request
//! records the current cycle. A pod that fails in a cycle that started before the latest move
//! request ([`PriorityQueue::add_unschedulable_if_not_present`]) goes to backoffQ rather than
//! unschedulableQ, because the event that may have made it schedulable arrived while it was
//! being scheduled and will not be delivered again.
//!
//! Time is injected: every method that reads the clock takes `now` (a monotonic
//! [`Instant`]; the async driver passes `tokio::time::Instant::now().into_std()`), so tests move
//! time without sleeping. The driver calls [`PriorityQueue::flush_backoff`] about every
//! [`BACKOFF_Q_FLUSH_PERIOD`] (or at [`PriorityQueue::next_backoff_expiry`]) and
//! [`PriorityQueue::flush_unschedulable`] every [`UNSCHEDULABLE_Q_FLUSH_PERIOD`], as upstream's
//! `PriorityQueue.Run` does.
//!
//! Pods are keyed by `namespace/name` (upstream's `MetaNamespaceKeyFunc`). The UID, when both
//! sides have one, guards deletes and updates: deleting an older incarnation of a pod does not
//! remove a newer one with the same name, and an update that carries a different UID is a new
//! pod (fresh timestamp, zero attempts).
//!
//! Left out of v1.22: the PodNominator (no preemption here), and the per-plugin event filter
//! (`UnschedulablePlugins` / `podMatchesEvent`): every move request moves every pod that passes
//! the optional pre-check, which is what upstream does for pods whose failure named no plugin.
//! `AssignedPodAdded`/`AssignedPodUpdated` (inter-pod affinity terms) are not separate methods:
//! the driver calls [`PriorityQueue::move_all_to_active_or_backoff`] with a pre-check that keeps
//! the pods whose required affinity terms match the assigned pod.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use foldhash::{HashMap, HashMapExt};

use crate::model::PodInfo;

/// `DefaultPodInitialBackoffDuration` (v1.22): backoff after the first failed attempt.
pub const DEFAULT_POD_INITIAL_BACKOFF: Duration = Duration::from_secs(1);
/// `DefaultPodMaxBackoffDuration` (v1.22): the cap of the doubling backoff.
pub const DEFAULT_POD_MAX_BACKOFF: Duration = Duration::from_secs(10);
/// The longest a pod stays in unschedulableQ without a cluster event: 5 minutes, as the
/// project's design asks and as later kube-scheduler releases default
/// (`DefaultPodMaxInUnschedulablePodsDuration`). See [`V1_22_UNSCHEDULABLE_Q_TIME_INTERVAL`].
pub const DEFAULT_UNSCHEDULABLE_Q_TIME_INTERVAL: Duration = Duration::from_secs(5 * 60);
/// `unschedulableQTimeInterval` as hard-coded in v1.22's `scheduling_queue.go`: 60 s.
pub const V1_22_UNSCHEDULABLE_Q_TIME_INTERVAL: Duration = Duration::from_secs(60);
/// How often upstream runs `flushBackoffQCompleted` (`PriorityQueue.Run`): 1 s.
pub const BACKOFF_Q_FLUSH_PERIOD: Duration = Duration::from_secs(1);
/// How often upstream runs `flushUnschedulableQLeftover` (`PriorityQueue.Run`): 30 s.
pub const UNSCHEDULABLE_Q_FLUSH_PERIOD: Duration = Duration::from_secs(30);

/// Queue timings (`PriorityQueue` options).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueConfig {
    /// `podInitialBackoffSeconds`, as a duration.
    pub pod_initial_backoff: Duration,
    /// `podMaxBackoffSeconds`, as a duration.
    pub pod_max_backoff: Duration,
    /// A pod that has been in unschedulableQ for longer than this is flushed out of it.
    pub unschedulable_q_time_interval: Duration,
}

impl Default for QueueConfig {
    fn default() -> QueueConfig {
        QueueConfig {
            pod_initial_backoff: DEFAULT_POD_INITIAL_BACKOFF,
            pod_max_backoff: DEFAULT_POD_MAX_BACKOFF,
            unschedulable_q_time_interval: DEFAULT_UNSCHEDULABLE_Q_TIME_INTERVAL,
        }
    }
}

/// A pod in the queue (`framework.QueuedPodInfo`).
#[derive(Debug, Clone)]
pub struct QueuedPodInfo {
    /// The pod.
    pub pod: Arc<PodInfo>,
    /// When the pod was added to the queue or last re-queued after a failure; orders activeQ
    /// among equal priorities and starts the backoff clock.
    pub timestamp: Instant,
    /// Scheduling attempts so far; [`PriorityQueue::pop`] increments it.
    pub attempts: u32,
    /// When the pod was first added to the queue (for the e2e scheduling latency metric).
    pub initial_attempt_timestamp: Instant,
}

impl QueuedPodInfo {
    /// A pod seen for the first time at `now`: zero attempts.
    pub fn new(pod: Arc<PodInfo>, now: Instant) -> QueuedPodInfo {
        QueuedPodInfo {
            pod,
            timestamp: now,
            attempts: 0,
            initial_attempt_timestamp: now,
        }
    }

    /// `namespace/name`, the queue key.
    pub fn key(&self) -> String {
        self.pod.key()
    }
}

/// The three sub-queues, named as the `queue` label of `scheduler_pending_pods`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QueueName {
    /// activeQ.
    Active,
    /// backoffQ.
    Backoff,
    /// unschedulableQ.
    Unschedulable,
}

impl QueueName {
    /// The metric label: `active`, `backoff` or `unschedulable`.
    pub fn as_str(self) -> &'static str {
        match self {
            QueueName::Active => "active",
            QueueName::Backoff => "backoff",
            QueueName::Unschedulable => "unschedulable",
        }
    }
}

impl fmt::Display for QueueName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Pods per sub-queue, for `scheduler_pending_pods{queue="active|backoff|unschedulable"}`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PendingPods {
    /// Pods in activeQ.
    pub active: usize,
    /// Pods in backoffQ.
    pub backoff: usize,
    /// Pods in unschedulableQ.
    pub unschedulable: usize,
}

impl PendingPods {
    /// All pending pods.
    pub fn total(&self) -> usize {
        self.active + self.backoff + self.unschedulable
    }
}

/// The cluster events that move unschedulable pods (`framework.ClusterEvent` labels of
/// v1.22's `internal/queue/events.go`, the ones this scheduler emits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClusterEvent {
    /// A node was added.
    NodeAdd,
    /// A node changed in a way that may make pods schedulable (labels, taints, allocatable,
    /// `spec.unschedulable`).
    NodeUpdate,
    /// A pod assigned to a node was deleted, freeing its resources.
    AssignedPodDelete,
    /// A pod was assigned to a node (affinity may now match).
    AssignedPodAdd,
    /// An assigned pod changed.
    AssignedPodUpdate,
    /// The pod waited in unschedulableQ longer than the interval.
    UnschedulableTimeout,
    /// A reloaded policy was swapped in (mini-scheduler's hot reload; no upstream event).
    PolicyChange,
    /// A PersistentVolume was added.
    PvAdd,
    /// A PersistentVolume changed.
    PvUpdate,
    /// A PersistentVolumeClaim was added.
    PvcAdd,
    /// A PersistentVolumeClaim changed.
    PvcUpdate,
    /// A StorageClass was added.
    StorageClassAdd,
    /// A StorageClass changed.
    StorageClassUpdate,
    /// A CSINode was added.
    CsiNodeAdd,
    /// A CSINode changed.
    CsiNodeUpdate,
}

impl ClusterEvent {
    /// Upstream's event label, as used in `scheduler_queue_incoming_pods_total{event}`.
    pub fn label(self) -> &'static str {
        match self {
            ClusterEvent::NodeAdd => "NodeAdd",
            ClusterEvent::NodeUpdate => "NodeUpdate",
            ClusterEvent::AssignedPodDelete => "AssignedPodDelete",
            ClusterEvent::AssignedPodAdd => "AssignedPodAdd",
            ClusterEvent::AssignedPodUpdate => "AssignedPodUpdate",
            ClusterEvent::UnschedulableTimeout => "UnschedulableTimeout",
            ClusterEvent::PolicyChange => "PolicyChange",
            ClusterEvent::PvAdd => "PvAdd",
            ClusterEvent::PvUpdate => "PvUpdate",
            ClusterEvent::PvcAdd => "PvcAdd",
            ClusterEvent::PvcUpdate => "PvcUpdate",
            ClusterEvent::StorageClassAdd => "StorageClassAdd",
            ClusterEvent::StorageClassUpdate => "StorageClassUpdate",
            ClusterEvent::CsiNodeAdd => "CSINodeAdd",
            ClusterEvent::CsiNodeUpdate => "CSINodeUpdate",
        }
    }
}

/// Why the queue refused an operation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueueError {
    /// [`PriorityQueue::add_unschedulable_if_not_present`]: the pod is already queued (an
    /// update re-added it while it was being scheduled); the queued copy wins.
    #[error("add unschedulable pod {pod}: already present in the {queue} queue")]
    AddUnschedulable {
        /// `namespace/name`.
        pod: String,
        /// Where it already is.
        queue: QueueName,
    },
}

/// A keyed priority queue: `order` sorts `(sort key, insertion sequence, pod key)`.
#[derive(Debug)]
struct Heap<K: Ord + Copy> {
    order: BTreeSet<(K, u64, String)>,
    items: HashMap<String, (K, u64, QueuedPodInfo)>,
}

impl<K: Ord + Copy> Default for Heap<K> {
    fn default() -> Self {
        Heap {
            order: BTreeSet::new(),
            items: HashMap::new(),
        }
    }
}

impl<K: Ord + Copy> Heap<K> {
    fn len(&self) -> usize {
        self.items.len()
    }

    fn get(&self, key: &str) -> Option<&QueuedPodInfo> {
        self.items.get(key).map(|(_, _, p)| p)
    }

    /// Insert or replace; a replaced item keeps its insertion sequence (`heap.Update`).
    fn add_or_update(&mut self, sort: K, seq: u64, info: QueuedPodInfo) {
        self.add_or_update_keyed(info.key(), sort, || seq, info);
    }

    /// [`Heap::add_or_update`] of `info` under its `key` (computed by the caller), with one
    /// lookup of the key; `seq` is called only when the key is new (a replaced item keeps its
    /// sequence).
    fn add_or_update_keyed(
        &mut self,
        key: String,
        sort: K,
        seq: impl FnOnce() -> u64,
        info: QueuedPodInfo,
    ) {
        match self.items.entry(key) {
            std::collections::hash_map::Entry::Occupied(mut o) => {
                let (old_sort, old_seq, _) = *o.get();
                if old_sort != sort {
                    let key = o.key().clone();
                    self.order.remove(&(old_sort, old_seq, key.clone()));
                    self.order.insert((sort, old_seq, key));
                }
                o.insert((sort, old_seq, info));
            }
            std::collections::hash_map::Entry::Vacant(v) => {
                let seq = seq();
                self.order.insert((sort, seq, v.key().clone()));
                v.insert((sort, seq, info));
            }
        }
    }

    fn remove(&mut self, key: &str) -> Option<QueuedPodInfo> {
        let (sort, seq, info) = self.items.remove(key)?;
        self.order.remove(&(sort, seq, key.to_string()));
        Some(info)
    }

    fn peek(&self) -> Option<(K, &QueuedPodInfo)> {
        let (sort, _, key) = self.order.first()?;
        self.items.get(key).map(|(_, _, p)| (*sort, p))
    }

    fn pop(&mut self) -> Option<QueuedPodInfo> {
        let (_, _, key) = self.order.pop_first()?;
        self.items.remove(&key).map(|(_, _, p)| p)
    }
}

/// activeQ order: higher priority first, then earlier timestamp (`queuesort.PrioritySort`).
type ActiveKey = (Reverse<i32>, Instant);

fn active_key(p: &QueuedPodInfo) -> ActiveKey {
    (Reverse(p.pod.priority), p.timestamp)
}

/// True when both UIDs are known and differ: two incarnations of the same name.
fn uid_differs(a: &PodInfo, b: &PodInfo) -> bool {
    !a.uid.is_empty() && !b.uid.is_empty() && a.uid != b.uid
}

/// `isPodUpdated` (v1.22): the pods differ other than in `resourceVersion`, `generation`,
/// `managedFields`, `finalizers` and `status`. Queued pods are pending and keep their objects
/// (`PodInfo::object`); if either has none, the pod counts as updated.
fn is_pod_updated(old: &PodInfo, new: &PodInfo) -> bool {
    let (Some(old), Some(new)) = (old.object(), new.object()) else {
        return true;
    };
    let strip = |p: &k8s_openapi::api::core::v1::Pod| {
        let mut p = p.clone();
        p.metadata.resource_version = None;
        p.metadata.generation = None;
        p.metadata.managed_fields = None;
        p.metadata.finalizers = None;
        p.status = None;
        p
    };
    strip(old) != strip(new)
}

/// The next insertion sequence of the counter `seq` ([`PriorityQueue::next_seq`], also where
/// the active heap is borrowed).
fn bump(seq: &mut u64) -> u64 {
    *seq += 1;
    *seq
}

/// kube-scheduler's `PriorityQueue` (see the module docs).
#[derive(Debug)]
pub struct PriorityQueue {
    config: QueueConfig,
    active: Heap<ActiveKey>,
    backoff: Heap<Instant>,
    /// Ordered by key so that moves are deterministic (upstream iterates a Go map).
    unschedulable: BTreeMap<String, QueuedPodInfo>,
    scheduling_cycle: i64,
    move_request_cycle: i64,
    seq: u64,
    /// Pods added to each sub-queue so far, by event ([`PriorityQueue::incoming_pods`]).
    incoming: BTreeMap<(&'static str, &'static str), u64>,
}

impl Default for PriorityQueue {
    fn default() -> PriorityQueue {
        PriorityQueue::new(QueueConfig::default())
    }
}

impl PriorityQueue {
    /// An empty queue (`NewPriorityQueue`): scheduling cycle 0, `moveRequestCycle` -1.
    pub fn new(config: QueueConfig) -> PriorityQueue {
        PriorityQueue {
            config,
            active: Heap::default(),
            backoff: Heap::default(),
            unschedulable: BTreeMap::new(),
            scheduling_cycle: 0,
            move_request_cycle: -1,
            seq: 0,
            incoming: BTreeMap::new(),
        }
    }

    /// The timings in use.
    pub fn config(&self) -> &QueueConfig {
        &self.config
    }

    /// Replace `podInitialBackoffSeconds` / `podMaxBackoffSeconds` (a reloaded configuration;
    /// kube-scheduler reads them once): the pods in backoffQ are re-timed to their new expiry.
    pub fn set_backoff(&mut self, initial: Duration, max: Duration) {
        self.config.pod_initial_backoff = initial;
        self.config.pod_max_backoff = max;
        let mut backing_off = Vec::new();
        while let Some(p) = self.backoff.pop() {
            backing_off.push(p);
        }
        for p in backing_off {
            self.push_backoff(p);
        }
    }

    /// Running totals of pods that entered each sub-queue, by the event that put them there:
    /// `(queue, event) → pods`, with v1.22's labels of `scheduler_queue_incoming_pods_total`
    /// (`PodAdd`, `PodUpdate`, `ScheduleAttemptFailure`, `BackoffComplete`, `ForceActivate`
    /// and the [`ClusterEvent`] labels of moves).
    pub fn incoming_pods(&self) -> &BTreeMap<(&'static str, &'static str), u64> {
        &self.incoming
    }

    fn count_incoming(&mut self, queue: QueueName, event: &'static str) {
        *self.incoming.entry((queue.as_str(), event)).or_insert(0) += 1;
    }

    fn next_seq(&mut self) -> u64 {
        bump(&mut self.seq)
    }

    fn push_active(&mut self, p: QueuedPodInfo) {
        let seq = self.next_seq();
        self.active.add_or_update(active_key(&p), seq, p);
    }

    fn push_backoff(&mut self, p: QueuedPodInfo) {
        let seq = self.next_seq();
        let at = self.backoff_expiry(&p);
        self.backoff.add_or_update(at, seq, p);
    }

    /// `calculateBackoffDuration`: the initial backoff doubled `attempts - 1` times, capped at
    /// the maximum (1, 2, 4, 8, 10, 10... s with the defaults; 0 or 1 attempt = the initial).
    pub fn backoff_duration(&self, attempts: u32) -> Duration {
        let mut d = self.config.pod_initial_backoff;
        for _ in 1..attempts {
            d = d.saturating_mul(2);
            if d > self.config.pod_max_backoff {
                return self.config.pod_max_backoff;
            }
        }
        d
    }

    /// `getBackoffTime`: when `p`'s backoff ends (its timestamp plus its backoff duration).
    pub fn backoff_expiry(&self, p: &QueuedPodInfo) -> Instant {
        p.timestamp + self.backoff_duration(p.attempts)
    }

    /// `isPodBackingoff`: the backoff of `p` ends after `now`.
    pub fn is_pod_backing_off(&self, p: &QueuedPodInfo, now: Instant) -> bool {
        self.backoff_expiry(p) > now
    }

    /// `Add`: a new pending pod goes to activeQ with a fresh timestamp and zero attempts,
    /// replacing any copy in activeQ, backoffQ or unschedulableQ.
    pub fn add(&mut self, pod: Arc<PodInfo>, now: Instant) {
        let key = pod.key();
        self.backoff.remove(&key);
        self.unschedulable.remove(&key);
        let p = QueuedPodInfo::new(pod, now);
        self.count_incoming(QueueName::Active, "PodAdd");
        // `heap.Add` of an existing key updates in place, keeping its heap slot; a new key
        // takes the next sequence.
        let seq = &mut self.seq;
        self.active
            .add_or_update_keyed(key, active_key(&p), || bump(seq), p);
    }

    /// `Update` of a pending pod (`old` is the previous object, when known):
    ///
    /// - in activeQ or backoffQ: the object is replaced in place (attempts and timestamp kept);
    /// - in unschedulableQ: when the update may make it schedulable (`isPodUpdated`: more
    ///   changed than status, resourceVersion, generation, managedFields and finalizers; always
    ///   when `old` is unknown) it moves to backoffQ if still backing off, else to activeQ;
    ///   otherwise it stays there, updated;
    /// - nowhere (or under a different UID): added to activeQ as a new pod.
    ///
    /// Returns the queue the pod is in afterwards.
    pub fn update(&mut self, old: Option<&PodInfo>, new: Arc<PodInfo>, now: Instant) -> QueueName {
        let key = new.key();
        let same_incarnation = |q: &QueuedPodInfo| !uid_differs(&q.pod, &new);
        if let Some(q) = self.active.get(&key).filter(|q| same_incarnation(q)) {
            let p = QueuedPodInfo {
                pod: new.clone(),
                ..q.clone()
            };
            let seq = self.active.items.get(&key).map_or(0, |e| e.1);
            self.active.add_or_update(active_key(&p), seq, p);
            return QueueName::Active;
        }
        if let Some(q) = self.backoff.get(&key).filter(|q| same_incarnation(q)) {
            let p = QueuedPodInfo {
                pod: new.clone(),
                ..q.clone()
            };
            let at = self.backoff_expiry(&p);
            let seq = self.backoff.items.get(&key).map_or(0, |e| e.1);
            self.backoff.add_or_update(at, seq, p);
            return QueueName::Backoff;
        }
        if let Some(q) = self.unschedulable.get(&key).filter(|q| same_incarnation(q)) {
            let updated = old.is_none_or(|o| is_pod_updated(o, &new));
            let p = QueuedPodInfo {
                pod: new.clone(),
                ..q.clone()
            };
            if !updated {
                self.unschedulable.insert(key, p);
                return QueueName::Unschedulable;
            }
            self.unschedulable.remove(&key);
            if self.is_pod_backing_off(&p, now) {
                self.push_backoff(p);
                self.count_incoming(QueueName::Backoff, "PodUpdate");
                return QueueName::Backoff;
            }
            self.push_active(p);
            self.count_incoming(QueueName::Active, "PodUpdate");
            return QueueName::Active;
        }
        // Not queued, or queued under another UID: a new pod.
        self.add(new, now);
        QueueName::Active
    }

    /// `Delete`: drop the pod from whichever sub-queue holds it (a pending pod deleted, or
    /// bound by someone else). A queued pod with a different UID is a newer incarnation and is
    /// kept. Returns the queue it was removed from.
    pub fn delete(&mut self, pod: &PodInfo) -> Option<QueueName> {
        let key = pod.key();
        if self
            .active
            .get(&key)
            .is_some_and(|q| !uid_differs(&q.pod, pod))
        {
            self.active.remove(&key);
            return Some(QueueName::Active);
        }
        if self
            .backoff
            .get(&key)
            .is_some_and(|q| !uid_differs(&q.pod, pod))
        {
            self.backoff.remove(&key);
            return Some(QueueName::Backoff);
        }
        if self
            .unschedulable
            .get(&key)
            .is_some_and(|q| !uid_differs(&q.pod, pod))
        {
            self.unschedulable.remove(&key);
            return Some(QueueName::Unschedulable);
        }
        None
    }

    /// `Pop`, non-blocking: the head of activeQ with its attempt count incremented, starting a
    /// new scheduling cycle ([`PriorityQueue::scheduling_cycle`]); `None` when activeQ is
    /// empty. Read the cycle right after popping and hand it back to
    /// [`PriorityQueue::add_unschedulable_if_not_present`] if the attempt fails.
    pub fn pop(&mut self) -> Option<QueuedPodInfo> {
        let mut p = self.active.pop()?;
        p.attempts = p.attempts.saturating_add(1);
        self.scheduling_cycle += 1;
        Some(p)
    }

    /// `SchedulingCycle`: the number of pods popped so far.
    pub fn scheduling_cycle(&self) -> i64 {
        self.scheduling_cycle
    }

    /// `AddUnschedulableIfNotPresent`: requeue a pod whose attempt (begun in scheduling cycle
    /// `pod_scheduling_cycle`) failed. Its timestamp becomes `now`. It goes to backoffQ when a
    /// move request arrived during or after that cycle (`moveRequestCycle >=
    /// podSchedulingCycle`), else to unschedulableQ. The same call requeues pods that failed
    /// for an error or whose binding failed (upstream's `MakeDefaultErrorFunc`).
    ///
    /// # Errors
    /// [`QueueError::AddUnschedulable`] when the pod is already queued (an update or add
    /// re-queued it meanwhile); the queued copy is left as it is.
    pub fn add_unschedulable_if_not_present(
        &mut self,
        mut p: QueuedPodInfo,
        pod_scheduling_cycle: i64,
        now: Instant,
    ) -> Result<QueueName, QueueError> {
        let key = p.key();
        if let Some(queue) = self.queue_of(&key) {
            return Err(QueueError::AddUnschedulable { pod: key, queue });
        }
        p.timestamp = now;
        let queue = if self.move_request_cycle >= pod_scheduling_cycle {
            self.push_backoff(p);
            QueueName::Backoff
        } else {
            self.unschedulable.insert(key, p);
            QueueName::Unschedulable
        };
        self.count_incoming(queue, "ScheduleAttemptFailure");
        Ok(queue)
    }

    /// `MoveAllToActiveOrBackoffQueue`: move every unschedulable pod for which `pre_check`
    /// (upstream's `PreEnqueueCheck`, e.g. "fits the new node") returns true — all when
    /// `None` — to backoffQ if still backing off, else to activeQ, and record the move request
    /// for `moveRequestCycle`. Call on node add, node update and assigned pod delete.
    /// Returns the number of pods moved.
    pub fn move_all_to_active_or_backoff(
        &mut self,
        event: ClusterEvent,
        now: Instant,
        pre_check: Option<&dyn Fn(&PodInfo) -> bool>,
    ) -> usize {
        let keys: Vec<String> = self
            .unschedulable
            .iter()
            .filter(|(_, q)| pre_check.is_none_or(|f| f(&q.pod)))
            .map(|(k, _)| k.clone())
            .collect();
        self.move_to_active_or_backoff(&keys, event, now)
    }

    /// `movePodsToActiveOrBackoffQueue`.
    fn move_to_active_or_backoff(
        &mut self,
        keys: &[String],
        event: ClusterEvent,
        now: Instant,
    ) -> usize {
        let mut moved = 0;
        for key in keys {
            let Some(p) = self.unschedulable.remove(key) else {
                continue;
            };
            let to = if self.is_pod_backing_off(&p, now) {
                self.push_backoff(p);
                QueueName::Backoff
            } else {
                self.push_active(p);
                QueueName::Active
            };
            self.count_incoming(to, event.label());
            tracing::trace!(pod = %key, queue = %to, event = event.label(), "Pod moved");
            moved += 1;
        }
        self.move_request_cycle = self.scheduling_cycle;
        moved
    }

    /// `flushBackoffQCompleted`: move every pod whose backoff has ended (expiry <= `now`) from
    /// backoffQ to activeQ. Returns the number moved.
    pub fn flush_backoff(&mut self, now: Instant) -> usize {
        let mut moved = 0;
        while let Some((at, _)) = self.backoff.peek() {
            if at > now {
                break;
            }
            if let Some(p) = self.backoff.pop() {
                self.push_active(p);
                self.count_incoming(QueueName::Active, "BackoffComplete");
                moved += 1;
            }
        }
        moved
    }

    /// `flushUnschedulableQLeftover`: move the pods that have been in unschedulableQ for longer
    /// than [`QueueConfig::unschedulable_q_time_interval`] (strictly) to backoffQ or activeQ,
    /// as a move request with [`ClusterEvent::UnschedulableTimeout`]. Returns the number moved.
    pub fn flush_unschedulable(&mut self, now: Instant) -> usize {
        let interval = self.config.unschedulable_q_time_interval;
        let keys: Vec<String> = self
            .unschedulable
            .iter()
            .filter(|(_, q)| now.saturating_duration_since(q.timestamp) > interval)
            .map(|(k, _)| k.clone())
            .collect();
        if keys.is_empty() {
            return 0;
        }
        self.move_to_active_or_backoff(&keys, ClusterEvent::UnschedulableTimeout, now)
    }

    /// `Activate`: move the named pods (`namespace/name`) from backoffQ or unschedulableQ to
    /// activeQ at once. Returns the number activated.
    pub fn activate<'a>(&mut self, keys: impl IntoIterator<Item = &'a str>) -> usize {
        let mut n = 0;
        for key in keys {
            let p = self
                .unschedulable
                .remove(key)
                .or_else(|| self.backoff.remove(key));
            if let Some(p) = p {
                self.push_active(p);
                self.count_incoming(QueueName::Active, "ForceActivate");
                n += 1;
            }
        }
        n
    }

    /// When the earliest backoff in backoffQ ends, for a driver that sleeps until then rather
    /// than polling every [`BACKOFF_Q_FLUSH_PERIOD`].
    pub fn next_backoff_expiry(&self) -> Option<Instant> {
        self.backoff.peek().map(|(at, _)| at)
    }

    /// Which sub-queue holds `key` (`namespace/name`).
    pub fn queue_of(&self, key: &str) -> Option<QueueName> {
        if self.active.get(key).is_some() {
            Some(QueueName::Active)
        } else if self.backoff.get(key).is_some() {
            Some(QueueName::Backoff)
        } else if self.unschedulable.contains_key(key) {
            Some(QueueName::Unschedulable)
        } else {
            None
        }
    }

    /// The queued entry for `key` (`namespace/name`), wherever it is.
    pub fn get(&self, key: &str) -> Option<&QueuedPodInfo> {
        self.active
            .get(key)
            .or_else(|| self.backoff.get(key))
            .or_else(|| self.unschedulable.get(key))
    }

    /// Pods per sub-queue (`scheduler_pending_pods`).
    pub fn pending_pods(&self) -> PendingPods {
        PendingPods {
            active: self.active.len(),
            backoff: self.backoff.len(),
            unschedulable: self.unschedulable.len(),
        }
    }

    /// True when no pod is pending.
    pub fn is_empty(&self) -> bool {
        self.pending_pods().total() == 0
    }
}

/// Cases follow `pkg/scheduler/internal/queue/scheduling_queue_test.go` (v1.22), named in each
/// test's doc, with time moved by hand instead of a fake clock.
#[cfg(test)]
#[path = "queue_test.rs"]
mod tests;
