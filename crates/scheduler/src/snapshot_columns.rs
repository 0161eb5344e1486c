//! [`NodeColumns`]: the per-node numbers the filters' fast checks and the resource scores read
//! on every node of every cycle, one column (`Vec`) per field, indexed like
//! [`Snapshot::nodes`](crate::snapshot::Snapshot::nodes), and [`NodeHot`], one node's entry in
//! every column. The snapshot writes a node's entries whenever the node or its pods change
//! (add/update/remove node, add/remove pod: the cache's assume and forget go through them), so
//! a cycle reads the columns as they are; nothing is rebuilt per cycle.
//!
//! A scan reads only the columns it needs: the fast filter check three `free_*` columns and the
//! flags, the cpu/memory scores the allocatable, the non-zero requested and the reciprocals of
//! the allocatable (so a score costs multiplications, not divisions; see
//! [`crate::framework::plugins::percent_floor_recip`] for why the results stay exact).

use crate::model::{GPU_MILLI_PER_DEVICE, NodeInfo, RESOURCE_GPU, RESOURCE_GPU_MILLI};

/// One node's entry in every [`NodeColumns`] column, computed from its [`NodeInfo`]
/// ([`NodeHot::of`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeHot {
    /// Allocatable pods minus pods on the node (negative when over-full).
    pub free_pods: i64,
    /// Allocatable minus requested (fit accounting) cpu, millicores, saturating.
    pub free_milli_cpu: i64,
    /// Allocatable minus requested (fit accounting) memory, bytes, saturating.
    pub free_memory: i64,
    /// [`NodeHot::UNSCHEDULABLE`] | [`NodeHot::FILTER_TAINTS`] | [`NodeHot::OTHER_OVERCOMMIT`]
    /// | [`NodeHot::SCORE_OUT_OF_RANGE`] | a taint-set flag ([`NodeHot::TAINT_SET_FIRST`]).
    pub flags: u32,
    /// Allocatable cpu, millicores.
    pub alloc_milli_cpu: i64,
    /// Allocatable memory, bytes.
    pub alloc_memory: i64,
    /// Non-zero requested cpu (scoring: 100m for a container without a request), millicores.
    pub nz_milli_cpu: i64,
    /// Non-zero requested memory (scoring: 200 MiB for a container without a request), bytes.
    pub nz_memory: i64,
    /// Allocatable minus requested `nvidia.com/gpu` (fit accounting), devices.
    pub free_gpu: i64,
    /// Allocatable minus requested `alibabacloud.com/gpu-milli` (fit accounting), milli-GPU.
    pub free_gpu_milli: i64,
    /// Counted devices with nothing on them.
    pub gpu_idle: u32,
    /// The largest free share of a counted device, milli-GPU; `u32::MAX` on a node that does
    /// not count its devices (there `GpuShare` lets every share through).
    pub gpu_free_max: u32,
}

impl NodeHot {
    /// `spec.unschedulable` is set.
    pub const UNSCHEDULABLE: u32 = 1;
    /// The node has a `NoSchedule`/`NoExecute` taint.
    pub const FILTER_TAINTS: u32 = 2;
    /// ephemeral-storage or a scalar resource is requested beyond allocatable on the node.
    pub const OTHER_OVERCOMMIT: u32 = 4;
    /// Allocatable cpu or memory outside `1..2^46`, or non-zero requested cpu or memory outside
    /// `0..2^52`: the columns' float scoring kernel
    /// ([`crate::framework::plugins::node_resources_columns::least_balanced_f64`]) does not
    /// apply; the node is scored by the exact path. No filter forbids it.
    pub const SCORE_OUT_OF_RANGE: u32 = 8;
    /// The first taint-set flag: the node's `NoSchedule`/`NoExecute` taints are the set the
    /// snapshot keeps in slot 0 (slot `k` is this flag shifted left by `k`, up to
    /// [`NodeHot::TAINT_SET_SLOTS`]). A pod that tolerates some of the cluster's sets whole and
    /// not others forbids the flags of the others
    /// ([`Snapshot::untolerated_taint_flags`](crate::snapshot::Snapshot::untolerated_taint_flags)),
    /// so the nodes of a set it tolerates pass TaintToleration's fast check.
    pub const TAINT_SET_FIRST: u32 = 1 << 16;
    /// Slots for distinct sets of `NoSchedule`/`NoExecute` taints.
    pub const TAINT_SET_SLOTS: u32 = 8;
    /// The node's `NoSchedule`/`NoExecute` taints are a set with no slot (every slot was taken
    /// when it entered the snapshot): TaintToleration runs on it whenever the pod tolerates
    /// some filter taint.
    pub const TAINT_SET_OTHER: u32 = 1 << 24;

    /// `[(allocatable, requested) of cpu, of memory]` for resource scoring once a pod asking
    /// `cpu` millicores and `mem` bytes (its scoring request) is added; the same numbers
    /// `calculateResourceAllocatableRequest` reads from a NodeInfo.
    #[inline(always)]
    pub fn score_pairs(&self, cpu: i64, mem: i64) -> [(i64, i64); 2] {
        [
            (self.alloc_milli_cpu, self.nz_milli_cpu.saturating_add(cpu)),
            (self.alloc_memory, self.nz_memory.saturating_add(mem)),
        ]
    }

    /// The entries of `n`.
    pub fn of(n: &NodeInfo) -> NodeHot {
        let over = n.requested.ephemeral_storage > n.allocatable.ephemeral_storage
            || n.requested
                .scalar
                .iter()
                .any(|(name, v)| *v > n.allocatable.scalar(name));
        let pods = i64::try_from(n.pods.len()).unwrap_or(i64::MAX);
        NodeHot {
            free_pods: n.allocatable.allowed_pod_number.saturating_sub(pods),
            free_milli_cpu: n
                .allocatable
                .milli_cpu
                .saturating_sub(n.requested.milli_cpu),
            free_memory: n.allocatable.memory.saturating_sub(n.requested.memory),
            flags: (if n.unschedulable {
                Self::UNSCHEDULABLE
            } else {
                0
            }) | (if n.has_filter_taints {
                Self::FILTER_TAINTS
            } else {
                0
            }) | n.filter_taint_slot
                | (if over { Self::OTHER_OVERCOMMIT } else { 0 })
                | (if score_in_range(n.allocatable.milli_cpu, n.non_zero_requested.milli_cpu)
                    && score_in_range(n.allocatable.memory, n.non_zero_requested.memory)
                {
                    0
                } else {
                    Self::SCORE_OUT_OF_RANGE
                }),
            alloc_milli_cpu: n.allocatable.milli_cpu,
            alloc_memory: n.allocatable.memory,
            nz_milli_cpu: n.non_zero_requested.milli_cpu,
            nz_memory: n.non_zero_requested.memory,
            free_gpu: n
                .allocatable
                .scalar(RESOURCE_GPU)
                .saturating_sub(n.requested.scalar(RESOURCE_GPU)),
            free_gpu_milli: n
                .allocatable
                .scalar(RESOURCE_GPU_MILLI)
                .saturating_sub(n.requested.scalar(RESOURCE_GPU_MILLI)),
            // (Saturating low keeps the fast check conservative.)
            gpu_idle: u32::try_from(n.gpu_used.iter().filter(|&&u| u == 0).count()).unwrap_or(0),
            gpu_free_max: if n.gpu_used.is_empty() {
                u32::MAX
            } else {
                n.gpu_used
                    .iter()
                    .map(|&u| GPU_MILLI_PER_DEVICE.saturating_sub(u))
                    .max()
                    .unwrap_or(0)
            },
        }
    }
}

/// Whether a resource with allocatable `cap` and non-zero requested `nz` is in the float
/// scoring kernel's range: `1 <= cap < 2^46`, `0 <= nz < 2^52` (then `nz` plus a pod request
/// below 2^52 is an exact `f64`; see [`NodeHot::SCORE_OUT_OF_RANGE`]).
fn score_in_range(cap: i64, nz: i64) -> bool {
    (1..1i64 << 46).contains(&cap) && (0..1i64 << 52).contains(&nz)
}

/// `1 / x` for a capacity `x` (0 when `x` is not positive: such a resource scores through the
/// exact path).
#[inline]
fn reciprocal(x: i64) -> f64 {
    if x > 0 { 1.0 / x as f64 } else { 0.0 }
}

/// The scan columns of a snapshot's nodes: struct of arrays, one entry per node index.
#[derive(Debug, Clone, Default)]
pub struct NodeColumns {
    /// [`NodeHot::free_pods`].
    pub free_pods: Vec<i64>,
    /// [`NodeHot::free_milli_cpu`].
    pub free_milli_cpu: Vec<i64>,
    /// [`NodeHot::free_memory`].
    pub free_memory: Vec<i64>,
    /// [`NodeHot::flags`].
    pub flags: Vec<u32>,
    /// [`NodeHot::alloc_milli_cpu`].
    pub alloc_milli_cpu: Vec<i64>,
    /// [`NodeHot::alloc_memory`].
    pub alloc_memory: Vec<i64>,
    /// [`NodeHot::nz_milli_cpu`].
    pub nz_milli_cpu: Vec<i64>,
    /// [`NodeHot::nz_memory`].
    pub nz_memory: Vec<i64>,
    /// `1 / alloc_milli_cpu` (0 when not positive).
    pub inv_milli_cpu: Vec<f64>,
    /// `1 / alloc_memory` (0 when not positive).
    pub inv_memory: Vec<f64>,
    /// `alloc_milli_cpu as f64` (exact where the float kernel reads it: see
    /// [`NodeHot::SCORE_OUT_OF_RANGE`]).
    pub alloc_milli_cpu_f: Vec<f64>,
    /// `alloc_memory as f64`.
    pub alloc_memory_f: Vec<f64>,
    /// `nz_milli_cpu as f64`.
    pub nz_milli_cpu_f: Vec<f64>,
    /// `nz_memory as f64`.
    pub nz_memory_f: Vec<f64>,
    /// [`NodeHot::free_gpu`].
    pub free_gpu: Vec<i64>,
    /// [`NodeHot::free_gpu_milli`].
    pub free_gpu_milli: Vec<i64>,
    /// [`NodeHot::gpu_idle`].
    pub gpu_idle: Vec<u32>,
    /// [`NodeHot::gpu_free_max`].
    pub gpu_free_max: Vec<u32>,
}

impl NodeColumns {
    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.flags.len()
    }

    /// True when there are no nodes.
    pub fn is_empty(&self) -> bool {
        self.flags.is_empty()
    }

    /// Node `i`'s entries.
    pub fn get(&self, i: usize) -> NodeHot {
        NodeHot {
            free_pods: self.free_pods[i],
            free_milli_cpu: self.free_milli_cpu[i],
            free_memory: self.free_memory[i],
            flags: self.flags[i],
            alloc_milli_cpu: self.alloc_milli_cpu[i],
            alloc_memory: self.alloc_memory[i],
            nz_milli_cpu: self.nz_milli_cpu[i],
            nz_memory: self.nz_memory[i],
            free_gpu: self.free_gpu[i],
            free_gpu_milli: self.free_gpu_milli[i],
            gpu_idle: self.gpu_idle[i],
            gpu_free_max: self.gpu_free_max[i],
        }
    }

    /// True when the reciprocals and the float copies of node `i` are those of its integer
    /// entries.
    pub fn reciprocals_consistent(&self, i: usize) -> bool {
        let same = |x: f64, y: f64| x.to_bits() == y.to_bits();
        same(self.inv_milli_cpu[i], reciprocal(self.alloc_milli_cpu[i]))
            && same(self.inv_memory[i], reciprocal(self.alloc_memory[i]))
            && same(self.alloc_milli_cpu_f[i], self.alloc_milli_cpu[i] as f64)
            && same(self.alloc_memory_f[i], self.alloc_memory[i] as f64)
            && same(self.nz_milli_cpu_f[i], self.nz_milli_cpu[i] as f64)
            && same(self.nz_memory_f[i], self.nz_memory[i] as f64)
    }

    /// Write node `i`'s entries (the reciprocals only when the allocatable changed).
    pub fn set(&mut self, i: usize, h: &NodeHot) {
        self.free_pods[i] = h.free_pods;
        self.free_milli_cpu[i] = h.free_milli_cpu;
        self.free_memory[i] = h.free_memory;
        self.flags[i] = h.flags;
        if self.alloc_milli_cpu[i] != h.alloc_milli_cpu {
            self.alloc_milli_cpu[i] = h.alloc_milli_cpu;
            self.inv_milli_cpu[i] = reciprocal(h.alloc_milli_cpu);
            self.alloc_milli_cpu_f[i] = h.alloc_milli_cpu as f64;
        }
        if self.alloc_memory[i] != h.alloc_memory {
            self.alloc_memory[i] = h.alloc_memory;
            self.inv_memory[i] = reciprocal(h.alloc_memory);
            self.alloc_memory_f[i] = h.alloc_memory as f64;
        }
        self.nz_milli_cpu[i] = h.nz_milli_cpu;
        self.nz_memory[i] = h.nz_memory;
        self.nz_milli_cpu_f[i] = h.nz_milli_cpu as f64;
        self.nz_memory_f[i] = h.nz_memory as f64;
        self.free_gpu[i] = h.free_gpu;
        self.free_gpu_milli[i] = h.free_gpu_milli;
        self.gpu_idle[i] = h.gpu_idle;
        self.gpu_free_max[i] = h.gpu_free_max;
    }

    /// Append a node's entries.
    pub fn push(&mut self, h: &NodeHot) {
        self.free_pods.push(h.free_pods);
        self.free_milli_cpu.push(h.free_milli_cpu);
        self.free_memory.push(h.free_memory);
        self.flags.push(h.flags);
        self.alloc_milli_cpu.push(h.alloc_milli_cpu);
        self.alloc_memory.push(h.alloc_memory);
        self.nz_milli_cpu.push(h.nz_milli_cpu);
        self.nz_memory.push(h.nz_memory);
        self.inv_milli_cpu.push(reciprocal(h.alloc_milli_cpu));
        self.inv_memory.push(reciprocal(h.alloc_memory));
        self.alloc_milli_cpu_f.push(h.alloc_milli_cpu as f64);
        self.alloc_memory_f.push(h.alloc_memory as f64);
        self.nz_milli_cpu_f.push(h.nz_milli_cpu as f64);
        self.nz_memory_f.push(h.nz_memory as f64);
        self.free_gpu.push(h.free_gpu);
        self.free_gpu_milli.push(h.free_gpu_milli);
        self.gpu_idle.push(h.gpu_idle);
        self.gpu_free_max.push(h.gpu_free_max);
    }

    /// Remove node `i`'s entries, the last node's taking its place (as `Vec::swap_remove`).
    pub fn swap_remove(&mut self, i: usize) {
        self.free_pods.swap_remove(i);
        self.free_milli_cpu.swap_remove(i);
        self.free_memory.swap_remove(i);
        self.flags.swap_remove(i);
        self.alloc_milli_cpu.swap_remove(i);
        self.alloc_memory.swap_remove(i);
        self.nz_milli_cpu.swap_remove(i);
        self.nz_memory.swap_remove(i);
        self.inv_milli_cpu.swap_remove(i);
        self.inv_memory.swap_remove(i);
        self.alloc_milli_cpu_f.swap_remove(i);
        self.alloc_memory_f.swap_remove(i);
        self.nz_milli_cpu_f.swap_remove(i);
        self.nz_memory_f.swap_remove(i);
        self.free_gpu.swap_remove(i);
        self.free_gpu_milli.swap_remove(i);
        self.gpu_idle.swap_remove(i);
        self.gpu_free_max.swap_remove(i);
    }
}
