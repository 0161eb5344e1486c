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
use scheduler::controller::reload::{PolicyUpdates, PolicyWatcher, watch_policy_file};
use serde_json::json;
use tests::apiserver::ApiServer;
use tests::configmap::ConfigMapVolume;
use tests::extender::{ExtenderServer, Reply, node_names, sync_handler};
use tests::objects;
use tests::replica::{
    ReplicaHandle, metric, reload_test_config, run_config, spawn_reloading_replica,
};

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

const WAIT: Duration = Duration::from_secs(20);

/// Creates the pod and returns the node it is bound to.
async fn schedule(api: &ApiServer, name: &str) -> String {
    objects::create_and_wait_bound(api, &pod(name), WAIT).await
}

/// One replica (no election) whose `--policy-config-file` is a ConfigMap volume `volume_name`
/// holding `initial`, watched for reloads, against an API double with node-a and node-b.
struct Reloading {
    api: ApiServer,
    volume: ConfigMapVolume,
    registry: prometheus::Registry,
    /// The test's own view of what was published (the scheduler has its own receiver).
    published: PolicyUpdates,
    replica: ReplicaHandle,
    _watcher: PolicyWatcher,
}

impl Reloading {
    async fn start(volume_name: &str, initial: &str) -> Reloading {
        let api = ApiServer::start().await;
        api.seed(&node("node-a")).unwrap();
        api.seed(&node("node-b")).unwrap();
        let volume = ConfigMapVolume::new(volume_name, "policy-config-file.json", initial);
        let path = volume.file();
        let started_with = scheduler::policy::load_policy_file(&path)
            .unwrap()
            .resolved
            .with_feature_gates(&scheduler::policy::FeatureGates::default());
        let registry = prometheus::Registry::new();
        let (updates, watcher) =
            watch_policy_file(&path, started_with.clone(), &registry, reload_test_config())
                .unwrap();
        let published = updates.clone();
        let mut run = run_config("replica-1");
        run.profile = scheduler::profile::Profile::from_resolved(started_with, "policy").unwrap();
        let replica =
            spawn_reloading_replica(&api, "replica-1", run, updates, registry.clone()).await;
        Reloading {
            api,
            volume,
            registry,
            published,
            replica,
            _watcher: watcher,
        }
    }

    /// Writes `policy` into the ConfigMap and waits until it is published.
    async fn reload(&mut self, policy: &str, what: &str) {
        self.volume.update(policy);
        tokio::time::timeout(Duration::from_secs(20), self.published.changed())
            .await
            .unwrap_or_else(|_| panic!("{what} is published"))
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reloaded_policy_applies_to_the_next_pods_and_a_bad_one_is_kept_out() {
    let mut t = Reloading::start("mini-scheduler-policy-reload", MOST).await;
    let registry = t.registry.clone();
    let reloads = |result: &str| {
        metric(
            &registry,
            "scheduler_policy_reloads_total",
            &[("result", result)],
        )
    };

    // MostRequested packs: the second pod joins the first.
    let first = schedule(&t.api, "packed-1").await;
    assert_eq!(
        schedule(&t.api, "packed-2").await,
        first,
        "MostRequested packs"
    );
    let other = if first == "node-a" {
        "node-b"
    } else {
        "node-a"
    };

    // The ConfigMap changes to LeastRequested: the next pod goes to the emptier node.
    t.reload(LEAST, "the new policy").await;
    assert_eq!(reloads("success"), 1.0);
    assert_eq!(
        schedule(&t.api, "spread-1").await,
        other,
        "LeastRequested spreads: the reloaded policy is in force"
    );

    // A broken version: counted, logged, and the running policy (LeastRequested) stays.
    t.volume.update(BAD);
    objects::wait_for("the failed reload to be counted", WAIT, || {
        reloads("failure") == 1.0
    })
    .await;
    assert!(
        !t.published.has_changed().unwrap(),
        "nothing published for a bad file"
    );
    assert_eq!(
        metric(&registry, "scheduler_policy_file_rejected", &[]),
        1.0
    );
    // node `first` holds 2 cpu, `other` 1: LeastRequested picks `other`, MostRequested would not.
    assert_eq!(schedule(&t.api, "spread-2").await, other);
    assert!(
        !t.replica.join.is_finished(),
        "a bad reload never stops the replica"
    );

    // Fixed again: reloaded, the flag clears.
    t.reload(MOST, "the fixed policy").await;
    assert_eq!(reloads("success"), 2.0);
    assert_eq!(
        metric(&registry, "scheduler_policy_file_rejected", &[]),
        0.0
    );
    t.replica.join.abort();
    t.api.shutdown().await;
}

/// A reloaded policy brings its extenders: a filter extender added by a reload constrains the
/// next pods, and a reload without extenders removes it again. (Before the fix the loop swapped
/// only the framework, so the extenders of the policy the replica started with stayed in force.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reloaded_policy_swaps_its_extenders_in_and_out() {
    let mut t = Reloading::start("mini-scheduler-policy-reload-extenders", LEAST).await;

    let first = schedule(&t.api, "first").await;
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
    t.reload(&with_extender, "the policy with the extender")
        .await;
    assert_eq!(
        schedule(&t.api, "filtered").await,
        first,
        "the reloaded extender's filter is in force"
    );
    let filter_calls = ext.calls_of("filter").len();
    assert!(filter_calls >= 1, "the extender was called");

    // Back to the policy without extenders: `other` (1 pod less) wins again, no more calls.
    t.reload(LEAST, "the policy without extenders").await;
    assert_eq!(schedule(&t.api, "unfiltered").await, other);
    assert_eq!(ext.calls_of("filter").len(), filter_calls);
    t.replica.join.abort();
    t.api.shutdown().await;
}

/// A pod of `cpu` cores at `priority`.
fn pod_of(name: &str, cpu: &str, priority: i32) -> Pod {
    let mut p = objects::pod(name, &[("cpu", cpu), ("memory", "1Gi")]);
    if let Some(spec) = p.spec.as_mut() {
        spec.priority = Some(priority);
    }
    p
}

/// A reload that adds an extender that is not `nodeCacheCapable` (sent whole `v1.Node`s, and
/// whole victim `v1.Pod`s to preempt) while the replica held nodes and bound pods without
/// their objects (it started without such an extender, decoding them slim): the node and
/// assigned-pod watches relist, so the extender gets the nodes seeded at start — never
/// updated since — with their status (capacity), and victims as whole pods, and the pods are
/// scheduled. (Before, the cached nodes had no object until their next update, so every
/// filter call failed naming them and the pod stayed pending.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reload_adding_a_non_cache_capable_extender_sends_whole_nodes_and_victims() {
    let mut t = Reloading::start("mini-scheduler-policy-reload-whole-objects", LEAST).await;
    // 6 of 8 cores taken on each node, by pods bound while nobody kept objects.
    let mut low = Vec::new();
    for name in ["low-1", "low-2"] {
        low.push(objects::create_and_wait_bound(&t.api, &pod_of(name, "6", 0), WAIT).await);
    }
    low.sort();
    assert_eq!(low, ["node-a", "node-b"], "LeastRequested spreads");

    // Filter: every node passes (echoed back as the NodeList it was sent). Preempt: every
    // candidate stands (by UID, as upstream's extenders answer).
    let ext = ExtenderServer::spawn(
        sync_handler(|call| match call.verb.as_str() {
            "filter" => Reply::ok(json!({"Nodes": call.body["Nodes"], "FailedNodes": {}})),
            _ => {
                let victims: serde_json::Map<String, serde_json::Value> =
                    call.body["NodeNameToVictims"]
                        .as_object()
                        .cloned()
                        .unwrap_or_default()
                        .into_iter()
                        .map(|(node, v)| {
                            let pods: Vec<serde_json::Value> = v["Pods"]
                                .as_array()
                                .cloned()
                                .unwrap_or_default()
                                .iter()
                                .map(|p| json!({"UID": p["metadata"]["uid"]}))
                                .collect();
                            (node, json!({"Pods": pods, "NumPDBViolations": 0}))
                        })
                        .collect();
                Reply::ok(json!({"NodeNameToMetaVictims": victims}))
            }
        }),
        None,
    )
    .await;
    let with_extender = format!(
        r#"{{"kind": "Policy", "apiVersion": "v1",
 "predicates": [{{"name": "PodFitsResources"}}],
 "priorities": [{{"name": "LeastRequestedPriority", "weight": 1}}],
 "extenders": [{{"urlPrefix": "{}", "filterVerb": "filter", "preemptVerb": "preempt",
   "weight": 1, "nodeCacheCapable": false, "httpTimeout": 5000000000}}]}}
"#,
        ext.url()
    );
    t.reload(&with_extender, "the policy with the extender")
        .await;

    // A pod that fits either node: the filter call carries both nodes whole.
    objects::create_and_wait_bound(&t.api, &pod_of("small", "1", 0), WAIT).await;
    let filters = ext.calls_of("filter");
    let first = filters.first().expect("the extender filtered");
    assert_eq!(first.pod_name(), "small");
    let items = first.body["Nodes"]["items"].as_array().unwrap();
    let mut names: Vec<&str> = items
        .iter()
        .map(|n| n["metadata"]["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["node-a", "node-b"]);
    for n in items {
        assert_eq!(
            n["status"]["capacity"]["cpu"], "8",
            "a whole node, with its capacity: {n}"
        );
    }

    // A pod that fits nowhere without preemption: the victims are sent whole.
    objects::create_and_wait_bound(&t.api, &pod_of("urgent", "8", 1000), WAIT).await;
    let preempts = ext.calls_of("preempt");
    let call = preempts.first().expect("the extender was asked to preempt");
    let victims = call.body["NodeNameToVictims"].as_object().unwrap();
    assert!(!victims.is_empty());
    for v in victims.values() {
        for p in v["Pods"].as_array().unwrap() {
            assert!(p["metadata"]["uid"].is_string(), "a whole pod: {p}");
            assert!(
                p["spec"]["containers"][0]["resources"]["requests"]["cpu"].is_string(),
                "a whole pod: {p}"
            );
        }
    }
    t.replica.join.abort();
    t.api.shutdown().await;
}
