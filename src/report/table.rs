//! The terminal table of `cauda analyze`: one column per series, one row
//! per statistic, each value in a unit chosen for it.

use std::fmt::Write;

use crate::analyze::{Analysis, InputAnalysis};
use crate::model::{LoadMode, MeasuredFrom};
use crate::units::format_ns;

/// Renders the whole analysis.
pub fn render(analysis: &Analysis) -> String {
    let mut out = String::new();
    for (i, input) in analysis.inputs.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&render_input(input));
    }
    out
}

/// Groups digits in thousands: 121334 → "121,334".
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn describe(input: &InputAnalysis) -> String {
    let mut parts = Vec::new();
    if let Some(probe) = &input.probe {
        parts.push(probe.clone());
    }
    match input.load {
        Some(LoadMode::OpenLoop) => parts.push("open loop".into()),
        Some(LoadMode::ClosedLoop) => parts.push("closed loop".into()),
        None => {}
    }
    if let Some(ns) = input.duration_ns {
        parts.push(format!("{:.1} s", ns as f64 / 1e9));
    }
    if input.interrupted {
        parts.push("INTERRUPTED".into());
    }
    if parts.is_empty() {
        input.source.clone()
    } else {
        format!("{} ({})", input.source, parts.join(", "))
    }
}

fn render_input(input: &InputAnalysis) -> String {
    let mut rows: Vec<(String, Vec<String>)> = Vec::new();
    let column = |f: &dyn Fn(&crate::analyze::SeriesAnalysis) -> String| {
        input.series.iter().map(f).collect::<Vec<_>>()
    };
    rows.push(("count".into(), column(&|s| thousands(s.summary.count))));
    rows.push(("min".into(), column(&|s| format_ns(s.summary.min as f64))));
    if let Some(first) = input.series.first() {
        for (k, (key, _)) in first.summary.percentiles.0.iter().enumerate() {
            let label = format!("p{key}");
            rows.push((
                label,
                column(&|s| {
                    s.summary
                        .percentiles
                        .0
                        .get(k)
                        .map_or_else(String::new, |(_, v)| format_ns(*v as f64))
                }),
            ));
        }
    }
    rows.push(("max".into(), column(&|s| format_ns(s.summary.max as f64))));
    rows.push(("mean".into(), column(&|s| format_ns(s.summary.mean))));
    rows.push(("stddev".into(), column(&|s| format_ns(s.summary.stddev))));
    rows.push((
        "median".into(),
        column(&|s| format_ns(s.summary.median as f64)),
    ));
    rows.push(("MAD".into(), column(&|s| format_ns(s.summary.mad as f64))));
    if input.series.iter().any(|s| s.summary.clamped.is_some()) {
        rows.push((
            "clamped >1h".into(),
            column(&|s| thousands(s.summary.clamped.unwrap_or(0))),
        ));
    }

    let headers: Vec<&str> = input.series.iter().map(|s| s.tag.as_str()).collect();
    let label_width = rows
        .iter()
        .map(|(l, _)| l.chars().count())
        .max()
        .unwrap_or(0);
    let widths: Vec<usize> = (0..headers.len())
        .map(|c| {
            rows.iter()
                .map(|(_, cells)| cells[c].chars().count())
                .chain([headers[c].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();

    let mut out = String::new();
    let _ = writeln!(out, "{}", describe(input));
    let mut line = " ".repeat(label_width);
    for (h, w) in headers.iter().zip(&widths) {
        let _ = write!(line, "  {h:>w$}");
    }
    let _ = writeln!(out, "{}", line.trim_end());
    for (label, cells) in &rows {
        let mut line = format!("{label:<label_width$}");
        for (cell, w) in cells.iter().zip(&widths) {
            let _ = write!(line, "  {cell:>w$}");
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    let closed = input.load == Some(LoadMode::ClosedLoop);
    let service_only = input
        .series
        .iter()
        .any(|s| s.measured_from == MeasuredFrom::ActualStart);
    if closed || service_only {
        let _ = writeln!(
            out,
            "note: closed-loop / service-time series: a stall delays the next operation, so it \
             counts once instead of as the backlog it caused."
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(121_334), "121,334");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
