//! Three copies of the election crate's example (`crates/election/examples/elect.rs`, the Rust
//! twin of client-go's leader-election example) against the in-memory API test double: exactly
//! one prints `Controller loop...`, the others `new leader elected: <it>`; Ctrl-C (SIGINT) on
//! the leader releases the Lease and another copy, watching the Lease, takes it over long before
//! the 60 s lease could have expired. (Real time: generous bounds; the exact ones are pinned on
//! the paused clock in `crates/election/tests/elector.rs`.)
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_copies_elect_one_leader_and_hand_over_on_ctrl_c() {
    let api = ApiServer::start().await;
    let dir = std::env::temp_dir().join(format!("elect-example-{}", std::process::id()));
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

    // Ctrl-C on the leader: it releases, another copy sees it through its watch and acquires.
    let pid = copies[leader].child.id().unwrap();
    let sent = std::process::Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = tokio::time::timeout(Duration::from_secs(20), copies[leader].child.wait())
        .await
        .expect("the leader exits after Ctrl-C")
        .unwrap();
    assert!(status.success(), "{status:?}");
    // Well before the 60 s lease could expire: the release was taken over, not the expiry.
    wait_until("another copy takes over", Duration::from_secs(15), || {
        holder(&api).is_some_and(|h| !h.is_empty() && h != leader_id)
    })
    .await;
    let new_leader = holder(&api).unwrap();
    let next = copies.iter().position(|c| c.id == new_leader).unwrap();
    wait_until(
        "the new leader runs its loop",
        Duration::from_secs(10),
        || said(&copies[next], "Controller loop..."),
    )
    .await;
    for c in &mut copies {
        let _ = c.child.start_kill();
    }
    api.shutdown().await;
}
