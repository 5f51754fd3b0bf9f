//! fio's outputs: `--output-format=json` / `json+`, per-I/O latency logs
//! (`write_lat_log` with `log_avg_msec=0`) and histogram logs
//! (`write_hist_log`).
//!
//! - json+ `clat_ns.bins` (bucket midpoint → count) become a histogram at
//!   fio's own resolution; plain json keeps only the percentiles fio
//!   printed, and the series says so. `slat`/`lat` carry only fio's
//!   count/min/max/mean/stddev.
//! - A latency log line is `time_ms, value_ns, ddir, bs[, offset][, prio]`;
//!   values are cut into intervals by their time. An averaged log
//!   (`log_avg_msec>0`, recognisable by `bs` = 0) is refused: averaging
//!   destroyed the tail it would be read for.
//! - A histogram log line is `time_ms, ddir, bs, bin0 … bin1855`, counts per
//!   interval; bin i < 128 is i ns, above that fio's log-linear buckets
//!   (6 bits of sub-bucket), taken at their midpoint as fio does.

use std::io::BufRead;

use anyhow::Result;
use serde_json::Value;

use super::head::Head;
use super::options::{Imported, ReadOptions};
use super::reader::{Input, whole_text};
use crate::error::input_error;
use crate::model::{IntervalRecord, MeasuredFrom, Percentiles, Reported, Series};
use crate::record::LatencyHistogram;

/// Whether the first bytes are fio's JSON: its version key.
pub(super) fn detect_json(head: &Head) -> bool {
    head.text.contains("\"fio version\"")
}

/// The table's reader of fio's JSON.
pub(super) fn import_json(source: &str, input: Input, _: &ReadOptions) -> Result<Imported> {
    let text = whole_text(source, input)?;
    Ok(Imported::of(read_json(source, &text)?))
}

/// How many fields the first line has when every one is a number (decimal
/// or `0x` hex), as in fio's logs.
pub(super) fn numeric_fields(head: &Head) -> Option<usize> {
    let first = head.lines.first()?;
    let fields: Vec<&str> = first.split(',').map(str::trim).collect();
    let numeric =
        |f: &&str| !f.is_empty() && (f.bytes().all(|b| b.is_ascii_digit()) || f.starts_with("0x"));
    fields.iter().all(numeric).then_some(fields.len())
}

/// Whether the first bytes are a histogram log's: numeric lines of
/// `time, ddir, bs` and the 1856 bins, or a first line that long cut off.
pub(super) fn detect_hist_log(head: &Head) -> bool {
    numeric_fields(head)
        .is_some_and(|n| n == HIST_BINS + 3 || (n > 1000 && !head.text.contains('\n')))
}

/// The table's reader of fio's histogram logs.
pub(super) fn import_hist_log(source: &str, input: Input, _: &ReadOptions) -> Result<Imported> {
    Ok(Imported::of(read_hist_log(
        source,
        input.with_line_limit(),
    )?))
}

/// Bins per fio histogram row (FIO_IO_U_PLAT_GROUP_NR × FIO_IO_U_PLAT_VAL).
pub const HIST_BINS: usize = 1856;

/// The value fio reports for a histogram bin (its midpoint), in ns.
pub fn bin_value(index: usize) -> u64 {
    const BITS: u32 = 6;
    const VAL: usize = 1 << BITS;
    if index < VAL << 1 {
        return index as u64;
    }
    let error_bits = (index >> BITS) as u32 - 1;
    let base = 1u64 << (error_bits + BITS);
    let k = (index % VAL) as u64;
    base + k * (1 << error_bits) + (1u64 << error_bits) / 2
}

pub(super) fn direction_name(ddir: u64) -> String {
    match ddir {
        0 => "read".into(),
        1 => "write".into(),
        2 => "trim".into(),
        3 => "sync".into(),
        other => format!("ddir{other}"),
    }
}

/// `job_clat.1.log` → `clat`; the metric fio put in the file name.
pub fn metric_from_name(source: &str) -> Option<&'static str> {
    let name = std::path::Path::new(source).file_name()?.to_str()?;
    ["_clat", "_slat", "_lat"]
        .into_iter()
        .find(|m| name.contains(m))
        .map(|m| &m[1..])
}

pub(super) fn tag(direction: &str, metric: Option<&str>) -> String {
    match metric {
        Some(m) => format!("{direction}.{m}"),
        None => direction.to_string(),
    }
}

/// Reads fio's JSON or JSON+ output.
pub fn read_json(source: &str, text: &str) -> Result<Vec<Series>> {
    // fio may print notes before the JSON document.
    let start = text
        .find("\n{")
        .map(|i| i + 1)
        .filter(|_| !text.starts_with('{'))
        .unwrap_or(0);
    let doc: Value = serde_json::from_str(&text[start..]).map_err(|e| {
        input_error(format!(
            "{source}:{}:{}: not valid fio JSON ({e})",
            e.line() + text[..start].lines().count(),
            e.column()
        ))
    })?;
    let jobs = doc
        .get("jobs")
        .and_then(Value::as_array)
        .ok_or_else(|| input_error(format!("{source}: fio JSON without a \"jobs\" array")))?;
    let many = jobs.len() > 1;
    let mut out = Vec::new();
    for (j, job) in jobs.iter().enumerate() {
        let name = job.get("jobname").and_then(Value::as_str).unwrap_or("job");
        let prefix = if many {
            format!("{name}#{j}/")
        } else {
            String::new()
        };
        for direction in ["read", "write", "trim"] {
            let Some(dir) = job.get(direction) else {
                continue;
            };
            for metric in ["clat", "slat", "lat"] {
                let Some(stats) = dir.get(format!("{metric}_ns")) else {
                    continue;
                };
                let n = stats.get("N").and_then(Value::as_u64).unwrap_or(0);
                if n == 0 {
                    continue;
                }
                let tag = format!("{prefix}{direction}.{metric}");
                out.push(series_from_stats(source, &tag, stats, n)?);
            }
        }
    }
    if out.is_empty() {
        return Err(input_error(format!(
            "{source}: fio JSON with no completed I/O in any job"
        )));
    }
    Ok(out)
}

fn series_from_stats(source: &str, tag: &str, stats: &Value, n: u64) -> Result<Series> {
    let int = |key: &str| stats.get(key).and_then(Value::as_u64);
    let float = |key: &str| stats.get(key).and_then(Value::as_f64);
    let mut series = Series::new(tag.to_string(), MeasuredFrom::Unknown);
    if let Some(bins) = stats.get("bins").and_then(Value::as_object) {
        let mut hist = LatencyHistogram::new();
        for (value, count) in bins {
            let v = value.parse::<u64>().map_err(|_| {
                input_error(format!(
                    "{source}: {tag}: bin '{value}' is not an integer nanosecond value"
                ))
            })?;
            let c = count.as_u64().ok_or_else(|| {
                input_error(format!(
                    "{source}: {tag}: bin {value} has a count that is not an integer"
                ))
            })?;
            hist.record_n(v, c);
        }
        // fio's own min/max/mean are exact; the bins are bucket midpoints.
        if let (Some(min), Some(max), Some(mean)) = (int("min"), int("max"), float("mean")) {
            hist.pin_extremes(min, max, Some(mean));
        }
        let record = IntervalRecord::from_histogram(0, 0, &hist);
        series.intervals.push(record);
        return Ok(series);
    }
    let mut percentiles = Vec::new();
    if let Some(map) = stats.get("percentile").and_then(Value::as_object) {
        for (key, value) in map {
            let p = crate::analyze::Percentile::parse(key)
                .map_err(|e| input_error(format!("{source}: {tag}: percentile key {e}")))?;
            let v = value.as_u64().ok_or_else(|| {
                input_error(format!(
                    "{source}: {tag}: percentile {key} is not an integer"
                ))
            })?;
            percentiles.push((p.key, v));
        }
    }
    series.reported = Some(Reported {
        count: n,
        min: int("min"),
        max: int("max"),
        mean: float("mean"),
        stddev: float("stddev"),
        percentiles: Percentiles(percentiles),
    });
    Ok(series)
}

/// Splits a fio log line into trimmed fields without allocating.
pub(super) fn fields(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    line.split(|&b| b == b',').map(|f| f.trim_ascii())
}

fn parse_u64(field: &[u8]) -> Option<u64> {
    if field.is_empty() || field.len() > 20 {
        return None;
    }
    let mut v: u64 = 0;
    for &b in field {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((b - b'0') as u64)?;
    }
    Some(v)
}

/// Reads a histogram log (`write_hist_log`), one series per direction; each
/// row is the interval ending at its time.
pub fn read_hist_log(source: &str, reader: impl BufRead) -> Result<Vec<Series>> {
    let metric = metric_from_name(source);
    let mut out: Vec<(u64, Series, u64)> = Vec::new();
    for (index, line) in reader.split(b'\n').enumerate() {
        let line_no = index + 1;
        let line =
            line.map_err(|e| input_error(format!("{source}:{line_no}: cannot read ({e})")))?;
        let text = line.trim_ascii();
        if text.is_empty() {
            continue;
        }
        let values: Vec<u64> = fields(text)
            .enumerate()
            .map(|(i, f)| {
                parse_u64(f).ok_or_else(|| {
                    input_error(format!(
                        "{source}:{line_no}: field {} '{}' is not a non-negative integer",
                        i + 1,
                        String::from_utf8_lossy(f)
                    ))
                })
            })
            .collect::<Result<_>>()?;
        if values.len() != HIST_BINS + 3 {
            return Err(input_error(format!(
                "{source}:{line_no}: {} fields; expected 'time_ms, ddir, bs' and {HIST_BINS} bin counts",
                values.len()
            )));
        }
        let (time_ms, ddir) = (values[0], values[1]);
        let mut hist = LatencyHistogram::new();
        for (bin, &count) in values[3..].iter().enumerate() {
            hist.record_n(bin_value(bin), count);
        }
        let entry = match out.iter_mut().find(|(d, _, _)| *d == ddir) {
            Some(e) => e,
            None => {
                out.push((
                    ddir,
                    Series::new(tag(&direction_name(ddir), metric), MeasuredFrom::Unknown),
                    0,
                ));
                out.last_mut().expect("just pushed")
            }
        };
        let start = entry.2;
        let end = time_ms.saturating_mul(1_000_000);
        entry.1.intervals.push(IntervalRecord::from_histogram(
            start,
            end.saturating_sub(start),
            &hist,
        ));
        entry.2 = end;
    }
    if out.is_empty() {
        return Err(input_error(format!("{source}: no histogram rows")));
    }
    out.sort_by_key(|(d, _, _)| *d);
    Ok(out.into_iter().map(|(_, s, _)| s).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bin_values_follow_fio() {
        assert_eq!(bin_value(0), 0);
        assert_eq!(bin_value(127), 127);
        // i = 128: error_bits 1, base 128, width 2 → midpoint 129.
        assert_eq!(bin_value(128), 129);
        assert_eq!(bin_value(191), 128 + 63 * 2 + 1);
        // The last bin is near 2^34 ns (~17 s): fio's saturation point.
        assert!(bin_value(HIST_BINS - 1) > 16_000_000_000);
    }
}
