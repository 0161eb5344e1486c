//! A fake extender for tests, shaped like upstream's `st.FakeExtender`
//! (kubernetes/kubernetes `pkg/scheduler/testing/fake_extender.go`
//! @02850301e61b0491a6efad7fb440dfa1b03cfc96) with its predicate and prioritizer functions.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::{
    Extender, ExtenderBindingArgs, ExtenderError, ExtenderFilterResult, HostPriority, Victims,
};
use crate::framework::{Code, Status};
use crate::model::{NodeInfo, PodInfo};
use crate::snapshot::Snapshot;

/// `FitPredicate`.
pub(crate) type FitPredicate = Box<dyn Fn(&PodInfo, &NodeInfo) -> Status + Send + Sync>;
/// `PriorityFunc`: `(node, score)` per node.
pub(crate) type PriorityFunc = fn(&PodInfo, &[&NodeInfo]) -> Result<Vec<(String, i64)>, String>;

/// `ErrorPredicateExtender`.
pub(crate) fn error_predicate() -> FitPredicate {
    Box::new(|_, _| Status::new(Code::Error, "some error"))
}

/// `FalsePredicateExtender`.
pub(crate) fn false_predicate() -> FitPredicate {
    Box::new(|_, n| {
        Status::new(
            Code::Unschedulable,
            format!("pod is unschedulable on the node {:?}", n.name),
        )
    })
}

/// `TruePredicateExtender`.
pub(crate) fn true_predicate() -> FitPredicate {
    Box::new(|_, _| Status::success())
}

/// `Node1PredicateExtender` / `Node2PredicateExtender`: only the named node passes.
pub(crate) fn only_node_predicate(name: &'static str) -> FitPredicate {
    Box::new(move |_, n| {
        if n.name == name {
            Status::success()
        } else {
            Status::new(
                Code::Unschedulable,
                format!("node {:?} is not allowed", n.name),
            )
        }
    })
}

/// `ErrorPrioritizerExtender`.
pub(crate) fn error_prioritizer(
    _: &PodInfo,
    _: &[&NodeInfo],
) -> Result<Vec<(String, i64)>, String> {
    Err("some error".into())
}

fn favour(name: &str, nodes: &[&NodeInfo]) -> Vec<(String, i64)> {
    nodes
        .iter()
        .map(|n| (n.name.clone(), if n.name == name { 10 } else { 1 }))
        .collect()
}

/// `Node1PrioritizerExtender`: 10 for `node1`, 1 for the others.
pub(crate) fn node1_prioritizer(
    _: &PodInfo,
    nodes: &[&NodeInfo],
) -> Result<Vec<(String, i64)>, String> {
    Ok(favour("node1", nodes))
}

/// `Node2PrioritizerExtender`: 10 for `node2`, 1 for the others.
pub(crate) fn node2_prioritizer(
    _: &PodInfo,
    nodes: &[&NodeInfo],
) -> Result<Vec<(String, i64)>, String> {
    Ok(favour("node2", nodes))
}

/// `FakeExtender`.
#[derive(Default)]
pub(crate) struct FakeExtender {
    /// `ExtenderName` (default `defaultFakeExtender`).
    pub name: String,
    /// `Predicates`, run in order per node; the first failure decides.
    pub predicates: Vec<FitPredicate>,
    /// `Prioritizers` with their weights.
    pub prioritizers: Vec<(PriorityFunc, i64)>,
    /// `Weight`.
    pub weight: i64,
    /// `UnInterested`.
    pub un_interested: bool,
    /// `Ignorable`.
    pub ignorable: bool,
    /// Not a binder (upstream's fake always binds; `fakeExtender` of scheduler_test.go does not).
    pub not_binder: bool,
    /// Calls of filter, prioritize and process preemption.
    pub calls: AtomicUsize,
    /// Bindings received.
    pub bound: Mutex<Vec<ExtenderBindingArgs>>,
}

impl FakeExtender {
    /// A fake with these predicates.
    pub(crate) fn with_predicates(predicates: Vec<FitPredicate>) -> FakeExtender {
        FakeExtender {
            predicates,
            ..FakeExtender::default()
        }
    }

    fn run_predicate(&self, pod: &PodInfo, node: &NodeInfo) -> Status {
        for p in &self.predicates {
            let s = p(pod, node);
            if !s.is_success() {
                return s;
            }
        }
        Status::success()
    }
}

impl Extender for FakeExtender {
    fn name(&self) -> &str {
        if self.name.is_empty() {
            "defaultFakeExtender"
        } else {
            &self.name
        }
    }

    fn filter(
        &self,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
    ) -> Result<ExtenderFilterResult, ExtenderError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let mut r = ExtenderFilterResult::default();
        for n in nodes {
            let s = self.run_predicate(pod, n);
            match s.code {
                Code::Success => r.nodes.push(n.name.clone()),
                Code::Unschedulable => {
                    r.failed_nodes.insert(
                        n.name.clone(),
                        format!("FakeExtender: node {:?} failed", n.name),
                    );
                }
                Code::UnschedulableAndUnresolvable => {
                    r.failed_and_unresolvable_nodes.insert(
                        n.name.clone(),
                        format!("FakeExtender: node {:?} failed and unresolvable", n.name),
                    );
                }
                _ => return Err(ExtenderError::new(s.message())),
            }
        }
        Ok(r)
    }

    fn prioritize(
        &self,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
    ) -> Result<(Vec<HostPriority>, i64), ExtenderError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let mut combined: BTreeMap<String, i64> = BTreeMap::new();
        for (f, weight) in &self.prioritizers {
            if *weight == 0 {
                continue;
            }
            for (host, score) in f(pod, nodes).map_err(ExtenderError::new)? {
                *combined.entry(host).or_insert(0) += score * weight;
            }
        }
        let list = combined
            .into_iter()
            .map(|(host, score)| HostPriority { host, score })
            .collect();
        Ok((list, self.weight))
    }

    fn bind(&self, binding: &ExtenderBindingArgs) -> Result<(), ExtenderError> {
        if self.not_binder {
            return Err(ExtenderError::new("not a binder"));
        }
        if let Ok(mut b) = self.bound.lock() {
            b.push(binding.clone());
        }
        Ok(())
    }

    fn is_binder(&self) -> bool {
        !self.not_binder
    }

    fn is_interested(&self, _pod: &PodInfo) -> bool {
        !self.un_interested
    }

    fn is_ignorable(&self) -> bool {
        self.ignorable
    }

    /// Upstream's fake always supports preemption.
    fn supports_preemption(&self) -> bool {
        true
    }

    /// Upstream's `ProcessPreemption` of an extender without a node cache
    /// (`selectVictimsOnNodeByExtender` with `NodeCacheCapable` false): a node where the
    /// predicates fail is removed, the others keep their victims; a predicate error fails the
    /// call.
    fn process_preemption(
        &self,
        pod: &PodInfo,
        victims: &BTreeMap<String, Victims>,
        snapshot: &Snapshot,
    ) -> Result<BTreeMap<String, Victims>, ExtenderError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let mut out = BTreeMap::new();
        for (name, v) in victims {
            let Some(node) = snapshot.node(name) else {
                continue;
            };
            let s = self.run_predicate(pod, node);
            match s.code {
                Code::Success => {
                    out.insert(name.clone(), v.clone());
                }
                Code::Unschedulable | Code::UnschedulableAndUnresolvable => {}
                _ => return Err(ExtenderError::new(s.message())),
            }
        }
        Ok(out)
    }
}
