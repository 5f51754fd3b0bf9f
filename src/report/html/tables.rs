//! The report's tables: the summary per series (values, confidence
//! intervals, support marks, as in the terminal table), the stalls with any
//! hints the analysis attached, the before/after comparison, and the host
//! snapshot rendered generically from its JSON so new fields (an audit,
//! its checks) appear without changes here.

use std::fmt::Write;

use serde_json::Value;

use super::prepare::{Prepared, Shape};
use super::svg::{colour, esc};
use crate::analyze::Support;
use crate::analyze::compare::{Comparison, Row, Verdict};
use crate::model::{LoadMode, MeasuredFrom};
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
    let mut parts = vec![
        format!("{:?}", a.format)
            .chars()
            .flat_map(|c| {
                if c.is_uppercase() {
                    vec![' ', c.to_ascii_lowercase()]
                } else {
                    vec![c]
                }
            })
            .collect::<String>()
            .trim()
            .to_string(),
    ];
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
    let level = format!("{:.0} % CI", prep.confidence * 100.0);
    let columns = keys.len() + 6;
    let mut out = String::from(
        "<div class=\"scroll\"><table class=\"summary\"><thead><tr><th>series</th><th>samples</th><th>min</th>",
    );
    for k in &keys {
        let _ = write!(out, "<th>p{}</th>", esc(k));
    }
    out.push_str("<th>max</th><th>mean</th><th>median</th></tr></thead><tbody>");
    let (mut closed_loop, mut printed_any) = (Vec::new(), false);
    for (i, input) in prep.inputs.iter().enumerate() {
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
            let faults: Vec<String> = run
                .faults
                .iter()
                .filter(|(_, n)| **n > 0)
                .map(|(k, n)| format!("{k} {}", thousands(*n)))
                .collect();
            if !faults.is_empty() {
                let _ = write!(
                    out,
                    "<div class=\"warn\">faults counted: {}</div>",
                    esc(&faults.join(", "))
                );
            }
        }
        out.push_str("</th></tr>");
        for (k, view) in prep.series.iter().enumerate().filter(|(_, s)| s.input == i) {
            let s = &a.series[view.index];
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
            for key in &keys {
                let Some(value) = sum
                    .percentiles
                    .0
                    .iter()
                    .find(|(k, _)| k == key)
                    .map(|(_, v)| *v)
                else {
                    out.push_str("<td class=\"num na\">n/a</td>");
                    continue;
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
            let median_known =
                !s.percentiles_only || sum.percentiles.0.iter().any(|(k, _)| k == "50");
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
        let closed = a.load == Some(LoadMode::ClosedLoop)
            || a.series
                .iter()
                .any(|s| s.measured_from == MeasuredFrom::ActualStart);
        if closed {
            closed_loop.push(input.name.as_str());
        }
        printed_any |= a.series.iter().any(|s| s.percentiles_only);
    }
    out.push_str("</tbody></table></div>");
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
    out
}

const STALL_KEYS: [&str; 7] = ["start_s", "end_s", "p99", "max", "count", "mean", "reasons"];

/// A JSON value in one line of text: strings bare, objects as `k: v`.
fn inline(v: &Value) -> String {
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

/// Whether an array looks like audit checks: objects with a `status`.
fn is_checks(items: &[Value]) -> bool {
    !items.is_empty()
        && items
            .iter()
            .all(|i| i.get("status").is_some_and(Value::is_string))
}

fn is_warn(check: &Value) -> bool {
    check
        .get("status")
        .and_then(Value::as_str)
        .is_some_and(|s| {
            matches!(
                s.to_ascii_lowercase().as_str(),
                "warn" | "warning" | "fail" | "bad" | "error"
            )
        })
}

/// Every audit check (object with a `status`) anywhere in a JSON tree.
pub fn find_checks(v: &Value, out: &mut Vec<Value>) {
    match v {
        Value::Array(items) if is_checks(items) => out.extend(items.iter().cloned()),
        Value::Array(items) => items.iter().for_each(|i| find_checks(i, out)),
        Value::Object(map) => map.values().for_each(|i| find_checks(i, out)),
        _ => {}
    }
}

/// The warn findings of every input's host audit, most prominent first.
pub fn findings(prep: &Prepared) -> String {
    let mut rows = Vec::new();
    let mut seen: Vec<Value> = Vec::new();
    for input in &prep.inputs {
        let Some(run) = &input.loaded.run else {
            continue;
        };
        let mut checks = Vec::new();
        find_checks(
            &serde_json::to_value(&run.host).unwrap_or(Value::Null),
            &mut checks,
        );
        for c in checks.into_iter().filter(is_warn) {
            if seen.contains(&c) {
                continue;
            }
            let field = |k: &str| c.get(k).map(inline).unwrap_or_default();
            let id = ["id", "name", "check", "key"]
                .iter()
                .map(|k| field(k))
                .find(|s| !s.is_empty())
                .unwrap_or_else(|| "check".into());
            let mut text = format!("<strong>{}</strong>", esc(&id));
            let (current, recommended) = (field("current"), field("recommended"));
            if !current.is_empty() {
                let _ = write!(text, ": is <code>{}</code>", esc(&current));
            }
            if !recommended.is_empty() {
                let _ = write!(text, ", recommended <code>{}</code>", esc(&recommended));
            }
            let why = field("why");
            if !why.is_empty() {
                let _ = write!(text, " — {}", esc(&why));
            }
            rows.push(format!(
                "<li>{text} <small>({})</small></li>",
                esc(&input.name)
            ));
            seen.push(c);
        }
    }
    if rows.is_empty() {
        return String::new();
    }
    format!(
        "<section id=\"findings\" class=\"findings\"><h2>Host audit: {} setting(s) work against low latency</h2><ul>{}</ul></section>",
        rows.len(),
        rows.join("")
    )
}

/// A JSON value as HTML: objects as key/value tables, arrays of objects as
/// tables (audit checks with their status), scalars as text.
pub fn json_html(v: &Value) -> String {
    match v {
        Value::Null => "<span class=\"na\">not available</span>".into(),
        Value::String(s) => esc(s),
        Value::Bool(_) | Value::Number(_) => esc(&v.to_string()),
        Value::Array(items) if items.is_empty() => "<span class=\"na\">none</span>".into(),
        Value::Array(items) if items.iter().all(Value::is_object) => {
            let mut cols: Vec<String> = Vec::new();
            for item in items {
                for key in item.as_object().into_iter().flat_map(|m| m.keys()) {
                    if !cols.contains(key) {
                        cols.push(key.clone());
                    }
                }
            }
            let mut out = String::from("<table class=\"json\"><thead><tr>");
            for c in &cols {
                let _ = write!(out, "<th>{}</th>", esc(c));
            }
            out.push_str("</tr></thead><tbody>");
            for item in items {
                let class = match item.get("status").and_then(Value::as_str) {
                    Some(_) if is_warn(item) => " class=\"warnrow\"",
                    Some(s) if s.eq_ignore_ascii_case("ok") => " class=\"okrow\"",
                    _ => "",
                };
                let _ = write!(out, "<tr{class}>");
                for c in &cols {
                    let _ = write!(
                        out,
                        "<td>{}</td>",
                        item.get(c).map(json_html).unwrap_or_default()
                    );
                }
                out.push_str("</tr>");
            }
            out.push_str("</tbody></table>");
            out
        }
        Value::Array(items) => esc(&items.iter().map(inline).collect::<Vec<_>>().join(", ")),
        Value::Object(map) => {
            let mut out = String::from("<table class=\"kv\"><tbody>");
            for (k, v) in map {
                let _ = write!(
                    out,
                    "<tr><th>{}</th><td>{}</td></tr>",
                    esc(&k.replace('_', " ")),
                    json_html(v)
                );
            }
            out.push_str("</tbody></table>");
            out
        }
    }
}

/// The host snapshots, one per distinct snapshot, naming the inputs that share it.
pub fn hosts(prep: &Prepared) -> String {
    let mut groups: Vec<(Value, Vec<&str>)> = Vec::new();
    for input in &prep.inputs {
        let Some(run) = &input.loaded.run else {
            continue;
        };
        let host = serde_json::to_value(&run.host).unwrap_or(Value::Null);
        match groups.iter_mut().find(|(h, _)| *h == host) {
            Some((_, names)) => names.push(&input.name),
            None => groups.push((host, vec![&input.name])),
        }
    }
    if groups.is_empty() {
        return "<p class=\"note\">No input is a cauda run file, so no host conditions were recorded.</p>".into();
    }
    let mut out = String::new();
    for (host, names) in groups {
        let _ = write!(
            out,
            "<div class=\"host\"><p class=\"meta\">recorded with {}</p>{}</div>",
            esc(&names.join(", ")),
            json_html(&host)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn audit_checks_are_found_anywhere_and_warnings_marked() {
        let host = serde_json::json!({
            "kernel": "6.1",
            "audit": {"profile": "latency", "checks": [
                {"id": "vm.swappiness", "status": "warn", "current": "60", "recommended": "≤ 10", "why": "swap stalls"},
                {"id": "clocksource", "status": "ok", "current": "tsc"}
            ]}
        });
        let mut checks = Vec::new();
        find_checks(&host, &mut checks);
        assert_eq!(checks.len(), 2);
        assert_eq!(checks.iter().filter(|c| is_warn(c)).count(), 1);
        let html = json_html(&host);
        assert!(html.contains("class=\"warnrow\"") && html.contains("vm.swappiness"));
        assert!(html.contains("<th>recommended</th>"));
    }
}
