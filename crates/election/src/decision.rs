//! Pure acquire/renew decisions over the observed record (client-go leaderelection.go
//! `tryAcquireOrRenew`, `isLeaseValid`, `setObservedRecord`). No I/O; time is passed in.

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use tokio::time::Instant;

use crate::record::{LeaderElectionRecord, RecordFingerprint};

/// The last record this replica saw and when (by its monotonic clock) it last saw it change.
#[derive(Debug, Clone)]
pub(crate) struct Observed {
    pub(crate) record: LeaderElectionRecord,
    fingerprint: RecordFingerprint,
    pub(crate) at: Instant,
}

/// client-go's `observedRecord` / `observedRawRecord` / `observedTime` triple, plus what is
/// left of it once the Lease was seen deleted.
#[derive(Debug, Clone, Default)]
pub(crate) struct Observer {
    current: Option<Observed>,
    /// Bumped whenever the observation changes: a different record, or the Lease found absent.
    generation: u64,
    /// When the observation last changed (the Lease found absent, or a different record).
    changed_at: Option<Instant>,
    /// The Lease is absent, but it was last seen held by someone else whose lease runs until
    /// this instant by our clock: that holder may still act until then (a deleted Lease is not
    /// a released one), so nobody should create a new one before.
    absent_held_until: Option<Instant>,
}

impl Observer {
    /// Records a freshly read record. The observation time moves to `now` only if the record
    /// differs from the last one (spec fields, times at 1 s precision); returns whether it did.
    pub(crate) fn observe(&mut self, record: LeaderElectionRecord, now: Instant) -> bool {
        let fingerprint = record.fingerprint();
        match &mut self.current {
            Some(o) if o.fingerprint == fingerprint => {
                o.record = record;
                false
            }
            _ => {
                self.current = Some(Observed {
                    record,
                    fingerprint,
                    at: now,
                });
                self.changed(now);
                self.absent_held_until = None;
                true
            }
        }
    }

    /// Records a record we wrote ourselves (client-go `setObservedRecord` after an update).
    pub(crate) fn set_written(&mut self, record: LeaderElectionRecord, now: Instant) {
        self.current = Some(Observed {
            fingerprint: record.fingerprint(),
            record,
            at: now,
        });
        self.changed(now);
        self.absent_held_until = None;
    }

    /// The Lease does not exist (a 404, an empty list, a `DELETED` event). If it was last seen
    /// held by another identity whose lease has not expired by our clock, remember that expiry
    /// (see [`Self::absent_held_until`]).
    pub(crate) fn observe_absent(&mut self, identity: &str, now: Instant) {
        let Some(previous) = self.current.take() else {
            if self.changed_at.is_none() {
                self.changed(now);
            }
            return;
        };
        let until = {
            let secs = u64::try_from(previous.record.lease_duration_seconds).unwrap_or(0);
            previous.at + Duration::from_secs(secs)
        };
        let held = !previous.record.holder_identity.is_empty()
            && previous.record.holder_identity != identity
            && until > now;
        self.absent_held_until = held.then_some(until);
        self.changed(now);
    }

    fn changed(&mut self, now: Instant) {
        self.generation += 1;
        self.changed_at = Some(now);
    }

    /// Counts changes of the observation (see [`Self::observe`], [`Self::observe_absent`]).
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// When the observation last changed; `None` before the first read.
    pub(crate) fn changed_at(&self) -> Option<Instant> {
        self.changed_at
    }

    /// With the Lease absent: until when its last holder may still act, if that is later than
    /// the moment it was seen deleted.
    pub(crate) fn absent_held_until(&self) -> Option<Instant> {
        self.absent_held_until
    }

    /// Forgets the record (the Lease does not exist).
    pub(crate) fn clear(&mut self) {
        self.current = None;
    }

    pub(crate) fn get(&self) -> Option<&Observed> {
        self.current.as_ref()
    }

    pub(crate) fn holder(&self) -> Option<&str> {
        self.current
            .as_ref()
            .map(|o| o.record.holder_identity.as_str())
    }

    /// client-go `IsLeader`: the observed holder is `identity`.
    pub(crate) fn is_holder(&self, identity: &str) -> bool {
        self.holder() == Some(identity)
    }

    /// client-go `isLeaseValid`: `observedTime + record.leaseDurationSeconds > now`, using the
    /// record's own duration (k/k PR #114872), not our config.
    pub(crate) fn is_valid(&self, now: Instant) -> bool {
        self.expires_at().is_some_and(|t| t > now)
    }

    /// When the observed record expires by our clock.
    pub(crate) fn expires_at(&self) -> Option<Instant> {
        self.current.as_ref().map(|o| {
            let secs = u64::try_from(o.record.lease_duration_seconds).unwrap_or(0);
            o.at + Duration::from_secs(secs)
        })
    }
}

/// What a candidate does after reading the Lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AcquireDecision {
    /// Another identity holds an unexpired lease: wait.
    HeldByOther { holder: String, expires_at: Instant },
    /// Write `record` with the read object's `resourceVersion`. `already_ours` means the read
    /// showed our own identity (a write of ours landed unseen); client-go counts that as a slow
    /// path renewal.
    Write {
        record: LeaderElectionRecord,
        already_ours: bool,
    },
}

/// client-go `tryAcquireOrRenew` steps 4–5 after the read has been observed.
pub(crate) fn decide_acquire(
    observer: &Observer,
    identity: &str,
    lease_duration_seconds: i32,
    now: Instant,
    wall: Timestamp,
) -> AcquireDecision {
    let (old, expires_at) = match (observer.get(), observer.expires_at()) {
        (Some(o), Some(e)) => (o.record.clone(), e),
        _ => (LeaderElectionRecord::default(), now),
    };
    if !old.holder_identity.is_empty() && old.holder_identity != identity && expires_at > now {
        return AcquireDecision::HeldByOther {
            holder: old.holder_identity,
            expires_at,
        };
    }
    let already_ours = old.holder_identity == identity;
    let record = LeaderElectionRecord {
        holder_identity: identity.to_owned(),
        lease_duration_seconds,
        acquire_time: if already_ours {
            old.acquire_time
        } else {
            Some(wall)
        },
        renew_time: Some(wall),
        leader_transitions: if already_ours {
            old.leader_transitions
        } else {
            old.leader_transitions.saturating_add(1)
        },
        strategy: None,
        preferred_holder: None,
    };
    AcquireDecision::Write {
        record,
        already_ours,
    }
}

/// When a follower whose Lease watch is up may try to acquire, by the rules of
/// [`decide_acquire`]: a free lease (empty holder, or our own identity after a write of ours
/// landed unseen) or an absent one at once, a held one when it expires by our clock, a deleted
/// held one when its last holder's lease would have expired. `None` before the first
/// observation. The caller adds the tie-break jitter.
pub(crate) fn acquire_at(observer: &Observer, identity: &str) -> Option<Instant> {
    let changed_at = observer.changed_at()?;
    Some(match observer.get() {
        None => observer
            .absent_held_until()
            .map_or(changed_at, |until| until.max(changed_at)),
        Some(o) if o.record.holder_identity.is_empty() || o.record.holder_identity == identity => {
            o.at
        }
        Some(_) => observer.expires_at().unwrap_or(changed_at),
    })
}

/// The record a holder writes to renew: same acquire time and transitions, new renew time.
pub(crate) fn renewal(
    current: &LeaderElectionRecord,
    identity: &str,
    lease_duration_seconds: i32,
    wall: Timestamp,
) -> LeaderElectionRecord {
    LeaderElectionRecord {
        holder_identity: identity.to_owned(),
        lease_duration_seconds,
        acquire_time: current.acquire_time.or(Some(wall)),
        renew_time: Some(wall),
        leader_transitions: current.leader_transitions,
        strategy: None,
        preferred_holder: None,
    }
}

/// The record written on release (client-go `release`): empty holder, `leaseDurationSeconds: 1`
/// (0 is rejected by the API server), times = now, transitions kept.
pub(crate) fn released(current: &LeaderElectionRecord, wall: Timestamp) -> LeaderElectionRecord {
    LeaderElectionRecord {
        holder_identity: String::new(),
        lease_duration_seconds: 1,
        acquire_time: Some(wall),
        renew_time: Some(wall),
        leader_transitions: current.leader_transitions,
        strategy: None,
        preferred_holder: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(holder: &str, renew: i64, transitions: i32) -> LeaderElectionRecord {
        LeaderElectionRecord {
            holder_identity: holder.into(),
            lease_duration_seconds: 15,
            acquire_time: Some(Timestamp::from_second(1).expect("ts")),
            renew_time: Some(Timestamp::from_second(renew).expect("ts")),
            leader_transitions: transitions,
            ..Default::default()
        }
    }

    #[test]
    fn expiry_counts_from_last_observed_change_with_records_duration() {
        let t0 = Instant::now();
        let wall = Timestamp::from_second(10_000).expect("ts");
        let mut obs = Observer::default();
        assert!(obs.observe(rec("other", 100, 2), t0));
        let s = Duration::from_secs;
        // Same record re-read later: not a change, expiry unchanged.
        assert!(!obs.observe(rec("other", 100, 2), t0 + s(10)));
        assert_eq!(obs.expires_at(), Some(t0 + s(15)));
        assert!(matches!(
            decide_acquire(&obs, "me", 15, t0 + s(14), wall),
            AcquireDecision::HeldByOther { .. }
        ));
        match decide_acquire(&obs, "me", 15, t0 + s(15), wall) {
            AcquireDecision::Write {
                record,
                already_ours,
            } => {
                assert!(!already_ours);
                assert_eq!(record.leader_transitions, 3);
                assert_eq!(record.acquire_time, Some(wall));
                assert_eq!(record.holder_identity, "me");
            }
            d => panic!("unexpected {d:?}"),
        }
        // A renewal (new renewTime second) restarts the wait.
        assert!(obs.observe(rec("other", 102, 2), t0 + s(14)));
        assert!(obs.is_valid(t0 + s(28)));
        assert!(!obs.is_valid(t0 + s(29)));
        // The record's own duration counts, not ours.
        let mut long = rec("other", 103, 2);
        long.lease_duration_seconds = 60;
        obs.observe(long, t0 + s(20));
        assert!(matches!(
            decide_acquire(&obs, "me", 15, t0 + s(79), wall),
            AcquireDecision::HeldByOther { .. }
        ));
    }

    #[test]
    fn acquire_instants_follow_the_observation() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let wall = Timestamp::from_second(10_000).expect("ts");
        let mut obs = Observer::default();
        assert_eq!(acquire_at(&obs, "me"), None);
        // Absent from the start: create at once.
        obs.observe_absent("me", t0);
        assert_eq!(acquire_at(&obs, "me"), Some(t0));
        let g = obs.generation();
        // Held: at its expiry; a renewal moves it; an unchanged re-read does not.
        obs.observe(rec("other", 100, 2), t0 + s(1));
        assert!(obs.generation() > g);
        assert_eq!(acquire_at(&obs, "me"), Some(t0 + s(16)));
        obs.observe(rec("other", 100, 2), t0 + s(3));
        assert_eq!(acquire_at(&obs, "me"), Some(t0 + s(16)));
        obs.observe(rec("other", 102, 2), t0 + s(3));
        assert_eq!(acquire_at(&obs, "me"), Some(t0 + s(18)));
        // Deleted while held: not before the holder's lease would have expired.
        obs.observe_absent("me", t0 + s(5));
        assert_eq!(obs.absent_held_until(), Some(t0 + s(18)));
        assert_eq!(acquire_at(&obs, "me"), Some(t0 + s(18)));
        // Released: at once.
        obs.observe(released(&rec("other", 104, 2), wall), t0 + s(6));
        assert_eq!(obs.absent_held_until(), None);
        assert_eq!(acquire_at(&obs, "me"), Some(t0 + s(6)));
        // Deleted after a release, or after our own record: at once.
        obs.observe_absent("me", t0 + s(7));
        assert_eq!(acquire_at(&obs, "me"), Some(t0 + s(7)));
        obs.observe(rec("me", 105, 3), t0 + s(8));
        assert_eq!(acquire_at(&obs, "me"), Some(t0 + s(8)));
        obs.observe_absent("me", t0 + s(9));
        assert_eq!(acquire_at(&obs, "me"), Some(t0 + s(9)));
        // Deleted after the holder's lease expired: at once.
        obs.observe(rec("other", 110, 3), t0 + s(10));
        obs.observe_absent("me", t0 + s(40));
        assert_eq!(acquire_at(&obs, "me"), Some(t0 + s(40)));
    }

    #[test]
    fn empty_holder_is_free_at_once_and_own_record_is_kept() {
        let t0 = Instant::now();
        let wall = Timestamp::from_second(10_000).expect("ts");
        let mut obs = Observer::default();
        obs.observe(released(&rec("x", 1, 4), wall), t0);
        match decide_acquire(&obs, "me", 15, t0, wall) {
            AcquireDecision::Write { record, .. } => assert_eq!(record.leader_transitions, 5),
            d => panic!("unexpected {d:?}"),
        }
        obs.observe(rec("me", 5, 7), t0);
        match decide_acquire(&obs, "me", 15, t0, wall) {
            AcquireDecision::Write {
                record,
                already_ours,
            } => {
                assert!(already_ours);
                assert_eq!(record.leader_transitions, 7);
                assert_eq!(record.acquire_time, rec("me", 5, 7).acquire_time);
            }
            d => panic!("unexpected {d:?}"),
        }
        let r = released(&rec("me", 5, 7), wall);
        assert_eq!(
            (
                r.holder_identity.as_str(),
                r.lease_duration_seconds,
                r.leader_transitions
            ),
            ("", 1, 7)
        );
        let n = renewal(&rec("me", 5, 7), "me", 15, wall);
        assert_eq!(n.renew_time, Some(wall));
        assert_eq!(n.acquire_time, rec("me", 5, 7).acquire_time);
    }
}
