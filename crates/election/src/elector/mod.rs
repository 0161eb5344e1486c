//! The election loop: acquire, renew with self-fencing, release (client-go
//! tools/leaderelection/leaderelection.go `Run`, `acquire`, `renew`, `tryAcquireOrRenew`,
//! `release`).
//!
//! Lifecycle, like client-go's `Run`: campaign until acquired, then renew until shutdown or loss.
//! Leadership is one-shot: once lost, [`LeaderElector::run`] returns
//! [`ElectionOutcome::LeadershipLost`] and never campaigns again; the caller stops leader-only work
//! and exits (kube-scheduler exits with code 1 and lets the kubelet restart it).
//!
//! Here: the elector's state, acquiring and observing the Lease; `follow` the follower's Lease
//! watch and polling, `renew` leading and releasing, `handle` the spawned elector.

use std::fmt;
use std::future::Future;
use std::pin::pin;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use tokio::sync::watch;
use tokio::time::Instant;
use tracing::{debug, info};

use crate::clock::Clock;
use crate::config::{ConfigError, JITTER_FACTOR, LeaderElectionConfig};
use crate::decision::{self, AcquireDecision, Observer};
use crate::health::LeaderHealthCheck;
use crate::lock::{Lock, LockError, LockErrorKind, LockOp};
use crate::metrics::ElectionMetrics;
use crate::record::LeaderElectionRecord;
use crate::state::{LeaderState, LeaderTerm, LeaderWatch};

mod follow;
mod handle;
mod renew;

pub use handle::LeaderElectorHandle;

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

/// Upper bound of the random delay a follower whose Lease watch is up waits before it tries to
/// take a lease it saw released or expire: uniform in `[0, ACQUIRE_TIE_BREAK)`, drawn anew for
/// every observed change. Only to break ties between followers that saw the same event, so
/// that they do not all write at once; the losers get 409 Conflict and follow.
pub const ACQUIRE_TIE_BREAK: Duration = Duration::from_millis(5);

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
    /// [`LeadershipGuard::check`](crate::LeadershipGuard::check) must be finished or abandoned by the caller before it relies on
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
}
