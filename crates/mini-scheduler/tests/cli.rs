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
    ] {
        assert!(stdout.contains(plugin), "{plugin} missing from:\n{stdout}");
    }
    assert!(stdout.contains("EqualPriority"), "{stdout}");
    // DefaultPodTopologySpread on (v1.22's default): ServiceSpreadingPriority is
    // PodTopologySpread with the system default constraints.
    let score_line = |out: &str, priority: &str| -> String {
        out.lines()
            .find(|l| l.ends_with(&format!("<- {priority}")))
            .map(|l| l.split_whitespace().take(2).collect::<Vec<_>>().join(" "))
            .unwrap_or_default()
    };
    assert_eq!(
        score_line(&stdout, "ServiceSpreadingPriority"),
        "PodTopologySpread 1",
        "{stdout}"
    );
    assert!(
        stdout.contains("PodTopologySpread  defaultingType=System"),
        "{stdout}"
    );
    let off = run(&[
        "--feature-gates",
        "DefaultPodTopologySpread=false",
        "policy",
        "check",
        "config/policy-config-file.json",
    ]);
    assert!(off.status.success(), "{}", text(&off.stderr));
    let off = text(&off.stdout);
    assert_eq!(
        score_line(&off, "ServiceSpreadingPriority"),
        "SelectorSpread 1",
        "{off}"
    );
    assert!(!off.contains("PodTopologySpread"), "{off}");
}

/// `--feature-gates` as kube-scheduler parses it; a gate it does not know is a flag error.
#[test]
fn feature_gates_flag_is_checked() {
    let out = run(&[
        "--feature-gates",
        "CSIStorageCapacity=true",
        "policy",
        "check",
        "config/policy-config-file.json",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("unrecognized feature gate: CSIStorageCapacity"),
        "{}",
        text(&out.stderr)
    );
    // Repeated flags merge, the last value of a gate winning (pflag).
    let out = run(&[
        "--feature-gates=DefaultPodTopologySpread=false",
        "policy",
        "check",
        "--feature-gates",
        "AllBeta=false,DefaultPodTopologySpread=true",
        "config/policy-config-file.json",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("PodTopologySpread  defaultingType=System"),
        "{}",
        text(&out.stdout)
    );
    let out = run(&[
        "simulate",
        "--feature-gates",
        "DefaultPodTopologySpread=maybe",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("invalid value of DefaultPodTopologySpread=maybe"),
        "{}",
        text(&out.stderr)
    );
}

/// The demo's fourth `web` replica under both gate settings. `web` pods sit on node-a1,
/// node-a2 (zone-a) and node-b1 (zone-b). With the system defaults (hostname maxSkew 3, zone
/// maxSkew 5; 4 feasible nodes, 2 zones: weights ln 6 and ln 4), the raw scores are
/// node-a1/a2 ⌊1·ln 6 + 2 + 2·ln 4 + 4⌋ = 10, node-b1 ⌊ln 6 + 2 + ln 4 + 4⌋ = 9, small-a3
/// ⌊2 + 2·ln 4 + 4⌋ = 8, normalized 100·(10 + 8 − s)/10 = 80, 90, 100, 80 (v1.22
/// `podtopologyspread/scoring.go`): node-b1's spread lead no longer outweighs node-a2's better
/// resource scores. With the gate off, SelectorSpread's zone weighting picks node-b1.
#[test]
fn default_pod_topology_spread_changes_the_demo_placement_as_v1_22() {
    let on = run(&["simulate", "--explain"]);
    assert!(on.status.success(), "{}", text(&on.stderr));
    let on = text(&on.stdout);
    assert!(
        on.contains("Successfully assigned shop/web-7d9f-ddddd to node-a2"),
        "{on}"
    );
    for (node, score) in [
        ("node-a2", 80),
        ("node-b1", 90),
        ("small-a3", 100),
        ("node-a1", 80),
    ] {
        assert!(
            on.lines()
                .skip_while(|l| !l.starts_with("shop/web-7d9f-ddddd"))
                .take_while(|l| !l.starts_with("kube-system/ingress-1"))
                .any(|l| l.contains(&format!("{node}: total"))
                    && l.contains(&format!("ServiceSpreadingPriority={score})"))),
            "{node} {score}:\n{on}"
        );
    }
    let off = run(&["--feature-gates=DefaultPodTopologySpread=false", "simulate"]);
    assert!(off.status.success(), "{}", text(&off.stderr));
    assert!(
        text(&off.stdout).contains("Successfully assigned shop/web-7d9f-ddddd to node-b1"),
        "{}",
        text(&off.stdout)
    );
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

/// `simulate --help` names every kind `--cluster` reads, as the README's flag table does.
#[test]
fn simulate_help_lists_the_cluster_kinds_of_the_readme() {
    let out = run(&["simulate", "--help"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let help = text(&out.stdout);
    let cluster_help = help
        .split("--cluster <FILE>")
        .nth(1)
        .and_then(|h| h.split("\n\n").next())
        .expect("--cluster in the help");
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let cluster_row = readme
        .lines()
        .find(|l| l.starts_with("| `--cluster FILE` |"))
        .expect("the README's --cluster row");
    let words = |t: &str| -> Vec<String> {
        t.split(|c: char| !c.is_ascii_alphanumeric())
            .map(str::to_string)
            .collect()
    };
    let (row_words, help_words) = (words(cluster_row), words(cluster_help));
    for kind in [
        "Nodes",
        "Pods",
        "Services",
        "ReplicationControllers",
        "ReplicaSets",
        "StatefulSets",
        "Namespaces",
        "PersistentVolumes",
        "PersistentVolumeClaims",
        "StorageClasses",
        "CSINodes",
    ] {
        assert!(
            row_words.iter().any(|w| w == kind),
            "README lacks {kind}: {cluster_row}"
        );
        assert!(
            help_words.iter().any(|w| w == kind),
            "simulate --help lacks {kind}: {cluster_help}"
        );
    }
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

#[test]
fn policy_check_prints_the_plugin_args() {
    let out = run(&["policy", "check", "config/policies/pass/compat-1.1.json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("plugin args:"), "{stdout}");
    assert!(
        stdout.contains(
            "NodeLabel          presentLabels=[foo] absentLabels=[] \
             presentLabelsPreference=[bar] absentLabelsPreference=[foo]"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "ServiceAffinity    affinityLabels=[region] \
             antiAffinityLabelsPreference=[zone, region]"
        ),
        "{stdout}"
    );
    // SelectorSpreadPriority under DefaultPodTopologySpread (on by default).
    assert!(
        stdout.contains("PodTopologySpread  defaultingType=System"),
        "{stdout}"
    );
    // Two labelPreference entries of weight 4: weight 4 × 2.
    assert!(
        stdout.contains(
            "NodeLabel                            8  <- TestLabelPreference1, TestLabelPreference2"
        ),
        "{stdout}"
    );
}

/// Three nodes, one pod, every priority this policy helper added. The expected scores follow
/// the v1.22 formulas (see each plugin's docs):
/// - ImageLocality: 500 MB image on 1 of 3 nodes → 166 666 666 bytes scaled between 23 MiB and
///   1000 MiB × 1 container → 13 on node-a, 0 elsewhere.
/// - NodeAffinity: preferred term (weight 5) matches node-b only → normalized 100 / 0.
/// - TaintToleration: node-a has one intolerable PreferNoSchedule taint → reversed 0 / 100.
/// - NodePreferAvoidPods: node-b avoids another ReplicaSet's pods → 100 everywhere.
/// - labelPreference `ssd`: node-a only → 100 / 0.
/// - serviceAntiAffinity with no service selecting the pod → 100 everywhere.
/// - requestedToCapacityRatio (0→0, 100→10, ×10): cpu 1/4 = 25, memory 1Gi/8Gi = 12 (floor)
///   → round(37 / 2) = 19.
/// - node-c lacks the `disk` label (labelsPresence) and is filtered out.
#[test]
fn simulate_explain_shows_the_simple_plugins_scores() {
    let dir =
        std::env::temp_dir().join(format!("mini-scheduler-cli-simple-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cluster = dir.join("cluster.yaml");
    std::fs::write(&cluster, SIMPLE_PLUGINS_CLUSTER).unwrap();
    let out = run(&[
        "simulate",
        "--policy",
        "config/policies/pass/simple-plugins.json",
        "--cluster",
        cluster.to_str().unwrap(),
        "--explain",
        "--output",
        "json",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let pod = &v["pods"][0];
    assert_eq!(pod["name"], "web-0");
    assert_eq!(pod["status"], "Scheduled");
    assert_eq!(pod["node"], "node-a");
    let plugins = |node: &str| pod["scores"][node]["plugins"].clone();
    assert_eq!(
        plugins("node-a"),
        serde_json::json!({
            "ImageLocalityPriority": 13,
            "NodeAffinityPriority": 0,
            "NodePreferAvoidPodsPriority": 100,
            "Packing": 19,
            "PreferSsd": 100,
            "SpreadZone": 100,
            "TaintTolerationPriority": 0,
        })
    );
    assert_eq!(
        plugins("node-b"),
        serde_json::json!({
            "ImageLocalityPriority": 0,
            "NodeAffinityPriority": 100,
            "NodePreferAvoidPodsPriority": 100,
            "Packing": 19,
            "PreferSsd": 0,
            "SpreadZone": 100,
            "TaintTolerationPriority": 100,
        })
    );
    // Weighted: 13 + 100 × 10000 + 19 + 100 × 2 + 100 = 1 000 332.
    assert_eq!(pod["scores"]["node-a"]["total"], 1_000_332);
    assert_eq!(pod["scores"]["node-b"]["total"], 1_000_319);
    assert!(pod["scores"]["node-c"].is_null());
}

const SIMPLE_PLUGINS_CLUSTER: &str = r#"
apiVersion: v1
kind: Node
metadata:
  name: node-a
  labels: {zone: z1, disk: "yes", ssd: "true"}
spec:
  taints: [{key: noisy, value: "1", effect: PreferNoSchedule}]
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
  images:
  - names: ["registry.example/app:1"]
    sizeBytes: 500000000
---
apiVersion: v1
kind: Node
metadata:
  name: node-b
  labels: {zone: z2, disk: "yes"}
  annotations:
    scheduler.alpha.kubernetes.io/preferAvoidPods: '{"preferAvoidPods":[{"podSignature":{"podController":{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs-x","uid":"uid-other","controller":true}}}]}'
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
---
apiVersion: v1
kind: Node
metadata:
  name: node-c
  labels: {zone: z3}
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
---
apiVersion: v1
kind: Pod
metadata:
  name: web-0
  namespace: default
  labels: {app: web}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: rs-web, uid: uid-web, controller: true}]
spec:
  schedulerName: mini-scheduler
  affinity:
    nodeAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 5
        preference:
          matchExpressions: [{key: zone, operator: In, values: [z2]}]
  containers:
  - name: app
    image: registry.example/app:1
    resources: {requests: {cpu: "1", memory: 1Gi}}
"#;

#[test]
fn version_names_commit_build_date_and_policy_api() {
    let out = run(&["--version"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.starts_with(&format!("mini-scheduler {}\n", env!("CARGO_PKG_VERSION"))),
        "{stdout}"
    );
    assert!(
        stdout.contains("\nPolicy API: kube-scheduler v1.22"),
        "{stdout}"
    );
    let field = |name: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .unwrap_or_else(|| panic!("no {name} in {stdout}"))
            .to_string()
    };
    // A 40-hex commit from git, or "unknown" when built without .git (the Docker build).
    let commit = field("Git commit: ");
    assert!(
        commit == "unknown"
            || (commit.len() == 40 && commit.chars().all(|c| c.is_ascii_hexdigit())),
        "{commit}"
    );
    let date = field("Build date: ");
    assert!(
        date.len() == 20 && date.ends_with('Z') && date.as_bytes()[10] == b'T',
        "{date}"
    );
}

#[test]
fn completion_scripts_for_bash_zsh_and_fish() {
    for (shell, marker) in [
        ("bash", "-o bashdefault -o default mini-scheduler"),
        ("zsh", "#compdef mini-scheduler"),
        ("fish", "complete -c mini-scheduler"),
    ] {
        let out = run(&["completion", shell]);
        assert!(out.status.success(), "{shell}: {}", text(&out.stderr));
        let script = text(&out.stdout);
        assert!(script.contains(marker), "{shell}: {marker} missing");
        // Subcommands and kube-scheduler-named flags are completed.
        for word in ["simulate", "policy-config-file", "logging-format"] {
            assert!(script.contains(word), "{shell}: {word} missing");
        }
    }
    let out = run(&["completion", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn logging_flags_as_kube_scheduler_names_them() {
    // -v N in klog's spellings.
    for args in [
        &[
            "-v",
            "2",
            "policy",
            "check",
            "config/policy-config-file.json",
        ][..],
        &["--v=4", "policy", "check", "config/policy-config-file.json"],
        &["policy", "check", "-v2", "config/policy-config-file.json"],
    ] {
        let out = run(args);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    }
    let out = run(&[
        "-v",
        "high",
        "policy",
        "check",
        "config/policy-config-file.json",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));

    // --logging-format=json: every log line is one JSON object; no deprecation warning.
    let json_lines = |stderr: &str| -> Vec<serde_json::Value> {
        stderr
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect()
    };
    let out = run(&[
        "--logging-format=json",
        "policy",
        "check",
        "config/policy-config-file.json",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines = json_lines(&text(&out.stderr));
    assert!(
        lines.iter().all(|l| !l.to_string().contains("deprecated")),
        "{lines:?}"
    );
    // The old name still works, with pflag's deprecation warning (a JSON line itself).
    let out = run(&[
        "--log-format",
        "json",
        "policy",
        "check",
        "config/policy-config-file.json",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines = json_lines(&text(&out.stderr));
    assert!(
        lines.iter().any(|l| l["fields"]["message"]
            == "Flag --log-format has been deprecated, use --logging-format instead"
            && l["level"] == "WARN"),
        "{lines:?}"
    );
    // Both at once is a flag error.
    let out = run(&[
        "--log-format=json",
        "--logging-format=text",
        "policy",
        "check",
        "config/policy-config-file.json",
    ]);
    assert_eq!(out.status.code(), Some(2));
}
