//! The scheduling profile: what a Policy turns into — the resolved policy under the process's
//! feature gates, the [`Framework`] built from its plugins, and its HTTP extenders — built in one
//! place, with one error type, for every user: `simulate`, `policy check`, `run` and the policy
//! hot reload.
//!
//! kube-scheduler v1.22 does the same in `pkg/scheduler/factory.go` (`createFromConfig`: the
//! Policy's predicates and priorities become a framework profile, its extenders are created
//! next to it) and fails start-up on any of the three steps. mini-scheduler has one profile,
//! named [`PROFILE_NAME`] in metric labels, whatever `--scheduler-name` is.
//!
//! ```
//! use scheduler::policy::FeatureGates;
//! use scheduler::profile::{PolicySource, Profile};
//!
//! let text = r#"{"kind":"Policy","apiVersion":"v1",
//!     "predicates":[{"name":"PodFitsResources"}],
//!     "priorities":[{"name":"LeastRequestedPriority","weight":1}]}"#;
//! let loaded =
//!     Profile::load(PolicySource::Text { name: "p.json", text }, &FeatureGates::default())?;
//! assert!(loaded.warnings().is_empty());
//! assert_eq!(loaded.profile.policy.scores[0].plugin, "NodeResourcesLeastAllocated");
//! assert!(loaded.profile.extenders.is_empty());
//! # Ok::<(), scheduler::profile::ProfileError>(())
//! ```

use std::path::Path;
use std::sync::Arc;

use crate::extender::{Extender, ExtenderConfigError, build_extenders};
use crate::framework::{Framework, FrameworkError};
use crate::policy::{self, FeatureGates, LoadedPolicy, PolicyError, ResolvedPolicy};

/// The profile's name in metric labels (`profile="mini-scheduler"`), as kube-scheduler labels
/// its metrics with the profile's scheduler name.
pub const PROFILE_NAME: &str = "mini-scheduler";

/// Where a policy comes from.
#[derive(Debug, Clone, Copy)]
pub enum PolicySource<'a> {
    /// A policy file (`--policy-config-file`, `simulate --policy`, `policy check FILE`); its path
    /// as given names it in messages.
    File(&'a Path),
    /// A policy held in memory (the bundled sample, a version the hot reload read), named
    /// `name` in messages.
    Text {
        /// Names the source in messages (`name:line:column: ...`).
        name: &'a str,
        /// The document, JSON or YAML.
        text: &'a str,
    },
    /// No policy: v1.22's DefaultProvider plugins this build implements
    /// ([`policy::default_provider`]).
    DefaultProvider,
}

impl PolicySource<'_> {
    /// How messages name this source.
    fn origin(&self) -> String {
        match self {
            PolicySource::File(p) => p.display().to_string(),
            PolicySource::Text { name, .. } => (*name).to_string(),
            PolicySource::DefaultProvider => "DefaultProvider".to_string(),
        }
    }
}

/// Why a policy does not make a profile. Every message names the policy's source first.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The policy cannot be read, decoded, validated or resolved (the message starts with
    /// `file:line:column:`).
    #[error(transparent)]
    Policy(Box<PolicyError>),
    /// Its plugins do not build into a framework (e.g. weights whose total could overflow).
    #[error("{origin}: {source}")]
    Framework {
        /// The policy's source.
        origin: String,
        /// What the framework refused.
        source: FrameworkError,
    },
    /// One of its extenders cannot be set up (URL, TLS material).
    #[error("{origin}: {source}")]
    Extender {
        /// The policy's source.
        origin: String,
        /// What was wrong with the extender.
        source: ExtenderConfigError,
    },
}

impl From<PolicyError> for ProfileError {
    fn from(e: PolicyError) -> Self {
        ProfileError::Policy(Box::new(e))
    }
}

/// A policy ready to schedule with: immutable, cheap to clone (the framework and the extenders
/// are shared).
#[derive(Clone)]
pub struct Profile {
    /// The resolved policy, feature gates applied (for logs, `policy check` and comparisons).
    pub policy: ResolvedPolicy,
    /// The filter and score plugins, with their arguments.
    pub framework: Arc<Framework>,
    /// The HTTP extenders, in the order kube-scheduler calls them ([`build_extenders`]).
    pub extenders: Vec<Arc<dyn Extender>>,
}

impl std::fmt::Debug for Profile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Profile")
            .field("policy", &self.policy)
            .field(
                "extenders",
                &self.extenders.iter().map(|e| e.name()).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

/// What [`Profile::load`] read and built.
#[derive(Debug, Clone)]
pub struct LoadedProfile {
    /// The profile.
    pub profile: Profile,
    /// The policy as loaded: the decoded document, its resolution under the gates (equal to
    /// `profile.policy`) and the loader's warnings; `None` for the DefaultProvider.
    pub policy: Option<LoadedPolicy>,
}

impl LoadedProfile {
    /// The loader's warnings (each `file[:line:column]: message`), for the caller to log. The
    /// DefaultProvider's remarks are in `profile.policy.notes`.
    pub fn warnings(&self) -> &[String] {
        self.policy.as_ref().map_or(&[], |l| &l.warnings)
    }
}

impl Profile {
    /// Read `source`, resolve it under `gates` and build it ([`Profile::build`]).
    ///
    /// # Errors
    /// [`ProfileError::Policy`] when the policy cannot be read, decoded or validated, then as
    /// [`Profile::build`].
    pub fn load(
        source: PolicySource<'_>,
        gates: &FeatureGates,
    ) -> Result<LoadedProfile, ProfileError> {
        let mut loaded = match source {
            PolicySource::File(path) => Some(policy::load_policy_file(path)?),
            PolicySource::Text { name, text } => Some(policy::parse_policy(name, text)?),
            PolicySource::DefaultProvider => None,
        };
        let resolved = match &loaded {
            Some(l) => l.resolved.clone(),
            None => policy::default_provider(),
        };
        let profile = Profile::build(resolved, gates, &source.origin())?;
        if let Some(l) = &mut loaded {
            l.resolved = profile.policy.clone();
        }
        Ok(LoadedProfile {
            profile,
            policy: loaded,
        })
    }

    /// Build a resolved policy: apply `gates` ([`ResolvedPolicy::with_feature_gates`]; a
    /// policy they were already applied to is unchanged), then [`Profile::from_resolved`].
    /// `origin` names the policy in messages.
    ///
    /// # Errors
    /// As [`Profile::from_resolved`].
    pub fn build(
        policy: ResolvedPolicy,
        gates: &FeatureGates,
        origin: &str,
    ) -> Result<Profile, ProfileError> {
        Profile::from_resolved(policy.with_feature_gates(gates), origin)
    }

    /// Build a resolved policy as it is (feature gates already applied, or deliberately not):
    /// the framework, then the extenders. `origin` names the policy in messages.
    ///
    /// # Errors
    /// [`ProfileError::Framework`] when the plugins do not build, [`ProfileError::Extender`]
    /// when an extender's URL or TLS settings cannot be used.
    pub fn from_resolved(policy: ResolvedPolicy, origin: &str) -> Result<Profile, ProfileError> {
        let framework =
            Framework::from_policy(&policy).map_err(|source| ProfileError::Framework {
                origin: origin.to_string(),
                source,
            })?;
        let extenders =
            build_extenders(&policy.extenders).map_err(|source| ProfileError::Extender {
                origin: origin.to_string(),
                source,
            })?;
        Ok(Profile {
            policy,
            framework: Arc::new(framework),
            extenders,
        })
    }

    /// The DefaultProvider profile under `gates` (kube-scheduler without `--policy-config-file`).
    ///
    /// # Errors
    /// As [`Profile::build`]; the DefaultProvider itself always builds.
    pub fn default_provider(gates: &FeatureGates) -> Result<Profile, ProfileError> {
        Profile::load(PolicySource::DefaultProvider, gates).map(|l| l.profile)
    }
}

/// One scheduling profile by name: pods whose `spec.schedulerName` is `scheduler_name` are
/// scheduled with `profile` (kube-scheduler's `profile.Map`), by `simulate` and in cluster mode.
#[derive(Debug, Clone)]
pub struct SchedulerProfile {
    /// The profile's scheduler name.
    pub scheduler_name: String,
    /// Its framework and extenders (from a Policy, or a configuration profile).
    pub profile: Profile,
    /// Its own `percentageOfNodesToScore` (v1 profiles), else the run's.
    pub percentage_of_nodes_to_score: Option<i32>,
}

impl SchedulerProfile {
    /// Every profile of a loaded `KubeSchedulerConfiguration`, in file order, each built like a
    /// Policy's (plugins, then the configuration's extenders). `origin` names the file.
    ///
    /// # Errors
    /// The first profile that does not build, as [`Profile::from_resolved`].
    pub fn from_config(
        config: &crate::config::LoadedConfig,
        origin: &str,
    ) -> Result<Vec<SchedulerProfile>, ProfileError> {
        config
            .profiles
            .iter()
            .map(|p| {
                Ok(SchedulerProfile {
                    scheduler_name: p.scheduler_name.clone(),
                    profile: Profile::from_resolved(p.resolved.clone(), origin)?,
                    percentage_of_nodes_to_score: p.percentage_of_nodes_to_score,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEAST: &str = r#"{"kind":"Policy","apiVersion":"v1",
        "predicates":[{"name":"PodFitsResources"}],
        "priorities":[{"name":"LeastRequestedPriority","weight":1}]}"#;

    fn text(text: &str) -> PolicySource<'_> {
        PolicySource::Text {
            name: "p.json",
            text,
        }
    }

    /// Every step fails with the source named first: decoding, the framework, the extenders.
    #[test]
    fn each_step_names_the_source() {
        let gates = FeatureGates::default();
        let e = Profile::load(text("{"), &gates).expect_err("syntax error");
        assert!(matches!(e, ProfileError::Policy(_)), "{e:?}");
        assert!(e.to_string().starts_with("p.json:1:"), "{e}");

        let overflow = r#"{"kind":"Policy","apiVersion":"v1","priorities":[
            {"name":"LeastRequestedPriority","weight":900000000000000000}]}"#;
        let e = Profile::load(text(overflow), &gates).expect_err("Σ weight × 100 overflows");
        assert!(matches!(e, ProfileError::Framework { .. }), "{e:?}");
        assert_eq!(
            e.to_string(),
            "p.json: total score of Score plugins could overflow"
        );

        let bad_tls = r#"{"kind":"Policy","apiVersion":"v1",
            "extenders":[{"urlPrefix":"https://127.0.0.1:1/ext","filterVerb":"filter","weight":1,
                          "tlsConfig":{"caFile":"/nonexistent/ca.pem"}}]}"#;
        let e = Profile::load(text(bad_tls), &gates).expect_err("unreadable CA file");
        assert!(matches!(e, ProfileError::Extender { .. }), "{e:?}");
        assert!(
            e.to_string().starts_with("p.json: policy extenders[0]"),
            "{e}"
        );
    }

    /// The gates are applied once, by the profile: DefaultPodTopologySpread (v1.22 default on)
    /// gives PodTopologySpread its system default constraints; off, the policy stays as
    /// resolved.
    #[test]
    fn gates_are_applied() {
        let spread = r#"{"kind":"Policy","apiVersion":"v1",
            "priorities":[{"name":"SelectorSpreadPriority","weight":1}]}"#;
        let on: FeatureGates = "DefaultPodTopologySpread=true".parse().expect("gates");
        let off: FeatureGates = "DefaultPodTopologySpread=false".parse().expect("gates");
        let p_on = Profile::load(text(spread), &on).expect("builds").profile;
        let p_off = Profile::load(text(spread), &off).expect("builds").profile;
        assert!(p_on.policy.args.pod_topology_spread.is_some());
        assert!(p_off.policy.args.pod_topology_spread.is_none());
        assert_ne!(p_on.policy, p_off.policy);
        // Building an already gated policy again changes nothing.
        let again = Profile::build(p_on.policy.clone(), &on, "again").expect("builds");
        assert_eq!(again.policy, p_on.policy);
    }

    #[test]
    fn default_provider_builds() {
        let p = Profile::default_provider(&FeatureGates::default()).expect("builds");
        assert!(!p.policy.filters.is_empty());
        assert!(p.extenders.is_empty());
        let q = Profile::load(text(LEAST), &FeatureGates::default()).expect("builds");
        assert!(q.warnings().is_empty());
        assert_eq!(q.profile.policy.filters.len(), 3);
        let loaded = q.policy.expect("a policy document");
        assert_eq!(loaded.resolved, q.profile.policy, "the gated resolution");
    }
}
