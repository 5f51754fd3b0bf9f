//! The terminal report of `cauda analyze`: one block per series with each
//! percentile, its confidence interval and how far the sample supports it,
//! then the clusters, stalls and fan-out in plain words.

use std::fmt::Write;

use crate::analyze::{Analysis, InputAnalysis, SeriesAnalysis, Support};
use crate::model::{LoadMode, MeasuredFrom, Role};
use crate::units::format_ns;

use super::numbers::seconds;
pub use super::numbers::{percent, thousands};

/// Renders the whole analysis.
pub fn render(analysis: &Analysis) -> String {
    let mut out = String::new();
    for (i, input) in analysis.inputs.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&render_input(input, analysis.confidence));
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
        Some(LoadMode::Unknown) | None => {}
    }
    if let Some(ns) = input.duration_ns.filter(|&ns| ns > 0) {
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

fn render_input(input: &InputAnalysis, confidence: f64) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", describe(input));
    for series in &input.series {
        out.push('\n');
        render_series(&mut out, series, confidence);
    }
    render_layers(&mut out, input);
    render_load(&mut out, input);
    if input.counts_stalls_once() {
        let _ = writeln!(
            out,
            "\nnote: closed loop / service time: a stall delays the next operation, so it \
             counts once instead of as the backlog it caused."
        );
    }
    out
}

/// Each probe series split at the device (`--kernel block`): how much of
/// its latency the device explains.
fn render_layers(out: &mut String, input: &InputAnalysis) {
    if input.layers.is_empty() {
        return;
    }
    let _ = writeln!(out, "\ntime above the device (application − block.device):");
    for split in &input.layers {
        for point in &split.at {
            let above = format_ns(point.above_device_ns as f64);
            let total = point
                .block_total_ns
                .map(|t| format!("; block layer in all {}", format_ns(t as f64)))
                .unwrap_or_default();
            let runq = point
                .runq_ns
                .map(|r| format!("; waiting for a CPU after wake-up {}", format_ns(r as f64)))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "  {} p{}  {} = device {} + {} above it{}{}",
                split.series,
                point.percentile,
                format_ns(point.app_ns as f64),
                format_ns(point.device_ns as f64),
                above,
                total,
                runq
            );
        }
    }
}

/// An open-loop run's offered against achieved rate and the generator's
/// lag, and who fell behind when someone did.
fn render_load(out: &mut String, input: &InputAnalysis) {
    let Some(v) = &input.offered_load else {
        return;
    };
    let _ = writeln!(
        out,
        "\nload: offered {:.0}/s (--rate {:.0}/s), achieved {:.0}/s ({}{})",
        v.offered_per_s,
        v.rate_per_s,
        v.achieved_per_s,
        if v.offered_per_s > 0.0 {
            percent(v.achieved_per_s / v.offered_per_s)
        } else {
            "-".into()
        },
        v.completed_after_end_ns.map_or(String::new(), |ns| format!(
            "; counted until the last completed, {} after the run's end",
            format_ns(ns as f64)
        ))
    );
    let _ = writeln!(
        out,
        "  generator lag (own: issued − due, once a slot was free): p50 {}  p99 {}  max {}  (one gap {})",
        format_ns(v.lag.p50_ns as f64),
        format_ns(v.lag.p99_ns as f64),
        format_ns(v.lag.max_ns as f64),
        format_ns(v.period_ns)
    );
    if let Some(s) = &v.service {
        let _ = writeln!(
            out,
            "  target service time: p50 {}  p99 {}  max {}{}",
            format_ns(s.p50_ns as f64),
            format_ns(s.p99_ns as f64),
            format_ns(s.max_ns as f64),
            match (v.occupancy, v.in_flight_limit) {
                (Some(o), Some(limit)) => format!(
                    "; {:.2} of {limit} in-flight slots held by the target on average",
                    o * limit as f64
                ),
                _ => String::new(),
            }
        );
    }
    if let Some(held) = v.held_share {
        let _ = writeln!(
            out,
            "  producers held by the target (batches full, due records waiting): {} of the time",
            crate::analyze::load::held_percent(held)
        );
    }
    for finding in [&v.generator_fell_behind, &v.saturated]
        .into_iter()
        .flatten()
    {
        let _ = writeln!(out, "  {finding}");
    }
}

fn measured_from(m: MeasuredFrom) -> &'static str {
    match m {
        MeasuredFrom::IntendedStart => "measured from intended start",
        MeasuredFrom::ActualStart => "service time (from actual start)",
        MeasuredFrom::Unknown => "timing origin unknown",
    }
}

/// Samples needed before the q-quantile can be bounded from above.
fn samples_needed(q: f64, confidence: f64) -> u64 {
    let alpha = 1.0 - confidence;
    ((alpha / 2.0).ln() / q.ln()).ceil() as u64
}

/// A stall's culprit hints, one line each.
fn write_hints(out: &mut String, stall: &crate::analyze::stalls::Stall) {
    for hint in &stall.hints {
        let _ = writeln!(out, "      hint: {}", hint.text);
    }
}

/// "1 sample", "1,903 samples".
fn samples(n: u64) -> String {
    match n {
        1 => "1 sample".into(),
        n => format!("{} samples", thousands(n)),
    }
}

/// One series' block: heading, the table of statistics, then its
/// clusters, coordinated-omission correction, stalls, fan-out and why
/// the tail (`--kernel blame`).
fn render_series(out: &mut String, s: &SeriesAnalysis, confidence: f64) {
    write_heading(out, s);
    write_rows(out, statistics(s, confidence));
    write_clusters(out, s);
    write_correction(out, s);
    write_stalls(out, s);
    write_fanout(out, s);
    super::blame::write_tail(out, s.blame.as_ref());
}

/// A row of a series' table: label, value, note.
type Row = (String, String, String);

/// The series' name, its sample count and where its timing starts.
fn write_heading(out: &mut String, s: &SeriesAnalysis) {
    let sum = &s.summary;
    if Role::of_tag(&s.tag) == Role::Control {
        let _ = writeln!(
            out,
            "self — {}: cauda's own heartbeat (how late its observer thread woke at each interval boundary); host noise, not the target",
            samples(sum.count)
        );
    } else {
        let _ = writeln!(
            out,
            "{} — {}, {}",
            s.tag,
            samples(sum.count),
            measured_from(s.measured_from)
        );
    }
}

/// The rows of the table: min, each percentile, max, mean, median and the
/// clamped count.
fn statistics(s: &SeriesAnalysis, confidence: f64) -> Vec<Row> {
    let sum = &s.summary;
    let mut rows: Vec<Row> = Vec::new();
    rows.push(("min".into(), format_ns(sum.min as f64), String::new()));
    for (key, value) in &sum.percentiles.0 {
        rows.push(percentile_row(s, key, *value, confidence));
    }
    rows.push(("max".into(), format_ns(sum.max as f64), String::new()));
    rows.push((
        "mean".into(),
        format_ns(sum.mean),
        format!("stddev {}", format_ns(sum.stddev)),
    ));
    rows.push((
        "median".into(),
        format_ns(sum.median as f64),
        sum.mad
            .map_or_else(String::new, |mad| format!("MAD {}", format_ns(mad as f64))),
    ));
    if let Some(clamped) = sum.clamped {
        rows.push((
            "clamped".into(),
            thousands(clamped),
            "values above 1 h, counted at 1 h".into(),
        ));
    }
    rows
}

/// One percentile's row: its value (≈ when rough) and interval, or why the
/// sample cannot bound it.
fn percentile_row(s: &SeriesAnalysis, key: &str, value: u64, confidence: f64) -> Row {
    let sum = &s.summary;
    let level = format!("{:.0}% CI", confidence * 100.0);
    let support = s.support.get(key).copied().unwrap_or(Support::Ok);
    let [lower, upper] = s.percentile_ci.get(key).copied().unwrap_or([None, None]);
    let label = format!("p{key}");
    if support == Support::Insufficient {
        let q = key.parse::<f64>().unwrap_or(100.0) / 100.0;
        let needed = if q < 1.0 {
            thousands(samples_needed(q, confidence))
        } else {
            "∞".into()
        };
        return (
            label,
            "—".into(),
            format!(
                "insufficient: {} cannot bound it (needs ≳{needed}); largest seen {}",
                samples(sum.count),
                format_ns(sum.max as f64)
            ),
        );
    }
    let interval = match (lower, upper) {
        (Some(lo), Some(hi)) => {
            format!("{level} {}–{}", format_ns(lo as f64), format_ns(hi as f64))
        }
        (None, Some(hi)) => format!("{level} ≤{}", format_ns(hi as f64)),
        _ => String::new(),
    };
    let note = if support == Support::Rough {
        format!("   {}", support.note())
    } else {
        String::new()
    };
    let shown = if support == Support::Rough {
        format!("≈{}", format_ns(value as f64))
    } else {
        format_ns(value as f64)
    };
    (label, shown, format!("{interval}{note}"))
}

/// The rows with their values right-aligned in one column.
fn write_rows(out: &mut String, rows: Vec<Row>) {
    let width = rows.iter().map(|r| r.1.chars().count()).max().unwrap_or(0);
    for (label, value, note) in rows {
        let line = format!("  {label:<8}{value:>width$}   {note}");
        let _ = writeln!(out, "{}", line.trim_end());
    }
}

/// The clusters, when there is more than one.
fn write_clusters(out: &mut String, s: &SeriesAnalysis) {
    if s.clusters.len() > 1 {
        let parts: Vec<String> = s
            .clusters
            .iter()
            .map(|c| {
                format!(
                    "{}–{} holds {}",
                    format_ns(c.low as f64),
                    format_ns(c.high as f64),
                    percent(c.share)
                )
            })
            .collect();
        let _ = writeln!(out, "  clusters: {}", parts.join("; "));
    }
}

/// Whether coordinated omission was corrected, and if not why.
fn write_correction(out: &mut String, s: &SeriesAnalysis) {
    if let Some(co) = &s.co_correction {
        if co.applied {
            let _ = writeln!(
                out,
                "  corrected for coordinated omission at {} expected interval: {} synthesised values included",
                format_ns(co.expected_interval_ns as f64),
                thousands(co.synthesized)
            );
        } else if let Some(reason) = &co.reason {
            let _ = writeln!(out, "  not corrected for coordinated omission: {reason}");
        }
    }
}

/// The first ten stalls, each against the typical interval, with hints.
fn write_stalls(out: &mut String, s: &SeriesAnalysis) {
    if s.stalls.is_empty() {
        return;
    }
    let typical = s.typical_interval;
    let _ = writeln!(out, "  stalls ({}):", s.stalls.len());
    for stall in s.stalls.iter().take(10) {
        let when = format!("t={}–{} s", seconds(stall.start_s), seconds(stall.end_s));
        if stall.count == 0 {
            let _ = writeln!(out, "    {when}: nothing completed");
            write_hints(out, stall);
            continue;
        }
        let mut line = format!(
            "    {when}: p99 {}, max {}, {} completions",
            format_ns(stall.p99 as f64),
            format_ns(stall.max as f64),
            thousands(stall.count)
        );
        if let Some(t) = typical {
            let _ = write!(
                line,
                " (typical p99 {}, max {}); the interval mean was {} (typical {})",
                format_ns(t.p99 as f64),
                format_ns(t.max as f64),
                format_ns(stall.mean),
                format_ns(t.mean)
            );
        }
        let _ = writeln!(out, "{line}");
        write_hints(out, stall);
    }
    if s.stalls.len() > 10 {
        let _ = writeln!(out, "    … {} more in --json", s.stalls.len() - 10);
    }
}

/// The fan-out model's root percentiles and which rest on too few samples.
fn write_fanout(out: &mut String, s: &SeriesAnalysis) {
    let Some(f) = &s.fanout else {
        return;
    };
    let parts: Vec<String> = f
        .root_percentiles
        .0
        .iter()
        .map(|(k, v)| format!("p{k} {}", format_ns(*v as f64)))
        .collect();
    let _ = writeln!(
        out,
        "  fan-out {}: root {}; {} of requests meet a leaf p99; the root's p99 needs the leaf's p{:.4}",
        f.n,
        parts.join(", "),
        percent(f.p_hit_leaf_p99),
        f.leaf_percentile_for_root_p99
    );
    let weak: Vec<&str> = f
        .root_support
        .0
        .iter()
        .filter(|(_, s)| *s == Support::Insufficient)
        .map(|(k, _)| k.as_str())
        .collect();
    if !weak.is_empty() {
        let _ = writeln!(
            out,
            "    root p{} rest on too few leaf samples to trust",
            weak.join(", p")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_sample_is_singular() {
        assert_eq!(samples(1), "1 sample");
        assert_eq!(samples(0), "0 samples");
        assert_eq!(samples(1_903), "1,903 samples");
    }

    #[test]
    fn samples_needed_for_the_far_tail() {
        // p99.99 at 95 %: ln(0.025)/ln(0.9999) ≈ 36,887.
        assert_eq!(samples_needed(0.9999, 0.95), 36_887);
    }
}
