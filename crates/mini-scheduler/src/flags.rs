//! Value parsers shared by the `run` and serving flags.

use std::time::Duration;

use scheduler::config::parse_go_duration;

/// A duration flag (`15s`, `1m30s`, `500ms`, `2h`, `0`), parsed with Go's `time.ParseDuration`
/// rules as kube-scheduler's pflag durations are (fractions and several units allowed, a unit
/// required except for `0`). Negative durations are refused: no flag of `run` takes one.
///
/// # Errors
/// Go's message naming the value (`time: invalid duration "fast"`, `time: missing unit in
/// duration "15"`), with examples; or that the value is negative.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let nanos =
        parse_go_duration(s.trim()).map_err(|e| format!("{e} (examples: 15s, 1m30s, 500ms)"))?;
    let nanos = u64::try_from(nanos)
        .map_err(|_| format!("invalid duration {s:?}: must not be negative"))?;
    Ok(Duration::from_nanos(nanos))
}

/// The environment variable tokio reads for its multi-thread runtime's worker count.
pub const TOKIO_WORKER_THREADS: &str = "TOKIO_WORKER_THREADS";

/// Worker threads of `run`'s async runtime: the value of [`TOKIO_WORKER_THREADS`] when it is
/// set (`value`: a positive integer, as tokio requires), else one.
///
/// One by default: the scheduling loop is a single task that exchanges a message with the
/// watch, binding, event and connection tasks for every pod; on one worker those hand-offs are
/// plain task switches, on several each can wake a parked thread (a futex wake and a context
/// switch). The cycle's filter and score workers are threads of their own (`--parallelism`),
/// not runtime workers. A replica whose API traffic outgrows a core can set more.
///
/// # Errors
/// When the value is not a positive integer, a message naming the variable and the value
/// (tokio itself would panic on it).
pub fn runtime_workers(value: Option<&std::ffi::OsStr>) -> Result<usize, String> {
    let Some(value) = value else {
        return Ok(1);
    };
    value
        .to_str()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("{TOKIO_WORKER_THREADS}={value:?}: must be a positive integer"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn go_durations_parse() {
        assert_eq!(parse_duration("15s").unwrap(), Duration::from_secs(15));
        assert_eq!(parse_duration("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("2h").unwrap(), Duration::from_secs(7200));
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
        assert!(parse_duration("15").unwrap_err().contains("missing unit"));
        assert!(parse_duration("fast").unwrap_err().contains("\"fast\""));
        assert!(parse_duration("").is_err());
        assert!(parse_duration("-1s").unwrap_err().contains("negative"));
        assert!(parse_duration("99999999999999999999h").is_err());
    }

    #[test]
    fn runtime_workers_default_to_one_and_follow_tokio_worker_threads() {
        use std::ffi::OsStr;
        assert_eq!(runtime_workers(None), Ok(1));
        assert_eq!(runtime_workers(Some(OsStr::new("4"))), Ok(4));
        assert_eq!(runtime_workers(Some(OsStr::new(" 2 "))), Ok(2));
        for bad in ["0", "-1", "two", ""] {
            let e = runtime_workers(Some(OsStr::new(bad))).unwrap_err();
            assert!(e.contains("TOKIO_WORKER_THREADS"), "{e}");
            assert!(e.contains(&format!("{bad:?}")), "{e}");
        }
    }
}
