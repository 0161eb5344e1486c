//! `mini-scheduler explain` and `simulate --kubeconfig` against the in-memory API test double:
//! explain prints every node's reason for an unschedulable pod and the scored nodes for one
//! that fits, reading only; a live what-if run places pods exactly as `simulate --cluster` on
//! a dump of the same objects; two `--policy` files give the side-by-side table.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use k8s_openapi::api::core::v1::{
    Container, Node, NodeSpec, NodeStatus, Pod, PodSpec, ResourceRequirements, Taint,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;
use tests::apiserver::ApiServer;
use tests::objects::quantities;

fn node(name: &str, cpu: &str, taint: Option<&str>) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(BTreeMap::from([(
                "kubernetes.io/hostname".to_string(),
                name.to_string(),
            )])),
            ..Default::default()
        },
        spec: taint.map(|key| NodeSpec {
            taints: Some(vec![Taint {
                key: key.into(),
                effect: "NoSchedule".into(),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        status: Some(NodeStatus {
            allocatable: Some(quantities(&[
                ("cpu", cpu),
                ("memory", "8Gi"),
                ("pods", "110"),
            ])),
            ..Default::default()
        }),
    }
}

fn pod(name: &str, cpu: &str, node: Option<&str>) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            uid: Some(format!("uid-{name}")),
            ..Default::default()
        },
        spec: Some(PodSpec {
            scheduler_name: Some("mini-scheduler".into()),
            node_name: node.map(str::to_string),
            containers: vec![Container {
                name: "c".into(),
                resources: Some(ResourceRequirements {
                    requests: Some(quantities(&[("cpu", cpu), ("memory", "256Mi")])),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: None,
    }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

async fn run(args: &[&str]) -> Output {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    tokio::process::Command::new(env!("CARGO_BIN_EXE_mini-scheduler"))
        .args(&args)
        .current_dir(root())
        .env("RUST_LOG", "warn")
        .output()
        .await
        .expect("the binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

async fn seeded() -> ApiServer {
    let api = ApiServer::start().await;
    api.seed(&node("node-a", "2", None)).unwrap();
    api.seed(&node("node-b", "4", None)).unwrap();
    api.seed(&node("node-c", "8", Some("dedicated"))).unwrap();
    api.seed(&pod("running", "1", Some("node-a"))).unwrap();
    for (name, cpu) in [("web-0", "500m"), ("web-1", "1"), ("web-2", "1500m")] {
        api.seed(&pod(name, cpu, None)).unwrap();
    }
    api.seed(&pod("too-big", "6", None)).unwrap();
    api
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_prints_every_nodes_reason_and_reads_only() {
    let api = seeded().await;
    let dir = std::env::temp_dir().join(format!("mini-scheduler-explain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    api.write_kubeconfig(&kubeconfig).unwrap();
    let kc = kubeconfig.to_str().unwrap();

    // Unschedulable: kube-scheduler's summary, and a reason for every node.
    let out = run(&["explain", "default/too-big", "--kubeconfig", kc]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("Pod default/too-big: Unschedulable"),
        "{stdout}"
    );
    assert!(stdout.contains("0/3 nodes are available"), "{stdout}");
    for (n, reason) in [
        ("node-a", "Insufficient cpu"),
        ("node-b", "Insufficient cpu"),
        ("node-c", "had untolerated taint"),
    ] {
        let line = stdout
            .lines()
            .find(|l| l.contains(&format!("✗ {n}:")))
            .unwrap_or_else(|| panic!("no reason for {n}:\n{stdout}"));
        assert!(
            line.contains(reason) || (n == "node-c" && line.contains("taint")),
            "{n}: {line}"
        );
    }

    // A pod that fits: the feasible nodes with each plugin's score, best first.
    let out = run(&[
        "explain",
        "default/web-0",
        "--kubeconfig",
        kc,
        "--output",
        "json",
    ])
    .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "Scheduled", "{v}");
    let scores = v["scores"].as_object().unwrap();
    assert_eq!(
        scores.keys().collect::<Vec<_>>(),
        ["node-a", "node-b"],
        "{v}"
    );
    // The DefaultProvider's priorities, each with its score on each feasible node; the
    // emptier node-b wins LeastRequestedPriority.
    let least = |n: &str| {
        scores[n]["plugins"]["LeastRequestedPriority"]
            .as_i64()
            .unwrap()
    };
    assert!(least("node-b") > least("node-a"), "{v}");
    assert_eq!(v["node"], "node-b", "{v}");
    assert_eq!(v["diagnosis"]["node-c"].as_array().unwrap().len(), 1, "{v}");

    // Bound pods, missing pods and malformed names.
    let out = run(&["explain", "default/running", "--kubeconfig", kc]).await;
    assert!(out.status.success());
    assert!(text(&out.stdout).contains("is bound to node node-a"));
    let out = run(&["explain", "default/nope", "--kubeconfig", kc]).await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("default/nope not found"));
    let out = run(&["explain", "too-big", "--kubeconfig", kc]).await;
    assert_eq!(out.status.code(), Some(2));

    // Read-only: only LISTs reached the API (the kinds the double does not serve,
    // PriorityClasses and PodDisruptionBudgets, are GETs of paths it does not know: 404, left
    // out with a warning).
    assert!(api.writes().is_empty(), "{:?}", api.writes());
    assert!(
        api.requests()
            .iter()
            .all(|r| r.verb == "list" || (r.verb == "get" && r.resource.is_none())),
        "{:?}",
        api.requests()
    );
    assert!(api.requests().iter().any(|r| r.verb == "list"));
    let _ = std::fs::remove_dir_all(&dir);
    api.shutdown().await;
}

/// The objects of `api` as a multi-document YAML file, as `kubectl get -o yaml` would dump them.
fn dump(api: &ApiServer, path: &Path) {
    let mut docs = Vec::new();
    for n in api.list::<Node>() {
        docs.push(serde_yaml::to_string(&n).unwrap());
    }
    for p in api.list::<Pod>() {
        docs.push(serde_yaml::to_string(&p).unwrap());
    }
    std::fs::write(path, docs.join("---\n")).unwrap();
}

/// `(pod, status, node)` of every pod of a `simulate --output json` report.
fn placements(out: &Output) -> Vec<(String, String, String)> {
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut rows: Vec<_> = v["pods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                format!(
                    "{}/{}",
                    p["namespace"].as_str().unwrap(),
                    p["name"].as_str().unwrap()
                ),
                p["status"].as_str().unwrap().to_string(),
                p["node"].as_str().unwrap_or("-").to_string(),
            )
        })
        .collect();
    rows.sort();
    rows
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simulate_on_the_live_cluster_matches_a_dump_and_compares_policies() {
    let api = seeded().await;
    let dir = std::env::temp_dir().join(format!("mini-scheduler-live-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    api.write_kubeconfig(&kubeconfig).unwrap();
    let kc = kubeconfig.to_str().unwrap();
    let file = dir.join("dump.yaml");
    dump(&api, &file);

    let live = run(&["simulate", "--kubeconfig", kc, "--output", "json"]).await;
    let files = run(&[
        "simulate",
        "--cluster",
        file.to_str().unwrap(),
        "--output",
        "json",
    ])
    .await;
    let (live, files) = (placements(&live), placements(&files));
    assert_eq!(live, files);
    // Something was decided: three pods placed, the big one not, the running one kept.
    assert_eq!(
        live.iter().filter(|r| r.1 == "Scheduled").count(),
        3,
        "{live:?}"
    );
    assert!(live.contains(&("default/too-big".into(), "Unschedulable".into(), "-".into())));
    assert!(api.writes().is_empty(), "a what-if run writes nothing");

    // Two policies side by side: LeastRequested (the bundled policy) and MostRequested.
    let most = dir.join("most.json");
    std::fs::write(
        &most,
        r#"{"kind": "Policy", "apiVersion": "v1",
 "predicates": [{"name": "PodFitsResources"}, {"name": "PodToleratesNodeTaints"}],
 "priorities": [{"name": "MostRequestedPriority", "weight": 1}]}"#,
    )
    .unwrap();
    let out = run(&[
        "simulate",
        "--kubeconfig",
        kc,
        "--policy",
        "config/policy-config-file.json",
        "--policy",
        most.to_str().unwrap(),
    ])
    .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    let header = table.lines().next().unwrap();
    assert!(
        header.contains("policy-config-file.json") && header.contains("most.json"),
        "{table}"
    );
    for row in [
        "default/web-0",
        "scheduled",
        "unschedulable",
        "cpu allocated",
        "cpu imbalance (pp)",
    ] {
        assert!(
            table.lines().any(|l| l.starts_with(row)),
            "{row} missing:\n{table}"
        );
    }
    let json = run(&[
        "simulate",
        "--kubeconfig",
        kc,
        "--policy",
        "config/policy-config-file.json",
        "--policy",
        most.to_str().unwrap(),
        "--output",
        "json",
    ])
    .await;
    assert!(json.status.success(), "{}", text(&json.stderr));
    let v: Value = serde_json::from_slice(&json.stdout).unwrap();
    let runs = v.as_array().unwrap();
    assert_eq!(runs.len(), 2);
    // web-0 (500m) goes where each policy says: LeastRequested to the emptier node-b (0.5 of 4
    // CPUs), MostRequested to node-a (1.5 of 2 CPUs with the running pod).
    assert_eq!(runs[0]["placements"]["default/web-0"], "node-b", "{v}");
    assert_eq!(runs[1]["placements"]["default/web-0"], "node-a", "{v}");
    let web0 = table
        .lines()
        .find(|l| l.starts_with("default/web-0"))
        .unwrap();
    let cells: Vec<&str> = web0.split_whitespace().collect();
    assert_eq!(cells, ["default/web-0", "node-b", "node-a"], "{table}");
    let _ = std::fs::remove_dir_all(&dir);
    api.shutdown().await;
}
