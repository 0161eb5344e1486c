//! `metav1.Status` bodies, worded as kube-apiserver words them
//! (k8s.io/apimachinery/pkg/api/errors/errors.go).

use serde_json::{Value, json};

use super::resources::Resource;

/// An API error: HTTP code, `Status.reason`, message and details, rendered as a `metav1.Status`.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// HTTP status code (also `Status.code`).
    pub code: u16,
    /// `Status.reason` (`NotFound`, `AlreadyExists`, `Conflict`, `Invalid`, ...).
    pub reason: String,
    /// `Status.message`.
    pub message: String,
    /// `Status.details`, if any.
    pub details: Option<Value>,
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.code, self.reason, self.message)
    }
}

impl std::error::Error for ApiError {}

fn details(resource: Resource, name: &str) -> Value {
    let i = resource.info();
    let mut d = json!({ "name": name, "kind": i.plural });
    if !i.group.is_empty() {
        d["group"] = json!(i.group);
    }
    d
}

impl ApiError {
    fn new(code: u16, reason: &str, message: String, details: Option<Value>) -> ApiError {
        ApiError {
            code,
            reason: reason.to_string(),
            message,
            details,
        }
    }

    /// 404 `pods "x" not found`.
    pub fn not_found(resource: Resource, name: &str) -> ApiError {
        let msg = format!("{} \"{name}\" not found", resource.qualified());
        ApiError::new(404, "NotFound", msg, Some(details(resource, name)))
    }

    /// 409 `pods "x" already exists`.
    pub fn already_exists(resource: Resource, name: &str) -> ApiError {
        let msg = format!("{} \"{name}\" already exists", resource.qualified());
        ApiError::new(409, "AlreadyExists", msg, Some(details(resource, name)))
    }

    /// 409 `Operation cannot be fulfilled on {qualified} "x": {err}`; `qualified` is the resource as
    /// printed (`pods`, `pods/binding`).
    pub fn conflict(resource: Resource, qualified: &str, name: &str, err: &str) -> ApiError {
        let msg = format!("Operation cannot be fulfilled on {qualified} \"{name}\": {err}");
        let mut d = details(resource, name);
        d["kind"] = json!(qualified.split('.').next().unwrap_or(qualified));
        ApiError::new(409, "Conflict", msg, Some(d))
    }

    /// 409 for a stale `metadata.resourceVersion` (optimistic concurrency).
    pub fn modified(resource: Resource, name: &str) -> ApiError {
        ApiError::conflict(
            resource,
            &resource.qualified(),
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 400 BadRequest with the given message.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(400, "BadRequest", message.into(), None)
    }

    /// 405 MethodNotAllowed.
    pub fn method_not_allowed() -> ApiError {
        ApiError::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource".into(),
            None,
        )
    }

    /// 404 for a path that is not served.
    pub fn no_route() -> ApiError {
        ApiError::new(
            404,
            "NotFound",
            "the server could not find the requested resource".into(),
            None,
        )
    }

    /// 415 UnsupportedMediaType for a patch type the double does not implement.
    pub fn unsupported_media_type(content_type: &str) -> ApiError {
        ApiError::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/merge-patch+json, application/strategic-merge-patch+json (got {content_type:?})"
            ),
            None,
        )
    }

    /// 410 Expired: `too old resource version: X (Y)`.
    pub fn expired(requested: u64, oldest: u64) -> ApiError {
        ApiError::new(
            410,
            "Expired",
            format!("too old resource version: {requested} ({oldest})"),
            None,
        )
    }

    /// 504 Timeout for a read at a resourceVersion the server has not reached yet (after the
    /// apiserver's 3 s wait): `Too large resource version: N, current: M`, cause
    /// `ResourceVersionTooLarge`, `retryAfterSeconds: 1`
    /// (`k8s.io/apiserver/pkg/storage/errors.go` `NewTooLargeResourceVersionError`).
    pub fn too_large_resource_version(requested: u64, current: u64) -> ApiError {
        ApiError::new(
            504,
            "Timeout",
            format!("Too large resource version: {requested}, current: {current}"),
            Some(json!({
                "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                "retryAfterSeconds": 1,
            })),
        )
    }

    /// 410 Expired for a `continue` token whose snapshot was compacted away (etcd3 store's
    /// `ErrCompacted` on a continued list).
    pub fn continue_expired() -> ApiError {
        ApiError::new(
            410,
            "Expired",
            "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.".into(),
            None,
        )
    }

    /// 422 Invalid on the request options (`ListOptions`, `CreateOptions`, ...), e.g.
    /// `CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: "x": supported
    /// values: "All"`.
    pub fn invalid_options(kind: &str, field: &str, message: &str) -> ApiError {
        ApiError::new(
            422,
            "Invalid",
            format!("{kind}.meta.k8s.io \"\" is invalid: {field}: {message}"),
            Some(json!({"group": "meta.k8s.io", "kind": kind, "name": "",
                "causes": [{"reason": "FieldValueInvalid", "message": message, "field": field}]})),
        )
    }

    /// 504 Timeout answered in place of the real response of an applied write whose response
    /// was lost (what kube-apiserver answers when its request deadline passes while storage
    /// commits).
    pub fn response_lost() -> ApiError {
        ApiError::new(
            504,
            "Timeout",
            "Timeout: request did not complete within requested timeout - context deadline exceeded".into(),
            Some(json!({})),
        )
    }

    /// 422 Invalid: `Kind.group "name" is invalid: field: msg` with one cause per field error;
    /// `errors` are `(field, cause reason, cause message)`.
    pub fn invalid(resource: Resource, name: &str, errors: &[(String, &str, String)]) -> ApiError {
        let joined: Vec<String> = errors.iter().map(|(f, _, m)| format!("{f}: {m}")).collect();
        let joined = if joined.len() == 1 {
            joined.join("")
        } else {
            format!("[{}]", joined.join(", "))
        };
        let msg = format!(
            "{} \"{name}\" is invalid: {joined}",
            resource.qualified_kind()
        );
        let causes: Vec<Value> = errors
            .iter()
            .map(|(f, r, m)| json!({"reason": r, "message": m, "field": f}))
            .collect();
        let i = resource.info();
        let mut d = json!({"name": name, "kind": i.kind, "causes": causes});
        if !i.group.is_empty() {
            d["group"] = json!(i.group);
        }
        ApiError::new(422, "Invalid", msg, Some(d))
    }

    /// An injected fault with the given HTTP code; the reason is the apiserver's for that code.
    pub fn injected(code: u16, what: &str) -> ApiError {
        let reason = match code {
            400 => "BadRequest",
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "NotFound",
            405 => "MethodNotAllowed",
            409 => "Conflict",
            410 => "Expired",
            422 => "Invalid",
            429 => "TooManyRequests",
            500 => "InternalError",
            503 => "ServiceUnavailable",
            504 => "Timeout",
            _ => "Unknown",
        };
        ApiError::new(code, reason, format!("injected fault: {what}"), None)
    }

    /// The `metav1.Status` JSON body.
    pub fn to_status(&self) -> Value {
        let mut s = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            s["details"] = d.clone();
        }
        s
    }
}

/// A `metav1.Status` with `status: Success` and the given code (what `pods/binding` answers).
pub fn success(code: u16) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code})
}
