//! `NodePreferAvoidPods` (legacy priority `NodePreferAvoidPodsPriority`, default weight 10000):
//! a node whose `scheduler.alpha.kubernetes.io/preferAvoidPods` annotation lists the pod's
//! controlling ReplicationController or ReplicaSet (same kind and uid) scores 0, every other
//! node 100. Pods without such a controller (none, or another kind) score 100 everywhere, as do
//! nodes whose annotation does not parse.
//!
//! Follows kubernetes/kubernetes `pkg/scheduler/framework/plugins/nodepreferavoidpods/node_prefer_avoid_pods.go`
//! @05c351a9037bd79bf88c56171a951c3097b658da (unchanged to v1.22) and
//! `v1helper.GetAvoidPodsFromNodeAnnotations`. The annotation is parsed once per node
//! ([`NodeInfo::prefer_avoid_pods`]), not per pod and node.

use crate::framework::{CycleState, MAX_NODE_SCORE, ScoreMode, ScorePlugin, Status};
use crate::model::NodeInfo;
use crate::model::PodInfo;
use crate::snapshot::Snapshot;

/// Plugin name.
pub const NAME: &str = "NodePreferAvoidPods";

/// CycleState key of the PreScore state.
const PRE_SCORE_STATE_KEY: &str = "PreScoreNodePreferAvoidPods";

/// The NodePreferAvoidPods score plugin.
#[derive(Debug, Default, Clone, Copy)]
pub struct NodePreferAvoidPods;

/// The pod's controlling RC/RS as `(kind, uid)`.
struct PreScoreState {
    controller: (String, String),
}

/// `metav1.GetControllerOf(pod)` when its kind is `ReplicationController` or `ReplicaSet`.
fn controller_ref(pod: &PodInfo) -> Option<(String, String)> {
    let owner = pod.controller.as_ref()?;
    matches!(owner.kind.as_str(), "ReplicationController" | "ReplicaSet")
        .then(|| (owner.kind.clone(), owner.uid.clone()))
}

impl ScorePlugin for NodePreferAvoidPods {
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
        // No RC/RS controller, or no node avoids anything: every node scores 100.
        let Some(controller) = controller_ref(pod) else {
            return Ok(ScoreMode::Uniform(MAX_NODE_SCORE));
        };
        if snapshot.nodes_with_prefer_avoid_pods() == 0 {
            return Ok(ScoreMode::Uniform(MAX_NODE_SCORE));
        }
        state.write(PRE_SCORE_STATE_KEY, PreScoreState { controller });
        Ok(ScoreMode::PerNode)
    }

    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        Ok(match state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) {
            Some(s) => node_score(&s.controller, node),
            // Without PreScore, compute it as upstream's Score does.
            None => match controller_ref(pod) {
                Some(c) => node_score(&c, node),
                None => MAX_NODE_SCORE,
            },
        })
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
        let controller = match state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) {
            Some(s) => &s.controller,
            None => match controller_ref(pod) {
                Some(c) => {
                    computed = c;
                    &computed
                }
                None => {
                    out.fill(MAX_NODE_SCORE);
                    return Ok(());
                }
            },
        };
        super::score_feasible(snapshot, feasible, out, |n| node_score(controller, n));
        Ok(())
    }
}

/// 0 when `node`'s annotation lists the pod's controller `(kind, uid)`, else 100.
fn node_score(controller: &(String, String), node: &NodeInfo) -> i64 {
    let avoided = node
        .prefer_avoid_pods
        .iter()
        .any(|(kind, uid)| *kind == controller.0 && *uid == controller.1);
    if avoided { 0 } else { MAX_NODE_SCORE }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::framework::plugins::testutil::{NodeB, PodB, node, pod};
    use crate::model::{ANNOTATION_PREFER_AVOID_PODS, parse_prefer_avoid_pods};

    const ANNOTATIONS1: &str = r#"
							{
							    "preferAvoidPods": [
							        {
							            "podSignature": {
							                "podController": {
							                    "apiVersion": "v1",
							                    "kind": "ReplicationController",
							                    "name": "foo",
							                    "uid": "abcdef123456",
							                    "controller": true
							                }
							            },
							            "reason": "some reason",
							            "message": "some message"
							        }
							    ]
							}"#;
    const ANNOTATIONS2: &str = r#"
							{
							    "preferAvoidPods": [
							        {
							            "podSignature": {
							                "podController": {
							                    "apiVersion": "v1",
							                    "kind": "ReplicaSet",
							                    "name": "foo",
							                    "uid": "qwert12345",
							                    "controller": true
							                }
							            },
							            "reason": "some reason",
							            "message": "some message"
							        }
							    ]
							}"#;

    fn test_nodes() -> Vec<NodeB> {
        vec![
            node("machine1").annotation(ANNOTATION_PREFER_AVOID_PODS, ANNOTATIONS1),
            node("machine2").annotation(ANNOTATION_PREFER_AVOID_PODS, ANNOTATIONS2),
            node("machine3"),
        ]
    }

    fn scores(p: PodB) -> Vec<i64> {
        let mut snap = Snapshot::new();
        for n in test_nodes() {
            snap.add_node(n.info()).unwrap();
        }
        let feasible = [0, 1, 2];
        let pi = p.info();
        let mut state = CycleState::new();
        let mut out = vec![0; 3];
        match NodePreferAvoidPods
            .pre_score(&mut state, &pi, &snap, &feasible)
            .unwrap()
        {
            ScoreMode::Uniform(v) => out.fill(v),
            ScoreMode::PerNode => NodePreferAvoidPods
                .score_nodes(&state, &pi, &snap, &feasible, &mut out)
                .unwrap(),
        }
        // Score without PreScore state (upstream's Score alone) agrees.
        let direct: Vec<i64> = snap
            .nodes()
            .iter()
            .map(|n| {
                NodePreferAvoidPods
                    .score(&CycleState::new(), &pi, n)
                    .unwrap()
            })
            .collect();
        assert_eq!(out, direct);
        out
    }

    /// Upstream `nodepreferavoidpods/node_prefer_avoid_pods_test.go` `TestNodePreferAvoidPods`
    /// (kubernetes/kubernetes @054d429d9f8bc8de4fc82e6cf2281e12a13fe1f2).
    #[test]
    fn test_node_prefer_avoid_pods() {
        let cases = vec![
            (
                "pod managed by ReplicationController should avoid a node, this node get lowest priority score",
                pod("p").owner_ref("ReplicationController", "foo", "abcdef123456", Some(true)),
                vec![0, MAX_NODE_SCORE, MAX_NODE_SCORE],
            ),
            (
                "ownership by random controller should be ignored",
                pod("p").owner_ref("RandomController", "foo", "abcdef123456", Some(true)),
                vec![MAX_NODE_SCORE, MAX_NODE_SCORE, MAX_NODE_SCORE],
            ),
            (
                "owner without Controller field set should be ignored",
                pod("p").owner_ref("ReplicationController", "foo", "abcdef123456", None),
                vec![MAX_NODE_SCORE, MAX_NODE_SCORE, MAX_NODE_SCORE],
            ),
            (
                "pod managed by ReplicaSet should avoid a node, this node get lowest priority score",
                pod("p").owner_ref("ReplicaSet", "foo", "qwert12345", Some(true)),
                vec![MAX_NODE_SCORE, 0, MAX_NODE_SCORE],
            ),
        ];
        for (name, p, want) in cases {
            assert_eq!(scores(p), want, "{name}");
        }
    }

    #[test]
    fn annotation_parsing_follows_encoding_json() {
        let parsed = parse_prefer_avoid_pods(ANNOTATIONS1).unwrap();
        assert_eq!(
            parsed,
            [(
                "ReplicationController".to_string(),
                "abcdef123456".to_string()
            )]
        );
        // Keys match case-insensitively; null is empty.
        let ci = r#"{"PreferAvoidPods":[{"PodSignature":{"PODCONTROLLER":{"Kind":"ReplicaSet","UID":"u"}}},null]}"#;
        assert_eq!(
            parse_prefer_avoid_pods(ci).unwrap(),
            [
                ("ReplicaSet".to_string(), "u".to_string()),
                (String::new(), String::new())
            ]
        );
        assert_eq!(parse_prefer_avoid_pods("null").unwrap(), []);
        // Broken JSON or a wrong type: the annotation is ignored (node scores 100).
        assert!(parse_prefer_avoid_pods("{").is_none());
        assert!(parse_prefer_avoid_pods(r#"{"preferAvoidPods":{}}"#).is_none());
        assert!(
            parse_prefer_avoid_pods(
                r#"{"preferAvoidPods":[{"podSignature":{"podController":{"kind":1}}}]}"#
            )
            .is_none()
        );
        let broken = node("n")
            .annotation(ANNOTATION_PREFER_AVOID_PODS, "{")
            .info();
        assert!(broken.prefer_avoid_pods.is_empty());
    }
}
