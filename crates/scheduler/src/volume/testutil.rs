//! Object builders shaped like the helpers of upstream's volume tests (`makePV`, `makePVC`,
//! storage classes).

#![allow(clippy::unwrap_used, dead_code, missing_docs)]

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::storage::v1 as storage;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::volume::helpers::ANN_BIND_COMPLETED;

/// `makePV(name, className)` with a capacity: phase Available.
pub fn make_pv(name: &str, class: &str, capacity: &str) -> core::PersistentVolume {
    core::PersistentVolume {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        spec: Some(core::PersistentVolumeSpec {
            storage_class_name: Some(class.into()),
            capacity: (!capacity.is_empty())
                .then(|| BTreeMap::from([("storage".to_string(), Quantity(capacity.into()))])),
            ..Default::default()
        }),
        status: Some(core::PersistentVolumeStatus {
            phase: Some("Available".into()),
            ..Default::default()
        }),
    }
}

/// `makePVC(name, boundPVName, storageClassName)` in namespace `default`, with an optional
/// storage request; a bound claim gets the bind-completed annotation.
pub fn make_pvc(
    name: &str,
    bound_pv: &str,
    class: &str,
    request: Option<&str>,
) -> core::PersistentVolumeClaim {
    let mut pvc = core::PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        spec: Some(core::PersistentVolumeClaimSpec {
            storage_class_name: Some(class.into()),
            resources: request.map(|r| core::VolumeResourceRequirements {
                requests: Some(BTreeMap::from([(
                    "storage".to_string(),
                    Quantity(r.into()),
                )])),
                ..Default::default()
            }),
            ..Default::default()
        }),
        status: None,
    };
    if !bound_pv.is_empty() {
        pvc.spec.as_mut().unwrap().volume_name = Some(bound_pv.into());
        pvc.metadata.annotations = Some(BTreeMap::from([(
            ANN_BIND_COMPLETED.to_string(),
            "true".to_string(),
        )]));
    }
    pvc
}

/// A StorageClass with a binding mode (`None` leaves it unset) and provisioner.
pub fn make_sc(name: &str, mode: Option<&str>, provisioner: &str) -> storage::StorageClass {
    storage::StorageClass {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        provisioner: provisioner.into(),
        volume_binding_mode: mode.map(str::to_string),
        ..Default::default()
    }
}

/// `setPVNodeAffinity(pv, {key: values})`: one term, `key In values` per entry.
pub fn with_node_affinity(
    mut pv: core::PersistentVolume,
    exprs: &[(&str, &[&str])],
) -> core::PersistentVolume {
    pv.spec.as_mut().unwrap().node_affinity = Some(core::VolumeNodeAffinity {
        required: Some(core::NodeSelector {
            node_selector_terms: vec![core::NodeSelectorTerm {
                match_expressions: Some(
                    exprs
                        .iter()
                        .map(|(k, v)| core::NodeSelectorRequirement {
                            key: k.to_string(),
                            operator: "In".into(),
                            values: Some(v.iter().map(|s| s.to_string()).collect()),
                        })
                        .collect(),
                ),
                match_fields: None,
            }],
        }),
    });
    pv
}

/// `pv.spec.claimRef` pointing at `default/<claim>`.
pub fn with_claim_ref(mut pv: core::PersistentVolume, claim: &str) -> core::PersistentVolume {
    pv.spec.as_mut().unwrap().claim_ref = Some(core::ObjectReference {
        name: Some(claim.into()),
        namespace: Some("default".into()),
        ..Default::default()
    });
    pv
}

/// Labels on an object's metadata.
pub fn with_labels(mut meta: ObjectMeta, labels: &[(&str, &str)]) -> ObjectMeta {
    meta.labels = Some(
        labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    meta
}
