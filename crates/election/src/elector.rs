//! The election loop: acquire, renew with self-fencing, release (client-go
//! tools/leaderelection/leaderelection.go `Run`, `acquire`, `renew`, `tryAcquireOrRenew`,
//! `release`).
//!
//! Lifecycle, like client-go's `Run`: campaign until acquired, then renew until shutdown or loss.
//! Leadership is one-shot: once lost, [`LeaderElector::run`] returns
//! [`ElectionOutcome::LeadershipLost`] and never campaigns again; the caller stops leader-only work
//! and exits (kube-scheduler exits with code 1 and lets the kubelet restart it).

use std::fmt;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use tokio::sync::{Notify, watch};
use tokio::task::{JoinError, JoinHandle};
use tokio::time::Instant;
use tracing::{debug, error, info, warn};

use crate::clock::Clock;
use crate::config::{ConfigError, JITTER_FACTOR, LeaderElectionConfig};
use crate::decision::{self, AcquireDecision, Observer};
use crate::health::LeaderHealthCheck;
use crate::lock::{
    LeaseEvent, LeaseEventStream, Lock, LockError, LockErrorKind, LockOp, WATCH_TIMEOUT,
};
use crate::metrics::ElectionMetrics;
use crate::record::LeaderElectionRecord;
use crate::state::{LeaderState, LeaderTerm, LeaderWatch, LeadershipGuard};

/// Why leadership ended without a shutdown request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LossReason {
    /// No renewal succeeded within `renew_deadline` of the start of the last successful one.
    RenewDeadlineExceeded {
        /// The last renew error seen, if any (`None` if the attempt was still in flight).
        last_error: Option<String>,
    },
    /// A read showed another `holderIdentity` (possibly `""`).
    HolderChanged {
        /// The holder that was read.
        holder: String,
    },
    /// A read returned 404: the Lease was deleted.
    LeaseDeleted,
    /// A read-then-write renewal got 409 Conflict: someone wrote the Lease in between.
    Conflict {
        /// The error text.
        error: String,
    },
}

impl fmt::Display for LossReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LossReason::RenewDeadlineExceeded {
                last_error: Some(e),
            } => {
                write!(f, "renew deadline exceeded (last error: {e})")
            }
            LossReason::RenewDeadlineExceeded { last_error: None } => {
                f.write_str("renew deadline exceeded")
            }
            LossReason::HolderChanged { holder } => write!(f, "lease is now held by {holder:?}"),
            LossReason::LeaseDeleted => f.write_str("lease was deleted"),
            LossReason::Conflict { error } => write!(f, "conflicting write: {error}"),
        }
    }
}

/// How [`LeaderElector::run`] ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ElectionOutcome {
    /// Shutdown was requested while not leading. `released` is true if a write of ours had
    /// landed unseen and was released.
    ShutdownWhileFollowing {
        /// Whether the Lease was released.
        released: bool,
    },
    /// Shutdown was requested while leading; leadership was fenced first, then the Lease
    /// released if `release_on_cancel` and a fresh read still showed us as holder.
    ShutdownWhileLeading {
        /// Whether the Lease was released.
        released: bool,
    },
    /// Leadership was lost. The elector will not campaign again: stop leader-only work and exit.
    LeadershipLost(LossReason),
}

impl ElectionOutcome {
    /// Whether leadership was lost (as opposed to a requested shutdown).
    pub fn is_lost(&self) -> bool {
        matches!(self, ElectionOutcome::LeadershipLost(_))
    }
}

/// Conflicting release attempts before giving up.
const RELEASE_ATTEMPTS: usize = 5;

/// Upper bound of the random delay a follower whose Lease watch is up waits before it tries to
/// take a lease it saw released or expire: uniform in `[0, ACQUIRE_TIE_BREAK)`, drawn anew for
/// every observed change. Only to break ties between followers that saw the same event, so
/// that they do not all write at once; the losers get 409 Conflict and follow.
pub const ACQUIRE_TIE_BREAK: Duration = Duration::from_millis(5);

/// How long past its `timeoutSeconds` a Lease watch may stay silent before the follower drops it
/// as a dead connection and resumes (kube's watcher allows 5 s too).
const WATCH_GRACE: Duration = Duration::from_secs(5);

/// Longest pause between attempts to reopen a broken Lease watch (polling continues meanwhile).
const WATCH_MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The follower's Lease watch.
enum WatchMode {
    /// Not open: the follower polls. At `retry_at` it opens one again: a `WATCH` from `resume`
    /// if set, else a `LIST` then a `WATCH` from the list's `resourceVersion`.
    Down {
        retry_at: Instant,
        resume: Option<String>,
        failures: u32,
    },
    /// Open; `resource_version` is where to resume after it ends.
    Up {
        stream: LeaseEventStream,
        resource_version: String,
        opened_at: Instant,
    },
    /// The lock cannot list or watch: poll only, as client-go.
    Unsupported,
}

impl WatchMode {
    fn is_up(&self) -> bool {
        matches!(self, WatchMode::Up { .. })
    }
}

/// What woke the follower loop.
enum Wake {
    Shutdown,
    Event(Box<Option<Result<LeaseEvent, LockError>>>),
    Attempt,
    Poll,
    ReopenWatch,
    WatchSilent,
}

enum RenewError {
    Transient(LockError),
    Lost(LossReason),
}

/// A candidate for one Lease. Build with [`LeaderElector::new`], then [`LeaderElector::run`] it
/// (or [`LeaderElector::spawn`] it) and observe it through [`LeaderWatch`].
///
/// Timings (client-go semantics, seconds from [`LeaderElectionConfig`]):
/// * Rules to acquire (client-go's): a missing Lease is created (we lead at once); a Lease with
///   an empty `holderIdentity` is free at once; another holder's lease is free once its
///   `leaseDurationSeconds` have passed, by our monotonic clock, since we last saw its record
///   change. Stricter than client-go: a Lease seen deleted while another identity held it is
///   not created again before that holder's lease would have expired.
/// * Following, beyond client-go: a follower lists its Lease and watches it (field selector
///   `metadata.name`, resumed from the last `resourceVersion`, listed again on 410 Gone), so it
///   sees each renewal and release as it is written, and tries to acquire as soon as the lease
///   is free or expired, after a tie-break delay in `[0, ACQUIRE_TIE_BREAK)`
///   ([`ACQUIRE_TIE_BREAK`]): a release is taken over within milliseconds, a dead holder's
///   lease at its last renewal + `leaseDurationSeconds`. The acquiring write carries the watched
///   object's `resourceVersion`; the loser of a race gets 409, reads the Lease and follows.
/// * While the watch is down (or the lock cannot watch), the follower polls like client-go: first
///   attempt at once, then every `retry_period × [1, 2.2)` (uniform jitter), GET then write; it
///   tries to reopen the watch after `retry_period`, backing off to 30 s.
/// * Renew: every `retry_period` after the previous attempt; first a PUT of the cached object
///   (fast path), on error a GET + PUT (slow path, `leader_election_slowpath_total`).
/// * Fence: leading only until `start of the last successful acquire/renew request +
///   renew_deadline`; a read showing another holder, a 404, or a 409 on the slow path ends
///   leadership at once.
/// * Every Lease request is bounded by `max(1 s, renew_deadline / 2)`.
pub struct LeaderElector<L: Lock> {
    config: LeaderElectionConfig,
    lock: L,
    metrics: ElectionMetrics,
    clock: Clock,
    rng: StdRng,
    state_tx: watch::Sender<LeaderState>,
    holder_tx: watch::Sender<Option<String>>,
    observer: Observer,
    cached: Option<Lease>,
    reported_holder: Option<String>,
    term: Option<LeaderTerm>,
    deadline: Instant,
    write_in_flight: bool,
    desc: String,
    /// The tie-break delay drawn for an observation generation.
    tie_break: Option<(u64, Duration)>,
    /// No attempt on this observation generation before this instant (after a failed one).
    retry_block: Option<(u64, Instant)>,
}

impl<L: Lock> fmt::Debug for LeaderElector<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderElector")
            .field("config", &self.config)
            .field("lease", &self.desc)
            .field("term", &self.term)
            .finish_non_exhaustive()
    }
}

impl<L: Lock> LeaderElector<L> {
    /// Validates `config` and builds a follower. Sets `leader_election_master_status{name}` to 0
    /// (client-go `NewLeaderElector`). Uses the system wall clock and a random jitter seed; under
    /// tokio's paused clock use [`Self::with_clock`]`(`[`Clock::anchored`]`(..))` so renewals
    /// still change `renewTime`.
    ///
    /// # Errors
    /// The first rule of [`LeaderElectionConfig::validate`] that fails.
    pub fn new(
        config: LeaderElectionConfig,
        lock: L,
        metrics: ElectionMetrics,
    ) -> Result<Self, ConfigError> {
        config.validate()?;
        metrics.leader_off(&config.lease_name);
        let (state_tx, _) = watch::channel(LeaderState::Follower { holder: None });
        let (holder_tx, _) = watch::channel(None);
        let seed = uuid::Uuid::new_v4().as_u64_pair().0;
        Ok(Self {
            desc: config.describe_lease(),
            config,
            lock,
            metrics,
            clock: Clock::system(),
            rng: StdRng::seed_from_u64(seed),
            state_tx,
            holder_tx,
            observer: Observer::default(),
            cached: None,
            reported_holder: None,
            term: None,
            deadline: Instant::now(),
            write_in_flight: false,
            tie_break: None,
            retry_block: None,
        })
    }

    /// Seeds the acquire-jitter RNG, for deterministic tests.
    #[must_use]
    pub fn with_rng_seed(mut self, seed: u64) -> Self {
        self.rng = StdRng::seed_from_u64(seed);
        self
    }

    /// Replaces the clock (use [`Clock::anchored`] under tokio's paused time).
    #[must_use]
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// The validated configuration.
    pub fn config(&self) -> &LeaderElectionConfig {
        &self.config
    }

    /// A view of this elector's state, valid before, during and after [`Self::run`].
    pub fn watch(&self) -> LeaderWatch {
        LeaderWatch::new(self.state_tx.subscribe(), self.holder_tx.subscribe())
    }

    /// client-go's `HealthzAdaptor` for this elector, with `timeout` beyond the lease duration
    /// (kube-scheduler: 20 s).
    pub fn health_check(&self, timeout: Duration) -> LeaderHealthCheck {
        LeaderHealthCheck::new(self.watch(), &self.config, timeout)
    }

    /// Runs the election on the current task until `shutdown` resolves or leadership is lost.
    ///
    /// On shutdown while leading, leadership is fenced (published as follower) before the
    /// Lease is released, if `release_on_cancel`. Any leader-only write already past its
    /// [`LeadershipGuard::check`] must be finished or abandoned by the caller before it relies on
    /// the release (client-go's `ReleaseOnCancel` warning).
    pub async fn run(mut self, shutdown: impl Future<Output = ()> + Send) -> ElectionOutcome {
        let mut shutdown = pin!(shutdown);
        info!(lease = %self.desc, identity = %self.config.identity,
            "attempting to acquire leader lease {}...", self.desc);
        if self.follow(&mut shutdown).await {
            self.renew_loop(shutdown).await
        } else {
            self.shutdown_following().await
        }
    }

    /// Follows until this candidate leads (`true`) or shutdown is requested (`false`).
    async fn follow(
        &mut self,
        shutdown: &mut std::pin::Pin<&mut (impl Future<Output = ()> + Send)>,
    ) -> bool {
        let start = self.clock.now();
        let mut watch = WatchMode::Down {
            retry_at: start,
            resume: None,
            failures: 0,
        };
        let mut poll_at = start;
        loop {
            let now = self.clock.now();
            if let WatchMode::Down {
                retry_at,
                resume,
                failures,
            } = &watch
                && *retry_at <= now
            {
                let (resume, failures) = (resume.clone(), *failures);
                let opened = tokio::select! {
                    w = self.open_watch(resume, failures) => w,
                    () = shutdown.as_mut() => return false,
                };
                watch = opened;
                if !watch.is_up() {
                    poll_at = poll_at.max(now);
                }
                continue;
            }
            let attempt_at = match &watch {
                WatchMode::Up { .. } => self.next_attempt(),
                _ => None,
            };
            let polling = !watch.is_up();
            let (reopen_at, silent_at) = match &watch {
                WatchMode::Down { retry_at, .. } => (Some(*retry_at), None),
                WatchMode::Up { opened_at, .. } => {
                    (None, Some(*opened_at + WATCH_TIMEOUT + WATCH_GRACE))
                }
                WatchMode::Unsupported => (None, None),
            };
            let wake = tokio::select! {
                () = shutdown.as_mut() => Wake::Shutdown,
                item = async {
                    match &mut watch {
                        WatchMode::Up { stream, .. } => stream.next().await,
                        _ => std::future::pending().await,
                    }
                } => Wake::Event(Box::new(item)),
                () = sleep_until_opt(attempt_at) => Wake::Attempt,
                () = tokio::time::sleep_until(poll_at), if polling => Wake::Poll,
                () = sleep_until_opt(reopen_at) => Wake::ReopenWatch,
                () = sleep_until_opt(silent_at) => Wake::WatchSilent,
            };
            let attempt = match wake {
                Wake::Shutdown => return false,
                Wake::ReopenWatch => continue,
                Wake::WatchSilent => {
                    warn!(lease = %self.desc, "lease watch silent past its timeout, reopening");
                    watch = Self::watch_ended(watch, self.clock.now());
                    continue;
                }
                Wake::Event(item) => {
                    watch = self.on_watch_item(watch, *item);
                    if !watch.is_up() {
                        poll_at = poll_at.max(self.clock.now() + self.jittered_retry_period());
                    }
                    continue;
                }
                Wake::Attempt => tokio::select! {
                    r = self.try_acquire_observed() => r,
                    () = shutdown.as_mut() => return false,
                },
                Wake::Poll => {
                    poll_at = self.clock.now() + self.jittered_retry_period();
                    tokio::select! {
                        r = self.try_acquire() => r,
                        () = shutdown.as_mut() => return false,
                    }
                }
            };
            match attempt {
                Ok(true) => return true,
                Ok(false) => {}
                Err(e) if e.is_conflict() || e.is_already_exists() => {
                    debug!(lease = %self.desc, error = %e, "lost the race to acquire lease: {e}");
                    if watch.is_up() {
                        // Follow the winner: read the Lease now rather than wait for the watch.
                        let read = tokio::select! {
                            r = self.read() => r,
                            () = shutdown.as_mut() => return false,
                        };
                        if let Err(e) = read {
                            debug!(lease = %self.desc, error = %e, "failed to read lease: {e}");
                        }
                        self.block_retry();
                    }
                }
                Err(e) => {
                    warn!(lease = %self.desc, error = %e, "error retrieving or acquiring lease: {e}");
                    self.block_retry();
                }
            }
        }
    }

    /// After a failed attempt, no new attempt on the same observation before one (jittered)
    /// retry period; a new observation lifts it.
    fn block_retry(&mut self) {
        let until = self.clock.now() + self.jittered_retry_period();
        self.retry_block = Some((self.observer.generation(), until));
    }

    /// When a follower with its watch up tries to acquire next (see [`decision::acquire_at`]),
    /// with the tie-break delay of the current observation and any retry block.
    fn next_attempt(&mut self) -> Option<Instant> {
        let at = decision::acquire_at(&self.observer, self.identity())?;
        let generation = self.observer.generation();
        let tie_break = match self.tie_break {
            Some((g, d)) if g == generation => d,
            _ => {
                let d = ACQUIRE_TIE_BREAK.mul_f64(self.rng.random_range(0.0..1.0));
                self.tie_break = Some((generation, d));
                d
            }
        };
        let mut at = at + tie_break;
        if let Some((g, until)) = self.retry_block
            && g == generation
        {
            at = at.max(until);
        }
        Some(at)
    }

    /// Opens the follower's watch: a `WATCH` from `resume`, or (without one, or on 410) a
    /// field-selected `LIST`, whose Lease is observed, then a `WATCH` from the list's
    /// `resourceVersion`. On failure the watch stays down (polling) and is retried later, from
    /// the same `resume` if resuming failed.
    async fn open_watch(&mut self, resume: Option<String>, failures: u32) -> WatchMode {
        if let Some(rv) = resume {
            match self.call(LockOp::Watch, self.lock.watch(&rv)).await {
                Ok(stream) => {
                    debug!(lease = %self.desc, resource_version = %rv, "resumed lease watch");
                    return WatchMode::Up {
                        stream,
                        resource_version: rv,
                        opened_at: self.clock.now(),
                    };
                }
                Err(e) if e.is_gone() => {
                    debug!(lease = %self.desc, error = %e, "lease watch expired, listing again");
                }
                // Retry from the same resourceVersion (kube's watcher does too); 410 lists.
                Err(e) => return self.watch_down(e, Some(rv), failures),
            }
        }
        let list = match self.call(LockOp::List, self.lock.list()).await {
            Ok(list) => list,
            Err(e) => return self.watch_down(e, None, failures),
        };
        match &list.lease {
            Some(lease) => self.observe(lease),
            None => self.observe_absent(),
        }
        match self
            .call(LockOp::Watch, self.lock.watch(&list.resource_version))
            .await
        {
            Ok(stream) => {
                debug!(lease = %self.desc, resource_version = %list.resource_version,
                    "watching lease");
                WatchMode::Up {
                    stream,
                    resource_version: list.resource_version,
                    opened_at: self.clock.now(),
                }
            }
            Err(e) => self.watch_down(e, None, failures),
        }
    }

    fn watch_down(&self, e: LockError, resume: Option<String>, failures: u32) -> WatchMode {
        if e.is_unsupported() {
            return WatchMode::Unsupported;
        }
        let backoff = self
            .config
            .retry_period
            .saturating_mul(1 << failures.min(16))
            .min(WATCH_MAX_BACKOFF);
        if failures == 0 {
            warn!(lease = %self.desc, error = %e,
                "cannot watch lease {}, polling every {:?} meanwhile: {e}",
                self.desc, self.config.retry_period);
        } else {
            debug!(lease = %self.desc, error = %e, "cannot watch lease {}: {e}", self.desc);
        }
        WatchMode::Down {
            retry_at: self.clock.now() + backoff,
            resume,
            failures: failures.saturating_add(1),
        }
    }

    /// The watch ended without an error (its timeout): resume from where it was at once.
    fn watch_ended(watch: WatchMode, now: Instant) -> WatchMode {
        match watch {
            WatchMode::Up {
                resource_version, ..
            } => WatchMode::Down {
                retry_at: now,
                resume: Some(resource_version),
                failures: 0,
            },
            other => other,
        }
    }

    fn on_watch_item(
        &mut self,
        watch: WatchMode,
        item: Option<Result<LeaseEvent, LockError>>,
    ) -> WatchMode {
        let WatchMode::Up {
            stream,
            resource_version,
            opened_at,
        } = watch
        else {
            return watch;
        };
        let event = match item {
            None => {
                debug!(lease = %self.desc, "lease watch closed by the server, resuming");
                return Self::watch_ended(
                    WatchMode::Up {
                        stream,
                        resource_version,
                        opened_at,
                    },
                    self.clock.now(),
                );
            }
            Some(Err(e)) if e.is_gone() => {
                debug!(lease = %self.desc, error = %e, "lease watch expired, listing again");
                return WatchMode::Down {
                    retry_at: self.clock.now(),
                    resume: None,
                    failures: 0,
                };
            }
            Some(Err(e)) => {
                // Resume at once from where it was; polling starts if that fails too.
                debug!(lease = %self.desc, error = %e, "lease watch failed, resuming: {e}");
                return WatchMode::Down {
                    retry_at: self.clock.now(),
                    resume: Some(resource_version),
                    failures: 0,
                };
            }
            Some(Ok(event)) => event,
        };
        let resource_version = event
            .resource_version()
            .map_or(resource_version, str::to_owned);
        match &event {
            LeaseEvent::Added(lease) | LeaseEvent::Modified(lease) => self.observe(lease),
            LeaseEvent::Deleted(_) => self.observe_absent(),
            LeaseEvent::Bookmark { .. } => {}
        }
        WatchMode::Up {
            stream,
            resource_version,
            opened_at,
        }
    }

    /// Spawns [`Self::run`] on the tokio runtime; shut it down with
    /// [`LeaderElectorHandle::shutdown`]. Dropping the handle detaches the task (it keeps
    /// running, like a dropped `JoinHandle`).
    pub fn spawn(self) -> LeaderElectorHandle {
        let watch = self.watch();
        let config = self.config.clone();
        let notify = Arc::new(Notify::new());
        let n = Arc::clone(&notify);
        let task = tokio::spawn(self.run(async move { n.notified().await }));
        LeaderElectorHandle {
            watch,
            config,
            shutdown: notify,
            task,
        }
    }

    fn jittered_retry_period(&mut self) -> Duration {
        // wait.Jitter(RetryPeriod, 1.2): uniform in [RetryPeriod, 2.2 × RetryPeriod).
        let factor: f64 = self.rng.random_range(0.0..JITTER_FACTOR);
        self.config.retry_period + self.config.retry_period.mul_f64(factor)
    }

    async fn call<T>(
        &self,
        op: LockOp,
        fut: impl Future<Output = Result<T, LockError>>,
    ) -> Result<T, LockError> {
        let timeout = self.config.request_timeout();
        match tokio::time::timeout(timeout, fut).await {
            Ok(r) => r,
            Err(_) => Err(LockError::new(
                op,
                self.desc.clone(),
                LockErrorKind::Timeout(timeout),
            )),
        }
    }

    fn identity(&self) -> &str {
        &self.config.identity
    }

    /// Observes a freshly read Lease and reports holder changes.
    fn observe(&mut self, lease: &Lease) {
        let record = LeaderElectionRecord::from_spec(&lease.spec.clone().unwrap_or_default());
        self.observer.observe(record, self.clock.now());
        self.cached = Some(lease.clone());
        self.report_holder();
    }

    /// Our own write succeeded: the response is the new observed record.
    fn observe_written(&mut self, lease: &Lease) {
        let record = LeaderElectionRecord::from_spec(&lease.spec.clone().unwrap_or_default());
        self.observer.set_written(record, self.clock.now());
        self.cached = Some(lease.clone());
        self.report_holder();
    }

    /// client-go `maybeReportTransition` / `OnNewLeader`.
    fn report_holder(&mut self) {
        let Some(holder) = self.observer.holder().map(str::to_owned) else {
            return;
        };
        if self.reported_holder.as_deref() == Some(holder.as_str()) {
            return;
        }
        self.reported_holder = Some(holder.clone());
        self.metrics.transition_observed(&self.config.lease_name);
        if holder.is_empty() {
            info!(lease = %self.desc, "lease {} was released, no holder", self.desc);
        } else {
            info!(lease = %self.desc, holder = %holder, "new leader elected: {holder}");
        }
        self.holder_tx.send_replace(Some(holder.clone()));
        self.state_tx.send_if_modified(|s| match s {
            LeaderState::Follower { holder: h } if h.as_deref() != Some(holder.as_str()) => {
                *h = Some(holder);
                true
            }
            _ => false,
        });
    }

    /// The Lease is absent (404, empty list, `DELETED`).
    fn observe_absent(&mut self) {
        self.observer
            .observe_absent(&self.config.identity, self.clock.now());
        self.cached = None;
    }

    /// Reads the Lease (`GET`) and observes it, or its absence.
    async fn read(&mut self) -> Result<(), LockError> {
        match self.call(LockOp::Get, self.lock.get()).await {
            Ok(lease) => {
                self.observe(&lease);
                Ok(())
            }
            Err(e) if e.is_not_found() => {
                self.observe_absent();
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// One polling attempt (client-go `tryAcquireOrRenew` for a non-leader): read, then decide
    /// and write. `Ok(true)` = we lead now; `Ok(false)` = held by someone else.
    async fn try_acquire(&mut self) -> Result<bool, LockError> {
        self.read().await?;
        self.try_acquire_observed().await
    }

    /// Decides on the last observation and, if the lease may be taken, writes: a create if the
    /// Lease is absent, else a PUT of the observed object (its `resourceVersion` makes it
    /// conditional).
    async fn try_acquire_observed(&mut self) -> Result<bool, LockError> {
        let lds = self.config.lease_duration_seconds();
        let now = self.clock.now();
        let Some(lease) = self
            .cached
            .clone()
            .filter(|_| self.observer.get().is_some())
        else {
            if let Some(until) = self.observer.absent_held_until()
                && until > now
            {
                debug!(lease = %self.desc, wait = ?until - now,
                    "lease was deleted while held; waiting for its holder's lease to expire");
                return Ok(false);
            }
            return self.create(lds).await;
        };
        match decision::decide_acquire(
            &self.observer,
            self.identity(),
            lds,
            now,
            self.clock.wall_now(),
        ) {
            AcquireDecision::HeldByOther { holder, expires_at } => {
                debug!(lease = %self.desc, holder = %holder,
                    expires_in = ?expires_at.saturating_duration_since(now),
                    "lease is held by {holder} and has not yet expired");
                Ok(false)
            }
            AcquireDecision::Write {
                record,
                already_ours,
            } => {
                if already_ours {
                    self.metrics.slowpath_exercised(&self.config.lease_name);
                }
                let mut lease = lease;
                lease.spec = Some(record.to_spec());
                let start = self.clock.now();
                self.write_in_flight = true;
                let updated = self.call(LockOp::Update, self.lock.update(lease)).await;
                self.write_in_flight = false;
                self.became_leader(&updated?, start);
                Ok(true)
            }
        }
    }

    /// Creates the Lease with us as holder (client-go: on NotFound).
    async fn create(&mut self, lds: i32) -> Result<bool, LockError> {
        let wall = self.clock.wall_now();
        let record = LeaderElectionRecord {
            holder_identity: self.identity().to_owned(),
            lease_duration_seconds: lds,
            acquire_time: Some(wall),
            renew_time: Some(wall),
            leader_transitions: 0,
            strategy: None,
            preferred_holder: None,
        };
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(self.config.lease_name.clone()),
                namespace: Some(self.config.lease_namespace.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(record.to_spec()),
        };
        let start = self.clock.now();
        self.write_in_flight = true;
        let created = self.call(LockOp::Create, self.lock.create(lease)).await;
        self.write_in_flight = false;
        self.became_leader(&created?, start);
        Ok(true)
    }

    fn became_leader(&mut self, lease: &Lease, start: Instant) {
        self.observe_written(lease);
        let record = LeaderElectionRecord::from_spec(&lease.spec.clone().unwrap_or_default());
        let term = LeaderTerm {
            lease_uid: lease.metadata.uid.clone(),
            lease_transitions: record.leader_transitions,
            identity: self.config.identity.clone(),
            acquired_at: start,
            lease_resource_version: lease.metadata.resource_version.clone(),
        };
        self.deadline = start + self.config.renew_deadline;
        self.term = Some(term.clone());
        self.state_tx.send_replace(LeaderState::Leader {
            term,
            deadline: self.deadline,
        });
        self.metrics.leader_on(&self.config.lease_name);
        info!(lease = %self.desc, identity = %self.config.identity,
            transitions = record.leader_transitions, "successfully acquired lease {}", self.desc);
    }

    fn renewed(&mut self, lease: &Lease, start: Instant) {
        self.observe_written(lease);
        self.deadline = start + self.config.renew_deadline;
        if let Some(term) = &self.term {
            self.state_tx.send_replace(LeaderState::Leader {
                term: term.clone(),
                deadline: self.deadline,
            });
        }
        debug!(lease = %self.desc, "successfully renewed lease {}", self.desc);
    }

    /// Fences: publishes follower state and sets the gauge to 0.
    fn publish_follower(&mut self) {
        self.term = None;
        let holder = self.observer.holder().map(str::to_owned);
        self.state_tx.send_replace(LeaderState::Follower { holder });
        self.metrics.leader_off(&self.config.lease_name);
    }

    async fn renew_loop(
        mut self,
        mut shutdown: std::pin::Pin<&mut (impl Future<Output = ()> + Send)>,
    ) -> ElectionOutcome {
        enum Step {
            Tick,
            Done(Result<(), RenewError>),
            Deadline,
            Shutdown,
        }
        let mut last_error: Option<String> = None;
        loop {
            let deadline = self.deadline;
            let step = tokio::select! {
                () = tokio::time::sleep(self.config.retry_period) => Step::Tick,
                () = tokio::time::sleep_until(deadline) => Step::Deadline,
                () = &mut shutdown => Step::Shutdown,
            };
            let step = match step {
                Step::Tick => tokio::select! {
                    r = self.try_renew() => Step::Done(r),
                    () = tokio::time::sleep_until(deadline) => Step::Deadline,
                    () = &mut shutdown => Step::Shutdown,
                },
                other => other,
            };
            match step {
                Step::Tick | Step::Done(Ok(())) => last_error = None,
                Step::Done(Err(RenewError::Transient(e))) => {
                    warn!(lease = %self.desc, error = %e, "failed to renew lease {}: {e}", self.desc);
                    last_error = Some(e.to_string());
                }
                Step::Done(Err(RenewError::Lost(reason))) => return self.lose(reason).await,
                Step::Deadline => {
                    return self
                        .lose(LossReason::RenewDeadlineExceeded { last_error })
                        .await;
                }
                Step::Shutdown => {
                    info!(lease = %self.desc, "shutdown requested, stopping leading");
                    self.publish_follower();
                    let released = self.config.release_on_cancel && self.release().await;
                    return ElectionOutcome::ShutdownWhileLeading { released };
                }
            }
        }
    }

    /// One renewal attempt (client-go `tryAcquireOrRenew` for the holder).
    async fn try_renew(&mut self) -> Result<(), RenewError> {
        let lds = self.config.lease_duration_seconds();
        let now = self.clock.now();
        // Fast path: PUT the cached object (its resourceVersion makes the write conditional).
        if let (Some(cached), Some(observed)) = (self.cached.clone(), self.observer.get())
            && self.observer.is_holder(self.identity())
            && self.observer.is_valid(now)
        {
            let record = decision::renewal(
                &observed.record,
                self.identity(),
                lds,
                self.clock.wall_now(),
            );
            let mut lease = cached;
            lease.spec = Some(record.to_spec());
            let start = self.clock.now();
            match self.call(LockOp::Update, self.lock.update(lease)).await {
                Ok(updated) => {
                    self.renewed(&updated, start);
                    return Ok(());
                }
                Err(e) => debug!(lease = %self.desc, error = %e,
                    "failed to update lease optimistically, falling back to slow path"),
            }
        }
        // Slow path: GET, check we still hold it, PUT with the fresh resourceVersion.
        let lease = match self.call(LockOp::Get, self.lock.get()).await {
            Ok(lease) => lease,
            Err(e) if e.is_not_found() => {
                self.observer.clear();
                self.cached = None;
                return Err(RenewError::Lost(LossReason::LeaseDeleted));
            }
            Err(e) => return Err(RenewError::Transient(e)),
        };
        self.observe(&lease);
        let Some(observed) = self.observer.get() else {
            return Err(RenewError::Lost(LossReason::LeaseDeleted));
        };
        if observed.record.holder_identity != self.config.identity {
            return Err(RenewError::Lost(LossReason::HolderChanged {
                holder: observed.record.holder_identity.clone(),
            }));
        }
        let record = decision::renewal(
            &observed.record,
            self.identity(),
            lds,
            self.clock.wall_now(),
        );
        self.metrics.slowpath_exercised(&self.config.lease_name);
        let mut lease = lease;
        lease.spec = Some(record.to_spec());
        let start = self.clock.now();
        match self.call(LockOp::Update, self.lock.update(lease)).await {
            Ok(updated) => {
                self.renewed(&updated, start);
                Ok(())
            }
            Err(e) if e.is_conflict() => Err(RenewError::Lost(LossReason::Conflict {
                error: e.to_string(),
            })),
            Err(e) if e.is_not_found() => Err(RenewError::Lost(LossReason::LeaseDeleted)),
            Err(e) => Err(RenewError::Transient(e)),
        }
    }

    async fn lose(mut self, reason: LossReason) -> ElectionOutcome {
        self.publish_follower();
        error!(lease = %self.desc, reason = %reason,
            "leader election lost: failed to renew lease {}: {reason}", self.desc);
        if self.config.release_on_cancel {
            // client-go releases after a failed renewal too; the fresh-read guard makes it safe.
            self.release().await;
        }
        ElectionOutcome::LeadershipLost(reason)
    }

    async fn shutdown_following(mut self) -> ElectionOutcome {
        self.publish_follower();
        // A create/update of ours may have landed although we never saw the answer.
        let maybe_ours = self.write_in_flight || self.observer.is_holder(self.identity());
        let released = self.config.release_on_cancel && maybe_ours && self.release().await;
        ElectionOutcome::ShutdownWhileFollowing { released }
    }

    /// client-go `release`/`tryRelease`, stricter: only if a fresh read shows us as holder,
    /// with that read's resourceVersion; retried on 409; bounded by `renew_deadline` overall.
    async fn release(&mut self) -> bool {
        let budget = self.config.renew_deadline;
        match tokio::time::timeout(budget, self.release_inner()).await {
            Ok(released) => released,
            Err(_) => {
                warn!(lease = %self.desc, "failed to release lease {}: timed out after {budget:?}",
                    self.desc);
                false
            }
        }
    }

    async fn release_inner(&mut self) -> bool {
        // client-go retries on conflict until its timeout; we also cap the attempts so a writer
        // that keeps touching the Lease cannot keep us spinning.
        for _ in 0..RELEASE_ATTEMPTS {
            let lease = match self.call(LockOp::Get, self.lock.get()).await {
                Ok(lease) => lease,
                Err(e) if e.is_not_found() => {
                    info!(lease = %self.desc, "lease lock not found: {}", self.desc);
                    return false;
                }
                Err(e) => {
                    warn!(lease = %self.desc, error = %e, "failed to release lease {}: {e}", self.desc);
                    return false;
                }
            };
            self.observe(&lease);
            let current = LeaderElectionRecord::from_spec(&lease.spec.clone().unwrap_or_default());
            if current.holder_identity != self.config.identity {
                info!(lease = %self.desc, holder = %current.holder_identity,
                    "not releasing lease {}: held by {:?}", self.desc, current.holder_identity);
                return false;
            }
            let mut lease = lease;
            lease.spec = Some(decision::released(&current, self.clock.wall_now()).to_spec());
            match self.call(LockOp::Update, self.lock.update(lease)).await {
                Ok(updated) => {
                    self.observe_written(&updated);
                    info!(lease = %self.desc, "released lease {}", self.desc);
                    return true;
                }
                Err(e) if e.is_conflict() => {
                    debug!(lease = %self.desc, error = %e, "conflict releasing lease, re-reading");
                }
                Err(e) => {
                    warn!(lease = %self.desc, error = %e, "failed to release lease {}: {e}", self.desc);
                    return false;
                }
            }
        }
        warn!(lease = %self.desc, "failed to release lease {}: conflicts on every attempt", self.desc);
        false
    }
}

/// Sleeps until `at`, or forever if `None`.
async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// A spawned elector (see [`LeaderElector::spawn`]).
#[derive(Debug)]
pub struct LeaderElectorHandle {
    watch: LeaderWatch,
    config: LeaderElectionConfig,
    shutdown: Arc<Notify>,
    task: JoinHandle<ElectionOutcome>,
}

impl LeaderElectorHandle {
    /// A cloneable view of the state (for writers that need the fence).
    pub fn watch(&self) -> LeaderWatch {
        self.watch.clone()
    }

    /// See [`LeaderWatch::state`].
    pub fn state(&self) -> watch::Receiver<LeaderState> {
        self.watch.state()
    }

    /// See [`LeaderWatch::holder`] (client-go `OnNewLeader`).
    pub fn holder(&self) -> watch::Receiver<Option<String>> {
        self.watch.holder()
    }

    /// See [`LeaderWatch::is_leading`].
    pub fn is_leading(&self) -> bool {
        self.watch.is_leading()
    }

    /// See [`LeaderWatch::current_term`].
    pub fn current_term(&self) -> Option<LeaderTerm> {
        self.watch.current_term()
    }

    /// See [`LeaderWatch::leadership`].
    pub fn leadership(&self) -> Option<LeadershipGuard> {
        self.watch.leadership()
    }

    /// client-go's `HealthzAdaptor` with `timeout` beyond the lease duration.
    pub fn health_check(&self, timeout: Duration) -> LeaderHealthCheck {
        LeaderHealthCheck::new(self.watch.clone(), &self.config, timeout)
    }

    /// Asks the elector to stop: fence, release if configured, then finish. Idempotent.
    pub fn shutdown(&self) {
        self.shutdown.notify_one();
    }

    /// Kills the task without fencing or releasing (a crash). [`Self::is_leading`] still turns
    /// false at the published deadline.
    pub fn abort(&self) {
        self.task.abort();
    }

    /// Whether the task has finished.
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }

    /// Waits for the task.
    ///
    /// # Errors
    /// The task's `JoinError` if it panicked or was aborted.
    pub async fn join(self) -> Result<ElectionOutcome, JoinError> {
        self.task.await
    }
}
