//! `NodeResourcesFit` filter (legacy predicate `PodFitsResources`): the node must have room for
//! one more pod and for the pod's requests of cpu, memory, ephemeral-storage and every scalar
//! resource. Follows `pkg/scheduler/framework/plugins/noderesources/fit.go` (v1.22,
//! `fitsRequest`): all insufficient resources are reported, the pod count first.

use std::borrow::Cow;

use crate::framework::types::NodeInfo;
use crate::framework::{Code, CycleState, FilterPlugin, PodInfo, Status};

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
pub fn fits_request(pod: &PodInfo, node: &NodeInfo, ignored: &[String]) -> Vec<InsufficientResource> {
    let mut out = Vec::new();
    let pods_on_node = node.pods.len() as i64;
    if pods_on_node + 1 > node.allocatable.allowed_pod_number {
        out.push(InsufficientResource {
            resource: "pods".into(),
            reason: Cow::Borrowed(ERR_REASON_TOO_MANY_PODS),
            requested: 1,
            used: pods_on_node,
            capacity: node.allocatable.allowed_pod_number,
        });
    }
    let req = &pod.requests;
    if req.is_zero_request() {
        return out;
    }
    let a = &node.allocatable;
    let r = &node.requested;
    if a.milli_cpu < req.milli_cpu + r.milli_cpu {
        out.push(InsufficientResource {
            resource: "cpu".into(),
            reason: Cow::Borrowed("Insufficient cpu"),
            requested: req.milli_cpu,
            used: r.milli_cpu,
            capacity: a.milli_cpu,
        });
    }
    if a.memory < req.memory + r.memory {
        out.push(InsufficientResource {
            resource: "memory".into(),
            reason: Cow::Borrowed("Insufficient memory"),
            requested: req.memory,
            used: r.memory,
            capacity: a.memory,
        });
    }
    if a.ephemeral_storage < req.ephemeral_storage + r.ephemeral_storage {
        out.push(InsufficientResource {
            resource: "ephemeral-storage".into(),
            reason: Cow::Borrowed("Insufficient ephemeral-storage"),
            requested: req.ephemeral_storage,
            used: r.ephemeral_storage,
            capacity: a.ephemeral_storage,
        });
    }
    for (name, q) in &req.scalar {
        if *q == 0 || ignored.iter().any(|i| i == name) {
            continue;
        }
        let used = r.scalar(name);
        let cap = a.scalar(name);
        if cap < q + used {
            out.push(InsufficientResource {
                resource: name.clone(),
                reason: Cow::Owned(format!("Insufficient {name}")),
                requested: *q,
                used,
                capacity: cap,
            });
        }
    }
    out
}

impl FilterPlugin for NodeResourcesFit {
    fn name(&self) -> &'static str {
        NAME
    }

    #[inline]
    fn filter(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        // Fast path for the common case: everything fits.
        let a = &node.allocatable;
        let r = &node.requested;
        let q = &pod.requests;
        if (node.pods.len() as i64) < a.allowed_pod_number
            && a.milli_cpu >= q.milli_cpu + r.milli_cpu
            && a.memory >= q.memory + r.memory
            && a.ephemeral_storage >= q.ephemeral_storage + r.ephemeral_storage
            && q.scalar.is_empty()
        {
            return Status::success();
        }
        let insufficient = fits_request(pod, node, &self.ignored_resources);
        if insufficient.is_empty() {
            return Status::success();
        }
        Status {
            code: Code::Unschedulable,
            reasons: insufficient.into_iter().map(|i| i.reason).collect(),
            plugin: NAME,
        }
    }
}
