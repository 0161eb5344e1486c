//! One replica: leader election (crate `election`) gating the scheduler ([`super::run`]).
//! Used by `mini-scheduler run` and by the multi-replica tests against the API test double.

use std::future::Future;
use std::time::Duration;

use election::{
    ElectionMetrics, ElectionOutcome, KubeLeaseLock, LeaderElectionConfig, LeaderElector,
    LeaderElectorHandle, LeaderHealthCheck, LeaderWatch,
};
use kube::Client;
use prometheus::Registry;
use tracing::{info, warn};

use super::{ApiClients, RunConfig, RunOutcome, SchedulerMetrics, Status};

/// Slack added to the lease duration before `/healthz` reports a leader that stopped renewing
/// (kube-scheduler's `NewLeaderHealthzAdaptor(20s)`).
pub const LEADER_HEALTH_TIMEOUT: Duration = Duration::from_secs(20);

/// Settings of one replica.
#[derive(Clone)]
pub struct ReplicaConfig {
    /// The scheduler's settings; `run.identity` should equal `election.identity`.
    pub run: RunConfig,
    /// Leader election settings; `None` runs without election (`--leader-elect=false`).
    pub election: Option<LeaderElectionConfig>,
    /// A separate client for the Lease, as kube-scheduler gives leader election its own
    /// clientset, so that a burst of scheduling requests waiting on the client rate limit never
    /// delays a renewal; `None` uses the scheduler's (unlimited) write client.
    pub election_client: Option<Client>,
}

/// Why a replica could not start.
#[derive(Debug, thiserror::Error)]
pub enum ReplicaError {
    /// Invalid election settings.
    #[error("invalid leader election configuration: {0}")]
    Election(#[from] election::ConfigError),
    /// Metrics could not be registered.
    #[error("registering metrics: {0}")]
    Metrics(#[from] prometheus::Error),
}

/// Handles for the admin endpoints of a running replica.
#[derive(Clone)]
pub struct ReplicaProbes {
    /// Cache sync state (`/readyz`).
    pub status: Status,
    /// Leadership (and the `/healthz` election check).
    pub leader: LeaderWatch,
    /// The election health check, when elections run.
    pub health: Option<LeaderHealthCheck>,
}

/// Run one replica until `shutdown` completes or leadership is lost. `on_start` receives the
/// probes once the elector is running (for the admin HTTP server).
///
/// On shutdown the scheduler stops, in-flight bindings get their grace period, then the
/// elector releases the Lease (if it holds it) before this returns [`RunOutcome::Shutdown`].
///
/// # Errors
/// [`ReplicaError`] when the configuration is invalid.
pub async fn run_replica(
    clients: ApiClients,
    cfg: ReplicaConfig,
    registry: &Registry,
    on_start: impl FnOnce(ReplicaProbes),
    shutdown: impl Future<Output = ()> + Send,
) -> Result<RunOutcome, ReplicaError> {
    let metrics = SchedulerMetrics::new(registry)?;
    let status = Status::default();
    let Some(ecfg) = cfg.election.clone() else {
        let leader = LeaderWatch::always_leading(&cfg.run.identity);
        on_start(ReplicaProbes {
            status: status.clone(),
            leader: leader.clone(),
            health: None,
        });
        return Ok(super::run(clients, cfg.run, leader, metrics, status, shutdown).await);
    };
    ecfg.validate()?;
    let lock_client = cfg
        .election_client
        .clone()
        .unwrap_or_else(|| clients.writes.clone());
    let lock = KubeLeaseLock::new(lock_client, &ecfg.lease_namespace, &ecfg.lease_name);
    let election_metrics = ElectionMetrics::new(registry)?;
    let elector = LeaderElector::new(ecfg, lock, election_metrics)?;
    let health = elector.health_check(LEADER_HEALTH_TIMEOUT);
    // If this future is dropped (the replica's task aborted), the elector must die with it, as
    // it would with the process: a detached elector would keep renewing a dead replica's Lease.
    let spawned = elector.spawn();
    let leader = spawned.watch();
    let mut handle = ElectorTask(Some(spawned));
    on_start(ReplicaProbes {
        status: status.clone(),
        leader: leader.clone(),
        health: Some(health),
    });
    let outcome = super::run(clients, cfg.run, leader, metrics, status, shutdown).await;
    match &outcome {
        RunOutcome::Shutdown => {
            handle.shutdown();
            let Some(task) = handle.0.take() else {
                return Ok(RunOutcome::Shutdown);
            };
            match task.join().await {
                Ok(ElectionOutcome::ShutdownWhileLeading { released }) => {
                    info!(released, "Requested to terminate, exiting");
                }
                Ok(other) => info!(outcome = ?other, "Election stopped"),
                Err(e) => warn!(error = %e, "Election task failed"),
            }
        }
        _ => handle.abort(),
    }
    Ok(outcome)
}

/// The spawned elector, aborted (no release: a crash) when dropped unless joined.
struct ElectorTask(Option<LeaderElectorHandle>);

impl ElectorTask {
    fn shutdown(&self) {
        if let Some(h) = &self.0 {
            h.shutdown();
        }
    }

    fn abort(&self) {
        if let Some(h) = &self.0 {
            h.abort();
        }
    }
}

impl Drop for ElectorTask {
    fn drop(&mut self) {
        self.abort();
    }
}
