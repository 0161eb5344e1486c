//! `KubeSchedulerConfiguration`, the file kube-scheduler reads with `--config` and that replaced
//! the Policy when v1.23 removed it: wire types for `kubescheduler.config.k8s.io/v1beta2`
//! (read by kube-scheduler v1.22–v1.27), `v1beta3` (v1.23–v1.28) and `v1` (v1.25+), and the
//! conversion of a resolved Policy into one ([`convert_policy`]).
//!
//! Reference: kubernetes/kube-scheduler `config/{v1beta2,v1beta3,v1}/types.go` and
//! `types_pluginargs.go`; kubernetes/kubernetes `pkg/scheduler/apis/config/validation/
//! validation.go` (v1.22: `removedPluginsByVersion`), `pkg/scheduler/factory.go`
//! `createFromPolicy` and `pkg/scheduler/framework/plugins/legacy_registry.go` (v1.22).
//!
//! ```
//! use scheduler::config::{ConfigVersion, convert_policy};
//! let loaded = scheduler::policy::parse_policy(
//!     "policy.json",
//!     r#"{"kind":"Policy","apiVersion":"v1",
//!         "predicates":[{"name":"PodFitsResources"}],
//!         "priorities":[{"name":"LeastRequestedPriority","weight":2}]}"#,
//! )?;
//! let c = convert_policy(&loaded, "policy.json", ConfigVersion::V1beta2, "my-scheduler")?;
//! assert!(c.warnings.is_empty());
//! let yaml = c.to_yaml();
//! assert!(yaml.contains("apiVersion: kubescheduler.config.k8s.io/v1beta2"));
//! assert!(yaml.contains("type: LeastAllocated"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod convert;
mod duration;
mod types;

#[cfg(test)]
mod tests;

use std::fmt;
use std::str::FromStr;

pub use convert::{
    Conversion, ConvertError, REMOVED_PLUGINS, convert_policy, extender_from_policy,
};
pub use duration::{format_go_duration, parse_go_duration};
pub use types::{
    ClientConnectionConfiguration, Extender, ExtenderManagedResource, ExtenderTlsConfig,
    InterPodAffinityArgs, KUBE_SCHEDULER_CONFIGURATION_KIND, KubeSchedulerConfiguration,
    KubeSchedulerProfile, LeaderElectionConfiguration, NodeResourcesFitArgs, Plugin, PluginConfig,
    PluginSet, Plugins, PodTopologySpreadArgs, RequestedToCapacityRatioParam, ScoringStrategy,
};

/// The API group of `KubeSchedulerConfiguration`.
pub const GROUP: &str = "kubescheduler.config.k8s.io";

/// A `KubeSchedulerConfiguration` version, oldest first (the order compares releases).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ConfigVersion {
    /// `v1beta2`: kube-scheduler v1.22 (introduced) to v1.27 (removed in v1.28).
    V1beta2,
    /// `v1beta3`: v1.23 to v1.28 (removed in v1.29); default weights changed, `multiPoint`.
    V1beta3,
    /// `v1`: v1.25 and later.
    V1,
}

impl ConfigVersion {
    /// Every version, oldest first.
    pub const ALL: [ConfigVersion; 3] = [
        ConfigVersion::V1beta2,
        ConfigVersion::V1beta3,
        ConfigVersion::V1,
    ];

    /// The version alone: `v1beta2`, `v1beta3`, `v1`.
    pub fn name(self) -> &'static str {
        match self {
            ConfigVersion::V1beta2 => "v1beta2",
            ConfigVersion::V1beta3 => "v1beta3",
            ConfigVersion::V1 => "v1",
        }
    }

    /// The `apiVersion` value, e.g. `kubescheduler.config.k8s.io/v1beta2`.
    pub fn api_version(self) -> &'static str {
        match self {
            ConfigVersion::V1beta2 => "kubescheduler.config.k8s.io/v1beta2",
            ConfigVersion::V1beta3 => "kubescheduler.config.k8s.io/v1beta3",
            ConfigVersion::V1 => "kubescheduler.config.k8s.io/v1",
        }
    }

    /// The version of an `apiVersion` value, if it is one of these.
    pub fn from_api_version(api_version: &str) -> Option<ConfigVersion> {
        Self::ALL
            .into_iter()
            .find(|v| v.api_version() == api_version)
    }
}

impl fmt::Display for ConfigVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ConfigVersion {
    type Err = String;

    /// `v1beta2`, `v1beta3` or `v1`, or the full `apiVersion`.
    ///
    /// # Errors
    /// A message listing the versions when `s` is none of them.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|v| v.name() == s || v.api_version() == s)
            .ok_or_else(|| {
                format!(
                    "unknown KubeSchedulerConfiguration version {s:?} (want v1beta2, v1beta3 or v1)"
                )
            })
    }
}
