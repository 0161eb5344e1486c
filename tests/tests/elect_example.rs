//! Three copies of the election crate's example (`crates/election/examples/elect.rs`, the Rust
//! twin of client-go's leader-election example) against the in-memory API test double: exactly
//! one prints `Controller loop...`, the others `new leader elected: <it>`; Ctrl-C (SIGINT) or
//! SIGTERM (how the kubelet stops a pod) on the leader makes it write the release
//! (`holderIdentity: ""`) and exit 0, and another copy, watching the Lease, takes it over instead
//! of waiting out the 60 s lease. (Real time: a generous bound; the exact one is pinned on the
//! paused clock in `crates/election/tests/elector.rs`.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use tests::apiserver::ApiServer;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

struct Copy {
    id: String,
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
}

fn spawn(kubeconfig: &str, id: &str) -> Copy {
    let mut child = Command::new(env!("CARGO_BIN_EXE_elect-example"))
        .args([
            "--kubeconfig",
            kubeconfig,
            "--lease-lock-name",
            "example",
            "--lease-lock-namespace",
            "default",
            "--id",
            id,
        ])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the example starts");
    let lines = Arc::new(Mutex::new(Vec::new()));
    let out = child.stdout.take().unwrap();
    let sink = lines.clone();
    tokio::spawn(async move {
        let mut reader = BufReader::new(out).lines();
        while let Ok(Some(l)) = reader.next_line().await {
            sink.lock().unwrap().push(l);
        }
    });
    Copy {
        id: id.into(),
        child,
        lines,
    }
}

fn said(c: &Copy, text: &str) -> bool {
    c.lines.lock().unwrap().iter().any(|l| l == text)
}

async fn wait_until(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + timeout;
    while !f() {
        assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn holder(api: &ApiServer) -> Option<String> {
    api.get::<Lease>("default", "example")
        .and_then(|l| l.spec.and_then(|s| s.holder_identity))
}

/// Followers watch the Lease and take a released one within milliseconds (pinned on the paused
/// clock in `crates/election/tests/elector.rs`; even a follower whose watch is down polls every
/// `5 s × [1, 2.2)`, at most 11 s). Generous for a loaded CI machine: the behaviour checked is
/// the handover without waiting out the 60 s lease, not its timing.
const TAKEOVER_BOUND: Duration = Duration::from_secs(15);

/// The Lease writes the server answered with 200 whose body set `spec.holderIdentity`, as
/// `(seq, at, holderIdentity)`.
fn holder_writes(api: &ApiServer) -> Vec<(u64, std::time::SystemTime, String)> {
    api.writes()
        .into_iter()
        .filter(|w| w.kind == "Lease" && w.method == "PUT" && w.code == 200)
        .filter_map(|w| {
            let h = w
                .request
                .as_ref()?
                .pointer("/spec/holderIdentity")?
                .as_str()?;
            Some((w.seq, w.at, h.to_string()))
        })
        .collect()
}

/// Starts three copies, waits for one leader, sends `signal` (`kill -<signal>`) to it, and checks
/// the release write, its clean exit and the handover.
async fn leader_hands_over_on(signal: &str) {
    let api = ApiServer::start().await;
    let dir = std::env::temp_dir().join(format!("elect-example-{}-{signal}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    api.write_kubeconfig(&kubeconfig).unwrap();
    let kc = kubeconfig.to_str().unwrap();
    let mut copies: Vec<Copy> = ["1", "2", "3"].iter().map(|id| spawn(kc, id)).collect();

    wait_until("one copy leads", Duration::from_secs(20), || {
        copies.iter().any(|c| said(c, "Controller loop..."))
    })
    .await;
    let leader = copies
        .iter()
        .position(|c| said(c, "Controller loop..."))
        .unwrap();
    let leader_id = copies[leader].id.clone();
    assert_eq!(holder(&api).as_deref(), Some(leader_id.as_str()));
    let announcement = format!("new leader elected: {leader_id}");
    wait_until("the others see the leader", Duration::from_secs(20), || {
        copies
            .iter()
            .enumerate()
            .all(|(i, c)| i == leader || said(c, &announcement))
    })
    .await;
    for (i, c) in copies.iter().enumerate() {
        if i != leader {
            assert!(!said(c, "Controller loop..."), "copy {} also leads", c.id);
        }
    }

    // The signal on the leader: it writes the release, exits 0 (a signal it did not handle
    // would end it with that signal, without the write), and another copy, which sees the
    // release through its watch of the Lease, acquires.
    let pid = copies[leader].child.id().unwrap();
    let sent = std::process::Command::new("kill")
        .args([format!("-{signal}"), pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = tokio::time::timeout(Duration::from_secs(30), copies[leader].child.wait())
        .await
        .unwrap_or_else(|_| panic!("the leader exits after SIG{signal}"))
        .unwrap();
    assert!(status.success(), "SIG{signal}: {status:?}");
    let (release_seq, released_at, _) = holder_writes(&api)
        .into_iter()
        .find(|(_, _, h)| h.is_empty())
        .unwrap_or_else(|| panic!("SIG{signal}: no release write (holderIdentity \"\")"));
    let deadline = TAKEOVER_BOUND + Duration::from_secs(15);
    wait_until("another copy takes over", deadline, || {
        holder(&api).is_some_and(|h| !h.is_empty() && h != leader_id)
    })
    .await;
    let (_, acquired_at, new_leader) = holder_writes(&api)
        .into_iter()
        .find(|(seq, _, h)| *seq > release_seq && !h.is_empty())
        .expect("the takeover write");
    assert_ne!(new_leader, leader_id);
    // Server-side times of the two writes: the release was taken over, not the expiry.
    let gap = acquired_at.duration_since(released_at).unwrap();
    assert!(
        gap <= TAKEOVER_BOUND,
        "SIG{signal}: takeover {gap:?} after the release"
    );
    let next = copies.iter().position(|c| c.id == new_leader).unwrap();
    wait_until(
        "the new leader runs its loop",
        Duration::from_secs(20),
        || said(&copies[next], "Controller loop..."),
    )
    .await;
    for c in &mut copies {
        let _ = c.child.start_kill();
    }
    api.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_copies_elect_one_leader_and_hand_over_on_ctrl_c() {
    leader_hands_over_on("INT").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_on_the_leader_releases_the_lease_and_another_copy_takes_over() {
    leader_hands_over_on("TERM").await;
}
