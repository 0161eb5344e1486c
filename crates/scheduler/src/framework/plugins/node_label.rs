//! `NodeLabel` (legacy predicate `CheckNodeLabelPresence` via a `labelsPresence` argument; custom
//! priority via `labelPreference`): Filter requires the configured labels to be present / absent
//! on the node (values ignored); Score averages, over the preferred labels, 100 for each label
//! present (or absent) as preferred.
//!
//! Follows kubernetes/kubernetes `pkg/scheduler/framework/plugins/nodelabel/node_label.go`
//! (v1.21/v1.22 copy, index id 72569300: a Filter or Score with no configured labels passes /
//! scores 0). Arguments: [`NodeLabelArgs`].

use crate::framework::{
    Code, CycleState, FilterPlugin, MAX_NODE_SCORE, ScoreMode, ScorePlugin, Status,
};
use crate::model::NodeInfo;
use crate::model::PodInfo;
use crate::policy::NodeLabelArgs;
use crate::snapshot::Snapshot;

/// Plugin name.
pub const NAME: &str = "NodeLabel";
/// Filter failure reason (`ErrReasonPresenceViolated`).
pub const ERR_REASON_PRESENCE_VIOLATED: &str = "node(s) didn't have the requested labels";

/// The NodeLabel filter and score plugin.
#[derive(Debug, Default, Clone)]
pub struct NodeLabel {
    args: NodeLabelArgs,
}

impl NodeLabel {
    /// A plugin with `args` (checked by the Policy resolver: `NodeLabelArgs::validate`).
    pub fn new(args: NodeLabelArgs) -> NodeLabel {
        NodeLabel { args }
    }

    /// The raw score of `node`: `100 × (matching preferences) / (preferences)`, 0 without
    /// preferences.
    pub fn node_score(&self, node: &NodeInfo) -> i64 {
        let a = &self.args;
        let size = (a.present_labels_preference.len() + a.absent_labels_preference.len()) as i64;
        if size == 0 {
            return 0;
        }
        let present = a
            .present_labels_preference
            .iter()
            .filter(|l| node.labels.contains_key(*l))
            .count() as i64;
        let absent = a
            .absent_labels_preference
            .iter()
            .filter(|l| !node.labels.contains_key(*l))
            .count() as i64;
        (present + absent) * MAX_NODE_SCORE / size
    }
}

impl FilterPlugin for NodeLabel {
    fn name(&self) -> &'static str {
        NAME
    }

    fn pre_filter(&self, _state: &mut CycleState, _pod: &PodInfo, _snapshot: &Snapshot) -> Status {
        // No label to check: Filter passes every node.
        if self.args.present_labels.is_empty() && self.args.absent_labels.is_empty() {
            Status::skip()
        } else {
            Status::success()
        }
    }

    fn filter(&self, _state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        let ok = self
            .args
            .present_labels
            .iter()
            .all(|l| node.labels.contains_key(l))
            && !self
                .args
                .absent_labels
                .iter()
                .any(|l| node.labels.contains_key(l));
        if ok {
            Status::success()
        } else {
            Status::new(
                Code::UnschedulableAndUnresolvable,
                ERR_REASON_PRESENCE_VIOLATED,
            )
        }
    }
}

impl ScorePlugin for NodeLabel {
    fn name(&self) -> &'static str {
        NAME
    }

    fn pre_score(
        &self,
        _state: &mut CycleState,
        _pod: &PodInfo,
        _snapshot: &Snapshot,
        _feasible: &[u32],
    ) -> Result<ScoreMode, Status> {
        // The score depends on the node only; without preferences it is 0 everywhere.
        if self.args.present_labels_preference.is_empty()
            && self.args.absent_labels_preference.is_empty()
        {
            Ok(ScoreMode::Uniform(0))
        } else {
            Ok(ScoreMode::PerNode)
        }
    }

    fn score(&self, _state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        Ok(self.node_score(node))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::plugins::testutil::{filter_via_batch, node, pod, raw_scores};

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn args(present: &[&str], absent: &[&str]) -> NodeLabelArgs {
        NodeLabelArgs {
            present_labels: s(present),
            absent_labels: s(absent),
            ..Default::default()
        }
    }

    fn prefs(present: &[&str], absent: &[&str]) -> NodeLabelArgs {
        NodeLabelArgs {
            present_labels_preference: s(present),
            absent_labels_preference: s(absent),
            ..Default::default()
        }
    }

    /// Upstream `nodelabel/node_label_test.go` `TestNodeLabelFilter` (kubernetes/kubernetes
    /// @054d429d9f8bc8de4fc82e6cf2281e12a13fe1f2). Node labels `foo`, `bar`; only the code is
    /// compared, as upstream does. The batch entry point and PreFilter (Skip = pass) agree.
    #[test]
    fn test_node_label_filter() {
        let cases: Vec<(&str, NodeLabelArgs, Code)> = vec![
            (
                "present label does not match",
                args(&["baz"], &[]),
                Code::UnschedulableAndUnresolvable,
            ),
            (
                "absent label does not match",
                args(&[], &["baz"]),
                Code::Success,
            ),
            (
                "one of two present labels matches",
                args(&["foo", "baz"], &[]),
                Code::UnschedulableAndUnresolvable,
            ),
            (
                "one of two absent labels matches",
                args(&[], &["foo", "baz"]),
                Code::UnschedulableAndUnresolvable,
            ),
            (
                "all present labels match",
                args(&["foo", "bar"], &[]),
                Code::Success,
            ),
            (
                "all absent labels match",
                args(&[], &["foo", "bar"]),
                Code::UnschedulableAndUnresolvable,
            ),
            (
                "both present and absent label matches",
                args(&["foo"], &["bar"]),
                Code::UnschedulableAndUnresolvable,
            ),
            (
                "neither present nor absent label matches",
                args(&["foz"], &["baz"]),
                Code::UnschedulableAndUnresolvable,
            ),
            (
                "present label matches and absent label doesn't match",
                args(&["foo"], &["baz"]),
                Code::Success,
            ),
            (
                "present label doesn't match and absent label matches",
                args(&["foz"], &["bar"]),
                Code::UnschedulableAndUnresolvable,
            ),
            ("no label", args(&[], &[]), Code::Success),
        ];
        let n = node("n")
            .label("foo", "any value")
            .label("bar", "any value")
            .info();
        let p = pod("p").info();
        for (name, a, want) in cases {
            let plugin = NodeLabel::new(a);
            let state = CycleState::new();
            let got = plugin.filter(&state, &p, &n);
            assert_eq!(got.code, want, "{name}");
            if want != Code::Success {
                assert_eq!(got.reasons, [ERR_REASON_PRESENCE_VIOLATED], "{name}");
            }
            let mut pre_state = CycleState::new();
            let pre = FilterPlugin::pre_filter(&plugin, &mut pre_state, &p, &Snapshot::new());
            let via_framework = if pre.is_skip() {
                Code::Success
            } else {
                filter_via_batch(&plugin, &pre_state, &p, &n).code
            };
            assert_eq!(via_framework, want, "{name}: PreFilter + filter_nodes");
        }
    }

    /// Upstream `TestNodeLabelScore` (@054d429d): node `machine1` with labels `foo`, `bar`
    /// (empty values); raw `Score()` compared. The PreScore `Uniform(0)` shortcut for "no label
    /// preference" is checked against `score` too.
    #[test]
    fn test_node_label_score() {
        let cases: Vec<(i64, NodeLabelArgs, &str)> = vec![
            (
                MAX_NODE_SCORE,
                prefs(&["foo"], &[]),
                "one present label match",
            ),
            (0, prefs(&["somelabel"], &[]), "one present label mismatch"),
            (
                MAX_NODE_SCORE,
                prefs(&["foo", "bar"], &[]),
                "two present labels match",
            ),
            (
                0,
                prefs(&["somelabel1", "somelabel2"], &[]),
                "two present labels mismatch",
            ),
            (
                MAX_NODE_SCORE / 2,
                prefs(&["foo", "somelabel"], &[]),
                "two present labels only one matches",
            ),
            (0, prefs(&[], &["foo"]), "one absent label match"),
            (
                MAX_NODE_SCORE,
                prefs(&[], &["somelabel"]),
                "one absent label mismatch",
            ),
            (0, prefs(&[], &["foo", "bar"]), "two absent labels match"),
            (
                MAX_NODE_SCORE,
                prefs(&[], &["somelabel1", "somelabel2"]),
                "two absent labels mismatch",
            ),
            (
                MAX_NODE_SCORE / 2,
                prefs(&[], &["foo", "somelabel"]),
                "two absent labels only one matches",
            ),
            (
                MAX_NODE_SCORE,
                prefs(&["foo", "bar"], &["somelabel1", "somelabel2"]),
                "two present labels match, two absent labels mismatch",
            ),
            (
                0,
                prefs(&["somelabel1", "somelabel2"], &["foo", "bar"]),
                "two present labels both mismatch, two absent labels both match",
            ),
            (
                3 * MAX_NODE_SCORE / 4,
                prefs(&["foo", "somelabel"], &["somelabel1", "somelabel2"]),
                "two present labels one matches, two absent labels mismatch",
            ),
            (0, prefs(&[], &[]), "no label preference"),
        ];
        for (want, a, name) in cases {
            let plugin = NodeLabel::new(a);
            let scores = raw_scores(
                &plugin,
                pod("p"),
                vec![node("machine1").label("foo", "").label("bar", "")],
                &[],
            );
            assert_eq!(scores, [want], "{name}");
            let mut state = CycleState::new();
            let n = node("machine1").label("foo", "").label("bar", "").info();
            let mut snap = Snapshot::new();
            snap.add_node(n).ok();
            if let Ok(ScoreMode::Uniform(v)) =
                plugin.pre_score(&mut state, &pod("p").info(), &snap, &[0])
            {
                assert_eq!(v, want, "{name}: Uniform");
            }
        }
    }
}
