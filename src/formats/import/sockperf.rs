//! sockperf `--full-log` CSV: a preamble, the header
//! `packet, txTime(sec), rxTime(sec), latency(usec)`, one row per valid
//! message, and a closing dashed line. The series is the full round trip
//! `rxTime − txTime` (times in seconds with 9 decimals, read exactly),
//! tagged `rtt` — not sockperf's `latency` column, which is half of it.

use std::io::BufRead;

use anyhow::Result;

use super::cutter::Cutter;
use super::head::Head;
use super::options::{Imported, ReadOptions};
use super::reader::Input;
use crate::error::input_error;
use crate::model::Series;
use crate::units::Decimal;

/// True when a line is sockperf's full-log header.
pub fn is_header(line: &str) -> bool {
    let l = line.trim();
    l.starts_with("packet") && l.contains("txTime") && l.contains("rxTime")
}

/// Whether the first lines are sockperf's: its full-log header, or a line
/// of its own preamble (`sockperf: …`).
pub(super) fn detect(head: &Head) -> bool {
    head.lines
        .iter()
        .any(|l| is_header(l) || l.starts_with("sockperf:"))
}

/// The table's reader.
pub(super) fn import(source: &str, input: Input, options: &ReadOptions) -> Result<Imported> {
    let series = read(source, input.with_line_limit(), options.interval_ns)?;
    Ok(Imported::of(vec![series]))
}

/// Reads the round trips, cut into intervals by send time.
pub fn read(source: &str, reader: impl BufRead, interval_ns: u64) -> Result<Series> {
    let mut cutter = Cutter::new("rtt".into(), interval_ns);
    let mut in_body = false;
    let mut first_tx: Option<u64> = None;
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
        cutter
            .record(tx.saturating_sub(start), rtt)
            .map_err(|why| input_error(format!("{source}:{line_no}: {why}")))?;
    }
    if !in_body {
        return Err(input_error(format!(
            "{source}: no sockperf header line; {expected} (write it with --full-log)"
        )));
    }
    if first_tx.is_none() {
        return Err(input_error(format!(
            "{source}: a sockperf log with no messages"
        )));
    }
    Ok(cutter.finish())
}
