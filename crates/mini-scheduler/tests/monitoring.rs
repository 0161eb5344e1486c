//! The optional monitoring component (`manifests/monitoring`): a kustomize Component listing
//! every file, a ServiceMonitor that selects the scheduler's Service and scrapes its HTTPS port
//! with a bearer token, the alerts with the thresholds the operator guide states, a dashboard
//! that parses, and the scraper's `get /metrics` grant. That every metric the alerts and the
//! dashboard query is served is checked against a live scrape in `serving.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_yaml::Value;
use tests::manifests::{Kustomization, Manifest, manifests_dir};

fn dir() -> PathBuf {
    manifests_dir().join("monitoring")
}

fn yaml_docs(file: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(dir().join(file)).unwrap();
    serde_yaml::Deserializer::from_str(&text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect()
}

fn s<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    let mut v = v;
    for p in path {
        v = &v[*p];
    }
    v.as_str()
        .unwrap_or_else(|| panic!("{path:?} is not a string in {v:?}"))
}

#[test]
fn component_lists_every_file() {
    let k = &yaml_docs("kustomization.yaml")[0];
    assert_eq!(s(k, &["apiVersion"]), "kustomize.config.k8s.io/v1alpha1");
    assert_eq!(s(k, &["kind"]), "Component");
    let mut listed: BTreeSet<String> = k["resources"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap().to_string())
        .collect();
    for g in k["configMapGenerator"].as_sequence().unwrap() {
        listed.extend(
            g["files"]
                .as_sequence()
                .unwrap()
                .iter()
                .map(|f| f.as_str().unwrap().to_string()),
        );
    }
    let on_disk: BTreeSet<String> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "kustomization.yaml")
        .collect();
    assert_eq!(listed, on_disk);
    // The dashboard ConfigMap is labelled for Grafana's sidecar.
    let labels = &k["configMapGenerator"][0]["options"]["labels"];
    assert_eq!(s(labels, &["grafana_dashboard"]), "1");
}

#[test]
fn service_monitor_scrapes_the_secure_port_of_the_service() {
    let base = Kustomization::load(&manifests_dir()).unwrap();
    let objects = base.build().unwrap();
    let service = objects
        .iter()
        .find_map(|o| match o {
            Manifest::Service(s) => Some(s),
            _ => None,
        })
        .unwrap();
    let sm = &yaml_docs("servicemonitor.yaml")[0];
    assert_eq!(s(sm, &["kind"]), "ServiceMonitor");
    // Its selector picks the Service; its namespace selector the Service's namespace.
    let labels = service.metadata.labels.clone().unwrap();
    for (k, v) in sm["spec"]["selector"]["matchLabels"].as_mapping().unwrap() {
        assert_eq!(
            labels.get(k.as_str().unwrap()).map(String::as_str),
            v.as_str(),
            "{k:?}"
        );
    }
    assert_eq!(
        sm["spec"]["namespaceSelector"]["matchNames"][0].as_str(),
        base.namespace.as_deref()
    );
    let ep = &sm["spec"]["endpoints"][0];
    let port = &service.spec.as_ref().unwrap().ports.as_ref().unwrap()[0];
    assert_eq!(Some(s(ep, &["port"])), port.name.as_deref());
    assert_eq!(port.port, 10259);
    assert_eq!(s(ep, &["scheme"]), "https");
    assert_eq!(
        s(ep, &["bearerTokenFile"]),
        "/var/run/secrets/kubernetes.io/serviceaccount/token"
    );
    assert_eq!(ep["tlsConfig"]["insecureSkipVerify"].as_bool(), Some(true));
}

#[test]
fn alerts_have_the_documented_thresholds() {
    let rule = &yaml_docs("prometheusrule.yaml")[0];
    assert_eq!(s(rule, &["kind"]), "PrometheusRule");
    let rules = rule["spec"]["groups"][0]["rules"].as_sequence().unwrap();
    let alert = |name: &str| {
        rules
            .iter()
            .find(|r| r["alert"].as_str() == Some(name))
            .unwrap_or_else(|| panic!("no alert {name}"))
    };
    // No leader for 2 x the Deployment's lease duration (the flag, else its 15 s default).
    let base = Kustomization::load(&manifests_dir()).unwrap();
    let objects = base.build().unwrap();
    let args = objects
        .iter()
        .find_map(|o| match o {
            Manifest::Deployment(d) => d.spec.template.spec.as_ref()?.containers[0].args.clone(),
            _ => None,
        })
        .unwrap();
    let lease = args
        .iter()
        .find_map(|a| a.strip_prefix("--leader-elect-lease-duration="))
        .unwrap_or("15s");
    let lease: u64 = lease.trim_end_matches('s').parse().unwrap();
    let no_leader = alert("MiniSchedulerNoLeader");
    assert_eq!(s(no_leader, &["for"]), format!("{}s", 2 * lease));
    assert!(s(no_leader, &["expr"]).contains("leader_election_master_status"));
    assert!(
        s(no_leader, &["expr"]).contains("absent("),
        "no scrape is no leader"
    );
    let pending = alert("MiniSchedulerPendingPodsRising");
    assert_eq!(s(pending, &["for"]), "10m");
    assert!(s(pending, &["expr"]).contains("scheduler_pending_pods"));
    let errors = alert("MiniSchedulerScheduleErrors");
    assert!(s(errors, &["expr"]).contains(r#"result="error""#));
    for r in rules {
        assert!(
            matches!(s(r, &["labels", "severity"]), "critical" | "warning"),
            "{r:?}"
        );
    }
}

#[test]
fn dashboard_parses_and_scraper_may_read_metrics() {
    let text = std::fs::read_to_string(dir().join("mini-scheduler-dashboard.json")).unwrap();
    let d: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(d["uid"], "mini-scheduler");
    let panels = d["panels"].as_array().unwrap();
    assert!(panels.len() >= 10);
    let ids: BTreeSet<u64> = panels.iter().map(|p| p["id"].as_u64().unwrap()).collect();
    assert_eq!(ids.len(), panels.len(), "unique panel ids");
    for p in panels {
        assert!(
            !p["targets"].as_array().unwrap().is_empty(),
            "{}",
            p["title"]
        );
    }
    let docs = yaml_docs("scraper-rbac.yaml");
    let role = docs
        .iter()
        .find(|d| d["kind"].as_str() == Some("ClusterRole"))
        .unwrap();
    let rule = &role["rules"][0];
    assert_eq!(rule["nonResourceURLs"][0].as_str(), Some("/metrics"));
    assert_eq!(rule["verbs"][0].as_str(), Some("get"));
    let binding = docs
        .iter()
        .find(|d| d["kind"].as_str() == Some("ClusterRoleBinding"))
        .unwrap();
    assert_eq!(
        binding["roleRef"]["name"].as_str(),
        role["metadata"]["name"].as_str()
    );
}

/// The metric names the alerts and the dashboard query (`scheduler_*`, `leader_election_*`,
/// `rest_client_*`, `process_*`, with `_bucket` etc. as written).
pub fn queried_metric_names() -> BTreeSet<String> {
    let mut text = std::fs::read_to_string(dir().join("prometheusrule.yaml")).unwrap();
    text.push_str(&std::fs::read_to_string(dir().join("mini-scheduler-dashboard.json")).unwrap());
    let mut names = BTreeSet::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
            i += 1;
        }
        if i > start {
            let word = &text[start..i];
            if ["scheduler_", "leader_election_", "rest_client_", "process_"]
                .iter()
                .any(|p| word.starts_with(p))
            {
                names.insert(word.to_string());
            }
        } else {
            i += 1;
        }
    }
    names
}

#[test]
fn queried_names_are_extracted() {
    let names = queried_metric_names();
    for n in [
        "leader_election_master_status",
        "scheduler_pending_pods",
        "scheduler_e2e_scheduling_duration_seconds_bucket",
        "rest_client_requests_total",
        "process_resident_memory_bytes",
    ] {
        assert!(names.contains(n), "{n} not in {names:?}");
    }
}

/// Every metric the alerts and the dashboard query is served by `mini-scheduler run` (with a
/// policy file, after binding a pod), checked on a live scrape against the API test double.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_queried_metric_is_served() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let api = tests::apiserver::ApiServer::start().await;
    tests::binary::seed_node_and_web_pod(&api, &[]);
    let tmp =
        std::env::temp_dir().join(format!("mini-scheduler-monitoring-{}", std::process::id()));
    let port = tests::binary::free_port();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut child = tests::binary::run_command(env!("CARGO_BIN_EXE_mini-scheduler"), &api, &tmp)
        .args([
            "--policy-config-file",
            "config/policy-config-file.json",
            "--insecure-dev-http",
            "--bind-address",
            "127.0.0.1",
            "--secure-port",
            &port.to_string(),
            "--leader-elect-resource-namespace",
            "default",
        ])
        .current_dir(root)
        .env("RUST_LOG", "warn")
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let scrape = async || -> Option<String> {
        let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .ok()?;
        s.write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
            .await
            .ok()?;
        let mut buf = String::new();
        s.read_to_string(&mut buf).await.ok()?;
        Some(buf)
    };
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut missing;
    loop {
        let text = scrape().await.unwrap_or_default();
        // Served: a sample line starting with the name (histograms as name_bucket etc.).
        missing = queried_metric_names()
            .into_iter()
            .filter(|n| {
                !text.lines().any(|l| {
                    l.strip_prefix(n.as_str())
                        .is_some_and(|r| r.starts_with(['{', ' ']))
                })
            })
            .collect::<Vec<_>>();
        if missing.is_empty() || tokio::time::Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let _ = child.kill().await;
    let _ = std::fs::remove_dir_all(&tmp);
    api.shutdown().await;
    assert!(missing.is_empty(), "queried but not served: {missing:?}");
}
