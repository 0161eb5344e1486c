#![allow(clippy::unwrap_used)]

use super::*;
use crate::framework::plugins::testutil::{NodeB, PodB, node, pod};

fn n(name: &str) -> NodeB {
    node(name).allocatable(&[("cpu", "4"), ("memory", "8Gi"), ("pods", "110")])
}

fn cache_with(nodes: &[&str]) -> Cache {
    let mut c = Cache::default();
    for name in nodes {
        c.add_node(n(name).info());
    }
    c
}

/// A pending pod requesting `milli` cpu.
fn p(name: &str, milli: i64) -> PodB {
    let cpu = format!("{milli}m");
    pod(name).container(&[("cpu", cpu.as_str()), ("memory", "1Gi")])
}

fn pending(name: &str, milli: i64) -> Arc<PodInfo> {
    Arc::new(p(name, milli).info())
}

fn assigned(name: &str, milli: i64, node: &str) -> Arc<PodInfo> {
    Arc::new(p(name, milli).node(node).info())
}

fn with_uid(pb: PodB, uid: &str) -> Arc<PodInfo> {
    let mut pb = pb;
    pb.0.metadata.uid = Some(uid.into());
    Arc::new(pb.info())
}

/// The cycle's decision: `node`, with VolumeBinding's reservation `volumes`.
fn placed(node: &str, volumes: crate::volume::PodVolumes) -> ScheduleResult {
    ScheduleResult {
        reservations: vec![Reservation::Volumes(Arc::new(volumes))],
        ..ScheduleResult::on_node(node)
    }
}

/// Requested cpu and pod count on `node`, read from the NodeInfo and checked against its
/// hot row.
fn used(c: &Cache, node: &str) -> (i64, usize) {
    let s = c.snapshot();
    let i = s.node_index(node).unwrap() as usize;
    let ni = &s.nodes()[i];
    assert_eq!(s.columns().get(i), crate::snapshot::NodeHot::of(ni));
    (ni.requested.milli_cpu, ni.pods.len())
}

/// `TestAssumePodScheduled`: an assumed pod counts on its node at once.
#[test]
fn assume_accounts_immediately() {
    let mut c = cache_with(&["n1", "n2"]);
    c.assume_pod(pending("a", 500), "n1", None).unwrap();
    c.assume_pod(pending("b", 1500), "n1", None).unwrap();
    assert_eq!(used(&c, "n1"), (2000, 2));
    assert_eq!(used(&c, "n2"), (0, 0));
    assert!(c.is_assumed("default/a"));
    assert_eq!(c.assumed_pod_count(), 2);
    let on_node = &c.snapshot().node("n1").unwrap().pods;
    assert!(on_node.iter().all(|p| p.node_name == "n1"));
    // No double assumption, no unknown node.
    assert!(matches!(
        c.assume_pod(pending("a", 500), "n2", None),
        Err(CacheError::AssumePod { .. })
    ));
    assert_eq!(
        c.assume_pod(pending("c", 1), "nope", None)
            .unwrap_err()
            .to_string(),
        "assume pod default/c on node nope: the node is not in the cache"
    );
    assert_eq!(used(&c, "n1"), (2000, 2));
}

/// Unreserve does not depend on ForgetPod succeeding (v1.22 `scheduleOne` runs
/// `RunReservePluginsUnreserve`, then `ForgetPod` and only logs its error): a binding that
/// failed after the watch already confirmed the pod still reverts the volume assumption.
/// Before the fix the record and the assumed PV stayed.
#[test]
fn forget_reverts_volumes_even_when_the_pod_is_no_longer_assumed() {
    use crate::volume::BindingInfo;
    use crate::volume::testutil::{make_pv, make_pvc, make_sc};
    let mut c = cache_with(&["n1"]);
    c.volumes_mut()
        .upsert_storage_class(make_sc("wait", Some("WaitForFirstConsumer"), ""));
    c.volumes_mut().upsert_pv(make_pv("pv1", "wait", "1Gi"));
    c.volumes_mut()
        .upsert_pvc(make_pvc("data", "", "wait", Some("1Gi")));
    let a = Arc::new(
        p("a", 100)
            .volume(k8s_openapi::api::core::v1::Volume {
                name: "data".into(),
                persistent_volume_claim: Some(
                    k8s_openapi::api::core::v1::PersistentVolumeClaimVolumeSource {
                        claim_name: "data".into(),
                        ..Default::default()
                    },
                ),
                ..Default::default()
            })
            .info(),
    );
    let idx = c.snapshot().volumes().clone();
    let volumes = crate::volume::PodVolumes {
        static_bindings: vec![BindingInfo {
            pv: idx.pv("pv1").unwrap().clone(),
            pvc: idx.pvc("default", "data").unwrap().clone(),
        }],
        dynamic_provisions: vec![],
    };
    drop(idx);
    let assumed = c.assume(a.clone(), &placed("n1", volumes)).unwrap();
    assert!(assumed.volumes.is_some(), "PreBind has a binding to write");
    let claim_ref = |c: &Cache| {
        c.snapshot()
            .volumes()
            .pv_latest("pv1")
            .unwrap()
            .spec
            .as_ref()
            .unwrap()
            .claim_ref
            .is_some()
    };
    assert!(claim_ref(&c));
    // The watch confirms the pod; then the binder reports a failure.
    let confirmed = Arc::new(PodInfo {
        node_name: "n1".into(),
        ..(*a).clone()
    });
    c.add_pod(confirmed.clone()).unwrap();
    assert!(c.forget_pod(&confirmed).is_err());
    assert!(!c.snapshot().volumes().has_assumed_pod("default/a"));
    assert!(!claim_ref(&c), "the PV assumption was reverted");
}

/// A Reserve failure (the PV the cycle chose is gone) leaves nothing assumed: the pod is
/// forgotten by `assume` itself, and can be assumed again.
#[test]
fn reserve_failure_forgets_the_pod() {
    use crate::volume::BindingInfo;
    use crate::volume::testutil::{make_pv, make_pvc};
    let mut c = cache_with(&["n1"]);
    c.volumes_mut()
        .upsert_pvc(make_pvc("data", "", "wait", Some("1Gi")));
    let a = Arc::new(
        p("a", 100)
            .volume(k8s_openapi::api::core::v1::Volume {
                name: "data".into(),
                persistent_volume_claim: Some(
                    k8s_openapi::api::core::v1::PersistentVolumeClaimVolumeSource {
                        claim_name: "data".into(),
                        ..Default::default()
                    },
                ),
                ..Default::default()
            })
            .info(),
    );
    let ghost = crate::volume::PodVolumes {
        static_bindings: vec![BindingInfo {
            pv: Arc::new(make_pv("ghost", "wait", "1Gi")),
            pvc: Arc::new(make_pvc("data", "", "wait", Some("1Gi"))),
        }],
        dynamic_provisions: vec![],
    };
    let e = c.assume(a.clone(), &placed("n1", ghost)).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("running Reserve plugin \"VolumeBinding\": "),
        "{e}"
    );
    assert_eq!(c.pod_count(), 0);
    assert_eq!(used(&c, "n1"), (0, 0));
    let ok = c
        .assume(pending("b", 100), &placed("n1", Default::default()))
        .unwrap();
    assert_eq!(ok.pod.node_name, "n1");
    assert!(ok.volumes.is_none(), "nothing for PreBind to write");
    assert_eq!(used(&c, "n1"), (100, 1));
    // Confirming the very object assumed only changes its state (`simulate`).
    c.add_pod(ok.pod.clone()).unwrap();
    assert_eq!(c.pod_state("default/b"), Some(PodState::Added));
    assert_eq!(c.assumed_pod_count(), 0);
    assert_eq!(used(&c, "n1"), (100, 1));
}

/// `TestAddPodAfterExpiration` / `TestAssumePodScheduled` confirm path: the watch's Add
/// confirms the assumed pod without double counting, and it never expires after that.
#[test]
fn watch_confirms_assumed_pod() {
    let t0 = Instant::now();
    let mut c = cache_with(&["n1"]);
    c.assume_pod(pending("a", 500), "n1", None).unwrap();
    c.finish_binding("default/a", t0);
    c.add_pod(assigned("a", 500, "n1")).unwrap();
    assert_eq!(c.pod_state("default/a"), Some(PodState::Added));
    assert!(!c.is_assumed("default/a"));
    assert_eq!(c.assumed_pod_count(), 0);
    assert_eq!(used(&c, "n1"), (500, 1));
    assert!(c.cleanup_expired(t0 + Duration::from_secs(3600)).is_empty());
    assert_eq!(used(&c, "n1"), (500, 1));
    // Added pods cannot be forgotten.
    assert!(matches!(
        c.forget_pod(&pending("a", 500)),
        Err(CacheError::ForgetPod { .. })
    ));
    // A repeated Apply is an update, still counted once.
    c.update_pod(assigned("a", 700, "n1")).unwrap();
    assert_eq!(used(&c, "n1"), (700, 1));
    c.remove_pod(&assigned("a", 700, "n1")).unwrap();
    assert_eq!(used(&c, "n1"), (0, 0));
    assert_eq!(c.pod_count(), 0);
    assert!(matches!(
        c.remove_pod(&assigned("a", 700, "n1")),
        Err(CacheError::RemovePod { .. })
    ));
}

/// `TestForgetPod`: forgetting releases exactly what was assumed.
#[test]
fn forget_restores() {
    let mut c = cache_with(&["n1"]);
    c.add_pod(assigned("x", 1000, "n1")).unwrap();
    let before = c.snapshot().node("n1").unwrap().requested.clone();
    c.assume_pod(pending("a", 500), "n1", None).unwrap();
    assert_eq!(used(&c, "n1"), (1500, 2));
    c.forget_pod(&pending("a", 500)).unwrap();
    assert_eq!(c.snapshot().node("n1").unwrap().requested, before);
    assert_eq!(used(&c, "n1"), (1000, 1));
    assert_eq!(c.pod_state("default/a"), None);
    // Again: not assumed any more.
    assert!(c.forget_pod(&pending("a", 500)).is_err());
    // Forgetting with a node that is not the assumed one is refused.
    c.assume_pod(pending("b", 100), "n1", None).unwrap();
    assert!(c.forget_pod(&assigned("b", 100, "n2")).is_err());
    assert!(c.forget_pod(&assigned("b", 100, "n1")).is_ok());
}

/// `TestExpirePod`: only assumed pods whose binding finished expire, strictly after
/// the TTL.
#[test]
fn expiry_after_ttl_only_once_binding_finished() {
    let t0 = Instant::now();
    let ttl = Duration::from_secs(10);
    let mut c = Cache::new(Some(ttl));
    c.add_node(n("n1").info());
    c.assume_pod(pending("still-binding", 100), "n1", None)
        .unwrap();
    c.assume_pod(pending("bound", 200), "n1", None).unwrap();
    c.assume_pod(pending("bound-late", 400), "n1", None)
        .unwrap();
    c.finish_binding("default/bound", t0);
    c.finish_binding("default/bound-late", t0 + Duration::from_secs(5));
    // Not an assumed pod: no-op.
    c.finish_binding("default/nope", t0);
    assert!(c.cleanup_expired(t0 + ttl).is_empty());
    assert_eq!(
        c.cleanup_expired(t0 + ttl + Duration::from_millis(1)),
        ["default/bound"]
    );
    assert_eq!(used(&c, "n1"), (500, 2));
    assert_eq!(
        c.cleanup_expired(t0 + Duration::from_secs(3600)),
        ["default/bound-late"]
    );
    assert_eq!(used(&c, "n1"), (100, 1));
    assert!(c.is_assumed("default/still-binding"));
    // An expired pod later seen by the watch is added back.
    c.add_pod(assigned("bound", 200, "n1")).unwrap();
    assert_eq!(used(&c, "n1"), (300, 2));

    // No TTL: never expires.
    let mut c = Cache::new(None);
    c.add_node(n("n1").info());
    c.assume_pod(pending("a", 100), "n1", None).unwrap();
    c.finish_binding("default/a", t0);
    assert!(
        c.cleanup_expired(t0 + Duration::from_secs(86400))
            .is_empty()
    );
    assert!(c.is_assumed("default/a"));
}

/// `TestAddPodWillReplaceAssumed`: assumed on n1, observed on n2: moved.
#[test]
fn assumed_then_observed_on_another_node() {
    let mut c = cache_with(&["n1", "n2"]);
    c.assume_pod(pending("a", 500), "n1", None).unwrap();
    c.add_pod(assigned("a", 500, "n2")).unwrap();
    assert_eq!(used(&c, "n1"), (0, 0));
    assert_eq!(used(&c, "n2"), (500, 1));
    assert_eq!(c.pod_node("default/a"), Some("n2"));
    assert_eq!(c.pod_state("default/a"), Some(PodState::Added));
    // An update naming yet another node moves it again.
    c.add_node(n("n3").info());
    c.update_pod(assigned("a", 500, "n3")).unwrap();
    assert_eq!((used(&c, "n2"), used(&c, "n3")), ((0, 0), (500, 1)));
}

/// `TestNodeOperators` / `TestRemovePod`-style: removing a node parks its pods; a node that
/// comes back gets them back; pod deletions arriving meanwhile are honoured.
#[test]
fn node_removal_with_pods() {
    let mut c = cache_with(&["n1", "n2"]);
    c.add_pod(assigned("a", 500, "n1")).unwrap();
    c.add_pod(assigned("b", 300, "n1")).unwrap();
    c.add_pod(assigned("z", 100, "n2")).unwrap();
    c.remove_node("n1").unwrap();
    assert!(c.snapshot().node("n1").is_none());
    assert_eq!(c.snapshot().len(), 1);
    assert_eq!(used(&c, "n2"), (100, 1));
    assert_eq!((c.pod_count(), c.parked_pod_count()), (3, 2));
    assert!(matches!(
        c.remove_node("n1"),
        Err(CacheError::RemoveNode { .. })
    ));
    // b's deletion arrives after the node's.
    c.remove_pod(&assigned("b", 300, "n1")).unwrap();
    c.add_node(n("n1").info());
    assert_eq!(used(&c, "n1"), (500, 1));
    assert_eq!(c.parked_pod_count(), 0);
    // Node update keeps the pods.
    c.update_node(n("n1").label("k", "v").info());
    assert_eq!(used(&c, "n1"), (500, 1));
    assert_eq!(
        c.snapshot().node("n1").unwrap().labels.get("k").unwrap(),
        "v"
    );
    // Assuming onto a removed node fails.
    c.remove_node("n2").unwrap();
    assert!(c.assume_pod(pending("q", 1), "n2", None).is_err());
}

/// Pods whose node has not been seen yet wait, unaccounted, and count once it arrives.
#[test]
fn pods_for_unknown_nodes() {
    let mut c = cache_with(&["n1"]);
    c.add_pod(assigned("early", 700, "late-node")).unwrap();
    assert_eq!(c.parked_pod_count(), 1);
    assert!(c.snapshot().node("late-node").is_none());
    assert_eq!(c.pod_node("default/early"), Some("late-node"));
    c.update_pod(assigned("early", 900, "late-node")).unwrap();
    assert_eq!(c.parked_pod_count(), 1);
    c.add_node(n("late-node").info());
    assert_eq!(used(&c, "late-node"), (900, 1));
    assert_eq!(c.parked_pod_count(), 0);
    // A parked pod deleted before its node arrives is simply dropped.
    c.add_pod(assigned("ghost", 100, "never")).unwrap();
    c.remove_pod(&assigned("ghost", 100, "never")).unwrap();
    assert_eq!((c.pod_count(), c.parked_pod_count()), (1, 0));
    // Unassigned pods are refused.
    assert_eq!(
        c.add_pod(pending("p", 1)),
        Err(CacheError::AddPod {
            pod: "default/p".into()
        })
    );
}

/// A delete-and-recreate under the same name (new UID) replaces the old incarnation; a
/// delete of the old UID leaves the new one.
#[test]
fn new_incarnation_replaces_old() {
    let mut c = cache_with(&["n1", "n2"]);
    c.add_pod(with_uid(p("a", 500).node("n1"), "u1")).unwrap();
    c.add_pod(with_uid(p("a", 200).node("n2"), "u2")).unwrap();
    assert_eq!((used(&c, "n1"), used(&c, "n2")), ((0, 0), (200, 1)));
    assert!(
        c.remove_pod(&with_uid(p("a", 500).node("n1"), "u1"))
            .is_err()
    );
    assert_eq!(used(&c, "n2"), (200, 1));
    c.remove_pod(&with_uid(p("a", 200).node("n2"), "u2"))
        .unwrap();
    assert_eq!(used(&c, "n2"), (0, 0));
}

/// GPU devices chosen at assume time survive confirmation and node re-creation.
#[test]
fn gpu_devices_are_kept() {
    let gpu_node = || {
        node("g").allocatable(&[
            ("cpu", "8"),
            ("memory", "8Gi"),
            ("pods", "110"),
            ("nvidia.com/gpu", "4"),
        ])
    };
    let gpu_pod = |nn: Option<&str>| {
        let b = pod("a").container(&[("cpu", "1"), ("nvidia.com/gpu", "1")]);
        Arc::new(match nn {
            Some(nn) => b.node(nn).info(),
            None => b.info(),
        })
    };
    let mut c = Cache::default();
    c.add_node(gpu_node().info());
    c.assume_pod(gpu_pod(None), "g", Some(vec![2])).unwrap();
    let devices = |c: &Cache| {
        c.snapshot()
            .node("g")
            .unwrap()
            .gpu_assignments
            .get("default/a")
            .cloned()
    };
    assert_eq!(devices(&c), Some(vec![2]));
    c.add_pod(gpu_pod(Some("g"))).unwrap();
    assert_eq!(devices(&c), Some(vec![2]));
    c.remove_node("g").unwrap();
    c.add_node(gpu_node().info());
    assert_eq!(devices(&c), Some(vec![2]));
    assert_eq!(c.snapshot().node("g").unwrap().gpu_used[2], 1000);
}
