//! End-to-end throughput driver: the `mini-scheduler` binary schedules scheduler_perf-shaped pods
//! (100m / 500 MiB) onto scheduler_perf-shaped nodes (4 cpu / 32 GiB / 110 pods) through the
//! in-memory API test double over loopback, with no client rate limit, as kube-scheduler's
//! SchedulingBasic 5000Nodes_10000Pods workload does against a real apiserver.
//!
//! ```sh
//! cargo build --release -p mini-scheduler
//! cargo run --release -p benches --bin e2e_throughput -- --nodes 5000 --pods 10000
//! ```
//!
//! Reports: pods/s from process start to the last Binding (including the initial LIST and the
//! election), pods/s from the first to the last accepted Binding, and the CPU seconds used by
//! the test double (this process) and by the scheduler (the child process), read from
//! `/proc/<pid>/stat`, so the double's share of the work is visible.
//!
//! With `--replicas N` (issue 12: 3), N scheduler processes run against the same double under
//! one Lease; each replica's CPU seconds (start, list, sync, watch, and for the leader schedule,
//! bind and events) divided by the pods bound are reported in µs per bound pod, the leader (the
//! Lease holder when the last pod is bound) apart from the followers. Targets: leader ≤ 100 µs,
//! follower ≤ 20 µs. The CPU is read once every replica is quiet after the last Binding (no
//! more than one 10 ms clock tick gained over a 200 ms poll, at most 10 s): the work still
//! queued then (the last Events, the watch events of the last pods, which a follower takes in
//! batches) is counted, not cut off by the shutdown. Each replica's CPU is also split at the
//! first and the last Binding seen (polled every 200 ms): what it spent starting, listing and
//! syncing, what it spent while pods were bound, and what it spent after, each per bound pod.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime};

use benches::{perf_node, perf_pod};
use clap::Parser;
use tests::apiserver::ApiServer;

/// The API double runs in this process: with glibc malloc, allocation was about half of its
/// instructions (callgrind), which is cost of the double, not of the scheduler.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
struct Args {
    /// Nodes.
    #[arg(long, default_value_t = 5000)]
    nodes: usize,
    /// Pods to schedule.
    #[arg(long, default_value_t = 10_000)]
    pods: usize,
    /// The scheduler binary (build it with `cargo build --release -p mini-scheduler`).
    #[arg(long, default_value = "target/release/mini-scheduler")]
    binary: PathBuf,
    /// `--percentage-of-nodes-to-score` for the scheduler (0 = adaptive, as kube-scheduler).
    #[arg(long, default_value_t = 0)]
    percentage_of_nodes_to_score: i32,
    /// Scheduler replicas under one Lease (one leads, the others follow).
    #[arg(long, default_value_t = 1)]
    replicas: usize,
}

/// How often the driver reads the double's writes and the replicas' CPU, milliseconds.
const POLL_MS: u64 = 200;

/// Longest wait after the last Binding for the replicas to go quiet before their CPU is read,
/// milliseconds.
const QUIET_MAX_MS: u64 = 10_000;

/// utime + stime of a process, seconds (`/proc/<pid>/stat` fields 14 and 15, 100 Hz ticks).
fn cpu_seconds(pid: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> std::process::ExitCode {
    let args = Args::parse();
    if !args.binary.exists() {
        eprintln!(
            "error: {} not found; run `cargo build --release -p mini-scheduler` first",
            args.binary.display()
        );
        return std::process::ExitCode::from(2);
    }
    let api = ApiServer::builder().history_limit(200_000).start().await;
    for i in 0..args.nodes {
        if let Err(e) = api.seed(&perf_node(i)) {
            eprintln!("error: seeding node {i}: {e:?}");
            return std::process::ExitCode::FAILURE;
        }
    }
    for i in 0..args.pods {
        if let Err(e) = api.seed(&perf_pod(i, "mini-scheduler")) {
            eprintln!("error: seeding pod {i}: {e:?}");
            return std::process::ExitCode::FAILURE;
        }
    }
    let dir = std::env::temp_dir().join(format!("mini-scheduler-e2e-bench-{}", std::process::id()));
    let kubeconfig = dir.join("kubeconfig");
    let written = std::fs::create_dir_all(&dir).and_then(|()| api.write_kubeconfig(&kubeconfig));
    if let Err(e) = written {
        eprintln!("error: writing {}: {e}", kubeconfig.display());
        return std::process::ExitCode::FAILURE;
    }
    let self_cpu_start = cpu_seconds("self").unwrap_or(0.0);
    let started = Instant::now();
    let started_wall = SystemTime::now();
    let mut children = Vec::new();
    for r in 0..args.replicas.max(1) {
        let child = tokio::process::Command::new(&args.binary)
            .args([
                "run",
                "--kubeconfig",
                &kubeconfig.display().to_string(),
                "--admin-address",
                "127.0.0.1:0",
                "--leader-elect-resource-namespace",
                "default",
                "--kube-api-qps",
                "1000000000",
                "--kube-api-burst",
                "1000000000",
                "--percentage-of-nodes-to-score",
                &args.percentage_of_nodes_to_score.to_string(),
            ])
            .env("RUST_LOG", "warn")
            .env("POD_NAME", format!("replica-{r}"))
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn();
        match child {
            Ok(c) => children.push(c),
            Err(e) => {
                eprintln!("error: starting {}: {e}", args.binary.display());
                return std::process::ExitCode::FAILURE;
            }
        }
    }
    let pids: Vec<String> = children
        .iter()
        .map(|c| c.id().map(|p| p.to_string()).unwrap_or_default())
        .collect();
    let deadline = Instant::now() + Duration::from_secs(600);
    let mut child_cpu = vec![0.0; pids.len()];
    // Only the records added since the last poll are read, so that polling does not hold the
    // double's lock for a copy of the whole record.
    let mut seen = 0;
    let mut binds: Vec<SystemTime> = Vec::with_capacity(args.pods);
    // Each replica's CPU seconds when the first Binding is seen: its start-up (LIST, sync,
    // election) apart from the per-pod work after it (up to one poll interval of binding
    // included).
    let mut start_cpu: Option<Vec<f64>> = None;
    let (first, last, bound) = loop {
        tokio::time::sleep(Duration::from_millis(POLL_MS)).await;
        for (cpu, pid) in child_cpu.iter_mut().zip(&pids) {
            *cpu = cpu_seconds(pid).unwrap_or(*cpu);
        }
        let new = api.writes_since(seen);
        seen += new.len() as u64;
        binds.extend(
            new.iter()
                .filter(|w| w.subresource.as_deref() == Some("binding") && w.code == 201)
                .map(|w| w.at),
        );
        if start_cpu.is_none() && !binds.is_empty() {
            start_cpu = Some(child_cpu.clone());
        }
        if binds.len() >= args.pods || Instant::now() > deadline {
            let first = binds.iter().min().copied();
            let last = binds.iter().max().copied();
            break (first, last, binds.len());
        }
    };
    // The replicas are not done when the last Binding lands: the leader's last Events and
    // binding responses, and every replica's watch events for the last pods (a follower takes
    // them in batches), are still to come. Their CPU is read once they are quiet: no replica
    // gained more than one clock tick (10 ms) over a poll interval, or QUIET_MAX_MS passed.
    let at_last_binding = child_cpu.clone();
    let quiet_started = Instant::now();
    let quiet_deadline = quiet_started + Duration::from_millis(QUIET_MAX_MS);
    loop {
        tokio::time::sleep(Duration::from_millis(POLL_MS)).await;
        let mut busy = false;
        for (cpu, pid) in child_cpu.iter_mut().zip(&pids) {
            let now = cpu_seconds(pid).unwrap_or(*cpu);
            busy |= now - *cpu > 0.015;
            *cpu = now;
        }
        if !busy || Instant::now() > quiet_deadline {
            break;
        }
    }
    let quiet_after = quiet_started.elapsed().as_secs_f64();
    let self_cpu = cpu_seconds("self").unwrap_or(0.0) - self_cpu_start;
    // The Lease holder now: `replica-<r>_<uuid>`.
    let holder = api
        .get::<k8s_openapi::api::coordination::v1::Lease>("default", "mini-scheduler")
        .and_then(|l| l.spec?.holder_identity)
        .unwrap_or_default();
    let leader = (0..pids.len()).find(|r| holder.starts_with(&format!("replica-{r}_")));
    // SIGTERM: each scheduler drains and releases its Lease; kill it if it does not exit.
    for pid in &pids {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", pid])
            .status();
    }
    for child in &mut children {
        if tokio::time::timeout(Duration::from_secs(20), child.wait())
            .await
            .is_err()
        {
            let _ = child.start_kill();
            let _ = child.wait().await;
        }
    }
    let since = |t: Option<SystemTime>| {
        t.and_then(|t| t.duration_since(started_wall).ok())
            .unwrap_or_default()
            .as_secs_f64()
    };
    let (t_first, t_last) = (since(first), since(last));
    let total = started.elapsed().as_secs_f64();
    println!("nodes {} pods {} bound {bound}", args.nodes, args.pods);
    println!(
        "end to end (process start -> last Binding): {t_last:.2} s = {:.0} pods/s",
        bound as f64 / t_last.max(1e-9)
    );
    println!(
        "binding phase (first -> last Binding): {:.2} s = {:.0} pods/s",
        t_last - t_first,
        bound as f64 / (t_last - t_first).max(1e-9)
    );
    let scheduler_cpu: f64 = child_cpu.iter().sum();
    println!(
        "CPU: test double (this process) {self_cpu:.2} s, scheduler (children) {scheduler_cpu:.2} s; the double's share {:.0} %",
        100.0 * self_cpu / (self_cpu + scheduler_cpu).max(1e-9)
    );
    let per_pod = |cpu: f64| 1e6 * cpu / (bound.max(1) as f64);
    for (r, cpu) in child_cpu.iter().enumerate() {
        let role = match leader {
            Some(l) if l == r => "leader",
            Some(_) => "follower",
            None => "replica (no Lease holder found)",
        };
        println!(
            "replica-{r} ({role}): CPU {cpu:.2} s = {:.1} us per bound pod (targets: leader <= 100, follower <= 20)",
            per_pod(*cpu)
        );
        if let Some(at_first) = start_cpu.as_ref().and_then(|s| s.get(r)) {
            let at_last = at_last_binding.get(r).copied().unwrap_or(*cpu);
            println!(
                "replica-{r} ({role}): until the first Binding (start, LIST, sync, election; {POLL_MS} ms poll) {at_first:.2} s = {:.1} us per bound pod; then until the last {:.1}; after the last until quiet {:.1} us per bound pod",
                per_pod(*at_first),
                per_pod(at_last - at_first),
                per_pod(cpu - at_last)
            );
        }
    }
    println!(
        "(driver wall time {total:.2} s; the replicas' CPU read {quiet_after:.1} s after the last Binding, once quiet)"
    );
    api.shutdown().await;
    if bound < args.pods {
        eprintln!("error: only {bound} of {} pods bound", args.pods);
        return std::process::ExitCode::FAILURE;
    }
    std::process::ExitCode::SUCCESS
}
