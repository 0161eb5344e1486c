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

fn case(new_pod: PodB, existing: Vec<PodB>, max_vols: i64, test: &'static str, fits: bool) -> Case {
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
    assert!(is_ebs_nitro("z1d.large") && !is_ebs_nitro("m4.large") && !is_ebs_nitro("a5.large"));
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
