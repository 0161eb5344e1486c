//! The workload's typical pods (the FGD paper's target workload `M`): the distinct pod shapes
//! — CPU request (millicores), GPU count, milli-GPU per GPU, allowed GPU models — most popular
//! first, kept until they cover 95 % of the pods, with their popularities renormalised to sum to
//! 1; and [`TypicalPodCounter`], which keeps them up to date in cluster mode. Part of the model
//! because the [`crate::snapshot::Snapshot`] carries them for the GPU fragmentation scorers
//! (`framework::plugins::gpu_frag` measures fragmentation against them).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::labels::Operator;
use crate::model::{LABEL_GPU_MODEL, PodInfo};

/// Share of the pods the typical pod shapes cover (the paper's 95 %).
pub const TYPICAL_POD_COVERAGE: f64 = 0.95;

/// The shape of a pod as the fragmentation measure sees it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PodShape {
    /// CPU request, millicores.
    pub milli_cpu: i64,
    /// GPU demand (count 0: a CPU-only pod).
    pub gpu: GpuRequestKey,
    /// GPU models the pod may run on (sorted), `None` for any.
    pub models: Option<Vec<String>>,
}

/// [`GpuRequest`] as an ordered, hashable key: `(count, milli per device)`.
pub type GpuRequestKey = (u32, u32);

impl PodShape {
    /// The shape of `pod`: its CPU request, GPU demand and the GPU models its `nodeSelector` or
    /// required node affinity allows through the label [`LABEL_GPU_MODEL`] (an `In` requirement;
    /// with several terms, the union of their models, or any model when a term does not
    /// constrain it).
    pub fn of(pod: &PodInfo) -> PodShape {
        PodShape {
            milli_cpu: pod.requests.milli_cpu,
            gpu: (pod.gpu.count, pod.gpu.milli),
            models: pod_gpu_models(pod),
        }
    }
}

/// The GPU models `pod` is restricted to, `None` when it may run on any.
pub fn pod_gpu_models(pod: &PodInfo) -> Option<Vec<String>> {
    let mut out: Option<Vec<String>> = pod
        .node_selector
        .get(LABEL_GPU_MODEL)
        .map(|m| vec![m.to_string()]);
    if let Some(sel) = &pod.required_node_affinity {
        let mut union: Vec<String> = Vec::new();
        let mut any = false;
        for term in sel.terms.iter().filter(|t| t.valid) {
            match term
                .expressions
                .iter()
                .find(|r| r.key == LABEL_GPU_MODEL && r.op == Operator::In)
            {
                Some(r) => union.extend(r.values.iter().cloned()),
                None => any = true,
            }
        }
        if !any && !sel.terms.is_empty() {
            out = Some(match out {
                Some(ns) => union.into_iter().filter(|m| ns.contains(m)).collect(),
                None => union,
            });
        }
    }
    out.map(|mut v| {
        v.sort();
        v.dedup();
        v
    })
}

/// One typical pod: a shape and its renormalised popularity.
#[derive(Debug, Clone, PartialEq)]
pub struct TypicalPod {
    /// The shape.
    pub shape: PodShape,
    /// Mean memory request of the pods of this shape, bytes (used by [`FragModel::memory`]).
    pub memory: i64,
    /// Popularity `p_m` (the typical pods' popularities sum to 1).
    pub popularity: f64,
}

static GENERATION: AtomicU64 = AtomicU64::new(1);

/// The workload's typical pods (the target workload `M` of the paper).
#[derive(Debug, Clone, PartialEq)]
pub struct TypicalPods {
    /// Most popular first.
    pub pods: Vec<TypicalPod>,
    /// Unique per distribution built, so that memoised fragments of another distribution are
    /// never reused.
    pub generation: u64,
    /// Distinct CPU requests of the typical pods, ascending.
    pub(crate) cpu_levels: Vec<i64>,
    /// Distinct memory requests of the typical pods, ascending.
    pub(crate) mem_levels: Vec<i64>,
    /// `k ×` the CPU request of each typical pod, k = 1..=8, distinct, ascending.
    pub(crate) cpu_multiples: Vec<i64>,
    /// `k ×` the memory request of each typical pod, k = 1..=8, distinct, ascending.
    pub(crate) mem_multiples: Vec<i64>,
}

impl TypicalPods {
    /// The typical pods of `pods`: shapes counted, most popular first (ties in shape order),
    /// kept until they cover [`TYPICAL_POD_COVERAGE`] of the pods, popularities renormalised.
    /// No pods give an empty distribution (every fragment is then 0).
    pub fn from_pods<'a>(pods: impl IntoIterator<Item = &'a PodInfo>) -> TypicalPods {
        let mut counts: HashMap<PodShape, (u64, i128)> = HashMap::new();
        for p in pods {
            let e = counts.entry(PodShape::of(p)).or_insert((0, 0));
            e.0 += 1;
            e.1 += i128::from(p.requests.memory);
        }
        Self::from_counts(
            counts
                .into_iter()
                .map(|(s, (n, mem))| {
                    let mean = i64::try_from(mem / i128::from(n.max(1))).unwrap_or(i64::MAX);
                    (s, n, mean)
                })
                .collect(),
        )
    }

    /// From `(shape, number of pods, mean memory request in bytes)`.
    pub fn from_counts(mut counts: Vec<(PodShape, u64, i64)>) -> TypicalPods {
        counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let total: u64 = counts.iter().map(|c| c.1).sum();
        let mut kept = Vec::new();
        let mut covered = 0u64;
        for (shape, n, memory) in counts {
            if n == 0 || (total > 0 && covered as f64 >= TYPICAL_POD_COVERAGE * total as f64) {
                break;
            }
            covered += n;
            kept.push((shape, n, memory));
        }
        let pods: Vec<TypicalPod> = kept
            .into_iter()
            .map(|(shape, n, memory)| TypicalPod {
                shape,
                memory,
                popularity: n as f64 / covered as f64,
            })
            .collect();
        let mut cpu_levels: Vec<i64> = pods.iter().map(|p| p.shape.milli_cpu).collect();
        cpu_levels.sort_unstable();
        cpu_levels.dedup();
        let mut mem_levels: Vec<i64> = pods.iter().map(|p| p.memory).collect();
        mem_levels.sort_unstable();
        mem_levels.dedup();
        let multiples = |levels: &[i64]| {
            let mut v: Vec<i64> = levels
                .iter()
                .flat_map(|&l| (1..=8).map(move |k| l.saturating_mul(k)))
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        TypicalPods {
            pods,
            generation: GENERATION.fetch_add(1, Ordering::Relaxed),
            cpu_multiples: multiples(&cpu_levels),
            mem_multiples: multiples(&mem_levels),
            cpu_levels,
            mem_levels,
        }
    }

    /// Whether the distribution is empty.
    pub fn is_empty(&self) -> bool {
        self.pods.is_empty()
    }
}

/// The typical pods of cluster mode, kept up to date as pods come and go: the pods the
/// scheduler has seen — pending (queued, being scheduled or being bound) and running — counted
/// by shape, keyed by `namespace/name`. The controller calls [`TypicalPodCounter::set`] with a
/// pod's current version (or `None` once it is gone) whenever it changes; the counts move by
/// that pod alone (no rescan), and [`TypicalPodCounter::typical_pods`] rebuilds the
/// distribution ([`TypicalPods::from_counts`]: most popular shapes covering 95 %) only when a
/// count changed since the last call.
#[derive(Debug, Default)]
pub struct TypicalPodCounter {
    /// The shape and memory request (bytes) of each pod counted, by key.
    pods: HashMap<String, (PodShape, i64)>,
    /// Per shape: number of pods and their summed memory request (bytes).
    counts: HashMap<PodShape, (u64, i128)>,
    /// The distribution of the counts as of the last [`TypicalPodCounter::typical_pods`].
    current: Option<Arc<TypicalPods>>,
    changed: bool,
}

impl TypicalPodCounter {
    /// No pods.
    pub fn new() -> TypicalPodCounter {
        TypicalPodCounter::default()
    }

    /// The pod `key` is now `pod` (`None`: no longer seen). Its former version, if any, leaves
    /// the counts; a version of the same shape and memory changes nothing.
    pub fn set(&mut self, key: &str, pod: Option<&PodInfo>) {
        let new = pod.map(|p| (PodShape::of(p), p.requests.memory));
        if self.pods.get(key) == new.as_ref() {
            return;
        }
        let old = match &new {
            Some(n) => self.pods.insert(key.to_string(), n.clone()),
            None => self.pods.remove(key),
        };
        if let Some((shape, memory)) = old
            && let Some(c) = self.counts.get_mut(&shape)
        {
            c.0 -= 1;
            c.1 -= i128::from(memory);
            if c.0 == 0 {
                self.counts.remove(&shape);
            }
        }
        if let Some((shape, memory)) = new {
            let c = self.counts.entry(shape).or_insert((0, 0));
            c.0 += 1;
            c.1 += i128::from(memory);
        }
        self.changed = true;
    }

    /// Number of pods counted.
    pub fn len(&self) -> usize {
        self.pods.len()
    }

    /// Whether no pod is counted.
    pub fn is_empty(&self) -> bool {
        self.pods.is_empty()
    }

    /// The typical pods of the pods counted; `None` when there are none (the scorers then fall
    /// back to the pods on the snapshot's nodes). The same `Arc` until a count changes, so the
    /// scorers' memo of node fragments carries over between cycles.
    pub fn typical_pods(&mut self) -> Option<Arc<TypicalPods>> {
        if self.changed {
            self.changed = false;
            self.current = (!self.counts.is_empty()).then(|| {
                Arc::new(TypicalPods::from_counts(
                    self.counts
                        .iter()
                        .map(|(s, &(n, mem))| {
                            let mean =
                                i64::try_from(mem / i128::from(n.max(1))).unwrap_or(i64::MAX);
                            (s.clone(), n, mean)
                        })
                        .collect(),
                ))
            });
        }
        self.current.clone()
    }
}
