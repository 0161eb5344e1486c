//! Storage fixtures for cluster-mode tests: nodes with hostname labels, StorageClasses, local
//! PVs, claims, pods mounting them, and a tiny PV controller playing kube-controller-manager's
//! part of volume binding (used by the VolumeBinding PreBind and RBAC tests). Test support: an
//! unexpected object shape panics, failing the test that uses it.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{
    Container, Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, ObjectReference,
    PersistentVolume, PersistentVolumeClaim, PersistentVolumeClaimSpec, PersistentVolumeSpec,
    PersistentVolumeStatus, Pod, PodSpec, TopologySelectorLabelRequirement, TopologySelectorTerm,
    Volume, VolumeNodeAffinity, VolumeResourceRequirements,
};
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, ListParams, PostParams};
use scheduler::volume::helpers::{ANN_BIND_COMPLETED, ANN_SELECTED_NODE};

use crate::replica::SCHEDULER_NAME;

/// The node label local PVs and provisioned PVs are pinned by.
pub const HOSTNAME: &str = "kubernetes.io/hostname";

/// `{storage: v}`.
pub fn q(v: &str) -> BTreeMap<String, Quantity> {
    BTreeMap::from([("storage".to_string(), Quantity(v.into()))])
}

/// A node with 4 cpu, 8 GiB, 110 pods and its `kubernetes.io/hostname` label.
pub fn node(name: &str) -> Node {
    let mut n = crate::objects::node(name, &[("cpu", "4"), ("memory", "8Gi"), ("pods", "110")]);
    n.metadata.labels = Some(BTreeMap::from([(HOSTNAME.to_string(), name.to_string())]));
    n
}

/// Required node affinity to the node whose hostname label is `host`.
pub fn hostname_affinity(host: &str) -> VolumeNodeAffinity {
    VolumeNodeAffinity {
        required: Some(NodeSelector {
            node_selector_terms: vec![NodeSelectorTerm {
                match_expressions: Some(vec![NodeSelectorRequirement {
                    key: HOSTNAME.into(),
                    operator: "In".into(),
                    values: Some(vec![host.into()]),
                }]),
                match_fields: None,
            }],
        }),
    }
}

/// A `WaitForFirstConsumer` StorageClass, optionally limited to one host by `allowedTopologies`.
pub fn class(name: &str, provisioner: &str, allowed_host: Option<&str>) -> StorageClass {
    StorageClass {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        provisioner: provisioner.into(),
        volume_binding_mode: Some("WaitForFirstConsumer".into()),
        allowed_topologies: allowed_host.map(|h| {
            vec![TopologySelectorTerm {
                match_label_expressions: Some(vec![TopologySelectorLabelRequirement {
                    key: HOSTNAME.into(),
                    values: vec![h.into()],
                }]),
            }]
        }),
        ..Default::default()
    }
}

/// An `Available` 10 GiB ReadWriteOnce PV of class `local` pinned to `host`.
pub fn local_pv(name: &str, host: &str) -> PersistentVolume {
    PersistentVolume {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        spec: Some(PersistentVolumeSpec {
            capacity: Some(q("10Gi")),
            access_modes: Some(vec!["ReadWriteOnce".into()]),
            storage_class_name: Some("local".into()),
            node_affinity: Some(hostname_affinity(host)),
            ..Default::default()
        }),
        status: Some(PersistentVolumeStatus {
            phase: Some("Available".into()),
            ..Default::default()
        }),
    }
}

/// An unbound 1 GiB ReadWriteOnce claim in `default` of storage class `class`.
pub fn claim(name: &str, class: &str) -> PersistentVolumeClaim {
    PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(vec!["ReadWriteOnce".into()]),
            storage_class_name: Some(class.into()),
            resources: Some(VolumeResourceRequirements {
                requests: Some(q("1Gi")),
                ..Default::default()
            }),
            ..Default::default()
        }),
        status: None,
    }
}

/// A pod of ours in `default` mounting claim `claim`.
pub fn pod_with_claim(name: &str, claim: &str) -> Pod {
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
                image: Some("registry.k8s.io/pause:3.9".into()),
                ..Default::default()
            }],
            volumes: Some(vec![Volume {
                name: "data".into(),
                persistent_volume_claim: Some(
                    k8s_openapi::api::core::v1::PersistentVolumeClaimVolumeSource {
                        claim_name: claim.into(),
                        ..Default::default()
                    },
                ),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The PV controller's part, in miniature: a PV whose `claimRef` names an unbound claim binds it
/// (`spec.volumeName`, `pv.kubernetes.io/bind-completed`, phases Bound); a claim with
/// `volume.kubernetes.io/selected-node` gets a new CSI PV with that node's hostname affinity.
/// Claims in `fail_once` have their first provisioning fail: the provisioner removes the
/// selected-node annotation, asking the scheduler to try again.
pub async fn fake_pv_controller(client: kube::Client, fail_once: Arc<Mutex<HashSet<String>>>) {
    let pvs: Api<PersistentVolume> = Api::all(client.clone());
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "default");
    let classes: Api<StorageClass> = Api::all(client.clone());
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let Ok(claims) = pvcs.list(&ListParams::default()).await else {
            continue;
        };
        let Ok(volumes) = pvs.list(&ListParams::default()).await else {
            continue;
        };
        for c in claims.items {
            let name = c.metadata.name.clone().unwrap();
            if c.spec
                .as_ref()
                .and_then(|s| s.volume_name.as_ref())
                .is_some()
            {
                continue;
            }
            // Static binding: a PV pre-bound to this claim by the scheduler.
            let prebound = volumes.items.iter().find(|pv| {
                pv.spec
                    .as_ref()
                    .and_then(|s| s.claim_ref.as_ref())
                    .is_some_and(|r| r.name.as_deref() == Some(&name) && r.uid == c.metadata.uid)
            });
            let pv_name = if let Some(pv) = prebound {
                pv.metadata.name.clone().unwrap()
            } else if let Some(node) = c
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(ANN_SELECTED_NODE))
                .cloned()
            {
                if fail_once.lock().unwrap().remove(&name) {
                    let mut failed = c.clone();
                    failed
                        .metadata
                        .annotations
                        .as_mut()
                        .unwrap()
                        .remove(ANN_SELECTED_NODE);
                    let _ = pvcs.replace(&name, &PostParams::default(), &failed).await;
                    continue;
                }
                let class_name = c.spec.as_ref().unwrap().storage_class_name.clone().unwrap();
                let Ok(sc) = classes.get(&class_name).await else {
                    continue;
                };
                let new_name = format!("pvc-{}", c.metadata.uid.clone().unwrap());
                let pv = PersistentVolume {
                    metadata: ObjectMeta {
                        name: Some(new_name.clone()),
                        ..Default::default()
                    },
                    spec: Some(PersistentVolumeSpec {
                        capacity: Some(q("1Gi")),
                        access_modes: Some(vec!["ReadWriteOnce".into()]),
                        storage_class_name: Some(class_name),
                        node_affinity: Some(hostname_affinity(&node)),
                        csi: Some(k8s_openapi::api::core::v1::CSIPersistentVolumeSource {
                            driver: sc.provisioner.clone(),
                            volume_handle: new_name.clone(),
                            ..Default::default()
                        }),
                        claim_ref: Some(ObjectReference {
                            kind: Some("PersistentVolumeClaim".into()),
                            namespace: Some("default".into()),
                            name: Some(name.clone()),
                            uid: c.metadata.uid.clone(),
                            ..Default::default()
                        }),
                        ..Default::default()
                    }),
                    status: None,
                };
                if pvs.create(&PostParams::default(), &pv).await.is_err() {
                    continue;
                }
                new_name
            } else {
                continue;
            };
            let mut bound = c.clone();
            bound.spec.as_mut().unwrap().volume_name = Some(pv_name.clone());
            bound
                .metadata
                .annotations
                .get_or_insert_with(BTreeMap::new)
                .insert(ANN_BIND_COMPLETED.into(), "yes".into());
            let Ok(mut bound) = pvcs.replace(&name, &PostParams::default(), &bound).await else {
                continue;
            };
            bound.status.get_or_insert_with(Default::default).phase = Some("Bound".into());
            let _ = pvcs
                .replace_status(&name, &PostParams::default(), &bound)
                .await;
            if let Ok(mut pv) = pvs.get(&pv_name).await {
                pv.status.get_or_insert_with(Default::default).phase = Some("Bound".into());
                let _ = pvs
                    .replace_status(&pv_name, &PostParams::default(), &pv)
                    .await;
            }
        }
    }
}
