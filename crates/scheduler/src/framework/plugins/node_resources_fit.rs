//! `NodeResourcesFit` filter (legacy predicate `PodFitsResources`): the node must have room for
//! one more pod and for the pod's requests of cpu, memory, ephemeral-storage and every scalar
//! resource. Follows `pkg/scheduler/framework/plugins/noderesources/fit.go` (v1.22,
//! `fitsRequest`): all insufficient resources are reported, the pod count first.

use std::borrow::Cow;

use crate::framework::{Code, CycleState, FastCheck, FilterPlugin, Status};
use crate::model::PodInfo;
use crate::model::{NodeInfo, RESOURCE_GPU, RESOURCE_GPU_MILLI, is_extended_resource_name};
use crate::snapshot::NodeHot;

/// Plugin name.
pub const NAME: &str = "NodeResourcesFit";
/// Reason when the node already runs `allocatable.pods` pods.
pub const ERR_REASON_TOO_MANY_PODS: &str = "Too many pods";

/// One resource the node lacks (`InsufficientResource`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InsufficientResource {
    /// Resource name (`cpu`, `memory`, `pods`, `nvidia.com/gpu`, ...).
    pub resource: String,
    /// Reason text (`Insufficient cpu`, `Too many pods`).
    pub reason: Cow<'static, str>,
    /// Requested by the pod.
    pub requested: i64,
    /// Already used on the node.
    pub used: i64,
    /// Allocatable on the node.
    pub capacity: i64,
}

/// The NodeResourcesFit filter.
#[derive(Debug, Default, Clone)]
pub struct NodeResourcesFit {
    /// Extended resources not checked (`ignoredResources`).
    pub ignored_resources: Vec<String>,
}

/// Every resource `pod` lacks on `node` (`fitsRequest`).
pub fn fits_request(
    pod: &PodInfo,
    node: &NodeInfo,
    ignored: &[String],
) -> Vec<InsufficientResource> {
    let mut out = Vec::new();
    for_each_insufficient(
        pod,
        node,
        ignored,
        |resource, reason, requested, used, capacity| {
            out.push(InsufficientResource {
                resource: resource.to_string(),
                reason,
                requested,
                used,
                capacity,
            });
        },
    );
    out
}

/// The reason text for a scalar resource: static for the GPU resources (a failing GPU pod then
/// allocates no text per node), else `Insufficient <name>`.
fn insufficient_scalar(name: &str) -> Cow<'static, str> {
    match name {
        RESOURCE_GPU => Cow::Borrowed(REASON_INSUFFICIENT_GPU),
        RESOURCE_GPU_MILLI => Cow::Borrowed(REASON_INSUFFICIENT_GPU_MILLI),
        _ => Cow::Owned(format!("Insufficient {name}")),
    }
}

const REASON_INSUFFICIENT_GPU: &str = "Insufficient nvidia.com/gpu";
const REASON_INSUFFICIENT_GPU_MILLI: &str = "Insufficient alibabacloud.com/gpu-milli";

/// `fitsRequest` as a visitor: calls `f(resource, reason, requested, used, capacity)` for every
/// resource `pod` lacks on `node`, the pod count first, without building a list.
fn for_each_insufficient(
    pod: &PodInfo,
    node: &NodeInfo,
    ignored: &[String],
    mut f: impl FnMut(&str, Cow<'static, str>, i64, i64, i64),
) {
    let pods_on_node = node.pods.len() as i64;
    if pods_on_node + 1 > node.allocatable.allowed_pod_number {
        f(
            "pods",
            Cow::Borrowed(ERR_REASON_TOO_MANY_PODS),
            1,
            pods_on_node,
            node.allocatable.allowed_pod_number,
        );
    }
    let req = &pod.requests;
    if req.is_zero_request() {
        return;
    }
    let a = &node.allocatable;
    let r = &node.requested;
    if a.milli_cpu < req.milli_cpu.saturating_add(r.milli_cpu) {
        f(
            "cpu",
            Cow::Borrowed("Insufficient cpu"),
            req.milli_cpu,
            r.milli_cpu,
            a.milli_cpu,
        );
    }
    if a.memory < req.memory.saturating_add(r.memory) {
        f(
            "memory",
            Cow::Borrowed("Insufficient memory"),
            req.memory,
            r.memory,
            a.memory,
        );
    }
    if a.ephemeral_storage < req.ephemeral_storage.saturating_add(r.ephemeral_storage) {
        f(
            "ephemeral-storage",
            Cow::Borrowed("Insufficient ephemeral-storage"),
            req.ephemeral_storage,
            r.ephemeral_storage,
            a.ephemeral_storage,
        );
    }
    for (name, q) in &req.scalar {
        // v1.22 compares zero-quantity requests too; only extended resources can be ignored.
        if !ignored.is_empty()
            && is_extended_resource_name(name)
            && ignored.iter().any(|i| i == name)
        {
            continue;
        }
        let used = r.scalar(name);
        let cap = a.scalar(name);
        if cap < q.saturating_add(used) {
            f(name, insufficient_scalar(name), *q, used, cap);
        }
    }
}

impl FilterPlugin for NodeResourcesFit {
    fn name(&self) -> &'static str {
        NAME
    }

    fn fast_check(&self, pod: &PodInfo) -> Option<FastCheck> {
        // For requests of cpu, memory and the GPU resources (`nvidia.com/gpu`,
        // `alibabacloud.com/gpu-milli`, from the node's columns); anything else takes the full
        // check. Checking an ignored GPU resource only makes the check more conservative.
        let q = &pod.requests;
        // (The check reads allocatable - requested: exact for requests >= 0 only.)
        if q.ephemeral_storage != 0 || q.milli_cpu < 0 || q.memory < 0 {
            return None;
        }
        let (mut gpu, mut milli) = (0, 0);
        for (name, v) in &q.scalar {
            match name.as_str() {
                RESOURCE_GPU => gpu = *v,
                RESOURCE_GPU_MILLI => milli = *v,
                _ => return None,
            }
        }
        Some(FastCheck {
            forbidden_flags: NodeHot::OTHER_OVERCOMMIT,
            fits: Some((q.milli_cpu, q.memory)),
            gpu_fits: (!q.scalar.is_empty()).then_some((gpu, milli)),
            gpu_devices: None,
        })
    }

    #[inline]
    fn filter(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        // One pass over the resources; nothing is allocated unless one is short.
        let mut reasons = Vec::new();
        for_each_insufficient(pod, node, &self.ignored_resources, |_, reason, _, _, _| {
            reasons.push(reason);
        });
        if reasons.is_empty() {
            return Status::success();
        }
        Status {
            code: Code::Unschedulable,
            reasons,
            plugin: NAME,
        }
    }

    #[inline]
    fn filter_code(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Code {
        let mut short = false;
        for_each_insufficient(pod, node, &self.ignored_resources, |_, _, _, _, _| {
            short = true;
        });
        if short {
            Code::Unschedulable
        } else {
            Code::Success
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::framework::plugins::testutil::{
        Res, filter_via_batch, node, outcome, pod, res, want,
    };
    use crate::snapshot::Snapshot;

    const EXTENDED_RESOURCE_A: &str = "example.com/aaa";
    const EXTENDED_RESOURCE_B: &str = "example.com/bbb";
    const KUBERNETES_IO_RESOURCE_A: &str = "kubernetes.io/something";
    const KUBERNETES_IO_RESOURCE_B: &str = "subdomain.kubernetes.io/something";
    const HUGE_PAGE_RESOURCE_A: &str = "hugepages-2Mi";

    /// `makeAllocatableResources(milliCPU, memory, pods, extendedA, storage, hugePageA)`, used as
    /// both capacity and allocatable (`makeResources(...).Capacity`).
    fn resources(
        milli_cpu: i64,
        memory: i64,
        pods: i64,
        extended_a: i64,
        storage: i64,
        huge_page_a: i64,
    ) -> Vec<(&'static str, String)> {
        vec![
            ("cpu", format!("{milli_cpu}m")),
            ("memory", memory.to_string()),
            ("pods", pods.to_string()),
            (EXTENDED_RESOURCE_A, extended_a.to_string()),
            ("ephemeral-storage", storage.to_string()),
            (HUGE_PAGE_RESOURCE_A, huge_page_a.to_string()),
        ]
    }

    fn as_pairs<'a>(v: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
        v.iter().map(|(k, q)| (*k, q.as_str())).collect()
    }

    /// `newResourcePod(usage...)` + `newResourceInitPod(pod, initUsage...)` +
    /// `newResourceOverheadPod(pod, overhead)`.
    fn resource_pod(usage: &[Res], init: &[Res], overhead: &[(&str, &str)]) -> PodInfo {
        let mut p = pod("p");
        for r in usage {
            p = p.container_res(r);
        }
        for r in init {
            p = p.init_container_res(r);
        }
        if !overhead.is_empty() {
            p = p.overhead(overhead);
        }
        p.info()
    }

    /// `framework.NewNodeInfo(existing...)` + `SetNode(node)` with `capacity` (may be empty) and
    /// `allocatable`.
    fn node_info(
        capacity: &[(&'static str, String)],
        allocatable: &[(&'static str, String)],
        existing: &[Res],
    ) -> NodeInfo {
        let existing: Vec<_> = existing
            .iter()
            .map(|r| pod("existing").container_res(r))
            .collect();
        node("machine1")
            .capacity(&as_pairs(capacity))
            .allocatable(&as_pairs(allocatable))
            .info_with(&existing)
    }

    fn insufficient(
        resource: &str,
        requested: i64,
        used: i64,
        capacity: i64,
    ) -> InsufficientResource {
        InsufficientResource {
            resource: resource.to_string(),
            reason: Cow::Owned(if resource == "pods" {
                ERR_REASON_TOO_MANY_PODS.to_string()
            } else {
                format!("Insufficient {resource}")
            }),
            requested,
            used,
            capacity,
        }
    }

    fn unschedulable(reasons: &[&str]) -> (Code, Vec<String>) {
        want(Code::Unschedulable, reasons)
    }

    fn fits() -> (Code, Vec<String>) {
        want(Code::Success, &[])
    }

    fn run_filter(plugin: &NodeResourcesFit, p: &PodInfo, n: &NodeInfo) -> Status {
        let mut state = CycleState::new();
        let pre = plugin.pre_filter(&mut state, p, &Snapshot::new());
        assert!(pre.is_success(), "PreFilter failed: {pre:?}");
        let got = plugin.filter(&state, p, n);
        let batch = filter_via_batch(plugin, &state, p, n);
        assert_eq!(
            outcome(&batch),
            outcome(&got),
            "filter_nodes disagrees with filter"
        );
        got
    }

    struct Case {
        name: &'static str,
        pod: PodInfo,
        existing: Vec<Res>,
        ignored_resources: Vec<String>,
        want_status: (Code, Vec<String>),
        want_insufficient: Vec<InsufficientResource>,
    }

    /// Upstream `kubernetes/kubernetes` `pkg/scheduler/framework/plugins/noderesources/fit_test.go`,
    /// `TestEnoughRequests` (table read from the v1.19-era copy, index id 175522939, and the fork
    /// `o0tigerliu0o/kubernetes@040c9cf7c8b220a009bd66fc2e69635be9983110`; identical through 1.24,
    /// id 160703178). No exact v1.22 copy was available: the table is the one shared by 1.19–1.24
    /// minus the 1.24+ row "skip checking extended resource request with quantity zero via
    /// resource groups". The IgnoredResourceGroups row is not ported (argument not supported).
    #[test]
    fn test_enough_requests() {
        let aaa = EXTENDED_RESOURCE_A;
        let bbb = EXTENDED_RESOURCE_B;
        let hp = HUGE_PAGE_RESOURCE_A;
        let k8s_a = KUBERNETES_IO_RESOURCE_A;
        let k8s_b = KUBERNETES_IO_RESOURCE_B;
        let cases = vec![
            Case {
                name: "no resources requested always fits",
                pod: pod("p").info(),
                existing: vec![res(10, 20)],
                ignored_resources: vec![],
                want_status: fits(),
                want_insufficient: vec![],
            },
            Case {
                // 1 > 10-10 for cpu and for memory.
                name: "too many resources fails",
                pod: resource_pod(&[res(1, 1)], &[], &[]),
                existing: vec![res(10, 20)],
                ignored_resources: vec![],
                want_status: unschedulable(&["Insufficient cpu", "Insufficient memory"]),
                want_insufficient: vec![
                    insufficient("cpu", 1, 10, 10),
                    insufficient("memory", 1, 20, 20),
                ],
            },
            Case {
                // pod cpu = max(1, 3) = 3 > 10-8 = 2.
                name: "too many resources fails due to init container cpu",
                pod: resource_pod(&[res(1, 1)], &[res(3, 1)], &[]),
                existing: vec![res(8, 19)],
                ignored_resources: vec![],
                want_status: unschedulable(&["Insufficient cpu"]),
                want_insufficient: vec![insufficient("cpu", 3, 8, 10)],
            },
            Case {
                name: "too many resources fails due to highest init container cpu",
                pod: resource_pod(&[res(1, 1)], &[res(3, 1), res(2, 1)], &[]),
                existing: vec![res(8, 19)],
                ignored_resources: vec![],
                want_status: unschedulable(&["Insufficient cpu"]),
                want_insufficient: vec![insufficient("cpu", 3, 8, 10)],
            },
            Case {
                name: "too many resources fails due to init container memory",
                pod: resource_pod(&[res(1, 1)], &[res(1, 3)], &[]),
                existing: vec![res(9, 19)],
                ignored_resources: vec![],
                want_status: unschedulable(&["Insufficient memory"]),
                want_insufficient: vec![insufficient("memory", 3, 19, 20)],
            },
            Case {
                name: "too many resources fails due to highest init container memory",
                pod: resource_pod(&[res(1, 1)], &[res(1, 3), res(1, 2)], &[]),
                existing: vec![res(9, 19)],
                ignored_resources: vec![],
                want_status: unschedulable(&["Insufficient memory"]),
                want_insufficient: vec![insufficient("memory", 3, 19, 20)],
            },
            Case {
                name: "init container fits because it's the max, not sum, of containers and init containers",
                pod: resource_pod(&[res(1, 1)], &[res(1, 1)], &[]),
                existing: vec![res(9, 19)],
                ignored_resources: vec![],
                want_status: fits(),
                want_insufficient: vec![],
            },
            Case {
                name: "multiple init containers fit because it's the max, not sum, of containers and init containers",
                pod: resource_pod(&[res(1, 1)], &[res(1, 1), res(1, 1)], &[]),
                existing: vec![res(9, 19)],
                ignored_resources: vec![],
                want_status: fits(),
                want_insufficient: vec![],
            },
            Case {
                name: "both resources fit",
                pod: resource_pod(&[res(1, 1)], &[], &[]),
                existing: vec![res(5, 5)],
                ignored_resources: vec![],
                want_status: fits(),
                want_insufficient: vec![],
            },
            Case {
                name: "one resource memory fits",
                pod: resource_pod(&[res(2, 1)], &[], &[]),
                existing: vec![res(9, 5)],
                ignored_resources: vec![],
                want_status: unschedulable(&["Insufficient cpu"]),
                want_insufficient: vec![insufficient("cpu", 2, 9, 10)],
            },
            Case {
                name: "one resource cpu fits",
                pod: resource_pod(&[res(1, 2)], &[], &[]),
                existing: vec![res(5, 19)],
                ignored_resources: vec![],
                want_status: unschedulable(&["Insufficient memory"]),
                want_insufficient: vec![insufficient("memory", 2, 19, 20)],
            },
            Case {
                name: "equal edge case",
                pod: resource_pod(&[res(5, 1)], &[], &[]),
                existing: vec![res(5, 19)],
                ignored_resources: vec![],
                want_status: fits(),
                want_insufficient: vec![],
            },
            Case {
                // max(4, 5) = 5 <= 10-5.
                name: "equal edge case for init container",
                pod: resource_pod(&[res(4, 1)], &[res(5, 1)], &[]),
                existing: vec![res(5, 19)],
                ignored_resources: vec![],
                want_status: fits(),
                want_insufficient: vec![],
            },
            Case {
                name: "extended resource fits",
                pod: resource_pod(&[Res::default().with(aaa, 1)], &[], &[]),
                existing: vec![Res::default()],
                ignored_resources: vec![],
                want_status: fits(),
                want_insufficient: vec![],
            },
            Case {
                name: "extended resource fits for init container",
                pod: resource_pod(&[Res::default()], &[Res::default().with(aaa, 1)], &[]),
                existing: vec![Res::default()],
                ignored_resources: vec![],
                want_status: fits(),
                want_insufficient: vec![],
            },
            Case {
                // existing 0, pod asks 10 > 5.
                name: "extended resource capacity enforced",
                pod: resource_pod(&[res(1, 1).with(aaa, 10)], &[], &[]),
                existing: vec![res(0, 0).with(aaa, 0)],
                ignored_resources: vec![],
                want_status: unschedulable(&["Insufficient example.com/aaa"]),
                want_insufficient: vec![insufficient(aaa, 10, 0, 5)],
            },
            Case {
                name: "extended resource capacity enforced for init container",
                pod: resource_pod(&[Res::default()], &[res(1, 1).with(aaa, 10)], &[]),
                existing: vec![res(0, 0).with(aaa, 0)],
                ignored_resources: vec![],
                want_status: unschedulable(&["Insufficient example.com/aaa"]),
                want_insufficient: vec![insufficient(aaa, 10, 0, 5)],
            },
            Case {
                name: "extended resource allocatable enforced",
                pod: resource_pod(&[res(1, 1).with(aaa, 1)], &[], &[]),
                existing: vec![res(0, 0).with(aaa, 5)],
                ignored_resources: vec![],
                want_status: unschedulable(&["Insufficient example.com/aaa"]),
                want_insufficient: vec![insufficient(aaa, 1, 5, 5)],
            },
            Case {
                name: "extended resource allocatable enforced for init container",
                pod: resource_pod(&[Res::default()], &[res(1, 1).with(aaa, 1)], &[]),
                existing: vec![res(0, 0).with(aaa, 5)],
                ignored_resources: vec![],
                want_status: unschedulable(&["Insufficient example.com/aaa"]),
                want_insufficient: vec![insufficient(aaa, 1, 5, 5)],
            },
            Case {
                // 3+3 = 6 > 5-2.
                name: "extended resource allocatable enforced for multiple containers",
                pod: resource_pod(&[res(1, 1).with(aaa, 3), res(1, 1).with(aaa, 3)], &[], &[]),
                existing: vec![res(0, 0).with(aaa, 2)],
                ignored_resources: vec![],
                want_status: unschedulable(&["Insufficient example.com/aaa"]),
                want_insufficient: vec![insufficient(aaa, 6, 2, 5)],
            },
            Case {
                // init max(3, 3) = 3 <= 3.
                name: "extended resource allocatable admits multiple init containers",
                pod: resource_pod(
                    &[Res::default()],
                    &[res(1, 1).with(aaa, 3), res(1, 1).with(aaa, 3)],
                    &[],
                ),
                existing: vec![res(0, 0).with(aaa, 2)],
                ignored_resources: vec![],
                want_status: fits(),
                want_insufficient: vec![],
            },
            Case {
                // max(6, 3) = 6.
                name: "extended resource allocatable enforced for multiple init containers",
                pod: resource_pod(
                    &[Res::default()],
                    &[res(1, 1).with(aaa, 6), res(1, 1).with(aaa, 3)],
                    &[],
                ),
                existing: vec![res(0, 0).with(aaa, 2)],
                ignored_resources: vec![],
                want_status: unschedulable(&["Insufficient example.com/aaa"]),
                want_insufficient: vec![insufficient(aaa, 6, 2, 5)],
            },
            Case {
                name: "extended resource allocatable enforced for unknown resource",
                pod: resource_pod(&[res(1, 1).with(bbb, 1)], &[], &[]),
                existing: vec![res(0, 0)],
                ignored_resources: vec![],
                want_status: unschedulable(&["Insufficient example.com/bbb"]),
                want_insufficient: vec![insufficient(bbb, 1, 0, 0)],
            },
            Case {
                name: "extended resource allocatable enforced for unknown resource for init container",
                pod: resource_pod(&[Res::default()], &[res(1, 1).with(bbb, 1)], &[]),
                existing: vec![res(0, 0)],
                ignored_resources: vec![],
                want_status: unschedulable(&["Insufficient example.com/bbb"]),
                want_insufficient: vec![insufficient(bbb, 1, 0, 0)],
            },
            Case {
                name: "kubernetes.io resource capacity enforced",
                pod: resource_pod(&[res(1, 1).with(k8s_a, 10)], &[], &[]),
                existing: vec![res(0, 0)],
                ignored_resources: vec![],
                want_status: unschedulable(&["Insufficient kubernetes.io/something"]),
                want_insufficient: vec![insufficient(k8s_a, 10, 0, 0)],
            },
            Case {
                name: "kubernetes.io resource capacity enforced for init container",
                pod: resource_pod(&[Res::default()], &[res(1, 1).with(k8s_b, 10)], &[]),
                existing: vec![res(0, 0)],
                ignored_resources: vec![],
                want_status: unschedulable(&["Insufficient subdomain.kubernetes.io/something"]),
                want_insufficient: vec![insufficient(k8s_b, 10, 0, 0)],
            },
            Case {
                name: "hugepages resource capacity enforced",
                pod: resource_pod(&[res(1, 1).with(hp, 10)], &[], &[]),
                existing: vec![res(0, 0).with(hp, 0)],
                ignored_resources: vec![],
                want_status: unschedulable(&["Insufficient hugepages-2Mi"]),
                want_insufficient: vec![insufficient(hp, 10, 0, 5)],
            },
            Case {
                name: "hugepages resource capacity enforced for init container",
                pod: resource_pod(&[Res::default()], &[res(1, 1).with(hp, 10)], &[]),
                existing: vec![res(0, 0).with(hp, 0)],
                ignored_resources: vec![],
                want_status: unschedulable(&["Insufficient hugepages-2Mi"]),
                want_insufficient: vec![insufficient(hp, 10, 0, 5)],
            },
            Case {
                name: "hugepages resource allocatable enforced for multiple containers",
                pod: resource_pod(&[res(1, 1).with(hp, 3), res(1, 1).with(hp, 3)], &[], &[]),
                existing: vec![res(0, 0).with(hp, 2)],
                ignored_resources: vec![],
                want_status: unschedulable(&["Insufficient hugepages-2Mi"]),
                want_insufficient: vec![insufficient(hp, 6, 2, 5)],
            },
            Case {
                name: "skip checking ignored extended resource",
                pod: resource_pod(&[res(1, 1).with(bbb, 1)], &[], &[]),
                existing: vec![res(0, 0)],
                ignored_resources: vec!["example.com/bbb".into()],
                want_status: fits(),
                want_insufficient: vec![],
            },
            Case {
                // cpu 1+3 = 4 <= 5, mem 1+13 = 14 <= 15.
                name: "resources + pod overhead fits",
                pod: resource_pod(&[res(1, 1)], &[], &[("cpu", "3m"), ("memory", "13")]),
                existing: vec![res(5, 5)],
                ignored_resources: vec![],
                want_status: fits(),
                want_insufficient: vec![],
            },
            Case {
                // mem 1+15 = 16 > 20-5 = 15.
                name: "requests + overhead does not fit for memory",
                pod: resource_pod(&[res(1, 1)], &[], &[("cpu", "1m"), ("memory", "15")]),
                existing: vec![res(5, 5)],
                ignored_resources: vec![],
                want_status: unschedulable(&["Insufficient memory"]),
                want_insufficient: vec![insufficient("memory", 16, 5, 20)],
            },
        ];
        let node_res = resources(10, 20, 32, 5, 20, 5);
        for c in cases {
            let n = node_info(&node_res, &node_res, &c.existing);
            let plugin = NodeResourcesFit {
                ignored_resources: c.ignored_resources.clone(),
            };
            let got = run_filter(&plugin, &c.pod, &n);
            assert_eq!(outcome(&got), c.want_status, "{}: status", c.name);
            let got = fits_request(&c.pod, &n, &c.ignored_resources);
            assert_eq!(
                got, c.want_insufficient,
                "{}: insufficient resources",
                c.name
            );
        }
    }

    /// Upstream `kubernetes/kubernetes` `pkg/scheduler/framework/plugins/noderesources/fit_test.go`,
    /// `TestNotEnoughRequests` (v1.19-era copy, index id 175522939, identical through 1.24; no
    /// exact v1.22 copy). Node: no capacity, allocatable `makeAllocatableResources(10, 20, 1, 0, 0, 0)`
    /// (pods 1) and one existing pod, so there is no room for another pod.
    #[test]
    fn test_not_enough_requests() {
        struct Case {
            name: &'static str,
            pod: PodInfo,
            existing: Res,
        }
        let cases = vec![
            Case {
                name: "even without specified resources predicate fails when there's no space for additional pod",
                pod: pod("p").info(),
                existing: res(10, 20),
            },
            Case {
                name: "even if both resources fit predicate fails when there's no space for additional pod",
                pod: resource_pod(&[res(1, 1)], &[], &[]),
                existing: res(5, 5),
            },
            Case {
                name: "even for equal edge case predicate fails when there's no space for additional pod",
                pod: resource_pod(&[res(5, 1)], &[], &[]),
                existing: res(5, 19),
            },
            Case {
                name: "even for equal edge case predicate fails when there's no space for additional pod due to init container",
                pod: resource_pod(&[res(5, 1)], &[res(5, 1)], &[]),
                existing: res(5, 19),
            },
        ];
        let alloc = resources(10, 20, 1, 0, 0, 0);
        for c in cases {
            let n = node_info(&[], &alloc, std::slice::from_ref(&c.existing));
            let got = run_filter(&NodeResourcesFit::default(), &c.pod, &n);
            assert_eq!(
                outcome(&got),
                unschedulable(&["Too many pods"]),
                "{}",
                c.name
            );
        }
    }

    /// Upstream `kubernetes/kubernetes` `pkg/scheduler/framework/plugins/noderesources/fit_test.go`,
    /// `TestStorageRequests` (v1.19-era copy, index id 175522939; no exact v1.22 copy). The row
    /// "ephemeral local storage request is ignored due to disabled feature gate"
    /// (`LocalStorageCapacityIsolation=false`) is not ported: this scheduler has no such gate.
    #[test]
    fn test_storage_requests() {
        struct Case {
            name: &'static str,
            pod: PodInfo,
            existing: Res,
            want: (Code, Vec<String>),
        }
        let cases = vec![
            Case {
                name: "due to container scratch disk",
                pod: resource_pod(&[res(1, 1)], &[], &[]),
                existing: res(10, 10),
                want: unschedulable(&["Insufficient cpu"]),
            },
            Case {
                name: "pod fit",
                pod: resource_pod(&[res(1, 1)], &[], &[]),
                existing: res(2, 10),
                want: fits(),
            },
            Case {
                name: "storage ephemeral local storage request exceeds allocatable",
                pod: resource_pod(&[Res::default().eph(25)], &[], &[]),
                existing: res(2, 2),
                want: unschedulable(&["Insufficient ephemeral-storage"]),
            },
            Case {
                name: "pod fits",
                pod: resource_pod(&[Res::default().eph(10)], &[], &[]),
                existing: res(2, 2),
                want: fits(),
            },
        ];
        let node_res = resources(10, 20, 32, 5, 20, 5);
        for c in cases {
            let n = node_info(&node_res, &node_res, std::slice::from_ref(&c.existing));
            let got = run_filter(&NodeResourcesFit::default(), &c.pod, &n);
            assert_eq!(outcome(&got), c.want, "{}", c.name);
        }
    }
}
