//! Randomized differential tests of the scheduling cycle, over many seeds: clusters with zones,
//! taints, cordons, extended resources, GPU devices and running pods holding host ports and
//! GPUs; pods with host ports, node selectors, required and preferred node affinity, topology
//! spread constraints, extended resources, whole GPUs or a GPU share, init containers and
//! overhead. For every pod:
//!
//! - the reference — each filter's PreFilter once, then `filter` on every node in order; each
//!   score plugin's PreScore, `score` and NormalizeScore on the feasible nodes, weighted — gives
//!   the feasible set, every failed node's reasons and every feasible node's total;
//! - the explained path (`explain = true`) must report exactly those failures and totals;
//! - the fast path (`explain = false`: combined FastChecks over the node columns, fused
//!   resource scorers over the columns with reciprocals) must find the same feasible nodes in
//!   the same order with the same totals (up to the constant of the uniform plugins it leaves
//!   out) and choose a top-scored node;
//! - each cpu/memory scorer's column scores must equal its per-node `score` on every node, bit
//!   for bit;
//! - the fused search (cpu/memory scores computed by the workers as they filter, statuses of
//!   failing nodes built only when reported) must give exactly the result of the unfused one
//!   (scores in a second pass, every status built), with one worker and with three: the same
//!   node, the same totals, the same error;
//! - each filter's `filter_code` must be the code of its `filter` on every node.
//!
//! The `one_zone` runs put every node in one zone, so the NodeTree order is the index order and
//! the search takes the dense column scan (`Dense` in `find_feasible`: vectorised fast check
//! and float LeastAllocated + BalancedAllocation), and add nodes at the edges of its range: no
//! allocatable cpu or memory, and nodes overcommitted by their running pods.
//!
//! Then the pod is placed on the chosen node, so later pods meet its ports, its spread and its
//! requests.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;

use super::*;
use crate::framework::ScoreMode;
use crate::framework::plugins::testutil::{NodeB, PodB, node, pod, snapshot, term};
use crate::model::{RESOURCE_GPU, RESOURCE_GPU_MILLI};

/// Seeds run by `cargo test`; `DIFFERENTIAL_SEEDS=N` runs more.
const DEFAULT_SEEDS: u64 = 120;

struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn below(&mut self, m: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % m
    }
    fn chance(&mut self, one_in: u64) -> bool {
        self.below(one_in) == 0
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len() as u64) as usize]
    }
}

const ZONES: &[&str] = &["z1", "z2", "z3"];
const APPS: &[&str] = &["web", "db", "cache"];
const GPU: &str = "example.com/gpu";

fn random_node(r: &mut Rng, i: usize) -> NodeB {
    let cpu = r.pick(&["2", "4", "8"]).to_string();
    let mem = r.pick(&["4Gi", "8Gi", "16Gi"]).to_string();
    let pods = (3 + r.below(8)).to_string();
    let gpus = r.below(3).to_string();
    let mut res = vec![
        ("cpu", cpu.as_str()),
        ("memory", mem.as_str()),
        ("pods", pods.as_str()),
        ("ephemeral-storage", "20Gi"),
    ];
    if gpus != "0" {
        res.push((GPU, gpus.as_str()));
    }
    // Counted GPU devices (per-device accounting by GpuShare), on a third of the nodes; a few
    // advertise only milli-GPU (no device count).
    let devices = r.pick(&["1", "2", "4", "8"]).to_string();
    let milli = (devices.parse::<u32>().unwrap_or(1) * 1000).to_string();
    match r.below(6) {
        0 | 1 => {
            res.push((RESOURCE_GPU, devices.as_str()));
            res.push((RESOURCE_GPU_MILLI, milli.as_str()));
        }
        2 if r.chance(3) => res.push((RESOURCE_GPU_MILLI, milli.as_str())),
        _ => {}
    }
    let name = format!("n{i:02}");
    let mut n = node(&name)
        .allocatable(&res)
        .label("topology.kubernetes.io/zone", r.pick(ZONES))
        .label("zone", r.pick(ZONES))
        .label("disk", r.pick(&["ssd", "hdd"]))
        .label("kubernetes.io/hostname", &name);
    match r.below(8) {
        0 => n = n.unschedulable(),
        1 => n = n.taint("dedicated", "gpu", "NoSchedule"),
        2 => n = n.taint("soft", "x", "PreferNoSchedule"),
        _ => {}
    }
    if r.chance(3) {
        n = n.image(&["registry.k8s.io/app:1"], 300 * 1024 * 1024);
    }
    n
}

fn spread(r: &mut Rng, app: &str) -> core::TopologySpreadConstraint {
    core::TopologySpreadConstraint {
        max_skew: 1 + r.below(2) as i32,
        topology_key: r.pick(&["zone", "kubernetes.io/hostname"]).into(),
        when_unsatisfiable: r.pick(&["DoNotSchedule", "ScheduleAnyway"]).into(),
        label_selector: Some(meta::LabelSelector {
            match_labels: Some(BTreeMap::from([("app".to_string(), app.to_string())])),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn random_pod(r: &mut Rng, name: &str) -> PodB {
    let app = r.pick(APPS);
    let cpu = format!("{}m", 50 + r.below(1500));
    let mem = format!("{}Mi", 32 + r.below(2000));
    let mut req = vec![("cpu", cpu.as_str()), ("memory", mem.as_str())];
    if r.chance(4) {
        req.push((GPU, "1"));
    }
    // GPU pods: whole devices or a share of one device.
    let whole = (1 + r.below(3)).to_string();
    let share = (100 * (1 + r.below(9))).to_string();
    match r.below(5) {
        0 => req.push((RESOURCE_GPU, whole.as_str())),
        1 => req.push((RESOURCE_GPU_MILLI, share.as_str())),
        _ => {}
    }
    let mut p = pod(name).label("app", app).container(&req);
    if r.chance(3) {
        let c = format!("{}m", 100 + r.below(3000));
        p = p.init_container(&[("cpu", c.as_str()), ("memory", "128Mi")]);
    }
    if r.chance(4) {
        p = p.overhead(&[("cpu", "100m"), ("memory", "64Mi")]);
    }
    if r.chance(3) {
        let port = [80, 443, 8080][r.below(3) as usize];
        p = p.host_port(r.pick(&["", "127.0.0.1"]), r.pick(&["TCP", "UDP"]), port);
    }
    if r.chance(5) {
        p = p.node_selector("disk", r.pick(&["ssd", "hdd"]));
    }
    if r.chance(5) {
        let zones: Vec<&str> = ZONES.iter().copied().filter(|_| r.chance(2)).collect();
        p = p.required_affinity(vec![term(&[("zone", "In", &zones)])]);
    }
    if r.chance(3) {
        let w = 1 + r.below(100) as i32;
        p = p.preferred_affinity(vec![(w, term(&[("disk", "In", &["ssd"])]))]);
    }
    if r.chance(3) {
        let c = spread(r, app);
        p.0.spec.as_mut().unwrap().topology_spread_constraints = Some(vec![c]);
    }
    if r.chance(4) {
        p = p.toleration("dedicated", "Equal", "gpu", "NoSchedule");
    }
    if r.chance(3) {
        p = p.image("registry.k8s.io/app:1");
    }
    p
}

/// A pod the dense scan takes (cpu and memory, sometimes a host port or a toleration of the
/// `dedicated` taint): no GPU, no affinity, no spread.
fn plain_pod(r: &mut Rng, name: &str) -> PodB {
    let cpu = format!("{}m", 50 + r.below(1500));
    let mem = format!("{}Mi", 32 + r.below(2000));
    let mut p = pod(name)
        .label("app", r.pick(APPS))
        .container(&[("cpu", cpu.as_str()), ("memory", mem.as_str())]);
    if r.chance(4) {
        p = p.host_port("", "TCP", 8080);
    }
    match r.below(6) {
        0 | 1 => p = p.toleration("dedicated", "Equal", "gpu", "NoSchedule"),
        // Tolerates no taint of the cluster: the quick reject applies.
        2 => p = p.toleration("absent", "Exists", "", "NoSchedule"),
        3 => p = p.toleration("evicting", "Exists", "", "NoExecute"),
        _ => {}
    }
    p
}

/// The reference: feasible nodes (snapshot order), failed nodes' reasons, and each feasible
/// node's weighted total.
struct Reference {
    feasible: Vec<u32>,
    failed: BTreeMap<String, Vec<String>>,
    totals: BTreeMap<String, i64>,
}

fn reference(fwk: &Framework, snap: &Snapshot, p: &PodInfo) -> Option<Reference> {
    let mut state = CycleState::new();
    let mut active = Vec::new();
    for f in &fwk.filters {
        let s = f.pre_filter(&mut state, p, snap);
        if s.is_skip() {
            continue;
        }
        if !s.is_success() {
            // Rejected by a PreFilter on every node: compared through the FitError below.
            return None;
        }
        active.push(f);
    }
    let mut feasible = Vec::new();
    let mut failed = BTreeMap::new();
    for &i in snap.order() {
        let ni = &snap.nodes()[i as usize];
        let bad = active.iter().find_map(|f| {
            let s = f.filter(&state, p, ni);
            (!s.is_success()).then(|| s.reasons.iter().map(|r| r.to_string()).collect())
        });
        match bad {
            Some(reasons) => {
                failed.insert(ni.name.clone(), reasons);
            }
            None => feasible.push(i),
        }
    }
    let mut totals = vec![0i64; feasible.len()];
    if !feasible.is_empty() {
        for ws in &fwk.scores {
            let mut scores = vec![0i64; feasible.len()];
            match ws.plugin.pre_score(&mut state, p, snap, &feasible).unwrap() {
                ScoreMode::Uniform(v) => scores.fill(v),
                ScoreMode::PerNode => {
                    for (s, &i) in scores.iter_mut().zip(&feasible) {
                        *s = ws
                            .plugin
                            .score(&state, p, &snap.nodes()[i as usize])
                            .unwrap();
                    }
                    ws.plugin
                        .normalize_score(&state, p, snap, &feasible, &mut scores)
                        .unwrap();
                }
            }
            for (t, s) in totals.iter_mut().zip(&scores) {
                *t += s * ws.weight;
            }
        }
    }
    let totals = feasible
        .iter()
        .zip(&totals)
        .map(|(&i, &t)| (snap.nodes()[i as usize].name.clone(), t))
        .collect();
    Some(Reference {
        feasible,
        failed,
        totals,
    })
}

/// The cpu/memory scorers' column path (`score_nodes` over the snapshot's columns, with
/// reciprocals) gives, on every node (feasible or not), exactly the integer their per-node
/// `score` computes from the NodeInfo with v1.22's divisions.
fn column_scores_equal_per_node_scores(fwk: &Framework, snap: &Snapshot, p: &PodInfo, at: &str) {
    let all: Vec<u32> = (0..snap.len() as u32).collect();
    let state = CycleState::new();
    let mut checked = 0;
    for ws in fwk
        .scores
        .iter()
        .filter(|ws| ws.plugin.hot_scorer().is_some())
    {
        let mut cols = vec![-1i64; all.len()];
        ws.plugin
            .score_nodes(&state, p, snap, &all, &mut cols)
            .unwrap();
        for (&i, c) in all.iter().zip(&cols) {
            let want = ws
                .plugin
                .score(&state, p, &snap.nodes()[i as usize])
                .unwrap();
            assert_eq!(*c, want, "{at}: {} on node {i}", ws.plugin.name());
            checked += 1;
        }
    }
    assert!(
        checked > 0 || fwk.scores.iter().all(|ws| ws.plugin.hot_scorer().is_none()),
        "{at}"
    );
}

/// Every filter's `filter_code` is the code of its `filter`, on every node (after PreFilter,
/// as the search calls them).
fn filter_codes_equal_filter_statuses(fwk: &Framework, snap: &Snapshot, p: &PodInfo, at: &str) {
    let mut state = CycleState::new();
    let mut active = Vec::new();
    if !fwk
        .run_pre_filter_plugins(&mut state, p, snap, &mut active)
        .is_success()
    {
        return;
    }
    for &fi in &active {
        let f = &fwk.filters[fi];
        for n in snap.nodes() {
            assert_eq!(
                f.filter_code(&state, p, n),
                f.filter(&state, p, n).code,
                "{at}: {} on {}",
                f.name(),
                n.name
            );
        }
    }
}

fn run_seed(fwk: &Framework, seed: u64) {
    run_seed_in(fwk, seed, false);
}

/// A node of [`random_node`] in zone `z1`, sometimes without allocatable cpu or memory (the
/// dense scan's edge cases), for the one-zone runs.
fn one_zone_node(r: &mut Rng, i: usize) -> NodeB {
    let mut n = random_node(r, i).label("topology.kubernetes.io/zone", "z1");
    // (A second filter taint, NoExecute: the taint quick reject needs the pod to tolerate
    // neither; a pod that tolerates one of them takes the per-node path.)
    if r.chance(10) {
        n = n.taint("evicting", "", "NoExecute");
    }
    if r.chance(8) {
        let res = if r.chance(2) {
            [("cpu", "0"), ("memory", "8Gi"), ("pods", "10")]
        } else {
            [("cpu", "4"), ("memory", "0"), ("pods", "10")]
        };
        n = n.allocatable(&res);
    }
    n
}

fn run_seed_in(fwk: &Framework, seed: u64, one_zone: bool) {
    let mut r = Rng::new(seed);
    let n_nodes = 3 + r.below(30) as usize;
    let nodes: Vec<NodeB> = (0..n_nodes)
        .map(|i| {
            if one_zone {
                one_zone_node(&mut r, i)
            } else {
                random_node(&mut r, i)
            }
        })
        .collect();
    let names: Vec<String> = (0..n_nodes).map(|i| format!("n{i:02}")).collect();
    let running: Vec<PodB> = (0..r.below(2 * n_nodes as u64))
        .map(|k| {
            let node_name = names[r.below(n_nodes as u64) as usize].clone();
            random_pod(&mut r, &format!("run{k}")).node(&node_name)
        })
        .collect();
    let mut snap = snapshot(nodes, &running);
    assert!(
        !one_zone || snap.order_is_index(),
        "seed {seed}: one zone, index order"
    );
    let mut explained = Algorithm::new(100, seed);
    let mut fast = Algorithm::new(100, seed);
    let mut unfused = Algorithm::new(100, seed);
    unfused.set_fused(false);
    let mut fused3 = Algorithm::new(100, seed);
    fused3.set_workers_exactly(3);
    for k in 0..20 {
        let p = random_pod(&mut r, &format!("p{k}")).info();
        let at = format!("seed {seed} pod {k}");
        let reference = reference(fwk, &snap, &p);
        column_scores_equal_per_node_scores(fwk, &snap, &p, &at);
        filter_codes_equal_filter_statuses(fwk, &snap, &p, &at);
        let start = fast.next_start_node_index % snap.len();
        let a = explained.schedule(fwk, &snap, &p, true);
        let b = fast.schedule(fwk, &snap, &p, false);
        let u = unfused.schedule(fwk, &snap, &p, false);
        let b3 = fused3.schedule(fwk, &snap, &p, false);
        assert_eq!(b, u, "{at}: fused vs unfused search");
        assert_eq!(b, b3, "{at}: 1 vs 3 workers");
        if b.is_ok() {
            assert_eq!(fast.scoring.totals, unfused.scoring.totals, "{at}");
            assert_eq!(fast.scoring.totals, fused3.scoring.totals, "{at}");
        }
        let Some(want) = reference else {
            assert!(matches!(a, Err(ScheduleError::Fit(_))), "{at}: {a:?}");
            assert_eq!(a.as_ref().err(), b.as_ref().err(), "{at}");
            continue;
        };
        match (a, b) {
            (Ok(a), Ok(b)) => {
                assert_eq!(
                    a.diagnosis.as_ref().unwrap(),
                    &want.failed,
                    "{at}: failures"
                );
                let got: BTreeMap<String, i64> = a
                    .scores
                    .as_ref()
                    .unwrap()
                    .iter()
                    .map(|(n, s)| (n.clone(), s.total))
                    .collect();
                assert_eq!(got, want.totals, "{at}: every node's total");
                assert_eq!(b.feasible_nodes, want.feasible.len(), "{at}");
                let best = want.totals.values().max().copied().unwrap();
                assert_eq!(
                    want.totals[&b.node], best,
                    "{at}: fast path chose {}",
                    b.node
                );
                assert_eq!(want.totals[&a.node], best, "{at}");
                if want.feasible.len() > 1 {
                    // The fast path's totals, in its search order (NodeTree order from the
                    // start index), differ from the reference by the same constant.
                    let order = snap.order();
                    let rotated: Vec<u32> = (0..order.len())
                        .map(|j| order[(start + j) % order.len()])
                        .filter(|i| want.feasible.contains(i))
                        .collect();
                    let ref_totals: Vec<i64> = rotated
                        .iter()
                        .map(|&i| want.totals[&snap.nodes()[i as usize].name])
                        .collect();
                    assert_eq!(fast.scoring.totals.len(), ref_totals.len(), "{at}");
                    let shift = ref_totals[0] - fast.scoring.totals[0];
                    for (j, (f, w)) in fast.scoring.totals.iter().zip(&ref_totals).enumerate() {
                        assert_eq!(f + shift, *w, "{at}: node {}", rotated[j]);
                    }
                }
                snap.add_pod(Arc::new(p), Some(&b.node), Some(b.gpu_indexes))
                    .unwrap();
            }
            (Err(ScheduleError::Fit(fa)), Err(ScheduleError::Fit(fb))) => {
                assert!(want.feasible.is_empty(), "{at}: reference found nodes");
                let got: BTreeMap<String, Vec<String>> = fa
                    .node_to_status(&snap)
                    .iter()
                    .map(|(n, s)| (n.clone(), s.reasons.iter().map(|r| r.to_string()).collect()))
                    .collect();
                assert_eq!(got, want.failed, "{at}");
                assert_eq!(fa, fb, "{at}");
            }
            (a, b) => panic!("{at}: explained {a:?} vs fast {b:?}"),
        }
    }
}

/// The sample policy (`config/policy-config-file.json`), resolved under the default feature
/// gates as the binary runs it.
fn sample_policy() -> crate::policy::ResolvedPolicy {
    crate::policy::parse_policy(
        "config/policy-config-file.json",
        include_str!("../../../../config/policy-config-file.json"),
    )
    .unwrap()
    .resolved
    .with_feature_gates(&crate::policy::FeatureGates::default())
}

fn seeds() -> u64 {
    std::env::var("DIFFERENTIAL_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_SEEDS)
}

/// kube-scheduler v1.22's default plugins (what this build implements).
#[test]
fn default_provider_agrees_with_the_reference_over_many_seeds() {
    let fwk = Framework::from_policy(&crate::policy::default_provider()).unwrap();
    for seed in 0..seeds() {
        run_seed(&fwk, seed);
    }
}

/// A Policy mixing every resource scorer (fused on the fast path) with per-node ones.
#[test]
fn mixed_policy_agrees_with_the_reference_over_many_seeds() {
    let policy = crate::policy::parse_policy(
        "inline",
        r#"{"kind":"Policy","apiVersion":"v1",
           "predicates":[{"name":"PodFitsResources"},{"name":"PodFitsHostPorts"},
                         {"name":"MatchNodeSelector"},{"name":"PodToleratesNodeTaints"},
                         {"name":"CheckNodeUnschedulable"},{"name":"EvenPodsSpread"}],
           "priorities":[{"name":"LeastRequestedPriority","weight":2},
                         {"name":"MostRequestedPriority","weight":1},
                         {"name":"BalancedResourceAllocation","weight":3},
                         {"name":"NodeAffinityPriority","weight":2},
                         {"name":"TaintTolerationPriority","weight":1},
                         {"name":"EvenPodsSpreadPriority","weight":2},
                         {"name":"ImageLocalityPriority","weight":1}]}"#,
    )
    .unwrap()
    .resolved;
    let fwk = Framework::from_policy(&policy).unwrap();
    for seed in 0..seeds() {
        run_seed(&fwk, 10_000 + seed);
    }
}

/// The GPU placement scorers (FGD, BestFit, GpuPacking, FGD-CpuPacking) with the GPU fit checks: GPU pods take
/// the combined fast check (GPU resources and devices from the node columns).
#[test]
fn gpu_policy_agrees_with_the_reference_over_many_seeds() {
    let policy = crate::policy::parse_policy(
        "inline",
        r#"{"kind":"Policy","apiVersion":"v1",
           "predicates":[{"name":"PodFitsResources"},{"name":"MatchNodeSelector"},
                         {"name":"PodToleratesNodeTaints"},{"name":"CheckNodeUnschedulable"}],
           "priorities":[{"name":"GpuFragmentationPriority","weight":3},
                         {"name":"BestFitPriority","weight":2},
                         {"name":"GpuPackingPriority","weight":1},
                         {"name":"GpuFragmentationCpuPackingPriority","weight":2}]}"#,
    )
    .unwrap()
    .resolved;
    let fwk = Framework::from_policy(&policy).unwrap();
    for seed in 0..seeds() {
        run_seed(&fwk, 20_000 + seed);
    }
}

/// The sample policy (`config/policy-config-file.json`), the DefaultProvider and a policy
/// weighting the resource scorers 2 and 3, with every node in one zone: the dense column scan,
/// against the reference.
#[test]
fn one_zone_dense_scan_agrees_with_the_reference_over_many_seeds() {
    let sample = sample_policy();
    // Weights other than 1: the kernel's general combination.
    let weighted = crate::policy::parse_policy(
        "inline",
        r#"{"kind":"Policy","apiVersion":"v1",
           "predicates":[{"name":"PodFitsResources"},{"name":"PodFitsHostPorts"},
                         {"name":"MatchNodeSelector"},{"name":"PodToleratesNodeTaints"}],
           "priorities":[{"name":"LeastRequestedPriority","weight":2},
                         {"name":"BalancedResourceAllocation","weight":3},
                         {"name":"NodeAffinityPriority","weight":2}]}"#,
    )
    .unwrap()
    .resolved;
    let policies = [sample, crate::policy::default_provider(), weighted];
    let rejects = || super::find_feasible::TAINT_QUICK_REJECTS.with(|n| n.get());
    for (k, policy) in policies.iter().enumerate() {
        let fwk = Framework::from_policy(policy).unwrap();
        let before = rejects();
        for seed in 0..seeds() {
            run_seed_in(&fwk, 30_000 + 10_000 * k as u64 + seed, true);
        }
        // Tainted nodes rejected by the quick reject, their statuses checked above.
        assert!(rejects() > before, "policy {k}: no taint quick reject");
    }
}

/// Clusters of several chunks in one zone, so the dense scan runs in rounds of several chunks
/// on the workers (`dense_round`: the scan helpers take chunks from the back, the calling
/// thread from the front, and a chunk a helper has not finished is scanned again by the
/// caller): the same node, totals and error with 1, 2 and 3 workers, with every node scored and
/// with 80 % of the nodes to find, and with a caller that never waits for a helper.
#[test]
fn dense_rounds_on_the_workers_agree_with_one_worker() {
    let sample = sample_policy();
    let fwk = Framework::from_policy(&sample).unwrap();
    for seed in 0..4u64 {
        let mut r = Rng::new(40_000 + seed);
        let n_nodes = 2600 + r.below(1200) as usize;
        let nodes: Vec<NodeB> = (0..n_nodes).map(|i| one_zone_node(&mut r, i)).collect();
        let names: Vec<String> = (0..n_nodes).map(|i| format!("n{i:02}")).collect();
        let running: Vec<PodB> = (0..r.below(n_nodes as u64))
            .map(|k| {
                let node_name = names[r.below(n_nodes as u64) as usize].clone();
                random_pod(&mut r, &format!("run{k}")).node(&node_name)
            })
            .collect();
        let mut snap = snapshot(nodes, &running);
        assert!(snap.order_is_index(), "seed {seed}");
        for pct in [100, 80] {
            let mut algos: Vec<Algorithm> = (0..5).map(|_| Algorithm::new(pct, seed)).collect();
            for (a, w) in algos.iter_mut().zip([1, 2, 3, 2, 8]) {
                a.set_workers_exactly(w);
            }
            algos[3].search.impatient = true;
            for k in 0..16 {
                let name = format!("p{k}");
                let p = if k % 2 == 0 {
                    plain_pod(&mut r, &name)
                } else {
                    random_pod(&mut r, &name)
                }
                .info();
                let at = format!("seed {seed} pct {pct} pod {k}");
                let results: Vec<_> = algos
                    .iter_mut()
                    .map(|a| a.schedule(&fwk, &snap, &p, false))
                    .collect();
                for (j, res) in results.iter().enumerate().skip(1) {
                    assert_eq!(&results[0], res, "{at}: algorithm {j}");
                    if res.is_ok() {
                        assert_eq!(algos[0].scoring.totals, algos[j].scoring.totals, "{at}");
                    }
                }
                if let Ok(b) = &results[0] {
                    snap.add_pod(Arc::new(p), Some(&b.node), Some(b.gpu_indexes.clone()))
                        .unwrap();
                }
            }
            assert_eq!(algos[0].search.dense_rounds, 0);
            for a in &algos[1..] {
                assert!(
                    a.search.dense_rounds >= 3,
                    "seed {seed}: {}",
                    a.search.dense_rounds
                );
            }
        }
    }
}
