//! Why a cycle failed: [`ScheduleError`], and [`FitError`] with kube-scheduler's
//! `0/N nodes are available: ...` message for a pod that fits on no node.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use crate::framework::Status;
use crate::snapshot::Snapshot;

/// The status of every node that failed (`Diagnosis.NodeToStatusMap`), as the cycle found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeStatuses {
    /// By index in the cycle's snapshot, ascending: what the filters leave. Names are resolved
    /// only when asked ([`FitError::node_to_status`]), so a pod that fits nowhere costs no
    /// per-node map.
    Indexed(Vec<(u32, Status)>),
    /// By node name (the filtering extenders report names).
    Named(BTreeMap<String, Status>),
}

/// Why the pod fits on no node (`framework.FitError`): the status of every node that failed,
/// and the reason counts of its message (computed once, when the error is built).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FitError {
    /// `namespace/name` of the pod.
    pub pod: String,
    /// Number of nodes in the snapshot.
    pub num_all_nodes: usize,
    statuses: NodeStatuses,
    /// Reason → number of nodes, in first-seen order.
    histogram: Vec<(Cow<'static, str>, usize)>,
}

impl FitError {
    /// The error for `pod` over a snapshot of `num_all_nodes` nodes; indexed statuses are
    /// sorted by index (the order the filters found them in does not matter).
    pub fn new(pod: String, num_all_nodes: usize, mut statuses: NodeStatuses) -> FitError {
        let mut histogram: Vec<(Cow<'static, str>, usize)> = Vec::new();
        let mut count = |s: &Status| {
            for r in &s.reasons {
                match histogram.iter_mut().find(|(h, _)| h == r) {
                    Some((_, c)) => *c += 1,
                    None => histogram.push((r.clone(), 1)),
                }
            }
        };
        match &mut statuses {
            NodeStatuses::Indexed(v) => {
                v.sort_unstable_by_key(|(i, _)| *i);
                v.iter().for_each(|(_, s)| count(s));
            }
            NodeStatuses::Named(m) => m.values().for_each(count),
        }
        FitError {
            pod,
            num_all_nodes,
            statuses,
            histogram,
        }
    }

    /// The failed nodes' statuses as found.
    pub fn statuses(&self) -> &NodeStatuses {
        &self.statuses
    }

    /// Number of nodes that failed.
    pub fn num_failed(&self) -> usize {
        match &self.statuses {
            NodeStatuses::Indexed(v) => v.len(),
            NodeStatuses::Named(m) => m.len(),
        }
    }

    /// Failed node name → status (`Diagnosis.NodeToStatusMap`). `snapshot` must be the one
    /// the cycle ran on (indexed statuses name its nodes); built on each call.
    pub fn node_to_status(&self, snapshot: &Snapshot) -> BTreeMap<String, Status> {
        match &self.statuses {
            NodeStatuses::Indexed(v) => {
                let nodes = snapshot.nodes();
                v.iter()
                    .filter_map(|(i, s)| Some((nodes.get(*i as usize)?.name.clone(), s.clone())))
                    .collect()
            }
            NodeStatuses::Named(m) => m.clone(),
        }
    }

    /// Reason → number of nodes, sorted like the message.
    pub fn reason_histogram(&self) -> BTreeMap<String, usize> {
        let mut h = BTreeMap::new();
        for (r, c) in &self.histogram {
            *h.entry(r.to_string()).or_insert(0) += c;
        }
        h
    }
}

impl fmt::Display for FitError {
    /// `0/%v nodes are available: <count> <reason>, ....` with the `"count reason"` strings
    /// sorted as strings, exactly as `FitError.Error()` builds them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = self
            .histogram
            .iter()
            .map(|(r, c)| format!("{c} {r}"))
            .collect();
        parts.sort();
        write!(
            f,
            "0/{} nodes are available: {}.",
            self.num_all_nodes,
            parts.join(", ")
        )
    }
}

/// A failed scheduling attempt.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    /// The snapshot has no nodes (`ErrNoNodesAvailable`).
    #[error("no nodes available to schedule pods")]
    NoNodesAvailable,
    /// No node fits.
    #[error("{0}")]
    Fit(FitError),
    /// An extender that is not ignorable failed to filter (transport error, non-200 answer,
    /// its `Error` text); the message is the extender's error as upstream passes it on.
    #[error("{message}")]
    Extender {
        /// The extender's name (URL prefix).
        extender: String,
        /// The error.
        message: String,
    },
    /// A plugin returned an error status.
    #[error("running {plugin} plugin: {message}")]
    Plugin {
        /// The plugin.
        plugin: String,
        /// The status message.
        message: String,
    },
    /// A PreFilter, Filter or Reserve plugin returned an `Error` status; `message` is the
    /// framework's whole text, as v1.22 `frameworkImpl` wraps it: `running PreFilter plugin
    /// "X": ...`, `running "X" filter plugin: ...`, `running Reserve plugin "X": ...`.
    #[error("{message}")]
    ExtensionPoint {
        /// The plugin.
        plugin: String,
        /// The error text.
        message: String,
    },
}

#[cfg(test)]
#[path = "error_test.rs"]
mod tests;
