//! `TaintToleration` filter (legacy predicate `PodToleratesNodeTaints`, always on): every node
//! taint with effect `NoSchedule` or `NoExecute` must be tolerated; `PreferNoSchedule` is
//! ignored here. Follows `pkg/scheduler/framework/plugins/tainttoleration` (v1.22) and
//! `v1helper.FindMatchingUntoleratedTaint`.
//!
//! Score (legacy priority `TaintTolerationPriority`): the number of the node's `PreferNoSchedule`
//! taints not tolerated by the pod's tolerations with effect `PreferNoSchedule` or empty,
//! reverse-normalized (`100 − 100 × count / max`; every node 100 when no count is above 0). When
//! no node of the snapshot has a `PreferNoSchedule` taint, or the pod has a keyless `Exists`
//! toleration for that effect (which tolerates them all), the PreScore answers `Uniform(100)`.

use crate::framework::plugins::helper::default_normalize_score;
use crate::framework::{
    Code, CycleState, FastCheck, FilterPlugin, MAX_NODE_SCORE, ScoreMode, ScorePlugin, Status,
};
use crate::model::PodInfo;
use crate::model::{
    NodeInfo, TaintEffect, Toleration, TolerationOperator, tolerations_tolerate_taint,
};
use crate::snapshot::{NodeHot, Snapshot};

/// Plugin name.
pub const NAME: &str = "TaintToleration";

/// The TaintToleration filter.
#[derive(Debug, Default, Clone, Copy)]
pub struct TaintToleration;

impl FilterPlugin for TaintToleration {
    fn name(&self) -> &'static str {
        NAME
    }

    fn fast_check(&self, _pod: &PodInfo) -> Option<FastCheck> {
        Some(FastCheck {
            forbidden_flags: NodeHot::FILTER_TAINTS,
            ..FastCheck::default()
        })
    }

    #[inline]
    fn filter(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        match first_untolerated(pod, node) {
            None => Status::success(),
            Some(t) => Status::new(
                Code::UnschedulableAndUnresolvable,
                format!(
                    "node(s) had taint {{{}: {}}}, that the pod didn't tolerate",
                    t.key, t.value
                ),
            ),
        }
    }

    #[inline]
    fn filter_code(&self, _state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Code {
        match first_untolerated(pod, node) {
            None => Code::Success,
            Some(_) => Code::UnschedulableAndUnresolvable,
        }
    }
}

/// `FindMatchingUntoleratedTaint` over the `NoSchedule`/`NoExecute` taints: the first node
/// taint of those effects that no toleration of the pod tolerates.
#[inline]
fn first_untolerated<'a>(pod: &PodInfo, node: &'a NodeInfo) -> Option<&'a crate::model::Taint> {
    if !node.has_filter_taints {
        return None;
    }
    node.taints
        .iter()
        .find(|t| t.is_do_not_schedule() && !tolerations_tolerate_taint(&pod.tolerations, t))
}

/// CycleState key of the PreScore state (`preScoreStateKey`).
const PRE_SCORE_STATE_KEY: &str = "PreScoreTaintToleration";

/// `getAllTolerationPreferNoSchedule`: tolerations with effect `PreferNoSchedule` or empty.
struct PreScoreState {
    tolerations: Vec<Toleration>,
}

fn prefer_no_schedule_tolerations(pod: &PodInfo) -> Vec<Toleration> {
    pod.tolerations
        .iter()
        .filter(|t| t.effect.as_deref().is_none_or(|e| e == "PreferNoSchedule"))
        .cloned()
        .collect()
}

/// `countIntolerableTaintsPreferNoSchedule`.
fn count_intolerable(node: &NodeInfo, tolerations: &[Toleration]) -> i64 {
    node.taints
        .iter()
        .filter(|t| {
            t.effect == Some(TaintEffect::PreferNoSchedule)
                && !tolerations_tolerate_taint(tolerations, t)
        })
        .count() as i64
}

impl ScorePlugin for TaintToleration {
    fn name(&self) -> &'static str {
        NAME
    }

    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        _feasible: &[u32],
    ) -> Result<ScoreMode, Status> {
        if snapshot.nodes_with_prefer_no_schedule_taints() == 0 {
            // Every count is 0: reverse DefaultNormalizeScore gives every node the maximum.
            return Ok(ScoreMode::Uniform(MAX_NODE_SCORE));
        }
        let tolerations = prefer_no_schedule_tolerations(pod);
        if tolerations
            .iter()
            .any(|t| t.key.is_empty() && t.operator == TolerationOperator::Exists)
        {
            // A toleration with no key and `Exists` tolerates every PreferNoSchedule taint:
            // every count is 0 again.
            return Ok(ScoreMode::Uniform(MAX_NODE_SCORE));
        }
        state.write(PRE_SCORE_STATE_KEY, PreScoreState { tolerations });
        Ok(ScoreMode::PerNode)
    }

    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        match state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) {
            Some(s) => Ok(count_intolerable(node, &s.tolerations)),
            None => Ok(count_intolerable(
                node,
                &prefer_no_schedule_tolerations(pod),
            )),
        }
    }

    /// [`ScorePlugin::score`] over the feasible nodes, reading the PreScore state once.
    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        feasible: &[u32],
        out: &mut [i64],
    ) -> Result<(), Status> {
        let computed;
        let tolerations = match state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) {
            Some(s) => &s.tolerations,
            None => {
                computed = prefer_no_schedule_tolerations(pod);
                &computed
            }
        };
        super::score_feasible(snapshot, feasible, out, |n| {
            count_intolerable(n, tolerations)
        });
        Ok(())
    }

    fn normalize_score(
        &self,
        _state: &CycleState,
        _pod: &PodInfo,
        _snapshot: &Snapshot,
        _feasible: &[u32],
        scores: &mut [i64],
    ) -> Result<(), Status> {
        default_normalize_score(true, scores);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::framework::plugins::testutil::{filter_via_batch, node, outcome, pod, want};

    type Tol = (&'static str, &'static str, &'static str, &'static str);
    type TaintSpec = (&'static str, &'static str, &'static str);

    /// Upstream `kubernetes/kubernetes`
    /// `pkg/scheduler/framework/plugins/tainttoleration/taint_toleration_test.go`,
    /// `TestTaintTolerationFilter`: the 9 rows read from post-1.24 copies (index ids 340204713 and
    /// 145891250; rows unchanged since ~v1.18) with the v1.22 reason text
    /// `node(s) had taint {K: V}, that the pod didn't tolerate` restored (the copies read carry the
    /// PR #109119 text "had untolerated taint"). Harness as upstream: Filter only.
    #[test]
    fn test_taint_toleration_filter() {
        struct Case {
            name: &'static str,
            tolerations: Vec<Tol>,
            taints: Vec<TaintSpec>,
            want: (Code, Vec<String>),
        }
        let cases = vec![
            Case {
                name: "A pod having no tolerations can't be scheduled onto a node with nonempty taints",
                tolerations: vec![],
                taints: vec![("dedicated", "user1", "NoSchedule")],
                want: want(
                    Code::UnschedulableAndUnresolvable,
                    &["node(s) had taint {dedicated: user1}, that the pod didn't tolerate"],
                ),
            },
            Case {
                name: "A pod which can be scheduled on a dedicated node assigned to user1 with effect NoSchedule",
                tolerations: vec![("dedicated", "", "user1", "NoSchedule")],
                taints: vec![("dedicated", "user1", "NoSchedule")],
                want: want(Code::Success, &[]),
            },
            Case {
                name: "A pod which can't be scheduled on a dedicated node assigned to user2 with effect NoSchedule",
                tolerations: vec![("dedicated", "Equal", "user2", "NoSchedule")],
                taints: vec![("dedicated", "user1", "NoSchedule")],
                want: want(
                    Code::UnschedulableAndUnresolvable,
                    &["node(s) had taint {dedicated: user1}, that the pod didn't tolerate"],
                ),
            },
            Case {
                name: "A pod can be scheduled onto the node, with a toleration uses operator Exists that tolerates the taints on the node",
                tolerations: vec![("foo", "Exists", "", "NoSchedule")],
                taints: vec![("foo", "bar", "NoSchedule")],
                want: want(Code::Success, &[]),
            },
            Case {
                name: "A pod has multiple tolerations, node has multiple taints, all the taints are tolerated, pod can be scheduled onto the node",
                tolerations: vec![
                    ("dedicated", "Equal", "user2", "NoSchedule"),
                    ("foo", "Exists", "", "NoSchedule"),
                ],
                taints: vec![
                    ("dedicated", "user2", "NoSchedule"),
                    ("foo", "bar", "NoSchedule"),
                ],
                want: want(Code::Success, &[]),
            },
            Case {
                name: "A pod has a toleration that keys and values match the taint on the node, but (non-empty) effect doesn't match, can't be scheduled onto the node",
                tolerations: vec![("foo", "Equal", "bar", "PreferNoSchedule")],
                taints: vec![("foo", "bar", "NoSchedule")],
                want: want(
                    Code::UnschedulableAndUnresolvable,
                    &["node(s) had taint {foo: bar}, that the pod didn't tolerate"],
                ),
            },
            Case {
                name: "The pod has a toleration that keys and values match the taint on the node, the effect of toleration is empty, and the effect of taint is NoSchedule. Pod can be scheduled onto the node",
                tolerations: vec![("foo", "Equal", "bar", "")],
                taints: vec![("foo", "bar", "NoSchedule")],
                want: want(Code::Success, &[]),
            },
            Case {
                name: "The pod has a toleration that key and value don't match the taint on the node, but the effect of taint on node is PreferNoSchedule. Pod can be scheduled onto the node",
                tolerations: vec![("dedicated", "Equal", "user2", "NoSchedule")],
                taints: vec![("dedicated", "user1", "PreferNoSchedule")],
                want: want(Code::Success, &[]),
            },
            Case {
                name: "The pod has no toleration, but the effect of taint on node is PreferNoSchedule. Pod can be scheduled onto the node",
                tolerations: vec![],
                taints: vec![("dedicated", "user1", "PreferNoSchedule")],
                want: want(Code::Success, &[]),
            },
        ];
        for c in cases {
            let mut p = pod("pod1");
            for (k, op, v, e) in &c.tolerations {
                p = p.toleration(k, op, v, e);
            }
            let mut n = node("nodeA");
            for (k, v, e) in &c.taints {
                n = n.taint(k, v, e);
            }
            let (state, p, n) = (CycleState::new(), p.info(), n.info());
            let got = TaintToleration.filter(&state, &p, &n);
            assert_eq!(outcome(&got), c.want, "{}", c.name);
            let batch = filter_via_batch(&TaintToleration, &state, &p, &n);
            assert_eq!(outcome(&batch), c.want, "{}: filter_nodes", c.name);
        }
    }

    /// Scores through PreScore (`Uniform` stands for every node), `score_nodes` and
    /// `NormalizeScore`, as the scheduling cycle runs them.
    fn priority_scores(
        p: crate::framework::plugins::testutil::PodB,
        nodes: Vec<crate::framework::plugins::testutil::NodeB>,
    ) -> Vec<i64> {
        let snap = crate::framework::plugins::testutil::snapshot(nodes, &[]);
        let feasible: Vec<u32> = (0..snap.len() as u32).collect();
        let pi = p.info();
        let mut state = CycleState::new();
        let mut scores = vec![0; feasible.len()];
        match TaintToleration
            .pre_score(&mut state, &pi, &snap, &feasible)
            .unwrap()
        {
            ScoreMode::Uniform(v) => scores.fill(v),
            ScoreMode::PerNode => {
                TaintToleration
                    .score_nodes(&state, &pi, &snap, &feasible, &mut scores)
                    .unwrap();
                TaintToleration
                    .normalize_score(&state, &pi, &snap, &feasible, &mut scores)
                    .unwrap();
            }
        }
        scores
    }

    /// Upstream `tainttoleration/taint_toleration_test.go` `TestTaintTolerationScore` (the 5
    /// rows of the post-1.24 copy, index id 340204713, unchanged since v1.18).
    #[test]
    fn test_taint_toleration_score() {
        let with_taints = |name: &str, taints: &[TaintSpec]| {
            let mut n = node(name);
            for (k, v, e) in taints {
                n = n.taint(k, v, e);
            }
            n
        };
        let with_tols = |tols: &[Tol]| {
            let mut p = pod("pod1");
            for (k, op, v, e) in tols {
                p = p.toleration(k, op, v, e);
            }
            p
        };
        let cases: Vec<(
            &str,
            crate::framework::plugins::testutil::PodB,
            Vec<crate::framework::plugins::testutil::NodeB>,
            Vec<i64>,
        )> = vec![
            (
                "node with taints tolerated by the pod, gets a higher score than those node with intolerable taints",
                with_tols(&[("foo", "Equal", "bar", "PreferNoSchedule")]),
                vec![
                    with_taints("nodeA", &[("foo", "bar", "PreferNoSchedule")]),
                    with_taints("nodeB", &[("foo", "blah", "PreferNoSchedule")]),
                ],
                vec![100, 0],
            ),
            (
                "the nodes that all of their taints are tolerated by the pod, get the same score, no matter how many tolerable taints a node has",
                with_tols(&[
                    ("cpu-type", "Equal", "arm64", "PreferNoSchedule"),
                    ("disk-type", "Equal", "ssd", "PreferNoSchedule"),
                ]),
                vec![
                    with_taints("nodeA", &[]),
                    with_taints("nodeB", &[("cpu-type", "arm64", "PreferNoSchedule")]),
                    with_taints(
                        "nodeC",
                        &[
                            ("cpu-type", "arm64", "PreferNoSchedule"),
                            ("disk-type", "ssd", "PreferNoSchedule"),
                        ],
                    ),
                ],
                vec![100, 100, 100],
            ),
            (
                "the more intolerable taints a node has, the lower score it gets.",
                with_tols(&[("foo", "Equal", "bar", "PreferNoSchedule")]),
                vec![
                    with_taints("nodeA", &[]),
                    with_taints("nodeB", &[("cpu-type", "arm64", "PreferNoSchedule")]),
                    with_taints(
                        "nodeC",
                        &[
                            ("cpu-type", "arm64", "PreferNoSchedule"),
                            ("disk-type", "ssd", "PreferNoSchedule"),
                        ],
                    ),
                ],
                vec![100, 50, 0],
            ),
            (
                "only taints and tolerations that have effect PreferNoSchedule are checked by taints-tolerations priority function",
                with_tols(&[
                    ("cpu-type", "Equal", "arm64", "NoSchedule"),
                    ("disk-type", "Equal", "ssd", "NoSchedule"),
                ]),
                vec![
                    with_taints("nodeA", &[]),
                    with_taints("nodeB", &[("cpu-type", "arm64", "NoSchedule")]),
                    with_taints(
                        "nodeC",
                        &[
                            ("cpu-type", "arm64", "PreferNoSchedule"),
                            ("disk-type", "ssd", "PreferNoSchedule"),
                        ],
                    ),
                ],
                vec![100, 100, 0],
            ),
            (
                "Default behaviour No taints and tolerations, lands on node with no taints",
                with_tols(&[]),
                vec![
                    with_taints("nodeA", &[]),
                    with_taints("nodeB", &[("cpu-type", "arm64", "PreferNoSchedule")]),
                ],
                vec![100, 0],
            ),
        ];
        for (name, p, nodes, want) in cases {
            assert_eq!(priority_scores(p, nodes), want, "{name}");
        }
        // No PreferNoSchedule taint anywhere: the Uniform shortcut equals the per-node path.
        let nodes = || {
            vec![
                with_taints("nodeA", &[]),
                with_taints("nodeB", &[("k", "v", "NoSchedule")]),
            ]
        };
        assert_eq!(priority_scores(with_tols(&[]), nodes()), [100, 100]);
        let snap = crate::framework::plugins::testutil::snapshot(nodes(), &[]);
        let pi = pod("p").info();
        let mut raw: Vec<i64> = snap
            .nodes()
            .iter()
            .map(|n| TaintToleration.score(&CycleState::new(), &pi, n).unwrap())
            .collect();
        default_normalize_score(true, &mut raw);
        assert_eq!(raw, [100, 100]);
    }

    /// A toleration without key and with `Exists` (any effect, or PreferNoSchedule) tolerates
    /// every PreferNoSchedule taint: PreScore answers `Uniform(100)`, as the per-node path
    /// computes; with a key, or for NoSchedule only, the nodes still differ.
    #[test]
    fn blanket_toleration_scores_uniformly() {
        let nodes = || {
            vec![
                node("nodeA"),
                node("nodeB").taint("cpu-type", "arm64", "PreferNoSchedule"),
            ]
        };
        let snap = crate::framework::plugins::testutil::snapshot(nodes(), &[]);
        for effect in ["", "PreferNoSchedule"] {
            let p = pod("p").toleration("", "Exists", "", effect);
            let mode = TaintToleration
                .pre_score(&mut CycleState::new(), &p.clone().info(), &snap, &[0, 1])
                .unwrap();
            assert_eq!(
                mode,
                ScoreMode::Uniform(MAX_NODE_SCORE),
                "effect {effect:?}"
            );
            let pi = p.info();
            let mut raw: Vec<i64> = snap
                .nodes()
                .iter()
                .map(|n| TaintToleration.score(&CycleState::new(), &pi, n).unwrap())
                .collect();
            default_normalize_score(true, &mut raw);
            assert_eq!(raw, [100, 100], "effect {effect:?}");
        }
        for p in [
            pod("p").toleration("other", "Exists", "", ""),
            pod("p").toleration("", "Exists", "", "NoSchedule"),
        ] {
            assert_eq!(priority_scores(p, nodes()), [100, 0]);
        }
    }
}
