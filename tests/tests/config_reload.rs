//! `--config` hot reload in cluster mode: one replica (no election) against the API test
//! double, its `KubeSchedulerConfiguration` in a ConfigMap-style volume, with two profiles
//! (pods routed by `schedulerName`). A valid edit rebuilds the profiles and the next pods are
//! scored by the new ones; an invalid edit is counted in the Policy reload's metrics and the
//! running configuration stays.
//!
//! Real time (the test double serves HTTP); every wait is a bounded poll of a condition. The
//! debounce, re-read timing and restart-only fields are covered on tokio's paused clock in
//! `scheduler::controller::reload`'s unit tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use scheduler::controller::reload::{PolicyUpdates, watch_config_file};
use scheduler::profile::SchedulerProfile;
use tests::apiserver::ApiServer;
use tests::configmap::ConfigMapVolume;
use tests::objects;
use tests::replica::{
    SCHEDULER_NAME, metric, reload_test_config, run_config, spawn_reloading_replica,
};

/// The second profile's scheduler name.
const OTHER: &str = "other-scheduler";

/// A v1beta2 configuration with two profiles scoring only with NodeResourcesFit, the first
/// ([`SCHEDULER_NAME`]) with scoring strategy `first`, the second ([`OTHER`]) with `other`.
fn config(first: &str, other: &str) -> String {
    let profile = |name: &str, strategy: &str| {
        format!(
            "- schedulerName: {name}
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
"
        )
    };
    format!(
        "apiVersion: kubescheduler.config.k8s.io/v1beta2
kind: KubeSchedulerConfiguration
percentageOfNodesToScore: 100
profiles:
{}{}",
        profile(SCHEDULER_NAME, first),
        profile(OTHER, other)
    )
}

fn node(name: &str) -> Node {
    objects::node(name, &[("cpu", "8"), ("memory", "16Gi"), ("pods", "110")])
}

const WAIT: Duration = Duration::from_secs(20);

/// Creates a pod for `scheduler` and returns the node it is bound to.
async fn schedule(api: &ApiServer, name: &str, scheduler: &str) -> String {
    let mut pod: Pod = objects::pod(name, &[("cpu", "1"), ("memory", "1Gi")]);
    if let Some(spec) = pod.spec.as_mut() {
        spec.scheduler_name = Some(scheduler.to_string());
    }
    objects::create_and_wait_bound(api, &pod, WAIT).await
}

async fn published(updates: &mut PolicyUpdates, what: &str) {
    tokio::time::timeout(Duration::from_secs(20), updates.changed())
        .await
        .unwrap_or_else(|_| panic!("{what} is published"))
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reloaded_config_rebuilds_the_profiles_and_a_bad_one_is_kept_out() {
    let api = ApiServer::start().await;
    api.seed(&node("node-a")).unwrap();
    api.seed(&node("node-b")).unwrap();
    let mut volume = ConfigMapVolume::new(
        "mini-scheduler-config-reload",
        "kube-scheduler-config.yaml",
        &config("MostAllocated", "MostAllocated"),
    );
    let path = volume.file();
    // As `run --config` does: the first profile, the others routed by schedulerName.
    let loaded = scheduler::config::load_config_file(&path).unwrap();
    let mut profiles = SchedulerProfile::from_config(&loaded, "config")
        .unwrap()
        .into_iter();
    let first = profiles.next().unwrap();
    let registry = prometheus::Registry::new();
    let (updates, _watcher) =
        watch_config_file(&path, loaded.clone(), &registry, reload_test_config()).unwrap();
    let mut seen = updates.clone();
    let mut run = run_config("replica-1");
    run.scheduler_name = first.scheduler_name;
    run.profile = first.profile;
    run.other_profiles = profiles.collect();
    run.percentage_of_nodes_to_score = loaded.percentage_of_nodes_to_score;
    let replica = spawn_reloading_replica(&api, "replica-1", run, updates, registry.clone()).await;
    let reloads = |result: &str| {
        metric(
            &registry,
            "scheduler_policy_reloads_total",
            &[("result", result)],
        )
    };

    // MostAllocated packs: the second pod joins the first.
    let x = schedule(&api, "packed-1", SCHEDULER_NAME).await;
    assert_eq!(schedule(&api, "packed-2", SCHEDULER_NAME).await, x);
    let y = if x == "node-a" { "node-b" } else { "node-a" };

    // The first profile changes to LeastAllocated, the second stays MostAllocated.
    volume.update(&config("LeastAllocated", "MostAllocated"));
    published(&mut seen, "the edited configuration").await;
    assert_eq!(reloads("success"), 1.0);
    assert_eq!(
        schedule(&api, "spread-1", SCHEDULER_NAME).await,
        y,
        "LeastAllocated spreads: the reloaded profile is in force"
    );
    // x holds 2 cpu, y 1: the other profile (still MostAllocated) packs onto x.
    assert_eq!(
        schedule(&api, "other-1", OTHER).await,
        x,
        "pods are routed to the other profile by schedulerName"
    );

    // An invalid edit (a scoring strategy that does not exist): counted, nothing published,
    // the running configuration stays.
    volume.update(&config("LeastAllocated", "MostAlocated"));
    objects::wait_for("the failed reload to be counted", WAIT, || {
        reloads("failure") == 1.0
    })
    .await;
    assert!(!seen.has_changed().unwrap(), "nothing published");
    assert_eq!(
        metric(&registry, "scheduler_policy_file_rejected", &[]),
        1.0
    );
    // x holds 3 cpu, y 1: LeastAllocated picks y, the other profile (MostAllocated) x.
    assert_eq!(schedule(&api, "spread-2", SCHEDULER_NAME).await, y);
    assert_eq!(schedule(&api, "other-2", OTHER).await, x);
    assert!(
        !replica.join.is_finished(),
        "a bad edit never stops the replica"
    );

    // Fixed, and the other profile now spreads too.
    volume.update(&config("LeastAllocated", "LeastAllocated"));
    published(&mut seen, "the fixed configuration").await;
    assert_eq!(reloads("success"), 2.0);
    assert_eq!(
        metric(&registry, "scheduler_policy_file_rejected", &[]),
        0.0
    );
    // x holds 4 cpu, y 2.
    assert_eq!(schedule(&api, "other-3", OTHER).await, y);
    replica.join.abort();
    api.shutdown().await;
}
