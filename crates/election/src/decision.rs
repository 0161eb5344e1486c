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

/// client-go's `observedRecord` / `observedRawRecord` / `observedTime` triple.
#[derive(Debug, Clone, Default)]
pub(crate) struct Observer {
    current: Option<Observed>,
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
