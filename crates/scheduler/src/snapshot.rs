//! [`Snapshot`]: the cluster state one scheduling cycle reads — every [`NodeInfo`] in
//! kube-scheduler's zone-interleaved order, plus the Services, ReplicationControllers,
//! ReplicaSets and StatefulSets that spreading needs, and the PersistentVolumes,
//! PersistentVolumeClaims, StorageClasses and CSINodes of the volume plugins
//! ([`VolumeIndex`], shared copy-on-write with their cycle state).
//!
//! Node order follows `pkg/scheduler/internal/cache/node_tree.go` (v1.22): nodes are grouped by
//! zone (zones in order of first appearance, nodes in insertion order inside a zone) and listed
//! round-robin across zones, so a partial search (`percentageOfNodesToScore`) samples every zone.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use foldhash::HashMap;
use k8s_openapi::api::apps::v1 as apps;
use k8s_openapi::api::core::v1 as core;

use crate::labels::{LabelSelector, Labels};
use crate::model::typical_pods::TypicalPods;
use crate::model::{AffinityTerm, Selector};
use crate::model::{NodeInfo, PodInfo, TaintEffect, tolerations_tolerate_taint};
use crate::volume::VolumeIndex;

#[path = "snapshot_columns.rs"]
mod columns;
pub use columns::{NodeColumns, NodeHot};

/// A Service's selector, as spreading uses it.
#[derive(Debug, Clone)]
struct ServiceSelector {
    namespace: String,
    name: String,
    /// `None` selects nothing ("services with nil selectors match nothing, not everything").
    selector: Option<BTreeMap<String, String>>,
}

/// Why a node or pod could not be added to a [`Snapshot`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotError {
    /// A node with this name is already present.
    #[error("node {0} already exists")]
    DuplicateNode(String),
    /// The pod names a node that is not in the snapshot.
    #[error("pod {pod} is assigned to unknown node {node}")]
    UnknownNode {
        /// `namespace/name`.
        pod: String,
        /// `spec.nodeName`.
        node: String,
    },
}

/// An image's cluster-wide state (`ImageStateSummary`): the size first reported for it and the
/// number of nodes that have it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageStateSummary {
    /// Size in bytes (from the first node that listed the image, as the scheduler cache keeps it).
    pub size: i64,
    /// Number of nodes in the snapshot with the image.
    pub num_nodes: usize,
}

/// Cluster-wide per-node facts kept incrementally by every node mutation, so plugins can tell in
/// O(1) that they have nothing to score (`ImageLocality`, `TaintToleration`,
/// `NodePreferAvoidPods`).
#[derive(Debug, Default, Clone)]
struct NodeStats {
    /// Image name → state (`cache.imageStates`).
    images: HashMap<String, ImageStateSummary>,
    /// Nodes with at least one `PreferNoSchedule` taint.
    prefer_no_schedule: usize,
    /// Nodes with a non-empty `preferAvoidPods` annotation.
    prefer_avoid_pods: usize,
    /// Each distinct `NoSchedule`/`NoExecute` taint of the nodes, with how many nodes carry it.
    filter_taints: HashMap<crate::model::Taint, usize>,
    /// The taint-set slots ([`NodeHot::TAINT_SET_FIRST`]): slot `k` holds one node's
    /// `NoSchedule`/`NoExecute` taints (in the node's order) and how many nodes of the snapshot
    /// carry that set in that slot; a slot is free again when none does. A node whose set found
    /// no slot is flagged [`NodeHot::TAINT_SET_OTHER`] and keeps that flag until it is updated.
    taint_sets: Vec<Option<(Vec<crate::model::Taint>, usize)>>,
}

/// The `NoSchedule`/`NoExecute` taints of `n`, in its order.
fn filter_taints_of(n: &NodeInfo) -> Vec<crate::model::Taint> {
    n.taints
        .iter()
        .filter(|t| t.is_do_not_schedule())
        .cloned()
        .collect()
}

impl NodeStats {
    /// The taint-set flag of `n` entering the snapshot ([`NodeInfo::filter_taint_slot`]): the
    /// slot holding its set of `NoSchedule`/`NoExecute` taints (counted once more), a free slot
    /// taken for it, or [`NodeHot::TAINT_SET_OTHER`]; 0 without such taints.
    fn take_taint_slot(&mut self, n: &NodeInfo) -> u32 {
        if !n.has_filter_taints {
            return 0;
        }
        let set = filter_taints_of(n);
        if self.taint_sets.is_empty() {
            self.taint_sets = vec![None; NodeHot::TAINT_SET_SLOTS as usize];
        }
        let slot = match self
            .taint_sets
            .iter()
            .position(|s| s.as_ref().is_some_and(|(t, _)| *t == set))
        {
            Some(k) => k,
            None => match self.taint_sets.iter().position(Option::is_none) {
                Some(k) => {
                    self.taint_sets[k] = Some((set, 0));
                    k
                }
                None => return NodeHot::TAINT_SET_OTHER,
            },
        };
        if let Some((_, count)) = &mut self.taint_sets[slot] {
            *count += 1;
        }
        NodeHot::TAINT_SET_FIRST << slot
    }

    /// `n` leaves the snapshot: its taint-set slot counts one node less, and is freed when it
    /// counts none.
    fn release_taint_slot(&mut self, n: &NodeInfo) {
        let flag = n.filter_taint_slot;
        if flag == 0 || flag == NodeHot::TAINT_SET_OTHER {
            return;
        }
        let slot = (flag / NodeHot::TAINT_SET_FIRST).trailing_zeros() as usize;
        if let Some(entry) = self.taint_sets.get_mut(slot)
            && let Some((_, count)) = entry
        {
            *count = count.saturating_sub(1);
            if *count == 0 {
                *entry = None;
            }
        }
    }

    /// Count `n` in (`add`) or out of the statistics (`addNodeImageStates` /
    /// `removeNodeImageStates`).
    fn account(&mut self, n: &NodeInfo, add: bool) {
        let step = |c: &mut usize| {
            *c = if add { *c + 1 } else { c.saturating_sub(1) };
        };
        if n.taints
            .iter()
            .any(|t| t.effect == Some(TaintEffect::PreferNoSchedule))
        {
            step(&mut self.prefer_no_schedule);
        }
        if !n.prefer_avoid_pods.is_empty() {
            step(&mut self.prefer_avoid_pods);
        }
        for t in n.taints.iter().filter(|t| t.is_do_not_schedule()) {
            match self.filter_taints.get_mut(t) {
                Some(c) if add => *c += 1,
                Some(c) => {
                    *c = c.saturating_sub(1);
                    if *c == 0 {
                        self.filter_taints.remove(t);
                    }
                }
                None if add => {
                    self.filter_taints.insert(t.clone(), 1);
                }
                None => {}
            }
        }
        for (name, size) in &n.images {
            if add {
                self.images
                    .entry(name.clone())
                    .or_insert(ImageStateSummary {
                        size: *size,
                        num_nodes: 0,
                    })
                    .num_nodes += 1;
            } else if let Some(state) = self.images.get_mut(name) {
                state.num_nodes = state.num_nodes.saturating_sub(1);
                if state.num_nodes == 0 {
                    self.images.remove(name);
                }
            }
        }
    }
}

/// The cluster state for scheduling cycles.
#[derive(Debug, Default, Clone)]
pub struct Snapshot {
    nodes: Vec<NodeInfo>,
    /// The scan columns, one entry per node (same index as `nodes`); shared with the scan
    /// helpers during a search (copy-on-write: a mutation while a helper still holds them copies
    /// them, see [`Snapshot::shared_columns`]).
    cols: Arc<NodeColumns>,
    index: HashMap<String, u32>,
    zones: Vec<(String, Vec<u32>)>,
    order: Vec<u32>,
    /// `order` is not `0, 1, 2, ...` (false for an empty snapshot): see
    /// [`Snapshot::order_is_index`].
    order_permuted: bool,
    services: Vec<ServiceSelector>,
    rcs: HashMap<(String, String), BTreeMap<String, String>>,
    rss: HashMap<(String, String), LabelSelector>,
    sss: HashMap<(String, String), LabelSelector>,
    stats: NodeStats,
    /// Namespace name → labels (for pod affinity `namespaceSelector`).
    namespaces: HashMap<String, Labels>,
    /// Indexes of the nodes with a non-empty [`NodeInfo::pods_with_affinity`].
    nodes_with_affinity: BTreeSet<u32>,
    /// Indexes of the nodes with a non-empty [`NodeInfo::pods_with_required_anti_affinity`].
    nodes_with_required_anti_affinity: BTreeSet<u32>,
    /// PVs, PVCs, StorageClasses and CSINodes, shared with the cycle state of the volume
    /// plugins (copy-on-write: mutated through [`Snapshot::volumes_mut`]).
    volumes: Arc<VolumeIndex>,
    /// The workload's typical pods for the GPU fragmentation scorers, when known.
    typical_pods: Option<Arc<TypicalPods>>,
}

impl Snapshot {
    /// An empty snapshot.
    pub fn new() -> Snapshot {
        Snapshot::default()
    }

    /// All nodes, indexed by the `u32` indexes that [`Snapshot::order`] and the plugins use.
    pub fn nodes(&self) -> &[NodeInfo] {
        &self.nodes
    }

    /// The scan columns, indexed like [`Snapshot::nodes`]: what the filters' fast checks and
    /// the cpu/memory scores read on every node.
    pub fn columns(&self) -> &NodeColumns {
        &self.cols
    }

    /// [`Snapshot::columns`] as the shared pointer the parallel column scan hands to its
    /// helper threads (as a `Weak`: a helper holds it only while it scans a part). The
    /// snapshot's own mutations copy the columns first when a clone of this pointer is still
    /// alive, which happens only when a helper was held up in the middle of a part.
    pub fn shared_columns(&self) -> &Arc<NodeColumns> {
        &self.cols
    }

    /// True when every node's column entries equal those computed from its NodeInfo, the
    /// reciprocals included (an invariant every mutation keeps; checked by the scheduling cycle
    /// in debug builds).
    pub fn hot_rows_consistent(&self) -> bool {
        self.cols.len() == self.nodes.len()
            && self.nodes.iter().enumerate().all(|(i, n)| {
                NodeHot::of(n) == self.cols.get(i) && self.cols.reciprocals_consistent(i)
            })
    }

    /// Rewrite node `i`'s column entries after a change of the node or its pods.
    fn refresh(&mut self, i: usize) {
        Arc::make_mut(&mut self.cols).set(i, &NodeHot::of(&self.nodes[i]));
        self.refresh_affinity_index(i as u32);
    }

    /// Node indexes in NodeTree order.
    pub fn order(&self) -> &[u32] {
        &self.order
    }

    /// True when [`Snapshot::order`] is `0, 1, 2, ...`: the NodeTree order is the index order
    /// (one zone, or zones that interleave that way, and no removal that reordered the
    /// indexes). A scan in order then reads the node columns sequentially.
    pub fn order_is_index(&self) -> bool {
        !self.order_permuted
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True when there are no nodes.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The workload's typical pods (the FGD paper's target workload), which the GPU
    /// fragmentation scorers read: set by `simulate` from its input pods and by cluster mode from
    /// the pods it has seen. `None` when unknown.
    pub fn typical_pods(&self) -> Option<&Arc<TypicalPods>> {
        self.typical_pods.as_ref()
    }

    /// Set (or clear) the typical pods.
    pub fn set_typical_pods(&mut self, tp: Option<Arc<TypicalPods>>) {
        self.typical_pods = tp;
    }

    /// The index of node `name`.
    pub fn node_index(&self, name: &str) -> Option<u32> {
        self.index.get(name).copied()
    }

    /// The node called `name`.
    pub fn node(&self, name: &str) -> Option<&NodeInfo> {
        self.node_index(name).map(|i| &self.nodes[i as usize])
    }

    fn rebuild_order(&mut self) {
        self.order.clear();
        let mut i = 0;
        loop {
            let mut any = false;
            for (_, members) in &self.zones {
                if let Some(&n) = members.get(i) {
                    self.order.push(n);
                    any = true;
                }
            }
            if !any {
                break;
            }
            i += 1;
        }
        self.order_permuted = self.order.iter().enumerate().any(|(k, &n)| n as usize != k);
    }

    /// Add a node (no pods yet).
    ///
    /// # Errors
    /// [`SnapshotError::DuplicateNode`] when the name is taken.
    pub fn add_node(&mut self, node: NodeInfo) -> Result<(), SnapshotError> {
        if self.index.contains_key(&node.name) {
            return Err(SnapshotError::DuplicateNode(node.name));
        }
        let idx = self.nodes.len() as u32;
        self.index.insert(node.name.clone(), idx);
        match self.zones.iter_mut().find(|(z, _)| *z == node.zone) {
            Some((_, members)) => members.push(idx),
            None => self.zones.push((node.zone.clone(), vec![idx])),
        }
        let mut node = node;
        node.filter_taint_slot = self.stats.take_taint_slot(&node);
        Arc::make_mut(&mut self.cols).push(&NodeHot::of(&node));
        self.stats.account(&node, true);
        self.nodes.push(node);
        // A NodeInfo that already holds pods (e.g. a clone) must enter the affinity indexes.
        self.refresh_affinity_index(idx);
        if self.zones.len() == 1 {
            // One zone: the round-robin order is the insertion order.
            self.order.push(idx);
        } else {
            self.rebuild_order();
        }
        Ok(())
    }

    /// Replace a node's object (labels, taints, allocatable...) keeping its pods; adds it when
    /// absent. Pods are re-accounted against the new allocatable.
    pub fn update_node(&mut self, mut node: NodeInfo) {
        let Some(i) = self.node_index(&node.name) else {
            // A fresh name cannot collide.
            let _ = self.add_node(node);
            return;
        };
        let old = &mut self.nodes[i as usize];
        let pods = std::mem::take(&mut old.pods);
        let assignments = std::mem::take(&mut old.gpu_assignments);
        for p in pods {
            let idx = assignments.get(&p.key()).cloned();
            node.add_pod(p, idx);
        }
        let old_zone = (old.zone != node.zone).then(|| old.zone.clone());
        let new_zone = node.zone.clone();
        self.stats.account(&self.nodes[i as usize], false);
        self.stats.release_taint_slot(&self.nodes[i as usize]);
        node.filter_taint_slot = self.stats.take_taint_slot(&node);
        self.stats.account(&node, true);
        let old = &mut self.nodes[i as usize];
        *old = node;
        self.refresh(i as usize);
        if let Some(old_zone) = old_zone {
            // As NodeTree.updateNode: out of the old zone, onto the end of the new one.
            self.zone_remove(&old_zone, i);
            self.zone_push(new_zone, i);
            self.rebuild_order();
        }
    }

    fn zone_push(&mut self, zone: String, i: u32) {
        match self.zones.iter_mut().find(|(z, _)| *z == zone) {
            Some((_, m)) => m.push(i),
            None => self.zones.push((zone, vec![i])),
        }
    }

    /// Remove index `i` from `zone`'s list keeping the order; drop the zone when it empties
    /// (NodeTree.removeNode).
    fn zone_remove(&mut self, zone: &str, i: u32) {
        if let Some(z) = self.zones.iter().position(|(name, _)| name == zone) {
            self.zones[z].1.retain(|&x| x != i);
            if self.zones[z].1.is_empty() {
                self.zones.remove(z);
            }
        }
    }

    /// Remove a node and its pods. Returns the removed NodeInfo. The other nodes keep their
    /// NodeTree order.
    pub fn remove_node(&mut self, name: &str) -> Option<NodeInfo> {
        let i = self.index.remove(name)?;
        let zone = self.nodes[i as usize].zone.clone();
        self.zone_remove(&zone, i);
        let removed = self.nodes.swap_remove(i as usize);
        self.stats.account(&removed, false);
        self.stats.release_taint_slot(&removed);
        Arc::make_mut(&mut self.cols).swap_remove(i as usize);
        let last = self.nodes.len() as u32;
        self.nodes_with_affinity.remove(&i);
        self.nodes_with_required_anti_affinity.remove(&i);
        if i < last {
            self.nodes_with_affinity.remove(&last);
            self.nodes_with_required_anti_affinity.remove(&last);
            self.refresh_affinity_index(i);
            // The former last node now lives at index `i`.
            let moved = self.nodes[i as usize].name.clone();
            self.index.insert(moved, i);
            for (_, members) in &mut self.zones {
                for m in members.iter_mut() {
                    if *m == last {
                        *m = i;
                    }
                }
            }
        }
        self.rebuild_order();
        Some(removed)
    }

    /// Account a pod on the node named in its `spec.nodeName` (or `node` when given, for an
    /// assumed pod), with GPU devices `gpu_indexes` when known.
    ///
    /// # Errors
    /// [`SnapshotError::UnknownNode`] when the node is not in the snapshot.
    pub fn add_pod(
        &mut self,
        pod: Arc<PodInfo>,
        node: Option<&str>,
        gpu_indexes: Option<Vec<u32>>,
    ) -> Result<(), SnapshotError> {
        let node_name = node.unwrap_or(&pod.node_name).to_string();
        let i = self
            .node_index(&node_name)
            .ok_or_else(|| SnapshotError::UnknownNode {
                pod: pod.key(),
                node: node_name.clone(),
            })?;
        self.nodes[i as usize].add_pod(pod, gpu_indexes);
        self.refresh(i as usize);
        Ok(())
    }

    /// Remove a pod from `node`. Returns false when it was not there.
    pub fn remove_pod(&mut self, node: &str, namespace: &str, name: &str) -> bool {
        match self.node_index(node) {
            Some(i) => {
                let removed = self.nodes[i as usize].remove_pod(namespace, name);
                self.refresh(i as usize);
                removed
            }
            None => false,
        }
    }

    /// The cluster-wide state of the image `name` (a normalized name as the node lists it), if
    /// some node has it.
    pub fn image_state(&self, name: &str) -> Option<ImageStateSummary> {
        self.stats.images.get(name).copied()
    }

    /// Whether no toleration of `pod` tolerates any `NoSchedule`/`NoExecute` taint of the
    /// nodes: then TaintToleration rejects every node that has such a taint (the dense scan's
    /// quick reject). Costs the distinct taints times the pod's tolerations.
    pub fn tolerates_no_filter_taint(&self, pod: &PodInfo) -> bool {
        pod.tolerations.is_empty()
            || !self
                .stats
                .filter_taints
                .keys()
                .any(|t| tolerations_tolerate_taint(&pod.tolerations, t))
    }

    /// Whether `pod` tolerates every `NoSchedule`/`NoExecute` taint of the nodes: then
    /// TaintToleration passes on every node (whatever its taints), and the scan need not read
    /// the taints flag. True when no node has such a taint. Costs the distinct taints times the
    /// pod's tolerations.
    pub fn tolerates_every_filter_taint(&self, pod: &PodInfo) -> bool {
        self.stats
            .filter_taints
            .keys()
            .all(|t| tolerations_tolerate_taint(&pod.tolerations, t))
    }

    /// The taint-set flags ([`NodeHot::TAINT_SET_FIRST`]) a node must not carry to pass
    /// TaintToleration for `pod` without running it: the slot of each set of
    /// `NoSchedule`/`NoExecute` taints with a taint no toleration of the pod tolerates, and
    /// [`NodeHot::TAINT_SET_OTHER`] (the sets without a slot are not known here). A node
    /// without any of them has no such taint, or a set the pod tolerates whole, so the plugin
    /// passes it; a node with one is filtered by the plugin. Costs the slots' taints times the
    /// pod's tolerations.
    pub fn untolerated_taint_flags(&self, pod: &PodInfo) -> u32 {
        self.stats
            .taint_sets
            .iter()
            .enumerate()
            .filter_map(|(k, s)| {
                let (set, _) = s.as_ref()?;
                let tolerated = set
                    .iter()
                    .all(|t| tolerations_tolerate_taint(&pod.tolerations, t));
                (!tolerated).then_some(NodeHot::TAINT_SET_FIRST << k)
            })
            .fold(NodeHot::TAINT_SET_OTHER, |acc, f| acc | f)
    }

    /// Whether some node has a `NoSchedule`/`NoExecute` taint (else no node carries
    /// [`NodeHot::FILTER_TAINTS`](crate::snapshot::NodeHot::FILTER_TAINTS) and the dense
    /// scan's taint quick reject has nothing to reject).
    pub fn has_filter_taints(&self) -> bool {
        !self.stats.filter_taints.is_empty()
    }

    /// Number of nodes with at least one `PreferNoSchedule` taint.
    pub fn nodes_with_prefer_no_schedule_taints(&self) -> usize {
        self.stats.prefer_no_schedule
    }

    /// Number of nodes whose `scheduler.alpha.kubernetes.io/preferAvoidPods` annotation lists
    /// at least one controller.
    pub fn nodes_with_prefer_avoid_pods(&self) -> usize {
        self.stats.prefer_avoid_pods
    }

    /// The PersistentVolumes, PersistentVolumeClaims, StorageClasses and CSINodes (an `Arc` the
    /// volume plugins keep in their cycle state; cloning it is cheap).
    pub fn volumes(&self) -> &Arc<VolumeIndex> {
        &self.volumes
    }

    /// Mutable access to the volume objects. Copy-on-write: cheap while no cycle state holds
    /// the index (the scheduling cycle releases it before returning).
    pub fn volumes_mut(&mut self) -> &mut VolumeIndex {
        Arc::make_mut(&mut self.volumes)
    }

    /// Add or replace a Service.
    pub fn upsert_service(&mut self, svc: &core::Service) {
        let namespace = svc
            .metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into());
        let name = svc.metadata.name.clone().unwrap_or_default();
        self.services
            .retain(|s| !(s.namespace == namespace && s.name == name));
        self.services.push(ServiceSelector {
            namespace,
            name,
            selector: svc.spec.as_ref().and_then(|s| s.selector.clone()),
        });
    }

    /// Remove a Service.
    pub fn remove_service(&mut self, namespace: &str, name: &str) {
        self.services
            .retain(|s| !(s.namespace == namespace && s.name == name));
    }

    /// Add or replace a ReplicationController.
    pub fn upsert_replication_controller(&mut self, rc: &core::ReplicationController) {
        let key = ns_name(&rc.metadata);
        let sel = rc
            .spec
            .as_ref()
            .and_then(|s| s.selector.clone())
            .unwrap_or_default();
        self.rcs.insert(key, sel);
    }

    /// Remove a ReplicationController.
    pub fn remove_replication_controller(&mut self, namespace: &str, name: &str) {
        self.rcs.remove(&(namespace.to_string(), name.to_string()));
    }

    /// Add or replace a ReplicaSet. A selector that does not compile selects nothing.
    pub fn upsert_replica_set(&mut self, rs: &apps::ReplicaSet) {
        upsert_selector(&mut self.rss, &rs.metadata, &rs.spec.selector);
    }

    /// Remove a ReplicaSet.
    pub fn remove_replica_set(&mut self, namespace: &str, name: &str) {
        self.rss.remove(&(namespace.to_string(), name.to_string()));
    }

    /// Add or replace a StatefulSet. A selector that does not compile selects nothing.
    pub fn upsert_stateful_set(&mut self, ss: &apps::StatefulSet) {
        upsert_selector(&mut self.sss, &ss.metadata, &ss.spec.selector);
    }

    /// Remove a StatefulSet.
    pub fn remove_stateful_set(&mut self, namespace: &str, name: &str) {
        self.sss.remove(&(namespace.to_string(), name.to_string()));
    }

    /// `helper.GetPodServices` (v1.22): the selectors of the Services whose (non-nil) selector
    /// matches the pod's labels, in the order the Services were added. Services of the pod's
    /// namespace only, or of every namespace for a pod whose namespace is the empty string (the
    /// lister's `NamespaceAll`), as [`Snapshot::default_selector`] does.
    pub fn pod_services(&self, pod: &PodInfo) -> Vec<&BTreeMap<String, String>> {
        self.services
            .iter()
            .filter(|s| pod.namespace.is_empty() || s.namespace == pod.namespace)
            .filter_map(|s| s.selector.as_ref())
            .filter(|sel| sel.iter().all(|(k, v)| pod.labels.get(k) == Some(v)))
            .collect()
    }

    /// `helper.DefaultSelector` (v1.22): the union of the selectors of the Services selecting
    /// the pod, and of its controlling ReplicationController, ReplicaSet or StatefulSet (found
    /// through the pod's controller ownerReference). Empty when nothing selects the pod.
    ///
    /// Services are those of the pod's namespace, as `GetPodServices` lists them with
    /// `Services(pod.Namespace)`; for a pod whose namespace is the empty string that lister
    /// returns the Services of every namespace (`metav1.NamespaceAll`), and so does this.
    pub fn default_selector(&self, pod: &PodInfo) -> LabelSelector {
        let mut label_set: BTreeMap<String, String> = BTreeMap::new();
        for s in &self.services {
            if !pod.namespace.is_empty() && s.namespace != pod.namespace {
                continue;
            }
            let Some(sel) = &s.selector else { continue };
            if LabelSelector::from_map(sel).matches(&pod.labels) {
                label_set.extend(sel.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
        }
        let mut selector = LabelSelector::from_map(&label_set);
        let owner = pod.controller.as_ref();
        let Some(owner) = owner else {
            return selector;
        };
        let key = (pod.namespace.clone(), owner.name.clone());
        match (owner.api_version.as_str(), owner.kind.as_str()) {
            ("v1", "ReplicationController") => {
                if let Some(rc) = self.rcs.get(&key) {
                    label_set.extend(rc.iter().map(|(k, v)| (k.clone(), v.clone())));
                    selector = LabelSelector::from_map(&label_set);
                }
            }
            ("apps/v1", "ReplicaSet") => {
                if let Some(rs) = self.rss.get(&key) {
                    selector
                        .requirements
                        .extend(rs.requirements.iter().cloned());
                }
            }
            ("apps/v1", "StatefulSet") => {
                if let Some(ss) = self.sss.get(&key) {
                    selector
                        .requirements
                        .extend(ss.requirements.iter().cloned());
                }
            }
            _ => {}
        }
        selector
    }
}

/// Inter-pod affinity bookkeeping (upstream's `HavePodsWithAffinityList` /
/// `HavePodsWithRequiredAntiAffinityList`, kept incrementally instead of rebuilt per snapshot)
/// and Namespace labels for pod affinity `namespaceSelector`.
impl Snapshot {
    fn refresh_affinity_index(&mut self, i: u32) {
        let n = &self.nodes[i as usize];
        if n.pods_with_affinity.is_empty() {
            self.nodes_with_affinity.remove(&i);
        } else {
            self.nodes_with_affinity.insert(i);
        }
        if n.pods_with_required_anti_affinity.is_empty() {
            self.nodes_with_required_anti_affinity.remove(&i);
        } else {
            self.nodes_with_required_anti_affinity.insert(i);
        }
    }

    /// True when the affinity node sets list exactly the nodes whose pod lists are non-empty
    /// (an invariant every mutation keeps; for tests and debug checks).
    pub fn affinity_index_consistent(&self) -> bool {
        let with = |f: fn(&NodeInfo) -> bool| -> BTreeSet<u32> {
            (0..self.nodes.len() as u32)
                .filter(|&i| f(&self.nodes[i as usize]))
                .collect()
        };
        with(|n| !n.pods_with_affinity.is_empty()) == self.nodes_with_affinity
            && with(|n| !n.pods_with_required_anti_affinity.is_empty())
                == self.nodes_with_required_anti_affinity
    }

    /// Indexes of the nodes running a pod with InterPodAffinity scoring terms
    /// ([`NodeInfo::pods_with_affinity`]), ascending. Empty means no existing pod can change an
    /// InterPodAffinity score (checked in O(1)).
    pub fn nodes_with_affinity(&self) -> &BTreeSet<u32> {
        &self.nodes_with_affinity
    }

    /// Indexes of the nodes running a pod with required anti-affinity
    /// ([`NodeInfo::pods_with_required_anti_affinity`]), ascending.
    pub fn nodes_with_required_anti_affinity(&self) -> &BTreeSet<u32> {
        &self.nodes_with_required_anti_affinity
    }

    /// Add or replace a Namespace (its labels).
    pub fn upsert_namespace(&mut self, ns: &core::Namespace) {
        let name = ns.metadata.name.clone().unwrap_or_default();
        let labels = ns.metadata.labels.clone().unwrap_or_default();
        self.namespaces.insert(name, labels);
    }

    /// Remove a Namespace.
    pub fn remove_namespace(&mut self, name: &str) {
        self.namespaces.remove(name);
    }

    /// The labels of Namespace `name`, `None` when unknown (`GetNamespaceLabelsSnapshot`
    /// treats an unknown namespace as having no labels).
    pub fn namespace_labels(&self, name: &str) -> Option<&Labels> {
        self.namespaces.get(name)
    }

    /// `term` for an *incoming* pod with its namespace selector resolved against the
    /// snapshot's Namespaces (`mergeAffinityTermNamespacesIfNotEmpty`): a non-empty selector adds
    /// the names of the matching Namespaces to `namespaces` and becomes
    /// [`Selector::Nothing`]; a nil or empty (`{}`, every namespace) selector is kept.
    pub fn merged_term(&self, term: &AffinityTerm) -> AffinityTerm {
        let mut t = term.clone();
        if let Selector::Match(sel) = &term.namespace_selector
            && !sel.is_empty()
        {
            for name in self.namespaces_matching(sel) {
                if !t.namespaces.iter().any(|n| n == name) {
                    t.namespaces.push(name.to_string());
                }
            }
            t.namespace_selector = Selector::Nothing;
        }
        t
    }

    /// Names of the Namespaces whose labels match `selector` (the namespace lister's `List`).
    pub fn namespaces_matching<'a>(
        &'a self,
        selector: &'a LabelSelector,
    ) -> impl Iterator<Item = &'a str> + 'a {
        self.namespaces
            .iter()
            .filter(|(_, l)| selector.matches(l))
            .map(|(n, _)| n.as_str())
    }
}

/// Store a controller's compiled selector under its `namespace/name`; one that does not compile
/// selects nothing, so it is removed.
fn upsert_selector(
    map: &mut HashMap<(String, String), LabelSelector>,
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    selector: &k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector,
) {
    let key = ns_name(meta);
    match LabelSelector::from_label_selector(selector) {
        Ok(sel) => {
            map.insert(key, sel);
        }
        Err(_) => {
            map.remove(&key);
        }
    }
}

fn ns_name(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> (String, String) {
    (
        meta.namespace.clone().unwrap_or_else(|| "default".into()),
        meta.name.clone().unwrap_or_default(),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::framework::plugins::testutil::{node, pod};

    fn zoned(name: &str, zone: &str) -> NodeInfo {
        node(name)
            .allocatable(&[("cpu", "4"), ("memory", "8Gi"), ("pods", "10")])
            .label("topology.kubernetes.io/zone", zone)
            .info()
    }

    fn order_names(s: &Snapshot) -> Vec<String> {
        s.order()
            .iter()
            .map(|&i| s.nodes()[i as usize].name.clone())
            .collect()
    }

    /// NodeTree (node_tree.go, v1.22): zones round-robin; removal keeps the others' order; a
    /// node whose zone changes goes to the end of its new zone.
    #[test]
    fn node_tree_order_survives_removal_and_zone_moves() {
        let mut s = Snapshot::new();
        for (n, z) in [("n0", "a"), ("n1", "b"), ("n2", "a"), ("n3", "b")] {
            s.add_node(zoned(n, z)).unwrap();
        }
        assert_eq!(order_names(&s), ["n0", "n1", "n2", "n3"]);
        s.remove_node("n0").unwrap();
        assert_eq!(order_names(&s), ["n2", "n1", "n3"]);
        assert!(s.hot_rows_consistent());
        s.update_node(zoned("n1", "a"));
        assert_eq!(order_names(&s), ["n2", "n3", "n1"]);
        s.add_node(zoned("n4", "c")).unwrap();
        assert_eq!(order_names(&s), ["n2", "n3", "n4", "n1"]);
        assert!(s.node("n3").is_some() && s.node("n0").is_none());
        assert!(s.hot_rows_consistent());
    }

    /// `order_is_index` holds exactly when the order is `0, 1, 2, ...`, through adds, zone
    /// changes and removals.
    #[test]
    fn order_is_index_follows_the_order() {
        let mut s = Snapshot::new();
        assert!(s.order_is_index());
        for n in ["n0", "n1", "n2"] {
            s.add_node(zoned(n, "a")).unwrap();
        }
        assert!(s.order_is_index());
        // Zone b's first node comes second in the round robin.
        s.add_node(zoned("n3", "b")).unwrap();
        assert_eq!(order_names(&s), ["n0", "n3", "n1", "n2"]);
        assert!(!s.order_is_index());
        s.update_node(zoned("n3", "a"));
        assert_eq!(order_names(&s), ["n0", "n1", "n2", "n3"]);
        assert!(s.order_is_index());
        // Removing n0 moves n3, the last index, to index 0: the order is [1, 2, 0].
        s.remove_node("n0").unwrap();
        assert_eq!(order_names(&s), ["n1", "n2", "n3"]);
        let index_order = s.order().iter().enumerate().all(|(k, &i)| i as usize == k);
        assert_eq!(s.order_is_index(), index_order);
        assert!(!s.order_is_index());
    }

    /// The affinity node indexes follow add/remove pod, node update and the swap of
    /// `remove_node`.
    #[test]
    fn affinity_indexes_follow_every_mutation() {
        use crate::framework::plugins::testutil_topology::{term, with_affinity_terms};
        let mut s = Snapshot::new();
        for n in ["n0", "n1", "n2"] {
            s.add_node(zoned(n, "a")).unwrap();
        }
        let anti = with_affinity_terms(
            "default",
            "n2",
            &[],
            vec![],
            vec![term(&[("app", "Exists", &[])], "zone")],
        )
        .name("anti");
        let aff = with_affinity_terms(
            "default",
            "n1",
            &[],
            vec![term(&[("app", "Exists", &[])], "zone")],
            vec![],
        )
        .name("aff");
        s.add_pod(std::sync::Arc::new(anti.info()), None, None)
            .unwrap();
        s.add_pod(std::sync::Arc::new(aff.info()), None, None)
            .unwrap();
        let set = |v: &[u32]| v.iter().copied().collect::<BTreeSet<u32>>();
        assert_eq!(s.nodes_with_required_anti_affinity(), &set(&[2]));
        assert_eq!(s.nodes_with_affinity(), &set(&[1]));
        // n0 leaves: n2 moves to index 0.
        s.remove_node("n0").unwrap();
        assert_eq!(s.node_index("n2"), Some(0));
        assert_eq!(s.nodes_with_required_anti_affinity(), &set(&[0]));
        assert_eq!(s.nodes_with_affinity(), &set(&[1]));
        assert!(s.affinity_index_consistent());
        s.update_node(zoned("n2", "b"));
        assert_eq!(s.nodes_with_required_anti_affinity(), &set(&[0]));
        assert!(s.remove_pod("n2", "default", "anti"));
        assert!(s.nodes_with_required_anti_affinity().is_empty());
        assert!(
            s.node("n2")
                .unwrap()
                .pods_with_required_anti_affinity
                .is_empty()
        );
        assert!(s.remove_pod("n1", "default", "aff"));
        assert!(s.nodes_with_affinity().is_empty());
        assert!(s.affinity_index_consistent());
    }

    /// `add_node` of a NodeInfo that already carries pods with affinity terms puts it in the
    /// affinity indexes, as the hot row already accounts its pods.
    #[test]
    fn add_node_with_pods_enters_affinity_indexes() {
        use crate::framework::plugins::testutil_topology::{term, with_affinity_terms};
        let mut n = zoned("n0", "a");
        let anti = with_affinity_terms(
            "default",
            "n0",
            &[],
            vec![term(&[("app", "Exists", &[])], "zone")],
            vec![term(&[("app", "Exists", &[])], "zone")],
        );
        n.add_pod(std::sync::Arc::new(anti.info()), None);
        let mut s = Snapshot::new();
        s.add_node(n).unwrap();
        assert_eq!(s.nodes_with_required_anti_affinity().len(), 1);
        assert_eq!(s.nodes_with_affinity().len(), 1);
        assert!(s.affinity_index_consistent());
    }

    #[test]
    fn hot_rows_follow_every_mutation() {
        let mut s = Snapshot::new();
        s.add_node(zoned("n0", "a")).unwrap();
        s.add_node(zoned("n1", "a")).unwrap();
        let p = std::sync::Arc::new(
            pod("p")
                .container(&[("cpu", "1"), ("memory", "1Gi")])
                .node("n1")
                .info(),
        );
        s.add_pod(p, None, None).unwrap();
        assert_eq!(s.columns().free_milli_cpu[1], 3000);
        assert_eq!(s.columns().nz_milli_cpu[1], 1000);
        assert_eq!(s.columns().free_pods[1], 9);
        s.update_node(
            node("n1")
                .allocatable(&[("cpu", "2"), ("memory", "8Gi"), ("pods", "10")])
                .unschedulable()
                .label("topology.kubernetes.io/zone", "a")
                .info(),
        );
        assert_eq!(s.columns().alloc_milli_cpu[1], 2000);
        assert_eq!(s.columns().inv_milli_cpu[1], 1.0 / 2000.0);
        assert_eq!(
            s.columns().free_milli_cpu[1],
            1000,
            "pods are kept on update"
        );
        assert_ne!(s.columns().flags[1] & NodeHot::UNSCHEDULABLE, 0);
        assert!(s.hot_rows_consistent());
        assert!(s.remove_pod("n1", "default", "p"));
        assert_eq!(s.columns().free_milli_cpu[1], 2000);
        assert_eq!(s.columns().free_pods[1], 10);
        s.remove_node("n0").unwrap();
        assert_eq!(s.columns().alloc_milli_cpu[0], 2000);
        assert_eq!(s.columns().len(), 1);
        assert!(s.hot_rows_consistent());
    }

    /// The taint-set slots under random node adds, updates (new taints) and removals, with more
    /// distinct sets (twelve, some of two taints, one with a PreferNoSchedule taint beside) than
    /// slots: every node's flag names the slot holding exactly its filter taints (or the
    /// "other" flag, or none without such taints), each slot counts its nodes, and for pods with
    /// random tolerations a node without the pod's untolerated flags is one TaintToleration
    /// passes (the flags never let through a node the plugin rejects).
    #[test]
    fn taint_set_slots_stay_exact_under_random_node_changes() {
        use crate::framework::plugins::taint_toleration::TaintToleration;
        use crate::framework::{Code, CycleState, FilterPlugin};
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut rnd = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        let taint_set = |k: u64| -> Vec<(String, String, &'static str)> {
            let effect = if k.is_multiple_of(2) {
                "NoSchedule"
            } else {
                "NoExecute"
            };
            let mut set = vec![(format!("k{}", k % 4), format!("v{k}"), effect)];
            if k.is_multiple_of(3) {
                set.push(("dedicated".into(), "gpu".into(), "NoSchedule"));
            }
            if k == 5 {
                set.push(("soft".into(), "x".into(), "PreferNoSchedule"));
            }
            set
        };
        let build = |name: &str, set: Option<u64>| {
            let mut n = node(name).allocatable(&[("cpu", "4"), ("memory", "8Gi"), ("pods", "10")]);
            for (key, value, effect) in set.map(taint_set).unwrap_or_default() {
                n = n.taint(&key, &value, effect);
            }
            n.info()
        };
        let pods: Vec<PodInfo> = (0..40)
            .map(|i| {
                let mut p = pod(&format!("p{i}"));
                for _ in 0..rnd(4) {
                    p = match rnd(4) {
                        0 => p.toleration(&format!("k{}", rnd(4)), "Exists", "", ""),
                        1 => p.toleration(
                            &format!("k{}", rnd(4)),
                            "Equal",
                            &format!("v{}", rnd(12)),
                            "NoSchedule",
                        ),
                        2 => p.toleration("dedicated", "Exists", "", "NoSchedule"),
                        _ => p.toleration("", "Exists", "", "NoExecute"),
                    };
                }
                p.info()
            })
            .collect();
        let mut s = Snapshot::new();
        // (Coverage: nodes seen without a slot; tainted nodes the flags let through.)
        let (mut others, mut let_through) = (0, 0);
        for step in 0..600 {
            let name = format!("n{}", rnd(40));
            let set = (rnd(4) != 0).then(|| rnd(12));
            match rnd(5) {
                0 => {
                    s.remove_node(&name);
                }
                _ if s.node(&name).is_some() => s.update_node(build(&name, set)),
                _ => s.add_node(build(&name, set)).unwrap(),
            }
            assert!(s.hot_rows_consistent(), "step {step}");
            let mut counts = [0usize; NodeHot::TAINT_SET_SLOTS as usize];
            for (i, n) in s.nodes().iter().enumerate() {
                let flag = n.filter_taint_slot;
                assert_eq!(flag == 0, !n.has_filter_taints, "step {step} {}", n.name);
                assert_eq!(
                    s.columns().flags[i] & (flag | NodeHot::TAINT_SET_OTHER),
                    flag
                );
                others += usize::from(flag == NodeHot::TAINT_SET_OTHER);
                if flag != 0 && flag != NodeHot::TAINT_SET_OTHER {
                    let k = (flag / NodeHot::TAINT_SET_FIRST).trailing_zeros() as usize;
                    assert_eq!(flag, NodeHot::TAINT_SET_FIRST << k, "one slot bit");
                    let (set, _) = s.stats.taint_sets[k].as_ref().unwrap();
                    assert_eq!(*set, filter_taints_of(n), "step {step} {}", n.name);
                    counts[k] += 1;
                }
            }
            for (k, slot) in s.stats.taint_sets.iter().enumerate() {
                assert_eq!(slot.as_ref().map_or(0, |(_, c)| *c), counts[k], "slot {k}");
            }
            if step % 20 == 0 {
                for p in &pods {
                    let forbidden = s.untolerated_taint_flags(p);
                    for (i, n) in s.nodes().iter().enumerate() {
                        let passes = TaintToleration.filter_code(&CycleState::new(), p, n);
                        if s.columns().flags[i] & forbidden == 0 {
                            assert_eq!(passes, Code::Success, "step {step} {} {}", p.name, n.name);
                            let_through += usize::from(n.has_filter_taints);
                        }
                    }
                }
            }
        }
        assert!(others > 100 && let_through > 100, "{others} {let_through}");
    }
}
