//! The full chaos run: three scheduler replicas against the in-memory API double, pods arriving
//! continuously, and at least 100 seeded faults (SIGKILL and SIGTERM of the leader or a
//! follower with restart, partition of the leader, 5xx and 429 storms, slow responses, dropped
//! watches, 410 Gone, Lease update conflicts, lost Binding responses); the invariants are
//! checked from the double's write record (see `tests::chaos`).
//!
//! ```sh
//! cargo run --release -p benches --bin chaos -- --faults 100 --seed 1
//! ```
//!
//! Prints one line — faults by kind, pods bound exactly once, unschedulable pods with their
//! FailedScheduling event, terms, Binding 409s, violations — then each violation; exits 1 if
//! there is any. The replicas run in this process (their kill is the abort of their task: no
//! release, nothing written after), with the fast election profile 6 s / 4 s / 1 s.

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use tests::chaos::{ChaosConfig, run};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
struct Args {
    /// Faults to induce.
    #[arg(long, default_value_t = 100)]
    faults: usize,
    /// Seed of the fault schedule and the pods.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Milliseconds between two pods.
    #[arg(long, default_value_t = 100)]
    pod_interval_ms: u64,
    /// Shortest and longest time between two faults, milliseconds.
    #[arg(long, default_value_t = 500)]
    min_spacing_ms: u64,
    #[arg(long, default_value_t = 3000)]
    max_spacing_ms: u64,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let cfg = ChaosConfig {
        seed: args.seed,
        faults: args.faults,
        fault_spacing: (
            Duration::from_millis(args.min_spacing_ms),
            Duration::from_millis(args.max_spacing_ms),
        ),
        pod_interval: Duration::from_millis(args.pod_interval_ms),
        unfit_one_in: 40,
        settle_timeout: Duration::from_secs(120),
    };
    let report = rt.block_on(run(&cfg));
    println!("{}", report.line());
    for v in &report.violations {
        println!("violation: {v}");
    }
    if report.violations.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
