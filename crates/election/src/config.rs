//! Leader-election configuration, its defaults and its validation.
//!
//! Mirrors client-go's `LeaderElectionConfig` (tools/leaderelection/leaderelection.go) with
//! kube-scheduler's defaults (cmd/kube-scheduler/app/options) and one stricter timing rule.

use std::time::Duration;

/// client-go's `JitterFactor` (leaderelection.go): candidates poll every
/// `retry_period × [1, 1 + JITTER_FACTOR)`, and `renew_deadline` must exceed
/// `retry_period × JITTER_FACTOR`.
pub const JITTER_FACTOR: f64 = 1.2;

/// Default lease duration (kube-scheduler `--leader-elect-lease-duration`): 15 seconds.
pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(15);
/// Default renew deadline (kube-scheduler `--leader-elect-renew-deadline`): 10 seconds.
pub const DEFAULT_RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// Default retry period (kube-scheduler `--leader-elect-retry-period`): 2 seconds.
pub const DEFAULT_RETRY_PERIOD: Duration = Duration::from_secs(2);
/// Default Lease name (`--leader-elect-resource-name`).
pub const DEFAULT_LEASE_NAME: &str = "mini-scheduler";

/// Env var holding the pod's namespace (downward API), read by [`pod_namespace`].
pub const POD_NAMESPACE_ENV: &str = "POD_NAMESPACE";
/// Env var holding the pod's name (downward API), read by [`default_identity`].
pub const POD_NAME_ENV: &str = "POD_NAME";
/// Service-account namespace file mounted into every pod, read by [`pod_namespace`].
pub const SERVICE_ACCOUNT_NAMESPACE_FILE: &str =
    "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/// Why a [`LeaderElectionConfig`] was rejected by [`LeaderElectionConfig::validate`].
///
/// The first six messages are client-go's verbatim (`NewLeaderElector`,
/// leaderelection.go), checked in client-go's order; the rest are this crate's stricter rules.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// `lease_duration <= renew_deadline`.
    #[error("leaseDuration must be greater than renewDeadline")]
    LeaseDurationNotAboveRenewDeadline,
    /// `renew_deadline <= 1.2 × retry_period`.
    #[error("renewDeadline must be greater than retryPeriod*JitterFactor")]
    RenewDeadlineNotAboveJitteredRetryPeriod,
    /// `lease_duration` is zero.
    #[error("leaseDuration must be greater than zero")]
    LeaseDurationZero,
    /// `renew_deadline` is zero.
    #[error("renewDeadline must be greater than zero")]
    RenewDeadlineZero,
    /// `retry_period` is zero.
    #[error("retryPeriod must be greater than zero")]
    RetryPeriodZero,
    /// `identity` is empty.
    #[error("Lock identity is empty")]
    IdentityEmpty,
    /// Stricter than client-go: `lease_duration <= renew_deadline + retry_period`, which would let
    /// a partitioned leader act after another replica may have acquired.
    #[error("leaseDuration must be greater than renewDeadline + retryPeriod")]
    LeaseDurationNotAboveRenewDeadlinePlusRetryPeriod,
    /// Stricter than client-go: a duration is not a whole number of seconds ≥ 1 (the Lease stores
    /// `leaseDurationSeconds` as an integer and the API server rejects 0).
    #[error("{field} must be a whole number of seconds, at least 1s (got {value:?})")]
    NotWholeSeconds {
        /// client-go's field name (`leaseDuration`, `renewDeadline` or `retryPeriod`).
        field: &'static str,
        /// The rejected value.
        value: Duration,
    },
    /// Stricter than client-go: `lease_duration` does not fit `leaseDurationSeconds` (int32).
    #[error("leaseDuration must be at most {max} seconds", max = i32::MAX)]
    LeaseDurationTooLarge,
    /// The Lease name is empty.
    #[error("lease name is empty")]
    LeaseNameEmpty,
    /// The Lease namespace is empty.
    #[error("lease namespace is empty")]
    LeaseNamespaceEmpty,
}

/// Leader-election settings (client-go `LeaderElectionConfig` + `resourcelock.LeaseLock` meta).
///
/// Durations are `std::time::Duration`s that must be whole seconds (see [`Self::validate`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderElectionConfig {
    /// How long a non-leader waits after it last *observed a change* of the record before it may
    /// take over; written as the Lease's `leaseDurationSeconds`. Default 15 s.
    pub lease_duration: Duration,
    /// How long the leader keeps its leadership without a successful renewal, measured from the
    /// start of the last successful renew request (self-fencing). Default 10 s.
    pub renew_deadline: Duration,
    /// Pause between renewals and base period of the acquire poll (jittered ×[1, 2.2)). Default 2 s.
    pub retry_period: Duration,
    /// This candidate's unique identity, written as `holderIdentity` (see [`default_identity`]).
    pub identity: String,
    /// Name of the `coordination.k8s.io/v1` Lease; also the `name` label of the metrics and the
    /// name in health-check errors (client-go's `Name`). Default `mini-scheduler`.
    pub lease_name: String,
    /// Namespace of the Lease. Default: the pod's namespace (see [`pod_namespace`]).
    pub lease_namespace: String,
    /// Release the Lease on shutdown (client-go `ReleaseOnCancel`; kube-scheduler sets it). Only
    /// done if a fresh read still shows this identity as holder.
    pub release_on_cancel: bool,
}

impl Default for LeaderElectionConfig {
    /// kube-scheduler's defaults: 15 s / 10 s / 2 s, lease `mini-scheduler` in [`pod_namespace`],
    /// identity from [`default_identity`], `release_on_cancel: true`.
    fn default() -> Self {
        Self {
            lease_duration: DEFAULT_LEASE_DURATION,
            renew_deadline: DEFAULT_RENEW_DEADLINE,
            retry_period: DEFAULT_RETRY_PERIOD,
            identity: default_identity(),
            lease_name: DEFAULT_LEASE_NAME.to_owned(),
            lease_namespace: pod_namespace(),
            release_on_cancel: true,
        }
    }
}

impl LeaderElectionConfig {
    /// A config with the default timings and the given identity and Lease coordinates.
    pub fn new(
        identity: impl Into<String>,
        lease_namespace: impl Into<String>,
        lease_name: impl Into<String>,
    ) -> Self {
        Self {
            lease_duration: DEFAULT_LEASE_DURATION,
            renew_deadline: DEFAULT_RENEW_DEADLINE,
            retry_period: DEFAULT_RETRY_PERIOD,
            identity: identity.into(),
            lease_name: lease_name.into(),
            lease_namespace: lease_namespace.into(),
            release_on_cancel: true,
        }
    }

    /// Checks the config, returning the first violated rule.
    ///
    /// Order and texts follow client-go `NewLeaderElector` (leaderelection.go):
    /// `leaseDuration > renewDeadline`, `renewDeadline > retryPeriod × 1.2`, each duration > 0,
    /// non-empty identity. Then the stricter rules: `leaseDuration > renewDeadline + retryPeriod`,
    /// every duration a whole number of seconds ≥ 1 that fits an int32, non-empty Lease name and
    /// namespace.
    ///
    /// # Errors
    /// The first [`ConfigError`] that applies.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let (ld, rd, rp) = (self.lease_duration, self.renew_deadline, self.retry_period);
        if ld <= rd {
            return Err(ConfigError::LeaseDurationNotAboveRenewDeadline);
        }
        if rd <= rp.mul_f64(JITTER_FACTOR) {
            return Err(ConfigError::RenewDeadlineNotAboveJitteredRetryPeriod);
        }
        if ld.is_zero() {
            return Err(ConfigError::LeaseDurationZero);
        }
        if rd.is_zero() {
            return Err(ConfigError::RenewDeadlineZero);
        }
        if rp.is_zero() {
            return Err(ConfigError::RetryPeriodZero);
        }
        if self.identity.is_empty() {
            return Err(ConfigError::IdentityEmpty);
        }
        if ld <= rd + rp {
            return Err(ConfigError::LeaseDurationNotAboveRenewDeadlinePlusRetryPeriod);
        }
        for (field, value) in [
            ("leaseDuration", ld),
            ("renewDeadline", rd),
            ("retryPeriod", rp),
        ] {
            if value.subsec_nanos() != 0 || value.as_secs() < 1 {
                return Err(ConfigError::NotWholeSeconds { field, value });
            }
        }
        if i32::try_from(ld.as_secs()).is_err() {
            return Err(ConfigError::LeaseDurationTooLarge);
        }
        if self.lease_name.is_empty() {
            return Err(ConfigError::LeaseNameEmpty);
        }
        if self.lease_namespace.is_empty() {
            return Err(ConfigError::LeaseNamespaceEmpty);
        }
        Ok(())
    }

    /// `leaseDurationSeconds` as written into the Lease: `lease_duration` truncated to whole
    /// seconds (client-go `int(LeaseDuration / time.Second)`), saturating at `i32::MAX`.
    pub fn lease_duration_seconds(&self) -> i32 {
        i32::try_from(self.lease_duration.as_secs()).unwrap_or(i32::MAX)
    }

    /// Timeout applied to each Lease request: `max(1 s, renew_deadline / 2)`, as client-go's
    /// `resourcelock.NewFromKubeconfig` sets on the lock's HTTP client (5 s with defaults).
    pub fn request_timeout(&self) -> Duration {
        (self.renew_deadline / 2).max(Duration::from_secs(1))
    }

    /// `namespace/name` of the Lease, as used in log messages.
    pub fn describe_lease(&self) -> String {
        format!("{}/{}", self.lease_namespace, self.lease_name)
    }
}

/// The namespace this process runs in: `$POD_NAMESPACE` if set and non-empty, else the
/// service-account namespace file, else `"default"`.
pub fn pod_namespace() -> String {
    if let Ok(ns) = std::env::var(POD_NAMESPACE_ENV) {
        let ns = ns.trim();
        if !ns.is_empty() {
            return ns.to_owned();
        }
    }
    if let Ok(ns) = std::fs::read_to_string(SERVICE_ACCOUNT_NAMESPACE_FILE) {
        let ns = ns.trim();
        if !ns.is_empty() {
            return ns.to_owned();
        }
    }
    "default".to_owned()
}

/// A per-process unique identity, as kube-scheduler builds it (`hostname + "_" + uuid`):
/// `$POD_NAME` (or the host name, or `"unknown"`), `_`, and a UUID v4 drawn once per process.
///
/// Example: `mini-scheduler-7d9f-abcde_0f8e…`. Distinct processes on one host (or with
/// `hostNetwork`) therefore never share an identity (k/k #22775, #61151).
pub fn default_identity() -> String {
    static PROCESS_UUID: std::sync::OnceLock<uuid::Uuid> = std::sync::OnceLock::new();
    let uuid = PROCESS_UUID.get_or_init(uuid::Uuid::new_v4);
    format!("{}_{}", base_name(), uuid)
}

fn base_name() -> String {
    if let Ok(name) = std::env::var(POD_NAME_ENV) {
        let name = name.trim();
        if !name.is_empty() {
            return name.to_owned();
        }
    }
    if let Ok(name) = std::env::var("HOSTNAME") {
        let name = name.trim();
        if !name.is_empty() {
            return name.to_owned();
        }
    }
    for path in ["/proc/sys/kernel/hostname", "/etc/hostname"] {
        if let Ok(name) = std::fs::read_to_string(path) {
            let name = name.trim();
            if !name.is_empty() {
                return name.to_owned();
            }
        }
    }
    "unknown".to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(ld: u64, rd: u64, rp: u64) -> LeaderElectionConfig {
        LeaderElectionConfig {
            lease_duration: Duration::from_secs(ld),
            renew_deadline: Duration::from_secs(rd),
            retry_period: Duration::from_secs(rp),
            ..LeaderElectionConfig::new("me", "ns", "lease")
        }
    }

    fn msg(c: &LeaderElectionConfig) -> String {
        c.validate()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn defaults_are_kube_scheduler_and_valid() {
        let c = LeaderElectionConfig::new("me", "ns", "lease");
        assert_eq!(c.lease_duration, Duration::from_secs(15));
        assert_eq!(c.renew_deadline, Duration::from_secs(10));
        assert_eq!(c.retry_period, Duration::from_secs(2));
        assert_eq!(c.validate(), Ok(()));
        assert_eq!(c.lease_duration_seconds(), 15);
        assert_eq!(c.request_timeout(), Duration::from_secs(5));
        assert_eq!(c.describe_lease(), "ns/lease");
        let d = LeaderElectionConfig::default();
        assert_eq!(d.lease_name, "mini-scheduler");
        assert!(!d.lease_namespace.is_empty());
        assert!(d.release_on_cancel);
        assert_eq!(d.validate(), Ok(()));
    }

    #[test]
    fn client_go_error_texts_in_order() {
        assert_eq!(
            msg(&cfg(10, 10, 2)),
            "leaseDuration must be greater than renewDeadline"
        );
        // All zero: client-go reports the first rule, not "greater than zero".
        assert_eq!(
            msg(&cfg(0, 0, 0)),
            "leaseDuration must be greater than renewDeadline"
        );
        assert_eq!(
            msg(&cfg(15, 2, 2)),
            "renewDeadline must be greater than retryPeriod*JitterFactor"
        );
        // 1.2 × 5 s = 6 s: equal is rejected, like client-go's `<=`.
        let mut c = cfg(15, 6, 5);
        assert_eq!(
            msg(&c),
            "renewDeadline must be greater than retryPeriod*JitterFactor"
        );
        c.renew_deadline = Duration::from_secs(7);
        assert_eq!(c.validate(), Ok(()));
        assert_eq!(
            msg(&cfg(15, 10, 0)),
            "retryPeriod must be greater than zero"
        );
        // leaseDuration/renewDeadline "> zero" are unreachable after the first two rules with
        // integer comparisons, exactly as in client-go; the variants still carry its texts.
        assert_eq!(
            ConfigError::LeaseDurationZero.to_string(),
            "leaseDuration must be greater than zero"
        );
        assert_eq!(
            ConfigError::RenewDeadlineZero.to_string(),
            "renewDeadline must be greater than zero"
        );
        let mut c = cfg(15, 10, 2);
        c.identity.clear();
        assert_eq!(msg(&c), "Lock identity is empty");
    }

    #[test]
    fn stricter_rules() {
        assert_eq!(
            msg(&cfg(12, 10, 2)),
            "leaseDuration must be greater than renewDeadline + retryPeriod"
        );
        assert_eq!(cfg(13, 10, 2).validate(), Ok(()));
        let mut c = cfg(15, 10, 2);
        c.lease_duration = Duration::from_millis(15_500);
        assert_eq!(
            c.validate(),
            Err(ConfigError::NotWholeSeconds {
                field: "leaseDuration",
                value: Duration::from_millis(15_500)
            })
        );
        assert_eq!(
            msg(&c),
            "leaseDuration must be a whole number of seconds, at least 1s (got 15.5s)"
        );
        let mut c = cfg(15, 10, 2);
        c.retry_period = Duration::from_millis(500);
        assert_eq!(
            msg(&c),
            "retryPeriod must be a whole number of seconds, at least 1s (got 500ms)"
        );
        let mut c = cfg(15, 10, 2);
        c.renew_deadline = Duration::from_millis(9_999);
        assert!(msg(&c).starts_with("renewDeadline must be a whole number of seconds"));
        let c = cfg(u64::from(u32::MAX), 10, 2);
        assert_eq!(c.validate(), Err(ConfigError::LeaseDurationTooLarge));
        let mut c = cfg(15, 10, 2);
        c.lease_name.clear();
        assert_eq!(msg(&c), "lease name is empty");
        let mut c = cfg(15, 10, 2);
        c.lease_namespace.clear();
        assert_eq!(msg(&c), "lease namespace is empty");
    }

    #[test]
    fn identity_has_name_underscore_uuid_and_is_stable_per_process() {
        let a = default_identity();
        let b = default_identity();
        assert_eq!(a, b);
        let (name, uuid) = a.rsplit_once('_').expect("identity contains '_'");
        assert!(!name.is_empty());
        assert!(uuid::Uuid::parse_str(uuid).is_ok(), "{uuid} is a UUID");
    }
}
