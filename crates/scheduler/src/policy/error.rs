//! The Policy loader's error type.

use std::fmt;
use std::path::PathBuf;

use super::legacy_registry;
use super::locate::Location;

/// Why a Policy file could not be loaded. Every message that concerns the content starts with
/// `file:line:column:` (or `file:` when no position applies).
///
/// Upstream equivalents (kube-scheduler v1.22 `pkg/scheduler/scheduler.go` `initPolicyFromFile`,
/// `pkg/scheduler/factory.go` `createFromPolicy`): `missing policy config file %s`,
/// `couldn't read policy config: %v`, `invalid policy: %v`, `ValidatePolicy` errors, and
/// `legacy_registry.go` `predicate type not found for %q` / `priority type not found for %q`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// The file does not exist (`os.Stat` failed upstream).
    #[error("missing policy config file {}", path.display())]
    MissingFile {
        /// Path as given.
        path: PathBuf,
    },
    /// The file exists but could not be read, or is not UTF-8.
    #[error("couldn't read policy config {}: {source}", path.display())]
    ReadFile {
        /// Path as given.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Syntax error, unknown or duplicate key, wrong type, wrong `kind`/`apiVersion`, or both
    /// `predicates` and `predicate` present.
    #[error("{location}: invalid policy: {message}")]
    Decode {
        /// Where.
        location: Location,
        /// What, including the field path when known.
        message: String,
    },
    /// `ValidatePolicy` failures (bad weights, extender settings,
    /// `hardPodAffinitySymmetricWeight`), all of them, one per line.
    #[error("{}", ValidationList(errors))]
    Validate {
        /// Each failure with its location.
        errors: Vec<(Location, String)>,
    },
    /// A predicate or priority name kube-scheduler v1.22 does not know.
    #[error(
        "{location}: unknown {kind} \"{name}\" at {field} (kube-scheduler v1.22: {kind} type not found for \"{name}\"); {}valid {}: {}",
        suggestion_text(suggestion),
        plural(kind),
        valid_names(kind).join(", ")
    )]
    UnknownName {
        /// Where the name is.
        location: Location,
        /// `predicate` or `priority`.
        kind: &'static str,
        /// The name as written.
        name: String,
        /// Field path, e.g. `predicates[2].name`.
        field: String,
        /// Nearest name kube-scheduler v1.22 knows.
        suggestion: Option<&'static str>,
    },
    /// A name older releases registered and v1.22 no longer does.
    #[error("{location}: {kind} \"{name}\" at {field} was removed from kube-scheduler: {reason}")]
    RemovedName {
        /// Where the name is.
        location: Location,
        /// `predicate` or `priority`.
        kind: &'static str,
        /// The name as written.
        name: String,
        /// Field path.
        field: String,
        /// Why, and what replaces it.
        reason: &'static str,
    },
    /// An `argument` with not exactly one member (`legacy_registry.go` `validatePredicate` /
    /// `validatePriority`), or plugin arguments v1.22 refuses when it builds the profile
    /// (`initializing plugin "NodeLabel": ...`, a plugin configured without its arguments, ...).
    #[error("{location}: {message}")]
    Argument {
        /// Where the argument is.
        location: Location,
        /// kube-scheduler's text, e.g.
        /// `exactly 1 predicate argument is required, numArgs: 2, predicate X` or
        /// `initializing plugin "RequestedToCapacityRatio": shape: Required value: at least one
        /// point must be specified`.
        message: String,
    },
}

impl PolicyError {
    /// Location of the (first) problem, if the error concerns the file's content.
    pub fn location(&self) -> Option<&Location> {
        match self {
            PolicyError::MissingFile { .. } | PolicyError::ReadFile { .. } => None,
            PolicyError::Validate { errors } => errors.first().map(|(l, _)| l),
            PolicyError::Decode { location, .. }
            | PolicyError::UnknownName { location, .. }
            | PolicyError::RemovedName { location, .. }
            | PolicyError::Argument { location, .. } => Some(location),
        }
    }
}

fn plural(kind: &str) -> &str {
    match kind {
        "priority" => "priorities",
        _ => "predicates",
    }
}

/// Every name of this kind kube-scheduler v1.22 knows (registered names, each alias after its
/// name), from the legacy registry's tables.
fn valid_names(kind: &str) -> &'static [&'static str] {
    match kind {
        "priority" => legacy_registry::valid_priorities(),
        _ => legacy_registry::valid_predicates(),
    }
}

fn suggestion_text(s: &Option<&'static str>) -> String {
    match s {
        Some(name) => format!("did you mean \"{name}\"? "),
        None => String::new(),
    }
}

struct ValidationList<'a>(&'a [(Location, String)]);

impl fmt::Display for ValidationList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (loc, msg)) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{loc}: {msg}")?;
        }
        Ok(())
    }
}
