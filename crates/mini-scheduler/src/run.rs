//! `mini-scheduler run`: the scheduler against a real API server — flags with kube-scheduler's
//! names, the kube client, leader election, the secure admin endpoint ([`crate::serving`]) and
//! signal handling.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use clap::ArgAction;
use election::{LeaderElectionConfig, default_identity, pod_namespace};
use prometheus::{Encoder, Registry, TextEncoder};
use scheduler::config::{LoadedConfig, load_config_file};
use scheduler::controller::reload::{ReloadConfig, watch_config_file, watch_policy_file};
use scheduler::controller::replica::{ReplicaConfig, ReplicaProbes, run_replica};
use scheduler::controller::{ApiClients, RunConfig, RunOutcome};
use scheduler::escape::escape_control_line;
use scheduler::policy;
use scheduler::profile::{PolicySource, SchedulerProfile};
use scheduler::queue::QueueConfig;
use tracing::{error, info, warn};

use crate::flags::parse_duration;
use crate::{EXIT_BAD_INPUT, load_profile_or_exit};

#[cfg(test)]
#[path = "kubeconfig_fuzz.rs"]
mod kubeconfig_fuzz;

/// Exit code when leadership is lost (kube-scheduler's `klog.FlushAndExit(..., 1)`).
const EXIT_LEADERSHIP_LOST: u8 = 1;

/// Flags of `mini-scheduler run`; each can also come from the environment variable shown.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Path to a kubeconfig; without it the in-cluster configuration (or $KUBECONFIG) is used.
    #[arg(long, env = "MINI_SCHEDULER_KUBECONFIG", value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// Pods whose spec.schedulerName is this are scheduled by this scheduler.
    #[arg(
        long,
        env = "MINI_SCHEDULER_SCHEDULER_NAME",
        default_value = "mini-scheduler"
    )]
    pub scheduler_name: String,
    /// Legacy Policy file (JSON or YAML); absent = the v1.22 DefaultProvider plugins this build
    /// implements. Watched: a valid new version is swapped in between scheduling cycles, an
    /// invalid one is logged and counted (scheduler_policy_reloads_total{result="failure"})
    /// while the running policy stays.
    #[arg(long, env = "MINI_SCHEDULER_POLICY_CONFIG_FILE", value_name = "FILE")]
    pub policy_config_file: Option<PathBuf>,
    /// KubeSchedulerConfiguration file (kubescheduler.config.k8s.io/v1beta2, v1beta3 or v1)
    /// instead of a Policy: one profile per schedulerName (pods are routed by their
    /// spec.schedulerName), percentageOfNodesToScore, parallelism, podInitialBackoffSeconds /
    /// podMaxBackoffSeconds, extenders, leaderElection and clientConnection. As in
    /// kube-scheduler v1.22, the file's settings are used and the flags they replace
    /// (--kubeconfig, --scheduler-name, --leader-elect*, --kube-api-qps/-burst,
    /// --percentage-of-nodes-to-score, --parallelism) are ignored, with a warning for each one given.
    /// Watched like --policy-config-file: a valid edit applies from the next scheduling cycle
    /// (leaderElection, clientConnection, parallelism and the set of schedulerNames need a
    /// restart).
    #[arg(
        long,
        env = "MINI_SCHEDULER_CONFIG",
        value_name = "FILE",
        conflicts_with = "policy_config_file"
    )]
    pub config: Option<PathBuf>,
    /// Start a leader election client and gain leadership before scheduling.
    #[arg(long, env = "MINI_SCHEDULER_LEADER_ELECT", default_value_t = true, action = ArgAction::Set)]
    pub leader_elect: bool,
    /// How long a non-leader waits after observing a renewal before it may take over.
    #[arg(long, env = "MINI_SCHEDULER_LEADER_ELECT_LEASE_DURATION", default_value = "15s", value_parser = parse_duration)]
    pub leader_elect_lease_duration: Duration,
    /// How long the leader keeps trying to renew before it stops leading; must be less than the
    /// lease duration.
    #[arg(long, env = "MINI_SCHEDULER_LEADER_ELECT_RENEW_DEADLINE", default_value = "10s", value_parser = parse_duration)]
    pub leader_elect_renew_deadline: Duration,
    /// Wait between acquire and renew attempts.
    #[arg(long, env = "MINI_SCHEDULER_LEADER_ELECT_RETRY_PERIOD", default_value = "2s", value_parser = parse_duration)]
    pub leader_elect_retry_period: Duration,
    /// Name of the Lease object used for leader election.
    #[arg(
        long,
        env = "MINI_SCHEDULER_LEADER_ELECT_RESOURCE_NAME",
        default_value = "mini-scheduler"
    )]
    pub leader_elect_resource_name: String,
    /// Namespace of the Lease (default: this pod's namespace, else `default`).
    #[arg(long, env = "MINI_SCHEDULER_LEADER_ELECT_RESOURCE_NAMESPACE")]
    pub leader_elect_resource_namespace: Option<String>,
    /// Type of lock object; only `leases` exists.
    #[arg(
        long,
        env = "MINI_SCHEDULER_LEADER_ELECT_RESOURCE_LOCK",
        default_value = "leases"
    )]
    pub leader_elect_resource_lock: String,
    /// Client-side rate limit, requests per second, of each of the three API clients, as
    /// kube-scheduler's clientConnection.qps: the scheduling client (lists, watches, GETs,
    /// bindings, status patches), the event client and the leader-election client each have a
    /// token bucket of their own.
    #[arg(long, env = "MINI_SCHEDULER_KUBE_API_QPS", default_value_t = 50.0)]
    pub kube_api_qps: f64,
    /// Burst allowed above --kube-api-qps (per client, like the QPS).
    #[arg(long, env = "MINI_SCHEDULER_KUBE_API_BURST", default_value_t = 100)]
    pub kube_api_burst: u32,
    /// percentageOfNodesToScore: 0 = adaptive, 100 = all nodes.
    #[arg(long, env = "MINI_SCHEDULER_PERCENTAGE_OF_NODES_TO_SCORE", default_value_t = 0, value_parser = clap::value_parser!(i32).range(0..=100))]
    pub percentage_of_nodes_to_score: i32,
    /// parallelism: workers that filter and score the nodes of a cycle (kube-scheduler's
    /// default 16; at most the machine's cores less one run at once, the other is left to the
    /// API traffic; 1 = the scheduling thread alone).
    /// Placements are the same for any value.
    #[arg(long, env = "MINI_SCHEDULER_PARALLELISM", default_value_t = scheduler::schedule_one::DEFAULT_PARALLELISM, value_parser = parse_parallelism)]
    pub parallelism: usize,
    /// Among equally scored nodes pick at random (kube-scheduler's selectHost), the lowest
    /// node name, or the first in a fixed pseudo-random order of the node names (seed 0: the
    /// same order in every replica). The GPU scorers (config/policies/gpu/) tie many nodes:
    /// with FGD a deterministic choice leaves about half as many GPUs stranded (README, GPU
    /// placement).
    #[arg(long, env = "MINI_SCHEDULER_TIE_BREAK", value_enum, default_value_t = crate::TieBreakArg::Random)]
    pub tie_break: crate::TieBreakArg,
    /// The secure port of /metrics, /healthz, /livez and /readyz.
    #[command(flatten)]
    pub serving: crate::serving::ServingArgs,
}

/// `--parallelism`: an integer ≥ 1.
///
/// # Errors
/// A message naming the value when it is not a positive integer.
pub fn parse_parallelism(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "invalid value {s:?}: should be an integer value greater than zero"
        )),
    }
}

#[derive(Clone)]
struct Admin {
    registry: Registry,
    probes: ReplicaProbes,
}

async fn metrics(State(a): State<Admin>) -> (StatusCode, String) {
    let mut buf = Vec::new();
    match TextEncoder::new().encode(&a.registry.gather(), &mut buf) {
        Ok(()) => (StatusCode::OK, String::from_utf8_lossy(&buf).into_owned()),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

async fn healthz(State(a): State<Admin>) -> (StatusCode, String) {
    match a.probes.health.as_ref().map(|h| h.check()) {
        Some(Err(e)) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("[-]leaderElection failed: {e}\nhealthz check failed\n"),
        ),
        _ => (StatusCode::OK, "ok".into()),
    }
}

async fn livez() -> (StatusCode, String) {
    (StatusCode::OK, "ok".into())
}

async fn readyz(State(a): State<Admin>) -> (StatusCode, String) {
    if a.probes
        .status
        .caches_synced
        .load(std::sync::atomic::Ordering::Relaxed)
    {
        (StatusCode::OK, "ok".into())
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "[-]caches not synced yet\nreadyz check failed\n".into(),
        )
    }
}

/// The client configuration of `--kubeconfig FILE`: its current context. Errors name the file
/// and say what kube could not read in it.
pub(crate) async fn kubeconfig_file(path: &std::path::Path) -> Result<kube::Config, String> {
    kubeconfig_flag("--kubeconfig", path).await
}

/// The client configuration of the kubeconfig `path` given with `flag`; errors name both.
async fn kubeconfig_flag(flag: &str, path: &std::path::Path) -> Result<kube::Config, String> {
    let kc = kube::config::Kubeconfig::read_from(path)
        .map_err(|e| format!("{flag} {}: {e}", path.display()))?;
    kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
        .await
        .map_err(|e| format!("{flag} {}: {e}", path.display()))
}

/// The secure port's delegated authentication and authorization: TokenReviews through
/// `--authentication-kubeconfig`, SubjectAccessReviews through `--authorization-kubeconfig`,
/// each defaulting to the scheduler's own client configuration `config`.
async fn delegated_auth(
    args: &crate::serving::ServingArgs,
    config: &kube::Config,
) -> Result<std::sync::Arc<crate::serving::DelegatedAuth>, String> {
    let mut clients = Vec::new();
    for (flag, path) in [
        (
            "--authentication-kubeconfig",
            &args.authentication_kubeconfig,
        ),
        ("--authorization-kubeconfig", &args.authorization_kubeconfig),
    ] {
        let mut c = match path {
            Some(p) => kubeconfig_flag(flag, p).await?,
            None => config.clone(),
        };
        if path.is_some() {
            c.headers.extend(
                config
                    .headers
                    .iter()
                    .filter(|(k, _)| k == axum::http::header::USER_AGENT)
                    .cloned(),
            );
        }
        let c = scheduler::controller::ratelimit::without_unused_trust_store(c);
        clients.push(kube::Client::try_from(c).map_err(|e| format!("{flag}: {e}"))?);
    }
    let authz = clients.pop().ok_or("no authorization client")?;
    let authn = clients.pop().ok_or("no authentication client")?;
    Ok(std::sync::Arc::new(crate::serving::DelegatedAuth::new(
        authn, authz, args,
    )))
}

async fn client_config(args: &RunArgs) -> Result<kube::Config, String> {
    match &args.kubeconfig {
        Some(path) => kubeconfig_file(path).await,
        None => kube::Config::infer()
            .await
            .map_err(|e| format!("no --kubeconfig and no in-cluster configuration: {e}")),
    }
}

/// What `--config` sets in place of the flags: each flag below takes the file's value (or
/// kube-scheduler's default for it), as v1.22's `Options.ApplyTo` uses a loaded file's
/// `ComponentConfig` whole (`cmd/kube-scheduler/app/options/options.go`: "use the loaded config
/// file only"). Returns the flags given with another value than their default, now ignored.
fn apply_config(args: &mut RunArgs, loaded: &LoadedConfig) -> Vec<&'static str> {
    let defaults = <RunArgs as clap::FromArgMatches>::from_arg_matches(
        &<RunArgs as clap::Args>::augment_args(clap::Command::new("run"))
            .no_binary_name(true)
            .get_matches_from(std::iter::empty::<String>()),
    );
    let mut ignored = Vec::new();
    if let Ok(d) = defaults {
        let checks: [(&'static str, bool); 12] = [
            ("--kubeconfig", args.kubeconfig != d.kubeconfig),
            ("--scheduler-name", args.scheduler_name != d.scheduler_name),
            ("--leader-elect", args.leader_elect != d.leader_elect),
            (
                "--leader-elect-lease-duration",
                args.leader_elect_lease_duration != d.leader_elect_lease_duration,
            ),
            (
                "--leader-elect-renew-deadline",
                args.leader_elect_renew_deadline != d.leader_elect_renew_deadline,
            ),
            (
                "--leader-elect-retry-period",
                args.leader_elect_retry_period != d.leader_elect_retry_period,
            ),
            (
                "--leader-elect-resource-name",
                args.leader_elect_resource_name != d.leader_elect_resource_name,
            ),
            (
                "--leader-elect-resource-namespace",
                args.leader_elect_resource_namespace != d.leader_elect_resource_namespace,
            ),
            (
                "--leader-elect-resource-lock",
                args.leader_elect_resource_lock != d.leader_elect_resource_lock,
            ),
            (
                "--kube-api-qps / --kube-api-burst",
                args.kube_api_qps != d.kube_api_qps || args.kube_api_burst != d.kube_api_burst,
            ),
            (
                "--percentage-of-nodes-to-score",
                args.percentage_of_nodes_to_score != d.percentage_of_nodes_to_score,
            ),
            ("--parallelism", args.parallelism != d.parallelism),
        ];
        ignored = checks.iter().filter(|c| c.1).map(|c| c.0).collect();
    }
    let le = &loaded.leader_election;
    let ns = |v: i64| Duration::from_nanos(u64::try_from(v).unwrap_or(0));
    args.leader_elect = le.leader_elect;
    args.leader_elect_lease_duration = ns(le.lease_duration);
    args.leader_elect_renew_deadline = ns(le.renew_deadline);
    args.leader_elect_retry_period = ns(le.retry_period);
    args.leader_elect_resource_lock = le.resource_lock.clone();
    args.leader_elect_resource_name = le.resource_name.clone();
    args.leader_elect_resource_namespace = Some(le.resource_namespace.clone());
    let cc = &loaded.client_connection;
    args.kubeconfig = Some(PathBuf::from(&cc.kubeconfig)).filter(|p| !p.as_os_str().is_empty());
    args.kube_api_qps = f64::from(cc.qps);
    args.kube_api_burst = u32::try_from(cc.burst).unwrap_or(0);
    args.percentage_of_nodes_to_score = loaded.percentage_of_nodes_to_score;
    args.parallelism = loaded.parallelism();
    if let Some(first) = loaded.profiles.first() {
        args.scheduler_name = first.scheduler_name.clone();
    }
    ignored
}

/// The queue's backoff of a loaded configuration (`podInitialBackoffSeconds`,
/// `podMaxBackoffSeconds`).
fn queue_config(loaded: &LoadedConfig) -> QueueConfig {
    let secs = |v: i64| Duration::from_secs(u64::try_from(v).unwrap_or(0));
    QueueConfig {
        pod_initial_backoff: secs(loaded.pod_initial_backoff_seconds),
        pod_max_backoff: secs(loaded.pod_max_backoff_seconds),
        ..QueueConfig::default()
    }
}

/// The profiles of `--config`: the first, and the others (routed by schedulerName).
fn config_profiles(
    path: &std::path::Path,
    loaded: &LoadedConfig,
) -> Result<(SchedulerProfile, Vec<SchedulerProfile>), ExitCode> {
    let mut profiles = SchedulerProfile::from_config(loaded, &path.display().to_string())
        .map_err(|e| {
            eprintln!("error: {e}");
            ExitCode::from(EXIT_BAD_INPUT)
        })?
        .into_iter();
    // The loader refuses a configuration without profiles (kube-scheduler defaults one).
    let first = profiles.next().ok_or_else(|| {
        eprintln!("error: {}: no profiles", path.display());
        ExitCode::from(EXIT_BAD_INPUT)
    })?;
    Ok((first, profiles.collect()))
}

/// `mini-scheduler run`, with the policy resolved under `gates` (`--feature-gates`).
pub async fn run(mut args: RunArgs, gates: &policy::FeatureGates) -> ExitCode {
    let loaded_config = match args.config.clone() {
        Some(path) => match load_config_file(&path) {
            Ok(l) => {
                for w in &l.warnings {
                    warn!("{}", escape_control_line(w));
                }
                for flag in apply_config(&mut args, &l) {
                    warn!(
                        "{flag} is ignored: --config {} sets it (kube-scheduler v1.22 uses a configuration file's settings only)",
                        path.display()
                    );
                }
                Some(l)
            }
            Err(e) => {
                eprintln!("error: {}", escape_control_line(&e.to_string()));
                return ExitCode::from(EXIT_BAD_INPUT);
            }
        },
        None => None,
    };
    if args.leader_elect_resource_lock != "leases" {
        eprintln!(
            "error: --leader-elect-resource-lock={:?}: only \"leases\" is supported (endpoints and configmaps locks were removed from client-go in Kubernetes 1.24)",
            args.leader_elect_resource_lock
        );
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    if args.kube_api_qps.is_nan() || args.kube_api_qps <= 0.0 || args.kube_api_burst == 0 {
        eprintln!(
            "error: --kube-api-qps={} and --kube-api-burst={} must be positive",
            args.kube_api_qps, args.kube_api_burst
        );
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    let (profile, profile_percentage, other_profiles, queue) = match (&args.config, &loaded_config)
    {
        (Some(path), Some(loaded)) => match config_profiles(path, loaded) {
            Ok((first, others)) => (
                first.profile,
                first.percentage_of_nodes_to_score,
                others,
                queue_config(loaded),
            ),
            Err(code) => return code,
        },
        _ => {
            let source = match &args.policy_config_file {
                Some(path) => PolicySource::File(path),
                None => PolicySource::DefaultProvider,
            };
            match load_profile_or_exit(source, gates) {
                Ok(l) => (l.profile, None, Vec::new(), QueueConfig::default()),
                Err(code) => return code,
            }
        }
    };
    if args.policy_config_file.is_none() && args.config.is_none() {
        for n in &profile.policy.notes {
            info!("{n}");
        }
    }
    let identity = default_identity();
    let election = args.leader_elect.then(|| LeaderElectionConfig {
        lease_duration: args.leader_elect_lease_duration,
        renew_deadline: args.leader_elect_renew_deadline,
        retry_period: args.leader_elect_retry_period,
        identity: identity.clone(),
        lease_name: args.leader_elect_resource_name.clone(),
        lease_namespace: args
            .leader_elect_resource_namespace
            .clone()
            .unwrap_or_else(pod_namespace),
        release_on_cancel: true,
    });
    if let Some(e) = &election
        && let Err(err) = e.validate()
    {
        eprintln!("error: leader election: {err}");
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    let mut config = match client_config(&args).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let agent = format!("mini-scheduler/{} ({identity})", env!("CARGO_PKG_VERSION"));
    if let Ok(v) = axum::http::HeaderValue::from_str(&agent) {
        config.headers.push((axum::http::header::USER_AGENT, v));
    }
    // kube-scheduler's createClients: the scheduling client, the event client and the
    // leader-election client, each with a --kube-api-qps/--kube-api-burst bucket of its own.
    // The scheduling client's reads wait in a client layer; fenced writes (bindings, events)
    // take their token from their client's bucket before the fence check.
    let auth = match delegated_auth(&args.serving, &config).await {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let registry = Registry::new();
    let rest_metrics = match register_process_and_client_metrics(&registry) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("error: registering metrics: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (qps, burst) = (args.kube_api_qps, args.kube_api_burst);
    let clients = ApiClients::with_metrics(config.clone(), qps, burst, Some(&rest_metrics))
        .and_then(|scheduler| {
            Ok((
                scheduler,
                ApiClients::leader_election_client_with_metrics(
                    config,
                    qps,
                    burst,
                    Some(&rest_metrics),
                )?,
            ))
        });
    let (client, election_client) = match clients {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: building the API client: {e}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let listener = match crate::serving::bind(&args.serving).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    // Hot reload of the policy or configuration file (a ConfigMap volume updates it in
    // place); the watcher lives as long as this function.
    let cfg = ReloadConfig {
        feature_gates: *gates,
        ..ReloadConfig::default()
    };
    let watched = match (&args.policy_config_file, &args.config, loaded_config) {
        (Some(path), _, _) => Some(watch_policy_file(
            path,
            profile.policy.clone(),
            &registry,
            cfg,
        )),
        (None, Some(path), Some(loaded)) => Some(watch_config_file(path, loaded, &registry, cfg)),
        _ => None,
    };
    let (policy_updates, _policy_watcher) = match watched.transpose() {
        Ok(Some((updates, watcher))) => (Some(updates), Some(watcher)),
        Ok(None) => (None, None),
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let cfg = ReplicaConfig {
        run: RunConfig {
            scheduler_name: args.scheduler_name.clone(),
            identity: identity.clone(),
            profile,
            other_profiles,
            percentage_of_nodes_to_score: args.percentage_of_nodes_to_score,
            profile_percentage_of_nodes_to_score: profile_percentage,
            parallelism: args.parallelism,
            queue,
            bind_concurrency: 16,
            shutdown_grace: Duration::from_secs(10),
            seed: rand_seed(),
            tie_break: args.tie_break.tie_break(0),
            policy_updates,
        },
        election,
        election_client: Some(election_client),
    };
    info!(identity = %identity, scheduler = %args.scheduler_name, "Starting mini-scheduler");
    let admin_registry = registry.clone();
    let on_start = move |probes: ReplicaProbes| {
        let app = Router::new()
            .route("/metrics", get(metrics))
            .route("/healthz", get(healthz))
            .route("/livez", get(livez))
            .route("/readyz", get(readyz))
            .with_state(Admin {
                registry: admin_registry,
                probes,
            });
        tokio::spawn(crate::serving::serve(listener, app, auth));
    };
    let outcome = run_replica(client, cfg, &registry, on_start, shutdown_signal()).await;
    match outcome {
        Ok(RunOutcome::Shutdown) => ExitCode::SUCCESS,
        Ok(RunOutcome::LeadershipLost) => ExitCode::from(EXIT_LEADERSHIP_LOST),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

/// The `process_*` family (the prometheus crate's process collector: CPU seconds, resident
/// and virtual memory, open and max file descriptors, start time, as client_golang's process
/// collector on Linux) and client-go's `rest_client_*` families, registered into `registry`.
fn register_process_and_client_metrics(
    registry: &Registry,
) -> Result<scheduler::controller::metrics::RestClientMetrics, prometheus::Error> {
    #[cfg(target_os = "linux")]
    registry.register(Box::new(
        prometheus::process_collector::ProcessCollector::for_self(),
    ))?;
    scheduler::controller::metrics::RestClientMetrics::new(registry)
}

fn rand_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// Resolves on the first SIGTERM or Ctrl-C; a second signal exits at once with code 1.
async fn shutdown_signal() {
    wait_signal().await;
    info!("Received termination signal; shutting down (a second signal exits immediately)");
    tokio::spawn(async {
        wait_signal().await;
        error!("Second signal: exiting now");
        std::process::exit(1);
    });
}

async fn wait_signal() {
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = tokio::signal::ctrl_c().await;
                    return;
                }
            };
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
