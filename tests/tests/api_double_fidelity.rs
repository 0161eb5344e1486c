//! The test double where kube-apiserver's behaviour is subtle: LIST at a resourceVersion
//! (`NotOlderThan`, `Exact`, too large), continue tokens expiring with compaction, graceful pod
//! deletion (terminating, then the kubelet's final delete), watches from a future
//! resourceVersion, `dryRun`, and the targeted faults (fail without applying, apply and lose
//! the response, hold and apply late).
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Binding, Node, ObjectReference, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, VersionMatch, WatchEvent,
    WatchParams,
};
use tests::apiserver::{ApiServer, RequestMatch};

const WAIT: Duration = Duration::from_secs(10);

fn pod(name: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        spec: Some(PodSpec::default()),
        ..Default::default()
    }
}

fn bound_pod(name: &str, node: &str) -> Pod {
    let mut p = pod(name);
    p.spec.as_mut().unwrap().node_name = Some(node.into());
    p
}

fn binding(pod: &str, node: &str) -> Binding {
    Binding {
        metadata: ObjectMeta {
            name: Some(pod.into()),
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

fn names(l: &kube::core::ObjectList<Pod>) -> Vec<String> {
    l.items
        .iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect()
}

/// A GET the kube client would refuse to build, expected to fail with an API error.
async fn raw_get(api: &ApiServer, path_and_query: &str) -> kube::core::Status {
    let req = axum::http::Request::get(path_and_query)
        .body(Vec::new())
        .unwrap();
    api_err(
        api.client("t")
            .request::<serde_json::Value>(req)
            .await
            .unwrap_err(),
    )
}

fn rv_of(p: &Pod) -> u64 {
    p.metadata
        .resource_version
        .clone()
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn list_honours_resource_version_and_match() {
    let api = ApiServer::start().await;
    let pods: Api<Pod> = Api::namespaced(api.client("t"), "default");
    let a = pods
        .create(&PostParams::default(), &pod("a"))
        .await
        .unwrap();
    let at_a = rv_of(&a);
    pods.create(&PostParams::default(), &pod("b"))
        .await
        .unwrap();
    let mut a2 = pods.get("a").await.unwrap();
    a2.metadata.labels = Some([("v".to_string(), "2".to_string())].into());
    pods.replace("a", &PostParams::default(), &a2)
        .await
        .unwrap();
    pods.delete("b", &DeleteParams::default()).await.unwrap();
    pods.create(&PostParams::default(), &pod("c"))
        .await
        .unwrap();
    let now = api.resource_version();

    // Unset: the latest state, at the current resourceVersion.
    let l = pods.list(&ListParams::default()).await.unwrap();
    assert_eq!(names(&l), ["a", "c"]);
    assert_eq!(l.metadata.resource_version, Some(now.to_string()));
    // Exact: the state as it was, rebuilt from the history (b existed, a had no label, no c).
    let l = pods
        .list(
            &ListParams::default()
                .at(&(at_a + 1).to_string())
                .matching(VersionMatch::Exact),
        )
        .await
        .unwrap();
    assert_eq!(names(&l), ["a", "b"]);
    assert_eq!(l.items[0].metadata.labels, None);
    assert_eq!(l.metadata.resource_version, Some((at_a + 1).to_string()));
    // NotOlderThan an old version: served from the latest state, which is not older.
    let l = pods
        .list(&ListParams::default().at(&at_a.to_string()))
        .await
        .unwrap();
    assert_eq!(names(&l), ["a", "c"]);
    // resourceVersionMatch without a resourceVersion (kube checks it client-side too): 422.
    let e = raw_get(
        &api,
        "/api/v1/namespaces/default/pods?resourceVersionMatch=Exact",
    )
    .await;
    assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"));
    assert!(
        e.message
            .contains("resourceVersionMatch is forbidden unless resourceVersion is provided")
    );
    // A resourceVersion the server has not reached: after the watch cache's 3 s wait, 504.
    let t = std::time::Instant::now();
    let e = api_err(
        pods.list(&ListParams::default().at(&(now + 5).to_string()))
            .await
            .unwrap_err(),
    );
    assert!(t.elapsed() >= Duration::from_secs(3));
    assert_eq!(e.code, 504);
    assert_eq!(
        e.message,
        format!("Too large resource version: {}, current: {now}", now + 5)
    );
    // ... and is served once the store reaches it during the wait.
    let later = tokio::spawn({
        let pods = pods.clone();
        async move {
            pods.list(&ListParams::default().at(&(now + 1).to_string()))
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    pods.create(&PostParams::default(), &pod("d"))
        .await
        .unwrap();
    assert_eq!(names(&later.await.unwrap().unwrap()), ["a", "c", "d"]);
    // Exact below the compacted history: 410.
    api.compact();
    let e = api_err(
        pods.list(
            &ListParams::default()
                .at(&at_a.to_string())
                .matching(VersionMatch::Exact),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!((e.code, e.reason.as_str()), (410, "Expired"));
    api.shutdown().await;
}

#[tokio::test]
async fn continue_tokens_expire_with_compaction() {
    let api = ApiServer::start().await;
    let pods: Api<Pod> = Api::namespaced(api.client("t"), "default");
    for i in 0..5 {
        pods.create(&PostParams::default(), &pod(&format!("p{i}")))
            .await
            .unwrap();
    }
    let first = pods.list(&ListParams::default().limit(2)).await.unwrap();
    let token = first.metadata.continue_.clone().unwrap();
    // Writes while paging do not show: the pages come from the first page's snapshot.
    pods.create(&PostParams::default(), &pod("p9"))
        .await
        .unwrap();
    let second = pods
        .list(&ListParams::default().limit(2).continue_token(&token))
        .await
        .unwrap();
    assert_eq!(names(&second), ["p2", "p3"]);
    let token = second.metadata.continue_.clone().unwrap();
    // A resourceVersion with a continue token: 400.
    let e = raw_get(
        &api,
        &format!("/api/v1/namespaces/default/pods?limit=2&continue={token}&resourceVersion=3"),
    )
    .await;
    assert_eq!(e.code, 400);
    assert_eq!(
        e.message,
        "specifying resource version is not allowed when using continue"
    );
    // Compaction past the snapshot's resourceVersion: the token is too old.
    api.compact();
    let e = api_err(
        pods.list(&ListParams::default().limit(2).continue_token(&token))
            .await
            .unwrap_err(),
    );
    assert_eq!((e.code, e.reason.as_str()), (410, "Expired"));
    assert!(
        e.message
            .starts_with("The provided continue parameter is too old")
    );
    api.shutdown().await;
}

#[tokio::test]
async fn graceful_pod_deletion_has_a_terminating_phase() {
    // No kubelet: a bound pod stays terminating until a delete with grace 0.
    let api = ApiServer::builder().kubelet(None).start().await;
    let pods: Api<Pod> = Api::namespaced(api.client("t"), "default");
    pods.create(&PostParams::default(), &bound_pod("run", "n1"))
        .await
        .unwrap();
    pods.create(&PostParams::default(), &pod("pending"))
        .await
        .unwrap();
    let gone = pods.delete("run", &DeleteParams::default()).await.unwrap();
    let terminating = gone.left().expect("a graceful delete answers the pod");
    assert!(terminating.metadata.deletion_timestamp.is_some());
    assert_eq!(terminating.metadata.deletion_grace_period_seconds, Some(30));
    assert!(api.get::<Pod>("default", "run").is_some());
    let mut p = pod("term2");
    p.spec.as_mut().unwrap().termination_grace_period_seconds = Some(5);
    p.spec.as_mut().unwrap().node_name = Some("n1".into());
    pods.create(&PostParams::default(), &p).await.unwrap();
    let t = pods
        .delete("term2", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(
        t.left().unwrap().metadata.deletion_grace_period_seconds,
        Some(5),
        "the spec's terminationGracePeriodSeconds"
    );
    // A longer grace does not extend it; grace 0 deletes.
    pods.delete("term2", &DeleteParams::default().grace_period(20))
        .await
        .unwrap();
    assert_eq!(
        api.get::<Pod>("default", "term2")
            .unwrap()
            .metadata
            .deletion_grace_period_seconds,
        Some(5)
    );
    pods.delete("run", &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    assert!(api.get::<Pod>("default", "run").is_none());
    // An unbound pod is deleted at once.
    pods.delete("pending", &DeleteParams::default())
        .await
        .unwrap();
    assert!(api.get::<Pod>("default", "pending").is_none());
    api.shutdown().await;

    // The default kubelet finishes at once: watchers see MODIFIED (terminating), then DELETED.
    let api = ApiServer::start().await;
    let pods: Api<Pod> = Api::namespaced(api.client("t"), "default");
    let created = pods
        .create(&PostParams::default(), &bound_pod("run", "n1"))
        .await
        .unwrap();
    let mut w = pods
        .watch(
            &WatchParams::default(),
            &created.metadata.resource_version.unwrap(),
        )
        .await
        .unwrap()
        .boxed();
    pods.delete("run", &DeleteParams::default()).await.unwrap();
    let ev = tokio::time::timeout(WAIT, w.try_next())
        .await
        .unwrap()
        .unwrap();
    match ev {
        Some(WatchEvent::Modified(p)) => assert!(p.metadata.deletion_timestamp.is_some()),
        other => panic!("{other:?}"),
    }
    let ev = tokio::time::timeout(WAIT, w.try_next())
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(ev, Some(WatchEvent::Deleted(_))), "{ev:?}");
    assert!(api.get::<Pod>("default", "run").is_none());
    api.shutdown().await;
}

#[tokio::test]
async fn watch_from_a_future_resource_version_waits_then_fails() {
    let api = ApiServer::start().await;
    let pods: Api<Pod> = Api::namespaced(api.client("t"), "default");
    pods.create(&PostParams::default(), &pod("a"))
        .await
        .unwrap();
    let now = api.resource_version();
    // Reached during the wait: events after it only.
    let watch = tokio::spawn({
        let pods = pods.clone();
        async move {
            let mut s = pods
                .watch(&WatchParams::default(), &(now + 1).to_string())
                .await
                .unwrap()
                .boxed();
            s.try_next().await
        }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    pods.create(&PostParams::default(), &pod("b"))
        .await
        .unwrap(); // rv now+1: not sent
    pods.create(&PostParams::default(), &pod("c"))
        .await
        .unwrap();
    match tokio::time::timeout(WAIT, watch)
        .await
        .unwrap()
        .unwrap()
        .unwrap()
    {
        Some(WatchEvent::Added(p)) => assert_eq!(p.metadata.name.as_deref(), Some("c")),
        other => panic!("{other:?}"),
    }
    // Never reached: an in-stream 504 ResourceVersionTooLarge after 3 s.
    let far = api.resource_version() + 100;
    let mut s = pods
        .watch(&WatchParams::default(), &far.to_string())
        .await
        .unwrap()
        .boxed();
    match tokio::time::timeout(WAIT, s.try_next())
        .await
        .unwrap()
        .unwrap()
    {
        Some(WatchEvent::Error(e)) => {
            assert_eq!(e.code, 504);
            assert!(e.message.starts_with("Too large resource version"));
        }
        other => panic!("{other:?}"),
    }
    api.shutdown().await;
}

#[tokio::test]
async fn dry_run_writes_store_nothing() {
    let api = ApiServer::start().await;
    let pods: Api<Pod> = Api::namespaced(api.client("t"), "default");
    let dry = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let before = api.resource_version();
    let p = pods.create(&dry, &pod("a")).await.unwrap();
    assert_eq!(p.metadata.name.as_deref(), Some("a"));
    assert!(p.metadata.uid.is_some());
    assert!(api.get::<Pod>("default", "a").is_none());
    assert_eq!(api.resource_version(), before);

    let real = pods
        .create(&PostParams::default(), &pod("a"))
        .await
        .unwrap();
    let rv = api.resource_version();
    let patched = pods
        .patch(
            "a",
            &PatchParams::default().dry_run(),
            &Patch::Merge(serde_json::json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.metadata.labels.unwrap()["x"], "y");
    assert_eq!(
        patched.metadata.resource_version,
        real.metadata.resource_version
    );
    pods.create_subresource::<_, kube::core::Status>("binding", "a", &dry, &binding("a", "n1"))
        .await
        .unwrap();
    pods.delete("a", &DeleteParams::default().dry_run())
        .await
        .unwrap();
    let stored = api.get::<Pod>("default", "a").unwrap();
    assert_eq!(stored.metadata.labels, None);
    assert_eq!(stored.spec.unwrap().node_name, None);
    assert_eq!(api.resource_version(), rv);
    // Dry-run writes are in the write record, marked, with no resourceVersion.
    let w = api.writes();
    assert!(w.iter().filter(|w| w.dry_run).count() == 4);
    assert!(
        w.iter()
            .filter(|w| w.dry_run)
            .all(|w| w.resource_version.is_none())
    );
    // Validation still runs.
    let e = api_err(pods.create(&dry, &pod("a")).await.unwrap_err());
    assert_eq!(e.reason, "AlreadyExists");
    api.shutdown().await;
}

#[tokio::test]
async fn targeted_faults_fail_lose_or_delay_bindings_and_status_patches() {
    let api = ApiServer::start().await;
    api.seed(&Node {
        metadata: ObjectMeta {
            name: Some("n1".into()),
            ..Default::default()
        },
        ..Default::default()
    })
    .unwrap();
    let pods: Api<Pod> = Api::namespaced(api.client("s"), "default");
    for n in ["a", "b", "c"] {
        pods.create(&PostParams::default(), &pod(n)).await.unwrap();
    }
    let bind = |name: &'static str| {
        let pods = pods.clone();
        async move {
            pods.create_subresource::<_, kube::core::Status>(
                "binding",
                name,
                &PostParams::default(),
                &binding(name, "n1"),
            )
            .await
        }
    };

    // 429 on Bindings only: not applied; other requests served.
    api.faults("s")
        .fail_matching(RequestMatch::bindings(), 1, 429);
    assert_eq!(api_err(bind("a").await.unwrap_err()).code, 429);
    assert_eq!(
        api.get::<Pod>("default", "a")
            .unwrap()
            .spec
            .unwrap()
            .node_name,
        None
    );
    pods.get("a").await.unwrap();
    bind("a").await.unwrap();

    // 503 on status patches only.
    api.faults("s")
        .fail_matching(RequestMatch::pod_status_patches(), 1, 503);
    let cond = Patch::Strategic(serde_json::json!({"status": {"conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}}));
    let e = api_err(
        pods.patch_status("b", &PatchParams::default(), &cond)
            .await
            .unwrap_err(),
    );
    assert_eq!((e.code, e.reason.as_str()), (503, "ServiceUnavailable"));
    pods.patch_status("b", &PatchParams::default(), &cond)
        .await
        .unwrap();

    // Applied, response lost: 504 to the client, the pod is bound, a retry is 409.
    api.faults("s").lose_responses(RequestMatch::bindings(), 1);
    let e = api_err(bind("b").await.unwrap_err());
    assert_eq!((e.code, e.reason.as_str()), (504, "Timeout"));
    assert_eq!(
        api.get::<Pod>("default", "b")
            .unwrap()
            .spec
            .unwrap()
            .node_name
            .as_deref(),
        Some("n1")
    );
    let e = api_err(bind("b").await.unwrap_err());
    assert_eq!(e.code, 409);
    assert!(e.message.contains("already assigned"));
    let lost: Vec<_> = api
        .writes()
        .into_iter()
        .filter(|w| w.response_lost)
        .collect();
    assert_eq!(lost.len(), 1);
    assert_eq!((lost[0].code, lost[0].name.as_deref()), (201, Some("b")));

    // Held, applied late: the Binding lands when released, after a later write, even though
    // the client was cut off meanwhile.
    api.faults("s").hold_matching(RequestMatch::bindings());
    let late = tokio::spawn(bind("c"));
    tokio::time::timeout(WAIT, async {
        while api.faults("s").held() == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap();
    api.faults("s").hang();
    let other: Api<Pod> = Api::namespaced(api.client("other"), "default");
    other
        .create(&PostParams::default(), &pod("d"))
        .await
        .unwrap();
    assert!(!late.is_finished());
    api.faults("s").heal();
    tokio::time::timeout(WAIT, late)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let w = api.writes();
    let d = w.iter().find(|w| w.name.as_deref() == Some("d")).unwrap();
    let c = w
        .iter()
        .find(|w| w.name.as_deref() == Some("c") && w.subresource.as_deref() == Some("binding"))
        .unwrap();
    assert!(c.seq > d.seq && c.code == 201, "{c:?}");
    api.shutdown().await;
}
