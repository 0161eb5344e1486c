//! Build metadata for `mini-scheduler --version`: the git commit and the build date, as
//! kube-scheduler's `--version` reports gitCommit and buildDate (set there by `-ldflags -X`).
//!
//! Sources, first found wins:
//! - commit: `MINI_SCHEDULER_GIT_COMMIT` (e.g. a Docker build argument), else `git rev-parse
//!   HEAD`, else `unknown` (a build without `.git`,
//!   such as the Docker build context, or without git installed);
//! - date: `SOURCE_DATE_EPOCH` (reproducible builds), else the time of the build, as UTC
//!   `YYYY-MM-DDTHH:MM:SSZ`.

use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

/// `YYYY-MM-DDTHH:MM:SSZ` of Unix seconds (Howard Hinnant's days-to-civil algorithm).
fn utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn main() {
    println!("cargo:rerun-if-env-changed=MINI_SCHEDULER_GIT_COMMIT");
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    println!("cargo:rerun-if-changed=build.rs");
    let commit = match std::env::var("MINI_SCHEDULER_GIT_COMMIT") {
        Ok(c) if !c.trim().is_empty() => c.trim().to_string(),
        _ => match git(&["rev-parse", "HEAD"]) {
            Some(sha) => {
                // A new commit moves HEAD or the branch it names: rebuild then.
                for path in ["HEAD", "packed-refs"] {
                    if let Some(p) = git(&["rev-parse", "--git-path", path]) {
                        println!("cargo:rerun-if-changed={p}");
                    }
                }
                if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"])
                    && let Some(p) = git(&["rev-parse", "--git-path", &r])
                {
                    println!("cargo:rerun-if-changed={p}");
                }
                sha
            }
            None => "unknown".to_string(),
        },
    };
    let now = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0)
        });
    println!("cargo:rustc-env=MINI_SCHEDULER_GIT_COMMIT={commit}");
    println!("cargo:rustc-env=MINI_SCHEDULER_BUILD_DATE={}", utc(now));
}
