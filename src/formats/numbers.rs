//! Reading plain numbers: one value per line, in a unit the user states
//! (`--unit`, nanoseconds by default). Blank lines and lines starting with
//! `#` are skipped; anything else that is not a non-negative decimal number
//! is an error naming the file and line.

use std::io::BufRead;

use anyhow::Result;

use crate::error::input_error;
use crate::model::{IntervalRecord, MeasuredFrom, Series};
use crate::record::LatencyHistogram;
use crate::units::{Decimal, TimeUnit};

/// Reads numbers into one untimed series tagged `values`.
pub fn read(source: &str, reader: impl BufRead, unit: TimeUnit) -> Result<Series> {
    let mut hist = LatencyHistogram::new();
    let multiplier = unit.nanos();
    for (index, line) in reader.split(b'\n').enumerate() {
        let line_no = index + 1;
        let line =
            line.map_err(|e| input_error(format!("{source}:{line_no}: cannot read ({e})")))?;
        let text = std::str::from_utf8(&line).map_err(|_| {
            input_error(format!(
                "{source}:{line_no}: not text; expected one number per line"
            ))
        })?;
        let text = text.trim();
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        let value = parse_value(text, multiplier).map_err(|why| {
            input_error(format!(
                "{source}:{line_no}: {why}; expected one non-negative number per line (in {}, \
                 set with --unit)",
                unit.symbol()
            ))
        })?;
        hist.record(value);
    }
    if hist.is_empty() {
        return Err(input_error(format!(
            "{source}: no numbers found; expected one number per line"
        )));
    }
    let mut series = Series::new("values".into(), MeasuredFrom::Unknown);
    series
        .intervals
        .push(IntervalRecord::from_histogram(0, 0, &hist));
    Ok(series)
}

fn parse_value(text: &str, multiplier: u64) -> Result<u64, String> {
    let shown: String = text.chars().take(40).collect();
    if text.starts_with('-') {
        return Err(format!("'{shown}' is negative, and a latency cannot be"));
    }
    let digits = text.strip_prefix('+').unwrap_or(text);
    let decimal = Decimal::parse(digits).ok_or_else(|| format!("'{shown}' is not a number"))?;
    decimal
        .times(multiplier)
        .ok_or_else(|| format!("'{shown}' is too large (past 2^64 ns)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_values_in_the_given_unit() {
        let text = "# header\n1.5\n\n2\n 3 \n";
        let series = read("t", text.as_bytes(), TimeUnit::Us).unwrap();
        let merged = series.merged().unwrap();
        assert_eq!(merged.stats().count, 3);
        assert_eq!(merged.stats().min, 1_500);
        assert_eq!(merged.stats().max, 3_000);
    }

    #[test]
    fn errors_name_the_line() {
        for (text, needle) in [
            ("1\n2\nabc\n", "t:3:"),
            ("1\n-5\n", "negative"),
            ("NaN\n", "not a number"),
            ("99999999999999999999999\n", "too large"),
            ("\n# nothing\n", "no numbers"),
        ] {
            let err = read("t", text.as_bytes(), TimeUnit::Ns).unwrap_err();
            assert!(err.to_string().contains(needle), "{text:?}: {err}");
        }
    }
}
