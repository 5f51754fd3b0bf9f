//! A sweep as a table: one row per value measured (offered and achieved
//! rates, p50/p99/p99.9 with their intervals, the generator's lag, the
//! verdict), then the capacity and what the search cost.

use std::fmt::Write;

use super::table::thousands;
use crate::model::sweep::{Judged, Knob, StepClass, SweepFile, SweepStep, probe_command};
use crate::units::{format_duration_compact, format_ns};

/// A value with its interval: `812.0 µs [790.1 µs–850.2 µs]`.
pub fn with_interval(j: &Judged) -> String {
    let show = |ns: Option<u64>| ns.map_or("—".to_string(), |v| format_ns(v as f64));
    format!(
        "{} [{}–{}]",
        show(j.value_ns),
        show(j.lower_ns),
        show(j.upper_ns)
    )
}

/// A knob's value for people: `2,500/s`, `QD16`.
pub fn show_value(knob: Knob, value: f64) -> String {
    match knob {
        Knob::Rate if value >= 100.0 => format!("{}/s", thousands(value.round() as u64)),
        Knob::Rate => format!("{value}/s"),
        Knob::Iodepth => format!("QD{}", value.round() as u64),
    }
}

/// A step's verdict in words: met, missed (the target saturated, where
/// named), cannot tell, or the generator fell behind.
pub fn verdict_words(step: &SweepStep) -> &'static str {
    match step.class {
        StepClass::Below => "met",
        StepClass::Above if step.saturated.is_some() => "missed, target saturated",
        StepClass::Above => "missed",
        StepClass::Unsure => "cannot tell",
        StepClass::GeneratorLimited => "the generator fell behind",
    }
}

/// The sweep's table and finding.
pub fn render(sweep: &SweepFile) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "sweep of {}: {} judged on '{}' at {:.0} % confidence",
        probe_command(&sweep.probe, &sweep.probe_args),
        sweep.objective,
        sweep.series,
        sweep.confidence * 100.0
    );
    let mut rows = vec![
        [
            match sweep.knob {
                Knob::Rate => "offered",
                Knob::Iodepth => "depth",
            },
            "achieved",
            "p50",
            "p99",
            "p99.9",
            "lag p99",
            "verdict",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for step in &sweep.steps {
        let at = |key: &str| {
            step.percentiles
                .iter()
                .find(|j| j.percentile == key)
                .map(with_interval)
                .unwrap_or_default()
        };
        let verdict = verdict_words(step);
        let repeats = match step.runs.len() {
            1 => String::new(),
            n if step.repeats_disagree => format!(" ({n} runs, they disagree)"),
            n => format!(" ({n} runs)"),
        };
        rows.push(vec![
            show_value(sweep.knob, step.value),
            format!("{}/s", thousands(step.achieved_per_s.round() as u64)),
            at("50"),
            at("99"),
            at("99.9"),
            step.lag_p99_ns
                .map(|ns| format_ns(ns as f64))
                .unwrap_or_else(|| "—".into()),
            format!("{verdict}{repeats}"),
        ]);
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    for row in &rows {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        let _ = writeln!(out, "  {}", line.join("  ").trim_end());
    }
    let _ = writeln!(out, "{}", sweep.capacity.finding);
    let _ = writeln!(
        out,
        "{} steps measured {} in {} ({:.2}× the measuring time)",
        sweep.steps.iter().map(|s| s.runs.len()).sum::<usize>(),
        format_duration_compact(sweep.measuring_ns / 1_000_000 * 1_000_000),
        format_duration_compact(sweep.elapsed_ns / 1_000_000 * 1_000_000),
        sweep.elapsed_ns as f64 / sweep.measuring_ns.max(1) as f64
    );
    out
}

/// Two sweeps' capacities and the change between them.
pub fn render_change(change: &crate::analyze::capacity::CapacityChange) -> String {
    let side = |(met, missed): (Option<f64>, Option<f64>)| {
        let show = |v: Option<f64>| v.map_or("—".to_string(), |v| show_value(change.knob, v));
        format!("met at {}, missed at {}", show(met), show(missed))
    };
    let ratio = |r: Option<f64>, open: &str| r.map_or(open.to_string(), |r| format!("×{r:.2}"));
    format!(
        "capacity at {}\n  base  {}\n  new   {}\n  change  {} to {}: {}\n",
        change.objective,
        side(change.base),
        side(change.new),
        ratio(change.ratio_low, "×0"),
        ratio(change.ratio_high, "unbounded"),
        change.verdict
    )
}
