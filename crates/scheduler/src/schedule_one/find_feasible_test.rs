//! Tests of the search for feasible nodes.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Arc;

use super::*;
use crate::framework::plugins::testutil::{node, pod, snapshot};
use crate::schedule_one::testutil::{ByName, codes, framework_of};
use crate::schedule_one::{Algorithm, ScheduleError};

/// TestFairEvaluationForNodes (generic_scheduler_test.go, v1.22): with 500 feasible nodes
/// and percentageOfNodesToScore 30, every cycle finds exactly numFeasibleNodesToFind nodes
/// and the start index advances by that much, wrapping around, so every node gets its turn.
#[test]
fn fair_evaluation_for_nodes() {
    let nodes: Vec<_> = (0..500)
        .map(|i| node(&i.to_string()).allocatable(&[("pods", "110")]))
        .collect();
    let snap = snapshot(nodes, &[]);
    let policy = crate::policy::parse_policy(
        "inline",
        r#"{"kind":"Policy","apiVersion":"v1","predicates":[{"name":"PodFitsResources"}],"priorities":[]}"#,
    )
    .unwrap()
    .resolved;
    let fwk = Framework::from_policy(&policy).unwrap();
    let mut algo = Algorithm::new(30, 1);
    let to_find = num_feasible_nodes_to_find(30, 500);
    assert_eq!(to_find, 150);
    let p = pod("p").info();
    for i in 0..2 * (500 / to_find + 1) {
        let r = algo.schedule(&fwk, &snap, &p, false).unwrap();
        assert_eq!(r.feasible_nodes, to_find);
        assert_eq!(
            algo.next_start_node_index,
            (i + 1) * to_find % 500,
            "cycle {i}"
        );
    }
}

/// The search stops at the numFeasibleNodesToFind-th feasible node, whatever the chunking:
/// nodes after it are neither counted as processed nor reported in the diagnosis.
#[test]
fn search_stops_at_the_last_needed_feasible_node() {
    let nodes: Vec<_> = (0..200)
        .map(|i| {
            let n = node(&format!("n{i:03}")).allocatable(&[("pods", "110")]);
            if i >= 100 { n.unschedulable() } else { n }
        })
        .collect();
    let snap = snapshot(nodes, &[]);
    let fwk = Framework::from_policy(&crate::policy::default_provider()).unwrap();
    let mut algo = Algorithm::new(0, 1);
    let p = pod("p").info();
    let r = algo.schedule(&fwk, &snap, &p, true).unwrap();
    assert_eq!(r.feasible_nodes, 100);
    assert_eq!(r.diagnosis.unwrap().len(), 0);
    assert_eq!(algo.next_start_node_index, 100);
    let r = algo.schedule(&fwk, &snap, &p, true).unwrap();
    // From n100: 100 cordoned nodes, then n000..n099.
    assert_eq!(r.feasible_nodes, 100);
    assert_eq!(r.diagnosis.unwrap().len(), 100);
    // processed = 100 failed + 100 feasible, from 100: (100 + 200) % 200.
    assert_eq!(algo.next_start_node_index, 100);
}

/// A pod that tolerates every NoSchedule/NoExecute taint of the nodes (GPU nodes tainted for
/// the pods that ask for a GPU) passes TaintToleration everywhere: the search sends none of
/// the tainted nodes to the per-node filters, and finds them all feasible, with the dense scan
/// (one zone) and with the per-node fast check (three zones in blocks: the NodeTree order is
/// not the index order). A pod that tolerates one of the two taint sets has only the nodes of
/// the other filtered one by one, with the plugin's verdicts. Past the snapshot's taint-set
/// slots, the nodes of a set without one are filtered one by one too, and pass when the pod
/// tolerates their taints. (About 300 nodes: one worker, so the counter of this thread sees
/// every node.)
#[test]
fn a_pod_tolerating_taint_sets_skips_the_per_node_taint_check_on_their_nodes() {
    let fwk = Framework::from_policy(&crate::policy::default_provider()).unwrap();
    let per_node = |algo: &mut Algorithm, snap: &Snapshot, p: &PodInfo| {
        let before = PER_NODE_FILTER_NODES.with(|c| c.get());
        let r = algo.schedule(&fwk, snap, p, true).unwrap();
        (
            r.feasible_nodes,
            r.diagnosis.unwrap(),
            PER_NODE_FILTER_NODES.with(|c| c.get()) - before,
        )
    };
    let untolerated = |key: &str, value: &str| {
        vec![format!(
            "node(s) had taint {{{key}: {value}}}, that the pod didn't tolerate"
        )]
    };
    for zones in [1, 3] {
        let mut nodes: Vec<_> = (0..300)
            .map(|i| {
                let n = node(&format!("n{i:03}"))
                    .allocatable(&[("cpu", "8"), ("memory", "32Gi"), ("pods", "110")])
                    .label(
                        "topology.kubernetes.io/zone",
                        &format!("z{}", i * zones / 300),
                    );
                match i % 3 {
                    0 => n.taint("nvidia.com/gpu", "present", "NoSchedule"),
                    1 => n.taint("dedicated", "ml", "NoExecute"),
                    _ => n,
                }
            })
            .collect();
        let snap = snapshot(nodes.clone(), &[]);
        assert_eq!(snap.order_is_index(), zones == 1);
        let mut algo = Algorithm::new(100, 1);
        algo.set_parallelism(1);
        let gpu = pod("gpu")
            .container(&[("cpu", "1"), ("memory", "1Gi")])
            .toleration("nvidia.com/gpu", "Exists", "", "NoSchedule");
        let both = gpu
            .clone()
            .toleration("dedicated", "Equal", "ml", "")
            .info();
        assert!(snap.tolerates_every_filter_taint(&both));
        let (feasible, _, filtered) = per_node(&mut algo, &snap, &both);
        assert_eq!((feasible, filtered), (300, 0), "{zones} zone(s)");

        let gpu_only = gpu.clone().info();
        assert!(!snap.tolerates_every_filter_taint(&gpu_only));
        assert!(!snap.tolerates_no_filter_taint(&gpu_only));
        let (feasible, diagnosis, filtered) = per_node(&mut algo, &snap, &gpu_only);
        assert_eq!((feasible, filtered), (200, 100), "{zones} zone(s)");
        assert_eq!(diagnosis.len(), 100);
        assert!(
            diagnosis
                .values()
                .all(|r| *r == untolerated("dedicated", "ml"))
        );

        // Ten more nodes, each with a set of its own: two slots are taken, six more go to the
        // first six, and the last four have none.
        for k in 0..10 {
            nodes.push(
                node(&format!("s{k}"))
                    .allocatable(&[("cpu", "8"), ("memory", "32Gi"), ("pods", "110")])
                    .label("topology.kubernetes.io/zone", "z0")
                    .taint("special", &format!("v{k}"), "NoSchedule"),
            );
        }
        let snap = snapshot(nodes, &[]);
        let other = snap
            .nodes()
            .iter()
            .enumerate()
            .filter(|(i, _)| snap.columns().flags[*i] & NodeHot::TAINT_SET_OTHER != 0)
            .map(|(_, n)| n.name.as_str())
            .collect::<Vec<_>>();
        assert_eq!(other, ["s6", "s7", "s8", "s9"]);
        let specials = gpu
            .clone()
            .toleration("special", "Exists", "", "NoSchedule")
            .info();
        let (feasible, diagnosis, filtered) = per_node(&mut algo, &snap, &specials);
        assert_eq!((feasible, filtered), (210, 104), "{zones} zone(s)");
        assert!(
            diagnosis
                .values()
                .all(|r| *r == untolerated("dedicated", "ml"))
        );
    }
}

/// The taint-set slots follow the nodes: a slot is freed when its last node leaves or changes
/// its taints, and the next new set takes it; a node keeps the slot of its set through an
/// update that keeps its taints.
#[test]
fn taint_set_slots_are_freed_and_reused() {
    let n = |name: &str, value: &str| {
        node(name)
            .allocatable(&[("pods", "110")])
            .taint("k", value, "NoSchedule")
            .info()
    };
    let mut snap = Snapshot::new();
    snap.add_node(n("a", "1")).unwrap();
    snap.add_node(n("b", "2")).unwrap();
    snap.add_node(n("c", "2")).unwrap();
    let flag = |s: &Snapshot, name: &str| s.node(name).unwrap().filter_taint_slot;
    assert_eq!(flag(&snap, "a"), NodeHot::TAINT_SET_FIRST);
    assert_eq!(flag(&snap, "b"), NodeHot::TAINT_SET_FIRST << 1);
    assert_eq!(flag(&snap, "c"), NodeHot::TAINT_SET_FIRST << 1);
    // a changes its taint: slot 0 is free again, and its new set takes it.
    snap.update_node(n("a", "3"));
    assert_eq!(flag(&snap, "a"), NodeHot::TAINT_SET_FIRST);
    // b leaves, c keeps slot 1 through an update with the same taint.
    snap.remove_node("b");
    snap.update_node(n("c", "2"));
    assert_eq!(flag(&snap, "c"), NodeHot::TAINT_SET_FIRST << 1);
    snap.remove_node("c");
    snap.add_node(n("d", "4")).unwrap();
    assert_eq!(flag(&snap, "d"), NodeHot::TAINT_SET_FIRST << 1);
    assert!(snap.hot_rows_consistent());
    let p = pod("p").toleration("k", "Equal", "3", "NoSchedule").info();
    assert_eq!(
        snap.untolerated_taint_flags(&p),
        NodeHot::TAINT_SET_OTHER | NodeHot::TAINT_SET_FIRST << 1
    );
}

/// Differential test of the combined FastCheck pass: on nodes with taints, cordons,
/// overcommitted resources and full pod slots, the feasible set and every failed node's
/// reasons equal running each policy filter's `filter` on each node in order.
#[test]
fn fast_checks_agree_with_the_per_node_filters() {
    let fwk = Framework::from_policy(&crate::policy::default_provider()).unwrap();
    let mut x: u64 = 99;
    let mut rnd = |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    let mut nodes = Vec::new();
    let mut running = Vec::new();
    for i in 0..120 {
        let name = format!("n{i}");
        let pods_cap = (1 + rnd(3)).to_string();
        let mut n = node(&name).allocatable(&[
            ("cpu", if rnd(2) == 0 { "2" } else { "4" }),
            ("memory", if rnd(2) == 0 { "4Gi" } else { "8Gi" }),
            ("pods", &pods_cap),
            ("ephemeral-storage", "10Gi"),
        ]);
        match rnd(8) {
            0 => n = n.unschedulable(),
            1 => n = n.taint("dedicated", "gpu", "NoSchedule"),
            2 => n = n.taint("soft", "x", "PreferNoSchedule"),
            // Several taint sets: a pod may tolerate some whole and not others.
            3 => n = n.taint("edge", "", "NoExecute"),
            4 => {
                n = n
                    .taint("dedicated", "gpu", "NoSchedule")
                    .taint("edge", "", "NoExecute")
            }
            _ => {}
        }
        nodes.push(n);
        for k in 0..rnd(3) {
            // Running pods may overcommit (they were bound by someone else).
            let cpu = format!("{}m", 500 + rnd(2000));
            let eph = if rnd(5) == 0 { "20Gi" } else { "1Gi" };
            running.push(
                pod(&format!("r{i}-{k}"))
                    .container(&[("cpu", &cpu), ("memory", "1Gi"), ("ephemeral-storage", eph)])
                    .node(&name),
            );
        }
    }
    let snap = snapshot(nodes, &running);
    let mut algo = Algorithm::new(100, 5);
    for k in 0..60 {
        let cpu = format!("{}m", rnd(3000));
        let mut p = pod(&format!("p{k}")).container(&[("cpu", &cpu), ("memory", "1Gi")]);
        if rnd(3) == 0 {
            p = p.toleration("dedicated", "Equal", "gpu", "NoSchedule");
        }
        if rnd(3) == 0 {
            p = p.toleration("edge", "Exists", "", "");
        }
        if rnd(4) == 0 {
            p = p.toleration(
                "node.kubernetes.io/unschedulable",
                "Exists",
                "",
                "NoSchedule",
            );
        }
        let p = p.info();
        let mut state = CycleState::new();
        let mut expected_failed = BTreeMap::new();
        for ni in snap.nodes() {
            for f in &fwk.filters {
                if f.pre_filter(&mut state, &p, &snap).is_skip() {
                    continue;
                }
                let st = f.filter(&state, &p, ni);
                if !st.is_success() {
                    let reasons: Vec<String> = st.reasons.iter().map(|r| r.to_string()).collect();
                    expected_failed.insert(ni.name.clone(), reasons);
                    break;
                }
            }
        }
        match algo.schedule(&fwk, &snap, &p, true) {
            Ok(r) => {
                assert_eq!(r.diagnosis.unwrap(), expected_failed, "pod {k}");
                assert_eq!(
                    r.feasible_nodes,
                    snap.len() - expected_failed.len(),
                    "pod {k}"
                );
            }
            Err(ScheduleError::Fit(fe)) => {
                let got: BTreeMap<String, Vec<String>> = fe
                    .node_to_status(&snap)
                    .iter()
                    .map(|(n, s)| (n.clone(), s.reasons.iter().map(|r| r.to_string()).collect()))
                    .collect();
                assert_eq!(got, expected_failed, "pod {k}");
                assert_eq!(expected_failed.len(), snap.len());
            }
            Err(e) => panic!("pod {k}: {e}"),
        }
    }
}

/// Upstream `kubernetes/kubernetes` `pkg/scheduler/core/generic_scheduler_test.go`,
/// `TestNumFeasibleNodesToFind` (v1.22: `g.numFeasibleNodesToFind(numAllNodes)` on a
/// `genericScheduler{percentageOfNodesToScore}`). Table read from index id 10260167 (a post-1.24
/// `schedule_one_test.go`-style copy) and identical in older copies (ids 53190816046,
/// 8381068759, 1288678901, 55511566435). The names say "50" but the threshold is
/// `minFeasibleNodesToFind` = 100.
#[test]
fn test_num_feasible_nodes_to_find() {
    struct Case {
        name: &'static str,
        percentage_of_nodes_to_score: i32,
        num_all_nodes: usize,
        want_num_nodes: usize,
    }
    let cases = vec![
        Case {
            name: "not set percentageOfNodesToScore and nodes number not more than 50",
            percentage_of_nodes_to_score: DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE,
            num_all_nodes: 10,
            want_num_nodes: 10,
        },
        Case {
            name: "set percentageOfNodesToScore and nodes number not more than 50",
            percentage_of_nodes_to_score: 40,
            num_all_nodes: 10,
            want_num_nodes: 10,
        },
        Case {
            // 50 - 1000/125 = 42% of 1000.
            name: "not set percentageOfNodesToScore and nodes number more than 50",
            percentage_of_nodes_to_score: 0,
            num_all_nodes: 1000,
            want_num_nodes: 420,
        },
        Case {
            name: "set percentageOfNodesToScore and nodes number more than 50",
            percentage_of_nodes_to_score: 40,
            num_all_nodes: 1000,
            want_num_nodes: 400,
        },
        Case {
            // 50 - 6000/125 = 2%, clamped to 5% of 6000.
            name: "not set percentageOfNodesToScore and nodes number more than 50*125",
            percentage_of_nodes_to_score: 0,
            num_all_nodes: 6000,
            want_num_nodes: 300,
        },
        Case {
            name: "set percentageOfNodesToScore and nodes number more than 50*125",
            percentage_of_nodes_to_score: 40,
            num_all_nodes: 6000,
            want_num_nodes: 2400,
        },
    ];
    for c in cases {
        assert_eq!(
            num_feasible_nodes_to_find(c.percentage_of_nodes_to_score, c.num_all_nodes),
            c.want_num_nodes,
            "{}",
            c.name
        );
    }
}

/// v1.22 `RunFilterPlugins` returns a filter's Error status at once, wrapped as `running
/// %q filter plugin: %w`, also with `alwaysCheckAllPredicates` (runAllFilters) and after
/// another filter found the node unschedulable: the attempt fails with that error. (Before
/// the fix the merged status kept the Unschedulable code and the error was lost.)
#[test]
fn filter_error_aborts_the_attempt_even_when_running_all_filters() {
    let snap = snapshot(vec![node("n1"), node("n2")], &[]);
    let p = pod("p").info();
    for run_all in [false, true] {
        let fwk = framework_of(
            vec![
                ByName::boxed("First", Code::Unschedulable, &["n1"]),
                ByName::boxed("Broken", Code::Error, &["n1"]),
            ],
            run_all,
        );
        let r = Algorithm::new(100, 1).schedule(&fwk, &snap, &p, false);
        if run_all {
            match r {
                Err(e @ ScheduleError::ExtensionPoint { .. }) => assert_eq!(
                    e.to_string(),
                    "running \"Broken\" filter plugin: Broken says no"
                ),
                other => panic!("{other:?}"),
            }
        } else {
            // Without runAllFilters the Unschedulable filter stops n1 first: n2 fits.
            assert_eq!(r.unwrap().node, "n2");
        }
    }
}

/// An Error on any node aborts the attempt even when other nodes fit, and the search stops
/// there (upstream cancels the parallel search once an error is sent) instead of filtering
/// the remaining nodes.
#[test]
fn filter_error_on_a_later_node_aborts_and_stops_the_search() {
    let names: Vec<String> = (0..600).map(|i| format!("n{i:03}")).collect();
    let snap = snapshot(names.iter().map(|n| node(n)).collect(), &[]);
    let p = pod("p").info();
    let calls: Arc<std::sync::atomic::AtomicUsize> = Default::default();
    let fwk = framework_of(
        vec![ByName::counted(
            "Broken",
            Code::Error,
            &["n010"],
            calls.clone(),
        )],
        false,
    );
    let mut algo = Algorithm::new(100, 1);
    let e = algo.schedule(&fwk, &snap, &p, false).unwrap_err();
    assert_eq!(
        e.to_string(),
        "running \"Broken\" filter plugin: Broken says no"
    );
    // The first chunk (256 nodes) was filtered, not all 600.
    assert_eq!(calls.load(std::sync::atomic::Ordering::Relaxed), 256);
    assert_eq!(algo.next_start_node_index, 256);
}

/// v1.22 `RunPreFilterPlugins` wraps an Error status as `running PreFilter plugin %q: %w`.
#[test]
fn prefilter_error_text() {
    struct Broken;
    impl crate::framework::FilterPlugin for Broken {
        fn name(&self) -> &'static str {
            "VolumeBinding"
        }
        fn pre_filter(&self, _: &mut CycleState, _: &PodInfo, _: &Snapshot) -> Status {
            Status::error("error getting PVC \"default/c\": could not find it")
        }
        fn filter(&self, _: &CycleState, _: &PodInfo, _: &NodeInfo) -> Status {
            Status::success()
        }
    }
    let snap = snapshot(vec![node("n1")], &[]);
    let fwk = framework_of(vec![Box::new(Broken)], false);
    let mut algo = Algorithm::new(100, 1);
    let e = algo
        .schedule(&fwk, &snap, &pod("p").info(), false)
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "running PreFilter plugin \"VolumeBinding\": error getting PVC \"default/c\": could not find it"
    );
    // RunPreFilterPlugins observes its duration with the Error code; nothing else ran.
    assert_eq!(
        codes(algo.last_timings()),
        [Some(Code::Error), None, None, None]
    );
}

/// The dense scan on nodes at the edges of the 64-bit range (free amounts from `i64::MIN` to
/// `i64::MAX`, just below, at and above the need; needs from 0 to `i64::MAX`; every flag),
/// with and without a fit part, scoring or not, weights 1 and others: its verdict is the
/// combined fast check's ([`FastCheck::passes_at`]), and a node it marks exact has the exact
/// column scores' total ([`ScoreInput`]); a node out of the kernel's range is never marked
/// exact. The chunk top it summarises is [`Top::of`] of the totals.
#[test]
fn dense_scan_equals_the_fast_check_and_the_exact_scores_at_the_edges() {
    use crate::framework::plugins::node_resources_columns::ScoreInput;
    let free = [
        i64::MIN,
        i64::MIN + 1,
        -(1 << 62),
        -101,
        -1,
        0,
        1,
        99,
        100,
        101,
        1 << 40,
        (1 << 62) + 1,
        i64::MAX - 1,
        i64::MAX,
    ];
    let mut r = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        r
    };
    let mut cols = NodeColumns::default();
    for &p in &free {
        for &c in &free {
            for &m in &free {
                // In the kernel's range most of the time, else flagged out of it (as
                // `NodeHot::of` flags it).
                let (alloc_cpu, alloc_mem) = match next() % 4 {
                    0 => (4000, 32i64 << 30),
                    1 => (
                        1 + (next() % 256_000) as i64,
                        1 + (next() % (1 << 45)) as i64,
                    ),
                    2 => (1, (1 << 46) - 1),
                    _ => (0, i64::MAX),
                };
                let nz_cpu = (next() % (alloc_cpu.max(1) as u64 * 2)) as i64;
                let nz_mem = (next() % (alloc_mem.clamp(1, 1 << 50) as u64 * 2)) as i64;
                let in_range =
                    (1..1i64 << 46).contains(&alloc_cpu) && (1..1i64 << 46).contains(&alloc_mem);
                let flags = [
                    0,
                    NodeHot::UNSCHEDULABLE,
                    NodeHot::FILTER_TAINTS,
                    NodeHot::OTHER_OVERCOMMIT,
                ][next() as usize % 4]
                    | if in_range {
                        0
                    } else {
                        NodeHot::SCORE_OUT_OF_RANGE
                    };
                cols.push(&NodeHot {
                    free_pods: p,
                    free_milli_cpu: c,
                    free_memory: m,
                    flags,
                    alloc_milli_cpu: alloc_cpu,
                    alloc_memory: alloc_mem,
                    nz_milli_cpu: nz_cpu,
                    nz_memory: nz_mem,
                    ..NodeHot::default()
                });
            }
        }
    }
    let n = cols.len();
    let needs = [0, 1, 100, 1 << 40, 1 << 62, i64::MAX];
    let mut exact = 0;
    let mut marked = 0;
    for (case, &(forbidden, fits, score)) in [
        (0, None, None),
        (NodeHot::UNSCHEDULABLE, None, Some((1, 1))),
        (
            NodeHot::FILTER_TAINTS | NodeHot::OTHER_OVERCOMMIT,
            Some((0, 0)),
            Some((1, 1)),
        ),
        (NodeHot::UNSCHEDULABLE, Some((100, 1 << 40)), Some((2, 3))),
        (0, Some((i64::MAX, 1)), None),
    ]
    .iter()
    .enumerate()
    {
        for &need in &needs {
            let fits = fits.map(|(c, m): (i64, i64)| if case == 2 { (need, need) } else { (c, m) });
            let fast = FastCheck {
                forbidden_flags: forbidden,
                fits,
                ..FastCheck::default()
            };
            let (pc, pm) = (100 + need % 1000, 200 << 20);
            let (pods, (cpu, mem)) = match fits {
                Some(f) => (1, f),
                None => (i64::MIN, (i64::MIN, i64::MIN)),
            };
            let d = Dense {
                forbidden: forbidden & !NodeHot::FILTER_TAINTS,
                taints: forbidden & NodeHot::FILTER_TAINTS,
                taint_reject: None,
                fit: fits.is_some(),
                pods,
                cpu,
                mem,
                score: score.map(|(wl, wb)| (wl, wb, pc as f64, pm as f64)),
            };
            let mut state = vec![0u64; n];
            let mut totals = vec![0i64; n];
            // From a node in the middle, wrapping: both halves of `scan_from`.
            let first = n / 3;
            d.scan_from(&cols, first, &mut state, &mut totals);
            for k in 0..n {
                let i = (first + k) % n;
                assert_eq!(
                    state[k] & 1 == 1,
                    fast.passes_at(&cols, i),
                    "case {case} need {need} node {:?}",
                    cols.get(i)
                );
                assert_eq!(state[k] >> 2, 0);
                let Some((wl, wb)) = score else {
                    assert_eq!(state[k] & 2, 0);
                    continue;
                };
                let s = ScoreInput::at(&cols, i, pc, pm);
                if cols.flags[i] & NodeHot::SCORE_OUT_OF_RANGE != 0 {
                    assert_eq!(state[k] & 2, 0, "{:?}", cols.get(i));
                    continue;
                }
                exact += 1;
                if state[k] & 2 != 0 {
                    marked += 1;
                    assert_eq!(
                        totals[k],
                        wl * s.least_allocated() + wb * s.balanced_allocation(),
                        "case {case} {s:?}"
                    );
                }
            }
            if score.is_some() && Dense::all_pass(true, &state) {
                assert_eq!(
                    Dense::summary(true, &state, &totals),
                    Some(Top::of(&totals))
                );
            }
        }
    }
    // Most in-range nodes are scored by the kernel (the others: Balanced at exactly 100 when
    // both fractions are clamped to 1, frequent in these nodes).
    assert!(marked * 2 > exact, "{marked} of {exact}");
}

/// The scan with the taint quick reject (`Dense::taint_reject` set): bit 1 is the fast check
/// as without it, bit 4 marks exactly the nodes that fail the check and pass it once the taints
/// flag is dropped from it (they fail by the flag alone), on nodes at the edges of the fit part
/// with every combination of flags, with and without a fit part, scoring or not.
#[test]
fn dense_scan_marks_the_nodes_failing_by_the_taints_flag_alone() {
    let free = [i64::MIN, -1, 0, 1, 99, 100, 101, i64::MAX];
    let mut cols = NodeColumns::default();
    for &p in &free {
        for &c in &free {
            for &m in &free {
                for flags in 0..16u32 {
                    cols.push(&NodeHot {
                        free_pods: p,
                        free_milli_cpu: c,
                        free_memory: m,
                        flags,
                        alloc_milli_cpu: 4000,
                        alloc_memory: 32 << 30,
                        nz_milli_cpu: 100 + (p & 0xfff),
                        nz_memory: 200 << 20,
                        ..NodeHot::default()
                    });
                }
            }
        }
    }
    let n = cols.len();
    let mut marked = 0;
    for forbidden in [
        NodeHot::FILTER_TAINTS,
        NodeHot::FILTER_TAINTS | NodeHot::UNSCHEDULABLE,
        NodeHot::FILTER_TAINTS | NodeHot::UNSCHEDULABLE | NodeHot::OTHER_OVERCOMMIT,
    ] {
        for fits in [None, Some((0, 0)), Some((100, 100)), Some((i64::MAX, 1))] {
            for score in [None, Some((1, 1, 100.0, (200 << 20) as f64))] {
                let fast = FastCheck {
                    forbidden_flags: forbidden,
                    fits,
                    ..FastCheck::default()
                };
                let others = FastCheck {
                    forbidden_flags: forbidden & !NodeHot::FILTER_TAINTS,
                    ..fast
                };
                let (pods, (cpu, mem)) = match fits {
                    Some(f) => (1, f),
                    None => (i64::MIN, (i64::MIN, i64::MIN)),
                };
                let plain = Dense {
                    forbidden: forbidden & !NodeHot::FILTER_TAINTS,
                    taints: NodeHot::FILTER_TAINTS,
                    taint_reject: None,
                    fit: fits.is_some(),
                    pods,
                    cpu,
                    mem,
                    score,
                };
                let quick = Dense {
                    taint_reject: Some(3),
                    ..plain
                };
                let (mut s0, mut t0) = (vec![0u64; n], vec![0i64; n]);
                let (mut s1, mut t1) = (vec![0u64; n], vec![0i64; n]);
                let first = n / 2 + 7;
                plain.scan_from(&cols, first, &mut s0, &mut t0);
                quick.scan_from(&cols, first, &mut s1, &mut t1);
                for k in 0..n {
                    let i = (first + k) % n;
                    let at = || format!("{forbidden} {fits:?} {score:?} {:?}", cols.get(i));
                    assert_eq!(s1[k] & 3, s0[k], "{}", at());
                    assert_eq!(s1[k] & 1 == 1, fast.passes_at(&cols, i), "{}", at());
                    let alone = !fast.passes_at(&cols, i) && others.passes_at(&cols, i);
                    assert_eq!(s1[k] >> 2 == 1, alone, "{}", at());
                    marked += usize::from(alone);
                    if s0[k] & 2 != 0 {
                        assert_eq!(t1[k], t0[k], "{}", at());
                    }
                }
            }
        }
    }
    assert!(marked > 1000, "{marked}");
}

/// The dense strategy ([`filter_dense`]: the scan, then `compact_dense`) against the per-node
/// fast-check strategy ([`filter_with_fast_check`]) on the same chunks, with and without the
/// taint quick reject: chunks mixing nodes that pass (with their float score and, when cpu and
/// memory are equally used, through the exact path), quick rejects, and nodes that run the
/// filters (full, cordoned, cordoned and tainted, tainted and full), starting anywhere and
/// wrapping past the last node, for pods with and without tolerations. The same nodes kept in
/// the same order, the same totals and top, and the same failures by node and filter in the
/// same order.
#[test]
fn dense_strategy_equals_the_per_node_fast_check_on_mixed_chunks() {
    let fwk = Framework::from_policy(&crate::policy::default_provider()).unwrap();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut rnd = move |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    let mut quick_rejects = 0;
    let mut inexact = 0;
    let mut cleaned = 0;
    for round in 0..6 {
        let n = [300, 600, 257, 1000, 513, 256][round];
        let mut nodes = Vec::new();
        let mut running = Vec::new();
        for i in 0..n {
            let name = format!("n{i:04}");
            // 4 cpu / 4Gi: a pod of 1 cpu / 1Gi uses both alike (BalancedAllocation exactly 100,
            // through the exact path).
            let (cpu, mem) = [("4", "4Gi"), ("4", "8Gi"), ("8", "16Gi")][rnd(3) as usize];
            let mut b = node(&name).allocatable(&[("cpu", cpu), ("memory", mem), ("pods", "4")]);
            // Runs of one kind as well as single nodes.
            let kind = if rnd(4) == 0 { 9 } else { rnd(9) };
            match kind {
                0..=2 => b = b.taint("dedicated", "gpu", "NoSchedule"),
                3 => b = b.unschedulable(),
                4 => b = b.taint("dedicated", "gpu", "NoExecute").unschedulable(),
                5 => b = b.taint("soft", "x", "PreferNoSchedule"),
                _ => {}
            }
            if kind == 6 || (kind == 1 && rnd(2) == 0) {
                // Full: four pods.
                for k in 0..4 {
                    running.push(pod(&format!("r{i}-{k}")).node(&name));
                }
            }
            nodes.push(b);
        }
        let snap = snapshot(nodes, &running);
        assert!(snap.order_is_index() && snap.has_filter_taints());
        for k in 0..8 {
            let (cpu, mem) = [("1", "1Gi"), ("500m", "2Gi"), ("2", "1Gi")][rnd(3) as usize];
            let mut p = pod(&format!("p{k}")).container(&[("cpu", cpu), ("memory", mem)]);
            if k % 4 == 3 {
                p = p.toleration("other", "Exists", "", "NoSchedule");
            }
            if k % 4 == 2 {
                p = p.toleration("dedicated", "Equal", "gpu", "NoSchedule");
            }
            let p = p.info();
            let mut state = CycleState::new();
            let mut active = Vec::new();
            run_pre_filter_plugins(&fwk, &mut state, &p, &snap, &mut active).unwrap();
            let own: Vec<FastCheck> = active
                .iter()
                .map(|&fi| fwk.filters[fi].fast_check(&p).unwrap())
                .collect();
            let fast = own.iter().fold(FastCheck::default(), |a, f| a.and(*f));
            let taint = active
                .iter()
                .position(|&fi| {
                    fwk.filters[fi].name() == crate::framework::plugins::taint_toleration::NAME
                })
                .map(|j| active[j] as u32);
            let quick = snap.tolerates_no_filter_taint(&p);
            assert_eq!(quick, k % 4 != 2, "pod {k}");
            let filters = ChunkFilters {
                fwk: &fwk,
                state: &state,
                pod: &p,
                snapshot: &snap,
                active: &active,
                own: &own,
                score: Fused::LeastBalanced(1, 1),
            };
            for reject in [taint.filter(|_| quick), None] {
                let d = Dense::of(fast, filters.score, &p, &snap, reject).unwrap();
                assert_eq!(d.taint_reject.is_some(), reject.is_some());
                for first in [0, 1, n / 2, n - CHUNK.min(n), n - 1, n - 100] {
                    for len in [1, 7, CHUNK.min(n) - 1, CHUNK.min(n)] {
                        let chunk = || Chunk {
                            nodes: (0..len).map(|j| ((first + j) % n) as u32).collect(),
                            take: len,
                            ..Chunk::default()
                        };
                        let (mut dense, mut each) = (chunk(), chunk());
                        // Buffers as a previous chunk left them: the scan overwrites them.
                        dense.totals = vec![-5; CHUNK];
                        dense.deferred.push((0, 0));
                        each.deferred.push((0, 0));
                        let before = TAINT_QUICK_REJECTS.with(|c| c.get());
                        filter_dense(&filters, d, &mut dense);
                        quick_rejects += TAINT_QUICK_REJECTS.with(|c| c.get()) - before;
                        filter_with_fast_check(&filters, fast, &mut each);
                        let at = format!("round {round} pod {k} {reject:?} from {first} len {len}");
                        assert_eq!(dense.nodes, each.nodes, "{at}");
                        assert_eq!(dense.totals, each.totals, "{at}");
                        assert_eq!(dense.top, each.top, "{at}");
                        assert_eq!(dense.deferred, each.deferred, "{at}");
                        assert_eq!(dense.failed, each.failed, "{at}");
                        // The scan's sums of the nodes without an exact score are not read:
                        // spoiled, the exact path still gives the same totals.
                        let mut spoiled = chunk();
                        let mut st = vec![0u64; len];
                        spoiled.totals = vec![0; len];
                        d.scan_from(snap.columns(), first % n, &mut st, &mut spoiled.totals);
                        for (t, &s) in spoiled.totals.iter_mut().zip(&st) {
                            if s & 3 == 1 {
                                *t = i64::MIN + 1;
                                inexact += 1;
                            }
                        }
                        // A scan helper's compaction, when no node needs the filters or the
                        // exact path: the same nodes, sums and quick rejects.
                        let (mut kn, mut ks, mut rj) = ([0; CHUNK], [0; CHUNK], [0; CHUNK]);
                        let first = first % n;
                        let clean = compact_clean(
                            true,
                            first,
                            n,
                            &st,
                            &spoiled.totals,
                            &mut kn,
                            &mut ks,
                            &mut rj,
                        );
                        let needs_more = st.iter().any(|&s| s & 5 == 0 || s & 3 == 1);
                        assert_eq!(clean.is_none(), needs_more, "{at}");
                        if let Some((kept, nr)) = clean {
                            cleaned += 1;
                            assert_eq!(kn[..kept], each.nodes, "{at}");
                            assert_eq!(ks[..kept], each.totals, "{at}");
                            let rejects: Vec<_> =
                                rj[..nr].iter().map(|&ni| (ni, reject.unwrap())).collect();
                            assert_eq!(rejects, each.deferred[1..], "{at}");
                        }
                        compact_dense(&filters, d, &mut spoiled, &st, None);
                        assert_eq!(spoiled.nodes, each.nodes, "{at}");
                        assert_eq!(spoiled.totals, each.totals, "{at}");
                        assert_eq!(spoiled.deferred, each.deferred[1..], "{at}");
                    }
                }
            }
        }
    }
    assert!(quick_rejects > 10_000, "{quick_rejects}");
    assert!(inexact > 1000, "{inexact}");
    assert!(cleaned > 20, "{cleaned}");
}
