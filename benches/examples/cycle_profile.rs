//! A fixed amount of scheduling work for instruction-count profiling, where wall-clock benches
//! are too noisy (shared 2-core machines):
//! `valgrind --tool=callgrind target/release/examples/cycle_profile 5000 2000`
//! schedules 2000 perf pods on 5000 perf nodes (sample policy, all nodes scored); divide the
//! `Algorithm::schedule` inclusive count by the pod count. A third argument sets the
//! `parallelism` (default 1: callgrind runs one thread at a time anyway); a fourth, `openb`,
//! schedules on the heterogeneous openb nodes (`benches::openb_snapshot`) instead of the
//! template ones (`template` keeps them), and `openb-tolerating` schedules pods that tolerate
//! the openb nodes' `NoSchedule` taint there (`benches::tolerating_perf_pods`: GPU pods on GPU
//! nodes tainted for them), `openb-control-plane` the same pods on the same nodes but the first
//! three, which carry a control-plane taint instead (`node-role.kubernetes.io/control-plane`,
//! `NoSchedule`) that the pods do not tolerate, as a kubeadm cluster's are; a fifth repeats the whole run that many times on a
//! fresh copy of the cluster (default 1), so that `perf record` sees mostly cycles.
//!
//! It prints the time the cycles took (the cycle and assuming the pod, not building the
//! cluster): per pod and per node visit, the best of the repeats; then the same for the
//! columns reference scan (`benches::reference::SoaNodes`) on the same nodes and pods, and the
//! ratio of the two pods/s.

use std::sync::Arc;
use std::time::{Duration, Instant};

use benches::reference::SoaNodes;
use benches::{
    openb_control_plane_snapshot, openb_snapshot, perf_pods, perf_snapshot, reference_allocatable,
    reference_pod, sample_policy, tolerating_perf_pods,
};
use scheduler::framework::Framework;
use scheduler::schedule_one::Algorithm;

fn main() {
    let mut args = std::env::args().skip(1);
    let nodes: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5000);
    let count: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(2000);
    let parallelism: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1);
    let nodes_kind = args.next().unwrap_or_default();
    let openb = nodes_kind.starts_with("openb");
    let control_plane = nodes_kind == "openb-control-plane";
    let tolerating = nodes_kind == "openb-tolerating" || control_plane;
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1).max(1);
    let Ok(fwk) = Framework::from_policy(&sample_policy()) else {
        eprintln!("the sample policy does not build");
        std::process::exit(1);
    };
    let fresh = if control_plane {
        openb_control_plane_snapshot(nodes)
    } else if openb {
        openb_snapshot(nodes)
    } else {
        perf_snapshot(nodes)
    };
    let pods = if tolerating {
        tolerating_perf_pods(count)
    } else {
        perf_pods(count)
    };
    let mut algo = Algorithm::new(100, 1);
    algo.set_parallelism(parallelism);
    let mut best = Duration::MAX;
    let mut scheduled = 0;
    for _ in 0..rounds {
        let mut snapshot = fresh.clone();
        scheduled = 0;
        let start = Instant::now();
        for pod in &pods {
            if let Ok(r) = algo.schedule(&fwk, &snapshot, pod, false) {
                let _ = snapshot.add_pod(Arc::clone(pod), Some(&r.node), None);
                scheduled += 1;
            }
        }
        best = best.min(start.elapsed());
    }
    // The columns reference scan over the same nodes and pods, interleaved with nothing else.
    let alloc = reference_allocatable(&fresh);
    let refs: Vec<_> = pods.iter().map(|p| reference_pod(p)).collect();
    let mut best_ref = Duration::MAX;
    for _ in 0..rounds {
        let mut scan = SoaNodes::new(alloc.iter().copied());
        let start = Instant::now();
        for p in &refs {
            let _ = scan.schedule(p);
        }
        best_ref = best_ref.min(start.elapsed());
    }
    let per_pod = best.as_secs_f64() / count.max(1) as f64;
    let per_ref = best_ref.as_secs_f64() / count.max(1) as f64;
    println!(
        "scheduled {scheduled} of {count} pods on {nodes} nodes; best of {rounds}: {:.1} us/pod, {:.2} ns/node, {:.0} pods/s; columns reference {:.2} ns/node: cycle {:.2}x of its pods/s",
        per_pod * 1e6,
        per_pod * 1e9 / nodes.max(1) as f64,
        1.0 / per_pod,
        per_ref * 1e9 / nodes.max(1) as f64,
        per_ref / per_pod
    );
}
