//! Policy hot reload: watch `--policy-config-file`, decode and validate every new version, and
//! hand valid ones to the scheduling loop, which swaps them in between two scheduling cycles.
//!
//! kube-scheduler v1.22 read its Policy once at start (`initPolicyFromFile`); this is
//! mini-scheduler's own addition, shaped for a ConfigMap mounted as a volume: the kubelet
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

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use prometheus::{Gauge, IntCounterVec, IntGauge, Opts, Registry};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tracing::{error, info, warn};

use crate::policy::{FeatureGates, PolicyError, ResolvedPolicy};
use crate::profile::{PolicySource, Profile};

/// Quiet period after the last file-system event before the file is read.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(500);
/// Period of the unconditional re-read.
pub const DEFAULT_RESYNC_PERIOD: Duration = Duration::from_secs(60);

/// A validated policy, ready to be swapped in: the profile built from the new version, as at
/// start.
#[derive(Debug)]
pub struct PolicyUpdate {
    /// The plugins, their arguments and the extenders, replacing those in force.
    pub profile: Profile,
    /// The file it was read from.
    pub source: PathBuf,
    /// 1 for the first reload since start, then 2, 3, ...
    pub generation: u64,
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
    /// decoded after a change, by outcome.
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
                    "Number of times a changed policy config file was decoded and validated, by result: 'success' (swapped in) or 'failure' (rejected; the running policy stays).",
                ),
                &["result"],
            )?,
            last_success: Gauge::new(
                "scheduler_policy_last_successful_reload_timestamp_seconds",
                "Unix time in seconds at which the policy in force was loaded (at start or by the last successful reload).",
            )?,
            rejected: IntGauge::new(
                "scheduler_policy_file_rejected",
                "1 while the policy config file on disk is invalid and an older policy is in force, else 0.",
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

/// Reads the policy file and publishes each new valid version. Pure of timing: [`Self::run`]
/// decides *when* to [`Self::check`].
pub struct PolicyReloader {
    path: PathBuf,
    /// The policy in force when the reloader started (compared once, by the first check).
    initial: Option<ResolvedPolicy>,
    /// Bytes of the policy in force, once known.
    running_bytes: Option<Vec<u8>>,
    /// Bytes of the last rejected version.
    rejected_bytes: Option<Vec<u8>>,
    generation: u64,
    tx: watch::Sender<Option<Arc<PolicyUpdate>>>,
    metrics: PolicyReloadMetrics,
    gates: FeatureGates,
}

impl PolicyReloader {
    /// A reloader for `path`, whose policy in force is `running` (loaded from that file at
    /// start and resolved under `gates`, which apply to every version read). The first
    /// [`Self::check`] records the file's bytes without publishing anything if they still
    /// resolve to `running`.
    pub fn new(
        path: PathBuf,
        running: ResolvedPolicy,
        metrics: PolicyReloadMetrics,
        gates: FeatureGates,
    ) -> (PolicyReloader, PolicyUpdates) {
        let (tx, rx) = watch::channel(None);
        (
            PolicyReloader {
                path,
                initial: Some(running),
                running_bytes: None,
                rejected_bytes: None,
                generation: 0,
                tx,
                metrics,
                gates,
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
        let source = PolicySource::Text { name: &name, text };
        let (profile, warnings) = match Profile::load(source, &self.gates) {
            Ok(l) => l,
            Err(e) => return self.reject(Some(bytes), e.to_string()),
        };
        if let Some(initial) = self.initial.take()
            && initial == profile.policy
        {
            // The file the process started with.
            self.running_bytes = Some(bytes);
            return ReloadOutcome::Unchanged;
        }
        for w in &warnings {
            warn!("{w}");
        }
        self.generation += 1;
        self.running_bytes = Some(bytes);
        self.rejected_bytes = None;
        self.metrics.reloads.with_label_values(&["success"]).inc();
        self.metrics.last_success.set(unix_now());
        self.metrics.rejected.set(0);
        info!(
            file = %self.path.display(),
            generation = self.generation,
            filters = %plugin_list(profile.policy.filters.iter().map(|f| f.plugin)),
            scores = %plugin_list(profile.policy.scores.iter().map(|s| s.plugin)),
            "Policy file changed and is valid; it applies from the next scheduling cycle"
        );
        self.tx.send_replace(Some(Arc::new(PolicyUpdate {
            profile,
            source: self.path.clone(),
            generation: self.generation,
        })));
        ReloadOutcome::Applied(self.generation)
    }

    fn reject(&mut self, bytes: Option<Vec<u8>>, message: String) -> ReloadOutcome {
        error!(
            error = %message,
            "Policy file rejected; keeping the running policy"
        );
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
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    // Capacity 1: a pending trigger already stands for every event after it.
    let (tx, rx) = mpsc::channel::<()>(1);
    let watcher = match watch_dir(&dir, tx) {
        Ok(w) => {
            info!(file = %path.display(), dir = %dir.display(), "Watching the policy file for changes");
            Some(w)
        }
        Err(e) => {
            warn!(
                error = %e,
                resync_period = ?cfg.resync_period,
                "Cannot watch the policy file's directory; re-reading it periodically instead"
            );
            None
        }
    };
    let (reloader, updates) =
        PolicyReloader::new(path.to_path_buf(), running, metrics, cfg.feature_gates);
    let task = tokio::spawn(reloader.run(rx, cfg));
    Ok((
        updates,
        PolicyWatcher {
            _watcher: watcher,
            task,
        },
    ))
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
            .map(|u| u.profile.policy.scores.iter().map(|s| s.plugin).collect())
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
                .map(|u| {
                    u.profile
                        .extenders
                        .iter()
                        .map(|e| e.name().to_string())
                        .collect()
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
