//! Policy hot reload in cluster mode: one replica (no election) against the API test double,
//! its `--policy-config-file` in a ConfigMap-style volume. A valid new policy is swapped in
//! between scheduling cycles and the next pods follow it; an invalid one is counted and the
//! running policy stays.
//!
//! Real time (the test double serves HTTP); every wait is a bounded poll of a condition. The
//! debounce and re-read timing are covered on tokio's paused clock in
//! `scheduler::controller::reload`'s unit tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, PostParams};
use scheduler::controller::reload::{ReloadConfig, watch_policy_file};
use scheduler::controller::replica::ReplicaConfig;
use serde_json::json;
use tests::apiserver::ApiServer;
use tests::configmap::ConfigMapVolume;
use tests::extender::{ExtenderServer, Reply, node_names, sync_handler};
use tests::objects;
use tests::replica::{metric, run_config, spawn_replica_with_config};

const MOST: &str = r#"{"kind": "Policy", "apiVersion": "v1",
 "predicates": [{"name": "PodFitsResources"}],
 "priorities": [{"name": "MostRequestedPriority", "weight": 1}]}
"#;
const LEAST: &str = r#"{"kind": "Policy", "apiVersion": "v1",
 "predicates": [{"name": "PodFitsResources"}],
 "priorities": [{"name": "LeastRequestedPriority", "weight": 1}]}
"#;
/// A typo'd priority name on line 3, column 26.
const BAD: &str = r#"{"kind": "Policy", "apiVersion": "v1",
 "predicates": [{"name": "PodFitsResources"}],
 "priorities": [{"name": "LeastRequestedPriorty", "weight": 1}]}
"#;

fn node(name: &str) -> Node {
    objects::node(name, &[("cpu", "8"), ("memory", "16Gi"), ("pods", "110")])
}

fn pod(name: &str) -> Pod {
    objects::pod(name, &[("cpu", "1"), ("memory", "1Gi")])
}

async fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !cond() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Creates the pod and returns the node it is bound to.
async fn schedule(api: &ApiServer, name: &str) -> String {
    Api::<Pod>::namespaced(api.client("tester"), "default")
        .create(&PostParams::default(), &pod(name))
        .await
        .unwrap();
    let mut bound = None;
    wait_for(&format!("{name} to be bound"), || {
        bound = api
            .get::<Pod>("default", name)
            .and_then(|p| p.spec?.node_name);
        bound.is_some()
    })
    .await;
    bound.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reloaded_policy_applies_to_the_next_pods_and_a_bad_one_is_kept_out() {
    let api = ApiServer::start().await;
    api.seed(&node("node-a")).unwrap();
    api.seed(&node("node-b")).unwrap();
    let mut volume = ConfigMapVolume::new(
        "mini-scheduler-policy-reload",
        "policy-config-file.json",
        MOST,
    );
    let path = volume.file();
    let started_with = scheduler::policy::load_policy_file(&path)
        .unwrap()
        .resolved
        .with_feature_gates(&scheduler::policy::FeatureGates::default());

    let registry = prometheus::Registry::new();
    let cfg = ReloadConfig {
        debounce: Duration::from_millis(50),
        // Only the file-system watch can explain a reload within this test.
        resync_period: Duration::from_secs(3600),
        ..ReloadConfig::default()
    };
    let (updates, _watcher) =
        watch_policy_file(&path, started_with.clone(), &registry, cfg).unwrap();
    // The test's own view of what was published (the scheduler gets its own receiver).
    let mut published = updates.clone();
    let mut run = run_config("replica-1");
    run.policy = started_with;
    run.policy_updates = Some(updates);
    let replica = spawn_replica_with_config(
        &api,
        "replica-1",
        ReplicaConfig {
            run,
            election: None,
            election_client: None,
        },
        registry.clone(),
    )
    .await;
    let reloads = |result: &str| {
        metric(
            &registry,
            "scheduler_policy_reloads_total",
            &[("result", result)],
        )
    };

    // MostRequested packs: the second pod joins the first.
    let first = schedule(&api, "packed-1").await;
    assert_eq!(
        schedule(&api, "packed-2").await,
        first,
        "MostRequested packs"
    );
    let other = if first == "node-a" {
        "node-b"
    } else {
        "node-a"
    };

    // The ConfigMap changes to LeastRequested: the next pod goes to the emptier node.
    volume.update(LEAST);
    tokio::time::timeout(Duration::from_secs(20), published.changed())
        .await
        .expect("the new policy is published")
        .unwrap();
    assert_eq!(reloads("success"), 1.0);
    assert_eq!(
        schedule(&api, "spread-1").await,
        other,
        "LeastRequested spreads: the reloaded policy is in force"
    );

    // A broken version: counted, logged, and the running policy (LeastRequested) stays.
    volume.update(BAD);
    wait_for("the failed reload to be counted", || {
        reloads("failure") == 1.0
    })
    .await;
    assert!(
        !published.has_changed().unwrap(),
        "nothing published for a bad file"
    );
    assert_eq!(
        metric(&registry, "scheduler_policy_file_rejected", &[]),
        1.0
    );
    // node `first` holds 2 cpu, `other` 1: LeastRequested picks `other`, MostRequested would not.
    assert_eq!(schedule(&api, "spread-2").await, other);
    assert!(
        !replica.join.is_finished(),
        "a bad reload never stops the replica"
    );

    // Fixed again: reloaded, the flag clears.
    volume.update(MOST);
    tokio::time::timeout(Duration::from_secs(20), published.changed())
        .await
        .expect("the fixed policy is published")
        .unwrap();
    assert_eq!(reloads("success"), 2.0);
    assert_eq!(
        metric(&registry, "scheduler_policy_file_rejected", &[]),
        0.0
    );
    replica.join.abort();
    api.shutdown().await;
}

/// A reloaded policy brings its extenders: a filter extender added by a reload constrains the
/// next pods, and a reload without extenders removes it again. (Before the fix the loop swapped
/// only the framework, so the extenders of the policy the replica started with stayed in force.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reloaded_policy_swaps_its_extenders_in_and_out() {
    let api = ApiServer::start().await;
    api.seed(&node("node-a")).unwrap();
    api.seed(&node("node-b")).unwrap();
    let mut volume = ConfigMapVolume::new(
        "mini-scheduler-policy-reload-extenders",
        "policy-config-file.json",
        LEAST,
    );
    let path = volume.file();
    let started_with = scheduler::policy::load_policy_file(&path)
        .unwrap()
        .resolved
        .with_feature_gates(&scheduler::policy::FeatureGates::default());
    let registry = prometheus::Registry::new();
    let cfg = ReloadConfig {
        debounce: Duration::from_millis(50),
        resync_period: Duration::from_secs(3600),
        ..ReloadConfig::default()
    };
    let (updates, _watcher) =
        watch_policy_file(&path, started_with.clone(), &registry, cfg).unwrap();
    let mut published = updates.clone();
    let mut run = run_config("replica-1");
    run.policy = started_with;
    run.policy_updates = Some(updates);
    let replica = spawn_replica_with_config(
        &api,
        "replica-1",
        ReplicaConfig {
            run,
            election: None,
            election_client: None,
        },
        registry.clone(),
    )
    .await;

    let first = schedule(&api, "first").await;
    let other = if first == "node-a" {
        "node-b"
    } else {
        "node-a"
    };
    // An extender that keeps only `first`'s node: LeastRequested alone would pick `other`.
    let keep = first.clone();
    let ext = ExtenderServer::start(
        sync_handler(move |call| {
            let names: Vec<String> = node_names(&call.body)
                .into_iter()
                .filter(|n| *n == keep)
                .collect();
            Reply::ok(json!({"NodeNames": names, "FailedNodes": {}}))
        }),
        None,
    );
    let with_extender = format!(
        r#"{{"kind": "Policy", "apiVersion": "v1",
 "predicates": [{{"name": "PodFitsResources"}}],
 "priorities": [{{"name": "LeastRequestedPriority", "weight": 1}}],
 "extenders": [{{"urlPrefix": "{}", "filterVerb": "filter", "weight": 1,
   "nodeCacheCapable": true, "httpTimeout": 5000000000}}]}}
"#,
        ext.url()
    );
    volume.update(&with_extender);
    tokio::time::timeout(Duration::from_secs(20), published.changed())
        .await
        .expect("the policy with the extender is published")
        .unwrap();
    assert_eq!(
        schedule(&api, "filtered").await,
        first,
        "the reloaded extender's filter is in force"
    );
    let filter_calls = ext.calls_of("filter").len();
    assert!(filter_calls >= 1, "the extender was called");

    // Back to the policy without extenders: `other` (1 pod less) wins again, no more calls.
    volume.update(LEAST);
    tokio::time::timeout(Duration::from_secs(20), published.changed())
        .await
        .expect("the policy without extenders is published")
        .unwrap();
    assert_eq!(schedule(&api, "unfiltered").await, other);
    assert_eq!(ext.calls_of("filter").len(), filter_calls);
    replica.join.abort();
    api.shutdown().await;
}
