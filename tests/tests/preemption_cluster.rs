//! Preemption in cluster mode (v1.22 `DefaultPreemption`) against the in-memory API double:
//! the victims are deleted through the API (graceful DELETE; the double's kubelet finishes
//! it), each with a `Preempted` event naming the preemptor; the preemptor's
//! `status.nominatedNodeName` is patched and it binds once there is room; PodDisruptionBudgets
//! steer the choice of node. Real time, every wait polls a condition.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::policy::v1::{
    PodDisruptionBudget, PodDisruptionBudgetSpec, PodDisruptionBudgetStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kube::api::{Api, PostParams};
use tests::apiserver::ApiServer;
use tests::objects::{self, event_notes, node_of, wait_for};
use tests::replica::{ReplicaHandle, spawn_replica};

const WAIT: Duration = Duration::from_secs(30);
const TESTER: &str = "tester";

fn node(name: &str, cpu: &str) -> Node {
    let mut n = objects::node(name, &[("cpu", cpu), ("memory", "32Gi"), ("pods", "110")]);
    n.metadata.labels = Some(BTreeMap::from([(
        "kubernetes.io/hostname".to_string(),
        name.to_string(),
    )]));
    n
}

/// A pod of `priority` requesting `cpu`, bound to `node` when given.
fn pod(name: &str, cpu: &str, priority: i32, node: Option<&str>, app: Option<&str>) -> Pod {
    let mut p = objects::pod(name, &[("cpu", cpu), ("memory", "128Mi")]);
    let spec = p.spec.as_mut().unwrap();
    spec.priority = Some(priority);
    spec.node_name = node.map(String::from);
    if let Some(app) = app {
        p.metadata.labels = Some(BTreeMap::from([("app".to_string(), app.to_string())]));
    }
    p
}

fn leader(replicas: &[ReplicaHandle]) -> Option<&ReplicaHandle> {
    replicas.iter().find(|r| r.is_leading())
}

fn deletes_by(api: &ApiServer, client: &str) -> Vec<String> {
    let mut v: Vec<String> = api
        .writes()
        .into_iter()
        .filter(|w| w.client == client && w.method == "DELETE" && w.kind == "Pod")
        .filter_map(|w| w.name)
        .collect();
    v.sort();
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_high_priority_pod_evicts_low_priority_pods_and_binds() {
    let api = ApiServer::start().await;
    api.seed(&node("node-a", "4")).unwrap();
    api.seed(&node("node-b", "4")).unwrap();
    // node-a full of priority-0 pods; node-b full of pods as important as the preemptor.
    for i in 1..=4 {
        api.seed(&pod(&format!("low-{i}"), "1", 0, Some("node-a"), None))
            .unwrap();
        api.seed(&pod(&format!("peer-{i}"), "1", 1000, Some("node-b"), None))
            .unwrap();
    }
    let mut replicas = Vec::new();
    for id in ["replica-1", "replica-2", "replica-3"] {
        replicas.push(spawn_replica(&api, id, true).await);
    }
    wait_for("a leader", WAIT, || leader(&replicas).is_some()).await;
    let lead = leader(&replicas).unwrap().id.clone();

    Api::<Pod>::namespaced(api.client(TESTER), "default")
        .create(
            &PostParams::default(),
            &pod("preemptor", "2", 1000, None, None),
        )
        .await
        .unwrap();
    wait_for("the preemptor bound", WAIT, || {
        node_of(&api, "preemptor").is_some()
    })
    .await;
    assert_eq!(node_of(&api, "preemptor").as_deref(), Some("node-a"));

    // Exactly two priority-0 pods went (two reprieved: 2 cpu is all it needs), by the leader.
    let deleted = deletes_by(&api, &lead);
    assert_eq!(deleted.len(), 2, "{deleted:?}");
    assert!(deleted.iter().all(|d| d.starts_with("low-")), "{deleted:?}");
    for r in &replicas {
        if r.id != lead {
            assert!(deletes_by(&api, &r.id).is_empty(), "{} deleted pods", r.id);
        }
    }
    // Nothing else touched: the peers and the two reprieved pods are still there.
    for i in 1..=4 {
        assert_eq!(
            node_of(&api, &format!("peer-{i}")).as_deref(),
            Some("node-b")
        );
    }
    let left: Vec<String> = (1..=4)
        .map(|i| format!("low-{i}"))
        .filter(|n| api.get::<Pod>("default", n).is_some())
        .collect();
    assert_eq!(left.len(), 2, "{left:?}");
    assert!(left.iter().all(|l| !deleted.contains(l)));
    // Each victim's Preempted event names the preemptor (related) and the node.
    for v in &deleted {
        wait_for("the Preempted event", WAIT, || {
            !event_notes(&api, v, "Preempted").is_empty()
        })
        .await;
        assert_eq!(
            event_notes(&api, v, "Preempted"),
            ["Preempted by default/preemptor on node node-a"]
        );
    }
    let ev = api
        .list::<k8s_openapi::api::events::v1::Event>()
        .into_iter()
        .find(|e| e.reason.as_deref() == Some("Preempted"))
        .unwrap();
    assert_eq!(
        ev.related.and_then(|r| r.name).as_deref(),
        Some("preemptor")
    );
    assert_eq!(ev.action.as_deref(), Some("Preempting"));
    // The nomination was written with the FailedScheduling report.
    assert!(api.writes().iter().any(|w| {
        w.client == lead
            && w.subresource.as_deref() == Some("status")
            && w.name.as_deref() == Some("preemptor")
            && w.request
                .as_ref()
                .and_then(|b| b.pointer("/status/nominatedNodeName"))
                .and_then(|v| v.as_str())
                == Some("node-a")
    }));
    let l = leader(&replicas).unwrap();
    assert!(l.metric("scheduler_preemption_attempts_total", &[]) >= 1.0);
    wait_for("the victims metric", WAIT, || {
        l.metric("scheduler_preemption_victims", &[]) >= 1.0
    })
    .await;
    for mut r in replicas {
        r.shutdown();
        let _ = tokio::time::timeout(Duration::from_secs(15), r.join).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_choice_avoids_pods_a_disruption_budget_protects() {
    // Both layouts: the protected pods on either node, so that a tie broken by the offset
    // cannot pass for the PDB's doing.
    for (protected, free) in [("node-a", "node-b"), ("node-b", "node-a")] {
        choose_around_the_pdb(protected, free).await;
    }
}

async fn choose_around_the_pdb(protected: &str, free: &str) {
    let api = ApiServer::start().await;
    api.seed(&node("node-a", "2")).unwrap();
    api.seed(&node("node-b", "2")).unwrap();
    for i in 1..=2 {
        api.seed(&pod(
            &format!("web-{i}"),
            "1",
            0,
            Some(protected),
            Some("web"),
        ))
        .unwrap();
        api.seed(&pod(&format!("batch-{i}"), "1", 0, Some(free), None))
            .unwrap();
    }
    api.seed(&PodDisruptionBudget {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        spec: Some(PodDisruptionBudgetSpec {
            min_available: Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(2)),
            selector: Some(LabelSelector {
                match_labels: Some(BTreeMap::from([("app".to_string(), "web".to_string())])),
                ..Default::default()
            }),
            ..Default::default()
        }),
        status: Some(PodDisruptionBudgetStatus {
            current_healthy: Some(2),
            desired_healthy: Some(2),
            disruptions_allowed: Some(0),
            expected_pods: Some(2),
            ..Default::default()
        }),
    })
    .unwrap();
    let replica = spawn_replica(&api, "replica-1", false).await;
    // Let the PDB watch list before the preemptor arrives.
    wait_for("synced caches", WAIT, || {
        replica
            .probes
            .status
            .caches_synced
            .load(std::sync::atomic::Ordering::Relaxed)
    })
    .await;
    Api::<Pod>::namespaced(api.client(TESTER), "default")
        .create(
            &PostParams::default(),
            &pod("preemptor", "2", 1000, None, None),
        )
        .await
        .unwrap();
    wait_for("the preemptor bound", WAIT, || {
        node_of(&api, "preemptor").is_some()
    })
    .await;
    assert_eq!(node_of(&api, "preemptor").as_deref(), Some(free));
    assert_eq!(deletes_by(&api, "replica-1"), ["batch-1", "batch-2"]);
    for w in ["web-1", "web-2"] {
        assert_eq!(node_of(&api, w).as_deref(), Some(protected), "{w}");
    }
    let mut replica = replica;
    replica.shutdown();
    let _ = tokio::time::timeout(Duration::from_secs(15), replica.join).await;
}

/// v1.22's `PrepareCandidate` deletes the victims before anything is nominated; a failed
/// DELETE fails the PostFilter, so the `FailedScheduling` report goes without
/// `status.nominatedNodeName` and `scheduler_preemption_victims` is not observed. Once the
/// deletions go through (the fault healed, the pod retried after a node event), the preemptor
/// is nominated and binds. Before the fix, the nomination was patched while the deletion failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_victim_delete_nominates_nothing() {
    let api = ApiServer::start().await;
    api.seed(&node("node-a", "4")).unwrap();
    for i in 1..=4 {
        api.seed(&pod(&format!("low-{i}"), "1", 0, Some("node-a"), None))
            .unwrap();
    }
    let replica = spawn_replica(&api, "replica-1", false).await;
    wait_for("synced caches", WAIT, || {
        replica
            .probes
            .status
            .caches_synced
            .load(std::sync::atomic::Ordering::Relaxed)
    })
    .await;
    let pod_deletes = tests::apiserver::RequestMatch {
        method: Some("DELETE".into()),
        kind: Some("Pod".into()),
        subresource: Some(String::new()),
    };
    api.faults("replica-1").fail_all_matching(pod_deletes, 500);
    Api::<Pod>::namespaced(api.client(TESTER), "default")
        .create(
            &PostParams::default(),
            &pod("preemptor", "2", 1000, None, None),
        )
        .await
        .unwrap();
    let status_patches = |api: &ApiServer| -> Vec<serde_json::Value> {
        api.writes()
            .into_iter()
            .filter(|w| {
                w.client == "replica-1"
                    && w.subresource.as_deref() == Some("status")
                    && w.name.as_deref() == Some("preemptor")
            })
            .filter_map(|w| w.request)
            .collect()
    };
    let deletes = |api: &ApiServer| -> Vec<tests::apiserver::WriteRecord> {
        api.writes()
            .into_iter()
            .filter(|w| w.client == "replica-1" && w.method == "DELETE" && w.kind == "Pod")
            .collect()
    };
    // The report comes after the failed deletion.
    wait_for(
        "the failed DELETE and the PodScheduled=False patch",
        WAIT,
        || !deletes(&api).is_empty() && !status_patches(&api).is_empty(),
    )
    .await;
    let failed = deletes(&api);
    assert_eq!(failed.len(), 1, "the first failure stops the deletions");
    assert_eq!(failed[0].code, 500);
    assert!(
        !event_notes(&api, "preemptor", "FailedScheduling").is_empty(),
        "the FailedScheduling event"
    );
    for p in status_patches(&api) {
        assert!(
            p.pointer("/status/nominatedNodeName").is_none(),
            "nominated although the victim's deletion failed: {p}"
        );
    }
    assert_eq!(replica.metric("scheduler_preemption_victims", &[]), 0.0);
    assert!(replica.metric("scheduler_preemption_attempts_total", &[]) >= 1.0);
    for i in 1..=4 {
        assert_eq!(
            node_of(&api, &format!("low-{i}")).as_deref(),
            Some("node-a")
        );
    }
    assert_eq!(node_of(&api, "preemptor"), None);

    // Healed: a node too small for the preemptor is a cluster event that retries it, and the
    // deletions now go through.
    api.faults("replica-1").heal();
    api.seed(&node("node-small", "1")).unwrap();
    wait_for("the preemptor bound", WAIT, || {
        node_of(&api, "preemptor").is_some()
    })
    .await;
    assert_eq!(node_of(&api, "preemptor").as_deref(), Some("node-a"));
    assert!(status_patches(&api).iter().any(|p| {
        p.pointer("/status/nominatedNodeName")
            .and_then(|v| v.as_str())
            == Some("node-a")
    }));
    assert!(replica.metric("scheduler_preemption_victims", &[]) >= 1.0);
    let mut replica = replica;
    replica.shutdown();
    let _ = tokio::time::timeout(Duration::from_secs(15), replica.join).await;
}
