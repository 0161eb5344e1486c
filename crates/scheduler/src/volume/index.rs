//! [`VolumeIndex`]: the PersistentVolumes, PersistentVolumeClaims, StorageClasses and CSINodes of
//! the cluster, with the binder's assume cache laid over the PVs and PVCs.
//!
//! Two views, as in kube-scheduler v1.22:
//! - the **API view** ([`VolumeIndex::pv`], [`VolumeIndex::pvc`]): the objects as last listed or
//!   watched — what the informer listers of VolumeZone, the limits plugins and VolumeBinding's
//!   PreFilter read;
//! - the **assume view** ([`VolumeIndex::pv_latest`], [`VolumeIndex::pvc_latest`]): the same
//!   objects with the bindings this scheduler has assumed but not yet seen come back from the
//!   API server — what the binder's `pvCache`/`pvcCache` (`assume_cache.go`) return.
//!
//! Assume-cache rules (`pkg/scheduler/framework/plugins/volumebinding/assume_cache.go`, v1.22,
//! read from commit 04791b4906602ffda5ccf9bc4c84d3329f1d7080): the cache keeps its own API
//! object (`apiObj`) besides the lister's, and an informer add/update whose resourceVersion is
//! not newer than the cached latest object is ignored altogether ("Skip adding object to assume
//! cache because version is not newer than storedVersion"), so neither a resync nor a stale
//! relist (a watcher relisting from the API server's watch cache) takes the assume view back in
//! time or drops an assumption; a newer one replaces both the API object and the assumption.
//! `Assume` refuses an object older than the stored one ("is out of sync"); `Restore` drops the
//! assumption, back to the cache's API object. resourceVersions compare as integers (etcd3
//! versioner). Objects without a resourceVersion (simulate's files, tests) have version 0: among
//! those, the last one given is the newest.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use k8s_openapi::Metadata;
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::storage::v1 as storage;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::helpers::{
    ANN_BIND_COMPLETED, ANN_SELECTED_NODE, claim_key, get_bind_volume_to_claim, pv_class, pvc_key,
    resource_version,
};

/// One object: the lister's copy, the assume cache's API copy and an optional assumed version.
#[derive(Debug, Clone)]
struct Entry<T> {
    /// The last object the informer delivered (lister view).
    api: Arc<T>,
    /// The assume cache's `apiObj`: the newest version delivered.
    cached: Arc<T>,
    /// The assume cache's `latestObj` when it differs from `cached`.
    assumed: Option<Arc<T>>,
}

impl<T> Entry<T> {
    fn new(obj: Arc<T>) -> Entry<T> {
        Entry {
            api: obj.clone(),
            cached: obj,
            assumed: None,
        }
    }

    fn latest(&self) -> &Arc<T> {
        self.assumed.as_ref().unwrap_or(&self.cached)
    }
}

/// `assumeCache.Assume` (v1.22): lay `obj` over the entry `key` of `map`, a `v1.<kind>`.
///
/// # Errors
/// The entry is unknown ("could not find"), or `obj`'s resourceVersion is older than the stored
/// latest one ("is out of sync"), in upstream's words.
fn assume<T: Metadata<Ty = ObjectMeta>>(
    map: &mut HashMap<String, Entry<T>>,
    kind: &str,
    key: &str,
    obj: T,
) -> Result<(), String> {
    let slot = map
        .get_mut(key)
        .ok_or_else(|| format!("could not find v1.{kind} {key:?}"))?;
    let stored = resource_version(slot.latest().metadata());
    let new = resource_version(obj.metadata());
    if new < stored {
        return Err(format!(
            "v1.{kind} {key:?} is out of sync (stored: {stored}, assume: {new})"
        ));
    }
    slot.assumed = Some(Arc::new(obj));
    Ok(())
}

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

/// The cluster's storage objects (see the module docs). Cheap to clone: objects are shared.
#[derive(Debug, Clone, Default)]
pub struct VolumeIndex {
    pvs: HashMap<String, Entry<core::PersistentVolume>>,
    pvcs: HashMap<String, Entry<core::PersistentVolumeClaim>>,
    classes: HashMap<String, Arc<storage::StorageClass>>,
    csi_nodes: HashMap<String, Arc<storage::CSINode>>,
    /// PV names by class (`GetPersistentVolumeClass` of the API object), sorted by name: the
    /// assume cache's storage-class index.
    pvs_by_class: HashMap<String, BTreeSet<String>>,
    /// Volume assumptions by pod `namespace/name`, for Unreserve.
    pods: HashMap<String, AssumedPodVolumes>,
}

/// Apply an informer add/update to an entry: the lister's object always changes; the assume
/// cache takes it (dropping any assumption) only when it is newer than its latest object
/// (`assumeCache.add`), or when neither has a version.
fn update<T>(slot: &mut Entry<T>, new: Arc<T>, rv_of: impl Fn(&T) -> u64) {
    let (new_rv, stored_rv) = (rv_of(&new), rv_of(slot.latest()));
    if new_rv > stored_rv {
        slot.cached = new.clone();
        slot.assumed = None;
    } else if new_rv == 0 && stored_rv == 0 {
        slot.cached = new.clone();
    }
    slot.api = new;
}

impl VolumeIndex {
    /// An empty index.
    pub fn new() -> VolumeIndex {
        VolumeIndex::default()
    }

    // ---- informer events ----

    /// Add or update a PersistentVolume.
    pub fn upsert_pv(&mut self, pv: core::PersistentVolume) {
        let name = pv.metadata.name.clone().unwrap_or_default();
        let class = pv_class(&pv).to_string();
        let pv = Arc::new(pv);
        if let Some(slot) = self.pvs.get_mut(&name) {
            // The class index follows the assume view (`objInfoIndexFunc` indexes `latestObj`).
            let old_class = pv_class(slot.latest()).to_string();
            update(slot, pv, |p| resource_version(&p.metadata));
            let class = pv_class(slot.latest()).to_string();
            if old_class != class {
                self.unindex(&old_class, &name);
                self.pvs_by_class.entry(class).or_default().insert(name);
            }
        } else {
            self.pvs_by_class
                .entry(class)
                .or_default()
                .insert(name.clone());
            self.pvs.insert(name, Entry::new(pv));
        }
    }

    fn unindex(&mut self, class: &str, name: &str) {
        if let Some(set) = self.pvs_by_class.get_mut(class) {
            set.remove(name);
            if set.is_empty() {
                self.pvs_by_class.remove(class);
            }
        }
    }

    /// Remove a PersistentVolume. Returns false when it was not there.
    pub fn remove_pv(&mut self, name: &str) -> bool {
        match self.pvs.remove(name) {
            Some(e) => {
                let class = pv_class(e.latest()).to_string();
                self.unindex(&class, name);
                true
            }
            None => false,
        }
    }

    /// Add or update a PersistentVolumeClaim.
    pub fn upsert_pvc(&mut self, pvc: core::PersistentVolumeClaim) {
        let key = pvc_key(&pvc);
        let pvc = Arc::new(pvc);
        match self.pvcs.get_mut(&key) {
            Some(slot) => update(slot, pvc, |p| resource_version(&p.metadata)),
            None => {
                self.pvcs.insert(key, Entry::new(pvc));
            }
        }
    }

    /// Remove a PersistentVolumeClaim. Returns false when it was not there.
    pub fn remove_pvc(&mut self, namespace: &str, name: &str) -> bool {
        self.pvcs.remove(&claim_key(namespace, name)).is_some()
    }

    /// Add or update a StorageClass.
    pub fn upsert_storage_class(&mut self, sc: storage::StorageClass) {
        let name = sc.metadata.name.clone().unwrap_or_default();
        self.classes.insert(name, Arc::new(sc));
    }

    /// Remove a StorageClass. Returns false when it was not there.
    pub fn remove_storage_class(&mut self, name: &str) -> bool {
        self.classes.remove(name).is_some()
    }

    /// Add or update a CSINode (named after its node).
    pub fn upsert_csi_node(&mut self, n: storage::CSINode) {
        let name = n.metadata.name.clone().unwrap_or_default();
        self.csi_nodes.insert(name, Arc::new(n));
    }

    /// Remove a CSINode. Returns false when it was not there.
    pub fn remove_csi_node(&mut self, name: &str) -> bool {
        self.csi_nodes.remove(name).is_some()
    }

    // ---- reads ----

    /// The PersistentVolume `name` as the API server last showed it (lister view).
    pub fn pv(&self, name: &str) -> Option<&Arc<core::PersistentVolume>> {
        self.pvs.get(name).map(|e| &e.api)
    }

    /// The PersistentVolume `name` with this scheduler's assumption, if any (assume view).
    pub fn pv_latest(&self, name: &str) -> Option<&Arc<core::PersistentVolume>> {
        self.pvs.get(name).map(Entry::latest)
    }

    /// The claim `namespace/name` (lister view).
    pub fn pvc(&self, namespace: &str, name: &str) -> Option<&Arc<core::PersistentVolumeClaim>> {
        self.pvcs.get(&claim_key(namespace, name)).map(|e| &e.api)
    }

    /// The claim `namespace/name` with this scheduler's assumption, if any (assume view).
    pub fn pvc_latest(
        &self,
        namespace: &str,
        name: &str,
    ) -> Option<&Arc<core::PersistentVolumeClaim>> {
        self.pvcs
            .get(&claim_key(namespace, name))
            .map(Entry::latest)
    }

    /// The StorageClass `name`.
    pub fn storage_class(&self, name: &str) -> Option<&Arc<storage::StorageClass>> {
        self.classes.get(name)
    }

    /// The CSINode of node `name`.
    pub fn csi_node(&self, name: &str) -> Option<&Arc<storage::CSINode>> {
        self.csi_nodes.get(name)
    }

    /// The PersistentVolumes of a class, assume view, sorted by name (`pvCache.ListPVs`).
    pub fn pvs_latest_of_class<'a>(
        &'a self,
        class: &str,
    ) -> impl Iterator<Item = &'a Arc<core::PersistentVolume>> + 'a {
        self.pvs_by_class
            .get(class)
            .into_iter()
            .flatten()
            .filter_map(|n| self.pvs.get(n).map(Entry::latest))
    }

    /// Numbers of PVs, PVCs, StorageClasses and CSINodes.
    pub fn counts(&self) -> (usize, usize, usize, usize) {
        (
            self.pvs.len(),
            self.pvcs.len(),
            self.classes.len(),
            self.csi_nodes.len(),
        )
    }

    /// True when a pod's volume assumption is recorded (see [`VolumeIndex::assume_volumes`]).
    pub fn has_assumed_pod(&self, pod_key: &str) -> bool {
        self.pods.contains_key(pod_key)
    }

    // ---- the assume cache ----

    /// `pvCache.Assume`: lay `pv` over the stored PV of the same name.
    ///
    /// # Errors
    /// The PV is unknown, or older than the stored one.
    pub fn assume_pv(&mut self, pv: core::PersistentVolume) -> Result<(), String> {
        let name = pv.metadata.name.clone().unwrap_or_default();
        assume(&mut self.pvs, "PersistentVolume", &name, pv)
    }

    /// `pvcCache.Assume`: lay `pvc` over the stored claim of the same key.
    ///
    /// # Errors
    /// The claim is unknown, or older than the stored one.
    pub fn assume_pvc(&mut self, pvc: core::PersistentVolumeClaim) -> Result<(), String> {
        let key = pvc_key(&pvc);
        assume(&mut self.pvcs, "PersistentVolumeClaim", &key, pvc)
    }

    /// `pvCache.Restore`: drop the assumption on PV `name`.
    pub fn restore_pv(&mut self, name: &str) {
        if let Some(slot) = self.pvs.get_mut(name) {
            slot.assumed = None;
        }
    }

    /// `pvcCache.Restore`: drop the assumption on claim `namespace/name`.
    pub fn restore_pvc(&mut self, key: &str) {
        if let Some(slot) = self.pvcs.get_mut(key) {
            slot.assumed = None;
        }
    }

    /// Make the assumed version of PV `name` the API version (what the API server would hold
    /// once the write of [`crate::volume::binder`]'s PreBind succeeded). Used by `simulate`.
    fn commit_pv(&mut self, name: &str) {
        if let Some(slot) = self.pvs.get_mut(name)
            && let Some(a) = slot.assumed.take()
        {
            slot.api = a.clone();
            slot.cached = a;
        }
    }

    /// Make the assumed version of claim `key` the API version. Used by `simulate`.
    fn commit_pvc(&mut self, key: &str) {
        if let Some(slot) = self.pvcs.get_mut(key)
            && let Some(a) = slot.assumed.take()
        {
            slot.api = a.clone();
            slot.cached = a;
        }
    }

    // ---- pod volume assumptions (Reserve / Unreserve) ----

    /// The index's half of `AssumePodVolumes` (Reserve; the binder's
    /// [`crate::volume::assume_pod_volumes`] first checks whether the pod's claims are all bound
    /// already): lay the bindings and provisionings of `volumes` over the index — each chosen PV
    /// gets its claim as `claimRef`, each claim to provision gets
    /// `volume.kubernetes.io/selected-node: <node>` — so the next pods see them taken, and
    /// record them under `pod_key` (`namespace/name`) for [`VolumeIndex::revert_pod_volumes`].
    ///
    /// # Errors
    /// An object moved on since the cycle read it; nothing stays assumed.
    pub fn assume_volumes(
        &mut self,
        pod_key: String,
        node: &str,
        volumes: &PodVolumes,
    ) -> Result<AssumedPodVolumes, String> {
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
        self.pods.insert(pod_key, assumed.clone());
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

/// Object builders shaped like the helpers of upstream's volume tests (`makePV`, `makePVC`,
/// storage classes).
#[cfg(test)]
pub(crate) mod testutil {
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
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::testutil::*;
    use super::*;

    fn rv(mut pv: core::PersistentVolume, v: &str) -> core::PersistentVolume {
        pv.metadata.resource_version = Some(v.into());
        pv
    }

    /// The assume-cache rules of `assume_cache.go` (as its `TestAssumePV` and `TestRestorePV`
    /// exercise them; not a transcription): an assumption shows in the assume view only,
    /// survives an informer update that is not newer, and is dropped by a newer update or
    /// `Restore`; an older object cannot be assumed.
    #[test]
    fn assume_cache_versions() {
        let mut idx = VolumeIndex::new();
        idx.upsert_pv(rv(make_pv("pv1", "sc", "1Gi"), "5"));
        let bound = rv(with_claim_ref(make_pv("pv1", "sc", "1Gi"), "c"), "5");
        idx.assume_pv(bound).unwrap();
        assert!(
            idx.pv("pv1")
                .unwrap()
                .spec
                .as_ref()
                .unwrap()
                .claim_ref
                .is_none()
        );
        assert!(
            idx.pv_latest("pv1")
                .unwrap()
                .spec
                .as_ref()
                .unwrap()
                .claim_ref
                .is_some()
        );
        // A relist of the same version keeps the assumption.
        idx.upsert_pv(rv(make_pv("pv1", "sc", "1Gi"), "5"));
        assert!(
            idx.pv_latest("pv1")
                .unwrap()
                .spec
                .as_ref()
                .unwrap()
                .claim_ref
                .is_some()
        );
        // An older object is out of sync.
        let err = idx
            .assume_pv(rv(make_pv("pv1", "sc", "1Gi"), "4"))
            .unwrap_err();
        assert!(
            err.contains("is out of sync (stored: 5, assume: 4)"),
            "{err}"
        );
        // A newer informer update replaces the assumption.
        idx.upsert_pv(rv(make_pv("pv1", "sc", "1Gi"), "6"));
        assert!(
            idx.pv_latest("pv1")
                .unwrap()
                .spec
                .as_ref()
                .unwrap()
                .claim_ref
                .is_none()
        );
        idx.assume_pv(rv(with_claim_ref(make_pv("pv1", "sc", "1Gi"), "c"), "6"))
            .unwrap();
        idx.restore_pv("pv1");
        assert!(
            idx.pv_latest("pv1")
                .unwrap()
                .spec
                .as_ref()
                .unwrap()
                .claim_ref
                .is_none()
        );
        assert!(idx.assume_pv(make_pv("nope", "sc", "1Gi")).is_err());
    }

    fn claim_of(idx: &VolumeIndex, name: &str) -> Option<String> {
        idx.pv_latest(name)
            .unwrap()
            .spec
            .as_ref()
            .unwrap()
            .claim_ref
            .as_ref()
            .and_then(|r| r.name.clone())
    }

    /// `assumeCache.add` ignores an informer event that is not newer than the cached latest
    /// object (`TestAssumeUpdatePVCache`'s "Add old PV", and a stale relist served from the API
    /// server's watch cache): the assume view neither goes back in time nor, after `Restore`,
    /// falls back to the stale object; the lister view shows what was delivered. Before the
    /// fix the stale object became the assume cache's API object.
    #[test]
    fn stale_watch_events_do_not_move_the_assume_view_back() {
        let mut idx = VolumeIndex::new();
        // rv 7: bound to "taken" (e.g. by the PV controller); rv 6 (stale): still available.
        idx.upsert_pv(rv(
            with_claim_ref(make_pv("pv1", "sc", "1Gi"), "taken"),
            "7",
        ));
        idx.upsert_pv(rv(make_pv("pv1", "sc", "1Gi"), "6"));
        assert_eq!(claim_of(&idx, "pv1").as_deref(), Some("taken"));
        assert!(
            idx.pv("pv1")
                .unwrap()
                .spec
                .as_ref()
                .unwrap()
                .claim_ref
                .is_none(),
            "the lister shows what the watch delivered"
        );
        // An assumption over rv 7, a stale event, then Restore: back to rv 7, not rv 6.
        idx.upsert_pv(rv(with_claim_ref(make_pv("pv2", "sc", "1Gi"), "old"), "7"));
        idx.assume_pv(rv(with_claim_ref(make_pv("pv2", "sc", "1Gi"), "c"), "7"))
            .unwrap();
        idx.upsert_pv(rv(make_pv("pv2", "sc", "1Gi"), "5"));
        assert_eq!(claim_of(&idx, "pv2").as_deref(), Some("c"));
        idx.restore_pv("pv2");
        assert_eq!(claim_of(&idx, "pv2").as_deref(), Some("old"));
        // The class index follows the assume view too: a stale class change is ignored.
        idx.upsert_pv(rv(make_pv("pv2", "gold", "1Gi"), "6"));
        let names: Vec<_> = idx
            .pvs_latest_of_class("sc")
            .map(|p| p.metadata.name.clone().unwrap())
            .collect();
        assert_eq!(names, ["pv1", "pv2"]);
        // A newer event wins.
        idx.upsert_pv(rv(make_pv("pv2", "gold", "1Gi"), "8"));
        assert_eq!(claim_of(&idx, "pv2"), None);
        assert_eq!(idx.pvs_latest_of_class("gold").count(), 1);
        // Claims: same rule.
        let mut c = make_pvc("c", "", "sc", None);
        c.metadata.resource_version = Some("3".into());
        idx.upsert_pvc(c.clone());
        let mut bound = make_pvc("c", "pv1", "sc", None);
        bound.metadata.resource_version = Some("4".into());
        idx.upsert_pvc(bound);
        idx.upsert_pvc(c);
        assert_eq!(
            crate::volume::helpers::claim_volume_name(idx.pvc_latest("default", "c").unwrap()),
            "pv1"
        );
    }

    #[test]
    fn class_index_follows_updates_and_removals() {
        let mut idx = VolumeIndex::new();
        idx.upsert_pv(make_pv("b", "gold", "1Gi"));
        idx.upsert_pv(make_pv("a", "gold", "1Gi"));
        idx.upsert_pv(make_pv("c", "silver", "1Gi"));
        let names = |idx: &VolumeIndex, c: &str| -> Vec<String> {
            idx.pvs_latest_of_class(c)
                .map(|p| p.metadata.name.clone().unwrap())
                .collect()
        };
        assert_eq!(names(&idx, "gold"), ["a", "b"]);
        idx.upsert_pv(make_pv("a", "silver", "1Gi"));
        assert_eq!(names(&idx, "gold"), ["b"]);
        assert_eq!(names(&idx, "silver"), ["a", "c"]);
        assert!(idx.remove_pv("b"));
        assert!(names(&idx, "gold").is_empty());
        assert_eq!(idx.counts(), (2, 0, 0, 0));
    }
}
