//! Strict decoding of a Policy document (JSON or YAML) into [`Policy`].
//!
//! Upstream: kube-scheduler v1.18–v1.22 decode the file with
//! `runtime.DecodeInto(scheme.Codecs.UniversalDecoder(), data, policy)` where the codec factory is
//! built with `serializer.EnableStrict` (`pkg/scheduler/apis/config/scheme/scheme.go`): keys are
//! case-sensitive, unknown keys and duplicate keys are errors
//! (`k8s.io/apimachinery` v0.22.17 `pkg/runtime/serializer/json/json.go`). `kind` must be
//! `Policy` and `apiVersion` `v1` or `kubescheduler.config.k8s.io/v1`.
//!
//! One deliberate leniency: the key `predicate` (singular, as in the product's sample policy) is
//! read as `predicates` with a warning. kube-scheduler v1.18+ rejects such a file (unknown field)
//! and v1.17 and earlier silently ignored the key (and so ran the default predicates).

use serde::{Deserialize, Deserializer};

use super::error::PolicyError;
use super::locate::{FieldPath, Format, Location, Seg, Source};
use super::types::{
    LegacyExtender, POLICY_API_VERSIONS, POLICY_KIND, Policy, PredicatePolicy, PriorityPolicy,
    null_as_default,
};

/// Decoding result: the policy, which key held the predicates, and warnings.
pub(crate) struct Decoded {
    pub(crate) policy: Policy,
    /// `"predicates"`, or `"predicate"` when the singular key was used.
    pub(crate) predicates_key: &'static str,
    pub(crate) warnings: Vec<String>,
}

/// Distinguishes an absent key (`None`) from an explicit `null` (`Some(None)`).
fn present<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

/// The document as written, with the singular `predicate` key kept apart.
#[derive(Deserialize)]
#[serde(rename = "Policy", rename_all = "camelCase", deny_unknown_fields)]
struct RawPolicy {
    #[serde(default, deserialize_with = "null_as_default")]
    kind: String,
    #[serde(default, deserialize_with = "null_as_default")]
    api_version: String,
    #[serde(default, deserialize_with = "present")]
    predicates: Option<Option<Vec<PredicatePolicy>>>,
    #[serde(default, deserialize_with = "present")]
    predicate: Option<Option<Vec<PredicatePolicy>>>,
    #[serde(default, deserialize_with = "present")]
    priorities: Option<Option<Vec<PriorityPolicy>>>,
    #[serde(default, deserialize_with = "null_as_default")]
    extenders: Vec<LegacyExtender>,
    #[serde(default, deserialize_with = "null_as_default")]
    hard_pod_affinity_symmetric_weight: i32,
    #[serde(default, deserialize_with = "null_as_default")]
    always_check_all_predicates: bool,
}

/// Removes serde's own ` at line L column C` suffix.
fn strip_position(msg: &str) -> &str {
    match msg.rfind(" at line ") {
        Some(i) if msg[i..].contains(" column ") => &msg[..i],
        _ => msg,
    }
}

fn decode_error(location: Location, message: impl Into<String>) -> PolicyError {
    // serde lists the hidden `predicate` field among the expected ones; do not advertise it.
    let message = message
        .into()
        .replace("`predicates`, `predicate`, ", "`predicates`, ");
    PolicyError::Decode { location, message }
}

fn json_error(src: &Source<'_>, err: &serde_json::Error) -> PolicyError {
    let text = err.to_string();
    let msg = strip_position(&text);
    // serde_json counts columns in bytes and points at the last character it read.
    let offset = src.offset_of_byte_col(err.line(), err.column());
    let located = err
        .is_data()
        .then_some(offset)
        .flatten()
        .and_then(|off| src.json_path_at(off));
    if let Some((path, loc)) = located {
        let message = if path.0.is_empty() {
            msg.to_string()
        } else {
            format!("{path}: {msg}")
        };
        return decode_error(loc, message);
    }
    let location = match offset {
        Some(off) if err.line() > 0 => src.at_offset(off),
        _ => src.at_line_col(err.line(), err.column()),
    };
    decode_error(location, msg)
}

fn yaml_error(src: &Source<'_>, err: &serde_yaml::Error) -> PolicyError {
    let text = err.to_string();
    let msg = strip_position(&text).to_string();
    // serde_yaml renders `path: message`; it gives no position for some duplicate keys.
    let (path, body) = match msg.split_once(": ") {
        Some((p, b)) if !p.contains(' ') => (FieldPath::parse(p), b),
        _ => (FieldPath::root(), msg.as_str()),
    };
    let duplicate = body
        .strip_prefix("duplicate field `")
        .and_then(|r| r.split('`').next());
    if let Some(field) = duplicate {
        let mut dup = path.clone();
        dup.0.push(Seg::Key(field.to_string(), 1));
        return decode_error(src.key(&dup), msg.clone());
    }
    let location = match err.location() {
        Some(l) => src.at_line_col(l.line(), l.column()),
        None => src.value(&path),
    };
    decode_error(location, msg)
}

/// `kind` and `apiVersion` alone, read leniently to name the type of a file that is not a
/// Policy.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TypeMeta {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    api_version: Option<String>,
}

/// kube-scheduler's component configuration: a different file for a different flag.
const KUBE_SCHEDULER_CONFIGURATION: &str = "KubeSchedulerConfiguration";

/// The error for a document whose `kind`/`apiVersion` are not a Policy's, if they are not.
fn check_type(src: &Source<'_>, api_version: &str, kind: &str) -> Result<(), PolicyError> {
    let root = FieldPath::root();
    if kind == KUBE_SCHEDULER_CONFIGURATION {
        return Err(decode_error(
            src.value(&root.key("kind")),
            "this is a KubeSchedulerConfiguration, not a Policy: kube-scheduler reads it with \
             --config; mini-scheduler reads the legacy Policy file (kind: Policy, apiVersion: v1, \
             kube-scheduler's --policy-config-file) that lists predicates and priorities",
        ));
    }
    if api_version.is_empty() {
        return Err(decode_error(
            src.value(&root),
            "Object 'apiVersion' is missing (want \"v1\" or \"kubescheduler.config.k8s.io/v1\")",
        ));
    }
    if kind.is_empty() {
        return Err(decode_error(
            src.value(&root),
            "Object 'Kind' is missing (want \"Policy\")",
        ));
    }
    if !POLICY_API_VERSIONS.contains(&api_version) {
        return Err(decode_error(
            src.value(&root.clone().key("apiVersion")),
            format!(
                "apiVersion: no kind \"Policy\" is registered for version \"{api_version}\" (kube-scheduler v1.22 accepts \"v1\" or \"kubescheduler.config.k8s.io/v1\")"
            ),
        ));
    }
    if kind != POLICY_KIND {
        return Err(decode_error(
            src.value(&root.key("kind")),
            format!(
                "kind: no kind \"{kind}\" is registered for version \"{api_version}\" (want \"Policy\")"
            ),
        ));
    }
    Ok(())
}

/// For a document that failed strict decoding: the type error when its `kind`/`apiVersion`
/// are present and not a Policy's (as v1.22's decoder resolves the type before the fields).
fn type_error(src: &Source<'_>) -> Option<PolicyError> {
    let meta: TypeMeta = match src.format {
        Format::Json => serde_json::from_str(src.text).ok()?,
        Format::Yaml => serde_yaml::from_str(src.text).ok()?,
    };
    let (kind, api_version) = (meta.kind?, meta.api_version.unwrap_or_default());
    check_type(src, &api_version, &kind).err()
}

/// Decodes `text` (named `source_name` in messages) strictly and checks `kind`/`apiVersion`.
///
/// Nesting deeper than [`crate::nesting::MAX_NESTING_DEPTH`] is refused before parsing.
pub(crate) fn decode(src: &Source<'_>) -> Result<Decoded, PolicyError> {
    let deep = match src.format {
        Format::Json => crate::nesting::check_json(src.text),
        Format::Yaml => crate::nesting::check_yaml(src.text),
    };
    if let Err(at) = deep {
        return Err(decode_error(
            src.at_line_col(at.line, at.column),
            crate::nesting::too_deep_message(),
        ));
    }
    let raw: RawPolicy = match src.format {
        Format::Json => serde_json::from_str(src.text)
            .map_err(|e| type_error(src).unwrap_or_else(|| json_error(src, &e)))?,
        Format::Yaml => serde_yaml::from_str(src.text)
            .map_err(|e| type_error(src).unwrap_or_else(|| yaml_error(src, &e)))?,
    };
    check_type(src, &raw.api_version, &raw.kind)?;

    let root = FieldPath::root();
    let mut warnings = Vec::new();
    let (predicates, predicates_key) = match (raw.predicates, raw.predicate) {
        (Some(_), Some(_)) => {
            return Err(decode_error(
                src.key(&root.clone().key("predicate")),
                "both \"predicates\" and \"predicate\" are set; \"predicate\" is not a Policy field \
                 (kube-scheduler v1.18+ rejects it): delete it and keep \"predicates\"",
            ));
        }
        (Some(p), None) => (p, "predicates"),
        (None, Some(p)) => {
            warnings.push(format!(
                "{}: key \"predicate\" is not a Policy field; treating it as \"predicates\" \
                 (kube-scheduler v1.18+ rejects this file; rename the key)",
                src.key(&root.clone().key("predicate"))
            ));
            (p, "predicate")
        }
        (None, None) => (None, "predicates"),
    };

    Ok(Decoded {
        policy: Policy {
            kind: raw.kind,
            api_version: raw.api_version,
            predicates,
            priorities: raw.priorities.flatten(),
            extenders: raw.extenders,
            hard_pod_affinity_symmetric_weight: raw.hard_pod_affinity_symmetric_weight,
            always_check_all_predicates: raw.always_check_all_predicates,
        },
        predicates_key,
        warnings,
    })
}
