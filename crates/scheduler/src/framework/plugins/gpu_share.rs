//! `GpuShare`: per-device GPU accounting, always on for pods that request GPUs (not a
//! kube-scheduler plugin; kube-scheduler counts `nvidia.com/gpu` as an opaque integer).
//!
//! A pod asks either for whole GPUs (`nvidia.com/gpu: N`: N devices with nothing on them) or for
//! a share of one GPU (`alibabacloud.com/gpu-milli: M`, M < 1000 milli-GPU, which must fit on a
//! *single* device). Nodes expose their devices through allocatable `nvidia.com/gpu` (the
//! device count). The chosen devices are recorded in the pod annotation
//! `mini-scheduler.io/gpu-indexes` (see [`crate::framework::types::ANNOTATION_GPU_INDEXES`]).

use crate::framework::types::NodeInfo;
use crate::framework::{Code, CycleState, FilterPlugin, PodInfo, Status};
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

    fn filter(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if node.fits_gpus(pod.gpu) {
            Status::success()
        } else if pod.gpu.milli >= crate::framework::types::GPU_MILLI_PER_DEVICE {
            Status::new(Code::Unschedulable, ERR_REASON_WHOLE)
        } else {
            Status::new(Code::Unschedulable, ERR_REASON_SHARE)
        }
    }
}
