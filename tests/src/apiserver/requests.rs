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
    /// Object name, if the path names one; for a list or watch, the name a `metadata.name=X`
    /// field selector requires (as the authorizer sees it, so RBAC `resourceNames` can allow it).
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

/// The name a list or watch selects with an exact `metadata.name` field selector
/// (`RequestInfoFactory.NewRequestInfo`: `FieldSelector.RequiresExactMatch("metadata.name")`,
/// `metadata.name=X` or `metadata.name==X`, possibly among other requirements).
fn field_selected_name(query: &str) -> Option<String> {
    let selector = query.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == "fieldSelector").then_some(v)
    })?;
    let selector = percent_decode(selector);
    selector.split(',').find_map(|req| {
        let (field, value) = req
            .split_once("==")
            .or_else(|| req.split_once('='))
            .filter(|(f, _)| !f.ends_with('!'))?;
        (field.trim() == "metadata.name" && !value.is_empty()).then(|| value.trim().to_string())
    })
}

/// Decodes `%XX` escapes and `+` (the query encoding clients use for selectors).
fn percent_decode(s: &str) -> String {
    let hex = |b: u8| char::from(b).to_digit(16);
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%')
            .then(|| Some((hex(*bytes.get(i + 1)?)?, hex(*bytes.get(i + 2)?)?)))
            .flatten();
        match (escaped, bytes[i]) {
            (Some((hi, lo)), _) => {
                out.push(u8::try_from(hi * 16 + lo).unwrap_or(b'?'));
                i += 3;
                continue;
            }
            (None, b'+') => out.push(b' '),
            (None, b) => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
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
    let verb = verb(method, target, watch);
    let name = target.and_then(|t| t.name.clone()).or_else(|| {
        (verb == "list" || verb == "watch")
            .then(|| query.and_then(field_selected_name))
            .flatten()
    });
    RequestRecord {
        seq: 0,
        client: client.to_string(),
        verb,
        api_group: target.map(|t| t.resource.info().group.to_string()),
        resource: target.map(|t| t.resource.info().plural.to_string()),
        subresource: target.and_then(|t| t.subresource.clone()),
        namespace: target.and_then(|t| t.namespace.clone()),
        name,
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

    #[test]
    fn a_name_field_selector_names_the_object_of_a_list_or_watch() {
        let name = |m: Method, q: &str| {
            let p = "/apis/coordination.k8s.io/v1/namespaces/ns/leases";
            let t = parse_path(p);
            record("c", &m, p, Some(q), t.as_ref()).name
        };
        assert_eq!(
            name(
                Method::GET,
                "fieldSelector=metadata.name%3Dmini-scheduler&watch=true"
            ),
            Some("mini-scheduler".into())
        );
        assert_eq!(
            name(
                Method::GET,
                "fieldSelector=metadata.name%3D%3Dl%2Cmetadata.namespace%3Dns"
            ),
            Some("l".into())
        );
        assert_eq!(
            name(Method::GET, "fieldSelector=metadata.name%21%3Dl"),
            None
        );
        assert_eq!(name(Method::GET, "labelSelector=a%3Db"), None);
        assert_eq!(
            name(Method::GET, "fieldSelector=metadata.name=l"),
            Some("l".into())
        );
    }
}
