//! Unit tests of the model: resource requests (`calculateResource`, `GetNonzeroRequest`),
//! NodeInfo accounting and GPU devices.

#![allow(clippy::unwrap_used)]

use super::*;
use crate::framework::plugins::testutil::{Res, pod, res};

/// `GetNonzeroRequestForResource(resource, requests)` (v1.22 `pkg/scheduler/util`) for a pod
/// with one container requesting `requests`: cpu and memory are the PodInfo scoring requests
/// (defaulted when absent); ephemeral-storage and extended resources have no default and are
/// the raw requests.
fn nonzero_request_for_resource(pi: &PodInfo, resource: &str) -> i64 {
    match resource {
        "cpu" => pi.non_zero_milli_cpu,
        "memory" => pi.non_zero_memory,
        "ephemeral-storage" => pi.requests.ephemeral_storage,
        n => pi.requests.scalar(n),
    }
}

fn one_container(requests: &[(&str, &str)]) -> PodInfo {
    pod("p").container(requests).info()
}

/// Upstream `kubernetes/kubernetes` `pkg/scheduler/util/pod_resources_test.go`,
/// `TestGetNonZeroRequest` (index ids 577831308 and 67449543919, post-1.23 copies; the table is
/// the v1.22 `GetNonzeroRequests` one). Checked through the PodInfo scoring requests of a pod
/// with one container.
#[test]
fn test_get_non_zero_request() {
    struct Case {
        name: &'static str,
        requests: &'static [(&'static str, &'static str)],
        expected_cpu: i64,
        expected_memory: i64,
    }
    let cases = vec![
        Case {
            name: "cpu_and_memory_not_found",
            requests: &[],
            expected_cpu: DEFAULT_MILLI_CPU_REQUEST,
            expected_memory: DEFAULT_MEMORY_REQUEST,
        },
        Case {
            name: "only_cpu_exist",
            requests: &[("cpu", "200m")],
            expected_cpu: 200,
            expected_memory: DEFAULT_MEMORY_REQUEST,
        },
        Case {
            name: "only_memory_exist",
            requests: &[("memory", "400Mi")],
            expected_cpu: DEFAULT_MILLI_CPU_REQUEST,
            expected_memory: 400 * 1024 * 1024,
        },
        Case {
            name: "cpu_memory_exist",
            requests: &[("cpu", "200m"), ("memory", "400Mi")],
            expected_cpu: 200,
            expected_memory: 400 * 1024 * 1024,
        },
    ];
    for c in cases {
        let pi = one_container(c.requests);
        assert_eq!(pi.non_zero_milli_cpu, c.expected_cpu, "{}: cpu", c.name);
        assert_eq!(pi.non_zero_memory, c.expected_memory, "{}: memory", c.name);
    }
}

/// Upstream `kubernetes/kubernetes` `pkg/scheduler/util/pod_resources_test.go`,
/// `TestGetNonzeroRequestForResource` (index id 577831308, post-1.23), v1.22 rows only: the
/// 1.23+ "useRequested is true" rows (`nonZero=false`) are not ported. cpu compared as
/// MilliValue, the others as Value.
#[test]
fn test_get_nonzero_request_for_resource() {
    struct Case {
        name: &'static str,
        requests: &'static [(&'static str, &'static str)],
        resource: &'static str,
        expected_value: i64,
    }
    let cases = vec![
        Case {
            name: "extended_resource_not_found",
            requests: &[],
            resource: "intel.com/foo",
            expected_value: 0,
        },
        Case {
            name: "extended_resource_found",
            requests: &[("intel.com/foo", "4")],
            resource: "intel.com/foo",
            expected_value: 4,
        },
        Case {
            name: "cpu_not_found",
            requests: &[],
            resource: "cpu",
            expected_value: DEFAULT_MILLI_CPU_REQUEST,
        },
        Case {
            name: "memory_not_found",
            requests: &[],
            resource: "memory",
            expected_value: DEFAULT_MEMORY_REQUEST,
        },
        Case {
            name: "cpu_exist",
            requests: &[("cpu", "200m")],
            resource: "cpu",
            expected_value: 200,
        },
        Case {
            name: "memory_exist",
            requests: &[("memory", "400Mi")],
            resource: "memory",
            expected_value: 400 * 1024 * 1024,
        },
        Case {
            name: "ephemeralStorage_exist",
            requests: &[("ephemeral-storage", "400Mi")],
            resource: "ephemeral-storage",
            expected_value: 400 * 1024 * 1024,
        },
        Case {
            name: "ephemeralStorage_not_found",
            requests: &[],
            resource: "ephemeral-storage",
            expected_value: 0,
        },
    ];
    for c in cases {
        let pi = one_container(c.requests);
        assert_eq!(
            nonzero_request_for_resource(&pi, c.resource),
            c.expected_value,
            "{}",
            c.name
        );
    }
}

/// `computePodResourceRequest` (v1.22 `pkg/scheduler/framework/plugins/noderesources/fit.go`):
/// max(sum of containers, each init container) per resource, plus overhead, on raw requests
/// (`PodInfo::requests`). No upstream table exists for it; the cases are its doc-comment
/// Example and the pod requests implied by `fit_test.go` `TestEnoughRequests` rows (see
/// `noderesources-fit.md`, arithmetic notes).
#[test]
fn test_compute_pod_resource_request() {
    struct Case {
        name: &'static str,
        containers: Vec<Res>,
        init_containers: Vec<Res>,
        overhead: &'static [(&'static str, &'static str)],
        expected: Resource,
    }
    let r = |milli_cpu, memory| Resource {
        milli_cpu,
        memory,
        ..Default::default()
    };
    let mut ext = r(1, 1);
    ext.set_scalar("example.com/aaa", 6);
    let mut ext_init = r(1, 1);
    ext_init.set_scalar("example.com/aaa", 3);
    let cases = vec![
        Case {
            // Example: IC1 {CPU 2, Memory 1G}, IC2 {CPU 2, Memory 3G}, C1 {CPU 2, Memory 1G},
            // C2 {CPU 1, Memory 1G}. Result: CPU: 3, Memory: 3G.
            name: "doc comment example",
            containers: vec![res(2000, 1_000_000_000), res(1000, 1_000_000_000)],
            init_containers: vec![res(2000, 1_000_000_000), res(2000, 3_000_000_000)],
            overhead: &[],
            expected: r(3000, 3_000_000_000),
        },
        Case {
            // pod cpu = max(1, 3) = 3.
            name: "too many resources fails due to init container cpu",
            containers: vec![res(1, 1)],
            init_containers: vec![res(3, 1)],
            overhead: &[],
            expected: r(3, 1),
        },
        Case {
            name: "too many resources fails due to highest init container memory",
            containers: vec![res(1, 1)],
            init_containers: vec![res(1, 3), res(1, 2)],
            overhead: &[],
            expected: r(1, 3),
        },
        Case {
            // max(4, 5) = 5.
            name: "equal edge case for init container",
            containers: vec![res(4, 1)],
            init_containers: vec![res(5, 1)],
            overhead: &[],
            expected: r(5, 1),
        },
        Case {
            // 3+3 = 6 over containers (cpu 1+1, memory 1+1).
            name: "extended resource allocatable enforced for multiple containers",
            containers: vec![
                res(1, 1).with("example.com/aaa", 3),
                res(1, 1).with("example.com/aaa", 3),
            ],
            init_containers: vec![],
            overhead: &[],
            expected: {
                let mut e = r(2, 2);
                e.set_scalar("example.com/aaa", 6);
                e
            },
        },
        Case {
            // init max(3, 3) = 3.
            name: "extended resource allocatable admits multiple init containers",
            containers: vec![Res::default()],
            init_containers: vec![
                res(1, 1).with("example.com/aaa", 3),
                res(1, 1).with("example.com/aaa", 3),
            ],
            overhead: &[],
            expected: ext_init,
        },
        Case {
            // max(6, 3) = 6.
            name: "extended resource allocatable enforced for multiple init containers",
            containers: vec![Res::default()],
            init_containers: vec![
                res(1, 1).with("example.com/aaa", 6),
                res(1, 1).with("example.com/aaa", 3),
            ],
            overhead: &[],
            expected: ext,
        },
        Case {
            // cpu 1+3 = 4, mem 1+13 = 14.
            name: "resources + pod overhead fits",
            containers: vec![res(1, 1)],
            init_containers: vec![],
            overhead: &[("cpu", "3m"), ("memory", "13")],
            expected: r(4, 14),
        },
        Case {
            // mem 1+15 = 16.
            name: "requests + overhead does not fit for memory",
            containers: vec![res(1, 1)],
            init_containers: vec![],
            overhead: &[("cpu", "1m"), ("memory", "15")],
            expected: r(2, 16),
        },
    ];
    for c in cases {
        let mut b = pod("p");
        for x in &c.containers {
            b = b.container_res(x);
        }
        for x in &c.init_containers {
            b = b.init_container_res(x);
        }
        if !c.overhead.is_empty() {
            b = b.overhead(c.overhead);
        }
        assert_eq!(b.info().requests, c.expected, "{}", c.name);
    }
}
