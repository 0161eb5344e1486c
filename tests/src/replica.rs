//! Scheduler replicas in cluster mode against the [`crate::apiserver::ApiServer`] test double.
//!
//! Each replica runs [`scheduler::controller::replica::run_replica`] in its own tokio task with
//! its own `kube::Client` (identity = replica id, so the write record names it), its own
//! Prometheus registry and, with election on, the fast profile ([`fast_election`]).

use std::path::PathBuf;
use std::time::Duration;

use election::{LeaderElectionConfig, LeaderWatch};
use scheduler::controller::reload::{PolicyUpdates, ReloadConfig};
use scheduler::controller::replica::{ReplicaConfig, ReplicaError, ReplicaProbes, run_replica};
use scheduler::controller::{ApiClients, RunConfig, RunOutcome};
use scheduler::policy::ResolvedPolicy;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::apiserver::ApiServer;

/// Our `schedulerName`.
pub const SCHEDULER_NAME: &str = "mini-scheduler";
/// Namespace of the election Lease.
pub const LEASE_NAMESPACE: &str = "kube-system";
/// Name of the election Lease.
pub const LEASE_NAME: &str = "mini-scheduler";
/// Fast profile: lease duration.
pub const LEASE_DURATION: Duration = Duration::from_secs(6);
/// Fast profile: renew deadline.
pub const RENEW_DEADLINE: Duration = Duration::from_secs(4);
/// Fast profile: retry period.
pub const RETRY_PERIOD: Duration = Duration::from_secs(1);
/// Tie-break seed of every replica.
pub const SEED: u64 = 42;

/// `config/policy-config-file.json`, resolved under the default feature gates (as the binary).
///
/// # Panics
/// If the file cannot be read or parsed.
pub fn policy() -> ResolvedPolicy {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../config/policy-config-file.json");
    let text = std::fs::read_to_string(&path).expect("read policy-config-file.json");
    scheduler::policy::parse_policy(&path.display().to_string(), &text)
        .expect("parse policy-config-file.json")
        .resolved
        .with_feature_gates(&scheduler::policy::FeatureGates::default())
}

/// The profile of `config/policies/gpu/<file>` (a GPU Policy file, e.g. `fgd.yaml`), named
/// after the file.
///
/// # Panics
/// If the file cannot be loaded or its profile built.
pub fn gpu_profile(file: &str) -> scheduler::profile::Profile {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../config/policies/gpu")
        .join(file);
    let resolved = scheduler::policy::load_policy_file(&path)
        .unwrap_or_else(|e| panic!("load {}: {e}", path.display()))
        .resolved;
    scheduler::profile::Profile::from_resolved(resolved, file)
        .unwrap_or_else(|e| panic!("profile of {file}: {e}"))
}

/// The fast election profile (6 s / 4 s / 1 s) for `identity`, releasing on shutdown.
pub fn fast_election(identity: &str) -> LeaderElectionConfig {
    LeaderElectionConfig {
        lease_duration: LEASE_DURATION,
        renew_deadline: RENEW_DEADLINE,
        retry_period: RETRY_PERIOD,
        identity: identity.to_string(),
        lease_name: LEASE_NAME.to_string(),
        lease_namespace: LEASE_NAMESPACE.to_string(),
        release_on_cancel: true,
    }
}

/// The scheduler settings every test replica uses.
pub fn run_config(identity: &str) -> RunConfig {
    RunConfig {
        scheduler_name: SCHEDULER_NAME.to_string(),
        identity: identity.to_string(),
        profile: scheduler::profile::Profile::from_resolved(policy(), "policy")
            .expect("the sample policy builds"),
        other_profiles: Vec::new(),
        percentage_of_nodes_to_score: 100,
        profile_percentage_of_nodes_to_score: None,
        parallelism: scheduler::schedule_one::DEFAULT_PARALLELISM,
        queue: scheduler::queue::QueueConfig::default(),
        bind_concurrency: 16,
        shutdown_grace: Duration::from_secs(5),
        seed: SEED,
        tie_break: scheduler::schedule_one::TieBreak::Random,
        policy_updates: None,
    }
}

/// A running replica.
pub struct ReplicaHandle {
    /// The replica's identity (and client identity).
    pub id: String,
    /// Completing it asks for a graceful shutdown.
    pub shutdown_tx: Option<oneshot::Sender<()>>,
    /// The replica's task.
    pub join: JoinHandle<Result<RunOutcome, ReplicaError>>,
    /// The admin probes (leadership, cache sync).
    pub probes: ReplicaProbes,
    /// The replica's own metrics registry.
    pub registry: prometheus::Registry,
}

impl std::fmt::Debug for ReplicaHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplicaHandle")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl ReplicaHandle {
    /// The replica's leadership view.
    pub fn leader(&self) -> &LeaderWatch {
        &self.probes.leader
    }

    /// Whether the replica currently leads (fence included).
    pub fn is_leading(&self) -> bool {
        self.probes.leader.is_leading()
    }

    /// Asks for a graceful shutdown (stop scheduling, finish bindings, release the Lease).
    pub fn shutdown(&mut self) {
        if let Some(tx) = self.shutdown_tx.take() {
            let _ = tx.send(());
        }
    }

    /// Kills the replica's task: no release, no goodbye (a crash).
    pub fn kill(&self) {
        self.join.abort();
    }

    /// The sum of the samples of metric `name` whose labels include every pair of `labels`
    /// (0 when absent).
    pub fn metric(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        metric(&self.registry, name, labels)
    }
}

/// The sum of the samples of metric `name` in `registry` whose labels include every pair of
/// `labels` (counters and gauges by value, histograms by number of observations; 0 when
/// absent).
pub fn metric(registry: &prometheus::Registry, name: &str, labels: &[(&str, &str)]) -> f64 {
    registry
        .gather()
        .iter()
        .filter(|f| f.name() == name)
        .flat_map(|f| f.get_metric().iter())
        .filter(|m| {
            labels.iter().all(|(k, v)| {
                m.get_label()
                    .iter()
                    .any(|l| l.name() == *k && l.value() == *v)
            })
        })
        // The unused kinds read 0; a histogram counts its observations.
        .map(|m| {
            m.get_counter().get_value()
                + m.get_gauge().get_value()
                + m.get_histogram().get_sample_count() as f64
        })
        .sum()
}

/// Starts replica `id` with its own client `api.client(id)` and a fresh registry; with
/// `election` the fast profile ([`fast_election`]), else it leads from the start.
///
/// # Panics
/// If the replica fails before it starts its elector.
pub async fn spawn_replica(api: &ApiServer, id: &str, election: bool) -> ReplicaHandle {
    spawn_replica_with(api, id, election, run_config(id)).await
}

/// [`spawn_replica`] with these scheduler settings (e.g. another policy).
///
/// # Panics
/// If the replica fails before it starts its elector.
pub async fn spawn_replica_with(
    api: &ApiServer,
    id: &str,
    election: bool,
    run: RunConfig,
) -> ReplicaHandle {
    let cfg = ReplicaConfig {
        run,
        election: election.then(|| fast_election(id)),
        election_client: None,
    };
    spawn_replica_with_config(api, id, cfg, prometheus::Registry::new()).await
}

/// The file watch of the hot-reload tests: a 50 ms debounce and no periodic re-read within a
/// test (an hour), so that only the file-system watch can explain a reload.
pub fn reload_test_config() -> ReloadConfig {
    ReloadConfig {
        debounce: Duration::from_millis(50),
        resync_period: Duration::from_secs(3600),
        ..ReloadConfig::default()
    }
}

/// Starts replica `id` leading from the start (no election) with `run`, taking its policy or
/// configuration updates from `updates` (a reload watch counting in `registry`, which the
/// handle's metrics then read).
///
/// # Panics
/// If the replica fails before it starts.
pub async fn spawn_reloading_replica(
    api: &ApiServer,
    id: &str,
    mut run: RunConfig,
    updates: PolicyUpdates,
    registry: prometheus::Registry,
) -> ReplicaHandle {
    run.policy_updates = Some(updates);
    let cfg = ReplicaConfig {
        run,
        election: None,
        election_client: None,
    };
    spawn_replica_with_config(api, id, cfg, registry).await
}

/// Starts replica `id` with its own client `api.client(id)`, the given settings and
/// `registry` (which may already hold metrics, e.g. the policy reload's).
///
/// # Panics
/// If the replica fails before it starts its elector.
pub async fn spawn_replica_with_config(
    api: &ApiServer,
    id: &str,
    cfg: ReplicaConfig,
    registry: prometheus::Registry,
) -> ReplicaHandle {
    let client = ApiClients::unlimited(api.client(id));
    let (shutdown_tx, shutdown_rx) = oneshot::channel::<()>();
    let (probes_tx, probes_rx) = oneshot::channel::<ReplicaProbes>();
    let reg = registry.clone();
    let join = tokio::spawn(async move {
        run_replica(
            client,
            cfg,
            &reg,
            move |p| {
                let _ = probes_tx.send(p);
            },
            async move {
                let _ = shutdown_rx.await;
            },
        )
        .await
    });
    let probes = probes_rx.await.expect("replica started");
    ReplicaHandle {
        id: id.to_string(),
        shutdown_tx: Some(shutdown_tx),
        join,
        probes,
        registry,
    }
}
