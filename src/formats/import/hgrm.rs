//! HdrHistogram percentile distributions (`.hgrm`, the output of
//! `outputPercentileDistribution` and `HistogramLogProcessor`): lines of
//! `Value Percentile TotalCount 1/(1-Percentile)` and the `#[Mean …]`,
//! `#[Max …, Total count …]` footers. Percentiles only: the series keeps
//! what was printed. Values are in the unit the writer scaled them to:
//! `--unit` (cauda's own files say their unit in a `#[Tag: …, unit: …]` line).

use std::io::BufRead;

use anyhow::Result;

use super::head::Head;
use super::options::{Imported, ReadOptions};
use super::reader::Input;
use crate::error::input_error;
use crate::model::{MeasuredFrom, Percentiles, Reported, Series};
use crate::units::TimeUnit;

/// Whether the first lines hold a distribution's header (`Value`,
/// `Percentile`, `TotalCount`).
pub(super) fn detect(head: &Head) -> bool {
    head.lines
        .iter()
        .any(|l| l.starts_with("Value") && l.contains("Percentile") && l.contains("TotalCount"))
}

/// The table's reader: values in `--unit`, which an .hgrm needs.
pub(super) fn import(source: &str, input: Input, options: &ReadOptions) -> Result<Imported> {
    let unit = options.unit_given.then_some(options.unit);
    Ok(Imported::of(read(source, input.with_line_limit(), unit)?))
}

fn number_after(text: &str, key: &str) -> Option<f64> {
    let rest = &text[text.find(key)? + key.len()..];
    rest.trim_start_matches([' ', '='])
        .split([',', ']'])
        .next()?
        .trim()
        .parse()
        .ok()
}

/// Reads one or more percentile distributions (cauda writes one per tag).
pub fn read(source: &str, reader: impl BufRead, unit: Option<TimeUnit>) -> Result<Vec<Series>> {
    let mut out: Vec<Series> = Vec::new();
    let mut tag = "hgrm".to_string();
    // The unit: from cauda's own `#[Tag: …, unit: …]` line, else the user's.
    let mut scale: Option<f64> = unit.map(|u| u.nanos() as f64);
    let mut points: Vec<(f64, u64)> = Vec::new();
    let (mut mean, mut stddev, mut max, mut count) = (None, None, None, None);
    let mut flush = |tag: &str,
                     points: &mut Vec<(f64, u64)>,
                     mean: Option<f64>,
                     stddev: Option<f64>,
                     max: Option<u64>,
                     count: Option<u64>| {
        if points.is_empty() {
            return;
        }
        let mut s = Series::new(tag.to_string(), MeasuredFrom::Unknown);
        s.reported = Some(Reported {
            count: count.unwrap_or(0),
            min: points.first().map(|p| p.1),
            max: max.or_else(|| points.last().map(|p| p.1)),
            mean,
            stddev,
            percentiles: Percentiles(
                points
                    .drain(..)
                    .map(|(q, v)| {
                        let key = format!("{:.10}", q * 100.0);
                        let key = key.trim_end_matches('0').trim_end_matches('.').to_string();
                        (key, v)
                    })
                    .collect(),
            ),
        });
        out.push(s);
    };
    for (index, line) in reader.lines().enumerate() {
        let line_no = index + 1;
        let line =
            line.map_err(|e| input_error(format!("{source}:{line_no}: cannot read ({e})")))?;
        let text = line.trim();
        if text.is_empty() || text.starts_with("Value") {
            continue;
        }
        if let Some(comment) = text.strip_prefix("#[") {
            if let Some(rest) = comment.strip_prefix("Tag: ") {
                flush(&tag, &mut points, mean, stddev, max, count);
                (mean, stddev, max, count) = (None, None, None, None);
                let mut parts = rest.trim_end_matches(']').split(", unit: ");
                tag = parts.next().unwrap_or("hgrm").to_string();
                scale = match parts.next() {
                    Some("ns") => Some(1.0),
                    Some("µs") | Some("us") => Some(1e3),
                    Some("ms") => Some(1e6),
                    Some("s") => Some(1e9),
                    _ => scale,
                };
            } else if comment.starts_with("Mean") {
                let scale = scale.unwrap_or(1.0);
                mean = number_after(comment, "Mean").map(|m| m * scale);
                stddev = number_after(comment, "StdDeviation").map(|s| s * scale);
            } else if comment.starts_with("Max") {
                let scale = scale.unwrap_or(1.0);
                max = number_after(comment, "Max").map(|m| (m * scale).round() as u64);
                count = number_after(comment, "Total count").map(|c| c as u64);
            }
            continue;
        }
        if text.starts_with('#') {
            continue;
        }
        let cols: Vec<&str> = text.split_whitespace().collect();
        let parsed = (cols.len() >= 3)
            .then(|| Some((cols[0].parse::<f64>().ok()?, cols[1].parse::<f64>().ok()?)))
            .flatten()
            .filter(|(v, q)| v.is_finite() && *v >= 0.0 && (0.0..=1.0).contains(q));
        let Some((value, q)) = parsed else {
            return Err(input_error(format!(
                "{source}:{line_no}: expected 'VALUE PERCENTILE TOTALCOUNT [1/(1-PERCENTILE)]'"
            )));
        };
        let Some(scale) = scale else {
            return Err(input_error(format!(
                "{source}: an .hgrm does not say the unit of its values; pass --unit (Java's \
                 HistogramLogProcessor writes ms unless -outputValueUnitRatio said otherwise)"
            )));
        };
        points.push((q, (value * scale).round() as u64));
    }
    flush(&tag, &mut points, mean, stddev, max, count);
    if out.is_empty() {
        return Err(input_error(format!(
            "{source}: no percentile lines; expected an HdrHistogram .hgrm"
        )));
    }
    Ok(out)
}
