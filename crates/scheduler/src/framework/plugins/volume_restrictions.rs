//! `VolumeRestrictions` (legacy predicate `NoDiskConflict`): the pod may not mount a GCE PD,
//! AWS EBS volume, RBD image or iSCSI target that a pod on the node already mounts, unless both
//! mount it read-only (GCE PD, RBD, iSCSI). Follows
//! `pkg/scheduler/framework/plugins/volumerestrictions` (v1.22, `isVolumeConflict`).

use crate::framework::{Code, CycleState, FilterPlugin, Status};
use crate::model::NodeInfo;
use crate::model::PodInfo;
use crate::snapshot::Snapshot;

/// Plugin name.
pub const NAME: &str = "VolumeRestrictions";
/// Failure reason (`ErrReasonDiskConflict`).
pub const ERR_REASON_DISK_CONFLICT: &str = "node(s) had no available disk";

/// The VolumeRestrictions filter.
#[derive(Debug, Default, Clone, Copy)]
pub struct VolumeRestrictions;

impl FilterPlugin for VolumeRestrictions {
    fn name(&self) -> &'static str {
        NAME
    }

    fn pre_filter(&self, _state: &mut CycleState, pod: &PodInfo, _snapshot: &Snapshot) -> Status {
        if pod.disk_volumes.is_empty() {
            Status::skip()
        } else {
            Status::success()
        }
    }

    fn filter(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        for v in &pod.disk_volumes {
            for existing in &node.pods {
                if existing.disk_volumes.iter().any(|e| v.conflicts(e)) {
                    return Status::new(Code::Unschedulable, ERR_REASON_DISK_CONFLICT);
                }
            }
        }
        Status::success()
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1 as core;

    use super::*;
    use crate::framework::plugins::testutil::{
        PodB, aws_ebs_volume, filter_via_batch, gce_pd_volume, iscsi_volume, node, outcome, pod,
        rbd_volume, want,
    };

    /// The shared 4-row table `{pod, nodeInfo, isOk, name, wantStatus}` of the disk-conflict
    /// tests, with `volState` / `volState2` as the one volume of the pod specs.
    fn run_disk_conflict_table(test: &str, vol_state: core::Volume, vol_state2: core::Volume) {
        struct Case {
            name: &'static str,
            pod: PodB,
            existing: Vec<PodB>,
            is_ok: bool,
            want_status: (Code, Vec<String>),
        }
        let with = |v: &core::Volume| pod("p").volume(v.clone());
        let cases = vec![
            Case {
                name: "nothing",
                pod: pod("p"),
                existing: vec![],
                is_ok: true,
                want_status: want(Code::Success, &[]),
            },
            Case {
                name: "one state",
                pod: pod("p"),
                existing: vec![with(&vol_state)],
                is_ok: true,
                want_status: want(Code::Success, &[]),
            },
            Case {
                name: "same state",
                pod: with(&vol_state),
                existing: vec![with(&vol_state)],
                is_ok: false,
                want_status: want(Code::Unschedulable, &[ERR_REASON_DISK_CONFLICT]),
            },
            Case {
                name: "different state",
                pod: with(&vol_state2),
                existing: vec![with(&vol_state)],
                is_ok: true,
                want_status: want(Code::Success, &[]),
            },
        ];
        for c in cases {
            let n = node("n").info_with(&c.existing);
            let (state, p) = (CycleState::new(), c.pod.info());
            let got = VolumeRestrictions.filter(&state, &p, &n);
            assert_eq!(got.is_success(), c.is_ok, "{test}: {}", c.name);
            assert_eq!(outcome(&got), c.want_status, "{test}: {}", c.name);
            let batch = filter_via_batch(&VolumeRestrictions, &state, &p, &n);
            assert_eq!(
                outcome(&batch),
                c.want_status,
                "{test}: {}: filter_nodes",
                c.name
            );
        }
    }

    // Upstream `kubernetes/kubernetes`
    // `pkg/scheduler/framework/plugins/volumerestrictions/volume_restrictions_test.go`: the
    // disk-conflict tables read from a 1.24-era copy (index id 1287018050) and identical in the
    // v1.17-era copy (index id 235974495), unchanged since the plugin was created, so also v1.22.
    // Harness as upstream: Filter only. TestAccessModeConflicts (1.22 alpha ReadWriteOncePod) is
    // not ported: not a legacy Policy predicate.

    /// Upstream `volume_restrictions_test.go` `TestGCEDiskConflicts` (index id 1287018050; same
    /// table in id 235974495, so also v1.22).
    #[test]
    fn test_gce_disk_conflicts() {
        run_disk_conflict_table(
            "TestGCEDiskConflicts",
            gce_pd_volume("foo"),
            gce_pd_volume("bar"),
        );
    }

    /// Upstream `volume_restrictions_test.go` `TestAWSDiskConflicts` (index id 1287018050; same
    /// table in id 235974495, so also v1.22).
    #[test]
    fn test_aws_disk_conflicts() {
        run_disk_conflict_table(
            "TestAWSDiskConflicts",
            aws_ebs_volume("foo"),
            aws_ebs_volume("bar"),
        );
    }

    /// Upstream `volume_restrictions_test.go` `TestRBDDiskConflicts` (index id 1287018050; same
    /// table in id 235974495, so also v1.22). volState2 shares no monitor, so no conflict.
    #[test]
    fn test_rbd_disk_conflicts() {
        run_disk_conflict_table(
            "TestRBDDiskConflicts",
            rbd_volume(&["a", "b"], "foo", "bar"),
            rbd_volume(&["c", "d"], "foo", "bar"),
        );
    }

    /// Upstream `volume_restrictions_test.go` `TestISCSIDiskConflicts` (index id 1287018050; same
    /// table in id 235974495, so also v1.22).
    #[test]
    fn test_iscsi_disk_conflicts() {
        run_disk_conflict_table(
            "TestISCSIDiskConflicts",
            iscsi_volume("127.0.0.1:3260", "iqn.2016-12.server:storage.target01"),
            iscsi_volume("127.0.0.1:3260", "iqn.2017-12.server:storage.target01"),
        );
    }
}
