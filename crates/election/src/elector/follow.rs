//! Following: the Lease watch (list, watch, resume, reopen with backoff) and the acquire
//! attempts it schedules, or polling like client-go while the watch is down.

use std::future::Future;
use std::time::Duration;

use futures::StreamExt;
use rand::RngExt;
use tokio::time::Instant;
use tracing::{debug, warn};

use super::{ACQUIRE_TIE_BREAK, LeaderElector};
use crate::decision;
use crate::lock::{LeaseEvent, LeaseEventStream, Lock, LockError, LockOp, WATCH_TIMEOUT};

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

impl<L: Lock> LeaderElector<L> {
    /// Follows until this candidate leads (`true`) or shutdown is requested (`false`).
    pub(super) async fn follow(
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
}

/// Sleeps until `at`, or forever if `None`.
async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
