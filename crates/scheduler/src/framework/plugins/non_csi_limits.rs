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
#[path = "non_csi_limits_test.rs"]
mod tests;
