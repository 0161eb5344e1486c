//! Reference scans: the least work a scheduling cycle of the sample policy's resource plugins
//! can do per node, to measure the real cycle against in the same run.
//!
//! Both scans filter on fit (cpu, memory, pod count: NodeResourcesFit) and score
//! LeastRequested + BalancedResourceAllocation (v1.22 formulas, weight 1 each) on the scoring
//! requests (non-zero cpu/memory defaults), keep the highest total (first index on ties), and
//! account the pod on the chosen node, as the real cycle's assume does. Nothing else: no
//! NodePorts, no volumes, no selectors, no normalization, no tie sampling; the real cycle runs
//! those too, so the reference is a floor, not an equivalent.
//!
//! - [`AosNodes`]: one record per node, exact integer arithmetic (the Balanced fraction
//!   difference compared in `i128` cross products instead of floats).
//! - [`SoaNodes`]: one column per field and precomputed reciprocals of the capacities, so the
//!   score is two multiplications per resource and the filter reads three columns.

/// A pod as the reference scans see it: requests for fit and for scoring.
#[derive(Debug, Clone, Copy)]
pub struct RefPod {
    /// CPU request for fit, millicores.
    pub milli_cpu: i64,
    /// Memory request for fit, bytes.
    pub memory: i64,
    /// CPU request for scoring (100m when none), millicores.
    pub non_zero_milli_cpu: i64,
    /// Memory request for scoring (200 MiB when none), bytes.
    pub non_zero_memory: i64,
}

/// One node's record in [`AosNodes`].
#[derive(Debug, Clone, Copy)]
pub struct AosNode {
    /// Allocatable cpu, millicores.
    pub alloc_cpu: i64,
    /// Allocatable memory, bytes.
    pub alloc_mem: i64,
    /// Allocatable pods.
    pub alloc_pods: i64,
    /// Requested cpu (fit), millicores.
    pub req_cpu: i64,
    /// Requested memory (fit), bytes.
    pub req_mem: i64,
    /// Pods on the node.
    pub pods: i64,
    /// Requested cpu (scoring), millicores.
    pub nz_cpu: i64,
    /// Requested memory (scoring), bytes.
    pub nz_mem: i64,
}

/// Nodes as an array of records.
#[derive(Debug, Clone, Default)]
pub struct AosNodes {
    /// The records, in snapshot order.
    pub nodes: Vec<AosNode>,
}

/// `(capacity - requested) * 100 / capacity`, 0 when requested exceeds capacity or capacity is 0
/// (`leastRequestedScore`, v1.22).
fn least_requested(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 || requested > capacity {
        return 0;
    }
    (capacity - requested) * 100 / capacity
}

impl AosNodes {
    /// Empty nodes with the given `(cpu millicores, memory bytes, pods)` allocatable.
    pub fn new(allocatable: impl IntoIterator<Item = (i64, i64, i64)>) -> AosNodes {
        AosNodes {
            nodes: allocatable
                .into_iter()
                .map(|(c, m, p)| AosNode {
                    alloc_cpu: c,
                    alloc_mem: m,
                    alloc_pods: p,
                    req_cpu: 0,
                    req_mem: 0,
                    pods: 0,
                    nz_cpu: 0,
                    nz_mem: 0,
                })
                .collect(),
        }
    }

    /// Filter, score and pick a node for `pod`, then account it there; `None` when no node fits.
    pub fn schedule(&mut self, pod: &RefPod) -> Option<usize> {
        let mut best: Option<(usize, i64)> = None;
        for (i, n) in self.nodes.iter().enumerate() {
            if n.pods + 1 > n.alloc_pods
                || n.req_cpu + pod.milli_cpu > n.alloc_cpu
                || n.req_mem + pod.memory > n.alloc_mem
            {
                continue;
            }
            let (rc, rm) = (
                n.nz_cpu + pod.non_zero_milli_cpu,
                n.nz_mem + pod.non_zero_memory,
            );
            let lr = (least_requested(rc, n.alloc_cpu) + least_requested(rm, n.alloc_mem)) / 2;
            // (1 - |rc/cc - rm/cm|) * 100, truncated, in exact integers:
            // 100 - ceil(|rc*cm - rm*cc| * 100 / (cc*cm)).
            let bal = if rc >= n.alloc_cpu || rm >= n.alloc_mem {
                0
            } else {
                let (cc, cm) = (i128::from(n.alloc_cpu), i128::from(n.alloc_mem));
                let diff = (i128::from(rc) * cm - i128::from(rm) * cc).abs();
                let den = cc * cm;
                (100 - (diff * 100 + den - 1) / den) as i64
            };
            let total = lr + bal;
            if best.is_none_or(|(_, s)| total > s) {
                best = Some((i, total));
            }
        }
        let (i, _) = best?;
        let n = &mut self.nodes[i];
        n.pods += 1;
        n.req_cpu += pod.milli_cpu;
        n.req_mem += pod.memory;
        n.nz_cpu += pod.non_zero_milli_cpu;
        n.nz_mem += pod.non_zero_memory;
        Some(i)
    }
}

/// Nodes as columns, with reciprocals of the allocatable cpu and memory.
#[derive(Debug, Clone, Default)]
pub struct SoaNodes {
    /// Allocatable cpu, millicores.
    pub alloc_cpu: Vec<i64>,
    /// Allocatable memory, bytes.
    pub alloc_mem: Vec<i64>,
    /// Allocatable pods.
    pub alloc_pods: Vec<i64>,
    /// Requested cpu (fit), millicores.
    pub req_cpu: Vec<i64>,
    /// Requested memory (fit), bytes.
    pub req_mem: Vec<i64>,
    /// Pods on the node.
    pub pods: Vec<i64>,
    /// Requested cpu (scoring), millicores.
    pub nz_cpu: Vec<f64>,
    /// Requested memory (scoring), bytes.
    pub nz_mem: Vec<f64>,
    /// `1 / alloc_cpu` (0 when the node has none).
    pub inv_cpu: Vec<f64>,
    /// `1 / alloc_mem` (0 when the node has none).
    pub inv_mem: Vec<f64>,
}

impl SoaNodes {
    /// Empty nodes with the given `(cpu millicores, memory bytes, pods)` allocatable.
    pub fn new(allocatable: impl IntoIterator<Item = (i64, i64, i64)>) -> SoaNodes {
        let mut s = SoaNodes::default();
        let inv = |x: i64| if x > 0 { 1.0 / x as f64 } else { 0.0 };
        for (c, m, p) in allocatable {
            s.alloc_cpu.push(c);
            s.alloc_mem.push(m);
            s.alloc_pods.push(p);
            s.req_cpu.push(0);
            s.req_mem.push(0);
            s.pods.push(0);
            s.nz_cpu.push(0.0);
            s.nz_mem.push(0.0);
            s.inv_cpu.push(inv(c));
            s.inv_mem.push(inv(m));
        }
        s
    }

    /// Filter, score and pick a node for `pod`, then account it there; `None` when no node fits.
    pub fn schedule(&mut self, pod: &RefPod) -> Option<usize> {
        let (pc, pm) = (pod.non_zero_milli_cpu as f64, pod.non_zero_memory as f64);
        let mut best: Option<(usize, i64)> = None;
        for i in 0..self.alloc_cpu.len() {
            if self.pods[i] >= self.alloc_pods[i]
                || self.req_cpu[i] + pod.milli_cpu > self.alloc_cpu[i]
                || self.req_mem[i] + pod.memory > self.alloc_mem[i]
            {
                continue;
            }
            let fc = (self.nz_cpu[i] + pc) * self.inv_cpu[i];
            let fm = (self.nz_mem[i] + pm) * self.inv_mem[i];
            // Truncation, not `floor` (a libm call on baseline x86-64): the values are >= 0.
            let lr =
                (((1.0 - fc).max(0.0) * 100.0) as i64 + ((1.0 - fm).max(0.0) * 100.0) as i64) / 2;
            let bal = if fc >= 1.0 || fm >= 1.0 {
                0
            } else {
                ((1.0 - (fc - fm).abs()) * 100.0) as i64
            };
            let total = lr + bal;
            if best.is_none_or(|(_, s)| total > s) {
                best = Some((i, total));
            }
        }
        let (i, _) = best?;
        self.pods[i] += 1;
        self.req_cpu[i] += pod.milli_cpu;
        self.req_mem[i] += pod.memory;
        self.nz_cpu[i] += pc;
        self.nz_mem[i] += pm;
        Some(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GI: i64 = 1 << 30;
    const MI: i64 = 1 << 20;

    fn perf_pod() -> RefPod {
        RefPod {
            milli_cpu: 100,
            memory: 500 * MI,
            non_zero_milli_cpu: 100,
            non_zero_memory: 500 * MI,
        }
    }

    /// Both layouts pick the same nodes as each other, spread the pods (LeastRequested), and stop
    /// when the nodes are full.
    #[test]
    fn both_scans_agree_and_fill_the_nodes() {
        let alloc = [
            (4000, 32 * GI, 3),
            (8000, 16 * GI, 110),
            (2000, 64 * GI, 110),
        ];
        let (mut a, mut s) = (AosNodes::new(alloc), SoaNodes::new(alloc));
        let pod = perf_pod();
        let mut placed = [0usize; 3];
        for _ in 0..200 {
            let (x, y) = (a.schedule(&pod), s.schedule(&pod));
            assert_eq!(x, y);
            match x {
                Some(i) => placed[i] += 1,
                None => break,
            }
        }
        // cpu bound: 40 + 80 + 20 would be 140 pods, but node 0 holds 3 pods and node 1's
        // 16 GiB hold 32 pods of 500 MiB.
        assert_eq!(placed, [3, 32, 20]);
        assert_eq!(a.schedule(&pod), None);
    }

    /// v1.22's scores on one node: 4 cpu / 32 GiB, pod 100m / 500 MiB on an empty node:
    /// LeastRequested (97 + 98) / 2 = 97, Balanced (1 - |0.025 - 0.01526|) * 100 = 99.
    #[test]
    fn the_first_choice_is_the_node_with_the_higher_v1_22_score() {
        let alloc = [(4000, 32 * GI, 110), (4000, 4 * GI, 110)];
        let mut a = AosNodes::new(alloc);
        assert_eq!(a.schedule(&perf_pod()), Some(0));
    }
}
