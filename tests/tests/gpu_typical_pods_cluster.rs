//! Cluster mode with FGD (`config/policies/gpu/fgd.yaml`): the typical pods come from the pods
//! the scheduler has seen, pending ones included, and follow them as they are deleted.
//!
//! Two T4 nodes with two GPUs each; on each, a pod bound by another scheduler holds 400
//! milli-GPU of device 0 (free shares 600 and 1000). A 300-milli share then has a choice of
//! device, and FGD's choice depends on the typical pods:
//!
//! * with five pending whole-GPU pods that cannot fit (they ask for 100 GiB of memory, which
//!   FGD's fragmentation does not check), the typical pods are whole GPUs 5/8, 400-milli 2/8 and
//!   300-milli 1/8: device 0 leaves (300, 1000) — F = 5/8·300 + 2/8·300 = 262.5, down from
//!   375 — while device 1 leaves (600, 700), where no whole GPU fits: F = 5/8·1300 = 812.5.
//!   Device 0.
//! * once they are deleted, the typical pods are 400-milli 2/4 and 300-milli 2/4 (the two bound
//!   pods, the first share and the second): device 0 leaves 300 free, a fragment for the
//!   400-milli pods (F = 150, up from 0), device 1 none (F = 0). Device 1.
//!
//! Counting only the pods on the nodes (the snapshot's fallback) would give device 1 in the
//! first case, and keeping the deleted pods device 0 in the second.
//!
//! Real time (the API double serves HTTP); every wait polls with a timeout.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, PostParams};
use scheduler::model::ANNOTATION_GPU_INDEXES;
use tests::apiserver::ApiServer;
use tests::objects::{self, node_of, wait_for};
use tests::replica::{gpu_profile, run_config, spawn_replica_with};

const WAIT: Duration = Duration::from_secs(20);

/// A 400-milli share on device 0 of `node`, bound by another scheduler.
fn busy(name: &str, node: &str) -> Pod {
    let mut p = objects::pod(
        name,
        &[
            ("cpu", "1"),
            ("memory", "64Mi"),
            ("alibabacloud.com/gpu-milli", "400"),
        ],
    );
    let spec = p.spec.as_mut().unwrap();
    spec.node_name = Some(node.into());
    spec.scheduler_name = Some("default-scheduler".into());
    p.metadata.annotations = Some(BTreeMap::from([(
        ANNOTATION_GPU_INDEXES.to_string(),
        "0".to_string(),
    )]));
    p
}

/// A 300-milli share that must run on `node`.
fn share(name: &str, node: &str) -> Pod {
    let mut p = objects::pod(
        name,
        &[
            ("cpu", "1"),
            ("memory", "64Mi"),
            ("alibabacloud.com/gpu-milli", "300"),
        ],
    );
    p.spec.as_mut().unwrap().node_selector = Some(BTreeMap::from([(
        "kubernetes.io/hostname".to_string(),
        node.to_string(),
    )]));
    p
}

fn gpu_indexes(api: &ApiServer, name: &str) -> Option<String> {
    api.get::<Pod>("default", name)?
        .metadata
        .annotations?
        .get(ANNOTATION_GPU_INDEXES)
        .cloned()
}

fn unschedulable(api: &ApiServer, name: &str) -> bool {
    api.get::<Pod>("default", name)
        .and_then(|p| p.status?.conditions)
        .is_some_and(|c| {
            c.iter()
                .any(|c| c.type_ == "PodScheduled" && c.status == "False")
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fgd_typical_pods_follow_the_pending_pods() {
    let api = ApiServer::start().await;
    for n in ["g1", "g2"] {
        api.seed(&objects::t4_gpu_node(n)).unwrap();
    }
    api.seed(&busy("busy-1", "g1")).unwrap();
    api.seed(&busy("busy-2", "g2")).unwrap();
    let mut run = run_config("replica-1");
    run.profile = gpu_profile("fgd.yaml");
    let r = spawn_replica_with(&api, "replica-1", false, run).await;
    let pods = Api::<Pod>::namespaced(api.client("tester"), "default");

    // Five whole-GPU pods that fit nowhere (memory) stay pending, and count.
    for i in 0..5 {
        let p = objects::pod(
            &format!("hungry-{i}"),
            &[("cpu", "1"), ("memory", "100Gi"), ("nvidia.com/gpu", "1")],
        );
        pods.create(&PostParams::default(), &p).await.unwrap();
    }
    wait_for("the whole-GPU pods reported unschedulable", WAIT, || {
        (0..5).all(|i| unschedulable(&api, &format!("hungry-{i}")))
    })
    .await;
    pods.create(&PostParams::default(), &share("first", "g1"))
        .await
        .unwrap();
    wait_for("the first share bound", WAIT, || {
        gpu_indexes(&api, "first").is_some()
    })
    .await;
    assert_eq!(node_of(&api, "first").as_deref(), Some("g1"));
    assert_eq!(gpu_indexes(&api, "first").as_deref(), Some("0"));

    // They are deleted: the next share sees only the shares.
    for i in 0..5 {
        pods.delete(&format!("hungry-{i}"), &DeleteParams::default())
            .await
            .unwrap();
    }
    wait_for("the whole-GPU pods deleted", WAIT, || {
        (0..5).all(|i| api.get::<Pod>("default", &format!("hungry-{i}")).is_none())
    })
    .await;
    pods.create(&PostParams::default(), &share("second", "g2"))
        .await
        .unwrap();
    wait_for("the second share bound", WAIT, || {
        gpu_indexes(&api, "second").is_some()
    })
    .await;
    assert_eq!(node_of(&api, "second").as_deref(), Some("g2"));
    assert_eq!(gpu_indexes(&api, "second").as_deref(), Some("1"));
    drop(r);
    api.shutdown().await;
}
