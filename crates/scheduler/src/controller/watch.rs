//! The watches of cluster mode: one `kube-runtime` watcher per [`Kind`], each forwarding its
//! events to the scheduling task as a [`Msg`], and the relist bookkeeping ([`Tracked`]) that
//! turns a relist into deletions of what it no longer lists.
//!
//! Every replica runs them, leading or not, so that a follower's cache is warm when it takes
//! over (kube-scheduler's informers run before leader election too). A new term's read
//! barrier LISTs the assigned pods here too ([`list_assigned_for_barrier`]).

use foldhash::{HashSet, HashSetExt};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use futures::{FutureExt, Stream, StreamExt};
use k8s_openapi::api::apps::v1 as apps;
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::storage::v1 as storage;
use kube::api::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event as WatchEvent};
use kube::{Client, Resource};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tracing::warn;

use super::binder::BindOutcome;
use crate::model::WirePod;

/// Pods are watched and listed in their partial wire form ([`WirePod`]: the scheduling fields
/// and the object's text), never as whole `v1.Pod`s: the same `pods` resource of the core `v1`
/// group.
impl Resource for WirePod {
    type DynamicType = ();
    type Scope = k8s_openapi::NamespaceResourceScope;

    fn kind(_: &()) -> std::borrow::Cow<'_, str> {
        "Pod".into()
    }
    fn group(_: &()) -> std::borrow::Cow<'_, str> {
        "".into()
    }
    fn version(_: &()) -> std::borrow::Cow<'_, str> {
        "v1".into()
    }
    fn plural(_: &()) -> std::borrow::Cow<'_, str> {
        "pods".into()
    }
    fn meta(&self) -> &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
        &mut self.metadata
    }
}

/// How many [`super::handlers::EventHandlers`] keep the API objects of nodes and assigned pods
/// ([`KeepsObjects`]): while none does, the assigned watch and the read barrier's LIST
/// decode each pod without its text ([`AssignedPod`]), and the node watch decodes only the
/// fields [`crate::model::NodeInfo`] reads ([`WatchedNode`]). Process-wide, as a `Deserialize`
/// impl sees no state of its own; with several schedulers in one process (tests) the text is
/// kept when any of them wants it, which the others drop as they always did.
static OBJECT_KEEPERS: AtomicUsize = AtomicUsize::new(0);

/// Held by event handlers that keep the API objects of nodes and assigned pods (an extender
/// that is not `nodeCacheCapable` is configured): while one is held, assigned pods are decoded
/// with their text ([`AssignedPod`]) and nodes whole ([`WatchedNode`]).
#[derive(Debug)]
pub(super) struct KeepsObjects(());

impl KeepsObjects {
    /// Count one more keeper.
    pub(super) fn new() -> KeepsObjects {
        OBJECT_KEEPERS.fetch_add(1, Ordering::Relaxed);
        KeepsObjects(())
    }
}

impl Drop for KeepsObjects {
    fn drop(&mut self) {
        OBJECT_KEEPERS.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A pod of the assigned watch or of the read barrier's LIST: a [`WirePod`] decoded in one
/// pass without its text ([`WirePod::deserialize_without_object`]) unless some handlers keep
/// assigned pods' objects ([`KeepsObjects`]). The handlers drop a bound pod's object
/// otherwise, so the text (found by a second pass over the JSON, then copied) was never read:
/// every replica decodes every bound pod once as the assigned watch delivers it.
#[derive(Clone, Debug)]
pub(super) struct AssignedPod(WirePod);

impl Resource for AssignedPod {
    type DynamicType = ();
    type Scope = k8s_openapi::NamespaceResourceScope;

    fn kind(dt: &()) -> std::borrow::Cow<'_, str> {
        WirePod::kind(dt)
    }
    fn group(dt: &()) -> std::borrow::Cow<'_, str> {
        WirePod::group(dt)
    }
    fn version(dt: &()) -> std::borrow::Cow<'_, str> {
        WirePod::version(dt)
    }
    fn plural(dt: &()) -> std::borrow::Cow<'_, str> {
        WirePod::plural(dt)
    }
    fn meta(&self) -> &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
        &self.0.metadata
    }
    fn meta_mut(&mut self) -> &mut k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
        &mut self.0.metadata
    }
}

impl<'de> serde::Deserialize<'de> for AssignedPod {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<AssignedPod, D::Error> {
        if OBJECT_KEEPERS.load(Ordering::Relaxed) > 0 {
            <WirePod as serde::Deserialize>::deserialize(d).map(AssignedPod)
        } else {
            WirePod::deserialize_without_object(d).map(AssignedPod)
        }
    }
}

/// A node of the node watch: the whole `v1.Node` while some handlers keep nodes' objects
/// ([`KeepsObjects`]: an extender that is not `nodeCacheCapable` is sent them), otherwise only
/// the fields [`crate::model::NodeInfo`] and the watch read ([`NodeFields`]), the rest of the
/// object skipped by the JSON reader without being built: the handlers drop a node's object
/// then, so `status.capacity`, `conditions`, `addresses`, `nodeInfo`, `daemonEndpoints` and
/// the metadata's `managedFields`, `creationTimestamp` and `uid` were decoded (and freed) for
/// nothing (issue 12: most of a follower's ~14,000 instructions per node at start-up).
/// Boxed, as [`Boxed`] (a LIST page grows a `Vec` of pointers).
///
/// `whole` records which way it was decoded: a node decoded slim just before a policy reload
/// turned keeping on, and handled after it, is forwarded as [`WatchMsg::SlimNode`], so that
/// the handlers never cache a slim `v1.Node` as the node's object.
#[derive(Clone, Debug)]
struct WatchedNode {
    node: Box<core::Node>,
    whole: bool,
}

impl Resource for WatchedNode {
    type DynamicType = ();
    type Scope = k8s_openapi::ClusterResourceScope;

    fn kind(dt: &()) -> std::borrow::Cow<'_, str> {
        core::Node::kind(dt)
    }
    fn group(dt: &()) -> std::borrow::Cow<'_, str> {
        core::Node::group(dt)
    }
    fn version(dt: &()) -> std::borrow::Cow<'_, str> {
        core::Node::version(dt)
    }
    fn plural(dt: &()) -> std::borrow::Cow<'_, str> {
        core::Node::plural(dt)
    }
    fn meta(&self) -> &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
        &self.node.metadata
    }
    fn meta_mut(&mut self) -> &mut k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
        &mut self.node.metadata
    }
}

impl<'de> serde::Deserialize<'de> for WatchedNode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<WatchedNode, D::Error> {
        if OBJECT_KEEPERS.load(Ordering::Relaxed) > 0 {
            Box::<core::Node>::deserialize(d).map(|node| WatchedNode { node, whole: true })
        } else {
            NodeFields::deserialize(d).map(|f| WatchedNode {
                node: Box::new(f.into_node()),
                whole: false,
            })
        }
    }
}

/// The node watch's event as a [`WatchMsg`]: [`WatchMsg::Node`] for a whole node (and for
/// `Init`/`InitDone`), [`WatchMsg::SlimNode`] for one decoded without its object.
fn node_msg(ev: WatchEvent<WatchedNode>) -> WatchMsg {
    // Each arm builds its message from the box at once: a node moved through a local first
    // and then into one of two variants was copied once more per event (~1.5 KB).
    match ev {
        WatchEvent::Apply(n) if !n.whole => WatchMsg::SlimNode(WatchEvent::Apply(*n.node)),
        WatchEvent::InitApply(n) if !n.whole => WatchMsg::SlimNode(WatchEvent::InitApply(*n.node)),
        WatchEvent::Delete(n) if !n.whole => WatchMsg::SlimNode(WatchEvent::Delete(*n.node)),
        ev => WatchMsg::Node(map_event(ev, |n| *n.node)),
    }
}

/// The fields of a `v1.Node` that [`crate::model::NodeInfo::from_node`] and the watch read
/// ([`WatchedNode`]); `null` reads as absent, as k8s-openapi's `Node` reads it.
#[derive(serde::Deserialize)]
struct NodeFields {
    metadata: Option<NodeMeta>,
    spec: Option<NodeSpecFields>,
    status: Option<NodeStatusFields>,
}

/// `metadata`: identity, `resourceVersion` (the watcher resumes from it), labels and
/// annotations (`NodePreferAvoidPods`).
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct NodeMeta {
    name: Option<String>,
    namespace: Option<String>,
    resource_version: Option<String>,
    labels: Option<std::collections::BTreeMap<String, String>>,
    annotations: Option<std::collections::BTreeMap<String, String>>,
}

/// `spec`: taints and `unschedulable`.
#[derive(serde::Deserialize)]
struct NodeSpecFields {
    taints: Option<Vec<core::Taint>>,
    unschedulable: Option<bool>,
}

/// `status`: `allocatable` (v1.22 does not read `capacity`) and `images` (ImageLocality).
#[derive(serde::Deserialize)]
struct NodeStatusFields {
    allocatable: Option<
        std::collections::BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
    >,
    images: Option<Vec<core::ContainerImage>>,
}

impl NodeFields {
    /// The `v1.Node` of these fields (every other field unset).
    fn into_node(self) -> core::Node {
        let meta =
            self.metadata.map(
                |m| k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                    name: m.name,
                    namespace: m.namespace,
                    resource_version: m.resource_version,
                    labels: m.labels,
                    annotations: m.annotations,
                    ..Default::default()
                },
            );
        core::Node {
            metadata: meta.unwrap_or_default(),
            spec: self.spec.map(|s| core::NodeSpec {
                taints: s.taints,
                unschedulable: s.unschedulable,
                ..Default::default()
            }),
            status: self.status.map(|s| core::NodeStatus {
                allocatable: s.allocatable,
                images: s.images,
                ..Default::default()
            }),
        }
    }
}

/// An object of a watched kind decoded straight into a box: a LIST page of 500 objects grows
/// a `Vec` of pointers, not of the objects (a k8s-openapi `Node` is ~1.5 KB of inline
/// fields, and the page's `Vec` doubling copied and page-faulted them over again). Unboxed
/// ([`unboxed`]) as the event is forwarded, so the handlers see the kind itself.
#[derive(Clone, Debug)]
struct Boxed<K>(Box<K>);

impl<K: Resource> Resource for Boxed<K> {
    type DynamicType = K::DynamicType;
    type Scope = K::Scope;

    fn kind(dt: &K::DynamicType) -> std::borrow::Cow<'_, str> {
        K::kind(dt)
    }
    fn group(dt: &K::DynamicType) -> std::borrow::Cow<'_, str> {
        K::group(dt)
    }
    fn version(dt: &K::DynamicType) -> std::borrow::Cow<'_, str> {
        K::version(dt)
    }
    fn api_version(dt: &K::DynamicType) -> std::borrow::Cow<'_, str> {
        K::api_version(dt)
    }
    fn plural(dt: &K::DynamicType) -> std::borrow::Cow<'_, str> {
        K::plural(dt)
    }
    fn meta(&self) -> &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
        self.0.meta()
    }
    fn meta_mut(&mut self) -> &mut k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
        self.0.meta_mut()
    }
}

impl<'de, K: serde::Deserialize<'de>> serde::Deserialize<'de> for Boxed<K> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Boxed<K>, D::Error> {
        Box::<K>::deserialize(d).map(Boxed)
    }
}

/// A [`Boxed`] watch event as the event of the kind itself.
fn unboxed<K>(ev: WatchEvent<Boxed<K>>) -> WatchEvent<K> {
    map_event(ev, |o| *o.0)
}

/// `ev` with its object (if any) turned into another type by `f`: the decode wrappers'
/// events ([`Boxed`], [`AssignedPod`], [`WatchedNode`]) as the events of what they wrap.
fn map_event<A, B>(ev: WatchEvent<A>, f: impl FnOnce(A) -> B) -> WatchEvent<B> {
    match ev {
        WatchEvent::Apply(o) => WatchEvent::Apply(f(o)),
        WatchEvent::Delete(o) => WatchEvent::Delete(f(o)),
        WatchEvent::InitApply(o) => WatchEvent::InitApply(f(o)),
        WatchEvent::Init => WatchEvent::Init,
        WatchEvent::InitDone => WatchEvent::InitDone,
    }
}

/// The watched kinds (the watches of v1.22 `eventhandlers.go` `addAllEventHandlers`, plus
/// Namespaces for pod affinity's `namespaceSelector`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Kind {
    /// Nodes.
    Nodes,
    /// Pods assigned to a node and not `Succeeded`/`Failed`, whoever scheduled them.
    AssignedPods,
    /// Pending pods with our `schedulerName` and no node.
    PendingPods,
    /// Services.
    Services,
    /// ReplicationControllers.
    ReplicationControllers,
    /// ReplicaSets.
    ReplicaSets,
    /// StatefulSets.
    StatefulSets,
    /// Namespaces.
    Namespaces,
    /// PersistentVolumes.
    PersistentVolumes,
    /// PersistentVolumeClaims.
    PersistentVolumeClaims,
    /// StorageClasses.
    StorageClasses,
    /// CSINodes.
    CsiNodes,
    /// PodDisruptionBudgets (`policy/v1`; read by preemption).
    PodDisruptionBudgets,
}

impl Kind {
    /// Every kind, each watched once.
    pub(super) const ALL: [Kind; 13] = [
        Kind::Nodes,
        Kind::AssignedPods,
        Kind::PendingPods,
        Kind::Services,
        Kind::ReplicationControllers,
        Kind::ReplicaSets,
        Kind::StatefulSets,
        Kind::Namespaces,
        Kind::PersistentVolumes,
        Kind::PersistentVolumeClaims,
        Kind::StorageClasses,
        Kind::CsiNodes,
        Kind::PodDisruptionBudgets,
    ];

    /// The name in logs.
    pub(super) fn name(self) -> &'static str {
        match self {
            Kind::Nodes => "nodes",
            Kind::AssignedPods => "assigned-pods",
            Kind::PendingPods => "pending-pods",
            Kind::Services => "services",
            Kind::ReplicationControllers => "replicationcontrollers",
            Kind::ReplicaSets => "replicasets",
            Kind::StatefulSets => "statefulsets",
            Kind::Namespaces => "namespaces",
            Kind::PersistentVolumes => "persistentvolumes",
            Kind::PersistentVolumeClaims => "persistentvolumeclaims",
            Kind::StorageClasses => "storageclasses",
            Kind::CsiNodes => "csinodes",
            Kind::PodDisruptionBudgets => "poddisruptionbudgets",
        }
    }
}

/// One watch event, by kind (boxed whole in [`Msg::Watch`], so variants differ in size freely;
/// the pods' events travel inline, [`Msg::PendingPod`] and [`Msg::AssignedPod`]).
#[allow(clippy::large_enum_variant)]
pub(super) enum WatchMsg {
    /// [`Kind::Nodes`]: a whole `v1.Node` (or `Init`/`InitDone`).
    Node(WatchEvent<core::Node>),
    /// [`Kind::Nodes`]: a node decoded with only the fields the compact model reads (nobody
    /// kept objects when it was decoded): never cached as the node's object.
    SlimNode(WatchEvent<core::Node>),
    /// The watch of `kind` was restarted ([`Watches::restart`], restart `epoch`): the first
    /// message of the new watch, every message of the old one before it.
    Restarted {
        /// The kind watched.
        kind: Kind,
        /// The restart's number ([`Watches::restart`]).
        epoch: u64,
    },
    /// [`Kind::AssignedPods`].
    AssignedPod(WatchEvent<WirePod>),
    /// [`Kind::PendingPods`].
    PendingPod(WatchEvent<WirePod>),
    /// [`Kind::Services`].
    Service(WatchEvent<core::Service>),
    /// [`Kind::ReplicationControllers`].
    Rc(WatchEvent<core::ReplicationController>),
    /// [`Kind::ReplicaSets`].
    Rs(WatchEvent<apps::ReplicaSet>),
    /// [`Kind::StatefulSets`].
    Ss(WatchEvent<apps::StatefulSet>),
    /// [`Kind::Namespaces`].
    Namespace(WatchEvent<core::Namespace>),
    /// [`Kind::PersistentVolumes`] (boxed: the largest object).
    Pv(Box<WatchEvent<core::PersistentVolume>>),
    /// [`Kind::PersistentVolumeClaims`].
    Pvc(WatchEvent<core::PersistentVolumeClaim>),
    /// [`Kind::StorageClasses`].
    StorageClass(WatchEvent<storage::StorageClass>),
    /// [`Kind::CsiNodes`].
    CsiNode(WatchEvent<storage::CSINode>),
    /// [`Kind::PodDisruptionBudgets`].
    Pdb(WatchEvent<k8s_openapi::api::policy::v1::PodDisruptionBudget>),
}

/// What the scheduling task receives: a watch event, the end of a binding cycle, the read
/// barrier's LIST, or a failed preemption. Small (the event is boxed), so that the watch tasks
/// and the channel move a pointer, not a kilobytes-large object, per event.
pub(super) enum Msg {
    /// A watch event.
    Watch(Box<WatchMsg>),
    /// A watch event of the pending pods ([`WatchMsg::PendingPod`]), carried inline: a
    /// [`WirePod`] is one pointer, and boxing it in a [`WatchMsg`] (sized for the largest
    /// kind's object) allocated a few kilobytes per pod event, freed on another thread.
    PendingPod(WatchEvent<WirePod>),
    /// A watch event of the assigned pods ([`WatchMsg::AssignedPod`]), inline as
    /// [`Msg::PendingPod`].
    AssignedPod(WatchEvent<WirePod>),
    /// A binding cycle ended.
    Bound(Box<BindOutcome>),
    /// One page of the read barrier's LIST of assigned pods ([`list_assigned_for_barrier`]),
    /// or why the LIST stopped.
    Barrier(Result<BarrierPage, BarrierError>),
    /// A victim's deletion failed (or the fence stopped it) after preemption nominated `pod`
    /// to `node`: the in-memory nomination is withdrawn (v1.22 records none then).
    PreemptionFailed {
        /// The preemptor.
        pod: std::sync::Arc<crate::model::PodInfo>,
        /// The node it was nominated to.
        node: String,
    },
}

impl From<WatchMsg> for Msg {
    /// The pods' events inline, any other boxed.
    fn from(w: WatchMsg) -> Msg {
        match w {
            WatchMsg::PendingPod(ev) => Msg::PendingPod(ev),
            WatchMsg::AssignedPod(ev) => Msg::AssignedPod(ev),
            w => Msg::Watch(Box::new(w)),
        }
    }
}

/// One page of the read barrier's LIST: every page of one LIST is of the same consistent
/// snapshot (the continue token pins it), at resourceVersion `rv`.
pub(super) struct BarrierPage {
    /// The LIST's resourceVersion (0 if it is not a number).
    pub(super) rv: u64,
    /// The page's pods.
    pub(super) items: Vec<WirePod>,
    /// The last page.
    pub(super) last: bool,
}

/// Why a read barrier LIST stopped before its last page (it is retried whole).
pub(super) enum BarrierError {
    /// Its resourceVersion is older than the term's Lease acquisition.
    Older(u64),
    /// A request failed (the error), e.g. an expired continue token.
    Failed(String),
}

/// The assigned-pod selector: bound to a node and not terminated (the assigned watch and the
/// read barrier's LIST).
const ASSIGNED_PODS: &str = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed";

/// Pods per page of the read barrier's LIST (client-go's and kube's watcher's page size): the
/// pages are applied as they arrive, never all held at once.
const BARRIER_PAGE: u32 = 500;

/// After `after`, a consistent LIST of the assigned pods (no resourceVersion: served from
/// storage, so at or past anything written before it, the new term's Lease acquisition
/// included), sent on `tx` page by page as [`Msg::Barrier`]; a first page older than `target`
/// (the Lease acquisition's resourceVersion) or a failed request ends it with the error.
pub(super) fn list_assigned_for_barrier(
    reads: &Client,
    tx: &mpsc::Sender<Msg>,
    after: Duration,
    target: Option<u64>,
) {
    let api = Api::<AssignedPod>::all(reads.clone());
    let tx = tx.clone();
    tokio::spawn(async move {
        tokio::time::sleep(after).await;
        let mut token: Option<String> = None;
        loop {
            let mut lp = kube::api::ListParams::default()
                .fields(ASSIGNED_PODS)
                .limit(BARRIER_PAGE);
            if let Some(t) = &token {
                lp = lp.continue_token(t);
            }
            let page = match api.list(&lp).await {
                Ok(l) => {
                    let rv = l
                        .metadata
                        .resource_version
                        .as_deref()
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(0);
                    if token.is_none() && target.is_some_and(|t| rv < t) {
                        Err(BarrierError::Older(rv))
                    } else {
                        token = l.metadata.continue_.filter(|c| !c.is_empty());
                        Ok(BarrierPage {
                            rv,
                            items: l.items.into_iter().map(|p| p.0).collect(),
                            last: token.is_none(),
                        })
                    }
                }
                Err(e) => Err(BarrierError::Failed(e.to_string())),
            };
            let done = !matches!(&page, Ok(p) if !p.last);
            if tx.send(Msg::Barrier(page)).await.is_err() || done {
                return;
            }
        }
    });
}

/// Start every watch on `reads`: nodes; assigned pods; pending pods (of the one scheduler name
/// in `scheduler_names`, selected by the API server; with several, every pending pod, which
/// the event handlers filter by name as v1.22's `responsibleForPod` does, since a field
/// selector cannot name a set); the kinds the cache mirrors. Each forwards its events on `tx`
/// until the receiver closes.
///
/// While `gather` is set (this replica follows), a watch that has listed reads its stream in
/// batches: when no event is ready, it waits [`super::FOLLOWER_BATCH`] before reading again,
/// so that the events arriving meanwhile are read together (one wake-up and a few reads for
/// many events, instead of one each). LISTs are never delayed, and the leader's watches
/// (`gather` cleared) read every event as it arrives.
///
/// The node and assigned-pod watches can be restarted ([`Watches::restart`]).
pub(super) fn spawn_watches(
    reads: &Client,
    scheduler_names: &[String],
    tx: &mpsc::Sender<Msg>,
    gather: &Arc<AtomicBool>,
) -> Watches {
    let mut tasks = JoinSet::new();
    let by_name = match scheduler_names {
        [one] => format!("spec.schedulerName={one},"),
        _ => String::new(),
    };
    let pending = watcher::Config::default().fields(&format!(
        "{by_name}spec.nodeName=,status.phase!=Succeeded,status.phase!=Failed"
    ));
    let all = watcher::Config::default;
    let t = &mut tasks;
    spawn_watch(
        t,
        Api::all(reads.clone()),
        pending,
        tx.clone(),
        gather.clone(),
        Kind::PendingPods,
        WatchMsg::PendingPod,
        None,
    );
    spawn_watch(
        t,
        Api::all(reads.clone()),
        all(),
        tx.clone(),
        gather.clone(),
        Kind::Services,
        |e| WatchMsg::Service(unboxed(e)),
        None,
    );
    spawn_watch(
        t,
        Api::all(reads.clone()),
        all(),
        tx.clone(),
        gather.clone(),
        Kind::ReplicationControllers,
        |e| WatchMsg::Rc(unboxed(e)),
        None,
    );
    spawn_watch(
        t,
        Api::all(reads.clone()),
        all(),
        tx.clone(),
        gather.clone(),
        Kind::ReplicaSets,
        |e| WatchMsg::Rs(unboxed(e)),
        None,
    );
    spawn_watch(
        t,
        Api::all(reads.clone()),
        all(),
        tx.clone(),
        gather.clone(),
        Kind::StatefulSets,
        |e| WatchMsg::Ss(unboxed(e)),
        None,
    );
    // Namespace labels for pod affinity `namespaceSelector` (v1.22 InterPodAffinity lists
    // Namespaces through a Namespace informer when PodAffinityNamespaceSelector is on).
    spawn_watch(
        t,
        Api::all(reads.clone()),
        all(),
        tx.clone(),
        gather.clone(),
        Kind::Namespaces,
        |e| WatchMsg::Namespace(unboxed(e)),
        None,
    );
    spawn_watch(
        t,
        Api::all(reads.clone()),
        all(),
        tx.clone(),
        gather.clone(),
        Kind::PersistentVolumes,
        |e| WatchMsg::Pv(Box::new(unboxed(e))),
        None,
    );
    spawn_watch(
        t,
        Api::all(reads.clone()),
        all(),
        tx.clone(),
        gather.clone(),
        Kind::PersistentVolumeClaims,
        |e| WatchMsg::Pvc(unboxed(e)),
        None,
    );
    spawn_watch(
        t,
        Api::all(reads.clone()),
        all(),
        tx.clone(),
        gather.clone(),
        Kind::StorageClasses,
        |e| WatchMsg::StorageClass(unboxed(e)),
        None,
    );
    spawn_watch(
        t,
        Api::all(reads.clone()),
        all(),
        tx.clone(),
        gather.clone(),
        Kind::CsiNodes,
        |e| WatchMsg::CsiNode(unboxed(e)),
        None,
    );
    // PodDisruptionBudgets for preemption (v1.22 `DefaultPreemption`'s PDB lister).
    spawn_watch(
        t,
        Api::all(reads.clone()),
        all(),
        tx.clone(),
        gather.clone(),
        Kind::PodDisruptionBudgets,
        |e| WatchMsg::Pdb(unboxed(e)),
        None,
    );
    let mut w = Watches {
        tasks,
        reads: reads.clone(),
        tx: tx.clone(),
        gather: gather.clone(),
        nodes: Restartable::new(),
        assigned: Restartable::new(),
        epoch: 0,
    };
    w.spawn_restartable(Kind::Nodes, None);
    w.spawn_restartable(Kind::AssignedPods, None);
    w
}

/// The running watches ([`spawn_watches`]): the nodes' and the assigned pods' can be restarted
/// ([`Watches::restart`]), so that a policy reload that starts keeping API objects
/// ([`KeepsObjects`]) has every node and assigned pod decoded whole again by a relist.
pub(super) struct Watches {
    tasks: JoinSet<()>,
    reads: Client,
    tx: mpsc::Sender<Msg>,
    gather: Arc<AtomicBool>,
    nodes: Restartable,
    assigned: Restartable,
    /// The number of the last restart (0: none yet).
    epoch: u64,
}

/// A watch task that can be restarted: the running task, and the one-permit gate it holds
/// while it runs, which its successor takes before it sends anything. The old task's messages
/// are then all on the channel before the new one's first ([`WatchMsg::Restarted`]): an
/// aborted task may be in the middle of a send when it is aborted, and only ends (dropping
/// the permit) once that poll returns.
struct Restartable {
    task: Option<tokio::task::AbortHandle>,
    gate: Arc<tokio::sync::Semaphore>,
}

impl Restartable {
    fn new() -> Restartable {
        Restartable {
            task: None,
            gate: Arc::new(tokio::sync::Semaphore::new(1)),
        }
    }
}

impl Watches {
    /// Restart the watch of `kind` ([`Kind::Nodes`] or [`Kind::AssignedPods`]; any other kind
    /// is left alone): the running one is aborted and a new one relists (kube-runtime's
    /// watcher starts with a LIST: `Init`, `InitApply`s, `InitDone`), first sending
    /// [`WatchMsg::Restarted`] with the returned restart number once the old task has ended.
    /// The objects of the relist are decoded as [`KeepsObjects`] says at that time.
    pub(super) fn restart(&mut self, kind: Kind) -> u64 {
        self.epoch += 1;
        let epoch = self.epoch;
        if let Some(r) = self.restartable(kind)
            && let Some(task) = r.task.take()
        {
            task.abort();
        }
        self.spawn_restartable(kind, Some(epoch));
        epoch
    }

    /// Stop every watch.
    pub(super) fn abort_all(&mut self) {
        self.tasks.abort_all();
    }

    fn restartable(&mut self, kind: Kind) -> Option<&mut Restartable> {
        match kind {
            Kind::Nodes => Some(&mut self.nodes),
            Kind::AssignedPods => Some(&mut self.assigned),
            _ => None,
        }
    }

    /// Spawn the watch of `kind` behind its gate (`restarted`: the restart's number, sent
    /// first).
    fn spawn_restartable(&mut self, kind: Kind, restarted: Option<u64>) {
        let Some(gate) = self.restartable(kind).map(|r| r.gate.clone()) else {
            return;
        };
        let gate = Some((gate, restarted));
        let (tasks, reads, tx, gather) = (&mut self.tasks, &self.reads, &self.tx, &self.gather);
        let task = if kind == Kind::Nodes {
            spawn_watch(
                tasks,
                Api::all(reads.clone()),
                watcher::Config::default(),
                tx.clone(),
                gather.clone(),
                kind,
                node_msg,
                gate,
            )
        } else {
            spawn_watch(
                tasks,
                Api::all(reads.clone()),
                watcher::Config::default().fields(ASSIGNED_PODS),
                tx.clone(),
                gather.clone(),
                kind,
                |e| WatchMsg::AssignedPod(map_event(e, |p: AssignedPod| p.0)),
                gate,
            )
        };
        if let Some(r) = self.restartable(kind) {
            r.task = Some(task);
        }
    }
}

/// The gate of a restartable watch and the number of the restart that spawned it (`None`: the
/// first watch), see [`Restartable`].
type Gate = Option<(Arc<tokio::sync::Semaphore>, Option<u64>)>;

/// Spawn one watch of `api` (under `config`) that forwards each event, wrapped, on `tx`;
/// behind `gate` if it is restartable.
#[allow(clippy::too_many_arguments)]
fn spawn_watch<K, F>(
    tasks: &mut JoinSet<()>,
    api: Api<K>,
    config: watcher::Config,
    tx: mpsc::Sender<Msg>,
    gather: Arc<AtomicBool>,
    kind: Kind,
    wrap: F,
    gate: Gate,
) -> tokio::task::AbortHandle
where
    K: Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
    K::DynamicType: Default,
    F: Fn(WatchEvent<K>) -> WatchMsg + Send + 'static,
{
    tasks.spawn(async move {
        let Some(_held) = pass_gate(gate, &tx, kind).await else {
            return;
        };
        let stream = watcher(api, config).default_backoff();
        forward(stream, tx, &gather, kind, wrap).await;
    })
}

/// A watch task's start behind its `gate` ([`Restartable`]): wait until the task it replaces
/// has ended, then send [`WatchMsg::Restarted`] if it was restarted. Returns the permit to
/// hold while the watch runs (`Some(None)` without a gate), or `None` when the receiver is gone.
async fn pass_gate(
    gate: Gate,
    tx: &mpsc::Sender<Msg>,
    kind: Kind,
) -> Option<Option<tokio::sync::OwnedSemaphorePermit>> {
    let Some((gate, restarted)) = gate else {
        return Some(None);
    };
    let permit = gate.acquire_owned().await.ok()?;
    if let Some(epoch) = restarted {
        tx.send(Msg::from(WatchMsg::Restarted { kind, epoch }))
            .await
            .ok()?;
    }
    Some(Some(permit))
}

fn watcher<K>(
    api: Api<K>,
    config: watcher::Config,
) -> impl Stream<Item = watcher::Result<WatchEvent<K>>>
where
    K: Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
    K::DynamicType: Default,
{
    watcher::watcher(api, config)
}

async fn forward<K, S, F>(
    stream: S,
    tx: mpsc::Sender<Msg>,
    gather: &AtomicBool,
    kind: Kind,
    wrap: F,
) where
    S: Stream<Item = watcher::Result<WatchEvent<K>>>,
    F: Fn(WatchEvent<K>) -> WatchMsg,
{
    let mut stream = std::pin::pin!(stream);
    // Between a relist's `InitDone` and the next `Init`: watching, not listing.
    let mut watching = false;
    loop {
        let next = match stream.next().now_or_never() {
            Some(next) => next,
            None => {
                if watching && gather.load(Ordering::Relaxed) {
                    tokio::time::sleep(super::FOLLOWER_BATCH).await;
                }
                stream.next().await
            }
        };
        let Some(ev) = next else { return };
        match ev {
            Ok(ev) => {
                match &ev {
                    WatchEvent::InitDone => watching = true,
                    WatchEvent::Init => watching = false,
                    _ => {}
                }
                if tx.send(Msg::from(wrap(ev))).await.is_err() {
                    return;
                }
            }
            Err(e) => {
                warn!(watch = kind.name(), error = %e, "Watch failed; retrying with backoff")
            }
        }
    }
}

/// Relist bookkeeping for one watch: keys present, and the keys seen since the last `Init`.
#[derive(Default)]
pub(super) struct Tracked {
    /// Keys present.
    pub(super) known: HashSet<String>,
    listing: Listing,
    /// The watch has listed once.
    pub(super) synced: bool,
    /// A restart of the watch ([`Tracked::expect_restart`]) whose relist has not ended yet.
    restart: Option<Restart>,
}

/// A restart of a watch awaited by [`Tracked`]: its number ([`Watches::restart`]), and whether
/// the new watch's first message ([`WatchMsg::Restarted`]) arrived, after which the next
/// `InitDone` is its relist's.
struct Restart {
    epoch: u64,
    begun: bool,
}

/// Where a watch's list stands ([`Tracked`]).
#[derive(Default)]
enum Listing {
    /// No `Init` since the last `InitDone`.
    #[default]
    Idle,
    /// Listing since an `Init` at which no key was present, and no event but `InitApply`s
    /// since: the keys seen are exactly the keys present, so none is gone at the `InitDone`
    /// and the list's keys are not collected a second time (a first list of 10,000 pods
    /// recorded each key twice). Another event meanwhile turns it into [`Listing::Relist`].
    Fresh,
    /// Listing: the keys seen since the `Init`.
    Relist(HashSet<String>),
}

impl Tracked {
    /// The watch was restarted ([`Watches::restart`] returned `epoch`): not [`Tracked::ready`]
    /// until the new watch's relist ends. An `InitDone` of the old watch (still on the channel)
    /// or of an earlier restart does not count.
    pub(super) fn expect_restart(&mut self, epoch: u64) {
        self.restart = Some(Restart {
            epoch,
            begun: false,
        });
    }

    /// The restarted watch's first message ([`WatchMsg::Restarted`]): the messages from here
    /// on are its own, if it is the awaited restart.
    pub(super) fn restarted(&mut self, epoch: u64) {
        if let Some(r) = &mut self.restart
            && r.epoch == epoch
        {
            r.begun = true;
        }
    }

    /// The watch has listed once, and the relist of the last restart (if any) has ended.
    pub(super) fn ready(&self) -> bool {
        self.synced && self.restart.is_none()
    }

    /// An `InitDone`: listed; it ends an awaited restart's relist if the restarted watch sent it.
    fn listed(&mut self) {
        self.synced = true;
        if self.restart.as_ref().is_some_and(|r| r.begun) {
            self.restart = None;
        }
    }

    /// Feed one event; returns the keys to treat as deleted (present before a relist, absent
    /// from it) when the event is `InitDone`.
    pub(super) fn observe<K: Resource>(&mut self, ev: &WatchEvent<K>) -> Vec<String> {
        let key = match ev {
            WatchEvent::InitApply(o) | WatchEvent::Apply(o) | WatchEvent::Delete(o) => {
                Some(key_of(o))
            }
            WatchEvent::Init | WatchEvent::InitDone => None,
        };
        self.observe_keyed(ev, key.as_deref())
    }

    /// [`Tracked::observe`] given the key of the event's object (`Some` for `InitApply`,
    /// `Apply` and `Delete`), for a caller that needs the key too: it is computed once per
    /// event, and copied only when a new key is recorded.
    pub(super) fn observe_keyed<K>(
        &mut self,
        ev: &WatchEvent<K>,
        key: Option<&str>,
    ) -> Vec<String> {
        match (ev, key) {
            (WatchEvent::Init, _) => {
                self.listing = if self.known.is_empty() {
                    Listing::Fresh
                } else {
                    Listing::Relist(HashSet::new())
                };
                Vec::new()
            }
            (WatchEvent::InitApply(_), Some(k)) => {
                if let Listing::Relist(r) = &mut self.listing {
                    r.insert(k.to_owned());
                }
                if !self.known.contains(k) {
                    self.known.insert(k.to_owned());
                }
                Vec::new()
            }
            (WatchEvent::Apply(_), Some(k)) => {
                self.seen_is_not_known();
                if !self.known.contains(k) {
                    self.known.insert(k.to_owned());
                }
                Vec::new()
            }
            (WatchEvent::Delete(_), Some(k)) => {
                self.seen_is_not_known();
                self.known.remove(k);
                Vec::new()
            }
            (WatchEvent::InitDone, _) => {
                self.listed();
                let seen = match std::mem::take(&mut self.listing) {
                    Listing::Fresh => return Vec::new(),
                    Listing::Relist(seen) => seen,
                    Listing::Idle => HashSet::new(),
                };
                let gone: Vec<String> = self.known.difference(&seen).cloned().collect();
                for g in &gone {
                    self.known.remove(g);
                }
                gone
            }
            (WatchEvent::InitApply(_) | WatchEvent::Apply(_) | WatchEvent::Delete(_), None) => {
                Vec::new()
            }
        }
    }

    /// An event other than `InitApply` during a [`Listing::Fresh`] list: the keys seen so far
    /// (all present, as nothing was before the `Init`) are collected from here on.
    fn seen_is_not_known(&mut self) {
        if matches!(self.listing, Listing::Fresh) {
            self.listing = Listing::Relist(self.known.clone());
        }
    }
}

impl Tracked {
    /// [`Tracked::observe`] for a watch whose present keys the caller holds itself (`present`:
    /// the assigned pods, [`super::handlers::EventHandlers`]' map of them), so that `known` stays
    /// empty instead of holding a second copy of 150,000 keys. A list while nothing is present
    /// (the first) collects no keys: nothing can be gone.
    pub(super) fn observe_held<K: Resource, V>(
        &mut self,
        ev: &WatchEvent<K>,
        present: &foldhash::HashMap<String, V>,
    ) -> Vec<String> {
        match ev {
            WatchEvent::Init => {
                self.listing = if present.is_empty() {
                    Listing::Fresh
                } else {
                    Listing::Relist(HashSet::new())
                };
                Vec::new()
            }
            WatchEvent::InitApply(o) => {
                if let Listing::Relist(r) = &mut self.listing {
                    r.insert(key_of(o));
                }
                Vec::new()
            }
            WatchEvent::Apply(_) | WatchEvent::Delete(_) => Vec::new(),
            WatchEvent::InitDone => {
                self.listed();
                match std::mem::take(&mut self.listing) {
                    Listing::Relist(seen) => present
                        .keys()
                        .filter(|k| !seen.contains(*k))
                        .cloned()
                        .collect(),
                    Listing::Fresh | Listing::Idle => Vec::new(),
                }
            }
        }
    }
}

/// `namespace/name`, or `name` for a cluster-scoped object.
pub(super) fn key_of<K: Resource>(o: &K) -> String {
    let meta = o.meta();
    let name = meta.name.as_deref().unwrap_or_default();
    match &meta.namespace {
        // One allocation of the key's length (computed for every pod event, up to three
        // times): no formatting machinery, no copy of the name first.
        Some(ns) => {
            let mut key = String::with_capacity(ns.len() + 1 + name.len());
            key.push_str(ns);
            key.push('/');
            key.push_str(name);
            key
        }
        None => name.to_owned(),
    }
}

/// `(namespace, name)` of a key ([`key_of`]).
pub(super) fn split_key(key: &str) -> (&str, &str) {
    key.split_once('/').unwrap_or(("", key))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use kube::ResourceExt;

    fn named(name: &str) -> core::Node {
        let mut n = core::Node::default();
        n.metadata.name = Some(name.into());
        n
    }

    /// A following replica's watch, once listed, reads in batches: the first event after a
    /// quiet spell is forwarded at once, the ones after it only once FOLLOWER_BATCH has passed
    /// (read together); the LIST is never delayed, and a leading replica's watch (`gather`
    /// cleared) forwards every event at once.
    #[tokio::test(start_paused = true)]
    async fn a_following_watch_reads_in_batches_once_listed() {
        use tokio::time::Instant;
        let (events, stream) =
            futures::channel::mpsc::unbounded::<watcher::Result<WatchEvent<core::Node>>>();
        let (tx, mut rx) = mpsc::channel(16);
        let gather = Arc::new(AtomicBool::new(true));
        let g = gather.clone();
        tokio::spawn(async move { forward(stream, tx, &g, Kind::Nodes, WatchMsg::Node).await });
        let start = Instant::now();
        let mut next = async |ev: WatchEvent<core::Node>| {
            events.unbounded_send(Ok(ev)).unwrap();
            let m = rx.recv().await.unwrap();
            assert!(matches!(m, Msg::Watch(_)));
            start.elapsed()
        };
        // Listing: no delay.
        assert_eq!(next(WatchEvent::Init).await, Duration::ZERO);
        assert_eq!(
            next(WatchEvent::InitApply(named("a"))).await,
            Duration::ZERO
        );
        assert_eq!(next(WatchEvent::InitDone).await, Duration::ZERO);
        // Watching while following: after a quiet spell the first event comes at once, the
        // next one after the batch interval.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let ms = Duration::from_millis;
        assert_eq!(next(WatchEvent::Apply(named("b"))).await, ms(50));
        assert_eq!(
            next(WatchEvent::Apply(named("c"))).await,
            ms(50) + super::super::FOLLOWER_BATCH
        );
        // Leading: at once.
        gather.store(false, Ordering::Relaxed);
        tokio::time::sleep(ms(100)).await;
        let t = start.elapsed();
        assert_eq!(next(WatchEvent::Apply(named("d"))).await, t);
        assert_eq!(next(WatchEvent::Apply(named("e"))).await, t);
    }

    /// A restarted watch sends nothing while the task it replaces runs, even when that one is
    /// aborted in the middle of its stream: once it has ended, the new one's first message is
    /// [`WatchMsg::Restarted`], after every message of the old one.
    #[tokio::test(start_paused = true)]
    async fn a_restarted_watch_speaks_only_once_the_old_one_ended() {
        let gate = Arc::new(tokio::sync::Semaphore::new(1));
        let (tx, mut rx) = mpsc::channel(16);
        let mut tasks = JoinSet::new();
        let (g, t) = (gate.clone(), tx.clone());
        let old = tasks.spawn(async move {
            let _held = pass_gate(Some((g, None)), &t, Kind::Nodes).await;
            let _ = t.send(Msg::from(WatchMsg::Node(WatchEvent::Init))).await;
            std::future::pending::<()>().await;
        });
        tokio::time::sleep(Duration::from_secs(1)).await;
        let (g, t) = (gate.clone(), tx.clone());
        tasks.spawn(async move {
            if pass_gate(Some((g, Some(7))), &t, Kind::Nodes)
                .await
                .is_some()
            {
                let _ = t
                    .send(Msg::from(WatchMsg::Node(WatchEvent::InitDone)))
                    .await;
            }
        });
        tokio::time::sleep(Duration::from_secs(1)).await;
        let kind = |m: Msg| match m {
            Msg::Watch(w) => match *w {
                WatchMsg::Node(WatchEvent::Init) => "init",
                WatchMsg::Node(WatchEvent::InitDone) => "init-done",
                WatchMsg::Restarted {
                    kind: Kind::Nodes,
                    epoch: 7,
                } => "restarted",
                _ => "other",
            },
            _ => "other",
        };
        assert_eq!(kind(rx.recv().await.unwrap()), "init");
        assert!(
            rx.try_recv().is_err(),
            "the new watch waits for the old one"
        );
        old.abort();
        assert_eq!(kind(rx.recv().await.unwrap()), "restarted");
        assert_eq!(kind(rx.recv().await.unwrap()), "init-done");
    }

    /// Pods decode in their wire form through kube's own watch-event and LIST types, as the
    /// client reads them (`serde_json::from_str`): the object's text is kept whole (the
    /// `RawValue` survives the adjacently tagged `WatchEvent` and `ObjectList`'s flattened
    /// type fields), and the key and resourceVersion read through `kube::Resource`.
    #[test]
    fn pods_decode_in_wire_form_from_watch_lines_and_list_pages() {
        let pod = r#"{"metadata":{"name":"p","namespace":"ns","resourceVersion":"12"},"spec":{"schedulerName":"s","containers":[{"name":"c","image":"i","resources":{"requests":{"cpu":"1"}}}]},"status":{"phase":"Pending"}}"#;
        let line = format!(r#"{{"type":"MODIFIED","object":{pod}}}"#);
        let ev: kube::core::WatchEvent<WirePod> = serde_json::from_str(&line).unwrap();
        let kube::core::WatchEvent::Modified(w) = ev else {
            panic!("not MODIFIED")
        };
        assert_eq!(
            (key_of(&w).as_str(), w.scheduler_name()),
            ("ns/p", Some("s"))
        );
        assert_eq!(w.resource_version().as_deref(), Some("12"));
        let whole: core::Pod = serde_json::from_str(pod).unwrap();
        assert_eq!(w.object().get(), Some(&whole));
        let page = format!(
            r#"{{"kind":"PodList","apiVersion":"v1","metadata":{{"resourceVersion":"40","continue":"c1"}},"items":[{pod},{pod}]}}"#
        );
        let list: kube::core::ObjectList<WirePod> = serde_json::from_str(&page).unwrap();
        assert_eq!(list.items.len(), 2);
        assert_eq!(list.metadata.resource_version.as_deref(), Some("40"));
        assert_eq!(list.items[1].object().get(), Some(&whole));
    }

    /// Assigned pods decode in one pass without their text (no object) through kube's
    /// watch-event and LIST types, with the same scheduling fields, key and resourceVersion as
    /// the pending watch's [`WirePod`] and so the same [`PodInfo`] once the cache drops the
    /// object; while a handler keeps assigned pods' objects ([`KeepsObjects`]), the
    /// text is kept and decodes to the whole pod. A value that is not a pod is an error
    /// either way.
    #[test]
    fn assigned_pods_decode_without_their_text_unless_kept() {
        use crate::model::PodInfo;
        let pod = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns","resourceVersion":"12","uid":"u1","labels":{"app":"a"},"creationTimestamp":"2026-12-02T00:48:58Z","ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs","uid":"u0","controller":true}]},"spec":{"nodeName":"n1","priority":7,"containers":[{"name":"c","image":"i","ports":[{"containerPort":80,"hostPort":8080}],"resources":{"limits":{"cpu":"2"},"requests":{"cpu":"100m","memory":"500Mi"}}}],"initContainers":[{"name":"i","resources":{"requests":{"cpu":"1"}}}],"tolerations":[{"key":"k","operator":"Exists"}]},"status":{"phase":"Running","startTime":"2026-12-02T00:49:00Z"}}"#;
        let line = format!(r#"{{"type":"ADDED","object":{pod}}}"#);
        let page = format!(
            r#"{{"kind":"PodList","apiVersion":"v1","metadata":{{"resourceVersion":"40"}},"items":[{pod}]}}"#
        );
        let wire: kube::core::WatchEvent<WirePod> = serde_json::from_str(&line).unwrap();
        let kube::core::WatchEvent::Added(wire) = wire else {
            panic!("not ADDED")
        };
        let compact =
            |w: &WirePod| format!("{:?}", PodInfo::from_wire(w).unwrap().without_object());
        let ev: kube::core::WatchEvent<AssignedPod> = serde_json::from_str(&line).unwrap();
        let kube::core::WatchEvent::Added(a) = ev else {
            panic!("not ADDED")
        };
        let list: kube::core::ObjectList<AssignedPod> = serde_json::from_str(&page).unwrap();
        let bare =
            WirePod::deserialize_without_object(&mut serde_json::Deserializer::from_str(pod))
                .unwrap();
        assert!(!bare.object().is_some());
        assert_eq!(compact(&bare), compact(&wire));
        assert_eq!(
            format!("{:?}", bare.metadata),
            format!("{:?}", wire.metadata)
        );
        for a in [&a, &list.items[0]] {
            assert_eq!(compact(&a.0), compact(&wire));
            assert_eq!(
                (key_of(a), a.resource_version()),
                (key_of(&wire), wire.resource_version())
            );
        }
        let kept = KeepsObjects::new();
        let ev: kube::core::WatchEvent<AssignedPod> = serde_json::from_str(&line).unwrap();
        let kube::core::WatchEvent::Added(a) = ev else {
            panic!("not ADDED")
        };
        assert_eq!(a.0.object().get(), wire.object().get());
        assert!(a.0.object().is_some());
        drop(kept);
        assert!(
            WirePod::deserialize_without_object(&mut serde_json::Deserializer::from_str(
                r#"{"spec":{"containers":7}}"#
            ))
            .is_err()
        );
    }

    /// A node of the node watch decodes, without its object, to the same [`NodeInfo`] as the
    /// whole `v1.Node` (every field scheduling reads: name, labels, taints, unschedulable,
    /// allocatable, images, the preferAvoidPods annotation), with the key and resourceVersion
    /// the watch resumes from; the fields nothing reads (capacity, conditions, addresses,
    /// managedFields...) are not built. While a handler keeps objects, the node is whole.
    /// `null` parts read as absent, as k8s-openapi reads them.
    #[test]
    fn nodes_decode_only_what_node_info_reads() {
        use crate::model::NodeInfo;
        let node = r#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1","uid":"u-1",
            "resourceVersion":"17","creationTimestamp":"2026-01-02T03:04:05Z",
            "labels":{"kubernetes.io/hostname":"n1","topology.kubernetes.io/zone":"z1"},
            "annotations":{"scheduler.alpha.kubernetes.io/preferAvoidPods":
              "{\"preferAvoidPods\":[{\"podSignature\":{\"podController\":{\"apiVersion\":\"v1\",\"kind\":\"ReplicationController\",\"name\":\"rc\",\"uid\":\"abc\",\"controller\":true}}}]}",
              "other":"x"},
            "managedFields":[{"manager":"kubelet","operation":"Update","fieldsType":"FieldsV1",
              "fieldsV1":{"f:status":{"f:capacity":{}}}}]},
          "spec":{"podCIDR":"10.0.0.0/24","providerID":"p://n1","unschedulable":true,
            "taints":[{"key":"k","value":"v","effect":"NoSchedule"},{"key":"e","effect":"NoExecute"}]},
          "status":{"capacity":{"cpu":"8","memory":"64Gi","pods":"110"},
            "allocatable":{"cpu":"7500m","memory":"60Gi","pods":"110","nvidia.com/gpu":"2"},
            "conditions":[{"type":"Ready","status":"True","lastHeartbeatTime":"2026-01-02T03:04:05Z"}],
            "addresses":[{"type":"InternalIP","address":"10.0.0.1"}],
            "images":[{"names":["reg/a:1","reg/a@sha256:00"],"sizeBytes":1000},{"names":["reg/b:2"],"sizeBytes":20}],
            "nodeInfo":{"machineID":"m","systemUUID":"s","bootID":"b","kernelVersion":"k","osImage":"o",
              "containerRuntimeVersion":"c","kubeletVersion":"v1.22.0","kubeProxyVersion":"v1.22.0",
              "operatingSystem":"linux","architecture":"amd64"}}}"#;
        let full: core::Node = serde_json::from_str(node).unwrap();
        let info =
            |n: core::Node| format!("{:?}", NodeInfo::from_node(n).unwrap().without_object());
        let fields: NodeFields = serde_json::from_str(node).unwrap();
        let slim = fields.into_node();
        assert_eq!(info(slim.clone()), info(full.clone()));
        assert_eq!(
            format!(
                "{:?}",
                NodeInfo::from_node_without_object(slim.clone()).unwrap()
            ),
            info(full.clone())
        );
        assert_eq!(
            (key_of(&slim), slim.resource_version()),
            (key_of(&full), full.resource_version())
        );
        let status = slim.status.as_ref().unwrap();
        assert!(status.capacity.is_none() && status.conditions.is_none());
        assert!(slim.metadata.managed_fields.is_none() && slim.metadata.uid.is_none());
        assert!(slim.spec.as_ref().unwrap().pod_cidr.is_none());
        // Through the watch's type: the same fields whichever way it decodes.
        let list = format!(
            r#"{{"kind":"NodeList","apiVersion":"v1","metadata":{{"resourceVersion":"20"}},"items":[{node}]}}"#
        );
        let page: kube::core::ObjectList<WatchedNode> = serde_json::from_str(&list).unwrap();
        assert_eq!(info(*page.items[0].node.clone()), info(full.clone()));
        // Slim unless another test holds a keeper meanwhile: `whole` says which.
        assert_eq!(
            page.items[0].whole,
            page.items[0]
                .node
                .status
                .as_ref()
                .unwrap()
                .capacity
                .is_some()
        );
        let kept = KeepsObjects::new();
        let page: kube::core::ObjectList<WatchedNode> = serde_json::from_str(&list).unwrap();
        assert_eq!(*page.items[0].node, full);
        assert!(page.items[0].whole);
        drop(kept);
        let nulls: NodeFields =
            serde_json::from_str(r#"{"metadata":null,"spec":null,"status":{"allocatable":null}}"#)
                .unwrap();
        let bare: core::Node =
            serde_json::from_str(r#"{"metadata":null,"spec":null,"status":{"allocatable":null}}"#)
                .unwrap();
        assert_eq!(nulls.into_node(), bare);
        assert!(serde_json::from_str::<NodeFields>(r#"{"status":{"allocatable":7}}"#).is_err());
    }

    /// A node decoded slim (nobody kept objects then) is forwarded as [`WatchMsg::SlimNode`]
    /// even if keeping turned on before it is handled: the handlers never take it for the
    /// node's object (the race of a decode just before a policy reload). A whole node, and
    /// `Init`/`InitDone`, are [`WatchMsg::Node`].
    #[test]
    fn a_node_decoded_slim_stays_marked_slim() {
        let line = r#"{"type":"ADDED","object":{"metadata":{"name":"n1","resourceVersion":"3"},
            "status":{"capacity":{"cpu":"8"},"allocatable":{"cpu":"8"}}}}"#;
        let decode = || match serde_json::from_str::<kube::core::WatchEvent<WatchedNode>>(line) {
            Ok(kube::core::WatchEvent::Added(n)) => WatchEvent::Apply(n),
            _ => panic!("not ADDED"),
        };
        // As the watch decodes it while nobody keeps objects (other tests may hold a keeper
        // now, so the slim decode is made directly).
        let fields: NodeFields = serde_json::from_str(
            r#"{"metadata":{"name":"n1"},"status":{"capacity":{"cpu":"8"},"allocatable":{"cpu":"8"}}}"#,
        )
        .unwrap();
        let slim = WatchEvent::Apply(WatchedNode {
            node: Box::new(fields.into_node()),
            whole: false,
        });
        let kept = KeepsObjects::new();
        let whole = decode();
        let WatchMsg::SlimNode(WatchEvent::Apply(n)) = node_msg(slim) else {
            panic!("a slim node is not a WatchMsg::SlimNode")
        };
        assert!(n.status.unwrap().capacity.is_none());
        let WatchMsg::Node(WatchEvent::Apply(n)) = node_msg(whole) else {
            panic!("a whole node is not a WatchMsg::Node")
        };
        assert_eq!(n.status.unwrap().capacity.unwrap()["cpu"].0, "8");
        drop(kept);
        assert!(matches!(
            node_msg(WatchEvent::InitDone),
            WatchMsg::Node(WatchEvent::InitDone)
        ));
    }

    /// A pod of the pending watch decodes its metadata at once and its scheduling fields from
    /// the kept text on first use, to the same [`PodInfo`] as an eager decode, whatever the
    /// order of the object's fields; a DELETED event reads its key and resourceVersion without
    /// them. A spec that is not pod-shaped (which an API server never sends) is a
    /// `PodFieldError::Decode` naming the pod once the fields are read, where the eager decode
    /// fails; JSON that is not an object still fails the event.
    #[test]
    fn pending_pods_decode_their_spec_on_first_use() {
        use crate::model::{PodFieldError, PodInfo};
        let meta = r#""metadata":{"name":"p","namespace":"ns","resourceVersion":"12","uid":"u1","labels":{"app":"a"}}"#;
        let spec = r#""spec":{"schedulerName":"s","nodeName":"","priority":3,"containers":[{"name":"c","image":"i","ports":[{"containerPort":80,"hostPort":81}],"resources":{"requests":{"cpu":"100m","memory":"1Gi"}}}],"tolerations":[{"key":"k","operator":"Exists"}]}"#;
        let status = r#""status":{"phase":"Pending","nominatedNodeName":"n1","startTime":"2026-12-02T00:49:00Z"}"#;
        for pod in [
            format!(r#"{{"apiVersion":"v1","kind":"Pod",{meta},{spec},{status}}}"#),
            format!(r#"{{{spec},{status},"kind":"Pod",{meta}}}"#),
        ] {
            let eager = WirePod::from_json(&pod).unwrap();
            let line = format!(r#"{{"type":"DELETED","object":{pod}}}"#);
            let ev: kube::core::WatchEvent<WirePod> = serde_json::from_str(&line).unwrap();
            let kube::core::WatchEvent::Deleted(lazy) = ev else {
                panic!("not DELETED")
            };
            assert_eq!(
                (key_of(&lazy), lazy.resource_version()),
                ("ns/p".to_string(), Some("12".to_string()))
            );
            assert_eq!(
                format!("{:?}", lazy.metadata),
                format!("{:?}", eager.metadata)
            );
            assert_eq!(lazy.scheduler_name(), Some("s"));
            assert_eq!(
                format!("{:?}", PodInfo::from_wire(&lazy).unwrap()),
                format!("{:?}", PodInfo::from_wire(&eager).unwrap())
            );
            assert_eq!(lazy.object().get(), eager.object().get());
        }
        let bad = r#"{"metadata":{"name":"b","namespace":"ns"},"spec":{"containers":7}}"#;
        assert!(WirePod::from_json(bad).is_err());
        let lazy: WirePod = serde_json::from_str(bad).unwrap();
        assert_eq!(key_of(&lazy), "ns/b");
        assert!(lazy.spec().is_none());
        let e = PodInfo::from_wire(&lazy).unwrap_err();
        assert_eq!((e.pod.as_str(), e.field.as_str()), ("ns/b", "spec"));
        assert!(matches!(e.source, PodFieldError::Decode(_)), "{e}");
        let no_meta: WirePod = serde_json::from_str(r#"{"spec":{}}"#).unwrap();
        assert_eq!(key_of(&no_meta), "");
        assert!(serde_json::from_str::<WirePod>(r#"{"metadata":7}"#).is_err());
        assert!(serde_json::from_str::<WirePod>("[1]").is_err());
    }

    /// A list that starts with nothing present (every first list) does not collect its keys a
    /// second time, yet reports the same deletions at its `InitDone` as collecting them would
    /// for any order of events: an `Apply` or a `Delete` during it starts collecting from the
    /// keys listed so far, so a key applied but never listed is gone, a listed one is not (even
    /// if deleted and applied again meanwhile), and a later relist still reports what it does
    /// not list.
    #[test]
    fn a_first_list_reports_the_deletions_a_collected_list_would() {
        let done = WatchEvent::<core::Node>::InitDone;
        let mut t = Tracked::default();
        for ev in [
            WatchEvent::Init,
            WatchEvent::InitApply(named("a")),
            WatchEvent::InitApply(named("b")),
        ] {
            assert!(t.observe(&ev).is_empty());
        }
        assert!(t.observe(&done).is_empty());
        assert!(t.synced);
        let mut known: Vec<_> = t.known.iter().cloned().collect();
        known.sort();
        assert_eq!(known, ["a", "b"]);

        let mut t = Tracked::default();
        for ev in [
            WatchEvent::Init,
            WatchEvent::InitApply(named("a")),
            WatchEvent::Apply(named("x")),
            WatchEvent::InitApply(named("b")),
        ] {
            assert!(t.observe(&ev).is_empty());
        }
        assert_eq!(t.observe(&done), ["x"]);
        assert!(!t.known.contains("x"));

        let mut t = Tracked::default();
        for ev in [
            WatchEvent::Init,
            WatchEvent::InitApply(named("a")),
            WatchEvent::Delete(named("a")),
            WatchEvent::Apply(named("a")),
        ] {
            assert!(t.observe(&ev).is_empty());
        }
        assert!(t.observe(&done).is_empty());
        assert!(t.known.contains("a"));

        for ev in [WatchEvent::Init, WatchEvent::InitApply(named("b"))] {
            assert!(t.observe(&ev).is_empty());
        }
        assert_eq!(t.observe(&done), ["a"]);
        assert_eq!(t.known.len(), 1);
    }
}
