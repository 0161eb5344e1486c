//! The legacy kube-scheduler Policy file (`kind: Policy`, `apiVersion: v1`): wire types, strict
//! decoding, validation and translation of predicate/priority names into framework plugins.
//!
//! Follows kube-scheduler v1.22, the last release that reads a Policy
//! (`--policy-config-file`; removed in v1.23 by kubernetes/kubernetes#105424):
//! 1. decode (JSON if the first non-blank character is `{`, else YAML) strictly: unknown keys,
//!    duplicate keys and wrong types are errors, keys are case-sensitive ([`decode_policy`]);
//! 2. `ValidatePolicy` (`pkg/scheduler/apis/config/validation/validation.go`): priority weights in
//!    `1..MAX_WEIGHT`, extender settings, `hardPodAffinitySymmetricWeight` in `0..=100`;
//! 3. translate names with the legacy registry
//!    (`pkg/scheduler/framework/plugins/legacy_registry.go`), see [`ResolvedPolicy`].
//!
//! Loading ([`parse_policy`], [`load_policy_file`]) covers every v1.22 name and builds the plugin
//! arguments ([`PluginArgs`]); every plugin the names map to is implemented. It gives the
//! translation with the feature gates off; [`ResolvedPolicy::with_feature_gates`] applies
//! `--feature-gates` (v1.22 defaults `DefaultPodTopologySpread` on).
//!
//! The module's parts: `decode` (strict JSON/YAML), `validate` (`ValidatePolicy`),
//! `legacy_registry` (the name tables), `resolve` (names → plugins and arguments), `resolved`
//! ([`ResolvedPolicy`], its display and [`default_provider`]), `feature_gates`, `args` (plugin
//! arguments), `types` (the wire types), `locate` (`file:line:column` of a field), `error`.
//!
//! Every error message starts with `file:line:column:`. Deviations from v1.22, all reported:
//! the singular key `predicate` is accepted as `predicates` with a warning. As in v1.22, an
//! extender `urlPrefix` is not validated: one Go's HTTP client cannot send to (such as
//! `"/prefix"`) is accepted with a warning naming the field and value.
//!
//! ```
//! let loaded = scheduler::policy::parse_policy(
//!     "policy.json",
//!     r#"{"kind":"Policy","apiVersion":"v1",
//!         "predicates":[{"name":"PodFitsResources"}],
//!         "priorities":[{"name":"LeastRequestedPriority","weight":1}]}"#,
//! )?;
//! let filters: Vec<&str> = loaded.resolved.filters.iter().map(|f| f.plugin).collect();
//! assert_eq!(filters, ["NodeUnschedulable", "NodeResourcesFit", "TaintToleration"]);
//! assert_eq!(loaded.resolved.scores[0].plugin, "NodeResourcesLeastAllocated");
//! # Ok::<(), scheduler::policy::PolicyError>(())
//! ```

mod args;
mod decode;
mod error;
mod feature_gates;
mod legacy_registry;
pub(crate) mod locate;
mod resolve;
mod resolved;
mod types;
mod validate;

#[cfg(test)]
mod tests;

use std::path::Path;

pub use args::{
    DefaultPreemptionArgs, DefaultingType, InterPodAffinityArgs, InvalidArgs,
    MAX_CUSTOM_PRIORITY_SCORE, NodeLabelArgs, NodeResourcesFitArgs, PluginArgs,
    PodTopologySpreadArgs, RequestedToCapacityRatioArgs, ServiceAffinityArgs,
};
pub use error::PolicyError;
pub use feature_gates::{FeatureGateError, FeatureGates};
pub use legacy_registry::{DEFAULT_PROVIDER_FILTERS, DEFAULT_PROVIDER_SCORES};
pub use locate::Location;
pub use resolved::{ResolvedFilter, ResolvedPolicy, ResolvedScore, default_provider};
pub use types::{
    ExtenderManagedResource, ExtenderTlsConfig, LabelPreference, LabelsPresence, LegacyExtender,
    MAX_WEIGHT, POLICY_API_VERSIONS, POLICY_KIND, Policy, PredicateArgument, PredicatePolicy,
    PriorityArgument, PriorityPolicy, RequestedToCapacityRatioArguments, ResourceSpec,
    ServiceAffinity, ServiceAntiAffinity, UtilizationShapePoint,
};

/// A policy file decoded, validated and resolved to plugins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedPolicy {
    /// The document as decoded (with `predicate` folded into `predicates`).
    pub policy: Policy,
    /// The plugins to run.
    pub resolved: ResolvedPolicy,
    /// Things the user should fix or know, each `file[:line:column]: message`: the singular
    /// `predicate` key, ignored arguments, repeated priorities, extender URLs Go cannot call.
    pub warnings: Vec<String>,
}

/// Reads and loads a policy file; `path` as given names the source in messages.
///
/// Errors: [`PolicyError::MissingFile`] (`missing policy config file <path>`),
/// [`PolicyError::ReadFile`] (I/O error or not UTF-8), then everything [`parse_policy`] returns.
/// Upstream: `pkg/scheduler/scheduler.go` `initPolicyFromFile` (v1.22).
pub fn load_policy_file(path: &Path) -> Result<LoadedPolicy, PolicyError> {
    match std::fs::metadata(path) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(PolicyError::MissingFile {
                path: path.to_path_buf(),
            });
        }
        Err(source) => {
            return Err(PolicyError::ReadFile {
                path: path.to_path_buf(),
                source,
            });
        }
    }
    let text = std::fs::read_to_string(path).map_err(|source| PolicyError::ReadFile {
        path: path.to_path_buf(),
        source,
    })?;
    parse_policy(&path.display().to_string(), &text)
}

/// Decodes, validates and resolves a policy held in memory, exactly as kube-scheduler v1.22
/// would; `source_name` names it in messages. The result is the translation with every feature
/// gate off: apply [`ResolvedPolicy::with_feature_gates`] with the process's `--feature-gates`
/// (v1.22's defaults: [`FeatureGates::default`]) before scheduling with it, as the binary does.
/// The same holds for [`load_policy_file`] and [`default_provider`].
///
/// Errors: [`PolicyError::Decode`] (syntax, unknown/duplicate key, type, `kind`/`apiVersion`,
/// both `predicates` and `predicate`), [`PolicyError::Validate`] (all `ValidatePolicy`
/// failures), then, in document order (predicates, then priorities), the first of
/// [`PolicyError::Argument`], [`PolicyError::RemovedName`], [`PolicyError::UnknownName`], then
/// the profile-building failures of v1.22 ([`PolicyError::Argument`]: plugin arguments).
pub fn parse_policy(source_name: &str, text: &str) -> Result<LoadedPolicy, PolicyError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let src = locate::Source::new(source_name, text);
    let decoded = decode::decode(&src)?;
    let errors = validate::validate_policy(&decoded.policy, &src);
    if !errors.is_empty() {
        return Err(PolicyError::Validate { errors });
    }
    let mut warnings = decoded.warnings;
    let input = resolve::ResolveInput {
        src: &src,
        predicates_key: decoded.predicates_key,
    };
    extender_url_warnings(&decoded.policy, &src, &mut warnings);
    let resolved = resolve::resolve(&decoded.policy, &input, &mut warnings)?;
    Ok(LoadedPolicy {
        policy: decoded.policy,
        resolved,
        warnings,
    })
}

/// A warning for each extender whose `urlPrefix` Go's HTTP client cannot send to (no
/// `http`/`https` scheme or no host, e.g. the `"/prefix"` of v1.22's `compatibility_test.go`):
/// v1.22 validates no URL and accepts the file, and every call to that extender then fails with
/// Go's error (see `crate::extender::gourl`) — skipped when the extender is `ignorable`, the
/// pod's scheduling error otherwise. Only extenders with a filter, prioritize or bind verb are
/// called at all.
fn extender_url_warnings(policy: &Policy, src: &locate::Source<'_>, warnings: &mut Vec<String>) {
    for (i, e) in policy.extenders.iter().enumerate() {
        let Some(verb) = [&e.filter_verb, &e.prioritize_verb, &e.bind_verb]
            .into_iter()
            .find(|v| !v.is_empty())
        else {
            continue;
        };
        let url = format!("{}/{}", e.url_prefix.trim_end_matches('/'), verb);
        let Some(go_error) = crate::extender::gourl::go_post_error(&url) else {
            continue;
        };
        let path = locate::FieldPath::root()
            .key("extenders")
            .index(i)
            .key("urlPrefix");
        let consequence = if e.ignorable {
            "the extender is ignorable, so it is skipped"
        } else {
            "the extender is not ignorable, so every pod it is asked about fails with that error"
        };
        warnings.push(format!(
            "{}: {path} {:?} is not an http:// or https:// URL with a host: kube-scheduler v1.22 \
             accepts it, and every call to this extender fails ({go_error}); {consequence}",
            src.value(&path),
            e.url_prefix
        ));
    }
}

/// Decodes a policy strictly and checks `kind`/`apiVersion`, without validation or
/// translation (e.g. to inspect a document before its names are resolved).
///
/// Returns the policy and the decoding warnings (the singular `predicate` key).
/// Errors: [`PolicyError::Decode`] only.
pub fn decode_policy(source_name: &str, text: &str) -> Result<(Policy, Vec<String>), PolicyError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let src = locate::Source::new(source_name, text);
    let decoded = decode::decode(&src)?;
    Ok((decoded.policy, decoded.warnings))
}
