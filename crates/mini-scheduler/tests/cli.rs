//! The `mini-scheduler` binary as users run it: `policy check` and `simulate`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mini-scheduler"))
        .args(args)
        .current_dir(root())
        .env("RUST_LOG", "warn")
        .output()
        .expect("the binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn policy_check_prints_the_resolved_plugins() {
    let out = run(&["policy", "check", "config/policy-config-file.json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    for plugin in [
        "NodeUnschedulable",
        "NodeName",
        "NodePorts",
        "NodeAffinity",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "TaintToleration",
        "NodeResourcesLeastAllocated",
        "NodeResourcesBalancedAllocation",
        "SelectorSpread",
    ] {
        assert!(stdout.contains(plugin), "{plugin} missing from:\n{stdout}");
    }
    assert!(stdout.contains("EqualPriority"), "{stdout}");
}

#[test]
fn policy_check_accepts_the_singular_key_with_a_warning() {
    let out = run(&[
        "policy",
        "check",
        "config/policies/pass/seed-singular-predicate.json",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("\"predicate\""), "{stderr}");
}

#[test]
fn policy_check_rejects_broken_files_with_exit_code_2() {
    let out = run(&[
        "policy",
        "check",
        "config/policies/fail/unknown-predicate.json",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("config/policies/fail/unknown-predicate.json:"),
        "{stderr}"
    );
    assert!(stderr.contains("did you mean \"PodFitsPorts\""), "{stderr}");

    let out = run(&["policy", "check", "config/policies/fail/syntax-error.json"]);
    assert_eq!(out.status.code(), Some(2));
    let missing = run(&["policy", "check", "no/such/policy.json"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(text(&missing.stderr).contains("no/such/policy.json"));
}

#[test]
fn simulate_without_flags_runs_the_bundled_demo() {
    let out = run(&["simulate"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("Successfully assigned shop/db-0 to node-a1"),
        "{stdout}"
    );
    assert!(stdout.contains("Summary: 6 nodes, 13 pods"), "{stdout}");
}

#[test]
fn simulate_json_has_the_documented_shape() {
    let out = run(&["simulate", "--output", "json", "--explain", "--seed", "3"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let pods = v["pods"].as_array().unwrap();
    assert_eq!(pods.len(), 13);
    let train = pods.iter().find(|p| p["name"] == "train-0").unwrap();
    assert_eq!(train["status"], "Scheduled");
    assert_eq!(train["node"], "gpu-b3");
    assert_eq!(train["gpuIndexes"], serde_json::json!([0, 1]));
    assert!(train["diagnosis"].is_object());
    let scores = train["scores"]["gpu-b3"].as_object().unwrap();
    assert!(scores["total"].is_i64());
    assert!(scores["plugins"]["LeastRequestedPriority"].is_i64());
    let huge = pods.iter().find(|p| p["name"] == "batch-huge").unwrap();
    assert_eq!(huge["status"], "Unschedulable");
    assert!(huge["node"].is_null());
    let summary = &v["summary"];
    assert_eq!(summary["byStatus"]["Scheduled"], 7);
    assert!(summary["gpu"]["allocationRatio"].as_f64().unwrap() > 0.0);
    assert!(summary["podsPerSecond"].as_f64().is_some());
}

#[test]
fn simulate_reports_a_broken_cluster_file_with_exit_code_2() {
    let dir = std::env::temp_dir().join(format!("mini-scheduler-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.yaml");
    std::fs::write(
        &bad,
        "apiVersion: v1\nkind: Node\nmetadata: [not, a, map]\n",
    )
    .unwrap();
    let out = run(&["simulate", "--cluster", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("bad.yaml"),
        "{}",
        text(&out.stderr)
    );
}
