#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

const LEAST: &str = r#"{"kind":"Policy","apiVersion":"v1",
        "predicates":[{"name":"PodFitsResources"}],
        "priorities":[{"name":"LeastRequestedPriority","weight":1}]}"#;
const MOST: &str = r#"{"kind":"Policy","apiVersion":"v1",
        "predicates":[{"name":"PodFitsResources"}],
        "priorities":[{"name":"MostRequestedPriority","weight":1}]}"#;
/// Unknown key on line 3, column 9.
const BAD: &str =
    "{\"kind\":\"Policy\",\"apiVersion\":\"v1\",\n  \"predicates\":[],\n        \"prioritiez\":[]}";

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

fn config_reloader(dir: &ConfigMapDir, running: &str) -> (PolicyReloader, PolicyUpdates, Registry) {
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
