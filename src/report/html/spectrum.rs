//! The percentile spectrum: latency against 1/(1−q) on a log axis, so
//! 90, 99, 99.9 … % are evenly spaced and the far tail gets as much room as
//! the body (HdrHistogram's percentile distribution plot). Every series is
//! a step line; its max is marked where the sample ends (at 1 − 1/n); its
//! clusters, when it has more than one, are shaded bands.

use std::fmt::Write;

use super::legend::{LegendEntry, legend, legend_height};
use super::prepare::{Prepared, SeriesView, Shape};
use super::svg::{
    self, Axis, Frame, Scale, Svg, Tick, colour, dash, esc, num, text_width, trim_number,
};
use crate::units::format_ns;

const WIDTH: f64 = 1000.0;
const PLOT_HEIGHT: f64 = 400.0;
/// Cluster bands are drawn for at most this many series: beyond, the
/// overlapping bands would hide the lines.
pub const MAX_BANDED: usize = 3;

/// The x position (1/(1−q)) of quantile `q` in a sample of `n`: the far end
/// is 1 − 1/n, where the sample runs out.
fn x_of(q: f64, n: u64) -> f64 {
    let last = 1.0 - 1.0 / n.max(2) as f64;
    1.0 / (1.0 - q.min(last))
}

/// Percent label of 1/(1−q) = 10^k: `0 %`, `90 %`, `99.9 %`.
fn percent_label(k: i32) -> String {
    let p = 100.0 * (1.0 - 10f64.powi(-k));
    format!("{} %", trim_number(p, k.max(0) as usize))
}

/// Builds a step path from (x_start_px, x_end_px, y_px) steps, collapsing
/// steps narrower than half a pixel (monotone: the last value of a column
/// is its highest, so nothing drawn is lost).
fn step_path(steps: &[(f64, f64, f64)]) -> String {
    let mut d = String::new();
    let mut x = f64::NAN;
    let mut pending_y: Option<f64> = None;
    for (i, &(xs, xe, y)) in steps.iter().enumerate() {
        if i == 0 {
            let _ = write!(d, "M{} {}", num(xs), num(y));
            x = xs;
        } else {
            pending_y = Some(y);
        }
        let last = i + 1 == steps.len();
        if xe - x >= 0.5 || last {
            if let Some(py) = pending_y.take() {
                let _ = write!(d, "V{}", num(py));
            }
            if xe > x {
                let _ = write!(d, "H{}", num(xe));
                x = xe;
            }
        }
    }
    if let Some(py) = pending_y {
        let _ = write!(d, "V{}", num(py));
    }
    d
}

/// A step in pixels: x start, x end, y.
type PixelStep = (f64, f64, f64);
/// A printed percentile's marker: x, y, quantile, value.
type Dot = (f64, f64, f64, u64);

/// Whether a series has a line to draw: values, and for printed
/// percentiles at least one percentile between the min and the max.
pub fn drawn(prep: &Prepared, s: &SeriesView) -> bool {
    prep.analysis(s).summary.count > 0
        && match &s.shape {
            Shape::Distribution { .. } => true,
            Shape::PercentilesOnly { points } => points.iter().any(|&(q, _)| q > 0.0 && q < 1.0),
        }
}

/// The spectrum's two axes and their ticks.
struct Axes {
    x: Axis,
    x_ticks: Vec<Tick>,
    y: Axis,
    y_ticks: Vec<Tick>,
}

/// A "max …" label: the marker's x and y, the text, the series' index.
type MaxLabel = (f64, f64, String, usize);

/// Draws the spectrum with a log or linear latency axis.
pub fn render(prep: &Prepared, log_y: bool, id: &str, standalone: bool) -> String {
    let series: Vec<_> = prep
        .series
        .iter()
        .enumerate()
        .filter(|(_, s)| drawn(prep, s))
        .collect();
    let entries = legend_entries(&series);
    let frame = Frame::chart(WIDTH, PLOT_HEIGHT, 110.0);
    let legend_top = frame.bottom() + 56.0;
    let height = legend_top + legend_height(&entries, WIDTH - 100.0) + 8.0;
    let scale = if log_y { "log" } else { "linear" };
    let mut svg = Svg::new(
        id,
        WIDTH,
        height,
        &format!("Percentile spectrum, latency on a {scale} axis"),
        standalone,
    );
    let axes = axes(prep, &series, &frame, log_y);
    svg.axes(
        &frame,
        (
            &axes.x,
            &axes.x_ticks,
            "percentile (log scale of 1/(1 − q))",
        ),
        (&axes.y, &axes.y_ticks, "latency"),
    );
    // Cluster bands first, under the lines.
    draw_bands(&mut svg, prep, &series, &frame, &axes.y);
    let mut max_labels: Vec<MaxLabel> = series
        .iter()
        .map(|&(k, s)| draw_series(&mut svg, prep, k, s, &axes))
        .collect();
    if max_labels.len() <= 6 {
        place_max_labels(&mut svg, &mut max_labels, &frame);
    }
    legend(&mut svg, &entries, 20.0, legend_top, WIDTH - 100.0);
    svg.finish()
}

/// One legend entry per drawn series, saying when it holds only printed
/// percentiles.
fn legend_entries(series: &[(usize, &SeriesView)]) -> Vec<LegendEntry> {
    series
        .iter()
        .map(|(k, s)| LegendEntry {
            label: if matches!(s.shape, Shape::PercentilesOnly { .. }) {
                format!("{} (printed percentiles)", s.label)
            } else {
                s.label.clone()
            },
            colour: colour(*k).into(),
            dash: dash(*k).into(),
            series: Some(*k),
            swatch: false,
        })
        .collect()
}

/// The x axis (1/(1−q), at least five decades, enough for the largest
/// sample) and the latency axis spanning every series' min to max.
fn axes(prep: &Prepared, series: &[(usize, &SeriesView)], frame: &Frame, log_y: bool) -> Axes {
    let max_n = series
        .iter()
        .map(|(_, s)| prep.analysis(s).summary.count)
        .max()
        .unwrap_or(1);
    let decades = ((max_n as f64).log10().ceil() as i32).max(5);
    let x = Axis {
        lo: 1.0,
        hi: 10f64.powi(decades),
        px_lo: frame.left,
        px_hi: frame.right(),
        scale: Scale::Log,
    };
    let x_ticks: Vec<Tick> = (0..=decades)
        .map(|k| Tick {
            value: 10f64.powi(k),
            label: percent_label(k),
            major: true,
        })
        .collect();
    let lo = series
        .iter()
        .map(|(_, s)| prep.analysis(s).summary.min.max(1))
        .min()
        .unwrap_or(1) as f64;
    let hi = series
        .iter()
        .map(|(_, s)| prep.analysis(s).summary.max.max(1))
        .max()
        .unwrap_or(1) as f64;
    let (y, y_ticks) = latency_axis(lo, hi, frame, log_y);
    Axes {
        x,
        x_ticks,
        y,
        y_ticks,
    }
}

/// The latency axis from `lo` to `hi` with some room, log or linear.
fn latency_axis(lo: f64, hi: f64, frame: &Frame, log_y: bool) -> (Axis, Vec<Tick>) {
    if log_y {
        let (lo, hi) = (lo / 1.25, (hi * 1.25).max(lo * 2.0));
        (
            Axis {
                lo,
                hi,
                px_lo: frame.bottom(),
                px_hi: frame.top,
                scale: Scale::Log,
            },
            svg::log_ns_ticks(lo, hi),
        )
    } else {
        let hi = hi * 1.05;
        (
            Axis {
                lo: 0.0,
                hi,
                px_lo: frame.bottom(),
                px_hi: frame.top,
                scale: Scale::Linear,
            },
            svg::linear_ns_ticks(hi),
        )
    }
}

/// Shades each series' clusters (when it has more than one, and at most
/// [`MAX_BANDED`] series are drawn) and labels their shares.
fn draw_bands(
    svg: &mut Svg,
    prep: &Prepared,
    series: &[(usize, &SeriesView)],
    frame: &Frame,
    y_axis: &Axis,
) {
    let mut band_labels: Vec<(f64, String, usize)> = Vec::new();
    for (k, s) in series.iter().filter(|_| series.len() <= MAX_BANDED) {
        let clusters = &prep.analysis(s).clusters;
        if clusters.len() < 2 {
            continue;
        }
        svg.raw(&format!("<g data-s=\"{k}\" class=\"bands\">"));
        for c in clusters {
            let (y0, y1) = (y_axis.map(c.high as f64), y_axis.map(c.low as f64));
            svg.raw(&format!(
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" fill-opacity=\"0.10\"><title>{}: cluster {}–{} holds {}</title></rect>",
                num(frame.left),
                num(y0),
                num(frame.width),
                num((y1 - y0).max(1.0)),
                colour(*k),
                esc(&s.label),
                format_ns(c.low as f64),
                format_ns(c.high as f64),
                crate::report::table::percent(c.share)
            ));
            band_labels.push((
                (y0 + y1) / 2.0 + 4.0,
                format!("{} of samples", crate::report::table::percent(c.share)),
                *k,
            ));
        }
        svg.raw("</g>");
    }
    // Shares are labelled only when one series has clusters: with more,
    // a label could not say whose band it is (the bands' tooltips do).
    if band_labels.iter().all(|l| l.2 == band_labels[0].2) {
        place_band_labels(svg, &mut band_labels, frame.right() + 4.0);
    }
}

/// Draws series `k`'s step line, its printed percentiles' markers and its
/// max marker; returns the max's label, placed later with the others'.
fn draw_series(svg: &mut Svg, prep: &Prepared, k: usize, s: &SeriesView, axes: &Axes) -> MaxLabel {
    let a = prep.analysis(s);
    let n = a.summary.count;
    let style = format!(
        "fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{}",
        colour(k),
        if dash(k).is_empty() {
            String::new()
        } else {
            format!(" stroke-dasharray=\"{}\"", dash(k))
        }
    );
    let (steps, dots) = pixel_steps(&s.shape, n, axes);
    svg.raw(&format!(
        "<g data-s=\"{k}\" class=\"series\"><path class=\"line\" d=\"{}\" {style}><title>{}</title></path>",
        step_path(&steps),
        esc(&s.label)
    ));
    for (x, y, q, v) in dots {
        svg.raw(&format!(
            "<circle cx=\"{}\" cy=\"{}\" r=\"3\" fill=\"{}\"><title>{}: p{} = {} (as printed)</title></circle>",
            num(x),
            num(y),
            colour(k),
            esc(&s.label),
            trim_number(q * 100.0, 5),
            format_ns(v as f64)
        ));
    }
    let (mx, my) = (axes.x.map(x_of(1.0, n)), axes.y.map(a.summary.max as f64));
    svg.raw(&format!(
        "<circle class=\"max\" cx=\"{}\" cy=\"{}\" r=\"5\" fill=\"#fff\" stroke=\"{}\" stroke-width=\"2.5\"><title>{}: max {} ({} samples)</title></circle></g>",
        num(mx),
        num(my),
        colour(k),
        esc(&s.label),
        format_ns(a.summary.max as f64),
        crate::report::table::thousands(n)
    ));
    (
        mx,
        my,
        format!("max {}", format_ns(a.summary.max as f64)),
        k,
    )
}

/// A series' steps in pixels, and for printed percentiles a marker at
/// each (the line runs from one printed percentile to the next).
fn pixel_steps(shape: &Shape, n: u64, axes: &Axes) -> (Vec<PixelStep>, Vec<Dot>) {
    match shape {
        Shape::Distribution { steps, .. } => (
            steps
                .iter()
                .map(|st| {
                    (
                        axes.x.map(x_of(st.q_from, n)),
                        axes.x.map(x_of(st.q_to, n)),
                        axes.y.map(st.value as f64),
                    )
                })
                .collect(),
            Vec::new(),
        ),
        Shape::PercentilesOnly { points } => {
            let mut prev = 0.0;
            let mut steps = Vec::new();
            let mut dots = Vec::new();
            for &(q, v) in points {
                let (xs, xe, y) = (
                    axes.x.map(x_of(prev, n)),
                    axes.x.map(x_of(q, n)),
                    axes.y.map(v as f64),
                );
                steps.push((xs, xe, y));
                dots.push((xe, y, q, v));
                prev = q;
            }
            (steps, dots)
        }
    }
}

/// Writes the cluster shares right of the plot, pushed apart so none
/// overlap; a label that would land far from its band is left out (the
/// band's tooltip still says it).
fn place_band_labels(svg: &mut Svg, labels: &mut [(f64, String, usize)], x: f64) {
    labels.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut last_y = f64::NEG_INFINITY;
    for (y, text, k) in labels.iter() {
        let placed = y.max(last_y + 13.0);
        if placed - y > 16.0 {
            continue;
        }
        last_y = placed;
        svg.text(
            x,
            placed,
            "start",
            &format!(" fill=\"{}\" font-size=\"11\"", colour(*k)),
            text,
        );
    }
}

/// Writes the "max …" labels beside their markers, pushed apart vertically
/// so none overlap.
fn place_max_labels(svg: &mut Svg, labels: &mut [MaxLabel], frame: &Frame) {
    labels.sort_by(|a, b| a.1.total_cmp(&b.1));
    let mut last_y = f64::NEG_INFINITY;
    for (x, y, text, k) in labels.iter() {
        let y = (y + 4.0).max(last_y + 14.0).max(frame.top + 12.0);
        last_y = y;
        let w = text_width(text, 11.0);
        let (tx, anchor) = if x + 8.0 + w <= frame.right() + 105.0 {
            (x + 8.0, "start")
        } else {
            (x - 8.0, "end")
        };
        svg.text(
            tx,
            y,
            anchor,
            &format!(
                " fill=\"{}\" font-size=\"11\" font-weight=\"bold\"",
                colour(*k)
            ),
            text,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_labels_match_the_ticks() {
        let labels: Vec<String> = (0..=5).map(percent_label).collect();
        assert_eq!(
            labels,
            ["0 %", "90 %", "99 %", "99.9 %", "99.99 %", "99.999 %"]
        );
    }

    #[test]
    fn x_stops_where_the_sample_ends() {
        assert_eq!(x_of(0.0, 1_000), 1.0);
        assert!((x_of(0.99, 1_000) - 100.0).abs() < 1e-6);
        assert!((x_of(1.0, 1_000) - 1_000.0).abs() < 1e-6);
    }

    #[test]
    fn step_paths_collapse_subpixel_steps_but_keep_the_top() {
        let steps: Vec<(f64, f64, f64)> = (0..1000)
            .map(|i| {
                (
                    i as f64 * 0.01,
                    (i + 1) as f64 * 0.01,
                    400.0 - i as f64 * 0.3,
                )
            })
            .collect();
        let d = step_path(&steps);
        assert!(d.len() < 400, "{}", d.len());
        assert!(d.ends_with("V100.3H10"), "{d}");
    }
}
