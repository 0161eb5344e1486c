//! The resources the test double serves, and parsing of their REST paths.

/// One of the resource types the test double stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Resource {
    /// core/v1 `pods`.
    Pods,
    /// core/v1 `nodes` (cluster-scoped).
    Nodes,
    /// core/v1 `services`.
    Services,
    /// core/v1 `replicationcontrollers`.
    ReplicationControllers,
    /// core/v1 `events`.
    CoreEvents,
    /// apps/v1 `replicasets`.
    ReplicaSets,
    /// apps/v1 `statefulsets`.
    StatefulSets,
    /// coordination.k8s.io/v1 `leases`.
    Leases,
    /// events.k8s.io/v1 `events`.
    Events,
    /// core/v1 `namespaces` (cluster-scoped).
    Namespaces,
    /// core/v1 `persistentvolumes` (cluster-scoped).
    PersistentVolumes,
    /// core/v1 `persistentvolumeclaims`.
    PersistentVolumeClaims,
    /// storage.k8s.io/v1 `storageclasses` (cluster-scoped).
    StorageClasses,
    /// storage.k8s.io/v1 `csinodes` (cluster-scoped).
    CsiNodes,
    /// policy/v1 `poddisruptionbudgets` (with `status`, `metadata.generation`).
    PodDisruptionBudgets,
}

/// Static description of a [`Resource`].
#[derive(Debug)]
pub struct ResourceInfo {
    /// API group (`""` for core).
    pub group: &'static str,
    /// API version within the group.
    pub version: &'static str,
    /// Lower-case plural used in paths and in error messages.
    pub plural: &'static str,
    /// Kind of a single object.
    pub kind: &'static str,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Whether the resource has a `status` subresource (main-resource writes keep the old status).
    pub has_status: bool,
    /// Whether `metadata.generation` is maintained (1 on create, +1 on every spec change).
    pub has_generation: bool,
}

const fn info(
    group: &'static str,
    plural: &'static str,
    kind: &'static str,
    namespaced: bool,
    has_status: bool,
    has_generation: bool,
) -> ResourceInfo {
    ResourceInfo {
        group,
        version: "v1",
        plural,
        kind,
        namespaced,
        has_status,
        has_generation,
    }
}

static PODS: ResourceInfo = info("", "pods", "Pod", true, true, true);
static NODES: ResourceInfo = info("", "nodes", "Node", false, true, false);
static SERVICES: ResourceInfo = info("", "services", "Service", true, true, false);
static RCS: ResourceInfo = info(
    "",
    "replicationcontrollers",
    "ReplicationController",
    true,
    true,
    true,
);
static CORE_EVENTS: ResourceInfo = info("", "events", "Event", true, false, false);
static REPLICASETS: ResourceInfo = info("apps", "replicasets", "ReplicaSet", true, true, true);
static STATEFULSETS: ResourceInfo = info("apps", "statefulsets", "StatefulSet", true, true, true);
static LEASES: ResourceInfo = info("coordination.k8s.io", "leases", "Lease", true, false, false);
static EVENTS: ResourceInfo = info("events.k8s.io", "events", "Event", true, false, false);
static NAMESPACES: ResourceInfo = info("", "namespaces", "Namespace", false, true, false);
static PVS: ResourceInfo = info(
    "",
    "persistentvolumes",
    "PersistentVolume",
    false,
    true,
    false,
);
static PVCS: ResourceInfo = info(
    "",
    "persistentvolumeclaims",
    "PersistentVolumeClaim",
    true,
    true,
    false,
);
static STORAGECLASSES: ResourceInfo = info(
    "storage.k8s.io",
    "storageclasses",
    "StorageClass",
    false,
    false,
    false,
);
static CSINODES: ResourceInfo = info("storage.k8s.io", "csinodes", "CSINode", false, false, false);
static PDBS: ResourceInfo = info(
    "policy",
    "poddisruptionbudgets",
    "PodDisruptionBudget",
    true,
    true,
    true,
);

impl Resource {
    /// Every served resource.
    pub const ALL: [Resource; 15] = [
        Resource::Pods,
        Resource::Nodes,
        Resource::Services,
        Resource::ReplicationControllers,
        Resource::CoreEvents,
        Resource::ReplicaSets,
        Resource::StatefulSets,
        Resource::Leases,
        Resource::Events,
        Resource::Namespaces,
        Resource::PersistentVolumes,
        Resource::PersistentVolumeClaims,
        Resource::StorageClasses,
        Resource::CsiNodes,
        Resource::PodDisruptionBudgets,
    ];

    /// The static description of this resource.
    pub fn info(self) -> &'static ResourceInfo {
        match self {
            Resource::Pods => &PODS,
            Resource::Nodes => &NODES,
            Resource::Services => &SERVICES,
            Resource::ReplicationControllers => &RCS,
            Resource::CoreEvents => &CORE_EVENTS,
            Resource::ReplicaSets => &REPLICASETS,
            Resource::StatefulSets => &STATEFULSETS,
            Resource::Leases => &LEASES,
            Resource::Events => &EVENTS,
            Resource::Namespaces => &NAMESPACES,
            Resource::PersistentVolumes => &PVS,
            Resource::PersistentVolumeClaims => &PVCS,
            Resource::StorageClasses => &STORAGECLASSES,
            Resource::CsiNodes => &CSINODES,
            Resource::PodDisruptionBudgets => &PDBS,
        }
    }

    /// `apiVersion` of objects: `v1` or `group/v1`.
    pub fn api_version(self) -> String {
        let i = self.info();
        if i.group.is_empty() {
            i.version.to_string()
        } else {
            format!("{}/{}", i.group, i.version)
        }
    }

    /// The group-qualified resource as the apiserver prints it in messages (`pods`,
    /// `replicasets.apps`, `leases.coordination.k8s.io`).
    pub fn qualified(self) -> String {
        let i = self.info();
        if i.group.is_empty() {
            i.plural.to_string()
        } else {
            format!("{}.{}", i.plural, i.group)
        }
    }

    /// The group-qualified kind as the apiserver prints it in `Invalid` messages (`Pod`,
    /// `Lease.coordination.k8s.io`).
    pub fn qualified_kind(self) -> String {
        let i = self.info();
        if i.group.is_empty() {
            i.kind.to_string()
        } else {
            format!("{}.{}", i.kind, i.group)
        }
    }

    /// Looks a resource up by group, version and plural.
    pub fn from_parts(group: &str, version: &str, plural: &str) -> Option<Resource> {
        Resource::ALL.into_iter().find(|r| {
            let i = r.info();
            i.group == group && i.version == version && i.plural == plural
        })
    }

    /// The resource of a k8s-openapi type, if served.
    pub fn of<K: k8s_openapi::Resource>() -> Option<Resource> {
        Resource::from_parts(K::GROUP, K::VERSION, K::URL_PATH_SEGMENT)
    }
}

/// A parsed request path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The resource addressed.
    pub resource: Resource,
    /// Namespace from the path (`None` for cluster-scoped resources and all-namespace lists).
    pub namespace: Option<String>,
    /// Object name, if the path names one.
    pub name: Option<String>,
    /// Subresource (`status`, `binding`), if any.
    pub subresource: Option<String>,
}

/// Parses `/api/v1/...` and `/apis/{group}/{version}/...` paths; `None` for anything not served.
pub fn parse_path(path: &str) -> Option<Target> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest) = match segs.as_slice() {
        ["api", version, rest @ ..] => ("", *version, rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return None,
    };
    let (namespace, rest) = match rest {
        ["namespaces", ns, rest @ ..] if !rest.is_empty() => (Some((*ns).to_string()), rest),
        _ => (None, rest),
    };
    let (plural, name, subresource) = match rest {
        [plural] => (*plural, None, None),
        [plural, name] => (*plural, Some((*name).to_string()), None),
        [plural, name, sub] => (*plural, Some((*name).to_string()), Some((*sub).to_string())),
        _ => return None,
    };
    let resource = Resource::from_parts(group, version, plural)?;
    let namespaced = resource.info().namespaced;
    if !namespaced && namespace.is_some() {
        return None;
    }
    if namespaced && namespace.is_none() && name.is_some() {
        return None;
    }
    Some(Target {
        resource,
        namespace,
        name,
        subresource,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_paths() {
        let t = parse_path("/api/v1/namespaces/default/pods/p1/binding").expect("parses");
        assert_eq!(t.resource, Resource::Pods);
        assert_eq!(t.namespace.as_deref(), Some("default"));
        assert_eq!(t.name.as_deref(), Some("p1"));
        assert_eq!(t.subresource.as_deref(), Some("binding"));
        assert_eq!(
            parse_path("/api/v1/pods").map(|t| t.resource),
            Some(Resource::Pods)
        );
        assert_eq!(
            parse_path("/api/v1/nodes/n1").map(|t| t.resource),
            Some(Resource::Nodes)
        );
        assert!(parse_path("/api/v1/namespaces/x/nodes").is_none());
        assert!(parse_path("/api/v1/pods/p1").is_none());
        let l = parse_path("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/l")
            .expect("lease");
        assert_eq!(l.resource, Resource::Leases);
        assert_eq!(Resource::Leases.qualified(), "leases.coordination.k8s.io");
        assert_eq!(
            Resource::of::<k8s_openapi::api::events::v1::Event>(),
            Some(Resource::Events)
        );
        assert_eq!(
            Resource::of::<k8s_openapi::api::core::v1::Event>(),
            Some(Resource::CoreEvents)
        );
        // Namespaces are cluster-scoped: the list and one object by name.
        assert_eq!(
            parse_path("/api/v1/namespaces").map(|t| t.resource),
            Some(Resource::Namespaces)
        );
        let ns = parse_path("/api/v1/namespaces/team-a").expect("namespace");
        assert_eq!(ns.resource, Resource::Namespaces);
        assert_eq!((ns.namespace, ns.name.as_deref()), (None, Some("team-a")));
    }
}
