//! Label selectors: `metav1.LabelSelector`, Service/ReplicationController selector maps and
//! `v1.NodeSelector` terms, compiled once into requirement lists and matched against label maps.
//!
//! Semantics follow `k8s.io/apimachinery/pkg/labels/selector.go` (label requirements) and
//! `k8s.io/component-helpers/scheduling/corev1/nodeaffinity` (node selector terms: terms are
//! ORed, the expressions of one term ANDed, an empty term or an empty term list matches nothing,
//! `matchFields` supports only `metadata.name`; a term whose expressions do not parse, e.g. an
//! invalid label key or value as `labels.NewRequirement` checks them, matches nothing).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;

/// Labels of an object: key → value.
pub type Labels = BTreeMap<String, String>;

/// One requirement of a selector (`key op values`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    /// Label key.
    pub key: String,
    /// Operator.
    pub op: Operator,
    /// Operand values (one for `Equals`, any for `In`/`NotIn`, one integer for `Gt`/`Lt`).
    pub values: Vec<String>,
}

/// Selector operators (`labels.Operator` and `v1.NodeSelectorOperator`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    /// `key=value` (from `matchLabels` or a selector map).
    Equals,
    /// `key in (values)`.
    In,
    /// `key notin (values)`: also true when the key is absent.
    NotIn,
    /// `key` present.
    Exists,
    /// `!key`.
    DoesNotExist,
    /// Value parses as an integer greater than the operand (node selectors only).
    Gt,
    /// Value parses as an integer less than the operand (node selectors only).
    Lt,
}

impl Requirement {
    /// Whether `labels` satisfy this requirement.
    pub fn matches(&self, labels: &Labels) -> bool {
        let v = labels.get(&self.key);
        match self.op {
            Operator::Equals | Operator::In => {
                v.is_some_and(|v| self.values.iter().any(|x| x == v))
            }
            Operator::NotIn => v.is_none_or(|v| !self.values.iter().any(|x| x == v)),
            Operator::Exists => v.is_some(),
            Operator::DoesNotExist => v.is_none(),
            Operator::Gt | Operator::Lt => {
                let (Some(v), Some(operand)) = (v, self.values.first()) else {
                    return false;
                };
                let (Ok(v), Ok(operand)) = (v.parse::<i64>(), operand.parse::<i64>()) else {
                    return false;
                };
                if self.op == Operator::Gt {
                    v > operand
                } else {
                    v < operand
                }
            }
        }
    }
}

/// A label selector: all requirements must match. An *empty* selector is kept distinct from
/// "nothing selects" because callers treat them differently (see [`LabelSelector::is_empty`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector {
    /// ANDed requirements.
    pub requirements: Vec<Requirement>,
}

/// A `matchExpressions` operator that is not `In`, `NotIn`, `Exists` or `DoesNotExist` (the
/// operator as written); the message is `"X" is not a valid label selector operator`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a valid label selector operator")]
pub struct InvalidOperator(pub String);

impl LabelSelector {
    /// `labels.SelectorFromSet(map)`: one `Equals` requirement per entry.
    pub fn from_map(map: &BTreeMap<String, String>) -> Self {
        LabelSelector {
            requirements: map
                .iter()
                .map(|(k, v)| Requirement {
                    key: k.clone(),
                    op: Operator::Equals,
                    values: vec![v.clone()],
                })
                .collect(),
        }
    }

    /// `metav1.LabelSelectorAsSelector`: `matchLabels` and `matchExpressions` ANDed.
    ///
    /// # Errors
    /// [`InvalidOperator`] when an expression uses an operator other than `In`, `NotIn`,
    /// `Exists`, `DoesNotExist`.
    pub fn from_label_selector(sel: &meta::LabelSelector) -> Result<Self, InvalidOperator> {
        let mut out = LabelSelector::default();
        if let Some(ml) = &sel.match_labels {
            out.requirements
                .extend(LabelSelector::from_map(ml).requirements);
        }
        for e in sel.match_expressions.iter().flatten() {
            let op = match e.operator.as_str() {
                "In" => Operator::In,
                "NotIn" => Operator::NotIn,
                "Exists" => Operator::Exists,
                "DoesNotExist" => Operator::DoesNotExist,
                other => return Err(InvalidOperator(other.to_string())),
            };
            out.requirements.push(Requirement {
                key: e.key.clone(),
                op,
                values: e.values.clone().unwrap_or_default(),
            });
        }
        Ok(out)
    }

    /// True when there are no requirements (`labels.Selector.Empty()`).
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether all requirements match (an empty selector matches everything).
    pub fn matches(&self, labels: &Labels) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }
}

/// One compiled `NodeSelectorTerm`. `None` fields mean the term failed to parse and never
/// matches (v1.22 "ignore parsing errors for backwards compatibility": other terms still count).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSelectorTerm {
    /// `matchExpressions` on node labels.
    pub expressions: Vec<Requirement>,
    /// `matchFields` on `metadata.name` (`In`/`NotIn` only).
    pub fields: Vec<Requirement>,
    /// False when the term is empty or invalid: such a term matches nothing.
    pub valid: bool,
}

/// A compiled `v1.NodeSelector` (required node affinity): terms ORed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeSelector {
    /// The terms; an empty list matches no node.
    pub terms: Vec<NodeSelectorTerm>,
}

fn node_op(op: &str) -> Option<Operator> {
    Some(match op {
        "In" => Operator::In,
        "NotIn" => Operator::NotIn,
        "Exists" => Operator::Exists,
        "DoesNotExist" => Operator::DoesNotExist,
        "Gt" => Operator::Gt,
        "Lt" => Operator::Lt,
        _ => return None,
    })
}

fn compile_requirement(r: &core::NodeSelectorRequirement, fields: bool) -> Option<Requirement> {
    let op = node_op(&r.operator)?;
    let values = r.values.clone().unwrap_or_default();
    let valid = match op {
        Operator::In | Operator::NotIn => !values.is_empty(),
        Operator::Exists | Operator::DoesNotExist => values.is_empty(),
        Operator::Gt | Operator::Lt => values.len() == 1 && values[0].parse::<i64>().is_ok(),
        Operator::Equals => false,
    };
    if !valid {
        return None;
    }
    // `matchFields` accepts only `metadata.name` with `In`/`NotIn` and exactly one value.
    if fields
        && (r.key != "metadata.name"
            || !matches!(op, Operator::In | Operator::NotIn)
            || values.len() != 1)
    {
        return None;
    }
    // `labels.NewRequirement` validates the key and every value of a label expression.
    if !fields && (!is_qualified_name(&r.key) || !values.iter().all(|v| is_valid_label_value(v))) {
        return None;
    }
    Some(Requirement {
        key: r.key.clone(),
        op,
        values,
    })
}

/// One name part of a qualified name or a non-empty label value: at most 63 characters of
/// `[A-Za-z0-9._-]`, starting and ending with an alphanumeric character.
fn is_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// `validation.IsDNS1123Subdomain`: at most 253 characters, dot-separated labels of
/// `[a-z0-9-]` that start and end with `[a-z0-9]`.
fn is_dns1123_subdomain(s: &str) -> bool {
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|l| {
            let b = l.as_bytes();
            !b.is_empty()
                && alnum(&b[0])
                && alnum(&b[b.len() - 1])
                && b.iter().all(|c| alnum(c) || *c == b'-')
        })
}

/// `validation.IsQualifiedName` (label keys): a name part with an optional DNS-subdomain
/// prefix and `/`.
pub fn is_qualified_name(key: &str) -> bool {
    match key.split_once('/') {
        None => is_qualified_name_part(key),
        Some((prefix, name)) => {
            is_dns1123_subdomain(prefix) && !name.contains('/') && is_qualified_name_part(name)
        }
    }
}

/// `validation.IsValidLabelValue`: empty, or a name part (at most 63 characters of
/// `[A-Za-z0-9._-]`, alphanumeric at both ends).
pub fn is_valid_label_value(value: &str) -> bool {
    value.is_empty() || is_qualified_name_part(value)
}

impl NodeSelectorTerm {
    /// Compile one `v1.NodeSelectorTerm` (an empty or unparsable term is kept with
    /// `valid: false`).
    pub fn compile(t: &core::NodeSelectorTerm) -> Self {
        let exprs: Option<Vec<_>> = t
            .match_expressions
            .iter()
            .flatten()
            .map(|r| compile_requirement(r, false))
            .collect();
        let fields: Option<Vec<_>> = t
            .match_fields
            .iter()
            .flatten()
            .map(|r| compile_requirement(r, true))
            .collect();
        match (exprs, fields) {
            (Some(e), Some(f)) if !(e.is_empty() && f.is_empty()) => NodeSelectorTerm {
                expressions: e,
                fields: f,
                valid: true,
            },
            _ => NodeSelectorTerm {
                expressions: Vec::new(),
                fields: Vec::new(),
                valid: false,
            },
        }
    }

    /// `nodeSelectorTerm.match` (component-helpers nodeaffinity, v1.22): a valid term matches
    /// when all its expressions match the labels and, if the node has a name, all its
    /// `metadata.name` fields match it.
    pub fn matches_node(&self, name: &str, labels: &Labels) -> bool {
        self.valid
            && self.expressions.iter().all(|r| r.matches(labels))
            && (name.is_empty()
                || self.fields.iter().all(|r| {
                    let in_set = r.values.iter().any(|v| v == name);
                    if r.op == Operator::In {
                        in_set
                    } else {
                        !in_set
                    }
                }))
    }
}

impl NodeSelector {
    /// Compile a `v1.NodeSelector`.
    pub fn compile(sel: &core::NodeSelector) -> Self {
        let terms = sel
            .node_selector_terms
            .iter()
            .map(NodeSelectorTerm::compile)
            .collect();
        NodeSelector { terms }
    }

    /// Whether a node with `name` and `labels` matches any term.
    pub fn matches(&self, name: &str, labels: &Labels) -> bool {
        self.terms.iter().any(|t| {
            t.valid
                && t.expressions.iter().all(|r| r.matches(labels))
                && t.fields.iter().all(|r| {
                    let in_set = r.values.iter().any(|v| v == name);
                    if r.op == Operator::In {
                        in_set
                    } else {
                        !in_set
                    }
                })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn req(key: &str, op: &str, values: &[&str]) -> core::NodeSelectorRequirement {
        core::NodeSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: if values.is_empty() {
                None
            } else {
                Some(values.iter().map(|s| s.to_string()).collect())
            },
        }
    }

    #[test]
    fn node_selector_terms_are_ored_and_expressions_anded() {
        let sel = NodeSelector::compile(&core::NodeSelector {
            node_selector_terms: vec![
                core::NodeSelectorTerm {
                    match_expressions: Some(vec![
                        req("foo", "In", &["bar"]),
                        req("n", "Gt", &["5"]),
                    ]),
                    match_fields: None,
                },
                core::NodeSelectorTerm {
                    match_expressions: None,
                    match_fields: Some(vec![req("metadata.name", "In", &["node-b"])]),
                },
            ],
        });
        assert!(sel.matches("x", &labels(&[("foo", "bar"), ("n", "6")])));
        assert!(!sel.matches("x", &labels(&[("foo", "bar"), ("n", "5")])));
        assert!(sel.matches("node-b", &labels(&[])));
        assert!(!sel.matches("node-c", &labels(&[])));
    }

    #[test]
    fn empty_and_invalid_terms_match_nothing() {
        let empty = NodeSelector::compile(&core::NodeSelector {
            node_selector_terms: vec![],
        });
        assert!(!empty.matches("a", &labels(&[])));
        let empty_term = NodeSelector::compile(&core::NodeSelector {
            node_selector_terms: vec![core::NodeSelectorTerm::default()],
        });
        assert!(!empty_term.matches("a", &labels(&[])));
        let bad = NodeSelector::compile(&core::NodeSelector {
            node_selector_terms: vec![
                core::NodeSelectorTerm {
                    match_expressions: Some(vec![req("n", "Gt", &["x"])]),
                    match_fields: None,
                },
                core::NodeSelectorTerm {
                    match_expressions: Some(vec![req("a", "Exists", &[])]),
                    match_fields: None,
                },
            ],
        });
        assert!(bad.matches("a", &labels(&[("a", "1")])));
        assert!(!bad.matches("a", &labels(&[("n", "9")])));
    }

    #[test]
    fn label_keys_and_values_are_validated_like_new_requirement() {
        for key in [
            "foo",
            "GPU",
            "kubernetes.io/hostname",
            "topology.kubernetes.io/zone",
            "alibabacloud.com/gpu-card-model",
        ] {
            assert!(is_qualified_name(key), "{key}");
        }
        for key in ["", "/a", "a/", "a/b/c", "Example.com/a", "-a", "a b"] {
            assert!(!is_qualified_name(key), "{key}");
        }
        assert!(is_valid_label_value(""));
        assert!(is_valid_label_value("0204"));
        assert!(!is_valid_label_value("invalid value: ___@#$%^"));
        assert!(!is_valid_label_value(&"a".repeat(64)));
        // A term with an invalid value fails to parse and matches nothing.
        let sel = NodeSelector::compile(&core::NodeSelector {
            node_selector_terms: vec![core::NodeSelectorTerm {
                match_expressions: Some(vec![req("foo", "NotIn", &["bad value"])]),
                match_fields: None,
            }],
        });
        assert!(!sel.matches("a", &labels(&[("foo", "bar")])));
    }

    #[test]
    fn label_selector_not_in_matches_absent_keys() {
        let s = LabelSelector {
            requirements: vec![Requirement {
                key: "env".into(),
                op: Operator::NotIn,
                values: vec!["prod".into()],
            }],
        };
        assert!(s.matches(&labels(&[])));
        assert!(!s.matches(&labels(&[("env", "prod")])));
        assert!(LabelSelector::default().matches(&labels(&[("a", "b")])));
    }
}
