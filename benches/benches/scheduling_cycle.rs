//! One scheduling cycle (filter + score + select host + assume) on scheduler_perf's
//! SchedulingBasic template: nodes 4 cpu / 32 GiB / 110 pods, pods 100m / 500 MiB, the sample
//! policy, every node scored (`percentageOfNodesToScore: 100`), at 500 and 5,000 nodes.
//! Throughput in pods/s = 1 / time per iteration. Run: `cargo bench -p benches --bench scheduling_cycle`.
//! The cycles run with kube-scheduler's default `parallelism` (16: as many workers as the machine
//! has cores run at once); `.../1_worker` and the summary's 1-worker line run on one thread.
//!
//! `topology_policy/5000_nodes/all_scored`: the same cycle with InterPodAffinity and
//! PodTopologySpread active for every pod: each pod has required anti-affinity to the other
//! replicas of its application (100 replicas per application, hostname) and a zone spread
//! constraint (maxSkew 1, 10 zones); the cluster fills to 4 pods per node (every one with
//! anti-affinity) before it is reset, so PreFilter walks tens of thousands of existing pods.
//!
//! `sample_policy/15000_nodes/all_scored`: the template cluster at three times kube-scheduler's
//! supported envelope, for the cost per node visit (filled to 4 pods a node before the reset).
//!
//! `sample_policy/5000_openb_nodes/all_scored`: the heterogeneous case, openb's GPU node list
//! repeated to 5,000 nodes (`benches::openb_nodes`: capacities from 8 to 104 cores, GPU model
//! labels, taints), so no two neighbouring nodes have the same allocatable and a memo of
//! resource scores keyed by node shape cannot help.
//!
//! `sample_policy/5000_openb_nodes/all_scored/tolerating`: the same nodes, the pods tolerating
//! their `NoSchedule` taint (`benches::tolerating_perf_pods`: GPU pods on the GPU nodes tainted
//! for them), which every tainted node then admits; `.../tolerating_control_plane`: the same
//! pods on the same nodes but three, tainted for the control plane, which the pods do not
//! tolerate (`benches::openb_control_plane_snapshot`).
//!
//! `reference_aos/...`, `reference_soa/...`: the reference scans (`benches::reference`: fit +
//! LeastRequested + Balanced and nothing else, as an array of records in exact integers and as
//! columns with reciprocals) over the same nodes and pods, the floor the real cycle is measured
//! against.
//!
//! `summary` (last): one measurement pass over the cases above that prints, in the same run, the
//! cycle's pods/s against both reference scans, the heterogeneous case against the template one
//! and the cost per pod against nodes (1,000, 5,000, 15,000 nodes, each filled to 4 pods a node:
//! nanoseconds per node visit and the slope between sizes).

use std::sync::Arc;
use std::time::{Duration, Instant};

use benches::reference::{AosNodes, RefPod, SoaNodes};
use benches::{
    openb_control_plane_snapshot, openb_snapshot, perf_pods, perf_snapshot, reference_allocatable,
    reference_pod, sample_policy, tolerating_perf_pods, topology_pods, topology_policy,
    topology_snapshot,
};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use scheduler::framework::Framework;
use scheduler::model::PodInfo;
use scheduler::schedule_one::{Algorithm, DEFAULT_PARALLELISM};
use scheduler::snapshot::Snapshot;

/// `parallelism` of the cycles measured (kube-scheduler's default; the workers that run at once
/// are at most the machine's cores).
const PAR: usize = DEFAULT_PARALLELISM;

fn bench_cycle(c: &mut Criterion) {
    let policy = sample_policy();
    #[allow(clippy::expect_used)]
    let fwk = Framework::from_policy(&policy).expect("sample policy builds");
    let mut group = c.benchmark_group("scheduling_cycle");
    group.throughput(Throughput::Elements(1));
    for nodes in [500usize, 5000] {
        // Refill well before the cluster is full so every measured pod schedules.
        let capacity = nodes * 20;
        let pods = perf_pods(capacity);
        group.bench_function(format!("sample_policy/{nodes}_nodes/all_scored"), |b| {
            b.iter_custom(|iters| timed_cycles(iters, &fwk, &pods, || perf_snapshot(nodes), PAR));
        });
        if nodes == 5000 {
            group.bench_function(
                format!("sample_policy/{nodes}_nodes/all_scored/1_worker"),
                |b| {
                    b.iter_custom(|iters| {
                        timed_cycles(iters, &fwk, &pods, || perf_snapshot(nodes), 1)
                    });
                },
            );
            let alloc = reference_allocatable(&perf_snapshot(nodes));
            let refs: Vec<RefPod> = pods.iter().map(|p| reference_pod(p)).collect();
            group.bench_function(format!("reference_aos/{nodes}_nodes"), |b| {
                b.iter_custom(|iters| timed_reference(iters, &refs, || Scan::aos(&alloc)));
            });
            group.bench_function(format!("reference_soa/{nodes}_nodes"), |b| {
                b.iter_custom(|iters| timed_reference(iters, &refs, || Scan::soa(&alloc)));
            });
            group.bench_function(
                format!("sample_policy/{nodes}_openb_nodes/all_scored"),
                |b| {
                    b.iter_custom(|iters| {
                        timed_cycles(iters, &fwk, &pods, || openb_snapshot(nodes), PAR)
                    });
                },
            );
            let tolerating = tolerating_perf_pods(pods.len());
            group.bench_function(
                format!("sample_policy/{nodes}_openb_nodes/all_scored/tolerating"),
                |b| {
                    b.iter_custom(|iters| {
                        timed_cycles(iters, &fwk, &tolerating, || openb_snapshot(nodes), PAR)
                    });
                },
            );
            group.bench_function(
                format!("sample_policy/{nodes}_openb_nodes/all_scored/tolerating_control_plane"),
                |b| {
                    b.iter_custom(|iters| {
                        timed_cycles(
                            iters,
                            &fwk,
                            &tolerating,
                            || openb_control_plane_snapshot(nodes),
                            PAR,
                        )
                    });
                },
            );
        }
    }
    let nodes = 15_000usize;
    let pods = perf_pods(nodes * 4);
    group.bench_function(format!("sample_policy/{nodes}_nodes/all_scored"), |b| {
        b.iter_custom(|iters| timed_cycles(iters, &fwk, &pods, || perf_snapshot(nodes), PAR));
    });
    bench_topology(&mut group);
    group.finish();
}

/// One reference scan over fresh nodes.
enum Scan {
    Aos(AosNodes),
    Soa(Box<SoaNodes>),
}

impl Scan {
    fn aos(alloc: &[(i64, i64, i64)]) -> Scan {
        Scan::Aos(AosNodes::new(alloc.iter().copied()))
    }
    fn soa(alloc: &[(i64, i64, i64)]) -> Scan {
        Scan::Soa(Box::new(SoaNodes::new(alloc.iter().copied())))
    }
    fn schedule(&mut self, pod: &RefPod) -> Option<usize> {
        match self {
            Scan::Aos(n) => n.schedule(pod),
            Scan::Soa(n) => n.schedule(pod),
        }
    }
}

/// Time of `iters` reference-scan cycles, pods and refills as in [`timed_cycles`].
fn timed_reference(iters: u64, pods: &[RefPod], fresh: impl Fn() -> Scan) -> Duration {
    let mut total = Duration::ZERO;
    let mut scan = fresh();
    let mut next = 0usize;
    for _ in 0..iters {
        if next == pods.len() {
            scan = fresh();
            next = 0;
        }
        let pod = &pods[next];
        next += 1;
        let start = Instant::now();
        let chosen = scan.schedule(pod);
        total += start.elapsed();
        assert!(chosen.is_some(), "reference pod fits");
    }
    total
}

/// Seconds per pod of `f(iters)`: the best of three passes of about `budget` each, after one
/// warm-up pass (the best, not the mean, to keep the other helpers' load on the machine out).
fn seconds_per_pod(budget: Duration, mut f: impl FnMut(u64) -> Duration) -> f64 {
    let probe = f(50).as_secs_f64().max(1e-9) / 50.0;
    let iters = ((budget.as_secs_f64() / probe) as u64).clamp(50, 200_000);
    let _ = f(iters);
    (0..3)
        .map(|_| f(iters).as_secs_f64() / iters as f64)
        .fold(f64::INFINITY, f64::min)
}

/// The ratios the compact-model issue sets targets on, measured in one pass and printed.
fn summary(_c: &mut Criterion) {
    // `cargo test --benches` (`--test`), `--list`, or a filter naming other cases: skip it.
    let args: Vec<String> = std::env::args().skip(1).collect();
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    if args.iter().any(|a| a == "--test" || a == "--list")
        || (!filters.is_empty() && !filters.iter().any(|f| "summary".contains(f.as_str())))
    {
        return;
    }
    #[allow(clippy::expect_used)]
    let fwk = Framework::from_policy(&sample_policy()).expect("sample policy builds");
    let budget = Duration::from_millis(700);
    let nodes = 5000usize;
    let pods = perf_pods(nodes * 20);
    let refs: Vec<RefPod> = pods.iter().map(|p| reference_pod(p)).collect();
    let alloc = reference_allocatable(&perf_snapshot(nodes));
    let workers = {
        let mut a = Algorithm::new(100, 1);
        a.set_parallelism(PAR);
        a.workers()
    };
    let cycle = seconds_per_pod(budget, |i| {
        timed_cycles(i, &fwk, &pods, || perf_snapshot(nodes), PAR)
    });
    let cycle1 = seconds_per_pod(budget, |i| {
        timed_cycles(i, &fwk, &pods, || perf_snapshot(nodes), 1)
    });
    let aos = seconds_per_pod(budget, |i| timed_reference(i, &refs, || Scan::aos(&alloc)));
    let soa = seconds_per_pod(budget, |i| timed_reference(i, &refs, || Scan::soa(&alloc)));
    let openb = seconds_per_pod(budget, |i| {
        timed_cycles(i, &fwk, &pods, || openb_snapshot(nodes), PAR)
    });
    let tolerating = tolerating_perf_pods(pods.len());
    let openb_tolerating = seconds_per_pod(budget, |i| {
        timed_cycles(i, &fwk, &tolerating, || openb_snapshot(nodes), PAR)
    });
    let openb_control_plane = seconds_per_pod(budget, |i| {
        timed_cycles(
            i,
            &fwk,
            &tolerating,
            || openb_control_plane_snapshot(nodes),
            PAR,
        )
    });
    let line = |what: &str, s: f64| {
        println!(
            "  {what:<50} {:>9.0} pods/s  {:>7.1} ns/node",
            1.0 / s,
            s * 1e9 / nodes as f64
        );
    };
    println!(
        "\nsummary (best of 3 passes of ~{budget:?}; 5,000 nodes, every node scored; {workers} workers = parallelism {PAR} on this machine's cores):"
    );
    line("sample policy cycle, template nodes", cycle);
    line("sample policy cycle, template nodes, 1 worker", cycle1);
    line("sample policy cycle, openb nodes", openb);
    line(
        "sample policy cycle, openb nodes, tolerating pods",
        openb_tolerating,
    );
    line(
        "  the same, 3 control-plane nodes not tolerated",
        openb_control_plane,
    );
    line("reference scan, records, exact integers", aos);
    line("reference scan, columns, reciprocals", soa);
    println!(
        "  cycle / reference: {:.2}x of the records scan, {:.2}x of the columns scan (pods/s; target >= 1.0x of the columns scan)",
        aos / cycle,
        soa / cycle
    );
    println!(
        "  1 worker: {:.2}x of the records scan, {:.2}x of the columns scan; {workers} workers / 1 worker: {:.2}x pods/s",
        aos / cycle1,
        soa / cycle1,
        cycle1 / cycle
    );
    println!(
        "  openb / template time per pod: {:.2}x, with pods tolerating the taint {:.2}x, and control-plane nodes {:.2}x (target <= 1.5x)",
        openb / cycle,
        openb_tolerating / cycle,
        openb_control_plane / cycle
    );
    let mut prev: Option<(usize, f64)> = None;
    println!("  cost per pod against nodes (template, 4 pods a node before each reset):");
    for n in [1000usize, 5000, 15_000] {
        let pods = perf_pods(n * 4);
        let s = seconds_per_pod(budget, |i| {
            timed_cycles(i, &fwk, &pods, || perf_snapshot(n), PAR)
        });
        let slope = prev
            .map(|(pn, ps)| {
                format!(
                    ", slope from {pn}: {:.1} ns/node",
                    (s - ps) * 1e9 / (n - pn) as f64
                )
            })
            .unwrap_or_default();
        println!(
            "    {n:>6} nodes: {:>8.1} us/pod, {:>5.1} ns/node{slope}",
            s * 1e6,
            s * 1e9 / n as f64
        );
        prev = Some((n, s));
    }
}

fn bench_topology(group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    #[allow(clippy::expect_used)]
    let fwk = Framework::from_policy(&topology_policy()).expect("topology policy builds");
    let nodes = 5000usize;
    let capacity = nodes * 4;
    let pods = topology_pods(capacity);
    group.bench_function(format!("topology_policy/{nodes}_nodes/all_scored"), |b| {
        b.iter_custom(|iters| timed_cycles(iters, &fwk, &pods, || topology_snapshot(nodes), PAR));
    });
}

/// Time of `iters` scheduling cycles, each assuming its pod on the chosen node (no copy of the
/// pod): the pods are taken in order from `pods`, and the cluster is rebuilt with `fresh` (not
/// timed) whenever all of them have been placed, so every measured pod schedules.
fn timed_cycles(
    iters: u64,
    fwk: &Framework,
    pods: &[Arc<PodInfo>],
    fresh: impl Fn() -> Snapshot,
    parallelism: usize,
) -> Duration {
    let mut total = Duration::ZERO;
    let mut snapshot = fresh();
    let mut algo = Algorithm::new(100, 1);
    algo.set_parallelism(parallelism);
    let mut next = 0usize;
    for _ in 0..iters {
        if next == pods.len() {
            snapshot = fresh();
            next = 0;
        }
        let pod = &pods[next];
        next += 1;
        let start = Instant::now();
        #[allow(clippy::expect_used)]
        let r = algo
            .schedule(fwk, &snapshot, pod, false)
            .expect("bench pod fits");
        let _ = snapshot.add_pod(Arc::clone(pod), Some(&r.node), None);
        total += start.elapsed();
    }
    total
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(Duration::from_secs(8));
    targets = bench_cycle, summary
}
criterion_main!(benches);
