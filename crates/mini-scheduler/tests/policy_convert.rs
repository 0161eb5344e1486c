//! `mini-scheduler policy convert` as users run it: golden outputs for the bundled sample
//! policy, the bundled `config/kube-scheduler-config.yaml`, warnings on stderr, exit codes.
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

fn convert(args: &[&str]) -> (String, String) {
    let mut all = vec!["policy", "convert"];
    all.extend_from_slice(args);
    let out = run(&all);
    assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    (text(&out.stdout), text(&out.stderr))
}

/// The file without its leading comment lines.
fn without_comments(s: &str) -> String {
    s.lines()
        .skip_while(|l| l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// The bundled configuration is the v1beta2 conversion of the bundled Policy (the default
/// target), byte for byte after its header comment.
#[test]
fn bundled_config_is_the_conversion_of_the_bundled_policy() {
    let (stdout, stderr) = convert(&["config/policy-config-file.json"]);
    assert!(stderr.is_empty(), "{stderr}");
    let bundled =
        std::fs::read_to_string(root().join("config/kube-scheduler-config.yaml")).unwrap();
    assert!(bundled.starts_with("# "), "provenance header missing");
    assert_eq!(without_comments(&bundled), stdout);
    let (explicit, _) = convert(&["config/policy-config-file.json", "--to", "v1beta2"]);
    assert_eq!(explicit, stdout);
}

/// Golden outputs of the sample policy for v1beta3 and v1.
#[test]
fn sample_policy_golden_outputs() {
    for v in ["v1beta3", "v1"] {
        let (stdout, stderr) = convert(&["config/policy-config-file.json", "--to", v]);
        assert!(stderr.is_empty(), "{v}: {stderr}");
        let golden = std::fs::read_to_string(root().join(format!(
            "crates/mini-scheduler/tests/golden/policy-config-file.{v}.yaml"
        )))
        .unwrap();
        assert_eq!(stdout, golden, "{v}");
    }
}

/// Plugins the target lacks: one `warning:` line each on stderr, left out of stdout, exit 0.
#[test]
fn removed_plugins_warn_on_stderr() {
    let (stdout, stderr) = convert(&["config/policies/pass/simple-plugins.json", "--to", "v1"]);
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("warning: "))
        .collect();
    for plugin in ["NodeLabel", "ServiceAffinity", "NodePreferAvoidPods"] {
        assert_eq!(
            warnings
                .iter()
                .filter(|w| w.starts_with(&format!(
                    "warning: config/policies/pass/simple-plugins.json: {plugin} ("
                )))
                .count(),
            1,
            "{plugin}: {stderr}"
        );
        assert!(!stdout.contains(&format!("name: {plugin}\n")), "{stdout}");
    }
    assert!(stderr.contains("use NodeAffinity"), "{stderr}");
    assert!(
        stdout.starts_with("apiVersion: kubescheduler.config.k8s.io/v1\n"),
        "{stdout}"
    );
    // SelectorSpread: kept in v1beta2, gone in v1 with PodTopologySpread as its replacement.
    let gate_off = |to: &str| {
        let out = run(&[
            "--feature-gates",
            "DefaultPodTopologySpread=false",
            "policy",
            "convert",
            "config/policy-config-file.json",
            "--to",
            to,
        ]);
        assert!(out.status.success());
        (text(&out.stdout), text(&out.stderr))
    };
    let (v1beta2, stderr) = gate_off("v1beta2");
    assert!(v1beta2.contains("name: SelectorSpread\n"), "{v1beta2}");
    assert!(stderr.is_empty(), "{stderr}");
    let (v1, stderr) = gate_off("v1");
    assert!(!v1.contains("SelectorSpread"), "{v1}");
    assert!(
        stderr.starts_with(
            "warning: config/policy-config-file.json: SelectorSpread (score from ServiceSpreadingPriority) \
             is not a plugin of kubescheduler.config.k8s.io/v1"
        ),
        "{stderr}"
    );
}

/// Every Policy kube-scheduler v1.22 refuses (`config/policies/fail`) exits 2 with the error on
/// stderr and nothing on stdout; a bad --to is a usage error (2) too.
#[test]
fn invalid_policies_exit_2() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("config/policies/fail"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| !p.to_string_lossy().contains(".expected."))
        .collect();
    files.sort();
    assert!(files.len() >= 20);
    for f in files {
        let rel = f
            .strip_prefix(root())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let out = run(&["policy", "convert", &rel]);
        assert_eq!(out.status.code(), Some(2), "{rel}: {}", text(&out.stderr));
        assert!(out.stdout.is_empty(), "{rel}");
        assert!(
            text(&out.stderr).starts_with("error: "),
            "{rel}: {}",
            text(&out.stderr)
        );
    }
    let out = run(&[
        "policy",
        "convert",
        "config/policy-config-file.json",
        "--to",
        "v1beta1",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&["policy", "convert", "config/no-such-policy.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("missing policy config file"),
        "{}",
        text(&out.stderr)
    );
}

/// The README's worked example (flow style) is the same document as the command's output.
#[test]
fn readme_worked_example_is_the_real_output() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let section = &readme[readme.find("## Migrating from the Policy file").unwrap()..];
    let block = section.split("```").nth(1).unwrap();
    let yaml: String = block.lines().skip(2).map(|l| format!("{l}\n")).collect();
    let shown: serde_yaml::Value = serde_yaml::from_str(&yaml).unwrap();
    let (stdout, _) = convert(&["config/policy-config-file.json"]);
    let real: serde_yaml::Value = serde_yaml::from_str(&stdout).unwrap();
    assert_eq!(shown, real);
}
