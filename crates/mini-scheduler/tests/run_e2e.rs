//! `mini-scheduler run` as a process against the in-memory API test double: it binds a pending
//! pod, serves /metrics and /readyz (plain HTTP with --insecure-dev-http; the secure port is
//! tested in serving.rs), and on SIGTERM stops, releases its Lease and exits 0.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use tests::apiserver::ApiServer;
use tests::binary::{free_port, poll, run_command, seed_node_and_web_pod, terminate};
use tests::objects;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .ok()?;
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").as_bytes())
        .await
        .ok()?;
    let mut buf = String::new();
    s.read_to_string(&mut buf).await.ok()?;
    let code = buf.split_whitespace().nth(1)?.parse().ok()?;
    let body = buf.split_once("\r\n\r\n").map(|(_, b)| b.to_string())?;
    Some((code, body))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_binds_serves_admin_and_releases_on_sigterm() {
    let api = ApiServer::start().await;
    seed_node_and_web_pod(&api, &[("cpu", "500m"), ("memory", "1Gi")]);

    let dir = std::env::temp_dir().join(format!("mini-scheduler-e2e-{}", std::process::id()));
    let port = free_port();
    let mut child = run_command(env!("CARGO_BIN_EXE_mini-scheduler"), &api, &dir)
        .args([
            "--insecure-dev-http",
            "--bind-address",
            "127.0.0.1",
            "--secure-port",
            &port.to_string(),
            "--leader-elect-lease-duration",
            "6s",
            "--leader-elect-renew-deadline",
            "4s",
            "--leader-elect-retry-period",
            "1s",
            "--leader-elect-resource-namespace",
            "default",
            "-v",
            "2",
        ])
        .env("POD_NAME", "e2e-replica")
        .env_remove("RUST_LOG")
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");

    let node = poll("the pod to be bound", async || {
        api.get::<Pod>("default", "web-0")
            .and_then(|p| p.spec.and_then(|s| s.node_name))
    })
    .await;
    assert_eq!(node, "node-1");
    let pod = api.get::<Pod>("default", "web-0").unwrap();
    let ann = pod.metadata.annotations.unwrap_or_default();
    assert!(
        ann["mini-scheduler.io/scheduled-by"].starts_with("e2e-replica_"),
        "{ann:?}"
    );
    let lease = api.get::<Lease>("default", "mini-scheduler").unwrap();
    assert_eq!(
        ann["mini-scheduler.io/lease-uid"],
        lease.metadata.uid.clone().unwrap()
    );

    let (code, _) = poll("/readyz", async || {
        http_get(port, "/readyz").await.filter(|(c, _)| *c == 200)
    })
    .await;
    assert_eq!(code, 200);
    // The pod is bound in the API before the scheduler's loop has handled the bind's outcome
    // (the Scheduled event is written in between): wait for the last metric that outcome records.
    let (code, metrics) = poll("the bound pod's metrics", async || {
        http_get(port, "/metrics").await.filter(|(_, m)| {
            m.contains(r#"scheduler_pod_scheduling_duration_seconds_count{attempts="1"} 1"#)
        })
    })
    .await;
    assert_eq!(code, 200);
    assert!(
        metrics.contains(
            r#"scheduler_schedule_attempts_total{profile="mini-scheduler",result="scheduled"} 1"#
        ),
        "{metrics}"
    );
    assert!(
        metrics.contains("leader_election_master_status"),
        "{metrics}"
    );
    // kube-scheduler v1.22's families, client-go's rest_client_* and the process collector.
    for sample in [
        r#"scheduler_e2e_scheduling_duration_seconds_count{profile="mini-scheduler",result="scheduled"} 1"#,
        r#"scheduler_pod_scheduling_duration_seconds_count{attempts="1"} 1"#,
        r#"scheduler_pod_scheduling_attempts_bucket{le="1"} 1"#,
        r#"scheduler_queue_incoming_pods_total{event="PodAdd",queue="active"} 1"#,
        r#"scheduler_scheduler_cache_size{type="nodes"} 1"#,
        r#"scheduler_scheduler_cache_size{type="pods"} 1"#,
        r#"rest_client_requests_total{code="201",host="#,
        r#"rest_client_request_duration_seconds_bucket{url="http"#,
        "/api/v1/namespaces/{namespace}/pods/{name}/binding",
        "process_resident_memory_bytes ",
        "process_start_time_seconds ",
    ] {
        assert!(metrics.contains(sample), "{sample} missing:\n{metrics}");
    }
    assert_eq!(http_get(port, "/healthz").await.unwrap().0, 200);
    assert_eq!(http_get(port, "/livez").await.unwrap().0, 200);

    let (code, stderr) = terminate(&mut child).await;
    assert_eq!(code, Some(0), "{stderr}");
    // -v 2: per-pod outcomes are logged.
    assert!(
        stderr.contains("Successfully bound pod to node"),
        "{stderr}"
    );
    let lease = api.get::<Lease>("default", "mini-scheduler").unwrap();
    let spec = lease.spec.unwrap();
    assert_eq!(
        spec.holder_identity.as_deref(),
        Some(""),
        "released: {stderr}"
    );
    assert_eq!(spec.lease_duration_seconds, Some(1));
    api.shutdown().await;
}

/// The binary with `--policy-config-file` in a ConfigMap-style volume: a broken version is
/// counted in /metrics and the process keeps running and scheduling; a fixed one is reloaded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_reloads_the_policy_file_and_survives_a_bad_one() {
    const GOOD: &str = r#"{"kind": "Policy", "apiVersion": "v1",
 "predicates": [{"name": "PodFitsResources"}],
 "priorities": [{"name": "LeastRequestedPriority", "weight": 1}]}
"#;
    const BAD: &str = "{\"kind\": \"Policy\", \"apiVersion\": \"v1\",\n \"predicates\": [{\"name\": \"PodFitsResourcez\"}]}\n";
    const MOST: &str = r#"{"kind": "Policy", "apiVersion": "v1",
 "priorities": [{"name": "MostRequestedPriority", "weight": 2}]}
"#;
    let api = ApiServer::start().await;
    api.seed(&objects::node(
        "node-1",
        &[("cpu", "4"), ("memory", "8Gi"), ("pods", "110")],
    ))
    .unwrap();
    let mut volume = tests::configmap::ConfigMapVolume::new(
        "mini-scheduler-e2e-reload",
        "policy-config-file.json",
        GOOD,
    );
    let port = free_port();
    let mut child = run_command(
        env!("CARGO_BIN_EXE_mini-scheduler"),
        &api,
        &volume.dir().join("..kubeconfig-dir"),
    )
    .args([
        "--admin-address",
        &format!("127.0.0.1:{port}"),
        "--leader-elect=false",
        "--policy-config-file",
        volume.file().to_str().unwrap(),
    ])
    .env("POD_NAME", "e2e-reload")
    .env("RUST_LOG", "info")
    .stderr(Stdio::piped())
    .spawn()
    .expect("the binary starts");
    let metric = async |line: &str| {
        http_get(port, "/metrics")
            .await
            .filter(|(c, m)| *c == 200 && m.lines().any(|l| l == line))
    };
    poll("/readyz", async || {
        http_get(port, "/readyz").await.filter(|(c, _)| *c == 200)
    })
    .await;
    assert!(
        metric(r#"scheduler_policy_reloads_total{result="failure"} 0"#)
            .await
            .is_some()
    );

    volume.update(BAD);
    poll("the failed reload in /metrics", async || {
        metric(r#"scheduler_policy_reloads_total{result="failure"} 1"#).await
    })
    .await;
    assert!(metric("scheduler_policy_file_rejected 1").await.is_some());
    // Still scheduling with the policy it had.
    api.seed(&objects::pod("after-bad", &[])).unwrap();
    poll("the pod to be bound after the bad reload", async || {
        api.get::<Pod>("default", "after-bad")
            .and_then(|p| p.spec.and_then(|s| s.node_name))
    })
    .await;

    volume.update(MOST);
    poll("the successful reload in /metrics", async || {
        metric(r#"scheduler_policy_reloads_total{result="success"} 1"#).await
    })
    .await;
    assert!(metric("scheduler_policy_file_rejected 0").await.is_some());

    let (code, stderr) = terminate(&mut child).await;
    assert_eq!(code, Some(0), "{stderr}");
    let file = volume.file().display().to_string();
    assert!(
        stderr.contains(&format!("{file}:2:")) && stderr.contains("PodFitsResourcez"),
        "the rejection names file:line:column: {stderr}"
    );
    assert!(stderr.contains("Reloaded policy in force"), "{stderr}");
    // The old flag still serves plain HTTP, with a warning.
    assert!(
        stderr.contains("Flag --admin-address has been deprecated"),
        "{stderr}"
    );
    // At INFO (-v 0) no per-pod lines: bindings are V(2).
    assert!(
        !stderr.contains("Successfully bound pod to node"),
        "{stderr}"
    );
    api.shutdown().await;
}

/// The demo cluster (`config/demo-cluster.yaml`, names generated and requests defaulted as
/// `simulate` does) in a fresh API double: every node, Service, ReplicaSet and pod.
async fn demo_api() -> ApiServer {
    let mut cluster = scheduler::sim::Cluster::default();
    scheduler::sim::files::parse_cluster_text(
        &mut cluster,
        "demo-cluster.yaml",
        include_str!("../../../config/demo-cluster.yaml"),
    )
    .unwrap();
    scheduler::sim::generate_names(&mut cluster, 0);
    let api = ApiServer::start().await;
    for n in &cluster.nodes {
        api.seed(n).unwrap();
    }
    for s in &cluster.services {
        api.seed(s).unwrap();
    }
    for r in &cluster.replica_sets {
        api.seed(r).unwrap();
    }
    for p in &mut cluster.pods {
        scheduler::sim::default_requests_from_limits(p);
        api.seed(p).unwrap();
    }
    api
}

/// Starts `mini-scheduler run` against `api` with `extra` flags, waits until the pods that were
/// pending for `mini-scheduler` stop being bound (none for 3 s, or `expect` of them bound),
/// stops it, and returns pod → node of those pods.
async fn bindings_of_run(
    api: &ApiServer,
    dir: &std::path::Path,
    extra: &[&str],
    expect: Option<usize>,
) -> BTreeMap<String, String> {
    let pending: Vec<String> = api
        .list::<Pod>()
        .into_iter()
        .filter(|p| {
            let s = p.spec.as_ref().unwrap();
            s.node_name.is_none() && s.scheduler_name.as_deref() == Some("mini-scheduler")
        })
        .map(|p| p.metadata.name.unwrap())
        .collect();
    assert!(pending.len() >= 5, "{pending:?}");
    let port = free_port();
    let mut child = run_command(env!("CARGO_BIN_EXE_mini-scheduler"), api, dir)
        .args(["--insecure-dev-http", "--bind-address", "127.0.0.1"])
        .args(["--secure-port", &port.to_string()])
        .args(["--leader-elect=false"])
        .args(extra)
        .env_remove("RUST_LOG")
        .stderr(Stdio::null())
        .spawn()
        .expect("the binary starts");
    let bound = || -> BTreeMap<String, String> {
        api.list::<Pod>()
            .into_iter()
            .filter(|p| pending.contains(p.metadata.name.as_ref().unwrap()))
            .filter_map(|p| Some((p.metadata.name?, p.spec?.node_name?)))
            .collect()
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let (mut last, mut since) = (bound(), tokio::time::Instant::now());
    while tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let now = bound();
        if expect.is_some_and(|n| now.len() >= n) {
            last = now;
            break;
        }
        if now != last {
            (last, since) = (now, tokio::time::Instant::now());
        } else if expect.is_none() && !last.is_empty() && since.elapsed() > Duration::from_secs(3) {
            break;
        }
    }
    let _ = child.start_kill();
    let _ = child.wait().await;
    last
}

/// `run --config` with the sample policy converted (`policy convert`) binds the same pods to
/// the same nodes as `run --policy-config-file` with the policy itself (issue 17's round trip
/// in cluster mode); the demo cluster's placements have no ties, so the runs' random
/// tie-break seeds do not matter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_config_binds_like_the_policy_it_was_converted_from() {
    let dir =
        std::env::temp_dir().join(format!("mini-scheduler-e2e-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let policy = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../config/policy-config-file.json"
    );
    let converted = std::process::Command::new(env!("CARGO_BIN_EXE_mini-scheduler"))
        .args(["policy", "convert", policy])
        .output()
        .unwrap();
    assert!(converted.status.success(), "{converted:?}");
    // With --config, the file's clientConnection and leaderElection replace the flags (v1.22).
    let kubeconfig = dir.join("kubeconfig");
    let mut text = String::from_utf8(converted.stdout).unwrap();
    text.push_str(&format!(
        "clientConnection:\n  kubeconfig: {}\nleaderElection:\n  leaderElect: false\n",
        kubeconfig.display()
    ));
    let config = dir.join("kube-scheduler-config.yaml");
    std::fs::write(&config, text).unwrap();

    let api = demo_api().await;
    let by_policy = bindings_of_run(&api, &dir, &["--policy-config-file", policy], None).await;
    api.shutdown().await;
    assert!(by_policy.len() >= 5, "{by_policy:?}");

    let api = demo_api().await;
    let by_config = bindings_of_run(
        &api,
        &dir,
        &["--config", config.to_str().unwrap()],
        Some(by_policy.len()),
    )
    .await;
    api.shutdown().await;
    assert_eq!(by_config, by_policy);

    // Both files at once: a usage error, as in kube-scheduler v1.22.
    let both = std::process::Command::new(env!("CARGO_BIN_EXE_mini-scheduler"))
        .args(["run", "--policy-config-file", policy, "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(both.status.code(), Some(2), "{both:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
