//! `SelectorSpread` (legacy priorities `SelectorSpreadPriority` and `ServiceSpreadingPriority`):
//! spreads the pods selected by the same Services, ReplicationController, ReplicaSet or
//! StatefulSet over nodes and zones. Follows
//! `pkg/scheduler/framework/plugins/selectorspread/selector_spread.go` and
//! `helper.DefaultSelector` (v1.22).
//!
//! Score = number of pods on the node in the pod's namespace, not terminating, matched by the
//! pod's default selector. NormalizeScore: `100 * (maxNode - count) / maxNode` (100 when every
//! count is 0); when feasible nodes carry zone labels, blended with the zone score as
//! `node * 1/3 + zone * 2/3`. Pods with `topologySpreadConstraints` are skipped (score 0).

use crate::framework::{CycleState, MAX_NODE_SCORE, ScoreMode, ScorePlugin, Status};
use crate::labels::LabelSelector;
use crate::model::NodeInfo;
use crate::model::PodInfo;
use crate::snapshot::Snapshot;

/// Plugin name.
pub const NAME: &str = "SelectorSpread";
/// Weight of the zone score (`zoneWeighting`).
pub const ZONE_WEIGHTING: f64 = 2.0 / 3.0;

/// The SelectorSpread scorer.
#[derive(Debug, Default, Clone, Copy)]
pub struct SelectorSpread;

struct PreScoreState {
    selector: LabelSelector,
}

/// `countMatchingPods`.
pub fn count_matching_pods(namespace: &str, selector: &LabelSelector, node: &NodeInfo) -> i64 {
    if node.pods.is_empty() || selector.is_empty() {
        return 0;
    }
    node.pods
        .iter()
        .filter(|p| p.namespace == namespace && !p.terminating && selector.matches(&p.labels))
        .count() as i64
}

impl ScorePlugin for SelectorSpread {
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
        if pod.has_topology_spread_constraints {
            return Ok(ScoreMode::Uniform(0));
        }
        let selector = snapshot.default_selector(pod);
        if selector.is_empty() {
            // Every count is 0, so NormalizeScore gives every node the maximum.
            return Ok(ScoreMode::Uniform(MAX_NODE_SCORE));
        }
        state.write(NAME, PreScoreState { selector });
        Ok(ScoreMode::PerNode)
    }

    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let s = state.read::<PreScoreState>(NAME).ok_or_else(|| {
            Status::error("error reading \"PreScoreSelectorSpread\" from cycleState")
        })?;
        Ok(count_matching_pods(&pod.namespace, &s.selector, node))
    }

    fn normalize_score(
        &self,
        _state: &CycleState,
        _pod: &PodInfo,
        snapshot: &Snapshot,
        feasible: &[u32],
        scores: &mut [i64],
    ) -> Result<(), Status> {
        let nodes = snapshot.nodes();
        let mut counts_by_zone: Vec<(&str, i64)> = Vec::new();
        let mut max_by_node = 0i64;
        for (s, &i) in scores.iter().zip(feasible) {
            max_by_node = max_by_node.max(*s);
            let zone = nodes[i as usize].zone.as_str();
            if zone.is_empty() {
                continue;
            }
            match counts_by_zone.iter_mut().find(|(z, _)| *z == zone) {
                Some((_, c)) => *c += *s,
                None => counts_by_zone.push((zone, *s)),
            }
        }
        let max_by_zone = counts_by_zone.iter().map(|(_, c)| *c).max().unwrap_or(0);
        let have_zones = !counts_by_zone.is_empty();
        let max = MAX_NODE_SCORE as f64;
        for (s, &i) in scores.iter_mut().zip(feasible) {
            let mut f = max;
            if max_by_node > 0 {
                f = max * ((max_by_node - *s) as f64 / max_by_node as f64);
            }
            if have_zones {
                let zone = nodes[i as usize].zone.as_str();
                if !zone.is_empty() {
                    let mut zone_score = max;
                    if max_by_zone > 0 {
                        let c = counts_by_zone
                            .iter()
                            .find(|(z, _)| *z == zone)
                            .map_or(0, |(_, c)| *c);
                        zone_score = max * ((max_by_zone - c) as f64 / max_by_zone as f64);
                    }
                    f = f * (1.0 - ZONE_WEIGHTING) + ZONE_WEIGHTING * zone_score;
                }
            }
            *s = f as i64;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use k8s_openapi::api::apps::v1 as apps;
    use k8s_openapi::api::core::v1 as core;

    use super::*;
    use crate::framework::plugins::testutil::{
        NodeB, PodB, node, pod, replica_set, replication_controller, service, snapshot,
        stateful_set,
    };

    const L1: &[(&str, &str)] = &[("foo", "bar"), ("baz", "blah")];
    const L2: &[(&str, &str)] = &[("bar", "foo"), ("baz", "blah")];

    /// A pod with `labels` in namespace `ns` (`""` as upstream's `st.MakePod()` leaves it) on
    /// `node_name` (`""`: unassigned).
    fn p(labels: &[(&str, &str)], node_name: &str, ns: &str) -> PodB {
        let mut b = pod("p").namespace(ns);
        for (k, v) in labels {
            b = b.label(k, v);
        }
        if !node_name.is_empty() {
            b = b.node(node_name);
        }
        b
    }

    fn rc_owner(b: PodB, name: &str) -> PodB {
        b.owner("v1", "ReplicationController", name)
    }

    fn rs_owner(b: PodB, name: &str) -> PodB {
        b.owner("apps/v1", "ReplicaSet", name)
    }

    fn ss_owner(b: PodB, name: &str) -> PodB {
        b.owner("apps/v1", "StatefulSet", name)
    }

    #[derive(Default)]
    struct Objects {
        services: Vec<core::Service>,
        rcs: Vec<core::ReplicationController>,
        rss: Vec<apps::ReplicaSet>,
        sss: Vec<apps::StatefulSet>,
    }

    /// Upstream's harness: `cache.NewSnapshot(pods, nodes)` with the listers holding the
    /// Services and controllers, `PreScore`, `Score` on every node in order and
    /// `NormalizeScore` (here: a `Uniform` PreScore result stands for Score + NormalizeScore).
    fn normalized_scores(
        incoming: PodB,
        nodes: Vec<NodeB>,
        mut pods: Vec<PodB>,
        objects: &Objects,
    ) -> Vec<(String, i64)> {
        for (i, p) in pods.iter_mut().enumerate() {
            p.0.metadata.name = Some(format!("pod{i}"));
        }
        let names: Vec<String> = nodes
            .iter()
            .map(|n| n.0.metadata.name.clone().unwrap())
            .collect();
        let mut snap = snapshot(nodes, &pods);
        for s in &objects.services {
            snap.upsert_service(s);
        }
        for rc in &objects.rcs {
            snap.upsert_replication_controller(rc);
        }
        for rs in &objects.rss {
            snap.upsert_replica_set(rs);
        }
        for ss in &objects.sss {
            snap.upsert_stateful_set(ss);
        }
        let pod = incoming.info();
        let feasible: Vec<u32> = names.iter().map(|n| snap.node_index(n).unwrap()).collect();
        let plugin = SelectorSpread;
        let mut state = CycleState::new();
        let mut scores = vec![0; feasible.len()];
        match plugin
            .pre_score(&mut state, &pod, &snap, &feasible)
            .unwrap()
        {
            ScoreMode::Uniform(v) => scores.fill(v),
            ScoreMode::PerNode => {
                plugin
                    .score_nodes(&state, &pod, &snap, &feasible, &mut scores)
                    .unwrap();
                plugin
                    .normalize_score(&state, &pod, &snap, &feasible, &mut scores)
                    .unwrap();
            }
        }
        names.into_iter().zip(scores).collect()
    }

    fn expect(scores: &[(&str, i64)]) -> Vec<(String, i64)> {
        scores.iter().map(|(n, s)| (n.to_string(), *s)).collect()
    }

    struct Case {
        name: &'static str,
        pod: PodB,
        pods: Vec<PodB>,
        objects: Objects,
        expected: Vec<(&'static str, i64)>,
    }

    /// Upstream `kubernetes/kubernetes`
    /// `pkg/scheduler/framework/plugins/selectorspread/selector_spread_test.go`,
    /// `TestSelectorSpreadScore`, read from a post-1.22 copy (index id 482839346, `st.MakePod()`
    /// builders, nodes `node1`/`node2`; the index gives no commit). The v1.22 copy used literal
    /// `v1.Pod`s on `machine1`/`machine2` with the same cases and numbers; the node names here
    /// follow the copy that was read. Namespaces are as in that copy: `st.MakePod()` leaves the
    /// namespace `""`, and a Service lister asked for namespace `""` lists every namespace.
    #[test]
    fn test_selector_spread_score() {
        let cases = vec![
            Case {
                name: "nothing scheduled",
                pod: p(&[], "", ""),
                pods: vec![],
                objects: Objects::default(),
                expected: vec![("node1", MAX_NODE_SCORE), ("node2", MAX_NODE_SCORE)],
            },
            Case {
                name: "no services",
                pod: p(L1, "", ""),
                pods: vec![p(&[], "node1", "")],
                objects: Objects::default(),
                expected: vec![("node1", MAX_NODE_SCORE), ("node2", MAX_NODE_SCORE)],
            },
            Case {
                name: "different services",
                pod: p(L1, "", ""),
                pods: vec![p(L2, "node1", "")],
                objects: Objects {
                    services: vec![service("default", "s1", &[("key", "value")])],
                    ..Default::default()
                },
                expected: vec![("node1", MAX_NODE_SCORE), ("node2", MAX_NODE_SCORE)],
            },
            Case {
                name: "two pods, one service pod",
                pod: p(L1, "", ""),
                pods: vec![p(L2, "node1", ""), p(L1, "node2", "")],
                objects: Objects {
                    services: vec![service("default", "s1", L1)],
                    ..Default::default()
                },
                expected: vec![("node1", MAX_NODE_SCORE), ("node2", 0)],
            },
            Case {
                name: "five pods, one service pod in no namespace",
                pod: p(L1, "", ""),
                pods: vec![
                    p(L2, "node1", ""),
                    p(L1, "node1", "default"),
                    p(L1, "node1", "ns1"),
                    p(L1, "node2", ""),
                    p(L2, "node2", ""),
                ],
                objects: Objects {
                    services: vec![service("default", "s1", L1)],
                    ..Default::default()
                },
                expected: vec![("node1", MAX_NODE_SCORE), ("node2", 0)],
            },
            Case {
                name: "four pods, one service pod in default namespace",
                pod: p(L1, "", "default"),
                pods: vec![
                    p(L1, "node1", ""),
                    p(L1, "node1", "ns1"),
                    p(L1, "node2", "default"),
                    p(L2, "node2", ""),
                ],
                objects: Objects {
                    services: vec![service("default", "s1", L1)],
                    ..Default::default()
                },
                expected: vec![("node1", MAX_NODE_SCORE), ("node2", 0)],
            },
            Case {
                name: "five pods, one service pod in specific namespace",
                pod: p(L1, "", "ns1"),
                pods: vec![
                    p(L2, "node1", ""),
                    p(L1, "node1", "default"),
                    p(L1, "node1", "ns2"),
                    p(L1, "node2", "ns1"),
                    p(L2, "node2", ""),
                ],
                objects: Objects {
                    services: vec![service("ns1", "", L1)],
                    ..Default::default()
                },
                expected: vec![("node1", MAX_NODE_SCORE), ("node2", 0)],
            },
            Case {
                name: "three pods, two service pods on different nodes",
                pod: p(L1, "", ""),
                pods: vec![p(L2, "node1", ""), p(L1, "node1", ""), p(L1, "node2", "")],
                objects: Objects {
                    services: vec![service("default", "s1", L1)],
                    ..Default::default()
                },
                expected: vec![("node1", 0), ("node2", 0)],
            },
            Case {
                // node1 = 1, node2 = 2, max 2: node1 = 100*(2-1)/2 = 50, node2 = 0.
                name: "four pods, three service pods",
                pod: p(L1, "", ""),
                pods: vec![
                    p(L2, "node1", ""),
                    p(L1, "node1", ""),
                    p(L1, "node2", ""),
                    p(L1, "node2", ""),
                ],
                objects: Objects {
                    services: vec![service("default", "s1", L1)],
                    ..Default::default()
                },
                expected: vec![("node1", 50), ("node2", 0)],
            },
            Case {
                // {baz: blah} matches L1 and L2: node1 = 2, node2 = 1.
                name: "service with partial pod label matches",
                pod: p(L1, "", ""),
                pods: vec![p(L2, "node1", ""), p(L1, "node1", ""), p(L1, "node2", "")],
                objects: Objects {
                    services: vec![service("default", "s1", &[("baz", "blah")])],
                    ..Default::default()
                },
                expected: vec![("node1", 0), ("node2", 50)],
            },
            // "baz=blah" matches both labels1 and labels2, and "foo=bar" matches only labels 1.
            // This means that we assume that we want to do spreading pod2 and pod3 and not pod1.
            Case {
                name: "service with partial pod label matches with service and replication controller",
                pod: rc_owner(p(L1, "", "default"), "rc1"),
                pods: vec![
                    p(L2, "node1", "default"),
                    p(L1, "node1", "default"),
                    p(L1, "node2", "default"),
                ],
                objects: Objects {
                    services: vec![service("default", "s1", &[("baz", "blah")])],
                    rcs: vec![
                        replication_controller("rc1", "default", &[("foo", "bar")]),
                        replication_controller("rc2", "default", &[("bar", "foo")]),
                    ],
                    ..Default::default()
                },
                expected: vec![("node1", 0), ("node2", 0)],
            },
            // We use ReplicaSet, instead of ReplicationController. The result should be exactly
            // as above.
            Case {
                name: "service with partial pod label matches with service and replica set",
                pod: rs_owner(p(L1, "", "default"), "rs1"),
                pods: vec![
                    p(L2, "node1", "default"),
                    p(L1, "node1", "default"),
                    p(L1, "node2", "default"),
                ],
                objects: Objects {
                    services: vec![service("default", "s1", &[("baz", "blah")])],
                    rss: vec![
                        replica_set("rs1", "default", &[("foo", "bar")]),
                        replica_set("rs2", "default", &[("bar", "foo")]),
                    ],
                    ..Default::default()
                },
                expected: vec![("node1", 0), ("node2", 0)],
            },
            Case {
                name: "service with partial pod label matches with service and statefulset",
                pod: ss_owner(p(L1, "", "default"), "ss1"),
                pods: vec![
                    p(L2, "node1", "default"),
                    p(L1, "node1", "default"),
                    p(L1, "node2", "default"),
                ],
                objects: Objects {
                    services: vec![service("default", "s1", &[("baz", "blah")])],
                    sss: vec![
                        stateful_set("ss1", "default", &[("foo", "bar")]),
                        stateful_set("ss2", "default", &[("bar", "foo")]),
                    ],
                    ..Default::default()
                },
                expected: vec![("node1", 0), ("node2", 0)],
            },
            // Taken together Service and Replication Controller should match no pods.
            Case {
                name: "disjoined service and replication controller matches no pods",
                pod: rc_owner(p(&[("foo", "bar"), ("bar", "foo")], "", "default"), "rc3"),
                pods: vec![
                    rc_owner(p(L2, "node1", "default"), "rc2"),
                    rc_owner(p(L1, "node1", "default"), "rc1"),
                    rc_owner(p(L1, "node2", "default"), "rc1"),
                ],
                objects: Objects {
                    services: vec![service("default", "s1", &[("bar", "foo")])],
                    rcs: vec![replication_controller("rc3", "default", &[("foo", "bar")])],
                    ..Default::default()
                },
                expected: vec![("node1", MAX_NODE_SCORE), ("node2", MAX_NODE_SCORE)],
            },
            // We use ReplicaSet, instead of ReplicationController. The result should be exactly
            // as above.
            Case {
                name: "disjoined service and replica set matches no pods",
                pod: rs_owner(p(&[("foo", "bar"), ("bar", "foo")], "", "default"), "rs3"),
                pods: vec![
                    rs_owner(p(L2, "node1", "default"), "rs2"),
                    rs_owner(p(L1, "node1", "default"), "rs1"),
                    rs_owner(p(L1, "node2", "default"), "rs1"),
                ],
                objects: Objects {
                    services: vec![service("default", "s1", &[("bar", "foo")])],
                    rss: vec![replica_set("rs3", "default", &[("foo", "bar")])],
                    ..Default::default()
                },
                expected: vec![("node1", MAX_NODE_SCORE), ("node2", MAX_NODE_SCORE)],
            },
            Case {
                name: "disjoined service and stateful set matches no pods",
                pod: ss_owner(p(&[("foo", "bar"), ("bar", "foo")], "", "default"), "ss3"),
                pods: vec![
                    ss_owner(p(L2, "node1", "default"), "ss2"),
                    ss_owner(p(L1, "node1", "default"), "ss1"),
                    ss_owner(p(L1, "node2", "default"), "ss1"),
                ],
                objects: Objects {
                    services: vec![service("default", "s1", &[("bar", "foo")])],
                    sss: vec![stateful_set("ss3", "default", &[("foo", "bar")])],
                    ..Default::default()
                },
                expected: vec![("node1", MAX_NODE_SCORE), ("node2", MAX_NODE_SCORE)],
            },
            // Both Nodes have one pod from the given RC, hence both get 0 score.
            Case {
                name: "Replication controller with partial pod label matches",
                pod: rc_owner(p(L1, "", "default"), "rc1"),
                pods: vec![
                    rc_owner(p(L2, "node1", "default"), "rc2"),
                    rc_owner(p(L1, "node1", "default"), "rc1"),
                    rc_owner(p(L1, "node2", "default"), "rc1"),
                ],
                objects: Objects {
                    rcs: vec![replication_controller("rc1", "default", &[("foo", "bar")])],
                    ..Default::default()
                },
                expected: vec![("node1", 0), ("node2", 0)],
            },
            // We use ReplicaSet, instead of ReplicationController. The result should be exactly
            // as above.
            Case {
                name: "Replica set with partial pod label matches",
                pod: rs_owner(p(L1, "", "default"), "rs1"),
                pods: vec![
                    rs_owner(p(L2, "node1", "default"), "rs2"),
                    rs_owner(p(L1, "node1", "default"), "rs1"),
                    rs_owner(p(L1, "node2", "default"), "rs1"),
                ],
                objects: Objects {
                    rss: vec![replica_set("rs1", "default", &[("foo", "bar")])],
                    ..Default::default()
                },
                expected: vec![("node1", 0), ("node2", 0)],
            },
            // We use StatefulSet, instead of ReplicationController. The result should be exactly
            // as above.
            Case {
                name: "StatefulSet with partial pod label matches",
                pod: ss_owner(p(L1, "", "default"), "ss1"),
                pods: vec![
                    ss_owner(p(L2, "node1", "default"), "ss2"),
                    ss_owner(p(L1, "node1", "default"), "ss1"),
                    ss_owner(p(L1, "node2", "default"), "ss1"),
                ],
                objects: Objects {
                    sss: vec![stateful_set("ss1", "default", &[("foo", "bar")])],
                    ..Default::default()
                },
                expected: vec![("node1", 0), ("node2", 0)],
            },
            Case {
                name: "Another replication controller with partial pod label matches",
                pod: rc_owner(p(L1, "", "default"), "rc3"),
                pods: vec![
                    rc_owner(p(L2, "node1", "default"), "rc2"),
                    rc_owner(p(L1, "node1", "default"), "rc1"),
                    rc_owner(p(L1, "node2", "default"), "rc1"),
                ],
                objects: Objects {
                    rcs: vec![replication_controller("rc3", "default", &[("baz", "blah")])],
                    ..Default::default()
                },
                expected: vec![("node1", 0), ("node2", 50)],
            },
            // We use ReplicaSet, instead of ReplicationController. The result should be exactly
            // as above.
            Case {
                name: "Another replication set with partial pod label matches",
                pod: rs_owner(p(L1, "", "default"), "rs3"),
                pods: vec![
                    rs_owner(p(L2, "node1", "default"), "rs2"),
                    rs_owner(p(L1, "node1", "default"), "rs1"),
                    rs_owner(p(L1, "node2", "default"), "rs1"),
                ],
                objects: Objects {
                    rss: vec![replica_set("rs3", "default", &[("baz", "blah")])],
                    ..Default::default()
                },
                expected: vec![("node1", 0), ("node2", 50)],
            },
            // We use StatefulSet, instead of ReplicationController. The result should be exactly
            // as above.
            Case {
                name: "Another stateful set with partial pod label matches",
                pod: ss_owner(p(L1, "", "default"), "ss3"),
                pods: vec![
                    ss_owner(p(L2, "node1", "default"), "ss2"),
                    ss_owner(p(L1, "node1", "default"), "ss1"),
                    ss_owner(p(L1, "node2", "default"), "ss1"),
                ],
                objects: Objects {
                    sss: vec![stateful_set("ss3", "default", &[("baz", "blah")])],
                    ..Default::default()
                },
                expected: vec![("node1", 0), ("node2", 50)],
            },
            Case {
                // Skipped by PreScore: raw 0 on every node, no normalization.
                name: "Another statefulset with TopologySpreadConstraints set in pod",
                pod: ss_owner(p(L1, "", "default"), "ss1").topology_spread(),
                pods: vec![
                    ss_owner(p(L2, "node1", "default"), "ss2"),
                    ss_owner(p(L1, "node1", "default"), "ss1"),
                    ss_owner(p(L1, "node2", "default"), "ss1"),
                ],
                objects: Objects {
                    sss: vec![stateful_set("ss1", "default", &[("baz", "blah")])],
                    ..Default::default()
                },
                expected: vec![("node1", 0), ("node2", 0)],
            },
        ];
        for c in cases {
            let nodes = ["node1", "node2"].iter().map(|n| node(n)).collect();
            let got = normalized_scores(c.pod, nodes, c.pods, &c.objects);
            assert_eq!(got, expect(&c.expected), "{}", c.name);
        }
    }

    const ZONE_LABEL: &str = "topology.kubernetes.io/zone";
    const L1Z: &[(&str, &str)] = &[("label1", "l1"), ("baz", "blah")];
    const L2Z: &[(&str, &str)] = &[("label2", "l2"), ("baz", "blah")];
    const NODE_MACHINE1_ZONE1: &str = "node1.zone1";
    const NODE_MACHINE1_ZONE2: &str = "node1.zone2";
    const NODE_MACHINE2_ZONE2: &str = "node2.zone2";
    const NODE_MACHINE1_ZONE3: &str = "node1.zone3";
    const NODE_MACHINE2_ZONE3: &str = "node2.zone3";
    const NODE_MACHINE3_ZONE3: &str = "node3.zone3";

    /// `buildPod(nodeName, labels, ownerRefs)`: namespace `default`.
    fn build_pod(node_name: &str, labels: &[(&str, &str)]) -> PodB {
        p(labels, node_name, "default")
    }

    /// Upstream `kubernetes/kubernetes`
    /// `pkg/scheduler/framework/plugins/selectorspread/selector_spread_test.go`,
    /// `TestZoneSelectorSpreadPriority`, read from a post-1.22 copy (index id 482839346; the
    /// index gives no commit); SelectorSpread semantics are unchanged from v1.20 to its removal.
    /// Nodes carry only `topology.kubernetes.io/zone` (v1.22's `GetZoneKey` also reads the beta
    /// label; the outcome is the same). Upstream compares both lists sorted by (score, name),
    /// which is the same as comparing the score of every node by name, as done here.
    #[test]
    fn test_zone_selector_spread_priority() {
        let zone_of = [
            (NODE_MACHINE1_ZONE1, "zone1"),
            (NODE_MACHINE1_ZONE2, "zone2"),
            (NODE_MACHINE2_ZONE2, "zone2"),
            (NODE_MACHINE1_ZONE3, "zone3"),
            (NODE_MACHINE2_ZONE3, "zone3"),
            (NODE_MACHINE3_ZONE3, "zone3"),
        ];
        let svc_l1z = || Objects {
            services: vec![service("default", "s1", L1Z)],
            ..Default::default()
        };
        let cases = vec![
            Case {
                name: "nothing scheduled",
                pod: p(&[], "", ""),
                pods: vec![],
                objects: Objects::default(),
                expected: vec![
                    (NODE_MACHINE1_ZONE1, 100),
                    (NODE_MACHINE1_ZONE2, 100),
                    (NODE_MACHINE2_ZONE2, 100),
                    (NODE_MACHINE1_ZONE3, 100),
                    (NODE_MACHINE2_ZONE3, 100),
                    (NODE_MACHINE3_ZONE3, 100),
                ],
            },
            Case {
                name: "no services",
                pod: build_pod("", L1Z),
                pods: vec![build_pod(NODE_MACHINE1_ZONE1, &[])],
                objects: Objects::default(),
                expected: vec![
                    (NODE_MACHINE1_ZONE1, 100),
                    (NODE_MACHINE1_ZONE2, 100),
                    (NODE_MACHINE2_ZONE2, 100),
                    (NODE_MACHINE1_ZONE3, 100),
                    (NODE_MACHINE2_ZONE3, 100),
                    (NODE_MACHINE3_ZONE3, 100),
                ],
            },
            Case {
                name: "different services",
                pod: build_pod("", L1Z),
                pods: vec![build_pod(NODE_MACHINE1_ZONE1, L2Z)],
                objects: Objects {
                    services: vec![service("default", "s1", &[("key", "value")])],
                    ..Default::default()
                },
                expected: vec![
                    (NODE_MACHINE1_ZONE1, 100),
                    (NODE_MACHINE1_ZONE2, 100),
                    (NODE_MACHINE2_ZONE2, 100),
                    (NODE_MACHINE1_ZONE3, 100),
                    (NODE_MACHINE2_ZONE3, 100),
                    (NODE_MACHINE3_ZONE3, 100),
                ],
            },
            Case {
                name: "two pods, 0 matching",
                pod: build_pod("", L1Z),
                pods: vec![
                    build_pod(NODE_MACHINE1_ZONE1, L2Z),
                    build_pod(NODE_MACHINE1_ZONE2, L2Z),
                ],
                objects: svc_l1z(),
                expected: vec![
                    (NODE_MACHINE1_ZONE1, 100),
                    (NODE_MACHINE1_ZONE2, 100),
                    (NODE_MACHINE2_ZONE2, 100),
                    (NODE_MACHINE1_ZONE3, 100),
                    (NODE_MACHINE2_ZONE3, 100),
                    (NODE_MACHINE3_ZONE3, 100),
                ],
            },
            Case {
                name: "two pods, 1 matching (in z2)",
                pod: build_pod("", L1Z),
                pods: vec![
                    build_pod(NODE_MACHINE1_ZONE1, L2Z),
                    build_pod(NODE_MACHINE1_ZONE2, L1Z),
                ],
                objects: svc_l1z(),
                expected: vec![
                    (NODE_MACHINE1_ZONE1, 100),
                    (NODE_MACHINE1_ZONE2, 0),  // Already have pod on node
                    (NODE_MACHINE2_ZONE2, 33), // Already have pod in zone
                    (NODE_MACHINE1_ZONE3, 100),
                    (NODE_MACHINE2_ZONE3, 100),
                    (NODE_MACHINE3_ZONE3, 100),
                ],
            },
            Case {
                // Node max 1; zones z2 = 2, z3 = 1, max 2. n1z3: 100/3 + (2/3)*50 = 66.67, so
                // 66; n2z3: node 0, zone 50, so 33.
                name: "five pods, 3 matching (z2=2, z3=1)",
                pod: build_pod("", L1Z),
                pods: vec![
                    build_pod(NODE_MACHINE1_ZONE1, L2Z),
                    build_pod(NODE_MACHINE1_ZONE2, L1Z),
                    build_pod(NODE_MACHINE2_ZONE2, L1Z),
                    build_pod(NODE_MACHINE1_ZONE3, L2Z),
                    build_pod(NODE_MACHINE2_ZONE3, L1Z),
                ],
                objects: svc_l1z(),
                expected: vec![
                    (NODE_MACHINE1_ZONE1, 100),
                    (NODE_MACHINE1_ZONE2, 0),  // Pod on node
                    (NODE_MACHINE2_ZONE2, 0),  // Pod on node
                    (NODE_MACHINE1_ZONE3, 66), // Pod in zone
                    (NODE_MACHINE2_ZONE3, 33), // Pod on node
                    (NODE_MACHINE3_ZONE3, 66), // Pod in zone
                ],
            },
            Case {
                name: "four pods, 3 matching (z1=1, z2=1, z3=1)",
                pod: build_pod("", L1Z),
                pods: vec![
                    build_pod(NODE_MACHINE1_ZONE1, L1Z),
                    build_pod(NODE_MACHINE1_ZONE2, L1Z),
                    build_pod(NODE_MACHINE2_ZONE2, L2Z),
                    build_pod(NODE_MACHINE1_ZONE3, L1Z),
                ],
                objects: svc_l1z(),
                expected: vec![
                    (NODE_MACHINE1_ZONE1, 0),  // Pod on node
                    (NODE_MACHINE1_ZONE2, 0),  // Pod on node
                    (NODE_MACHINE2_ZONE2, 33), // Pod in zone
                    (NODE_MACHINE1_ZONE3, 0),  // Pod on node
                    (NODE_MACHINE2_ZONE3, 33), // Pod in zone
                    (NODE_MACHINE3_ZONE3, 33), // Pod in zone
                ],
            },
            Case {
                name: "five pods, 4 matching (z1=1, z2=2, z3=1)",
                pod: build_pod("", L1Z),
                pods: vec![
                    build_pod(NODE_MACHINE1_ZONE1, L1Z),
                    build_pod(NODE_MACHINE1_ZONE2, L1Z),
                    build_pod(NODE_MACHINE2_ZONE2, L1Z),
                    build_pod(NODE_MACHINE2_ZONE2, L2Z),
                    build_pod(NODE_MACHINE1_ZONE3, L1Z),
                ],
                objects: svc_l1z(),
                expected: vec![
                    (NODE_MACHINE1_ZONE1, 33), // Pod on node
                    (NODE_MACHINE1_ZONE2, 0),  // Pod on node
                    (NODE_MACHINE2_ZONE2, 0),  // Pod in zone
                    (NODE_MACHINE1_ZONE3, 33), // Pod on node
                    (NODE_MACHINE2_ZONE3, 66), // Pod in zone
                    (NODE_MACHINE3_ZONE3, 66), // Pod in zone
                ],
            },
            // Note that because we put two pods on the same node (nodeMachine1Zone3),
            // the values here are questionable for zone2, in particular for nodeMachine1Zone2.
            // However they kind of make sense; zone1 is still most-highly favored.
            // zone3 is in general least favored, and m1.z3 particularly low priority.
            // We would probably prefer to see a bigger gap between putting a second
            // pod on m1.z2 and putting a pod on m2.z2, but the ordering is correct.
            // This is also consistent with what we have already.
            Case {
                name: "Replication controller spreading (z1=0, z2=1, z3=2)",
                pod: rc_owner(build_pod("", L1Z), "rc1"),
                pods: vec![
                    build_pod(NODE_MACHINE1_ZONE3, L1Z),
                    build_pod(NODE_MACHINE1_ZONE2, L1Z),
                    build_pod(NODE_MACHINE1_ZONE3, L1Z),
                ],
                objects: Objects {
                    rcs: vec![replication_controller("rc1", "default", L1Z)],
                    ..Default::default()
                },
                expected: vec![
                    (NODE_MACHINE1_ZONE1, 100), // No pods in zone
                    (NODE_MACHINE1_ZONE2, 50),  // Pod on node
                    (NODE_MACHINE2_ZONE2, 66),  // Pod in zone
                    (NODE_MACHINE1_ZONE3, 0),   // Two pods on node
                    (NODE_MACHINE2_ZONE3, 33),  // Pod in zone
                    (NODE_MACHINE3_ZONE3, 33),  // Pod in zone
                ],
            },
        ];
        for c in cases {
            let nodes = zone_of
                .iter()
                .map(|(n, z)| node(n).label(ZONE_LABEL, z))
                .collect();
            let got = normalized_scores(c.pod, nodes, c.pods, &c.objects);
            assert_eq!(got, expect(&c.expected), "{}", c.name);
        }
    }
}
