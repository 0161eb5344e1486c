//! Test builders for the topology plugins (InterPodAffinity, PodTopologySpread), shaped like
//! upstream's `createPodWithAffinityTerms`, `st.MakePod().SpreadConstraint(...)`,
//! `st.MakeLabelSelector()` and `NodeAffinityIn`.
#![allow(clippy::unwrap_used, dead_code, missing_docs)]

use std::sync::Arc;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;

use super::testutil::{NodeB, PodB, pod};
use crate::model::NodeInfo;
use crate::snapshot::Snapshot;

/// `st.MakePod().Name(name)`: namespace `""` as upstream's builder leaves it.
pub fn st_pod(name: &str) -> PodB {
    pod(name).namespace("")
}

/// A `metav1.LabelSelectorRequirement`.
pub fn expr(key: &str, op: &str, values: &[&str]) -> meta::LabelSelectorRequirement {
    meta::LabelSelectorRequirement {
        key: key.into(),
        operator: op.into(),
        values: (!values.is_empty()).then(|| values.iter().map(|s| s.to_string()).collect()),
    }
}

/// A `metav1.LabelSelector` of match expressions `(key, operator, values)`.
pub fn exprs(list: &[(&str, &str, &[&str])]) -> meta::LabelSelector {
    meta::LabelSelector {
        match_expressions: Some(list.iter().map(|(k, o, v)| expr(k, o, v)).collect()),
        match_labels: None,
    }
}

/// `st.MakeLabelSelector().Exists(key).Obj()`.
pub fn sel_exists(key: &str) -> meta::LabelSelector {
    exprs(&[(key, "Exists", &[])])
}

/// `st.MakeLabelSelector().Label(k, v)...Obj()`: `matchLabels`.
pub fn sel_labels(pairs: &[(&str, &str)]) -> meta::LabelSelector {
    meta::LabelSelector {
        match_labels: Some(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        ),
        match_expressions: None,
    }
}

/// A `v1.PodAffinityTerm` with a `labelSelector` of match expressions and a topology key.
pub fn term(list: &[(&str, &str, &[&str])], topology_key: &str) -> core::PodAffinityTerm {
    core::PodAffinityTerm {
        label_selector: Some(exprs(list)),
        topology_key: topology_key.into(),
        ..Default::default()
    }
}

/// `term` with `namespaces` and a `namespaceSelector`.
pub fn term_ns(
    mut t: core::PodAffinityTerm,
    namespaces: &[&str],
    namespace_selector: Option<meta::LabelSelector>,
) -> core::PodAffinityTerm {
    if !namespaces.is_empty() {
        t.namespaces = Some(namespaces.iter().map(|s| s.to_string()).collect());
    }
    t.namespace_selector = namespace_selector;
    t
}

/// A `v1.WeightedPodAffinityTerm`.
pub fn weighted(weight: i32, t: core::PodAffinityTerm) -> core::WeightedPodAffinityTerm {
    core::WeightedPodAffinityTerm {
        weight,
        pod_affinity_term: t,
    }
}

/// An `Affinity` with preferred pod affinity and anti-affinity terms.
pub fn preferred_affinity(
    affinity: Vec<core::WeightedPodAffinityTerm>,
    anti_affinity: Vec<core::WeightedPodAffinityTerm>,
) -> core::Affinity {
    core::Affinity {
        pod_affinity: (!affinity.is_empty()).then(|| core::PodAffinity {
            preferred_during_scheduling_ignored_during_execution: Some(affinity),
            ..Default::default()
        }),
        pod_anti_affinity: (!anti_affinity.is_empty()).then(|| core::PodAntiAffinity {
            preferred_during_scheduling_ignored_during_execution: Some(anti_affinity),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// An `Affinity` with required pod affinity terms only.
pub fn required_affinity(affinity: Vec<core::PodAffinityTerm>) -> core::Affinity {
    core::Affinity {
        pod_affinity: Some(core::PodAffinity {
            required_during_scheduling_ignored_during_execution: Some(affinity),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// upstream interpodaffinity's `createPodWithAffinityTerms(namespace, nodeName, labels,
/// affinity, antiAffinity)`: a pod with both required lists set (either may be empty).
pub fn with_affinity_terms(
    namespace: &str,
    node_name: &str,
    labels: &[(&str, &str)],
    affinity: Vec<core::PodAffinityTerm>,
    anti_affinity: Vec<core::PodAffinityTerm>,
) -> PodB {
    let mut b = pod("").namespace(namespace).labels(labels);
    if !node_name.is_empty() {
        b = b.node(node_name);
    }
    b.affinity(core::Affinity {
        pod_affinity: Some(core::PodAffinity {
            required_during_scheduling_ignored_during_execution: (!affinity.is_empty())
                .then_some(affinity),
            ..Default::default()
        }),
        pod_anti_affinity: Some(core::PodAntiAffinity {
            required_during_scheduling_ignored_during_execution: (!anti_affinity.is_empty())
                .then_some(anti_affinity),
            ..Default::default()
        }),
        ..Default::default()
    })
}

/// A `v1.Namespace` with labels.
pub fn namespace(name: &str, labels: &[(&str, &str)]) -> core::Namespace {
    core::Namespace {
        metadata: meta::ObjectMeta {
            name: Some(name.into()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// upstream `cache.NewSnapshot(pods, nodes)` plus a namespace lister: pods on nodes that are
/// not in the list are left out (upstream keeps them on a NodeInfo without a node, which the
/// plugins skip).
pub fn topology_snapshot(
    nodes: Vec<NodeB>,
    pods: &[PodB],
    namespaces: &[core::Namespace],
) -> Snapshot {
    let mut s = Snapshot::new();
    for n in nodes {
        s.add_node(NodeInfo::from_node(n.0).unwrap()).unwrap();
    }
    for p in pods {
        let pi = p.clone().info();
        let _ = s.add_pod(Arc::new(pi), None, None);
    }
    for ns in namespaces {
        s.upsert_namespace(ns);
    }
    s
}

impl PodB {
    /// Set `metadata.name`.
    pub fn name(mut self, name: &str) -> Self {
        self.0.metadata.name = Some(name.into());
        self
    }

    /// Set every label of `pairs`.
    pub fn labels(mut self, pairs: &[(&str, &str)]) -> Self {
        for (k, v) in pairs {
            self = self.label(k, v);
        }
        self
    }

    fn affinity_mut(&mut self) -> &mut core::Affinity {
        self.0
            .spec
            .get_or_insert_with(Default::default)
            .affinity
            .get_or_insert_with(Default::default)
    }

    /// Set `spec.affinity.podAffinity` and `podAntiAffinity` from `a` (node affinity kept).
    pub fn affinity(mut self, a: core::Affinity) -> Self {
        let dst = self.affinity_mut();
        dst.pod_affinity = a.pod_affinity;
        dst.pod_anti_affinity = a.pod_anti_affinity;
        self
    }

    /// `st.MakePod().SpreadConstraint(maxSkew, topologyKey, whenUnsatisfiable, selector)`.
    pub fn spread_constraint(
        mut self,
        max_skew: i32,
        topology_key: &str,
        when_unsatisfiable: &str,
        selector: Option<meta::LabelSelector>,
    ) -> Self {
        self.0
            .spec
            .get_or_insert_with(Default::default)
            .topology_spread_constraints
            .get_or_insert_with(Default::default)
            .push(core::TopologySpreadConstraint {
                max_skew,
                topology_key: topology_key.into(),
                when_unsatisfiable: when_unsatisfiable.into(),
                label_selector: selector,
                ..Default::default()
            });
        self
    }

    fn node_affinity_req(mut self, key: &str, op: &str, values: &[&str]) -> Self {
        self.affinity_mut().node_affinity = Some(core::NodeAffinity {
            required_during_scheduling_ignored_during_execution: Some(core::NodeSelector {
                node_selector_terms: vec![core::NodeSelectorTerm {
                    match_expressions: Some(vec![core::NodeSelectorRequirement {
                        key: key.into(),
                        operator: op.into(),
                        values: Some(values.iter().map(|s| s.to_string()).collect()),
                    }]),
                    match_fields: None,
                }],
            }),
            ..Default::default()
        });
        self
    }

    /// `st.MakePod().NodeAffinityIn(key, values)`.
    pub fn node_affinity_in(self, key: &str, values: &[&str]) -> Self {
        self.node_affinity_req(key, "In", values)
    }

    /// `st.MakePod().NodeAffinityNotIn(key, values)`.
    pub fn node_affinity_not_in(self, key: &str, values: &[&str]) -> Self {
        self.node_affinity_req(key, "NotIn", values)
    }
}

impl NodeB {
    /// Set every label of `pairs`.
    pub fn labels(mut self, pairs: &[(&str, &str)]) -> Self {
        for (k, v) in pairs {
            self = self.label(k, v);
        }
        self
    }
}
