//! Units at the edges: parsing durations, sizes and rates from the command
//! line, and formatting nanoseconds for people.
//!
//! Internally every time is `u64` nanoseconds; only this module chooses a
//! unit. Parsers are exact (integer arithmetic on the decimal digits), so
//! `1.5ms` is exactly 1,500,000 ns, and their errors state the syntax.

/// A time unit for plain-number inputs and for `--unit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TimeUnit {
    /// Nanoseconds.
    Ns,
    /// Microseconds.
    Us,
    /// Milliseconds.
    Ms,
    /// Seconds.
    S,
}

impl TimeUnit {
    /// Nanoseconds in one of this unit.
    pub fn nanos(self) -> u64 {
        match self {
            TimeUnit::Ns => 1,
            TimeUnit::Us => 1_000,
            TimeUnit::Ms => 1_000_000,
            TimeUnit::S => 1_000_000_000,
        }
    }

    /// The unit's symbol as printed.
    pub fn symbol(self) -> &'static str {
        match self {
            TimeUnit::Ns => "ns",
            TimeUnit::Us => "µs",
            TimeUnit::Ms => "ms",
            TimeUnit::S => "s",
        }
    }

    /// The largest unit in which `ns` is at least 1 (ns for 0).
    pub fn auto(ns: f64) -> TimeUnit {
        if ns >= 1e9 {
            TimeUnit::S
        } else if ns >= 1e6 {
            TimeUnit::Ms
        } else if ns >= 1e3 {
            TimeUnit::Us
        } else {
            TimeUnit::Ns
        }
    }
}

/// A non-negative decimal number split into its digits and the power of ten
/// they are divided by: `12.50` is `(1250, 2)`. Exact, unlike `f64`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decimal {
    /// The digits as an integer.
    pub digits: u128,
    /// How many of them follow the decimal point.
    pub scale: u32,
}

impl Decimal {
    /// Parses `123`, `1.5`, `.5` or `5.`; no sign, no exponent, at most 30 digits.
    pub fn parse(text: &str) -> Option<Decimal> {
        let (int, frac) = match text.split_once('.') {
            Some((i, f)) => (i, f),
            None => (text, ""),
        };
        if int.is_empty() && frac.is_empty() {
            return None;
        }
        if !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
            return None;
        }
        if int.len() + frac.len() > 30 {
            return None;
        }
        let digits = format!("{int}{frac}").parse::<u128>().ok()?;
        Some(Decimal {
            digits,
            scale: frac.len() as u32,
        })
    }

    /// `self × multiplier`, rounded to the nearest integer; `None` past `u64`.
    pub fn times(self, multiplier: u64) -> Option<u64> {
        let product = self.digits.checked_mul(multiplier as u128)?;
        let divisor = 10u128.checked_pow(self.scale)?;
        let rounded = (product + divisor / 2) / divisor;
        u64::try_from(rounded).ok()
    }
}

/// Splits `"500us"` into `("500", "us")`.
fn split_number(text: &str) -> (&str, &str) {
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    (&text[..end], &text[end..])
}

/// Parses a duration such as `500us`, `1.5ms`, `5s`, `2m`, `1h` or `250ns`
/// What a value starting with `-` is: a negative number, or an option
/// given where a value was expected (`--runtime --quiet`).
fn leading_minus(text: &str) -> Option<&'static str> {
    let rest = text.strip_prefix('-')?;
    Some(
        if rest.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
            "is negative"
        } else {
            "is an option, not a value: give the value first"
        },
    )
}

/// into nanoseconds. A bare number is refused: the unit must be said.
pub fn parse_duration(text: &str) -> Result<u64, String> {
    const SYNTAX: &str =
        "expected a number and a unit: ns, us, ms, s, m or h (e.g. 500us, 1ms, 5s, 2m)";
    let text = text.trim();
    if let Some(why) = leading_minus(text) {
        return Err(format!("'{text}' {why}; {SYNTAX}"));
    }
    let (number, unit) = split_number(text);
    let decimal = Decimal::parse(number).ok_or_else(|| format!("'{text}': {SYNTAX}"))?;
    let multiplier: u64 = match unit {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" | "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "" => return Err(format!("'{text}' has no unit; {SYNTAX}")),
        _ => return Err(format!("'{text}': unknown unit '{unit}'; {SYNTAX}")),
    };
    decimal
        .times(multiplier)
        .ok_or_else(|| format!("'{text}' is too large"))
}

/// Parses a size such as `4k`, `1M`, `1G`, `512` (bytes); k/M/G/T are
/// binary (1024-based), as in fio. An optional trailing `B` or `iB` is accepted.
pub fn parse_size(text: &str) -> Result<u64, String> {
    const SYNTAX: &str = "expected bytes with an optional k, M, G or T suffix (e.g. 4k, 1G)";
    let text = text.trim();
    if let Some(why) = leading_minus(text) {
        return Err(format!("'{text}' {why}; {SYNTAX}"));
    }
    let (number, unit) = split_number(text);
    let decimal = Decimal::parse(number).ok_or_else(|| format!("'{text}': {SYNTAX}"))?;
    let unit = unit
        .strip_suffix("iB")
        .or_else(|| unit.strip_suffix('B'))
        .unwrap_or(unit);
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        "t" => 40,
        _ => return Err(format!("'{text}': unknown suffix; {SYNTAX}")),
    };
    decimal
        .times(1u64 << shift)
        .ok_or_else(|| format!("'{text}' is too large"))
}

/// A rate of operations per second.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rate {
    /// Operations per second, > 0.
    pub per_second: f64,
}

impl Rate {
    /// The mean gap between operations, in nanoseconds (at least 1).
    pub fn period_ns(self) -> f64 {
        (1e9 / self.per_second).max(1.0)
    }
}

/// Parses a rate such as `1000/s`, `10k/s`, `1M/s` or `500/ms`.
pub fn parse_rate(text: &str) -> Result<Rate, String> {
    const SYNTAX: &str = "expected COUNT/s with an optional k or M (e.g. 1000/s, 10k/s)";
    let text = text.trim();
    if let Some(why) = leading_minus(text) {
        return Err(format!("'{text}' {why}; {SYNTAX}"));
    }
    let (count, per) = text.split_once('/').ok_or_else(|| {
        // A bare count: the period is what is missing.
        let (number, _) = split_number(text);
        if Decimal::parse(number).is_some() {
            format!("'{text}': a rate needs its period; did you mean {text}/s?")
        } else {
            format!("'{text}': {SYNTAX}")
        }
    })?;
    let (number, suffix) = split_number(count);
    let decimal = Decimal::parse(number).ok_or_else(|| format!("'{text}': {SYNTAX}"))?;
    let multiplier = match suffix {
        "" => 1,
        "k" | "K" => 1_000,
        "M" => 1_000_000,
        _ => return Err(format!("'{text}': unknown suffix '{suffix}'; {SYNTAX}")),
    };
    let per_ns = match per {
        "s" | "sec" => 1e9,
        "ms" => 1e6,
        "m" | "min" => 60e9,
        _ => return Err(format!("'{text}': unknown period '/{per}'; {SYNTAX}")),
    };
    let count = decimal.digits as f64 / 10f64.powi(decimal.scale as i32) * multiplier as f64;
    if count <= 0.0 {
        return Err(format!("'{text}' is zero; a rate must be positive"));
    }
    let per_second = count * 1e9 / per_ns;
    if per_second > 1e9 {
        return Err(format!("'{text}' is above 1G/s, which no probe can issue"));
    }
    Ok(Rate { per_second })
}

/// Formats nanoseconds with an automatic unit and about four significant
/// digits: `43.9 µs`, `2.551 ms`, `110 ns`; a difference below zero in
/// the unit of its size: `-5.200 µs`.
pub fn format_ns(ns: f64) -> String {
    if ns < 0.0 {
        return format!("-{}", format_ns(-ns));
    }
    format_in(ns, TimeUnit::auto(ns))
}

/// Formats nanoseconds in the given unit with about four significant digits.
pub fn format_in(ns: f64, unit: TimeUnit) -> String {
    let value = ns / unit.nanos() as f64;
    let decimals = if unit == TimeUnit::Ns || value >= 1000.0 {
        0
    } else if value >= 100.0 {
        1
    } else if value >= 10.0 {
        2
    } else {
        3
    };
    format!("{value:.decimals$} {}", unit.symbol())
}

/// Formats a duration in nanoseconds compactly for names and parameters:
/// `1ms`, `500us`, `10s`, `1.5ms`.
pub fn format_duration_compact(ns: u64) -> String {
    for (unit, symbol) in [
        (3_600_000_000_000u64, "h"),
        (60_000_000_000, "m"),
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
    ] {
        if ns >= unit {
            if ns.is_multiple_of(unit) {
                return format!("{}{symbol}", ns / unit);
            }
            if symbol != "h" && symbol != "m" {
                return format!("{}{symbol}", ns as f64 / unit as f64);
            }
        }
    }
    format!("{ns}ns")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_negative_difference_takes_the_unit_of_its_size() {
        assert_eq!(format_ns(-5_200.0), "-5.200 µs");
        assert_eq!(format_ns(5_200.0), "5.200 µs");
        assert_eq!(format_ns(-12.0), "-12 ns");
    }

    #[test]
    fn durations_parse_exactly() {
        assert_eq!(parse_duration("500us"), Ok(500_000));
        assert_eq!(parse_duration("1.5ms"), Ok(1_500_000));
        assert_eq!(parse_duration("5s"), Ok(5_000_000_000));
        assert_eq!(parse_duration("2m"), Ok(120_000_000_000));
        assert_eq!(parse_duration("250ns"), Ok(250));
        assert_eq!(parse_duration("1h"), Ok(3_600_000_000_000));
        assert_eq!(parse_duration("0s"), Ok(0));
    }

    #[test]
    fn bad_durations_say_the_syntax() {
        for bad in [
            "5",
            "-1s",
            "five",
            "5 parsecs",
            "1e3s",
            "",
            "99999999999999999999h",
        ] {
            let err = parse_duration(bad).unwrap_err();
            assert!(!err.is_empty(), "{bad}");
        }
        assert!(parse_duration("5").unwrap_err().contains("no unit"));
        assert!(parse_duration("-1s").unwrap_err().contains("negative"));
        assert!(
            parse_duration("--quiet")
                .unwrap_err()
                .contains("is an option, not a value")
        );
        assert!(parse_size("-4k").unwrap_err().contains("negative"));
        assert!(parse_rate("-10/s").unwrap_err().contains("negative"));
    }

    #[test]
    fn sizes_are_binary() {
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("512"), Ok(512));
        assert_eq!(parse_size("1MiB"), Ok(1 << 20));
        assert_eq!(parse_size("1.5k"), Ok(1536));
        assert!(parse_size("4x").is_err());
        assert!(parse_size("-4k").is_err());
    }

    #[test]
    fn rates_parse() {
        assert_eq!(parse_rate("1000/s").unwrap().per_second, 1000.0);
        assert_eq!(parse_rate("10k/s").unwrap().per_second, 10_000.0);
        assert_eq!(parse_rate("1/ms").unwrap().per_second, 1000.0);
        assert_eq!(parse_rate("1000/s").unwrap().period_ns(), 1e6);
        for bad in ["1000", "0/s", "10x/s", "5/fortnight", "-5/s"] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
        assert!(parse_rate("3k").unwrap_err().contains("did you mean 3k/s?"));
        assert!(parse_rate("fast").unwrap_err().contains("expected COUNT/s"));
    }

    #[test]
    fn formatting_picks_units() {
        assert_eq!(format_ns(110.0), "110 ns");
        assert_eq!(format_ns(43_896.0), "43.90 µs");
        assert_eq!(format_ns(2_550_834.0), "2.551 ms");
        assert_eq!(format_ns(307_118.0), "307.1 µs");
        assert_eq!(format_duration_compact(1_000_000), "1ms");
        assert_eq!(format_duration_compact(1_500_000), "1.5ms");
        assert_eq!(format_duration_compact(120_000_000_000), "2m");
        assert_eq!(format_duration_compact(999), "999ns");
    }
}
