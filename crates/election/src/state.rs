//! Published leadership state and the fence that writers check before each write.
//!
//! client-go signals leadership through callbacks and a context cancelled up to
//! `retry_period + renew_deadline` after the last renewal (leaderelection.go `Run`/`renew`).
//! Here leadership is a `tokio::sync::watch` value carrying a monotonic deadline, so a check is
//! correct even if the elector task is starved or gone: it compares the stored deadline with
//! [`tokio::time::Instant::now`].

use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::watch;
use tokio::time::Instant;

/// One continuous period of leadership of this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderTerm {
    /// `metadata.uid` of the Lease we hold (`None` if the server returned none).
    pub lease_uid: Option<String>,
    /// `spec.leaseTransitions` written when we acquired (constant during the term).
    pub lease_transitions: i32,
    /// Our `holderIdentity`.
    pub identity: String,
    /// Monotonic instant at which the acquiring write request started.
    pub acquired_at: Instant,
    /// `metadata.resourceVersion` of the Lease as the acquiring write stored it: a reader whose
    /// caches have caught up to it has seen every write the previous holder made before this
    /// term began (the scheduler's read barrier). `None` without a lease.
    pub lease_resource_version: Option<String>,
}

/// What this process currently believes about the Lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaderState {
    /// Not leading. `holder` is the last observed `holderIdentity` (`None` before the first read
    /// or if the Lease is absent; `Some("")` when released). After this process loses
    /// leadership by its renew deadline it may still be our own identity.
    Follower {
        /// Last observed holder.
        holder: Option<String>,
    },
    /// Leading, but only while `Instant::now() < deadline`; see [`LeaderState::is_leading`].
    Leader {
        /// The current term.
        term: LeaderTerm,
        /// Start of the last successful acquire/renew request + `renew_deadline`.
        deadline: Instant,
    },
}

impl LeaderState {
    /// Leader and the deadline has not passed, by `tokio::time::Instant::now()`.
    pub fn is_leading(&self) -> bool {
        self.is_leading_at(Instant::now())
    }

    /// Leader and `now < deadline`.
    pub fn is_leading_at(&self, now: Instant) -> bool {
        matches!(self, LeaderState::Leader { deadline, .. } if now < *deadline)
    }

    /// The term, if in the `Leader` variant (whether or not its deadline passed).
    pub fn term(&self) -> Option<&LeaderTerm> {
        match self {
            LeaderState::Leader { term, .. } => Some(term),
            LeaderState::Follower { .. } => None,
        }
    }

    /// The holder as this process sees it: our identity when leader, else the observed holder.
    pub fn holder(&self) -> Option<&str> {
        match self {
            LeaderState::Leader { term, .. } => Some(&term.identity),
            LeaderState::Follower { holder } => holder.as_deref(),
        }
    }
}

/// Why a [`LeadershipGuard::check`] failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FenceError {
    /// The renew deadline passed without a successful renewal.
    #[error("leadership expired: renew deadline passed without a successful renewal")]
    DeadlineExceeded,
    /// The elector reported the end of this term (lost, released, or a new term).
    #[error("leadership term ended")]
    TermEnded,
}

/// Read-only view of an elector's state. Cheap to clone; stays valid after the elector stops
/// (then it reports the last published state, still bounded by its deadline).
#[derive(Debug, Clone)]
pub struct LeaderWatch {
    state: watch::Receiver<LeaderState>,
    holder: watch::Receiver<Option<String>>,
    /// The term of the last guard [`Self::leadership`] returned, shared with it: the next
    /// guards of the same term share it too instead of copying the term's strings (a scheduler
    /// takes one guard per scheduling cycle).
    last_term: TermCache,
}

/// [`LeaderWatch::last_term`]: a clone of the watch starts with its own, empty.
#[derive(Debug, Default)]
struct TermCache(Mutex<Option<Arc<LeaderTerm>>>);

impl Clone for TermCache {
    fn clone(&self) -> TermCache {
        TermCache::default()
    }
}

impl TermCache {
    /// `term`, shared with the last one returned if equal; otherwise copied once and kept.
    fn share(&self, term: &LeaderTerm) -> Arc<LeaderTerm> {
        let mut last = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match &*last {
            Some(t) if **t == *term => Arc::clone(t),
            _ => Arc::clone(last.insert(Arc::new(term.clone()))),
        }
    }
}

impl LeaderWatch {
    pub(crate) fn new(
        state: watch::Receiver<LeaderState>,
        holder: watch::Receiver<Option<String>>,
    ) -> Self {
        Self {
            state,
            holder,
            last_term: TermCache::default(),
        }
    }

    /// A watch that always leads, for running without leader election
    /// (`--leader-elect=false`): one term for `identity` with no lease (`lease_uid: None`,
    /// `lease_transitions: 0`) whose deadline is ten years away.
    pub fn always_leading(identity: &str) -> Self {
        let now = Instant::now();
        let deadline = now
            .checked_add(std::time::Duration::from_secs(10 * 365 * 24 * 3600))
            .unwrap_or(now);
        let (state_tx, state) = watch::channel(LeaderState::Leader {
            term: LeaderTerm {
                lease_uid: None,
                lease_transitions: 0,
                identity: identity.to_string(),
                acquired_at: now,
                lease_resource_version: None,
            },
            deadline,
        });
        let (holder_tx, holder) = watch::channel(Some(identity.to_string()));
        // The receivers keep the last value after the senders are gone.
        drop((state_tx, holder_tx));
        Self::new(state, holder)
    }

    /// A receiver of the leadership state. Note that a `Leader` value is only valid until its
    /// `deadline`; use [`LeaderState::is_leading`] rather than matching the variant.
    pub fn state(&self) -> watch::Receiver<LeaderState> {
        self.state.clone()
    }

    /// A receiver of the observed `holderIdentity` (client-go `OnNewLeader`): changes whenever
    /// the observed holder string changes, including to `""` after a release. `None` until the
    /// first successful read. A `watch` keeps only the latest value: fast successive changes may
    /// be coalesced.
    pub fn holder(&self) -> watch::Receiver<Option<String>> {
        self.holder.clone()
    }

    /// Whether this process leads right now (leader and before the deadline). Cheap: one
    /// read-lock and one clock read. Call it right before each leader-only write.
    pub fn is_leading(&self) -> bool {
        self.state.borrow().is_leading()
    }

    /// The current term if [`Self::is_leading`].
    pub fn current_term(&self) -> Option<LeaderTerm> {
        let state = self.state.borrow();
        if state.is_leading() {
            state.term().cloned()
        } else {
            None
        }
    }

    /// A guard for the current term if [`Self::is_leading`]; its [`LeadershipGuard::check`]
    /// fails once this term's deadline passes or the term ends. Cheap once per term: the
    /// guards of one term taken from one watch share a copy of the term (no allocation).
    pub fn leadership(&self) -> Option<LeadershipGuard> {
        let state = self.state.borrow();
        let term = match &*state {
            LeaderState::Leader { term, .. } if state.is_leading() => self.last_term.share(term),
            _ => return None,
        };
        drop(state);
        Some(LeadershipGuard {
            term,
            state: self.state.clone(),
        })
    }

    /// Waits until this process leads and returns a guard for the term; `None` if the elector
    /// stopped without (again) leading.
    pub async fn wait_for_leadership(&self) -> Option<LeadershipGuard> {
        let mut rx = self.state.clone();
        loop {
            if let Some(guard) = self.leadership() {
                return Some(guard);
            }
            if rx.changed().await.is_err() {
                return self.leadership();
            }
        }
    }
}

/// Proof of leadership for one term, to check right before each leader-only write.
///
/// The guard follows renewals: [`Self::check`] succeeds while the elector still publishes this
/// term and `Instant::now()` is before the current deadline.
#[derive(Debug, Clone)]
pub struct LeadershipGuard {
    term: Arc<LeaderTerm>,
    state: watch::Receiver<LeaderState>,
}

impl LeadershipGuard {
    /// The term this guard was taken in.
    pub fn term(&self) -> &LeaderTerm {
        &self.term
    }

    /// `Ok(deadline)` while this term is current and its deadline has not passed.
    ///
    /// # Errors
    /// [`FenceError::DeadlineExceeded`] after the deadline; [`FenceError::TermEnded`] once the
    /// elector published another state.
    pub fn check(&self) -> Result<Instant, FenceError> {
        match &*self.state.borrow() {
            LeaderState::Leader { term, deadline } if *term == *self.term => {
                if Instant::now() < *deadline {
                    Ok(*deadline)
                } else {
                    Err(FenceError::DeadlineExceeded)
                }
            }
            _ => Err(FenceError::TermEnded),
        }
    }

    /// Whether [`Self::check`] succeeds.
    pub fn is_valid(&self) -> bool {
        self.check().is_ok()
    }

    /// Resolves once [`Self::check`] fails (client-go: the `OnStartedLeading` context is
    /// cancelled), at the latest when the current deadline passes.
    pub async fn lost(&self) {
        let mut rx = self.state.clone();
        loop {
            let Ok(deadline) = self.check() else { return };
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => {}
                changed = rx.changed() => {
                    if changed.is_err() {
                        // Elector gone: the published deadline is final.
                        tokio::time::sleep_until(deadline).await;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn term() -> LeaderTerm {
        LeaderTerm {
            lease_uid: Some("u".into()),
            lease_transitions: 1,
            identity: "me".into(),
            acquired_at: Instant::now(),
            lease_resource_version: Some("7".into()),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn guard_expires_at_deadline_without_any_publisher_activity() {
        let deadline = Instant::now() + Duration::from_secs(10);
        let (tx, rx) = watch::channel(LeaderState::Leader {
            term: term(),
            deadline,
        });
        let (_htx, hrx) = watch::channel(Some("me".to_owned()));
        let w = LeaderWatch::new(rx, hrx);
        let guard = w.leadership().expect("leading");
        assert_eq!(guard.check(), Ok(deadline));
        tokio::time::sleep(Duration::from_millis(9_999)).await;
        assert!(w.is_leading());
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert!(!w.is_leading());
        assert_eq!(guard.check(), Err(FenceError::DeadlineExceeded));
        assert!(w.leadership().is_none());
        assert!(w.current_term().is_none());
        // A renewal of the same term extends the guard; a new state ends it.
        tx.send_replace(LeaderState::Leader {
            term: term(),
            deadline: Instant::now() + Duration::from_secs(1),
        });
        assert!(
            guard.check().is_err(),
            "different acquired_at: another term"
        );
        let g2 = w.leadership().expect("leading again");
        tx.send_replace(LeaderState::Follower { holder: None });
        assert_eq!(g2.check(), Err(FenceError::TermEnded));
    }

    /// The guards of one term taken from a watch share one copy of the term, through renewals;
    /// a new term gets its own, and the old term's guards fail.
    #[tokio::test(start_paused = true)]
    async fn guards_of_one_term_share_it() {
        let t = term();
        let (tx, rx) = watch::channel(LeaderState::Leader {
            term: t.clone(),
            deadline: Instant::now() + Duration::from_secs(10),
        });
        let (_htx, hrx) = watch::channel(Some("me".to_owned()));
        let w = LeaderWatch::new(rx, hrx);
        let g1 = w.leadership().expect("leading");
        tx.send_replace(LeaderState::Leader {
            term: t.clone(),
            deadline: Instant::now() + Duration::from_secs(20),
        });
        let g2 = w.leadership().expect("leading");
        assert!(std::ptr::eq(g1.term(), g2.term()));
        assert_eq!(*g2.term(), t);
        assert!(g1.is_valid() && g2.is_valid());
        tokio::time::advance(Duration::from_secs(1)).await;
        let t2 = term();
        tx.send_replace(LeaderState::Leader {
            term: t2.clone(),
            deadline: Instant::now() + Duration::from_secs(10),
        });
        let g3 = w.leadership().expect("leading");
        assert!(!std::ptr::eq(g1.term(), g3.term()));
        assert_eq!(*g3.term(), t2);
        assert_eq!(g1.check(), Err(FenceError::TermEnded));
        assert!(g3.is_valid());
        assert_eq!(w.clone().leadership().map(|g| g.term().clone()), Some(t2));
        tx.send_replace(LeaderState::Follower { holder: None });
        assert!(w.leadership().is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn lost_resolves_at_deadline_even_if_sender_dropped() {
        let t = term();
        let deadline = Instant::now() + Duration::from_secs(5);
        let (tx, rx) = watch::channel(LeaderState::Leader { term: t, deadline });
        let (_htx, hrx) = watch::channel(None);
        let guard = LeaderWatch::new(rx, hrx).leadership().expect("leading");
        drop(tx);
        guard.lost().await;
        assert_eq!(Instant::now(), deadline);
    }
}
