//! [`NodeInfo`]: a node with what is allocatable and what its pods already request
//! (`framework.NodeInfo`, v1.22 `pkg/scheduler/framework/types.go`).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1 as core;
use thiserror::Error;

use super::gpu::{GpuRequest, RESOURCE_GPU};
use super::pod_info::{HostPort, PodInfo};
use super::resource::{Resource, parse_list};
use super::taints::{Taint, TaintEffect};
use crate::labels::Labels;
use crate::quantity::QuantityError;

/// A quantity that failed to parse on a node.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("invalid node {node}: field {field}: {source}")]
pub struct NodeError {
    /// Node name.
    pub node: String,
    /// Field path, e.g. `status.allocatable[cpu]`.
    pub field: String,
    /// What is wrong with the value.
    pub source: QuantityError,
}

/// `utilnode.GetZoneKey` (v1.22): `region:\0:zone`, each taken from the beta
/// `failure-domain.beta.kubernetes.io/` label when that key is present (even empty), else from
/// the GA `topology.kubernetes.io/` label; empty when both parts are empty.
pub fn zone_key(labels: &Labels) -> String {
    let get = |beta: &str, ga: &str| {
        labels
            .get(beta)
            .or_else(|| labels.get(ga))
            .cloned()
            .unwrap_or_default()
    };
    let zone = get(
        "failure-domain.beta.kubernetes.io/zone",
        "topology.kubernetes.io/zone",
    );
    let region = get(
        "failure-domain.beta.kubernetes.io/region",
        "topology.kubernetes.io/region",
    );
    if region.is_empty() && zone.is_empty() {
        String::new()
    } else {
        format!("{region}:\x00:{zone}")
    }
}

/// `(name, size)` of every name of every image in `status.images`, sorted by name, first image
/// listing a name wins (`addNodeImageStates`).
fn node_images(status: &core::NodeStatus) -> Vec<(String, i64)> {
    let mut out: Vec<(String, i64)> = Vec::new();
    for image in status.images.iter().flatten() {
        let size = image.size_bytes.unwrap_or(0);
        for name in image.names.iter().flatten() {
            if let Err(pos) = out.binary_search_by(|(n, _)| n.as_str().cmp(name)) {
                out.insert(pos, (name.clone(), size));
            }
        }
    }
    out
}

/// A node and the pods on it (`framework.NodeInfo`).
#[derive(Debug, Clone)]
pub struct NodeInfo {
    /// Node name.
    pub name: String,
    /// Labels.
    pub labels: Labels,
    /// Taints.
    pub taints: Vec<Taint>,
    /// True when the node has at least one `NoSchedule`/`NoExecute` taint.
    pub has_filter_taints: bool,
    /// `spec.unschedulable`.
    pub unschedulable: bool,
    /// `status.allocatable` (as v1.22, `status.capacity` is not read).
    pub allocatable: Resource,
    /// Sum of the requests of the pods on the node (fit accounting).
    pub requested: Resource,
    /// Sum of the scoring requests (non-zero cpu/memory defaults) of the pods on the node;
    /// only `milli_cpu` and `memory` are used.
    pub non_zero_requested: Resource,
    /// Pods on the node, assumed ones included.
    pub pods: Vec<Arc<PodInfo>>,
    /// The pods on the node with terms InterPodAffinity scoring reads from existing pods
    /// (required affinity, preferred affinity or anti-affinity;
    /// [`PodAffinityTerms::has_scoring_terms`]). Upstream's `PodsWithAffinity` also lists pods
    /// whose only terms are required anti-affinity, which scoring ignores.
    pub pods_with_affinity: Vec<Arc<PodInfo>>,
    /// The pods on the node with required anti-affinity terms
    /// (`NodeInfo.PodsWithRequiredAntiAffinity`).
    pub pods_with_required_anti_affinity: Vec<Arc<PodInfo>>,
    /// Host ports used by the pods on the node.
    pub used_ports: Vec<HostPort>,
    /// Milli-GPU used on each device; the length is the device count (allocatable
    /// `nvidia.com/gpu`).
    pub gpu_used: Vec<u32>,
    /// GPU devices chosen for each GPU pod on the node, keyed by `namespace/name`.
    pub gpu_assignments: BTreeMap<String, Vec<u32>>,
    /// `zone_key(labels)`.
    pub zone: String,
    /// Container images present on the node (`status.images`): `(name, size in bytes)` for every
    /// name of every image, sorted by name, one entry per name (the first image listing it).
    /// The snapshot counts the nodes per image from these (`ImageLocality`).
    pub images: Vec<(String, i64)>,
    /// Controllers whose pods the node prefers to avoid, as `(kind, uid)`, from the annotation
    /// [`ANNOTATION_PREFER_AVOID_PODS`] (`NodePreferAvoidPods`); empty when absent or unparsable.
    pub prefer_avoid_pods: Vec<(String, String)>,
    /// The decoded `v1.Node`, kept only where something sends it on: cluster mode keeps it
    /// when an extender that is not `nodeCacheCapable` is configured (v1.22 sends such an
    /// extender the snapshot's `v1.Node`s, `ExtenderArgs.Nodes`), `simulate` keeps it always;
    /// otherwise `None` ([`NodeInfo::without_object`]): every field scheduling reads is above.
    pub object: Option<Arc<core::Node>>,
    /// The snapshot's slot for this node's set of `NoSchedule`/`NoExecute` taints, as taint-set
    /// flag bits of the node columns (`NodeHot::TAINT_SET_FIRST` shifted by the slot, or
    /// `NodeHot::TAINT_SET_OTHER` when every slot was taken): 0 when the node has no such taint
    /// or is in no snapshot. Written by the snapshot as the node enters it.
    pub filter_taint_slot: u32,
}

/// Node annotation listing the controllers whose pods should avoid the node
/// (`v1.PreferAvoidPodsAnnotationKey`).
pub const ANNOTATION_PREFER_AVOID_PODS: &str = "scheduler.alpha.kubernetes.io/preferAvoidPods";

/// `v1helper.GetAvoidPodsFromNodeAnnotations` as `NodePreferAvoidPods` uses it: the
/// `(podSignature.podController.kind, .uid)` of every `preferAvoidPods` entry of the annotation
/// JSON (`v1.AvoidPods`), keys matched case-insensitively and `null` read as empty, like Go's
/// `encoding/json`. `None` when the JSON does not parse or a value has the wrong type (the
/// plugin then treats the node as not avoiding anything).
pub fn parse_prefer_avoid_pods(annotation: &str) -> Option<Vec<(String, String)>> {
    use serde_json::Value;
    fn field<'a>(obj: &'a serde_json::Map<String, Value>, key: &str) -> Option<&'a Value> {
        obj.get(key).or_else(|| {
            obj.iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(key))
                .map(|(_, v)| v)
        })
    }
    fn object(v: Option<&Value>) -> Option<Option<&serde_json::Map<String, Value>>> {
        match v {
            None | Some(Value::Null) => Some(None),
            Some(Value::Object(o)) => Some(Some(o)),
            Some(_) => None,
        }
    }
    fn string(v: Option<&Value>) -> Option<String> {
        match v {
            None | Some(Value::Null) => Some(String::new()),
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => None,
        }
    }
    let root: Value = serde_json::from_str(annotation).ok()?;
    let Some(root) = object(Some(&root))? else {
        return Some(Vec::new());
    };
    let entries = match field(root, "preferAvoidPods") {
        None | Some(Value::Null) => return Some(Vec::new()),
        Some(Value::Array(a)) => a,
        Some(_) => return None,
    };
    let mut out = Vec::new();
    for e in entries {
        let Some(e) = object(Some(e))? else {
            out.push((String::new(), String::new()));
            continue;
        };
        let sig = object(field(e, "podSignature"))?;
        let ctrl = match sig {
            Some(sig) => object(field(sig, "podController"))?,
            None => None,
        };
        match ctrl {
            Some(c) => out.push((string(field(c, "kind"))?, string(field(c, "uid"))?)),
            None => out.push((String::new(), String::new())),
        }
    }
    Some(out)
}

impl NodeInfo {
    /// Build an empty NodeInfo from a `v1.Node`, keeping the object ([`NodeInfo::object`]).
    ///
    /// # Errors
    /// [`NodeError`] naming the field when an allocatable or capacity quantity is malformed.
    pub fn from_node(node: core::Node) -> Result<NodeInfo, NodeError> {
        let labels = node.metadata.labels.clone().unwrap_or_default();
        let info = NodeInfo::of_node(&node, labels)?;
        Ok(NodeInfo {
            object: Some(Arc::new(node)),
            ..info
        })
    }

    /// [`NodeInfo::from_node`] then [`NodeInfo::without_object`], the same fields, without
    /// copying what the object would have kept (its labels are moved, and the object is not
    /// put in an `Arc` only to be freed): the node watch's path when no extender needs
    /// `v1.Node`s.
    ///
    /// # Errors
    /// As [`NodeInfo::from_node`].
    pub fn from_node_without_object(mut node: core::Node) -> Result<NodeInfo, NodeError> {
        let labels = node.metadata.labels.take().unwrap_or_default();
        NodeInfo::of_node(&node, labels)
    }

    /// The fields of `node` (its `labels` given apart), no object.
    fn of_node(node: &core::Node, labels: Labels) -> Result<NodeInfo, NodeError> {
        let name = node.metadata.name.clone().unwrap_or_default();
        let err = |(field, source): (String, QuantityError)| NodeError {
            node: name.clone(),
            field,
            source,
        };
        let no_status = core::NodeStatus::default();
        let status = node.status.as_ref().unwrap_or(&no_status);
        // v1.22 `NodeInfo.SetNode` reads `status.allocatable` only; capacity is not a fallback.
        let mut allocatable = Resource::default();
        let alloc =
            parse_list(status.allocatable.as_ref(), || "status.allocatable".into()).map_err(err)?;
        for (n, milli, value) in &alloc {
            allocatable.add_named(n, *milli, *value);
        }
        let no_spec = core::NodeSpec::default();
        let spec = node.spec.as_ref().unwrap_or(&no_spec);
        let taints: Vec<Taint> = spec
            .taints
            .iter()
            .flatten()
            .map(|t| Taint {
                key: t.key.clone(),
                value: t.value.clone().unwrap_or_default(),
                effect: TaintEffect::parse(&t.effect),
            })
            .collect();
        let devices = usize::try_from(allocatable.scalar(RESOURCE_GPU).clamp(0, 1024)).unwrap_or(0);
        Ok(NodeInfo {
            has_filter_taints: taints.iter().any(Taint::is_do_not_schedule),
            taints,
            unschedulable: spec.unschedulable.unwrap_or(false),
            allocatable,
            requested: Resource::default(),
            non_zero_requested: Resource::default(),
            pods: Vec::new(),
            pods_with_affinity: Vec::new(),
            pods_with_required_anti_affinity: Vec::new(),
            used_ports: Vec::new(),
            gpu_used: vec![0; devices],
            gpu_assignments: BTreeMap::new(),
            zone: zone_key(&labels),
            images: node_images(status),
            prefer_avoid_pods: node
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(ANNOTATION_PREFER_AVOID_PODS))
                .filter(|v| !v.is_empty())
                .and_then(|v| parse_prefer_avoid_pods(v))
                .unwrap_or_default(),
            labels,
            name,
            object: None,
            filter_taint_slot: 0,
        })
    }

    /// This node without its API object ([`NodeInfo::object`]).
    #[must_use]
    pub fn without_object(mut self) -> NodeInfo {
        self.object = None;
        self
    }

    /// Account a pod on this node (`NodeInfo.AddPod`): requests, scoring requests, ports and GPU
    /// devices. GPU devices come from `gpu_indexes` when given (the annotation or a Reserve
    /// decision); otherwise they are chosen with [`NodeInfo::pick_gpus`].
    pub fn add_pod(&mut self, pod: Arc<PodInfo>, gpu_indexes: Option<Vec<u32>>) {
        self.requested.add(&pod.requests);
        self.non_zero_requested.milli_cpu = self
            .non_zero_requested
            .milli_cpu
            .saturating_add(pod.non_zero_milli_cpu);
        self.non_zero_requested.memory = self
            .non_zero_requested
            .memory
            .saturating_add(pod.non_zero_memory);
        self.used_ports.extend(pod.host_ports.iter().cloned());
        if pod.gpu.count > 0 {
            // Recorded devices are used only when they make sense on this node: one distinct
            // index per requested GPU, each below the device count; otherwise devices are chosen.
            let valid = |idx: &Vec<u32>| {
                let mut seen = idx.clone();
                seen.sort_unstable();
                seen.dedup();
                seen.len() == idx.len()
                    && idx.len() == pod.gpu.count as usize
                    && idx.iter().all(|&i| (i as usize) < self.gpu_used.len())
            };
            let idx = gpu_indexes
                .filter(valid)
                .or_else(|| pod.gpu_indexes.clone().filter(valid))
                .or_else(|| self.pick_gpus(pod.gpu))
                .unwrap_or_default();
            for &i in &idx {
                if let Some(u) = self.gpu_used.get_mut(i as usize) {
                    *u += pod.gpu.milli;
                }
            }
            self.gpu_assignments.insert(pod.key(), idx);
        }
        if pod.pod_affinity.has_scoring_terms() {
            self.pods_with_affinity.push(pod.clone());
        }
        if !pod.pod_affinity.required_anti_affinity.is_empty() {
            self.pods_with_required_anti_affinity.push(pod.clone());
        }
        self.pods.push(pod);
    }

    /// Remove a pod by `namespace/name` (`NodeInfo.RemovePod`). Returns false when the pod is not
    /// on this node.
    pub fn remove_pod(&mut self, namespace: &str, name: &str) -> bool {
        let Some(pos) = self
            .pods
            .iter()
            .position(|p| p.namespace == namespace && p.name == name)
        else {
            return false;
        };
        let pod = self.pods.swap_remove(pos);
        for list in [
            &mut self.pods_with_affinity,
            &mut self.pods_with_required_anti_affinity,
        ] {
            if let Some(i) = list.iter().position(|p| Arc::ptr_eq(p, &pod)) {
                list.swap_remove(i);
            }
        }
        self.requested.sub(&pod.requests);
        self.non_zero_requested.milli_cpu = self
            .non_zero_requested
            .milli_cpu
            .saturating_sub(pod.non_zero_milli_cpu);
        self.non_zero_requested.memory = self
            .non_zero_requested
            .memory
            .saturating_sub(pod.non_zero_memory);
        for hp in &pod.host_ports {
            if let Some(i) = self.used_ports.iter().position(|u| u == hp) {
                self.used_ports.swap_remove(i);
            }
        }
        if let Some(idx) = self.gpu_assignments.remove(&pod.key()) {
            for i in idx {
                if let Some(u) = self.gpu_used.get_mut(i as usize) {
                    *u = u.saturating_sub(pod.gpu.milli);
                }
            }
        }
        true
    }

    /// Whether `req` fits on this node's devices ([`NodeInfo::pick_gpus`] would return `Some`),
    /// without allocating.
    pub fn fits_gpus(&self, req: GpuRequest) -> bool {
        req.fits_on(&self.gpu_used)
    }

    /// The devices `req` would take on this node ([`GpuRequest::pick_on`] over
    /// [`NodeInfo::gpu_used`]), `None` when it does not fit.
    pub fn pick_gpus(&self, req: GpuRequest) -> Option<Vec<u32>> {
        req.pick_on(&self.gpu_used)
    }
}
