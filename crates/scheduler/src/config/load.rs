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
mod plugin_args;
mod plugins;

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

/// One enabled plugin at a point, with where the user wrote it (for messages).
#[derive(Debug, Clone)]
struct Enabled {
    plugin: Plugin,
    path: FieldPath,
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

    /// componentbase `ValidateLeaderElectionConfiguration` with kube-scheduler's defaults.
    fn leader_election(&mut self, c: &KubeSchedulerConfiguration) -> LeaderElection {
        let path = FieldPath::root().key("leaderElection");
        let le = c.leader_election.clone().unwrap_or_default();
        let l = LeaderElection {
            leader_elect: le.leader_elect.unwrap_or(true),
            lease_duration: self.duration(
                path.clone().key("leaseDuration"),
                le.lease_duration.as_ref(),
                15_000_000_000,
            ),
            renew_deadline: self.duration(
                path.clone().key("renewDeadline"),
                le.renew_deadline.as_ref(),
                10_000_000_000,
            ),
            retry_period: self.duration(
                path.clone().key("retryPeriod"),
                le.retry_period.as_ref(),
                2_000_000_000,
            ),
            resource_lock: le.resource_lock.clone().unwrap_or_else(|| "leases".into()),
            resource_name: le
                .resource_name
                .clone()
                .unwrap_or_else(|| "kube-scheduler".into()),
            resource_namespace: le
                .resource_namespace
                .clone()
                .unwrap_or_else(|| "kube-system".into()),
        };
        if l.leader_elect {
            if l.lease_duration <= 0 {
                self.error(
                    &path.clone().key("leaseDuration"),
                    format!(
                        "Invalid value: {:?}: must be greater than zero",
                        le.lease_duration.unwrap_or_default()
                    ),
                );
            }
            if l.renew_deadline <= 0 {
                self.error(
                    &path.clone().key("renewDeadline"),
                    format!(
                        "Invalid value: {:?}: must be greater than zero",
                        le.renew_deadline.unwrap_or_default()
                    ),
                );
            }
            if l.retry_period <= 0 {
                self.error(
                    &path.clone().key("retryPeriod"),
                    format!(
                        "Invalid value: {:?}: must be greater than zero",
                        le.retry_period.unwrap_or_default()
                    ),
                );
            }
            if l.lease_duration > 0 && l.renew_deadline > 0 && l.lease_duration <= l.renew_deadline
            {
                self.error(
                    &path.clone().key("leaseDuration"),
                    "Invalid value: LeaseDuration must be greater than RenewDeadline",
                );
            }
            if l.resource_lock != "leases" {
                self.error(
                    &path.clone().key("resourceLock"),
                    format!(
                        "Invalid value: {:?}: resourceLock value must be \"leases\"",
                        l.resource_lock
                    ),
                );
            }
            if l.resource_name.is_empty() {
                self.error(
                    &path.clone().key("resourceName"),
                    "Invalid value: \"\": resourceName is required",
                );
            }
            if l.resource_namespace.is_empty() {
                self.error(
                    &path.clone().key("resourceNamespace"),
                    "Invalid value: \"\": resourceNamespace is required",
                );
            }
        }
        l
    }

    fn client_connection(&mut self, c: &KubeSchedulerConfiguration) -> ClientConnection {
        let path = FieldPath::root().key("clientConnection");
        let cc = c.client_connection.clone().unwrap_or_default();
        let out = ClientConnection {
            kubeconfig: cc.kubeconfig.clone().unwrap_or_default(),
            qps: cc.qps.unwrap_or(50.0),
            burst: cc.burst.unwrap_or(100),
        };
        if out.burst < 0 {
            self.error(
                &path.clone().key("burst"),
                format!("Invalid value: {}: must be non-negative", out.burst),
            );
        }
        if !(out.qps.is_finite()) || out.qps < 0.0 {
            self.error(
                &path.key("qps"),
                format!("Invalid value: {}: must be non-negative", out.qps),
            );
        }
        out
    }

    /// `validateExtenders` and the conversion to the extender type the scheduler calls.
    fn extenders(&mut self, c: &KubeSchedulerConfiguration) -> Vec<LegacyExtender> {
        let path = FieldPath::root().key("extenders");
        let mut binders = 0;
        let mut managed: BTreeSet<String> = BTreeSet::new();
        let mut out = Vec::new();
        for (i, e) in c.extenders.iter().enumerate() {
            let p = path.clone().index(i);
            if !e.prioritize_verb.is_empty() && e.weight <= 0 {
                self.error(
                    &p.clone().key("weight"),
                    format!(
                        "Invalid value: {}: must have a positive weight applied to it",
                        e.weight
                    ),
                );
            }
            if !e.bind_verb.is_empty() {
                binders += 1;
            }
            for (j, r) in e.managed_resources.iter().enumerate() {
                let rp = p.clone().key("managedResources").index(j).key("name");
                if !is_extended_resource_name(&r.name) {
                    self.error(
                        &rp,
                        format!(
                            "Invalid value: {:?}: must be a fully-qualified extended resource name \
                             (a domain outside kubernetes.io, e.g. example.com/foo)",
                            r.name
                        ),
                    );
                }
                if !managed.insert(r.name.clone()) {
                    self.error(
                        &rp,
                        format!(
                            "Invalid value: {:?}: duplicate extender managed resource name",
                            r.name
                        ),
                    );
                }
            }
            let http_timeout = match &e.http_timeout {
                None => 0,
                Some(t) => self.duration(p.clone().key("httpTimeout"), Some(t), 0),
            };
            out.push(LegacyExtender {
                url_prefix: e.url_prefix.clone(),
                filter_verb: e.filter_verb.clone(),
                preempt_verb: e.preempt_verb.clone(),
                prioritize_verb: e.prioritize_verb.clone(),
                weight: e.weight,
                bind_verb: e.bind_verb.clone(),
                enable_https: e.enable_https,
                tls_config: e.tls_config.as_ref().map(|t| ExtenderTlsConfig {
                    insecure: t.insecure,
                    server_name: t.server_name.clone(),
                    cert_file: t.cert_file.clone(),
                    key_file: t.key_file.clone(),
                    ca_file: t.ca_file.clone(),
                    cert_data: t.cert_data.clone(),
                    key_data: t.key_data.clone(),
                    ca_data: t.ca_data.clone(),
                }),
                http_timeout,
                node_cache_capable: e.node_cache_capable,
                managed_resources: e
                    .managed_resources
                    .iter()
                    .map(|r| ExtenderManagedResource {
                        name: r.name.clone(),
                        ignored_by_scheduler: r.ignored_by_scheduler,
                    })
                    .collect(),
                ignorable: e.ignorable,
            });
        }
        if binders > 1 {
            self.error(
                &path,
                format!("Invalid value: \"found {binders} extenders implementing bind\": only one extender can implement bind"),
            );
        }
        out
    }

    /// One profile: name, merged plugins, checks, arguments.
    fn profile(
        &mut self,
        p: &KubeSchedulerProfile,
        i: usize,
        count: usize,
        extenders: &[LegacyExtender],
    ) -> Option<ConfigProfile> {
        let pp = FieldPath::root().key("profiles").index(i);
        let errors_before = self.errors.len();
        let scheduler_name = match p.scheduler_name.as_deref() {
            Some(n) if !n.is_empty() => n.to_string(),
            _ if count == 1 => "default-scheduler".to_string(),
            _ => {
                self.error(&pp.clone().key("schedulerName"), "Required value");
                String::new()
            }
        };
        let profile_pct = p.percentage_of_nodes_to_score;
        if let Some(v) = profile_pct.filter(|v| !(0..=100).contains(v)) {
            self.error(
                &pp.clone().key("percentageOfNodesToScore"),
                format!("Invalid value: {v}: not in valid range [0-100]"),
            );
        }
        let plugins_path = pp.clone().key("plugins");
        let empty = Plugins::default();
        let plugins = p.plugins.as_ref().unwrap_or(&empty);
        let sets = self.expand(plugins, &plugins_path);

        // Names: known, not removed, implemented.
        let mut ok = true;
        for (point, list) in &sets {
            for e in list {
                if !self.check_name(&e.plugin.name, *point, &e.path) {
                    ok = false;
                }
            }
        }
        if !ok {
            return None;
        }
        let at = |point: Point| -> Vec<&Enabled> {
            sets.iter()
                .filter(|(p, _)| *p == point)
                .flat_map(|(_, l)| l.iter())
                .collect()
        };
        let names_at = |point: Point| -> Vec<&str> {
            at(point).iter().map(|e| e.plugin.name.as_str()).collect()
        };
        let point_path = |point: Point| plugins_path.clone().key(point.key());

        // Fixed points.
        let qs = names_at(QueueSort);
        if qs != ["PrioritySort"] {
            self.error(
                &point_path(QueueSort),
                format!(
                    "only one queue sort plugin required for profile with scheduler name {scheduler_name:?}, \
                     but got {} ({}); mini-scheduler sorts with PrioritySort",
                    qs.len(),
                    qs.join(", ")
                ),
            );
        }
        let bind = names_at(Bind);
        if bind.is_empty() && !extenders.iter().any(|e| !e.bind_verb.is_empty()) {
            self.error(
                &point_path(Bind),
                format!("at least one bind plugin is needed for profile with scheduler name {scheduler_name:?}"),
            );
        }

        // Paired points.
        let filters = names_at(Filter);
        let pre_filters = names_at(PreFilter);
        for e in at(PreFilter) {
            if !filters.contains(&e.plugin.name.as_str()) {
                self.error(
                    &e.path,
                    format!(
                        "{} runs at preFilter but not at filter: mini-scheduler runs a plugin's PreFilter \
                         together with its Filter; enable it at both",
                        e.plugin.name
                    ),
                );
            }
        }
        for e in at(Filter) {
            if PRE_FILTER_PLUGINS.contains(&e.plugin.name.as_str())
                && !pre_filters.contains(&e.plugin.name.as_str())
            {
                self.error(
                    &e.path,
                    format!(
                        "{} runs at filter but not at preFilter: its Filter needs its PreFilter's state \
                         (kube-scheduler fails every pod with it); enable it at both",
                        e.plugin.name
                    ),
                );
            }
        }
        let scores = names_at(Score);
        let pre_scores = names_at(PreScore);
        for e in at(PreScore) {
            if !scores.contains(&e.plugin.name.as_str()) {
                self.error(
                    &e.path,
                    format!(
                        "{} runs at preScore but not at score: mini-scheduler runs a plugin's PreScore \
                         together with its Score; enable it at both",
                        e.plugin.name
                    ),
                );
            }
        }
        for e in at(Score) {
            if PRE_SCORE_PLUGINS.contains(&e.plugin.name.as_str())
                && !pre_scores.contains(&e.plugin.name.as_str())
            {
                self.error(
                    &e.path,
                    format!(
                        "{} runs at score but not at preScore: its Score needs its PreScore's state \
                         (kube-scheduler fails every pod with it); enable it at both",
                        e.plugin.name
                    ),
                );
            }
        }
        let vb: Vec<bool> = [PreFilter, Filter, Reserve, PreBind]
            .iter()
            .map(|pt| names_at(*pt).contains(&"VolumeBinding"))
            .collect();
        if vb.iter().any(|b| *b) && !vb.iter().all(|b| *b) {
            self.error(
                &plugins_path,
                "VolumeBinding must run at preFilter, filter, reserve and preBind together \
                 (mini-scheduler binds a pod's volumes with the plugin that checked them)",
            );
        }
        let mut seen: Vec<(Point, &str)> = Vec::new();
        for (point, list) in &sets {
            for e in list {
                if seen.contains(&(*point, e.plugin.name.as_str())) {
                    self.error(
                        &e.path,
                        format!(
                            "plugin {:?} already registered as {:?}",
                            e.plugin.name, e.plugin.name
                        ),
                    );
                }
                seen.push((*point, e.plugin.name.as_str()));
            }
        }

        // Arguments.
        let mut args = self.plugin_args(p, &pp)?;

        // Scores.
        let mut resolved_scores = Vec::new();
        let mut total: i64 = 0;
        for e in at(Score) {
            let weight = match e.plugin.weight {
                None | Some(0) => 1,
                Some(w) if w < 0 => {
                    self.error(
                        &e.path.clone().key("weight"),
                        format!("Invalid value: {w}: a score weight must be positive"),
                    );
                    1
                }
                Some(w) => i64::from(w),
            };
            total = total.saturating_add(weight.saturating_mul(crate::framework::MAX_NODE_SCORE));
            let (plugin, shown): (&'static str, Vec<String>) =
                if e.plugin.name == "NodeResourcesFit" {
                    let internal = match args.fit_strategy.as_str() {
                        "MostAllocated" => "NodeResourcesMostAllocated",
                        "RequestedToCapacityRatio" => "RequestedToCapacityRatio",
                        _ => "NodeResourcesLeastAllocated",
                    };
                    (internal, vec!["NodeResourcesFit".to_string()])
                } else {
                    match static_name(&e.plugin.name) {
                        Some(n) => (n, Vec::new()),
                        None => continue,
                    }
                };
            resolved_scores.push(ResolvedScore {
                plugin,
                weight,
                legacy_names: shown,
            });
        }
        if total == i64::MAX {
            self.error(
                &point_path(Score),
                "total score of Score plugins could overflow",
            );
        }
        if !resolved_scores
            .iter()
            .any(|s| s.plugin == "RequestedToCapacityRatio")
        {
            args.plugin_args.requested_to_capacity_ratio = None;
        }
        let resolved_filters = at(Filter)
            .iter()
            .filter_map(|e| static_name(&e.plugin.name))
            .map(|plugin| ResolvedFilter {
                plugin,
                legacy_names: Vec::new(),
            })
            .collect();
        if self.errors.len() > errors_before {
            return None;
        }
        if !names_at(PostFilter).contains(&"DefaultPreemption") {
            let mut a = args.plugin_args.default_preemption.unwrap_or_default();
            a.enabled = false;
            args.plugin_args.default_preemption = Some(a);
        }
        let hard = args.plugin_args.inter_pod_affinity.hard_pod_affinity_weight;
        Some(ConfigProfile {
            scheduler_name,
            percentage_of_nodes_to_score: profile_pct,
            resolved: ResolvedPolicy {
                filters: resolved_filters,
                scores: resolved_scores,
                args: args.plugin_args,
                extenders: extenders.to_vec(),
                always_check_all_predicates: false,
                hard_pod_affinity_symmetric_weight: hard,
                notes: Vec::new(),
            },
        })
    }

    /// The enabled plugins per point: v1beta2 defaults merged per point; v1beta3 / v1
    /// `multiPoint` expanded (`expandMultiPointPlugins`): per point, plugins also listed
    /// explicitly first (explicit settings win), then multiPoint-only plugins, then the other
    /// explicit ones.
    fn expand(&mut self, plugins: &Plugins, path: &FieldPath) -> Vec<(Point, Vec<Enabled>)> {
        let with_paths = |point_key: &str, list: Vec<Plugin>, custom: Option<&PluginSet>| {
            list.into_iter()
                .map(|plugin| {
                    let idx =
                        custom.and_then(|c| c.enabled.iter().position(|e| e.name == plugin.name));
                    let p = match idx {
                        Some(j) => path.clone().key(point_key).key("enabled").index(j),
                        None => path.clone().key(point_key),
                    };
                    Enabled { plugin, path: p }
                })
                .collect::<Vec<_>>()
        };
        let mut out = Vec::new();
        if self.version == ConfigVersion::V1beta2 {
            for point in POINTS {
                let custom = point.set(plugins);
                let merged = merge(v1beta2_defaults(point), custom);
                out.push((point, with_paths(point.key(), merged, custom)));
            }
            return out;
        }
        let mp_custom = plugins.multi_point.as_ref();
        let gates_kept = !mp_custom.is_some_and(|c| {
            c.disabled
                .iter()
                .any(|d| d.name == "*" || d.name == "SchedulingGates")
        });
        if self.version == ConfigVersion::V1 && gates_kept {
            self.warn(
                &path.clone().key("multiPoint"),
                "kube-scheduler's v1 default SchedulingGates (PreEnqueue) is not implemented by \
                 mini-scheduler: pods with spec.schedulingGates are scheduled anyway; disable it \
                 in multiPoint to silence this",
            );
        }
        let multi = merge(multi_point_defaults(self.version), mp_custom);
        let mut mp_seen: Vec<&str> = Vec::new();
        for p in &multi {
            if mp_seen.contains(&p.name.as_str()) {
                let at = mp_custom
                    .and_then(|c| c.enabled.iter().position(|e| e.name == p.name))
                    .map_or(path.clone().key("multiPoint"), |k| {
                        path.clone().key("multiPoint").key("enabled").index(k)
                    });
                self.error(
                    &at,
                    format!("plugin {:?} already registered as {:?}", p.name, p.name),
                );
            }
            mp_seen.push(p.name.as_str());
        }
        for point in POINTS {
            let custom = point.set(plugins);
            let explicit = custom.map(|c| c.enabled.clone()).unwrap_or_default();
            let disabled_all = custom.is_some_and(|c| c.disabled.iter().any(|d| d.name == "*"));
            let mut overrides = Vec::new();
            let mut multi_only = Vec::new();
            if !disabled_all {
                for m in &multi {
                    if !implements(&m.name, point) && static_name(&m.name).is_some() {
                        continue;
                    }
                    if static_name(&m.name).is_none() {
                        // Unknown multiPoint names are reported once, at Filter.
                        if point == Filter {
                            let at = mp_custom
                                .and_then(|c| c.enabled.iter().position(|e| e.name == m.name))
                                .map_or(path.clone().key("multiPoint"), |k| {
                                    path.clone().key("multiPoint").key("enabled").index(k)
                                });
                            multi_only.push(Enabled {
                                plugin: m.clone(),
                                path: at,
                            });
                        }
                        continue;
                    }
                    if custom.is_some_and(|c| c.disabled.iter().any(|d| d.name == m.name)) {
                        continue;
                    }
                    if explicit.iter().any(|e| e.name == m.name) {
                        overrides.push(m.name.clone());
                        continue;
                    }
                    let k = mp_custom.and_then(|c| c.enabled.iter().position(|e| e.name == m.name));
                    let p = match k {
                        Some(k) => path.clone().key("multiPoint").key("enabled").index(k),
                        None => path.clone().key("multiPoint"),
                    };
                    let mut plugin = m.clone();
                    if point != Score {
                        plugin.weight = None;
                    }
                    multi_only.push(Enabled { plugin, path: p });
                }
            }
            let explicit_enabled = with_paths(point.key(), explicit, custom);
            let mut list: Vec<Enabled> = explicit_enabled
                .iter()
                .filter(|e| overrides.contains(&e.plugin.name))
                .cloned()
                .collect();
            list.extend(multi_only);
            list.extend(
                explicit_enabled
                    .into_iter()
                    .filter(|e| !overrides.contains(&e.plugin.name)),
            );
            out.push((point, list));
        }
        out
    }

    /// Whether `name` may run at `point`; reports why not.
    fn check_name(&mut self, name: &str, point: Point, path: &FieldPath) -> bool {
        let v = self.version;
        if let Some((_, since, advice)) = removed_in(name, v) {
            self.error(
                path,
                format!(
                    "Invalid value: {name:?}: was removed in version \"{}\" (KubeSchedulerConfiguration is version \"{}\"); {advice}",
                    since.api_version(),
                    v.api_version()
                ),
            );
            return false;
        }
        if let Some((_, kind)) = RESOURCE_SCORERS.iter().find(|(n, _)| *n == name) {
            self.error(
                path,
                format!(
                    "Invalid value: {name:?}: was removed in version \"{}\" (KubeSchedulerConfiguration is version \"{}\"); \
                     use NodeResourcesFit with pluginConfig scoringStrategy.type {kind}",
                    ConfigVersion::V1beta2.api_version(),
                    v.api_version()
                ),
            );
            return false;
        }
        if NOT_IMPLEMENTED.contains(&name) {
            self.error(
                path,
                format!("plugin {name:?} is not supported yet by mini-scheduler"),
            );
            return false;
        }
        if static_name(name).is_none() {
            let suggestion = nearest(name, PLUGINS.iter().map(|(n, _)| *n))
                .map(|s| format!("did you mean {s:?}? "))
                .unwrap_or_default();
            let known: Vec<&str> = PLUGINS
                .iter()
                .filter(|(n, _)| removed_in(n, v).is_none())
                .map(|(n, _)| *n)
                .collect();
            self.error(
                path,
                format!(
                    "plugin {name:?} does not exist; {suggestion}mini-scheduler implements: {}",
                    known.join(", ")
                ),
            );
            return false;
        }
        if !implements(name, point) {
            self.error(
                path,
                format!("plugin {name:?} does not extend {} plugin", point.key()),
            );
            return false;
        }
        true
    }
}
