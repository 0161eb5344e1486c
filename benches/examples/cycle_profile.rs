//! A fixed amount of scheduling work for instruction-count profiling, where wall-clock benches
//! are too noisy (shared 2-core machines):
//! `valgrind --tool=callgrind target/release/examples/cycle_profile 5000 2000`
//! schedules 2000 perf pods on 5000 perf nodes (sample policy, all nodes scored); divide the
//! `Algorithm::schedule` inclusive count by the pod count. A third argument sets the
//! `parallelism` (default 1: callgrind runs one thread at a time anyway); a fourth, `openb`,
//! schedules on the heterogeneous openb nodes (`benches::openb_snapshot`) instead of the
//! template ones.

use std::sync::Arc;

use benches::{openb_snapshot, perf_pods, perf_snapshot, sample_policy};
use scheduler::framework::Framework;
use scheduler::schedule_one::Algorithm;

fn main() {
    let mut args = std::env::args().skip(1);
    let nodes: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5000);
    let count: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(2000);
    let parallelism: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1);
    let openb = args.next().is_some_and(|a| a == "openb");
    let Ok(fwk) = Framework::from_policy(&sample_policy()) else {
        eprintln!("the sample policy does not build");
        std::process::exit(1);
    };
    let mut snapshot = if openb {
        openb_snapshot(nodes)
    } else {
        perf_snapshot(nodes)
    };
    let pods = perf_pods(count);
    let mut algo = Algorithm::new(100, 1);
    algo.set_parallelism(parallelism);
    let mut scheduled = 0;
    for pod in &pods {
        if let Ok(r) = algo.schedule(&fwk, &snapshot, pod, false) {
            let _ = snapshot.add_pod(Arc::clone(pod), Some(&r.node), None);
            scheduled += 1;
        }
    }
    println!("scheduled {scheduled} of {count} pods on {nodes} nodes");
}
