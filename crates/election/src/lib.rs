//! Lease-based leader election with client-go's semantics and self-fencing.
//!
//! Three replicas of a component compete for one `coordination.k8s.io/v1` Lease; one leads.
//! The algorithm follows client-go `tools/leaderelection` (leaderelection.go,
//! resourcelock/leaselock.go, healthzadaptor.go, metrics.go) closely, so a client-go candidate
//! and this crate can share a Lease:
//!
//! * expiry of another holder is judged by *this* replica's monotonic clock, from when it last
//!   observed the record change, for the record's own `leaseDurationSeconds`; remote `renewTime`
//!   is never compared with local wall time;
//! * writes are optimistic (`resourceVersion`); a 409 means someone else wrote;
//! * the leader renews every `retry_period`, cached-object PUT first, GET+PUT as fallback.
//!
//! Beyond client-go, followers *watch* their Lease (a field-selected LIST, then a WATCH resumed
//! from the last `resourceVersion`, listed again on 410 Gone) instead of polling it, with the
//! same expiry rule: a released lease is taken within milliseconds ([`ACQUIRE_TIE_BREAK`]) rather
//! than at the next poll (up to 2.2 × `retry_period` later), and a dead holder's lease at its last
//! renewal + `leaseDurationSeconds` rather than up to 2 × 2.2 × `retry_period` after that.
//! While the watch is down, followers poll as client-go does. A client-go candidate and these
//! followers share one Lease in both directions.
//!
//! Beyond client-go, the leader fences itself: leadership is valid only until the start of its
//! last successful renew request + `renew_deadline`, checked with [`LeaderWatch::is_leading`] or a
//! [`LeadershipGuard`] right before each leader-only write, and it ends at once when a read shows
//! another holder. A replica that sees that write at `o` (necessarily after the request started)
//! cannot acquire before `o + lease_duration`, which is later than the deadline because
//! `lease_duration > renew_deadline`; [`LeaderElectionConfig::validate`] also demands
//! `lease_duration > renew_deadline + retry_period`, the bound client-go leaders need, so mixed
//! fleets keep a margin. (Assumes replicas' clock *rates* differ by less than
//! `lease_duration / renew_deadline`, like client-go.)
//!
//! Leadership is one-shot, like client-go's `Run`: after [`ElectionOutcome::LeadershipLost`] the
//! elector does not campaign again and the process should exit (kube-scheduler exits with 1).
//!
//! Modules: `config` (settings, validation, identity), `record` (Lease spec mapping), `decision`
//! (pure acquire/renew rules), `clock`, `lock` (the [`Lock`] trait and [`KubeLeaseLock`]),
//! `memory` (in-memory store with fault injection for tests), `state` (published state and
//! fence), `elector` (the loop), `metrics`, `health`.
//!
//! ```no_run
//! # async fn demo(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
//! use election::{ElectionMetrics, KubeLeaseLock, LeaderElectionConfig, LeaderElector};
//! let config = LeaderElectionConfig::default();
//! let lock = KubeLeaseLock::new(client, &config.lease_namespace, &config.lease_name);
//! let metrics = ElectionMetrics::new(prometheus::default_registry())?;
//! let handle = LeaderElector::new(config, lock, metrics)?.spawn();
//! if let Some(guard) = handle.watch().wait_for_leadership().await {
//!     while guard.check().is_ok() {
//!         // ... one leader-only write, guarded ...
//!         # break;
//!     }
//! }
//! handle.shutdown();
//! let outcome = handle.join().await?;
//! # let _ = outcome; Ok(()) }
//! ```

mod clock;
mod config;
mod decision;
mod elector;
mod health;
mod lock;
mod memory;
mod metrics;
mod record;
mod state;

pub use clock::Clock;
pub use config::{
    ConfigError, DEFAULT_LEASE_DURATION, DEFAULT_LEASE_NAME, DEFAULT_RENEW_DEADLINE,
    DEFAULT_RETRY_PERIOD, JITTER_FACTOR, LeaderElectionConfig, POD_NAME_ENV, POD_NAMESPACE_ENV,
    SERVICE_ACCOUNT_NAMESPACE_FILE, default_identity, pod_namespace,
};
pub use elector::{
    ACQUIRE_TIE_BREAK, ElectionOutcome, LeaderElector, LeaderElectorHandle, LossReason,
};
pub use health::{HealthError, LeaderHealthCheck};
pub use lock::{
    KubeLeaseLock, LeaseEvent, LeaseEventStream, LeaseList, Lock, LockError, LockErrorKind, LockOp,
    WATCH_TIMEOUT,
};
pub use memory::{FaultInjector, MemoryLeaseStore, MemoryLock};
pub use metrics::ElectionMetrics;
pub use record::{LeaderElectionRecord, RecordFingerprint};
pub use state::{FenceError, LeaderState, LeaderTerm, LeaderWatch, LeadershipGuard};
