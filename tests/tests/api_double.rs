//! Fidelity of the in-memory API test double, exercised through the real `kube::Client`.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{Binding, Node, ObjectReference, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use tests::apiserver::ApiServer;

const WAIT: Duration = Duration::from_secs(10);

fn pod(name: &str, scheduler: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            scheduler_name: Some(scheduler.into()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn labelled(name: &str, app: &str) -> Pod {
    let mut p = pod(name, "default-scheduler");
    p.metadata.labels = Some(BTreeMap::from([("app".to_string(), app.to_string())]));
    p
}

fn binding(pod: &str, node: &str, annotations: &[(&str, &str)]) -> Binding {
    Binding {
        metadata: ObjectMeta {
            name: Some(pod.into()),
            annotations: Some(
                annotations
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..Default::default()
        },
        target: ObjectReference {
            kind: Some("Node".into()),
            api_version: Some("v1".into()),
            name: Some(node.into()),
            ..Default::default()
        },
    }
}

fn api_err(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected Error::Api, got {other:?}"),
    }
}

/// Polls `cond` every 10 ms until it holds, failing after [`WAIT`].
async fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    tokio::time::timeout(WAIT, async {
        while !cond() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("timed out waiting for {what}"));
}

async fn within<T>(what: &str, f: impl Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, f)
        .await
        .unwrap_or_else(|_| panic!("timed out: {what}"))
}

#[tokio::test]
async fn crud_statuses_and_optimistic_concurrency() {
    let api = ApiServer::start().await;
    let pods: Api<Pod> = Api::namespaced(api.client("t"), "default");

    let created = pods
        .create(&PostParams::default(), &pod("p1", "s"))
        .await
        .unwrap();
    let rv1: u64 = created
        .metadata
        .resource_version
        .clone()
        .unwrap()
        .parse()
        .unwrap();
    assert!(created.metadata.uid.is_some());
    assert!(created.metadata.creation_timestamp.is_some());
    assert_eq!(created.metadata.generation, Some(1));
    assert_eq!(created.status.unwrap().phase.as_deref(), Some("Pending"));

    let mut fresh = pods.get("p1").await.unwrap();
    fresh.metadata.labels = Some(BTreeMap::from([("a".into(), "b".into())]));
    let replaced = pods
        .replace("p1", &PostParams::default(), &fresh)
        .await
        .unwrap();
    let rv2: u64 = replaced
        .metadata
        .resource_version
        .clone()
        .unwrap()
        .parse()
        .unwrap();
    assert!(rv2 > rv1);
    assert_eq!(api.resource_version(), rv2);

    // `fresh` still carries rv1: stale.
    let s = api_err(
        pods.replace("p1", &PostParams::default(), &fresh)
            .await
            .unwrap_err(),
    );
    assert_eq!(s.code, 409);
    assert_eq!(s.reason, "Conflict");
    assert_eq!(
        s.message,
        "Operation cannot be fulfilled on pods \"p1\": the object has been modified; please apply your changes to the latest version and try again"
    );
    let d = s.details.unwrap();
    assert_eq!((d.name.as_str(), d.kind.as_str()), ("p1", "pods"));

    // An update that changes nothing does not bump the resourceVersion.
    let same = pods
        .replace("p1", &PostParams::default(), &replaced)
        .await
        .unwrap();
    assert_eq!(
        same.metadata.resource_version,
        replaced.metadata.resource_version
    );

    let s = api_err(
        pods.create(&PostParams::default(), &pod("p1", "s"))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (s.code, s.reason.as_str(), s.message.as_str()),
        (409, "AlreadyExists", "pods \"p1\" already exists")
    );
    let e = pods.get("nope").await.unwrap_err();
    let s = api_err(e);
    assert!(s.is_not_found());
    assert_eq!(
        (s.code, s.reason.as_str(), s.message.as_str()),
        (404, "NotFound", "pods \"nope\" not found")
    );

    // Lease validation, and a group-qualified resource in messages.
    let leases: Api<Lease> = Api::namespaced(api.client("t"), "kube-system");
    let mut lease = Lease {
        metadata: ObjectMeta {
            name: Some("l".into()),
            ..Default::default()
        },
        spec: Some(LeaseSpec {
            lease_duration_seconds: Some(0),
            ..Default::default()
        }),
    };
    let s = api_err(
        leases
            .create(&PostParams::default(), &lease)
            .await
            .unwrap_err(),
    );
    assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        s.message,
        "Lease.coordination.k8s.io \"l\" is invalid: spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"
    );
    lease.spec = Some(LeaseSpec {
        lease_duration_seconds: Some(15),
        holder_identity: Some("a".into()),
        ..Default::default()
    });
    let l = leases.create(&PostParams::default(), &lease).await.unwrap();
    assert_eq!(l.metadata.namespace.as_deref(), Some("kube-system"));
    let s = api_err(leases.get("other").await.unwrap_err());
    assert_eq!(s.message, "leases.coordination.k8s.io \"other\" not found");

    // Delete: pods answer with the object; then 404.
    let deleted = pods.delete("p1", &DeleteParams::default()).await.unwrap();
    assert!(deleted.left().is_some());
    assert!(pods.get_opt("p1").await.unwrap().is_none());
    api.shutdown().await;
}

#[tokio::test]
async fn patch_and_status_subresource() {
    let api = ApiServer::start().await;
    let pods: Api<Pod> = Api::namespaced(api.client("t"), "default");
    pods.create(&PostParams::default(), &pod("p", "s"))
        .await
        .unwrap();

    // Main-resource patches do not touch status; status patches touch only status.
    let p = pods
        .patch("p", &PatchParams::default(), &Patch::Merge(serde_json::json!({"metadata": {"labels": {"x": "1"}}, "status": {"phase": "Running"}})))
        .await
        .unwrap();
    assert_eq!(p.status.unwrap().phase.as_deref(), Some("Pending"));
    assert_eq!(p.metadata.labels.unwrap()["x"], "1");
    let cond = serde_json::json!({"status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/1 nodes are available"}]}});
    let p = pods
        .patch_status("p", &PatchParams::default(), &Patch::Strategic(cond))
        .await
        .unwrap();
    let c = &p.status.as_ref().unwrap().conditions.as_ref().unwrap()[0];
    assert_eq!(
        (c.type_.as_str(), c.reason.as_deref()),
        ("PodScheduled", Some("Unschedulable"))
    );
    let spec_patch =
        serde_json::json!({"spec": {"nodeName": "sneaky"}, "status": {"phase": "Running"}});
    let p = pods
        .patch_status("p", &PatchParams::default(), &Patch::Merge(spec_patch))
        .await
        .unwrap();
    assert_eq!(p.spec.unwrap().node_name, None);
    assert_eq!(p.status.unwrap().phase.as_deref(), Some("Running"));

    // A resourceVersion in a merge patch is a precondition.
    let stale = serde_json::json!({"metadata": {"resourceVersion": "1", "labels": {"y": "2"}}});
    let s = api_err(
        pods.patch("p", &PatchParams::default(), &Patch::Merge(stale))
            .await
            .unwrap_err(),
    );
    assert_eq!(s.code, 409);
    api.shutdown().await;
}

#[tokio::test]
async fn list_pagination_and_selectors() {
    let api = ApiServer::start().await;
    for i in 0..7 {
        api.seed(&labelled(
            &format!("p{i}"),
            if i % 2 == 0 { "web" } else { "db" },
        ))
        .unwrap();
    }
    let pods: Api<Pod> = Api::all(api.client("t"));
    let first = pods.list(&ListParams::default().limit(3)).await.unwrap();
    assert_eq!(first.items.len(), 3);
    assert_eq!(first.metadata.resource_version.as_deref(), Some("7"));
    assert_eq!(first.metadata.remaining_item_count, Some(4));
    let mut names: Vec<String> = first
        .items
        .iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect();
    let mut cont = first.metadata.continue_;
    while let Some(c) = cont.filter(|c| !c.is_empty()) {
        let page = pods
            .list(&ListParams::default().limit(3).continue_token(&c))
            .await
            .unwrap();
        names.extend(page.items.iter().map(|p| p.metadata.name.clone().unwrap()));
        cont = page.metadata.continue_;
    }
    assert_eq!(names, (0..7).map(|i| format!("p{i}")).collect::<Vec<_>>());

    let count = |lp: ListParams| {
        let pods = pods.clone();
        async move { pods.list(&lp).await.map(|l| l.items.len()) }
    };
    assert_eq!(
        count(ListParams::default().labels("app=web"))
            .await
            .unwrap(),
        4
    );
    assert_eq!(
        count(ListParams::default().labels("app notin (web)"))
            .await
            .unwrap(),
        3
    );
    assert_eq!(
        count(ListParams::default().labels("app in (web,db),!missing"))
            .await
            .unwrap(),
        7
    );
    assert_eq!(
        count(ListParams::default().fields("metadata.name=p3"))
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        count(ListParams::default().fields("status.phase!=Failed,spec.nodeName="))
            .await
            .unwrap(),
        7
    );
    let s = api_err(
        count(ListParams::default().fields("spec.bogus=1"))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (s.code, s.reason.as_str(), s.message.as_str()),
        (400, "BadRequest", "field label not supported: spec.bogus")
    );
    let nodes: Api<Node> = Api::all(api.client("t"));
    let s = api_err(
        nodes
            .list(&ListParams::default().fields("spec.nodeName=x"))
            .await
            .unwrap_err(),
    );
    assert_eq!(s.message, "field label not supported: spec.nodeName");
    api.shutdown().await;
}

#[tokio::test]
async fn binding_semantics_and_field_selected_watch() {
    let api = ApiServer::start().await;
    api.seed(&Node {
        metadata: ObjectMeta {
            name: Some("n1".into()),
            ..Default::default()
        },
        ..Default::default()
    })
    .unwrap();
    let client = api.client("replica-1");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    pods.create(&PostParams::default(), &pod("p", "mini"))
        .await
        .unwrap();
    pods.create(&PostParams::default(), &pod("other", "default-scheduler"))
        .await
        .unwrap();

    let (reader, writer) = reflector::store();
    let cfg = watcher::Config::default().fields("spec.schedulerName=mini,spec.nodeName=");
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let stream = reflector(writer, watcher(Api::<Pod>::all(client.clone()), cfg)).default_backoff();
    let task = tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(ev) = stream.next().await {
            let _ = tx.send(ev);
        }
    });
    within("store ready", reader.wait_until_ready())
        .await
        .unwrap();
    assert_eq!(reader.state().len(), 1);

    let bind = binding(
        "p",
        "n1",
        &[
            ("mini-scheduler/replica", "replica-1"),
            ("mini-scheduler/term", "uid-1/0"),
        ],
    );
    let status: kube::core::Status = pods
        .create_subresource("binding", "p", &PostParams::default(), &bind)
        .await
        .unwrap();
    assert_eq!(status.code, 201);
    assert!(status.is_success());

    // The pod leaves the selection: the watcher sees it DELETED and the store empties.
    loop {
        match within("delete event", rx.recv()).await.unwrap() {
            Ok(watcher::Event::Delete(p)) => {
                assert_eq!(p.metadata.name.as_deref(), Some("p"));
                break;
            }
            Ok(_) => {}
            Err(e) => panic!("watch error {e}"),
        }
    }
    wait_for("store empty", || reader.state().is_empty()).await;

    let bound: Pod = api.get("default", "p").unwrap();
    assert_eq!(
        bound.spec.as_ref().unwrap().node_name.as_deref(),
        Some("n1")
    );
    let ann = bound.metadata.annotations.unwrap();
    assert_eq!(ann["mini-scheduler/replica"], "replica-1");
    assert_eq!(ann["mini-scheduler/term"], "uid-1/0");
    let conds = bound.status.unwrap().conditions.unwrap();
    assert!(
        conds
            .iter()
            .any(|c| c.type_ == "PodScheduled" && c.status == "True")
    );

    // Second binding: 409 on pods/binding.
    let s: kube::core::Status = api_err(
        pods.create_subresource::<_, kube::core::Status>(
            "binding",
            "p",
            &PostParams::default(),
            &binding("p", "n2", &[]),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!((s.code, s.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        s.message,
        "Operation cannot be fulfilled on pods/binding \"p\": pod p is already assigned to node \"n1\""
    );

    // Preconditions: a stale uid is refused; the pod is not touched.
    let mut b = binding("other", "n1", &[]);
    b.metadata.uid = Some("not-the-uid".into());
    let s = api_err(
        pods.create_subresource::<_, kube::core::Status>(
            "binding",
            "other",
            &PostParams::default(),
            &b,
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(s.code, 409);
    assert!(
        s.message
            .contains("Precondition failed: UID in precondition: not-the-uid"),
        "{}",
        s.message
    );
    assert!(
        api.get::<Pod>("default", "other")
            .unwrap()
            .spec
            .unwrap()
            .node_name
            .is_none()
    );
    let s = api_err(
        pods.create_subresource::<_, kube::core::Status>(
            "binding",
            "ghost",
            &PostParams::default(),
            &binding("ghost", "n1", &[]),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(
        (s.code, s.message.as_str()),
        (404, "pods \"ghost\" not found")
    );

    // A new pending pod enters the selection: Apply.
    pods.create(&PostParams::default(), &pod("q", "mini"))
        .await
        .unwrap();
    wait_for("q in store", || {
        reader
            .state()
            .iter()
            .any(|p| p.metadata.name.as_deref() == Some("q"))
    })
    .await;
    task.abort();
    api.shutdown().await;
}

#[tokio::test]
async fn too_old_resource_version_is_an_in_stream_410_and_forces_relist() {
    let api = ApiServer::builder().history_limit(2).start().await;
    let pods: Api<Pod> = Api::namespaced(api.client("writer"), "default");
    for i in 0..4 {
        pods.create(&PostParams::default(), &pod(&format!("p{i}"), "s"))
            .await
            .unwrap();
    }
    // Raw watch from RV 1: only events after RV 2 are retained.
    let mut raw = pods
        .watch(&WatchParams::default(), "1")
        .await
        .unwrap()
        .boxed();
    match within("error event", raw.try_next())
        .await
        .unwrap()
        .unwrap()
    {
        WatchEvent::Error(s) => {
            assert_eq!((s.code, s.reason.as_str()), (410, "Expired"));
            assert_eq!(s.message, "too old resource version: 1 (2)");
        }
        other => panic!("expected ERROR, got {other:?}"),
    }
    // From a retained RV, the history is replayed.
    let mut raw = pods
        .watch(&WatchParams::default(), "2")
        .await
        .unwrap()
        .boxed();
    match within("replay", raw.try_next()).await.unwrap().unwrap() {
        WatchEvent::Added(p) => assert_eq!(p.metadata.name.as_deref(), Some("p2")),
        other => panic!("expected ADDED, got {other:?}"),
    }

    // The watcher: cut it off, let its RV expire, heal: it must relist (a second Init).
    let watch_client = api.client("watcher");
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let stream =
        watcher(Api::<Pod>::all(watch_client), watcher::Config::default()).default_backoff();
    let task = tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(ev) = stream.next().await {
            let _ = tx.send(ev);
        }
    });
    let mut inits = 0;
    while inits == 0 {
        if let Ok(watcher::Event::InitDone) = within("first init", rx.recv()).await.unwrap() {
            inits += 1;
        }
    }
    let faults = api.faults("watcher");
    faults.hang().drop_watches();
    pods.create(&PostParams::default(), &pod("late", "s"))
        .await
        .unwrap();
    api.compact();
    faults.heal();
    let mut relisted_late = false;
    loop {
        match within("relist", rx.recv()).await.unwrap() {
            Ok(watcher::Event::Init) => inits += 1,
            Ok(watcher::Event::InitApply(p)) if p.metadata.name.as_deref() == Some("late") => {
                relisted_late = true
            }
            Ok(watcher::Event::InitDone) if inits == 2 => break,
            _ => {}
        }
    }
    assert!(relisted_late);
    task.abort();
    api.shutdown().await;
}

#[tokio::test]
async fn watch_timeout_and_bookmarks() {
    let api = ApiServer::start().await;
    let pods: Api<Pod> = Api::namespaced(api.client("t"), "default");
    pods.create(&PostParams::default(), &pod("p", "s"))
        .await
        .unwrap();
    let rv = api.resource_version().to_string();
    let wp = WatchParams::default().timeout(1);
    let events: Vec<_> = within(
        "watch ends after timeoutSeconds",
        pods.watch(&wp, &rv).await.unwrap().collect::<Vec<_>>(),
    )
    .await;
    assert_eq!(events.len(), 1, "only the closing bookmark");
    match &events[0] {
        Ok(WatchEvent::Bookmark(b)) => assert_eq!(b.metadata.resource_version, rv),
        other => panic!("expected BOOKMARK, got {other:?}"),
    }
    api.shutdown().await;
}

#[tokio::test]
async fn faults_are_per_client() {
    let api = ApiServer::start().await;
    let a: Api<Pod> = Api::namespaced(api.client("replica-a"), "default");
    let b: Api<Pod> = Api::namespaced(api.client("replica-b"), "default");

    api.faults("replica-a").fail_next(2, 503);
    for _ in 0..2 {
        let s = api_err(a.list(&ListParams::default()).await.unwrap_err());
        assert_eq!((s.code, s.reason.as_str()), (503, "ServiceUnavailable"));
        b.list(&ListParams::default()).await.unwrap();
    }
    a.list(&ListParams::default()).await.unwrap();

    // Hang: a's request gets no answer; b is served; after heal a is served again and the held
    // write was never applied.
    api.faults("replica-a").hang();
    let held = tokio::spawn({
        let a = a.clone();
        async move { a.create(&PostParams::default(), &pod("from-a", "s")).await }
    });
    b.create(&PostParams::default(), &pod("from-b", "s"))
        .await
        .unwrap();
    assert!(
        tokio::time::timeout(Duration::from_millis(200), a.list(&ListParams::default()))
            .await
            .is_err()
    );
    assert!(!held.is_finished());
    api.faults("replica-a").heal();
    let s = api_err(
        within("held request released", held)
            .await
            .unwrap()
            .unwrap_err(),
    );
    assert_eq!(s.code, 504);
    assert!(api.get::<Pod>("default", "from-a").is_none());
    a.create(&PostParams::default(), &pod("from-a", "s"))
        .await
        .unwrap();

    // Latency applies to one client only. The latency is long so that b's bound is generous
    // on a loaded machine; only a's lower bound is exact.
    api.faults("replica-a").latency(Duration::from_secs(3));
    let t = std::time::Instant::now();
    b.get("from-b").await.unwrap();
    assert!(t.elapsed() < Duration::from_secs(3));
    let t = std::time::Instant::now();
    a.get("from-b").await.unwrap();
    assert!(t.elapsed() >= Duration::from_secs(3));

    // fail_all until heal.
    api.faults("replica-a").heal().fail_all(500);
    assert_eq!(
        api_err(a.get("from-b").await.unwrap_err()).reason,
        "InternalError"
    );
    b.get("from-b").await.unwrap();
    api.faults("replica-a").heal();
    a.get("from-b").await.unwrap();
    api.shutdown().await;
}

#[tokio::test]
async fn write_record_keeps_order_clients_and_codes() {
    let api = ApiServer::start().await;
    let a: Api<Pod> = Api::namespaced(api.client("replica-a"), "default");
    let b: Api<Pod> = Api::namespaced(api.client("replica-b"), "default");
    a.create(&PostParams::default(), &pod("p", "s"))
        .await
        .unwrap();
    b.get("p").await.unwrap(); // reads are not recorded
    let _ = b
        .create(&PostParams::default(), &pod("p", "s"))
        .await
        .unwrap_err();
    b.create_subresource::<_, kube::core::Status>(
        "binding",
        "p",
        &PostParams::default(),
        &binding("p", "n1", &[("who", "b")]),
    )
    .await
    .unwrap();
    api.faults("replica-a").fail_next(1, 503);
    let _ = a.delete("p", &DeleteParams::default()).await.unwrap_err();
    a.delete("p", &DeleteParams::default()).await.unwrap();

    let w = api.writes();
    type Row<'a> = (u64, &'a str, &'a str, &'a str, Option<&'a str>, u16);
    let summary: Vec<Row> = w
        .iter()
        .map(|r| {
            (
                r.seq,
                r.client.as_str(),
                r.method.as_str(),
                r.kind.as_str(),
                r.subresource.as_deref(),
                r.code,
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (0, "replica-a", "POST", "Pod", None, 201),
            (1, "replica-b", "POST", "Pod", None, 409),
            (2, "replica-b", "POST", "Pod", Some("binding"), 201),
            (3, "replica-a", "DELETE", "Pod", None, 503),
            (4, "replica-a", "DELETE", "Pod", None, 200),
        ]
    );
    assert!(w.iter().all(|r| r.name.as_deref() == Some("p")));
    let rvs: Vec<u64> = w
        .iter()
        .filter_map(|r| r.resource_version.as_deref())
        .map(|v| v.parse().unwrap())
        .collect();
    assert_eq!(rvs, vec![1, 2, 3]);
    assert_eq!(
        w[2].request.as_ref().unwrap()["metadata"]["annotations"]["who"],
        "b"
    );
    assert!(w.windows(2).all(|p| p[0].at <= p[1].at));
    api.shutdown().await;
}

#[tokio::test]
async fn dropping_one_clients_watches_leaves_others_open() {
    let api = ApiServer::start().await;
    let a: Api<Pod> = Api::namespaced(api.client("replica-a"), "default");
    let b: Api<Pod> = Api::namespaced(api.client("replica-b"), "default");
    let rv = api.resource_version().to_string();
    let mut wa = a.watch(&WatchParams::default(), &rv).await.unwrap().boxed();
    let mut wb = b.watch(&WatchParams::default(), &rv).await.unwrap().boxed();
    api.faults("replica-a").drop_watches();
    assert!(
        within("a's stream ends", wa.try_next())
            .await
            .unwrap()
            .is_none()
    );
    api.seed(&pod("p", "s")).unwrap();
    match within("b still watching", wb.try_next())
        .await
        .unwrap()
        .unwrap()
    {
        WatchEvent::Added(p) => assert_eq!(p.metadata.name.as_deref(), Some("p")),
        other => panic!("expected ADDED, got {other:?}"),
    }
    api.shutdown().await;
}

#[tokio::test]
async fn events_recorder_publishes_through_the_double() {
    use k8s_openapi::api::events::v1::Event as K8sEvent;
    use kube::runtime::events::{Event, EventType, Recorder, Reporter};
    let api = ApiServer::start().await;
    let created = api.seed(&pod("p", "mini")).unwrap();
    let reporter = Reporter {
        controller: "mini-scheduler".into(),
        instance: Some("replica-1".into()),
    };
    let recorder = Recorder::new(api.client("replica-1"), reporter);
    let reference = ObjectReference {
        kind: Some("Pod".into()),
        api_version: Some("v1".into()),
        namespace: Some("default".into()),
        name: Some("p".into()),
        uid: created.metadata.uid.clone(),
        ..Default::default()
    };
    let ev = Event {
        type_: EventType::Normal,
        reason: "Scheduled".into(),
        note: Some("Successfully assigned default/p to n1".into()),
        action: "Binding".into(),
        secondary: None,
    };
    recorder.publish(&ev, &reference).await.unwrap();
    recorder.publish(&ev, &reference).await.unwrap(); // a series: PATCH (merge)
    let events = api.list::<K8sEvent>();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].reason.as_deref(), Some("Scheduled"));
    let methods: Vec<String> = api
        .writes()
        .iter()
        .map(|w| format!("{} {}", w.method, w.code))
        .collect();
    assert_eq!(methods, vec!["POST 201", "PATCH 200"]);
    api.shutdown().await;
}

/// The storage kinds the volume plugins watch: PersistentVolumes and PersistentVolumeClaims
/// (with `status`), StorageClasses and CSINodes — create defaults, optimistic concurrency
/// (409), the status subresource, selectors, and list+watch through a `kube` watcher.
#[tokio::test]
async fn storage_kinds_list_watch_status_and_conflicts() {
    use k8s_openapi::api::core::v1::{
        PersistentVolume, PersistentVolumeClaim, PersistentVolumeClaimSpec, PersistentVolumeSpec,
        PersistentVolumeStatus,
    };
    use k8s_openapi::api::storage::v1::{CSINode, CSINodeSpec, StorageClass};

    let api = ApiServer::start().await;
    let client = api.client("tester");
    let pvs: Api<PersistentVolume> = Api::all(client.clone());
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "default");
    let scs: Api<StorageClass> = Api::all(client.clone());
    let csinodes: Api<CSINode> = Api::all(client.clone());

    // A watcher over PVs sees the initial list, then changes.
    let (reader, writer) = reflector::store::<PersistentVolume>();
    let watch = tokio::spawn(
        reflector(writer, watcher(pvs.clone(), watcher::Config::default()))
            .default_backoff()
            .applied_objects()
            .try_for_each(|_| async { Ok(()) }),
    );

    let pv = |name: &str, class: &str| PersistentVolume {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(BTreeMap::from([("tier".to_string(), class.to_string())])),
            ..Default::default()
        },
        spec: Some(PersistentVolumeSpec {
            storage_class_name: Some(class.into()),
            ..Default::default()
        }),
        status: Some(PersistentVolumeStatus {
            phase: Some("Available".into()),
            ..Default::default()
        }),
    };
    let created = pvs
        .create(&PostParams::default(), &pv("pv-a", "gold"))
        .await
        .unwrap();
    // Create resets the status as the PV strategy does; the PV controller sets Available.
    assert_eq!(created.status.unwrap().phase.as_deref(), Some("Pending"));
    assert!(created.metadata.namespace.is_none(), "cluster-scoped");
    pvs.create(&PostParams::default(), &pv("pv-b", "silver"))
        .await
        .unwrap();
    let e = api_err(
        pvs.create(&PostParams::default(), &pv("pv-a", "gold"))
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, 409);

    // Update with a stale resourceVersion: 409 Conflict; with the current one: accepted.
    let mut current = pvs.get("pv-a").await.unwrap();
    let stale_rv = current.metadata.resource_version.clone();
    current.spec.as_mut().unwrap().claim_ref = Some(ObjectReference {
        name: Some("c".into()),
        namespace: Some("default".into()),
        ..Default::default()
    });
    let updated = pvs
        .replace("pv-a", &PostParams::default(), &current)
        .await
        .unwrap();
    assert_ne!(updated.metadata.resource_version, stale_rv);
    let e = api_err(
        pvs.replace("pv-a", &PostParams::default(), &current)
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, 409, "{e:?}");
    // A main-resource write keeps the status; the status subresource changes it.
    let mut st = pvs.get("pv-a").await.unwrap();
    st.status = Some(PersistentVolumeStatus {
        phase: Some("Bound".into()),
        ..Default::default()
    });
    let bound = pvs
        .replace_status("pv-a", &PostParams::default(), &st)
        .await
        .unwrap();
    assert_eq!(bound.status.unwrap().phase.as_deref(), Some("Bound"));

    // Selectors: labels, and metadata.name as the only field of a cluster-scoped kind.
    let gold = pvs
        .list(&ListParams::default().labels("tier=gold"))
        .await
        .unwrap();
    assert_eq!(gold.items.len(), 1);
    let named = pvs
        .list(&ListParams::default().fields("metadata.name=pv-b"))
        .await
        .unwrap();
    assert_eq!(named.items[0].metadata.name.as_deref(), Some("pv-b"));
    let e = api_err(
        pvs.list(&ListParams::default().fields("metadata.namespace=x"))
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, 400);

    // Claims are namespaced, with a status subresource.
    let claim = PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some("c".into()),
            ..Default::default()
        },
        spec: Some(PersistentVolumeClaimSpec {
            storage_class_name: Some("gold".into()),
            ..Default::default()
        }),
        status: None,
    };
    let c = pvcs.create(&PostParams::default(), &claim).await.unwrap();
    assert_eq!(c.metadata.namespace.as_deref(), Some("default"));
    assert_eq!(c.status.unwrap().phase.as_deref(), Some("Pending"));
    let mut c = pvcs.get("c").await.unwrap();
    c.metadata.annotations = Some(BTreeMap::from([(
        "volume.kubernetes.io/selected-node".to_string(),
        "n1".to_string(),
    )]));
    pvcs.replace("c", &PostParams::default(), &c).await.unwrap();
    let e = api_err(
        pvcs.replace("c", &PostParams::default(), &c)
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, 409);

    // storage.k8s.io/v1: class defaults, CSINodes.
    let sc = scs
        .create(
            &PostParams::default(),
            &StorageClass {
                metadata: ObjectMeta {
                    name: Some("gold".into()),
                    ..Default::default()
                },
                provisioner: "ebs.csi.aws.com".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(sc.volume_binding_mode.as_deref(), Some("Immediate"));
    assert_eq!(sc.reclaim_policy.as_deref(), Some("Delete"));
    csinodes
        .create(
            &PostParams::default(),
            &CSINode {
                metadata: ObjectMeta {
                    name: Some("n1".into()),
                    ..Default::default()
                },
                spec: CSINodeSpec { drivers: vec![] },
                status: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(
        csinodes
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    let e = api_err(scs.get("silver").await.unwrap_err());
    assert_eq!(e.code, 404);
    assert_eq!(
        e.message,
        "storageclasses.storage.k8s.io \"silver\" not found"
    );

    // The watcher saw both PVs and the latest version of pv-a; a delete leaves the store.
    wait_for("watcher sees pv-a bound", || {
        reader.state().iter().any(|p| {
            p.metadata.name.as_deref() == Some("pv-a")
                && p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound")
        }) && reader.state().len() == 2
    })
    .await;
    pvs.delete("pv-b", &DeleteParams::default()).await.unwrap();
    wait_for("watcher drops pv-b", || reader.state().len() == 1).await;
    watch.abort();
    api.shutdown().await;
}
