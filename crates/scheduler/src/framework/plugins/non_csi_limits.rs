//! `EBSLimits`, `GCEPDLimits`, `AzureDiskLimits`, `CinderLimits` (legacy predicates
//! `MaxEBSVolumeCount`, `MaxGCEPDVolumeCount`, `MaxAzureDiskVolumeCount`,
//! `MaxCinderVolumeCount`): the number of distinct volumes of one in-tree type attached to a
//! node, counting the pod's, must stay within the node's limit.
//!
//! Follows kubernetes/kubernetes `pkg/scheduler/framework/plugins/nodevolumelimits/non_csi.go`
//! (v1.22; read from a later copy, commit 02850301e61b0491a6efad7fb440dfa1b03cfc96, whose
//! `filterVolumes`, `matchProvisioner`, `getMaxVolLimitFromEnv`, `getMaxVolumeFunc` and volume
//! filters have the v1.22 shape since kubernetes/kubernetes#100482) and `utils.go` (v1.22 copy,
//! index id 16615874243):
//! - a volume counts by its id: inline `awsElasticBlockStore.volumeID`,
//!   `gcePersistentDisk.pdName`, `azureDisk.diskName`, `cinder.volumeID`, or the same field of
//!   the PV a claim is bound to; the same id on several pods counts once;
//! - a claim that is unbound, or bound to a missing PV, counts (under a per-claim id) when its
//!   StorageClass's provisioner is this plugin's in-tree provisioner; an existing pod's missing
//!   claim does not count; the new pod's missing claim is an error (`looking up PVC ns/name:
//!   ...`), as is an empty claim name or a generic ephemeral claim the pod does not control;
//! - the limit is the node's allocatable `attachable-volumes-aws-ebs` / `-gce-pd` /
//!   `-azure-disk` / `-cinder` when present, else `KUBE_MAX_PD_VOLS` when it is a positive
//!   integer, else the default: EBS 39 (25 on instance types matching `^[cmr]5.*|t3|z1d`),
//!   GCE PD 16, Azure Disk 16, Cinder 256;
//! - when the node's CSINode shows the plugin migrated to CSI (and the v1.22 feature gates
//!   allow it: only Cinder by default, see [`crate::volume::csi`]), the filter passes and
//!   `NodeVolumeLimits` counts the volumes instead.
//!
//! `KUBE_MAX_PD_VOLS` is still read by v1.22; it is read once when the plugin is built
//! (upstream reads it on every Filter call). The pod's own volumes are resolved once in
//! PreFilter (Skip when none is of this type); a lookup error is returned by Filter as an
//! Error status, which aborts the attempt, as in v1.22.

use std::collections::HashSet;
use std::sync::Arc;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::storage::v1 as storage;

use crate::framework::{Code, CycleState, FilterPlugin, Status};
use crate::model::NodeInfo;
use crate::model::PodInfo;
use crate::model::{InlineVolume, VolumeRef};
use crate::snapshot::Snapshot;
use crate::volume::VolumeIndex;
use crate::volume::csi::{self, MigrationGates};
use crate::volume::helpers::{claim_volume_name, is_controlled_by};

/// `ErrReasonMaxVolumeCountExceeded`.
pub const ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED: &str = "node(s) exceed max volume count";
/// `KubeMaxPDVols`.
pub const KUBE_MAX_PD_VOLS: &str = "KUBE_MAX_PD_VOLS";
/// `DefaultMaxEBSVolumes`.
pub const DEFAULT_MAX_EBS_VOLUMES: i64 = 39;
/// `DefaultMaxEBSNitroVolumeLimit`.
pub const DEFAULT_MAX_EBS_NITRO_VOLUMES: i64 = 25;
/// `defaultMaxGCEPDVolumes`.
pub const DEFAULT_MAX_GCE_PD_VOLUMES: i64 = 16;
/// `defaultMaxAzureDiskVolumes`.
pub const DEFAULT_MAX_AZURE_DISK_VOLUMES: i64 = 16;
/// `DefaultMaxCinderVolumes`.
pub const DEFAULT_MAX_CINDER_VOLUMES: i64 = 256;

/// Which in-tree volume type a plugin counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VolumeType {
    /// AWS EBS (`EBSLimits`).
    Ebs,
    /// GCE PD (`GCEPDLimits`).
    GcePd,
    /// Azure Disk (`AzureDiskLimits`).
    AzureDisk,
    /// OpenStack Cinder (`CinderLimits`).
    Cinder,
}

impl VolumeType {
    /// The framework plugin name.
    pub fn plugin_name(self) -> &'static str {
        match self {
            VolumeType::Ebs => "EBSLimits",
            VolumeType::GcePd => "GCEPDLimits",
            VolumeType::AzureDisk => "AzureDiskLimits",
            VolumeType::Cinder => "CinderLimits",
        }
    }

    /// The node allocatable key of the limit (`volumeLimitKey`).
    pub fn limit_key(self) -> &'static str {
        match self {
            VolumeType::Ebs => "attachable-volumes-aws-ebs",
            VolumeType::GcePd => "attachable-volumes-gce-pd",
            VolumeType::AzureDisk => "attachable-volumes-azure-disk",
            VolumeType::Cinder => "attachable-volumes-cinder",
        }
    }

    /// The in-tree plugin (and provisioner) name.
    pub fn in_tree_plugin(self) -> &'static str {
        match self {
            VolumeType::Ebs => csi::AWS_EBS_IN_TREE,
            VolumeType::GcePd => csi::GCE_PD_IN_TREE,
            VolumeType::AzureDisk => csi::AZURE_DISK_IN_TREE,
            VolumeType::Cinder => csi::CINDER_IN_TREE,
        }
    }

    /// `FilterVolume`: the id of an inline volume of this type.
    fn inline_id(self, v: &InlineVolume) -> Option<&str> {
        match (self, v) {
            (VolumeType::Ebs, InlineVolume::AwsEbs(id))
            | (VolumeType::GcePd, InlineVolume::GcePd(id))
            | (VolumeType::AzureDisk, InlineVolume::AzureDisk(id))
            | (VolumeType::Cinder, InlineVolume::Cinder(id)) => Some(id),
            _ => None,
        }
    }

    /// `FilterPersistentVolume`: the id of a PV of this type.
    fn pv_id(self, pv: &core::PersistentVolume) -> Option<String> {
        let s = pv.spec.as_ref()?;
        match self {
            VolumeType::Ebs => s
                .aws_elastic_block_store
                .as_ref()
                .map(|v| v.volume_id.clone()),
            VolumeType::GcePd => s.gce_persistent_disk.as_ref().map(|v| v.pd_name.clone()),
            VolumeType::AzureDisk => s.azure_disk.as_ref().map(|v| v.disk_name.clone()),
            VolumeType::Cinder => s.cinder.as_ref().map(|v| v.volume_id.clone()),
        }
    }

    /// The default limit for a node (`getMaxVolumeFunc` without the environment variable).
    fn default_limit(self, node: &NodeInfo) -> i64 {
        match self {
            VolumeType::Ebs => {
                let instance_type = node
                    .labels
                    .get("node.kubernetes.io/instance-type")
                    .or_else(|| node.labels.get("beta.kubernetes.io/instance-type"))
                    .map_or("", String::as_str);
                if is_ebs_nitro(instance_type) {
                    DEFAULT_MAX_EBS_NITRO_VOLUMES
                } else {
                    DEFAULT_MAX_EBS_VOLUMES
                }
            }
            VolumeType::GcePd => DEFAULT_MAX_GCE_PD_VOLUMES,
            VolumeType::AzureDisk => DEFAULT_MAX_AZURE_DISK_VOLUMES,
            VolumeType::Cinder => DEFAULT_MAX_CINDER_VOLUMES,
        }
    }
}

/// `regexp.MatchString("^[cmr]5.*|t3|z1d", instanceType)`: starts with `c5`, `m5` or `r5`, or
/// contains `t3` or `z1d` anywhere.
pub fn is_ebs_nitro(instance_type: &str) -> bool {
    let b = instance_type.as_bytes();
    (b.len() >= 2 && matches!(b[0], b'c' | b'm' | b'r') && b[1] == b'5')
        || instance_type.contains("t3")
        || instance_type.contains("z1d")
}

/// `getMaxVolLimitFromEnv` over the variable's value: a positive integer, else -1 (upstream
/// logs the parse failure and uses the default).
pub fn max_vols_from_env(raw: Option<&str>) -> i64 {
    match raw.filter(|r| !r.is_empty()).map(str::parse::<i64>) {
        Some(Ok(n)) if n > 0 => n,
        _ => -1,
    }
}

/// The node's `attachable-volumes-*` allocatable limits (`volumeLimits`).
pub(crate) fn node_volume_limit(node: &NodeInfo, key: &str) -> Option<i64> {
    node.allocatable
        .scalar
        .iter()
        .find(|(n, _)| n == key)
        .map(|(_, v)| *v)
}

/// One of the four non-CSI limits plugins.
#[derive(Debug, Clone)]
pub struct NonCsiLimits {
    volume_type: VolumeType,
    /// `KUBE_MAX_PD_VOLS` as read at construction (-1 when unset or invalid).
    max_from_env: i64,
    gates: MigrationGates,
    /// Prefix of the ids of claims not resolved to a PV (`randomVolumeIDPrefix`).
    random_prefix: String,
}

impl NonCsiLimits {
    /// The plugin for `volume_type`, with `KUBE_MAX_PD_VOLS` read from the environment now and
    /// v1.22's default migration gates.
    pub fn new(volume_type: VolumeType) -> NonCsiLimits {
        let env = std::env::var(KUBE_MAX_PD_VOLS).ok();
        NonCsiLimits::with(
            volume_type,
            max_vols_from_env(env.as_deref()),
            MigrationGates::default(),
        )
    }

    /// The plugin with an explicit `KUBE_MAX_PD_VOLS` value (-1 for none) and gates.
    pub fn with(volume_type: VolumeType, max_from_env: i64, gates: MigrationGates) -> NonCsiLimits {
        use rand::RngExt;
        let mut rng = rand::rng();
        let random_prefix = (0..32)
            .map(|_| char::from(b'a' + rng.random_range(0..26u8)))
            .collect();
        NonCsiLimits {
            volume_type,
            max_from_env,
            gates,
            random_prefix,
        }
    }

    /// `matchProvisioner`: the claim's `spec.storageClassName` names a class whose provisioner
    /// is this plugin's.
    fn match_provisioner(&self, idx: &VolumeIndex, pvc: &core::PersistentVolumeClaim) -> bool {
        let Some(class) = pvc
            .spec
            .as_ref()
            .and_then(|s| s.storage_class_name.as_deref())
        else {
            return false;
        };
        idx.storage_class(class)
            .is_some_and(|sc| sc.provisioner == self.volume_type.in_tree_plugin())
    }

    /// `filterVolumes`: add the ids of `pod`'s volumes of this type to `out`.
    fn filter_volumes(
        &self,
        idx: &VolumeIndex,
        pod: &PodInfo,
        new_pod: bool,
        out: &mut HashSet<String>,
    ) -> Result<(), String> {
        for r in &pod.volumes.refs {
            let (claim, ephemeral) = match r {
                VolumeRef::Inline(v) => {
                    if let Some(id) = self.volume_type.inline_id(v) {
                        out.insert(id.to_string());
                    }
                    continue;
                }
                VolumeRef::Claim {
                    claim, ephemeral, ..
                } => (claim.as_str(), *ephemeral),
            };
            if claim.is_empty() {
                return Err("PersistentVolumeClaim had no name".into());
            }
            let pv_id = format!("{}-{}/{claim}", self.random_prefix, pod.namespace);
            let Some(pvc) = idx.pvc(&pod.namespace, claim) else {
                if new_pod {
                    return Err(format!(
                        "looking up PVC {}/{claim}: persistentvolumeclaim {claim:?} not found",
                        pod.namespace
                    ));
                }
                continue;
            };
            if ephemeral && !is_controlled_by(&pvc.metadata, &pod.uid) {
                return Err(format!("PVC {}/{claim} is not owned by pod", pod.namespace));
            }
            let pv_name = claim_volume_name(pvc);
            if pv_name.is_empty() {
                if self.match_provisioner(idx, pvc) {
                    out.insert(pv_id);
                }
                continue;
            }
            match idx.pv(pv_name) {
                None => {
                    if self.match_provisioner(idx, pvc) {
                        out.insert(pv_id);
                    }
                }
                Some(pv) => {
                    if let Some(id) = self.volume_type.pv_id(pv) {
                        out.insert(id);
                    }
                }
            }
        }
        Ok(())
    }

    /// `IsMigrated`: the node's CSINode shows the plugin migrated and the gates allow it.
    fn is_migrated(&self, csi_node: Option<&storage::CSINode>) -> bool {
        csi::is_csi_migration_on(csi_node, self.volume_type.in_tree_plugin(), self.gates)
    }
}

/// PreFilter state: the new pod's volume ids and the index to resolve existing pods' volumes.
struct State {
    new_volumes: Result<HashSet<String>, String>,
    index: Arc<VolumeIndex>,
}

impl FilterPlugin for NonCsiLimits {
    fn name(&self) -> &'static str {
        self.volume_type.plugin_name()
    }

    fn pre_filter(&self, state: &mut CycleState, pod: &PodInfo, snapshot: &Snapshot) -> Status {
        let relevant = pod.volumes.refs.iter().any(|r| match r {
            VolumeRef::Claim { .. } => true,
            VolumeRef::Inline(v) => self.volume_type.inline_id(v).is_some(),
        });
        if !relevant {
            return Status::skip();
        }
        let index = snapshot.volumes().clone();
        let mut set = HashSet::new();
        // An error is reported by Filter, as upstream does: another plugin's PreFilter may
        // reject the pod first.
        let new_volumes = match self.filter_volumes(&index, pod, true, &mut set) {
            Ok(()) if set.is_empty() => return Status::skip(),
            Ok(()) => Ok(set),
            Err(e) => Err(e),
        };
        state.write(self.name(), State { new_volumes, index });
        Status::success()
    }

    fn filter(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(s) = state.read::<State>(self.name()) else {
            return Status::error(format!("{}: no PreFilter state", self.name()));
        };
        let new_volumes = match &s.new_volumes {
            Ok(v) => v,
            Err(e) => return Status::error(e.clone()),
        };
        let csi_node = s.index.csi_node(&node.name).map(Arc::as_ref);
        if self.is_migrated(csi_node) {
            return Status::success();
        }
        let mut existing = HashSet::new();
        for p in &node.pods {
            if p.volumes.is_empty() {
                continue;
            }
            if let Err(e) = self.filter_volumes(&s.index, p, false, &mut existing) {
                return Status::error(e);
            }
        }
        let new_count = new_volumes
            .iter()
            .filter(|v| !existing.contains(*v))
            .count();
        let mut limit = if self.max_from_env > 0 {
            self.max_from_env
        } else {
            self.volume_type.default_limit(node)
        };
        if let Some(l) = node_volume_limit(node, self.volume_type.limit_key()) {
            limit = l;
        }
        if (existing.len() + new_count) as i64 > limit {
            return Status::new(Code::Unschedulable, ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED);
        }
        Status::success()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

    use super::*;
    use crate::framework::plugins::testutil::{PodB, filter_via_batch, node, outcome, pod, want};
    use crate::volume::testutil::make_sc;

    fn ebs(id: &str) -> core::Volume {
        core::Volume {
            name: format!("v-{id}"),
            aws_elastic_block_store: Some(core::AWSElasticBlockStoreVolumeSource {
                volume_id: id.into(),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn host_path() -> core::Volume {
        core::Volume {
            name: "hp".into(),
            host_path: Some(Default::default()),
            ..Default::default()
        }
    }

    fn claim(name: &str) -> core::Volume {
        core::Volume {
            name: format!("v-{name}"),
            persistent_volume_claim: Some(core::PersistentVolumeClaimVolumeSource {
                claim_name: name.into(),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn one_vol_pod() -> PodB {
        pod("one").volume(ebs("ovp"))
    }
    fn two_vol_pod() -> PodB {
        pod("two").volume(ebs("tvp1")).volume(ebs("tvp2"))
    }
    fn split_vols_pod() -> PodB {
        pod("split").volume(host_path()).volume(ebs("svp"))
    }
    fn non_applicable_pod() -> PodB {
        pod("na").volume(host_path())
    }
    fn empty_pod() -> PodB {
        pod("empty")
    }
    fn deleted_pvc_pod() -> PodB {
        pod("dpvc").volume(claim("deletedPVC"))
    }
    fn two_deleted_pvc_pod() -> PodB {
        pod("tdpvc")
            .volume(claim("deletedPVC"))
            .volume(claim("anotherDeletedPVC"))
    }
    fn deleted_pv_pod() -> PodB {
        pod("dpv").volume(claim("pvcWithDeletedPV"))
    }
    fn deleted_pv_pod2() -> PodB {
        pod("dpv2").volume(claim("pvcWithDeletedPV"))
    }
    fn another_deleted_pv_pod() -> PodB {
        pod("adpv").volume(claim("anotherPVCWithDeletedPV"))
    }
    fn unbound_pvc_pod() -> PodB {
        pod("upvc").volume(claim("unboundPVC"))
    }
    fn unbound_pvc_pod2() -> PodB {
        pod("upvc2").volume(claim("unboundPVC"))
    }
    fn another_unbound_pvc_pod() -> PodB {
        pod("aupvc").volume(claim("anotherUnboundPVC"))
    }
    /// `onePVCPod(filterName)`.
    fn one_pvc_pod(filter: &str) -> PodB {
        pod("onepvc").volume(claim(&format!("some{filter}Vol")))
    }
    /// `splitPVCPod(filterName)`.
    fn split_pvc_pod(filter: &str) -> PodB {
        pod("splitpvc")
            .volume(claim(&format!("someNon{filter}Vol")))
            .volume(claim(&format!("some{filter}Vol")))
    }

    fn filter_name(t: VolumeType) -> &'static str {
        match t {
            VolumeType::Ebs => "EBS",
            VolumeType::GcePd => "GCE",
            VolumeType::AzureDisk => "AzureDisk",
            VolumeType::Cinder => "Cinder",
        }
    }

    /// `getFakePVCLister(filterName)` + `getFakePVLister(filterName)` +
    /// `getFakeCSIStorageClassLister(filterName, driverName)`: note the fake PVs of every filter
    /// have an **EBS** source, as upstream's.
    fn fake_index(snap: &mut Snapshot, filter: &str, driver: &str) {
        let idx = snap.volumes_mut();
        let pvc = |name: &str, volume: &str, class: &str| core::PersistentVolumeClaim {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("default".into()),
                ..Default::default()
            },
            spec: Some(core::PersistentVolumeClaimSpec {
                volume_name: (!volume.is_empty()).then(|| volume.to_string()),
                storage_class_name: Some(class.into()),
                ..Default::default()
            }),
            status: None,
        };
        let some = format!("some{filter}Vol");
        let some_non = format!("someNon{filter}Vol");
        for c in [
            pvc(&some, &some, filter),
            pvc(&some_non, &some_non, filter),
            pvc("pvcWithDeletedPV", "pvcWithDeletedPV", filter),
            pvc("anotherPVCWithDeletedPV", "anotherPVCWithDeletedPV", filter),
            pvc("unboundPVC", "", filter),
            pvc("anotherUnboundPVC", "", filter),
            pvc("unboundPVCWithDefaultSCPod", "", "standard-sc"),
            pvc("unboundPVCWithInvalidSCPod", "", "invalid-sc"),
        ] {
            idx.upsert_pvc(c);
        }
        idx.upsert_pv(core::PersistentVolume {
            metadata: ObjectMeta {
                name: Some(some.clone()),
                ..Default::default()
            },
            spec: Some(core::PersistentVolumeSpec {
                aws_elastic_block_store: Some(core::AWSElasticBlockStoreVolumeSource {
                    volume_id: format!("{}Vol", filter.to_lowercase()),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            status: None,
        });
        idx.upsert_pv(core::PersistentVolume {
            metadata: ObjectMeta {
                name: Some(some_non),
                ..Default::default()
            },
            spec: Some(Default::default()),
            status: None,
        });
        idx.upsert_storage_class(make_sc(filter, None, driver));
    }

    struct Case {
        new_pod: PodB,
        existing: Vec<PodB>,
        max_vols: i64,
        test: &'static str,
        want: (Code, Vec<String>),
    }

    fn case(
        new_pod: PodB,
        existing: Vec<PodB>,
        max_vols: i64,
        test: &'static str,
        fits: bool,
    ) -> Case {
        Case {
            new_pod,
            existing,
            max_vols,
            test,
            want: if fits {
                want(Code::Success, &[])
            } else {
                want(Code::Unschedulable, &[ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED])
            },
        }
    }

    /// The harness of upstream's tables: a node with allocatable `<limit key>: maxVols`
    /// (`getNodeWithPodAndVolumeLimits("node", ...)`) holding the existing pods, no CSINode.
    fn run(t: VolumeType, driver: &str, extra: &[core::PersistentVolumeClaim], cases: Vec<Case>) {
        let filter = filter_name(t);
        for c in cases {
            let max = c.max_vols.to_string();
            let n = node("node-for-max-pd-test-1").allocatable(&[(t.limit_key(), max.as_str())]);
            let existing: Vec<PodB> = c
                .existing
                .into_iter()
                .enumerate()
                .map(|(i, p)| {
                    let mut p = p.node("node-for-max-pd-test-1");
                    p.0.metadata.name = Some(format!("existing-{i}"));
                    p
                })
                .collect();
            let ni = n.info_with(&existing);
            let mut snap = Snapshot::new();
            snap.add_node(ni.clone()).unwrap();
            fake_index(&mut snap, filter, driver);
            for e in extra {
                snap.volumes_mut().upsert_pvc(e.clone());
            }
            let plugin = NonCsiLimits::with(t, -1, MigrationGates::default());
            let p = c.new_pod.info();
            let mut state = CycleState::new();
            let pre = plugin.pre_filter(&mut state, &p, &snap);
            let got = if pre.is_skip() {
                Status::success()
            } else if !pre.is_success() {
                pre
            } else {
                let s = plugin.filter(&state, &p, &ni);
                let batch = filter_via_batch(&plugin, &state, &p, &ni);
                assert_eq!(outcome(&batch), outcome(&s), "{}: filter_nodes", c.test);
                s
            };
            assert_eq!(outcome(&got), c.want, "{} (maxVols {})", c.test, c.max_vols);
        }
    }

    /// Upstream `non_csi_test.go` `TestAzureDiskLimits` (read from a later copy, commit
    /// 010f7c047f1390182e56237f8e30583ed5f2c7fc; the cases are v1.22's). The pods' volumes are
    /// EBS and the fake PVs too, so nothing counts as Azure Disk: every case fits.
    #[test]
    fn test_azure_disk_limits() {
        let f = "AzureDisk";
        let cases = vec![
            case(
                one_vol_pod(),
                vec![two_vol_pod(), one_vol_pod()],
                4,
                "fits when node capacity >= new pod's AzureDisk volumes",
                true,
            ),
            case(
                two_vol_pod(),
                vec![one_vol_pod()],
                2,
                "fit when node capacity < new pod's AzureDisk volumes",
                true,
            ),
            case(
                split_vols_pod(),
                vec![two_vol_pod()],
                3,
                "new pod's count ignores non-AzureDisk volumes",
                true,
            ),
            case(
                two_vol_pod(),
                vec![split_vols_pod(), non_applicable_pod(), empty_pod()],
                3,
                "existing pods' counts ignore non-AzureDisk volumes",
                true,
            ),
            case(
                one_pvc_pod(f),
                vec![split_vols_pod(), non_applicable_pod(), empty_pod()],
                3,
                "new pod's count considers PVCs backed by AzureDisk volumes",
                true,
            ),
            case(
                split_pvc_pod(f),
                vec![split_vols_pod(), one_vol_pod()],
                3,
                "new pod's count ignores PVCs not backed by AzureDisk volumes",
                true,
            ),
            case(
                two_vol_pod(),
                vec![one_vol_pod(), one_pvc_pod(f)],
                3,
                "existing pods' counts considers PVCs backed by AzureDisk volumes",
                true,
            ),
            case(
                two_vol_pod(),
                vec![one_vol_pod(), two_vol_pod(), one_pvc_pod(f)],
                4,
                "already-mounted AzureDisk volumes are always ok to allow",
                true,
            ),
            case(
                split_vols_pod(),
                vec![one_vol_pod(), one_vol_pod(), one_pvc_pod(f)],
                3,
                "the same AzureDisk volumes are not counted multiple times",
                true,
            ),
            case(
                one_pvc_pod(f),
                vec![one_vol_pod(), deleted_pvc_pod()],
                2,
                "pod with missing PVC is counted towards the PV limit",
                true,
            ),
            case(
                one_pvc_pod(f),
                vec![one_vol_pod(), deleted_pvc_pod()],
                3,
                "pod with missing PVC is counted towards the PV limit",
                true,
            ),
            case(
                one_pvc_pod(f),
                vec![one_vol_pod(), two_deleted_pvc_pod()],
                3,
                "pod with missing two PVCs is counted towards the PV limit twice",
                true,
            ),
            case(
                one_pvc_pod(f),
                vec![one_vol_pod(), deleted_pv_pod()],
                2,
                "pod with missing PV is counted towards the PV limit",
                true,
            ),
            case(
                one_pvc_pod(f),
                vec![one_vol_pod(), deleted_pv_pod()],
                3,
                "pod with missing PV is counted towards the PV limit",
                true,
            ),
            case(
                deleted_pv_pod2(),
                vec![one_vol_pod(), deleted_pv_pod()],
                2,
                "two pods missing the same PV are counted towards the PV limit only once",
                true,
            ),
            case(
                another_deleted_pv_pod(),
                vec![one_vol_pod(), deleted_pv_pod()],
                2,
                "two pods missing different PVs are counted towards the PV limit twice",
                true,
            ),
            case(
                one_pvc_pod(f),
                vec![one_vol_pod(), unbound_pvc_pod()],
                2,
                "pod with unbound PVC is counted towards the PV limit",
                true,
            ),
            case(
                one_pvc_pod(f),
                vec![one_vol_pod(), unbound_pvc_pod()],
                3,
                "pod with unbound PVC is counted towards the PV limit",
                true,
            ),
            case(
                unbound_pvc_pod2(),
                vec![one_vol_pod(), unbound_pvc_pod()],
                2,
                "the same unbound PVC in multiple pods is counted towards the PV limit only once",
                true,
            ),
            case(
                another_unbound_pvc_pod(),
                vec![one_vol_pod(), unbound_pvc_pod()],
                2,
                "two different unbound PVCs are counted towards the PV limit as two volumes",
                true,
            ),
        ];
        run(VolumeType::AzureDisk, "", &[], cases);
    }

    /// Upstream `non_csi_test.go` `TestEBSLimits` (commit 010f7c04…, v1.22 cases); the class
    /// `EBS` provisions with `kubernetes.io/aws-ebs`.
    #[test]
    fn test_ebs_limits() {
        let f = "EBS";
        let invalid_sc = || pod("invsc").volume(claim("unboundPVCWithInvalidSCPod"));
        let default_sc = || pod("defsc").volume(claim("unboundPVCWithDefaultSCPod"));
        let cases = vec![
            case(
                one_vol_pod(),
                vec![two_vol_pod(), one_vol_pod()],
                4,
                "fits when node capacity >= new pod's EBS volumes",
                true,
            ),
            case(
                two_vol_pod(),
                vec![one_vol_pod()],
                2,
                "doesn't fit when node capacity < new pod's EBS volumes",
                false,
            ),
            case(
                split_vols_pod(),
                vec![two_vol_pod()],
                3,
                "new pod's count ignores non-EBS volumes",
                true,
            ),
            case(
                two_vol_pod(),
                vec![split_vols_pod(), non_applicable_pod(), empty_pod()],
                3,
                "existing pods' counts ignore non-EBS volumes",
                true,
            ),
            case(
                one_pvc_pod(f),
                vec![split_vols_pod(), non_applicable_pod(), empty_pod()],
                3,
                "new pod's count considers PVCs backed by EBS volumes",
                true,
            ),
            case(
                split_pvc_pod(f),
                vec![split_vols_pod(), one_vol_pod()],
                3,
                "new pod's count ignores PVCs not backed by EBS volumes",
                true,
            ),
            case(
                two_vol_pod(),
                vec![one_vol_pod(), one_pvc_pod(f)],
                3,
                "existing pods' counts considers PVCs backed by EBS volumes",
                false,
            ),
            case(
                two_vol_pod(),
                vec![one_vol_pod(), two_vol_pod(), one_pvc_pod(f)],
                4,
                "already-mounted EBS volumes are always ok to allow",
                true,
            ),
            case(
                split_vols_pod(),
                vec![one_vol_pod(), one_vol_pod(), one_pvc_pod(f)],
                3,
                "the same EBS volumes are not counted multiple times",
                true,
            ),
            case(
                one_pvc_pod(f),
                vec![one_vol_pod(), deleted_pvc_pod()],
                1,
                "missing PVC is not counted towards the PV limit",
                false,
            ),
            case(
                one_pvc_pod(f),
                vec![one_vol_pod(), deleted_pvc_pod()],
                2,
                "missing PVC is not counted towards the PV limit",
                true,
            ),
            case(
                one_pvc_pod(f),
                vec![one_vol_pod(), two_deleted_pvc_pod()],
                2,
                "two missing PVCs are not counted towards the PV limit twice",
                true,
            ),
            case(
                invalid_sc(),
                vec![one_vol_pod()],
                1,
                "unbound PVC with invalid SC is not counted towards the PV limit",
                true,
            ),
            case(
                default_sc(),
                vec![one_vol_pod()],
                1,
                "unbound PVC from different provisioner is not counted towards the PV limit",
                true,
            ),
            case(
                one_pvc_pod(f),
                vec![one_vol_pod(), deleted_pv_pod()],
                2,
                "pod with missing PV is counted towards the PV limit",
                false,
            ),
            case(
                one_pvc_pod(f),
                vec![one_vol_pod(), deleted_pv_pod()],
                3,
                "pod with missing PV is counted towards the PV limit",
                true,
            ),
            case(
                deleted_pv_pod2(),
                vec![one_vol_pod(), deleted_pv_pod()],
                2,
                "two pods missing the same PV are counted towards the PV limit only once",
                true,
            ),
            case(
                another_deleted_pv_pod(),
                vec![one_vol_pod(), deleted_pv_pod()],
                2,
                "two pods missing different PVs are counted towards the PV limit twice",
                false,
            ),
            case(
                one_pvc_pod(f),
                vec![one_vol_pod(), unbound_pvc_pod()],
                2,
                "pod with unbound PVC is counted towards the PV limit",
                false,
            ),
            case(
                one_pvc_pod(f),
                vec![one_vol_pod(), unbound_pvc_pod()],
                3,
                "pod with unbound PVC is counted towards the PV limit",
                true,
            ),
            case(
                unbound_pvc_pod2(),
                vec![one_vol_pod(), unbound_pvc_pod()],
                2,
                "the same unbound PVC in multiple pods is counted towards the PV limit only once",
                true,
            ),
            case(
                another_unbound_pvc_pod(),
                vec![one_vol_pod(), unbound_pvc_pod()],
                2,
                "two different unbound PVCs are counted towards the PV limit as two volumes",
                false,
            ),
        ];
        run(VolumeType::Ebs, csi::AWS_EBS_IN_TREE, &[], cases);
    }

    /// Upstream `non_csi_test.go` `TestGCEPDLimits` (commit 010f7c04…, v1.22 cases): as for
    /// Azure Disk, nothing is a GCE PD, so every case fits.
    #[test]
    fn test_gce_pd_limits() {
        let f = "GCE";
        let cases = vec![
            case(
                one_vol_pod(),
                vec![two_vol_pod(), one_vol_pod()],
                4,
                "fits when node capacity >= new pod's GCE volumes",
                true,
            ),
            case(
                two_vol_pod(),
                vec![one_vol_pod()],
                2,
                "fit when node capacity < new pod's GCE volumes",
                true,
            ),
            case(
                split_vols_pod(),
                vec![two_vol_pod()],
                3,
                "new pod's count ignores non-GCE volumes",
                true,
            ),
            case(
                two_vol_pod(),
                vec![split_vols_pod(), non_applicable_pod(), empty_pod()],
                3,
                "existing pods' counts ignore non-GCE volumes",
                true,
            ),
            case(
                one_pvc_pod(f),
                vec![split_vols_pod(), non_applicable_pod(), empty_pod()],
                3,
                "new pod's count considers PVCs backed by GCE volumes",
                true,
            ),
            case(
                split_pvc_pod(f),
                vec![split_vols_pod(), one_vol_pod()],
                3,
                "new pod's count ignores PVCs not backed by GCE volumes",
                true,
            ),
            case(
                two_vol_pod(),
                vec![one_vol_pod(), one_pvc_pod(f)],
                3,
                "existing pods' counts considers PVCs backed by GCE volumes",
                true,
            ),
            case(
                two_vol_pod(),
                vec![one_vol_pod(), two_vol_pod(), one_pvc_pod(f)],
                4,
                "already-mounted EBS volumes are always ok to allow",
                true,
            ),
            case(
                split_vols_pod(),
                vec![one_vol_pod(), one_vol_pod(), one_pvc_pod(f)],
                3,
                "the same GCE volumes are not counted multiple times",
                true,
            ),
            case(
                one_pvc_pod(f),
                vec![one_vol_pod(), deleted_pvc_pod()],
                2,
                "pod with missing PVC is counted towards the PV limit",
                true,
            ),
            case(
                one_pvc_pod(f),
                vec![one_vol_pod(), deleted_pvc_pod()],
                3,
                "pod with missing PVC is counted towards the PV limit",
                true,
            ),
            case(
                one_pvc_pod(f),
                vec![one_vol_pod(), two_deleted_pvc_pod()],
                3,
                "pod with missing two PVCs is counted towards the PV limit twice",
                true,
            ),
            case(
                one_pvc_pod(f),
                vec![one_vol_pod(), deleted_pv_pod()],
                2,
                "pod with missing PV is counted towards the PV limit",
                true,
            ),
            case(
                one_pvc_pod(f),
                vec![one_vol_pod(), deleted_pv_pod()],
                3,
                "pod with missing PV is counted towards the PV limit",
                true,
            ),
            case(
                deleted_pv_pod2(),
                vec![one_vol_pod(), deleted_pv_pod()],
                2,
                "two pods missing the same PV are counted towards the PV limit only once",
                true,
            ),
            case(
                another_deleted_pv_pod(),
                vec![one_vol_pod(), deleted_pv_pod()],
                2,
                "two pods missing different PVs are counted towards the PV limit twice",
                true,
            ),
            case(
                one_pvc_pod(f),
                vec![one_vol_pod(), unbound_pvc_pod()],
                2,
                "pod with unbound PVC is counted towards the PV limit",
                true,
            ),
            case(
                one_pvc_pod(f),
                vec![one_vol_pod(), unbound_pvc_pod()],
                3,
                "pod with unbound PVC is counted towards the PV limit",
                true,
            ),
            case(
                unbound_pvc_pod2(),
                vec![one_vol_pod(), unbound_pvc_pod()],
                2,
                "the same unbound PVC in multiple pods is counted towards the PV limit only once",
                true,
            ),
            case(
                another_unbound_pvc_pod(),
                vec![one_vol_pod(), unbound_pvc_pod()],
                2,
                "two different unbound PVCs are counted towards the PV limit as two volumes",
                true,
            ),
        ];
        run(VolumeType::GcePd, "", &[], cases);
    }

    /// Upstream `non_csi_test.go` `TestEphemeralLimits` (commit 010f7c04…), the cases with the
    /// GenericEphemeralVolume gate on (v1.22's default). v1.22 wording: the not-owned message
    /// is `PVC test/abc-xyz is not owned by pod` (later `... was not created for pod ...`).
    #[test]
    fn test_ephemeral_limits() {
        let ephemeral_pod = || {
            let mut p = pod("abc").namespace("test").volume(core::Volume {
                name: "xyz".into(),
                ephemeral: Some(Default::default()),
                ..Default::default()
            });
            p.0.metadata.uid = Some("12345".into());
            p
        };
        let claim_for_pod = |owned: bool| core::PersistentVolumeClaim {
            metadata: ObjectMeta {
                name: Some("abc-xyz".into()),
                namespace: Some("test".into()),
                owner_references: owned.then(|| {
                    vec![OwnerReference {
                        kind: "Pod".into(),
                        name: "abc".into(),
                        uid: "12345".into(),
                        controller: Some(true),
                        ..Default::default()
                    }]
                }),
                ..Default::default()
            },
            spec: Some(core::PersistentVolumeClaimSpec {
                volume_name: Some("missing".into()),
                storage_class_name: Some("GCE".into()),
                ..Default::default()
            }),
            status: None,
        };
        let error = |m: &str| want(Code::Error, &[m]);
        let missing = vec![Case {
            new_pod: ephemeral_pod(),
            existing: vec![],
            max_vols: 0,
            test: "volume missing",
            want: error("looking up PVC test/abc-xyz: persistentvolumeclaim \"abc-xyz\" not found"),
        }];
        run(VolumeType::GcePd, csi::GCE_PD_IN_TREE, &[], missing);
        run(
            VolumeType::GcePd,
            csi::GCE_PD_IN_TREE,
            &[claim_for_pod(false)],
            vec![Case {
                new_pod: ephemeral_pod(),
                existing: vec![],
                max_vols: 0,
                test: "volume not owned",
                want: error("PVC test/abc-xyz is not owned by pod"),
            }],
        );
        run(
            VolumeType::GcePd,
            csi::GCE_PD_IN_TREE,
            &[claim_for_pod(true)],
            vec![
                case(ephemeral_pod(), vec![], 1, "volume unbound, allowed", true),
                case(
                    ephemeral_pod(),
                    vec![],
                    0,
                    "volume unbound, exceeds limit",
                    false,
                ),
            ],
        );
    }

    /// Upstream `non_csi_test.go` `TestGetMaxVols`.
    #[test]
    fn test_get_max_vols() {
        for (raw, expected, name) in [
            (
                "invalid",
                -1,
                "Unable to parse maximum PD volumes value, using default value",
            ),
            (
                "-2",
                -1,
                "Maximum PD volumes must be a positive value, using default value",
            ),
            ("40", 40, "Parse maximum PD volumes value from env"),
        ] {
            assert_eq!(max_vols_from_env(Some(raw)), expected, "{name}");
        }
        assert_eq!(max_vols_from_env(None), -1);
    }

    /// Not an upstream table: the default limits (instance-type dependent for EBS), the
    /// environment override, the allocatable override, and Cinder deferring to NodeVolumeLimits
    /// on a node whose CSINode lists `kubernetes.io/cinder` as migrated (v1.22 gates).
    #[test]
    fn limits_and_migration() {
        assert!(is_ebs_nitro("m5.large") && is_ebs_nitro("c5d.xlarge") && is_ebs_nitro("t3.micro"));
        assert!(
            is_ebs_nitro("z1d.large") && !is_ebs_nitro("m4.large") && !is_ebs_nitro("a5.large")
        );
        let ni = |labels: &[(&str, &str)]| {
            let mut n = node("n");
            for (k, v) in labels {
                n = n.label(k, v);
            }
            n.info()
        };
        assert_eq!(VolumeType::Ebs.default_limit(&ni(&[])), 39);
        assert_eq!(
            VolumeType::Ebs.default_limit(&ni(&[("node.kubernetes.io/instance-type", "m5.large")])),
            25
        );
        assert_eq!(VolumeType::GcePd.default_limit(&ni(&[])), 16);
        assert_eq!(VolumeType::AzureDisk.default_limit(&ni(&[])), 16);
        assert_eq!(VolumeType::Cinder.default_limit(&ni(&[])), 256);

        let cinder = |id: &str| core::Volume {
            name: id.into(),
            cinder: Some(core::CinderVolumeSource {
                volume_id: id.into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let existing: Vec<PodB> = (0..3)
            .map(|i| {
                pod(&format!("e{i}"))
                    .node("n")
                    .volume(cinder(&format!("c{i}")))
            })
            .collect();
        let node_info = node("n").info_with(&existing);
        let new_pod = pod("new").volume(cinder("c9")).info();
        let check = |plugin: &NonCsiLimits, snap: &Snapshot| {
            let mut state = CycleState::new();
            assert!(plugin.pre_filter(&mut state, &new_pod, snap).is_success());
            plugin.filter(&state, &new_pod, &node_info)
        };
        let mut snap = Snapshot::new();
        snap.add_node(node_info.clone()).unwrap();
        // KUBE_MAX_PD_VOLS=3: 3 attached + 1 new > 3.
        let env3 = NonCsiLimits::with(VolumeType::Cinder, 3, MigrationGates::default());
        assert_eq!(
            outcome(&check(&env3, &snap)),
            want(Code::Unschedulable, &[ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED])
        );
        // Migrated to CSI on this node: NodeVolumeLimits counts instead.
        snap.volumes_mut().upsert_csi_node(storage::CSINode {
            metadata: ObjectMeta {
                name: Some("n".into()),
                annotations: Some(
                    [(
                        crate::volume::helpers::MIGRATED_PLUGINS_ANNOTATION.to_string(),
                        csi::CINDER_IN_TREE.to_string(),
                    )]
                    .into(),
                ),
                ..Default::default()
            },
            ..Default::default()
        });
        assert!(check(&env3, &snap).is_success());
        // With the OpenStack gate off, the CSINode annotation alone does not migrate.
        let gates = MigrationGates {
            openstack: false,
            ..MigrationGates::default()
        };
        let off = NonCsiLimits::with(VolumeType::Cinder, 3, gates);
        assert!(!check(&off, &snap).is_success());
        // An allocatable limit wins over the environment.
        let node4 = node("n")
            .allocatable(&[("attachable-volumes-cinder", "4")])
            .info_with(&existing);
        let mut state = CycleState::new();
        assert!(off.pre_filter(&mut state, &new_pod, &snap).is_success());
        assert!(off.filter(&state, &new_pod, &node4).is_success());
        // A pod without volumes of the type is skipped.
        let mut state = CycleState::new();
        assert!(
            off.pre_filter(&mut state, &pod("x").volume(ebs("e")).info(), &snap)
                .is_skip()
        );
    }
}
