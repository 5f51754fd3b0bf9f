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

/// A `--start-at` time, ns since the Unix epoch: RFC 3339 in UTC
/// (`2026-11-25T10:00:00Z`, fractions allowed) or Unix seconds, from now
/// to a day ahead.
pub(super) fn start_at(text: &str) -> Result<u128, String> {
    let unix_ns = match unix_seconds_ns(text) {
        Some(ns) => ns,
        None => humantime::parse_rfc3339_weak(text.trim_end_matches('Z'))
            .map_err(|e| {
                format!(
                    "'{text}': {e}; expected an RFC 3339 time in UTC such as \
                     2026-11-25T10:00:00Z, or Unix seconds such as 1795600800"
                )
            })?
            .duration_since(std::time::UNIX_EPOCH)
            .map_err(|_| format!("'{text}': before 1970"))?
            .as_nanos(),
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
            "{} is more than a day ahead (it is now {}): is it in UTC?",
            show(unix_ns),
            show(now)
        ));
    }
    Ok(unix_ns)
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
