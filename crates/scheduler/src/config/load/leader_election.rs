//! `leaderElection` and `clientConnection`: componentbase's `LeaderElectionConfiguration` and
//! `ClientConnectionConfiguration`, defaulted and validated as kube-scheduler does.

use super::*;

impl Validator<'_, '_> {
    /// componentbase `ValidateLeaderElectionConfiguration` with kube-scheduler's defaults.
    pub(super) fn leader_election(&mut self, c: &KubeSchedulerConfiguration) -> LeaderElection {
        let path = FieldPath::root().key("leaderElection");
        let le = c.leader_election.clone().unwrap_or_default();
        let l = LeaderElection {
            leader_elect: le.leader_elect.unwrap_or(true),
            lease_duration: self.duration(
                path.clone().key("leaseDuration"),
                le.lease_duration.as_ref(),
                15_000_000_000,
            ),
            renew_deadline: self.duration(
                path.clone().key("renewDeadline"),
                le.renew_deadline.as_ref(),
                10_000_000_000,
            ),
            retry_period: self.duration(
                path.clone().key("retryPeriod"),
                le.retry_period.as_ref(),
                2_000_000_000,
            ),
            resource_lock: le.resource_lock.clone().unwrap_or_else(|| "leases".into()),
            resource_name: le
                .resource_name
                .clone()
                .unwrap_or_else(|| "kube-scheduler".into()),
            resource_namespace: le
                .resource_namespace
                .clone()
                .unwrap_or_else(|| "kube-system".into()),
        };
        if l.leader_elect {
            if l.lease_duration <= 0 {
                self.error(
                    &path.clone().key("leaseDuration"),
                    format!(
                        "Invalid value: {:?}: must be greater than zero",
                        le.lease_duration.unwrap_or_default()
                    ),
                );
            }
            if l.renew_deadline <= 0 {
                self.error(
                    &path.clone().key("renewDeadline"),
                    format!(
                        "Invalid value: {:?}: must be greater than zero",
                        le.renew_deadline.unwrap_or_default()
                    ),
                );
            }
            if l.retry_period <= 0 {
                self.error(
                    &path.clone().key("retryPeriod"),
                    format!(
                        "Invalid value: {:?}: must be greater than zero",
                        le.retry_period.unwrap_or_default()
                    ),
                );
            }
            if l.lease_duration > 0 && l.renew_deadline > 0 && l.lease_duration <= l.renew_deadline
            {
                self.error(
                    &path.clone().key("leaseDuration"),
                    "Invalid value: LeaseDuration must be greater than RenewDeadline",
                );
            }
            if l.resource_lock != "leases" {
                self.error(
                    &path.clone().key("resourceLock"),
                    format!(
                        "Invalid value: {:?}: resourceLock value must be \"leases\"",
                        l.resource_lock
                    ),
                );
            }
            if l.resource_name.is_empty() {
                self.error(
                    &path.clone().key("resourceName"),
                    "Invalid value: \"\": resourceName is required",
                );
            }
            if l.resource_namespace.is_empty() {
                self.error(
                    &path.clone().key("resourceNamespace"),
                    "Invalid value: \"\": resourceNamespace is required",
                );
            }
        }
        l
    }

    pub(super) fn client_connection(&mut self, c: &KubeSchedulerConfiguration) -> ClientConnection {
        let path = FieldPath::root().key("clientConnection");
        let cc = c.client_connection.clone().unwrap_or_default();
        let out = ClientConnection {
            kubeconfig: cc.kubeconfig.clone().unwrap_or_default(),
            qps: cc.qps.unwrap_or(50.0),
            burst: cc.burst.unwrap_or(100),
        };
        if out.burst < 0 {
            self.error(
                &path.clone().key("burst"),
                format!("Invalid value: {}: must be non-negative", out.burst),
            );
        }
        if !(out.qps.is_finite()) || out.qps < 0.0 {
            self.error(
                &path.key("qps"),
                format!("Invalid value: {}: must be non-negative", out.qps),
            );
        }
        out
    }
}
