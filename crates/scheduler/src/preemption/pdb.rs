//! PodDisruptionBudgets as preemption reads them (`policy/v1`, read-only): namespace, selector,
//! `status.disruptionsAllowed` and `status.disruptedPods`, and v1.22's
//! `filterPodsWithPDBViolation` (`default_preemption.go`).

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::api::policy::v1 as policy;

use crate::model::{PodInfo, Selector, compile_label_selector};

/// One PodDisruptionBudget, compiled for [`filter_pods_with_pdb_violation`].
#[derive(Debug, Clone)]
pub struct Pdb {
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name` (for messages).
    pub name: String,
    /// `spec.selector`; `None` when it does not parse (`LabelSelectorAsSelector` failed: the
    /// PDB is skipped, as upstream does).
    pub selector: Option<Selector>,
    /// `status.disruptionsAllowed`.
    pub disruptions_allowed: i32,
    /// The keys of `status.disruptedPods`: pod names whose eviction the API server has already
    /// processed.
    pub disrupted_pods: BTreeSet<String>,
}

impl Pdb {
    /// Compile a `policy/v1` PodDisruptionBudget. A nil selector matches nothing; a selector
    /// that does not parse makes the PDB skipped (`selector` is `None`).
    pub fn from_k8s(pdb: &policy::PodDisruptionBudget) -> Pdb {
        let spec_selector = pdb.spec.as_ref().and_then(|s| s.selector.as_ref());
        let status = pdb.status.as_ref();
        Pdb {
            namespace: pdb.metadata.namespace.clone().unwrap_or_default(),
            name: pdb.metadata.name.clone().unwrap_or_default(),
            selector: compile_label_selector(spec_selector).ok(),
            disruptions_allowed: status.and_then(|s| s.disruptions_allowed).unwrap_or(0),
            disrupted_pods: status
                .and_then(|s| s.disrupted_pods.as_ref())
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default(),
        }
    }

    /// Whether this PDB covers `pod` for the violation count: same namespace, a selector that
    /// parsed, is not empty (`selector.Empty()`, which a nil selector's `Nothing` also fails)
    /// and matches the pod's labels; a pod without labels matches no PDB.
    fn covers(&self, pod: &PodInfo) -> bool {
        if pod.labels.is_empty() || self.namespace != pod.namespace {
            return false;
        }
        match &self.selector {
            Some(Selector::Match(ls)) if !ls.requirements.is_empty() => {
                Selector::Match(ls.clone()).matches(&pod.labels)
            }
            _ => false,
        }
    }
}

/// `filterPodsWithPDBViolation`: split `pods` (kept in their order) into those whose eviction
/// would violate a PDB and the others. Each PDB's `disruptionsAllowed` is a counter fresh for
/// this call; walking the pods in order, every PDB that covers a pod (and whose
/// `disruptedPods` does not already name it) is decremented, and the pod is violating when one
/// of those counters goes below zero.
pub fn filter_pods_with_pdb_violation(
    pods: &[Arc<PodInfo>],
    pdbs: &[Pdb],
) -> (Vec<Arc<PodInfo>>, Vec<Arc<PodInfo>>) {
    let mut allowed: Vec<i32> = pdbs.iter().map(|p| p.disruptions_allowed).collect();
    let mut violating = Vec::new();
    let mut non_violating = Vec::new();
    for pod in pods {
        let mut violated = false;
        if !pod.labels.is_empty() {
            for (i, pdb) in pdbs.iter().enumerate() {
                if !pdb.covers(pod) || pdb.disrupted_pods.contains(&pod.name) {
                    continue;
                }
                allowed[i] -= 1;
                if allowed[i] < 0 {
                    violated = true;
                }
            }
        }
        if violated {
            violating.push(pod.clone());
        } else {
            non_violating.push(pod.clone());
        }
    }
    (violating, non_violating)
}
