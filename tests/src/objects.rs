//! Helpers shared by the cluster and extender tests: node and pod builders, reads of pods from
//! the API test double, and polling for a condition in real time.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{
    Container, Node, NodeSpec, NodeStatus, Pod, PodSpec, ResourceRequirements,
};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::apiserver::ApiServer;
use crate::replica::SCHEDULER_NAME;

/// A resource list from `(name, quantity)` pairs, e.g. `[("cpu", "4"), ("memory", "8Gi")]`.
pub fn quantities(pairs: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
        .collect()
}

/// A node `name` with allocatable = capacity = `resources` (see [`quantities`]), no labels.
pub fn node(name: &str, resources: &[(&str, &str)]) -> Node {
    let res = quantities(resources);
    Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        spec: Some(NodeSpec::default()),
        status: Some(NodeStatus {
            allocatable: Some(res.clone()),
            capacity: Some(res),
            ..Default::default()
        }),
    }
}

/// A GPU node `name` of the openb shape the GPU cluster tests use: 8 cores, 8 GiB, 110 pods,
/// two T4 devices (`nvidia.com/gpu: 2`, `alibabacloud.com/gpu-milli: 2000`), labelled with its
/// hostname and [`scheduler::model::LABEL_GPU_MODEL`] `T4`.
pub fn t4_gpu_node(name: &str) -> Node {
    let mut n = node(
        name,
        &[
            ("cpu", "8"),
            ("memory", "8Gi"),
            ("pods", "110"),
            ("nvidia.com/gpu", "2"),
            ("alibabacloud.com/gpu-milli", "2000"),
        ],
    );
    n.metadata.labels = Some(BTreeMap::from([
        ("kubernetes.io/hostname".to_string(), name.to_string()),
        (
            scheduler::model::LABEL_GPU_MODEL.to_string(),
            "T4".to_string(),
        ),
    ]));
    n
}

/// A pod `default/name` for [`SCHEDULER_NAME`] with one container `main` requesting
/// `requests` (see [`quantities`]).
pub fn pod(name: &str, requests: &[(&str, &str)]) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            scheduler_name: Some(SCHEDULER_NAME.into()),
            containers: vec![Container {
                name: "main".into(),
                resources: Some(ResourceRequirements {
                    requests: Some(quantities(requests)),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The node pod `default/name` is bound to, if any.
pub fn node_of(api: &ApiServer, name: &str) -> Option<String> {
    api.get::<Pod>("default", name)?.spec?.node_name
}

/// `(status, reason, message)` of the `PodScheduled` condition of pod `default/<pod>`.
pub fn pod_scheduled(api: &ApiServer, pod: &str) -> Option<(String, String, String)> {
    let c = api
        .get::<Pod>("default", pod)?
        .status?
        .conditions?
        .into_iter()
        .find(|c| c.type_ == "PodScheduled")?;
    Some((
        c.status,
        c.reason.unwrap_or_default(),
        c.message.unwrap_or_default(),
    ))
}

/// Notes of the events.k8s.io/v1 events with `reason` regarding pod `default/<pod>`.
pub fn event_notes(api: &ApiServer, pod: &str, reason: &str) -> Vec<String> {
    api.list::<Event>()
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some(reason))
        .filter(|e| {
            e.regarding
                .as_ref()
                .is_some_and(|r| r.kind.as_deref() == Some("Pod") && r.name.as_deref() == Some(pod))
        })
        .filter_map(|e| e.note)
        .collect()
}

/// Polls `cond` every 50 ms (real time: the replicas talk to the API double over loopback)
/// until it holds.
///
/// # Panics
/// After `timeout`, naming `what`.
pub async fn wait_for(what: &str, timeout: Duration, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < timeout,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Creates `pod` through the API (as client `tester`) and waits, at most `timeout`, until it
/// is bound; returns its node.
///
/// # Panics
/// If the create fails or the pod is not bound in time.
pub async fn create_and_wait_bound(api: &ApiServer, pod: &Pod, timeout: Duration) -> String {
    let name = pod.metadata.name.clone().unwrap_or_default();
    let ns = pod.metadata.namespace.as_deref().unwrap_or("default");
    kube::Api::<Pod>::namespaced(api.client("tester"), ns)
        .create(&kube::api::PostParams::default(), pod)
        .await
        .expect("create the pod");
    let mut bound = None;
    wait_for(&format!("{name} to be bound"), timeout, || {
        bound = api.get::<Pod>(ns, &name).and_then(|p| p.spec?.node_name);
        bound.is_some()
    })
    .await;
    bound.unwrap_or_default()
}
