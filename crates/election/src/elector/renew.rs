//! Leading: the renew loop with its fence, losing leadership, and releasing the Lease on
//! shutdown (client-go `renew`, `release`).

use std::future::Future;

use tracing::{debug, error, info, warn};

use super::{ElectionOutcome, LeaderElector, LossReason};
use crate::decision;
use crate::lock::{Lock, LockError, LockOp};
use crate::record::LeaderElectionRecord;

/// Conflicting release attempts before giving up.
const RELEASE_ATTEMPTS: usize = 5;

enum RenewError {
    Transient(LockError),
    Lost(LossReason),
}

impl<L: Lock> LeaderElector<L> {
    pub(super) async fn renew_loop(
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

    pub(super) async fn shutdown_following(mut self) -> ElectionOutcome {
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
