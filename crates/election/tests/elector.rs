//! Behaviour of the elector against the in-memory Lease store, on tokio's paused clock.
//!
//! The exact timing bounds live here (virtual time, no slack): creation at once, a release taken
//! over within [`ACQUIRE_TIE_BREAK`], a dead holder's lease at its last observed renewal + the
//! lease duration (+ the tie-break), the fence at the renew deadline, and client-go's polling
//! bounds while the watch is down. The real-time tests in `tests/` only check behaviour with
//! generous bounds; `benches/src/bin/handover.rs` measures the timings of real processes.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use election::{
    ACQUIRE_TIE_BREAK, Clock, ElectionOutcome, FenceError, LeaderElectionRecord, LeaderState, Lock,
    LockError, LockOp, LossReason, MemoryLeaseStore, MemoryLock,
};
use k8s_openapi::api::coordination::v1::Lease;
use tokio::time::Instant;

/// Puts a Lease held by `holder` (renewTime `renew`, transitions `transitions`) into the store.
fn put_record(store: &MemoryLeaseStore, record: LeaderElectionRecord) -> Lease {
    let mut lease = store.get(NS, NAME).unwrap_or_default();
    lease.spec = Some(record.to_spec());
    store.put(NS, NAME, lease)
}

fn held_by(holder: &str, renew_offset_secs: i64, transitions: i32) -> LeaderElectionRecord {
    let renew = wall_origin()
        .checked_add(k8s_openapi::jiff::SignedDuration::from_secs(
            renew_offset_secs,
        ))
        .unwrap();
    LeaderElectionRecord {
        holder_identity: holder.into(),
        lease_duration_seconds: 15,
        acquire_time: Some(renew),
        renew_time: Some(renew),
        leader_transitions: transitions,
        ..Default::default()
    }
}

#[tokio::test(start_paused = true)]
async fn acquires_by_creating_the_lease_when_absent() {
    let store = MemoryLeaseStore::new();
    let t0 = Instant::now();
    let a = replica(&store, "a", 1);
    wait_until(secs(1.0), || a.watch.is_leading())
        .await
        .unwrap();
    let acquired_at = a.handle.current_term().unwrap().acquired_at;
    assert!(
        acquired_at <= t0 + ACQUIRE_TIE_BREAK,
        "creating the Lease makes us leader at once (after the tie-break): {:?}",
        acquired_at - t0
    );
    let rec = store.record(NS, NAME).unwrap();
    assert_eq!(rec.holder_identity, "a");
    assert_eq!(rec.lease_duration_seconds, 15);
    assert_eq!(rec.leader_transitions, 0);
    assert_eq!(rec.acquire_time, rec.renew_time);
    let term = a.handle.current_term().unwrap();
    assert_eq!(term.identity, "a");
    assert_eq!(term.lease_transitions, 0);
    assert_eq!(term.lease_uid, store.get(NS, NAME).unwrap().metadata.uid);
    assert_eq!(a.metrics.master_status(NAME), 1);
    assert_eq!(*a.handle.holder().borrow(), Some("a".to_owned()));
    // It keeps leading and renews every retry period on the fast path.
    let writes = store.write_count();
    tokio::time::sleep(secs(60.5)).await;
    assert!(a.handle.is_leading());
    assert_eq!(store.write_count() - writes, 30);
    assert_eq!(a.metrics.slowpath_total(NAME), 0);
    assert_eq!(a.handle.current_term(), Some(term));
    assert!(
        a.handle
            .health_check(Duration::from_secs(20))
            .check()
            .is_ok()
    );
}

#[tokio::test(start_paused = true)]
async fn follows_a_renewing_holder_whatever_its_renew_time() {
    for skew in [-3600_i64, 3600] {
        let store = MemoryLeaseStore::new();
        let skewed = wall_origin()
            .checked_add(k8s_openapi::jiff::SignedDuration::from_secs(skew))
            .unwrap();
        let a = replica_with_clock(&store, "a", 1, Clock::anchored(skewed));
        wait_until(secs(1.0), || a.watch.is_leading())
            .await
            .unwrap();
        let b = replica(&store, "b", 2);
        let c = replica(&store, "c", 3);
        let until = Instant::now() + secs(120.0);
        while Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(50)).await;
            assert!(a.watch.is_leading(), "skew {skew}: a keeps leading");
            assert!(
                !b.watch.is_leading() && !c.watch.is_leading(),
                "skew {skew}"
            );
        }
        let renew = store.record(NS, NAME).unwrap().renew_time.unwrap();
        assert!((renew.as_second() - wall_origin().as_second() - skew).abs() <= 121);
        assert_eq!(*b.handle.holder().borrow(), Some("a".to_owned()));
        assert_eq!(
            *b.handle.state().borrow(),
            LeaderState::Follower {
                holder: Some("a".into())
            }
        );
        for r in [a, b, c] {
            r.handle.abort();
        }
    }
}

#[tokio::test(start_paused = true)]
async fn takes_over_only_after_a_full_lease_duration_without_observed_change() {
    let store = MemoryLeaseStore::new();
    // A holder that stopped renewing an hour ago: its renewTime does not shorten our wait.
    put_record(&store, held_by("ghost", -3600, 4));
    let t0 = Instant::now();
    let b = replica(&store, "b", 7);
    // A metadata-only write (labels, new resourceVersion) at t0 + 5 s is not a change.
    tokio::time::sleep(secs(5.0)).await;
    let mut lease = store.get(NS, NAME).unwrap();
    lease.metadata.labels = Some([("touched".to_owned(), "yes".to_owned())].into());
    store.put(NS, NAME, lease);
    // A real renewal (new renewTime second) at t0 + 10 s restarts the wait.
    tokio::time::sleep(secs(5.0)).await;
    let renewed_at = Instant::now();
    put_record(&store, held_by("ghost", -3590, 4));
    wait_until(secs(60.0), || b.watch.is_leading())
        .await
        .unwrap();
    // The watch saw the renewal when it was written: expiry is exactly LD later.
    let acquired = b.handle.current_term().unwrap().acquired_at;
    assert!(
        acquired >= renewed_at + LD,
        "took over {:?} after the change",
        acquired - renewed_at
    );
    assert!(
        acquired <= renewed_at + LD + ACQUIRE_TIE_BREAK,
        "took {:?}",
        acquired - renewed_at
    );
    assert!(acquired - t0 > LD + secs(10.0));
    let rec = store.record(NS, NAME).unwrap();
    assert_eq!(rec.holder_identity, "b");
    assert_eq!(rec.leader_transitions, 5);
    assert_eq!(b.handle.current_term().unwrap().lease_transitions, 5);
    assert_eq!(b.metrics.transitions_total(NAME), 2, "ghost, then b");
}

#[tokio::test(start_paused = true)]
async fn takes_over_a_stale_lease_exactly_one_lease_duration_after_first_read() {
    let store = MemoryLeaseStore::new();
    put_record(&store, held_by("ghost", -3600, 0));
    let t0 = Instant::now();
    let b = replica(&store, "b", 11);
    wait_until(secs(60.0), || b.watch.is_leading())
        .await
        .unwrap();
    let acquired = b.handle.current_term().unwrap().acquired_at;
    assert!(acquired >= t0 + LD);
    assert!(acquired <= t0 + LD + ACQUIRE_TIE_BREAK);
}

#[tokio::test(start_paused = true)]
async fn takes_over_at_the_records_own_lease_duration() {
    let store = MemoryLeaseStore::new();
    // The holder wrote 40 s; our own config says 15 s: the record's value counts.
    let mut long = held_by("ghost", -3600, 0);
    long.lease_duration_seconds = 40;
    put_record(&store, long);
    let t0 = Instant::now();
    let b = replica(&store, "b", 12);
    wait_until(secs(60.0), || b.watch.is_leading())
        .await
        .unwrap();
    let acquired = b.handle.current_term().unwrap().acquired_at;
    assert!(acquired >= t0 + secs(40.0), "{:?}", acquired - t0);
    assert!(acquired <= t0 + secs(40.0) + ACQUIRE_TIE_BREAK);
    assert_eq!(store.record(NS, NAME).unwrap().lease_duration_seconds, 15);
}

/// A lock that lets the test write to the store right before this client's next update,
/// so the update carries a stale resourceVersion.
#[derive(Clone)]
struct RacingLock {
    inner: MemoryLock,
    store: MemoryLeaseStore,
    mode: Arc<Mutex<Race>>,
}

#[derive(Clone, Debug, PartialEq)]
enum Race {
    Off,
    /// Before the next update, another identity takes the lease.
    TakeOver(String),
    /// Before every update, someone touches the Lease's labels (metadata only).
    TouchMetadata,
}

impl RacingLock {
    fn new(store: &MemoryLeaseStore) -> Self {
        Self {
            inner: store.lock(NS, NAME),
            store: store.clone(),
            mode: Arc::new(Mutex::new(Race::Off)),
        }
    }

    fn set(&self, race: Race) {
        *self.mode.lock().unwrap() = race;
    }

    fn interfere(&self) {
        let mode = self.mode.lock().unwrap().clone();
        match mode {
            Race::Off => {}
            Race::TakeOver(holder) => {
                let old = self.store.record(NS, NAME).unwrap_or_default();
                let mut rec = held_by(&holder, 0, old.leader_transitions + 1);
                rec.renew_time = Some(Clock::anchored(wall_origin()).wall_now());
                put_record(&self.store, rec);
                self.set(Race::Off);
            }
            Race::TouchMetadata => {
                let mut lease = self.store.get(NS, NAME).unwrap();
                let n = lease.metadata.labels.as_ref().map_or(0, |l| l.len());
                lease.metadata.labels = Some([(format!("touch-{n}"), "x".to_owned())].into());
                self.store.put(NS, NAME, lease);
            }
        }
    }
}

impl Lock for RacingLock {
    async fn get(&self) -> Result<Lease, LockError> {
        self.inner.get().await
    }
    async fn create(&self, lease: Lease) -> Result<Lease, LockError> {
        self.inner.create(lease).await
    }
    async fn update(&self, lease: Lease) -> Result<Lease, LockError> {
        self.interfere();
        self.inner.update(lease).await
    }
    fn describe(&self) -> String {
        self.inner.describe()
    }
}

#[tokio::test(start_paused = true)]
async fn a_conflict_on_acquire_leaves_the_candidate_follower() {
    let store = MemoryLeaseStore::new();
    let mut released = held_by("", 0, 3);
    released.lease_duration_seconds = 1;
    put_record(&store, released);
    let lock = RacingLock::new(&store);
    lock.set(Race::TakeOver("racer".into()));
    let (handle, _m) = spawn_with(config("b"), lock, 5, Clock::anchored(wall_origin()));
    let t0 = Instant::now();
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert!(!handle.is_leading(), "409 on the acquiring PUT: not leader");
    assert_eq!(store.record(NS, NAME).unwrap().holder_identity, "racer");
    // The racer never renews: b waits a full lease duration from its first read of it.
    let acquired = wait_until(secs(60.0), || handle.is_leading())
        .await
        .unwrap();
    assert!(acquired >= t0 + LD, "{:?}", acquired - t0);
    assert_eq!(store.record(NS, NAME).unwrap().leader_transitions, 5);
}

#[tokio::test(start_paused = true)]
async fn a_slow_path_conflict_makes_the_leader_follower_at_once() {
    let store = MemoryLeaseStore::new();
    let lock = RacingLock::new(&store);
    let (handle, metrics) =
        spawn_with(config("a"), lock.clone(), 5, Clock::anchored(wall_origin()));
    let w = handle.watch();
    wait_until(secs(1.0), || w.is_leading()).await.unwrap();
    let guard = w.leadership().unwrap();
    lock.set(Race::TouchMetadata);
    let t = Instant::now();
    let lost = wait_until(secs(30.0), || !w.is_leading()).await.unwrap();
    assert_eq!(
        lost - t,
        RP,
        "lost at the first renewal, not at the deadline"
    );
    assert_eq!(guard.check(), Err(FenceError::TermEnded));
    match handle.join().await.unwrap() {
        ElectionOutcome::LeadershipLost(LossReason::Conflict { error }) => {
            assert!(error.contains("conflict"), "{error}")
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(metrics.slowpath_total(NAME), 1);
    assert_eq!(metrics.master_status(NAME), 0);
}

#[tokio::test(start_paused = true)]
async fn a_leader_whose_lease_was_taken_steps_down_at_its_next_renewal() {
    let store = MemoryLeaseStore::new();
    let a = replica(&store, "a", 1);
    wait_until(secs(1.0), || a.watch.is_leading())
        .await
        .unwrap();
    tokio::time::sleep(secs(0.5)).await;
    let t = Instant::now();
    put_record(&store, held_by("intruder", 0, 1));
    let rv = store.get(NS, NAME).unwrap().metadata.resource_version;
    let lost = wait_until(secs(30.0), || !a.watch.is_leading())
        .await
        .unwrap();
    assert!(lost - t <= RP, "{:?}", lost - t);
    let outcome = a.handle.join().await.unwrap();
    assert_eq!(
        outcome,
        ElectionOutcome::LeadershipLost(LossReason::HolderChanged {
            holder: "intruder".into()
        })
    );
    // release_on_cancel is on, but the fresh read shows another holder: nothing written.
    assert_eq!(store.get(NS, NAME).unwrap().metadata.resource_version, rv);
    assert_eq!(store.record(NS, NAME).unwrap().holder_identity, "intruder");
}

#[tokio::test(start_paused = true)]
async fn a_failed_fast_path_falls_back_to_get_and_put() {
    let store = MemoryLeaseStore::new();
    let a = replica(&store, "a", 1);
    wait_until(secs(1.0), || a.watch.is_leading())
        .await
        .unwrap();
    // The response of one renewal is lost: the write landed, our cached version is stale.
    let writes = store.write_count();
    a.faults.fail_after_apply_next(1);
    let renewed = next_renewal(&a.watch).await;
    // Same attempt: the optimistic PUT failed (its write landed), then GET + PUT succeeded.
    assert_eq!(store.write_count() - writes, 2);
    assert!(a.watch.is_leading());
    assert_eq!(
        a.metrics.slowpath_total(NAME),
        1,
        "GET + PUT after the failed fast path"
    );
    // The next renewal: the cached object is from the slow path's PUT, so the fast path works.
    let next = next_renewal(&a.watch).await;
    assert_eq!(next - renewed, RP);
    tokio::time::sleep(secs(10.0)).await;
    assert!(a.watch.is_leading());
    assert_eq!(a.metrics.slowpath_total(NAME), 1, "back on the fast path");
    // A 409 on the cached object (someone touched the metadata) also takes the slow path.
    let mut lease = store.get(NS, NAME).unwrap();
    lease.metadata.labels = Some([("touched".to_owned(), "yes".to_owned())].into());
    store.put(NS, NAME, lease);
    next_renewal(&a.watch).await;
    assert_eq!(a.metrics.slowpath_total(NAME), 2);
    assert!(a.watch.is_leading());
}

#[tokio::test(start_paused = true)]
async fn renew_failures_fence_the_leader_by_its_renew_deadline() {
    for hang in [false, true] {
        let store = MemoryLeaseStore::new();
        let a = replica(&store, "a", 1);
        wait_until(secs(1.0), || a.watch.is_leading())
            .await
            .unwrap();
        tokio::time::sleep(secs(7.0)).await;
        let last = next_renewal(&a.watch).await;
        let deadline = last + RD;
        if hang {
            a.faults.hang(true);
        } else {
            a.faults.fail_all(true);
        }
        let guard = a.handle.leadership().unwrap();
        tokio::time::sleep_until(deadline - Duration::from_millis(1)).await;
        assert!(
            a.watch.is_leading(),
            "hang={hang}: still leading just before the deadline"
        );
        assert!(guard.check().is_ok());
        tokio::time::sleep_until(deadline).await;
        assert!(!a.watch.is_leading(), "hang={hang}: fenced at the deadline");
        assert!(guard.check().is_err());
        assert!(a.handle.current_term().is_none());
        let health = a.handle.health_check(Duration::from_secs(20));
        let outcome = a.handle.join().await.unwrap();
        match outcome {
            ElectionOutcome::LeadershipLost(LossReason::RenewDeadlineExceeded { last_error }) => {
                assert!(last_error.is_some() || hang, "{last_error:?}");
            }
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(a.metrics.master_status(NAME), 0);
        assert!(health.check().is_ok(), "a follower is healthy");
    }
}

#[tokio::test(start_paused = true)]
async fn the_fence_holds_even_if_the_elector_task_is_gone() {
    let store = MemoryLeaseStore::new();
    let a = replica(&store, "a", 1);
    wait_until(secs(1.0), || a.watch.is_leading())
        .await
        .unwrap();
    let last = next_renewal(&a.watch).await;
    let guard = a.handle.leadership().unwrap();
    a.handle.abort();
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert!(a.handle.is_finished());
    assert!(guard.check().is_ok(), "valid until the deadline");
    tokio::time::sleep_until(last + RD).await;
    assert!(!a.watch.is_leading());
    assert_eq!(guard.check(), Err(FenceError::DeadlineExceeded));
    let start = Instant::now();
    guard.lost().await;
    assert_eq!(Instant::now(), start);
    // The wedged leader's health check fails after lease_duration + timeout.
    let health = a.handle.health_check(Duration::from_secs(20));
    tokio::time::sleep_until(last + LD + Duration::from_secs(20)).await;
    assert!(health.check().is_ok());
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(
        health.check().unwrap_err().to_string(),
        "failed election to renew leadership on lease mini-scheduler"
    );
}

#[tokio::test(start_paused = true)]
async fn release_writes_empty_holder_one_second_and_keeps_transitions() {
    let store = MemoryLeaseStore::new();
    let mut released = held_by("", -100, 6);
    released.lease_duration_seconds = 1;
    put_record(&store, released);
    let a = replica(&store, "a", 1);
    wait_until(secs(1.0), || a.watch.is_leading())
        .await
        .unwrap();
    assert_eq!(store.record(NS, NAME).unwrap().leader_transitions, 7);
    let b = replica(&store, "b", 2);
    tokio::time::sleep(secs(30.0)).await;
    let guard = a.handle.leadership().unwrap();
    b.handle.shutdown();
    assert_eq!(
        b.handle.join().await.unwrap(),
        ElectionOutcome::ShutdownWhileFollowing { released: false }
    );
    assert_eq!(store.record(NS, NAME).unwrap().holder_identity, "a");
    a.handle.shutdown();
    let watch = a.watch.clone();
    assert_eq!(
        a.handle.join().await.unwrap(),
        ElectionOutcome::ShutdownWhileLeading { released: true }
    );
    assert!(!watch.is_leading());
    assert_eq!(guard.check(), Err(FenceError::TermEnded));
    let lease = store.get(NS, NAME).unwrap();
    let spec = serde_json::to_value(lease.spec.as_ref().unwrap()).unwrap();
    assert_eq!(spec["holderIdentity"], "");
    assert_eq!(spec["leaseDurationSeconds"], 1);
    assert_eq!(spec["leaseTransitions"], 7);
    assert_eq!(spec["acquireTime"], spec["renewTime"]);
    assert_eq!(a.metrics.master_status(NAME), 0);
}

#[tokio::test(start_paused = true)]
async fn a_stale_replica_never_blanks_the_new_holder_on_release() {
    let store = MemoryLeaseStore::new();
    let a = replica(&store, "a", 1);
    wait_until(secs(1.0), || a.watch.is_leading())
        .await
        .unwrap();
    tokio::time::sleep(secs(0.5)).await;
    // Another replica took the lease (e.g. after a partition); `a` has not read it yet: its
    // cached object and observed record still say it holds the lease.
    put_record(&store, held_by("b", 0, 1));
    let rv = store.get(NS, NAME).unwrap().metadata.resource_version;
    a.handle.shutdown();
    assert_eq!(
        a.handle.join().await.unwrap(),
        ElectionOutcome::ShutdownWhileLeading { released: false }
    );
    let lease = store.get(NS, NAME).unwrap();
    assert_eq!(lease.metadata.resource_version, rv, "no write at all");
    assert_eq!(store.record(NS, NAME).unwrap().holder_identity, "b");
}

#[tokio::test(start_paused = true)]
async fn a_deleted_lease_ends_leadership_and_is_recreated_by_a_candidate() {
    let store = MemoryLeaseStore::new();
    let a = replica(&store, "a", 1);
    wait_until(secs(1.0), || a.watch.is_leading())
        .await
        .unwrap();
    let b = replica(&store, "b", 2);
    tokio::time::sleep(secs(3.3)).await;
    let last = next_renewal(&a.watch).await;
    tokio::time::sleep(secs(0.3)).await;
    store.delete(NS, NAME);
    let t = Instant::now();
    // Fast path 404 -> slow path GET 404 -> lost at a's next renewal.
    let lost = wait_until(secs(10.0), || !a.watch.is_leading())
        .await
        .unwrap();
    assert!(lost - t <= RP);
    // b saw the DELETED at once, but a deleted Lease is not a released one: b creates it only
    // when a's lease, as b last saw it renewed, would have expired.
    wait_until(secs(30.0), || b.watch.is_leading())
        .await
        .unwrap();
    let acquired = b.handle.current_term().unwrap().acquired_at;
    assert!(acquired >= lost);
    assert!(acquired >= last + LD, "{:?}", acquired - last);
    assert!(
        acquired <= last + LD + ACQUIRE_TIE_BREAK,
        "{:?}",
        acquired - last
    );
    assert_eq!(store.record(NS, NAME).unwrap().leader_transitions, 0);
    assert_eq!(
        a.handle.join().await.unwrap(),
        ElectionOutcome::LeadershipLost(LossReason::LeaseDeleted)
    );
}

#[tokio::test(start_paused = true)]
async fn holder_changes_are_observable() {
    let store = MemoryLeaseStore::new();
    let a = replica(&store, "a", 1);
    wait_until(secs(1.0), || a.watch.is_leading())
        .await
        .unwrap();
    let b = replica(&store, "b", 2);
    let mut holder = b.handle.holder();
    holder
        .wait_for(|h| h.as_deref() == Some("a"))
        .await
        .unwrap();
    a.handle.shutdown();
    // b sees "" (released) or directly itself; in both cases it ends up observing "b".
    holder
        .wait_for(|h| h.as_deref() == Some("b"))
        .await
        .unwrap();
    assert!(b.handle.is_leading());
    assert!(b.metrics.transitions_total(NAME) >= 2);
}

#[tokio::test(start_paused = true)]
async fn a_dead_leaders_lease_is_taken_at_its_last_renewal_plus_lease_duration() {
    let bound = LD + ACQUIRE_TIE_BREAK;
    for seed in 0..12_u64 {
        let store = MemoryLeaseStore::new();
        let a = replica(&store, "a", seed);
        wait_until(secs(1.0), || a.watch.is_leading())
            .await
            .unwrap();
        let others = [
            replica(&store, "b", seed * 10 + 1),
            replica(&store, "c", seed * 10 + 2),
        ];
        tokio::time::sleep(secs(20.0 + seed as f64 * 0.37)).await;
        // The leader stops renewing right after a renewal (a crash: no release).
        let last_change = next_renewal(&a.watch).await;
        a.handle.abort();
        let seen = wait_until(secs(60.0), || others.iter().any(|r| r.watch.is_leading()))
            .await
            .unwrap();
        let term = others.iter().find_map(|r| r.handle.current_term()).unwrap();
        let acquired = term.acquired_at;
        assert!(seen - acquired <= Duration::from_millis(1));
        assert!(
            !a.watch.state().borrow().is_leading_at(acquired),
            "seed {seed}: old leader fenced first"
        );
        let waited = acquired - last_change;
        assert!(waited >= LD, "seed {seed}: took over after only {waited:?}");
        assert!(waited <= bound, "seed {seed}: took {waited:?} > {bound:?}");
        for r in others {
            r.handle.abort();
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_released_lease_is_taken_within_the_tie_break() {
    for seed in 0..12_u64 {
        let store = MemoryLeaseStore::new();
        let a = replica(&store, "a", seed);
        wait_until(secs(1.0), || a.watch.is_leading())
            .await
            .unwrap();
        let others = [
            replica(&store, "b", seed * 10 + 1),
            replica(&store, "c", seed * 10 + 2),
        ];
        tokio::time::sleep(secs(10.0 + seed as f64 * 0.77)).await;
        let released_at = Instant::now();
        a.handle.shutdown();
        assert_eq!(
            a.handle.join().await.unwrap(),
            ElectionOutcome::ShutdownWhileLeading { released: true }
        );
        wait_until(secs(30.0), || others.iter().any(|r| r.watch.is_leading()))
            .await
            .unwrap();
        let acquired = others
            .iter()
            .find_map(|r| r.handle.current_term())
            .unwrap()
            .acquired_at;
        let waited = acquired - released_at;
        assert!(waited <= ACQUIRE_TIE_BREAK, "seed {seed}: took {waited:?}");
        // One leader; the other follower follows it (it saw the winner's write before its own
        // delay ended, or wrote in the same millisecond, got 409 and read the Lease).
        tokio::time::sleep(secs(0.1)).await;
        assert_eq!(others.iter().filter(|r| r.watch.is_leading()).count(), 1);
        let winner = store.record(NS, NAME).unwrap().holder_identity;
        for r in &others {
            assert_eq!(
                *r.handle.holder().borrow(),
                Some(winner.clone()),
                "seed {seed}"
            );
            assert!(r.faults.calls_of(LockOp::Update) <= 1, "seed {seed}");
        }
        let rec = store.record(NS, NAME).unwrap();
        assert_eq!(rec.leader_transitions, 1, "seed {seed}");
        for r in others {
            r.handle.abort();
        }
    }
}

/// Starts a replica whose lock gets `faults` applied before the elector makes its first call.
fn replica_with_faults(
    store: &MemoryLeaseStore,
    id: &str,
    seed: u64,
    faults: impl FnOnce(&election::FaultInjector),
) -> Replica {
    let lock = store.lock(NS, NAME);
    let injector = lock.faults();
    faults(&injector);
    let (handle, metrics) = spawn_with(config(id), lock, seed, Clock::anchored(wall_origin()));
    let watch = handle.watch();
    Replica {
        id: id.to_owned(),
        handle,
        watch,
        faults: injector,
        metrics,
    }
}

#[tokio::test(start_paused = true)]
async fn followers_that_write_at_the_same_instant_race_and_the_loser_follows() {
    let store = MemoryLeaseStore::new();
    let a = replica(&store, "a", 1);
    wait_until(secs(1.0), || a.watch.is_leading())
        .await
        .unwrap();
    // Same seed: the same tie-break delay, so both PUT at the same instant; each request takes
    // 1 ms, so neither sees the other's write before sending its own.
    let latency = |f: &election::FaultInjector| f.set_latency(Duration::from_millis(1));
    let b = replica_with_faults(&store, "b", 77, latency);
    let c = replica_with_faults(&store, "c", 77, latency);
    tokio::time::sleep(secs(5.0)).await;
    let released_at = Instant::now();
    a.handle.shutdown();
    a.handle.join().await.unwrap();
    let (b_writes, c_writes) = (
        b.faults.calls_of(LockOp::Update),
        c.faults.calls_of(LockOp::Update),
    );
    let winner = wait_until(secs(1.0), || b.watch.is_leading() || c.watch.is_leading())
        .await
        .unwrap();
    assert!(winner - released_at < ACQUIRE_TIE_BREAK + Duration::from_millis(10));
    tokio::time::sleep(secs(1.0)).await;
    let (lead, lost) = if b.watch.is_leading() {
        (&b, &c)
    } else {
        (&c, &b)
    };
    assert!(!lost.watch.is_leading(), "exactly one leader");
    assert_eq!(
        b.faults.calls_of(LockOp::Update) - b_writes,
        1,
        "b wrote once"
    );
    assert_eq!(
        c.faults.calls_of(LockOp::Update) - c_writes,
        1,
        "c wrote once"
    );
    // The loser read the Lease after its 409 and follows the winner.
    assert_eq!(
        *lost.handle.holder().borrow(),
        Some(lead.id.clone()),
        "the loser follows"
    );
    assert!(lost.faults.calls_of(LockOp::Get) >= 1);
    assert_eq!(store.record(NS, NAME).unwrap().holder_identity, lead.id);
    assert_eq!(store.record(NS, NAME).unwrap().leader_transitions, 1);
}

#[tokio::test(start_paused = true)]
async fn with_the_watch_down_followers_poll_like_client_go() {
    // Release: taken at the next poll, within 2.2 × retry_period.
    let store = MemoryLeaseStore::new();
    let a = replica(&store, "a", 1);
    wait_until(secs(1.0), || a.watch.is_leading())
        .await
        .unwrap();
    let no_watch = |f: &election::FaultInjector| f.fail_watches(true);
    let b = replica_with_faults(&store, "b", 2, no_watch);
    let c = replica_with_faults(&store, "c", 3, no_watch);
    let t0 = Instant::now();
    tokio::time::sleep(secs(60.0)).await;
    for r in [&b, &c] {
        // Every retry_period to 2.2 × retry_period: 14 to 30 reads in 60 s (plus the first).
        let reads = r.faults.calls_of(LockOp::Get);
        assert!((14..=31).contains(&reads), "{}: {reads} polls", r.id);
        // Reopening the watch backs off (2, 4, 8, 16, 30, 30 s ...): a few tries a minute.
        let watches = r.faults.calls_of(LockOp::Watch);
        assert!(
            (3..=7).contains(&watches),
            "{}: {watches} watch attempts",
            r.id
        );
        assert_eq!(*r.handle.holder().borrow(), Some("a".to_owned()));
    }
    assert!(Instant::now() - t0 >= secs(60.0));
    let released_at = Instant::now();
    a.handle.shutdown();
    a.handle.join().await.unwrap();
    wait_until(secs(10.0), || b.watch.is_leading() || c.watch.is_leading())
        .await
        .unwrap();
    let new = [&b, &c].into_iter().find(|r| r.watch.is_leading()).unwrap();
    let waited = new.handle.current_term().unwrap().acquired_at - released_at;
    assert!(waited < RP.mul_f64(2.2), "{waited:?}");

    // Crash: taken within lease_duration + 2 × 2.2 × retry_period of the last renewal (client-go's
    // bound: the renewal is seen up to one poll late, the expiry up to one poll late).
    let follower = [&b, &c].into_iter().find(|r| r.id != new.id).unwrap();
    tokio::time::sleep(secs(9.0)).await;
    let last = next_renewal(&new.watch).await;
    new.handle.abort();
    wait_until(secs(60.0), || follower.watch.is_leading())
        .await
        .unwrap();
    let waited = follower.handle.current_term().unwrap().acquired_at - last;
    assert!(waited >= LD, "{waited:?}");
    assert!(waited <= LD + RP.mul_f64(2.0 * 2.2), "{waited:?}");
}

#[tokio::test(start_paused = true)]
async fn a_healed_watch_takes_over_from_polling() {
    let store = MemoryLeaseStore::new();
    let a = replica(&store, "a", 1);
    wait_until(secs(1.0), || a.watch.is_leading())
        .await
        .unwrap();
    let b = replica_with_faults(&store, "b", 2, |f| f.fail_watches(true));
    tokio::time::sleep(secs(20.0)).await;
    b.faults.fail_watches(false);
    // The next reopen comes at most 30 s later; from then on, no more polls.
    tokio::time::sleep(secs(31.0)).await;
    let gets = b.faults.calls_of(LockOp::Get);
    tokio::time::sleep(secs(30.0)).await;
    assert_eq!(
        b.faults.calls_of(LockOp::Get),
        gets,
        "no polling with the watch up"
    );
    let released_at = Instant::now();
    a.handle.shutdown();
    a.handle.join().await.unwrap();
    wait_until(secs(1.0), || b.watch.is_leading())
        .await
        .unwrap();
    let waited = b.handle.current_term().unwrap().acquired_at - released_at;
    assert!(waited <= ACQUIRE_TIE_BREAK, "{waited:?}");
}

#[tokio::test(start_paused = true)]
async fn a_watch_that_cannot_resume_lists_again() {
    let store = MemoryLeaseStore::new();
    let a = replica(&store, "a", 1);
    wait_until(secs(1.0), || a.watch.is_leading())
        .await
        .unwrap();
    let b = replica(&store, "b", 2);
    tokio::time::sleep(secs(5.0)).await;
    assert_eq!(b.faults.calls_of(LockOp::List), 1);
    assert_eq!(b.faults.calls_of(LockOp::Watch), 1);
    // The connection drops; other writes and a compaction happen before b resumes: its
    // resourceVersion is gone.
    b.faults.drop_watches();
    store.put(NS, "other", Lease::default());
    store.compact();
    tokio::time::sleep(secs(0.1)).await;
    assert_eq!(
        b.faults.calls_of(LockOp::Watch),
        3,
        "resume (410), then watch again"
    );
    assert_eq!(
        b.faults.calls_of(LockOp::List),
        2,
        "listed again after 410 Gone"
    );
    assert_eq!(b.faults.calls_of(LockOp::Get), 0, "no polling");
    // A compaction alone does not disturb an open watch.
    store.compact();
    tokio::time::sleep(secs(10.0)).await;
    assert_eq!(b.faults.calls_of(LockOp::List), 2);
    // The relisted watch still sees renewals and the release as they happen.
    tokio::time::sleep(secs(0.7)).await;
    let released_at = Instant::now();
    a.handle.shutdown();
    a.handle.join().await.unwrap();
    wait_until(secs(1.0), || b.watch.is_leading())
        .await
        .unwrap();
    let waited = b.handle.current_term().unwrap().acquired_at - released_at;
    assert!(waited <= ACQUIRE_TIE_BREAK, "{waited:?}");
}

#[tokio::test(start_paused = true)]
async fn a_bookmark_lets_a_quiet_watch_resume_after_compaction() {
    let store = MemoryLeaseStore::new();
    // A lease nobody renews, held for a long time; other objects keep being written.
    let mut quiet = held_by("ghost", 0, 0);
    quiet.lease_duration_seconds = 3600;
    put_record(&store, quiet);
    let b = replica(&store, "b", 2);
    let churn = |n: usize| {
        for i in 0..n {
            store.put(NS, &format!("other-{i}"), Lease::default());
        }
    };
    tokio::time::sleep(secs(1.0)).await;
    churn(5);
    // Without a bookmark, b's resourceVersion is older than the compaction: 410, list again.
    b.faults.drop_watches();
    store.compact();
    tokio::time::sleep(secs(0.1)).await;
    assert_eq!(b.faults.calls_of(LockOp::List), 2);
    churn(5);
    // With a bookmark, b resumes from the bookmark's resourceVersion: no list.
    store.bookmark();
    tokio::time::sleep(secs(0.1)).await;
    b.faults.drop_watches();
    store.compact();
    tokio::time::sleep(secs(0.1)).await;
    assert_eq!(b.faults.calls_of(LockOp::List), 2);
    // Opened, resumed (410), opened after the list, resumed.
    assert_eq!(b.faults.calls_of(LockOp::Watch), 4);
    assert!(!b.watch.is_leading());
    assert_eq!(*b.handle.holder().borrow(), Some("ghost".to_owned()));
}

#[tokio::test(start_paused = true)]
async fn a_lock_without_watch_support_polls() {
    // RacingLock implements only get/create/update: the default list/watch are unsupported.
    let store = MemoryLeaseStore::new();
    let a = replica(&store, "a", 1);
    wait_until(secs(1.0), || a.watch.is_leading())
        .await
        .unwrap();
    let lock = RacingLock::new(&store);
    let (handle, _m) = spawn_with(config("b"), lock.clone(), 5, Clock::anchored(wall_origin()));
    tokio::time::sleep(secs(30.0)).await;
    let calls = lock.inner.faults().calls();
    // Every retry_period to 2.2 × retry_period: 7 to 15 reads in 30 s (plus the first).
    assert!((7..=16).contains(&calls), "{calls} polls in 30 s");
    assert_eq!(lock.inner.faults().calls_of(LockOp::Watch), 0);
    let released_at = Instant::now();
    a.handle.shutdown();
    a.handle.join().await.unwrap();
    wait_until(secs(10.0), || handle.is_leading())
        .await
        .unwrap();
    let waited = handle.current_term().unwrap().acquired_at - released_at;
    assert!(waited < RP.mul_f64(2.2), "{waited:?}");
}
