//! Reading a `KubeSchedulerConfiguration` file: strict decoding, kube-scheduler's defaults and
//! validation, and each profile turned into the plugins mini-scheduler runs.
//!
//! Steps, as kube-scheduler does them (v1.22 for v1beta2; the later releases for v1beta3 / v1):
//! 1. decode strictly (JSON if the first non-blank character is `{`, else YAML): unknown and
//!    duplicate keys are errors, keys are case-sensitive; fields another version lacks are
//!    refused for the file's version; errors carry `file:line:column` and, for an unknown key,
//!    the nearest known one;
//! 2. defaults (`SetDefaults_KubeSchedulerConfiguration`) and `ValidateKubeSchedulerConfiguration`
//!    (`pkg/scheduler/apis/config/validation/validation.go`), with upstream's texts prefixed by
//!    the field path;
//! 3. per profile, the default plugins of the version merged with the profile's `plugins`
//!    (`mergePlugins`; `multiPoint` expanded as `expandMultiPointPlugins` does), then each
//!    plugin checked against what mini-scheduler implements and each `pluginConfig` decoded as
//!    the plugin's `Args` type.
//!
//! The result is one [`crate::policy::ResolvedPolicy`] per profile: the same value a Policy
//! resolves to, so that `simulate`, `run` and the hot reload build a profile from either file
//! the same way.
//!
//! Restrictions, each an error naming the plugin and point (never silently ignored):
//! mini-scheduler runs a plugin's PreFilter together with its Filter and its PreScore together
//! with its Score, and VolumeBinding at all of PreFilter, Filter, Reserve and PreBind, so a
//! profile must list such plugins at all their points or none (kube-scheduler would fail every
//! pod reaching the half-configured plugin); only `PrioritySort` sorts, only
//! `DefaultBinder` binds; `DefaultPreemption` is the only PostFilter (disabling it turns preemption
//! off for the profile); a `NodeResourcesFit` `LeastAllocated` / `MostAllocated` strategy must weigh cpu
//! and memory equally (the legacy scorers mini-scheduler has); NodeAffinity's `addedAffinity`,
//! PodTopologySpread's `defaultConstraints` and NodeResourcesFit's `ignoredResourceGroups` are
//! not implemented.

use std::collections::BTreeSet;
use std::path::Path;

use serde::de::DeserializeOwned;

mod decode;
mod extenders;
mod leader_election;
mod plugin_args;
mod plugins;
mod profiles;

use decode::{check_type, decode, nearest, strip_position, version_fields, with_suggestion};
use plugin_args::is_extended_resource_name;
use plugins::*;

use super::convert::{PRE_FILTER_PLUGINS, PRE_SCORE_PLUGINS, RESOURCE_SCORERS, removed_in};
use super::types::{
    KUBE_SCHEDULER_CONFIGURATION_KIND, KubeSchedulerConfiguration, KubeSchedulerProfile,
    NodeResourcesFitArgs, Plugin, PluginSet, Plugins, PodTopologySpreadArgs,
};
use super::{ConfigVersion, parse_go_duration};
use crate::policy::locate::{FieldPath, Format, Location, Seg, Source};
use crate::policy::{
    DefaultingType, ExtenderManagedResource, ExtenderTlsConfig, InterPodAffinityArgs as IpaArgs,
    LegacyExtender, NodeResourcesFitArgs as FitArgs, PluginArgs, PodTopologySpreadArgs as PtsArgs,
    RequestedToCapacityRatioArgs, ResolvedFilter, ResolvedPolicy, ResolvedScore, ResourceSpec,
};

/// Why a configuration file could not be loaded. Messages about the content start with
/// `file:line:column:`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file does not exist.
    #[error("missing config file {}", path.display())]
    MissingFile {
        /// Path as given.
        path: std::path::PathBuf,
    },
    /// The file could not be read or is not UTF-8.
    #[error("couldn't read config file {}: {source}", path.display())]
    ReadFile {
        /// Path as given.
        path: std::path::PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Syntax error, unknown or duplicate key, wrong type, wrong `kind` / `apiVersion`, or a
    /// field the file's version does not have.
    #[error("{location}: invalid configuration: {message}")]
    Decode {
        /// Where.
        location: Location,
        /// What, with the field path.
        message: String,
    },
    /// Validation and profile errors, all of them, one per line.
    #[error("{}", errors.iter().map(|(l, m)| format!("{l}: {m}")).collect::<Vec<_>>().join("\n"))]
    Invalid {
        /// Each error with its location.
        errors: Vec<(Location, String)>,
    },
}

impl ConfigError {
    /// Location of the (first) problem, if it concerns the content.
    pub fn location(&self) -> Option<&Location> {
        match self {
            ConfigError::Decode { location, .. } => Some(location),
            ConfigError::Invalid { errors } => errors.first().map(|(l, _)| l),
            _ => None,
        }
    }
}

/// One profile, resolved to the plugins mini-scheduler runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigProfile {
    /// Pods with this `spec.schedulerName` use the profile.
    pub scheduler_name: String,
    /// v1: the profile's own `percentageOfNodesToScore`, overriding the global one.
    pub percentage_of_nodes_to_score: Option<i32>,
    /// Filters, scores (weights ≥ 1), arguments and the configuration's extenders. A score
    /// plugin's `legacy_names` holds the configuration's name when mini-scheduler runs it under
    /// another one (`NodeResourcesFit` → `NodeResourcesLeastAllocated`, ...), so that outputs
    /// show the name the file used.
    pub resolved: ResolvedPolicy,
}

/// `leaderElection` with kube-scheduler's defaults applied (durations in nanoseconds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderElection {
    /// Run leader election (default true).
    pub leader_elect: bool,
    /// Lease duration, ns (default 15s).
    pub lease_duration: i64,
    /// Renew deadline, ns (default 10s).
    pub renew_deadline: i64,
    /// Retry period, ns (default 2s).
    pub retry_period: i64,
    /// Lock type (default `leases`).
    pub resource_lock: String,
    /// Lease name (default `kube-scheduler`).
    pub resource_name: String,
    /// Lease namespace (default `kube-system`).
    pub resource_namespace: String,
}

/// `clientConnection` with kube-scheduler's defaults applied.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientConnection {
    /// Kubeconfig path; empty = in-cluster.
    pub kubeconfig: String,
    /// Requests per second (default 50).
    pub qps: f32,
    /// Burst (default 100).
    pub burst: i32,
}

/// A configuration file loaded, defaulted, validated and resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedConfig {
    /// The file's version.
    pub version: ConfigVersion,
    /// The document as decoded (before defaults).
    pub config: KubeSchedulerConfiguration,
    /// The profiles, in file order.
    pub profiles: Vec<ConfigProfile>,
    /// `percentageOfNodesToScore` (default 0 = adaptive).
    pub percentage_of_nodes_to_score: i32,
    /// `podInitialBackoffSeconds` (default 1).
    pub pod_initial_backoff_seconds: i64,
    /// `podMaxBackoffSeconds` (default 10).
    pub pod_max_backoff_seconds: i64,
    /// `leaderElection` with defaults.
    pub leader_election: LeaderElection,
    /// `clientConnection` with defaults.
    pub client_connection: ClientConnection,
    /// Things the user should know (defaults mini-scheduler cannot run, settings it accepts and
    /// does not use), each `file[:line:column]: message`.
    pub warnings: Vec<String>,
}

impl LoadedConfig {
    /// `parallelism`: the workers that filter and score (default 16; validated > 0).
    pub fn parallelism(&self) -> usize {
        self.config
            .parallelism
            .and_then(|p| usize::try_from(p).ok())
            .unwrap_or(crate::schedule_one::DEFAULT_PARALLELISM)
    }

    /// The profile for a pod's `spec.schedulerName`.
    pub fn profile(&self, scheduler_name: &str) -> Option<&ConfigProfile> {
        self.profiles
            .iter()
            .find(|p| p.scheduler_name == scheduler_name)
    }
}

/// Reads and loads a configuration file; `path` as given names it in messages.
///
/// # Errors
/// [`ConfigError::MissingFile`], [`ConfigError::ReadFile`], then what [`parse_config`] returns.
pub fn load_config_file(path: &Path) -> Result<LoadedConfig, ConfigError> {
    if !path.exists() {
        return Err(ConfigError::MissingFile {
            path: path.to_path_buf(),
        });
    }
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::ReadFile {
        path: path.to_path_buf(),
        source,
    })?;
    parse_config(&path.display().to_string(), &text)
}

/// Decodes, defaults, validates and resolves a configuration held in memory.
///
/// # Errors
/// [`ConfigError::Decode`] for the first decoding problem, [`ConfigError::Invalid`] with every
/// validation and profile error.
pub fn parse_config(source_name: &str, text: &str) -> Result<LoadedConfig, ConfigError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let src = Source::new(source_name, text);
    let deep = match src.format {
        Format::Json => crate::nesting::check_json(src.text),
        Format::Yaml => crate::nesting::check_yaml(src.text),
    };
    if let Err(at) = deep {
        return Err(ConfigError::Decode {
            location: src.at_line_col(at.line, at.column),
            message: crate::nesting::too_deep_message(),
        });
    }
    check_type(&src)?;
    let config: KubeSchedulerConfiguration = decode(&src)?;
    let version = ConfigVersion::from_api_version(&config.api_version).ok_or_else(|| {
        ConfigError::Decode {
            location: src.value(&FieldPath::root().key("apiVersion")),
            message: "unreachable: apiVersion checked".into(),
        }
    })?;
    version_fields(&src, &config, version)?;
    let mut v = Validator {
        src: &src,
        version,
        errors: Vec::new(),
        warnings: Vec::new(),
    };
    let loaded = v.validate(config);
    if !v.errors.is_empty() {
        return Err(ConfigError::Invalid { errors: v.errors });
    }
    let mut loaded = loaded;
    loaded.warnings = v.warnings;
    Ok(loaded)
}

struct Validator<'s, 'a> {
    src: &'s Source<'a>,
    version: ConfigVersion,
    errors: Vec<(Location, String)>,
    warnings: Vec<String>,
}

impl Validator<'_, '_> {
    fn error(&mut self, path: &FieldPath, message: impl Into<String>) {
        let message = message.into();
        let text = if path.0.is_empty() {
            message
        } else {
            format!("{path}: {message}")
        };
        self.errors.push((self.src.value(path), text));
    }

    fn warn(&mut self, path: &FieldPath, message: impl Into<String>) {
        self.warnings.push(format!(
            "{}: {path}: {}",
            self.src.value(path),
            message.into()
        ));
    }

    fn validate(&mut self, c: KubeSchedulerConfiguration) -> LoadedConfig {
        let root = FieldPath::root();
        let parallelism = c.parallelism.unwrap_or(16);
        if parallelism <= 0 {
            self.error(
                &root.clone().key("parallelism"),
                format!(
                    "Invalid value: {parallelism}: should be an integer value greater than zero"
                ),
            );
        }
        let pct = c.percentage_of_nodes_to_score.unwrap_or(0);
        if !(0..=100).contains(&pct) {
            self.error(
                &root.clone().key("percentageOfNodesToScore"),
                format!("Invalid value: {pct}: not in valid range [0-100]"),
            );
        }
        let initial = c.pod_initial_backoff_seconds.unwrap_or(1);
        let max = c.pod_max_backoff_seconds.unwrap_or(10);
        if initial <= 0 {
            self.error(
                &root.clone().key("podInitialBackoffSeconds"),
                format!("Invalid value: {initial}: must be greater than 0"),
            );
        }
        if max < initial {
            self.error(
                &root.clone().key("podMaxBackoffSeconds"),
                format!("Invalid value: {max}: must be greater than or equal to PodInitialBackoffSeconds"),
            );
        }
        for (field, value) in [
            ("healthzBindAddress", &c.healthz_bind_address),
            ("metricsBindAddress", &c.metrics_bind_address),
        ] {
            if let Some(a) = value.as_ref().filter(|a| !a.is_empty()) {
                if a.parse::<std::net::SocketAddr>().is_err() {
                    self.error(
                        &root.clone().key(field),
                        format!("Invalid value: {a:?}: must be a valid socket address (IP:port)"),
                    );
                } else {
                    self.warn(
                        &root.clone().key(field),
                        "accepted and not served: mini-scheduler serves /healthz and /metrics on --admin-address",
                    );
                }
            }
        }
        let leader_election = self.leader_election(&c);
        let client_connection = self.client_connection(&c);
        let extenders = self.extenders(&c);

        let mut profiles = Vec::new();
        if c.profiles.is_empty() {
            // Defaulting gives one default-scheduler profile when the list is absent.
            let p = KubeSchedulerProfile::default();
            if let Some(mut cp) = self.profile(&p, 0, 1, &extenders) {
                cp.scheduler_name = "default-scheduler".into();
                profiles.push(cp);
            }
        } else {
            let mut names: Vec<(String, usize)> = Vec::new();
            for (i, p) in c.profiles.iter().enumerate() {
                if let Some(cp) = self.profile(p, i, c.profiles.len(), &extenders) {
                    if let Some((_, j)) = names.iter().find(|(n, _)| *n == cp.scheduler_name) {
                        let path = root.clone().key("profiles").index(i).key("schedulerName");
                        self.error(
                            &path,
                            format!("Duplicate value: \"profiles[{j}].schedulerName\""),
                        );
                    }
                    names.push((cp.scheduler_name.clone(), i));
                    profiles.push(cp);
                }
            }
        }
        LoadedConfig {
            version: self.version,
            config: c,
            profiles,
            percentage_of_nodes_to_score: pct,
            pod_initial_backoff_seconds: initial,
            pod_max_backoff_seconds: max,
            leader_election,
            client_connection,
            warnings: Vec::new(),
        }
    }

    fn duration(&mut self, path: FieldPath, value: Option<&String>, default_ns: i64) -> i64 {
        let Some(text) = value else {
            return default_ns;
        };
        match parse_go_duration(text) {
            Ok(ns) => ns,
            Err(e) => {
                self.error(&path, format!("Invalid value: {text:?}: {e}"));
                default_ns
            }
        }
    }
}
