//! Running the `mini-scheduler` binary against the API test double, for the binary crate's own
//! tests (they pass `env!("CARGO_BIN_EXE_mini-scheduler")`): the small cluster they start from,
//! a free loopback port, the `run` command with its kubeconfig, polling an async condition, and
//! the SIGTERM that ends the process.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;

use crate::apiserver::ApiServer;
use crate::objects;

/// Seeds `node-1` (4 cpu, 8Gi, 110 pods) and the pending pod `default/web-0` for
/// mini-scheduler, its container requesting `requests` (e.g. `[("cpu", "500m")]`).
pub fn seed_node_and_web_pod(api: &ApiServer, requests: &[(&str, &str)]) {
    api.seed(&objects::node(
        "node-1",
        &[("cpu", "4"), ("memory", "8Gi"), ("pods", "110")],
    ))
    .expect("seed node-1");
    api.seed(&objects::pod("web-0", requests))
        .expect("seed web-0");
}

/// A loopback TCP port that was free when asked.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

/// `bin run --kubeconfig DIR/kubeconfig`, the kubeconfig (for `api`) written into `dir`
/// (created if needed); stdout discarded, killed when dropped. Callers add their flags, the
/// environment and what to do with stderr, then spawn.
pub fn run_command(bin: &str, api: &ApiServer, dir: &Path) -> tokio::process::Command {
    std::fs::create_dir_all(dir).expect("create the test directory");
    let kubeconfig = dir.join("kubeconfig");
    api.write_kubeconfig(&kubeconfig)
        .expect("write the kubeconfig");
    let mut c = tokio::process::Command::new(bin);
    c.args(["run", "--kubeconfig"])
        .arg(&kubeconfig)
        .stdout(Stdio::null())
        .kill_on_drop(true);
    c
}

/// Polls `f` every 100 ms (real time: the process works over loopback) until it gives a
/// value; panics naming `what` after 30 s.
pub async fn poll<T>(what: &str, mut f: impl AsyncFnMut() -> Option<T>) -> T {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Sends SIGTERM and waits (at most 20 s) for the process to exit: its exit code and the rest
/// of its stderr (empty unless piped).
pub async fn terminate(child: &mut tokio::process::Child) -> (Option<i32>, String) {
    let pid = child.id().expect("the process is running");
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(killed.success());
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("exits after SIGTERM")
        .expect("the exit status");
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut stderr).await;
    }
    (status.code(), stderr)
}
