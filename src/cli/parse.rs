//! The value parsers of the command line: durations, rates, labels,
//! times and lists, each with an error that says the expected syntax.

use crate::analyze::Percentile;
use crate::host::cpulist::parse_cpu_list;
use crate::units::{self, Rate};

pub(super) fn rate(text: &str) -> Result<Rate, String> {
    units::parse_rate(text)
}

pub(super) fn duration(text: &str) -> Result<u64, String> {
    units::parse_duration(text)
}

/// A `--label` pair.
#[derive(Clone, Debug)]
pub struct Label(pub String, pub String);

pub(super) fn label(text: &str) -> Result<Label, String> {
    let expected = "expected KEY=VALUE, e.g. host=a1 or zone=eu-1 (KEY: letters, digits \
                    and _, not starting with a digit; VALUE not empty)";
    let (key, value) = text
        .split_once('=')
        .ok_or_else(|| format!("'{}': {expected}", text.escape_debug()))?;
    let key_ok = key.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !key_ok || value.is_empty() {
        return Err(format!("'{}': {expected}", text.escape_debug()));
    }
    crate::model::names::check_name("the key", key)
        .and_then(|()| crate::model::names::check_name(&format!("the value of {key}"), value))?;
    Ok(Label(key.into(), value.into()))
}

/// Unix seconds with up to 9 decimals (`1795600800`, `1795600800.25`),
/// exactly, as ns.
pub(super) fn unix_seconds_ns(text: &str) -> Option<u128> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(fraction) || fraction.len() > 9 {
        return None;
    }
    let nanos: u128 = format!("{fraction:0<9}").parse().ok()?;
    Some(whole.parse::<u128>().ok()?.checked_mul(1_000_000_000)? + nanos)
}

/// A `--start-at` time, ns since the Unix epoch: strict RFC 3339 with its
/// offset (`2026-11-25T10:00:00Z`, `2026-11-25T11:00:00+01:00`, fractions
/// to the ns) or Unix seconds, from now to a day ahead. A leap second
/// (`:60`) is refused: the wall clock Linux keeps (and `--start-at` waits
/// on) never reads it.
pub(super) fn start_at(text: &str) -> Result<u128, String> {
    let unix_ns = match unix_seconds_ns(text) {
        Some(ns) => ns,
        None => rfc3339_ns(text).map_err(|e| {
            format!(
                "'{text}': {e}; expected an RFC 3339 time with its offset, such as \
                 2026-11-25T10:00:00Z (UTC) or 2026-11-25T11:00:00+01:00, or Unix \
                 seconds such as 1795600800"
            )
        })?,
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(|_| "the system clock is before 1970".to_string())?
        .as_nanos();
    const DAY_NS: u128 = 86_400 * 1_000_000_000;
    let show = |ns: u128| {
        humantime::format_rfc3339_millis(
            std::time::UNIX_EPOCH
                + std::time::Duration::from_nanos(ns.min(u64::MAX as u128) as u64),
        )
        .to_string()
    };
    if unix_ns < now {
        return Err(format!(
            "{} is in the past (it is now {}): give a time still to come on every host",
            show(unix_ns),
            show(now)
        ));
    }
    if unix_ns > now + DAY_NS {
        return Err(format!(
            "{} is more than a day ahead (it is now {}): is its offset right?",
            show(unix_ns),
            show(now)
        ));
    }
    Ok(unix_ns)
}

/// Strict RFC 3339 (`date-time` of section 5.6): `YYYY-MM-DDTHH:MM:SS`,
/// an optional fraction (up to 9 digits), then `Z` or `±HH:MM`; as ns
/// since the Unix epoch.
fn rfc3339_ns(text: &str) -> Result<u128, String> {
    let b = text.as_bytes();
    let number = |range: std::ops::Range<usize>| -> Option<u32> {
        let part = b.get(range)?;
        part.iter()
            .all(u8::is_ascii_digit)
            .then(|| part.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0')))
    };
    let at = |i: usize, c: &[u8]| b.get(i).is_some_and(|x| c.contains(x));
    let shape = "not a date and time as YYYY-MM-DDTHH:MM:SS";
    if !(at(4, b"-") && at(7, b"-") && at(10, b"Tt") && at(13, b":") && at(16, b":")) {
        return Err(shape.into());
    }
    let field = |r| number(r).ok_or_else(|| shape.to_string());
    let (year, month, day) = (field(0..4)?, field(5..7)?, field(8..10)?);
    let (hour, minute, second) = (field(11..13)?, field(14..16)?, field(17..19)?);
    let mut i = 19;
    let mut nanos = 0u32;
    if at(i, b".") {
        let digits = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 || digits > 9 {
            return Err("a fraction of a second needs 1 to 9 digits".into());
        }
        nanos = number(i + 1..i + 1 + digits).unwrap_or(0) * 10u32.pow(9 - digits as u32);
        i += 1 + digits;
    }
    let offset_s: i64 = match b.get(i..) {
        Some(b"Z" | b"z") => 0,
        Some([sign @ (b'+' | b'-'), ..]) if b.len() == i + 6 && at(i + 3, b":") => {
            let (h, m) = (field(i + 1..i + 3)?, field(i + 4..i + 6)?);
            if h > 23 || m > 59 {
                return Err(format!("offset {}: out of range", &text[i..]));
            }
            let s = i64::from(h * 3600 + m * 60);
            if *sign == b'-' { -s } else { s }
        }
        Some([]) => {
            return Err(
                "no UTC offset: add Z for UTC, or the offset the time is in \
                        (e.g. +01:00); cauda does not guess a time zone"
                    .into(),
            );
        }
        _ => return Err(format!("'{}' is not an offset (Z or ±HH:MM)", &text[i..])),
    };
    let leap_year = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let month_days = [
        31,
        if leap_year { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&month) || day == 0 || day > month_days[month as usize - 1] {
        return Err(format!("no such date {}", &text[..10]));
    }
    if second == 60 {
        return Err(
            "a leap second (:60): the system's wall clock never reads it, so cauda \
                    cannot start at it; give :59 or the next minute's :00"
                .into(),
        );
    }
    if hour > 23 || minute > 59 || second > 59 {
        return Err(format!("no such time {}", &text[11..19]));
    }
    let days = days_from_civil(i64::from(year), month, day);
    let seconds = days * 86_400 + i64::from(hour * 3600 + minute * 60 + second) - offset_s;
    let seconds = u128::try_from(seconds).map_err(|_| "before 1970".to_string())?;
    Ok(seconds * 1_000_000_000 + u128::from(nanos))
}

/// Days from 1970-01-01 to a date of the proleptic Gregorian calendar
/// (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A parsed CPU list (a newtype so clap treats it as one value).
#[derive(Clone, Debug)]
pub struct CpuList(pub Vec<usize>);

pub(super) fn cpu_list(text: &str) -> Result<CpuList, String> {
    parse_cpu_list(text).map(CpuList)
}

/// A parsed list of durations in ns (a newtype so clap treats it as one value).
#[derive(Clone, Debug)]
pub struct DurationList(pub Vec<u64>);

pub(super) fn duration_list(text: &str) -> Result<DurationList, String> {
    text.split(',')
        .map(units::parse_duration)
        .collect::<Result<_, _>>()
        .map(DurationList)
}

/// A parsed `--percentiles` list (a newtype so clap treats it as one value).
#[derive(Clone, Debug)]
pub struct PercentileList(pub Vec<Percentile>);

pub(super) fn percentile_list(text: &str) -> Result<PercentileList, String> {
    Percentile::parse_list(text).map(PercentileList)
}

/// A message size in bytes (`64`, `4k`) that fits a u32.
pub(super) fn message_size(text: &str) -> Result<u32, String> {
    let bytes = units::parse_size(text)?;
    u32::try_from(bytes).map_err(|_| format!("'{text}' is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_3339_times_need_their_offset_and_are_read_exactly() {
        let ns = |s| rfc3339_ns(s).map(|n| (n / 1_000_000_000) as u64);
        assert_eq!(ns("1970-01-01T00:00:00Z"), Ok(0));
        assert_eq!(ns("2026-11-25T10:00:00Z"), Ok(1_795_600_800));
        assert_eq!(ns("2026-11-25t11:00:00+01:00"), Ok(1_795_600_800));
        assert_eq!(ns("2026-11-25T05:30:00-04:30"), Ok(1_795_600_800));
        assert_eq!(ns("2024-02-29T00:00:00Z"), Ok(1_709_164_800));
        assert_eq!(
            rfc3339_ns("2026-11-25T10:00:00.25Z"),
            Ok(1_795_600_800_250_000_000)
        );
        let err = |s| rfc3339_ns(s).unwrap_err();
        assert!(err("2026-11-25T10:00:00").contains("no UTC offset"));
        assert!(err("2026-11-25T09:33:60Z").contains("leap second"));
        assert!(err("2026-02-29T00:00:00Z").contains("no such date"));
        assert!(err("2026-11-25T24:00:00Z").contains("no such time"));
        assert!(err("2026-11-25T10:00:00+1:00").contains("not an offset"));
        assert!(err("2026-11-25T10:00:00.Z").contains("fraction"));
        assert!(err("2026-11-25 10:00").contains("YYYY-MM-DDTHH:MM:SS"));
        assert!(err("2026-11-25T10:00:00Z ").contains("not an offset"));
    }
}
