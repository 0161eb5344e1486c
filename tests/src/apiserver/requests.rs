//! Every request the test double received, as kube-apiserver's authorizer sees it
//! (`k8s.io/apiserver/pkg/endpoints/request.RequestInfoFactory`): verb, API group, resource,
//! subresource, namespace. Used to check that RBAC grants cover what the scheduler calls.

use axum::http::Method;

use super::resources::Target;

/// One request, recorded before faults, routing or the handler ran (as authorization runs
/// before any of them), so failed and fault-injected requests are included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestRecord {
    /// Position in the record, from 0.
    pub seq: u64,
    /// Client identity (see [`super::ApiServer::client`]).
    pub client: String,
    /// Authorization verb: `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
    /// `deletecollection` for resource requests; the lower-case HTTP method otherwise.
    pub verb: String,
    /// API group (`""` for core, `apps`, `coordination.k8s.io`, ...); `None` for requests that
    /// address no served resource (non-resource URLs such as `/version`, unknown paths).
    pub api_group: Option<String>,
    /// Resource plural (`pods`), `None` as for `api_group`.
    pub resource: Option<String>,
    /// Subresource (`binding`, `status`), if any.
    pub subresource: Option<String>,
    /// Namespace, for namespaced requests (`None` for cluster-scoped resources and
    /// all-namespace lists and watches).
    pub namespace: Option<String>,
    /// Object name, if the path names one.
    pub name: Option<String>,
    /// Request path (without query).
    pub path: String,
}

impl RequestRecord {
    /// `resource` or `resource/subresource`, as RBAC rules spell it; `None` for non-resource
    /// requests.
    pub fn rbac_resource(&self) -> Option<String> {
        let r = self.resource.as_ref()?;
        Some(match &self.subresource {
            Some(s) => format!("{r}/{s}"),
            None => r.clone(),
        })
    }
}

/// The authorization verb of a request (`RequestInfoFactory.NewRequestInfo`).
pub(super) fn verb(method: &Method, target: Option<&Target>, watch: bool) -> String {
    let Some(t) = target else {
        return method.as_str().to_ascii_lowercase();
    };
    let named = t.name.is_some();
    match *method {
        Method::GET | Method::HEAD if watch => "watch",
        Method::GET | Method::HEAD if named => "get",
        Method::GET | Method::HEAD => "list",
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE if named => "delete",
        Method::DELETE => "deletecollection",
        _ => return method.as_str().to_ascii_lowercase(),
    }
    .to_string()
}

/// Builds the record of one request (`seq` is set when stored).
pub(super) fn record(
    client: &str,
    method: &Method,
    path: &str,
    query: Option<&str>,
    target: Option<&Target>,
) -> RequestRecord {
    let watch = query.is_some_and(|q| q.split('&').any(|kv| kv == "watch=true" || kv == "watch=1"));
    RequestRecord {
        seq: 0,
        client: client.to_string(),
        verb: verb(method, target, watch),
        api_group: target.map(|t| t.resource.info().group.to_string()),
        resource: target.map(|t| t.resource.info().plural.to_string()),
        subresource: target.and_then(|t| t.subresource.clone()),
        namespace: target.and_then(|t| t.namespace.clone()),
        name: target.and_then(|t| t.name.clone()),
        path: path.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::resources::parse_path;
    use super::*;

    #[test]
    fn verbs_as_the_authorizer_names_them() {
        let r = |m: Method, p: &str, q: Option<&str>| {
            let t = parse_path(p);
            let rec = record("c", &m, p, q, t.as_ref());
            (rec.verb.clone(), rec.rbac_resource(), rec.namespace)
        };
        assert_eq!(
            r(
                Method::GET,
                "/api/v1/pods",
                Some("fieldSelector=x&watch=true")
            ),
            ("watch".into(), Some("pods".into()), None)
        );
        assert_eq!(
            r(Method::GET, "/api/v1/pods", Some("limit=500")),
            ("list".into(), Some("pods".into()), None)
        );
        assert_eq!(
            r(
                Method::GET,
                "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l",
                None
            ),
            ("get".into(), Some("leases".into()), Some("ns".into()))
        );
        assert_eq!(
            r(Method::POST, "/api/v1/namespaces/d/pods/p/binding", None),
            (
                "create".into(),
                Some("pods/binding".into()),
                Some("d".into())
            )
        );
        assert_eq!(
            r(Method::PATCH, "/api/v1/namespaces/d/pods/p/status", None).0,
            "patch"
        );
        assert_eq!(
            r(
                Method::PUT,
                "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l",
                None
            )
            .0,
            "update"
        );
        assert_eq!(
            r(Method::DELETE, "/api/v1/namespaces/d/pods", None).0,
            "deletecollection"
        );
        assert_eq!(r(Method::GET, "/version", None), ("get".into(), None, None));
    }
}
