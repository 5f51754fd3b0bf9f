//! Reading plain numbers: one value per line, in a unit the user states
//! (`--unit`, nanoseconds by default), or one column of a CSV file
//! (`--column NAME` or `--column N`, 1-based; comma, semicolon or tab
//! separated; a header row names the columns). Blank lines and lines
//! starting with `#` are skipped; anything else that is not a non-negative
//! decimal number is an error naming the file and line.

use std::io::BufRead;

use anyhow::Result;

use super::head::Head;
use super::options::{Column, Imported, ReadOptions};
use super::reader::Input;
use crate::error::input_error;
use crate::model::{IntervalRecord, MeasuredFrom, Series};
use crate::record::LatencyHistogram;
use crate::units::{Decimal, TimeUnit};

/// Plain numbers are what is left: the last row of the table, taking
/// any text no other format claimed.
pub(super) fn detect(_: &Head) -> bool {
    true
}

/// The table's reader: values in `--unit`, from `--column` of a CSV.
pub(super) fn import(source: &str, input: Input, options: &ReadOptions) -> Result<Imported> {
    let series = read(
        source,
        input.with_line_limit(),
        options.unit,
        options.column.as_ref(),
    )?;
    Ok(Imported::of(vec![series]))
}

fn separator(line: &str) -> Option<char> {
    [',', ';', '\t'].into_iter().find(|&c| line.contains(c))
}

/// Reads numbers (or one CSV column) into one untimed series.
pub fn read(
    source: &str,
    reader: impl BufRead,
    unit: TimeUnit,
    column: Option<&Column>,
) -> Result<Series> {
    let mut hist = LatencyHistogram::new();
    let multiplier = unit.nanos();
    let mut tag = "values".to_string();
    // For CSV: the separator and the 0-based index of the chosen column.
    let mut selected: Option<(char, usize)> = None;
    let mut first = true;
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
        if first {
            first = false;
            let sep = separator(text);
            match (column, sep) {
                (None, Some(sep)) if text.split(sep).count() > 1 => {
                    let names: Vec<&str> = text.split(sep).map(str::trim).collect();
                    return Err(input_error(format!(
                        "{source}: looks like CSV with columns [{}]; choose one with --column NAME \
                         or --column N (1-based)",
                        names.join(", ")
                    )));
                }
                (Some(col), _) => {
                    let sep = sep.unwrap_or(',');
                    let fields: Vec<&str> = text
                        .split(sep)
                        .map(|f| f.trim().trim_matches('"'))
                        .collect();
                    let header = fields
                        .iter()
                        .any(|f| Decimal::parse(f.trim_start_matches('+')).is_none());
                    let position = match col {
                        Column::Index(n) if *n <= fields.len() => n - 1,
                        Column::Index(n) => {
                            return Err(input_error(format!(
                                "{source}:{line_no}: --column {n}, but the row has {} columns",
                                fields.len()
                            )));
                        }
                        Column::Name(name) => fields.iter().position(|f| f == name).ok_or_else(|| {
                            input_error(format!(
                                "{source}:{line_no}: no column named '{name}'; the header has [{}]",
                                fields.join(", ")
                            ))
                        })?,
                    };
                    selected = Some((sep, position));
                    if header {
                        tag = fields[position].to_string();
                        continue;
                    }
                }
                (None, _) => {}
            }
        }
        let field = match selected {
            Some((sep, position)) => text
                .split(sep)
                .nth(position)
                .map(|f| f.trim().trim_matches('"'))
                .ok_or_else(|| {
                    input_error(format!(
                        "{source}:{line_no}: the row has no column {}",
                        position + 1
                    ))
                })?,
            None => text,
        };
        let value = parse_value(field, multiplier).map_err(|why| {
            input_error(format!(
                "{source}:{line_no}: {why}; expected a non-negative number (in {}, set with --unit)",
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
    let mut series = Series::new(tag, MeasuredFrom::Unknown);
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
        let series = read("t", text.as_bytes(), TimeUnit::Us, None).unwrap();
        let merged = series.merged().unwrap();
        assert_eq!(merged.stats().count, 3);
        assert_eq!(merged.stats().min, 1_500);
        assert_eq!(merged.stats().max, 3_000);
    }

    #[test]
    fn csv_columns_by_name_or_position() {
        let text = "id,latency_us\n1,10\n2,20.5\n";
        let s = read(
            "t",
            text.as_bytes(),
            TimeUnit::Us,
            Some(&Column::parse("latency_us")),
        )
        .unwrap();
        assert_eq!(s.tag, "latency_us");
        assert_eq!(s.merged().unwrap().stats().max, 20_500);
        let s = read(
            "t",
            "5;7\n6;8\n".as_bytes(),
            TimeUnit::Ns,
            Some(&Column::parse("2")),
        )
        .unwrap();
        assert_eq!(s.merged().unwrap().stats().sum, 15);
        let err = read("t", text.as_bytes(), TimeUnit::Us, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("--column"), "{err}");
        let err = read(
            "t",
            text.as_bytes(),
            TimeUnit::Us,
            Some(&Column::parse("lat")),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("no column named 'lat'"), "{err}");
        let err = read(
            "t",
            "1,2\n3,x\n".as_bytes(),
            TimeUnit::Us,
            Some(&Column::Index(2)),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("t:2:"), "{err}");
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
            let err = read("t", text.as_bytes(), TimeUnit::Ns, None).unwrap_err();
            assert!(err.to_string().contains(needle), "{text:?}: {err}");
        }
    }
}
