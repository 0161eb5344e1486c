//! The kube edge of cluster mode: watches feed the [`Cache`] and the [`PriorityQueue`]; while
//! this replica leads, one task pops pods, runs the scheduling cycle and assumes each placement;
//! bindings are written asynchronously with bounded concurrency, each behind the election's
//! fence; `Scheduled` / `FailedScheduling` events and the `PodScheduled` condition are written as
//! kube-scheduler writes them.
//!
//! Follows `pkg/scheduler/scheduler.go`, `schedule_one.go` and `eventhandlers.go` (v1.22):
//!
//! - watches: nodes; pods assigned to a node and not `Succeeded`/`Failed` (whoever scheduled
//!   them); pending pods with one of our profiles' `schedulerName`s and no node (each
//!   scheduled with its profile, [`RunConfig::other_profiles`]); Services, ReplicationControllers,
//!   ReplicaSets and StatefulSets; PersistentVolumes, PersistentVolumeClaims, StorageClasses
//!   and CSINodes. Every replica keeps them warm; only the leader schedules.
//! - VolumeBinding: Reserve assumes the pod's PV/PVC bindings with the pod; before the Binding,
//!   PreBind writes them and waits for the PV controller ([`volume_binding`]), each write behind
//!   the fence; a PreBind failure undoes both assumptions, requeues the pod and reports
//!   FailedScheduling, as v1.22 does.
//! - a pod we bound counts against its node at once (assume); a failed binding forgets it,
//!   reports `FailedScheduling` `"binding rejected: <error>"` with `PodScheduled=False, reason
//!   SchedulerError`, and requeues it with backoff; a `409 ... already assigned` binding is
//!   dropped (someone else bound it) without retry — unless the pod is assigned to the node we
//!   chose, which is the Binding we wanted (a retry whose first attempt was applied but its
//!   answer lost) and counts as bound; a queued pod that is deleted or bound elsewhere leaves
//!   the queue.
//! - a new term first passes a read barrier: a consistent LIST of the assigned pods (at or past
//!   the resourceVersion of its own Lease acquisition, [`watch::list_assigned_for_barrier`]) is
//!   applied to the cache page by page ([`handlers::ReadBarrier`]) before its first scheduling
//!   cycle, so pods the previous leader bound just before the takeover are not bound again from
//!   a lagging watch; a failed or older LIST is retried after a second; the wait is
//!   `scheduler_leader_read_barrier_duration_seconds`. (kube-scheduler v1.22 schedules from
//!   whatever its informers hold.)
//! - unschedulable pods get a `FailedScheduling` event with the FitError text and
//!   `PodScheduled=False, reason Unschedulable`; they return to the queue on node add/update, on
//!   assigned pod deletion, or after at most 5 minutes.
//! - preemption ([`crate::preemption`], v1.22 `DefaultPreemption`): a pod that fits nowhere may
//!   evict lower-priority pods from one node; the victims are deleted through the API behind
//!   the fence (a `Preempted` event each, naming the preemptor), the pod's
//!   `status.nominatedNodeName` is set with its `FailedScheduling` report, and it binds once the
//!   deletions make room; PodDisruptionBudgets (`policy/v1`, watched read-only) steer the choice.
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
//! - a policy reloaded from `--policy-config-file`, or a configuration from `--config`
//!   ([`reload`]), is swapped in between two scheduling cycles, and unschedulable pods are
//!   retried under it;
//! - leadership lost: [`run`] returns [`RunOutcome::LeadershipLost`] at once (the binary exits 1,
//!   as kube-scheduler does); shutdown: scheduling stops, in-flight bindings get a grace period,
//!   then [`RunOutcome::Shutdown`].

pub mod events;
pub mod metrics;
pub mod ratelimit;
pub mod reload;
pub mod replica;
pub mod volume_binding;

mod binder;
mod handlers;
mod mirror;
mod report;
mod watch;

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use election::{LeaderWatch, LeadershipGuard};
use futures::FutureExt;
use kube::Client;
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinSet;
use tracing::{debug, error, info, warn};

pub use binder::{ANNOTATION_LEASE_TRANSITIONS, ANNOTATION_LEASE_UID, ANNOTATION_SCHEDULED_BY};
pub use metrics::SchedulerMetrics;
pub use ratelimit::{ApiClients, RateLimitLayer, RateLimiter};
pub use report::REASON_SCHEDULER_ERROR;

use self::binder::{ApiBinder, Attempt, BindOutcome, BindResult, Binder, ExtenderBinder};
use self::handlers::EventHandlers;
use self::report::{REASON_UNSCHEDULABLE, Reporter, record_scheduled};
use self::watch::{Msg, WatchMsg};
use crate::cache::{Cache, DEFAULT_ASSUMED_POD_TTL};
use crate::model::PodInfo;
use crate::profile::{PROFILE_NAME, Profile, SchedulerProfile};
use crate::queue::{ClusterEvent, PriorityQueue, QueueConfig, QueuedPodInfo};
use crate::schedule_one::{Algorithm, ScheduleError, TieBreak};

/// How long a follower lets watch events gather before it reads them from its watches
/// ([`watch::spawn_watches`]) and again before it applies them (see [`run`]'s loop): the
/// cache of a replica that does not schedule may lag the API server by about twice this.
pub(super) const FOLLOWER_BATCH: Duration = Duration::from_millis(10);

/// The scheduling cycle's workers in cluster mode: `parallelism`, at most the `cores` the
/// process may use less one, and at least one. The remaining core is left to the API traffic
/// (the watches' decoding and the bindings' and events' HTTP requests, on the tokio runtime's
/// worker threads between cycles, and the kernel's network work); measured when the runtime
/// had a worker per core: on 2 cores a second cycle worker only traded places with them, and
/// waking it for each cycle and letting it spin idle after cost more than it saved
/// (e2e_throughput 5000 nodes / 10000 pods / 3 replicas: the leader's CPU per bound pod
/// 0.58-0.91x with one worker). Placements do not depend on the number of workers.
fn cycle_workers(parallelism: usize, cores: usize) -> usize {
    parallelism.clamp(1, cores.saturating_sub(1).max(1))
}

/// Settings of [`run`].
#[derive(Clone)]
pub struct RunConfig {
    /// Pods with this `spec.schedulerName` are scheduled with [`RunConfig::profile`].
    pub scheduler_name: String,
    /// This replica's identity (the election identity), written on Bindings and events.
    pub identity: String,
    /// The (first) profile, built from the Policy ([`Profile::load`]) or a configuration's
    /// first profile; a hot reload replaces it.
    pub profile: Profile,
    /// A `KubeSchedulerConfiguration`'s further profiles: pods whose `spec.schedulerName`
    /// names one are scheduled with it (kube-scheduler's `profile.Map`); their events report
    /// as that name. Empty with a Policy.
    pub other_profiles: Vec<SchedulerProfile>,
    /// `percentageOfNodesToScore` (0 = adaptive), for profiles without their own.
    pub percentage_of_nodes_to_score: i32,
    /// The first profile's own `percentageOfNodesToScore` (a `v1` configuration profile's),
    /// overriding [`RunConfig::percentage_of_nodes_to_score`] for it. `None` with a Policy.
    pub profile_percentage_of_nodes_to_score: Option<i32>,
    /// `parallelism`: workers that filter and score (1 = the scheduling thread alone).
    pub parallelism: usize,
    /// The queue's backoff (`podInitialBackoffSeconds`, `podMaxBackoffSeconds`).
    pub queue: QueueConfig,
    /// Bindings in flight at most.
    pub bind_concurrency: usize,
    /// How long in-flight bindings may take to finish at shutdown.
    pub shutdown_grace: Duration,
    /// Seed of the tie-break RNG.
    pub seed: u64,
    /// How `selectHost` breaks ties among the best-scored nodes (`--tie-break`): at random
    /// with the seeded RNG, as kube-scheduler does ([`TieBreak::Random`]), or deterministically
    /// ([`TieBreak::NodeName`], [`TieBreak::NodeOrder`]) — the GPU scorers tie many nodes, and
    /// a fixed order leaves about half as many GPUs stranded (README, GPU placement).
    pub tie_break: TieBreak,
    /// Validated policies or configurations from the hot reload ([`reload::watch_policy_file`],
    /// [`reload::watch_config_file`]); each is swapped in between two scheduling cycles.
    /// `None`: the policy never changes.
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

/// What the binding cycle of one assumed pod needs.
struct BindJob {
    pod: Arc<PodInfo>,
    node: String,
    /// GPU devices chosen (for the binding annotation).
    gpu: Option<Vec<u32>>,
    /// VolumeBinding's PreBind work, if the pod has volumes to bind.
    volumes: Option<volume_binding::VolumeBindJob>,
    /// Who binds it: the API (DefaultBinder) or the extender that manages it.
    binder: Arc<dyn Binder>,
    attempt: Attempt,
}

fn now() -> std::time::Instant {
    tokio::time::Instant::now().into_std()
}

/// The state owned by the scheduling task.
/// A new term's read barrier in progress ([`Scheduler::start_read_barrier`]).
struct Barrier {
    /// When the term started waiting for it.
    started: std::time::Instant,
    /// The resourceVersion of the Lease acquisition the LIST must reach (`None`: unknown, any
    /// LIST will do).
    target: Option<u64>,
    /// Its LIST has been started (once the caches synced).
    listing: bool,
    /// The pages of the current LIST applied so far.
    applying: Option<handlers::ReadBarrier>,
}

struct Scheduler {
    cfg: RunConfig,
    algo: Algorithm,
    /// The cache, the queue and the pods between them, fed by the watches.
    h: EventHandlers,
    /// The watches (the node and assigned-pod ones restarted when a policy reload starts
    /// keeping API objects).
    watches: watch::Watches,
    metrics: SchedulerMetrics,
    /// FailedScheduling events and `PodScheduled` conditions (shared with every binding task:
    /// one reference count per pod instead of a copy of its clients and names).
    report: Arc<Reporter>,
    /// This replica leads (set by the loop); only then are failures reported.
    leading: bool,
    binds: JoinSet<()>,
    bind_slots: Arc<Semaphore>,
    tx: mpsc::Sender<Msg>,
    status: Status,
    /// DefaultBinder: the `pods/binding` write.
    api_binder: Arc<ApiBinder>,
    /// The rate-limited client for GETs (PreBind's polling); watches have their own clones.
    read_client: Client,
    /// UID of each pod we assumed, by key, while its binding is in flight.
    assumed_uid: HashMap<String, String>,
    /// While a new term waits for its read barrier.
    barrier: Option<Barrier>,
    /// The `DefaultPreemption` PostFilter (its offset RNG seeded with the run's seed).
    preemption: crate::preemption::DefaultPreemption,
    /// The values [`Scheduler::publish_queue_metrics`] last published.
    published: Option<[usize; 7]>,
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
    let scheduler_names: Vec<String> = std::iter::once(cfg.scheduler_name.clone())
        .chain(cfg.other_profiles.iter().map(|p| p.scheduler_name.clone()))
        .collect();
    let queue = PriorityQueue::new(cfg.queue);
    // The handlers first: while they keep objects (`KeepsObjects`), the watches decode nodes
    // and assigned pods whole from their first LIST on.
    let h = EventHandlers::new(Cache::new(Some(DEFAULT_ASSUMED_POD_TTL)), queue)
        .with_kept_objects(keeps_objects(&cfg))
        .with_typical_pods_counted(counts_typical_pods(&cfg))
        .with_scheduler_names(if scheduler_names.len() > 1 {
            scheduler_names.clone()
        } else {
            Vec::new()
        });
    // Every replica starts following: its watches read in batches until it leads.
    let following = Arc::new(AtomicBool::new(true));
    let watches = watch::spawn_watches(&reads, &scheduler_names, &tx, &following);
    let recorder = events::EventRecorder::new(
        event_client,
        cfg.scheduler_name.clone(),
        cfg.identity.clone(),
    );
    let seed = cfg.seed;
    let mut algo = Algorithm::new(cfg.percentage_of_nodes_to_score, cfg.seed);
    algo.set_tie_break(cfg.tie_break);
    algo.set_parallelism(cycle_workers(
        cfg.parallelism,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
    ));
    algo.set_extenders(cfg.profile.extenders.clone());
    let mut s = Scheduler {
        algo,
        bind_slots: Arc::new(Semaphore::new(cfg.bind_concurrency.max(1))),
        api_binder: Arc::new(ApiBinder {
            client: client.clone(),
            limiter: limiter.clone(),
            identity: cfg.identity.clone(),
        }),
        cfg,
        h,
        watches,
        metrics,
        report: Arc::new(Reporter {
            client,
            limiter,
            recorder,
            event_limiter,
            leader: leader.clone(),
        }),
        leading: false,
        binds: JoinSet::new(),
        tx,
        status,
        read_client: reads,
        assumed_uid: HashMap::new(),
        barrier: None,
        preemption: crate::preemption::DefaultPreemption::new(
            crate::preemption::PreemptionArgs::default(),
            seed,
        ),
        published: None,
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
    // A follower just took an event: let the next ones gather (FOLLOWER_BATCH).
    let mut gather = false;
    let outcome = loop {
        // Apply every event already received before deciding anything.
        while let Ok(m) = rx.try_recv() {
            s.handle(m);
        }
        // A reloaded policy takes effect here, between two scheduling cycles.
        if let Some(u) = policy_updates.as_mut().and_then(reload_pending) {
            s.apply_policy(&u);
        }
        // The current term's identity, read through a guard (which shares the term's strings
        // with the previous guards of the term: nothing copied per cycle).
        let leading = leader.leadership();
        let current = leading
            .as_ref()
            .map(|g| (g.term().lease_uid.as_deref(), g.term().lease_transitions));
        if was_leading
            && (current.is_none() || current != term.as_ref().map(|(uid, n)| (uid.as_deref(), *n)))
        {
            error!("leaderelection lost");
            break RunOutcome::LeadershipLost;
        }
        if current.is_some() && !was_leading {
            info!(identity = %s.cfg.identity, "Started leading; scheduling");
            was_leading = true;
            following.store(false, Ordering::Relaxed);
            term = current.map(|(uid, n)| (uid.map(str::to_owned), n));
            s.leading = true;
            s.report_malformed();
            let target = leader
                .current_term()
                .and_then(|t| t.lease_resource_version)
                .and_then(|rv| rv.parse().ok());
            s.start_read_barrier(target);
        }
        s.publish_queue_metrics();
        // Every replica records its cache sync (`/readyz`), leading or not: a follower is
        // ready to take over once its caches are warm (kube-scheduler's readyz check
        // `sched-handler-sync` passes before leader election starts).
        let synced = s.synced();
        s.list_barrier_once_synced(synced);
        // The guard read above serves the cycle: its `check` at the binding fences it as a
        // fresh one would.
        if synced
            && s.barrier.is_none()
            && let Some(guard) = leading
            && let Some(qp) = s.h.queue.pop()
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
        // A follower takes the watch events in batches: after one arrives, it lets the
        // next ones gather for FOLLOWER_BATCH before the next pass drains them all, instead of
        // waking this task for each event (on a follower, waking and parking per event was
        // most of its CPU beside the decoding). Only the leader acts on the cache and the
        // queue at once; a follower that takes over drains what gathered before its first
        // cycle, and shutdown is still honoured at once.
        if std::mem::take(&mut gather) {
            tokio::select! {
                _ = tokio::time::sleep(FOLLOWER_BATCH) => {}
                _ = &mut shutdown => break RunOutcome::Shutdown,
            }
            continue;
        }
        tokio::select! {
            m = rx.recv() => {
                if let Some(m) = m {
                    s.handle(m);
                    gather = !was_leading;
                }
            }
            _ = tick.tick() => {
                let t = now();
                s.h.queue.flush_backoff(t);
                if t.duration_since(last_unschedulable_flush) >= crate::queue::UNSCHEDULABLE_Q_FLUSH_PERIOD {
                    s.h.queue.flush_unschedulable(t);
                    last_unschedulable_flush = t;
                }
                for key in s.h.cache.cleanup_expired(t) {
                    warn!(pod = %key, "Assumed pod expired without being seen bound");
                }
                // Event series: final counts every 6 min, open series rewritten every 30.
                if t.duration_since(last_series_finish) >= events::FINISH_PERIOD {
                    let refresh = t.duration_since(last_series_refresh) >= events::REFRESH_PERIOD;
                    if refresh {
                        last_series_refresh = t;
                    }
                    last_series_finish = t;
                    s.report.housekeeping(refresh);
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
    s.watches.abort_all();
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
                    m = rx.recv() => if let Some(m @ Msg::Bound(_)) = m { s.handle(m) },
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

/// Whether the cache keeps the API objects of nodes and bound pods: only when a profile has an
/// extender that is not `nodeCacheCapable` (v1.22 sends it `v1.Node`s, and victim `v1.Pod`s
/// to preempt). Decided at start and on each policy reload; a reload that adds such an
/// extender restarts the node and assigned-pod watches, whose relists bring every object
/// whole, and holds scheduling cycles until they end ([`Scheduler::apply_policy`]).
fn keeps_objects(cfg: &RunConfig) -> bool {
    std::iter::once(&cfg.profile)
        .chain(cfg.other_profiles.iter().map(|p| &p.profile))
        .flat_map(|p| p.extenders.iter())
        .any(|e| !e.node_cache_capable())
}

/// Whether some profile runs a score plugin that reads the workload's typical pods
/// ([`crate::model::Snapshot::typical_pods`]: the GPU fragmentation scorers): only then are
/// the pods counted by shape on every pod event ([`handlers::EventHandlers`]' `typical`).
/// Decided at start and on each policy reload (a reload that adds such a scorer rebuilds the
/// count from the pods held).
fn counts_typical_pods(cfg: &RunConfig) -> bool {
    use crate::framework::plugins::{gpu_fgd, gpu_fgd_cpu};
    const READERS: [&str; 5] = [
        gpu_fgd::NAME,
        gpu_fgd::NAME_STRANDING,
        gpu_fgd::NAME_FINE,
        gpu_fgd_cpu::NAME,
        gpu_fgd_cpu::NAME_INSTANCES,
    ];
    std::iter::once(&cfg.profile)
        .chain(cfg.other_profiles.iter().map(|p| &p.profile))
        .any(|p| READERS.iter().any(|r| p.policy.has_plugin(r)))
}

/// The profile that schedules `pod` (by its `spec.schedulerName`; the first profile for any
/// other name, which the watches do not deliver) and its `percentageOfNodesToScore`.
fn profile_of<'a>(cfg: &'a RunConfig, pod: &PodInfo) -> (&'a Profile, i32) {
    match cfg
        .other_profiles
        .iter()
        .find(|p| p.scheduler_name == pod.scheduler_name)
    {
        Some(p) if pod.scheduler_name != cfg.scheduler_name => (
            &p.profile,
            p.percentage_of_nodes_to_score
                .unwrap_or(cfg.percentage_of_nodes_to_score),
        ),
        _ => (
            &cfg.profile,
            cfg.profile_percentage_of_nodes_to_score
                .unwrap_or(cfg.percentage_of_nodes_to_score),
        ),
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
    /// are retried (they may fit now). A policy that starts keeping API objects
    /// ([`keeps_objects`]) relists nodes and assigned pods first: no cycle runs until the
    /// relists end, so none sends an extender a node or a victim without its object.
    ///
    /// A reloaded configuration replaces each profile of a served `schedulerName` it has (a
    /// served name it lacks keeps its profile), `percentageOfNodesToScore` and the queue's
    /// backoffs; its restart-only fields were left out by the reloader.
    fn apply_policy(&mut self, u: &reload::PolicyUpdate) {
        match &u.change {
            reload::Change::Policy(profile) => self.cfg.profile = (**profile).clone(),
            reload::Change::Config(c) => {
                for p in &c.profiles {
                    if p.scheduler_name == self.cfg.scheduler_name {
                        self.cfg.profile = p.profile.clone();
                        self.cfg.profile_percentage_of_nodes_to_score =
                            p.percentage_of_nodes_to_score;
                    } else if let Some(o) = self
                        .cfg
                        .other_profiles
                        .iter_mut()
                        .find(|o| o.scheduler_name == p.scheduler_name)
                    {
                        *o = p.clone();
                    }
                }
                self.cfg.percentage_of_nodes_to_score = c.percentage_of_nodes_to_score;
                self.cfg.queue.pod_initial_backoff = c.pod_initial_backoff;
                self.cfg.queue.pod_max_backoff = c.pod_max_backoff;
                self.h
                    .queue
                    .set_backoff(c.pod_initial_backoff, c.pod_max_backoff);
            }
        }
        self.algo.set_extenders(self.cfg.profile.extenders.clone());
        if self.h.set_kept_objects(keeps_objects(&self.cfg)) {
            // The cached nodes and assigned pods were decoded without their objects, which the
            // new extender is sent: relist both (kube-scheduler would, restarted with this
            // policy) and hold cycles until the relists end, as before the first sync.
            for kind in [watch::Kind::Nodes, watch::Kind::AssignedPods] {
                let epoch = self.watches.restart(kind);
                self.h.expect_relist(kind, epoch);
            }
            info!(
                "An extender that is not nodeCacheCapable: relisting nodes and assigned pods to keep their objects; scheduling waits for the relists"
            );
        }
        self.h
            .set_typical_pods_counted(counts_typical_pods(&self.cfg));
        let moved =
            self.h
                .queue
                .move_all_to_active_or_backoff(ClusterEvent::PolicyChange, now(), None);
        info!(
            file = %u.source.display(),
            generation = u.generation,
            unschedulable_pods_retried = moved,
            "Reloaded policy in force"
        );
    }

    /// Every watch has listed once; recorded for `/readyz` on every replica.
    fn synced(&self) -> bool {
        let all = self.h.synced();
        if all {
            self.status.caches_synced.store(true, Ordering::Relaxed);
        }
        all
    }

    /// A message: a watch event for the handlers (then the malformed pods they found, reported
    /// if this replica leads), the end of a binding cycle, or the read barrier's LIST.
    fn handle(&mut self, m: Msg) {
        match m {
            Msg::Watch(w) => {
                self.h.handle(*w, now());
                self.report_malformed();
            }
            Msg::PendingPod(ev) => {
                self.h.handle(WatchMsg::PendingPod(ev), now());
                self.report_malformed();
            }
            Msg::AssignedPod(ev) => {
                self.h.handle(WatchMsg::AssignedPod(ev), now());
                self.report_malformed();
            }
            Msg::Bound(b) => {
                let BindOutcome {
                    pod,
                    node,
                    result,
                    attempt,
                } = *b;
                self.bound(pod, node, result, attempt);
            }
            Msg::Barrier(r) => self.read_barrier_listed(r),
            Msg::PreemptionFailed { pod, node } => self.preemption_failed(&pod, &node),
        }
    }

    /// The read barrier of a new term: before its first scheduling cycle, a consistent LIST of
    /// the assigned pods at or past `target` (the resourceVersion of the term's Lease
    /// acquisition), applied to the cache. Pods the previous leader bound just before the
    /// takeover, whose events the watches have not delivered yet, then count on their nodes and
    /// leave the queue instead of being bound a second time (a 409 "already assigned", or worse
    /// a placement computed on a node missing them). The LIST starts once the caches have
    /// synced ([`Scheduler::list_barrier_once_synced`]).
    fn start_read_barrier(&mut self, target: Option<u64>) {
        self.barrier = Some(Barrier {
            started: now(),
            target,
            listing: false,
            applying: None,
        });
    }

    /// Start the barrier's LIST once every watch has listed: scheduling waits for both anyway,
    /// and a LIST of every assigned pod read while the assigned watch is still listing them
    /// too would apply each pod twice (on a cold start, 150,000 of them).
    fn list_barrier_once_synced(&mut self, synced: bool) {
        if let Some(b) = &mut self.barrier
            && synced
            && !b.listing
        {
            b.listing = true;
            watch::list_assigned_for_barrier(&self.read_client, &self.tx, Duration::ZERO, b.target);
        }
    }

    /// A page of the barrier's LIST arrived: apply it (unless the watch is already past the
    /// LIST), and after the last one let scheduling start; a failed LIST, or one older than the
    /// Lease acquisition, is retried whole after a second.
    fn read_barrier_listed(&mut self, r: Result<watch::BarrierPage, watch::BarrierError>) {
        let Some(b) = self.barrier.as_mut() else {
            return;
        };
        let page = match r {
            Ok(page) => page,
            Err(e) => {
                match e {
                    watch::BarrierError::Older(rv) => {
                        warn!(list = rv, target = ?b.target, "Read barrier LIST older than the Lease acquisition; retrying")
                    }
                    watch::BarrierError::Failed(e) => {
                        warn!(error = %e, "Read barrier LIST failed; retrying")
                    }
                }
                b.applying = None;
                return watch::list_assigned_for_barrier(
                    &self.read_client,
                    &self.tx,
                    Duration::from_secs(1),
                    b.target,
                );
            }
        };
        let t = now();
        let list_rv = page.rv;
        let rb = b
            .applying
            .get_or_insert_with(|| handlers::ReadBarrier::new(list_rv));
        rb.page(&mut self.h, page.items, t);
        if !page.last {
            return;
        }
        let started = b.started;
        let Some(rb) = b.applying.take() else {
            return;
        };
        match rb.finish(&mut self.h, t) {
            Some(fresh) => info!(
                list = list_rv,
                newly_assigned = fresh,
                "Read barrier: caches caught up with the Lease acquisition"
            ),
            None => debug!(
                list = list_rv,
                "Read barrier: the assigned watch was already past the LIST"
            ),
        }
        self.metrics
            .read_barrier_duration
            .observe(t.duration_since(started).as_secs_f64());
        self.barrier = None;
    }

    /// The queue's and the cache's gauges and the incoming-pods counters, set only when one of
    /// their values changed since the last call (this runs on every loop pass, and most
    /// passes, a follower's above all, change none of them).
    fn publish_queue_metrics(&mut self) {
        let p = self.h.queue.pending_pods();
        let cache = &self.h.cache;
        let incoming: u64 = self.h.queue.incoming_pods().values().sum();
        let now = [
            p.active,
            p.backoff,
            p.unschedulable,
            usize::try_from(incoming).unwrap_or(usize::MAX),
            cache.snapshot().len(),
            cache.pod_count(),
            cache.assumed_pod_count(),
        ];
        if self.published == Some(now) {
            return;
        }
        self.published = Some(now);
        let g = &self.metrics.pending_pods;
        g.with_label_values(&["active"]).set(p.active as i64);
        g.with_label_values(&["backoff"]).set(p.backoff as i64);
        g.with_label_values(&["unschedulable"])
            .set(p.unschedulable as i64);
        self.metrics.publish_incoming(self.h.queue.incoming_pods());
        self.metrics.publish_cache_size(
            cache.snapshot().len(),
            cache.pod_count(),
            cache.assumed_pod_count(),
        );
    }

    fn report_malformed(&mut self) {
        if !self.leading {
            return;
        }
        for (pod, message) in self.h.unreported_malformed() {
            self.metrics
                .schedule_attempts
                .with_label_values(&["error", PROFILE_NAME])
                .inc();
            self.report.failure(pod, message, REASON_UNSCHEDULABLE);
        }
    }

    fn schedule_one(&mut self, qp: QueuedPodInfo, guard: LeadershipGuard) {
        // v1.22 scheduleOne: podSchedulingCycle := SchedulingQueue.SchedulingCycle(), right
        // after Pop; a failure in the binding cycle is judged against this cycle.
        let attempt = Attempt {
            cycle: self.h.queue.scheduling_cycle(),
            attempts: qp.attempts,
            initial_attempt_timestamp: qp.initial_attempt_timestamp,
        };
        let pod = qp.pod.clone();
        let key = pod.key();
        if !self.h.pending.contains_key(&key) || self.h.cache.is_assumed(&key) {
            return;
        }
        let start = std::time::Instant::now();
        let typical = self.h.typical.typical_pods();
        self.h.cache.set_typical_pods(typical);
        let (profile, percentage) = profile_of(&self.cfg, &pod);
        self.algo.percentage_of_nodes_to_score = percentage;
        self.algo.set_extenders(profile.extenders.clone());
        let nominated = &self.h.nominator;
        let result = if !crate::extender::cycle_calls_extenders(&profile.extenders, &pod) {
            self.algo.schedule_with_nominated(
                &profile.framework,
                self.h.cache.snapshot(),
                &pod,
                false,
                nominated,
            )
        } else {
            // Extender calls block (kube-scheduler calls them synchronously in the cycle too):
            // tell the runtime, so the other tasks (watches, bindings, the elector) move on.
            let (algo, fwk, snapshot) =
                (&mut self.algo, &profile.framework, self.h.cache.snapshot());
            blocking(|| algo.schedule_with_nominated(fwk, snapshot, &pod, false, nominated))
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
                    .with_label_values(&[point, code.as_str(), PROFILE_NAME])
                    .observe(d.as_secs_f64());
            }
        }
        match result {
            Ok(r) => {
                // assume, then Reserve (VolumeBinding's PV/PVC bindings); a failure of either
                // leaves nothing assumed. v1.22 scheduleOne: recordSchedulingFailure(..., err,
                // SchedulerError, "") after either.
                let assumed = match self.h.cache.assume(pod.clone(), &r) {
                    Ok(a) => a,
                    Err(e) => {
                        warn!(pod = %key, error = %e, "Assume or Reserve failed");
                        self.scheduler_error(qp, e.to_string());
                        return;
                    }
                };
                let volume_job = assumed.volumes.map(|a| {
                    let snapshot = self.h.cache.snapshot();
                    volume_binding::VolumeBindJob {
                        pod: pod.clone(),
                        assumed: a,
                        node_labels: snapshot
                            .node(&r.node)
                            .map(|n| n.labels.clone())
                            .unwrap_or_default(),
                        csi_node: snapshot.volumes().csi_node(&r.node).cloned(),
                        gates: crate::volume::csi::MigrationGates::default(),
                    }
                });
                let gpu = assumed.gpu_indexes;
                // assume: DeleteNominatedPodIfExists.
                self.h.nominator.delete_nominated_pod_if_exists(&pod.uid);
                self.h.pending.remove(&key);
                self.h.queue.delete(&pod);
                self.assumed_uid.insert(key, pod.uid.clone());
                let elapsed = start.elapsed().as_secs_f64();
                self.metrics
                    .observe_attempt("scheduled", PROFILE_NAME, elapsed);
                // extendersBinding: the extender that manages the pod binds it; else
                // DefaultBinder.
                let binder: Arc<dyn Binder> = match crate::extender::binder_for(
                    &profile_of(&self.cfg, &pod).0.extenders,
                    &pod,
                ) {
                    Some(ext) => Arc::new(ExtenderBinder(ext.clone())),
                    None => self.api_binder.clone(),
                };
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
                    .observe_attempt(result, PROFILE_NAME, start.elapsed().as_secs_f64());
                let message = e.to_string();
                debug!(pod = %key, reason = %message, "Unable to schedule pod; waiting");
                // PostFilter: DefaultPreemption, when the profile runs it (v1.22 runs it on a
                // FitError only).
                let preempting = match &e {
                    ScheduleError::Fit(fe) => {
                        crate::preemption::PreemptionArgs::of_profile(&self.cfg.profile.policy.args)
                            .and_then(|args| self.post_filter(&pod, fe, args))
                    }
                    _ => None,
                };
                self.requeue(qp);
                match preempting {
                    None => {
                        self.report
                            .failure(report::object_of(&pod), message, REASON_UNSCHEDULABLE)
                    }
                    Some(p) => {
                        let withdraw = Msg::PreemptionFailed {
                            pod: pod.clone(),
                            node: p.node.clone(),
                        };
                        self.report.preempt_then_report(
                            report::object_of(&pod),
                            message,
                            p,
                            self.metrics.preemption_victims.clone(),
                            self.tx.clone(),
                            withdraw,
                        );
                    }
                }
            }
        }
    }

    /// `DefaultPreemption.PostFilter` for a pod that fits nowhere. When it nominates a node,
    /// the pod is nominated to it in memory at once (v1.22 `recordSchedulingFailure`'s
    /// `AddNominatedPod`, so that the next cycles keep other pods off its room), and the
    /// returned [`report::Preempting`] is what `PrepareCandidate` writes before the report
    /// ([`report::Reporter::preempt_then_report`]: victims deleted, lower-priority nominations
    /// cleared, then `status.nominatedNodeName` with the `FailedScheduling` report). v1.22
    /// deletes synchronously and nominates only when every deletion succeeded; here they run in
    /// the background, and a failed one withdraws the nomination ([`Msg::PreemptionFailed`]).
    /// The preemptor is requeued as unschedulable; the victims' deletions move it back
    /// (`AssignedPodDelete`), and it takes the node when there is room.
    fn post_filter(
        &mut self,
        pod: &Arc<PodInfo>,
        fe: &crate::schedule_one::FitError,
        args: crate::preemption::PreemptionArgs,
    ) -> Option<report::Preempting> {
        self.metrics.preemption_attempts.inc();
        self.preemption.args = args;
        // `preempt` re-reads the preemptor from the informer: the newest pending version.
        let pod = self
            .h
            .pending
            .get(&pod.key())
            .cloned()
            .unwrap_or_else(|| pod.clone());
        let pdbs: Vec<crate::preemption::Pdb> = self.h.pdbs.values().cloned().collect();
        let profile = profile_of(&self.cfg, &pod).0;
        let (framework, extenders) = (profile.framework.clone(), profile.extenders.clone());
        // Extenders with a preemptVerb are called synchronously, as in the scheduling cycle.
        let (preemption, h) = (&mut self.preemption, &self.h);
        let mut run = || {
            preemption.post_filter(
                &framework,
                h.cache.snapshot(),
                &pod,
                &fe.node_to_status(h.cache.snapshot()),
                &pdbs,
                &h.nominator,
                &extenders,
            )
        };
        let pf = if extenders.iter().any(|e| e.supports_preemption()) {
            blocking(run)
        } else {
            run()
        };
        if pf.clear_own_nomination {
            self.report
                .clear_nominated_node_names(vec![report::object_of(&pod)]);
        }
        let Some(node) = pf.nominated_node else {
            debug!(pod = %pod.key(), status = %pf.status.message(), "Preemption did not help");
            return None;
        };
        info!(
            pod = %pod.key(),
            node = %node,
            victims = pf.victims.len(),
            pdb_violations = pf.num_pdb_violations,
            "Preempting"
        );
        // recordSchedulingFailure: AddNominatedPod(pod, nominatedNode) before the patch lands.
        self.h.nominator.add_nominated_pod(pod, &node);
        Some(report::Preempting {
            node,
            victims: pf.victims.iter().map(|v| report::object_of(v)).collect(),
            lower_priority_nominated: pf
                .lower_priority_nominated
                .iter()
                .map(|p| report::object_of(p))
                .collect(),
        })
    }

    /// Preemption's deletions failed after [`Scheduler::post_filter`] nominated `pod` to `node`:
    /// v1.22's PostFilter would have failed and recorded no nomination (`AddNominatedPod(pod,
    /// "")`: the pod keeps only the `status.nominatedNodeName` it carries). Withdrawn only if
    /// the in-memory nomination is still that one.
    fn preemption_failed(&mut self, pod: &Arc<PodInfo>, node: &str) {
        if self.h.nominator.nominated_node(&pod.uid) != Some(node) {
            return;
        }
        match self.h.pending.get(&pod.key()).cloned() {
            Some(current) => self.h.nominator.add_nominated_pod(current, ""),
            None => self.h.nominator.delete_nominated_pod_if_exists(&pod.uid),
        }
    }

    /// An attempt that failed after the algorithm chose a node (assume, Reserve): counted as
    /// `result="error"`, requeued, and reported as FailedScheduling with `PodScheduled=False,
    /// reason SchedulerError` (v1.22 `PodScheduleError` + `recordSchedulingFailure`).
    fn scheduler_error(&mut self, qp: QueuedPodInfo, message: String) {
        self.metrics
            .schedule_attempts
            .with_label_values(&["error", PROFILE_NAME])
            .inc();
        let pod = report::object_of(&qp.pod);
        self.requeue(qp);
        self.report.failure(pod, message, REASON_SCHEDULER_ERROR);
    }

    fn requeue(&mut self, qp: QueuedPodInfo) {
        let cycle = self.h.queue.scheduling_cycle();
        if let Err(e) = self
            .h
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
        let client = self.report.client.clone();
        let read_client = self.read_client.clone();
        let tx = self.tx.clone();
        let slots = self.bind_slots.clone();
        let report = self.report.clone();
        let bind_hist = self.metrics.extension_point_duration.clone();
        // The task's future is moved into the task cell on spawn and its stage copied out when
        // reaped: the rare PreBind (VolumeBinding's writes and wait) and the Event write are
        // boxed, so the future held per in-flight pod stays small.
        self.binds.spawn(async move {
            let _permit = slots.acquire_owned().await;
            // PreBind: VolumeBinding's writes, then the wait for the PV controller.
            if let Some(job) = volumes {
                let failed = Box::pin(pre_bind(
                    &client,
                    &read_client,
                    &guard,
                    &report.limiter,
                    &job,
                    &bind_hist,
                ))
                .await;
                if let Some(result) = failed {
                    let outcome = BindOutcome {
                        pod,
                        node,
                        result,
                        attempt,
                    };
                    let _ = tx.send(Msg::Bound(Box::new(outcome))).await;
                    return;
                }
            }
            let started = std::time::Instant::now();
            let result = binder.bind(&pod, &node, gpu.as_deref(), &guard).await;
            let status = if matches!(result, BindResult::Bound) {
                "Success"
            } else {
                "Error"
            };
            bind_hist
                .with_label_values(&["Bind", status, PROFILE_NAME])
                .observe(started.elapsed().as_secs_f64());
            if matches!(result, BindResult::Bound) {
                Box::pin(record_scheduled(
                    &report.recorder,
                    &report.event_limiter,
                    &guard,
                    &pod,
                    &node,
                ))
                .await;
            }
            let outcome = BindOutcome {
                pod,
                node,
                result,
                attempt,
            };
            let _ = tx.send(Msg::Bound(Box::new(outcome))).await;
        });
        // Reap finished bindings so the set does not grow.
        while self.binds.try_join_next().is_some() {}
    }

    fn bound(&mut self, pod: Arc<PodInfo>, node: String, result: BindResult, attempt: Attempt) {
        let key = pod.key();
        self.assumed_uid.remove(&key);
        match result {
            BindResult::Bound => {
                debug!(pod = %key, node = %node, "Successfully bound pod to node");
                self.metrics.observe_pod_scheduled(
                    attempt.attempts,
                    now().saturating_duration_since(attempt.initial_attempt_timestamp),
                );
                self.h.cache.finish_binding(&key, now());
                self.h.latest_pending.remove(&key);
            }
            BindResult::AlreadyAssigned(msg) => {
                // Someone else bound it: not an error to retry. The watch brings the truth.
                debug!(pod = %key, reason = %msg, "Pod already assigned; dropping");
                let _ = self.h.cache.forget_pod(&pod);
                // A new incarnation seen meanwhile is a different pod: queue it.
                if let Some(latest) = self.h.latest_pending.remove(&key)
                    && latest.uid != pod.uid
                {
                    let cycle = self.h.queue.scheduling_cycle();
                    self.h.requeue_pending(latest, cycle, now());
                }
            }
            BindResult::NotLeading(msg) => {
                warn!(pod = %key, reason = %msg, "Binding not written: leadership fence");
                self.h.requeue_after_failed_bind(&key, pod, attempt, now());
            }
            BindResult::Failed(msg) => {
                warn!(pod = %key, node = %node, error = %msg, "Binding failed; requeueing");
                // v1.22 scheduleOne: recordSchedulingFailure(..., fmt.Errorf("binding rejected:
                // %w", err), SchedulerError, "") after a failed bind, extender or API.
                self.report.failure(
                    report::object_of(&pod),
                    format!("binding rejected: {msg}"),
                    REASON_SCHEDULER_ERROR,
                );
                self.h.requeue_after_failed_bind(&key, pod, attempt, now());
            }
            BindResult::PreBindFailed(msg) => {
                warn!(pod = %key, node = %node, error = %msg, "PreBind failed; requeueing");
                // v1.22 scheduleOne: recordSchedulingFailure(..., preBindStatus.AsError(),
                // SchedulerError, "").
                self.report
                    .failure(report::object_of(&pod), msg, REASON_SCHEDULER_ERROR);
                self.h.requeue_after_failed_bind(&key, pod, attempt, now());
            }
        }
    }
}

/// PreBind: VolumeBinding's writes for `job`, then the wait for the PV controller, observed in
/// `bind_hist` (`scheduler_framework_extension_point_duration_seconds{extension_point="PreBind"}`,
/// seconds). `None` when it succeeded, else how the binding cycle ends.
async fn pre_bind(
    client: &Client,
    read_client: &Client,
    guard: &LeadershipGuard,
    limiter: &RateLimiter,
    job: &volume_binding::VolumeBindJob,
    bind_hist: &prometheus::HistogramVec,
) -> Option<BindResult> {
    let started = std::time::Instant::now();
    let r = volume_binding::bind_pod_volumes(
        client,
        read_client,
        guard,
        limiter,
        job,
        crate::framework::plugins::volume_binding::DEFAULT_BIND_TIMEOUT,
        volume_binding::POLL_INTERVAL,
    )
    .await;
    bind_hist
        .with_label_values(&[
            "PreBind",
            if r.is_ok() { "Success" } else { "Error" },
            PROFILE_NAME,
        ])
        .observe(started.elapsed().as_secs_f64());
    match r {
        Ok(()) => None,
        Err(volume_binding::PreBindError::NotLeading(m)) => Some(BindResult::NotLeading(m)),
        Err(volume_binding::PreBindError::Failed(m)) => Some(BindResult::PreBindFailed(format!(
            "running PreBind plugin {:?}: {m}",
            crate::framework::plugins::volume_binding::NAME
        ))),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The cycle's workers leave one core to the runtime, and never drop below one.
    #[test]
    fn cycle_workers_leave_a_core_to_the_runtime() {
        assert_eq!(cycle_workers(16, 2), 1);
        assert_eq!(cycle_workers(16, 1), 1);
        assert_eq!(cycle_workers(16, 8), 7);
        assert_eq!(cycle_workers(4, 8), 4);
        assert_eq!(cycle_workers(1, 8), 1);
        assert_eq!(cycle_workers(0, 8), 1);
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
}
