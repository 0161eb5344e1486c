//! Heap allocations per pod in the scheduling cycle, counted by the `dhat` global allocator:
//! the sample policy, every node scored, on the scheduler_perf template nodes and on the
//! heterogeneous openb nodes (`benches::openb_snapshot`), with one worker and with two.
//!
//! ```sh
//! cargo run --release -p benches --bin cycle_allocs -- --nodes 5000 --pods 2000
//! ```
//!
//! For each case: the cycles of `--warmup` pods first (the algorithm's buffers reach their
//! size), then `--pods` pods, each scheduled (`Algorithm::schedule`: PreFilter, the filters'
//! search, scoring, selectHost, Reserve) and assumed on the chosen node (`Snapshot::add_pod`).
//! Prints, per pod, the blocks allocated and the bytes they asked for (`dhat::HeapStats`
//! `total_blocks` / `total_bytes` differences), for the cycle and for the assume apart.

use std::sync::Arc;

use benches::{openb_snapshot, perf_pods, perf_snapshot, sample_policy};
use clap::Parser;
use scheduler::framework::Framework;
use scheduler::model::PodInfo;
use scheduler::schedule_one::Algorithm;
use scheduler::snapshot::Snapshot;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

#[derive(Parser)]
struct Args {
    /// Nodes of each cluster.
    #[arg(long, default_value_t = 5000)]
    nodes: usize,
    /// Pods counted per case.
    #[arg(long, default_value_t = 2000)]
    pods: usize,
    /// Pods scheduled before counting.
    #[arg(long, default_value_t = 200)]
    warmup: usize,
}

/// Blocks and bytes allocated so far.
fn allocated() -> (u64, u64) {
    let s = dhat::HeapStats::get();
    (s.total_blocks, s.total_bytes)
}

/// `(blocks, bytes)` per pod of the cycles and of the assumes over `pods` after `warmup`.
fn count(
    fwk: &Framework,
    mut snapshot: Snapshot,
    pods: &[Arc<PodInfo>],
    warmup: usize,
    parallelism: usize,
) -> ([f64; 2], [f64; 2]) {
    let mut algo = Algorithm::new(100, 1);
    algo.set_parallelism(parallelism);
    let (mut cycle, mut assume) = ([0u64; 2], [0u64; 2]);
    for (k, pod) in pods.iter().enumerate() {
        let a = allocated();
        let r = algo.schedule(fwk, &snapshot, pod, false);
        let b = allocated();
        let Ok(r) = r else {
            eprintln!("pod {k} does not fit: {r:?}");
            std::process::exit(1);
        };
        let _ = snapshot.add_pod(Arc::clone(pod), Some(&r.node), None);
        let c = allocated();
        if k >= warmup {
            cycle[0] += b.0 - a.0;
            cycle[1] += b.1 - a.1;
            assume[0] += c.0 - b.0;
            assume[1] += c.1 - b.1;
        }
    }
    let n = (pods.len() - warmup.min(pods.len())).max(1) as f64;
    (
        [cycle[0] as f64 / n, cycle[1] as f64 / n],
        [assume[0] as f64 / n, assume[1] as f64 / n],
    )
}

fn main() {
    let args = Args::parse();
    let _profiler = dhat::Profiler::builder().testing().build();
    let Ok(fwk) = Framework::from_policy(&sample_policy()) else {
        eprintln!("the sample policy does not build");
        std::process::exit(1);
    };
    let pods = perf_pods(args.warmup + args.pods);
    println!(
        "heap allocations per pod, sample policy, {} nodes, every node scored ({} pods after {} warm-up):",
        args.nodes, args.pods, args.warmup
    );
    type Fresh = fn(usize) -> Snapshot;
    let cases: [(&str, Fresh); 2] = [("template", perf_snapshot), ("openb", openb_snapshot)];
    for (name, fresh) in cases {
        for parallelism in [1usize, 2] {
            let (cycle, assume) = count(&fwk, fresh(args.nodes), &pods, args.warmup, parallelism);
            println!(
                "  {name:<8} {parallelism} worker(s): cycle {:>7.2} allocs/pod {:>9.1} bytes/pod; assume {:>5.2} allocs/pod {:>7.1} bytes/pod",
                cycle[0], cycle[1], assume[0], assume[1]
            );
        }
    }
}
