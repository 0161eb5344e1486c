//! What can be checked of the image without a Docker engine: the Dockerfile builds with the
//! exact command CI runs (`.ci/run`), runs the binary as `ENTRYPOINT ["/mini-scheduler"]`
//! `CMD ["run"]` as numeric non-root user 65532 on a shell-less runtime base, and the
//! Deployment's `runAsUser` matches. CI also lints the Dockerfile (hadolint) and runs the
//! release binary's `--help`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

const BUILD: &str = "cargo build --release --locked -p mini-scheduler";

fn repo_file(path: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(path);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Instructions of the last stage, `(INSTRUCTION, arguments)`, continuation lines joined.
fn stages(dockerfile: &str) -> Vec<Vec<(String, String)>> {
    let mut stages: Vec<Vec<(String, String)>> = Vec::new();
    let mut joined = String::new();
    for line in dockerfile.lines() {
        let t = line.trim();
        if t.starts_with('#') || t.is_empty() {
            continue;
        }
        if let Some(cont) = t.strip_suffix('\\') {
            joined.push_str(cont);
            continue;
        }
        joined.push_str(t);
        let (ins, args) = joined.split_once(' ').unwrap_or((&joined, ""));
        let ins = ins.to_ascii_uppercase();
        if ins == "FROM" {
            stages.push(Vec::new());
        }
        stages
            .last_mut()
            .expect("FROM first")
            .push((ins, args.trim().to_string()));
        joined.clear();
    }
    stages
}

#[test]
fn dockerfile_builds_like_ci_and_runs_non_root_without_a_shell() {
    let df = repo_file("Dockerfile");
    let stages = stages(&df);
    assert_eq!(stages.len(), 2, "multi-stage: build, then runtime");
    let build = &stages[0];
    assert!(
        build.iter().any(|(i, a)| i == "RUN" && a == BUILD),
        "the build stage runs `{BUILD}`"
    );
    let ci = repo_file(".ci/run");
    assert!(
        ci.lines().any(|l| l.trim() == BUILD),
        ".ci/run runs `{BUILD}`"
    );
    assert!(ci.contains("target/release/mini-scheduler --help"));

    let runtime = &stages[1];
    let get = |ins: &str| -> Vec<&str> {
        runtime
            .iter()
            .filter(|(i, _)| i == ins)
            .map(|(_, a)| a.as_str())
            .collect()
    };
    let base = get("FROM")[0];
    assert!(
        base.starts_with("gcr.io/distroless/cc") || base.contains("slim"),
        "small runtime base: {base}"
    );
    assert!(get("RUN").is_empty(), "the runtime stage needs no shell");
    assert_eq!(
        get("COPY"),
        ["--from=build /src/target/release/mini-scheduler /mini-scheduler"]
    );
    assert_eq!(get("USER"), ["65532:65532"], "numeric non-root user");
    assert_eq!(get("ENTRYPOINT"), [r#"["/mini-scheduler"]"#]);
    assert_eq!(get("CMD"), [r#"["run"]"#]);

    // The Deployment runs as that user.
    let d = repo_file("manifests/deployment.yaml");
    assert!(d.contains("runAsUser: 65532") && d.contains("runAsGroup: 65532"));
}

/// Files that `include_str!`/`include_bytes!` embed into the image's crates, as paths relative
/// to the repository root (`crates/<crate>/src/...` sources, scanned recursively).
fn embedded_files(dir: &std::path::Path, root: &std::path::Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            embedded_files(&path, root, out);
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for mac in ["include_str!(\"", "include_bytes!(\""] {
            for (at, _) in text.match_indices(mac) {
                let rest = &text[at + mac.len()..];
                let rel = &rest[..rest.find('"').unwrap()];
                let target = path.parent().unwrap().join(rel).canonicalize().unwrap();
                let target = target.strip_prefix(root).unwrap();
                out.push(target.to_string_lossy().into_owned());
            }
        }
    }
}

#[test]
fn build_context_leaves_out_the_data_and_nothing_the_build_embeds() {
    let ignore = repo_file(".dockerignore");
    let patterns: Vec<&str> = ignore
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    // The trace stays out of the image's build context.
    assert!(patterns.contains(&"data/"), "{patterns:?}");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap();
    let mut embedded = Vec::new();
    embedded_files(&root.join("crates"), &root, &mut embedded);
    assert!(
        embedded.iter().any(|f| f == "config/demo-cluster.yaml"),
        "{embedded:?}"
    );
    for file in &embedded {
        for p in &patterns {
            let left_out = match (p.strip_suffix('/'), p.strip_prefix('*')) {
                (Some(dir), _) => file.starts_with(&format!("{dir}/")),
                (None, Some(ext)) => file.ends_with(ext),
                (None, None) => file == p,
            };
            assert!(
                !left_out,
                "{file} is embedded in the build but .dockerignore's `{p}` leaves it out"
            );
        }
    }
}
