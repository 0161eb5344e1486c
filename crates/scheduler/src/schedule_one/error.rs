//! Why a cycle failed: [`ScheduleError`], and [`FitError`] with kube-scheduler's
//! `0/N nodes are available: ...` message for a pod that fits on no node.

use std::collections::BTreeMap;
use std::fmt;

use crate::framework::Status;

/// Why the pod fits on no node (`framework.FitError`): the status of every node that failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FitError {
    /// `namespace/name` of the pod.
    pub pod: String,
    /// Number of nodes in the snapshot.
    pub num_all_nodes: usize,
    /// Failed node name → status (`Diagnosis.NodeToStatusMap`).
    pub node_to_status: BTreeMap<String, Status>,
}

impl FitError {
    /// Reason → number of nodes, sorted like the message.
    pub fn reason_histogram(&self) -> BTreeMap<String, usize> {
        let mut h = BTreeMap::new();
        for s in self.node_to_status.values() {
            for r in &s.reasons {
                *h.entry(r.to_string()).or_insert(0) += 1;
            }
        }
        h
    }
}

impl fmt::Display for FitError {
    /// `0/%v nodes are available: <count> <reason>, ....` with the `"count reason"` strings
    /// sorted as strings, exactly as `FitError.Error()` builds them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = self
            .reason_histogram()
            .into_iter()
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
