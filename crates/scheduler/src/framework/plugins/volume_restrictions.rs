//! `VolumeRestrictions` (legacy predicate `NoDiskConflict`): the pod may not mount a GCE PD,
//! AWS EBS volume, RBD image or iSCSI target that a pod on the node already mounts, unless both
//! mount it read-only (GCE PD, RBD, iSCSI). Follows
//! `pkg/scheduler/framework/plugins/volumerestrictions` (v1.22, `isVolumeConflict`).

use crate::framework::types::NodeInfo;
use crate::framework::{Code, CycleState, FilterPlugin, PodInfo, Status};
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
