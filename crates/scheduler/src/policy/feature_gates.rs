//! kube-scheduler's `--feature-gates` as far as they change what a Policy resolves to.
//!
//! One gate does: `DefaultPodTopologySpread` (beta and **on** by default in v1.20–v1.22, GA in
//! v1.24). With it on, v1.22's legacy registry
//! (`pkg/scheduler/framework/plugins/legacy_registry.go`, v1.20–v1.22) translates
//! `SelectorSpreadPriority` / `ServiceSpreadingPriority` into the `PodTopologySpread` score with
//! `defaultingType: System` instead of the `SelectorSpread` plugin, and `EvenPodsSpreadPriority`
//! configures `defaultingType: List` unless the former already set `System`; the default profile
//! (no policy file) drops `SelectorSpread` (`applyFeatureGates` in
//! `pkg/scheduler/apis/config/v1beta2/default_plugins.go`) and its `PodTopologySpread` defaults to
//! `System` (`SetDefaults_PodTopologySpreadArgs`). Resolution itself produces the gate-off
//! translation; [`ResolvedPolicy::with_feature_gates`] turns it into the gate-on one, which is
//! what every caller that schedules applies.
//!
//! Parsing follows `k8s.io/component-base/featuregate` (`featureGate.Set` / `SetFromMap`):
//! `Name=bool` pairs separated by commas, Go's `strconv.ParseBool` spellings, every value checked
//! before any name, the last of duplicate names winning, `AllAlpha` / `AllBeta` setting the alpha
//! / beta gates not named explicitly (`DefaultPodTopologySpread` is beta in v1.22), and
//! component-base's error texts (the unrecognized-gate one adds the gates mini-scheduler
//! knows). Other v1.22 gates are refused as unrecognized: none of them changes a Policy's
//! translation, and accepting them silently would suggest they do something here.

use std::fmt;
use std::str::FromStr;

use super::args::{DefaultingType, PodTopologySpreadArgs};
use super::resolved::ResolvedPolicy;

/// The gate's name, as kube-scheduler spells it.
pub const DEFAULT_POD_TOPOLOGY_SPREAD: &str = "DefaultPodTopologySpread";
/// component-base's pseudo-gate for every alpha gate (none of mini-scheduler's).
const ALL_ALPHA: &str = "AllAlpha";
/// component-base's pseudo-gate for every beta gate not named explicitly.
const ALL_BETA: &str = "AllBeta";

/// The feature gates mini-scheduler knows, with kube-scheduler v1.22's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeatureGates {
    /// `DefaultPodTopologySpread` (v1.22 default: `true`): spreading by Service / RC / RS /
    /// StatefulSet is done by `PodTopologySpread`'s system default constraints (hostname maxSkew
    /// 3, zone maxSkew 5, `ScheduleAnyway`) rather than by the `SelectorSpread` plugin.
    pub default_pod_topology_spread: bool,
}

impl Default for FeatureGates {
    fn default() -> Self {
        FeatureGates {
            default_pod_topology_spread: true,
        }
    }
}

/// A `--feature-gates` value that does not parse; the texts are component-base's (the
/// unrecognized-gate one also names the gates mini-scheduler knows).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FeatureGateError {
    /// `Name` without `=value`.
    #[error("missing bool value for {0}")]
    MissingValue(String),
    /// A value `strconv.ParseBool` refuses.
    #[error(
        "invalid value of {name}={value}, err: strconv.ParseBool: parsing {value:?}: invalid syntax"
    )]
    InvalidValue {
        /// The gate.
        name: String,
        /// The value as written.
        value: String,
    },
    /// A gate mini-scheduler does not know.
    #[error(
        "unrecognized feature gate: {0} (mini-scheduler knows: {DEFAULT_POD_TOPOLOGY_SPREAD}, {ALL_ALPHA}, {ALL_BETA})"
    )]
    Unrecognized(String),
}

/// Go's `strconv.ParseBool`.
fn parse_go_bool(v: &str) -> Option<bool> {
    match v {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

impl FromStr for FeatureGates {
    type Err = FeatureGateError;

    /// `Name=bool[,Name=bool...]` over v1.22's defaults; empty items are skipped and names and
    /// values are trimmed, as `featureGate.Set` does.
    ///
    /// # Errors
    /// [`FeatureGateError`] for a pair without `=`, a value that is not a Go bool, or an unknown
    /// gate.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        // `Set`: every pair parsed into a map (the last duplicate wins) before `SetFromMap`
        // looks at the names.
        let mut pairs: Vec<(String, bool)> = Vec::new();
        for item in s.split(',').filter(|i| !i.is_empty()) {
            let mut kv = item.splitn(2, '=');
            let name = kv.next().unwrap_or_default().trim().to_string();
            let Some(value) = kv.next().map(str::trim) else {
                return Err(FeatureGateError::MissingValue(name));
            };
            let Some(on) = parse_go_bool(value) else {
                return Err(FeatureGateError::InvalidValue {
                    name,
                    value: value.to_string(),
                });
            };
            pairs.retain(|(n, _)| *n != name);
            pairs.push((name, on));
        }
        let mut gates = FeatureGates::default();
        let mut all_beta = None;
        let mut explicit = false;
        for (name, on) in pairs {
            match name.as_str() {
                DEFAULT_POD_TOPOLOGY_SPREAD => {
                    gates.default_pod_topology_spread = on;
                    explicit = true;
                }
                ALL_ALPHA => {}
                ALL_BETA => all_beta = Some(on),
                _ => return Err(FeatureGateError::Unrecognized(name)),
            }
        }
        if let Some(on) = all_beta.filter(|_| !explicit) {
            gates.default_pod_topology_spread = on;
        }
        Ok(gates)
    }
}

impl fmt::Display for FeatureGates {
    /// The `--feature-gates` value that gives these gates.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{DEFAULT_POD_TOPOLOGY_SPREAD}={}",
            self.default_pod_topology_spread
        )
    }
}

impl ResolvedPolicy {
    /// The resolution under `gates` (resolution itself gives the gate-off translation). With
    /// `DefaultPodTopologySpread` on:
    /// - a `SelectorSpread` score becomes `PodTopologySpread` in its place with its weight, or,
    ///   when `PodTopologySpread` already scores (`EvenPodsSpreadPriority`, whose key sorts
    ///   first), merges into it and that first weight stays (`appendToPluginSet`);
    /// - `PodTopologySpread` gets `defaultingType: System` when it replaced `SelectorSpread` or
    ///   only filters (the v1beta2 default), `List` when only `EvenPodsSpreadPriority` asked for
    ///   its score.
    ///
    /// Filters are unchanged: the system default constraints are all `ScheduleAnyway`.
    ///
    /// Expects the resolution as [`super::parse_policy`], [`super::load_policy_file`] or
    /// [`super::default_provider`] give it; a result that already carries
    /// `PodTopologySpread` arguments (gates applied) is returned unchanged.
    #[must_use]
    pub fn with_feature_gates(mut self, gates: &FeatureGates) -> ResolvedPolicy {
        use crate::framework::plugins::{pod_topology_spread, selector_spread};
        if !gates.default_pod_topology_spread || self.args.pod_topology_spread.is_some() {
            return self;
        }
        let spread = self
            .scores
            .iter()
            .position(|s| s.plugin == pod_topology_spread::NAME);
        let selector = self
            .scores
            .iter()
            .position(|s| s.plugin == selector_spread::NAME);
        let defaulting = match (selector, spread) {
            (Some(i), Some(_)) => {
                let s = self.scores.remove(i);
                if let Some(pts) = self
                    .scores
                    .iter_mut()
                    .find(|x| x.plugin == pod_topology_spread::NAME)
                {
                    for n in s.legacy_names {
                        if !pts.legacy_names.contains(&n) {
                            pts.legacy_names.push(n);
                        }
                    }
                }
                Some(DefaultingType::System)
            }
            (Some(i), None) => {
                self.scores[i].plugin = pod_topology_spread::NAME;
                Some(DefaultingType::System)
            }
            (None, Some(_)) => Some(DefaultingType::List),
            (None, None) => self
                .filters
                .iter()
                .any(|f| f.plugin == pod_topology_spread::NAME)
                .then_some(DefaultingType::System),
        };
        if let Some(defaulting_type) = defaulting {
            self.args.pod_topology_spread = Some(PodTopologySpreadArgs { defaulting_type });
        }
        if selector.is_some() {
            self.notes.push(format!(
                "{DEFAULT_POD_TOPOLOGY_SPREAD}=true (the v1.22 default): spreading by Service / \
                 controller (SelectorSpreadPriority) is PodTopologySpread's system default \
                 constraints (hostname maxSkew 3, zone maxSkew 5, ScheduleAnyway); \
                 --feature-gates={DEFAULT_POD_TOPOLOGY_SPREAD}=false runs the SelectorSpread \
                 plugin instead"
            ));
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{default_provider, parse_policy};

    fn scores(r: &ResolvedPolicy) -> Vec<(&str, i64)> {
        r.scores.iter().map(|s| (s.plugin, s.weight)).collect()
    }

    fn defaulting(r: &ResolvedPolicy) -> Option<DefaultingType> {
        r.args
            .pod_topology_spread
            .as_ref()
            .map(|a| a.defaulting_type)
    }

    const ON: FeatureGates = FeatureGates {
        default_pod_topology_spread: true,
    };
    const OFF: FeatureGates = FeatureGates {
        default_pod_topology_spread: false,
    };

    fn policy(priorities: &str) -> ResolvedPolicy {
        parse_policy(
            "p.json",
            &format!(
                r#"{{"kind":"Policy","apiVersion":"v1","predicates":[{{"name":"EvenPodsSpread"}}],"priorities":{priorities}}}"#
            ),
        )
        .expect("policy resolves")
        .resolved
    }

    /// `featureGate.Set`: pairs over the defaults, trimmed, Go bools, component-base's errors.
    #[test]
    fn parses_like_component_base() {
        assert_eq!("".parse::<FeatureGates>(), Ok(FeatureGates::default()));
        assert!(FeatureGates::default().default_pod_topology_spread);
        assert_eq!("DefaultPodTopologySpread=false".parse(), Ok(OFF));
        assert_eq!(" DefaultPodTopologySpread = F ,".parse(), Ok(OFF));
        assert_eq!(
            "DefaultPodTopologySpread=false,DefaultPodTopologySpread=1".parse(),
            Ok(ON)
        );
        assert_eq!(
            "DefaultPodTopologySpread"
                .parse::<FeatureGates>()
                .map_err(|e| e.to_string()),
            Err("missing bool value for DefaultPodTopologySpread".to_string())
        );
        assert_eq!(
            "DefaultPodTopologySpread=maybe".parse::<FeatureGates>().map_err(|e| e.to_string()),
            Err("invalid value of DefaultPodTopologySpread=maybe, err: strconv.ParseBool: parsing \"maybe\": invalid syntax".to_string())
        );
        assert_eq!(
            "CSIStorageCapacity=true".parse::<FeatureGates>().map_err(|e| e.to_string()),
            Err("unrecognized feature gate: CSIStorageCapacity (mini-scheduler knows: DefaultPodTopologySpread, AllAlpha, AllBeta)".to_string())
        );
        assert_eq!(OFF.to_string().parse(), Ok(OFF));
        // Values are checked before names, as `Set` builds its map before `SetFromMap`.
        assert!(matches!(
            "Foo=true,DefaultPodTopologySpread=maybe".parse::<FeatureGates>(),
            Err(FeatureGateError::InvalidValue { .. })
        ));
        // AllBeta sets the beta gates not named; an explicit value wins in any order.
        assert_eq!("AllBeta=false".parse(), Ok(OFF));
        assert_eq!("AllAlpha=true".parse(), Ok(ON));
        assert_eq!(
            "DefaultPodTopologySpread=true,AllBeta=false".parse(),
            Ok(ON)
        );
        assert_eq!(
            "AllBeta=false,DefaultPodTopologySpread=true".parse(),
            Ok(ON)
        );
    }

    /// Applying the gates twice is applying them once (the hot reload compares resolutions).
    #[test]
    fn with_feature_gates_is_idempotent() {
        for priorities in [
            r#"[{"name":"SelectorSpreadPriority","weight":1}]"#,
            r#"[{"name":"SelectorSpreadPriority","weight":5},{"name":"EvenPodsSpreadPriority","weight":2}]"#,
            r#"[{"name":"EvenPodsSpreadPriority","weight":2}]"#,
            "null",
            "[]",
        ] {
            let once = policy(priorities).with_feature_gates(&ON);
            assert_eq!(once.clone().with_feature_gates(&ON), once, "{priorities}");
        }
        let once = default_provider().with_feature_gates(&ON);
        assert_eq!(once.clone().with_feature_gates(&ON), once);
    }

    /// legacy_registry.go (v1.20–v1.22) with the gate on: `SelectorSpreadPriority` →
    /// `PodTopologySpread` (System) in its place; with `EvenPodsSpreadPriority` too, the latter's
    /// weight stays (its key sorts first) and the defaulting is System.
    #[test]
    fn selector_spread_becomes_pod_topology_spread_when_the_gate_is_on() {
        let only_selector = policy(
            r#"[{"name":"LeastRequestedPriority","weight":1},{"name":"ServiceSpreadingPriority","weight":3},{"name":"TaintTolerationPriority","weight":1}]"#,
        );
        assert_eq!(
            scores(&only_selector.clone().with_feature_gates(&OFF)),
            [
                ("NodeResourcesLeastAllocated", 1),
                ("SelectorSpread", 3),
                ("TaintToleration", 1)
            ]
        );
        assert_eq!(
            defaulting(&only_selector.clone().with_feature_gates(&OFF)),
            None
        );
        let on = only_selector.with_feature_gates(&ON);
        assert_eq!(
            scores(&on),
            [
                ("NodeResourcesLeastAllocated", 1),
                ("PodTopologySpread", 3),
                ("TaintToleration", 1)
            ]
        );
        assert_eq!(defaulting(&on), Some(DefaultingType::System));
        assert_eq!(on.scores[1].legacy_names, ["ServiceSpreadingPriority"]);
        assert!(
            on.notes
                .iter()
                .any(|n| n.contains("system default constraints"))
        );

        let both = policy(
            r#"[{"name":"SelectorSpreadPriority","weight":5},{"name":"EvenPodsSpreadPriority","weight":2}]"#,
        )
        .with_feature_gates(&ON);
        assert_eq!(scores(&both), [("PodTopologySpread", 2)]);
        assert_eq!(
            both.scores[0].legacy_names,
            ["EvenPodsSpreadPriority", "SelectorSpreadPriority"]
        );
        assert_eq!(defaulting(&both), Some(DefaultingType::System));

        let only_even =
            policy(r#"[{"name":"EvenPodsSpreadPriority","weight":2}]"#).with_feature_gates(&ON);
        assert_eq!(scores(&only_even), [("PodTopologySpread", 2)]);
        assert_eq!(defaulting(&only_even), Some(DefaultingType::List));

        // Only the filter: the v1beta2 default args (System); they change no filtering.
        let filter_only = policy("[]").with_feature_gates(&ON);
        assert!(filter_only.scores.is_empty());
        assert_eq!(defaulting(&filter_only), Some(DefaultingType::System));

        // `priorities: null`: v1.22's DefaultPriorities hold both keys.
        let null = policy("null").with_feature_gates(&ON);
        assert!(scores(&null).contains(&("PodTopologySpread", 2)));
        assert!(!null.has_plugin("SelectorSpread"));
        assert_eq!(defaulting(&null), Some(DefaultingType::System));
    }

    /// v1.22's default profile with the gate on (`TestAlgorithmProviderCompatibility`,
    /// compatibility_test.go @05c351a9): no SelectorSpread, PodTopologySpread weight 2 with
    /// `defaultingType: System` (`TestPluginsConfigurationCompatibility`).
    #[test]
    fn default_provider_under_the_gate() {
        let on = default_provider().with_feature_gates(&ON);
        assert_eq!(
            scores(&on),
            [
                ("NodeResourcesBalancedAllocation", 1),
                ("ImageLocality", 1),
                ("InterPodAffinity", 1),
                ("NodeResourcesLeastAllocated", 1),
                ("NodeAffinity", 1),
                ("NodePreferAvoidPods", 10000),
                ("PodTopologySpread", 2),
                ("TaintToleration", 1),
            ]
        );
        assert_eq!(defaulting(&on), Some(DefaultingType::System));
        let off = default_provider().with_feature_gates(&OFF);
        assert_eq!(
            off.scores.last().map(|s| (s.plugin, s.weight)),
            Some(("SelectorSpread", 1))
        );
        assert_eq!(defaulting(&off), None);
    }
}
