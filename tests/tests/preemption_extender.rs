//! Extenders with a `preemptVerb` against a real extender served on loopback
//! ([`ExtenderServer`]): `DefaultPreemption` (through `simulate`, the same PostFilter cluster
//! mode runs) posts v1.22's `ExtenderPreemptionArgs`, resolves the answer's
//! `NodeNameToMetaVictims` by UID on the cycle's snapshot, and lets the extender remove
//! candidates or victims; extender errors stop preemption unless the extender is `ignorable`.
//!
//! The cluster: node-a and node-b (2 cpu each) full with two 1-cpu pods each, priority 0 on
//! node-a and 10 on node-b; `urgent` (priority 1000, 2 cpu) preempts. Without extenders it takes
//! node-a (its victims have the lower highest priority).
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use scheduler::policy::ResolvedPolicy;
use scheduler::sim::{self, Cluster, PodOutcome, PodStatus, SimulationConfig};
use serde_json::{Value, json};
use tests::extender::{Call, ExtenderServer, Reply, sync_handler};
use tests::objects;

const SCHEDULER_NAME: &str = "mini-scheduler";

fn node(name: &str, cpu: &str) -> Node {
    let mut n = objects::node(name, &[("cpu", cpu), ("memory", "8Gi"), ("pods", "110")]);
    n.metadata.uid = Some(format!("uid-{name}"));
    n
}

fn pod(name: &str, cpu: &str, priority: i32, node: Option<&str>) -> Pod {
    let mut p = objects::pod(name, &[("cpu", cpu), ("memory", "64Mi")]);
    p.metadata.uid = Some(format!("uid-{name}"));
    let spec = p.spec.as_mut().unwrap();
    spec.priority = Some(priority);
    spec.node_name = node.map(String::from);
    p
}

/// `predicates: [PodFitsResources]`, `priorities: []` and these extenders.
fn policy(extenders: Value) -> ResolvedPolicy {
    let doc = json!({
        "kind": "Policy",
        "apiVersion": "v1",
        "predicates": [{"name": "PodFitsResources"}],
        "priorities": [],
        "extenders": extenders,
    });
    scheduler::policy::parse_policy("test-policy.json", &doc.to_string())
        .unwrap()
        .resolved
}

fn cluster(node_a_cpu: &str) -> Cluster {
    Cluster {
        nodes: vec![node("node-a", node_a_cpu), node("node-b", "2")],
        pods: vec![
            pod("a1", "1", 0, Some("node-a")),
            pod("a2", "1", 0, Some("node-a")),
            pod("b1", "1", 10, Some("node-b")),
            pod("b2", "1", 10, Some("node-b")),
            pod("urgent", "2", 1000, None),
        ],
        ..Default::default()
    }
}

fn simulate(policy: &ResolvedPolicy, cluster: Cluster) -> Vec<PodOutcome> {
    let cfg = SimulationConfig {
        scheduler_name: SCHEDULER_NAME.into(),
        seed: 7,
        percentage_of_nodes_to_score: 100,
        explain: true,
    };
    sim::simulate(cluster, policy, &cfg).unwrap().report.pods
}

/// The last outcome of `name`.
fn last<'a>(out: &'a [PodOutcome], name: &str) -> &'a PodOutcome {
    out.iter().rev().find(|o| o.name == name).unwrap()
}

fn preempted(out: &[PodOutcome]) -> Vec<String> {
    let mut v: Vec<String> = out
        .iter()
        .filter(|o| o.status == PodStatus::Preempted)
        .map(|o| o.name.clone())
        .collect();
    v.sort();
    v
}

/// node → victim UIDs of a preempt call, from `NodeNameToVictims` (full pods) or
/// `NodeNameToMetaVictims` (UIDs).
fn victim_uids(body: &Value) -> BTreeMap<String, Vec<String>> {
    let (key, uid) = if body["NodeNameToVictims"].is_object() {
        ("NodeNameToVictims", "/metadata/uid")
    } else {
        ("NodeNameToMetaVictims", "/UID")
    };
    body[key]
        .as_object()
        .unwrap()
        .iter()
        .map(|(node, v)| {
            let uids = v["Pods"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p.pointer(uid).unwrap().as_str().unwrap().to_string())
                .collect();
            (node.clone(), uids)
        })
        .collect()
}

/// An `ExtenderPreemptionResult` (always meta victims, as upstream's extenders answer).
fn answer(m: &BTreeMap<String, Vec<String>>) -> Reply {
    let nodes: serde_json::Map<String, Value> = m
        .iter()
        .map(|(node, uids)| {
            let pods: Vec<Value> = uids.iter().map(|u| json!({"UID": u})).collect();
            (node.clone(), json!({"Pods": pods, "NumPDBViolations": 0}))
        })
        .collect();
    Reply::ok(json!({"NodeNameToMetaVictims": nodes}))
}

/// An extender that rewrites the candidates it gets with `f`.
fn preempting(
    f: impl Fn(BTreeMap<String, Vec<String>>) -> BTreeMap<String, Vec<String>> + Send + Sync + 'static,
) -> ExtenderServer {
    ExtenderServer::start(
        sync_handler(move |c: &Call| answer(&f(victim_uids(&c.body)))),
        None,
    )
}

/// The request carries the preemptor and every candidate with its victims as full Pod objects
/// (`NodeNameToVictims`, Go field names) — or only their UIDs when the extender is
/// `nodeCacheCapable` (`NodeNameToMetaVictims`); an answer returning them all changes nothing.
#[test]
fn request_carries_the_candidates_in_v1_22_shape() {
    let server = preempting(|m| m);
    for cache_capable in [false, true] {
        let p = policy(json!([{
            "urlPrefix": server.url(), "preemptVerb": "preempt",
            "nodeCacheCapable": cache_capable,
        }]));
        let out = simulate(&p, cluster("2"));
        assert_eq!(preempted(&out), ["a1", "a2"], "cache {cache_capable}");
        let urgent = last(&out, "urgent");
        assert_eq!(urgent.status, PodStatus::Scheduled);
        assert_eq!(urgent.node.as_deref(), Some("node-a"));
        let kept = urgent.preemption.as_ref().unwrap().after_extenders.clone();
        assert_eq!(kept.unwrap().len(), 2);
    }
    let calls = server.calls_of("preempt");
    assert_eq!(calls.len(), 2);
    let full = &calls[0].body;
    assert_eq!(full["Pod"]["metadata"]["name"], "urgent");
    assert_eq!(full["NodeNameToMetaVictims"], Value::Null);
    let node_a = &full["NodeNameToVictims"]["node-a"];
    assert_eq!(node_a["NumPDBViolations"], 0);
    let names: Vec<&str> = node_a["Pods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 2);
    assert!(names.contains(&"a1") && names.contains(&"a2"), "{names:?}");
    assert_eq!(node_a["Pods"][0]["spec"]["nodeName"], "node-a");
    assert_eq!(
        full["NodeNameToVictims"]["node-b"]["Pods"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let meta = &calls[1].body;
    assert_eq!(meta["Pod"]["metadata"]["name"], "urgent");
    assert_eq!(meta["NodeNameToVictims"], Value::Null);
    let mut uids = victim_uids(meta);
    uids.values_mut().for_each(|v| v.sort());
    assert_eq!(
        uids,
        BTreeMap::from([
            ("node-a".to_string(), vec!["uid-a1".into(), "uid-a2".into()]),
            ("node-b".to_string(), vec!["uid-b1".into(), "uid-b2".into()]),
        ])
    );
    assert_eq!(
        meta["NodeNameToMetaVictims"]["node-a"]["NumPDBViolations"],
        0
    );
}

/// An extender that removes node-a sends the preemptor to node-b, whose pods go instead.
#[test]
fn an_extender_removes_a_candidate() {
    let server = preempting(|mut m| {
        m.remove("node-a");
        m
    });
    let p = policy(json!([{"urlPrefix": server.url(), "preemptVerb": "preempt"}]));
    let out = simulate(&p, cluster("2"));
    assert_eq!(preempted(&out), ["b1", "b2"]);
    let urgent = last(&out, "urgent");
    assert_eq!(urgent.status, PodStatus::Scheduled);
    assert_eq!(urgent.node.as_deref(), Some("node-b"));
    assert_eq!(urgent.nominated_node_name.as_deref(), Some("node-b"));
}

/// The extender's victims are trusted, as in v1.22: one that keeps only a1 on node-a (and drops
/// node-b) gets only a1 evicted; the preemptor is nominated to node-a and waits there, as a2
/// still takes the room it needs.
#[test]
fn an_extender_removes_a_victim() {
    let server =
        preempting(|m| BTreeMap::from([("node-a".to_string(), m["node-a"][..1].to_vec())]));
    let p = policy(json!([{"urlPrefix": server.url(), "preemptVerb": "preempt"}]));
    let out = simulate(&p, cluster("2"));
    let victims = preempted(&out);
    assert_eq!(victims.len(), 1, "{victims:?}");
    let urgent = last(&out, "urgent");
    assert_eq!(urgent.status, PodStatus::Unschedulable);
    assert_eq!(urgent.nominated_node_name.as_deref(), Some("node-a"));
    assert_eq!(
        urgent.message,
        "0/2 nodes are available: 2 Insufficient cpu."
    );
}

/// Victims are named by UID and resolved on the node: on a 3-cpu node-a the dry run evicts one
/// pod; the extender picks the other one instead.
#[test]
fn an_extender_replaces_a_victim_by_uid() {
    let server = preempting(|m| {
        let chosen = &m["node-a"];
        assert_eq!(chosen.len(), 1, "{m:?}");
        let other = if chosen[0] == "uid-a1" {
            "uid-a2"
        } else {
            "uid-a1"
        };
        BTreeMap::from([("node-a".to_string(), vec![other.to_string()])])
    });
    let p = policy(json!([{"urlPrefix": server.url(), "preemptVerb": "preempt"}]));
    let out = simulate(&p, cluster("3"));
    let dry_run = last(&out, "urgent").preemption.clone().unwrap();
    let dry_victim = dry_run
        .candidates
        .iter()
        .find(|c| c.node == "node-a")
        .unwrap()
        .victims
        .clone();
    let evicted = preempted(&out);
    assert_eq!(evicted.len(), 1);
    assert_ne!(format!("default/{}", evicted[0]), dry_victim[0]);
    let urgent = last(&out, "urgent");
    assert_eq!(urgent.status, PodStatus::Scheduled);
    assert_eq!(urgent.node.as_deref(), Some("node-a"));
}

/// An empty answer ends preemption: nothing is evicted, nothing nominated, and the pod keeps
/// the cycle's FitError text.
#[test]
fn an_empty_answer_ends_preemption() {
    let server = preempting(|_| BTreeMap::new());
    let p = policy(json!([{"urlPrefix": server.url(), "preemptVerb": "preempt"}]));
    let out = simulate(&p, cluster("2"));
    assert!(preempted(&out).is_empty());
    let urgent = last(&out, "urgent");
    assert_eq!(urgent.status, PodStatus::Unschedulable);
    assert_eq!(urgent.nominated_node_name, None);
    assert_eq!(
        urgent.message,
        "0/2 nodes are available: 2 Insufficient cpu."
    );
    let pre = urgent.preemption.clone().unwrap();
    assert_eq!(pre.after_extenders, Some(vec![]));
    assert_eq!(pre.message, "");
}

/// A failing extender (non-200, or an answer naming a pod not on the node) stops preemption;
/// the same extender marked `ignorable` is skipped and preemption goes on as without it.
#[test]
fn errors_stop_preemption_unless_ignorable() {
    let server = ExtenderServer::start(
        sync_handler(|c: &Call| match c.verb.as_str() {
            "unknown-pod" => answer(&BTreeMap::from([(
                "node-a".to_string(),
                vec!["uid-nope".to_string()],
            )])),
            "unknown-node" => answer(&BTreeMap::from([("node-z".to_string(), vec![])])),
            _ => Reply {
                status: 500,
                body: json!({}),
                delay: Duration::ZERO,
            },
        }),
        None,
    );
    let url = server.url();
    let cases = [
        (
            "down",
            format!("failed down with extender at URL {url}/down, code 500"),
        ),
        (
            "unknown-pod",
            format!(
                "extender: {url} claims to preempt pod (UID: &{{uid-nope}}) on node: node-a, but \
                 the pod is not found on that node"
            ),
        ),
        (
            "unknown-node",
            "nodeinfo not found for node name \"node-z\"".to_string(),
        ),
    ];
    for (verb, want) in cases {
        for ignorable in [false, true] {
            let p =
                policy(json!([{"urlPrefix": url, "preemptVerb": verb, "ignorable": ignorable}]));
            let out = simulate(&p, cluster("2"));
            let urgent = last(&out, "urgent");
            if ignorable {
                assert_eq!(preempted(&out), ["a1", "a2"], "{verb}");
                assert_eq!(urgent.status, PodStatus::Scheduled, "{verb}");
                assert_eq!(urgent.node.as_deref(), Some("node-a"), "{verb}");
            } else {
                assert!(preempted(&out).is_empty(), "{verb}");
                assert_eq!(urgent.status, PodStatus::Unschedulable, "{verb}");
                assert_eq!(urgent.nominated_node_name, None, "{verb}");
                assert_eq!(
                    urgent.message, "0/2 nodes are available: 2 Insufficient cpu.",
                    "{verb}"
                );
                assert_eq!(urgent.preemption.as_ref().unwrap().message, want, "{verb}");
            }
        }
    }
}

/// Extenders that do not preempt, or are not interested in the pod (managed resources it does
/// not request), are not called.
#[test]
fn extenders_without_preempt_verb_or_interest_are_not_called() {
    let server = preempting(|_| BTreeMap::new());
    let p = policy(json!([
        {"urlPrefix": server.url(), "filterVerb": ""},
        {"urlPrefix": server.url(), "preemptVerb": "preempt",
         "managedResources": [{"name": "example.com/widget"}]},
    ]));
    let out = simulate(&p, cluster("2"));
    assert_eq!(preempted(&out), ["a1", "a2"]);
    assert!(server.calls().is_empty(), "{:?}", server.calls());
    assert_eq!(
        last(&out, "urgent")
            .preemption
            .clone()
            .unwrap()
            .after_extenders,
        None
    );
}

/// Cluster mode runs the same PostFilter: the extender removes node-a, so the leader deletes
/// node-b's pods (and nothing on node-a) and binds the preemptor there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_mode_asks_the_extender_too() {
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::{Api, PostParams};
    use tests::apiserver::ApiServer;
    use tests::objects::{node_of, wait_for};
    use tests::replica::{run_config, spawn_replica_with};

    const WAIT: Duration = Duration::from_secs(30);
    let api = ApiServer::start().await;
    let c = cluster("2");
    for n in &c.nodes {
        api.seed(n).unwrap();
    }
    let (running, pending): (Vec<Pod>, Vec<Pod>) = c
        .pods
        .into_iter()
        .partition(|p| p.spec.as_ref().unwrap().node_name.is_some());
    for p in &running {
        api.seed(p).unwrap();
    }
    let ext = ExtenderServer::spawn(
        sync_handler(|c: &Call| {
            let mut m = victim_uids(&c.body);
            m.remove("node-a");
            answer(&m)
        }),
        None,
    )
    .await;
    let mut cfg = run_config("replica-1");
    cfg.profile = scheduler::profile::Profile::from_resolved(
        policy(json!([{"urlPrefix": ext.url(), "preemptVerb": "preempt"}])),
        "policy",
    )
    .unwrap();
    let _replica = spawn_replica_with(&api, "replica-1", true, cfg).await;
    for p in &pending {
        Api::<Pod>::namespaced(api.client("tester"), "default")
            .create(&PostParams::default(), p)
            .await
            .unwrap();
    }
    wait_for("urgent bound", WAIT, || node_of(&api, "urgent").is_some()).await;
    assert_eq!(node_of(&api, "urgent").as_deref(), Some("node-b"));
    let mut deleted: Vec<String> = api
        .writes()
        .into_iter()
        .filter(|w| w.client == "replica-1" && w.method == "DELETE" && w.kind == "Pod")
        .filter_map(|w| w.name)
        .collect();
    deleted.sort();
    assert_eq!(deleted, ["b1", "b2"]);
    for a in ["a1", "a2"] {
        assert_eq!(node_of(&api, a).as_deref(), Some("node-a"));
    }
    let calls = ext.calls_of("preempt");
    assert!(!calls.is_empty());
    assert_eq!(calls[0].body["Pod"]["metadata"]["name"], "urgent");
}
