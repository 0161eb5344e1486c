//! Kubernetes resource quantities (`100m`, `1.5`, `500Mi`, `1e3`, `2k`) parsed into integers.
//!
//! Follows `k8s.io/apimachinery/pkg/api/resource` (`quantity.go`): a quantity is a signed decimal
//! number followed by a binary-SI suffix (`Ki Mi Gi Ti Pi Ei`), a decimal-SI suffix
//! (`n u m "" k M G T P E`) or a decimal exponent (`e3`, `E-2`). [`value`] is Go's
//! `Quantity.Value()` and [`milli_value`] is `Quantity.MilliValue()`: both round *up* (away from
//! zero) to the next integer, so `0.1` is a value of 1 and `0.5m` is a milli-value of 1.

use thiserror::Error;

/// A quantity string that is not a Kubernetes quantity, or does not fit in an `i64`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum QuantityError {
    /// The text does not follow the quantity grammar.
    #[error(
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {0:?}"
    )]
    Syntax(String),
    /// A negative quantity where only non-negative ones make sense (requests, allocatable).
    #[error("quantity {0:?} must be non-negative")]
    Negative(String),
    /// The value does not fit in a signed 64-bit integer at the requested scale.
    #[error("quantity {0:?} is too large")]
    Overflow(String),
}

/// Parsed form: `mantissa × 10^exp10 × 2^exp2`.
struct Parsed {
    mantissa: i128,
    exp10: i32,
    exp2: i32,
}

fn parse(text: &str) -> Result<Parsed, QuantityError> {
    let syntax = || QuantityError::Syntax(text.to_string());
    let s = text.trim();
    if s.is_empty() {
        return Err(syntax());
    }
    let bytes = s.as_bytes();
    let mut i = 0;
    let mut negative = false;
    if bytes[0] == b'+' || bytes[0] == b'-' {
        negative = bytes[0] == b'-';
        i = 1;
    }
    let mut mantissa: i128 = 0;
    let mut exp10: i32 = 0;
    let mut digits = 0;
    let mut seen_dot = false;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_digit() {
            digits += 1;
            if mantissa < 10i128.pow(36) {
                mantissa = mantissa * 10 + i128::from(c - b'0');
                if seen_dot {
                    exp10 -= 1;
                }
            } else if !seen_dot {
                // Too many significant digits: keep the magnitude, drop the precision.
                exp10 += 1;
            }
        } else if c == b'.' && !seen_dot {
            seen_dot = true;
        } else {
            break;
        }
        i += 1;
    }
    if digits == 0 {
        return Err(syntax());
    }
    let suffix = &s[i..];
    let mut exp2 = 0;
    match suffix {
        "" => {}
        "Ki" => exp2 = 10,
        "Mi" => exp2 = 20,
        "Gi" => exp2 = 30,
        "Ti" => exp2 = 40,
        "Pi" => exp2 = 50,
        "Ei" => exp2 = 60,
        "n" => exp10 -= 9,
        "u" => exp10 -= 6,
        "m" => exp10 -= 3,
        "k" => exp10 += 3,
        "M" => exp10 += 6,
        "G" => exp10 += 9,
        "T" => exp10 += 12,
        "P" => exp10 += 15,
        "E" => exp10 += 18,
        _ => {
            let rest = suffix
                .strip_prefix('e')
                .or_else(|| suffix.strip_prefix('E'))
                .ok_or_else(syntax)?;
            let e: i32 = rest.parse().map_err(|_| syntax())?;
            if rest.is_empty() || !(-1000..=1000).contains(&e) {
                return Err(syntax());
            }
            exp10 += e;
        }
    }
    if negative {
        mantissa = -mantissa;
    }
    Ok(Parsed {
        mantissa,
        exp10,
        exp2,
    })
}

/// `ceil(|x|)` with the sign of `x` for `num / den`, `den > 0` (Go's `RoundUp` away from zero).
fn div_away_from_zero(num: i128, den: i128) -> i128 {
    let q = num / den;
    if num % den != 0 {
        if num > 0 { q + 1 } else { q - 1 }
    } else {
        q
    }
}

fn scaled(text: &str, extra_exp10: i32) -> Result<i64, QuantityError> {
    let overflow = || QuantityError::Overflow(text.to_string());
    let p = parse(text)?;
    if p.mantissa == 0 {
        return Ok(0);
    }
    let mut num = p.mantissa;
    num = num.checked_mul(1i128 << p.exp2).ok_or_else(overflow)?;
    let e = p.exp10 + extra_exp10;
    let v = if e >= 0 {
        if e > 38 {
            return Err(overflow());
        }
        num.checked_mul(10i128.pow(e as u32)).ok_or_else(overflow)?
    } else if -e > 38 {
        // Smaller than 10^-38 times the mantissa: rounds up to one unit.
        num.signum()
    } else {
        div_away_from_zero(num, 10i128.pow((-e) as u32))
    };
    i64::try_from(v).map_err(|_| overflow())
}

/// Go's `Quantity.Value()`: the quantity rounded up to an integer (bytes, counts).
///
/// # Errors
/// [`QuantityError`] for malformed text or values outside `i64`.
pub fn value(text: &str) -> Result<i64, QuantityError> {
    scaled(text, 0)
}

/// Go's `Quantity.MilliValue()`: the quantity × 1000, rounded up (millicores for `cpu`).
///
/// # Errors
/// [`QuantityError`] for malformed text or values outside `i64`.
pub fn milli_value(text: &str) -> Result<i64, QuantityError> {
    scaled(text, 3)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn values_follow_apimachinery() {
        assert_eq!(milli_value("100m").unwrap(), 100);
        assert_eq!(milli_value("1").unwrap(), 1000);
        assert_eq!(milli_value("1.5").unwrap(), 1500);
        assert_eq!(milli_value("0.5m").unwrap(), 1);
        assert_eq!(value("500Mi").unwrap(), 500 * 1024 * 1024);
        assert_eq!(value("32Gi").unwrap(), 32 * 1024 * 1024 * 1024);
        assert_eq!(value("1k").unwrap(), 1000);
        assert_eq!(value("1e3").unwrap(), 1000);
        assert_eq!(value("1E3").unwrap(), 1000);
        assert_eq!(value("0.1").unwrap(), 1);
        assert_eq!(value("110").unwrap(), 110);
        assert_eq!(value("1.5Gi").unwrap(), 1610612736);
        assert_eq!(value("+5").unwrap(), 5);
        assert_eq!(value("-5").unwrap(), -5);
        assert_eq!(value(".5").unwrap(), 1);
        assert_eq!(value("0").unwrap(), 0);
        assert_eq!(milli_value("2.0005").unwrap(), 2001);
    }

    #[test]
    fn malformed_quantities_are_errors() {
        for bad in ["", "abc", "1Q", "1..2", "m", "1e", "1ee3", "1 Gi"] {
            assert!(value(bad).is_err(), "{bad:?} should be rejected");
        }
        assert!(matches!(
            value("99999999999Ei"),
            Err(QuantityError::Overflow(_))
        ));
    }
}
