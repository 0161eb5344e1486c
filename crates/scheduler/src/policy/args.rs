//! Typed plugin arguments a Policy produces: what kube-scheduler v1.22 puts in the profile's
//! `PluginConfig` when it translates a Policy, and the checks the plugins' `New` run on them.
//!
//! Upstream: kubernetes/kubernetes `pkg/scheduler/framework/plugins/legacy_registry.go`
//! @054d429d9f8bc8de4fc82e6cf2281e12a13fe1f2 (`ConfigProducerArgs`, `ProcessPredicatePolicy`,
//! `ProcessPriorityPolicy`), `pkg/scheduler/factory.go` `createFromPolicy` / `create` (v1.22:
//! `hardPodAffinitySymmetricWeight` → `InterPodAffinityArgs`, extender `ignoredByScheduler`
//! resources → `NodeResourcesFitArgs.IgnoredResources`) and
//! `pkg/scheduler/apis/config/validation/validation_pluginargs.go` (v1.21/v1.22 field-path texts,
//! index id 1018070136) for [`NodeLabelArgs::validate`] and
//! [`RequestedToCapacityRatioArgs::validate`].
//!
//! Plugins take these at construction (`framework::new_filter` / `new_score`); a
//! plugin that needs none ignores them.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::types::{ResourceSpec, UtilizationShapePoint};

/// `MaxCustomPriorityScore`: the highest score of a `requestedToCapacityRatioArguments` shape
/// point; the plugin multiplies shape scores by `MAX_NODE_SCORE / MAX_CUSTOM_PRIORITY_SCORE` = 10.
pub const MAX_CUSTOM_PRIORITY_SCORE: i64 = 10;

/// `config.NodeLabelArgs`: labels a node must have / lack (Filter, legacy predicate
/// `CheckNodeLabelPresence` via `labelsPresence`) and labels it should have / lack (Score, custom
/// priority `labelPreference`). Each list keeps the order the policy listed the labels in.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct NodeLabelArgs {
    /// Label keys every feasible node must carry (values ignored).
    pub present_labels: Vec<String>,
    /// Label keys no feasible node may carry.
    pub absent_labels: Vec<String>,
    /// Label keys a node scores for carrying.
    pub present_labels_preference: Vec<String>,
    /// Label keys a node scores for lacking.
    pub absent_labels_preference: Vec<String>,
}

/// `config.ServiceAffinityArgs`: node labels whose values must agree among a Service's pods
/// (Filter, `serviceAffinity`) and labels over whose values a Service's pods are spread (Score,
/// `serviceAntiAffinity`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ServiceAffinityArgs {
    /// `AffinityLabels` (JSON `labels` upstream): node label keys.
    pub affinity_labels: Vec<String>,
    /// `AntiAffinityLabelsPreference`: node label keys, one per `serviceAntiAffinity` entry.
    pub anti_affinity_labels_preference: Vec<String>,
}

/// `config.RequestedToCapacityRatioArgs`, copied from `requestedToCapacityRatioArguments` as
/// written: shape scores stay on the 0..=10 scale (the plugin scales them ×10) and an empty
/// `resources` list stays empty (kube-scheduler v1.22 applies no default on this path, so such
/// a plugin scores every node 0).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct RequestedToCapacityRatioArgs {
    /// Points `(utilization %, score 0..=10)`.
    pub shape: Vec<UtilizationShapePoint>,
    /// Resources and weights.
    pub resources: Vec<ResourceSpec>,
}

/// `config.InterPodAffinityArgs`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct InterPodAffinityArgs {
    /// Weight (0..=100) of the preferred term mirrored from an existing pod's required affinity
    /// term: the policy's `hardPodAffinitySymmetricWeight` when set (non-zero), else 1 (the
    /// v1beta2 default).
    pub hard_pod_affinity_weight: i32,
}

impl Default for InterPodAffinityArgs {
    fn default() -> Self {
        InterPodAffinityArgs {
            hard_pod_affinity_weight: 1,
        }
    }
}

/// `config.NodeResourcesFitArgs` as a Policy can set it: the extended resources that extenders
/// manage with `ignoredByScheduler: true` (kube-scheduler v1.22 `Configurator.create`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct NodeResourcesFitArgs {
    /// Extended resources the Fit filter does not check.
    pub ignored_resources: Vec<String>,
}

/// `config.PodTopologySpreadArgs.defaultingType`: where the constraints of a pod without its
/// own `topologySpreadConstraints` come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum DefaultingType {
    /// `System`: hostname maxSkew 3 and zone maxSkew 5, both `ScheduleAnyway`, selecting the
    /// pods of the pod's Services / RC / RS / StatefulSet.
    System,
    /// `List`: the configured `defaultConstraints`, which a Policy never sets (so none).
    List,
}

/// `config.PodTopologySpreadArgs` as the v1.22 Policy translation sets them (only with the
/// `DefaultPodTopologySpread` feature gate on; see [`super::FeatureGates`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodTopologySpreadArgs {
    /// `System` or `List`.
    pub defaulting_type: DefaultingType,
}

/// The arguments of the plugins of one profile, by plugin (`ConfigProducerArgs` plus the
/// defaults v1.22 fills in). `None` means the policy configured no arguments for that plugin;
/// the resolver refuses a profile that runs `NodeLabel`, `ServiceAffinity` or
/// `RequestedToCapacityRatio` without them, as v1.22 does.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct PluginArgs {
    /// `NodeLabel`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_label: Option<NodeLabelArgs>,
    /// `ServiceAffinity`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_affinity: Option<ServiceAffinityArgs>,
    /// `RequestedToCapacityRatio`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requested_to_capacity_ratio: Option<RequestedToCapacityRatioArgs>,
    /// `InterPodAffinity` (always set: default weight 1).
    pub inter_pod_affinity: InterPodAffinityArgs,
    /// `NodeResourcesFit`.
    pub node_resources_fit: NodeResourcesFitArgs,
    /// `PodTopologySpread`; `None` is `defaultingType: List` without constraints (what the
    /// Policy translation gives with `DefaultPodTopologySpread` off).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_topology_spread: Option<PodTopologySpreadArgs>,
    /// `DefaultPreemption`, the PostFilter every v1.22 profile runs: `None` runs it with v1.22's
    /// defaults (what a Policy gives); a configuration profile that disables it or sets its
    /// arguments carries them here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_preemption: Option<DefaultPreemptionArgs>,
}

/// `DefaultPreemptionArgs` (v1.22 `config.DefaultPreemptionArgs`), and whether the plugin runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DefaultPreemptionArgs {
    /// Whether the PostFilter runs (a configuration profile may disable it).
    pub enabled: bool,
    /// `minCandidateNodesPercentage` (0..=100, default 10).
    pub min_candidate_nodes_percentage: i32,
    /// `minCandidateNodesAbsolute` (≥ 0, default 100).
    pub min_candidate_nodes_absolute: i32,
}

impl Default for DefaultPreemptionArgs {
    fn default() -> Self {
        DefaultPreemptionArgs {
            enabled: true,
            min_candidate_nodes_percentage: 10,
            min_candidate_nodes_absolute: 100,
        }
    }
}

/// Plugin arguments that upstream's `validation.Validate*Args` refuses: every field error in
/// upstream's words (`field: Invalid value: ...`), duplicates dropped, in the order found. The
/// message is `field.ErrorList.ToAggregate().Error()`: one error as is, several as `[a, b]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", aggregate_text(.0))]
pub struct InvalidArgs(pub Vec<String>);

impl InvalidArgs {
    /// The errors found, `Ok` when there are none.
    fn check(errors: Vec<String>) -> Result<(), InvalidArgs> {
        let mut unique: Vec<String> = Vec::new();
        for e in errors {
            if !unique.contains(&e) {
                unique.push(e);
            }
        }
        if unique.is_empty() {
            Ok(())
        } else {
            Err(InvalidArgs(unique))
        }
    }
}

fn aggregate_text(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        _ => format!("[{}]", errors.join(", ")),
    }
}

impl NodeLabelArgs {
    /// `validation.ValidateNodeLabelArgs` (v1.21/v1.22): a label may not be both present and
    /// absent, nor both preferred present and preferred absent.
    ///
    /// # Errors
    /// [`InvalidArgs`] with upstream's text, e.g.
    /// `presentLabels[0]: Invalid value: "foo": conflict with absentLabels[1]`.
    pub fn validate(&self) -> Result<(), InvalidArgs> {
        let mut errs = no_conflict(
            &self.present_labels,
            &self.absent_labels,
            "presentLabels",
            "absentLabels",
        );
        errs.extend(no_conflict(
            &self.present_labels_preference,
            &self.absent_labels_preference,
            "presentLabelsPreference",
            "absentLabelsPreference",
        ));
        InvalidArgs::check(errs)
    }
}

/// `validateNoConflict`: the index of a present label is its last occurrence (Go map overwrite).
fn no_conflict(present: &[String], absent: &[String], p: &str, a: &str) -> Vec<String> {
    let mut errs = Vec::new();
    for (i, l) in absent.iter().enumerate() {
        if let Some(j) = present.iter().rposition(|x| x == l) {
            errs.push(format!(
                "{p}[{j}]: Invalid value: {l:?}: conflict with {a}[{i}]"
            ));
        }
    }
    errs
}

impl RequestedToCapacityRatioArgs {
    /// `validation.ValidateRequestedToCapacityRatioArgs` (v1.21/v1.22, run by the plugin's
    /// `New`): at least one shape point, utilizations strictly increasing and in 0..=100,
    /// scores in 0..=10, resource weights ≥ 1.
    ///
    /// # Errors
    /// [`InvalidArgs`] with upstream's text, e.g. `shape: Required value: at least one point
    /// must be specified` or `resources[0].weight: Invalid value: 0: resource weight of cpu not
    /// in valid range [1, inf)`.
    pub fn validate(&self) -> Result<(), InvalidArgs> {
        let mut errs = Vec::new();
        if self.shape.is_empty() {
            errs.push("shape: Required value: at least one point must be specified".to_string());
        } else {
            if let Some(i) = (1..self.shape.len())
                .find(|&i| self.shape[i - 1].utilization >= self.shape[i].utilization)
            {
                errs.push(format!(
                    "shape[{i}].utilization: Invalid value: {}: utilization values must be sorted in increasing order",
                    self.shape[i].utilization
                ));
            }
            for (i, p) in self.shape.iter().enumerate() {
                if !(0..=100).contains(&p.utilization) {
                    errs.push(format!(
                        "shape[{i}].utilization: Invalid value: {}: not in valid range [0, 100]",
                        p.utilization
                    ));
                }
                if !(0..=MAX_CUSTOM_PRIORITY_SCORE).contains(&i64::from(p.score)) {
                    errs.push(format!(
                        "shape[{i}].score: Invalid value: {}: not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]",
                        p.score
                    ));
                }
            }
        }
        for (i, r) in self.resources.iter().enumerate() {
            if r.weight < 1 {
                errs.push(format!(
                    "resources[{i}].weight: Invalid value: {}: resource weight of {} not in valid range [1, inf)",
                    r.weight, r.name
                ));
            }
        }
        InvalidArgs::check(errs)
    }
}

fn list(v: &[String]) -> String {
    format!("[{}]", v.join(", "))
}

impl fmt::Display for NodeLabelArgs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "presentLabels={} absentLabels={} presentLabelsPreference={} absentLabelsPreference={}",
            list(&self.present_labels),
            list(&self.absent_labels),
            list(&self.present_labels_preference),
            list(&self.absent_labels_preference)
        )
    }
}

impl fmt::Display for ServiceAffinityArgs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "affinityLabels={} antiAffinityLabelsPreference={}",
            list(&self.affinity_labels),
            list(&self.anti_affinity_labels_preference)
        )
    }
}

impl fmt::Display for RequestedToCapacityRatioArgs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shape: Vec<String> = self
            .shape
            .iter()
            .map(|p| {
                format!(
                    "{}%→{} ({})",
                    p.utilization,
                    p.score,
                    i64::from(p.score)
                        * (crate::framework::MAX_NODE_SCORE / MAX_CUSTOM_PRIORITY_SCORE)
                )
            })
            .collect();
        let resources: Vec<String> = self
            .resources
            .iter()
            .map(|r| format!("{}:{}", r.name, r.weight))
            .collect();
        write!(
            f,
            "shape=[{}] resources=[{}]",
            shape.join(", "),
            resources.join(", ")
        )?;
        if self.resources.is_empty() {
            write!(
                f,
                " (no resources: every node scores 0, as in kube-scheduler v1.22)"
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    /// Upstream `pkg/scheduler/apis/config/validation/validation_pluginargs_test.go`
    /// `TestValidateNodeLabelArgs`: the rows of the v1.20 table (index id 165031967), with the
    /// v1.21/v1.22 field-path texts of `validation_pluginargs.go` (index id 1018070136; no
    /// v1.21/v1.22 copy of the test was available), plus one row with several conflicts for the
    /// aggregate format.
    #[test]
    fn test_validate_node_label_args() {
        let cases: Vec<(&str, NodeLabelArgs, Result<(), String>)> = vec![
            (
                "valid config",
                NodeLabelArgs {
                    present_labels: s(&["present"]),
                    absent_labels: s(&["absent"]),
                    present_labels_preference: s(&["present-preference"]),
                    absent_labels_preference: s(&["absent-preference"]),
                },
                Ok(()),
            ),
            (
                "labels conflict",
                NodeLabelArgs {
                    present_labels: s(&["label"]),
                    absent_labels: s(&["label"]),
                    ..Default::default()
                },
                Err("presentLabels[0]: Invalid value: \"label\": conflict with absentLabels[0]".into()),
            ),
            (
                "labels preference conflict",
                NodeLabelArgs {
                    present_labels_preference: s(&["label"]),
                    absent_labels_preference: s(&["label"]),
                    ..Default::default()
                },
                Err("presentLabelsPreference[0]: Invalid value: \"label\": conflict with absentLabelsPreference[0]".into()),
            ),
            (
                "several conflicts (not upstream)",
                NodeLabelArgs {
                    present_labels: s(&["label", "label3"]),
                    absent_labels: s(&["label", "label2", "label3"]),
                    present_labels_preference: s(&["label"]),
                    absent_labels_preference: s(&["label"]),
                },
                Err("[presentLabels[0]: Invalid value: \"label\": conflict with absentLabels[0], \
                     presentLabels[1]: Invalid value: \"label3\": conflict with absentLabels[2], \
                     presentLabelsPreference[0]: Invalid value: \"label\": conflict with absentLabelsPreference[0]]"
                    .into()),
            ),
        ];
        for (name, args, want) in cases {
            assert_eq!(args.validate().map_err(|e| e.to_string()), want, "{name}");
        }
    }

    fn pt(utilization: i32, score: i32) -> UtilizationShapePoint {
        UtilizationShapePoint { utilization, score }
    }

    fn res(name: &str, weight: i64) -> ResourceSpec {
        ResourceSpec {
            name: name.into(),
            weight,
        }
    }

    /// Upstream `validation_pluginargs_test.go` `TestValidateRequestedToCapacityRatioArgs`: the
    /// rows of the v1.20 table (index id 165031967) with the v1.21/v1.22 field-path texts of
    /// `validation_pluginargs.go` (index id 1018070136), plus one row with several errors.
    #[test]
    fn test_validate_requested_to_capacity_ratio_args() {
        let cases: Vec<(&str, RequestedToCapacityRatioArgs, Result<(), String>)> = vec![
            (
                "valid config",
                RequestedToCapacityRatioArgs {
                    shape: vec![pt(20, 5), pt(30, 3), pt(50, 2)],
                    resources: vec![res("custom-resource", 5)],
                },
                Ok(()),
            ),
            (
                "no shape points",
                RequestedToCapacityRatioArgs {
                    shape: vec![],
                    resources: vec![res("custom", 5)],
                },
                Err("shape: Required value: at least one point must be specified".into()),
            ),
            (
                "utilization less than min",
                RequestedToCapacityRatioArgs {
                    shape: vec![pt(-10, 3), pt(10, 2)],
                    resources: vec![],
                },
                Err("shape[0].utilization: Invalid value: -10: not in valid range [0, 100]".into()),
            ),
            (
                "utilization greater than max",
                RequestedToCapacityRatioArgs {
                    shape: vec![pt(10, 3), pt(110, 2)],
                    resources: vec![],
                },
                Err("shape[1].utilization: Invalid value: 110: not in valid range [0, 100]".into()),
            ),
            (
                "Utilization values in non-increasing order",
                RequestedToCapacityRatioArgs {
                    shape: vec![pt(30, 3), pt(20, 2), pt(10, 1)],
                    resources: vec![],
                },
                Err("shape[1].utilization: Invalid value: 20: utilization values must be sorted in increasing order".into()),
            ),
            (
                "duplicated utilization values",
                RequestedToCapacityRatioArgs {
                    shape: vec![pt(10, 3), pt(20, 2), pt(20, 1)],
                    resources: vec![],
                },
                Err("shape[2].utilization: Invalid value: 20: utilization values must be sorted in increasing order".into()),
            ),
            (
                "score less than min",
                RequestedToCapacityRatioArgs {
                    shape: vec![pt(10, -1), pt(20, 2)],
                    resources: vec![],
                },
                Err("shape[0].score: Invalid value: -1: not in valid range [0, 10]".into()),
            ),
            (
                "score greater than max",
                RequestedToCapacityRatioArgs {
                    shape: vec![pt(10, 3), pt(20, 11)],
                    resources: vec![],
                },
                Err("shape[1].score: Invalid value: 11: not in valid range [0, 10]".into()),
            ),
            (
                "resources weight less than 1",
                RequestedToCapacityRatioArgs {
                    shape: vec![pt(10, 1)],
                    resources: vec![res("custom", 0)],
                },
                Err("resources[0].weight: Invalid value: 0: resource weight of custom not in valid range [1, inf)".into()),
            ),
            (
                "several errors (not upstream)",
                RequestedToCapacityRatioArgs {
                    shape: vec![pt(20, -1), pt(10, 2)],
                    resources: vec![res("custom", 0)],
                },
                Err("[shape[1].utilization: Invalid value: 10: utilization values must be sorted in increasing order, \
                     shape[0].score: Invalid value: -1: not in valid range [0, 10], \
                     resources[0].weight: Invalid value: 0: resource weight of custom not in valid range [1, inf)]"
                    .into()),
            ),
        ];
        for (name, args, want) in cases {
            assert_eq!(args.validate().map_err(|e| e.to_string()), want, "{name}");
        }
    }

    #[test]
    fn aggregate_formats_like_go() {
        let text = |errs: Vec<&str>| {
            InvalidArgs::check(errs.into_iter().map(String::from).collect())
                .map_err(|e| e.to_string())
        };
        assert_eq!(text(vec![]), Ok(()));
        assert_eq!(text(vec!["a"]), Err("a".into()));
        assert_eq!(text(vec!["a", "b", "a"]), Err("[a, b]".into()));
    }
}
