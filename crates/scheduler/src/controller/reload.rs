//! Hot reload: watch `--policy-config-file` or `--config`, decode and validate every new version,
//! and hand valid ones to the scheduling loop, which swaps them in between two scheduling cycles.
//!
//! kube-scheduler v1.22 read its Policy (`initPolicyFromFile`) and its configuration
//! (`Options.Config`) once at start; this is mini-scheduler's own addition, shaped for a ConfigMap mounted as a volume: the kubelet
//! updates such a volume by writing a new timestamped directory and renaming the `..data`
//! symlink over the old one, so the file's *directory* is watched (inotify through `notify`),
//! not the file, and the path is re-resolved on every read. A `subPath` mount never updates
//! (a kubelet limitation): mount the whole ConfigMap.
//!
//! - Events are debounced ([`ReloadConfig::debounce`]): a swap produces several, an editor's
//!   save produces a truncate and a write. After the quiet period the file is read once.
//! - A periodic re-read ([`ReloadConfig::resync_period`]) catches changes the watch cannot see
//!   (a symlink into another directory, a file system without inotify).
//! - Bytes equal to the policy in force, or to the last rejected version, are ignored.
//! - A new version is decoded, validated and built exactly as at start ([`Profile::load`]); if
//!   it is valid, the built [`Profile`] is published on a `tokio::sync::watch` channel
//!   ([`PolicyUpdates`]) and counted as
//!   `scheduler_policy_reloads_total{result="success"}`; if not, the error (which starts with
//!   `file:line:column:`) is logged, `scheduler_policy_reloads_total{result="failure"}` is
//!   incremented, `scheduler_policy_file_rejected` is set to 1, and the running policy stays.
//!   Nothing in this module panics or exits on a bad file.
//! - A `--config` file ([`watch_config_file`]) is decoded strictly and validated exactly as at
//!   start ([`crate::config::parse_config`]); the same metrics count its reloads. A valid
//!   version replaces, from the next cycle: every profile whose `schedulerName` is served (its
//!   plugins, weights and `pluginConfig`; pods are still routed by `schedulerName`), the
//!   `extenders`, `percentageOfNodesToScore` (global and per profile) and
//!   `podInitialBackoffSeconds` / `podMaxBackoffSeconds` (pods already in backoffQ are re-timed).
//!   What only a restart can change ([`restart_required`]) keeps its value in force, with a
//!   warning naming the field, the value in force and the file's: `leaderElection` (the elector
//!   and its Lease run with the values it started with; changing the Lease name or namespace in
//!   flight would let two replicas lead), `clientConnection` (the API clients and their rate
//!   limiters are built at start), `parallelism` (the scoring thread pool is sized at start),
//!   and the *set* of `profiles[*].schedulerName` (the pending-pod watch selects pods by those
//!   names and events report under them): a profile whose name is new is not served, a served
//!   name the file no longer has keeps the profile in force. The order of the profiles may
//!   change freely. `healthzBindAddress` / `metricsBindAddress` are never served (warned at load).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use prometheus::{Gauge, IntCounterVec, IntGauge, Opts, Registry};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tracing::{error, info, warn};

use crate::config::{LoadedConfig, format_go_duration, parse_config};
use crate::policy::{FeatureGates, PolicyError, ResolvedPolicy};
use crate::profile::{PolicySource, Profile, SchedulerProfile};

/// Quiet period after the last file-system event before the file is read.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(500);
/// Period of the unconditional re-read.
pub const DEFAULT_RESYNC_PERIOD: Duration = Duration::from_secs(60);

/// A validated new version, ready to be swapped in, built as at start.
#[derive(Debug)]
pub struct PolicyUpdate {
    /// What it replaces.
    pub change: Change,
    /// The file it was read from.
    pub source: PathBuf,
    /// 1 for the first reload since start, then 2, 3, ...
    pub generation: u64,
}

/// What a reloaded file replaces.
#[derive(Debug)]
pub enum Change {
    /// A Policy (`--policy-config-file`): the plugins, their arguments and the extenders of the
    /// one profile.
    Policy(Box<Profile>),
    /// A `KubeSchedulerConfiguration` (`--config`).
    Config(ConfigUpdate),
}

/// What a reloaded `KubeSchedulerConfiguration` replaces (see the module docs).
#[derive(Debug)]
pub struct ConfigUpdate {
    /// The file's profiles whose `schedulerName` is served (every name served since start), in
    /// file order, each with its framework, `pluginConfig` arguments, extenders and own
    /// `percentageOfNodesToScore`: each replaces the profile of its name.
    pub profiles: Vec<SchedulerProfile>,
    /// `percentageOfNodesToScore` (0 = adaptive) for profiles without their own.
    pub percentage_of_nodes_to_score: i32,
    /// `podInitialBackoffSeconds`, as a duration.
    pub pod_initial_backoff: Duration,
    /// `podMaxBackoffSeconds`, as a duration.
    pub pod_max_backoff: Duration,
    /// The fields the file changes that only a restart applies (their values in force stay),
    /// each `field: in force <value>, in the file <value>` ([`restart_required`]).
    pub restart_required: Vec<String>,
}

/// The receiving end the scheduling loop polls between cycles; `None` until the first reload.
pub type PolicyUpdates = watch::Receiver<Option<Arc<PolicyUpdate>>>;

/// Timing of the watcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReloadConfig {
    /// Quiet period after the last event before the file is read ([`DEFAULT_DEBOUNCE`]).
    pub debounce: Duration,
    /// Period of the unconditional re-read ([`DEFAULT_RESYNC_PERIOD`]).
    pub resync_period: Duration,
    /// The process's `--feature-gates`, applied to every version read, as at start.
    pub feature_gates: FeatureGates,
}

impl Default for ReloadConfig {
    fn default() -> Self {
        ReloadConfig {
            debounce: DEFAULT_DEBOUNCE,
            resync_period: DEFAULT_RESYNC_PERIOD,
            feature_gates: FeatureGates::default(),
        }
    }
}

/// The reload metrics (no kube-scheduler equivalent: it had no hot reload).
#[derive(Clone)]
pub struct PolicyReloadMetrics {
    /// `scheduler_policy_reloads_total{result="success"|"failure"}`: versions of the file
    /// (`--policy-config-file` or `--config`) decoded after a change, by outcome.
    pub reloads: IntCounterVec,
    /// `scheduler_policy_last_successful_reload_timestamp_seconds`: Unix time (seconds) at
    /// which the policy in force was loaded (at start, then at each successful reload).
    pub last_success: Gauge,
    /// `scheduler_policy_file_rejected`: 1 while the file on disk is invalid and an older
    /// policy is in force, else 0.
    pub rejected: IntGauge,
}

impl PolicyReloadMetrics {
    /// Create and register the families; sets the timestamp to now (the initial load).
    ///
    /// # Errors
    /// A prometheus error when a family with the same name is already registered.
    pub fn new(registry: &Registry) -> Result<PolicyReloadMetrics, prometheus::Error> {
        let m = PolicyReloadMetrics {
            reloads: IntCounterVec::new(
                Opts::new(
                    "scheduler_policy_reloads_total",
                    "Number of times a changed policy config file (--policy-config-file or --config) was decoded and validated, by result: 'success' (swapped in) or 'failure' (rejected; the running policy stays).",
                ),
                &["result"],
            )?,
            last_success: Gauge::new(
                "scheduler_policy_last_successful_reload_timestamp_seconds",
                "Unix time in seconds at which the policy in force was loaded (at start or by the last successful reload).",
            )?,
            rejected: IntGauge::new(
                "scheduler_policy_file_rejected",
                "1 while the policy config file (--policy-config-file or --config) on disk is invalid and an older policy is in force, else 0.",
            )?,
        };
        registry.register(Box::new(m.reloads.clone()))?;
        registry.register(Box::new(m.last_success.clone()))?;
        registry.register(Box::new(m.rejected.clone()))?;
        // Both label values exist from the start, so that `increase()` sees the first failure.
        m.reloads.with_label_values(&["success"]);
        m.reloads.with_label_values(&["failure"]);
        m.last_success.set(unix_now());
        Ok(m)
    }
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Why the watcher could not start (or watch).
#[derive(Debug, thiserror::Error)]
pub enum ReloadError {
    /// The file-system watch could not be set up.
    #[error("watching {} for policy changes: {source}", dir.display())]
    Watch {
        /// The directory watched.
        dir: PathBuf,
        /// The notify error.
        #[source]
        source: notify::Error,
    },
    /// The metrics could not be registered.
    #[error("registering policy reload metrics: {0}")]
    Metrics(#[from] prometheus::Error),
}

/// What one [`PolicyReloader::check`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReloadOutcome {
    /// Same bytes as the policy in force or as the last rejected version: nothing done.
    Unchanged,
    /// A new valid policy was published (its generation).
    Applied(u64),
    /// The file could not be read, decoded or validated; the message names file:line:column.
    Rejected(String),
}

/// The file a [`PolicyReloader`] reads, and what is in force from it.
enum Watched {
    /// `--policy-config-file`, every version resolved under the process's `--feature-gates`.
    Policy {
        /// The policy in force at start (compared once, by the first check).
        initial: Option<Box<ResolvedPolicy>>,
        gates: FeatureGates,
    },
    /// `--config`.
    Config {
        /// The configuration loaded at start: its restart-only fields stay in force.
        started: Box<LoadedConfig>,
        /// The first check has not run yet (it compares the file with `started`).
        first: bool,
    },
}

/// Reads the policy (or configuration) file and publishes each new valid version. Pure of
/// timing: [`Self::run`] decides *when* to [`Self::check`].
pub struct PolicyReloader {
    path: PathBuf,
    watched: Watched,
    /// Bytes of the version in force, once known.
    running_bytes: Option<Vec<u8>>,
    /// Bytes of the last rejected version.
    rejected_bytes: Option<Vec<u8>>,
    generation: u64,
    tx: watch::Sender<Option<Arc<PolicyUpdate>>>,
    metrics: PolicyReloadMetrics,
}

impl PolicyReloader {
    /// A reloader for the Policy file `path`, whose policy in force is `running` (loaded from
    /// that file at start and resolved under `gates`, which apply to every version read). The
    /// first [`Self::check`] records the file's bytes without publishing anything if they still
    /// resolve to `running`.
    pub fn new(
        path: PathBuf,
        running: ResolvedPolicy,
        metrics: PolicyReloadMetrics,
        gates: FeatureGates,
    ) -> (PolicyReloader, PolicyUpdates) {
        Self::with(
            path,
            Watched::Policy {
                initial: Some(Box::new(running)),
                gates,
            },
            metrics,
        )
    }

    /// A reloader for the `KubeSchedulerConfiguration` file `path`, whose configuration in
    /// force is `running` (loaded from that file at start). The first [`Self::check`] records
    /// the file's bytes without publishing anything if they still load to `running`.
    pub fn for_config(
        path: PathBuf,
        running: LoadedConfig,
        metrics: PolicyReloadMetrics,
    ) -> (PolicyReloader, PolicyUpdates) {
        Self::with(
            path,
            Watched::Config {
                started: Box::new(running),
                first: true,
            },
            metrics,
        )
    }

    fn with(
        path: PathBuf,
        watched: Watched,
        metrics: PolicyReloadMetrics,
    ) -> (PolicyReloader, PolicyUpdates) {
        let (tx, rx) = watch::channel(None);
        (
            PolicyReloader {
                path,
                watched,
                running_bytes: None,
                rejected_bytes: None,
                generation: 0,
                tx,
                metrics,
            },
            rx,
        )
    }

    /// Read the file once; publish it if it is new and valid, count and log it if invalid.
    pub fn check(&mut self) -> ReloadOutcome {
        let bytes = match read_bytes(&self.path) {
            Ok(b) => b,
            Err(e) => return self.reject(None, e.to_string()),
        };
        if self.running_bytes.as_deref() == Some(&bytes[..])
            || self.rejected_bytes.as_deref() == Some(&bytes[..])
        {
            return ReloadOutcome::Unchanged;
        }
        let text = match std::str::from_utf8(&bytes) {
            Ok(t) => t,
            Err(e) => {
                let e = PolicyError::ReadFile {
                    path: self.path.clone(),
                    source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
                };
                return self.reject(Some(bytes), e.to_string());
            }
        };
        let name = self.path.display().to_string();
        let built = match &mut self.watched {
            Watched::Policy { initial, gates } => load_policy(&name, text, initial, gates),
            Watched::Config { started, first } => {
                load_config(&name, text, started, std::mem::take(first))
            }
        };
        let change = match built {
            Ok(Some(change)) => change,
            // The file the process started with.
            Ok(None) => {
                self.running_bytes = Some(bytes);
                return ReloadOutcome::Unchanged;
            }
            Err(message) => return self.reject(Some(bytes), message),
        };
        self.generation += 1;
        self.running_bytes = Some(bytes);
        self.rejected_bytes = None;
        self.metrics.reloads.with_label_values(&["success"]).inc();
        self.metrics.last_success.set(unix_now());
        self.metrics.rejected.set(0);
        match &change {
            Change::Policy(profile) => info!(
                file = %self.path.display(),
                generation = self.generation,
                filters = %plugin_list(profile.policy.filters.iter().map(|f| f.plugin)),
                scores = %plugin_list(profile.policy.scores.iter().map(|s| s.plugin)),
                "Policy file changed and is valid; it applies from the next scheduling cycle"
            ),
            Change::Config(c) => {
                for r in &c.restart_required {
                    warn!(
                        file = %self.path.display(),
                        "{r}: takes effect only after a restart; the value in force stays"
                    );
                }
                info!(
                    file = %self.path.display(),
                    generation = self.generation,
                    profiles = %plugin_list(c.profiles.iter().map(|p| p.scheduler_name.as_str())),
                    percentage_of_nodes_to_score = c.percentage_of_nodes_to_score,
                    pod_initial_backoff = ?c.pod_initial_backoff,
                    pod_max_backoff = ?c.pod_max_backoff,
                    "Configuration file changed and is valid; it applies from the next scheduling cycle"
                );
            }
        }
        self.tx.send_replace(Some(Arc::new(PolicyUpdate {
            change,
            source: self.path.clone(),
            generation: self.generation,
        })));
        ReloadOutcome::Applied(self.generation)
    }

    fn reject(&mut self, bytes: Option<Vec<u8>>, message: String) -> ReloadOutcome {
        match self.watched {
            Watched::Policy { .. } => error!(
                error = %message,
                "Policy file rejected; keeping the running policy"
            ),
            Watched::Config { .. } => error!(
                error = %message,
                "Configuration file rejected; keeping the running configuration"
            ),
        }
        self.metrics.reloads.with_label_values(&["failure"]).inc();
        self.metrics.rejected.set(1);
        // A file that cannot be read is retried on the next event; a bad content only when
        // it changes again.
        self.rejected_bytes = bytes;
        ReloadOutcome::Rejected(message)
    }

    /// Check once at once, then after every burst of `triggers` has been quiet for
    /// `cfg.debounce`, and every `cfg.resync_period`. Runs until the task is dropped or
    /// aborted; a closed `triggers` leaves the periodic re-read.
    pub async fn run(mut self, mut triggers: mpsc::Receiver<()>, cfg: ReloadConfig) {
        self.check();
        let period = cfg.resync_period.max(Duration::from_millis(1));
        let mut resync = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        resync.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut open = true;
        loop {
            tokio::select! {
                t = triggers.recv(), if open => {
                    if t.is_none() {
                        open = false;
                        continue;
                    }
                }
                _ = resync.tick() => {
                    self.check();
                    continue;
                }
            }
            // Debounce: wait until no event arrived for `debounce`.
            loop {
                tokio::select! {
                    t = triggers.recv(), if open => {
                        if t.is_none() {
                            open = false;
                        }
                    }
                    _ = tokio::time::sleep(cfg.debounce) => break,
                }
            }
            self.check();
            resync.reset();
        }
    }
}

fn plugin_list<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names.collect::<Vec<_>>().join(",")
}

/// A Policy version built into its profile; `None` when it is the policy in force at start
/// (`initial`, taken by the first call).
fn load_policy(
    name: &str,
    text: &str,
    initial: &mut Option<Box<ResolvedPolicy>>,
    gates: &FeatureGates,
) -> Result<Option<Change>, String> {
    let source = PolicySource::Text { name, text };
    let loaded = Profile::load(source, gates).map_err(|e| e.to_string())?;
    if let Some(initial) = initial.take()
        && *initial == loaded.profile.policy
    {
        return Ok(None);
    }
    for w in loaded.warnings() {
        warn!("{w}");
    }
    Ok(Some(Change::Policy(Box::new(loaded.profile))))
}

/// A configuration version loaded and built as at start ([`parse_config`],
/// [`SchedulerProfile::from_config`]); `None` when it is the configuration in force at start
/// and this is the first check.
fn load_config(
    name: &str,
    text: &str,
    started: &LoadedConfig,
    first: bool,
) -> Result<Option<Change>, String> {
    let loaded = parse_config(name, text).map_err(|e| e.to_string())?;
    if first && loaded == *started {
        return Ok(None);
    }
    let built = SchedulerProfile::from_config(&loaded, name).map_err(|e| e.to_string())?;
    for w in &loaded.warnings {
        warn!("{w}");
    }
    let served = |n: &str| started.profiles.iter().any(|p| p.scheduler_name == n);
    let secs = |v: i64| Duration::from_secs(u64::try_from(v).unwrap_or(0));
    Ok(Some(Change::Config(ConfigUpdate {
        profiles: built
            .into_iter()
            .filter(|p| served(&p.scheduler_name))
            .collect(),
        percentage_of_nodes_to_score: loaded.percentage_of_nodes_to_score,
        pod_initial_backoff: secs(loaded.pod_initial_backoff_seconds),
        pod_max_backoff: secs(loaded.pod_max_backoff_seconds),
        restart_required: restart_required(started, &loaded),
    })))
}

/// The fields of `file` that differ from the configuration in force (`in_force`, loaded at
/// start) and that only a restart applies, each `field: in force <value>, in the file <value>`
/// (defaults applied on both sides; durations in Go's notation): `leaderElection.*`,
/// `clientConnection.*`, `parallelism`, and the profiles' `schedulerName`s added or removed.
/// Empty when a reload can apply the whole file.
pub fn restart_required(in_force: &LoadedConfig, file: &LoadedConfig) -> Vec<String> {
    let mut out = Vec::new();
    let mut cmp = |field: &str, old: String, new: String| {
        if old != new {
            out.push(format!("{field}: in force {old}, in the file {new}"));
        }
    };
    let (a, b) = (&in_force.leader_election, &file.leader_election);
    let d = |ns: i64| format!("{:?}", format_go_duration(ns));
    let q = |s: &str| format!("{s:?}");
    cmp(
        "leaderElection.leaderElect",
        a.leader_elect.to_string(),
        b.leader_elect.to_string(),
    );
    cmp(
        "leaderElection.leaseDuration",
        d(a.lease_duration),
        d(b.lease_duration),
    );
    cmp(
        "leaderElection.renewDeadline",
        d(a.renew_deadline),
        d(b.renew_deadline),
    );
    cmp(
        "leaderElection.retryPeriod",
        d(a.retry_period),
        d(b.retry_period),
    );
    cmp(
        "leaderElection.resourceLock",
        q(&a.resource_lock),
        q(&b.resource_lock),
    );
    cmp(
        "leaderElection.resourceName",
        q(&a.resource_name),
        q(&b.resource_name),
    );
    cmp(
        "leaderElection.resourceNamespace",
        q(&a.resource_namespace),
        q(&b.resource_namespace),
    );
    let (a, b) = (&in_force.client_connection, &file.client_connection);
    cmp(
        "clientConnection.kubeconfig",
        q(&a.kubeconfig),
        q(&b.kubeconfig),
    );
    cmp("clientConnection.qps", a.qps.to_string(), b.qps.to_string());
    cmp(
        "clientConnection.burst",
        a.burst.to_string(),
        b.burst.to_string(),
    );
    let raw = |c: &LoadedConfig| c.config.client_connection.clone().unwrap_or_default();
    let (a, b) = (raw(in_force), raw(file));
    let opt = |s: &Option<String>| q(s.as_deref().unwrap_or(""));
    cmp(
        "clientConnection.contentType",
        opt(&a.content_type),
        opt(&b.content_type),
    );
    cmp(
        "clientConnection.acceptContentTypes",
        opt(&a.accept_content_types),
        opt(&b.accept_content_types),
    );
    cmp(
        "parallelism",
        in_force.parallelism().to_string(),
        file.parallelism().to_string(),
    );
    let names = |c: &LoadedConfig| -> Vec<String> {
        c.profiles
            .iter()
            .map(|p| p.scheduler_name.clone())
            .collect()
    };
    let (served, named) = (names(in_force), names(file));
    for n in named.iter().filter(|n| !served.contains(n)) {
        out.push(format!(
            "profiles[*].schedulerName: {n:?} is not served (the names in force are {served:?}); its profile is not used"
        ));
    }
    for n in served.iter().filter(|n| !named.contains(n)) {
        out.push(format!(
            "profiles[*].schedulerName: {n:?} is served and no longer in the file; its profile in force stays"
        ));
    }
    out
}

/// The file's bytes, with the start-up loader's error texts.
fn read_bytes(path: &Path) -> Result<Vec<u8>, PolicyError> {
    std::fs::read(path).map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound {
            PolicyError::MissingFile {
                path: path.to_path_buf(),
            }
        } else {
            PolicyError::ReadFile {
                path: path.to_path_buf(),
                source,
            }
        }
    })
}

/// The running watcher: dropping it stops the file-system watch and the reload task.
pub struct PolicyWatcher {
    _watcher: Option<notify::RecommendedWatcher>,
    task: JoinHandle<()>,
}

impl Drop for PolicyWatcher {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl std::fmt::Debug for PolicyWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyWatcher").finish_non_exhaustive()
    }
}

/// Start watching `path` (whose policy in force is `running`, resolved under
/// `cfg.feature_gates` with [`ResolvedPolicy::with_feature_gates`] as every version read will
/// be; an ungated `running` makes the first check publish the file again): registers the reload metrics
/// in `registry`, watches the file's directory, and spawns the [`PolicyReloader`] on the
/// current tokio runtime. Keep the returned [`PolicyWatcher`] alive as long as reloads should
/// happen; pass the [`PolicyUpdates`] to the scheduler (`RunConfig::policy_updates`).
///
/// When the directory cannot be watched (no inotify instance left, say), a warning is logged
/// and only the periodic re-read runs.
///
/// # Errors
/// [`ReloadError::Metrics`] when the metrics are already registered in `registry`.
pub fn watch_policy_file(
    path: &Path,
    running: ResolvedPolicy,
    registry: &Registry,
    cfg: ReloadConfig,
) -> Result<(PolicyUpdates, PolicyWatcher), ReloadError> {
    let metrics = PolicyReloadMetrics::new(registry)?;
    let (reloader, updates) =
        PolicyReloader::new(path.to_path_buf(), running, metrics, cfg.feature_gates);
    Ok((updates, spawn_watcher(path, reloader, cfg)))
}

/// Start watching the `--config` file `path`, whose configuration in force is `running`
/// (loaded from it at start, [`crate::config::load_config_file`]), as [`watch_policy_file`]
/// watches a Policy: same metrics, same timing (`cfg.feature_gates` is not used: a
/// configuration names its plugins). Each valid version is published as a
/// [`Change::Config`].
///
/// # Errors
/// [`ReloadError::Metrics`] when the metrics are already registered in `registry`.
pub fn watch_config_file(
    path: &Path,
    running: LoadedConfig,
    registry: &Registry,
    cfg: ReloadConfig,
) -> Result<(PolicyUpdates, PolicyWatcher), ReloadError> {
    let metrics = PolicyReloadMetrics::new(registry)?;
    let (reloader, updates) = PolicyReloader::for_config(path.to_path_buf(), running, metrics);
    Ok((updates, spawn_watcher(path, reloader, cfg)))
}

/// Watch `path`'s directory (or, failing that, only re-read periodically) and run `reloader`.
fn spawn_watcher(path: &Path, reloader: PolicyReloader, cfg: ReloadConfig) -> PolicyWatcher {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    // Capacity 1: a pending trigger already stands for every event after it.
    let (tx, rx) = mpsc::channel::<()>(1);
    let watcher = match watch_dir(&dir, tx) {
        Ok(w) => {
            info!(file = %path.display(), dir = %dir.display(), "Watching the file for changes");
            Some(w)
        }
        Err(e) => {
            warn!(
                error = %e,
                resync_period = ?cfg.resync_period,
                "Cannot watch the file's directory; re-reading it periodically instead"
            );
            None
        }
    };
    let task = tokio::spawn(reloader.run(rx, cfg));
    PolicyWatcher {
        _watcher: watcher,
        task,
    }
}

/// A non-recursive watch of `dir` that sends a trigger for every event but reads.
fn watch_dir(dir: &Path, tx: mpsc::Sender<()>) -> Result<notify::RecommendedWatcher, ReloadError> {
    use notify::Watcher;
    let wrap = |source| ReloadError::Watch {
        dir: dir.to_path_buf(),
        source,
    };
    let mut watcher =
        notify::recommended_watcher(move |ev: notify::Result<notify::Event>| match ev {
            Ok(ev) if ev.kind.is_access() => {}
            Ok(_) => {
                let _ = tx.try_send(());
            }
            Err(e) => {
                warn!(error = %e, "Policy file watch error; the periodic re-read still runs");
                let _ = tx.try_send(());
            }
        })
        .map_err(wrap)?;
    watcher
        .watch(dir, notify::RecursiveMode::NonRecursive)
        .map_err(wrap)?;
    Ok(watcher)
}

#[cfg(test)]
#[path = "reload_test.rs"]
mod tests;
