//! Real and bad input, as a trial with public `kubectl` dumps and manifests found it: each case
//! reads a small file under `tests/fixtures/input/`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn command(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mini-scheduler"));
    c.args(args).current_dir(root()).env("RUST_LOG", "warn");
    c
}

fn run(args: &[&str]) -> Output {
    command(args).output().expect("the binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn fixture(name: &str) -> String {
    format!("tests/fixtures/input/{name}")
}

fn simulate_json(args: &[&str]) -> Value {
    let mut all = vec!["simulate", "--output", "json"];
    all.extend_from_slice(args);
    let out = run(&all);
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn pod<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["pods"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no pod {name} in {report:#}"))
}

/// A deeply nested file is refused at once, naming the file, line and column, whether it is
/// YAML (libyaml's scanner is quadratic in the flow depth) or JSON; a policy too.
#[test]
fn deep_nesting_is_refused_before_parsing() {
    for (file, position) in [
        ("deep-nesting.yaml", "5:106"),
        ("deep-nesting.json", "2:109"),
    ] {
        let started = Instant::now();
        let out = run(&["simulate", "--cluster", &fixture(file)]);
        assert_eq!(out.status.code(), Some(2), "{file}");
        assert_eq!(
            text(&out.stderr).trim_end(),
            format!(
                "error: {}:{position}: nesting deeper than 100 levels (mini-scheduler's limit; \
                 the API server's decoders stop at 10000)",
                fixture(file)
            )
        );
        assert!(started.elapsed() < Duration::from_secs(20), "{file}");
    }
    let out = run(&[
        "policy",
        "check",
        "config/policies/fail/nesting-too-deep-yaml.yaml",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("nesting-too-deep-yaml.yaml:4:112: invalid policy: nesting"),
        "{}",
        text(&out.stderr)
    );
}

/// JSON input is read with a JSON parser; a stream of objects (one `kubectl get -o json` per
/// object) is read too, and a JSON error keeps its line and column.
#[test]
fn json_cluster_files_are_read() {
    let report = simulate_json(&[
        "--cluster",
        &fixture("node-1.json"),
        "--cluster",
        &fixture("limits-only.yaml"),
    ]);
    assert_eq!(report["summary"]["nodes"], 3, "{report:#}");
    let dir = std::env::temp_dir().join(format!("mini-scheduler-json-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let stream = dir.join("stream.json");
    let node = std::fs::read_to_string(root().join(fixture("node-1.json"))).unwrap();
    std::fs::write(
        &stream,
        format!("{node}\n{}", node.replace("node-1", "node-2")),
    )
    .unwrap();
    let report = simulate_json(&["--cluster", stream.to_str().unwrap()]);
    assert_eq!(report["summary"]["nodes"], 2, "{report:#}");
    // YAML in flow style also starts with `{`: it is read as YAML.
    let flow = dir.join("flow.yaml");
    std::fs::write(
        &flow,
        "{apiVersion: v1, kind: Node, metadata: {name: flow-node},\n status: {allocatable: {cpu: '1'}}}\n",
    )
    .unwrap();
    let report = simulate_json(&["--cluster", flow.to_str().unwrap()]);
    assert_eq!(report["summary"]["nodes"], 1, "{report:#}");
    let broken = dir.join("broken.json");
    std::fs::write(
        &broken,
        "{\"apiVersion\": \"v1\",\n \"kind\": \"Node\",,}\n",
    )
    .unwrap();
    let out = run(&["simulate", "--cluster", broken.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("broken.json:2:17: key must be a string"),
        "{}",
        text(&out.stderr)
    );
}

/// NVIDIA's cuda-vectoradd asks only `limits: {nvidia.com/gpu: 1}`; as the API server
/// defaults its request from the limit, one copy fits the single GPU and none lands on the
/// node without GPUs.
#[test]
fn limits_only_pods_request_their_limits() {
    let report = simulate_json(&["--cluster", &fixture("limits-only.yaml")]);
    let scheduled: Vec<&Value> = report["pods"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["status"] == "Scheduled")
        .collect();
    assert_eq!(scheduled.len(), 1, "{report:#}");
    assert_eq!(scheduled[0]["node"], "gpu-1");
    assert_eq!(scheduled[0]["gpuIndexes"], serde_json::json!([0]));
    assert_eq!(report["summary"]["byStatus"]["Unschedulable"], 2);
    assert_eq!(
        report["summary"]["failureReasons"],
        serde_json::json!({"Insufficient nvidia.com/gpu": 2})
    );
}

/// `generateName` objects get `prefix + 5 characters` of the API server's alphabet, distinct,
/// the same under the same `--seed`.
#[test]
fn generate_name_objects_get_generated_names() {
    let names = |seed: &str| -> Vec<String> {
        let report = simulate_json(&["--cluster", &fixture("generate-name.yaml"), "--seed", seed]);
        assert_eq!(report["summary"]["byStatus"]["Scheduled"], 3, "{report:#}");
        report["pods"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap().to_string())
            .collect()
    };
    let first = names("5");
    assert_eq!(first.len(), 3);
    for n in &first {
        let suffix = n.strip_prefix("job-").unwrap();
        assert_eq!(suffix.len(), 5, "{n}");
        assert!(
            suffix
                .bytes()
                .all(|c| b"bcdfghjklmnpqrstvwxz2456789".contains(&c)),
            "{n}"
        );
    }
    let distinct: std::collections::BTreeSet<_> = first.iter().collect();
    assert_eq!(distinct.len(), 3, "{first:?}");
    assert_eq!(names("5"), first);
    assert_ne!(names("6"), first);
}

/// An object with neither a name nor a generateName is refused, naming the file, line and
/// document.
#[test]
fn a_nameless_object_is_refused() {
    let out = run(&["simulate", "--cluster", &fixture("nameless.yaml")]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr).trim_end(),
        format!(
            "error: {}:12:3: document 2: Node: metadata.name: Required value: name or \
             generateName is required",
            fixture("nameless.yaml")
        )
    );
}

/// A pod item of a `v1 List` that does not decode is that pod's Unschedulable outcome, naming
/// the line, item, kind, namespace/name and field; the other items are scheduled.
#[test]
fn a_bad_pod_in_a_list_is_unschedulable_and_the_run_goes_on() {
    let report = simulate_json(&["--cluster", &fixture("bad-list.yaml")]);
    let bad = pod(&report, "bad-1");
    assert_eq!(bad["status"], "Unschedulable");
    assert_eq!(
        bad["message"],
        format!(
            "{}:28:27: document 1, items[2]: Pod apps/bad-1: \
             spec.containers[0].resources.limits[\"nvidia.com/gpu\"]: invalid type: sequence, \
             expected Quantity",
            fixture("bad-list.yaml")
        )
    );
    assert_eq!(pod(&report, "good-0")["status"], "Scheduled");
    assert_eq!(pod(&report, "good-2")["status"], "Scheduled");
    assert_eq!(report["summary"]["pods"], 3);
}

/// Node errors stop the run and name the file, line, item and field; a node read twice names
/// both places.
#[test]
fn node_errors_name_the_file() {
    let out = run(&["simulate", "--cluster", &fixture("bad-node-list.json")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).starts_with(&format!(
            "error: {}:8:40: document 1, items[1]: Node node-2: status.allocatable.cpu: \
             quantities must match",
            fixture("bad-node-list.json")
        )),
        "{}",
        text(&out.stderr)
    );
    let out = run(&[
        "simulate",
        "--cluster",
        &fixture("node-1.json"),
        "--cluster",
        &fixture("generate-name.yaml"),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr).trim_end(),
        format!(
            "error: {}: document 1: node node-1 already exists (first read from {}: document 1)",
            fixture("generate-name.yaml"),
            fixture("node-1.json")
        )
    );
}

/// A file with nothing in it is a warning, not a silent success.
#[test]
fn an_empty_file_is_a_warning() {
    let out = run(&["simulate", "--cluster", &fixture("empty.yaml")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains(&format!(
            "{}: nothing read: the file holds no object",
            fixture("empty.yaml")
        )),
        "{}",
        text(&out.stderr)
    );
}

/// An escape sequence and a carriage return in a pod name reach the terminal escaped.
#[test]
fn control_characters_are_escaped() {
    let out = run(&["simulate", "--cluster", &fixture("control-chars.yaml")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(!stdout.contains(['\u{1b}', '\r']), "{stdout:?}");
    assert!(
        stdout.contains("Successfully assigned default/evil\\u{1b}[2J\\rpod to node-1"),
        "{stdout}"
    );
    // JSON keeps the value (escaped the JSON way).
    let report = simulate_json(&["--cluster", &fixture("control-chars.yaml")]);
    assert_eq!(report["pods"][0]["name"], "evil\u{1b}[2J\rpod");
}

/// A KubeSchedulerConfiguration given as the policy is named for what it is, exit code 2.
#[test]
fn a_kube_scheduler_configuration_is_not_a_policy() {
    let out = run(&[
        "simulate",
        "--policy",
        "config/policies/fail/kube-scheduler-configuration.yaml",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).starts_with(
            "error: config/policies/fail/kube-scheduler-configuration.yaml:4:7: invalid policy: \
             this is a KubeSchedulerConfiguration, not a Policy"
        ),
        "{}",
        text(&out.stderr)
    );
}

/// GPU share on a node without a device count is an extended resource: the first share fits,
/// the second is refused by NodeResourcesFit with v1.22's reason, not GpuShare's.
#[test]
fn gpu_share_without_device_count_is_an_extended_resource() {
    let report = simulate_json(&["--cluster", &fixture("gpu-milli-only.yaml")]);
    let first = pod(&report, "notebook-0");
    assert_eq!(first["status"], "Scheduled", "{report:#}");
    assert_eq!(first["node"], "share-node");
    assert!(first.get("gpuIndexes").is_none(), "{first}");
    let second = pod(&report, "notebook-1");
    assert_eq!(
        second["message"],
        "0/1 nodes are available: 1 Insufficient alibabacloud.com/gpu-milli."
    );
}

/// A reader that stops early (`… 2>&1 | head -1`) ends the run quietly with exit code 0 (no
/// panic, no 101).
#[test]
fn a_closed_pipe_ends_the_run_quietly() {
    let dir = std::env::temp_dir().join(format!("mini-scheduler-pipe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let big = dir.join("big.yaml");
    let mut cluster = String::from(
        "apiVersion: v1\nkind: Node\nmetadata: {name: node-1}\nstatus:\n  allocatable: {cpu: \"1000\", memory: 1Ti, pods: \"5000\"}\n",
    );
    for i in 0..3000 {
        cluster.push_str(&format!(
            "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: pod-{i}}}\nspec:\n  containers: [{{name: c, image: x}}]\n"
        ));
    }
    std::fs::write(&big, cluster).unwrap();
    for format in ["table", "json"] {
        let (reader, writer) = std::io::pipe().unwrap();
        let mut child = command(&[
            "simulate",
            "--cluster",
            big.to_str().unwrap(),
            "--cluster",
            &fixture("empty.yaml"),
            "--output",
            format,
        ])
        .stdout(writer.try_clone().unwrap())
        .stderr(writer)
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
        let mut first = String::new();
        BufReader::new(reader).read_line(&mut first).unwrap();
        // The reader is dropped here: the pipe is closed with most of the output unwritten.
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(0), "{format}: first line {first:?}");
    }
}

/// The streamed `--output json --explain` document is the report `sim::simulate` builds in
/// memory (apart from the measured times).
#[test]
fn streamed_json_is_the_whole_report() {
    let mut streamed = simulate_json(&["--explain", "--seed", "3"]);
    let policy =
        scheduler::policy::load_policy_file(&root().join("config/policy-config-file.json"))
            .unwrap()
            .resolved
            .with_feature_gates(&scheduler::policy::FeatureGates::default());
    let mut cluster = scheduler::sim::Cluster::default();
    scheduler::sim::files::read_cluster_file(
        &mut cluster,
        &root().join("config/demo-cluster.yaml"),
    )
    .unwrap();
    let cfg = scheduler::sim::SimulationConfig {
        scheduler_name: "mini-scheduler".into(),
        seed: 3,
        percentage_of_nodes_to_score: 0,
        explain: true,
    };
    let report = scheduler::sim::simulate(cluster, &policy, &cfg)
        .unwrap()
        .report;
    // Through text, as the binary's output (floats read back the same way).
    let mut whole: Value =
        serde_json::from_str(&serde_json::to_string_pretty(&report).unwrap()).unwrap();
    for v in [&mut streamed, &mut whole] {
        v["summary"]["wallTimeSeconds"] = Value::Null;
        v["summary"]["podsPerSecond"] = Value::Null;
    }
    assert_eq!(streamed, whole);
}

/// `run` reads tokio's `TOKIO_WORKER_THREADS` for its runtime's worker count; a value tokio
/// would panic on stops start-up with exit code 2 and names the variable and the value, before
/// anything else is read.
#[test]
fn a_bad_tokio_worker_threads_exits_2() {
    for bad in ["0", "many"] {
        let out = command(&["run", "--kubeconfig", "/nonexistent/kubeconfig"])
            .env("TOKIO_WORKER_THREADS", bad)
            .output()
            .expect("the binary runs");
        assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains(&format!(
                "TOKIO_WORKER_THREADS={bad:?}: must be a positive integer"
            )),
            "{stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}
