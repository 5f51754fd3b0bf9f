//! "Why the tail": for a run measured with `--kernel blame`, where the slow
//! operations' time went. A stacked bar per series splits all its slow
//! operations' time by cause, a stacked bar per operation does the same
//! for the 20 slowest (label: series, time from the start, latency; the
//! tasks that held its CPU in its tooltip), and a legend says what each
//! cause means. Each cause keeps one colour everywhere; `unexplained` is
//! drawn like any other cause, never left out.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::model::blame::{BlameReport, SlowOperation, cause_meaning, cause_of};
use crate::units::format_ns;

use super::prepare::Prepared;
use super::svg::{Svg, TICK_SIZE, esc, linear_ns_ticks, num, text_width};

/// The causes with time, in the order their segments are drawn, and the
/// colour of each (Okabe & Ito's palette, then Paul Tol's muted one for
/// the rest; grey for what no event explains).
pub const CAUSE_COLOURS: [(&str, &str); 11] = [
    ("idle_exit", "#56B4E9"),
    ("irq", "#E69F00"),
    ("softirq", "#DDCC77"),
    ("timer", "#0072B2"),
    ("block_queue", "#CC79A7"),
    ("block_device", "#882255"),
    ("blocked", "#999933"),
    ("run_queue", "#D55E00"),
    ("steal", "#332288"),
    ("running", "#009E73"),
    ("unexplained", "#B0B0B0"),
];

/// How many of the slowest operations get a bar.
pub const SLOWEST_DRAWN: usize = 20;
/// The most slow operations marked on a series' timeline (the slowest).
pub const MARKS_MAX: usize = 200;

const WIDTH: f64 = 1000.0;
const LABEL_W: f64 = 300.0;
const RIGHT_W: f64 = 150.0;
const ROW: f64 = 24.0;
const BAR: f64 = 16.0;

/// The colour of a cause (grey for one cauda does not know).
pub fn colour_of(cause: &str) -> &'static str {
    CAUSE_COLOURS
        .iter()
        .find(|(c, _)| *c == cause)
        .map_or("#B0B0B0", |(_, colour)| colour)
}

/// A vector's time per cause (details added up, page faults left out, as
/// they are a count), in drawing order, without the causes it lacks.
pub fn by_cause(causes: &BTreeMap<String, u64>) -> Vec<(&'static str, u64)> {
    CAUSE_COLOURS
        .iter()
        .map(|(cause, _)| {
            let ns = causes
                .iter()
                .filter(|(k, _)| cause_of(k) == *cause)
                .map(|(_, ns)| ns)
                .sum();
            (*cause, ns)
        })
        .filter(|(_, ns)| *ns > 0)
        .collect()
}

/// The section's body and its charts (`file`, SVG) when asked for, or
/// `None` when no input has a blame section.
pub fn section(prep: &Prepared, svgs: bool) -> Option<(String, Vec<(String, String)>)> {
    let blamed: Vec<(&str, &BlameReport)> = prep
        .inputs
        .iter()
        .filter_map(|i| Some((i.name.as_str(), i.loaded.run.as_ref()?.blame.as_ref()?)))
        .collect();
    if blamed.is_empty() {
        return None;
    }
    let mut body = String::from(
        "<p class=\"caption\">Where the slow operations' time went, as the kernel saw each \
         operation's own thread from its intended start to its completion (<code>--kernel \
         blame</code>). Each bar is split by cause; the order of the causes inside an \
         operation is not known, only each one's total. Hover a segment or a bar for its \
         numbers and the tasks that held the CPU.</p>",
    );
    let mut charts = Vec::new();
    for (k, (name, blame)) in blamed.iter().enumerate() {
        if blamed.len() > 1 {
            let _ = write!(body, "<h3>{}</h3>", esc(name));
        }
        let id = format!("chart-blame-series-{k}");
        let by_series = series_chart(blame, &id, false);
        let slowest_id = format!("chart-blame-slowest-{k}");
        let slowest = slowest_chart(&blame.slowest, &slowest_id, false);
        let _ = write!(
            body,
            "<figure>{by_series}</figure><p class=\"caption\">Each series' slow operations \
             (slower than {}): their time added up, as a share by cause.</p>",
            esc(&threshold_words(blame))
        );
        if let Some(chart) = &slowest {
            let _ = write!(
                body,
                "<figure>{chart}</figure><p class=\"caption\">The {} slowest operations, slowest \
                 first, on one latency scale: series, time from the start of the run, latency; \
                 on the right the task that held the CPU longest while the operation waited.</p>",
                blame.slowest.len().min(SLOWEST_DRAWN)
            );
        }
        if svgs {
            charts.push((
                format!("blame-series-{k}.svg"),
                series_chart(blame, &id, true),
            ));
            if let Some(chart) = slowest_chart(&blame.slowest, &slowest_id, true) {
                charts.push((format!("blame-slowest-{k}.svg"), chart));
            }
        }
        body.push_str(&legend_list(blame));
        body.push_str(&lost_note(blame));
    }
    Some((body, charts))
}

/// "the previous intervals' p99" or "1 ms".
fn threshold_words(blame: &BlameReport) -> String {
    match blame.threshold {
        crate::model::blame::Threshold::PreviousP99 => {
            "the p99 of the operations before them".into()
        }
        crate::model::blame::Threshold::Fixed { ns } => format_ns(ns as f64),
    }
}

/// The legend: each cause the section shows, its colour and its meaning.
fn legend_list(blame: &BlameReport) -> String {
    let mut present: Vec<&str> = Vec::new();
    let keys = blame
        .series
        .iter()
        .flat_map(|s| &s.intervals)
        .flat_map(|iv| iv.causes.keys())
        .chain(blame.slowest.iter().flat_map(|op| op.causes.keys()));
    for key in keys {
        let cause = cause_of(key);
        if !present.contains(&cause) {
            present.push(cause);
        }
    }
    let mut out = String::from("<ul class=\"causes\">");
    for (cause, colour) in CAUSE_COLOURS.iter().filter(|(c, _)| present.contains(c)) {
        let _ = write!(
            out,
            "<li><span class=\"sw\" style=\"background:{colour}\"></span><b>{cause}</b>: {}</li>",
            esc(cause_meaning(cause))
        );
    }
    if present.contains(&"page_fault") {
        let _ = write!(
            out,
            "<li><b>page_fault</b>: {} — in the tooltips, not drawn</li>",
            esc(cause_meaning("page_fault"))
        );
    }
    out.push_str("</ul>");
    out
}

/// What the kernel could not keep, when anything.
fn lost_note(blame: &BlameReport) -> String {
    let lost: Vec<String> = blame
        .lost
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(why, n)| format!("{n} {why}"))
        .collect();
    if lost.is_empty() {
        String::new()
    } else {
        format!(
            "<p class=\"warn\">Events the kernel could not keep: {}.</p>",
            esc(&lost.join(", "))
        )
    }
}

/// One segment: a rectangle with its tooltip.
fn segment(svg: &mut Svg, x: f64, y: f64, w: f64, cause: &str, title: &str) {
    svg.raw(&format!(
        "<rect class=\"cause\" data-cause=\"{cause}\" x=\"{}\" y=\"{}\" width=\"{}\" \
         height=\"{BAR}\" fill=\"{}\"><title>{}</title></rect>",
        num(x),
        num(y),
        num(w.max(0.5)),
        colour_of(cause),
        esc(title)
    ));
}

/// A stacked bar per series: its slow operations' time by cause, as a
/// share of their total latency.
fn series_chart(blame: &BlameReport, id: &str, standalone: bool) -> String {
    let rows = blame.series.len().max(1);
    let height = 20.0 + rows as f64 * ROW + 30.0;
    let bar_w = WIDTH - LABEL_W - RIGHT_W;
    let mut svg = Svg::new(
        id,
        WIDTH,
        height,
        "Slow operations' time by cause, per series",
        standalone,
    );
    for pct in [0.0, 25.0, 50.0, 75.0, 100.0] {
        let x = LABEL_W + bar_w * pct / 100.0;
        svg.line(
            x,
            14.0,
            x,
            height - 26.0,
            "stroke=\"#d9d9d9\" stroke-width=\"1\"",
        );
        svg.text(
            x,
            height - 10.0,
            "middle",
            " fill=\"#333\"",
            &format!("{pct:.0} %"),
        );
    }
    for (row, series) in blame.series.iter().enumerate() {
        let y = 20.0 + row as f64 * ROW;
        let mut total: BTreeMap<String, u64> = BTreeMap::new();
        let (mut slow, mut latency) = (0, 0u64);
        for iv in &series.intervals {
            slow += iv.slow;
            latency = latency.saturating_add(iv.latency_ns);
            for (key, ns) in &iv.causes {
                *total.entry(key.clone()).or_default() += ns;
            }
        }
        svg.text(
            LABEL_W - 8.0,
            y + 12.5,
            "end",
            " fill=\"#222\"",
            &format!("{} ({slow} slow)", series.tag),
        );
        let mut x = LABEL_W;
        for (cause, ns) in by_cause(&total) {
            let share = ns as f64 / latency.max(1) as f64;
            let w = bar_w * share;
            let title = format!(
                "{}: {} of {} ({:.1} %)",
                cause,
                format_ns(ns as f64),
                format_ns(latency as f64),
                share * 100.0
            );
            segment(&mut svg, x, y, w, cause, &title);
            x += w;
        }
        svg.text(
            LABEL_W + bar_w + 8.0,
            y + 12.5,
            "start",
            " fill=\"#555\"",
            &format!("{} in all", format_ns(latency as f64)),
        );
    }
    svg.finish()
}

/// A stacked bar per slow operation, on one latency scale, for the
/// [`SLOWEST_DRAWN`] slowest; `None` when none was kept.
fn slowest_chart(ops: &[SlowOperation], id: &str, standalone: bool) -> Option<String> {
    let drawn = &ops[..ops.len().min(SLOWEST_DRAWN)];
    let hi = drawn.iter().map(|op| op.latency_ns).max()? as f64;
    let height = 20.0 + drawn.len() as f64 * ROW + 30.0;
    let bar_w = WIDTH - LABEL_W - RIGHT_W;
    let mut svg = Svg::new(
        id,
        WIDTH,
        height,
        "The slowest operations by cause",
        standalone,
    );
    for tick in linear_ns_ticks(hi) {
        let x = LABEL_W + bar_w * tick.value / hi;
        svg.line(
            x,
            14.0,
            x,
            height - 26.0,
            "stroke=\"#d9d9d9\" stroke-width=\"1\"",
        );
        svg.text(x, height - 10.0, "middle", " fill=\"#333\"", &tick.label);
    }
    for (row, op) in drawn.iter().enumerate() {
        let y = 20.0 + row as f64 * ROW;
        let label = format!(
            "{} at {:.3} s: {}",
            op.series,
            op.start_ns as f64 / 1e9,
            format_ns(op.latency_ns as f64)
        );
        let label = fit(&label, LABEL_W - 12.0);
        svg.raw(&format!(
            "<g class=\"op\"><title>{}</title>",
            esc(&tooltip(op))
        ));
        svg.text(LABEL_W - 8.0, y + 12.5, "end", " fill=\"#222\"", &label);
        let mut x = LABEL_W;
        for (cause, ns) in by_cause(&op.causes) {
            let w = bar_w * ns as f64 / hi;
            segment(
                &mut svg,
                x,
                y,
                w,
                cause,
                &format!("{cause}: {}", format_ns(ns as f64)),
            );
            x += w;
        }
        if let Some(c) = op.culprits.first() {
            let text = fit(&format!("{} ({})", c.comm, c.pid), RIGHT_W - 12.0);
            svg.text(x + 6.0, y + 12.5, "start", " fill=\"#555\"", &text);
        }
        svg.raw("</g>");
    }
    Some(svg.finish())
}

/// An operation's tooltip: where and when, its causes, its culprits.
fn tooltip(op: &SlowOperation) -> String {
    let mut lines = vec![format!(
        "{} thread {} (tid {}) on cpu {}, at {:.6} s: {}",
        op.series,
        op.thread,
        op.tid,
        op.cpu,
        op.start_ns as f64 / 1e9,
        format_ns(op.latency_ns as f64)
    )];
    for (key, ns) in &op.causes {
        if cause_of(key) != "page_fault" {
            lines.push(format!("  {key}: {}", format_ns(*ns as f64)));
        }
    }
    if op.culprits.is_empty() {
        lines.push("no task held its CPU while it waited".into());
    }
    for c in &op.culprits {
        lines.push(format!(
            "held its CPU: {} (pid {}) {}",
            c.comm,
            c.pid,
            format_ns(c.ns as f64)
        ));
    }
    lines.push(format!(
        "page faults {}, block requests {}",
        op.page_faults, op.requests
    ));
    lines.join("\n")
}

/// `text`, cut with an ellipsis to fit `width` px.
fn fit(text: &str, width: f64) -> String {
    if text_width(text, TICK_SIZE) <= width {
        return text.to_string();
    }
    let mut cut: String = text.to_string();
    while !cut.is_empty() && text_width(&cut, TICK_SIZE) + 10.0 > width {
        cut.pop();
    }
    format!("{cut}…")
}

/// The slow operations of series `tag` to mark on its timeline: (time
/// from the start in s, latency in ns, tooltip), the [`MARKS_MAX`] slowest.
pub fn marks(blame: Option<&BlameReport>, tag: &str) -> Vec<(f64, u64, String)> {
    let Some(blame) = blame else {
        return Vec::new();
    };
    blame
        .slowest
        .iter()
        .filter(|op| op.series == tag)
        .take(MARKS_MAX)
        .map(|op| {
            let top = by_cause(&op.causes).into_iter().max_by_key(|(_, ns)| *ns);
            let why = top.map_or(String::new(), |(cause, ns)| {
                format!(", mostly {cause} ({})", format_ns(ns as f64))
            });
            (
                op.start_ns as f64 / 1e9,
                op.latency_ns,
                format!(
                    "slow {} at {:.3} s: {}{why}",
                    op.series,
                    op.start_ns as f64 / 1e9,
                    format_ns(op.latency_ns as f64)
                ),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::formats::export::blame_sample::{blame, timer_run};
    use crate::report::html::{Options, render};

    /// The markup of the element with `id` (up to its closing tag).
    fn chart<'a>(page: &'a str, id: &str) -> &'a str {
        let start = page.find(&format!("id=\"{id}\"")).unwrap();
        let end = start + page[start..].find("</svg>").unwrap();
        &page[start..end]
    }

    fn causes_drawn(svg: &str) -> Vec<&str> {
        svg.split("data-cause=\"")
            .skip(1)
            .map(|s| &s[..s.find('"').unwrap()])
            .collect()
    }

    #[test]
    fn a_run_with_blame_gets_why_the_tail() {
        let page = render(&[timer_run(true)], None, &Options::default()).unwrap();
        assert!(page.contains("<section id=\"why\"><h2>Why the tail</h2>"));
        let blame = blame();
        let totals: BTreeSet<&str> = blame.series[0]
            .intervals
            .iter()
            .flat_map(|iv| iv.causes.keys())
            .map(|k| cause_of(k))
            .filter(|c| *c != "page_fault")
            .collect();
        let series = causes_drawn(chart(&page, "chart-blame-series-0"));
        assert_eq!(
            series.len(),
            totals.len(),
            "one segment per cause: {series:?}"
        );
        assert_eq!(series.iter().copied().collect::<BTreeSet<_>>(), totals);
        let slowest = chart(&page, "chart-blame-slowest-0");
        assert_eq!(slowest.matches("<g class=\"op\">").count(), SLOWEST_DRAWN);
        let first = &blame.slowest[0];
        let label = format!(
            "wakeup at {:.3} s: {}",
            first.start_ns as f64 / 1e9,
            format_ns(first.latency_ns as f64)
        );
        assert!(slowest.contains(&label), "{label}");
        assert!(slowest.contains("held its CPU: stress-ng (pid 777)"));
        for (cause, _) in by_cause(&first.causes) {
            assert!(slowest.contains(&format!("data-cause=\"{cause}\"")));
        }
        assert!(
            page.contains("<b>run_queue</b>: runnable"),
            "the legend says what a cause means"
        );
        let timeline = chart(&page, "chart-timeline-0");
        let marked = blame
            .slowest
            .iter()
            .filter(|op| op.series == "wakeup")
            .count();
        assert_eq!(
            timeline.matches("<circle class=\"slow\"").count(),
            marked.min(MARKS_MAX)
        );
    }

    #[test]
    fn a_run_without_blame_has_no_such_section() {
        let page = render(&[timer_run(false)], None, &Options::default()).unwrap();
        assert!(!page.contains("id=\"why\""));
        assert!(!page.contains("Why the tail"));
        assert!(!page.contains("class=\"slow\""));
    }
}
