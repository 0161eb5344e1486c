//! Leader hand-over of real `mini-scheduler run` processes against the in-memory API test double,
//! with kube-scheduler's election defaults (lease 15 s, renew deadline 10 s, retry period 2 s).
//!
//! ```sh
//! cargo build --release -p mini-scheduler
//! cargo run --release -p benches --bin handover -- --runs 20
//! ```
//!
//! Three replicas run; each run ends the current leader and restarts it once another replica
//! leads and has bound a pod:
//! - SIGTERM: the leader stops scheduling, finishes its bindings and releases the Lease; pods
//!   arrive every `--pod-interval-ms` from the signal on. Measured from the double's write
//!   record: release write → the new leader's acquisition, and release write → its first
//!   accepted Binding (target ≤ 0.5 s).
//! - SIGKILL, at a random point of the leader's renewal period (seeded, `--seed`): no release.
//!   Measured: kill → the new holder's acquisition write (target ≤ lease duration + retry
//!   period = 17 s), the old leader's last renewal → that acquisition (≈ the lease duration:
//!   followers see every renewal through their watch), and acquisition → the new leader's first
//!   Binding of the pods created right after the kill.
//!
//! Prints min / median / max of each over the runs, and whether the targets held. The double
//! runs in this process (2 worker threads), the replicas in their own processes.

use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant, SystemTime};

use benches::{perf_node, perf_pod};
use clap::Parser;
use k8s_openapi::api::coordination::v1::Lease;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use tests::apiserver::{ApiServer, WriteRecord};
use tokio::process::{Child, Command};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// kube-scheduler's `--leader-elect-lease-duration`.
const LEASE_DURATION: Duration = Duration::from_secs(15);
/// kube-scheduler's `--leader-elect-retry-period`.
const RETRY_PERIOD: Duration = Duration::from_secs(2);
/// Target: release → the new leader's first Binding.
const SIGTERM_TARGET: Duration = Duration::from_millis(500);
/// Target: kill → the new holder.
const SIGKILL_TARGET: Duration = Duration::from_secs(17);
/// The Lease (`--leader-elect-resource-name` default) and its namespace.
const LEASE_NAME: &str = "mini-scheduler";
const LEASE_NAMESPACE: &str = "default";
const REPLICAS: usize = 3;

#[derive(Parser)]
struct Args {
    /// Runs of each kind (SIGTERM, SIGKILL).
    #[arg(long, default_value_t = 20)]
    runs: usize,
    /// Which runs: `both`, `sigterm` or `sigkill`.
    #[arg(long, default_value = "both")]
    kind: String,
    /// The scheduler binary (build it with `cargo build --release -p mini-scheduler`).
    #[arg(long, default_value = "target/release/mini-scheduler")]
    binary: PathBuf,
    /// Nodes (scheduler_perf's 4 cpu / 32 GiB / 110 pods).
    #[arg(long, default_value_t = 100)]
    nodes: usize,
    /// Interval of pod creation during a SIGTERM run, milliseconds.
    #[arg(long, default_value_t = 10)]
    pod_interval_ms: u64,
    /// Seed of the random delay before each SIGKILL (uniform in one retry period).
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

struct Replica {
    /// `replica-N`: the `POD_NAME`, so identities and client names are `replica-N_<uuid>`.
    name: String,
    child: Child,
    /// Position in the request record when this process started.
    started_seq: u64,
}

struct Bench {
    api: ApiServer,
    binary: PathBuf,
    kubeconfig: PathBuf,
    logs: PathBuf,
    replicas: Vec<Replica>,
    next_pod: usize,
    restarts: usize,
}

fn ok(w: &WriteRecord) -> bool {
    (200..300).contains(&w.code)
}

fn holder_written(w: &WriteRecord) -> Option<&str> {
    w.request
        .as_ref()?
        .pointer("/spec/holderIdentity")?
        .as_str()
}

fn since(from: SystemTime, to: SystemTime) -> Duration {
    to.duration_since(from).unwrap_or_default()
}

async fn wait(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) -> Result<(), String> {
    let end = Instant::now() + timeout;
    while !f() {
        if Instant::now() > end {
            return Err(format!("timed out after {timeout:?}: {what}"));
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    Ok(())
}

impl Bench {
    async fn spawn(&self, name: &str) -> Result<Replica, String> {
        let log = std::fs::File::create(self.logs.join(format!("{name}-{}.log", self.restarts)))
            .map_err(|e| e.to_string())?;
        let started_seq = self.api.requests().len() as u64;
        let child = Command::new(&self.binary)
            .args([
                "run",
                "--kubeconfig",
                &self.kubeconfig.display().to_string(),
                "--admin-address",
                "127.0.0.1:0",
                "--leader-elect-resource-namespace",
                LEASE_NAMESPACE,
            ])
            .env("RUST_LOG", "info")
            .env("POD_NAME", name)
            .stdout(Stdio::null())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("starting {}: {e}", self.binary.display()))?;
        Ok(Replica {
            name: name.to_string(),
            child,
            started_seq,
        })
    }

    /// Waits until `r` watches the Lease, nodes and both pod selections (a watch starts after
    /// its initial list: the caches are filled), then 200 ms more. (`/readyz` reports only the
    /// leader's caches.)
    async fn settle(&self, r: &Replica) -> Result<(), String> {
        let prefix = format!("{}_", r.name);
        wait(
            &format!("{} watches the Lease, nodes and pods", r.name),
            Duration::from_secs(60),
            || {
                let reqs = self.api.requests();
                let watches = |resource: &str| {
                    reqs.iter()
                        .skip(r.started_seq as usize)
                        .filter(|q| {
                            q.client.starts_with(&prefix)
                                && q.verb == "watch"
                                && q.resource.as_deref() == Some(resource)
                        })
                        .count()
                };
                let leader = self.holder().is_some_and(|h| h.starts_with(&prefix));
                (leader || watches("leases") >= 1) && watches("nodes") >= 1 && watches("pods") >= 2
            },
        )
        .await?;
        tokio::time::sleep(Duration::from_millis(200)).await;
        Ok(())
    }

    fn holder(&self) -> Option<String> {
        self.api
            .get::<Lease>(LEASE_NAMESPACE, LEASE_NAME)?
            .spec?
            .holder_identity
            .filter(|h| !h.is_empty())
    }

    fn leader_index(&self) -> Option<usize> {
        let h = self.holder()?;
        self.replicas
            .iter()
            .position(|r| h.starts_with(&format!("{}_", r.name)))
    }

    fn seed_pods(&mut self, n: usize) -> Result<(), String> {
        for _ in 0..n {
            self.api
                .seed(&perf_pod(self.next_pod, "mini-scheduler"))
                .map_err(|e| e.to_string())?;
            self.next_pod += 1;
        }
        Ok(())
    }

    /// Replaces replica `i` (which has exited or been killed) by a new process.
    async fn restart(&mut self, i: usize) -> Result<(), String> {
        let _ = self.replicas[i].child.wait().await;
        self.restarts += 1;
        let name = self.replicas[i].name.clone();
        let r = self.spawn(&name).await?;
        self.settle(&r).await?;
        self.replicas[i] = r;
        Ok(())
    }

    /// One SIGTERM run: (release → acquisition, release → first Binding).
    async fn sigterm_run(&mut self, interval: Duration) -> Result<(Duration, Duration), String> {
        let li = self.leader_index().ok_or("no leader")?;
        let old = self.holder().ok_or("no leader")?;
        let pid = self.replicas[li].child.id().ok_or("leader exited")?;
        let mut seen = self.api.writes().len() as u64;
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .map_err(|e| e.to_string())?;
        if !sent.success() {
            return Err("kill -TERM failed".into());
        }
        let end = Instant::now() + Duration::from_secs(30);
        let mut release: Option<WriteRecord> = None;
        let mut acquired: Option<WriteRecord> = None;
        let mut next_pod_at = Instant::now();
        let bound = 'run: loop {
            if Instant::now() >= next_pod_at {
                self.seed_pods(1)?;
                next_pod_at += interval;
            }
            for w in self.api.writes_since(seen) {
                seen = w.seq + 1;
                if !ok(&w) {
                    continue;
                }
                if w.kind == "Lease" && w.client == old && release.is_none() {
                    // Bodies are left out of writes_since: read the one Lease write back.
                    let full = self.api.writes().into_iter().nth(w.seq as usize);
                    if full.as_ref().and_then(holder_written) == Some("") {
                        release = full;
                    }
                } else if w.kind == "Lease" && w.client != old && acquired.is_none() {
                    acquired = Some(w);
                } else if w.subresource.as_deref() == Some("binding")
                    && w.client != old
                    && release.is_some()
                {
                    break 'run w;
                }
            }
            if Instant::now() > end {
                return Err("no Binding by a new leader within 30 s of SIGTERM".into());
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        };
        let release = release.ok_or("no release write")?;
        let acquired = acquired.ok_or("no acquisition write")?;
        let status = tokio::time::timeout(Duration::from_secs(30), self.replicas[li].child.wait())
            .await
            .map_err(|_| "the old leader did not exit within 30 s of SIGTERM")?
            .map_err(|e| e.to_string())?;
        if !status.success() {
            return Err(format!("the old leader exited with {status}"));
        }
        self.restart(li).await?;
        Ok((since(release.at, acquired.at), since(release.at, bound.at)))
    }

    /// One SIGKILL run: (kill → acquisition, last renewal → acquisition, acquisition → first
    /// Binding).
    async fn sigkill_run(
        &mut self,
        delay: Duration,
    ) -> Result<(Duration, Duration, Duration), String> {
        tokio::time::sleep(delay).await;
        let li = self.leader_index().ok_or("no leader")?;
        let old = self.holder().ok_or("no leader")?;
        let seen = self.api.writes().len() as u64;
        let killed_at = SystemTime::now();
        self.replicas[li]
            .child
            .start_kill()
            .map_err(|e| e.to_string())?;
        let _ = self.replicas[li].child.wait().await;
        self.seed_pods(5)?;
        let mut acquired: Option<WriteRecord> = None;
        let end = Instant::now() + LEASE_DURATION * 3;
        let mut from = seen;
        let bound = 'run: loop {
            for w in self.api.writes_since(from) {
                from = w.seq + 1;
                if !ok(&w) || w.client == old {
                    continue;
                }
                if w.kind == "Lease" && acquired.is_none() {
                    acquired = Some(w);
                } else if w.subresource.as_deref() == Some("binding") && acquired.is_some() {
                    break 'run w;
                }
            }
            if Instant::now() > end {
                return Err("no new leader bound a pod within 3 lease durations".into());
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        let acquired = acquired.ok_or("no acquisition")?;
        let last_renewal = self
            .api
            .writes_since(0)
            .into_iter()
            .take(seen as usize)
            .rfind(|w| w.kind == "Lease" && w.client == old && ok(w))
            .ok_or("no renewal by the old leader")?;
        self.restart(li).await?;
        Ok((
            since(killed_at, acquired.at),
            since(last_renewal.at, acquired.at),
            since(acquired.at, bound.at),
        ))
    }
}

fn summary(label: &str, mut v: Vec<Duration>, target: Option<Duration>) -> bool {
    v.sort();
    if v.is_empty() {
        println!("{label}: no runs");
        return true;
    }
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let median = if v.len() % 2 == 1 {
        ms(v[v.len() / 2])
    } else {
        (ms(v[v.len() / 2 - 1]) + ms(v[v.len() / 2])) / 2.0
    };
    let max = v[v.len() - 1];
    let verdict = target.map_or(String::new(), |t| {
        let within = v.iter().filter(|d| **d <= t).count();
        format!("  target <= {:.0} ms: {within}/{} runs", ms(t), v.len())
    });
    println!(
        "{label}: n={} min {:.1} ms, median {median:.1} ms, max {:.1} ms{verdict}",
        v.len(),
        ms(v[0]),
        ms(max)
    );
    target.is_none_or(|t| max <= t)
}

async fn setup(args: &Args, dir: &Path) -> Result<Bench, String> {
    let api = ApiServer::builder().history_limit(100_000).start().await;
    for i in 0..args.nodes {
        api.seed(&perf_node(i)).map_err(|e| e.to_string())?;
    }
    let kubeconfig = dir.join("kubeconfig");
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    api.write_kubeconfig(&kubeconfig)
        .map_err(|e| e.to_string())?;
    let mut bench = Bench {
        api,
        binary: args.binary.clone(),
        kubeconfig,
        logs: dir.to_path_buf(),
        replicas: Vec::new(),
        next_pod: 0,
        restarts: 0,
    };
    for i in 1..=REPLICAS {
        let r = bench.spawn(&format!("replica-{i}")).await?;
        bench.replicas.push(r);
    }
    for r in &bench.replicas {
        bench.settle(r).await?;
    }
    wait("a leader", Duration::from_secs(60), || {
        bench.leader_index().is_some()
    })
    .await?;
    // A pod bound: the leader schedules.
    bench.seed_pods(1)?;
    wait("the first Binding", Duration::from_secs(60), || {
        bench
            .api
            .writes()
            .iter()
            .any(|w| w.subresource.as_deref() == Some("binding") && ok(w))
    })
    .await?;
    Ok(bench)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let args = Args::parse();
    if !args.binary.exists() {
        eprintln!(
            "error: {} not found; run `cargo build --release -p mini-scheduler` first",
            args.binary.display()
        );
        return ExitCode::from(2);
    }
    let (do_term, do_kill) = match args.kind.as_str() {
        "both" => (true, true),
        "sigterm" => (true, false),
        "sigkill" => (false, true),
        other => {
            eprintln!("error: --kind {other:?}: expected both, sigterm or sigkill");
            return ExitCode::from(2);
        }
    };
    let dir = std::env::temp_dir().join(format!("mini-scheduler-handover-{}", std::process::id()));
    let mut bench = match setup(&args, &dir).await {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: {e} (replica logs in {})", dir.display());
            return ExitCode::FAILURE;
        }
    };
    println!(
        "{REPLICAS} replicas of {}, lease 15 s / renew deadline 10 s / retry period 2 s, {} nodes; replica logs in {}",
        args.binary.display(),
        args.nodes,
        dir.display()
    );
    let interval = Duration::from_millis(args.pod_interval_ms.max(1));
    let mut rng = StdRng::seed_from_u64(args.seed);
    let (mut acq, mut first_bind) = (Vec::new(), Vec::new());
    let (mut kill_acq, mut renewal_acq, mut acq_bind) = (Vec::new(), Vec::new(), Vec::new());
    for run in 0..args.runs {
        if do_term {
            match bench.sigterm_run(interval).await {
                Ok((a, b)) => {
                    eprintln!(
                        "SIGTERM run {run}: acquired {:.1} ms, first Binding {:.1} ms after the release",
                        a.as_secs_f64() * 1e3,
                        b.as_secs_f64() * 1e3
                    );
                    acq.push(a);
                    first_bind.push(b);
                }
                Err(e) => {
                    eprintln!("error: SIGTERM run {run}: {e} (logs in {})", dir.display());
                    return ExitCode::FAILURE;
                }
            }
        }
        if do_kill {
            let delay = RETRY_PERIOD.mul_f64(rng.random_range(0.0..1.0));
            match bench.sigkill_run(delay).await {
                Ok((k, r, b)) => {
                    eprintln!(
                        "SIGKILL run {run}: acquired {:.3} s after the kill, {:.3} s after the last renewal; first Binding {:.1} ms later",
                        k.as_secs_f64(),
                        r.as_secs_f64(),
                        b.as_secs_f64() * 1e3
                    );
                    kill_acq.push(k);
                    renewal_acq.push(r);
                    acq_bind.push(b);
                }
                Err(e) => {
                    eprintln!("error: SIGKILL run {run}: {e} (logs in {})", dir.display());
                    return ExitCode::FAILURE;
                }
            }
        }
    }
    let mut met = true;
    if do_term {
        summary("SIGTERM: release -> new holder's acquisition", acq, None);
        met &= summary(
            "SIGTERM: release -> new leader's first Binding",
            first_bind,
            Some(SIGTERM_TARGET),
        );
    }
    if do_kill {
        met &= summary(
            "SIGKILL: kill -> new holder's acquisition",
            kill_acq,
            Some(SIGKILL_TARGET),
        );
        summary(
            "SIGKILL: old leader's last renewal -> new holder's acquisition",
            renewal_acq,
            None,
        );
        summary(
            "SIGKILL: acquisition -> new leader's first Binding",
            acq_bind,
            None,
        );
    }
    println!(
        "(client-go's polling followers, for reference: release -> new holder up to 2.2 x retry period = {:.1} s; last renewal -> new holder up to lease + 2 x 2.2 x retry period = {:.1} s)",
        (RETRY_PERIOD.mul_f64(2.2)).as_secs_f64(),
        (LEASE_DURATION + RETRY_PERIOD.mul_f64(4.4)).as_secs_f64()
    );
    for r in &mut bench.replicas {
        if let Some(pid) = r.child.id() {
            let _ = std::process::Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status();
        }
    }
    for r in &mut bench.replicas {
        if tokio::time::timeout(Duration::from_secs(20), r.child.wait())
            .await
            .is_err()
        {
            let _ = r.child.start_kill();
        }
    }
    bench.api.shutdown().await;
    if met {
        ExitCode::SUCCESS
    } else {
        eprintln!("error: a target was missed");
        ExitCode::FAILURE
    }
}
