//! VolumeBinding's PreBind in cluster mode against the API test double, with a tiny fake PV
//! controller playing kube-controller-manager: the scheduler writes the PV's `claimRef` (static
//! binding) or the claim's `volume.kubernetes.io/selected-node` (provisioning), waits until the
//! controller has bound the claim, then binds the pod; a failed provisioning undoes everything
//! and the pod is scheduled again.
//!
//! Real time (the double serves HTTP); every wait polls with a timeout.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use election::LeaderWatch;
use k8s_openapi::api::core::v1::{ObjectReference, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::events::v1::Event as K8sEvent;
use kube::api::{Api, PostParams};
use scheduler::controller::RateLimiter;
use scheduler::controller::volume_binding::{PreBindError, VolumeBindJob, bind_pod_volumes};
use scheduler::policy::default_provider;
use scheduler::volume::csi::MigrationGates;
use scheduler::volume::helpers::ANN_SELECTED_NODE;
use scheduler::volume::{AssumedPodVolumes, BindingInfo, PodVolumes};
use tests::apiserver::ApiServer;
use tests::objects::{node_of, wait_for};
use tests::replica::{run_config, spawn_replica_with};
use tests::volumes::{HOSTNAME, claim, class, fake_pv_controller, local_pv, node, pod_with_claim};

const TESTER: &str = "tester";
const CONTROLLER: &str = "pv-controller";
const WAIT: Duration = Duration::from_secs(30);

/// Static binding and dynamic provisioning through a leading replica: the PV/PVC writes come
/// from the replica, before its Binding, and the claims end bound on the pods' nodes; a
/// provisioning the provisioner rejects once is reported as FailedScheduling and retried.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prebind_binds_volumes_before_the_pod() {
    let api = ApiServer::start().await;
    for n in ["n1", "n2"] {
        api.seed(&node(n)).unwrap();
    }
    api.seed(&class("local", "kubernetes.io/no-provisioner", None))
        .unwrap();
    api.seed(&class("fast", "csi.example.com", Some("n2")))
        .unwrap();
    api.seed(&local_pv("local-n1", "n1")).unwrap();
    api.seed(&claim("static", "local")).unwrap();
    api.seed(&claim("dynamic", "fast")).unwrap();
    api.seed(&claim("retried", "fast")).unwrap();

    let fail_once = Arc::new(Mutex::new(HashSet::from(["retried".to_string()])));
    let controller = tokio::spawn(fake_pv_controller(
        api.client(CONTROLLER),
        fail_once.clone(),
    ));

    let mut run = run_config("replica-1");
    run.profile =
        scheduler::profile::Profile::from_resolved(default_provider(), "DefaultProvider").unwrap();
    let mut replica = spawn_replica_with(&api, "replica-1", false, run).await;

    let pods: Api<Pod> = Api::namespaced(api.client(TESTER), "default");
    for (p, c) in [
        ("uses-static", "static"),
        ("uses-dynamic", "dynamic"),
        ("uses-retried", "retried"),
    ] {
        pods.create(&PostParams::default(), &pod_with_claim(p, c))
            .await
            .unwrap();
    }

    wait_for("the three pods bound", WAIT, || {
        ["uses-static", "uses-dynamic", "uses-retried"]
            .iter()
            .all(|p| node_of(&api, p).is_some())
    })
    .await;
    // Static: the only PV is on n1. Dynamic: the class allows only n2.
    assert_eq!(node_of(&api, "uses-static").as_deref(), Some("n1"));
    assert_eq!(node_of(&api, "uses-dynamic").as_deref(), Some("n2"));
    assert_eq!(node_of(&api, "uses-retried").as_deref(), Some("n2"));

    let pv = api.get::<PersistentVolume>("", "local-n1").unwrap();
    let claim_ref = pv.spec.unwrap().claim_ref.unwrap();
    let static_claim = api
        .get::<PersistentVolumeClaim>("default", "static")
        .unwrap();
    assert_eq!(claim_ref.name.as_deref(), Some("static"));
    assert_eq!(claim_ref.uid, static_claim.metadata.uid);
    assert_eq!(
        pv.metadata.annotations.unwrap()["pv.kubernetes.io/bound-by-controller"],
        "yes"
    );
    assert_eq!(
        static_claim.spec.unwrap().volume_name.as_deref(),
        Some("local-n1")
    );
    let dynamic = api
        .get::<PersistentVolumeClaim>("default", "dynamic")
        .unwrap();
    assert_eq!(
        dynamic.metadata.annotations.unwrap()[ANN_SELECTED_NODE],
        "n2"
    );

    // Every volume write precedes the pod's Binding, and both come from the replica.
    let writes = api.writes();
    let seq_of = |pred: &dyn Fn(&tests::apiserver::WriteRecord) -> bool| {
        writes.iter().find(|w| pred(w)).map(|w| w.seq).unwrap()
    };
    let pv_write = seq_of(&|w| {
        w.client == "replica-1"
            && w.kind == "PersistentVolume"
            && w.method == "PUT"
            && w.code == 200
    });
    let static_bind = seq_of(&|w| {
        w.subresource.as_deref() == Some("binding") && w.name.as_deref() == Some("uses-static")
    });
    assert!(pv_write < static_bind, "PreBind writes before Bind");
    let pvc_write = seq_of(&|w| {
        w.client == "replica-1"
            && w.kind == "PersistentVolumeClaim"
            && w.name.as_deref() == Some("dynamic")
            && w.code == 200
    });
    let dynamic_bind = seq_of(&|w| {
        w.subresource.as_deref() == Some("binding") && w.name.as_deref() == Some("uses-dynamic")
    });
    assert!(pvc_write < dynamic_bind);

    // The rejected provisioning: FailedScheduling with PreBind's error, then a second try.
    assert!(
        fail_once.lock().unwrap().is_empty(),
        "the provisioner failed once"
    );
    let failed: Vec<String> = api
        .list::<K8sEvent>()
        .into_iter()
        .filter(|e| {
            e.reason.as_deref() == Some("FailedScheduling")
                && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("uses-retried")
        })
        .filter_map(|e| e.note)
        .collect();
    assert!(
        failed.iter().any(|n| n
            == "running PreBind plugin \"VolumeBinding\": binding volumes: provisioning failed for PVC \"retried\""),
        "{failed:?}"
    );
    let retried_writes = writes
        .iter()
        .filter(|w| {
            w.client == "replica-1"
                && w.kind == "PersistentVolumeClaim"
                && w.name.as_deref() == Some("retried")
                && w.code == 200
        })
        .count();
    assert_eq!(retried_writes, 2, "selected-node written twice");
    replica.shutdown();
    let _ = tokio::time::timeout(WAIT, &mut replica.join).await;
    controller.abort();
    api.shutdown().await;
}

/// `bind_pod_volumes` alone: the PV write happens, then, with no PV controller, the wait ends
/// with v1.22's timeout error; a PV update the API server refuses (stale resourceVersion) fails
/// at once with its message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prebind_times_out_without_a_pv_controller() {
    let api = ApiServer::start().await;
    api.seed(&node("n1")).unwrap();
    let pv = api.seed(&local_pv("local-n1", "n1")).unwrap();
    let pvc = api.seed(&claim("static", "local")).unwrap();
    let pod = api.seed(&pod_with_claim("uses-static", "static")).unwrap();
    let client = api.client("replica-1");
    let guard = LeaderWatch::always_leading("replica-1")
        .leadership()
        .unwrap();
    let limiter = RateLimiter::new(0.0, 1);
    let mut bound_pv = pv.clone();
    bound_pv.spec.as_mut().unwrap().claim_ref = Some(ObjectReference {
        kind: Some("PersistentVolumeClaim".into()),
        namespace: Some("default".into()),
        name: Some("static".into()),
        uid: pvc.metadata.uid.clone(),
        ..Default::default()
    });
    let job = |pv: PersistentVolume| VolumeBindJob {
        pod: Arc::new(scheduler::model::PodInfo::from_pod(pod.clone()).unwrap()),
        assumed: AssumedPodVolumes {
            node: "n1".into(),
            all_bound: false,
            volumes: PodVolumes {
                static_bindings: vec![BindingInfo {
                    pv: Arc::new(pv),
                    pvc: Arc::new(pvc.clone()),
                }],
                dynamic_provisions: vec![],
            },
        },
        node_labels: BTreeMap::from([(HOSTNAME.to_string(), "n1".to_string())]),
        csi_node: None,
        gates: MigrationGates::default(),
    };
    let started = std::time::Instant::now();
    let err = bind_pod_volumes(
        &client,
        &client,
        &guard,
        &limiter,
        &job(bound_pv.clone()),
        Duration::from_millis(600),
        Duration::from_millis(100),
    )
    .await
    .unwrap_err();
    assert_eq!(
        err,
        PreBindError::Failed("binding volumes: timed out waiting for the condition".into())
    );
    assert!(started.elapsed() >= Duration::from_millis(500));
    let stored = api.get::<PersistentVolume>("", "local-n1").unwrap();
    assert_eq!(
        stored.spec.unwrap().claim_ref.unwrap().name.as_deref(),
        Some("static"),
        "the claimRef was written"
    );
    // The same write again carries the old resourceVersion: 409, reported at once.
    let err = bind_pod_volumes(
        &client,
        &client,
        &guard,
        &limiter,
        &job(bound_pv),
        Duration::from_secs(10),
        Duration::from_millis(100),
    )
    .await
    .unwrap_err();
    let PreBindError::Failed(msg) = err else {
        panic!("{err:?}")
    };
    assert!(msg.contains("the object has been modified"), "{msg}");
    api.shutdown().await;
}

/// checkBindings' failures in v1.22's words, where upstream reads its caches: a deleted pod
/// (`pod does not exist any more: pod "X" not found`, the pod lister's NotFound) and a claim
/// that is gone (`failed to check binding: could not find v1.PersistentVolumeClaim "ns/X"`, the
/// assume cache's errNotFound), not the API server's `pods "X" not found`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prebind_reports_missing_objects_in_upstream_words() {
    let api = ApiServer::start().await;
    api.seed(&node("n1")).unwrap();
    let client = api.client("replica-1");
    let guard = LeaderWatch::always_leading("replica-1")
        .leadership()
        .unwrap();
    let limiter = RateLimiter::new(0.0, 1);
    let job = |pv: PersistentVolume, pvc: PersistentVolumeClaim, pod: Pod| {
        let mut bound = pv;
        bound.spec.as_mut().unwrap().claim_ref = Some(ObjectReference {
            kind: Some("PersistentVolumeClaim".into()),
            namespace: Some("default".into()),
            name: Some("static".into()),
            uid: Some("some-uid".into()),
            ..Default::default()
        });
        VolumeBindJob {
            pod: Arc::new(scheduler::model::PodInfo::from_pod(pod).unwrap()),
            assumed: AssumedPodVolumes {
                node: "n1".into(),
                all_bound: false,
                volumes: PodVolumes {
                    static_bindings: vec![BindingInfo {
                        pv: Arc::new(bound),
                        pvc: Arc::new(pvc),
                    }],
                    dynamic_provisions: vec![],
                },
            },
            node_labels: BTreeMap::from([(HOSTNAME.to_string(), "n1".to_string())]),
            csi_node: None,
            gates: MigrationGates::default(),
        }
    };
    // The pod was deleted meanwhile (never created here).
    let pv = api.seed(&local_pv("pv-a", "n1")).unwrap();
    let pvc = api.seed(&claim("static", "local")).unwrap();
    let err = bind_pod_volumes(
        &client,
        &client,
        &guard,
        &limiter,
        &job(pv, pvc.clone(), pod_with_claim("gone", "static")),
        Duration::from_secs(10),
        Duration::from_millis(50),
    )
    .await
    .unwrap_err();
    assert_eq!(
        err,
        PreBindError::Failed(
            "binding volumes: pod does not exist any more: pod \"gone\" not found".into()
        )
    );
    // The pod exists, its claim does not.
    let pv = api.seed(&local_pv("pv-b", "n1")).unwrap();
    let pod = api
        .seed(&pod_with_claim("uses-missing", "missing"))
        .unwrap();
    let mut missing = pvc;
    missing.metadata.name = Some("missing".into());
    let err = bind_pod_volumes(
        &client,
        &client,
        &guard,
        &limiter,
        &job(pv, missing, pod),
        Duration::from_secs(10),
        Duration::from_millis(50),
    )
    .await
    .unwrap_err();
    assert_eq!(
        err,
        PreBindError::Failed(
            "binding volumes: failed to check binding: could not find v1.PersistentVolumeClaim \"default/missing\"".into()
        )
    );
    api.shutdown().await;
}
