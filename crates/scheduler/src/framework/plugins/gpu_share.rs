//! `GpuShare`: per-device GPU accounting, always on for pods that request GPUs (not a
//! kube-scheduler plugin; kube-scheduler counts `nvidia.com/gpu` as an opaque integer).
//!
//! A pod asks either for whole GPUs (`nvidia.com/gpu: N`: N devices with nothing on them) or for
//! a share of one GPU (`alibabacloud.com/gpu-milli: M`, M < 1000 milli-GPU, which must fit on a
//! *single* device). Nodes expose their devices through allocatable `nvidia.com/gpu` (the
//! device count). The chosen devices are recorded in the pod annotation
//! `mini-scheduler.io/gpu-indexes` (see [`crate::framework::ANNOTATION_GPU_INDEXES`]).
//!
//! A node that does not count its devices (no allocatable `nvidia.com/gpu`, e.g. a node that
//! only advertises `alibabacloud.com/gpu-milli`) has no per-device accounting: this filter
//! lets a GPU share through, and `NodeResourcesFit` checks `alibabacloud.com/gpu-milli` as the
//! ordinary extended resource it is, as kube-scheduler v1.22 does. Whole-GPU pods still need
//! free devices.

use crate::framework::NodeInfo;
use crate::framework::{Code, CycleState, FastCheck, FilterPlugin, PodInfo, Status};
use crate::snapshot::Snapshot;

/// Plugin name.
pub const NAME: &str = "GpuShare";
/// Reason when a whole-GPU pod finds too few fully free devices.
pub const ERR_REASON_WHOLE: &str = "Insufficient free GPU devices";
/// Reason when no single device has the requested share free.
pub const ERR_REASON_SHARE: &str = "node(s) had no GPU with enough free share";

/// The GpuShare filter.
#[derive(Debug, Default, Clone, Copy)]
pub struct GpuShare;

impl FilterPlugin for GpuShare {
    fn name(&self) -> &'static str {
        NAME
    }

    fn pre_filter(&self, _state: &mut CycleState, pod: &PodInfo, _snapshot: &Snapshot) -> Status {
        if pod.gpu.count == 0 {
            Status::skip()
        } else {
            Status::success()
        }
    }

    fn fast_check(&self, pod: &PodInfo) -> Option<FastCheck> {
        // A share spread over several devices needs the per-device check.
        let g = pod.gpu;
        (g.count <= 1 || g.milli >= crate::framework::GPU_MILLI_PER_DEVICE).then_some(FastCheck {
            gpu_devices: (g.count > 0).then_some(g),
            ..FastCheck::default()
        })
    }

    fn filter(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let share = pod.gpu.milli < crate::framework::GPU_MILLI_PER_DEVICE;
        if node.fits_gpus(pod.gpu) || (share && node.gpu_used.is_empty()) {
            Status::success()
        } else if pod.gpu.milli >= crate::framework::GPU_MILLI_PER_DEVICE {
            Status::new(Code::Unschedulable, ERR_REASON_WHOLE)
        } else {
            Status::new(Code::Unschedulable, ERR_REASON_SHARE)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::plugins::testutil::{node, outcome, pod};
    use crate::framework::{RESOURCE_GPU, RESOURCE_GPU_MILLI};

    fn filter(pod: &PodInfo, node: &NodeInfo) -> (Code, Vec<String>) {
        outcome(&GpuShare.filter(&CycleState::default(), pod, node))
    }

    /// A node that advertises `alibabacloud.com/gpu-milli` without a device count: a share is
    /// left to NodeResourcesFit (an ordinary extended resource, as in v1.22), a whole GPU is not
    /// there.
    #[test]
    fn a_node_without_device_count_takes_shares_as_an_extended_resource() {
        let milli_only = node("milli-only")
            .allocatable(&[("cpu", "8"), (RESOURCE_GPU_MILLI, "2000")])
            .info();
        let share = pod("share")
            .container(&[(RESOURCE_GPU_MILLI, "300")])
            .info();
        assert_eq!(filter(&share, &milli_only).0, Code::Success);
        let whole = pod("whole").container(&[(RESOURCE_GPU, "1")]).info();
        assert_eq!(
            filter(&whole, &milli_only),
            (Code::Unschedulable, vec![ERR_REASON_WHOLE.to_string()])
        );
        // With a device count, a share must fit on one device.
        let counted = node("counted")
            .allocatable(&[(RESOURCE_GPU, "1"), (RESOURCE_GPU_MILLI, "1000")])
            .info_with(&[pod("busy").container(&[(RESOURCE_GPU_MILLI, "800")])]);
        assert_eq!(
            filter(&share, &counted),
            (Code::Unschedulable, vec![ERR_REASON_SHARE.to_string()])
        );
    }
}
