//! sockperf `--full-log` CSV: a preamble, the header
//! `packet, txTime(sec), rxTime(sec), latency(usec)`, one row per valid
//! message, and a closing dashed line. The series is the full round trip
//! `rxTime − txTime` (times in seconds with 9 decimals, read exactly),
//! tagged `rtt` — not sockperf's `latency` column, which is half of it.

use std::io::BufRead;

use anyhow::Result;

use crate::error::input_error;
use crate::model::{IntervalRecord, MeasuredFrom, Series};
use crate::record::LatencyHistogram;
use crate::units::Decimal;

/// True when a line is sockperf's full-log header.
pub fn is_header(line: &str) -> bool {
    let l = line.trim();
    l.starts_with("packet") && l.contains("txTime") && l.contains("rxTime")
}

/// Reads the round trips, cut into intervals by send time.
pub fn read(source: &str, reader: impl BufRead, interval_ns: u64) -> Result<Series> {
    let mut series = Series::new("rtt".into(), MeasuredFrom::Unknown);
    let mut in_body = false;
    let mut first_tx: Option<u64> = None;
    let mut current: Option<(u64, LatencyHistogram)> = None;
    let expected = "expected 'packet, txTime(sec), rxTime(sec), latency(usec)' rows";
    for (index, line) in reader.lines().enumerate() {
        let line_no = index + 1;
        let line =
            line.map_err(|e| input_error(format!("{source}:{line_no}: cannot read ({e})")))?;
        let text = line.trim();
        if !in_body {
            in_body = is_header(text);
            continue;
        }
        if text.is_empty() {
            continue;
        }
        if text.starts_with("---") {
            break;
        }
        let cols: Vec<&str> = text.split(',').map(str::trim).collect();
        if cols.len() < 3 {
            return Err(input_error(format!(
                "{source}:{line_no}: {} fields; {expected}",
                cols.len()
            )));
        }
        let seconds = |s: &str, what: &str| -> Result<u64> {
            Decimal::parse(s)
                .and_then(|d| d.times(1_000_000_000))
                .ok_or_else(|| {
                    input_error(format!(
                        "{source}:{line_no}: {what} '{s}' is not a time in seconds; {expected}"
                    ))
                })
        };
        let tx = seconds(cols[1], "txTime")?;
        let rx = seconds(cols[2], "rxTime")?;
        let rtt = rx.checked_sub(tx).ok_or_else(|| {
            input_error(format!(
                "{source}:{line_no}: the reply (rxTime) precedes the send (txTime)"
            ))
        })?;
        let start = *first_tx.get_or_insert(tx);
        let index = tx.saturating_sub(start) / interval_ns;
        match &mut current {
            Some((open, hist)) if index <= *open => hist.record(rtt),
            _ => {
                if let Some((open, hist)) = current.take() {
                    series.intervals.push(IntervalRecord::from_histogram(
                        open * interval_ns,
                        interval_ns,
                        &hist,
                    ));
                }
                for gap in series.intervals.len() as u64..index {
                    series.intervals.push(IntervalRecord::from_histogram(
                        gap * interval_ns,
                        interval_ns,
                        &LatencyHistogram::new(),
                    ));
                }
                let mut hist = LatencyHistogram::new();
                hist.record(rtt);
                current = Some((index, hist));
            }
        }
    }
    if !in_body {
        return Err(input_error(format!(
            "{source}: no sockperf header line; {expected} (write it with --full-log)"
        )));
    }
    match current {
        Some((open, hist)) => {
            series.intervals.push(IntervalRecord::from_histogram(
                open * interval_ns,
                interval_ns,
                &hist,
            ));
            Ok(series)
        }
        None => Err(input_error(format!(
            "{source}: a sockperf log with no messages"
        ))),
    }
}
