//! Shared helpers for the election integration tests (paused tokio clock, in-memory Lease).
#![allow(clippy::unwrap_used, dead_code)]

use std::time::Duration;

use election::{
    Clock, ElectionMetrics, FaultInjector, LeaderElectionConfig, LeaderElector,
    LeaderElectorHandle, LeaderState, LeaderWatch, Lock, MemoryLeaseStore,
};
use k8s_openapi::jiff::Timestamp;
use tokio::time::Instant;

pub const NS: &str = "kube-system";
pub const NAME: &str = "mini-scheduler";
pub const LD: Duration = Duration::from_secs(15);
pub const RD: Duration = Duration::from_secs(10);
pub const RP: Duration = Duration::from_secs(2);

pub fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

/// A fixed wall-clock origin for anchored clocks (2026-01-01T00:00:00Z).
pub fn wall_origin() -> Timestamp {
    Timestamp::from_second(1_767_225_600).unwrap()
}

pub fn config(identity: &str) -> LeaderElectionConfig {
    LeaderElectionConfig::new(identity, NS, NAME)
}

pub struct Replica {
    pub id: String,
    pub handle: LeaderElectorHandle,
    pub watch: LeaderWatch,
    pub faults: FaultInjector,
    pub metrics: ElectionMetrics,
}

pub fn spawn_with<L: Lock>(
    config: LeaderElectionConfig,
    lock: L,
    seed: u64,
    clock: Clock,
) -> (LeaderElectorHandle, ElectionMetrics) {
    let metrics = ElectionMetrics::unregistered();
    let elector = LeaderElector::new(config, lock, metrics.clone())
        .unwrap()
        .with_rng_seed(seed)
        .with_clock(clock);
    (elector.spawn(), metrics)
}

pub fn replica(store: &MemoryLeaseStore, id: &str, seed: u64) -> Replica {
    replica_with_clock(store, id, seed, Clock::anchored(wall_origin()))
}

pub fn replica_with_clock(store: &MemoryLeaseStore, id: &str, seed: u64, clock: Clock) -> Replica {
    let lock = store.lock(NS, NAME);
    let faults = lock.faults();
    let (handle, metrics) = spawn_with(config(id), lock, seed, clock);
    let watch = handle.watch();
    Replica {
        id: id.to_owned(),
        handle,
        watch,
        faults,
        metrics,
    }
}

/// Polls `cond` every millisecond of virtual time; returns the instant it first held, or `None`
/// after `limit`.
pub async fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> Option<Instant> {
    let end = Instant::now() + limit;
    loop {
        if cond() {
            return Some(Instant::now());
        }
        if Instant::now() >= end {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// The deadline published by a leading watch.
pub fn deadline_of(w: &LeaderWatch) -> Option<Instant> {
    match &*w.state().borrow() {
        LeaderState::Leader { deadline, .. } => Some(*deadline),
        LeaderState::Follower { .. } => None,
    }
}

/// Waits until the watch publishes a new deadline (a successful renewal); returns the instant
/// the renew request started (`deadline - renew_deadline`).
pub async fn next_renewal(w: &LeaderWatch) -> Instant {
    let mut rx = w.state();
    let before = deadline_of(w);
    rx.wait_for(|s| matches!(s, LeaderState::Leader { deadline, .. } if Some(*deadline) != before))
        .await
        .unwrap();
    deadline_of(w).unwrap() - RD
}
