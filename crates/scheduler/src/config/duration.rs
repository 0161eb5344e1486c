//! Go `time.Duration` text: `String()` for writing (`30s`, `1m30s`, `1.5ms`) and
//! `time.ParseDuration` for reading, as `metav1.Duration` does in configuration files.

use std::fmt::Write;

/// Go's `time.Duration.String()` of `nanos` nanoseconds: `0s`; below one second the largest of
/// `ns`, `µs`, `ms` with a trimmed fraction; otherwise `[Xh][Ym]Z[.F]s` (`1h0m0s`, `1m30s`,
/// `1.5s`).
pub fn format_go_duration(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".to_string();
    }
    let neg = nanos < 0;
    let u = nanos.unsigned_abs();
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if u < 1_000_000_000 {
        let (unit, div) = if u < 1_000 {
            ("ns", 1)
        } else if u < 1_000_000 {
            ("µs", 1_000)
        } else {
            ("ms", 1_000_000)
        };
        out.push_str(&frac(u, div));
        out.push_str(unit);
        return out;
    }
    let secs_total = u / 1_000_000_000;
    let sub = u % 1_000_000_000;
    let hours = secs_total / 3600;
    let mins = (secs_total % 3600) / 60;
    let secs = secs_total % 60;
    if hours > 0 {
        let _ = write!(out, "{hours}h");
    }
    if hours > 0 || mins > 0 {
        let _ = write!(out, "{mins}m");
    }
    out.push_str(&frac(secs * 1_000_000_000 + sub, 1_000_000_000));
    out.push('s');
    out
}

/// `v / div` with the fraction's trailing zeros trimmed.
fn frac(v: u64, div: u64) -> String {
    let whole = v / div;
    let rest = v % div;
    if rest == 0 {
        return whole.to_string();
    }
    let width = div.to_string().len() - 1;
    let digits = format!("{rest:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

/// Go's `time.ParseDuration`: an optionally signed sequence of decimal numbers, each with an
/// optional fraction and a unit (`ns`, `us`, `µs`, `ms`, `s`, `m`, `h`); `0` alone is allowed.
/// Returns nanoseconds.
///
/// # Errors
/// Go's text, `time: invalid duration "<s>"` (or `missing unit`, `unknown unit`).
pub fn parse_go_duration(s: &str) -> Result<i64, String> {
    let invalid = || format!("time: invalid duration {s:?}");
    let (neg, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: i128 = 0;
    while !rest.is_empty() {
        let int_end = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let int_part = &rest[..int_end];
        rest = &rest[int_end..];
        let mut frac_part = "";
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
            frac_part = &r[..end];
            rest = &r[end..];
        }
        if int_part.is_empty() && frac_part.is_empty() {
            return Err(invalid());
        }
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..unit_end];
        rest = &rest[unit_end..];
        let scale: i128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            "" => return Err(format!("time: missing unit in duration {s:?}")),
            other => return Err(format!("time: unknown unit {other:?} in duration {s:?}")),
        };
        let whole: i128 = if int_part.is_empty() {
            0
        } else {
            int_part.parse().map_err(|_| invalid())?
        };
        let mut v = whole.checked_mul(scale).ok_or_else(invalid)?;
        if !frac_part.is_empty() {
            let digits = &frac_part[..frac_part.len().min(18)];
            let f: i128 = digits.parse().map_err(|_| invalid())?;
            v += f * scale / 10_i128.pow(digits.len() as u32);
        }
        total = total.checked_add(v).ok_or_else(invalid)?;
        if total > i128::from(i64::MAX) {
            return Err(invalid());
        }
    }
    let total = i64::try_from(total).map_err(|_| invalid())?;
    Ok(if neg { -total } else { total })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Expected texts from Go's `time` package tests (`durationTests`) and by hand.
    #[test]
    fn formats_like_go() {
        for (nanos, want) in [
            (0, "0s"),
            (1, "1ns"),
            (1_100, "1.1µs"),
            (2_200_000, "2.2ms"),
            (3_300_000_000, "3.3s"),
            (5_000_000_000, "5s"),
            (30_000_000_000, "30s"),
            (90_000_000_000, "1m30s"),
            (4 * 60_000_000_000 + 5_000_000_000, "4m5s"),
            (
                5 * 3_600_000_000_000 + 6 * 60_000_000_000 + 7_001_000_000,
                "5h6m7.001s",
            ),
            (3_600_000_000_000, "1h0m0s"),
            (-1_500_000_000, "-1.5s"),
        ] {
            assert_eq!(format_go_duration(nanos), want, "{nanos}");
        }
    }

    #[test]
    fn parses_like_go() {
        for (text, want) in [
            ("0", 0),
            ("5s", 5_000_000_000),
            ("30s", 30_000_000_000),
            ("1m30s", 90_000_000_000),
            ("1.5h", 5_400_000_000_000),
            ("300ms", 300_000_000),
            ("-1.5s", -1_500_000_000),
            ("1h0m0s", 3_600_000_000_000),
            ("2µs", 2_000),
            (".5s", 500_000_000),
        ] {
            assert_eq!(parse_go_duration(text), Ok(want), "{text}");
        }
        for bad in ["", "5", "s", "1x", "--1s", "1.s5"] {
            assert!(parse_go_duration(bad).is_err(), "{bad}");
        }
        for nanos in [1, 1_100, 5_000_000_000, 90_000_000_000, 18_367_001_000_000] {
            assert_eq!(parse_go_duration(&format_go_duration(nanos)), Ok(nanos));
        }
    }
}
