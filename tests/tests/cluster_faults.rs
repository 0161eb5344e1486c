//! Scheduler replicas against API faults that do more than fail a request: 503/429 on Bindings
//! and status patches, a Binding applied whose response was lost, an old leader's Binding that
//! lands after the takeover, and a watch outage during which a bound pod and a node were
//! deleted and the history compacted.
//!
//! Real time (the double serves HTTP over loopback); every wait polls a condition with a
//! generous timeout.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, PostParams};
use scheduler::controller::ANNOTATION_SCHEDULED_BY;
use tests::apiserver::{ApiServer, RequestMatch, WriteRecord};
use tests::objects::{self, event_notes, node_of, wait_for};
use tests::replica::{ReplicaHandle, spawn_replica};

const WAIT: Duration = Duration::from_secs(30);
const TESTER: &str = "tester";

fn node(name: &str, cpu: &str) -> Node {
    let mut n = objects::node(name, &[("cpu", cpu), ("memory", "8Gi"), ("pods", "110")]);
    n.metadata.labels = Some(BTreeMap::from([(
        "kubernetes.io/hostname".to_string(),
        name.to_string(),
    )]));
    n
}

fn pod(name: &str, cpu: &str) -> Pod {
    objects::pod(name, &[("cpu", cpu), ("memory", "64Mi")])
}

fn pinned(name: &str, cpu: &str, node: &str) -> Pod {
    let mut p = pod(name, cpu);
    p.spec.as_mut().unwrap().node_selector = Some(BTreeMap::from([(
        "kubernetes.io/hostname".to_string(),
        node.to_string(),
    )]));
    p
}

async fn create_pod(api: &ApiServer, p: &Pod) {
    Api::<Pod>::namespaced(api.client(TESTER), "default")
        .create(&PostParams::default(), p)
        .await
        .unwrap();
}

fn bindings(api: &ApiServer, pod: &str) -> Vec<WriteRecord> {
    api.writes()
        .into_iter()
        .filter(|w| w.subresource.as_deref() == Some("binding") && w.name.as_deref() == Some(pod))
        .collect()
}

fn accepted(ws: &[WriteRecord]) -> Vec<&WriteRecord> {
    ws.iter().filter(|w| (200..300).contains(&w.code)).collect()
}

/// No node's bound pods request more cpu (millicores) than it has.
fn assert_no_overcommit(api: &ApiServer) {
    let mut used: BTreeMap<String, i64> = BTreeMap::new();
    for p in api.list::<Pod>() {
        let spec = p.spec.unwrap();
        let Some(n) = spec.node_name else { continue };
        let cpu: i64 = spec
            .containers
            .iter()
            .filter_map(|c| c.resources.as_ref()?.requests.as_ref()?.get("cpu").cloned())
            .map(|q| scheduler::quantity::milli_value(&q.0).unwrap())
            .sum();
        *used.entry(n).or_default() += cpu;
    }
    for n in api.list::<Node>() {
        let name = n.metadata.name.unwrap();
        let cap = n.status.unwrap().allocatable.unwrap()["cpu"].clone();
        let cap = scheduler::quantity::milli_value(&cap.0).unwrap();
        let u = used.get(&name).copied().unwrap_or(0);
        assert!(u <= cap, "{name}: {u}m of {cap}m cpu bound");
    }
}

async fn leader_of(replicas: &[ReplicaHandle], skip: Option<&str>) -> usize {
    let mut found = None;
    wait_for("one leader", WAIT, || {
        found = replicas
            .iter()
            .position(|r| Some(r.id.as_str()) != skip && r.is_leading());
        found.is_some()
    })
    .await;
    found.unwrap()
}

async fn synced_leader(api: &ApiServer, id: &str) -> ReplicaHandle {
    let r = spawn_replica(api, id, false).await;
    wait_for("caches synced", WAIT, || {
        r.probes
            .status
            .caches_synced
            .load(std::sync::atomic::Ordering::Relaxed)
    })
    .await;
    r
}

// ---------------------------------------------------------------------------------------------

/// 503 then 429 on the Binding: the pod is requeued after each (with a FailedScheduling
/// event) and bound on the third attempt, once. 429 on the PodScheduled status patch of an
/// unschedulable pod does not stop the scheduler; the pod binds when a node fits it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_bindings_and_status_patches_are_requeued_and_bound_once() {
    let api = ApiServer::start().await;
    api.seed(&node("n1", "2")).unwrap();
    let r = synced_leader(&api, "replica-1").await;
    let f = api.faults("replica-1");
    // A failed Binding puts the pod back as unschedulable (v1.22: until a cluster event or
    // the 60 s flush); a node added after each failure moves it.
    for (i, (pod_name, code)) in [("retried-503", 503), ("retried-429", 429)]
        .into_iter()
        .enumerate()
    {
        f.fail_matching(RequestMatch::bindings(), 1, code);
        create_pod(&api, &pod(pod_name, "500m")).await;
        wait_for("the failed Binding", WAIT, || {
            !bindings(&api, pod_name).is_empty()
        })
        .await;
        Api::<Node>::all(api.client(TESTER))
            .create(&PostParams::default(), &node(&format!("nudge-{i}"), "1"))
            .await
            .unwrap();
        wait_for("bound", WAIT, || node_of(&api, pod_name).is_some()).await;
        let codes: Vec<u16> = bindings(&api, pod_name).iter().map(|w| w.code).collect();
        assert_eq!(codes, [code, 201]);
        let notes = event_notes(&api, pod_name, "FailedScheduling");
        assert!(
            notes.iter().any(|n| n.starts_with("binding rejected")),
            "{notes:?}"
        );
    }

    f.fail_matching(RequestMatch::pod_status_patches(), 1, 429);
    create_pod(&api, &pod("big", "3")).await;
    // The event and the status patch are separate writes (v1.22's recordSchedulingFailure
    // records the event, then patches the PodScheduled condition): wait for both.
    wait_for("FailedScheduling and a status patch for big", WAIT, || {
        !event_notes(&api, "big", "FailedScheduling").is_empty()
            && api.writes().iter().any(|w| {
                w.subresource.as_deref() == Some("status") && w.name.as_deref() == Some("big")
            })
    })
    .await;
    // The status patch follows the event (same background task): wait for it too.
    let status_codes = || -> Vec<u16> {
        api.writes()
            .iter()
            .filter(|w| {
                w.subresource.as_deref() == Some("status") && w.name.as_deref() == Some("big")
            })
            .map(|w| w.code)
            .collect()
    };
    wait_for("the PodScheduled patch of big", WAIT, || {
        !status_codes().is_empty()
    })
    .await;
    let status_codes = status_codes();
    assert_eq!(status_codes.first(), Some(&429), "{status_codes:?}");
    Api::<Node>::all(api.client(TESTER))
        .create(&PostParams::default(), &node("n2", "4"))
        .await
        .unwrap();
    wait_for("big bound", WAIT, || node_of(&api, "big").is_some()).await;
    assert_eq!(node_of(&api, "big").as_deref(), Some("n2"));
    assert_eq!(accepted(&bindings(&api, "big")).len(), 1);
    assert_no_overcommit(&api);
    drop(r);
    api.shutdown().await;
}

/// The Binding is applied but its response lost (504): the pod is bound exactly once, and the
/// scheduler's cache ends with it counted once — a pod that would over-commit the node is not
/// bound there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binding_applied_with_lost_response_binds_once() {
    let api = ApiServer::start().await;
    api.seed(&node("n1", "1")).unwrap();
    let r = synced_leader(&api, "replica-1").await;
    api.faults("replica-1")
        .lose_responses(RequestMatch::bindings(), 1);
    create_pod(&api, &pod("lost", "600m")).await;
    wait_for("bound", WAIT, || node_of(&api, "lost").is_some()).await;
    // Whatever the scheduler does about the 504 (retry answered 409, or the watch shows the
    // pod bound first), no second Binding is accepted.
    create_pod(&api, &pod("second", "600m")).await;
    wait_for("second found unschedulable", WAIT, || {
        !event_notes(&api, "second", "FailedScheduling").is_empty()
    })
    .await;
    let b = bindings(&api, "lost");
    assert_eq!(accepted(&b).len(), 1, "{b:#?}");
    assert!(b[0].response_lost);
    assert_eq!(node_of(&api, "second"), None);
    assert_no_overcommit(&api);
    drop(r);
    api.shutdown().await;
}

/// The leader's Binding is held in the network while the leader is cut off; a follower takes
/// over and schedules the same pod (its Binding held too); then the old leader's Binding lands,
/// after the takeover. The pod is bound once, the new leader's Binding is refused, and the new
/// leader goes on without over-committing the node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_binding_of_the_old_leader_lands_after_the_takeover() {
    let api = ApiServer::start().await;
    api.seed(&node("n1", "2")).unwrap();
    let mut replicas = Vec::new();
    for id in ["replica-1", "replica-2", "replica-3"] {
        replicas.push(spawn_replica(&api, id, true).await);
    }
    let li = leader_of(&replicas, None).await;
    let old = replicas[li].id.clone();
    for r in &replicas {
        api.faults(&r.id).hold_matching(RequestMatch::bindings());
    }
    create_pod(&api, &pod("contested", "1500m")).await;
    wait_for("the leader's Binding in flight", WAIT, || {
        api.faults(&old).held() >= 1
    })
    .await;
    api.faults(&old).hang();
    let ni = leader_of(&replicas, Some(&old)).await;
    let new = replicas[ni].id.clone();
    wait_for("the new leader's Binding in flight", WAIT, || {
        api.faults(&new).held() >= 1
    })
    .await;
    let acquired = api
        .writes()
        .iter()
        .filter(|w| w.kind == "Lease" && w.client == new && w.code == 200)
        .map(|w| w.seq)
        .next_back()
        .unwrap();
    // The old leader's Binding lands late; then the new leader's is let through.
    api.faults(&old).release();
    wait_for("the late Binding applied", WAIT, || {
        node_of(&api, "contested").is_some()
    })
    .await;
    api.faults(&new).heal();
    wait_for("the new leader's Binding answered", WAIT, || {
        bindings(&api, "contested").iter().any(|w| w.client == new)
    })
    .await;
    let b = bindings(&api, "contested");
    let ok = accepted(&b);
    assert_eq!(ok.len(), 1, "{b:#?}");
    assert_eq!(ok[0].client, old);
    assert!(ok[0].seq > acquired, "landed after the takeover");
    let theirs: Vec<u16> = b
        .iter()
        .filter(|w| w.client == new)
        .map(|w| w.code)
        .collect();
    assert_eq!(theirs, [409]);
    let bound = api.get::<Pod>("default", "contested").unwrap();
    assert_eq!(
        bound.metadata.annotations.unwrap()[ANNOTATION_SCHEDULED_BY],
        old
    );
    // The new leader counts the pod: one more 1500m pod does not fit on n1.
    create_pod(&api, &pod("after", "1500m")).await;
    wait_for("after found unschedulable", WAIT, || {
        !event_notes(&api, "after", "FailedScheduling").is_empty()
    })
    .await;
    assert_eq!(node_of(&api, "after"), None);
    assert_no_overcommit(&api);
    for r in &replicas {
        api.faults(&r.id).heal();
    }
    drop(replicas);
    api.shutdown().await;
}

/// A replica cut off from the API while a bound pod and a node are deleted and the watch
/// history is compacted: when it reconnects its watches get 410, relist, and its cache forgets
/// both (`Tracked::observe` on the relist): the freed capacity is used and no pod is bound to
/// the deleted node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cache_forgets_what_was_deleted_during_a_watch_outage() {
    let api = ApiServer::start().await;
    api.seed(&node("keep", "1")).unwrap();
    api.seed(&node("gone", "4")).unwrap();
    let r = synced_leader(&api, "replica-1").await;
    create_pod(&api, &pinned("old", "800m", "keep")).await;
    wait_for("old bound", WAIT, || node_of(&api, "old").is_some()).await;
    // The assigned watch confirmed the binding: "old" is in the cache as an assigned pod, not
    // only assumed. The API showing it bound is not enough: cut off before its watch event,
    // the replica knows "old" only as assumed (bound, unconfirmed), which no relist can remove
    // (the relist never listed it); it stays until the assumed-pod TTL (2 min), and "reuses"
    // waits in unschedulableQ (the flaky "reuses bound" timeout, 2 in 60 runs under load).
    wait_for("the watch confirmed old", WAIT, || {
        r.metric(
            "scheduler_scheduler_cache_size",
            &[("type", "assumed_pods")],
        ) == 0.0
            && r.metric("scheduler_scheduler_cache_size", &[("type", "pods")]) == 1.0
    })
    .await;

    let f = api.faults("replica-1");
    f.hang();
    f.drop_watches();
    let tester = api.client(TESTER);
    Api::<Pod>::namespaced(tester.clone(), "default")
        .delete("old", &DeleteParams::default())
        .await
        .unwrap();
    Api::<Node>::all(tester)
        .delete("gone", &DeleteParams::default())
        .await
        .unwrap();
    assert!(api.get::<Pod>("default", "old").is_none());
    api.compact();
    let healed_at = api.requests().len();
    f.heal();
    // The node watch relisted and watches again: its InitDone is queued to the scheduler
    // before any event about the pods created below.
    wait_for("the node watch relisted", WAIT, || {
        let r = api.requests();
        let mine = |q: &&tests::apiserver::RequestRecord, verb: &str| {
            q.client == "replica-1" && q.verb == verb && q.resource.as_deref() == Some("nodes")
        };
        r[healed_at..]
            .iter()
            .skip_while(|q| !mine(q, "list"))
            .any(|q| mine(&q, "watch"))
    })
    .await;
    // Both pod watches (assigned and pending) relisted and watch again too: until then a
    // watcher may still be in its retry backoff and not see the pods created below.
    wait_for("both pod watches relisted", WAIT, || {
        let r = api.requests();
        let pods = |q: &tests::apiserver::RequestRecord, verb: &str| {
            q.client == "replica-1" && q.verb == verb && q.resource.as_deref() == Some("pods")
        };
        let after = &r[healed_at..];
        let lists: Vec<usize> = (0..after.len())
            .filter(|&i| pods(&after[i], "list"))
            .collect();
        lists.len() >= 2
            && after[lists[0]..]
                .iter()
                .filter(|q| pods(q, "watch"))
                .count()
                >= 2
            && after[lists[1]..].iter().any(|q| pods(q, "watch"))
    })
    .await;

    create_pod(&api, &pinned("reuses", "800m", "keep")).await;
    create_pod(&api, &pinned("to-gone", "100m", "gone")).await;
    wait_for("reuses bound", WAIT, || node_of(&api, "reuses").is_some()).await;
    wait_for("to-gone found unschedulable", WAIT, || {
        !event_notes(&api, "to-gone", "FailedScheduling").is_empty()
    })
    .await;
    let notes = event_notes(&api, "to-gone", "FailedScheduling");
    assert!(
        notes[0].starts_with("0/1 nodes are available"),
        "the deleted node is still in the cache: {notes:?}"
    );
    assert_eq!(node_of(&api, "to-gone"), None);
    assert!(api.requests().iter().any(|q| q.client == "replica-1"
        && q.verb == "list"
        && q.resource.as_deref() == Some("pods")),);
    assert_no_overcommit(&api);
    drop(r);
    api.shutdown().await;
}

/// A new leader whose pod watches lag behind the store (stalled) does not bind again the
/// pods its predecessor bound just before dying: its read barrier (a consistent LIST at or
/// past its Lease acquisition) shows them bound before its first scheduling cycle. Without
/// the barrier it would schedule them from its stale queue and be answered 409.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_leader_reads_past_its_acquisition_before_scheduling() {
    let api = ApiServer::start().await;
    api.seed(&node("n1", "8")).unwrap();
    let old = spawn_replica(&api, "replica-1", true).await;
    wait_for("replica-1 leads", WAIT, || old.is_leading()).await;
    let new = spawn_replica(&api, "replica-2", true).await;
    let names: Vec<String> = (0..5).map(|i| format!("late-{i}")).collect();
    api.faults("replica-1")
        .hold_matching(RequestMatch::bindings());
    for n in &names {
        create_pod(&api, &pod(n, "100m")).await;
    }
    // replica-2 sees the pods pending, then its watches stall: it never sees them bound.
    wait_for("replica-2 queued the pods", WAIT, || {
        new.metric("scheduler_pending_pods", &[("queue", "active")]) >= 5.0
    })
    .await;
    api.faults("replica-2").stall_watches();
    api.faults("replica-1").heal();
    wait_for("replica-1 bound them", WAIT, || {
        names.iter().all(|n| node_of(&api, n).is_some())
    })
    .await;
    old.kill();
    wait_for("replica-2 leads", WAIT, || new.is_leading()).await;
    wait_for("the read barrier passed", WAIT, || {
        new.metric("scheduler_leader_read_barrier_duration_seconds", &[]) >= 1.0
    })
    .await;
    // Give a stale queue every chance to act, then look.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let theirs: Vec<WriteRecord> = api
        .writes()
        .into_iter()
        .filter(|w| w.client == "replica-2" && w.subresource.as_deref() == Some("binding"))
        .collect();
    assert!(theirs.is_empty(), "replica-2 bound again: {theirs:#?}");
    assert_eq!(
        new.metric("scheduler_pending_pods", &[("queue", "active")]),
        0.0
    );
    // It schedules new pods normally once its watches flow again.
    api.faults("replica-2").heal();
    create_pod(&api, &pod("after", "100m")).await;
    wait_for("after bound", WAIT, || node_of(&api, "after").is_some()).await;
    for n in &names {
        assert_eq!(accepted(&bindings(&api, n)).len(), 1, "{n}");
    }
    drop((old, new));
    api.shutdown().await;
}
