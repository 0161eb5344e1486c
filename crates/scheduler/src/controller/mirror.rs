//! [`Mirrored`]: the watched kinds the controller copies into its [`Cache`] as they are — every
//! watch but nodes and pods — so that one handler (`Controller::mirror`) serves them all: relist
//! deletions, add/update, delete, and the queue move an add/update triggers.

use k8s_openapi::api::apps::v1 as apps;
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::storage::v1 as storage;
use kube::{Resource, ResourceExt};

use super::watch::Kind;
use crate::cache::Cache;
use crate::queue::ClusterEvent;

/// A kind mirrored into the cache.
pub(super) trait Mirrored: Resource + Sized {
    /// The watch's kind in the relist bookkeeping.
    const KIND: Kind;
    /// The namespace of an object that names none (cluster-scoped kinds ignore namespaces).
    const DEFAULT_NAMESPACE: &'static str = "";

    /// Store `o` (add or update). Returns the event that moves unschedulable pods, if the kind
    /// has one (v1.22 moves them on PV/PVC/StorageClass/CSINode add and update, the events the
    /// volume plugins register).
    fn upsert(cache: &mut Cache, o: Self) -> Option<ClusterEvent>;

    /// Drop the object `namespace/name` (`namespace` is empty for cluster-scoped kinds).
    fn remove(cache: &mut Cache, namespace: &str, name: &str);

    /// The object's namespace, or [`Mirrored::DEFAULT_NAMESPACE`].
    fn namespace_or_default(&self) -> String {
        self.namespace()
            .unwrap_or_else(|| Self::DEFAULT_NAMESPACE.into())
    }
}

/// `add` for a new object, `update` for one the cache already held.
fn added_or_updated(existed: bool, add: ClusterEvent, update: ClusterEvent) -> ClusterEvent {
    if existed { update } else { add }
}

impl Mirrored for core::Service {
    const KIND: Kind = Kind::Services;
    fn upsert(cache: &mut Cache, o: Self) -> Option<ClusterEvent> {
        cache.upsert_service(&o);
        None
    }
    fn remove(cache: &mut Cache, namespace: &str, name: &str) {
        cache.remove_service(namespace, name);
    }
}

impl Mirrored for core::ReplicationController {
    const KIND: Kind = Kind::ReplicationControllers;
    fn upsert(cache: &mut Cache, o: Self) -> Option<ClusterEvent> {
        cache.upsert_replication_controller(&o);
        None
    }
    fn remove(cache: &mut Cache, namespace: &str, name: &str) {
        cache.remove_replication_controller(namespace, name);
    }
}

impl Mirrored for apps::ReplicaSet {
    const KIND: Kind = Kind::ReplicaSets;
    fn upsert(cache: &mut Cache, o: Self) -> Option<ClusterEvent> {
        cache.upsert_replica_set(&o);
        None
    }
    fn remove(cache: &mut Cache, namespace: &str, name: &str) {
        cache.remove_replica_set(namespace, name);
    }
}

impl Mirrored for apps::StatefulSet {
    const KIND: Kind = Kind::StatefulSets;
    fn upsert(cache: &mut Cache, o: Self) -> Option<ClusterEvent> {
        cache.upsert_stateful_set(&o);
        None
    }
    fn remove(cache: &mut Cache, namespace: &str, name: &str) {
        cache.remove_stateful_set(namespace, name);
    }
}

impl Mirrored for core::Namespace {
    const KIND: Kind = Kind::Namespaces;
    fn upsert(cache: &mut Cache, o: Self) -> Option<ClusterEvent> {
        cache.upsert_namespace(&o);
        None
    }
    fn remove(cache: &mut Cache, _: &str, name: &str) {
        cache.remove_namespace(name);
    }
}

impl Mirrored for core::PersistentVolume {
    const KIND: Kind = Kind::PersistentVolumes;
    fn upsert(cache: &mut Cache, o: Self) -> Option<ClusterEvent> {
        let existed = cache.snapshot().volumes().pv(&o.name_any()).is_some();
        cache.volumes_mut().upsert_pv(o);
        Some(added_or_updated(
            existed,
            ClusterEvent::PvAdd,
            ClusterEvent::PvUpdate,
        ))
    }
    fn remove(cache: &mut Cache, _: &str, name: &str) {
        cache.volumes_mut().remove_pv(name);
    }
}

impl Mirrored for core::PersistentVolumeClaim {
    const KIND: Kind = Kind::PersistentVolumeClaims;
    const DEFAULT_NAMESPACE: &'static str = "default";
    fn upsert(cache: &mut Cache, o: Self) -> Option<ClusterEvent> {
        let ns = o.namespace_or_default();
        let existed = cache.snapshot().volumes().pvc(&ns, &o.name_any()).is_some();
        cache.volumes_mut().upsert_pvc(o);
        Some(added_or_updated(
            existed,
            ClusterEvent::PvcAdd,
            ClusterEvent::PvcUpdate,
        ))
    }
    fn remove(cache: &mut Cache, namespace: &str, name: &str) {
        cache.volumes_mut().remove_pvc(namespace, name);
    }
}

impl Mirrored for storage::StorageClass {
    const KIND: Kind = Kind::StorageClasses;
    fn upsert(cache: &mut Cache, o: Self) -> Option<ClusterEvent> {
        let existed = cache
            .snapshot()
            .volumes()
            .storage_class(&o.name_any())
            .is_some();
        cache.volumes_mut().upsert_storage_class(o);
        Some(added_or_updated(
            existed,
            ClusterEvent::StorageClassAdd,
            ClusterEvent::StorageClassUpdate,
        ))
    }
    fn remove(cache: &mut Cache, _: &str, name: &str) {
        cache.volumes_mut().remove_storage_class(name);
    }
}

impl Mirrored for storage::CSINode {
    const KIND: Kind = Kind::CsiNodes;
    fn upsert(cache: &mut Cache, o: Self) -> Option<ClusterEvent> {
        let existed = cache.snapshot().volumes().csi_node(&o.name_any()).is_some();
        cache.volumes_mut().upsert_csi_node(o);
        Some(added_or_updated(
            existed,
            ClusterEvent::CsiNodeAdd,
            ClusterEvent::CsiNodeUpdate,
        ))
    }
    fn remove(cache: &mut Cache, _: &str, name: &str) {
        cache.volumes_mut().remove_csi_node(name);
    }
}
