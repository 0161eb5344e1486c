//! In-tree → CSI migration as kube-scheduler v1.22 applies it, and CSI attach-limit keys.
//!
//! **Feature gates.** v1.22 defaults (kubernetes/kubernetes `pkg/features/kube_features.go`,
//! v1.22 copy, index id 814405800): `CSIMigration` beta **on**, `CSIMigrationGCE` beta off,
//! `CSIMigrationAWS` beta off, `CSIMigrationAzureDisk` beta off, `CSIMigrationAzureFile` beta
//! off, `CSIMigrationvSphere` beta off, `CSIMigrationOpenStack` beta **on**; `CSIInlineVolume`
//! and `GenericEphemeralVolume` beta on. [`MigrationGates::default`] is exactly that, so with
//! the defaults only Cinder volumes migrate, and only on nodes whose CSINode lists
//! `kubernetes.io/cinder` in `storage.alpha.kubernetes.io/migrated-plugins`.
//!
//! **Translation** follows `k8s.io/csi-translation-lib` of the v1.21/v1.22 era
//! (`plugins/in_tree_volume.go`, index id 1321019754, `translateTopologyFromInTreeToCSI`;
//! `plugins/aws_ebs.go`, `gce_pd.go`, `azure_disk.go`, `openstack_cinder.go`): driver names,
//! volume handles and the zone topology key of each driver. Only the parts the scheduler reads
//! are produced: the CSI source's driver and handle, and the node affinity.
//!
//! **Limit keys**: `getCSIAttachLimitKey` (v1.22 `nodevolumelimits/utils.go`, index id
//! 16615874243): `attachable-volumes-csi-<driver>`, or for names of 63 characters or more the
//! first 23 characters of the driver followed by 16 hex digits of its SHA-1.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::storage::v1 as storage;

use super::error::VolumeError;
use super::helpers::MIGRATED_PLUGINS_ANNOTATION;

/// In-tree plugin `kubernetes.io/aws-ebs`.
pub const AWS_EBS_IN_TREE: &str = "kubernetes.io/aws-ebs";
/// In-tree plugin `kubernetes.io/gce-pd`.
pub const GCE_PD_IN_TREE: &str = "kubernetes.io/gce-pd";
/// In-tree plugin `kubernetes.io/azure-disk`.
pub const AZURE_DISK_IN_TREE: &str = "kubernetes.io/azure-disk";
/// In-tree plugin `kubernetes.io/azure-file`.
pub const AZURE_FILE_IN_TREE: &str = "kubernetes.io/azure-file";
/// In-tree plugin `kubernetes.io/cinder`.
pub const CINDER_IN_TREE: &str = "kubernetes.io/cinder";
/// In-tree plugin `kubernetes.io/vsphere-volume`.
pub const VSPHERE_IN_TREE: &str = "kubernetes.io/vsphere-volume";

/// CSI driver `ebs.csi.aws.com`.
pub const AWS_EBS_DRIVER: &str = "ebs.csi.aws.com";
/// CSI driver `pd.csi.storage.gke.io`.
pub const GCE_PD_DRIVER: &str = "pd.csi.storage.gke.io";
/// CSI driver `disk.csi.azure.com`.
pub const AZURE_DISK_DRIVER: &str = "disk.csi.azure.com";
/// CSI driver `file.csi.azure.com`.
pub const AZURE_FILE_DRIVER: &str = "file.csi.azure.com";
/// CSI driver `cinder.csi.openstack.org`.
pub const CINDER_DRIVER: &str = "cinder.csi.openstack.org";
/// CSI driver `csi.vsphere.vmware.com`.
pub const VSPHERE_DRIVER: &str = "csi.vsphere.vmware.com";

/// Prefix of CSI attach-limit resource names.
pub const CSI_ATTACH_LIMIT_PREFIX: &str = "attachable-volumes-csi-";
/// `resourceNameLengthLimit`.
const RESOURCE_NAME_LENGTH_LIMIT: usize = 63;

/// The migration feature gates the scheduler reads, defaulted as in v1.22 (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MigrationGates {
    /// `CSIMigration` (v1.22: on).
    pub csi_migration: bool,
    /// `CSIMigrationAWS` (v1.22: off).
    pub aws: bool,
    /// `CSIMigrationGCE` (v1.22: off).
    pub gce: bool,
    /// `CSIMigrationAzureDisk` (v1.22: off).
    pub azure_disk: bool,
    /// `CSIMigrationOpenStack` (v1.22: on).
    pub openstack: bool,
}

impl Default for MigrationGates {
    fn default() -> Self {
        MigrationGates {
            csi_migration: true,
            aws: false,
            gce: false,
            azure_disk: false,
            openstack: true,
        }
    }
}

impl MigrationGates {
    /// Every gate on (what upstream tests set with `migrationEnabled: true`).
    pub fn all() -> Self {
        MigrationGates {
            csi_migration: true,
            aws: true,
            gce: true,
            azure_disk: true,
            openstack: true,
        }
    }

    /// `CSIMigration` and the plugin's own gate are on (`isCSIMigrationOnForPlugin` of the
    /// binder; the limits plugins ask the same through `isCSIMigrationOn`).
    pub fn plugin_enabled(&self, plugin: &str) -> bool {
        self.csi_migration
            && match plugin {
                AWS_EBS_IN_TREE => self.aws,
                GCE_PD_IN_TREE => self.gce,
                AZURE_DISK_IN_TREE => self.azure_disk,
                CINDER_IN_TREE => self.openstack,
                _ => false,
            }
    }
}

/// Whether the node's CSINode lists `plugin` in `storage.alpha.kubernetes.io/migrated-plugins`
/// (comma-separated).
pub fn is_plugin_migrated_on_node(plugin: &str, csi_node: Option<&storage::CSINode>) -> bool {
    csi_node
        .and_then(|c| c.metadata.annotations.as_ref())
        .and_then(|a| a.get(MIGRATED_PLUGINS_ANNOTATION))
        .is_some_and(|v| v.split(',').any(|p| p == plugin))
}

/// `isCSIMigrationOn(csiNode, pluginName)`: a CSINode exists, the gates allow the plugin, and
/// the node has migrated it.
pub fn is_csi_migration_on(
    csi_node: Option<&storage::CSINode>,
    plugin: &str,
    gates: MigrationGates,
) -> bool {
    csi_node.is_some()
        && !plugin.is_empty()
        && gates.plugin_enabled(plugin)
        && is_plugin_migrated_on_node(plugin, csi_node)
}

/// `IsMigratableIntreePluginByName` (v1.22 translator list).
pub fn is_migratable_plugin(name: &str) -> bool {
    matches!(
        name,
        AWS_EBS_IN_TREE
            | GCE_PD_IN_TREE
            | AZURE_DISK_IN_TREE
            | AZURE_FILE_IN_TREE
            | CINDER_IN_TREE
            | VSPHERE_IN_TREE
    )
}

/// `GetCSINameFromInTreeName`.
pub fn csi_driver_of(plugin: &str) -> Option<&'static str> {
    Some(match plugin {
        AWS_EBS_IN_TREE => AWS_EBS_DRIVER,
        GCE_PD_IN_TREE => GCE_PD_DRIVER,
        AZURE_DISK_IN_TREE => AZURE_DISK_DRIVER,
        AZURE_FILE_IN_TREE => AZURE_FILE_DRIVER,
        CINDER_IN_TREE => CINDER_DRIVER,
        VSPHERE_IN_TREE => VSPHERE_DRIVER,
        _ => return None,
    })
}

/// `IsPVMigratable` + `GetInTreePluginNameFromSpec`: the in-tree plugin of a PV whose source
/// the translator knows.
pub fn in_tree_plugin_of(pv: &core::PersistentVolume) -> Option<&'static str> {
    let s = pv.spec.as_ref()?;
    if s.aws_elastic_block_store.is_some() {
        Some(AWS_EBS_IN_TREE)
    } else if s.gce_persistent_disk.is_some() {
        Some(GCE_PD_IN_TREE)
    } else if s.azure_disk.is_some() {
        Some(AZURE_DISK_IN_TREE)
    } else if s.azure_file.is_some() {
        Some(AZURE_FILE_IN_TREE)
    } else if s.cinder.is_some() {
        Some(CINDER_IN_TREE)
    } else if s.vsphere_volume.is_some() {
        Some(VSPHERE_IN_TREE)
    } else {
        None
    }
}

/// `getCSIAttachLimitKey`.
pub fn csi_attach_limit_key(driver: &str) -> String {
    if CSI_ATTACH_LIMIT_PREFIX.len() + driver.len() >= RESOURCE_NAME_LENGTH_LIMIT {
        let prefix: String = driver.chars().take(23).collect();
        let digest =
            ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, driver.as_bytes());
        let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
        format!("{CSI_ATTACH_LIMIT_PREFIX}{prefix}{}", &hex[..16])
    } else {
        format!("{CSI_ATTACH_LIMIT_PREFIX}{driver}")
    }
}

const ZONE_GA: &str = "topology.kubernetes.io/zone";
const REGION_GA: &str = "topology.kubernetes.io/region";
const ZONE_BETA: &str = "failure-domain.beta.kubernetes.io/zone";
const REGION_BETA: &str = "failure-domain.beta.kubernetes.io/region";
/// `labelMultiZoneDelimiter`.
const MULTI_ZONE_DELIMITER: &str = "__";

fn affinity_terms(pv: &core::PersistentVolume) -> &[core::NodeSelectorTerm] {
    pv.spec
        .as_ref()
        .and_then(|s| s.node_affinity.as_ref())
        .and_then(|a| a.required.as_ref())
        .map(|r| r.node_selector_terms.as_slice())
        .unwrap_or_default()
}

fn topology_key_exists(pv: &core::PersistentVolume, key: &str) -> bool {
    affinity_terms(pv)
        .iter()
        .any(|t| t.match_expressions.iter().flatten().any(|r| r.key == key))
}

/// `getTopologyValues`: the distinct values of `key` in the node affinity, sorted.
fn topology_values(pv: &core::PersistentVolume, key: &str) -> Vec<String> {
    let mut set = BTreeSet::new();
    for t in affinity_terms(pv) {
        for r in t.match_expressions.iter().flatten() {
            if r.key == key {
                set.extend(r.values.iter().flatten().cloned());
            }
        }
    }
    set.into_iter().collect()
}

/// `getTopologyLabel`: the zone label key the PV uses (GA, else beta; GA by default).
fn zone_label_of(pv: &core::PersistentVolume) -> &'static str {
    if topology_key_exists(pv, ZONE_GA) || topology_key_exists(pv, REGION_GA) {
        return ZONE_GA;
    }
    if topology_key_exists(pv, ZONE_BETA) || topology_key_exists(pv, REGION_BETA) {
        return ZONE_BETA;
    }
    let has = |k: &str| {
        pv.metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.contains_key(k))
    };
    if has(ZONE_GA) || has(REGION_GA) {
        return ZONE_GA;
    }
    if has(ZONE_BETA) || has(REGION_BETA) {
        return ZONE_BETA;
    }
    ZONE_GA
}

/// `translateTopologyFromInTreeToCSI` (v1.21/v1.22): keep a CSI topology already present;
/// else rename the zone key in the node affinity to `csi_key`; else add `csi_key In <zones of
/// the zone label>` to every term.
fn translate_topology(pv: &mut core::PersistentVolume, csi_key: &str) {
    if !topology_values(pv, csi_key).is_empty() {
        return;
    }
    let zone_label = zone_label_of(pv);
    if !topology_values(pv, zone_label).is_empty() {
        if let Some(req) = pv
            .spec
            .as_mut()
            .and_then(|s| s.node_affinity.as_mut())
            .and_then(|a| a.required.as_mut())
        {
            for t in &mut req.node_selector_terms {
                for r in t.match_expressions.iter_mut().flatten() {
                    if r.key == zone_label {
                        r.key = csi_key.to_string();
                    }
                }
            }
        }
        return;
    }
    let Some(label) = pv
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(zone_label))
        .cloned()
    else {
        return;
    };
    let zones: BTreeSet<String> = label
        .split(MULTI_ZONE_DELIMITER)
        .map(|z| z.trim().to_string())
        .filter(|z| !z.is_empty())
        .collect();
    if zones.is_empty() {
        return;
    }
    let req = core::NodeSelectorRequirement {
        key: csi_key.to_string(),
        operator: "In".into(),
        values: Some(zones.into_iter().collect()),
    };
    let spec = pv.spec.get_or_insert_with(Default::default);
    let selector = spec
        .node_affinity
        .get_or_insert_with(Default::default)
        .required
        .get_or_insert_with(Default::default);
    if selector.node_selector_terms.is_empty() {
        selector.node_selector_terms.push(Default::default());
    }
    for t in &mut selector.node_selector_terms {
        t.match_expressions
            .get_or_insert_with(Vec::new)
            .push(req.clone());
    }
}

/// `KubernetesVolumeIDToEBSVolumeID`: `aws://<zone>/<vol-id>` → `<vol-id>`.
fn ebs_volume_id(id: &str) -> String {
    match id.strip_prefix("aws://") {
        Some(rest) => rest.rsplit('/').next().unwrap_or(rest).to_string(),
        None => id.to_string(),
    }
}

/// `TranslateInTreePVToCSI` for the four attachable in-tree plugins the scheduler migrates
/// (EBS, GCE PD, Azure Disk, Cinder): the PV with its in-tree source replaced by a CSI source
/// (driver and volume handle) and its zone topology translated to the driver's key.
///
/// # Errors
/// The PV has no source of those plugins.
pub fn translate_pv(pv: &core::PersistentVolume) -> Result<core::PersistentVolume, VolumeError> {
    let mut out = pv.clone();
    let spec = out.spec.get_or_insert_with(Default::default);
    let (driver, handle, topology_key) = if let Some(ebs) = spec.aws_elastic_block_store.take() {
        (
            AWS_EBS_DRIVER,
            ebs_volume_id(&ebs.volume_id),
            "topology.ebs.csi.aws.com/zone",
        )
    } else if let Some(pd) = spec.gce_persistent_disk.take() {
        let zones: Vec<String> = pv
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(ZONE_GA).or_else(|| l.get(ZONE_BETA)))
            .map(|z| z.split(MULTI_ZONE_DELIMITER).map(str::to_string).collect())
            .unwrap_or_default();
        let handle = match zones.as_slice() {
            [z] if !z.is_empty() => format!("projects/UNSPECIFIED/zones/{z}/disks/{}", pd.pd_name),
            [] | [_] => format!(
                "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/{}",
                pd.pd_name
            ),
            many => {
                let region = many[0]
                    .rsplit_once('-')
                    .map_or(many[0].as_str(), |(r, _)| r);
                format!("projects/UNSPECIFIED/regions/{region}/disks/{}", pd.pd_name)
            }
        };
        (GCE_PD_DRIVER, handle, "topology.gke.io/zone")
    } else if let Some(ad) = spec.azure_disk.take() {
        (
            AZURE_DISK_DRIVER,
            ad.disk_uri,
            "topology.disk.csi.azure.com/zone",
        )
    } else if let Some(c) = spec.cinder.take() {
        (
            CINDER_DRIVER,
            c.volume_id,
            "topology.cinder.csi.openstack.org/zone",
        )
    } else {
        return Err(VolumeError::NoInTreeSource);
    };
    spec.csi = Some(core::CSIPersistentVolumeSource {
        driver: driver.into(),
        volume_handle: handle,
        ..Default::default()
    });
    translate_topology(&mut out, topology_key);
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    #[test]
    fn v1_22_gate_defaults_migrate_only_cinder() {
        let g = MigrationGates::default();
        assert!(g.plugin_enabled(CINDER_IN_TREE));
        for p in [
            AWS_EBS_IN_TREE,
            GCE_PD_IN_TREE,
            AZURE_DISK_IN_TREE,
            AZURE_FILE_IN_TREE,
        ] {
            assert!(!g.plugin_enabled(p), "{p}");
        }
    }

    #[test]
    fn migration_needs_the_csinode_annotation() {
        let mut node = storage::CSINode {
            metadata: ObjectMeta {
                name: Some("n".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let g = MigrationGates::default();
        assert!(!is_csi_migration_on(None, CINDER_IN_TREE, g));
        assert!(!is_csi_migration_on(Some(&node), CINDER_IN_TREE, g));
        node.metadata.annotations = Some(
            [(
                MIGRATED_PLUGINS_ANNOTATION.to_string(),
                "kubernetes.io/aws-ebs,kubernetes.io/cinder".to_string(),
            )]
            .into(),
        );
        assert!(is_csi_migration_on(Some(&node), CINDER_IN_TREE, g));
        assert!(!is_csi_migration_on(Some(&node), AWS_EBS_IN_TREE, g));
        assert!(is_csi_migration_on(
            Some(&node),
            AWS_EBS_IN_TREE,
            MigrationGates::all()
        ));
    }

    /// `getCSIAttachLimitKey`: short names are prefixed; names reaching 63 characters with the
    /// prefix keep 23 characters and 16 hex digits of their SHA-1.
    #[test]
    fn csi_attach_limit_keys() {
        assert_eq!(
            csi_attach_limit_key("amazon-ebs"),
            "attachable-volumes-csi-amazon-ebs"
        );
        let long = "amazon-ebs-with-a-very-very-long-name-that-goes-on";
        // 23 characters of the name, then the first 16 hex digits of its SHA-1
        // (`ae1b030a99267e90…`, computed independently with Python's hashlib).
        assert_eq!(
            csi_attach_limit_key(long),
            "attachable-volumes-csi-amazon-ebs-with-a-very-ae1b030a99267e90"
        );
        assert_eq!(
            csi_attach_limit_key("ebs.csi.aws.com"),
            "attachable-volumes-csi-ebs.csi.aws.com"
        );
    }

    #[test]
    fn cinder_translation_moves_zone_topology_to_the_csi_key() {
        let mut pv = core::PersistentVolume {
            metadata: ObjectMeta {
                name: Some("pv".into()),
                labels: Some([(ZONE_GA.to_string(), "nova".to_string())].into()),
                ..Default::default()
            },
            spec: Some(core::PersistentVolumeSpec {
                cinder: Some(core::CinderPersistentVolumeSource {
                    volume_id: "vol-1".into(),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            status: None,
        };
        let t = translate_pv(&pv).unwrap();
        let csi = t.spec.as_ref().unwrap().csi.as_ref().unwrap();
        assert_eq!(
            (csi.driver.as_str(), csi.volume_handle.as_str()),
            (CINDER_DRIVER, "vol-1")
        );
        assert_eq!(
            topology_values(&t, "topology.cinder.csi.openstack.org/zone"),
            vec!["nova".to_string()]
        );
        // An existing zone affinity is renamed rather than added.
        pv.spec.as_mut().unwrap().node_affinity = Some(core::VolumeNodeAffinity {
            required: Some(core::NodeSelector {
                node_selector_terms: vec![core::NodeSelectorTerm {
                    match_expressions: Some(vec![core::NodeSelectorRequirement {
                        key: ZONE_GA.into(),
                        operator: "In".into(),
                        values: Some(vec!["nova".into()]),
                    }]),
                    match_fields: None,
                }],
            }),
        });
        let t = translate_pv(&pv).unwrap();
        assert!(topology_values(&t, ZONE_GA).is_empty());
        assert_eq!(
            affinity_terms(&t)[0]
                .match_expressions
                .as_ref()
                .unwrap()
                .len(),
            1
        );
        assert_eq!(ebs_volume_id("aws://us-east-1a/vol-9"), "vol-9");
    }
}
