//! Liveness check for a wedged leader (client-go tools/leaderelection/healthzadaptor.go).

use std::time::Duration;

use tokio::time::Instant;

use crate::config::LeaderElectionConfig;
use crate::state::{LeaderState, LeaderWatch};

/// Returned by [`LeaderHealthCheck::check`]: the message is client-go's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("failed election to renew leadership on lease {name}")]
pub struct HealthError {
    /// The Lease name.
    pub name: String,
    /// How long ago the last successful renew request started.
    pub since_last_renew: Duration,
}

/// client-go's `HealthzAdaptor` (check name `leaderElection`): fails when this process is in the
/// `Leader` state but its last successful renewal started more than
/// `lease_duration + timeout` ago — i.e. the renew loop is wedged. Followers are always healthy
/// ("not concerned with the case that we are hot standby"). kube-scheduler uses a 20 s timeout.
#[derive(Debug, Clone)]
pub struct LeaderHealthCheck {
    watch: LeaderWatch,
    name: String,
    lease_duration: Duration,
    renew_deadline: Duration,
    timeout: Duration,
}

impl LeaderHealthCheck {
    /// Check name used by client-go (`/healthz/leaderElection`).
    pub const NAME: &'static str = "leaderElection";

    /// A check over `watch` for the elector configured by `config`, tolerating `timeout` beyond
    /// the lease duration.
    pub fn new(watch: LeaderWatch, config: &LeaderElectionConfig, timeout: Duration) -> Self {
        Self {
            watch,
            name: config.lease_name.clone(),
            lease_duration: config.lease_duration,
            renew_deadline: config.renew_deadline,
            timeout,
        }
    }

    /// `Ok` unless leading without a renewal for more than `lease_duration + timeout`.
    ///
    /// # Errors
    /// [`HealthError`] with text `failed election to renew leadership on lease <name>`.
    pub fn check(&self) -> Result<(), HealthError> {
        let state = self.watch.state();
        let LeaderState::Leader { deadline, .. } = &*state.borrow() else {
            return Ok(());
        };
        let last_renew = deadline
            .checked_sub(self.renew_deadline)
            .unwrap_or(*deadline);
        let since = Instant::now().saturating_duration_since(last_renew);
        if since > self.lease_duration + self.timeout {
            Err(HealthError {
                name: self.name.clone(),
                since_last_renew: since,
            })
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::LeaderTerm;
    use tokio::sync::watch;

    #[tokio::test(start_paused = true)]
    async fn fails_after_lease_duration_plus_timeout_without_renewal() {
        let config = LeaderElectionConfig::new("me", "ns", "lock");
        let (tx, rx) = watch::channel(LeaderState::Follower { holder: None });
        let (_htx, hrx) = watch::channel(None);
        let check =
            LeaderHealthCheck::new(LeaderWatch::new(rx, hrx), &config, Duration::from_secs(20));
        assert_eq!(check.check(), Ok(()));
        let renewed = Instant::now();
        tx.send_replace(LeaderState::Leader {
            term: LeaderTerm {
                lease_uid: None,
                lease_transitions: 0,
                identity: "me".into(),
                acquired_at: renewed,
                lease_resource_version: None,
            },
            deadline: renewed + config.renew_deadline,
        });
        tokio::time::sleep(Duration::from_secs(35)).await;
        assert_eq!(check.check(), Ok(()));
        tokio::time::sleep(Duration::from_millis(1)).await;
        let err = check.check().expect_err("wedged leader is unhealthy");
        assert_eq!(
            err.to_string(),
            "failed election to renew leadership on lease lock"
        );
        tx.send_replace(LeaderState::Follower { holder: None });
        assert_eq!(check.check(), Ok(()));
    }
}
