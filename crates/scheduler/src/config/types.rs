//! Wire types of `KubeSchedulerConfiguration` (group `kubescheduler.config.k8s.io`, versions
//! `v1beta2`, `v1beta3`, `v1`), as far as mini-scheduler writes and reads them.
//!
//! Upstream: kubernetes/kube-scheduler `config/v1beta2/types.go` (tag v0.22.0),
//! `config/v1beta3/types.go` (v0.23.0) and `config/v1/types.go` (v0.25.0 and later), with the
//! `pluginConfig` argument types of `types_pluginargs.go` in the same directories. The three
//! versions share one shape here; what one version lacks (`multiPoint` before v1beta3,
//! `healthzBindAddress` after v1beta2, a profile's `percentageOfNodesToScore` before v1) is
//! refused for that version when a file is read ([`super::ConfigVersion`]).
//!
//! Keys are camelCase and case-sensitive; unknown keys are errors (kube-scheduler decodes its
//! configuration with a strict codec). `Option` fields are left out when written.

use serde::{Deserialize, Serialize};

/// `kind` of every configuration document.
pub const KUBE_SCHEDULER_CONFIGURATION_KIND: &str = "KubeSchedulerConfiguration";

/// A `KubeSchedulerConfiguration` document.
///
/// Defaults (applied by [`super::load`] when the field is absent, as kube-scheduler's
/// `SetDefaults_KubeSchedulerConfiguration` does): `percentageOfNodesToScore` 0 (adaptive),
/// `podInitialBackoffSeconds` 1, `podMaxBackoffSeconds` 10, `leaderElection` see
/// [`LeaderElectionConfiguration`], `clientConnection` qps 50 / burst 100.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KubeSchedulerConfiguration {
    /// `kubescheduler.config.k8s.io/v1beta2`, `.../v1beta3` or `.../v1`.
    #[serde(default)]
    pub api_version: String,
    /// Always `KubeSchedulerConfiguration`.
    #[serde(default)]
    pub kind: String,
    /// Workers that filter and score the nodes of a cycle (default 16, > 0); at most the
    /// machine's cores run at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallelism: Option<i32>,
    /// Leader election settings; command-line flags given explicitly override them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader_election: Option<LeaderElectionConfiguration>,
    /// API client settings (kubeconfig, qps, burst).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_connection: Option<ClientConnectionConfiguration>,
    /// v1beta2 only: the insecure healthz address (accepted and checked, not served).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub healthz_bind_address: Option<String>,
    /// v1beta2 only: the insecure metrics address (accepted and checked, not served).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics_bind_address: Option<String>,
    /// Profiling endpoints (accepted, not served by mini-scheduler).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_profiling: Option<bool>,
    /// Lock contention profiling (accepted, not served by mini-scheduler).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_contention_profiling: Option<bool>,
    /// Percent of nodes to find feasible before scoring, 0..=100; 0 = adaptive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percentage_of_nodes_to_score: Option<i32>,
    /// Backoff of an unschedulable pod's first retry, seconds (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_initial_backoff_seconds: Option<i64>,
    /// Longest backoff, seconds (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_max_backoff_seconds: Option<i64>,
    /// One profile per scheduler name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub profiles: Vec<KubeSchedulerProfile>,
    /// HTTP extenders, shared by every profile.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extenders: Vec<Extender>,
    /// v1 (1.28+) only: wait for leadership before filling the cache (accepted, no effect).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_cache_until_active: Option<bool>,
}

/// `componentbaseconfig.LeaderElectionConfiguration` as kube-scheduler embeds it.
///
/// Defaults: `leaderElect` true, `leaseDuration` 15s, `renewDeadline` 10s, `retryPeriod` 2s,
/// `resourceLock` `leases`, `resourceName` `kube-scheduler`, `resourceNamespace`
/// `kube-system`. Durations are Go duration strings (`15s`, `1m30s`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LeaderElectionConfiguration {
    /// Whether to run leader election.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader_elect: Option<bool>,
    /// How long a follower waits after the last observed renewal before taking over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_duration: Option<String>,
    /// How long the leader retries renewing before it gives up leading.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renew_deadline: Option<String>,
    /// Wait between acquire/renew attempts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_period: Option<String>,
    /// Lock type; only `leases` is supported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_lock: Option<String>,
    /// Lease name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_name: Option<String>,
    /// Lease namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_namespace: Option<String>,
}

/// `componentbaseconfig.ClientConnectionConfiguration`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClientConnectionConfiguration {
    /// Path to a kubeconfig; empty = in-cluster configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubeconfig: Option<String>,
    /// Accept header of API requests (accepted; mini-scheduler's client speaks JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept_content_types: Option<String>,
    /// Content type of request bodies (accepted; mini-scheduler's client speaks JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// Client-side rate limit, requests per second (default 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qps: Option<f32>,
    /// Burst above `qps` (default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<i32>,
}

/// One scheduling profile: a scheduler name and its plugins.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KubeSchedulerProfile {
    /// Pods whose `spec.schedulerName` is this are scheduled with this profile; defaulted to
    /// `default-scheduler` only when the file has exactly one profile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler_name: Option<String>,
    /// v1 (1.26+) only: overrides the global `percentageOfNodesToScore` for this profile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percentage_of_nodes_to_score: Option<i32>,
    /// Plugins enabled and disabled per extension point, merged with the version's defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugins: Option<Plugins>,
    /// Arguments of plugins, by plugin name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plugin_config: Vec<PluginConfig>,
}

/// The plugin sets of a profile, one per extension point.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Plugins {
    /// v1beta3 and v1: plugins enabled at every extension point they implement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multi_point: Option<PluginSet>,
    /// v1 (1.26+): PreEnqueue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_enqueue: Option<PluginSet>,
    /// QueueSort.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_sort: Option<PluginSet>,
    /// PreFilter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_filter: Option<PluginSet>,
    /// Filter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<PluginSet>,
    /// PostFilter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_filter: Option<PluginSet>,
    /// PreScore.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_score: Option<PluginSet>,
    /// Score (weights matter here only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<PluginSet>,
    /// Reserve.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserve: Option<PluginSet>,
    /// Permit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permit: Option<PluginSet>,
    /// PreBind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_bind: Option<PluginSet>,
    /// Bind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bind: Option<PluginSet>,
    /// PostBind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_bind: Option<PluginSet>,
}

/// Plugins enabled and disabled at one extension point. `disabled: [{name: "*"}]` drops every
/// default plugin of the point.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PluginSet {
    /// Enabled, in order (after the defaults that remain).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub enabled: Vec<Plugin>,
    /// Disabled defaults.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disabled: Vec<Plugin>,
}

/// A plugin reference, with its weight at the score point (0 or absent = 1).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Plugin {
    /// Plugin name, e.g. `NodeResourcesFit`, or `*` in a disabled list.
    pub name: String,
    /// Score weight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<i32>,
}

impl Plugin {
    /// A plugin without a weight.
    pub fn named(name: &str) -> Plugin {
        Plugin {
            name: name.to_string(),
            weight: None,
        }
    }
}

/// Arguments of one plugin: `args` is `<name>Args` of the file's version, kept as a YAML value
/// (keys in document order) until the plugin's type reads it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PluginConfig {
    /// Plugin name.
    pub name: String,
    /// The arguments object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<serde_yaml::Value>,
}

/// An HTTP extender in a configuration (`Extender` of v1beta2/v1beta3/v1). Differs from the
/// Policy's [`crate::policy::LegacyExtender`] in spelling (`enableHTTPS`), in `httpTimeout` (a Go
/// duration string, e.g. `"30s"`, not nanoseconds) and in being decoded case-sensitively.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Extender {
    /// Base URL of the extender.
    #[serde(default)]
    pub url_prefix: String,
    /// Verb of the filter call; empty = the extender does not filter.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub filter_verb: String,
    /// Verb of the preempt call.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub preempt_verb: String,
    /// Verb of the prioritize call; empty = the extender does not score.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub prioritize_verb: String,
    /// Multiplier of the extender's 0..=10 scores; > 0 when `prioritizeVerb` is set.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub weight: i64,
    /// Verb of the bind call; at most one extender binds.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub bind_verb: String,
    /// Use HTTPS.
    #[serde(default, rename = "enableHTTPS", skip_serializing_if = "is_false")]
    pub enable_https: bool,
    /// TLS client settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_config: Option<ExtenderTlsConfig>,
    /// Timeout of one call as a Go duration (`"5s"`); absent or zero = 5s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_timeout: Option<String>,
    /// The extender caches nodes: only node names are sent.
    #[serde(default, skip_serializing_if = "is_false")]
    pub node_cache_capable: bool,
    /// Extended resources the extender manages.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub managed_resources: Vec<ExtenderManagedResource>,
    /// Failures of this extender do not fail scheduling.
    #[serde(default, skip_serializing_if = "is_false")]
    pub ignorable: bool,
}

/// TLS settings of an extender (`*Data` fields are base64 text, as in JSON).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExtenderTlsConfig {
    /// Skip server certificate verification.
    #[serde(default, skip_serializing_if = "is_false")]
    pub insecure: bool,
    /// Server name for SNI and verification.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub server_name: String,
    /// Client certificate file.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cert_file: String,
    /// Client key file.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key_file: String,
    /// CA bundle file.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ca_file: String,
    /// Client certificate, base64 PEM.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cert_data: String,
    /// Client key, base64 PEM.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key_data: String,
    /// CA bundle, base64 PEM.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ca_data: String,
}

/// An extended resource an extender manages.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExtenderManagedResource {
    /// Extended resource name, e.g. `example.com/foo`.
    #[serde(default)]
    pub name: String,
    /// NodeResourcesFit does not account for this resource.
    #[serde(default, skip_serializing_if = "is_false")]
    pub ignored_by_scheduler: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(v: &i64) -> bool {
    *v == 0
}

/// `NodeResourcesFitArgs` (v1beta2+): resources the filter ignores and how the score plugin
/// ranks nodes.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeResourcesFitArgs {
    /// Extended resources the filter does not check.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignored_resources: Vec<String>,
    /// Extended resource groups (`example.com` for `example.com/*`) the filter does not check.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignored_resource_groups: Vec<String>,
    /// How the score plugin ranks nodes (default `LeastAllocated` over cpu:1, memory:1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scoring_strategy: Option<ScoringStrategy>,
}

/// `ScoringStrategy` of `NodeResourcesFitArgs`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScoringStrategy {
    /// `LeastAllocated`, `MostAllocated` or `RequestedToCapacityRatio`.
    #[serde(default, rename = "type")]
    pub type_: String,
    /// Resources and weights (each in 1..=100); empty = cpu:1, memory:1.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<crate::policy::ResourceSpec>,
    /// The shape, for `RequestedToCapacityRatio`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_to_capacity_ratio: Option<RequestedToCapacityRatioParam>,
}

/// `RequestedToCapacityRatioParam`: shape points (utilization 0..=100, score 0..=10).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RequestedToCapacityRatioParam {
    /// Points of the piecewise-linear function.
    #[serde(default)]
    pub shape: Vec<crate::policy::UtilizationShapePoint>,
}

/// `InterPodAffinityArgs`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InterPodAffinityArgs {
    /// Weight (0..=100) of the preferred term mirrored from an existing pod's required affinity
    /// term (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hard_pod_affinity_weight: Option<i32>,
}

/// `PodTopologySpreadArgs`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodTopologySpreadArgs {
    /// Cluster-level default constraints (with `defaultingType: List`); mini-scheduler accepts
    /// only none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub default_constraints: Vec<serde_yaml::Value>,
    /// `System` (default) or `List`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defaulting_type: Option<String>,
}
