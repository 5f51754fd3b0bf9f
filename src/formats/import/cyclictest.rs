//! cyclictest's histograms: the `-h N` text output (one row per µs bucket,
//! one column per thread, then `# Min/Avg/Max Latencies`, `# Histogram
//! Overflows` footers) and `--json` (`thread.K.histogram`).
//!
//! One series per thread (`thread0`, …). A bucket b holds wake-ups of b to
//! b+1 µs (cyclictest truncates); it is recorded at b µs. Samples past the
//! histogram's range (overflows) are known only to be at least N µs: they
//! are recorded at N µs, while the thread's max stays cyclictest's exact max.

use std::io::BufRead;

use anyhow::Result;
use serde_json::Value;

use super::head::Head;
use super::options::{Imported, ReadOptions};
use super::reader::{Input, whole_text};
use crate::error::input_error;
use crate::model::{IntervalRecord, MeasuredFrom, Series};
use crate::record::LatencyHistogram;
use crate::record::histogram::MAX_VALUES;

/// Whether the first bytes are cyclictest's JSON: an object with its
/// version key, or with threads and no `schema` (a run file has one).
pub(super) fn detect_json(head: &Head) -> bool {
    let text = head.text;
    head.trimmed.starts_with('{')
        && (text.contains("\"rt_test_version")
            || (text.contains("\"thread\"") && !text.contains("\"schema\"")))
}

/// The table's reader of cyclictest's JSON.
pub(super) fn import_json(source: &str, input: Input, _: &ReadOptions) -> Result<Imported> {
    let text = whole_text(source, input)?;
    Ok(Imported::of(read_json(source, &text)?))
}

/// Whether the first bytes are cyclictest's text histogram (`# Histogram`).
pub(super) fn detect_text(head: &Head) -> bool {
    head.lines.contains(&"# Histogram")
}

/// The table's reader of cyclictest's text histogram.
pub(super) fn import_text(source: &str, input: Input, _: &ReadOptions) -> Result<Imported> {
    Ok(Imported::of(read_text(source, input.with_line_limit())?))
}

/// Microseconds to nanoseconds; an absurd value saturates (and is then
/// clamped and counted by the histogram) rather than wrapping.
fn us(micros: u64) -> u64 {
    micros.saturating_mul(1_000)
}

/// One series per thread; `mins`, `maxs` and `avgs` are cyclictest's
/// footer figures in units of `unit_ns` (1,000 normally, 1 with `-N`).
fn finish(
    hists: Vec<LatencyHistogram>,
    mins: &[u64],
    maxs: &[u64],
    avgs: &[f64],
    unit_ns: u64,
) -> Vec<Series> {
    hists
        .into_iter()
        .enumerate()
        .map(|(t, mut hist)| {
            let (low, high) = (hist.stats().min, hist.stats().max);
            let min = mins.get(t).map_or(low, |&min| min.saturating_mul(unit_ns));
            let max = maxs
                .get(t)
                .map_or(high, |&max| high.max(max.saturating_mul(unit_ns)));
            let mean = avgs.get(t).map(|&avg| avg * unit_ns as f64);
            hist.pin_extremes(min, max, mean);
            let record = IntervalRecord::from_histogram(0, 0, &hist);
            let mut series = Series::new(format!("thread{t}"), MeasuredFrom::IntendedStart);
            series.intervals.push(record);
            series
        })
        .collect()
}

fn footer_numbers(text: &str) -> Vec<f64> {
    text.split_whitespace()
        .filter_map(|w| w.parse::<f64>().ok())
        .collect()
}

/// Reads `cyclictest -h N` output.
pub fn read_text(source: &str, reader: impl BufRead) -> Result<Vec<Series>> {
    let mut hists: Vec<LatencyHistogram> = Vec::new();
    let (mut mins, mut maxs, mut avgs, mut overflows) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut buckets = 0u64;
    for (index, line) in reader.lines().enumerate() {
        let line_no = index + 1;
        let line =
            line.map_err(|e| input_error(format!("{source}:{line_no}: cannot read ({e})")))?;
        let text = line.trim();
        if let Some(comment) = text.strip_prefix('#') {
            let comment = comment.trim();
            let numbers = |prefix: &str| comment.strip_prefix(prefix).map(footer_numbers);
            if let Some(v) = numbers("Min Latencies:") {
                mins = v.into_iter().map(|x| x as u64).collect();
            } else if let Some(v) = numbers("Max Latencies:") {
                maxs = v.into_iter().map(|x| x as u64).collect();
            } else if let Some(v) = numbers("Avg Latencies:") {
                avgs = v;
            } else if let Some(v) = numbers("Histogram Overflows:") {
                overflows = v.into_iter().map(|x| x as u64).collect();
            }
            continue;
        }
        if text.is_empty() {
            continue;
        }
        let mut parts = text.split_whitespace();
        let bucket = parts
            .next()
            .and_then(|b| b.parse::<u64>().ok())
            .ok_or_else(|| {
                input_error(format!(
                    "{source}:{line_no}: expected 'BUCKET_US COUNT…' (cyclictest -h output)"
                ))
            })?;
        let counts: Vec<u64> = parts
            .map(|c| c.parse::<u64>())
            .collect::<Result<_, _>>()
            .map_err(|_| {
                input_error(format!(
                    "{source}:{line_no}: a count is not a non-negative integer"
                ))
            })?;
        if hists.is_empty() {
            hists = (0..counts.len()).map(|_| LatencyHistogram::new()).collect();
        }
        if counts.len() != hists.len() || counts.is_empty() {
            return Err(input_error(format!(
                "{source}:{line_no}: {} thread columns, but earlier rows had {}",
                counts.len(),
                hists.len()
            )));
        }
        for (hist, &count) in hists.iter_mut().zip(&counts) {
            record_counted(source, hist, us(bucket), count)
                .map_err(|why| input_error(format!("{source}:{line_no}: {why}")))?;
        }
        buckets = buckets.max(bucket.saturating_add(1));
    }
    if hists.is_empty() {
        return Err(input_error(format!(
            "{source}: no histogram rows; expected cyclictest -h output"
        )));
    }
    for (hist, &over) in hists.iter_mut().zip(&overflows) {
        record_counted(source, hist, us(buckets), over)
            .map_err(|why| input_error(format!("{source}: Histogram Overflows: {why}")))?;
    }
    Ok(finish(hists, &mins, &maxs, &avgs, 1_000))
}

/// Records `count` values of `value`, refusing a total no run can reach.
fn record_counted(
    source: &str,
    hist: &mut LatencyHistogram,
    value: u64,
    count: u64,
) -> std::result::Result<(), String> {
    let total = hist.count().saturating_add(count);
    if total > MAX_VALUES {
        return Err(format!(
            "{total} values in one thread is more than any run records (at most {MAX_VALUES}); \
             is {source} damaged?"
        ));
    }
    hist.record_n(value, count);
    Ok(())
}

/// Reads `cyclictest --json=FILE` output.
pub fn read_json(source: &str, text: &str) -> Result<Vec<Series>> {
    let doc: Value = serde_json::from_str(text).map_err(|e| {
        input_error(format!(
            "{source}:{}:{}: not valid JSON ({e})",
            e.line(),
            e.column()
        ))
    })?;
    let threads = doc
        .get("thread")
        .and_then(Value::as_object)
        .ok_or_else(|| {
            input_error(format!(
                "{source}: cyclictest JSON without a \"thread\" object"
            ))
        })?;
    // With -N cyclictest counts nanoseconds, not microseconds.
    let per_unit = if doc.get("resolution_in_ns").and_then(Value::as_u64) == Some(1) {
        1
    } else {
        1_000
    };
    let mut keys: Vec<(usize, &Value)> = threads
        .iter()
        .map(|(k, v)| k.parse::<usize>().map(|i| (i, v)))
        .collect::<Result<_, _>>()
        .map_err(|_| input_error(format!("{source}: thread keys must be numbers")))?;
    keys.sort_by_key(|(i, _)| *i);
    let (mut hists, mut mins, mut maxs, mut avgs) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (t, thread) in keys {
        let mut hist = LatencyHistogram::new();
        let histogram = thread
            .get("histogram")
            .and_then(Value::as_object)
            .ok_or_else(|| {
                input_error(format!(
                    "{source}: thread {t} has no histogram (run cyclictest with -h N)"
                ))
            })?;
        for (bucket, count) in histogram {
            let (Ok(b), Some(c)) = (bucket.parse::<u64>(), count.as_u64()) else {
                return Err(input_error(format!(
                    "{source}: thread {t}: bucket '{bucket}' is not 'µs: count'"
                )));
            };
            hist.record_n(b.saturating_mul(per_unit), c);
        }
        let cycles = thread
            .get("cycles")
            .and_then(Value::as_u64)
            .unwrap_or(hist.count());
        let max = thread.get("max").and_then(Value::as_u64).unwrap_or(0);
        // Cycles the histogram could not hold lay beyond its range.
        if cycles > hist.count() {
            let beyond = histogram
                .keys()
                .filter_map(|b| b.parse::<u64>().ok())
                .max()
                .unwrap_or(0)
                + 1;
            hist.record_n(
                beyond.min(max).saturating_mul(per_unit),
                cycles - hist.count(),
            );
        }
        mins.push(thread.get("min").and_then(Value::as_u64).unwrap_or(0));
        maxs.push(max);
        avgs.push(thread.get("avg").and_then(Value::as_f64).unwrap_or(0.0));
        hists.push(hist);
    }
    if hists.is_empty() {
        return Err(input_error(format!(
            "{source}: cyclictest JSON with no threads"
        )));
    }
    Ok(finish(hists, &mins, &maxs, &avgs, per_unit))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absurd_footers_do_not_overflow() {
        // Found by cargo-fuzz: a min of 2^64-1 µs overflowed the ns conversion.
        let text = "# Histogram\n000029 000001\n# Min Latencies: 18446744073709551615\n";
        let series = read_text("t", text.as_bytes()).unwrap();
        let err = series[0].merged().unwrap_err();
        assert!(err.contains("min"), "{err}");
    }

    #[test]
    fn absurd_counts_are_refused_not_wrapped() {
        // 2^64-1 overflows were analysed as 18 quintillion samples, and
        // their sum with the other counts overflowed in the clusters.
        let text = "# Histogram\n000029 000001\n# Histogram Overflows: 18446744073709551615\n";
        let err = read_text("t", text.as_bytes()).unwrap_err().to_string();
        assert!(err.contains("more than any run records"), "{err}");
        let text = "# Histogram\n000029 9007199254740993\n";
        let err = read_text("t", text.as_bytes()).unwrap_err().to_string();
        assert!(err.contains("t:2:"), "{err}");
    }
}
