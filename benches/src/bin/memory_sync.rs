//! Memory bench: one `mini-scheduler run` replica against the in-memory API double seeded with
//! kube-scheduler's supported envelope, 5,000 nodes and 150,000 running pods (scheduler_perf's
//! node and pod templates, 30 pods bound to each node), plus optional pending pods.
//!
//! ```sh
//! cargo build --release -p mini-scheduler
//! cargo run --release -p benches --bin memory_sync -- --nodes 5000 --pods-per-node 30
//! ```
//!
//! Reports the scheduler's resident set (`VmRSS` of the child process, from `/proc/<pid>/status`)
//! when its admin endpoint's `/readyz` first answers 200 (every watch has listed: the caches
//! report synced), again one second later, and its peak (`VmHWM`); and the time from process
//! start to synced. The double runs in this process, so its memory is not counted. Targets
//! (issue 12): RSS ≤ 300 MB, start to synced ≤ 10 s.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use benches::{perf_node, perf_pod};
use clap::Parser;
use k8s_openapi::api::core::v1 as core;
use tests::apiserver::ApiServer;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The double's allocator, as in the e2e driver (its memory is not measured).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
struct Args {
    /// Nodes.
    #[arg(long, default_value_t = 5000)]
    nodes: usize,
    /// Running pods bound to each node.
    #[arg(long, default_value_t = 30)]
    pods_per_node: usize,
    /// Pending pods for the scheduler (created before it starts).
    #[arg(long, default_value_t = 0)]
    pending: usize,
    /// The scheduler binary (build it with `cargo build --release -p mini-scheduler`).
    #[arg(long, default_value = "target/release/mini-scheduler")]
    binary: PathBuf,
    /// Give up if the caches have not synced after this many seconds.
    #[arg(long, default_value_t = 300)]
    timeout_seconds: u64,
    /// Instead of starting the scheduler, estimate in this process what one running pod costs
    /// in memory: the growth of this process's RSS while it holds `nodes × pods-per-node`
    /// decoded `v1.Pod` objects, then as many `PodInfo`s (the cache's entries), per pod.
    #[arg(long)]
    estimate: bool,
}

/// The `--estimate` mode: RSS growth per pod of the API objects and of the model built from
/// them, in this process (mimalloc, as the binary); each measured from a fresh start of the
/// heap's growth, objects dropped in between (freed memory is reused, so later deltas are not
/// inflated by earlier ones).
fn estimate(pods: usize) {
    use scheduler::model::PodInfo;
    use std::sync::Arc;
    let rss = || status_mib(std::process::id(), "VmRSS").unwrap_or(0.0);
    let per_pod = |mib: f64| mib * 1024.0 * 1024.0 / pods.max(1) as f64;
    let pod = |i: usize| running_pod(i, &format!("node-{:05}", i / 30));
    println!(
        "size_of: v1.Pod {} bytes, PodInfo {} bytes (heap parts not included)",
        std::mem::size_of::<core::Pod>(),
        std::mem::size_of::<PodInfo>()
    );
    let base = rss();
    let objects: Vec<core::Pod> = (0..pods).map(pod).collect();
    let grown = rss() - base;
    println!(
        "{pods} v1.Pod objects: +{grown:.0} MiB = {:.0} bytes a pod",
        per_pod(grown)
    );
    drop(objects);
    let base = rss();
    let full: Vec<Arc<PodInfo>> = (0..pods)
        .filter_map(|i| PodInfo::from_pod(pod(i)).ok())
        .map(Arc::new)
        .collect();
    let grown = rss() - base;
    println!(
        "{} PodInfo with their objects (main before issue 12 item 2): +{grown:.0} MiB = {:.0} bytes a pod",
        full.len(),
        per_pod(grown)
    );
    let base = rss();
    let compact: Vec<Arc<PodInfo>> = (0..pods)
        .filter_map(|i| PodInfo::from_pod(pod(i)).ok())
        .map(|p| Arc::new(p.without_object()))
        .collect();
    let grown = rss() - base;
    println!(
        "{} PodInfo without objects (the cache now): +{grown:.0} MiB = {:.0} bytes a pod",
        compact.len(),
        per_pod(grown)
    );
    drop((full, compact));
}

/// `field` (`VmRSS`, `VmHWM`) of `/proc/<pid>/status`, in MiB.
fn status_mib(pid: u32, field: &str) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// True when `GET /readyz` on `addr` answers 200.
async fn ready(addr: &str) -> bool {
    let Ok(mut s) = tokio::net::TcpStream::connect(addr).await else {
        return false;
    };
    let req = format!("GET /readyz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    if s.write_all(req.as_bytes()).await.is_err() {
        return false;
    }
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf).await;
    buf.starts_with(b"HTTP/1.1 200")
}

/// A running pod: [`perf_pod`] bound to `node`, phase Running.
fn running_pod(i: usize, node: &str) -> core::Pod {
    let mut p = perf_pod(i, "mini-scheduler");
    if let Some(spec) = p.spec.as_mut() {
        spec.node_name = Some(node.to_string());
    }
    p.status = Some(core::PodStatus {
        phase: Some("Running".into()),
        ..Default::default()
    });
    p
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> std::process::ExitCode {
    let args = Args::parse();
    if args.estimate {
        estimate(args.nodes * args.pods_per_node);
        return std::process::ExitCode::SUCCESS;
    }
    if !args.binary.exists() {
        eprintln!(
            "error: {} not found; run `cargo build --release -p mini-scheduler` first",
            args.binary.display()
        );
        return std::process::ExitCode::from(2);
    }
    let api = ApiServer::builder().start().await;
    let seeding = Instant::now();
    let mut i = 0usize;
    for n in 0..args.nodes {
        let node = perf_node(n);
        let name = node.metadata.name.clone().unwrap_or_default();
        if let Err(e) = api.seed(&node) {
            eprintln!("error: seeding node {n}: {e:?}");
            return std::process::ExitCode::FAILURE;
        }
        for _ in 0..args.pods_per_node {
            if let Err(e) = api.seed(&running_pod(i, &name)) {
                eprintln!("error: seeding pod {i}: {e:?}");
                return std::process::ExitCode::FAILURE;
            }
            i += 1;
        }
    }
    for _ in 0..args.pending {
        if let Err(e) = api.seed(&perf_pod(i, "mini-scheduler")) {
            eprintln!("error: seeding pod {i}: {e:?}");
            return std::process::ExitCode::FAILURE;
        }
        i += 1;
    }
    eprintln!(
        "seeded {} nodes, {} running and {} pending pods in {:.1} s",
        args.nodes,
        args.nodes * args.pods_per_node,
        args.pending,
        seeding.elapsed().as_secs_f64()
    );
    let dir = std::env::temp_dir().join(format!("mini-scheduler-mem-bench-{}", std::process::id()));
    let kubeconfig = dir.join("kubeconfig");
    let written = std::fs::create_dir_all(&dir).and_then(|()| api.write_kubeconfig(&kubeconfig));
    if let Err(e) = written {
        eprintln!("error: writing {}: {e}", kubeconfig.display());
        return std::process::ExitCode::FAILURE;
    }
    // A free port for the admin endpoint (released just before the child binds it).
    let admin = match TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()) {
        Ok(a) => a.to_string(),
        Err(e) => {
            eprintln!("error: finding a free port: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let started = Instant::now();
    let child = tokio::process::Command::new(&args.binary)
        .args([
            "run",
            "--kubeconfig",
            &kubeconfig.display().to_string(),
            "--admin-address",
            &admin,
            "--leader-elect-resource-namespace",
            "default",
            "--kube-api-qps",
            "1000000000",
            "--kube-api-burst",
            "1000000000",
            // A lease that survives a loaded machine: a replica that loses it exits before its
            // caches sync, and leadership is not what this bench measures.
            "--leader-elect-lease-duration",
            "60s",
            "--leader-elect-renew-deadline",
            "50s",
        ])
        .env("RUST_LOG", "warn")
        .env("POD_NAME", "bench")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: starting {}: {e}", args.binary.display());
            return std::process::ExitCode::FAILURE;
        }
    };
    let pid = child.id().unwrap_or_default();
    let deadline = started + Duration::from_secs(args.timeout_seconds);
    let synced = loop {
        if ready(&admin).await {
            break Some(started.elapsed());
        }
        if Instant::now() > deadline || child.try_wait().ok().flatten().is_some() {
            break None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let rss_synced = status_mib(pid, "VmRSS");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_after = status_mib(pid, "VmRSS");
    let peak = status_mib(pid, "VmHWM");
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status();
    if tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .is_err()
    {
        let _ = child.start_kill();
        let _ = child.wait().await;
    }
    let _ = std::fs::remove_dir_all(&dir);
    api.shutdown().await;
    let Some(synced) = synced else {
        eprintln!(
            "error: the caches did not sync within {} s",
            args.timeout_seconds
        );
        return std::process::ExitCode::FAILURE;
    };
    let mib = |v: Option<f64>| v.map_or_else(|| "?".to_string(), |v| format!("{v:.0} MiB"));
    println!(
        "nodes {} running pods {} pending pods {}",
        args.nodes,
        args.nodes * args.pods_per_node,
        args.pending
    );
    println!(
        "start -> caches synced: {:.2} s (target <= 10 s)",
        synced.as_secs_f64()
    );
    println!(
        "scheduler RSS: at synced {}, 1 s later {}, peak {} (target <= 300 MB = 286 MiB)",
        mib(rss_synced),
        mib(rss_after),
        mib(peak)
    );
    std::process::ExitCode::SUCCESS
}
