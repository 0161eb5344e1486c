//! The pure half of kube-scheduler v1.22's volume binder (`SchedulerVolumeBinder`): which claims
//! of a pod are bound, which must be bound to an existing PV or dynamically provisioned on a
//! node, the assumption of those bindings in the [`VolumeIndex`] (Reserve) and its undoing
//! (Unreserve), and the per-object checks PreBind repeats until the PV controller has finished.
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

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::storage::v1 as storage;

use super::csi::{self, MigrationGates};
use super::helpers::{
    ANN_BIND_COMPLETED, ANN_SELECTED_NODE, NOT_SUPPORTED_PROVISIONER, WAIT_FOR_FIRST_CONSUMER,
    annotation, check_node_affinity, claim_class, claim_request_bytes, claim_volume_name,
    find_matching_volume, get_bind_volume_to_claim, is_claim_fully_bound, is_controlled_by,
    match_topology_selector_terms, pvc_key, resource_version,
};
use super::index::VolumeIndex;
use crate::framework::PodInfo;
use crate::labels::Labels;

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

/// A PV chosen for a claim (`BindingInfo`).
#[derive(Debug, Clone, PartialEq)]
pub struct BindingInfo {
    /// The PV; after Reserve, the PV with `claimRef` set, as PreBind writes it.
    pub pv: Arc<core::PersistentVolume>,
    /// The claim.
    pub pvc: Arc<core::PersistentVolumeClaim>,
}

/// The volume decisions for a pod on one node (`PodVolumes`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodVolumes {
    /// Claims to bind to existing PVs.
    pub static_bindings: Vec<BindingInfo>,
    /// Claims to provision; after Reserve, each with the `volume.kubernetes.io/selected-node`
    /// annotation, as PreBind writes it.
    pub dynamic_provisions: Vec<Arc<core::PersistentVolumeClaim>>,
}

impl PodVolumes {
    /// True when nothing needs binding or provisioning.
    pub fn is_empty(&self) -> bool {
        self.static_bindings.is_empty() && self.dynamic_provisions.is_empty()
    }
}

/// What Reserve assumed for a pod (`AssumePodVolumes`' result with the updated PodVolumes).
#[derive(Debug, Clone, PartialEq)]
pub struct AssumedPodVolumes {
    /// The node the volumes were assumed for.
    pub node: String,
    /// Every claim of the pod was already fully bound: PreBind has nothing to do.
    pub all_bound: bool,
    /// The objects PreBind writes.
    pub volumes: PodVolumes,
}

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
pub fn pod_has_pvcs(idx: &VolumeIndex, pod: &PodInfo) -> Result<bool, String> {
    let mut has = false;
    for (claim, ephemeral, _) in pod.volumes.claims() {
        has = true;
        let Some(pvc) = idx.pvc(&pod.namespace, claim) else {
            return Err(format!("persistentvolumeclaim {claim:?} not found"));
        };
        if pvc.metadata.deletion_timestamp.is_some() {
            return Err(format!("persistentvolumeclaim {claim:?} is being deleted"));
        }
        if ephemeral && !is_controlled_by(&pvc.metadata, &pod.uid) {
            return Err(format!(
                "persistentvolumeclaim {claim:?} was not created for the pod"
            ));
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
) -> Result<bool, String> {
    let class = claim_class(pvc);
    if class.is_empty() {
        return Ok(false);
    }
    let Some(sc) = idx.storage_class(class) else {
        return Ok(false);
    };
    match sc.volume_binding_mode.as_deref() {
        None => Err(format!(
            "VolumeBindingMode not set for StorageClass {class:?}"
        )),
        Some(m) => Ok(m == WAIT_FOR_FIRST_CONSUMER),
    }
}

/// `isVolumeBound` for one claim of the pod (assume view).
fn claim_bound(
    idx: &VolumeIndex,
    pod: &PodInfo,
    claim: &str,
    ephemeral: bool,
) -> Result<(bool, Arc<core::PersistentVolumeClaim>), String> {
    let key = format!("{}/{claim}", pod.namespace);
    let pvc = idx.pvc_latest(&pod.namespace, claim).ok_or_else(|| {
        format!("error getting PVC {key:?}: could not find v1.PersistentVolumeClaim {key:?}")
    })?;
    if ephemeral && !is_controlled_by(&pvc.metadata, &pod.uid) {
        // v1.22 `isVolumeBound` words it as the limits plugins of the same change do
        // (`PVC %s/%s is not owned by pod`; `ephemeral.VolumeIsForPod` from v1.23).
        return Err(format!("PVC {key} is not owned by pod"));
    }
    Ok((is_claim_fully_bound(pvc), pvc.clone()))
}

/// `GetPodVolumes` (assume view): the pod's claims split into bound, to bind (delayed) and
/// immediate.
///
/// # Errors
/// A claim vanished since PreFilter, or its class has no binding mode.
pub fn get_pod_volumes(idx: &VolumeIndex, pod: &PodInfo) -> Result<PodClaims, String> {
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
) -> Result<Arc<core::PersistentVolume>, String> {
    let Some(plugin) = csi::in_tree_plugin_of(pv) else {
        return Ok(pv.clone());
    };
    if !gates.plugin_enabled(plugin) || !csi::is_plugin_migrated_on_node(plugin, csi_node) {
        return Ok(pv.clone());
    }
    csi::translate_pv(pv)
        .map(Arc::new)
        .map_err(|e| format!("could not translate pv: {e}"))
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
) -> Result<(bool, bool), String> {
    let csi_node = idx.csi_node(node.name).map(Arc::as_ref);
    for pvc in claims {
        let Some(pv) = idx.pv_latest(claim_volume_name(pvc)) else {
            return Ok((true, false));
        };
        let pv = try_translate_pv_to_csi(pv, csi_node, gates).map_err(|e| e.to_string())?;
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
    String,
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
) -> Result<(bool, bool, Vec<Arc<core::PersistentVolumeClaim>>), String> {
    let mut out = Vec::new();
    for claim in claims {
        let class = claim_class(claim);
        if class.is_empty() {
            return Err(format!("no class for claim {:?}", pvc_key(claim)));
        }
        let sc = idx
            .storage_class(class)
            .ok_or_else(|| format!("failed to find storage class {class:?}"))?;
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
) -> Result<(PodVolumes, Vec<&'static str>), String> {
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

impl VolumeIndex {
    /// `arePodVolumesBound` (assume view).
    fn are_pod_volumes_bound(&self, pod: &PodInfo) -> bool {
        pod.volumes.claims().all(|(claim, ephemeral, _)| {
            matches!(claim_bound(self, pod, claim, ephemeral), Ok((true, _)))
        })
    }

    /// `AssumePodVolumes` (Reserve): lay the bindings and provisionings of `volumes` over the
    /// index — each chosen PV gets the pod's claim as `claimRef`, each claim to provision gets
    /// `volume.kubernetes.io/selected-node: <node>` — so the next pods see them taken, and
    /// record them under the pod's key for [`VolumeIndex::revert_pod_volumes`].
    ///
    /// # Errors
    /// An object moved on since the cycle read it; nothing stays assumed.
    pub fn assume_pod_volumes(
        &mut self,
        pod: &PodInfo,
        node: &str,
        volumes: &PodVolumes,
    ) -> Result<AssumedPodVolumes, String> {
        if self.are_pod_volumes_bound(pod) {
            return Ok(AssumedPodVolumes {
                node: node.to_string(),
                all_bound: true,
                volumes: PodVolumes::default(),
            });
        }
        let mut out = PodVolumes::default();
        for b in &volumes.static_bindings {
            let (new_pv, dirty) = get_bind_volume_to_claim(&b.pv, &b.pvc);
            if dirty && let Err(e) = self.assume_pv(new_pv.clone()) {
                self.revert(&out);
                return Err(e);
            }
            out.static_bindings.push(BindingInfo {
                pv: Arc::new(new_pv),
                pvc: b.pvc.clone(),
            });
        }
        for claim in &volumes.dynamic_provisions {
            let mut clone = (**claim).clone();
            clone
                .metadata
                .annotations
                .get_or_insert_with(BTreeMap::new)
                .insert(ANN_SELECTED_NODE.into(), node.to_string());
            if let Err(e) = self.assume_pvc(clone.clone()) {
                self.revert(&out);
                return Err(e);
            }
            out.dynamic_provisions.push(Arc::new(clone));
        }
        let assumed = AssumedPodVolumes {
            node: node.to_string(),
            all_bound: false,
            volumes: out,
        };
        self.pods.insert(pod.key(), assumed.clone());
        Ok(assumed)
    }

    /// `RevertAssumedPodVolumes`: restore every PV and claim of `volumes` by name.
    fn revert(&mut self, volumes: &PodVolumes) {
        for b in &volumes.static_bindings {
            self.restore_pv(b.pv.metadata.name.as_deref().unwrap_or_default());
        }
        for c in &volumes.dynamic_provisions {
            self.restore_pvc(&pvc_key(c));
        }
    }

    /// Unreserve: undo the volume assumption recorded for `pod_key` (`namespace/name`).
    /// Returns false when none was recorded.
    pub fn revert_pod_volumes(&mut self, pod_key: &str) -> bool {
        match self.pods.remove(pod_key) {
            Some(a) => {
                self.revert(&a.volumes);
                true
            }
            None => false,
        }
    }

    /// The pod's binding went through: forget the record without restoring anything (the
    /// assumed objects stay until the API server's newer versions replace them).
    pub fn finish_pod_volumes(&mut self, pod_key: &str) {
        self.pods.remove(pod_key);
    }

    /// `simulate`'s stand-in for PreBind and the PV controller: the assumed objects become the
    /// API objects, each statically bound claim gets `spec.volumeName`, the bind-completed
    /// annotation and phase Bound, its PV phase Bound. Claims to provision keep their
    /// selected-node annotation and stay unbound (nothing provisions in a simulation).
    pub fn commit_pod_volumes(&mut self, pod_key: &str) {
        let Some(a) = self.pods.remove(pod_key) else {
            return;
        };
        for b in &a.volumes.static_bindings {
            let name = b.pv.metadata.name.clone().unwrap_or_default();
            self.commit_pv(&name);
            if let Some(pv) = self.pv(&name) {
                let mut pv = (**pv).clone();
                pv.status.get_or_insert_with(Default::default).phase = Some("Bound".into());
                self.upsert_pv(pv);
            }
            let ns = b
                .pvc
                .metadata
                .namespace
                .clone()
                .unwrap_or_else(|| "default".into());
            let claim = b.pvc.metadata.name.clone().unwrap_or_default();
            if let Some(pvc) = self.pvc(&ns, &claim) {
                let mut pvc = (**pvc).clone();
                pvc.spec.get_or_insert_with(Default::default).volume_name = Some(name.clone());
                pvc.metadata
                    .annotations
                    .get_or_insert_with(BTreeMap::new)
                    .insert(ANN_BIND_COMPLETED.into(), "yes".into());
                pvc.status.get_or_insert_with(Default::default).phase = Some("Bound".into());
                self.upsert_pvc(pvc);
            }
        }
        for c in &a.volumes.dynamic_provisions {
            self.commit_pvc(&pvc_key(c));
        }
    }
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
            Err(e) => return BindCheck::Failed(e),
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
mod tests {
    #![allow(clippy::unwrap_used)]
    //! Upstream `pkg/scheduler/framework/plugins/volumebinding/binder_test.go` (v1.21/v1.22 era
    //! copy, commit 04791b4906602ffda5ccf9bc4c84d3329f1d7080: CSIStorageCapacity still v1beta1),
    //! with its fixtures (`makeTestPVC`, `makeTestPV`, the four storage classes, `node1` labelled
    //! `nodeKey: node1`). The storage-capacity variants are left out (capacity tracking is not
    //! implemented: module docs); `TestBindAPIUpdate` and the API-reading rows of
    //! `TestCheckBindings` are covered against the API double in
    //! `tests/tests/volume_binding_cluster.rs`.

    use std::collections::BTreeMap;

    use k8s_openapi::api::core::v1 as core;
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

    use super::*;
    use crate::framework::plugins::testutil::{PodB, pod};
    use crate::volume::helpers::{ANN_BOUND_BY_CONTROLLER, MIGRATED_PLUGINS_ANNOTATION};

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

    fn index(
        pvs: &[&core::PersistentVolume],
        pvcs: &[&core::PersistentVolumeClaim],
    ) -> VolumeIndex {
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
            let got = idx.assume_pod_volumes(&pod, "node1", &volumes);
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
        let static_check = |api_pv: &core::PersistentVolume,
                            api_pvc: &core::PersistentVolumeClaim| {
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
}
