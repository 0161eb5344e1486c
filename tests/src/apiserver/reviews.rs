//! TokenReview (`authentication.k8s.io/v1`) and SubjectAccessReview (`authorization.k8s.io/v1`),
//! as kube-apiserver answers them with a static token authenticator and RBAC: what a component
//! doing delegated authentication and authorization (kube-scheduler's secure port, ours) calls.
//!
//! - `POST /apis/authentication.k8s.io/v1/tokenreviews`: `201` with the review and its
//!   `status`: `{authenticated: true, user: {username, uid, groups, extra}, audiences}` for a
//!   token added with [`super::ApiServer::add_token`] (groups with `system:authenticated`
//!   added, as the apiserver's authenticator chain does), `{authenticated: false}` otherwise;
//!   `400` `token is required for TokenReview in authentication` without a token
//!   (`pkg/registry/authentication/tokenreview/storage.go`).
//! - `POST /apis/authorization.k8s.io/v1/subjectaccessreviews`: `422` unless exactly one of
//!   `resourceAttributes` / `nonResourceAttributes` is set and a user or a group is named
//!   (`ValidateSubjectAccessReviewSpec`); else `201` with `status.allowed` as RBAC decides from
//!   the grants of [`super::ApiServer::grant_non_resource`] (a ClusterRole with
//!   `nonResourceURLs` bound to a user or group: a URL matches exactly or by a prefix ending in
//!   `*`, a verb by name or `*`) and the `system:masters` group; the reason of an allowed
//!   review is RBAC's `RBAC: allowed by ClusterRoleBinding "<name>" of ClusterRole "<name>" to
//!   User "<user>"`, a refused one has none. Resource attributes are never granted (no resource
//!   rules are modelled), so such reviews answer `allowed: false`.
//!
//! Both are recorded as `create` of their resource ([`super::RequestRecord`]); fault injection
//! does not apply to them.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::status::ApiError;

/// Who a grant applies to, as a ClusterRoleBinding subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    /// A user name (`system:serviceaccount:monitoring:prometheus`).
    User(String),
    /// A group name (`system:authenticated`).
    Group(String),
}

/// One ClusterRole rule with `nonResourceURLs`, bound through a ClusterRoleBinding of the
/// same name.
#[derive(Debug, Clone)]
pub struct NonResourceGrant {
    /// Name of the ClusterRole and of its binding (in the allowed review's reason).
    pub name: String,
    /// Bound to.
    pub subject: Subject,
    /// `nonResourceURLs`.
    pub urls: Vec<String>,
    /// `verbs`.
    pub verbs: Vec<String>,
}

/// A user known to the token authenticator.
#[derive(Debug, Clone)]
pub(super) struct TokenUser {
    pub(super) username: String,
    pub(super) uid: String,
    pub(super) groups: Vec<String>,
}

/// The authenticator's tokens and the authorizer's grants.
#[derive(Debug, Default)]
pub(super) struct Reviews {
    pub(super) tokens: HashMap<String, TokenUser>,
    pub(super) grants: Vec<NonResourceGrant>,
}

/// RBAC's `NonResourceURLMatches`.
fn url_matches(rule: &str, url: &str) -> bool {
    rule == "*"
        || rule == url
        || rule
            .strip_suffix('*')
            .is_some_and(|prefix| url.starts_with(prefix))
}

fn review_response(kind: &str, group: &str, mut body: Value, status: Value) -> Value {
    body["apiVersion"] = json!(format!("{group}/v1"));
    body["kind"] = json!(kind);
    if body.get("metadata").is_none_or(Value::is_null) {
        body["metadata"] = json!({"creationTimestamp": null});
    }
    body["status"] = status;
    body
}

impl Reviews {
    /// The answer to a TokenReview create: `(code, body)`.
    pub(super) fn token_review(&self, body: &[u8]) -> Result<(u16, Value), ApiError> {
        let review: Value = serde_json::from_slice(body).map_err(|e| {
            ApiError::bad_request(format!("the body of the request could not be decoded: {e}"))
        })?;
        let token = review
            .pointer("/spec/token")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if token.is_empty() {
            return Err(ApiError::bad_request(
                "token is required for TokenReview in authentication",
            ));
        }
        let audiences = review
            .pointer("/spec/audiences")
            .cloned()
            .unwrap_or(json!([]));
        let status = match self.tokens.get(token) {
            Some(u) => {
                let mut groups = u.groups.clone();
                if !groups.iter().any(|g| g == "system:authenticated") {
                    groups.push("system:authenticated".into());
                }
                json!({
                    "authenticated": true,
                    "user": {"username": u.username, "uid": u.uid, "groups": groups},
                    "audiences": audiences,
                })
            }
            None => json!({"user": {}}),
        };
        Ok((
            201,
            review_response("TokenReview", "authentication.k8s.io", review, status),
        ))
    }

    /// The answer to a SubjectAccessReview create: `(code, body)`.
    pub(super) fn subject_access_review(&self, body: &[u8]) -> Result<(u16, Value), ApiError> {
        let review: Value = serde_json::from_slice(body).map_err(|e| {
            ApiError::bad_request(format!("the body of the request could not be decoded: {e}"))
        })?;
        let spec = review.get("spec").cloned().unwrap_or(json!({}));
        let user = spec.get("user").and_then(Value::as_str).unwrap_or_default();
        let groups: Vec<&str> = spec
            .get("groups")
            .and_then(Value::as_array)
            .map(|g| g.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let resource = spec.get("resourceAttributes").filter(|v| !v.is_null());
        let non_resource = spec.get("nonResourceAttributes").filter(|v| !v.is_null());
        let mut errors = Vec::new();
        if resource.is_some() == non_resource.is_some() {
            errors.push((
                "spec.resourceAttributes".to_string(),
                "FieldValueInvalid",
                format!(
                    "Invalid value: {}: exactly one of nonResourceAttributes or resourceAttributes must be specified",
                    resource.map_or("null".into(), Value::to_string)
                ),
            ));
        }
        if user.is_empty() && groups.is_empty() {
            errors.push((
                "spec.user".to_string(),
                "FieldValueInvalid",
                "Invalid value: \"\": at least one of user or group must be specified".to_string(),
            ));
        }
        if !errors.is_empty() {
            let joined: Vec<String> = errors.iter().map(|(f, _, m)| format!("{f}: {m}")).collect();
            let joined = if joined.len() == 1 {
                joined.join("")
            } else {
                format!("[{}]", joined.join(", "))
            };
            let causes: Vec<Value> = errors
                .iter()
                .map(|(f, r, m)| json!({"reason": r, "message": m, "field": f}))
                .collect();
            return Err(ApiError {
                code: 422,
                reason: "Invalid".into(),
                message: format!(
                    "SubjectAccessReview.authorization.k8s.io \"\" is invalid: {joined}"
                ),
                details: Some(json!({"group": "authorization.k8s.io",
                    "kind": "SubjectAccessReview", "name": "", "causes": causes})),
            });
        }
        let mut status = json!({"allowed": false});
        if groups.contains(&"system:masters") {
            status = json!({"allowed": true});
        } else if let Some(nr) = non_resource {
            let path = nr.get("path").and_then(Value::as_str).unwrap_or_default();
            let verb = nr.get("verb").and_then(Value::as_str).unwrap_or_default();
            let applies = |s: &Subject| match s {
                Subject::User(u) => u == user,
                Subject::Group(g) => groups.contains(&g.as_str()),
            };
            if let Some(g) = self.grants.iter().find(|g| {
                applies(&g.subject)
                    && g.urls.iter().any(|u| url_matches(u, path))
                    && g.verbs.iter().any(|v| v == "*" || v == verb)
            }) {
                let to = match &g.subject {
                    Subject::User(u) => format!("User {u:?}"),
                    Subject::Group(gr) => format!("Group {gr:?}"),
                };
                status = json!({
                    "allowed": true,
                    "reason": format!(
                        "RBAC: allowed by ClusterRoleBinding {:?} of ClusterRole {:?} to {to}",
                        g.name, g.name
                    ),
                });
            }
        }
        Ok((
            201,
            review_response(
                "SubjectAccessReview",
                "authorization.k8s.io",
                review,
                status,
            ),
        ))
    }
}

/// `(api group, resource)` of a review path, if `path` is one.
pub(super) fn review_resource(path: &str) -> Option<(&'static str, &'static str)> {
    match path.trim_end_matches('/') {
        "/apis/authentication.k8s.io/v1/tokenreviews" => {
            Some(("authentication.k8s.io", "tokenreviews"))
        }
        "/apis/authorization.k8s.io/v1/subjectaccessreviews" => {
            Some(("authorization.k8s.io", "subjectaccessreviews"))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn reviews() -> Reviews {
        let mut r = Reviews::default();
        r.tokens.insert(
            "t1".into(),
            TokenUser {
                username: "prom".into(),
                uid: "u1".into(),
                groups: vec!["monitoring".into()],
            },
        );
        r.grants.push(NonResourceGrant {
            name: "metrics-reader".into(),
            subject: Subject::Group("monitoring".into()),
            urls: vec!["/metrics".into(), "/debug/*".into()],
            verbs: vec!["get".into()],
        });
        r
    }

    #[test]
    fn token_reviews_authenticate_known_tokens_only() {
        let r = reviews();
        let (code, v) = r
            .token_review(br#"{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"t1"}}"#)
            .unwrap();
        assert_eq!(code, 201);
        assert_eq!(v["status"]["authenticated"], true);
        assert_eq!(v["status"]["user"]["username"], "prom");
        assert_eq!(
            v["status"]["user"]["groups"],
            json!(["monitoring", "system:authenticated"])
        );
        let (_, v) = r.token_review(br#"{"spec":{"token":"nope"}}"#).unwrap();
        assert_eq!(v["status"].get("authenticated"), None);
        let e = r.token_review(br#"{"spec":{}}"#).unwrap_err();
        assert_eq!(e.code, 400);
    }

    #[test]
    fn subject_access_reviews_follow_rbac_non_resource_rules() {
        let r = reviews();
        let sar = |user: &str, groups: &[&str], path: &str, verb: &str| {
            let body = json!({"spec": {"user": user, "groups": groups,
                "nonResourceAttributes": {"path": path, "verb": verb}}});
            r.subject_access_review(body.to_string().as_bytes())
                .unwrap()
                .1["status"]
                .clone()
        };
        let ok = sar("prom", &["monitoring"], "/metrics", "get");
        assert_eq!(ok["allowed"], true);
        assert_eq!(
            ok["reason"],
            "RBAC: allowed by ClusterRoleBinding \"metrics-reader\" of ClusterRole \"metrics-reader\" to Group \"monitoring\""
        );
        assert_eq!(
            sar("prom", &["monitoring"], "/debug/pprof", "get")["allowed"],
            true
        );
        assert_eq!(
            sar("prom", &["monitoring"], "/metrics", "put")["allowed"],
            false
        );
        assert_eq!(
            sar("prom", &["monitoring"], "/metricsx", "get")["allowed"],
            false
        );
        assert_eq!(sar("eve", &["other"], "/metrics", "get")["allowed"], false);
        assert_eq!(
            sar("root", &["system:masters"], "/anything", "put")["allowed"],
            true
        );
        // Validation: attributes and a subject are required.
        let e = r
            .subject_access_review(br#"{"spec":{"user":"x"}}"#)
            .unwrap_err();
        assert_eq!(e.code, 422);
        let e = r
            .subject_access_review(
                br#"{"spec":{"nonResourceAttributes":{"path":"/metrics","verb":"get"}}}"#,
            )
            .unwrap_err();
        assert!(e.message.contains("at least one of user or group"), "{e}");
    }
}
