//! The volumes of a pod that the volume plugins look at, parsed once per pod in
//! [`PodInfo::from_pod`](super::PodInfo::from_pod): the disks that can conflict on a node
//! ([`DiskVolume`], `VolumeRestrictions`) and the claim-backed and inline attachable volumes
//! ([`PodVolumeRefs`]). Upstream's plugins walk `pod.Spec.Volumes` on every call; here the
//! relevant entries are kept in spec order so PreFilter can return Skip for a pod without any
//! and Filter reads no raw spec.

use k8s_openapi::api::core::v1 as core;

/// An in-tree volume source inline in the pod spec that the non-CSI limits plugins count
/// (`FilterVolume` of `ebsVolumeFilter`, `gcePDVolumeFilter`, `azureDiskVolumeFilter`,
/// `cinderVolumeFilter`, v1.22 `nodevolumelimits/non_csi.go`), with the id they count it by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InlineVolume {
    /// `awsElasticBlockStore.volumeID`.
    AwsEbs(String),
    /// `gcePersistentDisk.pdName`.
    GcePd(String),
    /// `azureDisk.diskName`.
    AzureDisk(String),
    /// `cinder.volumeID`.
    Cinder(String),
}

/// One relevant entry of `spec.volumes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VolumeRef {
    /// A volume backed by a PersistentVolumeClaim of the pod's namespace.
    Claim {
        /// `persistentVolumeClaim.claimName`, or `<pod name>-<volume name>` for a generic
        /// ephemeral volume (v1.22 computes it inline; `ephemeral.VolumeClaimName` later).
        claim: String,
        /// True for a generic ephemeral volume (`ephemeral`, GenericEphemeralVolume beta and on
        /// by default in v1.22): the claim must be controlled by the pod.
        ephemeral: bool,
        /// The volume's name in the pod spec.
        volume: String,
    },
    /// An inline in-tree attachable volume.
    Inline(InlineVolume),
}

/// The pod's volumes the volume plugins need, in `spec.volumes` order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodVolumeRefs {
    /// Claim-backed and inline attachable volumes (other volume types are not kept).
    pub refs: Vec<VolumeRef>,
}

impl PodVolumeRefs {
    /// Parse `spec.volumes` of a pod named `pod_name`.
    pub fn parse(pod_name: &str, volumes: &[core::Volume]) -> PodVolumeRefs {
        let refs = volumes
            .iter()
            .filter_map(|v| {
                if let Some(c) = &v.persistent_volume_claim {
                    Some(VolumeRef::Claim {
                        claim: c.claim_name.clone(),
                        ephemeral: false,
                        volume: v.name.clone(),
                    })
                } else if v.ephemeral.is_some() {
                    Some(VolumeRef::Claim {
                        claim: format!("{pod_name}-{}", v.name),
                        ephemeral: true,
                        volume: v.name.clone(),
                    })
                } else if let Some(a) = &v.aws_elastic_block_store {
                    Some(VolumeRef::Inline(InlineVolume::AwsEbs(a.volume_id.clone())))
                } else if let Some(g) = &v.gce_persistent_disk {
                    Some(VolumeRef::Inline(InlineVolume::GcePd(g.pd_name.clone())))
                } else if let Some(a) = &v.azure_disk {
                    Some(VolumeRef::Inline(InlineVolume::AzureDisk(
                        a.disk_name.clone(),
                    )))
                } else {
                    v.cinder
                        .as_ref()
                        .map(|c| VolumeRef::Inline(InlineVolume::Cinder(c.volume_id.clone())))
                }
            })
            .collect();
        PodVolumeRefs { refs }
    }

    /// True when the pod references no claim and no inline attachable volume.
    pub fn is_empty(&self) -> bool {
        self.refs.is_empty()
    }

    /// True when some volume is backed by a claim (a `persistentVolumeClaim` or a generic
    /// ephemeral volume).
    pub fn has_claims(&self) -> bool {
        self.refs
            .iter()
            .any(|r| matches!(r, VolumeRef::Claim { .. }))
    }

    /// The claims, `(claim name, ephemeral, volume name)`, in spec order.
    pub fn claims(&self) -> impl Iterator<Item = (&str, bool, &str)> {
        self.refs.iter().filter_map(|r| match r {
            VolumeRef::Claim {
                claim,
                ephemeral,
                volume,
            } => Some((claim.as_str(), *ephemeral, volume.as_str())),
            VolumeRef::Inline(_) => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_claims_ephemeral_and_inline_volumes_in_order() {
        let vols = vec![
            core::Volume {
                name: "cache".into(),
                empty_dir: Some(Default::default()),
                ..Default::default()
            },
            core::Volume {
                name: "data".into(),
                persistent_volume_claim: Some(core::PersistentVolumeClaimVolumeSource {
                    claim_name: "pvc-a".into(),
                    ..Default::default()
                }),
                ..Default::default()
            },
            core::Volume {
                name: "scratch".into(),
                ephemeral: Some(Default::default()),
                ..Default::default()
            },
            core::Volume {
                name: "ebs".into(),
                aws_elastic_block_store: Some(core::AWSElasticBlockStoreVolumeSource {
                    volume_id: "vol-1".into(),
                    ..Default::default()
                }),
                ..Default::default()
            },
        ];
        let r = PodVolumeRefs::parse("web-0", &vols);
        assert_eq!(
            r.refs,
            vec![
                VolumeRef::Claim {
                    claim: "pvc-a".into(),
                    ephemeral: false,
                    volume: "data".into()
                },
                VolumeRef::Claim {
                    claim: "web-0-scratch".into(),
                    ephemeral: true,
                    volume: "scratch".into()
                },
                VolumeRef::Inline(InlineVolume::AwsEbs("vol-1".into())),
            ]
        );
        assert!(r.has_claims());
        assert!(PodVolumeRefs::parse("p", &vols[..1]).is_empty());
    }
}

/// A volume that can conflict with the same disk used by another pod on the node
/// (`VolumeRestrictions`, `isVolumeConflict`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiskVolume {
    /// GCE persistent disk by `pdName`.
    GcePd {
        /// Disk name.
        pd_name: String,
        /// Mounted read-only.
        read_only: bool,
    },
    /// AWS EBS by `volumeID`.
    AwsEbs {
        /// Volume ID.
        volume_id: String,
    },
    /// RBD image.
    Rbd {
        /// Ceph monitors.
        monitors: Vec<String>,
        /// Pool (`rbd` when unset, the API default).
        pool: String,
        /// Image.
        image: String,
        /// Mounted read-only.
        read_only: bool,
    },
    /// iSCSI target by IQN.
    Iscsi {
        /// Target IQN.
        iqn: String,
        /// Mounted read-only.
        read_only: bool,
    },
}

impl DiskVolume {
    /// Whether mounting `self` conflicts with `existing` already mounted on the node.
    pub fn conflicts(&self, existing: &DiskVolume) -> bool {
        match (self, existing) {
            (
                DiskVolume::GcePd { pd_name, read_only },
                DiskVolume::GcePd {
                    pd_name: e,
                    read_only: er,
                },
            ) => pd_name == e && !(*read_only && *er),
            (DiskVolume::AwsEbs { volume_id }, DiskVolume::AwsEbs { volume_id: e }) => {
                volume_id == e
            }
            (
                DiskVolume::Rbd {
                    monitors,
                    pool,
                    image,
                    read_only,
                },
                DiskVolume::Rbd {
                    monitors: em,
                    pool: ep,
                    image: ei,
                    read_only: er,
                },
            ) => {
                monitors.iter().any(|m| em.contains(m))
                    && pool == ep
                    && image == ei
                    && !(*read_only && *er)
            }
            (
                DiskVolume::Iscsi { iqn, read_only },
                DiskVolume::Iscsi {
                    iqn: e,
                    read_only: er,
                },
            ) => iqn == e && !(*read_only && *er),
            _ => false,
        }
    }
}
