//! Cluster mode with the topology plugins: a pod whose required pod affinity (with a
//! `namespaceSelector`, resolved from the Namespace watch) no pod satisfies is reported
//! unschedulable with v1.22's texts, and is scheduled as soon as a matching pod is bound to a
//! node — the assigned-pod event moves it (v1.22 `AssignedPodAdded`), long before the periodic
//! flush of unschedulable pods would.
//!
//! Real time (the API double serves HTTP); every wait polls with a timeout.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Affinity, Namespace, Node, Pod, PodAffinity, PodAffinityTerm};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kube::api::{Api, PostParams};
use tests::apiserver::ApiServer;
use tests::objects::{self, node_of, wait_for};
use tests::replica::{run_config, spawn_replica_with};

const WAIT: Duration = Duration::from_secs(20);

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn node(name: &str, zone: &str) -> Node {
    let mut n = objects::node(name, &[("cpu", "4"), ("memory", "8Gi"), ("pods", "110")]);
    n.metadata.labels = Some(map(&[
        ("kubernetes.io/hostname", name),
        ("topology.kubernetes.io/zone", zone),
    ]));
    n
}

fn pod(namespace: &str, name: &str, labels: &[(&str, &str)]) -> Pod {
    let mut p = objects::pod(name, &[("cpu", "100m"), ("memory", "64Mi")]);
    p.metadata.namespace = Some(namespace.into());
    p.metadata.labels = Some(map(labels));
    p
}

fn unschedulable_message(api: &ApiServer, ns: &str, name: &str) -> Option<String> {
    api.get::<Pod>(ns, name)?
        .status?
        .conditions?
        .into_iter()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False")
        .and_then(|c| c.message)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_affinity_waits_for_its_peer_and_follows_it() {
    let api = ApiServer::start().await;
    api.seed(&node("n1", "z1")).unwrap();
    api.seed(&node("n2", "z2")).unwrap();
    for (name, team) in [("shop", "web"), ("default", "ops")] {
        api.seed(&Namespace {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(map(&[("team", team)])),
                ..Default::default()
            },
            ..Default::default()
        })
        .unwrap();
    }
    let mut run = run_config("replica-1");
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../config/topology-policy.json");
    let resolved = scheduler::policy::load_policy_file(&path).unwrap().resolved;
    run.profile =
        scheduler::profile::Profile::from_resolved(resolved, "topology-policy.json").unwrap();
    let r = spawn_replica_with(&api, "replica-1", false, run).await;

    // The follower wants the zone of an `app=db` pod in a namespace labelled team=web.
    let mut follower = pod("default", "follower", &[("app", "follower")]);
    follower.spec.as_mut().unwrap().affinity = Some(Affinity {
        pod_affinity: Some(PodAffinity {
            required_during_scheduling_ignored_during_execution: Some(vec![PodAffinityTerm {
                label_selector: Some(LabelSelector {
                    match_labels: Some(map(&[("app", "db")])),
                    match_expressions: None,
                }),
                namespace_selector: Some(LabelSelector {
                    match_labels: Some(map(&[("team", "web")])),
                    match_expressions: None,
                }),
                topology_key: "topology.kubernetes.io/zone".into(),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    });
    Api::<Pod>::namespaced(api.client("tester"), "default")
        .create(&PostParams::default(), &follower)
        .await
        .unwrap();
    wait_for("the follower reported unschedulable", WAIT, || {
        unschedulable_message(&api, "default", "follower").is_some()
    })
    .await;
    assert_eq!(
        unschedulable_message(&api, "default", "follower").as_deref(),
        Some(
            "0/2 nodes are available: 2 node(s) didn't match pod affinity rules, \
             2 node(s) didn't match pod affinity/anti-affinity rules."
        )
    );

    // Another scheduler binds a db pod in shop to n2: the follower goes to zone z2.
    let mut db = pod("shop", "db-0", &[("app", "db")]);
    db.spec.as_mut().unwrap().node_name = Some("n2".into());
    db.spec.as_mut().unwrap().scheduler_name = Some("default-scheduler".into());
    Api::<Pod>::namespaced(api.client("tester"), "shop")
        .create(&PostParams::default(), &db)
        .await
        .unwrap();
    wait_for("the follower bound", WAIT, || {
        node_of(&api, "follower").is_some()
    })
    .await;
    assert_eq!(node_of(&api, "follower").as_deref(), Some("n2"));
    drop(r);
    api.shutdown().await;
}
