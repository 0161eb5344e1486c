//! PV/PVC helpers of `k8s.io/component-helpers/storage/volume/pv_helpers.go` and
//! `k8s.io/component-helpers/scheduling/corev1` as kube-scheduler v1.22 uses them:
//! [`find_matching_volume`], [`is_volume_bound_to_claim`], [`get_bind_volume_to_claim`],
//! [`check_node_affinity`], [`match_topology_selector_terms`] and the storage-class getters.
//!
//! Upstream: kubernetes/kubernetes `staging/src/k8s.io/component-helpers/storage/volume/pv_helpers.go`
//! (v1.21/v1.22; `FindMatchingVolume`, `CheckVolumeModeMismatches`, `CheckAccessModes`,
//! `GetBindVolumeToClaim`), `pkg/apis/core/v1/helper/helpers.go` `MatchTopologySelectorTerms`.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::error::VolumeError;
use crate::labels::{LabelSelector, Labels, NodeSelector};
use crate::quantity;

/// `pv.kubernetes.io/bind-completed`: set on a PVC once the PV controller finished binding it.
pub const ANN_BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
/// `pv.kubernetes.io/bound-by-controller`: set on a PV the controller (or scheduler) bound.
pub const ANN_BOUND_BY_CONTROLLER: &str = "pv.kubernetes.io/bound-by-controller";
/// `volume.kubernetes.io/selected-node`: the node the scheduler chose for provisioning a PVC.
pub const ANN_SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
/// `volume.beta.kubernetes.io/storage-class`: the beta class annotation, read before the field.
pub const BETA_STORAGE_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";
/// `kubernetes.io/no-provisioner`: a StorageClass that cannot provision dynamically.
pub const NOT_SUPPORTED_PROVISIONER: &str = "kubernetes.io/no-provisioner";
/// `storage.alpha.kubernetes.io/migrated-plugins` on a CSINode (`v1.MigratedPluginsAnnotationKey`).
pub const MIGRATED_PLUGINS_ANNOTATION: &str = "storage.alpha.kubernetes.io/migrated-plugins";
/// `volumeBindingMode: WaitForFirstConsumer`.
pub const WAIT_FOR_FIRST_CONSUMER: &str = "WaitForFirstConsumer";
/// `status.phase: Available` of a PersistentVolume.
pub const VOLUME_AVAILABLE: &str = "Available";
/// The `storage` resource of PVC requests and PV capacity.
pub const RESOURCE_STORAGE: &str = "storage";

/// `namespace/name`.
pub fn claim_key(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

/// The `namespace/name` of a claim object.
pub fn pvc_key(pvc: &core::PersistentVolumeClaim) -> String {
    claim_key(
        pvc.metadata.namespace.as_deref().unwrap_or("default"),
        pvc.metadata.name.as_deref().unwrap_or_default(),
    )
}

/// `metadata.resourceVersion` as the etcd3 versioner reads it; 0 when unset or not a number
/// (objects read from files have none).
pub fn resource_version(meta: &ObjectMeta) -> u64 {
    meta.resource_version
        .as_deref()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// `metav1.HasAnnotation`.
pub fn has_annotation(meta: &ObjectMeta, key: &str) -> bool {
    meta.annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(key))
}

/// An annotation's value.
pub fn annotation<'a>(meta: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
}

/// `metav1.IsControlledBy(obj, owner)`: the object's controller ownerReference has `owner_uid`.
pub fn is_controlled_by(meta: &ObjectMeta, owner_uid: &str) -> bool {
    meta.owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
        .is_some_and(|o| o.uid == owner_uid)
}

/// `GetPersistentVolumeClaimClass`: the beta annotation first, then `spec.storageClassName`,
/// else `""`.
pub fn claim_class(pvc: &core::PersistentVolumeClaim) -> &str {
    if let Some(c) = annotation(&pvc.metadata, BETA_STORAGE_CLASS_ANNOTATION) {
        return c;
    }
    pvc.spec
        .as_ref()
        .and_then(|s| s.storage_class_name.as_deref())
        .unwrap_or_default()
}

/// `GetPersistentVolumeClass`: the beta annotation first, then `spec.storageClassName`.
pub fn pv_class(pv: &core::PersistentVolume) -> &str {
    if let Some(c) = annotation(&pv.metadata, BETA_STORAGE_CLASS_ANNOTATION) {
        return c;
    }
    pv.spec
        .as_ref()
        .and_then(|s| s.storage_class_name.as_deref())
        .unwrap_or_default()
}

/// `pvc.spec.volumeName` (`""` when unbound).
pub fn claim_volume_name(pvc: &core::PersistentVolumeClaim) -> &str {
    pvc.spec
        .as_ref()
        .and_then(|s| s.volume_name.as_deref())
        .unwrap_or_default()
}

/// `isPVCFullyBound` (v1.22 binder): `spec.volumeName` set and the bind-completed annotation
/// present.
pub fn is_claim_fully_bound(pvc: &core::PersistentVolumeClaim) -> bool {
    !claim_volume_name(pvc).is_empty() && has_annotation(&pvc.metadata, ANN_BIND_COMPLETED)
}

/// The claim's `spec.resources.requests[storage]` in bytes (0 when absent or malformed, as a
/// missing Go quantity is zero; the API server rejects malformed ones).
pub fn claim_request_bytes(pvc: &core::PersistentVolumeClaim) -> i64 {
    pvc.spec
        .as_ref()
        .and_then(|s| s.resources.as_ref())
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get(RESOURCE_STORAGE))
        .and_then(|q| quantity::value(&q.0).ok())
        .unwrap_or(0)
}

/// The volume's `spec.capacity[storage]` in bytes (0 when absent or malformed).
pub fn pv_capacity_bytes(pv: &core::PersistentVolume) -> i64 {
    pv.spec
        .as_ref()
        .and_then(|s| s.capacity.as_ref())
        .and_then(|c| c.get(RESOURCE_STORAGE))
        .and_then(|q| quantity::value(&q.0).ok())
        .unwrap_or(0)
}

/// `IsVolumeBoundToClaim`: the PV's `claimRef` names the claim (and its UID when the ref has
/// one).
pub fn is_volume_bound_to_claim(
    pv: &core::PersistentVolume,
    pvc: &core::PersistentVolumeClaim,
) -> bool {
    let Some(r) = pv.spec.as_ref().and_then(|s| s.claim_ref.as_ref()) else {
        return false;
    };
    let ns = pvc.metadata.namespace.as_deref().unwrap_or("default");
    if r.name.as_deref() != pvc.metadata.name.as_deref() || r.namespace.as_deref() != Some(ns) {
        return false;
    }
    match r.uid.as_deref() {
        Some(uid) if !uid.is_empty() => pvc.metadata.uid.as_deref() == Some(uid),
        _ => true,
    }
}

/// `CheckVolumeModeMismatches`: an unset mode is `Filesystem` on both sides.
pub fn volume_mode_mismatch(
    pvc: &core::PersistentVolumeClaim,
    pv: &core::PersistentVolume,
) -> bool {
    let want = pvc
        .spec
        .as_ref()
        .and_then(|s| s.volume_mode.as_deref())
        .unwrap_or("Filesystem");
    let have = pv
        .spec
        .as_ref()
        .and_then(|s| s.volume_mode.as_deref())
        .unwrap_or("Filesystem");
    want != have
}

/// `CheckAccessModes`: every mode the claim asks for is offered by the volume.
pub fn check_access_modes(pvc: &core::PersistentVolumeClaim, pv: &core::PersistentVolume) -> bool {
    let offered: Vec<&str> = pv
        .spec
        .as_ref()
        .and_then(|s| s.access_modes.as_ref())
        .map(|m| m.iter().map(String::as_str).collect())
        .unwrap_or_default();
    pvc.spec
        .as_ref()
        .and_then(|s| s.access_modes.as_ref())
        .is_none_or(|m| m.iter().all(|x| offered.contains(&x.as_str())))
}

/// The message of `CheckNodeAffinity` when no term matches.
pub const ERR_NO_MATCHING_TERMS: &str = "no matching NodeSelectorTerms";

/// `CheckNodeAffinity(pv, nodeLabels)` (v1.22 `pkg/volume/util`): the PV's required node
/// affinity must match a node that has only these labels (no name, so `matchFields` on
/// `metadata.name` with `In` never matches, as upstream builds the node from labels alone).
///
/// # Errors
/// [`VolumeError::NoMatchingTerms`] ([`ERR_NO_MATCHING_TERMS`]) when the affinity does not
/// match.
pub fn check_node_affinity(
    pv: &core::PersistentVolume,
    labels: &Labels,
) -> Result<(), VolumeError> {
    let Some(required) = pv
        .spec
        .as_ref()
        .and_then(|s| s.node_affinity.as_ref())
        .and_then(|a| a.required.as_ref())
    else {
        return Ok(());
    };
    if NodeSelector::compile(required).matches("", labels) {
        Ok(())
    } else {
        Err(VolumeError::NoMatchingTerms)
    }
}

/// `v1helper.MatchTopologySelectorTerms`: terms ORed; an empty list matches everything, an empty
/// term matches nothing; each expression is `key In values` (a term with an expression without
/// values fails to parse and matches nothing).
pub fn match_topology_selector_terms(
    terms: Option<&[core::TopologySelectorTerm]>,
    labels: &Labels,
) -> bool {
    let terms = terms.unwrap_or_default();
    if terms.is_empty() {
        return true;
    }
    terms.iter().any(|t| {
        let exprs = t.match_label_expressions.as_deref().unwrap_or_default();
        !exprs.is_empty()
            && exprs.iter().all(|e| {
                !e.values.is_empty() && labels.get(&e.key).is_some_and(|v| e.values.contains(v))
            })
    })
}

/// `FindMatchingVolume` (scheduler path: `node` set, `delayBinding` true): the PV pre-bound to
/// the claim if any (`None` when its node affinity does not fit), else the smallest Available
/// PV of the claim's class with enough capacity, matching volume mode, selector, node affinity
/// and access modes, not in `excluded` and not being deleted. Ties on size keep the first in
/// `volumes` order (upstream iterates an informer index: unspecified order).
///
/// # Errors
/// The claim's `spec.selector` does not convert to a selector.
pub fn find_matching_volume<'a>(
    claim: &core::PersistentVolumeClaim,
    volumes: impl IntoIterator<Item = &'a Arc<core::PersistentVolume>>,
    node_labels: Option<&Labels>,
    excluded: &HashSet<String>,
    delay_binding: bool,
) -> Result<Option<Arc<core::PersistentVolume>>, VolumeError> {
    let requested = claim_request_bytes(claim);
    let requested_class = claim_class(claim);
    let selector = match claim.spec.as_ref().and_then(|s| s.selector.as_ref()) {
        Some(sel) => Some(LabelSelector::from_label_selector(sel).map_err(|source| {
            VolumeError::ClaimSelector {
                key: pvc_key(claim),
                source,
            }
        })?),
        None => None,
    };
    let mut smallest: Option<(&Arc<core::PersistentVolume>, i64)> = None;
    for pv in volumes {
        let name = pv.metadata.name.as_deref().unwrap_or_default();
        if excluded.contains(name) {
            continue;
        }
        let has_claim_ref = pv.spec.as_ref().is_some_and(|s| s.claim_ref.is_some());
        if has_claim_ref && !is_volume_bound_to_claim(pv, claim) {
            continue;
        }
        let qty = pv_capacity_bytes(pv);
        if qty < requested {
            continue;
        }
        if volume_mode_mismatch(claim, pv) {
            continue;
        }
        if pv.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let affinity_ok = node_labels.is_none_or(|l| check_node_affinity(pv, l).is_ok());
        if is_volume_bound_to_claim(pv, claim) {
            // A pre-bound PV whose node affinity does not fit: no match at all.
            return Ok(affinity_ok.then(|| pv.clone()));
        }
        if node_labels.is_none() && delay_binding {
            continue;
        }
        let phase = pv.status.as_ref().and_then(|s| s.phase.as_deref());
        if phase != Some(VOLUME_AVAILABLE) {
            continue;
        }
        let empty = Labels::new();
        if selector
            .as_ref()
            .is_some_and(|s| !s.matches(pv.metadata.labels.as_ref().unwrap_or(&empty)))
        {
            continue;
        }
        if pv_class(pv) != requested_class {
            continue;
        }
        if !affinity_ok {
            continue;
        }
        if node_labels.is_some() && !check_access_modes(claim, pv) {
            continue;
        }
        if smallest.is_none_or(|(_, s)| s > qty) {
            smallest = Some((pv, qty));
        }
    }
    Ok(smallest.map(|(pv, _)| pv.clone()))
}

/// `GetBindVolumeToClaim`: the PV with `claimRef` pointing at the claim (kind, apiVersion,
/// namespace, name, uid, resourceVersion of the claim) and `bound-by-controller: yes` when the
/// PV was not already bound to it; `dirty` when anything changed.
pub fn get_bind_volume_to_claim(
    pv: &core::PersistentVolume,
    pvc: &core::PersistentVolumeClaim,
) -> (core::PersistentVolume, bool) {
    let should_set_bound_by_controller = !is_volume_bound_to_claim(pv, pvc);
    let mut clone = pv.clone();
    let mut dirty = false;
    let ns = pvc
        .metadata
        .namespace
        .clone()
        .unwrap_or_else(|| "default".into());
    let current = pv.spec.as_ref().and_then(|s| s.claim_ref.as_ref());
    let same = current.is_some_and(|r| {
        r.name == pvc.metadata.name
            && r.namespace.as_deref() == Some(ns.as_str())
            && r.uid.as_deref().unwrap_or_default()
                == pvc.metadata.uid.as_deref().unwrap_or_default()
    });
    if !same {
        clone.spec.get_or_insert_with(Default::default).claim_ref = Some(core::ObjectReference {
            kind: Some("PersistentVolumeClaim".into()),
            api_version: Some("v1".into()),
            namespace: Some(ns),
            name: pvc.metadata.name.clone(),
            uid: pvc.metadata.uid.clone(),
            resource_version: pvc.metadata.resource_version.clone(),
            ..Default::default()
        });
        dirty = true;
    }
    if should_set_bound_by_controller && !has_annotation(&clone.metadata, ANN_BOUND_BY_CONTROLLER) {
        clone
            .metadata
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(ANN_BOUND_BY_CONTROLLER.into(), "yes".into());
        dirty = true;
    }
    (clone, dirty)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::volume::testutil::{make_pv, make_pvc};

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn topology_selector_terms() {
        let t = |k: &str, vals: &[&str]| core::TopologySelectorTerm {
            match_label_expressions: Some(vec![core::TopologySelectorLabelRequirement {
                key: k.into(),
                values: vals.iter().map(|v| v.to_string()).collect(),
            }]),
        };
        let l = labels(&[("zone", "a")]);
        assert!(match_topology_selector_terms(None, &l));
        assert!(match_topology_selector_terms(Some(&[]), &l));
        assert!(match_topology_selector_terms(
            Some(&[t("zone", &["b"]), t("zone", &["a"])]),
            &l
        ));
        assert!(!match_topology_selector_terms(
            Some(&[t("zone", &["b"])]),
            &l
        ));
        assert!(!match_topology_selector_terms(
            Some(&[core::TopologySelectorTerm::default()]),
            &l
        ));
        assert!(!match_topology_selector_terms(Some(&[t("zone", &[])]), &l));
    }

    #[test]
    fn find_matching_volume_prefers_prebound_then_smallest() {
        let claim = make_pvc("c", "", "sc", Some("5Gi"));
        let small = Arc::new(make_pv("small", "sc", "6Gi"));
        let big = Arc::new(make_pv("big", "sc", "10Gi"));
        let tiny = Arc::new(make_pv("tiny", "sc", "1Gi"));
        let other_class = Arc::new(make_pv("other", "gold", "5Gi"));
        let l = Labels::new();
        let pvs = [big.clone(), tiny, small.clone(), other_class];
        let got = find_matching_volume(&claim, &pvs, Some(&l), &HashSet::new(), true).unwrap();
        assert_eq!(got.unwrap().metadata.name.as_deref(), Some("small"));
        let excluded = HashSet::from(["small".to_string()]);
        let got = find_matching_volume(&claim, &pvs, Some(&l), &excluded, true).unwrap();
        assert_eq!(got.unwrap().metadata.name.as_deref(), Some("big"));
        // A PV pre-bound to the claim wins even when larger.
        let mut prebound = make_pv("prebound", "sc", "100Gi");
        prebound.spec.as_mut().unwrap().claim_ref = Some(core::ObjectReference {
            name: Some("c".into()),
            namespace: Some("default".into()),
            ..Default::default()
        });
        let pvs = [small, Arc::new(prebound)];
        let got = find_matching_volume(&claim, &pvs, Some(&l), &HashSet::new(), true).unwrap();
        assert_eq!(got.unwrap().metadata.name.as_deref(), Some("prebound"));
    }

    #[test]
    fn bind_volume_to_claim_sets_claim_ref_and_annotation() {
        let mut claim = make_pvc("c", "", "sc", None);
        claim.metadata.uid = Some("uid-c".into());
        claim.metadata.resource_version = Some("7".into());
        let pv = make_pv("pv", "sc", "1Gi");
        let (bound, dirty) = get_bind_volume_to_claim(&pv, &claim);
        assert!(dirty);
        let r = bound.spec.as_ref().unwrap().claim_ref.as_ref().unwrap();
        assert_eq!(r.name.as_deref(), Some("c"));
        assert_eq!(r.uid.as_deref(), Some("uid-c"));
        assert_eq!(r.resource_version.as_deref(), Some("7"));
        assert_eq!(
            annotation(&bound.metadata, ANN_BOUND_BY_CONTROLLER),
            Some("yes")
        );
        assert!(is_volume_bound_to_claim(&bound, &claim));
        let (_, dirty) = get_bind_volume_to_claim(&bound, &claim);
        assert!(!dirty, "binding an already bound PV changes nothing");
    }
}
