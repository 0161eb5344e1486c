//! One scheduling cycle (filter + score + select host + assume) on scheduler_perf's
//! SchedulingBasic template: nodes 4 cpu / 32 GiB / 110 pods, pods 100m / 500 MiB, the sample
//! policy, every node scored (`percentageOfNodesToScore: 100`), at 500 and 5,000 nodes.
//! Throughput in pods/s = 1 / time per iteration. Run: `cargo bench -p benches --bench scheduling_cycle`.
//!
//! `topology_policy/5000_nodes/all_scored`: the same cycle with InterPodAffinity and
//! PodTopologySpread active for every pod: each pod has required anti-affinity to the other
//! replicas of its application (100 replicas per application, hostname) and a zone spread
//! constraint (maxSkew 1, 10 zones); the cluster fills to 4 pods per node (every one with
//! anti-affinity) before it is reset, so PreFilter walks tens of thousands of existing pods.

use std::sync::Arc;
use std::time::{Duration, Instant};

use benches::{
    perf_pods, perf_snapshot, sample_policy, topology_pods, topology_policy, topology_snapshot,
};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use scheduler::framework::{Framework, PodInfo};
use scheduler::schedule_one::Algorithm;
use scheduler::snapshot::Snapshot;

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
            b.iter_custom(|iters| timed_cycles(iters, &fwk, &pods, || perf_snapshot(nodes)));
        });
    }
    bench_topology(&mut group);
    group.finish();
}

fn bench_topology(group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    #[allow(clippy::expect_used)]
    let fwk = Framework::from_policy(&topology_policy()).expect("topology policy builds");
    let nodes = 5000usize;
    let capacity = nodes * 4;
    let pods = topology_pods(capacity);
    group.bench_function(format!("topology_policy/{nodes}_nodes/all_scored"), |b| {
        b.iter_custom(|iters| timed_cycles(iters, &fwk, &pods, || topology_snapshot(nodes)));
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
) -> Duration {
    let mut total = Duration::ZERO;
    let mut snapshot = fresh();
    let mut algo = Algorithm::new(100, 1);
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
    targets = bench_cycle
}
criterion_main!(benches);
