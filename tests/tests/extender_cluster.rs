//! Cluster mode with a Policy extender: a replica (leader election on, fast profile) against the
//! API test double, and an extender served on loopback that filters, scores and binds the pods
//! it is interested in (those using `example.com/widget`, a managed resource the scheduler
//! ignores), by writing the Binding to the API double itself.
//!
//! Real time (the test double and the extender serve HTTP in real time); waits poll with a
//! timeout.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Binding, Node, ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, PostParams};
use scheduler::controller::ANNOTATION_SCHEDULED_BY;
use serde_json::{Value, json};
use tests::apiserver::ApiServer;
use tests::extender::{Call, ExtenderServer, Handler, Reply, node_names};
use tests::objects::{self, event_notes, node_of, pod_scheduled, wait_for};
use tests::replica::{run_config, spawn_replica_with};

const WAIT: Duration = Duration::from_secs(20);
const WIDGET: &str = "example.com/widget";

fn node(name: &str) -> Node {
    objects::node(name, &[("cpu", "4"), ("memory", "8Gi"), ("pods", "110")])
}

fn pod(name: &str, widgets: Option<&str>) -> Pod {
    let mut requests = vec![("cpu", "100m"), ("memory", "64Mi")];
    if let Some(w) = widgets {
        requests.push((WIDGET, w));
    }
    objects::pod(name, &requests)
}

/// The repository's sample policy with one extender added.
fn policy_with_extender(url: &str) -> scheduler::policy::ResolvedPolicy {
    policy_with_extender_timeout(url, Duration::from_secs(5))
}

/// [`policy_with_extender`] with the extender's `httpTimeout`.
fn policy_with_extender_timeout(url: &str, timeout: Duration) -> scheduler::policy::ResolvedPolicy {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../config/policy-config-file.json");
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    doc["extenders"] = json!([{
        "urlPrefix": url,
        "filterVerb": "filter",
        "prioritizeVerb": "prioritize",
        "bindVerb": "bind",
        "weight": 5,
        "nodeCacheCapable": true,
        "httpTimeout": i64::try_from(timeout.as_nanos()).unwrap(),
        "managedResources": [{"name": WIDGET, "ignoredByScheduler": true}],
    }]);
    scheduler::policy::parse_policy("policy-with-extender.json", &doc.to_string())
        .unwrap()
        .resolved
}

/// The extender's bind verb done as a binding extender does it: `POST pods/<PodName>/binding`
/// to the API double (as the extender's own client), answering the API's error as the
/// `ExtenderBindingResult` error.
async fn bind_as_extender(client: kube::Client, args: &Value) -> Reply {
    let name = args["PodName"].as_str().unwrap_or_default().to_string();
    let ns = args["PodNamespace"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let binding = Binding {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(ns.clone()),
            uid: args["PodUID"].as_str().map(str::to_string),
            ..Default::default()
        },
        target: ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Node".into()),
            name: args["Node"].as_str().map(str::to_string),
            ..Default::default()
        },
    };
    match Api::<Pod>::namespaced(client, &ns)
        .create_subresource::<_, kube::core::Status>(
            "binding",
            &name,
            &PostParams::default(),
            &binding,
        )
        .await
    {
        Ok(_) => Reply::ok(json!({})),
        Err(e) => Reply::ok(json!({"Error": e.to_string()})),
    }
}

/// Filter: no widgets on node-a; pod `widget-broken` gets an `Error`. Prioritize: node-c best.
/// Bind: `POST pods/<name>/binding` to the API double as client `extender`, except for
/// `widget-refused`, whose binding the extender refuses with an `Error`.
fn extender_handler(client: kube::Client) -> Handler {
    Arc::new(move |call: Call| {
        let client = client.clone();
        Box::pin(async move {
            match call.verb.as_str() {
                "filter" => {
                    if call.pod_name() == "widget-broken" {
                        return Reply::ok(json!({"Error": "widgets exhausted"}));
                    }
                    let names: Vec<String> = node_names(&call.body)
                        .into_iter()
                        .filter(|n| n != "node-a")
                        .collect();
                    Reply::ok(json!({
                        "NodeNames": names,
                        "FailedNodes": {"node-a": "no widgets on node-a"},
                    }))
                }
                "prioritize" => {
                    let list: Vec<Value> = node_names(&call.body)
                        .into_iter()
                        .map(|n| json!({"Host": n, "Score": if n == "node-c" { 10 } else { 0 }}))
                        .collect();
                    Reply::ok(Value::Array(list))
                }
                "bind" => {
                    let b = &call.body;
                    if b["PodName"] == "widget-refused" {
                        return Reply::ok(json!({"Error": "no widget left for widget-refused"}));
                    }
                    bind_as_extender(client, b).await
                }
                _ => Reply {
                    status: 404,
                    body: json!({}),
                    delay: Duration::ZERO,
                },
            }
        })
    })
}

/// The extender filters (node-a out), scores (node-c best) and binds `widget-0`; `plain-0`,
/// which it does not manage, never reaches it and is bound by the replica with its annotations;
/// `widget-broken`'s filter error becomes its FailedScheduling message; the extender's refusal
/// to bind `widget-refused` gives v1.22's "binding rejected: <error>" FailedScheduling and
/// `PodScheduled=False, reason SchedulerError`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extender_filters_scores_and_binds_in_cluster_mode() {
    let api = ApiServer::start().await;
    for n in ["node-a", "node-b", "node-c"] {
        api.seed(&node(n)).unwrap();
    }
    let ext = ExtenderServer::spawn(extender_handler(api.client("extender")), None).await;
    let mut cfg = run_config("replica-1");
    cfg.profile =
        scheduler::profile::Profile::from_resolved(policy_with_extender(&ext.url()), "policy")
            .unwrap();
    let replica = spawn_replica_with(&api, "replica-1", true, cfg).await;

    for p in [
        pod("widget-0", Some("1")),
        pod("plain-0", None),
        pod("widget-broken", Some("1")),
        pod("widget-refused", Some("1")),
    ] {
        api.seed(&p).unwrap();
    }
    wait_for(
        "widget-0 and plain-0 bound, widget-broken reported",
        WAIT,
        || {
            node_of(&api, "widget-0").is_some()
                && node_of(&api, "plain-0").is_some()
                && !event_notes(&api, "widget-broken", "FailedScheduling").is_empty()
                && !event_notes(&api, "widget-0", "Scheduled").is_empty()
                && pod_scheduled(&api, "widget-refused").is_some()
        },
    )
    .await;

    // widget-0: bound by the extender, to the node it scored best, without our annotations.
    assert_eq!(node_of(&api, "widget-0").as_deref(), Some("node-c"));
    let bindings: Vec<_> = api
        .writes()
        .into_iter()
        .filter(|w| w.subresource.as_deref() == Some("binding"))
        .collect();
    let by = |pod: &str| -> Vec<String> {
        bindings
            .iter()
            .filter(|w| w.name.as_deref() == Some(pod))
            .map(|w| w.client.clone())
            .collect()
    };
    assert_eq!(by("widget-0"), ["extender"]);
    let widget = api.get::<Pod>("default", "widget-0").unwrap();
    assert!(
        !widget
            .metadata
            .annotations
            .unwrap_or_default()
            .contains_key(ANNOTATION_SCHEDULED_BY)
    );
    assert_eq!(
        event_notes(&api, "widget-0", "Scheduled"),
        ["Successfully assigned default/widget-0 to node-c"]
    );

    // plain-0: not the extender's business; bound by the replica.
    assert_eq!(by("plain-0"), ["replica-1"]);
    let plain = api.get::<Pod>("default", "plain-0").unwrap();
    assert_eq!(
        plain
            .metadata
            .annotations
            .unwrap_or_default()
            .get(ANNOTATION_SCHEDULED_BY)
            .map(String::as_str),
        Some("replica-1")
    );

    // widget-broken: the extender's Error text is the FailedScheduling message.
    assert_eq!(node_of(&api, "widget-broken"), None);
    assert_eq!(
        event_notes(&api, "widget-broken", "FailedScheduling")[0],
        "widgets exhausted"
    );

    // widget-refused: the extender's bind Error, wrapped as upstream wraps a failed bind.
    assert_eq!(node_of(&api, "widget-refused"), None);
    assert_eq!(
        event_notes(&api, "widget-refused", "FailedScheduling")[0],
        "binding rejected: no widget left for widget-refused"
    );
    assert_eq!(
        pod_scheduled(&api, "widget-refused"),
        Some((
            "False".to_string(),
            "SchedulerError".to_string(),
            "binding rejected: no widget left for widget-refused".to_string()
        ))
    );
    assert!(event_notes(&api, "widget-refused", "Scheduled").is_empty());

    // What the extender saw: only widget pods; all three nodes passed the plugins.
    let calls = ext.calls();
    assert!(
        calls
            .iter()
            .all(|c| c.verb == "bind" || c.pod_name() != "plain-0")
    );
    let filter_0: Vec<&Call> = calls
        .iter()
        .filter(|c| c.verb == "filter" && c.pod_name() == "widget-0")
        .collect();
    assert_eq!(filter_0.len(), 1);
    assert_eq!(
        node_names(&filter_0[0].body),
        ["node-a", "node-b", "node-c"]
    );
    let prioritize: Vec<&Call> = calls
        .iter()
        .filter(|c| c.verb == "prioritize" && c.pod_name() == "widget-0")
        .collect();
    assert_eq!(prioritize.len(), 1);
    assert_eq!(node_names(&prioritize[0].body), ["node-b", "node-c"]);
    let binds: Vec<&Call> = calls
        .iter()
        .filter(|c| c.verb == "bind" && c.body["PodName"] == "widget-0")
        .collect();
    assert_eq!(binds.len(), 1);
    assert_eq!(binds[0].body["PodName"], "widget-0");
    assert_eq!(binds[0].body["Node"], "node-c");
    assert_eq!(
        binds[0].body["PodUID"].as_str(),
        widget.metadata.uid.as_deref()
    );
    assert!(replica.is_leading());
}

/// v1.22 judges a failed binding against the pod's own scheduling cycle
/// (`podSchedulingCycle`, taken right after Pop): a node added while the binding was in flight
/// sends the pod to backoffQ even though other pods were popped since. Judged against the cycle
/// at the failure instead, the pod would wait in unschedulableQ for the periodic flush.
///
/// `widget-slow` (cycle 1) is bound by the extender, which holds the call; meanwhile node-b is
/// added (move request), `big` is scheduled onto it, and `huge` (fits nowhere) is popped after
/// that; then the held bind fails. The pod must come back after its 1 s backoff, not minutes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_binding_is_judged_against_the_pods_own_cycle() {
    let api = ApiServer::start().await;
    api.seed(&objects::node(
        "node-a",
        &[("cpu", "1"), ("memory", "8Gi"), ("pods", "110")],
    ))
    .unwrap();
    let release = Arc::new(tokio::sync::Notify::new());
    let binds = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let handler: Handler = {
        let (client, release, binds) = (api.client("extender"), release.clone(), binds.clone());
        Arc::new(move |call: Call| {
            let (client, release, binds) = (client.clone(), release.clone(), binds.clone());
            Box::pin(async move {
                match call.verb.as_str() {
                    "filter" => Reply::ok(json!({"NodeNames": node_names(&call.body)})),
                    "prioritize" => Reply::ok(Value::Array(
                        node_names(&call.body)
                            .into_iter()
                            .map(|n| json!({"Host": n, "Score": 0}))
                            .collect(),
                    )),
                    "bind" => {
                        if binds.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
                            release.notified().await;
                            return Reply::ok(json!({"Error": "widget controller restarting"}));
                        }
                        bind_as_extender(client, &call.body).await
                    }
                    _ => Reply {
                        status: 404,
                        body: json!({}),
                        delay: Duration::ZERO,
                    },
                }
            })
        })
    };
    let ext = ExtenderServer::spawn(handler, None).await;
    let mut cfg = run_config("replica-1");
    cfg.profile = scheduler::profile::Profile::from_resolved(
        policy_with_extender_timeout(&ext.url(), Duration::from_secs(60)),
        "policy",
    )
    .unwrap();
    let replica = spawn_replica_with(&api, "replica-1", true, cfg).await;

    api.seed(&pod("widget-slow", Some("1"))).unwrap();
    wait_for("the extender holds widget-slow's bind", WAIT, || {
        !ext.calls_of("bind").is_empty()
    })
    .await;

    // While the binding is in flight: a node is added, and a pod that only fits it is
    // scheduled and bound (so the replica has seen node-b before that pod's cycle).
    api.seed(&node("node-b")).unwrap();
    api.seed(&objects::pod("big", &[("cpu", "2"), ("memory", "64Mi")]))
        .unwrap();
    wait_for("big bound to node-b", WAIT, || {
        node_of(&api, "big").is_some()
    })
    .await;
    assert_eq!(node_of(&api, "big").as_deref(), Some("node-b"));
    // Let the replica see big bound (its assigned-pod event is a move request too), then pop
    // one more pod, so that the cycle at the failure is past the last move request.
    tokio::time::sleep(Duration::from_millis(500)).await;
    api.seed(&objects::pod("huge", &[("cpu", "100"), ("memory", "64Mi")]))
        .unwrap();
    wait_for("huge reported unschedulable", WAIT, || {
        !event_notes(&api, "huge", "FailedScheduling").is_empty()
    })
    .await;

    release.notify_one();
    wait_for("widget-slow's binding rejected", WAIT, || {
        pod_scheduled(&api, "widget-slow").is_some_and(|c| c.1 == "SchedulerError")
    })
    .await;
    // Backoff is 1 s for a first failure; unschedulableQ would hold it for a minute or more.
    wait_for(
        "widget-slow retried after its backoff and bound",
        Duration::from_secs(10),
        || node_of(&api, "widget-slow").is_some(),
    )
    .await;
    assert_eq!(ext.calls_of("bind").len(), 2);
    assert_eq!(node_of(&api, "huge"), None);
    assert!(replica.is_leading());
}
