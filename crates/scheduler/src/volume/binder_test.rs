//! Upstream `pkg/scheduler/framework/plugins/volumebinding/binder_test.go` (v1.21/v1.22 era
//! copy, commit 04791b4906602ffda5ccf9bc4c84d3329f1d7080: CSIStorageCapacity still v1beta1),
//! with its fixtures (`makeTestPVC`, `makeTestPV`, the four storage classes, `node1` labelled
//! `nodeKey: node1`). The storage-capacity variants are left out (capacity tracking is not
//! implemented: module docs); `TestBindAPIUpdate` and the API-reading rows of
//! `TestCheckBindings` are covered against the API double in
//! `tests/tests/volume_binding_cluster.rs`.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use super::*;
use crate::framework::plugins::testutil::{PodB, pod};
use crate::volume::helpers::{
    ANN_BIND_COMPLETED, ANN_BOUND_BY_CONTROLLER, MIGRATED_PLUGINS_ANNOTATION,
};

const NODE_LABEL_KEY: &str = "nodeKey";
const NODE_LABEL_VALUE: &str = "node1";
const PROVISIONER: &str = "test-provisioner";
const WAIT_CLASS: &str = "waitClass";
const IMMEDIATE_CLASS: &str = "immediateClass";
const WAIT_CLASS_WITH_PROVISIONER: &str = "waitClassWithProvisioner";
const TOPO_MISMATCH_CLASS: &str = "topoMismatchClass";
const POD_UID: &str = "test-pod-uid";

#[derive(Clone, Copy, PartialEq)]
enum State {
    Unbound,
    Prebound,
    Bound,
    SelectedNode,
}

/// `makeTestPVC(name, size, node, state, pvName, resourceVersion, className)`.
fn make_test_pvc(
    name: &str,
    size: &str,
    node: &str,
    state: State,
    pv_name: &str,
    rv: &str,
    class: &str,
) -> core::PersistentVolumeClaim {
    let mut pvc = core::PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("testns".into()),
            uid: Some("pvc-uid".into()),
            resource_version: Some(rv.into()),
            ..Default::default()
        },
        spec: Some(core::PersistentVolumeClaimSpec {
            resources: Some(core::VolumeResourceRequirements {
                requests: Some(BTreeMap::from([(
                    "storage".to_string(),
                    Quantity(size.into()),
                )])),
                ..Default::default()
            }),
            storage_class_name: Some(class.into()),
            volume_mode: Some("Filesystem".into()),
            ..Default::default()
        }),
        status: None,
    };
    let ann = |pvc: &mut core::PersistentVolumeClaim, k: &str, v: &str| {
        pvc.metadata
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(k.into(), v.into());
    };
    match state {
        State::SelectedNode => ann(&mut pvc, ANN_SELECTED_NODE, node),
        State::Bound => {
            ann(&mut pvc, ANN_BIND_COMPLETED, "yes");
            pvc.spec.as_mut().unwrap().volume_name = Some(pv_name.into());
        }
        State::Prebound => pvc.spec.as_mut().unwrap().volume_name = Some(pv_name.into()),
        State::Unbound => {}
    }
    pvc
}

/// `makeTestPV(name, node, capacity, version, boundToPVC, className)`.
fn make_test_pv(
    name: &str,
    node: &str,
    capacity: &str,
    rv: &str,
    bound_to: Option<&core::PersistentVolumeClaim>,
    class: &str,
) -> core::PersistentVolume {
    let mut pv = core::PersistentVolume {
        metadata: ObjectMeta {
            name: Some(name.into()),
            resource_version: Some(rv.into()),
            ..Default::default()
        },
        spec: Some(core::PersistentVolumeSpec {
            capacity: Some(BTreeMap::from([(
                "storage".to_string(),
                Quantity(capacity.into()),
            )])),
            storage_class_name: Some(class.into()),
            volume_mode: Some("Filesystem".into()),
            ..Default::default()
        }),
        status: Some(core::PersistentVolumeStatus {
            phase: Some("Available".into()),
            ..Default::default()
        }),
    };
    if !node.is_empty() {
        pv.spec.as_mut().unwrap().node_affinity = Some(core::VolumeNodeAffinity {
            required: Some(core::NodeSelector {
                node_selector_terms: vec![core::NodeSelectorTerm {
                    match_expressions: Some(vec![core::NodeSelectorRequirement {
                        key: NODE_LABEL_KEY.into(),
                        operator: "In".into(),
                        values: Some(vec![node.into()]),
                    }]),
                    match_fields: None,
                }],
            }),
        });
    }
    if let Some(pvc) = bound_to {
        pv.spec.as_mut().unwrap().claim_ref = Some(core::ObjectReference {
            kind: Some("PersistentVolumeClaim".into()),
            api_version: Some("v1".into()),
            resource_version: pvc.metadata.resource_version.clone(),
            name: pvc.metadata.name.clone(),
            namespace: pvc.metadata.namespace.clone(),
            uid: pvc.metadata.uid.clone(),
            ..Default::default()
        });
        pv.metadata.annotations = Some(BTreeMap::from([(
            ANN_BOUND_BY_CONTROLLER.to_string(),
            "yes".to_string(),
        )]));
    }
    pv
}

struct F {
    unbound_pvc: core::PersistentVolumeClaim,
    unbound_pvc2: core::PersistentVolumeClaim,
    prebound_pvc: core::PersistentVolumeClaim,
    prebound_pvc_node1a: core::PersistentVolumeClaim,
    bound_pvc: core::PersistentVolumeClaim,
    bound_pvc_node1a: core::PersistentVolumeClaim,
    immediate_unbound_pvc: core::PersistentVolumeClaim,
    immediate_bound_pvc: core::PersistentVolumeClaim,
    provisioned_pvc: core::PersistentVolumeClaim,
    provisioned_pvc2: core::PersistentVolumeClaim,
    provisioned_pvc_higher_version: core::PersistentVolumeClaim,
    provisioned_pvc_bound: core::PersistentVolumeClaim,
    no_provisioner_pvc: core::PersistentVolumeClaim,
    topo_mismatch_pvc: core::PersistentVolumeClaim,
    selected_node_pvc: core::PersistentVolumeClaim,
    bound_migration_pvc: core::PersistentVolumeClaim,
    pv_node1a: core::PersistentVolume,
    pv_node1b: core::PersistentVolume,
    pv_node2: core::PersistentVolume,
    pv_bound: core::PersistentVolume,
    pv_node1a_bound: core::PersistentVolume,
    pv_node1b_bound: core::PersistentVolume,
    pv_bound_immediate: core::PersistentVolume,
    pv_bound_immediate_node2: core::PersistentVolume,
    migration_pv_bound: core::PersistentVolume,
}

fn fixtures() -> F {
    use State::*;
    let unbound_pvc = make_test_pvc("unbound-pvc", "1G", "", Unbound, "", "1", WAIT_CLASS);
    let unbound_pvc2 = make_test_pvc("unbound-pvc2", "5G", "", Unbound, "", "1", WAIT_CLASS);
    let bound_pvc = make_test_pvc("bound-pvc", "1G", "", Bound, "pv-bound", "1", WAIT_CLASS);
    let immediate_bound_pvc = make_test_pvc(
        "immediate-bound-pvc",
        "1G",
        "",
        Bound,
        "pv-bound-immediate",
        "1",
        IMMEDIATE_CLASS,
    );
    let bound_migration_pvc = make_test_pvc(
        "pvc-migration-bound",
        "1G",
        "",
        Bound,
        "pv-migration-bound",
        "1",
        WAIT_CLASS,
    );
    let mut migration_pv_bound = make_test_pv(
        "pv-migration-bound",
        "node1",
        "1G",
        "1",
        Some(&bound_migration_pvc),
        WAIT_CLASS,
    );
    migration_pv_bound.spec.as_mut().unwrap().node_affinity = None;
    migration_pv_bound.metadata.labels = Some(BTreeMap::from([
        (
            "failure-domain.beta.kubernetes.io/zone".to_string(),
            "us-east-1".to_string(),
        ),
        (
            "failure-domain.beta.kubernetes.io/region".to_string(),
            "us-east-1a".to_string(),
        ),
    ]));
    migration_pv_bound
        .spec
        .as_mut()
        .unwrap()
        .gce_persistent_disk = Some(core::GCEPersistentDiskVolumeSource {
        pd_name: "test-disk".into(),
        fs_type: Some("ext4".into()),
        ..Default::default()
    });
    F {
        prebound_pvc: make_test_pvc(
            "prebound-pvc",
            "1G",
            "",
            Prebound,
            "pv-node1a",
            "1",
            WAIT_CLASS,
        ),
        prebound_pvc_node1a: make_test_pvc(
            "unbound-pvc",
            "1G",
            "",
            Prebound,
            "pv-node1a",
            "1",
            WAIT_CLASS,
        ),
        bound_pvc_node1a: make_test_pvc(
            "unbound-pvc",
            "1G",
            "",
            Bound,
            "pv-node1a",
            "1",
            WAIT_CLASS,
        ),
        immediate_unbound_pvc: make_test_pvc(
            "immediate-unbound-pvc",
            "1G",
            "",
            Unbound,
            "",
            "1",
            IMMEDIATE_CLASS,
        ),
        provisioned_pvc: make_test_pvc(
            "provisioned-pvc",
            "1Gi",
            "",
            Unbound,
            "",
            "1",
            WAIT_CLASS_WITH_PROVISIONER,
        ),
        provisioned_pvc2: make_test_pvc(
            "provisioned-pvc2",
            "1Gi",
            "",
            Unbound,
            "",
            "1",
            WAIT_CLASS_WITH_PROVISIONER,
        ),
        provisioned_pvc_higher_version: make_test_pvc(
            "provisioned-pvc2",
            "1Gi",
            "",
            Unbound,
            "",
            "2",
            WAIT_CLASS_WITH_PROVISIONER,
        ),
        provisioned_pvc_bound: make_test_pvc(
            "provisioned-pvc",
            "1Gi",
            "",
            Bound,
            "pv-bound",
            "1",
            WAIT_CLASS_WITH_PROVISIONER,
        ),
        no_provisioner_pvc: make_test_pvc(
            "no-provisioner-pvc",
            "1Gi",
            "",
            Unbound,
            "",
            "1",
            WAIT_CLASS,
        ),
        topo_mismatch_pvc: make_test_pvc(
            "topo-mismatch-pvc",
            "1Gi",
            "",
            Unbound,
            "",
            "1",
            TOPO_MISMATCH_CLASS,
        ),
        selected_node_pvc: make_test_pvc(
            "provisioned-pvc",
            "1Gi",
            NODE_LABEL_VALUE,
            SelectedNode,
            "",
            "1",
            WAIT_CLASS_WITH_PROVISIONER,
        ),
        pv_node1a: make_test_pv("pv-node1a", "node1", "5G", "1", None, WAIT_CLASS),
        pv_node1b: make_test_pv("pv-node1b", "node1", "10G", "1", None, WAIT_CLASS),
        pv_node2: make_test_pv("pv-node2", "node2", "1G", "1", None, WAIT_CLASS),
        pv_bound: make_test_pv("pv-bound", "node1", "1G", "1", Some(&bound_pvc), WAIT_CLASS),
        pv_node1a_bound: make_test_pv(
            "pv-node1a",
            "node1",
            "5G",
            "1",
            Some(&unbound_pvc),
            WAIT_CLASS,
        ),
        pv_node1b_bound: make_test_pv(
            "pv-node1b",
            "node1",
            "10G",
            "1",
            Some(&unbound_pvc2),
            WAIT_CLASS,
        ),
        pv_bound_immediate: make_test_pv(
            "pv-bound-immediate",
            "node1",
            "1G",
            "1",
            Some(&immediate_bound_pvc),
            IMMEDIATE_CLASS,
        ),
        pv_bound_immediate_node2: make_test_pv(
            "pv-bound-immediate",
            "node2",
            "1G",
            "1",
            Some(&immediate_bound_pvc),
            IMMEDIATE_CLASS,
        ),
        migration_pv_bound,
        bound_migration_pvc,
        unbound_pvc,
        unbound_pvc2,
        bound_pvc,
        immediate_bound_pvc,
    }
}

/// `newTestBinder`'s classes.
fn classes(idx: &mut VolumeIndex) {
    let term = |vals: &[&str]| core::TopologySelectorTerm {
        match_label_expressions: Some(vec![core::TopologySelectorLabelRequirement {
            key: NODE_LABEL_KEY.into(),
            values: vals.iter().map(|v| v.to_string()).collect(),
        }]),
    };
    let sc = |name: &str, mode: &str, prov: &str, topo: Option<core::TopologySelectorTerm>| {
        k8s_openapi::api::storage::v1::StorageClass {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            volume_binding_mode: Some(mode.into()),
            provisioner: prov.into(),
            allowed_topologies: topo.map(|t| vec![t]),
            ..Default::default()
        }
    };
    idx.upsert_storage_class(sc(
        WAIT_CLASS_WITH_PROVISIONER,
        WAIT_FOR_FIRST_CONSUMER,
        PROVISIONER,
        Some(term(&[NODE_LABEL_VALUE, "reference-value"])),
    ));
    idx.upsert_storage_class(sc(IMMEDIATE_CLASS, "Immediate", "", None));
    idx.upsert_storage_class(sc(
        WAIT_CLASS,
        WAIT_FOR_FIRST_CONSUMER,
        NOT_SUPPORTED_PROVISIONER,
        None,
    ));
    idx.upsert_storage_class(sc(
        TOPO_MISMATCH_CLASS,
        WAIT_FOR_FIRST_CONSUMER,
        PROVISIONER,
        Some(term(&["reference-value"])),
    ));
}

fn claim_volume(claim: &str) -> core::Volume {
    core::Volume {
        name: claim.into(),
        persistent_volume_claim: Some(core::PersistentVolumeClaimVolumeSource {
            claim_name: claim.into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// `makePod("test-pod").withNamespace("testns").withNodeName("node1").withPVCSVolume(pvcs)`.
fn test_pod(pvcs: &[&core::PersistentVolumeClaim]) -> PodB {
    let mut p = pvcs
        .iter()
        .fold(pod("test-pod").namespace("testns").node("node1"), |p, c| {
            p.volume(claim_volume(c.metadata.name.as_deref().unwrap()))
        });
    p.0.metadata.uid = Some(POD_UID.into());
    p
}

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn index(pvs: &[&core::PersistentVolume], pvcs: &[&core::PersistentVolumeClaim]) -> VolumeIndex {
    let mut idx = VolumeIndex::new();
    classes(&mut idx);
    for pv in pvs {
        idx.upsert_pv((*pv).clone());
    }
    for pvc in pvcs {
        idx.upsert_pvc((*pvc).clone());
    }
    idx
}

fn binding(pvc: &core::PersistentVolumeClaim, pv: &core::PersistentVolume) -> BindingInfo {
    BindingInfo {
        pv: Arc::new(pv.clone()),
        pvc: Arc::new(pvc.clone()),
    }
}

/// `findPodVolumes`: GetPodVolumes, an error for immediate unbound claims, FindPodVolumes.
fn find(
    idx: &VolumeIndex,
    gates: MigrationGates,
    pod: &PodInfo,
    node_labels: &Labels,
) -> Result<(PodVolumes, Vec<&'static str>), String> {
    let claims = get_pod_volumes(idx, pod)?;
    if !claims.immediate.is_empty() {
        return Err(ERR_UNBOUND_IMMEDIATE_PVC.into());
    }
    find_pod_volumes(
        idx,
        gates,
        &claims.bound,
        &claims.to_bind,
        NodeRef {
            name: "node1",
            labels: node_labels,
        },
    )
}

#[derive(Default)]
struct FindCase {
    name: &'static str,
    pvs: Vec<core::PersistentVolume>,
    pod_pvcs: Vec<core::PersistentVolumeClaim>,
    /// `None`: the pod's claims are in the cache.
    cache_pvcs: Option<Vec<core::PersistentVolumeClaim>>,
    pod: Option<PodB>,
    bindings: Vec<BindingInfo>,
    provisions: Vec<core::PersistentVolumeClaim>,
    reasons: Vec<&'static str>,
    should_fail: bool,
}

fn run_find(
    cases: Vec<FindCase>,
    gates: MigrationGates,
    node_labels: &Labels,
    csi_node: Option<&str>,
) {
    for c in cases {
        let cache: Vec<&core::PersistentVolumeClaim> = c
            .cache_pvcs
            .as_ref()
            .unwrap_or(&c.pod_pvcs)
            .iter()
            .collect();
        let pvs: Vec<&core::PersistentVolume> = c.pvs.iter().collect();
        let mut idx = index(&pvs, &cache);
        if let Some(plugin) = csi_node {
            idx.upsert_csi_node(k8s_openapi::api::storage::v1::CSINode {
                metadata: ObjectMeta {
                    name: Some("node1".into()),
                    annotations: Some(BTreeMap::from([(
                        MIGRATED_PLUGINS_ANNOTATION.to_string(),
                        plugin.to_string(),
                    )])),
                    ..Default::default()
                },
                ..Default::default()
            });
        }
        let pod = c
            .pod
            .unwrap_or_else(|| test_pod(&c.pod_pvcs.iter().collect::<Vec<_>>()))
            .info();
        match find(&idx, gates, &pod, node_labels) {
            Err(e) => assert!(c.should_fail, "{}: returned error: {e}", c.name),
            Ok((volumes, reasons)) => {
                assert!(
                    !c.should_fail,
                    "{}: returned success but expected error",
                    c.name
                );
                assert_eq!(reasons, c.reasons, "{}: reasons", c.name);
                assert_eq!(volumes.static_bindings, c.bindings, "{}: bindings", c.name);
                let provisions: Vec<core::PersistentVolumeClaim> = volumes
                    .dynamic_provisions
                    .iter()
                    .map(|p| (**p).clone())
                    .collect();
                assert_eq!(provisions, c.provisions, "{}: provisions", c.name);
            }
        }
    }
}

/// `TestFindPodVolumesWithoutProvisioning`.
#[test]
fn test_find_pod_volumes_without_provisioning() {
    let f = fixtures();
    let generic_pod = |claim: &str| {
        let mut p = pod("test-pod")
            .namespace("testns")
            .node("node1")
            .volume(core::Volume {
                name: claim.into(),
                ephemeral: Some(Default::default()),
                ..Default::default()
            });
        p.0.metadata.uid = Some(POD_UID.into());
        p
    };
    let generic_pvc = |owned: bool| {
        let mut pvc = make_test_pvc(
            "test-pod-test-volume",
            "1G",
            "",
            State::Bound,
            "pv-bound",
            "1",
            IMMEDIATE_CLASS,
        );
        if owned {
            pvc.metadata.owner_references = Some(vec![OwnerReference {
                name: "test-pod".into(),
                uid: POD_UID.into(),
                controller: Some(true),
                ..Default::default()
            }]);
        }
        pvc
    };
    let pv_bound_generic = make_test_pv(
        "pv-bound",
        "node1",
        "1G",
        "1",
        Some(&generic_pvc(true)),
        WAIT_CLASS,
    );
    let cases = vec![
        FindCase {
            name: "no-volumes",
            pod: Some(test_pod(&[])),
            ..Default::default()
        },
        FindCase {
            name: "no-pvcs",
            pod: Some(test_pod(&[]).volume(core::Volume {
                name: "e".into(),
                empty_dir: Some(Default::default()),
                ..Default::default()
            })),
            ..Default::default()
        },
        FindCase {
            name: "pvc-not-found",
            cache_pvcs: Some(vec![]),
            pod_pvcs: vec![f.bound_pvc.clone()],
            should_fail: true,
            ..Default::default()
        },
        FindCase {
            name: "bound-pvc",
            pod_pvcs: vec![f.bound_pvc.clone()],
            pvs: vec![f.pv_bound.clone()],
            ..Default::default()
        },
        FindCase {
            name: "bound-pvc,pv-not-exists",
            pod_pvcs: vec![f.bound_pvc.clone()],
            reasons: vec![ERR_REASON_PV_NOT_EXIST],
            ..Default::default()
        },
        FindCase {
            name: "prebound-pvc",
            pod_pvcs: vec![f.prebound_pvc.clone()],
            pvs: vec![f.pv_node1a_bound.clone()],
            should_fail: true,
            ..Default::default()
        },
        FindCase {
            name: "unbound-pvc,pv-same-node",
            pod_pvcs: vec![f.unbound_pvc.clone()],
            pvs: vec![f.pv_node2.clone(), f.pv_node1a.clone(), f.pv_node1b.clone()],
            bindings: vec![binding(&f.unbound_pvc, &f.pv_node1a)],
            ..Default::default()
        },
        FindCase {
            name: "unbound-pvc,pv-different-node",
            pod_pvcs: vec![f.unbound_pvc.clone()],
            pvs: vec![f.pv_node2.clone()],
            reasons: vec![ERR_REASON_BIND_CONFLICT],
            ..Default::default()
        },
        FindCase {
            name: "two-unbound-pvcs",
            pod_pvcs: vec![f.unbound_pvc.clone(), f.unbound_pvc2.clone()],
            pvs: vec![f.pv_node1a.clone(), f.pv_node1b.clone()],
            bindings: vec![
                binding(&f.unbound_pvc, &f.pv_node1a),
                binding(&f.unbound_pvc2, &f.pv_node1b),
            ],
            ..Default::default()
        },
        FindCase {
            name: "two-unbound-pvcs,order-by-size",
            pod_pvcs: vec![f.unbound_pvc2.clone(), f.unbound_pvc.clone()],
            pvs: vec![f.pv_node1a.clone(), f.pv_node1b.clone()],
            bindings: vec![
                binding(&f.unbound_pvc, &f.pv_node1a),
                binding(&f.unbound_pvc2, &f.pv_node1b),
            ],
            ..Default::default()
        },
        FindCase {
            name: "two-unbound-pvcs,partial-match",
            pod_pvcs: vec![f.unbound_pvc.clone(), f.unbound_pvc2.clone()],
            pvs: vec![f.pv_node1a.clone()],
            bindings: vec![binding(&f.unbound_pvc, &f.pv_node1a)],
            reasons: vec![ERR_REASON_BIND_CONFLICT],
            ..Default::default()
        },
        FindCase {
            name: "one-bound,one-unbound",
            pod_pvcs: vec![f.unbound_pvc.clone(), f.bound_pvc.clone()],
            pvs: vec![f.pv_bound.clone(), f.pv_node1a.clone()],
            bindings: vec![binding(&f.unbound_pvc, &f.pv_node1a)],
            ..Default::default()
        },
        FindCase {
            name: "one-bound,one-unbound,no-match",
            pod_pvcs: vec![f.unbound_pvc.clone(), f.bound_pvc.clone()],
            pvs: vec![f.pv_bound.clone(), f.pv_node2.clone()],
            reasons: vec![ERR_REASON_BIND_CONFLICT],
            ..Default::default()
        },
        FindCase {
            name: "one-prebound,one-unbound",
            pod_pvcs: vec![f.unbound_pvc.clone(), f.prebound_pvc.clone()],
            pvs: vec![f.pv_node1a.clone(), f.pv_node1b.clone()],
            should_fail: true,
            ..Default::default()
        },
        FindCase {
            name: "immediate-bound-pvc",
            pod_pvcs: vec![f.immediate_bound_pvc.clone()],
            pvs: vec![f.pv_bound_immediate.clone()],
            ..Default::default()
        },
        FindCase {
            name: "immediate-bound-pvc-wrong-node",
            pod_pvcs: vec![f.immediate_bound_pvc.clone()],
            pvs: vec![f.pv_bound_immediate_node2.clone()],
            reasons: vec![ERR_REASON_NODE_CONFLICT],
            ..Default::default()
        },
        FindCase {
            name: "immediate-unbound-pvc",
            pod_pvcs: vec![f.immediate_unbound_pvc.clone()],
            should_fail: true,
            ..Default::default()
        },
        FindCase {
            name: "immediate-unbound-pvc,delayed-mode-bound",
            pod_pvcs: vec![f.immediate_unbound_pvc.clone(), f.bound_pvc.clone()],
            pvs: vec![f.pv_bound.clone()],
            should_fail: true,
            ..Default::default()
        },
        FindCase {
            name: "immediate-unbound-pvc,delayed-mode-unbound",
            pod_pvcs: vec![f.immediate_unbound_pvc.clone(), f.unbound_pvc.clone()],
            should_fail: true,
            ..Default::default()
        },
        FindCase {
            name: "generic-ephemeral,no-pvc",
            pod: Some(generic_pod("no-such-pvc")),
            should_fail: true,
            ..Default::default()
        },
        FindCase {
            name: "generic-ephemeral,with-pvc",
            pod: Some(generic_pod("test-volume")),
            cache_pvcs: Some(vec![generic_pvc(true)]),
            pvs: vec![pv_bound_generic.clone()],
            ..Default::default()
        },
        FindCase {
            name: "generic-ephemeral,wrong-pvc",
            pod: Some(generic_pod("test-volume")),
            cache_pvcs: Some(vec![generic_pvc(false)]),
            pvs: vec![pv_bound_generic],
            should_fail: true,
            ..Default::default()
        },
    ];
    run_find(
        cases,
        MigrationGates::default(),
        &labels(&[(NODE_LABEL_KEY, "node1")]),
        None,
    );
}

/// The "generic-ephemeral,wrong-pvc" row above fails in `GetPodVolumes` (`isVolumeBound`):
/// its message names the claim `namespace/name`, as v1.22 words it.
#[test]
fn ephemeral_claim_not_owned_message() {
    let mut idx = VolumeIndex::new();
    idx.upsert_pvc(make_test_pvc(
        "test-pod-test-volume",
        "1G",
        "",
        State::Bound,
        "pv-bound",
        "1",
        IMMEDIATE_CLASS,
    ));
    let mut p = pod("test-pod").namespace("testns").volume(core::Volume {
        name: "test-volume".into(),
        ephemeral: Some(Default::default()),
        ..Default::default()
    });
    p.0.metadata.uid = Some(POD_UID.into());
    assert_eq!(
        get_pod_volumes(&idx, &p.info()).unwrap_err(),
        "PVC testns/test-pod-test-volume is not owned by pod"
    );
}

/// `TestFindPodVolumesWithProvisioning` (the rows without CSIStorageCapacity objects).
#[test]
fn test_find_pod_volumes_with_provisioning() {
    let f = fixtures();
    let cases = vec![
        FindCase {
            name: "one-provisioned",
            pod_pvcs: vec![f.provisioned_pvc.clone()],
            provisions: vec![f.provisioned_pvc.clone()],
            ..Default::default()
        },
        FindCase {
            name: "two-unbound-pvcs,one-matched,one-provisioned",
            pod_pvcs: vec![f.unbound_pvc.clone(), f.provisioned_pvc.clone()],
            pvs: vec![f.pv_node1a.clone()],
            bindings: vec![binding(&f.unbound_pvc, &f.pv_node1a)],
            provisions: vec![f.provisioned_pvc.clone()],
            ..Default::default()
        },
        FindCase {
            name: "one-bound,one-provisioned",
            pod_pvcs: vec![f.bound_pvc.clone(), f.provisioned_pvc.clone()],
            pvs: vec![f.pv_bound.clone()],
            provisions: vec![f.provisioned_pvc.clone()],
            ..Default::default()
        },
        FindCase {
            name: "one-binding,one-selected-node",
            pod_pvcs: vec![f.bound_pvc.clone(), f.selected_node_pvc.clone()],
            pvs: vec![f.pv_bound.clone()],
            provisions: vec![f.selected_node_pvc.clone()],
            ..Default::default()
        },
        FindCase {
            name: "immediate-unbound-pvc",
            pod_pvcs: vec![f.immediate_unbound_pvc.clone()],
            should_fail: true,
            ..Default::default()
        },
        FindCase {
            name: "one-immediate-bound,one-provisioned",
            pod_pvcs: vec![f.immediate_bound_pvc.clone(), f.provisioned_pvc.clone()],
            pvs: vec![f.pv_bound_immediate.clone()],
            provisions: vec![f.provisioned_pvc.clone()],
            ..Default::default()
        },
        FindCase {
            name: "invalid-provisioner",
            pod_pvcs: vec![f.no_provisioner_pvc.clone()],
            reasons: vec![ERR_REASON_BIND_CONFLICT],
            ..Default::default()
        },
        FindCase {
            name: "volume-topology-unsatisfied",
            pod_pvcs: vec![f.topo_mismatch_pvc.clone()],
            reasons: vec![ERR_REASON_BIND_CONFLICT],
            ..Default::default()
        },
    ];
    run_find(
        cases,
        MigrationGates::default(),
        &labels(&[(NODE_LABEL_KEY, "node1")]),
        None,
    );
}

/// `TestFindPodVolumesWithCSIMigration` (CSIMigration and CSIMigrationGCE on): a bound GCE PD
/// PV is checked with its translated topology `topology.gke.io/zone` when the node migrated
/// the plugin.
#[test]
fn test_find_pod_volumes_with_csi_migration() {
    let f = fixtures();
    let gates = MigrationGates::all();
    let zone1 = labels(&[("topology.gke.io/zone", "us-east-1")]);
    let zone2 = labels(&[("topology.gke.io/zone", "us-east-2")]);
    let bound = || FindCase {
        pod_pvcs: vec![f.bound_migration_pvc.clone()],
        pvs: vec![f.migration_pv_bound.clone()],
        ..Default::default()
    };
    run_find(
        vec![FindCase {
            name: "pvc-bound",
            ..bound()
        }],
        gates,
        &zone1,
        Some(csi::GCE_PD_IN_TREE),
    );
    run_find(
        vec![FindCase {
            name: "pvc-bound,csinode-not-migrated",
            ..bound()
        }],
        gates,
        &zone1,
        Some(""),
    );
    run_find(
        vec![FindCase {
            name: "pvc-bound,missing-csinode",
            ..bound()
        }],
        gates,
        &zone1,
        None,
    );
    run_find(
        vec![FindCase {
            name: "pvc-bound,node-different-zone",
            reasons: vec![ERR_REASON_NODE_CONFLICT],
            ..bound()
        }],
        gates,
        &zone2,
        Some(csi::GCE_PD_IN_TREE),
    );
    // With v1.22's default gates (CSIMigrationGCE off) the PV is not translated.
    run_find(
        vec![FindCase {
            name: "v1.22 defaults: not translated",
            ..bound()
        }],
        MigrationGates::default(),
        &zone2,
        Some(csi::GCE_PD_IN_TREE),
    );
}

struct AssumeCase {
    name: &'static str,
    pod_pvcs: Vec<core::PersistentVolumeClaim>,
    pvs: Vec<core::PersistentVolume>,
    bindings: Vec<BindingInfo>,
    provisioned: Vec<core::PersistentVolumeClaim>,
    should_fail: bool,
    expected_all_bound: bool,
    expected_bindings: Option<Vec<BindingInfo>>,
    expected_provisionings: Option<Vec<core::PersistentVolumeClaim>>,
}

/// `TestAssumePodVolumes`, and `TestRevertAssumedPodVolumes` through
/// [`VolumeIndex::revert_pod_volumes`].
#[test]
fn test_assume_pod_volumes() {
    let f = fixtures();
    let base = || AssumeCase {
        name: "",
        pod_pvcs: vec![],
        pvs: vec![],
        bindings: vec![],
        provisioned: vec![],
        should_fail: false,
        expected_all_bound: false,
        expected_bindings: None,
        expected_provisionings: None,
    };
    let cases = vec![
        AssumeCase {
            name: "all-bound",
            pod_pvcs: vec![f.bound_pvc.clone()],
            pvs: vec![f.pv_bound.clone()],
            expected_all_bound: true,
            ..base()
        },
        AssumeCase {
            name: "one-binding",
            pod_pvcs: vec![f.unbound_pvc.clone()],
            bindings: vec![binding(&f.unbound_pvc, &f.pv_node1a)],
            pvs: vec![f.pv_node1a.clone()],
            expected_bindings: Some(vec![binding(&f.unbound_pvc, &f.pv_node1a_bound)]),
            expected_provisionings: Some(vec![]),
            ..base()
        },
        AssumeCase {
            name: "two-bindings",
            pod_pvcs: vec![f.unbound_pvc.clone(), f.unbound_pvc2.clone()],
            bindings: vec![
                binding(&f.unbound_pvc, &f.pv_node1a),
                binding(&f.unbound_pvc2, &f.pv_node1b),
            ],
            pvs: vec![f.pv_node1a.clone(), f.pv_node1b.clone()],
            expected_bindings: Some(vec![
                binding(&f.unbound_pvc, &f.pv_node1a_bound),
                binding(&f.unbound_pvc2, &f.pv_node1b_bound),
            ]),
            expected_provisionings: Some(vec![]),
            ..base()
        },
        AssumeCase {
            name: "pv-already-bound",
            pod_pvcs: vec![f.unbound_pvc.clone()],
            bindings: vec![binding(&f.unbound_pvc, &f.pv_node1a_bound)],
            pvs: vec![f.pv_node1a_bound.clone()],
            expected_bindings: Some(vec![binding(&f.unbound_pvc, &f.pv_node1a_bound)]),
            expected_provisionings: Some(vec![]),
            ..base()
        },
        AssumeCase {
            name: "tmpupdate-failed",
            pod_pvcs: vec![f.unbound_pvc.clone()],
            bindings: vec![
                binding(&f.unbound_pvc, &f.pv_node1a),
                binding(&f.unbound_pvc2, &f.pv_node1b),
            ],
            pvs: vec![f.pv_node1a.clone()],
            should_fail: true,
            ..base()
        },
        AssumeCase {
            name: "one-binding, one-pvc-provisioned",
            pod_pvcs: vec![f.unbound_pvc.clone(), f.provisioned_pvc.clone()],
            bindings: vec![binding(&f.unbound_pvc, &f.pv_node1a)],
            pvs: vec![f.pv_node1a.clone()],
            provisioned: vec![f.provisioned_pvc.clone()],
            expected_bindings: Some(vec![binding(&f.unbound_pvc, &f.pv_node1a_bound)]),
            expected_provisionings: Some(vec![f.selected_node_pvc.clone()]),
            ..base()
        },
        AssumeCase {
            name: "one-binding, one-provision-tmpupdate-failed",
            pod_pvcs: vec![
                f.unbound_pvc.clone(),
                f.provisioned_pvc_higher_version.clone(),
            ],
            bindings: vec![binding(&f.unbound_pvc, &f.pv_node1a)],
            pvs: vec![f.pv_node1a.clone()],
            provisioned: vec![f.provisioned_pvc2.clone()],
            should_fail: true,
            ..base()
        },
    ];
    for c in cases {
        let pvs: Vec<&core::PersistentVolume> = c.pvs.iter().collect();
        let pvcs: Vec<&core::PersistentVolumeClaim> = c.pod_pvcs.iter().collect();
        let mut idx = index(&pvs, &pvcs);
        let pod = test_pod(&pvcs).info();
        let volumes = PodVolumes {
            static_bindings: c.bindings.clone(),
            dynamic_provisions: c.provisioned.iter().map(|p| Arc::new(p.clone())).collect(),
        };
        let got = assume_pod_volumes(&mut idx, &pod, "node1", &volumes);
        let restored = |idx: &VolumeIndex| {
            // validateCacheRestored: the assume view equals the API view again.
            for b in &c.bindings {
                let n = b.pv.metadata.name.as_deref().unwrap();
                assert_eq!(idx.pv_latest(n), idx.pv(n), "{}: PV {n} restored", c.name);
            }
            for p in &c.provisioned {
                let n = p.metadata.name.as_deref().unwrap();
                let latest = idx.pvc_latest("testns", n).unwrap();
                assert!(
                    annotation(&latest.metadata, ANN_SELECTED_NODE).is_none(),
                    "{}: claim {n} restored",
                    c.name
                );
            }
        };
        match got {
            Err(e) => {
                assert!(c.should_fail, "{}: returned error: {e}", c.name);
                restored(&idx);
                assert!(!idx.has_assumed_pod(&pod.key()));
            }
            Ok(a) => {
                assert!(
                    !c.should_fail,
                    "{}: returned success but expected error",
                    c.name
                );
                assert_eq!(a.all_bound, c.expected_all_bound, "{}: allBound", c.name);
                if a.all_bound {
                    continue;
                }
                let want_bindings = c
                    .expected_bindings
                    .clone()
                    .unwrap_or_else(|| c.bindings.clone());
                assert_eq!(
                    a.volumes.static_bindings, want_bindings,
                    "{}: bindings",
                    c.name
                );
                let provs: Vec<core::PersistentVolumeClaim> = a
                    .volumes
                    .dynamic_provisions
                    .iter()
                    .map(|p| (**p).clone())
                    .collect();
                assert_eq!(
                    provs,
                    c.expected_provisionings
                        .clone()
                        .unwrap_or_else(|| c.provisioned.clone()),
                    "{}: provisionings",
                    c.name
                );
                // validateAssume: the assume view has the claimRefs and selected nodes.
                for b in &want_bindings {
                    let pv = idx
                        .pv_latest(b.pv.metadata.name.as_deref().unwrap())
                        .unwrap();
                    let r = pv.spec.as_ref().unwrap().claim_ref.as_ref().unwrap();
                    assert_eq!(r.name, b.pvc.metadata.name, "{}", c.name);
                    assert_eq!(r.namespace, b.pvc.metadata.namespace, "{}", c.name);
                }
                for p in &c.provisioned {
                    let latest = idx
                        .pvc_latest("testns", p.metadata.name.as_deref().unwrap())
                        .unwrap();
                    assert_eq!(
                        annotation(&latest.metadata, ANN_SELECTED_NODE),
                        Some(NODE_LABEL_VALUE)
                    );
                }
                // TestRevertAssumedPodVolumes: Unreserve restores the cache.
                assert!(idx.revert_pod_volumes(&pod.key()));
                restored(&idx);
            }
        }
    }
}

/// `TestCheckBindings`, the rows decided from the objects themselves (the ones where an
/// object is missing from the API server run against the API double).
#[test]
fn test_check_bindings() {
    let f = fixtures();
    let node_labels = labels(&[(NODE_LABEL_KEY, "node1")]);
    let node = NodeRef {
        name: "node1",
        labels: &node_labels,
    };
    let gates = MigrationGates::default();
    let with_ann = |pvc: &core::PersistentVolumeClaim, value: Option<&str>| {
        let mut p = pvc.clone();
        match value {
            Some(v) => {
                p.metadata
                    .annotations
                    .get_or_insert_with(BTreeMap::new)
                    .insert(ANN_SELECTED_NODE.into(), v.into());
            }
            None => p.metadata.annotations = Some(BTreeMap::new()),
        }
        p
    };
    let add_provision_ann =
        |pvc: &core::PersistentVolumeClaim| with_ann(pvc, Some(NODE_LABEL_VALUE));
    let bound_pv = Arc::new(f.pv_node1a_bound.clone());
    let static_check = |api_pv: &core::PersistentVolume, api_pvc: &core::PersistentVolumeClaim| {
        check_static_binding(
            &f.pv_node1a_bound,
            &Arc::new(api_pv.clone()),
            api_pvc,
            node,
            None,
            gates,
        )
    };
    // binding-bound / -prebound / -unbound.
    assert_eq!(
        static_check(&f.pv_node1a_bound, &f.bound_pvc_node1a),
        BindCheck::Done
    );
    assert_eq!(
        static_check(&f.pv_node1a_bound, &f.prebound_pvc_node1a),
        BindCheck::Pending
    );
    assert_eq!(
        static_check(&f.pv_node1a_bound, &f.unbound_pvc),
        BindCheck::Pending
    );
    // binding-claimref-nil / -uid-empty.
    assert_eq!(
        static_check(&f.pv_node1a, &f.bound_pvc_node1a),
        BindCheck::Failed("ClaimRef got reset for pv \"pv-node1a\"".into())
    );
    let mut no_uid = f.pv_node1a_bound.clone();
    no_uid
        .spec
        .as_mut()
        .unwrap()
        .claim_ref
        .as_mut()
        .unwrap()
        .uid = Some(String::new());
    assert!(matches!(
        static_check(&no_uid, &f.bound_pvc_node1a),
        BindCheck::Failed(_)
    ));
    // An API object older than what PreBind wrote: wait for the newer one.
    let mut older = f.pv_node1a_bound.clone();
    older.metadata.resource_version = Some("0".into());
    assert_eq!(
        static_check(&older, &f.bound_pvc_node1a),
        BindCheck::Pending
    );
    // The node does not fit the PV any more.
    let other = labels(&[(NODE_LABEL_KEY, "node2")]);
    assert_eq!(
        check_static_binding(
            &f.pv_node1a_bound,
            &bound_pv,
            &f.bound_pvc_node1a,
            NodeRef { name: "node1", labels: &other },
            None,
            gates
        ),
        BindCheck::Failed(
            "pv \"pv-node1a\" node affinity doesn't match node \"node1\": no matching NodeSelectorTerms".into()
        )
    );

    let written = add_provision_ann(&f.provisioned_pvc);
    let prov = |api_pvc: &core::PersistentVolumeClaim, pv: Option<&core::PersistentVolume>| {
        let pv = pv.map(|p| Arc::new(p.clone()));
        check_provisioned_claim(&written, api_pvc, pv.as_ref(), node, None, gates)
    };
    // provisioning-pvc-bound / -unbound.
    assert_eq!(
        prov(
            &add_provision_ann(&f.provisioned_pvc_bound),
            Some(&f.pv_bound)
        ),
        BindCheck::Done
    );
    assert_eq!(
        prov(&add_provision_ann(&f.provisioned_pvc), None),
        BindCheck::Pending
    );
    // provisioning-pvc-annotations-nil / -selected-node-dropped / -wrong-node.
    assert_eq!(
        prov(&f.provisioned_pvc, None),
        BindCheck::Failed("selectedNode annotation reset for PVC \"provisioned-pvc\"".into())
    );
    assert_eq!(
        prov(&with_ann(&f.provisioned_pvc, None), None),
        BindCheck::Failed("provisioning failed for PVC \"provisioned-pvc\"".into())
    );
    assert_eq!(
        prov(&with_ann(&f.provisioned_pvc, Some("wrong-node")), None),
        BindCheck::Failed("provisioning failed for PVC \"provisioned-pvc\"".into())
    );
    // tolerate-provisioning-pvc-bound-pv-not-found.
    assert_eq!(
        prov(&add_provision_ann(&f.provisioned_pvc_bound), None),
        BindCheck::Pending
    );
}
