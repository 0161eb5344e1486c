//! The pure half of kube-scheduler v1.22's volume binder (`SchedulerVolumeBinder`): which claims
//! of a pod are bound, which must be bound to an existing PV or dynamically provisioned on a
//! node, the assumption of those bindings ([`assume_pod_volumes`], Reserve; the
//! [`VolumeIndex`] lays them over its objects, records them per pod and undoes them on
//! Unreserve), and the per-object checks PreBind repeats until the PV controller has finished.
//!
//! Upstream: kubernetes/kubernetes `pkg/scheduler/framework/plugins/volumebinding/binder.go`
//! (v1.22; read from a later copy, commit 01aa0f3f6052c9866dcb69054d8924fa8c96e3cb, whose
//! `GetPodVolumes`, `FindPodVolumes`, `AssumePodVolumes`, `RevertAssumedPodVolumes`,
//! `checkBindings`, `checkBoundClaims`, `findMatchingVolumes`, `checkVolumeProvisions` and
//! `tryTranslatePVToCSI` have the v1.22 shape) and `volume_binding.go` `podHasPVCs`
//! (index id 218315902). v1.22 specifics kept: `ErrReasonPVNotExist` reads
//! `pvc(s) bound to non-existent pv(s)` (reworded in v1.23 by kubernetes/kubernetes#105196,
//! merged 2021-09, after v1.22.0), the ephemeral-claim ownership messages of the
//! GenericEphemeralVolume beta (`PVC ns/name is not owned by pod`), and
//! `isCSIMigrationOnForPlugin` gated per plugin (Cinder through `CSIMigrationOpenStack`).
//!
//! Left out: the storage-capacity check (`CSIStorageCapacity` beta in v1.22) only applies to
//! CSI drivers whose CSIDriver object sets `storageCapacity: true`; mini-scheduler does not
//! watch CSIDrivers or CSIStorageCapacities, so capacity counts as sufficient, which is what
//! v1.22 concludes for every driver that has not opted in.

use std::collections::HashSet;
use std::sync::Arc;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::storage::v1 as storage;

use super::csi::{self, MigrationGates};
use super::error::VolumeError;
use super::helpers::{
    ANN_SELECTED_NODE, NOT_SUPPORTED_PROVISIONER, WAIT_FOR_FIRST_CONSUMER, annotation,
    check_node_affinity, claim_class, claim_request_bytes, claim_volume_name, find_matching_volume,
    is_claim_fully_bound, is_controlled_by, match_topology_selector_terms, pvc_key,
    resource_version,
};
use super::index::{AssumedPodVolumes, BindingInfo, PodVolumes, VolumeIndex};
use crate::labels::Labels;
use crate::model::PodInfo;

/// `ErrReasonBindConflict`.
pub const ERR_REASON_BIND_CONFLICT: &str =
    "node(s) didn't find available persistent volumes to bind";
/// `ErrReasonNodeConflict`.
pub const ERR_REASON_NODE_CONFLICT: &str = "node(s) had volume node affinity conflict";
/// `ErrReasonNotEnoughSpace` (only produced by the storage-capacity check, left out).
pub const ERR_REASON_NOT_ENOUGH_SPACE: &str = "node(s) did not have enough free storage";
/// `ErrReasonPVNotExist`, v1.22 wording.
pub const ERR_REASON_PV_NOT_EXIST: &str = "pvc(s) bound to non-existent pv(s)";
/// The PreFilter reason for unbound claims of an Immediate class.
pub const ERR_UNBOUND_IMMEDIATE_PVC: &str = "pod has unbound immediate PersistentVolumeClaims";

/// A pod's claims split as `GetPodVolumes` splits them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodClaims {
    /// Fully bound claims.
    pub bound: Vec<Arc<core::PersistentVolumeClaim>>,
    /// Unbound claims of a WaitForFirstConsumer class, without `spec.volumeName`: the scheduler
    /// binds or provisions them.
    pub to_bind: Vec<Arc<core::PersistentVolumeClaim>>,
    /// Unbound claims of an Immediate class (or pre-bound to a PV): the PV controller's job.
    pub immediate: Vec<Arc<core::PersistentVolumeClaim>>,
}

/// `podHasPVCs` (PreFilter, lister view): whether the pod uses any claim, and every claim it
/// uses exists, is not being deleted and, for a generic ephemeral volume, is controlled by the
/// pod.
///
/// # Errors
/// The message of the UnschedulableAndUnresolvable status: `persistentvolumeclaim "X" not
/// found`, `persistentvolumeclaim "X" is being deleted`, `persistentvolumeclaim "X" was not
/// created for the pod`.
pub fn pod_has_pvcs(idx: &VolumeIndex, pod: &PodInfo) -> Result<bool, VolumeError> {
    let mut has = false;
    for (claim, ephemeral, _) in pod.volumes.claims() {
        has = true;
        let Some(pvc) = idx.pvc(&pod.namespace, claim) else {
            return Err(VolumeError::ClaimNotFound {
                claim: claim.to_string(),
            });
        };
        if pvc.metadata.deletion_timestamp.is_some() {
            return Err(VolumeError::ClaimBeingDeleted {
                claim: claim.to_string(),
            });
        }
        if ephemeral && !is_controlled_by(&pvc.metadata, &pod.uid) {
            return Err(VolumeError::ClaimNotCreatedForPod {
                claim: claim.to_string(),
            });
        }
    }
    Ok(has)
}

/// `IsDelayBindingMode`: the claim's class exists and is WaitForFirstConsumer. A claim
/// without class, or whose class is unknown, binds immediately.
///
/// # Errors
/// `VolumeBindingMode not set for StorageClass "X"`.
pub fn is_delay_binding_mode(
    idx: &VolumeIndex,
    pvc: &core::PersistentVolumeClaim,
) -> Result<bool, VolumeError> {
    let class = claim_class(pvc);
    if class.is_empty() {
        return Ok(false);
    }
    let Some(sc) = idx.storage_class(class) else {
        return Ok(false);
    };
    match sc.volume_binding_mode.as_deref() {
        None => Err(VolumeError::BindingModeNotSet {
            class: class.to_string(),
        }),
        Some(m) => Ok(m == WAIT_FOR_FIRST_CONSUMER),
    }
}

/// `isVolumeBound` for one claim of the pod (assume view).
fn claim_bound(
    idx: &VolumeIndex,
    pod: &PodInfo,
    claim: &str,
    ephemeral: bool,
) -> Result<(bool, Arc<core::PersistentVolumeClaim>), VolumeError> {
    let key = format!("{}/{claim}", pod.namespace);
    let Some(pvc) = idx.pvc_latest(&pod.namespace, claim) else {
        return Err(VolumeError::ClaimMissing { key });
    };
    if ephemeral && !is_controlled_by(&pvc.metadata, &pod.uid) {
        // v1.22 `isVolumeBound` words it as the limits plugins of the same change do
        // (`PVC %s/%s is not owned by pod`; `ephemeral.VolumeIsForPod` from v1.23).
        return Err(VolumeError::ClaimNotOwnedByPod { key });
    }
    Ok((is_claim_fully_bound(pvc), pvc.clone()))
}

/// `GetPodVolumes` (assume view): the pod's claims split into bound, to bind (delayed) and
/// immediate.
///
/// # Errors
/// A claim vanished since PreFilter, or its class has no binding mode.
pub fn get_pod_volumes(idx: &VolumeIndex, pod: &PodInfo) -> Result<PodClaims, VolumeError> {
    let mut out = PodClaims::default();
    for (claim, ephemeral, _) in pod.volumes.claims() {
        let (bound, pvc) = claim_bound(idx, pod, claim, ephemeral)?;
        if bound {
            out.bound.push(pvc);
        } else if is_delay_binding_mode(idx, &pvc)? && claim_volume_name(&pvc).is_empty() {
            out.to_bind.push(pvc);
        } else {
            out.immediate.push(pvc);
        }
    }
    Ok(out)
}

/// `tryTranslatePVToCSI`: the PV translated to its CSI driver when it is migratable, the
/// gates allow its plugin, and the node has migrated it; else the PV as it is.
///
/// # Errors
/// The translation failed.
pub fn try_translate_pv_to_csi(
    pv: &Arc<core::PersistentVolume>,
    csi_node: Option<&storage::CSINode>,
    gates: MigrationGates,
) -> Result<Arc<core::PersistentVolume>, VolumeError> {
    let Some(plugin) = csi::in_tree_plugin_of(pv) else {
        return Ok(pv.clone());
    };
    if !gates.plugin_enabled(plugin) || !csi::is_plugin_migrated_on_node(plugin, csi_node) {
        return Ok(pv.clone());
    }
    csi::translate_pv(pv)
        .map(Arc::new)
        .map_err(|e| VolumeError::Translate(Box::new(e)))
}

/// The node a pod's volumes are checked against.
#[derive(Debug, Clone, Copy)]
pub struct NodeRef<'a> {
    /// Node name.
    pub name: &'a str,
    /// Node labels.
    pub labels: &'a Labels,
}

/// `checkBoundClaims`: `(bound volumes satisfied, bound PVs found)`.
fn check_bound_claims(
    idx: &VolumeIndex,
    gates: MigrationGates,
    claims: &[Arc<core::PersistentVolumeClaim>],
    node: NodeRef<'_>,
) -> Result<(bool, bool), VolumeError> {
    let csi_node = idx.csi_node(node.name).map(Arc::as_ref);
    for pvc in claims {
        let Some(pv) = idx.pv_latest(claim_volume_name(pvc)) else {
            return Ok((true, false));
        };
        let pv = try_translate_pv_to_csi(pv, csi_node, gates)?;
        if check_node_affinity(&pv, node.labels).is_err() {
            return Ok((false, true));
        }
    }
    Ok((true, true))
}

/// `findMatchingVolumes`: `(all matched, bindings, claims left to provision)`. Claims are
/// taken by increasing storage request (stable among equals).
#[allow(clippy::type_complexity)]
fn find_matching_volumes(
    idx: &VolumeIndex,
    claims: &[Arc<core::PersistentVolumeClaim>],
    node: NodeRef<'_>,
) -> Result<
    (
        bool,
        Vec<BindingInfo>,
        Vec<Arc<core::PersistentVolumeClaim>>,
    ),
    VolumeError,
> {
    let mut claims = claims.to_vec();
    claims.sort_by_key(|c| claim_request_bytes(c));
    let mut chosen: HashSet<String> = HashSet::new();
    let mut found = true;
    let mut bindings = Vec::new();
    let mut unbound = Vec::new();
    for pvc in claims {
        let class = claim_class(&pvc).to_string();
        match find_matching_volume(
            &pvc,
            idx.pvs_latest_of_class(&class),
            Some(node.labels),
            &chosen,
            true,
        )? {
            Some(pv) => {
                chosen.insert(pv.metadata.name.clone().unwrap_or_default());
                bindings.push(BindingInfo { pv, pvc });
            }
            None => {
                unbound.push(pvc);
                found = false;
            }
        }
    }
    Ok((found, bindings, unbound))
}

/// `checkVolumeProvisions`: `(provisioning possible, sufficient storage, claims)`; the
/// storage-capacity part is left out (module docs).
#[allow(clippy::type_complexity)]
fn check_volume_provisions(
    idx: &VolumeIndex,
    claims: &[Arc<core::PersistentVolumeClaim>],
    node: NodeRef<'_>,
) -> Result<(bool, bool, Vec<Arc<core::PersistentVolumeClaim>>), VolumeError> {
    let mut out = Vec::new();
    for claim in claims {
        let class = claim_class(claim);
        if class.is_empty() {
            return Err(VolumeError::NoClass {
                key: pvc_key(claim),
            });
        }
        let sc = idx
            .storage_class(class)
            .ok_or_else(|| VolumeError::UnknownClass {
                class: class.to_string(),
            })?;
        if sc.provisioner.is_empty() || sc.provisioner == NOT_SUPPORTED_PROVISIONER {
            return Ok((false, true, Vec::new()));
        }
        if !match_topology_selector_terms(sc.allowed_topologies.as_deref(), node.labels) {
            return Ok((false, true, Vec::new()));
        }
        out.push(claim.clone());
    }
    Ok((true, true, out))
}

/// `FindPodVolumes`: the bindings and provisionings that make the pod's claims fit `node`,
/// and the conflict reasons when they cannot (in upstream's order: node conflict, bind
/// conflict, not enough space, PV not found).
///
/// # Errors
/// An internal problem (a claim without class to provision, an unknown class, a bad selector,
/// a failed translation): an Error status upstream.
pub fn find_pod_volumes(
    idx: &VolumeIndex,
    gates: MigrationGates,
    bound: &[Arc<core::PersistentVolumeClaim>],
    to_bind: &[Arc<core::PersistentVolumeClaim>],
    node: NodeRef<'_>,
) -> Result<(PodVolumes, Vec<&'static str>), VolumeError> {
    let mut unbound_satisfied = true;
    let mut bound_satisfied = true;
    let sufficient_storage = true;
    let mut bound_pvs_found = true;
    let mut volumes = PodVolumes::default();
    let reasons = |b: bool, u: bool, s: bool, f: bool| {
        let mut r = Vec::new();
        if !b {
            r.push(ERR_REASON_NODE_CONFLICT);
        }
        if !u {
            r.push(ERR_REASON_BIND_CONFLICT);
        }
        if !s {
            r.push(ERR_REASON_NOT_ENOUGH_SPACE);
        }
        if !f {
            r.push(ERR_REASON_PV_NOT_EXIST);
        }
        r
    };
    if !bound.is_empty() {
        (bound_satisfied, bound_pvs_found) = check_bound_claims(idx, gates, bound, node)?;
    }
    if !to_bind.is_empty() {
        let mut to_find = Vec::new();
        let mut to_provision = Vec::new();
        for claim in to_bind {
            match annotation(&claim.metadata, ANN_SELECTED_NODE) {
                Some(selected) if selected != node.name => {
                    // Fast path: provisioning was already started for another node.
                    unbound_satisfied = false;
                    return Ok((
                        volumes,
                        reasons(
                            bound_satisfied,
                            unbound_satisfied,
                            sufficient_storage,
                            bound_pvs_found,
                        ),
                    ));
                }
                Some(_) => to_provision.push(claim.clone()),
                None => to_find.push(claim.clone()),
            }
        }
        if !to_find.is_empty() {
            let (found, bindings, unbound) = find_matching_volumes(idx, &to_find, node)?;
            unbound_satisfied = found;
            volumes.static_bindings = bindings;
            to_provision.extend(unbound);
        }
        if !to_provision.is_empty() {
            let (ok, _sufficient, provisions) = check_volume_provisions(idx, &to_provision, node)?;
            unbound_satisfied = ok;
            volumes.dynamic_provisions = provisions;
        }
    }
    Ok((
        volumes,
        reasons(
            bound_satisfied,
            unbound_satisfied,
            sufficient_storage,
            bound_pvs_found,
        ),
    ))
}

/// `AssumePodVolumes` (Reserve): unless every claim of the pod is already fully bound (assume
/// view), lay the bindings and provisionings of `volumes` over the index — each chosen PV gets
/// the pod's claim as `claimRef`, each claim to provision gets
/// `volume.kubernetes.io/selected-node: <node>` — so the next pods see them taken, and record
/// them under the pod's key for [`VolumeIndex::revert_pod_volumes`] (see
/// [`VolumeIndex::assume_volumes`]).
///
/// # Errors
/// An object moved on since the cycle read it; nothing stays assumed.
pub fn assume_pod_volumes(
    idx: &mut VolumeIndex,
    pod: &PodInfo,
    node: &str,
    volumes: &PodVolumes,
) -> Result<AssumedPodVolumes, VolumeError> {
    if are_pod_volumes_bound(idx, pod) {
        return Ok(AssumedPodVolumes {
            node: node.to_string(),
            all_bound: true,
            volumes: PodVolumes::default(),
        });
    }
    idx.assume_volumes(pod.key(), node, volumes)
}

/// `arePodVolumesBound` (assume view).
fn are_pod_volumes_bound(idx: &VolumeIndex, pod: &PodInfo) -> bool {
    pod.volumes.claims().all(|(claim, ephemeral, _)| {
        matches!(claim_bound(idx, pod, claim, ephemeral), Ok((true, _)))
    })
}

/// One step of PreBind's wait (`checkBindings` for one object).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BindCheck {
    /// Fully bound.
    Done,
    /// Not yet: poll again.
    Pending,
    /// Binding failed or was undone: give up, the pod is scheduled again.
    Failed(String),
}

/// `checkBindings` for a static binding: the PV as the API server has it now (`api_pv`, whose
/// version must not be older than what PreBind wrote, `written`), its claim, and the node.
pub fn check_static_binding(
    written: &core::PersistentVolume,
    api_pv: &Arc<core::PersistentVolume>,
    api_pvc: &core::PersistentVolumeClaim,
    node: NodeRef<'_>,
    csi_node: Option<&storage::CSINode>,
    gates: MigrationGates,
) -> BindCheck {
    if resource_version(&written.metadata) > resource_version(&api_pv.metadata) {
        return BindCheck::Pending;
    }
    let pv = match try_translate_pv_to_csi(api_pv, csi_node, gates) {
        Ok(pv) => pv,
        Err(e) => return BindCheck::Failed(format!("failed to translate pv to csi: {e}")),
    };
    let name = pv.metadata.name.as_deref().unwrap_or_default();
    if let Err(e) = check_node_affinity(&pv, node.labels) {
        return BindCheck::Failed(format!(
            "pv {name:?} node affinity doesn't match node {:?}: {e}",
            node.name
        ));
    }
    let claim_ref_ok = pv
        .spec
        .as_ref()
        .and_then(|s| s.claim_ref.as_ref())
        .is_some_and(|r| r.uid.as_deref().is_some_and(|u| !u.is_empty()));
    if !claim_ref_ok {
        return BindCheck::Failed(format!("ClaimRef got reset for pv {name:?}"));
    }
    if is_claim_fully_bound(api_pvc) {
        BindCheck::Done
    } else {
        BindCheck::Pending
    }
}

/// `checkBindings` for a claim to provision: the claim as the API server has it now
/// (`api_pvc`, not older than `written`) and, when it names a volume, that PV (`None` while
/// the PV is not visible yet).
pub fn check_provisioned_claim(
    written: &core::PersistentVolumeClaim,
    api_pvc: &core::PersistentVolumeClaim,
    api_pv: Option<&Arc<core::PersistentVolume>>,
    node: NodeRef<'_>,
    csi_node: Option<&storage::CSINode>,
    gates: MigrationGates,
) -> BindCheck {
    if resource_version(&written.metadata) > resource_version(&api_pvc.metadata) {
        return BindCheck::Pending;
    }
    let name = api_pvc.metadata.name.as_deref().unwrap_or_default();
    if api_pvc.metadata.annotations.is_none() {
        return BindCheck::Failed(format!("selectedNode annotation reset for PVC {name:?}"));
    }
    if annotation(&api_pvc.metadata, ANN_SELECTED_NODE).unwrap_or_default() != node.name {
        return BindCheck::Failed(format!("provisioning failed for PVC {name:?}"));
    }
    if !claim_volume_name(api_pvc).is_empty() {
        let Some(pv) = api_pv else {
            return BindCheck::Pending;
        };
        let pv = match try_translate_pv_to_csi(pv, csi_node, gates) {
            Ok(pv) => pv,
            Err(e) => return BindCheck::Failed(e.to_string()),
        };
        if let Err(e) = check_node_affinity(&pv, node.labels) {
            return BindCheck::Failed(format!(
                "pv {:?} node affinity doesn't match node {:?}: {e}",
                pv.metadata.name.as_deref().unwrap_or_default(),
                node.name
            ));
        }
    }
    if is_claim_fully_bound(api_pvc) {
        BindCheck::Done
    } else {
        BindCheck::Pending
    }
}

#[cfg(test)]
#[path = "binder_test.rs"]
mod tests;
