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
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    const LEAST: &str = r#"{"kind":"Policy","apiVersion":"v1",
        "predicates":[{"name":"PodFitsResources"}],
        "priorities":[{"name":"LeastRequestedPriority","weight":1}]}"#;
    const MOST: &str = r#"{"kind":"Policy","apiVersion":"v1",
        "predicates":[{"name":"PodFitsResources"}],
        "priorities":[{"name":"MostRequestedPriority","weight":1}]}"#;
    /// Unknown key on line 3, column 9.
    const BAD: &str = "{\"kind\":\"Policy\",\"apiVersion\":\"v1\",\n  \"predicates\":[],\n        \"prioritiez\":[]}";

    /// A directory laid out as the kubelet lays out a ConfigMap volume: the file is a symlink
    /// to `..data/<file>`, `..data` a symlink to a timestamped directory; an update writes a
    /// new directory and renames a fresh `..data` symlink over the old one.
    struct ConfigMapDir {
        root: PathBuf,
        version: u32,
    }

    impl ConfigMapDir {
        fn new(name: &str, content: &str) -> ConfigMapDir {
            let root = std::env::temp_dir().join(format!(
                "mini-scheduler-reload-{name}-{}",
                std::process::id()
            ));
            let _ = std::fs::remove_dir_all(&root);
            std::fs::create_dir_all(&root).unwrap();
            let mut d = ConfigMapDir { root, version: 0 };
            d.update(content);
            std::os::unix::fs::symlink(
                "..data/policy-config-file.json",
                d.root.join("policy-config-file.json"),
            )
            .unwrap();
            d
        }

        fn file(&self) -> PathBuf {
            self.root.join("policy-config-file.json")
        }

        /// The kubelet's AtomicWriter swap.
        fn update(&mut self, content: &str) {
            self.version += 1;
            let ts = format!("..2026_01_01_00_00_{:02}.{}", self.version, self.version);
            std::fs::create_dir(self.root.join(&ts)).unwrap();
            std::fs::write(self.root.join(&ts).join("policy-config-file.json"), content).unwrap();
            let tmp = self.root.join("..data_tmp");
            std::os::unix::fs::symlink(&ts, &tmp).unwrap();
            std::fs::rename(&tmp, self.root.join("..data")).unwrap();
        }
    }

    impl Drop for ConfigMapDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }

    fn resolved(text: &str) -> ResolvedPolicy {
        crate::policy::parse_policy("test", text)
            .unwrap()
            .resolved
            .with_feature_gates(&FeatureGates::default())
    }

    fn reloader(dir: &ConfigMapDir, running: &str) -> (PolicyReloader, PolicyUpdates, Registry) {
        let registry = Registry::new();
        let metrics = PolicyReloadMetrics::new(&registry).unwrap();
        let (r, rx) = PolicyReloader::new(
            dir.file(),
            resolved(running),
            metrics,
            FeatureGates::default(),
        );
        (r, rx, registry)
    }

    fn counter(registry: &Registry, result: &str) -> f64 {
        registry
            .gather()
            .iter()
            .filter(|f| f.name() == "scheduler_policy_reloads_total")
            .flat_map(|f| f.get_metric().iter())
            .filter(|m| m.get_label().iter().any(|l| l.value() == result))
            .map(|m| m.get_counter().get_value())
            .sum()
    }

    fn gauge(registry: &Registry, name: &str) -> f64 {
        registry
            .gather()
            .iter()
            .filter(|f| f.name() == name)
            .flat_map(|f| f.get_metric().iter())
            .map(|m| m.get_gauge().get_value())
            .sum()
    }

    fn scores(rx: &PolicyUpdates) -> Vec<&'static str> {
        rx.borrow()
            .as_ref()
            .and_then(|u| match &u.change {
                Change::Policy(p) => Some(p.policy.scores.iter().map(|s| s.plugin).collect()),
                Change::Config(_) => None,
            })
            .unwrap_or_default()
    }

    #[test]
    fn symlink_swap_to_a_valid_policy_is_published() {
        let mut dir = ConfigMapDir::new("valid", LEAST);
        let (mut r, rx, registry) = reloader(&dir, LEAST);
        assert_eq!(
            r.check(),
            ReloadOutcome::Unchanged,
            "the file we started with"
        );
        assert!(rx.borrow().is_none());
        dir.update(MOST);
        assert_eq!(r.check(), ReloadOutcome::Applied(1));
        assert_eq!(scores(&rx), ["NodeResourcesMostAllocated"]);
        assert_eq!(counter(&registry, "success"), 1.0);
        assert_eq!(counter(&registry, "failure"), 0.0);
        assert_eq!(r.check(), ReloadOutcome::Unchanged, "same bytes again");
        assert_eq!(counter(&registry, "success"), 1.0);
        dir.update(LEAST);
        assert_eq!(r.check(), ReloadOutcome::Applied(2));
        assert_eq!(scores(&rx), ["NodeResourcesLeastAllocated"]);
    }

    #[test]
    fn invalid_policy_keeps_the_running_one_and_counts_a_failure() {
        let mut dir = ConfigMapDir::new("invalid", LEAST);
        let (mut r, rx, registry) = reloader(&dir, LEAST);
        r.check();
        dir.update(BAD);
        let file = dir.file().display().to_string();
        match r.check() {
            ReloadOutcome::Rejected(msg) => {
                assert!(msg.starts_with(&format!("{file}:3:9: ")), "{msg}");
                assert!(msg.contains("prioritiez"), "{msg}");
            }
            other => panic!("expected a rejection, got {other:?}"),
        }
        assert!(rx.borrow().is_none(), "nothing published");
        assert_eq!(counter(&registry, "failure"), 1.0);
        assert_eq!(gauge(&registry, "scheduler_policy_file_rejected"), 1.0);
        assert_eq!(
            r.check(),
            ReloadOutcome::Unchanged,
            "the same bad bytes are not counted twice"
        );
        assert_eq!(counter(&registry, "failure"), 1.0);
        // Fixed: published, and the rejection flag clears.
        dir.update(MOST);
        assert_eq!(r.check(), ReloadOutcome::Applied(1));
        assert_eq!(gauge(&registry, "scheduler_policy_file_rejected"), 0.0);
        // A policy that decodes but does not build into a profile is rejected too.
        dir.update(
            r#"{"kind":"Policy","apiVersion":"v1","priorities":[{"name":"MostRequestedPriority","weight":922337203685477579}]}"#,
        );
        assert!(matches!(r.check(), ReloadOutcome::Rejected(_)));
        assert_eq!(scores(&rx), ["NodeResourcesMostAllocated"]);
        assert_eq!(counter(&registry, "failure"), 2.0);
    }

    /// A reload builds the new policy's extenders too (the loop swaps them in with the
    /// framework), and rejects one whose extender cannot be set up, as start-up does. Before the
    /// fix only the framework was rebuilt: the extenders in force at start stayed.
    #[test]
    fn extenders_are_built_with_the_framework_and_bad_ones_rejected() {
        let with_extender = r#"{"kind":"Policy","apiVersion":"v1",
            "predicates":[{"name":"PodFitsResources"}],
            "priorities":[{"name":"LeastRequestedPriority","weight":1}],
            "extenders":[{"urlPrefix":"http://127.0.0.1:1/ext","filterVerb":"filter","weight":1}]}"#;
        let bad_ca = r#"{"kind":"Policy","apiVersion":"v1",
            "priorities":[{"name":"LeastRequestedPriority","weight":1}],
            "extenders":[{"urlPrefix":"https://127.0.0.1:1/ext","filterVerb":"filter","weight":1,
              "enableHTTPS":true,"tlsConfig":{"caFile":"/nonexistent/ca.pem"}}]}"#;
        let mut dir = ConfigMapDir::new("extenders", LEAST);
        let (mut r, rx, _registry) = reloader(&dir, LEAST);
        r.check();
        dir.update(with_extender);
        assert_eq!(r.check(), ReloadOutcome::Applied(1));
        let names = |rx: &PolicyUpdates| -> Vec<String> {
            rx.borrow()
                .as_ref()
                .map(|u| match &u.change {
                    Change::Policy(p) => p.extenders.iter().map(|e| e.name().to_string()).collect(),
                    Change::Config(_) => Vec::new(),
                })
                .unwrap_or_default()
        };
        assert_eq!(names(&rx), ["http://127.0.0.1:1/ext"]);
        dir.update(bad_ca);
        match r.check() {
            ReloadOutcome::Rejected(msg) => {
                let file = dir.file().display().to_string();
                assert!(
                    msg.starts_with(&format!("{file}: policy extenders[0]")),
                    "{msg}"
                );
                assert!(msg.contains("tlsConfig.caFile"), "{msg}");
            }
            other => panic!("expected a rejection, got {other:?}"),
        }
        assert_eq!(names(&rx), ["http://127.0.0.1:1/ext"], "the good one stays");
        dir.update(MOST);
        assert_eq!(r.check(), ReloadOutcome::Applied(2));
        assert!(
            names(&rx).is_empty(),
            "a policy without extenders removes them"
        );
    }

    #[test]
    fn missing_file_is_a_failure_not_a_crash() {
        let dir = ConfigMapDir::new("missing", LEAST);
        let (mut r, rx, registry) = reloader(&dir, LEAST);
        r.check();
        std::fs::remove_file(dir.file()).unwrap();
        match r.check() {
            ReloadOutcome::Rejected(msg) => assert!(msg.starts_with("missing policy config file")),
            other => panic!("{other:?}"),
        }
        assert!(rx.borrow().is_none());
        assert_eq!(counter(&registry, "failure"), 1.0);
    }

    #[test]
    fn a_file_changed_before_the_first_check_is_applied() {
        let dir = ConfigMapDir::new("raced", MOST);
        let (mut r, rx, _registry) = reloader(&dir, LEAST);
        assert_eq!(r.check(), ReloadOutcome::Applied(1));
        assert_eq!(scores(&rx), ["NodeResourcesMostAllocated"]);
    }

    // ------------------------------------------------------------ `--config` reloads

    /// A v1beta2 configuration: profile `a` scores with NodeResourcesFit's `strategy`, profile
    /// `b` has the defaults; `extra` is appended at the top level.
    fn config(strategy: &str, pct: i32, initial: i64, max: i64, extra: &str) -> String {
        format!(
            "apiVersion: kubescheduler.config.k8s.io/v1beta2
kind: KubeSchedulerConfiguration
percentageOfNodesToScore: {pct}
podInitialBackoffSeconds: {initial}
podMaxBackoffSeconds: {max}
profiles:
- schedulerName: a
  plugins:
    preScore:
      disabled: [{{name: '*'}}]
    score:
      disabled: [{{name: '*'}}]
      enabled: [{{name: NodeResourcesFit, weight: 1}}]
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: {strategy}
        resources: [{{name: cpu, weight: 1}}, {{name: memory, weight: 1}}]
- schedulerName: b
{extra}"
        )
    }

    fn config_reloader(
        dir: &ConfigMapDir,
        running: &str,
    ) -> (PolicyReloader, PolicyUpdates, Registry) {
        let registry = Registry::new();
        let metrics = PolicyReloadMetrics::new(&registry).unwrap();
        let started = parse_config(&dir.file().display().to_string(), running).unwrap();
        let (r, rx) = PolicyReloader::for_config(dir.file(), started, metrics);
        (r, rx, registry)
    }

    /// The published configuration update (panics on none or a Policy).
    fn config_update(rx: &PolicyUpdates) -> Arc<PolicyUpdate> {
        let u = rx.borrow().clone().expect("an update was published");
        assert!(matches!(u.change, Change::Config(_)), "{u:?}");
        u
    }

    fn as_config(u: &PolicyUpdate) -> &ConfigUpdate {
        match &u.change {
            Change::Config(c) => c,
            Change::Policy(_) => unreachable!("checked by config_update"),
        }
    }

    /// A valid edit rebuilds every profile (plugins and pluginConfig), and carries
    /// `percentageOfNodesToScore` and the backoffs; nothing needs a restart.
    #[test]
    fn config_edit_rebuilds_profiles_and_scheduling_settings() {
        let start = config("LeastAllocated", 50, 1, 10, "");
        let mut dir = ConfigMapDir::new("config-valid", &start);
        let (mut r, rx, registry) = config_reloader(&dir, &start);
        assert_eq!(
            r.check(),
            ReloadOutcome::Unchanged,
            "the file we started with"
        );
        assert!(rx.borrow().is_none());
        dir.update(&config("MostAllocated", 70, 2, 20, ""));
        assert_eq!(r.check(), ReloadOutcome::Applied(1));
        let u = config_update(&rx);
        let c = as_config(&u);
        let names: Vec<&str> = c
            .profiles
            .iter()
            .map(|p| p.scheduler_name.as_str())
            .collect();
        assert_eq!(names, ["a", "b"]);
        let scores: Vec<&str> = c.profiles[0]
            .profile
            .policy
            .scores
            .iter()
            .map(|s| s.plugin)
            .collect();
        assert_eq!(scores, ["NodeResourcesMostAllocated"]);
        assert_eq!(c.percentage_of_nodes_to_score, 70);
        assert_eq!(c.pod_initial_backoff, Duration::from_secs(2));
        assert_eq!(c.pod_max_backoff, Duration::from_secs(20));
        assert!(c.restart_required.is_empty(), "{:?}", c.restart_required);
        assert_eq!(counter(&registry, "success"), 1.0);
        assert_eq!(r.check(), ReloadOutcome::Unchanged, "same bytes again");
    }

    /// An invalid edit (a value out of range; then an unknown plugin) is rejected with the
    /// file, line, column, field and value, counted in the Policy reload's metrics, and
    /// nothing is published; the next valid edit clears the rejection.
    #[test]
    fn invalid_config_keeps_the_running_one_and_counts_a_failure() {
        let start = config("LeastAllocated", 50, 1, 10, "");
        let mut dir = ConfigMapDir::new("config-invalid", &start);
        let (mut r, rx, registry) = config_reloader(&dir, &start);
        r.check();
        dir.update(&config("LeastAllocated", 150, 1, 10, ""));
        let file = dir.file().display().to_string();
        match r.check() {
            ReloadOutcome::Rejected(msg) => {
                assert!(
                    msg.starts_with(&format!(
                        "{file}:3:27: percentageOfNodesToScore: Invalid value: 150"
                    )),
                    "{msg}"
                );
            }
            other => panic!("expected a rejection, got {other:?}"),
        }
        assert!(rx.borrow().is_none(), "nothing published");
        assert_eq!(counter(&registry, "failure"), 1.0);
        assert_eq!(gauge(&registry, "scheduler_policy_file_rejected"), 1.0);
        assert_eq!(r.check(), ReloadOutcome::Unchanged, "not counted twice");
        assert_eq!(counter(&registry, "failure"), 1.0);
        dir.update(&config("MostAlocated", 50, 1, 10, ""));
        match r.check() {
            ReloadOutcome::Rejected(msg) => {
                assert!(msg.starts_with(&format!("{file}:")), "{msg}");
                assert!(msg.contains("MostAlocated"), "{msg}");
            }
            other => panic!("expected a rejection, got {other:?}"),
        }
        assert_eq!(counter(&registry, "failure"), 2.0);
        dir.update(&config("MostAllocated", 50, 1, 10, ""));
        assert_eq!(r.check(), ReloadOutcome::Applied(1));
        assert_eq!(gauge(&registry, "scheduler_policy_file_rejected"), 0.0);
        assert_eq!(counter(&registry, "success"), 1.0);
    }

    /// What only a restart applies is reported field by field and left out: leaderElection,
    /// clientConnection, parallelism, and the schedulerName set (a new profile is not served; a
    /// served one missing from the file is not in the update, so its profile in force stays).
    /// The rest of the file still applies.
    #[test]
    fn restart_only_fields_keep_their_values_in_force() {
        let start = config("LeastAllocated", 50, 1, 10, "");
        let mut dir = ConfigMapDir::new("config-restart", &start);
        let (mut r, rx, registry) = config_reloader(&dir, &start);
        r.check();
        let edited = config(
            "MostAllocated",
            60,
            1,
            10,
            "- schedulerName: c
leaderElection:
  leaseDuration: 20s
  resourceName: other-lease
clientConnection:
  qps: 5
parallelism: 4
",
        )
        .replace("- schedulerName: b\n", "");
        dir.update(&edited);
        assert_eq!(r.check(), ReloadOutcome::Applied(1));
        let u = config_update(&rx);
        let c = as_config(&u);
        let names: Vec<&str> = c
            .profiles
            .iter()
            .map(|p| p.scheduler_name.as_str())
            .collect();
        assert_eq!(names, ["a"], "c is not served; b is not replaced");
        assert_eq!(c.percentage_of_nodes_to_score, 60, "the rest applies");
        assert_eq!(
            c.restart_required,
            [
                r#"leaderElection.leaseDuration: in force "15s", in the file "20s""#,
                r#"leaderElection.resourceName: in force "kube-scheduler", in the file "other-lease""#,
                "clientConnection.qps: in force 50, in the file 5",
                "parallelism: in force 16, in the file 4",
                r#"profiles[*].schedulerName: "c" is not served (the names in force are ["a", "b"]); its profile is not used"#,
                r#"profiles[*].schedulerName: "b" is served and no longer in the file; its profile in force stays"#,
            ]
        );
        assert_eq!(counter(&registry, "success"), 1.0);
        // Reordering the profiles is not a change of the set.
        let swapped = format!(
            "{}- schedulerName: a\n",
            config("LeastAllocated", 50, 1, 10, "")
                .replace("- schedulerName: a\n", "- schedulerName: x\n")
                .replace("- schedulerName: b\n", "")
                .replace("- schedulerName: x\n", "- schedulerName: b\n")
        );
        dir.update(&swapped);
        assert_eq!(r.check(), ReloadOutcome::Applied(2));
        let u = config_update(&rx);
        let c = as_config(&u);
        let names: Vec<&str> = c
            .profiles
            .iter()
            .map(|p| p.scheduler_name.as_str())
            .collect();
        assert_eq!(names, ["b", "a"]);
        assert!(c.restart_required.is_empty(), "{:?}", c.restart_required);
    }

    /// A configuration edited before the first check is applied (not mistaken for the one in
    /// force); the debounce and periodic re-read run as for a Policy, on the paused clock.
    #[tokio::test(start_paused = true)]
    async fn config_reloads_are_debounced_and_resynced() {
        let start = config("LeastAllocated", 50, 1, 10, "");
        let mut dir = ConfigMapDir::new("config-timing", &start);
        dir.update(&config("LeastAllocated", 40, 1, 10, ""));
        let (r, mut rx, registry) = config_reloader(&dir, &start);
        let (tx, triggers) = mpsc::channel(1);
        let cfg = ReloadConfig {
            debounce: Duration::from_millis(500),
            resync_period: Duration::from_secs(60),
            ..ReloadConfig::default()
        };
        let task = tokio::spawn(r.run(triggers, cfg));
        rx.changed().await.unwrap();
        assert_eq!(
            as_config(&config_update(&rx)).percentage_of_nodes_to_score,
            40
        );

        dir.update(&config("MostAllocated", 30, 1, 10, ""));
        let t0 = tokio::time::Instant::now();
        tx.send(()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        tx.send(()).await.unwrap();
        rx.changed().await.unwrap();
        assert_eq!(t0.elapsed(), Duration::from_millis(300 + 500));
        assert_eq!(
            as_config(&config_update(&rx)).percentage_of_nodes_to_score,
            30
        );

        // No event: the periodic re-read finds it.
        dir.update(&config("MostAllocated", 20, 1, 10, ""));
        let t0 = tokio::time::Instant::now();
        rx.changed().await.unwrap();
        assert!(
            t0.elapsed() <= Duration::from_secs(60),
            "{:?}",
            t0.elapsed()
        );
        assert_eq!(
            as_config(&config_update(&rx)).percentage_of_nodes_to_score,
            20
        );
        assert_eq!(counter(&registry, "success"), 3.0);
        task.abort();
    }

    /// Debounce and resync on tokio's paused clock, with triggers fed by hand.
    #[tokio::test(start_paused = true)]
    async fn debounced_events_and_periodic_resync() {
        let mut dir = ConfigMapDir::new("timing", LEAST);
        let (r, mut rx, registry) = reloader(&dir, LEAST);
        let (tx, triggers) = mpsc::channel(1);
        let cfg = ReloadConfig {
            debounce: Duration::from_millis(500),
            resync_period: Duration::from_secs(60),
            ..ReloadConfig::default()
        };
        let task = tokio::spawn(r.run(triggers, cfg));
        tokio::task::yield_now().await;

        dir.update(MOST);
        let start = tokio::time::Instant::now();
        // Events keep arriving every 300 ms for a while: no read until 500 ms of quiet.
        for _ in 0..4 {
            tx.send(()).await.unwrap();
            tokio::time::sleep(Duration::from_millis(300)).await;
            assert!(rx.borrow().is_none(), "still debouncing");
        }
        rx.changed().await.unwrap();
        let waited = start.elapsed();
        assert_eq!(
            waited,
            Duration::from_millis(900 + 500),
            "last event at 900 ms + 500 ms quiet"
        );
        assert_eq!(scores(&rx), ["NodeResourcesMostAllocated"]);

        // No event at all (a watch that cannot see the change): the periodic re-read finds it.
        dir.update(LEAST);
        let start = tokio::time::Instant::now();
        rx.changed().await.unwrap();
        assert!(
            start.elapsed() <= Duration::from_secs(60),
            "{:?}",
            start.elapsed()
        );
        assert_eq!(scores(&rx), ["NodeResourcesLeastAllocated"]);
        assert_eq!(counter(&registry, "success"), 2.0);
        task.abort();
    }

    /// The real watch (inotify) sees a kubelet-style symlink swap. Real time: the event comes
    /// from the kernel; the wait is bounded, not a sleep.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn inotify_sees_a_configmap_symlink_swap() {
        let mut dir = ConfigMapDir::new("inotify", LEAST);
        let registry = Registry::new();
        let cfg = ReloadConfig {
            debounce: Duration::from_millis(50),
            // Long enough that only the watch can explain a reload within the timeout.
            resync_period: Duration::from_secs(3600),
            ..ReloadConfig::default()
        };
        let (mut rx, _watcher) =
            watch_policy_file(&dir.file(), resolved(LEAST), &registry, cfg).unwrap();
        // The first swap may be seen by the reloader's initial check or by the watch ...
        dir.update(MOST);
        tokio::time::timeout(Duration::from_secs(10), rx.changed())
            .await
            .expect("reloaded within 10 s")
            .unwrap();
        assert_eq!(scores(&rx), ["NodeResourcesMostAllocated"]);
        // ... the second only by the watch (the initial check is done, the re-read is hourly).
        dir.update(LEAST);
        tokio::time::timeout(Duration::from_secs(10), rx.changed())
            .await
            .expect("reloaded within 10 s")
            .unwrap();
        assert_eq!(scores(&rx), ["NodeResourcesLeastAllocated"]);
        assert_eq!(counter(&registry, "success"), 2.0);
    }
}
