//! Pod-level topology terms compiled once per pod: inter-pod (anti-)affinity terms
//! ([`AffinityTerm`], [`WeightedAffinityTerm`], [`PodAffinityTerms`]) and topology spread
//! constraints ([`SpreadConstraint`]), with their label selectors parsed as
//! `metav1.LabelSelectorAsSelector` does ([`Selector`]).
//!
//! Follows kube-scheduler v1.22 `pkg/scheduler/framework/types.go` (`AffinityTerm`,
//! `WeightedAffinityTerm`, `newAffinityTerm`, `getNamespacesFromPodAffinityTerm`,
//! `AffinityTerm.Matches` with the `PodAffinityNamespaceSelector` gate on, as it is by default in
//! v1.22 — beta, `kube_features.go`), `podtopologyspread/common.go`
//! (`filterTopologySpreadConstraints`) and `k8s.io/apimachinery` v0.22
//! `pkg/apis/meta/v1/helpers.go` (`LabelSelectorAsSelector`) with `pkg/labels/selector.go`
//! (`NewRequirement`). Copies read: kubernetes/kubernetes `pkg/scheduler/framework/types.go`
//! (index id 48397304290, v1.21/22-era), wu0407/kubernetes-code-analysis
//! `pkg/scheduler/framework/plugins/interpodaffinity/plugin.go`
//! @3e258f30c2f20eb46689088924d1c98aa67a717e (v1.22).

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;

use crate::labels::{
    LabelSelector, Labels, Operator, Requirement, is_qualified_name, is_valid_label_value,
};

/// A compiled `labels.Selector` as `metav1.LabelSelectorAsSelector` returns it: a nil selector
/// selects nothing (`labels.Nothing()`), an empty one (`{}`) selects everything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// `labels.Nothing()`: from a nil `*metav1.LabelSelector`; matches no label set.
    Nothing,
    /// ANDed requirements; no requirement at all is `labels.Everything()`.
    Match(LabelSelector),
}

impl Selector {
    /// Whether `labels` satisfy the selector.
    #[inline]
    pub fn matches(&self, labels: &Labels) -> bool {
        match self {
            Selector::Nothing => false,
            Selector::Match(s) => s.matches(labels),
        }
    }

    /// `labels.Selector.Empty()`: true only for the match-everything selector.
    pub fn is_empty(&self) -> bool {
        matches!(self, Selector::Match(s) if s.is_empty())
    }
}

/// `field.Invalid(path, value, detail)` as Go prints it.
fn invalid(path: &str, value: &str, detail: &str) -> String {
    format!("{path}: Invalid value: {value}: {detail}")
}

/// Go's `%#v` of a `[]string`, as `field.Invalid` prints a slice value.
fn go_string_slice(values: &[String]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

const LABEL_VALUE_FMT: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const QUALIFIED_NAME_FMT: &str = "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character, with an optional DNS subdomain prefix and '/' (e.g. 'MyName',  or 'my.name',  or '123-abc', or 'example.com/MyName')";

/// `labels.NewRequirement(key, op, values)`: the key must be a qualified name, `In`/`NotIn`
/// need values, `Exists`/`DoesNotExist` take none, `Equals` exactly one, and every value must be
/// a valid label value. Errors are aggregated as `utilerrors.NewAggregate` prints them.
fn new_requirement(key: &str, op: Operator, values: Vec<String>) -> Result<Requirement, String> {
    let mut errs: Vec<String> = Vec::new();
    if !is_qualified_name(key) {
        errs.push(invalid("key", &format!("{key:?}"), QUALIFIED_NAME_FMT));
    }
    match op {
        Operator::In | Operator::NotIn if values.is_empty() => errs.push(invalid(
            "values",
            &go_string_slice(&values),
            "for 'in', 'notin' operators, values set can't be empty",
        )),
        Operator::Equals if values.len() != 1 => errs.push(invalid(
            "values",
            &go_string_slice(&values),
            "exact-match compatibility requires one single value",
        )),
        Operator::Exists | Operator::DoesNotExist if !values.is_empty() => errs.push(invalid(
            "values",
            &go_string_slice(&values),
            "values set must be empty for exists and does not exist",
        )),
        _ => {}
    }
    for (i, v) in values.iter().enumerate() {
        if !is_valid_label_value(v) {
            let detail = if v.len() > 63 {
                format!("must be no more than 63 characters; {LABEL_VALUE_FMT}")
            } else {
                LABEL_VALUE_FMT.to_string()
            };
            errs.push(invalid(
                &format!("values[{i}][{key}]"),
                &format!("{v:?}"),
                &detail,
            ));
        }
    }
    match errs.len() {
        0 => Ok(Requirement {
            key: key.to_string(),
            op,
            values,
        }),
        1 => Err(errs.remove(0)),
        _ => Err(format!("[{}]", errs.join(", "))),
    }
}

/// `metav1.LabelSelectorAsSelector` with `labels.NewRequirement`'s validation: `None` selects
/// nothing, an empty selector everything.
///
/// # Errors
/// The upstream error text (`values[0][app]: Invalid value: ...`,
/// `"Foo" is not a valid pod selector operator`).
pub fn compile_label_selector(sel: Option<&meta::LabelSelector>) -> Result<Selector, String> {
    let Some(sel) = sel else {
        return Ok(Selector::Nothing);
    };
    let mut out = LabelSelector::default();
    for (k, v) in sel.match_labels.iter().flatten() {
        out.requirements
            .push(new_requirement(k, Operator::Equals, vec![v.clone()])?);
    }
    for e in sel.match_expressions.iter().flatten() {
        let op = match e.operator.as_str() {
            "In" => Operator::In,
            "NotIn" => Operator::NotIn,
            "Exists" => Operator::Exists,
            "DoesNotExist" => Operator::DoesNotExist,
            other => return Err(format!("{other:?} is not a valid pod selector operator")),
        };
        out.requirements.push(new_requirement(
            &e.key,
            op,
            e.values.clone().unwrap_or_default(),
        )?);
    }
    Ok(Selector::Match(out))
}

/// One compiled `v1.PodAffinityTerm` of a pod (`framework.AffinityTerm`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AffinityTerm {
    /// Namespaces whose pods the term selects: `namespaces`, or the owning pod's namespace when
    /// both `namespaces` and `namespaceSelector` are unset (`getNamespacesFromPodAffinityTerm`).
    pub namespaces: Vec<String>,
    /// `labelSelector` on pod labels.
    pub selector: Selector,
    /// `topologyKey`: the node label that defines the topology domain.
    pub topology_key: String,
    /// `namespaceSelector` on namespace labels (nil: [`Selector::Nothing`]).
    pub namespace_selector: Selector,
}

impl AffinityTerm {
    /// `AffinityTerm.Matches`: the pod is in one of the term's namespaces, or its namespace's
    /// labels (`ns_labels`; `None` is the empty set) match the namespace selector, and its labels
    /// match the label selector.
    #[inline]
    pub fn matches(&self, namespace: &str, labels: &Labels, ns_labels: Option<&Labels>) -> bool {
        let in_ns = self.namespaces.iter().any(|n| n == namespace)
            || match &self.namespace_selector {
                Selector::Nothing => false,
                Selector::Match(s) => match ns_labels {
                    Some(l) => s.matches(l),
                    None => s.matches(&Labels::new()),
                },
            };
        in_ns && self.selector.matches(labels)
    }
}

/// A `v1.WeightedPodAffinityTerm` (`framework.WeightedAffinityTerm`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WeightedAffinityTerm {
    /// The term.
    pub term: AffinityTerm,
    /// `weight` (1..=100 after API validation).
    pub weight: i32,
}

/// The inter-pod affinity terms of a pod (`PodInfo.RequiredAffinityTerms`, ...), each list in
/// spec order. All empty for a pod without `podAffinity`/`podAntiAffinity` (no allocation).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodAffinityTerms {
    /// `podAffinity.requiredDuringSchedulingIgnoredDuringExecution`.
    pub required_affinity: Vec<AffinityTerm>,
    /// `podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution`.
    pub required_anti_affinity: Vec<AffinityTerm>,
    /// `podAffinity.preferredDuringSchedulingIgnoredDuringExecution`.
    pub preferred_affinity: Vec<WeightedAffinityTerm>,
    /// `podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution`.
    pub preferred_anti_affinity: Vec<WeightedAffinityTerm>,
}

impl PodAffinityTerms {
    /// No term at all.
    pub fn is_empty(&self) -> bool {
        self.required_affinity.is_empty()
            && self.required_anti_affinity.is_empty()
            && self.preferred_affinity.is_empty()
            && self.preferred_anti_affinity.is_empty()
    }

    /// Terms an *existing* pod contributes to InterPodAffinity scoring: required affinity
    /// (mirrored with `hardPodAffinityWeight`), preferred affinity and anti-affinity.
    pub fn has_scoring_terms(&self) -> bool {
        !self.required_affinity.is_empty()
            || !self.preferred_affinity.is_empty()
            || !self.preferred_anti_affinity.is_empty()
    }

    /// The pod has preferred (soft) affinity or anti-affinity terms.
    pub fn has_preferred(&self) -> bool {
        !self.preferred_affinity.is_empty() || !self.preferred_anti_affinity.is_empty()
    }
}

fn affinity_term(
    namespace: &str,
    term: &core::PodAffinityTerm,
    path: &str,
) -> Result<AffinityTerm, (String, String)> {
    let selector = compile_label_selector(term.label_selector.as_ref())
        .map_err(|e| (format!("{path}.labelSelector"), e))?;
    let namespace_selector = compile_label_selector(term.namespace_selector.as_ref())
        .map_err(|e| (format!("{path}.namespaceSelector"), e))?;
    let given = term.namespaces.clone().unwrap_or_default();
    let namespaces = if given.is_empty() && term.namespace_selector.is_none() {
        vec![namespace.to_string()]
    } else {
        given
    };
    Ok(AffinityTerm {
        namespaces,
        selector,
        topology_key: term.topology_key.clone(),
        namespace_selector,
    })
}

fn required_terms(
    namespace: &str,
    terms: Option<&Vec<core::PodAffinityTerm>>,
    path: &str,
) -> Result<Vec<AffinityTerm>, (String, String)> {
    terms
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, t)| affinity_term(namespace, t, &format!("{path}[{i}]")))
        .collect()
}

fn weighted_terms(
    namespace: &str,
    terms: Option<&Vec<core::WeightedPodAffinityTerm>>,
    path: &str,
) -> Result<Vec<WeightedAffinityTerm>, (String, String)> {
    terms
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, t)| {
            Ok(WeightedAffinityTerm {
                term: affinity_term(
                    namespace,
                    &t.pod_affinity_term,
                    &format!("{path}[{i}].podAffinityTerm"),
                )?,
                weight: t.weight,
            })
        })
        .collect()
}

/// Compile `spec.affinity.podAffinity` and `podAntiAffinity` of a pod in `namespace`.
///
/// # Errors
/// `(field path, message)` for the first label selector that does not parse, e.g.
/// `spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector`.
pub fn parse_pod_affinity(
    namespace: &str,
    affinity: Option<&core::Affinity>,
) -> Result<PodAffinityTerms, (String, String)> {
    let Some(a) = affinity else {
        return Ok(PodAffinityTerms::default());
    };
    let mut out = PodAffinityTerms::default();
    const REQ: &str = "requiredDuringSchedulingIgnoredDuringExecution";
    const PREF: &str = "preferredDuringSchedulingIgnoredDuringExecution";
    if let Some(pa) = &a.pod_affinity {
        let p = "spec.affinity.podAffinity";
        out.required_affinity = required_terms(
            namespace,
            pa.required_during_scheduling_ignored_during_execution
                .as_ref(),
            &format!("{p}.{REQ}"),
        )?;
        out.preferred_affinity = weighted_terms(
            namespace,
            pa.preferred_during_scheduling_ignored_during_execution
                .as_ref(),
            &format!("{p}.{PREF}"),
        )?;
    }
    if let Some(pa) = &a.pod_anti_affinity {
        let p = "spec.affinity.podAntiAffinity";
        out.required_anti_affinity = required_terms(
            namespace,
            pa.required_during_scheduling_ignored_during_execution
                .as_ref(),
            &format!("{p}.{REQ}"),
        )?;
        out.preferred_anti_affinity = weighted_terms(
            namespace,
            pa.preferred_during_scheduling_ignored_during_execution
                .as_ref(),
            &format!("{p}.{PREF}"),
        )?;
    }
    Ok(out)
}

/// `whenUnsatisfiable` of a topology spread constraint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenUnsatisfiable {
    /// `DoNotSchedule`: a hard constraint, checked by PodTopologySpread's Filter.
    DoNotSchedule,
    /// `ScheduleAnyway`: a soft constraint, scored by PodTopologySpread's Score.
    ScheduleAnyway,
    /// Any other value: neither filtered nor scored (`filterTopologySpreadConstraints` keeps
    /// only exact matches; the API server rejects such values).
    Other,
}

/// A compiled `v1.TopologySpreadConstraint` (v1.22 fields: no `minDomains`, node inclusion
/// policies or `matchLabelKeys`, which came later).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpreadConstraint {
    /// `maxSkew` (≥ 1 after API validation).
    pub max_skew: i32,
    /// `topologyKey`.
    pub topology_key: String,
    /// `whenUnsatisfiable`.
    pub when_unsatisfiable: WhenUnsatisfiable,
    /// `labelSelector` (nil selects no pod).
    pub selector: Selector,
}

/// Compile `spec.topologySpreadConstraints`.
///
/// # Errors
/// `(field path, message)` for a label selector that does not parse.
pub fn parse_spread_constraints(
    constraints: Option<&Vec<core::TopologySpreadConstraint>>,
) -> Result<Vec<SpreadConstraint>, (String, String)> {
    constraints
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, c)| {
            Ok(SpreadConstraint {
                max_skew: c.max_skew,
                topology_key: c.topology_key.clone(),
                when_unsatisfiable: match c.when_unsatisfiable.as_str() {
                    "DoNotSchedule" => WhenUnsatisfiable::DoNotSchedule,
                    "ScheduleAnyway" => WhenUnsatisfiable::ScheduleAnyway,
                    _ => WhenUnsatisfiable::Other,
                },
                selector: compile_label_selector(c.label_selector.as_ref()).map_err(|e| {
                    (
                        format!("spec.topologySpreadConstraints[{i}].labelSelector"),
                        e,
                    )
                })?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn expr(key: &str, op: &str, values: &[&str]) -> meta::LabelSelectorRequirement {
        meta::LabelSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: (!values.is_empty()).then(|| values.iter().map(|s| s.to_string()).collect()),
        }
    }

    /// `LabelSelectorAsSelector`: nil selects nothing, `{}` everything.
    #[test]
    fn nil_selects_nothing_and_empty_selects_everything() {
        let nothing = compile_label_selector(None).unwrap();
        assert_eq!(nothing, Selector::Nothing);
        assert!(!nothing.matches(&labels(&[])));
        assert!(!nothing.is_empty());
        let everything = compile_label_selector(Some(&meta::LabelSelector::default())).unwrap();
        assert!(everything.matches(&labels(&[("a", "b")])));
        assert!(everything.matches(&labels(&[])));
        assert!(everything.is_empty());
    }

    /// The texts `labels.NewRequirement` and `LabelSelectorAsSelector` (apimachinery v0.22)
    /// return; the value error is the one upstream's filtering_test.go expects
    /// (`Invalid value: "{{.bad-value.}}"`).
    #[test]
    fn malformed_selectors_use_upstream_texts() {
        let sel = meta::LabelSelector {
            match_expressions: Some(vec![expr("service", "In", &["{{.bad-value.}}"])]),
            ..Default::default()
        };
        assert_eq!(
            compile_label_selector(Some(&sel)).unwrap_err(),
            "values[0][service]: Invalid value: \"{{.bad-value.}}\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        );
        let sel = meta::LabelSelector {
            match_expressions: Some(vec![expr("a", "Gt", &["1"])]),
            ..Default::default()
        };
        assert_eq!(
            compile_label_selector(Some(&sel)).unwrap_err(),
            "\"Gt\" is not a valid pod selector operator"
        );
        let sel = meta::LabelSelector {
            match_expressions: Some(vec![expr("a", "In", &[])]),
            ..Default::default()
        };
        assert_eq!(
            compile_label_selector(Some(&sel)).unwrap_err(),
            "values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty"
        );
        let sel = meta::LabelSelector {
            match_expressions: Some(vec![expr("a", "Exists", &["x"])]),
            ..Default::default()
        };
        assert_eq!(
            compile_label_selector(Some(&sel)).unwrap_err(),
            "values: Invalid value: []string{\"x\"}: values set must be empty for exists and does not exist"
        );
        let sel = meta::LabelSelector {
            match_labels: Some([("a b".to_string(), "c".to_string())].into()),
            ..Default::default()
        };
        assert!(
            compile_label_selector(Some(&sel))
                .unwrap_err()
                .starts_with("key: Invalid value: \"a b\": ")
        );
    }

    /// `getNamespacesFromPodAffinityTerm` and `AffinityTerm.Matches` (namespace selector gate
    /// on): the pod's own namespace only when both `namespaces` and `namespaceSelector` are
    /// unset; an empty namespace selector matches every namespace.
    #[test]
    fn term_namespaces_follow_v1_22() {
        let term = |namespaces: Option<Vec<&str>>, ns_sel: Option<meta::LabelSelector>| {
            let t = core::PodAffinityTerm {
                label_selector: Some(meta::LabelSelector::default()),
                namespaces: namespaces.map(|v| v.into_iter().map(String::from).collect()),
                namespace_selector: ns_sel,
                topology_key: "zone".into(),
                ..Default::default()
            };
            affinity_term("own", &t, "t").unwrap()
        };
        let l = labels(&[]);
        let own = term(None, None);
        assert_eq!(own.namespaces, vec!["own".to_string()]);
        assert!(own.matches("own", &l, None) && !own.matches("other", &l, None));
        let listed = term(Some(vec!["a"]), None);
        assert!(listed.matches("a", &l, None) && !listed.matches("own", &l, None));
        let all = term(None, Some(meta::LabelSelector::default()));
        assert!(all.namespaces.is_empty());
        assert!(all.matches("anything", &l, None));
        let team = term(
            None,
            Some(meta::LabelSelector {
                match_labels: Some([("team".to_string(), "t1".to_string())].into()),
                ..Default::default()
            }),
        );
        assert!(team.matches("x", &l, Some(&labels(&[("team", "t1")]))));
        assert!(!team.matches("x", &l, Some(&labels(&[("team", "t2")]))));
        assert!(!team.matches("x", &l, None));
    }
}
