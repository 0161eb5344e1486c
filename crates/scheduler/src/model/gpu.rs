//! GPU bookkeeping: the GPU resource names and labels, a pod's [`GpuRequest`] and the
//! choice of devices on a node (`NodeInfo::gpu_used`: which devices a pod may take).

/// Extended resource for whole GPUs (count of devices).
pub const RESOURCE_GPU: &str = "nvidia.com/gpu";
/// Extended resource for a share of one GPU, in milli-GPU (1000 = a whole device).
pub const RESOURCE_GPU_MILLI: &str = "alibabacloud.com/gpu-milli";
/// Node label naming the GPU model (`P100`, `V100M16`, ...).
pub const LABEL_GPU_MODEL: &str = "alibabacloud.com/gpu-card-model";
/// Pod annotation recording the GPU device indexes chosen for it (`"0,3"`).
pub const ANNOTATION_GPU_INDEXES: &str = "mini-scheduler.io/gpu-indexes";
/// Milli-GPU of one device.
pub const GPU_MILLI_PER_DEVICE: u32 = 1000;

/// GPU demand of a pod: `count` devices with `milli` milli-GPU on each (1000 = whole devices).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GpuRequest {
    /// Number of devices.
    pub count: u32,
    /// Milli-GPU needed on each device (1..=1000).
    pub milli: u32,
}

impl GpuRequest {
    /// Whether this request fits on devices whose used milli-GPU are `gpu_used` (one entry per
    /// device; [`GpuRequest::pick_on`]
    /// would return `Some`), without allocating.
    pub fn fits_on(self, gpu_used: &[u32]) -> bool {
        if self.count == 0 {
            return true;
        }
        let need = if self.milli >= GPU_MILLI_PER_DEVICE {
            GPU_MILLI_PER_DEVICE
        } else {
            self.milli
        };
        let usable = gpu_used
            .iter()
            .filter(|&&u| {
                if need >= GPU_MILLI_PER_DEVICE {
                    u == 0
                } else {
                    GPU_MILLI_PER_DEVICE.saturating_sub(u) >= need
                }
            })
            .count();
        usable >= self.count as usize
    }

    /// Choose devices for this request among devices whose used milli-GPU are `gpu_used` (one
    /// entry per device), or `None` when they do not fit.
    ///
    /// Whole GPUs (`milli == 1000`) take the lowest-indexed fully free devices. A share of one
    /// GPU takes the device with the least free capacity that still fits (best fit), lowest
    /// index first among equals, which keeps whole devices free for whole-GPU pods.
    pub fn pick_on(self, gpu_used: &[u32]) -> Option<Vec<u32>> {
        if self.count == 0 {
            return Some(Vec::new());
        }
        if self.milli >= GPU_MILLI_PER_DEVICE {
            let free: Vec<u32> = gpu_used
                .iter()
                .enumerate()
                .filter(|(_, u)| **u == 0)
                .map(|(i, _)| i as u32)
                .take(self.count as usize)
                .collect();
            return (free.len() == self.count as usize).then_some(free);
        }
        let mut best: Option<(u32, u32)> = None;
        for (i, &u) in gpu_used.iter().enumerate() {
            let free = GPU_MILLI_PER_DEVICE.saturating_sub(u);
            if free >= self.milli && best.is_none_or(|(_, bf)| free < bf) {
                best = Some((i as u32, free));
            }
        }
        if self.count == 1 {
            return best.map(|(i, _)| vec![i]);
        }
        // Several shared devices: lowest-indexed devices with enough free share.
        let fit: Vec<u32> = gpu_used
            .iter()
            .enumerate()
            .filter(|(_, u)| GPU_MILLI_PER_DEVICE.saturating_sub(**u) >= self.milli)
            .map(|(i, _)| i as u32)
            .take(self.count as usize)
            .collect();
        (fit.len() == self.count as usize).then_some(fit)
    }
}
