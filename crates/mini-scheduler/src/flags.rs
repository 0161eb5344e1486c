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
}
