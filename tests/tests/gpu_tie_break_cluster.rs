//! Cluster mode's `--tie-break` (RunConfig::tie_break) with FGD (`config/policies/gpu/fgd.yaml`):
//! eight identical T4 nodes score the same for a one-GPU pod, so the tie-break alone picks the
//! node. `NodeName` takes the lowest name whatever order the nodes were created in;
//! `NodeOrder(0)` the node whose name comes first in the seed-0 order
//! ([`scheduler::schedule_one::node_order_key`]), the same in every replica. (kube-scheduler's
//! random choice would pick either with probability 1/8.)
//!
//! Real time (the API double serves HTTP); every wait polls with a timeout.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use scheduler::schedule_one::{TieBreak, node_order_key};
use tests::apiserver::ApiServer;
use tests::objects::{self, node_of, wait_for};
use tests::replica::{gpu_profile, run_config, spawn_replica_with};

const WAIT: Duration = Duration::from_secs(20);

/// Created in this order: the lowest name last.
const NODES: [&str; 8] = ["g8", "g7", "g6", "g5", "g4", "g3", "g2", "g1"];

/// Schedules one one-GPU pod with FGD and `tie_break`; the node it was bound to.
async fn bound_node(tie_break: TieBreak) -> String {
    let api = ApiServer::start().await;
    for n in NODES {
        api.seed(&objects::t4_gpu_node(n)).unwrap();
    }
    let mut run = run_config("replica-1");
    run.profile = gpu_profile("fgd.yaml");
    run.tie_break = tie_break;
    let r = spawn_replica_with(&api, "replica-1", false, run).await;
    let pods = Api::<Pod>::namespaced(api.client("tester"), "default");
    let p = objects::pod(
        "train",
        &[("cpu", "1"), ("memory", "64Mi"), ("nvidia.com/gpu", "1")],
    );
    pods.create(&PostParams::default(), &p).await.unwrap();
    wait_for("the pod bound", WAIT, || node_of(&api, "train").is_some()).await;
    let node = node_of(&api, "train").unwrap();
    drop(r);
    api.shutdown().await;
    node
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_name_tie_break_takes_the_lowest_name() {
    assert_eq!(bound_node(TieBreak::NodeName).await, "g1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_order_tie_break_takes_the_first_of_the_seeded_order() {
    let first = NODES
        .iter()
        .min_by_key(|n| node_order_key(0, n))
        .unwrap()
        .to_string();
    assert_eq!(bound_node(TieBreak::NodeOrder(0)).await, first);
}
