//! The report's tables: the summary per series (values, confidence
//! intervals, support marks, as in the terminal table), the stalls with any
//! hints the analysis attached, and the before/after comparison. The host
//! tables are in `host`.

use std::fmt::Write;

use serde_json::Value;

use super::prepare::{Prepared, SeriesView, Shape};
use super::svg::{colour, esc};
use crate::analyze::compare::{Comparison, Row, Verdict};
use crate::analyze::{SeriesAnalysis, Support};
use crate::model::LoadMode;
use crate::report::table::thousands;
use crate::units::{TimeUnit, format_in, format_ns};

/// A value and its confidence interval in the value's unit: `43.90 µs` and
/// `43.10–44.20`.
fn with_ci(value: u64, ci: [Option<u64>; 2]) -> (String, String) {
    let unit = TimeUnit::auto(value as f64);
    let bare = |v: u64| {
        format_in(v as f64, unit)
            .trim_end_matches(unit.symbol())
            .trim_end()
            .to_string()
    };
    let range = match ci {
        [Some(lo), Some(hi)] => format!("{}–{}", bare(lo), bare(hi)),
        [None, Some(hi)] => format!("≤ {}", bare(hi)),
        [Some(lo), None] => format!("≥ {}", bare(lo)),
        [None, None] => String::new(),
    };
    (format_ns(value as f64), range)
}

fn describe(prep: &Prepared, i: usize) -> String {
    let input = &prep.inputs[i];
    let a = &input.analysis;
    // The format's name as `--format` spells it, in words: `fio json`.
    let format = serde_json::to_value(a.format)
        .ok()
        .and_then(|v| v.as_str().map(|s| s.replace('-', " ")))
        .unwrap_or_default();
    let mut parts = vec![format];
    if let Some(p) = &a.probe {
        parts.push(format!("probe {p}"));
    }
    match a.load {
        Some(LoadMode::OpenLoop) => parts.push("open loop".into()),
        Some(LoadMode::ClosedLoop) => parts.push("closed loop".into()),
        _ => {}
    }
    if let Some(run) = &input.loaded.run {
        parts.push(format!("started {}", run.start_time));
        if run.interval_ns > 0 {
            parts.push(format!(
                "{} intervals",
                crate::units::format_duration_compact(run.interval_ns)
            ));
        }
    }
    if let Some(ns) = a.duration_ns.filter(|&ns| ns > 0) {
        parts.push(format!("{:.1} s", ns as f64 / 1e9));
    }
    parts.join(" · ")
}

/// The summary table: a group of rows per input, a row per series.
pub fn summary(prep: &Prepared) -> String {
    let keys = percentile_keys(prep);
    let mut out = summary_head(&keys);
    let (mut closed_loop, mut printed_any) = (Vec::new(), false);
    for (i, input) in prep.inputs.iter().enumerate() {
        let a = &input.analysis;
        group_row(&mut out, prep, i, keys.len() + 6);
        for (k, view) in prep.series.iter().enumerate().filter(|(_, s)| s.input == i) {
            series_row(&mut out, k, view, &a.series[view.index], &keys);
        }
        if a.counts_stalls_once() {
            closed_loop.push(input.name.as_str());
        }
        printed_any |= a.series.iter().any(|s| s.percentiles_only);
    }
    out.push_str("</tbody></table></div>");
    summary_notes(&mut out, &closed_loop, printed_any, prep.confidence);
    out
}

/// Every percentile any series has, in the order first met.
fn percentile_keys(prep: &Prepared) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for input in &prep.inputs {
        for s in &input.analysis.series {
            for (k, _) in &s.summary.percentiles.0 {
                if !keys.contains(k) {
                    keys.push(k.clone());
                }
            }
        }
    }
    keys
}

/// The table's opening and its header row.
fn summary_head(keys: &[String]) -> String {
    let mut out = String::from(
        "<div class=\"scroll\"><table class=\"summary\"><thead><tr><th>series</th><th>samples</th><th>min</th>",
    );
    for k in keys {
        let _ = write!(out, "<th>p{}</th>", esc(k));
    }
    out.push_str("<th>max</th><th>mean</th><th>median</th></tr></thead><tbody>");
    out
}

/// Input `i`'s group row: its name and description, then whether it was
/// interrupted, its warnings and faults, and its time above the device.
fn group_row(out: &mut String, prep: &Prepared, i: usize, columns: usize) {
    let input = &prep.inputs[i];
    let a = &input.analysis;
    let role = if input.baseline { " (baseline)" } else { "" };
    let _ = write!(
        out,
        "<tr class=\"group\"><th colspan=\"{columns}\">{}{role} <span class=\"meta\">{}</span>",
        esc(&input.name),
        esc(&describe(prep, i))
    );
    if a.interrupted {
        out.push_str("<div class=\"warn\">This run was interrupted: it holds what was measured until then.</div>");
    }
    if let Some(run) = &input.loaded.run {
        for w in &run.warnings {
            let _ = write!(
                out,
                "<div class=\"warn\">warning: {} — {}</div>",
                esc(&w.message),
                esc(&w.advice)
            );
        }
        out.push_str(&fault_lines(&run.faults));
    }
    for split in &a.layers {
        let parts: Vec<String> = split
            .at
            .iter()
            .map(|p| {
                let runq = p
                    .runq_ns
                    .map(|r| format!(" (waiting for a CPU after wake-up {})", format_ns(r as f64)))
                    .unwrap_or_default();
                format!(
                    "p{} {} = device {} + {} above it{runq}",
                    p.percentile,
                    format_ns(p.app_ns as f64),
                    format_ns(p.device_ns as f64),
                    format_ns(p.above_device_ns as f64)
                )
            })
            .collect();
        let _ = write!(
            out,
            "<div class=\"meta\">time above the device, {}: {}</div>",
            esc(&split.series),
            esc(&parts.join("; "))
        );
    }
    out.push_str("</th></tr>");
}

/// A series' row (`k` is its colour): name, samples, min, each percentile,
/// max, mean and median.
fn series_row(out: &mut String, k: usize, view: &SeriesView, s: &SeriesAnalysis, keys: &[String]) {
    let sum = &s.summary;
    let printed = matches!(view.shape, Shape::PercentilesOnly { .. });
    let _ = write!(
        out,
        "<tr><td class=\"name\"><span class=\"sw\" style=\"background:{}\"></span>{}{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>",
        colour(k),
        esc(&s.tag),
        if printed {
            " <small>(printed percentiles)</small>"
        } else {
            ""
        },
        thousands(sum.count),
        format_ns(sum.min as f64),
    );
    for key in keys {
        percentile_cell(out, s, key);
    }
    let median_known = !s.percentiles_only || sum.percentiles.0.iter().any(|(k, _)| k == "50");
    let median = if median_known {
        format!(
            "{}<small>{}</small>",
            format_ns(sum.median as f64),
            sum.mad
                .map_or_else(String::new, |m| format!("MAD {}", format_ns(m as f64)))
        )
    } else {
        "n/a".into()
    };
    let _ = write!(
        out,
        "<td class=\"num\">{}</td><td class=\"num\">{}<small>stddev {}</small></td><td class=\"num{}\">{median}</td></tr>",
        format_ns(sum.max as f64),
        format_ns(sum.mean),
        format_ns(sum.stddev),
        if median_known { "" } else { " na" },
    );
}

/// One percentile's cell: n/a, too few samples, or its value (≈ when rough)
/// over its interval.
fn percentile_cell(out: &mut String, s: &SeriesAnalysis, key: &str) {
    let Some(value) = s.summary.percentiles.get(key) else {
        out.push_str("<td class=\"num na\">n/a</td>");
        return;
    };
    let support = s.support.get(key).copied().unwrap_or(Support::Ok);
    let ci = s.percentile_ci.get(key).copied().unwrap_or([None, None]);
    match support {
        Support::Insufficient => {
            let _ = write!(
                out,
                "<td class=\"num insufficient\" title=\"{}\">—<small>too few samples</small></td>",
                esc(support.note())
            );
        }
        _ => {
            let (v, range) = with_ci(value, ci);
            let (class, mark, title) = if support == Support::Rough {
                (" rough", "≈", format!(" title=\"{}\"", esc(support.note())))
            } else {
                ("", "", String::new())
            };
            let _ = write!(
                out,
                "<td class=\"num{class}\"{title}>{mark}{}<small>{}</small></td>",
                esc(&v),
                esc(&range)
            );
        }
    }
}

/// The notes under the table: closed-loop inputs, printed percentiles,
/// and how to read the cells.
fn summary_notes(out: &mut String, closed_loop: &[&str], printed_any: bool, confidence: f64) {
    let level = format!("{:.0} % CI", confidence * 100.0);
    if !closed_loop.is_empty() {
        let _ = write!(
            out,
            "<p class=\"note\">Closed loop / service time ({}): a stall delays the next operation, so it counts once instead of as the backlog it caused (coordinated omission).</p>",
            esc(&closed_loop.join(", "))
        );
    }
    if printed_any {
        out.push_str("<p class=\"note\">Printed percentiles: the tool wrote only these numbers, not its distribution, so such a series appears in the table and the spectrum (as the printed points) but not in the histogram or the timeline.</p>");
    }
    let _ = write!(
        out,
        "<p class=\"note\">Under each percentile: its {level}, distribution-free. ≈ marks a rough value (under 100 samples above it: it moves from run to run); — marks a percentile the sample cannot bound, which is not a measurement. Under the mean: the standard deviation (meaningless on fat tails); under the median: the median absolute deviation (MAD).</p>"
    );
}

const STALL_KEYS: [&str; 7] = ["start_s", "end_s", "p99", "max", "count", "mean", "reasons"];

/// A JSON value in one line of text: strings bare, objects as `k: v`.
pub fn inline(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "—".into(),
        Value::Array(items) => items.iter().map(inline).collect::<Vec<_>>().join("; "),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| format!("{k}: {}", inline(v)))
            .collect::<Vec<_>>()
            .join(", "),
        other => other.to_string(),
    }
}

/// The fields of a stall beyond the ones the table shows (hints the
/// analysis attached), as HTML list items: arrays item by item.
fn stall_extras(stall: &Value) -> Vec<String> {
    stall
        .as_object()
        .map(|m| {
            m.iter()
                .filter(|(key, _)| !STALL_KEYS.contains(&key.as_str()))
                .flat_map(|(key, v)| match v {
                    Value::Array(items) => items
                        .iter()
                        .map(|h| format!("<li>{}</li>", esc(&inline(h))))
                        .collect::<Vec<_>>(),
                    v => vec![format!("<li>{}: {}</li>", esc(key), esc(&inline(v)))],
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The stall table of one series, with any extra fields (hints) the
/// analysis attached.
pub fn stalls(prep: &Prepared, k: usize) -> String {
    let view = &prep.series[k];
    let a = prep.analysis(view);
    if a.stalls.is_empty() {
        return "<p class=\"note\">No stalls: no interval stands far above the typical one.</p>"
            .into();
    }
    const SHOWN: usize = 200;
    const OPEN: usize = 8;
    let mut out = format!(
        "<details{}><summary>{} stall(s), in time order</summary><div class=\"scroll\"><table class=\"stalls\">",
        if a.stalls.len() <= OPEN { " open" } else { "" },
        a.stalls.len()
    );
    let extras: Vec<Vec<String>> = a
        .stalls
        .iter()
        .take(SHOWN)
        .map(|stall| stall_extras(&serde_json::to_value(stall).unwrap_or(Value::Null)))
        .collect();
    let hints = extras.iter().any(|e| !e.is_empty());
    let _ = write!(
        out,
        "<thead><tr><th>#</th><th>when</th><th>p99</th><th>max</th><th>completions</th><th>interval mean</th><th>why</th>{}</tr></thead><tbody>",
        if hints { "<th>hints</th>" } else { "" }
    );
    for (i, (stall, extra)) in a.stalls.iter().zip(&extras).enumerate() {
        let reasons: Vec<String> = stall
            .reasons
            .iter()
            .map(|r| inline(&serde_json::to_value(r).unwrap_or(Value::Null)).replace('-', " "))
            .collect();
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}–{} s</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td>{}</tr>",
            i + 1,
            super::svg::trim_number(stall.start_s, 3),
            super::svg::trim_number(stall.end_s, 3),
            format_ns(stall.p99 as f64),
            format_ns(stall.max as f64),
            thousands(stall.count),
            format_ns(stall.mean),
            esc(&reasons.join(", ")),
            match (hints, extra.is_empty()) {
                (false, _) => String::new(),
                (true, true) => "<td>—</td>".into(),
                (true, false) => format!("<td><ul class=\"hints\">{}</ul></td>", extra.join("")),
            }
        );
    }
    out.push_str("</tbody></table></div></details>");
    if a.stalls.len() > SHOWN {
        let _ = write!(
            out,
            "<p class=\"note\">… and {} more stalls (all are shaded above; `cauda analyze --json` lists them).</p>",
            a.stalls.len() - SHOWN
        );
    }
    if let Some(t) = a.typical_interval {
        let _ = write!(
            out,
            "<p class=\"note\">Typical interval: p99 {}, max {}, mean {}, {:.0} completions/s.</p>",
            format_ns(t.p99 as f64),
            format_ns(t.max as f64),
            format_ns(t.mean),
            t.rate
        );
    }
    out
}

fn row_value(row: &Row, v: f64) -> String {
    match row.metric.as_str() {
        "count" => thousands(v.round() as u64),
        "throughput" => format!("{v:.1}/s"),
        _ => format_ns(v),
    }
}

/// The before/after table of one comparison.
pub fn comparison(c: &Comparison) -> String {
    let mut out = format!(
        "<h3>{} → {}</h3><div class=\"scroll\"><table class=\"compare\"><thead><tr><th>series</th><th>metric</th><th>baseline</th><th>new</th><th>change</th><th>{:.0} % CI of the change</th><th>verdict</th></tr></thead><tbody>",
        esc(&c.base),
        esc(&c.new),
        c.confidence * 100.0
    );
    for row in &c.rows {
        let (class, word) = match row.verdict {
            Verdict::Better => ("better", "better"),
            Verdict::Worse => ("worse", "WORSE"),
            Verdict::Same => ("same", "same"),
        };
        let _ = write!(
            out,
            "<tr class=\"{class}\"><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"verdict\">{word}</td></tr>",
            esc(&row.series),
            esc(&row.metric),
            row_value(row, row.base),
            row_value(row, row.new),
            row.change_pct
                .map_or_else(|| "—".into(), |p| format!("{p:+.1} %")),
            row.ci_pct
                .map_or_else(|| "—".into(), |[lo, hi]| format!("[{lo:+.1}, {hi:+.1}] %")),
        );
    }
    out.push_str("</tbody></table></div><p class=\"note\">change = new/baseline − 1; same = the interval spans 0 or the change is within 0.1 %.</p>");
    if !c.unpaired.is_empty() {
        let _ = write!(
            out,
            "<p class=\"note\">Not compared (on one side only): {}</p>",
            esc(&c.unpaired.join(", "))
        );
    }
    if !c.host_changes.is_empty() {
        out.push_str("<p>Host settings that differ:</p><ul class=\"changes\">");
        for h in &c.host_changes {
            let _ = write!(
                out,
                "<li><code>{}</code>: {} → {}</li>",
                esc(&h.key),
                esc(&inline(&h.base)),
                esc(&inline(&h.new))
            );
        }
        out.push_str("</ul>");
    }
    out
}

/// A run's fault counts as a warning, and the totals kept beside them
/// ([`FAULT_TOTALS`]) as context, not as faults.
fn fault_lines(counts: &std::collections::BTreeMap<String, u64>) -> String {
    use crate::model::run::FAULT_TOTALS;
    let counted = |totals: bool| -> Vec<String> {
        counts
            .iter()
            .filter(|(k, n)| **n > 0 && FAULT_TOTALS.contains(&k.as_str()) == totals)
            .map(|(k, n)| format!("{k} {}", thousands(*n)))
            .collect()
    };
    let (totals, faults) = (counted(true), counted(false));
    let mut out = String::new();
    if !faults.is_empty() {
        let _ = write!(
            out,
            "<div class=\"warn\">faults counted: {}</div>",
            esc(&faults.join(", "))
        );
    }
    if !totals.is_empty() {
        let _ = write!(
            out,
            "<div class=\"meta\">messages: {}{}</div>",
            esc(&totals.join(", ")),
            if faults.is_empty() { "; no faults" } else { "" }
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn net_totals_are_context_and_only_faults_warn() {
        let counts = |pairs: &[(&str, u64)]| {
            pairs
                .iter()
                .map(|&(k, n)| (k.to_string(), n))
                .collect::<std::collections::BTreeMap<_, _>>()
        };
        let clean = fault_lines(&counts(&[
            ("sent", 1_000),
            ("answered", 1_000),
            ("lost", 0),
        ]));
        assert_eq!(
            clean,
            "<div class=\"meta\">messages: answered 1,000, sent 1,000; no faults</div>"
        );
        let lossy = fault_lines(&counts(&[("sent", 10), ("answered", 7), ("lost", 3)]));
        assert_eq!(
            lossy,
            "<div class=\"warn\">faults counted: lost 3</div>\
             <div class=\"meta\">messages: answered 7, sent 10</div>"
        );
        assert_eq!(
            fault_lines(&counts(&[("write EIO", 2)])),
            "<div class=\"warn\">faults counted: write EIO 2</div>"
        );
        assert_eq!(fault_lines(&counts(&[])), "");
    }

    #[test]
    fn confidence_intervals_use_the_value_unit() {
        let (v, ci) = with_ci(43_896, [Some(43_100), Some(44_200)]);
        assert_eq!(v, "43.90 µs");
        assert_eq!(ci, "43.10–44.20");
        assert_eq!(with_ci(1_000, [None, Some(2_000_000)]).1, "≤ 2000");
    }

    #[test]
    fn extra_stall_fields_become_hints() {
        let stall = serde_json::json!({
            "start_s": 13.0, "end_s": 15.0, "p99": 1, "max": 2, "count": 3, "mean": 4.0,
            "reasons": ["high-p99"],
            "hints": [{"counter": "psi.io.some", "change": "+38 %"}, "kswapd ran <1 ms>"]
        });
        assert_eq!(
            stall_extras(&stall),
            [
                "<li>counter: psi.io.some, change: +38 %</li>",
                "<li>kswapd ran &lt;1 ms&gt;</li>"
            ]
        );
        let plain = serde_json::json!({"start_s": 1.0, "reasons": []});
        assert!(stall_extras(&plain).is_empty());
    }
}
