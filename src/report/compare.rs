//! Before/after tables: the terminal view and the Markdown the field
//! publishes, from the same rows.

use std::fmt::Write;

use crate::analyze::compare::{Comparison, Row, Verdict};
use crate::report::color::{Paint, paint};
use crate::report::table::thousands;
use crate::units::format_ns;

fn value(row: &Row, v: f64) -> String {
    match row.metric.as_str() {
        "count" => thousands(v.round() as u64),
        "throughput" => format!("{v:.1}/s"),
        _ => format_ns(v),
    }
}

fn signed(pct: f64) -> String {
    format!("{pct:+.1} %")
}

fn cells(row: &Row) -> [String; 7] {
    [
        row.series.clone(),
        row.metric.clone(),
        value(row, row.base),
        value(row, row.new),
        row.change_pct.map_or_else(|| "—".into(), signed),
        row.ci_pct
            .map_or_else(|| "—".into(), |[lo, hi]| format!("[{lo:+.1}, {hi:+.1}] %")),
        match row.verdict {
            Verdict::Better => "better".into(),
            Verdict::Worse => "WORSE".into(),
            Verdict::Same => "same".into(),
        },
    ]
}

fn headers(confidence: f64) -> [String; 7] {
    [
        "series".into(),
        "metric".into(),
        "base".into(),
        "new".into(),
        "change".into(),
        format!("{:.0}% CI", confidence * 100.0),
        "verdict".into(),
    ]
}

fn host_lines(c: &Comparison, out: &mut String, bullet: &str) {
    if c.host_changes.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nhost settings that differ:");
    for h in &c.host_changes {
        let show = |v: &serde_json::Value| match v {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Null => "(unknown)".into(),
            other => other.to_string(),
        };
        let _ = writeln!(
            out,
            "{bullet}{}: {} → {}",
            h.key,
            show(&h.base),
            show(&h.new)
        );
    }
}

/// The terminal table, without colour.
pub fn render_text(c: &Comparison) -> String {
    render_styled(c, false)
}

/// The verdict cell, coloured when `color`: green better, bold red worse.
fn verdict_cell(row: &Row, cell: &str, color: bool) -> String {
    match row.verdict {
        Verdict::Better if color => paint(cell, Paint::Good),
        Verdict::Worse if color => paint(cell, Paint::Bad),
        _ => cell.to_string(),
    }
}

/// The terminal table, its verdicts coloured when `color` (widths are
/// those of the plain text, so the columns line up either way).
pub fn render_styled(c: &Comparison, color: bool) -> String {
    let mut rows: Vec<[String; 7]> = vec![headers(c.confidence)];
    rows.extend(c.rows.iter().map(cells));
    let widths: Vec<usize> = (0..7)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = format!("base: {}\nnew:  {}\n\n", c.base, c.new);
    for (n, row) in rows.iter().enumerate() {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i == 6 && n > 0 {
                let _ = write!(line, "{}", verdict_cell(&c.rows[n - 1], cell, color));
            } else if i < 2 || i == 6 {
                let _ = write!(line, "{cell:<w$}  ", w = widths[i]);
            } else {
                let _ = write!(line, "{cell:>w$}  ", w = widths[i]);
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    if let Some(method) = c.rows.first().map(|r| r.method) {
        let how = if method == "bootstrap" {
            "bootstrap over intervals"
        } else {
            "from the percentiles' own confidence intervals (one interval per side)"
        };
        let _ = writeln!(
            out,
            "\nchange = new/base − 1; interval {how}; same = interval spans 0 or change within 0.1 %"
        );
    }
    if !c.unpaired.is_empty() {
        let _ = writeln!(
            out,
            "not compared (on one side only): {}",
            c.unpaired.join(", ")
        );
    }
    super::blame::write_shift(&mut out, &c.blame);
    host_lines(c, &mut out, "  ");
    out
}

/// The Markdown table.
pub fn render_markdown(c: &Comparison) -> String {
    let mut out = format!("**base:** `{}` — **new:** `{}`\n\n", c.base, c.new);
    let h = headers(c.confidence);
    let _ = writeln!(out, "| {} |", h.join(" | "));
    let _ = writeln!(out, "|---|---|--:|--:|--:|--:|---|");
    for row in &c.rows {
        let mut cells = cells(row);
        if row.verdict != Verdict::Same {
            cells[6] = format!("**{}**", cells[6].to_lowercase());
        }
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    super::blame::write_shift_markdown(&mut out, &c.blame);
    host_lines(c, &mut out, "- ");
    out
}
