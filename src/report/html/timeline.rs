//! The timeline of one series: per interval p50, p99, max and mean on a log
//! latency axis, stalls shaded and numbered. The mean line is the one a
//! per-second monitoring average shows; it stays flat while the max spikes.
//!
//! Long runs are decimated to one bucket per two pixels, keeping each
//! line's lowest and highest value in the bucket in time order (the M4
//! idea: Jugel et al., "M4: A Visualization-Oriented Time Series Data
//! Aggregation", VLDB 2014), so no max, spike or dip is ever dropped. The
//! page's script shows a bucket's values on hover from a compact JSON table.

use std::fmt::Write;

use crate::analyze::stalls::IntervalPoint;
use crate::analyze::stalls::Stall;

use super::legend::{LegendEntry, legend, legend_height};
use super::svg::{self, Axis, Frame, Scale, Svg, num, text_width};
use crate::units::format_ns;

const WIDTH: f64 = 1000.0;
const PLOT_HEIGHT: f64 = 230.0;
/// Stalls are numbered on the chart up to this many (beyond, the numbers
/// would be a wall; the table lists them).
const MAX_NUMBERED: usize = 40;
/// Pixels per decimation bucket.
const BUCKET_PX: f64 = 2.0;

/// The four lines: name, colour, dash, value of a point.
type Metric = (
    &'static str,
    &'static str,
    &'static str,
    fn(&IntervalPoint) -> f64,
);

const METRICS: [Metric; 4] = [
    ("max", "#000000", "", |p| p.max as f64),
    ("p99", "#D55E00", "", |p| p.p99 as f64),
    ("p50", "#0072B2", "", |p| p.p50 as f64),
    ("mean", "#009E73", "5 3", |p| p.mean),
];

/// The stall shade.
pub const STALL_FILL: &str = "#CC79A7";

/// True when a series has intervals with times to draw.
pub fn drawable(points: &[IntervalPoint]) -> bool {
    points.iter().any(|p| p.length_s > 0.0 && p.count > 0)
}

/// One decimation bucket: the intervals `first..=last`.
struct Bucket {
    first: usize,
    last: usize,
}

fn buckets(points: &[IntervalPoint], t_end: f64, n: usize) -> Vec<Bucket> {
    let mut out: Vec<Bucket> = Vec::new();
    let mut current = usize::MAX;
    for (i, p) in points.iter().enumerate() {
        let b = ((p.start_s / t_end) * n as f64)
            .floor()
            .clamp(0.0, n as f64 - 1.0) as usize;
        if b == current {
            if let Some(last) = out.last_mut() {
                last.last = i;
            }
        } else {
            out.push(Bucket { first: i, last: i });
            current = b;
        }
    }
    out
}

/// The decimated points of one metric: per bucket its lowest and highest
/// value in time order (one point when they coincide); `None` marks a gap
/// (a bucket where nothing completed).
fn decimate(
    points: &[IntervalPoint],
    buckets: &[Bucket],
    value: fn(&IntervalPoint) -> f64,
) -> Vec<Option<(f64, f64)>> {
    let mid = |p: &IntervalPoint| p.start_s + p.length_s / 2.0;
    let mut out = Vec::with_capacity(buckets.len() * 2);
    for b in buckets {
        let busy = (b.first..=b.last).filter(|&i| points[i].count > 0);
        let mut lowest: Option<usize> = None;
        let mut highest: Option<usize> = None;
        for i in busy {
            let v = value(&points[i]);
            if lowest.is_none_or(|l| v < value(&points[l])) {
                lowest = Some(i);
            }
            if highest.is_none_or(|h| v > value(&points[h])) {
                highest = Some(i);
            }
        }
        match (lowest, highest) {
            (Some(l), Some(h)) if l == h => out.push(Some((mid(&points[l]), value(&points[l])))),
            (Some(l), Some(h)) => {
                let (a, b) = if l < h { (l, h) } else { (h, l) };
                out.push(Some((mid(&points[a]), value(&points[a]))));
                out.push(Some((mid(&points[b]), value(&points[b]))));
            }
            _ => out.push(None),
        }
    }
    out
}

fn polyline(values: &[Option<(f64, f64)>], x: &Axis, y: &Axis) -> String {
    let mut d = String::new();
    let mut pen_down = false;
    for v in values {
        match v {
            Some((t, v)) if *v > 0.0 => {
                let _ = write!(
                    d,
                    "{}{} {}",
                    if pen_down { "L" } else { "M" },
                    num(x.map(*t)),
                    num(y.map(*v))
                );
                pen_down = true;
            }
            _ => pen_down = false,
        }
    }
    d
}

/// The hover table: per bucket `[t_start, t_end, intervals, count, p50 low,
/// p50 high, p99 low, p99 high, max, mean]` (ns; mean weighted by count).
fn hover_json(points: &[IntervalPoint], buckets: &[Bucket]) -> String {
    let mut out = String::from("[");
    for (i, b) in buckets.iter().enumerate() {
        let span = &points[b.first..=b.last];
        let busy: Vec<&IntervalPoint> = span.iter().filter(|p| p.count > 0).collect();
        let count: u64 = span.iter().map(|p| p.count).sum();
        let lo_hi = |f: fn(&IntervalPoint) -> u64| {
            let lo = busy.iter().map(|p| f(p)).min().unwrap_or(0);
            let hi = busy.iter().map(|p| f(p)).max().unwrap_or(0);
            (lo, hi)
        };
        let (p50_lo, p50_hi) = lo_hi(|p| p.p50);
        let (p99_lo, p99_hi) = lo_hi(|p| p.p99);
        let max = busy.iter().map(|p| p.max).max().unwrap_or(0);
        let mean = if count > 0 {
            busy.iter().map(|p| p.mean * p.count as f64).sum::<f64>() / count as f64
        } else {
            0.0
        };
        let last = &points[b.last];
        if i > 0 {
            out.push(',');
        }
        let _ = write!(
            out,
            "[{},{},{},{count},{p50_lo},{p50_hi},{p99_lo},{p99_hi},{max},{}]",
            svg::trim_number(points[b.first].start_s, 3),
            svg::trim_number(last.start_s + last.length_s, 3),
            b.last - b.first + 1,
            mean.round()
        );
    }
    out.push(']');
    out
}

/// The chart and its hover data, for one series' intervals.
pub struct Timeline {
    /// The SVG.
    pub svg: String,
    /// The hover data, JSON: `{"b": buckets (see `hover_json`), "s": [[stall
    /// start, end], …]}` in seconds.
    pub hover: String,
}

/// The mark of a slow operation (`--kernel blame`).
pub const SLOW_MARK: &str = "#7B2D8E";

/// A slow operation to mark: time from the start (s), latency (ns), tooltip.
pub type Mark = (f64, u64, String);

/// Draws one series' timeline, with its slow operations marked.
pub fn render(
    points: &[IntervalPoint],
    stalls: &[Stall],
    marks: &[Mark],
    label: &str,
    id: &str,
    standalone: bool,
) -> Timeline {
    let entries = legend_entries(stalls, !marks.is_empty());
    let frame = Frame::chart(WIDTH, PLOT_HEIGHT, 30.0);
    let legend_top = frame.bottom() + 50.0;
    let height = legend_top + legend_height(&entries, WIDTH - 100.0) + 6.0;
    let mut svg = Svg::new(
        id,
        WIDTH,
        height,
        &format!("Timeline of {label}: per-interval p50, p99, max and mean"),
        standalone,
    );
    let (x_axis, y_axis) = axes(points, &frame);
    let t_end = x_axis.hi;
    svg.axes(
        &frame,
        (
            &x_axis,
            &svg::time_ticks(t_end),
            "time from the start of the run",
        ),
        (
            &y_axis,
            &svg::log_ns_ticks(y_axis.lo, y_axis.hi),
            "latency (log scale)",
        ),
    );
    draw_stalls(&mut svg, stalls, &frame, &x_axis);
    let n_buckets = ((frame.width / BUCKET_PX) as usize).max(1);
    let buckets = buckets(points, t_end, n_buckets);
    draw_lines(&mut svg, points, &buckets, n_buckets, (&x_axis, &y_axis));
    // The hover layer only works with the page's script; a standalone
    // chart keeps the stalls' own tooltips reachable instead.
    if !standalone {
        draw_hover_layer(&mut svg, &frame, t_end);
    }
    draw_marks(&mut svg, marks, (&x_axis, &y_axis));
    legend(&mut svg, &entries, 20.0, legend_top, WIDTH - 100.0);
    Timeline {
        svg: svg.finish(),
        hover: hover(points, &buckets, stalls),
    }
}

/// Each slow operation as a small ring at its time and latency, its
/// tooltip naming its main cause (drawn over the hover layer, so the
/// tooltip is reachable).
fn draw_marks(svg: &mut Svg, marks: &[Mark], (x_axis, y_axis): (&Axis, &Axis)) {
    for (t, latency, title) in marks {
        svg.raw(&format!(
            "<circle class=\"slow\" cx=\"{}\" cy=\"{}\" r=\"3.5\" fill=\"#fff\" \
             fill-opacity=\"0.6\" stroke=\"{SLOW_MARK}\" stroke-width=\"1.5\"><title>{}</title></circle>",
            num(x_axis.map(*t)),
            num(y_axis.map(*latency as f64)),
            svg::esc(title)
        ));
    }
}

/// The four lines' entries, then the stalls' and the slow operations'
/// when there are any.
fn legend_entries(stalls: &[Stall], marked: bool) -> Vec<LegendEntry> {
    METRICS
        .iter()
        .map(|(name, c, d, _)| LegendEntry {
            label: format!("interval {name}"),
            colour: (*c).into(),
            dash: (*d).into(),
            series: None,
            swatch: false,
        })
        .chain((!stalls.is_empty()).then(|| LegendEntry {
            label: if stalls.len() <= MAX_NUMBERED {
                "stall (numbered as in the stall table)".into()
            } else {
                format!("stall ({})", stalls.len())
            },
            colour: STALL_FILL.into(),
            dash: String::new(),
            series: None,
            swatch: true,
        }))
        .chain(marked.then(|| LegendEntry {
            label: "slow operation (see Why the tail)".into(),
            colour: SLOW_MARK.into(),
            dash: "1 3".into(),
            series: None,
            swatch: false,
        }))
        .collect()
}

/// The time axis (the whole run) and the log latency axis (from the lowest
/// p50 or mean to the highest max, with some room).
fn axes(points: &[IntervalPoint], frame: &Frame) -> (Axis, Axis) {
    let t_end = points
        .iter()
        .map(|p| p.start_s + p.length_s)
        .fold(0.0, f64::max)
        .max(1e-3);
    let busy = || points.iter().filter(|p| p.count > 0);
    let lo = busy()
        .map(|p| (p.p50 as f64).min(p.mean).max(1.0))
        .fold(f64::INFINITY, f64::min);
    let hi = busy().map(|p| p.max as f64).fold(1.0, f64::max);
    let (lo, hi) = (lo / 1.25, (hi * 1.25).max(lo * 3.0));
    let x_axis = Axis {
        lo: 0.0,
        hi: t_end,
        px_lo: frame.left,
        px_hi: frame.right(),
        scale: Scale::Linear,
    };
    let y_axis = Axis {
        lo,
        hi,
        px_lo: frame.bottom(),
        px_hi: frame.top,
        scale: Scale::Log,
    };
    (x_axis, y_axis)
}

/// Shades each stall with its tooltip and numbers those whose number fits
/// (up to [`MAX_NUMBERED`]).
fn draw_stalls(svg: &mut Svg, stalls: &[Stall], frame: &Frame, x_axis: &Axis) {
    let mut last_label = f64::NEG_INFINITY;
    for (i, s) in stalls.iter().enumerate() {
        let (x0, x1) = (x_axis.map(s.start_s), x_axis.map(s.end_s));
        let w = (x1 - x0).max(2.0);
        svg.raw(&format!(
            "<rect class=\"stall\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{STALL_FILL}\" fill-opacity=\"0.28\"><title>stall {}: {}–{} s, p99 {}, max {}, mean {}</title></rect>",
            num(x0),
            num(frame.top),
            num(w),
            num(frame.height),
            i + 1,
            svg::trim_number(s.start_s, 3),
            svg::trim_number(s.end_s, 3),
            format_ns(s.p99 as f64),
            format_ns(s.max as f64),
            format_ns(s.mean)
        ));
        let text = format!("{}", i + 1);
        let cx = x0 + w / 2.0;
        if stalls.len() <= MAX_NUMBERED && cx - text_width(&text, 10.0) / 2.0 > last_label + 3.0 {
            svg.text(
                cx,
                frame.top + 11.0,
                "middle",
                " font-size=\"10\" fill=\"#6b2a55\" font-weight=\"bold\"",
                &text,
            );
            last_label = cx + text_width(&text, 10.0) / 2.0;
        }
    }
}

/// The four lines, each decimated into the buckets.
fn draw_lines(
    svg: &mut Svg,
    points: &[IntervalPoint],
    buckets: &[Bucket],
    n_buckets: usize,
    (x_axis, y_axis): (&Axis, &Axis),
) {
    for (name, c, d, value) in METRICS {
        let dash = if d.is_empty() {
            String::new()
        } else {
            format!(" stroke-dasharray=\"{d}\"")
        };
        // Dense (decimated) timelines get thinner lines so the four stay apart.
        let dense = points.len() > n_buckets;
        let width = match (name, dense) {
            ("max", _) => "1.2",
            (_, true) => "1.1",
            _ => "1.8",
        };
        svg.raw(&format!(
            "<path class=\"line {name}\" d=\"{}\" fill=\"none\" stroke=\"{c}\" stroke-width=\"{width}\" stroke-linejoin=\"round\"{dash}><title>interval {name}</title></path>",
            polyline(&decimate(points, buckets, value), x_axis, y_axis)
        ));
    }
}

/// The page script's hover rule and the transparent area it listens on.
fn draw_hover_layer(svg: &mut Svg, frame: &Frame, t_end: f64) {
    svg.raw(&format!(
        "<line class=\"rule\" x1=\"0\" y1=\"{}\" x2=\"0\" y2=\"{}\" stroke=\"#444\" stroke-width=\"1\" visibility=\"hidden\"/>",
        num(frame.top),
        num(frame.bottom())
    ));
    svg.raw(&format!(
        "<rect class=\"hover\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"transparent\" data-t1=\"{}\"/>",
        num(frame.left),
        num(frame.top),
        num(frame.width),
        num(frame.height),
        svg::trim_number(t_end, 3)
    ));
}

/// The hover data (see [`Timeline::hover`]).
fn hover(points: &[IntervalPoint], buckets: &[Bucket], stalls: &[Stall]) -> String {
    format!(
        "{{\"b\":{},\"s\":[{}]}}",
        hover_json(points, buckets),
        stalls
            .iter()
            .map(|s| format!(
                "[{},{}]",
                svg::trim_number(s.start_s, 3),
                svg::trim_number(s.end_s, 3)
            ))
            .collect::<Vec<_>>()
            .join(",")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(i: usize, p99: u64, max: u64) -> IntervalPoint {
        IntervalPoint {
            start_s: i as f64,
            length_s: 1.0,
            count: 1_000,
            p50: 40_000,
            p99,
            max,
            mean: 41_000.0,
        }
    }

    #[test]
    fn decimation_never_drops_a_max() {
        let mut points: Vec<IntervalPoint> =
            (0..36_000).map(|i| point(i, 60_000, 90_000)).collect();
        points[12_345].max = 541_000_000;
        points[20_000].count = 0;
        let b = buckets(&points, 36_000.0, 400);
        assert_eq!(b.len(), 400);
        let maxes = decimate(&points, &b, |p| p.max as f64);
        assert!(maxes.len() <= 800);
        let top = maxes.iter().flatten().map(|&(_, v)| v).fold(0.0, f64::max);
        assert_eq!(top, 541_000_000.0);
        let hover = hover_json(&points, &b);
        assert!(hover.contains(",541000000,"));
        assert_eq!(hover.matches('[').count(), 401);
    }

    #[test]
    fn empty_intervals_break_the_line() {
        let mut points: Vec<IntervalPoint> = (0..10).map(|i| point(i, 60_000, 90_000)).collect();
        points[5].count = 0;
        let b = buckets(&points, 10.0, 100);
        let x = Axis {
            lo: 0.0,
            hi: 10.0,
            px_lo: 0.0,
            px_hi: 100.0,
            scale: Scale::Linear,
        };
        let y = Axis {
            lo: 1e3,
            hi: 1e6,
            px_lo: 100.0,
            px_hi: 0.0,
            scale: Scale::Log,
        };
        let d = polyline(&decimate(&points, &b, |p| p.p99 as f64), &x, &y);
        assert_eq!(d.matches('M').count(), 2, "{d}");
        assert_eq!(d.matches('L').count(), 7, "{d}");
    }
}
