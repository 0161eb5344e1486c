//! `ValidatePolicy`: checks that run before translation, all reported together.
//!
//! Upstream: kubernetes/kubernetes `pkg/scheduler/apis/config/validation/validation.go`
//! (`ValidatePolicy`, `validateExtenders`, `validateCustomPriorities`,
//! `validateExtendedResourceName`), v1.21/v1.22 texts, and `k8s.io/apimachinery`
//! `pkg/util/validation` (`IsQualifiedName`, `IsDNS1123Subdomain`) for resource names.

use std::collections::HashMap;

use super::locate::{FieldPath, Location, Source};
use super::types::{MAX_WEIGHT, Policy, PriorityPolicy};

/// Runs every check; returns the failures in document order (priorities, extenders,
/// `hardPodAffinitySymmetricWeight`), each located in `src`.
pub(crate) fn validate_policy(policy: &Policy, src: &Source<'_>) -> Vec<(Location, String)> {
    let mut errors = Vec::new();
    let root = FieldPath::root();

    let mut custom: HashMap<&'static str, &PriorityPolicy> = HashMap::new();
    for (i, priority) in policy.priorities.iter().flatten().enumerate() {
        let path = root.clone().key("priorities").index(i);
        if priority.weight <= 0 || priority.weight >= MAX_WEIGHT {
            errors.push((
                src.value(&path.clone().key("weight")),
                format!(
                    "priority {} should have a positive weight applied to it or it has overflown",
                    priority.name
                ),
            ));
        }
        if let Some(msg) = validate_custom_priority(&mut custom, priority) {
            errors.push((src.value(&path.key("argument")), msg));
        }
    }

    let ext_path = root.clone().key("extenders");
    let mut binders = 0;
    let mut managed: Vec<&str> = Vec::new();
    for (i, extender) in policy.extenders.iter().enumerate() {
        let path = ext_path.clone().index(i);
        if !extender.prioritize_verb.is_empty() && extender.weight <= 0 {
            let p = path.clone().key("weight");
            errors.push((
                src.value(&p),
                format!(
                    "{p}: Invalid value: {}: must have a positive weight applied to it",
                    extender.weight
                ),
            ));
        }
        if !extender.bind_verb.is_empty() {
            binders += 1;
        }
        for (j, resource) in extender.managed_resources.iter().enumerate() {
            let p = path.clone().key("managedResources").index(j).key("name");
            for msg in validate_extended_resource_name(&resource.name) {
                errors.push((
                    src.value(&p),
                    format!("{p}: Invalid value: {:?}: {msg}", resource.name),
                ));
            }
            if managed.contains(&resource.name.as_str()) {
                errors.push((
                    src.value(&p),
                    format!(
                        "{p}: Invalid value: {:?}: duplicate extender managed resource name",
                        resource.name
                    ),
                ));
            }
            managed.push(&resource.name);
        }
    }
    if binders > 1 {
        errors.push((
            src.value(&ext_path),
            format!(
                "extenders: Invalid value: \"found {binders} extenders implementing bind\": only one extender can implement bind"
            ),
        ));
    }

    let w = policy.hard_pod_affinity_symmetric_weight;
    if !(0..=100).contains(&w) {
        errors.push((
            src.value(&root.key("hardPodAffinitySymmetricWeight")),
            format!(
                "hardPodAffinitySymmetricWeight: Invalid value: {w}: not in valid range [0-100]"
            ),
        ));
    }
    errors
}

/// `validateCustomPriorities`: labelPreference / serviceAntiAffinity entries must share one
/// weight; requestedToCapacityRatioArguments may appear once; an argument needs a member.
fn validate_custom_priority<'p>(
    seen: &mut HashMap<&'static str, &'p PriorityPolicy>,
    priority: &'p PriorityPolicy,
) -> Option<String> {
    let arg = priority.argument.as_ref()?;
    let (kind, redeclare_check) = if arg.label_preference.is_some() {
        ("LabelPreference", false)
    } else if arg.service_anti_affinity.is_some() {
        ("ServiceAntiAffinity", false)
    } else if arg.requested_to_capacity_ratio_arguments.is_some() {
        ("RequestedToCapacityRatio", true)
    } else {
        return Some(format!(
            "no priority arguments set for priority {}",
            priority.name
        ));
    };
    if let Some(existing) = seen.get(kind) {
        if redeclare_check {
            return Some(format!(
                "priority {:?} redeclares custom priority {:?}, from: {:?}",
                priority.name, kind, existing.name
            ));
        }
        if existing.weight != priority.weight {
            // Two spaces after the type: verbatim from upstream.
            return Some(format!(
                "{kind}  priority {:?} has a different weight with {:?}",
                priority.name, existing.name
            ));
        }
    }
    seen.insert(kind, priority);
    None
}

const QUALIFIED_NAME_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";

fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    let ex: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{msg} (e.g. {}regex used for validation is '{fmt}')",
        ex.join("or ")
    )
}

fn is_qualified_name_part(name: &str) -> bool {
    let b = name.as_bytes();
    let (Some(first), Some(last)) = (b.first(), b.last()) else {
        return false;
    };
    first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

fn is_dns1123_label(label: &str) -> bool {
    let b = label.as_bytes();
    let (Some(first), Some(last)) = (b.first(), b.last()) else {
        return false;
    };
    let lower_alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    lower_alnum(first) && lower_alnum(last) && b.iter().all(|c| lower_alnum(c) || *c == b'-')
}

fn dns1123_subdomain_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 253 {
        errs.push("must be no more than 253 characters".to_string());
    }
    if !value.split('.').all(is_dns1123_label) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// apimachinery `IsQualifiedName`.
fn qualified_name_errors(value: &str) -> Vec<String> {
    let examples = ["MyName", "my.name", "123-abc"];
    let parts: Vec<&str> = value.split('/').collect();
    let mut errs = Vec::new();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    dns1123_subdomain_errors(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            return vec![format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, &examples)
            )];
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push("name part must be no more than 63 characters".to_string());
    }
    if !is_qualified_name_part(name) {
        errs.push(format!(
            "name part {}",
            regex_error(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, &examples)
        ));
    }
    errs
}

/// `validateExtendedResourceName`: a qualified name that is an extended (non-native) resource.
fn validate_extended_resource_name(name: &str) -> Vec<String> {
    let errs = qualified_name_errors(name);
    if !errs.is_empty() {
        return errs;
    }
    let native = !name.contains('/') || name.contains("kubernetes.io/");
    let extended = !native
        && !name.starts_with("requests.")
        && qualified_name_errors(&format!("requests.{name}")).is_empty();
    if extended {
        Vec::new()
    } else {
        vec!["is an invalid extended resource name".to_string()]
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn extended_resource_names() {
        assert!(validate_extended_resource_name("example.com/foo").is_empty());
        assert_eq!(
            validate_extended_resource_name("cpu"),
            ["is an invalid extended resource name"]
        );
        assert_eq!(
            validate_extended_resource_name("kubernetes.io/foo"),
            ["is an invalid extended resource name"]
        );
        let errs = validate_extended_resource_name("Example.com/foo");
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0].starts_with("prefix part a lowercase RFC 1123 subdomain"),
            "{errs:?}"
        );
        let errs = validate_extended_resource_name("a/b/c");
        assert!(
            errs[0].starts_with("a qualified name must consist of"),
            "{errs:?}"
        );
        assert!(
            errs[0].contains("(e.g. 'MyName', or 'my.name', or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
            "{errs:?}"
        );
        assert_eq!(
            validate_extended_resource_name("example.com/"),
            [
                "name part must be non-empty".to_string(),
                format!(
                    "name part {}",
                    regex_error(
                        QUALIFIED_NAME_ERR,
                        QUALIFIED_NAME_FMT,
                        &["MyName", "my.name", "123-abc"]
                    )
                )
            ]
        );
    }
}
