//! Fuzzing of every input decoder, as seeded property tests (proptest, stable toolchain).
//!
//! Each decoder gets inputs of two shapes: arbitrary text, and mutations of real inputs (the
//! repository's own policy, cluster and openb files, and hand-written samples) — tokens from a
//! dictionary of the format's syntax and of the values that broke decoders elsewhere (huge and
//! negative numbers, deep nesting, NUL and BOM, duplicate keys) inserted, replaced or deleted at
//! random places. Properties: the decoder returns (no panic, no hang), and a rejected input's
//! error names its source file (where the decoder has one) and is not empty.
//!
//! `cargo test -p scheduler --lib fuzz` runs [`DEFAULT_CASES`] inputs per decoder with a fixed
//! seed. The long run, ≥ 10^6 inputs per decoder (the count each test prints is the number of
//! inputs decoded; README "Fuzzing" has the figures):
//!
//! ```sh
//! FUZZ_CASES=1000000 FUZZ_SEED=1 cargo test --release -p scheduler --lib fuzz -- --nocapture --test-threads 2
//! ```
#![allow(clippy::unwrap_used)]

mod decoders;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestRunner};

/// Inputs per decoder in `cargo test`.
pub const DEFAULT_CASES: u32 = 2_000;

/// Tokens every mutator may insert: syntax shared by JSON, YAML and CSV, and values that are
/// hard on decoders.
const COMMON_TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "\"",
    ":",
    ",",
    "\n",
    " ",
    "  ",
    "-",
    ".",
    "'",
    "#",
    "\\",
    "\0",
    "\u{feff}",
    "null",
    "true",
    "false",
    "0",
    "-1",
    "1e309",
    "-0",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "18446744073709551616",
    "1.5",
    "NaN",
    "0x10",
    "~",
    "&a",
    "*a",
    "!!str",
    "<<: *a",
    "---",
    "...",
    "|",
    ">",
    "%YAML 1.2",
    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
    "{\"a\":{\"a\":{\"a\":{",
    "é",
    "\u{202e}",
    "💥",
    "\t",
    "\r\n",
];

/// Inputs decoded so far per fuzz test, for the summary line.
pub(crate) struct Counter {
    name: &'static str,
    n: AtomicU64,
    slowest_us: AtomicU64,
}

impl Counter {
    pub(crate) const fn new(name: &'static str) -> Counter {
        Counter {
            name,
            n: AtomicU64::new(0),
            slowest_us: AtomicU64::new(0),
        }
    }

    /// Runs one decode, counting it and keeping the slowest time.
    pub(crate) fn time<T>(&self, f: impl FnOnce() -> T) -> T {
        let t = Instant::now();
        let out = f();
        let us = u64::try_from(t.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.slowest_us.fetch_max(us, Ordering::Relaxed);
        self.n.fetch_add(1, Ordering::Relaxed);
        out
    }

    fn report(&self, took: Duration) {
        eprintln!(
            "fuzz {}: {} inputs in {:.1} s, slowest {} µs, no panic",
            self.name,
            self.n.load(Ordering::Relaxed),
            took.as_secs_f64(),
            self.slowest_us.load(Ordering::Relaxed)
        );
    }
}

/// `FUZZ_CASES` or [`DEFAULT_CASES`].
fn cases() -> u32 {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_CASES)
}

/// A runner with a fixed seed (`FUZZ_SEED`, default 0), no failure files.
fn runner() -> TestRunner {
    let seed = std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    TestRunner::new(Config {
        cases: cases(),
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        max_shrink_iters: 2_000,
        ..Config::default()
    })
}

/// One edit of a mutation: position, kind (0 insert, 1 replace a span, 2 delete a span,
/// 3 duplicate a span), token or span length.
type Edit = (usize, u8, usize);

/// Applies `edits` to `seed`, with tokens from `tokens` then [`COMMON_TOKENS`]; positions are
/// taken modulo the length and moved to a char boundary.
pub(crate) fn mutate(seed: &str, edits: &[Edit], tokens: &[&str]) -> String {
    let mut s = seed.to_string();
    let token = |i: usize| {
        let all = tokens.len() + COMMON_TOKENS.len();
        let i = i % all;
        if i < tokens.len() {
            tokens[i]
        } else {
            COMMON_TOKENS[i - tokens.len()]
        }
    };
    for &(pos, kind, arg) in edits {
        let mut at = if s.is_empty() { 0 } else { pos % (s.len() + 1) };
        while !s.is_char_boundary(at) {
            at -= 1;
        }
        let mut end = (at + 1 + arg % 16).min(s.len());
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        match kind % 4 {
            0 => s.insert_str(at, token(arg)),
            1 => s.replace_range(at..end, token(arg / 7)),
            2 => s.replace_range(at..end, ""),
            _ => {
                let span = s[at..end].to_string();
                s.insert_str(at, &span);
            }
        }
    }
    s
}

/// Inputs: a mutated seed (3 in 4) or arbitrary text.
pub(crate) fn inputs(seeds: Vec<String>, tokens: &'static [&'static str]) -> BoxedStrategy<String> {
    let n = seeds.len().max(1);
    let mutated = (
        0..n,
        proptest::collection::vec((any::<usize>(), any::<u8>(), any::<usize>()), 0..10),
    )
        .prop_map(move |(i, edits)| {
            mutate(seeds.get(i).map_or("", String::as_str), &edits, tokens)
        });
    let arbitrary = proptest::collection::vec(any::<char>(), 0..200)
        .prop_map(|cs| cs.into_iter().collect::<String>());
    prop_oneof![3 => mutated, 1 => arbitrary].boxed()
}

/// Runs `check` on every input of `strategy`, counting them; panics (with the shrunk input) on
/// the first failure.
pub(crate) fn fuzz(
    counter: &Counter,
    strategy: BoxedStrategy<String>,
    check: impl Fn(&str) -> Result<(), TestCaseError>,
) {
    let start = Instant::now();
    let result = runner().run(&strategy, |input| counter.time(|| check(&input)));
    counter.report(start.elapsed());
    if let Err(e) = result {
        panic!("fuzz {}: {e}", counter.name);
    }
}

/// Text files under `dir` (relative to the repository root) with one of `exts`.
pub(crate) fn repo_files(dir: &str, exts: &[&str]) -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(dir);
    let mut out = Vec::new();
    let mut paths: Vec<_> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    paths.sort();
    for p in paths {
        if exts.iter().any(|x| p.extension().is_some_and(|e| e == *x))
            && let Ok(t) = std::fs::read_to_string(&p)
        {
            out.push(t);
        }
    }
    out
}
