//! Wire types of the legacy scheduler Policy (`kind: Policy`, `apiVersion: v1`).
//!
//! Mirrors `k8s.io/kube-scheduler/config/v1` `types.go` at tag `v0.22.17` (kube-scheduler v1.22.17,
//! the last release that reads a Policy file). JSON/YAML keys are camelCase and case-sensitive,
//! unknown keys are rejected, like the strict codec kube-scheduler v1.18+ uses
//! (`pkg/scheduler/apis/config/scheme/scheme.go`, `serializer.EnableStrict`).
//!
//! Go leaves a field at its zero value when the document says `null`; these types do the same for
//! scalar fields (a `null` weight is 0, a `null` name is `""`), so that validation, not decoding,
//! reports them, with kube-scheduler's wording.
//!
//! The one exception to case-sensitivity is [`LegacyExtender`] (and what it contains): upstream
//! decodes it with `encoding/json` through a custom `UnmarshalJSON` (`caseInsensitiveExtender`), so
//! `bindVerb`, `BindVerb` and `bindverb` are the same key there and unknown keys are ignored.

use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

/// `kind` every Policy document must carry.
pub const POLICY_KIND: &str = "Policy";

/// The two `apiVersion` values kube-scheduler v1.22 accepts for a Policy: the legacy `v1`
/// (registered into the core group) and `kubescheduler.config.k8s.io/v1`
/// (`k8s.io/kube-scheduler/config/v1/register.go`; upstream test
/// `pkg/scheduler/apis/config/testing/policy_test.go` "legacy v1" and "v1").
pub const POLICY_API_VERSIONS: &[&str] = &["v1", "kubescheduler.config.k8s.io/v1"];

/// Largest priority weight + 1: a weight must be `< MAX_WEIGHT`.
///
/// `MaxWeight = MaxTotalScore / MaxCustomPriorityScore = math.MaxInt64 / 10`
/// (`pkg/scheduler/apis/config/types.go`, v1.22).
pub const MAX_WEIGHT: i64 = i64::MAX / 10;

/// Deserializes `null` as the type's zero value, like Go's `encoding/json` does for non-pointer
/// fields.
pub(crate) fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// A legacy scheduler Policy: which predicates filter nodes and which priorities score them.
///
/// Shape (JSON/YAML): `{kind, apiVersion, predicates?, priorities?, extenders?,
/// hardPodAffinitySymmetricWeight?, alwaysCheckAllPredicates?}`.
/// Upstream: `k8s.io/kube-scheduler/config/v1` `Policy` (v0.22.17) and the internal
/// `pkg/scheduler/apis/config/legacy_types.go`.
///
/// `predicates`/`priorities` distinguish `None` (key absent or `null`: use kube-scheduler's
/// defaults) from `Some(vec![])` (only the mandatory predicates / no priorities at all).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Policy {
    /// Must be `"Policy"`.
    #[serde(default, deserialize_with = "null_as_default")]
    pub kind: String,
    /// `"v1"` or `"kubescheduler.config.k8s.io/v1"`.
    #[serde(default, deserialize_with = "null_as_default")]
    pub api_version: String,
    /// Fit predicates; `None` means the default predicate set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicates: Option<Vec<PredicatePolicy>>,
    /// Priority functions with weights; `None` means the default priority set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priorities: Option<Vec<PriorityPolicy>>,
    /// HTTP scheduler extenders (see [`crate::extender`]).
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub extenders: Vec<LegacyExtender>,
    /// Weight (0..=100) of the implicit preferred affinity term mirrored from existing pods'
    /// required pod-affinity terms; 0 means "not set" (component default 1).
    #[serde(default, deserialize_with = "null_as_default")]
    pub hard_pod_affinity_symmetric_weight: i32,
    /// Run every filter even after one failed (more complete failure reasons).
    #[serde(default, deserialize_with = "null_as_default")]
    pub always_check_all_predicates: bool,
}

/// One entry of `predicates`: `{name, argument?}`.
///
/// Upstream: `PredicatePolicy` in `k8s.io/kube-scheduler/config/v1/types.go` (v0.22.17).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PredicatePolicy {
    /// Registered predicate name (e.g. `PodFitsResources`), or free text for a custom predicate
    /// that carries an `argument`.
    #[serde(default, deserialize_with = "null_as_default")]
    pub name: String,
    /// Arguments of a custom predicate; exactly one member must be set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argument: Option<PredicateArgument>,
}

/// One entry of `priorities`: `{name, weight, argument?}`.
///
/// Upstream: `PriorityPolicy` in `k8s.io/kube-scheduler/config/v1/types.go` (v0.22.17).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PriorityPolicy {
    /// Registered priority name (e.g. `LeastRequestedPriority`), or free text for a custom
    /// priority that carries an `argument`.
    #[serde(default, deserialize_with = "null_as_default")]
    pub name: String,
    /// Multiplier of this priority's node score; must be in `1..MAX_WEIGHT`.
    #[serde(default, deserialize_with = "null_as_default")]
    pub weight: i64,
    /// Arguments of a custom priority; exactly one member must be set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argument: Option<PriorityArgument>,
}

/// Arguments of a custom predicate (`serviceAffinity` or `labelsPresence`, exactly one).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PredicateArgument {
    /// Becomes the `ServiceAffinity` filter plugin (`CheckServiceAffinity`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_affinity: Option<ServiceAffinity>,
    /// Becomes the `NodeLabel` filter plugin (`CheckNodeLabelPresence`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels_presence: Option<LabelsPresence>,
}

/// `serviceAffinity` predicate argument: nodes must agree on these label values with the nodes
/// already running pods of the same service.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServiceAffinity {
    /// Node label keys.
    #[serde(default, deserialize_with = "null_as_default")]
    pub labels: Vec<String>,
}

/// `labelsPresence` predicate argument: the labels must all be present (or all absent).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelsPresence {
    /// Node label keys.
    #[serde(default, deserialize_with = "null_as_default")]
    pub labels: Vec<String>,
    /// `true`: labels must be present; `false`: they must be absent.
    #[serde(default, deserialize_with = "null_as_default")]
    pub presence: bool,
}

/// Arguments of a custom priority (`serviceAntiAffinity`, `labelPreference` or
/// `requestedToCapacityRatioArguments`, exactly one).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PriorityArgument {
    /// Becomes the `ServiceAffinity` score plugin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_anti_affinity: Option<ServiceAntiAffinity>,
    /// Becomes the `NodeLabel` score plugin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_preference: Option<LabelPreference>,
    /// Becomes the `RequestedToCapacityRatio` score plugin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_to_capacity_ratio_arguments: Option<RequestedToCapacityRatioArguments>,
}

/// `serviceAntiAffinity` priority argument: spread a service's pods over this label's values.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServiceAntiAffinity {
    /// Node label key.
    #[serde(default, deserialize_with = "null_as_default")]
    pub label: String,
}

/// `labelPreference` priority argument: prefer nodes that have (or lack) a label.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelPreference {
    /// Node label key.
    #[serde(default, deserialize_with = "null_as_default")]
    pub label: String,
    /// `true`: prefer nodes with the label; `false`: prefer nodes without it.
    #[serde(default, deserialize_with = "null_as_default")]
    pub presence: bool,
}

/// `requestedToCapacityRatioArguments`: a piecewise-linear score over utilization.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RequestedToCapacityRatioArguments {
    /// Points `(utilization 0..=100, score 0..=10)`.
    #[serde(default, deserialize_with = "null_as_default")]
    pub shape: Vec<UtilizationShapePoint>,
    /// Resources and their weights; empty means `cpu: 1, memory: 1`.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub resources: Vec<ResourceSpec>,
}

/// One point of a `requestedToCapacityRatioArguments` shape.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UtilizationShapePoint {
    /// Utilization in percent, 0..=100.
    #[serde(default, deserialize_with = "null_as_default")]
    pub utilization: i32,
    /// Score at that utilization, 0..=10 (`MaxCustomPriorityScore`).
    #[serde(default, deserialize_with = "null_as_default")]
    pub score: i32,
}

/// A resource and its weight in `requestedToCapacityRatioArguments`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceSpec {
    /// Resource name (`cpu`, `memory`, `example.com/foo`).
    #[serde(default, deserialize_with = "null_as_default")]
    pub name: String,
    /// Weight; 0 is treated as 1 upstream.
    #[serde(default, deserialize_with = "null_as_default")]
    pub weight: i64,
}

/// An HTTP scheduler extender (`LegacyExtender`, named `Extender` before v0.18).
///
/// Decoded case-insensitively with unknown keys ignored, like upstream's `caseInsensitiveExtender`
/// (`k8s.io/kube-scheduler/config/v1/types.go`, v0.22.17). Serialized with the camelCase keys.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LegacyExtender {
    /// Base URL of the extender.
    pub url_prefix: String,
    /// Verb of the filter call; empty means the extender does not filter.
    pub filter_verb: String,
    /// Verb of the preempt call.
    pub preempt_verb: String,
    /// Verb of the prioritize call; empty means the extender does not score.
    pub prioritize_verb: String,
    /// Multiplier of the extender's scores (0..=10 each); must be > 0 with `prioritizeVerb`.
    pub weight: i64,
    /// Verb of the bind call; at most one extender may bind.
    pub bind_verb: String,
    /// Use HTTPS.
    #[serde(rename = "enableHttps")]
    pub enable_https: bool,
    /// TLS client settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_config: Option<ExtenderTlsConfig>,
    /// Timeout of one call, in nanoseconds (Go `time.Duration` as a JSON integer).
    pub http_timeout: i64,
    /// The extender caches node information: only node names are sent.
    pub node_cache_capable: bool,
    /// Extended resources the extender manages.
    pub managed_resources: Vec<ExtenderManagedResource>,
    /// Failures of this extender do not fail scheduling.
    pub ignorable: bool,
}

/// TLS settings of an extender. `*Data` fields keep the base64 text as written.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtenderTlsConfig {
    /// Skip server certificate verification.
    pub insecure: bool,
    /// Server name for SNI and verification.
    pub server_name: String,
    /// Client certificate file.
    pub cert_file: String,
    /// Client key file.
    pub key_file: String,
    /// CA bundle file.
    #[serde(rename = "caFile")]
    pub ca_file: String,
    /// Client certificate, base64 PEM.
    pub cert_data: String,
    /// Client key, base64 PEM.
    pub key_data: String,
    /// CA bundle, base64 PEM.
    #[serde(rename = "caData")]
    pub ca_data: String,
}

/// An extended resource an extender manages.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtenderManagedResource {
    /// Extended resource name, e.g. `example.com/foo`.
    pub name: String,
    /// The scheduler does not account for this resource in `NodeResourcesFit`.
    pub ignored_by_scheduler: bool,
}

/// Implements `Deserialize` for a struct whose keys match case-insensitively, unknown keys are
/// ignored, `null` gives the zero value, and an exactly repeated key is an error (the strict
/// YAML-to-JSON pass upstream rejects duplicates before `encoding/json` runs).
macro_rules! case_insensitive_deserialize {
    ($ty:ident, $expecting:literal, { $($field:ident : $key:literal),+ $(,)? }) => {
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $ty;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str($expecting)
                    }
                    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<$ty, A::Error> {
                        let mut out = $ty::default();
                        let mut seen: Vec<String> = Vec::new();
                        while let Some(key) = map.next_key::<String>()? {
                            if seen.contains(&key) {
                                return Err(de::Error::custom(format_args!(
                                    "duplicate field `{key}`"
                                )));
                            }
                            let folded = key.to_ascii_lowercase();
                            seen.push(key);
                            match folded.as_str() {
                                $($key => {
                                    out.$field = map.next_value::<Option<_>>()?.unwrap_or_default();
                                })+
                                _ => {
                                    map.next_value::<IgnoredAny>()?;
                                }
                            }
                        }
                        Ok(out)
                    }
                }
                deserializer.deserialize_map(V)
            }
        }
    };
}

case_insensitive_deserialize!(LegacyExtender, "an extender object", {
    url_prefix: "urlprefix",
    filter_verb: "filterverb",
    preempt_verb: "preemptverb",
    prioritize_verb: "prioritizeverb",
    weight: "weight",
    bind_verb: "bindverb",
    enable_https: "enablehttps",
    tls_config: "tlsconfig",
    http_timeout: "httptimeout",
    node_cache_capable: "nodecachecapable",
    managed_resources: "managedresources",
    ignorable: "ignorable",
});

case_insensitive_deserialize!(ExtenderTlsConfig, "an extender tlsConfig object", {
    insecure: "insecure",
    server_name: "servername",
    cert_file: "certfile",
    key_file: "keyfile",
    ca_file: "cafile",
    cert_data: "certdata",
    key_data: "keydata",
    ca_data: "cadata",
});

case_insensitive_deserialize!(ExtenderManagedResource, "an extender managedResources entry", {
    name: "name",
    ignored_by_scheduler: "ignoredbyscheduler",
});

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn extender_keys_are_case_insensitive_and_unknown_keys_ignored() {
        // Upstream compatibility_test.go (kubernetes/kubernetes
        // pkg/scheduler/apis/config/testing/compatibility_test.go @05c351a9) case "1.16":
        // `"tlsConfig": {"Insecure":true}` decodes to Insecure=true.
        let e: LegacyExtender = serde_json::from_str(
            r#"{"urlPrefix":"/prefix","filterVerb":"filter","prioritizeVerb":"prioritize",
                "weight":1,"BindVerb":"bind","enableHttps":true,"tlsConfig":{"Insecure":true},
                "httpTimeout":1,"nodeCacheCapable":true,
                "managedResources":[{"name":"example.com/foo","ignoredByScheduler":true}],
                "ignorable":true,"somethingElse":3}"#,
        )
        .unwrap();
        assert_eq!(e.url_prefix, "/prefix");
        assert_eq!(e.bind_verb, "bind");
        assert!(e.tls_config.as_ref().unwrap().insecure);
        assert_eq!(e.http_timeout, 1);
        assert_eq!(e.managed_resources[0].name, "example.com/foo");
        assert!(e.managed_resources[0].ignored_by_scheduler);
        assert!(e.ignorable);
    }

    #[test]
    fn extender_exact_duplicate_key_is_an_error() {
        let err = serde_json::from_str::<LegacyExtender>(r#"{"weight":1,"weight":2}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("duplicate field `weight`"), "{err}");
    }

    #[test]
    fn null_scalars_are_zero_values() {
        let p: PriorityPolicy = serde_json::from_str(r#"{"name":null,"weight":null}"#).unwrap();
        assert_eq!(p, PriorityPolicy::default());
    }
}
