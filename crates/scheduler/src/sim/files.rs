//! Reading clusters from files: what `kubectl get -o yaml` prints (multi-document YAML, or a
//! `v1 List`) of Nodes, Pods, Services, ReplicationControllers, ReplicaSets, StatefulSets,
//! Namespaces (their labels feed pod affinity `namespaceSelector`), PersistentVolumes,
//! PersistentVolumeClaims, StorageClasses and CSINodes. JSON is accepted too (it is YAML).
//!
//! As the API server would, a StorageClass without `volumeBindingMode` gets `Immediate`, and a
//! PersistentVolume without `status.phase` gets the phase the PV controller gives it
//! (`Available`, or `Bound` when it has a `claimRef`). A bound claim needs
//! `spec.volumeName` and the `pv.kubernetes.io/bind-completed` annotation, as the PV controller
//! leaves it.

use std::path::Path;

use k8s_openapi::api::apps::v1 as apps;
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::storage::v1 as storage;
use serde::Deserialize;

use super::{Cluster, SimError};

fn decode<T: serde::de::DeserializeOwned>(
    file: &str,
    doc: usize,
    kind: &str,
    value: serde_json::Value,
) -> Result<T, SimError> {
    serde_json::from_value(value).map_err(|e| SimError::Decode {
        file: file.to_string(),
        document: doc,
        kind: kind.to_string(),
        message: e.to_string(),
    })
}

fn add_object(
    cluster: &mut Cluster,
    file: &str,
    doc: usize,
    value: serde_json::Value,
) -> Result<(), SimError> {
    let kind = value
        .get("kind")
        .and_then(|k| k.as_str())
        .unwrap_or_default()
        .to_string();
    let api_version = value
        .get("apiVersion")
        .and_then(|k| k.as_str())
        .unwrap_or_default()
        .to_string();
    match (api_version.as_str(), kind.as_str()) {
        ("v1", "List") | (_, "NodeList") | (_, "PodList") | (_, "ServiceList")
        | (_, "ReplicationControllerList") | (_, "ReplicaSetList") | (_, "StatefulSetList")
        | (_, "NamespaceList")
        | (_, "PersistentVolumeList")
        | (_, "PersistentVolumeClaimList")
        | (_, "StorageClassList")
        | (_, "CSINodeList") => {
            let items = value
                .get("items")
                .and_then(|i| i.as_array())
                .cloned()
                .unwrap_or_default();
            let item_kind = kind.strip_suffix("List").unwrap_or("").to_string();
            for mut item in items {
                // Typed lists omit kind/apiVersion on their items.
                if let (Some(obj), false) = (item.as_object_mut(), item_kind.is_empty()) {
                    obj.entry("kind").or_insert_with(|| item_kind.clone().into());
                    let av = match item_kind.as_str() {
                        "ReplicaSet" | "StatefulSet" => "apps/v1",
                        "StorageClass" | "CSINode" => "storage.k8s.io/v1",
                        _ => "v1",
                    };
                    obj.entry("apiVersion").or_insert_with(|| av.into());
                }
                add_object(cluster, file, doc, item)?;
            }
        }
        ("v1", "Node") => cluster.nodes.push(decode(file, doc, &kind, value)?),
        ("v1", "Pod") => cluster.pods.push(decode::<core::Pod>(file, doc, &kind, value)?),
        ("v1", "Service") => cluster.services.push(decode(file, doc, &kind, value)?),
        ("v1", "ReplicationController") => cluster
            .replication_controllers
            .push(decode(file, doc, &kind, value)?),
        ("apps/v1", "ReplicaSet") => cluster
            .replica_sets
            .push(decode::<apps::ReplicaSet>(file, doc, &kind, value)?),
        ("apps/v1", "StatefulSet") => cluster
            .stateful_sets
            .push(decode::<apps::StatefulSet>(file, doc, &kind, value)?),
        ("v1", "Namespace") => cluster
            .namespaces
            .push(decode::<core::Namespace>(file, doc, &kind, value)?),
        ("v1", "PersistentVolume") => {
            let mut pv = decode::<core::PersistentVolume>(file, doc, &kind, value)?;
            let status = pv.status.get_or_insert_with(Default::default);
            if status.phase.as_deref().unwrap_or_default().is_empty() {
                let bound = pv.spec.as_ref().is_some_and(|s| s.claim_ref.is_some());
                status.phase = Some(if bound { "Bound" } else { "Available" }.into());
            }
            cluster.persistent_volumes.push(pv);
        }
        ("v1", "PersistentVolumeClaim") => cluster
            .persistent_volume_claims
            .push(decode(file, doc, &kind, value)?),
        ("storage.k8s.io/v1", "StorageClass") => {
            let mut sc = decode::<storage::StorageClass>(file, doc, &kind, value)?;
            sc.volume_binding_mode.get_or_insert_with(|| "Immediate".into());
            cluster.storage_classes.push(sc);
        }
        ("storage.k8s.io/v1", "CSINode") => cluster.csi_nodes.push(decode(file, doc, &kind, value)?),
        ("", "") => {
            return Err(SimError::Decode {
                file: file.to_string(),
                document: doc,
                kind: String::new(),
                message: "object has no apiVersion and kind".into(),
            });
        }
        _ => cluster.warnings.push(format!(
            "{file}: document {doc}: ignoring {api_version} {kind} (simulate reads Nodes, Pods, Services, ReplicationControllers, ReplicaSets, StatefulSets, Namespaces, PersistentVolumes, PersistentVolumeClaims, StorageClasses and CSINodes)"
        )),
    }
    Ok(())
}

/// Parse cluster objects from `text` (read from `file`, used in messages) into `cluster`.
///
/// # Errors
/// [`SimError::Yaml`] with line and column for malformed YAML, [`SimError::Decode`] naming the
/// document and kind for an object that does not decode.
pub fn parse_cluster_text(cluster: &mut Cluster, file: &str, text: &str) -> Result<(), SimError> {
    for (i, de) in serde_yaml::Deserializer::from_str(text).enumerate() {
        let doc = i + 1;
        let value = serde_yaml::Value::deserialize(de).map_err(|e| SimError::Yaml {
            file: file.to_string(),
            line: e.location().map_or(0, |l| l.line()),
            column: e.location().map_or(0, |l| l.column()),
            message: e.to_string(),
        })?;
        if value.is_null() {
            continue;
        }
        let json = serde_json::to_value(&value).map_err(|e| SimError::Decode {
            file: file.to_string(),
            document: doc,
            kind: String::new(),
            message: e.to_string(),
        })?;
        add_object(cluster, file, doc, json)?;
    }
    Ok(())
}

/// Read one cluster file into `cluster`.
///
/// # Errors
/// [`SimError::Read`] when the file cannot be read, else as [`parse_cluster_text`].
pub fn read_cluster_file(cluster: &mut Cluster, path: &Path) -> Result<(), SimError> {
    let text = super::read_text(path)?;
    parse_cluster_text(cluster, &path.display().to_string(), &text)
}
