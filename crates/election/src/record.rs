//! The leader-election record and its exact mapping to a `coordination.k8s.io/v1` `LeaseSpec`.
//!
//! Follows client-go `resourcelock` (leaselock.go: `LeaseSpecToLeaderElectionRecord`,
//! `LeaderElectionRecordToLeaseSpec`) so that a client-go candidate and this crate can share one
//! Lease.

use k8s_openapi::api::coordination::v1::LeaseSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;

/// client-go's `LeaderElectionRecord` (resourcelock/interface.go), read from / written to a
/// Lease's `spec`.
///
/// Absent spec fields read as the zero value (`""`, `0`, `None`), like client-go.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaderElectionRecord {
    /// `spec.holderIdentity`; `""` means the lease is free (released).
    pub holder_identity: String,
    /// `spec.leaseDurationSeconds` (seconds): how long observers wait after seeing a change.
    pub lease_duration_seconds: i32,
    /// `spec.acquireTime` (MicroTime): when the current holder acquired the lease, by its clock.
    pub acquire_time: Option<Timestamp>,
    /// `spec.renewTime` (MicroTime): the holder's last renewal, by its clock (informational).
    pub renew_time: Option<Timestamp>,
    /// `spec.leaseTransitions`: number of holder changes by acquisition.
    pub leader_transitions: i32,
    /// `spec.strategy` (coordinated leader election); `None` when absent or empty.
    pub strategy: Option<String>,
    /// `spec.preferredHolder` (coordinated leader election); `None` when absent or empty.
    pub preferred_holder: Option<String>,
}

/// The part of a record that counts as a change: every spec field, with `acquireTime` and
/// `renewTime` at 1-second precision (client-go compares `json.Marshal` of the record, where
/// `metav1.Time` has whole seconds). Metadata and `resourceVersion` are not part of it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RecordFingerprint {
    holder_identity: String,
    lease_duration_seconds: i32,
    acquire_second: Option<i64>,
    renew_second: Option<i64>,
    leader_transitions: i32,
    strategy: Option<String>,
    preferred_holder: Option<String>,
}

impl LeaderElectionRecord {
    /// Reads a record from a Lease spec (`LeaseSpecToLeaderElectionRecord`); `None` spec fields
    /// become zero values, an empty `strategy` / `preferredHolder` becomes `None`.
    pub fn from_spec(spec: &LeaseSpec) -> Self {
        Self {
            holder_identity: spec.holder_identity.clone().unwrap_or_default(),
            lease_duration_seconds: spec.lease_duration_seconds.unwrap_or(0),
            acquire_time: spec.acquire_time.as_ref().map(|t| t.0),
            renew_time: spec.renew_time.as_ref().map(|t| t.0),
            leader_transitions: spec.lease_transitions.unwrap_or(0),
            strategy: spec.strategy.clone().filter(|s| !s.is_empty()),
            preferred_holder: spec.preferred_holder.clone().filter(|s| !s.is_empty()),
        }
    }

    /// Writes the record as a Lease spec (`LeaderElectionRecordToLeaseSpec`): `holderIdentity`,
    /// `leaseDurationSeconds` and `leaseTransitions` are always present (an empty holder is
    /// written as `""`, not omitted); times are MicroTime; `strategy` / `preferredHolder` only when
    /// set.
    pub fn to_spec(&self) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.holder_identity.clone()),
            lease_duration_seconds: Some(self.lease_duration_seconds),
            acquire_time: self.acquire_time.map(MicroTime),
            renew_time: self.renew_time.map(MicroTime),
            lease_transitions: Some(self.leader_transitions),
            strategy: self.strategy.clone().filter(|s| !s.is_empty()),
            preferred_holder: self.preferred_holder.clone().filter(|s| !s.is_empty()),
        }
    }

    /// The change-detection key (see [`RecordFingerprint`]).
    pub fn fingerprint(&self) -> RecordFingerprint {
        RecordFingerprint {
            holder_identity: self.holder_identity.clone(),
            lease_duration_seconds: self.lease_duration_seconds,
            acquire_second: self.acquire_time.map(Timestamp::as_second),
            renew_second: self.renew_time.map(Timestamp::as_second),
            leader_transitions: self.leader_transitions,
            strategy: self.strategy.clone(),
            preferred_holder: self.preferred_holder.clone(),
        }
    }

    /// Whether the lease is free: `holderIdentity` is empty (released), so any candidate may
    /// take it at once (client-go since 1.14).
    pub fn is_free(&self) -> bool {
        self.holder_identity.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: i64, micros: i64) -> Timestamp {
        Timestamp::from_microsecond(s * 1_000_000 + micros).expect("valid timestamp")
    }

    #[test]
    fn round_trip_and_wire_format() {
        let rec = LeaderElectionRecord {
            holder_identity: "a_1".into(),
            lease_duration_seconds: 15,
            acquire_time: Some(ts(1_700_000_000, 123_456)),
            renew_time: Some(ts(1_700_000_010, 5)),
            leader_transitions: 3,
            strategy: None,
            preferred_holder: None,
        };
        let spec = rec.to_spec();
        assert_eq!(LeaderElectionRecord::from_spec(&spec), rec);
        let json = serde_json::to_value(&spec).expect("serializes");
        assert_eq!(
            json,
            serde_json::json!({
                "holderIdentity": "a_1",
                "leaseDurationSeconds": 15,
                "acquireTime": "2023-11-14T22:13:20.123456Z",
                "renewTime": "2023-11-14T22:13:30.000005Z",
                "leaseTransitions": 3,
            })
        );
    }

    #[test]
    fn empty_holder_is_written_and_missing_fields_read_as_zero() {
        let released = LeaderElectionRecord {
            lease_duration_seconds: 1,
            ..Default::default()
        };
        let json = serde_json::to_value(released.to_spec()).expect("serializes");
        assert_eq!(json["holderIdentity"], "");
        assert!(released.is_free());
        let rec = LeaderElectionRecord::from_spec(&LeaseSpec::default());
        assert_eq!(rec, LeaderElectionRecord::default());
        assert!(rec.is_free());
        let spec = LeaseSpec {
            strategy: Some(String::new()),
            preferred_holder: Some("x".into()),
            ..Default::default()
        };
        let rec = LeaderElectionRecord::from_spec(&spec);
        assert_eq!(rec.strategy, None);
        assert_eq!(rec.preferred_holder.as_deref(), Some("x"));
    }

    #[test]
    fn fingerprint_has_one_second_precision() {
        let base = LeaderElectionRecord {
            holder_identity: "a".into(),
            lease_duration_seconds: 15,
            acquire_time: Some(ts(100, 0)),
            renew_time: Some(ts(200, 100)),
            leader_transitions: 0,
            ..Default::default()
        };
        let same_second = LeaderElectionRecord {
            renew_time: Some(ts(200, 999_999)),
            ..base.clone()
        };
        assert_eq!(base.fingerprint(), same_second.fingerprint());
        let next_second = LeaderElectionRecord {
            renew_time: Some(ts(201, 0)),
            ..base.clone()
        };
        assert_ne!(base.fingerprint(), next_second.fingerprint());
        let other_holder = LeaderElectionRecord {
            holder_identity: "b".into(),
            ..base.clone()
        };
        assert_ne!(base.fingerprint(), other_holder.fingerprint());
    }
}
