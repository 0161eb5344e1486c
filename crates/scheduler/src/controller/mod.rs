//! The kube edge of cluster mode: watches feed the [`Cache`] and the [`PriorityQueue`]; while
//! this replica leads, one task pops pods, runs the scheduling cycle and assumes each placement;
//! bindings are written asynchronously with bounded concurrency, each behind the election's
//! fence; `Scheduled` / `FailedScheduling` events and the `PodScheduled` condition are written as
//! kube-scheduler writes them.
//!
//! Follows `pkg/scheduler/scheduler.go`, `schedule_one.go` and `eventhandlers.go` (v1.22):
//!
//! - watches: nodes; pods assigned to a node and not `Succeeded`/`Failed` (whoever scheduled
//!   them); pending pods with our `schedulerName` and no node; Services, ReplicationControllers,
//!   ReplicaSets and StatefulSets; PersistentVolumes, PersistentVolumeClaims, StorageClasses
//!   and CSINodes. Every replica keeps them warm; only the leader schedules.
//! - VolumeBinding: Reserve assumes the pod's PV/PVC bindings with the pod; before the Binding,
//!   PreBind writes them and waits for the PV controller ([`volume_binding`]), each write behind
//!   the fence; a PreBind failure undoes both assumptions, requeues the pod and reports
//!   FailedScheduling, as v1.22 does.
//! - a pod we bound counts against its node at once (assume); a failed binding forgets it,
//!   reports `FailedScheduling` `"binding rejected: <error>"` with `PodScheduled=False, reason
//!   SchedulerError`, and requeues it with backoff; a `409 ... already assigned` binding is
//!   dropped (someone else bound it) without retry; a queued pod that is deleted or bound
//!   elsewhere leaves the queue.
//! - unschedulable pods get a `FailedScheduling` event with the FitError text and
//!   `PodScheduled=False, reason Unschedulable`; they return to the queue on node add/update, on
//!   assigned pod deletion, or after at most 5 minutes.
//! - every Binding carries annotations naming the replica and the lease term
//!   ([`ANNOTATION_SCHEDULED_BY`], [`ANNOTATION_LEASE_UID`], [`ANNOTATION_LEASE_TRANSITIONS`]),
//!   which the API server copies onto the pod.
//! - Policy extenders are called inside the scheduling cycle (under `block_in_place`, as their
//!   calls block); an extender that binds the pod (`extendersBinding`) does so from the binding
//!   task on the blocking pool, behind the same fence check as a Binding write, and writes no
//!   Binding annotations (the extender creates the Binding).
//! - events go through [`events::EventRecorder`], which aggregates recurring ones into a series
//!   as client-go's events library does (one Event object per unschedulable pod, not one per
//!   attempt);
//! - a policy reloaded from `--policy-config-file` ([`reload`]) is swapped in between two
//!   scheduling cycles, and unschedulable pods are retried under it;
//! - leadership lost: [`run`] returns [`RunOutcome::LeadershipLost`] at once (the binary exits 1,
//!   as kube-scheduler does); shutdown: scheduling stops, in-flight bindings get a grace period,
//!   then [`RunOutcome::Shutdown`].

pub mod events;
pub mod metrics;
pub mod ratelimit;
pub mod reload;
pub mod replica;
pub mod volume_binding;

mod mirror;

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use election::{LeaderWatch, LeadershipGuard};
use futures::{FutureExt, Stream, StreamExt};
use k8s_openapi::api::apps::v1 as apps;
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event as WatchEvent};
use kube::{Client, Resource, ResourceExt};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinSet;
use tracing::{debug, error, info, warn};

pub use metrics::SchedulerMetrics;
pub use ratelimit::{ApiClients, RateLimitLayer, RateLimiter};

use self::mirror::Mirrored;
use crate::cache::{Cache, DEFAULT_ASSUMED_POD_TTL};
use crate::extender::{Extender, ExtenderBindingArgs};
use crate::framework::PodInfo;
use crate::framework::types::ANNOTATION_GPU_INDEXES;
use crate::profile::Profile;
use crate::queue::{ClusterEvent, PriorityQueue, QueueConfig, QueuedPodInfo};
use crate::schedule_one::{Algorithm, ScheduleError};

/// Binding annotation: the identity of the replica that bound the pod.
pub const ANNOTATION_SCHEDULED_BY: &str = "mini-scheduler.io/scheduled-by";
/// Binding annotation: the UID of the Lease under which the pod was bound.
pub const ANNOTATION_LEASE_UID: &str = "mini-scheduler.io/lease-uid";
/// Binding annotation: the Lease's `leaseTransitions` when this replica acquired it (the term).
pub const ANNOTATION_LEASE_TRANSITIONS: &str = "mini-scheduler.io/lease-transitions";
/// The single profile's name in metric labels.
pub const PROFILE: &str = "mini-scheduler";
/// `PodScheduled` condition reason after a failed binding (`SchedulerError`, v1.22
/// `scheduler.go`).
pub const REASON_SCHEDULER_ERROR: &str = "SchedulerError";

/// Settings of [`run`].
#[derive(Clone)]
pub struct RunConfig {
    /// Pods with this `spec.schedulerName` are ours.
    pub scheduler_name: String,
    /// This replica's identity (the election identity), written on Bindings and events.
    pub identity: String,
    /// The profile built from the Policy ([`Profile::load`]); a hot reload replaces it.
    pub profile: Profile,
    /// `percentageOfNodesToScore` (0 = adaptive).
    pub percentage_of_nodes_to_score: i32,
    /// Bindings in flight at most.
    pub bind_concurrency: usize,
    /// How long in-flight bindings may take to finish at shutdown.
    pub shutdown_grace: Duration,
    /// Seed of the tie-break RNG.
    pub seed: u64,
    /// Validated policies from the hot reload ([`reload::watch_policy_file`]); each is swapped
    /// in between two scheduling cycles. `None`: the policy never changes.
    pub policy_updates: Option<reload::PolicyUpdates>,
}

/// How [`run`] ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunOutcome {
    /// The shutdown future completed; in-flight bindings were given their grace period.
    Shutdown,
    /// This replica led and no longer does: it stopped scheduling at once.
    LeadershipLost,
}

/// Shared flags for the admin endpoints.
#[derive(Clone, Default)]
pub struct Status {
    /// Every watch has listed once (`/readyz`).
    pub caches_synced: Arc<AtomicBool>,
}

type Kind = &'static str;

enum Msg {
    Node(WatchEvent<core::Node>),
    AssignedPod(WatchEvent<core::Pod>),
    PendingPod(WatchEvent<core::Pod>),
    Service(WatchEvent<core::Service>),
    Rc(WatchEvent<core::ReplicationController>),
    Rs(WatchEvent<apps::ReplicaSet>),
    Ss(WatchEvent<apps::StatefulSet>),
    Namespace(WatchEvent<core::Namespace>),
    Pv(Box<WatchEvent<core::PersistentVolume>>),
    Pvc(WatchEvent<core::PersistentVolumeClaim>),
    StorageClass(WatchEvent<k8s_openapi::api::storage::v1::StorageClass>),
    CsiNode(WatchEvent<k8s_openapi::api::storage::v1::CSINode>),
    Bound {
        pod: Arc<PodInfo>,
        node: String,
        result: BindResult,
        attempt: Attempt,
    },
}

/// What the binding cycle of one assumed pod needs.
struct BindJob {
    pod: Arc<PodInfo>,
    node: String,
    /// GPU devices chosen (for the binding annotation).
    gpu: Option<Vec<u32>>,
    /// VolumeBinding's PreBind work, if the pod has volumes to bind.
    volumes: Option<volume_binding::VolumeBindJob>,
    /// The extender that binds this pod instead of a `pods/binding` write.
    binder: Option<Arc<dyn Extender>>,
    attempt: Attempt,
}

/// The scheduling attempt a binding belongs to: the queue's scheduling cycle when the pod was
/// popped (v1.22 `podSchedulingCycle`) and its attempt count, so that a pod requeued after a
/// failed binding is judged against move requests since *its* cycle, not a later one.
#[derive(Debug, Clone, Copy)]
struct Attempt {
    cycle: i64,
    attempts: u32,
}

#[derive(Debug)]
enum BindResult {
    Bound,
    AlreadyAssigned(String),
    NotLeading(String),
    Failed(String),
    /// PreBind (VolumeBinding) failed: the FailedScheduling message.
    PreBindFailed(String),
}

const KINDS: [Kind; 12] = [
    "nodes",
    "assigned-pods",
    "pending-pods",
    "services",
    "replicationcontrollers",
    "replicasets",
    "statefulsets",
    "namespaces",
    "persistentvolumes",
    "persistentvolumeclaims",
    "storageclasses",
    "csinodes",
];

fn spawn_watch<K, F>(
    tasks: &mut JoinSet<()>,
    api: Api<K>,
    config: watcher::Config,
    tx: mpsc::Sender<Msg>,
    kind: Kind,
    wrap: F,
) where
    K: Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
    K::DynamicType: Default,
    F: Fn(WatchEvent<K>) -> Msg + Send + 'static,
{
    tasks.spawn(async move {
        let stream = watcher(api, config).default_backoff();
        forward(stream, tx, kind, wrap).await;
    });
}

/// [`spawn_watch`] for a [`Mirrored`] kind: every object, under the kind's tracking name.
fn spawn_mirror_watch<K, F>(
    tasks: &mut JoinSet<()>,
    reads: &kube::Client,
    tx: &mpsc::Sender<Msg>,
    wrap: F,
) where
    K: Mirrored + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
    K::DynamicType: Default,
    F: Fn(WatchEvent<K>) -> Msg + Send + 'static,
{
    let api = Api::<K>::all(reads.clone());
    spawn_watch(
        tasks,
        api,
        watcher::Config::default(),
        tx.clone(),
        K::KIND,
        wrap,
    );
}

fn watcher<K>(
    api: Api<K>,
    config: watcher::Config,
) -> impl Stream<Item = watcher::Result<WatchEvent<K>>>
where
    K: Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
    K::DynamicType: Default,
{
    watcher::watcher(api, config)
}

async fn forward<K, S, F>(stream: S, tx: mpsc::Sender<Msg>, kind: Kind, wrap: F)
where
    S: Stream<Item = watcher::Result<WatchEvent<K>>>,
    F: Fn(WatchEvent<K>) -> Msg,
{
    let mut stream = std::pin::pin!(stream);
    while let Some(ev) = stream.next().await {
        match ev {
            Ok(ev) => {
                if tx.send(wrap(ev)).await.is_err() {
                    return;
                }
            }
            Err(e) => warn!(watch = kind, error = %e, "Watch failed; retrying with backoff"),
        }
    }
}

/// Relist bookkeeping for one watch: keys present, and the keys seen since the last `Init`.
#[derive(Default)]
struct Tracked {
    known: HashSet<String>,
    relisting: Option<HashSet<String>>,
    synced: bool,
}

impl Tracked {
    /// Feed one event; returns the keys to treat as deleted (present before a relist, absent
    /// from it) when the event is `InitDone`.
    fn observe<K: Resource>(&mut self, ev: &WatchEvent<K>) -> Vec<String> {
        match ev {
            WatchEvent::Init => {
                self.relisting = Some(HashSet::new());
                Vec::new()
            }
            WatchEvent::InitApply(o) => {
                let k = key_of(o);
                if let Some(r) = &mut self.relisting {
                    r.insert(k.clone());
                }
                self.known.insert(k);
                Vec::new()
            }
            WatchEvent::Apply(o) => {
                self.known.insert(key_of(o));
                Vec::new()
            }
            WatchEvent::Delete(o) => {
                self.known.remove(&key_of(o));
                Vec::new()
            }
            WatchEvent::InitDone => {
                self.synced = true;
                let seen = self.relisting.take().unwrap_or_default();
                let gone: Vec<String> = self.known.difference(&seen).cloned().collect();
                for g in &gone {
                    self.known.remove(g);
                }
                gone
            }
        }
    }
}

fn key_of<K: Resource>(o: &K) -> String {
    let meta = o.meta();
    match &meta.namespace {
        Some(ns) => format!("{ns}/{}", meta.name.clone().unwrap_or_default()),
        None => meta.name.clone().unwrap_or_default(),
    }
}

fn split_key(key: &str) -> (&str, &str) {
    key.split_once('/').unwrap_or(("", key))
}

fn now() -> std::time::Instant {
    tokio::time::Instant::now().into_std()
}

/// A pending pod whose spec could not be read.
struct Malformed {
    pod: Arc<core::Pod>,
    message: String,
    reported: bool,
}

/// The state owned by the scheduling task.
struct Scheduler {
    cfg: RunConfig,
    client: Client,
    recorder: events::EventRecorder,
    algo: Algorithm,
    cache: Cache,
    queue: PriorityQueue,
    metrics: SchedulerMetrics,
    tracked: HashMap<Kind, Tracked>,
    assigned: HashMap<String, Arc<PodInfo>>,
    pending: HashMap<String, Arc<PodInfo>>,
    /// Pending pods whose spec could not be read, by key.
    malformed: HashMap<String, Malformed>,
    /// This replica leads (set by the loop); only then are failures reported.
    leading: bool,
    binds: JoinSet<()>,
    bind_slots: Arc<Semaphore>,
    tx: mpsc::Sender<Msg>,
    status: Status,
    leader: LeaderWatch,
    /// The scheduling client's bucket (bindings, status patches, PreBind's writes).
    limiter: Arc<RateLimiter>,
    /// The event client's own bucket (kube-scheduler's `eventClient`): events never take a
    /// binding's token.
    event_limiter: Arc<RateLimiter>,
    /// The rate-limited client for GETs (PreBind's polling); watches have their own clones.
    read_client: Client,
    /// UID of each pod we assumed, by key, while its binding is in flight.
    assumed_uid: HashMap<String, String>,
    /// The newest pending-watch version of a pod seen while it was assumed (requeued if the
    /// binding fails).
    latest_pending: HashMap<String, Arc<PodInfo>>,
}

/// Run the scheduler until shutdown or loss of leadership.
///
/// Watches start at once and keep the caches warm on every replica; pods are scheduled only
/// while `leader` says this replica leads, and every Binding is written only if the
/// leadership fence still holds right before the request.
///
/// # Errors
pub async fn run(
    clients: ApiClients,
    cfg: RunConfig,
    leader: LeaderWatch,
    metrics: SchedulerMetrics,
    status: Status,
    shutdown: impl Future<Output = ()> + Send,
) -> RunOutcome {
    let ApiClients {
        reads,
        writes: client,
        limiter,
        events: event_client,
        event_limiter,
    } = clients;
    let (tx, mut rx) = mpsc::channel::<Msg>(4096);
    let mut watches = JoinSet::new();
    let pods_pending = watcher::Config::default().fields(&format!(
        "spec.schedulerName={},spec.nodeName=,status.phase!=Succeeded,status.phase!=Failed",
        cfg.scheduler_name
    ));
    let pods_assigned = watcher::Config::default()
        .fields("spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed");
    spawn_watch(
        &mut watches,
        Api::<core::Node>::all(reads.clone()),
        watcher::Config::default(),
        tx.clone(),
        "nodes",
        Msg::Node,
    );
    spawn_watch(
        &mut watches,
        Api::<core::Pod>::all(reads.clone()),
        pods_assigned,
        tx.clone(),
        "assigned-pods",
        Msg::AssignedPod,
    );
    spawn_watch(
        &mut watches,
        Api::<core::Pod>::all(reads.clone()),
        pods_pending,
        tx.clone(),
        "pending-pods",
        Msg::PendingPod,
    );
    spawn_mirror_watch(&mut watches, &reads, &tx, Msg::Service);
    spawn_mirror_watch(&mut watches, &reads, &tx, Msg::Rc);
    spawn_mirror_watch(&mut watches, &reads, &tx, Msg::Rs);
    spawn_mirror_watch(&mut watches, &reads, &tx, Msg::Ss);
    // Namespace labels for pod affinity `namespaceSelector` (v1.22 InterPodAffinity lists
    // Namespaces through a Namespace informer when PodAffinityNamespaceSelector is on).
    spawn_mirror_watch(&mut watches, &reads, &tx, Msg::Namespace);
    spawn_mirror_watch(&mut watches, &reads, &tx, |e| Msg::Pv(Box::new(e)));
    spawn_mirror_watch(&mut watches, &reads, &tx, Msg::Pvc);
    spawn_mirror_watch(&mut watches, &reads, &tx, Msg::StorageClass);
    spawn_mirror_watch(&mut watches, &reads, &tx, Msg::CsiNode);

    let recorder = events::EventRecorder::new(
        event_client,
        cfg.scheduler_name.clone(),
        cfg.identity.clone(),
    );
    let mut algo = Algorithm::new(cfg.percentage_of_nodes_to_score, cfg.seed);
    algo.set_extenders(cfg.profile.extenders.clone());
    let mut s = Scheduler {
        algo,
        bind_slots: Arc::new(Semaphore::new(cfg.bind_concurrency.max(1))),
        cfg,
        client,
        recorder,
        cache: Cache::new(Some(DEFAULT_ASSUMED_POD_TTL)),
        queue: PriorityQueue::new(QueueConfig::default()),
        metrics,
        tracked: KINDS.iter().map(|k| (*k, Tracked::default())).collect(),
        assigned: HashMap::new(),
        pending: HashMap::new(),
        malformed: HashMap::new(),
        leading: false,
        binds: JoinSet::new(),
        tx,
        status,
        leader: leader.clone(),
        limiter,
        event_limiter,
        read_client: reads,
        assumed_uid: HashMap::new(),
        latest_pending: HashMap::new(),
    };

    let mut state = leader.state();
    let mut state_closed = false;
    let mut shutdown = std::pin::pin!(shutdown);
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut was_leading = false;
    // The term this replica schedules under; another term (even our own, re-acquired after a
    // lapse the loop did not observe) ends the run like a loss.
    let mut term: Option<(Option<String>, i32)> = None;
    let mut last_unschedulable_flush = now();
    let (mut last_series_finish, mut last_series_refresh) = (now(), now());
    let mut policy_updates = s.cfg.policy_updates.take();
    let outcome = loop {
        // Apply every event already received before deciding anything.
        while let Ok(m) = rx.try_recv() {
            s.handle(m);
        }
        // A reloaded policy takes effect here, between two scheduling cycles.
        if let Some(u) = policy_updates.as_mut().and_then(reload_pending) {
            s.apply_policy(&u);
        }
        let current = leader
            .current_term()
            .map(|t| (t.lease_uid, t.lease_transitions));
        if was_leading && (current.is_none() || current != term) {
            error!("leaderelection lost");
            break RunOutcome::LeadershipLost;
        }
        if current.is_some() && !was_leading {
            info!(identity = %s.cfg.identity, "Started leading; scheduling");
            was_leading = true;
            term = current.clone();
            s.leading = true;
            s.report_malformed();
        }
        s.publish_queue_metrics();
        if current.is_some()
            && s.synced()
            && let Some(guard) = leader.leadership()
            && let Some(qp) = s.queue.pop()
        {
            s.schedule_one(qp, guard);
            // Yield so watches and bindings make progress between cycles, and honour a
            // shutdown even while the active queue stays non-empty.
            tokio::task::yield_now().await;
            if shutdown.as_mut().now_or_never().is_some() {
                break RunOutcome::Shutdown;
            }
            continue;
        }
        tokio::select! {
            m = rx.recv() => {
                if let Some(m) = m {
                    s.handle(m);
                }
            }
            _ = tick.tick() => {
                let t = now();
                s.queue.flush_backoff(t);
                if t.duration_since(last_unschedulable_flush) >= crate::queue::UNSCHEDULABLE_Q_FLUSH_PERIOD {
                    s.queue.flush_unschedulable(t);
                    last_unschedulable_flush = t;
                }
                for key in s.cache.cleanup_expired(t) {
                    warn!(pod = %key, "Assumed pod expired without being seen bound");
                }
                // Event series: final counts every 6 min, open series rewritten every 30.
                if t.duration_since(last_series_finish) >= events::FINISH_PERIOD {
                    let refresh = t.duration_since(last_series_refresh) >= events::REFRESH_PERIOD;
                    if refresh {
                        last_series_refresh = t;
                    }
                    last_series_finish = t;
                    s.event_housekeeping(refresh);
                }
            }
            open = policy_changed(&mut policy_updates), if policy_updates.is_some() => {
                // `changed()` marked it seen: apply it now. Closed: no more reloads.
                match policy_updates.as_mut() {
                    Some(rx) if open => {
                        let update = rx.borrow_and_update().clone();
                        if let Some(u) = update {
                            s.apply_policy(&u);
                        }
                    }
                    _ => policy_updates = None,
                }
            }
            r = state.changed(), if !state_closed => {
                // A closed channel (the elector stopped, or election is off) stays closed:
                // stop polling it, or this select would spin.
                if r.is_err() {
                    state_closed = true;
                }
            }
            _ = &mut shutdown => break RunOutcome::Shutdown,
        }
    };
    watches.abort_all();
    match outcome {
        RunOutcome::LeadershipLost => s.binds.abort_all(),
        RunOutcome::Shutdown => {
            info!("Shutting down: scheduling stopped, waiting for in-flight bindings");
            let grace = tokio::time::sleep(s.cfg.shutdown_grace);
            tokio::pin!(grace);
            loop {
                tokio::select! {
                    j = s.binds.join_next() => if j.is_none() { break },
                    // Keep draining results so no binding task blocks on a full channel.
                    m = rx.recv() => if let Some(m @ Msg::Bound { .. }) = m { s.handle(m) },
                    _ = &mut grace => {
                        warn!("In-flight bindings did not finish within the grace period");
                        s.binds.abort_all();
                        break;
                    }
                }
            }
        }
    }
    outcome
}

/// Resolves when a policy is published (`true`) or the channel closes (`false`).
async fn policy_changed(rx: &mut Option<reload::PolicyUpdates>) -> bool {
    match rx {
        Some(rx) => rx.changed().await.is_ok(),
        None => std::future::pending().await,
    }
}

/// The newest policy published since the last look, if any.
fn reload_pending(rx: &mut reload::PolicyUpdates) -> Option<Arc<reload::PolicyUpdate>> {
    if !rx.has_changed().unwrap_or(false) {
        return None;
    }
    rx.borrow_and_update().clone()
}

impl Scheduler {
    /// Swap in a reloaded policy: the next cycle runs its plugins (with their arguments) and
    /// its extenders (filter, prioritize, and bind for pods assumed from then on; bindings in
    /// flight keep the binder they were given). Pods found unschedulable under the old policy
    /// are retried (they may fit now).
    fn apply_policy(&mut self, u: &reload::PolicyUpdate) {
        self.cfg.profile = u.profile.clone();
        self.algo.set_extenders(u.profile.extenders.clone());
        let moved =
            self.queue
                .move_all_to_active_or_backoff(ClusterEvent::PolicyChange, now(), None);
        info!(
            file = %u.source.display(),
            generation = u.generation,
            unschedulable_pods_retried = moved,
            "Reloaded policy in force"
        );
    }

    fn synced(&self) -> bool {
        let all = self.tracked.values().all(|t| t.synced);
        if all {
            self.status.caches_synced.store(true, Ordering::Relaxed);
        }
        all
    }

    fn publish_queue_metrics(&self) {
        let p = self.queue.pending_pods();
        let g = &self.metrics.pending_pods;
        g.with_label_values(&["active"]).set(p.active as i64);
        g.with_label_values(&["backoff"]).set(p.backoff as i64);
        g.with_label_values(&["unschedulable"])
            .set(p.unschedulable as i64);
    }

    fn handle(&mut self, m: Msg) {
        match m {
            Msg::Node(ev) => {
                for gone in self.track("nodes", &ev) {
                    let _ = self.cache.remove_node(&gone);
                }
                match ev {
                    WatchEvent::Apply(n) | WatchEvent::InitApply(n) => {
                        let name = n.name_any();
                        match crate::framework::NodeInfo::from_node(n) {
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
                                self.queue.move_all_to_active_or_backoff(event, now(), None);
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
            Msg::AssignedPod(ev) => {
                for gone in self.track("assigned-pods", &ev) {
                    self.remove_assigned(&gone);
                }
                match ev {
                    WatchEvent::Apply(p) | WatchEvent::InitApply(p) => {
                        let key = key_of(&p);
                        match PodInfo::from_pod(p) {
                            Ok(pi) => {
                                let pi = Arc::new(pi);
                                // Bound by someone else (or by us): no longer pending.
                                if let Some(old) = self.pending.remove(&key) {
                                    self.queue.delete(&old);
                                }
                                if let Err(e) = self.cache.add_pod(pi.clone()) {
                                    debug!(pod = %key, error = %e, "Cache refused assigned pod");
                                }
                                let event = if self.assigned.contains_key(&key) {
                                    ClusterEvent::AssignedPodUpdate
                                } else {
                                    ClusterEvent::AssignedPodAdd
                                };
                                self.assigned_pod_event(&pi, event);
                                self.assigned.insert(key, pi);
                            }
                            Err(e) => {
                                warn!(pod = %key, error = %e, "Assigned pod with a malformed spec is not counted")
                            }
                        }
                    }
                    WatchEvent::Delete(p) => self.remove_assigned(&key_of(&p)),
                    WatchEvent::Init | WatchEvent::InitDone => {}
                }
            }
            Msg::PendingPod(ev) => {
                for gone in self.track("pending-pods", &ev) {
                    self.remove_pending(&gone);
                }
                match ev {
                    WatchEvent::Apply(p) | WatchEvent::InitApply(p) => self.upsert_pending(p),
                    WatchEvent::Delete(p) => self.remove_pending(&key_of(&p)),
                    WatchEvent::Init | WatchEvent::InitDone => {}
                }
            }
            Msg::Service(ev) => self.mirror(ev),
            Msg::Rc(ev) => self.mirror(ev),
            Msg::Rs(ev) => self.mirror(ev),
            Msg::Ss(ev) => self.mirror(ev),
            Msg::Namespace(ev) => self.mirror(ev),
            Msg::Pv(ev) => self.mirror(*ev),
            Msg::Pvc(ev) => self.mirror(ev),
            Msg::StorageClass(ev) => self.mirror(ev),
            Msg::CsiNode(ev) => self.mirror(ev),
            Msg::Bound {
                pod,
                node,
                result,
                attempt,
            } => self.bound(pod, node, result, attempt),
        }
    }

    /// `AssignedPodAdded` / `AssignedPodUpdated` (v1.22 scheduling queue): an assigned pod may
    /// satisfy the required pod affinity of unschedulable pods; move those whose terms match it.
    fn assigned_pod_event(&mut self, pod: &PodInfo, event: ClusterEvent) {
        let ns_labels = self
            .cache
            .snapshot()
            .namespace_labels(&pod.namespace)
            .cloned();
        let matches = |p: &PodInfo| {
            p.pod_affinity
                .required_affinity
                .iter()
                .any(|t| t.matches(&pod.namespace, &pod.labels, ns_labels.as_ref()))
        };
        self.queue
            .move_all_to_active_or_backoff(event, now(), Some(&matches));
    }

    /// A watch event of a kind the cache mirrors as it is: relist deletions, add/update (and the
    /// queue move it may trigger), delete.
    fn mirror<K: Mirrored>(&mut self, ev: WatchEvent<K>) {
        for gone in self.track(K::KIND, &ev) {
            let (ns, name) = split_key(&gone);
            K::remove(&mut self.cache, ns, name);
        }
        match ev {
            WatchEvent::Apply(o) | WatchEvent::InitApply(o) => {
                if let Some(event) = K::upsert(&mut self.cache, o) {
                    self.queue.move_all_to_active_or_backoff(event, now(), None);
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

    fn remove_assigned(&mut self, key: &str) {
        if let Some(pi) = self.assigned.remove(key) {
            let _ = self.cache.remove_pod(&pi);
            self.queue
                .move_all_to_active_or_backoff(ClusterEvent::AssignedPodDelete, now(), None);
        }
    }

    fn remove_pending(&mut self, key: &str) {
        self.malformed.remove(key);
        self.latest_pending.remove(key);
        if let Some(pi) = self.pending.remove(key) {
            self.queue.delete(&pi);
        }
    }

    fn upsert_pending(&mut self, p: core::Pod) {
        let key = key_of(&p);
        if p.metadata.deletion_timestamp.is_some() {
            self.remove_pending(&key);
            return;
        }
        match PodInfo::from_pod(p.clone()) {
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
                let old = self.pending.insert(key, pi.clone());
                if old.is_some() {
                    self.queue.update(old.as_deref(), pi, now());
                } else {
                    self.queue.add(pi, now());
                }
            }
            Err(e) => {
                // A malformed pod cannot be scheduled until it is fixed: tell its owner once
                // per distinct problem, as FailedScheduling, and carry on. (Our own status patch
                // bumps its resourceVersion without changing the problem: no second report.)
                if let Some(old) = self.pending.remove(&key) {
                    self.queue.delete(&old);
                }
                let message = e.to_string();
                if self.malformed.get(&key).map(|m| &m.message) != Some(&message) {
                    warn!(pod = %key, error = %e, "Pod cannot be scheduled: malformed spec");
                    self.malformed.insert(
                        key,
                        Malformed {
                            pod: Arc::new(p),
                            message,
                            reported: false,
                        },
                    );
                    self.report_malformed();
                }
            }
        }
    }

    /// FailedScheduling for each malformed pod version not yet reported, if this replica leads
    /// (followers only remember them, so that a new leader reports what its predecessor may not
    /// have).
    fn report_malformed(&mut self) {
        if !self.leading {
            return;
        }
        let mut reports = Vec::new();
        for m in self.malformed.values_mut().filter(|m| !m.reported) {
            m.reported = true;
            reports.push((m.pod.clone(), m.message.clone()));
        }
        for (pod, message) in reports {
            self.metrics
                .schedule_attempts
                .with_label_values(&["error", PROFILE])
                .inc();
            self.report_failure(pod, message);
        }
    }

    fn schedule_one(&mut self, qp: QueuedPodInfo, guard: LeadershipGuard) {
        // v1.22 scheduleOne: podSchedulingCycle := SchedulingQueue.SchedulingCycle(), right
        // after Pop; a failure in the binding cycle is judged against this cycle.
        let attempt = Attempt {
            cycle: self.queue.scheduling_cycle(),
            attempts: qp.attempts,
        };
        let pod = qp.pod.clone();
        let key = pod.key();
        if !self.pending.contains_key(&key) || self.cache.is_assumed(&key) {
            return;
        }
        let start = std::time::Instant::now();
        let profile = &self.cfg.profile;
        let result = if !crate::extender::cycle_calls_extenders(&profile.extenders, &pod) {
            self.algo
                .schedule(&profile.framework, self.cache.snapshot(), &pod, false)
        } else {
            // Extender calls block (kube-scheduler calls them synchronously in the cycle too):
            // tell the runtime, so the other tasks (watches, bindings, the elector) move on.
            let (algo, fwk, snapshot) = (&mut self.algo, &profile.framework, self.cache.snapshot());
            blocking(|| algo.schedule(fwk, snapshot, &pod, false))
        };
        // Each extension point the cycle reached, whatever its outcome (v1.22 observes them in
        // RunPreFilterPlugins, findNodesThatPassFilters, RunPreScorePlugins, RunScorePlugins).
        let t = self.algo.last_timings();
        for (point, timing) in [
            ("PreFilter", t.pre_filter),
            ("Filter", t.filter),
            ("PreScore", t.pre_score),
            ("Score", t.score),
        ] {
            if let Some((d, code)) = timing {
                self.metrics
                    .extension_point_duration
                    .with_label_values(&[point, code.as_str(), PROFILE])
                    .observe(d.as_secs_f64());
            }
        }
        match result {
            Ok(r) => {
                // assume, then Reserve (VolumeBinding's PV/PVC bindings); a failure of either
                // leaves nothing assumed. v1.22 scheduleOne: recordSchedulingFailure(..., err,
                // SchedulerError, "") after either.
                let assumed = match self.cache.assume(pod.clone(), &r) {
                    Ok(a) => a,
                    Err(e) => {
                        warn!(pod = %key, error = %e, "Assume or Reserve failed");
                        self.scheduler_error(qp, e.to_string());
                        return;
                    }
                };
                let volume_job = assumed.volumes.map(|a| {
                    let snapshot = self.cache.snapshot();
                    volume_binding::VolumeBindJob {
                        pod: pod.clone(),
                        assumed: a,
                        node_labels: snapshot
                            .node(&r.node)
                            .map(|n| n.labels.clone())
                            .unwrap_or_default(),
                        csi_node: snapshot.volumes().csi_node(&r.node).cloned(),
                        gates: crate::volume::MigrationGates::default(),
                    }
                });
                let gpu = assumed.gpu_indexes;
                self.pending.remove(&key);
                self.queue.delete(&pod);
                self.assumed_uid.insert(key.clone(), pod.uid.clone());
                let elapsed = start.elapsed().as_secs_f64();
                self.metrics
                    .schedule_attempts
                    .with_label_values(&["scheduled", PROFILE])
                    .inc();
                self.metrics
                    .scheduling_attempt_duration
                    .with_label_values(&["scheduled", PROFILE])
                    .observe(elapsed);
                let binder =
                    crate::extender::binder_for(&self.cfg.profile.extenders, &pod).cloned();
                self.spawn_bind(
                    BindJob {
                        pod,
                        node: r.node,
                        gpu,
                        volumes: volume_job,
                        binder,
                        attempt,
                    },
                    guard,
                );
            }
            Err(e) => {
                let result = if matches!(e, ScheduleError::Fit(_) | ScheduleError::NoNodesAvailable)
                {
                    "unschedulable"
                } else {
                    "error"
                };
                self.metrics
                    .schedule_attempts
                    .with_label_values(&[result, PROFILE])
                    .inc();
                self.metrics
                    .scheduling_attempt_duration
                    .with_label_values(&[result, PROFILE])
                    .observe(start.elapsed().as_secs_f64());
                let message = e.to_string();
                info!(pod = %key, reason = %message, "Unable to schedule pod; waiting");
                self.requeue(qp);
                self.report_failure(pod.pod.clone(), message);
            }
        }
    }

    /// An attempt that failed after the algorithm chose a node (assume, Reserve): counted as
    /// `result="error"`, requeued, and reported as FailedScheduling with `PodScheduled=False,
    /// reason SchedulerError` (v1.22 `PodScheduleError` + `recordSchedulingFailure`).
    fn scheduler_error(&mut self, qp: QueuedPodInfo, message: String) {
        self.metrics
            .schedule_attempts
            .with_label_values(&["error", PROFILE])
            .inc();
        let pod = qp.pod.pod.clone();
        self.requeue(qp);
        self.report_failure_with_reason(pod, message, REASON_SCHEDULER_ERROR);
    }

    fn requeue(&mut self, qp: QueuedPodInfo) {
        let cycle = self.queue.scheduling_cycle();
        if let Err(e) = self
            .queue
            .add_unschedulable_if_not_present(qp, cycle, now())
        {
            debug!(error = %e, "Pod already queued again");
        }
    }

    /// Bind in the background: through `binder` when an extender binds this pod
    /// (`extendersBinding`), else with a `pods/binding` write.
    fn spawn_bind(&mut self, job: BindJob, guard: LeadershipGuard) {
        let BindJob {
            pod,
            node,
            gpu,
            volumes,
            binder,
            attempt,
        } = job;
        let client = self.client.clone();
        let read_client = self.read_client.clone();
        let tx = self.tx.clone();
        let slots = self.bind_slots.clone();
        let identity = self.cfg.identity.clone();
        let recorder = self.recorder.clone();
        let bind_hist = self.metrics.extension_point_duration.clone();
        let limiter = self.limiter.clone();
        let event_limiter = self.event_limiter.clone();
        self.binds.spawn(async move {
            let _permit = slots.acquire_owned().await;
            // PreBind: VolumeBinding's writes, then the wait for the PV controller.
            if let Some(job) = volumes {
                let started = std::time::Instant::now();
                let r = volume_binding::bind_pod_volumes(
                    &client,
                    &read_client,
                    &guard,
                    &limiter,
                    &job,
                    crate::framework::plugins::volume_binding::DEFAULT_BIND_TIMEOUT,
                    volume_binding::POLL_INTERVAL,
                )
                .await;
                bind_hist
                    .with_label_values(&[
                        "PreBind",
                        if r.is_ok() { "Success" } else { "Error" },
                        PROFILE,
                    ])
                    .observe(started.elapsed().as_secs_f64());
                let failed = match r {
                    Ok(()) => None,
                    Err(volume_binding::PreBindError::NotLeading(m)) => {
                        Some(BindResult::NotLeading(m))
                    }
                    Err(volume_binding::PreBindError::Failed(m)) => {
                        Some(BindResult::PreBindFailed(format!(
                            "running PreBind plugin {:?}: {m}",
                            crate::framework::plugins::volume_binding::NAME
                        )))
                    }
                };
                if let Some(result) = failed {
                    let _ = tx
                        .send(Msg::Bound {
                            pod,
                            node,
                            result,
                            attempt,
                        })
                        .await;
                    return;
                }
            }
            let started = std::time::Instant::now();
            let result = match binder {
                // An extender's bind is no request of our API client: no token.
                Some(ext) => extender_bind(ext, &pod, &node, &guard).await,
                None => {
                    api_bind(
                        &client,
                        &limiter,
                        &pod,
                        &node,
                        gpu.as_deref(),
                        &guard,
                        &identity,
                    )
                    .await
                }
            };
            let status = if matches!(result, BindResult::Bound) {
                "Success"
            } else {
                "Error"
            };
            bind_hist
                .with_label_values(&["Bind", status, PROFILE])
                .observe(started.elapsed().as_secs_f64());
            if matches!(result, BindResult::Bound) {
                record_scheduled(&recorder, &event_limiter, &guard, &pod, &node).await;
            }
            let _ = tx
                .send(Msg::Bound {
                    pod,
                    node,
                    result,
                    attempt,
                })
                .await;
        });
        // Reap finished bindings so the set does not grow.
        while self.binds.try_join_next().is_some() {}
    }

    fn bound(&mut self, pod: Arc<PodInfo>, node: String, result: BindResult, attempt: Attempt) {
        let key = pod.key();
        self.assumed_uid.remove(&key);
        match result {
            BindResult::Bound => {
                info!(pod = %key, node = %node, "Successfully bound pod to node");
                self.cache.finish_binding(&key, now());
                self.latest_pending.remove(&key);
            }
            BindResult::AlreadyAssigned(msg) => {
                // Someone else bound it: not an error to retry. The watch brings the truth.
                info!(pod = %key, reason = %msg, "Pod already assigned; dropping");
                let _ = self.cache.forget_pod(&pod);
                // A new incarnation seen meanwhile is a different pod: queue it.
                if let Some(latest) = self.latest_pending.remove(&key)
                    && latest.uid != pod.uid
                {
                    self.requeue_pending(latest);
                }
            }
            BindResult::NotLeading(msg) => {
                warn!(pod = %key, reason = %msg, "Binding not written: leadership fence");
                self.requeue_after_failed_bind(&key, pod, attempt);
            }
            BindResult::Failed(msg) => {
                warn!(pod = %key, node = %node, error = %msg, "Binding failed; requeueing");
                // v1.22 scheduleOne: recordSchedulingFailure(..., fmt.Errorf("binding rejected:
                // %w", err), SchedulerError, "") after a failed bind, extender or API.
                self.report_failure_with_reason(
                    pod.pod.clone(),
                    format!("binding rejected: {msg}"),
                    REASON_SCHEDULER_ERROR,
                );
                self.requeue_after_failed_bind(&key, pod, attempt);
            }
            BindResult::PreBindFailed(msg) => {
                warn!(pod = %key, node = %node, error = %msg, "PreBind failed; requeueing");
                // v1.22 scheduleOne: recordSchedulingFailure(..., preBindStatus.AsError(),
                // SchedulerError, "").
                self.report_failure_with_reason(pod.pod.clone(), msg, REASON_SCHEDULER_ERROR);
                self.requeue_after_failed_bind(&key, pod, attempt);
            }
        }
    }

    /// Undo an assumption whose binding did not happen and queue the pod again — the newest
    /// version seen meanwhile, or the one we had if the pending watch still lists it. Nothing
    /// is queued when the watch already shows the pod bound (the forget fails) or gone.
    fn requeue_after_failed_bind(&mut self, key: &str, pod: Arc<PodInfo>, attempt: Attempt) {
        if self.cache.forget_pod(&pod).is_err() {
            self.latest_pending.remove(key);
            return;
        }
        let still_pending = self
            .tracked
            .get("pending-pods")
            .is_some_and(|t| t.known.contains(key));
        match self.latest_pending.remove(key) {
            Some(latest) => self.requeue_pending_after(latest, attempt),
            None if still_pending => self.requeue_pending_after(pod, attempt),
            None => {}
        }
    }

    fn requeue_pending(&mut self, pod: Arc<PodInfo>) {
        let attempt = Attempt {
            cycle: self.queue.scheduling_cycle(),
            attempts: 1,
        };
        self.requeue_pending_after(pod, attempt);
    }

    /// Queue `pod` again as unschedulable after `attempt` failed (`AddUnschedulableIfNotPresent`
    /// with the attempt's own scheduling cycle).
    fn requeue_pending_after(&mut self, pod: Arc<PodInfo>, attempt: Attempt) {
        let key = pod.key();
        if self.pending.contains_key(&key) {
            return;
        }
        self.pending.insert(key, pod.clone());
        let mut qp = QueuedPodInfo::new(pod, now());
        qp.attempts = attempt.attempts.max(1);
        if let Err(e) = self
            .queue
            .add_unschedulable_if_not_present(qp, attempt.cycle, now())
        {
            debug!(error = %e, "Pod already queued again");
        }
    }

    /// Write the event series' periodic updates, each behind the rate limiter and the
    /// leadership fence (a replica that does not lead writes nothing).
    fn event_housekeeping(&self, refresh: bool) {
        let writes = self.recorder.housekeeping(refresh);
        let Some(guard) = self.leader.leadership() else {
            return;
        };
        if writes.is_empty() {
            return;
        }
        let recorder = self.recorder.clone();
        let event_limiter = self.event_limiter.clone();
        tokio::spawn(async move {
            for w in writes {
                if !guard.is_valid() {
                    return;
                }
                recorder.write(w, || admit(&event_limiter, &guard)).await;
            }
        });
    }

    /// FailedScheduling event and `PodScheduled=False` (reason `Unschedulable`), written in the
    /// background; each write only if the leadership fence still holds right before it.
    fn report_failure(&self, pod: Arc<core::Pod>, message: String) {
        self.report_failure_with_reason(pod, message, "Unschedulable");
    }

    /// [`Self::report_failure`] with the `PodScheduled` condition's `reason`
    /// (`recordSchedulingFailure`'s `reason`: `Unschedulable` or [`REASON_SCHEDULER_ERROR`]).
    fn report_failure_with_reason(
        &self,
        pod: Arc<core::Pod>,
        message: String,
        reason: &'static str,
    ) {
        let Some(guard) = self.leader.leadership() else {
            return;
        };
        let client = self.client.clone();
        let recorder = self.recorder.clone();
        let limiter = self.limiter.clone();
        let event_limiter = self.event_limiter.clone();
        tokio::spawn(async move {
            recorder
                .publish(
                    &pod,
                    "Warning",
                    "FailedScheduling",
                    "Scheduling",
                    message.clone(),
                    || admit(&event_limiter, &guard),
                )
                .await;
            let (ns, name) = (pod.namespace().unwrap_or_default(), pod.name_any());
            let Some(patch) = pod_scheduled_false_patch(
                &pod,
                reason,
                &message,
                k8s_openapi::jiff::Timestamp::now(),
            ) else {
                return;
            };
            limiter.acquire().await;
            if guard.check().is_err() {
                return;
            }
            if let Err(e) = Api::<core::Pod>::namespaced(client, &ns)
                .patch_status(&name, &PatchParams::default(), &Patch::Strategic(&patch))
                .await
            {
                debug!(pod = %format!("{ns}/{name}"), error = %e, "Updating PodScheduled condition failed");
            }
        });
    }
}

/// The strategic-merge patch of `pods/status` that sets `PodScheduled=False` with `reason` and
/// `message`, or `None` when `pod` (the version the scheduler holds) already carries exactly that
/// condition — v1.22 `updatePod` writes nothing then (`podutil.UpdatePodCondition` reports no
/// change). As there, `lastTransitionTime` is `now` when the status changes and the old one when
/// it was already `False`.
fn pod_scheduled_false_patch(
    pod: &core::Pod,
    reason: &str,
    message: &str,
    now: k8s_openapi::jiff::Timestamp,
) -> Option<serde_json::Value> {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    let old = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "PodScheduled"));
    let mut transition = Time(now);
    if let Some(old) = old.filter(|c| c.status == "False") {
        if old.reason.as_deref() == Some(reason)
            && old.message.as_deref() == Some(message)
            && old.last_probe_time.is_none()
        {
            return None;
        }
        if let Some(t) = &old.last_transition_time {
            transition = t.clone();
        }
    }
    let mut condition = serde_json::json!({
        "type": "PodScheduled",
        "status": "False",
        "reason": reason,
        "message": message,
        "lastTransitionTime": transition,
    });
    // The condition is replaced whole, as upstream's two-way merge patch does: a probe time
    // someone else wrote is removed (`null` deletes a field in a strategic merge patch).
    if old.is_some_and(|c| c.last_probe_time.is_some()) {
        condition["lastProbeTime"] = serde_json::Value::Null;
    }
    Some(serde_json::json!({"status": {"conditions": [condition]}}))
}

/// Admission of one fenced write (see [`ratelimit`]): the rate-limit token first, then the
/// leadership fence; `true` when the request may be sent at once.
async fn admit(limiter: &RateLimiter, guard: &LeadershipGuard) -> bool {
    limiter.acquire().await;
    guard.check().is_ok()
}

/// The `pods/binding` write of a pod no extender binds: the token from the scheduling client's
/// bucket first, then the fence check inside [`bind`], then the request.
async fn api_bind(
    client: &Client,
    limiter: &RateLimiter,
    pod: &PodInfo,
    node: &str,
    gpu: Option<&[u32]>,
    guard: &LeadershipGuard,
    identity: &str,
) -> BindResult {
    limiter.acquire().await;
    bind(client, pod, node, gpu, guard, identity).await
}

/// The `Scheduled` event after a successful binding (v1.22 `scheduleOne`'s
/// `fwk.EventRecorder().Eventf(..., "Scheduled", "Binding", "Successfully assigned %v/%v to
/// %v", ...)`), written through the event client with a token from the event client's own
/// bucket (`event_limiter`) and behind the fence.
async fn record_scheduled(
    recorder: &events::EventRecorder,
    event_limiter: &RateLimiter,
    guard: &LeadershipGuard,
    pod: &PodInfo,
    node: &str,
) {
    let note = format!("Successfully assigned {} to {}", pod.key(), node);
    recorder
        .publish(&pod.pod, "Normal", "Scheduled", "Binding", note, || {
            admit(event_limiter, guard)
        })
        .await;
}

/// Runs `f`, which blocks on extender calls: under `block_in_place` on a multi-thread runtime,
/// so the runtime moves this worker's other tasks elsewhere; directly otherwise. On a
/// current-thread runtime that stalls every task of the runtime for the call's duration, so an
/// extender served by that same runtime (a test double) can only answer after `httpTimeout`:
/// run cluster mode with extenders on a multi-thread runtime (the binary does).
fn blocking<R>(f: impl FnOnce() -> R) -> R {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

/// The extender binds the pod (`extendersBinding`, v1.22 `scheduler.go`), only if the leadership
/// fence holds right before the call; the blocking call runs on the blocking pool.
async fn extender_bind(
    ext: Arc<dyn Extender>,
    pod: &PodInfo,
    node: &str,
    guard: &LeadershipGuard,
) -> BindResult {
    if let Err(e) = guard.check() {
        return BindResult::NotLeading(e.to_string());
    }
    let args = ExtenderBindingArgs::new(pod, node);
    let name = ext.name().to_string();
    // The extender's error as is: upstream's `extendersBinding` returns it unwrapped, and it
    // becomes the "binding rejected: <error>" FailedScheduling message.
    let error = match tokio::task::spawn_blocking(move || ext.bind(&args)).await {
        Ok(Ok(())) => return BindResult::Bound,
        Ok(Err(e)) => e.to_string(),
        Err(e) => e.to_string(),
    };
    warn!(extender = %name, pod = %pod.key(), error = %error, "Extender bind failed");
    BindResult::Failed(error)
}

/// `POST pods/{name}/binding`, only if the leadership fence holds right before the request.
async fn bind(
    client: &Client,
    pod: &PodInfo,
    node: &str,
    gpu: Option<&[u32]>,
    guard: &LeadershipGuard,
    identity: &str,
) -> BindResult {
    let term = guard.term().clone();
    let mut annotations = std::collections::BTreeMap::from([
        (ANNOTATION_SCHEDULED_BY.to_string(), identity.to_string()),
        (
            ANNOTATION_LEASE_UID.to_string(),
            term.lease_uid.clone().unwrap_or_default(),
        ),
        (
            ANNOTATION_LEASE_TRANSITIONS.to_string(),
            term.lease_transitions.to_string(),
        ),
    ]);
    if let Some(idx) = gpu {
        let list: Vec<String> = idx.iter().map(u32::to_string).collect();
        annotations.insert(ANNOTATION_GPU_INDEXES.to_string(), list.join(","));
    }
    let binding = core::Binding {
        metadata: ObjectMeta {
            name: Some(pod.name.clone()),
            namespace: Some(pod.namespace.clone()),
            uid: (!pod.uid.is_empty()).then(|| pod.uid.clone()),
            annotations: Some(annotations),
            ..Default::default()
        },
        target: core::ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Node".into()),
            name: Some(node.to_string()),
            ..Default::default()
        },
    };
    if let Err(e) = guard.check() {
        return BindResult::NotLeading(e.to_string());
    }
    let api = Api::<core::Pod>::namespaced(client.clone(), &pod.namespace);
    match api
        .create_subresource::<_, kube::core::Status>(
            "binding",
            &pod.name,
            &PostParams::default(),
            &binding,
        )
        .await
    {
        Ok(_) => BindResult::Bound,
        Err(kube::Error::Api(s)) if s.code == 409 && s.message.contains("already assigned") => {
            BindResult::AlreadyAssigned(s.message.clone())
        }
        // client-go's StatusError.Error() is the Status message, which upstream's
        // "binding rejected: %w" wraps.
        Err(kube::Error::Api(s)) => BindResult::Failed(s.message),
        Err(e) => BindResult::Failed(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An extender that binds the pod is called (on the blocking pool) while the fence holds;
    /// its error fails the binding.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn extender_bind_calls_the_binder_behind_the_fence() {
        use crate::extender::fake::FakeExtender;
        let guard = LeaderWatch::always_leading("me")
            .leadership()
            .expect("leads");
        let pod = crate::framework::plugins::testutil::pod("p").info();
        let ext = Arc::new(FakeExtender::default());
        let r = extender_bind(ext.clone(), &pod, "n1", &guard).await;
        assert!(matches!(r, BindResult::Bound), "{r:?}");
        let bound = ext.bound.lock().map(|b| b.clone()).unwrap_or_default();
        assert_eq!(bound, [ExtenderBindingArgs::new(&pod, "n1")]);
        let refusing = Arc::new(FakeExtender {
            not_binder: true,
            ..FakeExtender::default()
        });
        let r = extender_bind(refusing, &pod, "n1", &guard).await;
        assert!(
            matches!(&r, BindResult::Failed(m) if m == "not a binder"),
            "{r:?}"
        );
    }

    /// One write the API saw: which client sent it, the request path, and when (tokio's clock).
    type Seen = (&'static str, String, tokio::time::Instant);

    /// A client named `name` whose API answers every request with 201 and records it in `log`.
    fn recording_client(name: &'static str, log: Arc<std::sync::Mutex<Vec<Seen>>>) -> Client {
        let svc = tower::service_fn(move |req: http::Request<kube::client::Body>| {
            let path = req.uri().path().to_string();
            log.lock().unwrap_or_else(|e| e.into_inner()).push((
                name,
                path.clone(),
                tokio::time::Instant::now(),
            ));
            let body = if path.ends_with("/binding") {
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201}"#
            } else {
                r#"{"kind":"Event","apiVersion":"events.k8s.io/v1","metadata":{}}"#
            };
            let resp = http::Response::builder()
                .status(201)
                .header("content-type", "application/json")
                .body(http_body_util::Full::new(bytes::Bytes::from(body)));
            std::future::ready(resp)
        });
        Client::new(svc, "default")
    }

    /// `pods` pods bound the way `spawn_bind` binds them (`bind_concurrency` 16 at a time): the
    /// Binding, then the `Scheduled` event. Returns every request seen, in order.
    async fn bind_and_report(clients: &ApiClients, pods: usize) -> Vec<Seen> {
        let log = Arc::new(std::sync::Mutex::new(Vec::new()));
        let writes = recording_client("scheduling", log.clone());
        let recorder = events::EventRecorder::new(
            recording_client("events", log.clone()),
            "mini-scheduler".into(),
            "me".into(),
        );
        let guard = LeaderWatch::always_leading("me")
            .leadership()
            .expect("leads");
        let slots = Arc::new(Semaphore::new(16));
        let mut tasks = JoinSet::new();
        for i in 0..pods {
            let pod = crate::framework::plugins::testutil::pod(&format!("p{i}")).info();
            let (writes, recorder, guard, slots) = (
                writes.clone(),
                recorder.clone(),
                guard.clone(),
                slots.clone(),
            );
            let (limiter, event_limiter) = (clients.limiter.clone(), clients.event_limiter.clone());
            tasks.spawn(async move {
                let _permit = slots.acquire_owned().await;
                let r = api_bind(&writes, &limiter, &pod, "n1", None, &guard, "me").await;
                assert!(matches!(r, BindResult::Bound), "{r:?}");
                record_scheduled(&recorder, &event_limiter, &guard, &pod, "n1").await;
            });
        }
        while let Some(r) = tasks.join_next().await {
            r.expect("bind task");
        }
        log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// kube-scheduler's `createClients`: events have a client and a token bucket of their own,
    /// so with a `Scheduled` event after every Binding the bindings still get the full
    /// `--kube-api-qps`. QPS 10, burst 1, 40 pods: the 40th Binding goes at 3.9 s (the first
    /// token is the burst), while the 40 events are written alongside. On one shared bucket
    /// (the behaviour before) the same run needs about twice as long for its bindings.
    #[tokio::test(start_paused = true)]
    async fn bindings_get_the_full_qps_while_events_are_written() {
        let config = kube::Config::new("http://127.0.0.1:1".parse().expect("url"));
        let clients = ApiClients::new(config, 10.0, 1).expect("clients");
        assert!(!Arc::ptr_eq(&clients.limiter, &clients.event_limiter));
        let start = tokio::time::Instant::now();
        let seen = bind_and_report(&clients, 40).await;
        let at = |client: &str, what: &str| -> Vec<Duration> {
            seen.iter()
                .filter(|(c, p, _)| *c == client && p.contains(what))
                .map(|(_, _, t)| t.duration_since(start))
                .collect()
        };
        let bindings = at("scheduling", "/binding");
        let events = at("events", "/events");
        assert_eq!(bindings.len(), 40);
        assert_eq!(
            events.len(),
            40,
            "every Scheduled event, on the event client"
        );
        assert_eq!(seen.len(), 80, "nothing else: {seen:?}");
        let last_binding = *bindings.iter().max().expect("bindings");
        assert!(
            last_binding >= Duration::from_millis(3900)
                && last_binding < Duration::from_millis(3950),
            "40 bindings at 10 QPS: {last_binding:?}"
        );
        // The events kept pace: each one followed its binding at once, none waited for a
        // binding's token.
        let last_event = *events.iter().max().expect("events");
        assert!(last_event < Duration::from_millis(4000), "{last_event:?}");

        // The same run with events drawing from the scheduling client's bucket: when the
        // 40th Binding goes, at least 24 pods (40 less the 16 in flight) have had their event
        // too, so at least 64 tokens at 10/s have gone: 6.3 s or more.
        let one = Arc::new(RateLimiter::new(10.0, 1));
        let shared = ApiClients {
            limiter: one.clone(),
            event_limiter: one,
            ..clients
        };
        let start = tokio::time::Instant::now();
        let seen = bind_and_report(&shared, 40).await;
        let last_binding = seen
            .iter()
            .filter(|(_, p, _)| p.ends_with("/binding"))
            .map(|(_, _, t)| t.duration_since(start))
            .max()
            .expect("bindings");
        assert!(
            last_binding >= Duration::from_millis(6300),
            "one bucket for both slows the bindings: {last_binding:?}"
        );
    }

    /// `blocking` uses `block_in_place` on a multi-thread runtime and runs inline elsewhere
    /// (where `block_in_place` would panic).
    #[tokio::test(flavor = "current_thread")]
    async fn blocking_runs_inline_on_a_current_thread_runtime() {
        assert_eq!(blocking(|| 7), 7);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn blocking_runs_on_a_multi_thread_runtime() {
        assert_eq!(blocking(|| 8), 8);
        assert_eq!(std::thread::spawn(|| blocking(|| 9)).join().ok(), Some(9));
    }

    fn pod_with_condition(c: Option<core::PodCondition>) -> core::Pod {
        core::Pod {
            status: Some(core::PodStatus {
                conditions: c.map(|c| vec![c]),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn ts(s: &str) -> k8s_openapi::jiff::Timestamp {
        s.parse().expect("timestamp")
    }

    /// v1.22 `updatePod`: no write when the pod already says `PodScheduled=False` with the same
    /// reason and message; a new message keeps the old `lastTransitionTime`; a change of status
    /// takes `now`.
    #[test]
    fn pod_scheduled_patch_follows_update_pod_condition() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
        let now = ts("2026-11-24T10:00:00Z");
        let then = ts("2026-11-24T09:00:00Z");
        let cond = |status: &str, reason: &str, message: &str| core::PodCondition {
            type_: "PodScheduled".into(),
            status: status.into(),
            reason: Some(reason.into()),
            message: Some(message.into()),
            last_transition_time: Some(Time(then)),
            ..Default::default()
        };
        let msg = "0/1 nodes are available: 1 Insufficient cpu.";

        // Nothing yet: written, transition now.
        let p = pod_scheduled_false_patch(&pod_with_condition(None), "Unschedulable", msg, now)
            .expect("a first failure is written");
        let c = &p["status"]["conditions"][0];
        assert_eq!(c["type"], "PodScheduled");
        assert_eq!(c["status"], "False");
        assert_eq!(c["reason"], "Unschedulable");
        assert_eq!(c["message"], msg);
        assert_eq!(c["lastTransitionTime"], "2026-11-24T10:00:00Z");
        assert!(c.get("lastProbeTime").is_none());

        // The same condition again: nothing to write.
        let same = pod_with_condition(Some(cond("False", "Unschedulable", msg)));
        assert_eq!(
            pod_scheduled_false_patch(&same, "Unschedulable", msg, now),
            None
        );

        // Another message (or reason) while still False: written, old transition time.
        let p = pod_scheduled_false_patch(&same, "Unschedulable", "0/2 nodes are available", now)
            .expect("a new message is written");
        assert_eq!(
            p["status"]["conditions"][0]["lastTransitionTime"],
            "2026-11-24T09:00:00Z"
        );
        let p = pod_scheduled_false_patch(&same, REASON_SCHEDULER_ERROR, msg, now)
            .expect("a new reason is written");
        assert_eq!(
            p["status"]["conditions"][0]["reason"],
            REASON_SCHEDULER_ERROR
        );

        // From another status: transition now.
        let other = pod_with_condition(Some(cond("Unknown", "Unschedulable", msg)));
        let p = pod_scheduled_false_patch(&other, "Unschedulable", msg, now)
            .expect("a status change is written");
        assert_eq!(
            p["status"]["conditions"][0]["lastTransitionTime"],
            "2026-11-24T10:00:00Z"
        );

        // A probe time set by someone else makes the condition differ, and is removed.
        let mut probed = cond("False", "Unschedulable", msg);
        probed.last_probe_time = Some(Time(then));
        let p =
            pod_scheduled_false_patch(&pod_with_condition(Some(probed)), "Unschedulable", msg, now)
                .expect("a probed condition is rewritten");
        assert_eq!(
            p["status"]["conditions"][0]["lastProbeTime"],
            serde_json::Value::Null
        );
        assert!(p["status"]["conditions"][0].get("lastProbeTime").is_some());
    }
}
