//! `ServiceAffinity` (legacy predicate `CheckServiceAffinity` via a `serviceAffinity` argument;
//! custom priority via `serviceAntiAffinity`).
//!
//! Filter: the node's values of the affinity labels must equal the pod's `nodeSelector` values
//! for them, completed (when the pod's Services select anything) from the node of the first pod
//! already running with the pod's labels in its namespace (nodes in NodeTree order, pods in node
//! order). Score: number of the pod's first Service's pods on the node; NormalizeScore spreads
//! them over each anti-affinity label's values: for each label, nodes carrying it get
//! `100 × (servicePods − podsOnNodesWithThisValue) / servicePods` (100 when there are none) ÷ the
//! number of labels; nodes without the label get nothing for it.
//!
//! Follows kubernetes/kubernetes `pkg/scheduler/framework/plugins/serviceaffinity/service_affinity.go`
//! @054d429d9f8bc8de4fc82e6cf2281e12a13fe1f2 (v1.21/v1.22). The PreFilter computes the final
//! selector once per pod (upstream recomputes it per node from the same pod list; the result is the
//! same without preemption's AddPod/RemovePod, which mini-scheduler does not run). Arguments:
//! [`ServiceAffinityArgs`].

use std::collections::BTreeMap;

use crate::framework::{
    Code, CycleState, FilterPlugin, MAX_NODE_SCORE, ScoreMode, ScorePlugin, Status,
};
use crate::labels::LabelSelector;
use crate::model::NodeInfo;
use crate::model::PodInfo;
use crate::policy::ServiceAffinityArgs;
use crate::snapshot::Snapshot;

/// Plugin name.
pub const NAME: &str = "ServiceAffinity";
/// Filter failure reason (`ErrReason`).
pub const ERR_REASON: &str = "node(s) didn't match service affinity";
/// CycleState key of the PreFilter state (`preFilterStateKey`).
const PRE_FILTER_STATE_KEY: &str = "PreFilterServiceAffinity";
/// CycleState key of the PreScore state.
const PRE_SCORE_STATE_KEY: &str = "PreScoreServiceAffinity";

/// The ServiceAffinity filter and score plugin.
#[derive(Debug, Default, Clone)]
pub struct ServiceAffinity {
    args: ServiceAffinityArgs,
}

/// The label values every feasible node must carry (`createSelectorFromLabels(affinityLabels)`).
struct PreFilterState {
    affinity_labels: BTreeMap<String, String>,
}

/// The selector of the pod's first Service (`None`: no Service, or an empty selector).
struct PreScoreState {
    selector: Option<LabelSelector>,
}

impl ServiceAffinity {
    /// A plugin with `args`.
    pub fn new(args: ServiceAffinityArgs) -> ServiceAffinity {
        ServiceAffinity { args }
    }

    /// The affinity labels the pod's nodes must agree on (`Filter` steps 1 and 2 of upstream).
    fn affinity_labels(&self, pod: &PodInfo, snapshot: &Snapshot) -> BTreeMap<String, String> {
        // `findLabelsInSet`: the values the pod's nodeSelector fixes.
        let mut labels: BTreeMap<String, String> = self
            .args
            .affinity_labels
            .iter()
            .filter_map(|l| pod.node_selector.get(l).map(|v| (l.clone(), v.clone())))
            .collect();
        if self.args.affinity_labels.len() > labels.len() && !snapshot.pod_services(pod).is_empty()
        {
            // `filterPods(nodeInfos, createSelectorFromLabels(pod.Labels), pod.Namespace)[0]`:
            // the first pod of the namespace carrying all of the pod's labels (every pod of the
            // namespace when the pod has no labels).
            let nodes = snapshot.nodes();
            let first = snapshot
                .order()
                .iter()
                .map(|&i| &nodes[i as usize])
                .find(|n| {
                    n.pods.iter().any(|p| {
                        p.namespace == pod.namespace
                            && pod.labels.iter().all(|(k, v)| p.labels.get(k) == Some(v))
                    })
                });
            if let Some(n) = first {
                // `addUnsetLabelsToMap`.
                for l in &self.args.affinity_labels {
                    if let (false, Some(v)) = (labels.contains_key(l), n.labels.get(l)) {
                        labels.insert(l.clone(), v.clone());
                    }
                }
            }
        }
        labels
    }

    /// `updateNodeScoresForLabel` for every anti-affinity label, then the truncation to
    /// integers (`NormalizeScore`).
    fn normalize(&self, nodes: &[&NodeInfo], scores: &mut [i64]) {
        let labels = &self.args.anti_affinity_labels_preference;
        let mut reduce = vec![0f64; scores.len()];
        let max = MAX_NODE_SCORE as f64;
        for label in labels {
            let mut num_service_pods = 0i64;
            let mut pod_counts: BTreeMap<&str, i64> = BTreeMap::new();
            for (s, n) in scores.iter().zip(nodes) {
                num_service_pods += *s;
                if let Some(v) = n.labels.get(label) {
                    *pod_counts.entry(v.as_str()).or_insert(0) += *s;
                }
            }
            for (r, n) in reduce.iter_mut().zip(nodes) {
                let Some(v) = n.labels.get(label) else {
                    continue;
                };
                let mut f = max;
                if num_service_pods > 0 {
                    let c = pod_counts.get(v.as_str()).copied().unwrap_or(0);
                    f = max * ((num_service_pods - c) as f64 / num_service_pods as f64);
                }
                *r += f / labels.len() as f64;
            }
        }
        for (s, r) in scores.iter_mut().zip(reduce) {
            *s = r as i64;
        }
    }
}

impl PreScoreState {
    /// `Score`: the pods of `pod`'s namespace on `node`, not being deleted, that the first
    /// Service's selector matches.
    fn score(&self, pod: &PodInfo, node: &NodeInfo) -> i64 {
        let Some(selector) = &self.selector else {
            return 0;
        };
        node.pods
            .iter()
            .filter(|p| {
                p.namespace == pod.namespace && !p.terminating && selector.matches(&p.labels)
            })
            .count() as i64
    }
}

fn read_pre_score_state(state: &CycleState) -> Result<&PreScoreState, Status> {
    state
        .read::<PreScoreState>(PRE_SCORE_STATE_KEY)
        .ok_or_else(|| {
            Status::error(format!(
                "error reading {PRE_SCORE_STATE_KEY:?} from cycleState: not found"
            ))
        })
}

impl FilterPlugin for ServiceAffinity {
    fn name(&self) -> &'static str {
        NAME
    }

    fn pre_filter(&self, state: &mut CycleState, pod: &PodInfo, snapshot: &Snapshot) -> Status {
        if self.args.affinity_labels.is_empty() {
            // Filter passes every node.
            return Status::skip();
        }
        let affinity_labels = self.affinity_labels(pod, snapshot);
        state.write(PRE_FILTER_STATE_KEY, PreFilterState { affinity_labels });
        Status::success()
    }

    fn filter(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        if self.args.affinity_labels.is_empty() {
            return Status::success();
        }
        match state.read::<PreFilterState>(PRE_FILTER_STATE_KEY) {
            Some(s) => s.filter(node),
            None => missing_pre_filter_state(),
        }
    }

    /// [`FilterPlugin::filter`] over the candidates, reading the PreFilter state once.
    fn filter_nodes(
        &self,
        state: &CycleState,
        _pod: &PodInfo,
        snapshot: &Snapshot,
        candidates: &mut Vec<u32>,
        failed: &mut Vec<(u32, Status)>,
    ) {
        if self.args.affinity_labels.is_empty() {
            return;
        }
        let s = state.read::<PreFilterState>(PRE_FILTER_STATE_KEY);
        super::retain_passing(NAME, snapshot, candidates, failed, |n| match s {
            Some(s) => s.filter(n),
            None => missing_pre_filter_state(),
        });
    }
}

impl PreFilterState {
    /// Step 2 of `Filter`: the node carries every affinity label value.
    fn filter(&self, node: &NodeInfo) -> Status {
        if self
            .affinity_labels
            .iter()
            .all(|(k, v)| node.labels.get(k) == Some(v))
        {
            Status::success()
        } else {
            Status::new(Code::Unschedulable, ERR_REASON)
        }
    }
}

fn missing_pre_filter_state() -> Status {
    Status::error(format!(
        "error reading {PRE_FILTER_STATE_KEY:?} from cycleState: not found"
    ))
}

impl ScorePlugin for ServiceAffinity {
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
        if self.args.anti_affinity_labels_preference.is_empty() {
            // NormalizeScore leaves every node at 0.
            return Ok(ScoreMode::Uniform(0));
        }
        let selector = snapshot
            .pod_services(pod)
            .first()
            .filter(|sel| !sel.is_empty())
            .map(|sel| LabelSelector::from_map(sel));
        state.write(PRE_SCORE_STATE_KEY, PreScoreState { selector });
        Ok(ScoreMode::PerNode)
    }

    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        Ok(read_pre_score_state(state)?.score(pod, node))
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
        let s = read_pre_score_state(state)?;
        if s.selector.is_none() {
            out.fill(0);
            return Ok(());
        }
        super::score_feasible(snapshot, feasible, out, |n| s.score(pod, n));
        Ok(())
    }

    fn normalize_score(
        &self,
        _state: &CycleState,
        _pod: &PodInfo,
        snapshot: &Snapshot,
        feasible: &[u32],
        scores: &mut [i64],
    ) -> Result<(), Status> {
        let all = snapshot.nodes();
        let nodes: Vec<&NodeInfo> = feasible.iter().map(|&i| &all[i as usize]).collect();
        self.normalize(&nodes, scores);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::framework::plugins::testutil::{
        NodeB, PodB, filter_via_batch, node, pod, service, snapshot,
    };

    fn labeled(name: &str, labels: &[(&str, &str)]) -> NodeB {
        let mut n = node(name);
        for (k, v) in labels {
            n = n.label(k, v);
        }
        n
    }

    /// A pod in namespace `ns` (`""` as upstream's `v1.Pod{}` leaves it) with `labels`, on
    /// `node_name` (`""`: unassigned), with a `nodeSelector`.
    fn p(ns: &str, labels: &[(&str, &str)], node_name: &str, selector: &[(&str, &str)]) -> PodB {
        let mut b = pod("p").namespace(ns);
        for (k, v) in labels {
            b = b.label(k, v);
        }
        for (k, v) in selector {
            b = b.node_selector(k, v);
        }
        if !node_name.is_empty() {
            b = b.node(node_name);
        }
        b
    }

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    /// Upstream `serviceaffinity/service_affinity_test.go` `TestServiceAffinity` (table
    /// unchanged from the v1.18 copy read, kubernetes/kubernetes
    /// @007f7ae7dc217d27dad994dce003cfe1c5bc6706, to v1.22). Harness as upstream: snapshot of
    /// the five nodes and the pods, PreFilter, Filter on the test node; the code is compared.
    #[test]
    fn test_service_affinity() {
        const SELECTOR: &[(&str, &str)] = &[("foo", "bar")];
        let nodes = || {
            vec![
                labeled("machine1", &[("region", "r1"), ("zone", "z11")]),
                labeled("machine2", &[("region", "r1"), ("zone", "z12")]),
                labeled("machine3", &[("region", "r2"), ("zone", "z21")]),
                labeled("machine4", &[("region", "r2"), ("zone", "z22")]),
                labeled("machine5", &[("region", "r2"), ("zone", "z22")]),
            ]
        };
        struct Case {
            name: &'static str,
            pod: PodB,
            pods: Vec<PodB>,
            services: Vec<(&'static str, &'static [(&'static str, &'static str)])>,
            node: &'static str,
            labels: &'static [&'static str],
            res: Code,
        }
        let cases = vec![
            Case {
                name: "nothing scheduled",
                pod: p("", &[], "", &[]),
                pods: vec![],
                services: vec![],
                node: "machine1",
                labels: &["region"],
                res: Code::Success,
            },
            Case {
                name: "pod with region label match",
                pod: p("", &[], "", &[("region", "r1")]),
                pods: vec![],
                services: vec![],
                node: "machine1",
                labels: &["region"],
                res: Code::Success,
            },
            Case {
                name: "pod with region label mismatch",
                pod: p("", &[], "", &[("region", "r2")]),
                pods: vec![],
                services: vec![],
                node: "machine1",
                labels: &["region"],
                res: Code::Unschedulable,
            },
            Case {
                name: "service pod on same node",
                pod: p("", SELECTOR, "", &[]),
                pods: vec![p("", SELECTOR, "machine1", &[])],
                services: vec![("", SELECTOR)],
                node: "machine1",
                labels: &["region"],
                res: Code::Success,
            },
            Case {
                name: "service pod on different node, region match",
                pod: p("", SELECTOR, "", &[]),
                pods: vec![p("", SELECTOR, "machine2", &[])],
                services: vec![("", SELECTOR)],
                node: "machine1",
                labels: &["region"],
                res: Code::Success,
            },
            Case {
                name: "service pod on different node, region mismatch",
                pod: p("", SELECTOR, "", &[]),
                pods: vec![p("", SELECTOR, "machine3", &[])],
                services: vec![("", SELECTOR)],
                node: "machine1",
                labels: &["region"],
                res: Code::Unschedulable,
            },
            Case {
                name: "service in different namespace, region mismatch",
                pod: p("ns1", SELECTOR, "", &[]),
                pods: vec![p("ns1", SELECTOR, "machine3", &[])],
                services: vec![("ns2", SELECTOR)],
                node: "machine1",
                labels: &["region"],
                res: Code::Success,
            },
            Case {
                name: "pod in different namespace, region mismatch",
                pod: p("ns1", SELECTOR, "", &[]),
                pods: vec![p("ns2", SELECTOR, "machine3", &[])],
                services: vec![("ns1", SELECTOR)],
                node: "machine1",
                labels: &["region"],
                res: Code::Success,
            },
            Case {
                name: "service and pod in same namespace, region mismatch",
                pod: p("ns1", SELECTOR, "", &[]),
                pods: vec![p("ns1", SELECTOR, "machine3", &[])],
                services: vec![("ns1", SELECTOR)],
                node: "machine1",
                labels: &["region"],
                res: Code::Unschedulable,
            },
            Case {
                name: "service pod on different node, multiple labels, not all match",
                pod: p("", SELECTOR, "", &[]),
                pods: vec![p("", SELECTOR, "machine2", &[])],
                services: vec![("", SELECTOR)],
                node: "machine1",
                labels: &["region", "zone"],
                res: Code::Unschedulable,
            },
            Case {
                name: "service pod on different node, multiple labels, all match",
                pod: p("", SELECTOR, "", &[]),
                pods: vec![p("", SELECTOR, "machine5", &[])],
                services: vec![("", SELECTOR)],
                node: "machine4",
                labels: &["region", "zone"],
                res: Code::Success,
            },
        ];
        for c in cases {
            let mut pods = c.pods;
            for (i, x) in pods.iter_mut().enumerate() {
                x.0.metadata.name = Some(format!("pod{i}"));
            }
            let mut snap = snapshot(nodes(), &pods);
            for (ns, sel) in &c.services {
                snap.upsert_service(&service(ns, "", sel));
            }
            let plugin = ServiceAffinity::new(ServiceAffinityArgs {
                affinity_labels: s(c.labels),
                ..Default::default()
            });
            let pod = c.pod.info();
            let mut state = CycleState::new();
            let pre = FilterPlugin::pre_filter(&plugin, &mut state, &pod, &snap);
            assert!(pre.is_success(), "{}: PreFilter {pre:?}", c.name);
            let got = plugin.filter(&state, &pod, snap.node(c.node).unwrap());
            assert_eq!(got.code, c.res, "{}", c.name);
            if c.res != Code::Success {
                assert_eq!(got.reasons, [ERR_REASON], "{}", c.name);
            }
            let batch = filter_via_batch(&plugin, &state, &pod, snap.node(c.node).unwrap());
            assert_eq!(
                (batch.code, batch.reasons),
                (got.code, got.reasons),
                "{}: filter_nodes",
                c.name
            );
        }
    }

    /// Upstream `TestPreFilterDisabled`: Filter without PreFilter state is an error.
    #[test]
    fn test_pre_filter_disabled() {
        let plugin = ServiceAffinity::new(ServiceAffinityArgs {
            affinity_labels: s(&["region"]),
            ..Default::default()
        });
        let got = plugin.filter(&CycleState::new(), &pod("p").info(), &node("n").info());
        assert_eq!(got.code, Code::Error);
        assert_eq!(
            got.reasons,
            [r#"error reading "PreFilterServiceAffinity" from cycleState: not found"#]
        );
    }

    /// Upstream `TestServiceAffinityScore` (@007f7ae7, unchanged to v1.22): raw `Score()` on
    /// every node, then `NormalizeScore`; compared per node name (upstream sorts both lists).
    /// Pods and Services without a namespace keep `""` as upstream's literals do.
    #[test]
    fn test_service_affinity_score() {
        const LABELS1: &[(&str, &str)] = &[("foo", "bar"), ("baz", "blah")];
        const LABELS2: &[(&str, &str)] = &[("bar", "foo"), ("baz", "blah")];
        const ZONE1: &[(&str, &str)] = &[("zone", "zone1")];
        const ZONE1_RACK1: &[(&str, &str)] = &[("zone", "zone1"), ("rack", "rack1")];
        const ZONE1_RACK2: &[(&str, &str)] = &[("zone", "zone1"), ("rack", "rack2")];
        const ZONE2: &[(&str, &str)] = &[("zone", "zone2")];
        const ZONE2_RACK1: &[(&str, &str)] = &[("zone", "zone2"), ("rack", "rack1")];
        const NOZONE: &[(&str, &str)] = &[("name", "value")];
        type Nodes = &'static [(&'static str, &'static [(&'static str, &'static str)])];
        const LABELED_NODES: Nodes = &[
            ("machine01", NOZONE),
            ("machine02", NOZONE),
            ("machine11", ZONE1),
            ("machine12", ZONE1),
            ("machine21", ZONE2),
            ("machine22", ZONE2),
        ];
        const ZONE_AND_RACK_NODES: Nodes = &[
            ("machine01", NOZONE),
            ("machine02", NOZONE),
            ("machine11", ZONE1_RACK1),
            ("machine12", ZONE1_RACK2),
            ("machine21", ZONE2_RACK1),
            ("machine22", ZONE2_RACK1),
        ];
        let on = |ns: &str, labels: &[(&str, &str)], node_name: &str| p(ns, labels, node_name, &[]);
        struct Case {
            name: &'static str,
            pod: PodB,
            pods: Vec<PodB>,
            nodes: Nodes,
            services: Vec<(&'static str, &'static [(&'static str, &'static str)])>,
            labels: &'static [&'static str],
            expected: &'static [(&'static str, i64)],
        }
        let cases = vec![
            Case {
                name: "nothing scheduled",
                pod: on("", &[], ""),
                pods: vec![],
                nodes: LABELED_NODES,
                services: vec![],
                labels: &["zone"],
                expected: &[
                    ("machine11", 100),
                    ("machine12", 100),
                    ("machine21", 100),
                    ("machine22", 100),
                    ("machine01", 0),
                    ("machine02", 0),
                ],
            },
            Case {
                name: "no services",
                pod: on("", LABELS1, ""),
                pods: vec![on("", &[], "machine11")],
                nodes: LABELED_NODES,
                services: vec![],
                labels: &["zone"],
                expected: &[
                    ("machine11", 100),
                    ("machine12", 100),
                    ("machine21", 100),
                    ("machine22", 100),
                    ("machine01", 0),
                    ("machine02", 0),
                ],
            },
            Case {
                name: "different services",
                pod: on("", LABELS1, ""),
                pods: vec![on("", LABELS2, "machine11")],
                nodes: LABELED_NODES,
                services: vec![("", &[("key", "value")])],
                labels: &["zone"],
                expected: &[
                    ("machine11", 100),
                    ("machine12", 100),
                    ("machine21", 100),
                    ("machine22", 100),
                    ("machine01", 0),
                    ("machine02", 0),
                ],
            },
            Case {
                name: "three pods, one service pod",
                pod: on("", LABELS1, ""),
                pods: vec![
                    on("", LABELS2, "machine01"),
                    on("", LABELS2, "machine11"),
                    on("", LABELS1, "machine21"),
                ],
                nodes: LABELED_NODES,
                services: vec![("", LABELS1)],
                labels: &["zone"],
                expected: &[
                    ("machine11", 100),
                    ("machine12", 100),
                    ("machine21", 0),
                    ("machine22", 0),
                    ("machine01", 0),
                    ("machine02", 0),
                ],
            },
            Case {
                name: "three pods, two service pods on different machines",
                pod: on("", LABELS1, ""),
                pods: vec![
                    on("", LABELS2, "machine11"),
                    on("", LABELS1, "machine11"),
                    on("", LABELS1, "machine21"),
                ],
                nodes: LABELED_NODES,
                services: vec![("", LABELS1)],
                labels: &["zone"],
                expected: &[
                    ("machine11", 50),
                    ("machine12", 50),
                    ("machine21", 50),
                    ("machine22", 50),
                    ("machine01", 0),
                    ("machine02", 0),
                ],
            },
            Case {
                name: "three service label match pods in different namespaces",
                pod: on("default", LABELS1, ""),
                pods: vec![
                    on("", LABELS1, "machine11"),
                    on("default", LABELS1, "machine11"),
                    on("", LABELS1, "machine21"),
                    on("ns1", LABELS1, "machine21"),
                ],
                nodes: LABELED_NODES,
                services: vec![("default", LABELS1)],
                labels: &["zone"],
                expected: &[
                    ("machine11", 0),
                    ("machine12", 0),
                    ("machine21", 100),
                    ("machine22", 100),
                    ("machine01", 0),
                    ("machine02", 0),
                ],
            },
            Case {
                name: "four pods, three service pods",
                pod: on("", LABELS1, ""),
                pods: vec![
                    on("", LABELS2, "machine11"),
                    on("", LABELS1, "machine11"),
                    on("", LABELS1, "machine21"),
                    on("", LABELS1, "machine21"),
                ],
                nodes: LABELED_NODES,
                services: vec![("", LABELS1)],
                labels: &["zone"],
                expected: &[
                    ("machine11", 66),
                    ("machine12", 66),
                    ("machine21", 33),
                    ("machine22", 33),
                    ("machine01", 0),
                    ("machine02", 0),
                ],
            },
            Case {
                name: "service with partial pod label matches",
                pod: on("", LABELS1, ""),
                pods: vec![
                    on("", LABELS2, "machine11"),
                    on("", LABELS1, "machine11"),
                    on("", LABELS1, "machine21"),
                ],
                nodes: LABELED_NODES,
                services: vec![("", &[("baz", "blah")])],
                labels: &["zone"],
                expected: &[
                    ("machine11", 33),
                    ("machine12", 33),
                    ("machine21", 66),
                    ("machine22", 66),
                    ("machine01", 0),
                    ("machine02", 0),
                ],
            },
            Case {
                name: "service pod on non-zoned node",
                pod: on("", LABELS1, ""),
                pods: vec![
                    on("", LABELS1, "machine01"),
                    on("", LABELS1, "machine11"),
                    on("", LABELS1, "machine21"),
                    on("", LABELS1, "machine21"),
                ],
                nodes: LABELED_NODES,
                services: vec![("", LABELS1)],
                labels: &["zone"],
                expected: &[
                    ("machine11", 75),
                    ("machine12", 75),
                    ("machine21", 50),
                    ("machine22", 50),
                    ("machine01", 0),
                    ("machine02", 0),
                ],
            },
            Case {
                name: "three pods, two service pods, with rack label",
                pod: on("", LABELS1, ""),
                pods: vec![
                    on("", LABELS2, "machine01"),
                    on("", LABELS1, "machine11"),
                    on("", LABELS1, "machine21"),
                ],
                nodes: ZONE_AND_RACK_NODES,
                services: vec![("", LABELS1)],
                labels: &["zone", "rack"],
                expected: &[
                    ("machine11", 25),
                    ("machine12", 75),
                    ("machine21", 25),
                    ("machine22", 25),
                    ("machine01", 0),
                    ("machine02", 0),
                ],
            },
        ];
        for c in cases {
            let nodes: Vec<NodeB> = c.nodes.iter().map(|(n, l)| labeled(n, l)).collect();
            let mut pods = c.pods;
            for (i, x) in pods.iter_mut().enumerate() {
                x.0.metadata.name = Some(format!("pod{i}"));
            }
            let mut snap = snapshot(nodes, &pods);
            for (ns, sel) in &c.services {
                snap.upsert_service(&service(ns, "", sel));
            }
            let plugin = ServiceAffinity::new(ServiceAffinityArgs {
                anti_affinity_labels_preference: s(c.labels),
                ..Default::default()
            });
            let pod = c.pod.info();
            let feasible: Vec<u32> = c
                .nodes
                .iter()
                .map(|(n, _)| snap.node_index(n).unwrap())
                .collect();
            let mut state = CycleState::new();
            let mode = plugin
                .pre_score(&mut state, &pod, &snap, &feasible)
                .unwrap();
            assert_eq!(mode, ScoreMode::PerNode, "{}", c.name);
            let mut scores = vec![0; feasible.len()];
            plugin
                .score_nodes(&state, &pod, &snap, &feasible, &mut scores)
                .unwrap();
            plugin
                .normalize_score(&state, &pod, &snap, &feasible, &mut scores)
                .unwrap();
            let mut got: Vec<(String, i64)> = c
                .nodes
                .iter()
                .map(|(n, _)| n.to_string())
                .zip(scores)
                .collect();
            got.sort();
            let mut want: Vec<(String, i64)> = c
                .expected
                .iter()
                .map(|(n, v)| (n.to_string(), *v))
                .collect();
            want.sort();
            assert_eq!(got, want, "{}", c.name);
        }
    }

    #[test]
    fn no_anti_affinity_labels_score_uniformly_zero() {
        let plugin = ServiceAffinity::new(ServiceAffinityArgs {
            affinity_labels: s(&["zone"]),
            ..Default::default()
        });
        let snap = snapshot(vec![labeled("n", &[("zone", "a")])], &[]);
        let mode = plugin
            .pre_score(&mut CycleState::new(), &pod("p").info(), &snap, &[0])
            .unwrap();
        assert_eq!(mode, ScoreMode::Uniform(0));
        // The per-node path agrees: NormalizeScore with no label leaves 0.
        let mut scores = vec![7];
        plugin.normalize(&[snap.node("n").unwrap()], &mut scores);
        assert_eq!(scores, [0]);
    }
}
