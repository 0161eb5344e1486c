//! Fuzzing of the kubeconfig decoding behind `--kubeconfig` (`client_config`: kube's
//! `Kubeconfig` YAML decoder, then `Config::from_custom_kubeconfig`), as a seeded property test
//! over mutations of valid kubeconfigs and arbitrary text: it returns, never panics, and a
//! rejected file's message names the file.
//!
//! `cargo test -p mini-scheduler kubeconfig` runs 2,000 inputs; the long run:
//! `FUZZ_CASES=1000000 cargo test --release -p mini-scheduler kubeconfig -- --nocapture`.
//! Inputs naming an exec or auth-provider plugin are skipped: building a client from them
//! would run commands.
#![allow(clippy::unwrap_used)]

use std::time::Instant;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestRunner};

const SEEDS: &[&str] = &[
    "apiVersion: v1\nkind: Config\nclusters:\n- name: t\n  cluster: {server: \"http://127.0.0.1:6443\"}\nusers:\n- name: u\n  user: {}\ncontexts:\n- name: c\n  context: {cluster: t, user: u, namespace: ns}\ncurrent-context: c\n",
    "apiVersion: v1\nkind: Config\nclusters:\n- name: prod\n  cluster:\n    server: https://10.0.0.1:6443\n    insecure-skip-tls-verify: true\n    proxy-url: http://proxy:3128\n    tls-server-name: api\nusers:\n- name: admin\n  user:\n    token: abc\n    username: a\n    password: b\ncontexts:\n- name: admin@prod\n  context:\n    cluster: prod\n    user: admin\ncurrent-context: admin@prod\npreferences: {}\n",
    "{\"apiVersion\":\"v1\",\"kind\":\"Config\",\"clusters\":[{\"name\":\"x\",\"cluster\":{\"server\":\"https://[::1]:1\",\"certificate-authority-data\":\"bm90IGEgY2VydA==\"}}],\"users\":[{\"name\":\"u\",\"user\":{\"client-certificate-data\":\"eA==\",\"client-key-data\":\"eQ==\"}}],\"contexts\":[{\"name\":\"c\",\"context\":{\"cluster\":\"x\",\"user\":\"u\"}}],\"current-context\":\"c\"}",
];

const TOKENS: &[&str] = &[
    "clusters:",
    "users:",
    "contexts:",
    "current-context: ",
    "server: ",
    "http://",
    "https://",
    "cluster: ",
    "user: ",
    "namespace: ",
    "token: ",
    "certificate-authority-data: ",
    "client-key-data: ",
    "insecure-skip-tls-verify: ",
    "proxy-url: ",
    "socks5://",
    "- name: ",
    "{",
    "}",
    "[",
    "]",
    ":",
    ",",
    "\n",
    " ",
    "  ",
    "-",
    "\"",
    "'",
    "null",
    "~",
    "&a",
    "*a",
    "<<: *a",
    "---",
    "é",
    "\0",
    "[::1]",
    ":99999",
    "%",
    "#",
    "1e309",
    "true",
    "|",
];

fn mutate(seed: &str, edits: &[(usize, u8, usize)]) -> String {
    let mut s = seed.to_string();
    for &(pos, kind, arg) in edits {
        let mut at = if s.is_empty() { 0 } else { pos % (s.len() + 1) };
        while !s.is_char_boundary(at) {
            at -= 1;
        }
        let mut end = (at + 1 + arg % 16).min(s.len());
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        match kind % 3 {
            0 => s.insert_str(at, TOKENS[arg % TOKENS.len()]),
            1 => s.replace_range(at..end, TOKENS[(arg / 7) % TOKENS.len()]),
            _ => s.replace_range(at..end, ""),
        }
    }
    s
}

#[test]
fn kubeconfig_files() {
    let cases = std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2_000);
    let seed = std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let mut runner = TestRunner::new(Config {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        ..Config::default()
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mutated = (
        0..SEEDS.len(),
        proptest::collection::vec((any::<usize>(), any::<u8>(), any::<usize>()), 0..10),
    )
        .prop_map(|(i, e)| mutate(SEEDS[i], &e));
    let arbitrary = proptest::collection::vec(any::<char>(), 0..200)
        .prop_map(|cs| cs.into_iter().collect::<String>());
    let strategy = prop_oneof![3 => mutated, 1 => arbitrary];
    let dir = std::env::temp_dir().join(format!("kubeconfig-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("kubeconfig");
    let start = Instant::now();
    let n = std::sync::atomic::AtomicU64::new(0);
    let result = runner.run(&strategy, |text| {
        n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if text.contains("exec") || text.contains("auth-provider") || text.contains("cmd-") {
            return Ok(());
        }
        std::fs::write(&path, &text).unwrap();
        if let Err(e) = rt.block_on(super::kubeconfig_file(&path)) {
            prop_assert!(
                e.contains(&path.display().to_string()),
                "the error does not name the file: {e}"
            );
        }
        Ok(())
    });
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "fuzz kubeconfig: {} inputs in {:.1} s, no panic",
        n.load(std::sync::atomic::Ordering::Relaxed),
        start.elapsed().as_secs_f64()
    );
    if let Err(e) = result {
        panic!("fuzz kubeconfig: {e}");
    }
}
