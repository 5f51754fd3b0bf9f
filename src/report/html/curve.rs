//! The latency–throughput curve of one or more sweeps: p50, p99 and p99.9
//! against the achieved rate (both axes log), each point with its
//! confidence interval as a bar, the objective as a line, and each sweep's
//! capacity bracket as a band. Sweeps are told apart by colour (a before
//! and an after `host tune`), percentiles by dash.

use std::fmt::Write;

use super::legend::{LegendEntry, legend, legend_height};
use super::svg::{Axis, Frame, Scale, Svg, Tick, colour, count_label, log_ns_ticks, num};
use crate::model::sweep::{StepClass, SweepFile};
use crate::units::format_duration_compact;

/// The percentiles drawn.
const DRAWN: [&str; 3] = ["50", "99", "99.9"];

/// Percentile `j`'s dash: p50 solid, p99 dashed, p99.9 dotted, another
/// objective percentile dash-dotted.
fn dash(j: usize) -> &'static str {
    ["", "7 4", "2 3", "8 3 2 3"][j.min(3)]
}

const WIDTH: f64 = 900.0;
const PLOT_HEIGHT: f64 = 380.0;

/// The chart, or `None` when no sweep has a step with samples.
pub fn render(sweeps: &[&SweepFile], id: &str, standalone: bool) -> Option<String> {
    let points: Vec<(f64, u64)> = sweeps
        .iter()
        .flat_map(|s| &s.steps)
        .flat_map(|step| {
            step.percentiles
                .iter()
                .flat_map(|j| [j.lower_ns, j.value_ns, j.upper_ns])
                .flatten()
                .map(move |ns| (step.achieved_per_s, ns))
        })
        .filter(|(rate, ns)| *rate > 0.0 && *ns > 0)
        .collect();
    if points.is_empty() {
        return None;
    }
    let rates = points.iter().map(|p| p.0);
    let (r_lo, r_hi) = (
        rates.clone().fold(f64::MAX, f64::min),
        rates.fold(0.0, f64::max),
    );
    let latencies = points
        .iter()
        .map(|p| p.1 as f64)
        .chain(sweeps.iter().map(|s| s.threshold_ns as f64));
    let (y_lo, y_hi) = (
        latencies.clone().fold(f64::MAX, f64::min),
        latencies.fold(0.0, f64::max),
    );
    let mut entries: Vec<LegendEntry> = sweeps
        .iter()
        .enumerate()
        .map(|(i, s)| LegendEntry {
            label: format!(
                "{} ({})",
                crate::model::sweep::probe_command(&s.probe, &s.probe_args),
                s.start_time
            ),
            colour: colour(i).into(),
            dash: String::new(),
            series: None,
            swatch: true,
        })
        .collect();
    entries.extend(DRAWN.iter().enumerate().map(|(j, p)| LegendEntry {
        label: format!("p{p}"),
        colour: "#333".into(),
        dash: dash(j).into(),
        series: None,
        swatch: false,
    }));
    let frame = Frame::chart(WIDTH, PLOT_HEIGHT, 24.0);
    let legend_top = frame.bottom() + 44.0;
    let height = legend_top + legend_height(&entries, frame.width) + 8.0;
    let x = Axis {
        lo: r_lo / 1.25,
        hi: r_hi * 1.25,
        px_lo: frame.left,
        px_hi: frame.right(),
        scale: Scale::Log,
    };
    let y = Axis {
        lo: y_lo / 1.5,
        hi: y_hi * 1.5,
        px_lo: frame.bottom(),
        px_hi: frame.top,
        scale: Scale::Log,
    };
    let mut svg = Svg::new(
        id,
        WIDTH,
        height,
        "Latency against achieved rate",
        standalone,
    );
    for (i, sweep) in sweeps.iter().enumerate() {
        bracket_band(&mut svg, sweep, &x, &frame, colour(i));
    }
    let x_ticks: Vec<Tick> = log_ns_ticks(x.lo, x.hi)
        .into_iter()
        .map(|t| Tick {
            label: format!("{}/s", count_label(t.value)),
            ..t
        })
        .collect();
    let y_ticks = log_ns_ticks(y.lo, y.hi);
    svg.axes(
        &frame,
        (&x, &x_ticks, "achieved rate (operations per second)"),
        (&y, &y_ticks, "latency"),
    );
    for (i, sweep) in sweeps.iter().enumerate() {
        objective_line(&mut svg, sweep, &x, &y, &frame);
        curves(&mut svg, sweep, &x, &y, colour(i));
    }
    legend(&mut svg, &entries, frame.left, legend_top, frame.width);
    Some(svg.finish())
}

/// The objective, a dashed red line with its words.
fn objective_line(svg: &mut Svg, sweep: &SweepFile, _x: &Axis, y: &Axis, frame: &Frame) {
    let py = y.map(sweep.threshold_ns as f64);
    svg.line(
        frame.left,
        py,
        frame.right(),
        py,
        "stroke=\"#c0392b\" stroke-width=\"1.5\" stroke-dasharray=\"8 4\"",
    );
    svg.text(
        frame.left + 6.0,
        py - 5.0,
        "start",
        " fill=\"#c0392b\"",
        &format!(
            "objective p{} {} {}",
            sweep.percentile,
            if sweep.strict { "<" } else { "≤" },
            format_duration_compact(sweep.threshold_ns)
        ),
    );
}

/// The capacity bracket: from the achieved rate where the objective was
/// last met to where it was first missed.
fn bracket_band(svg: &mut Svg, sweep: &SweepFile, x: &Axis, frame: &Frame, colour: &str) {
    let achieved = |value: Option<f64>| {
        let value = value?;
        sweep
            .steps
            .iter()
            .find(|s| s.value == value)
            .map(|s| s.achieved_per_s)
    };
    let (Some(met), Some(missed)) = (
        achieved(sweep.capacity.below),
        achieved(sweep.capacity.above),
    ) else {
        return;
    };
    let (a, b) = (x.map(met.min(missed)), x.map(met.max(missed)));
    svg.raw(&format!(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{colour}\" fill-opacity=\"0.12\">\
         <title>capacity bracket: met at {met:.0}/s, missed at {missed:.0}/s</title></rect>",
        num(a),
        num(frame.top),
        num((b - a).max(2.0)),
        num(frame.height)
    ));
}

/// Each drawn percentile as a line through the steps by achieved rate,
/// with its interval as a bar; the objective's percentile marks each step
/// filled (met), open (missed) or grey (could not tell, or the generator
/// fell behind).
fn curves(svg: &mut Svg, sweep: &SweepFile, x: &Axis, y: &Axis, colour: &str) {
    // In the order of the load offered: past the knee the achieved rate
    // stops growing and the curve turns upwards (or folds back).
    let mut steps: Vec<_> = sweep
        .steps
        .iter()
        .filter(|s| s.achieved_per_s > 0.0)
        .collect();
    steps.sort_by(|a, b| a.value.total_cmp(&b.value));
    let mut keys: Vec<&str> = DRAWN.to_vec();
    if !keys.contains(&sweep.percentile.as_str()) {
        keys.push(&sweep.percentile);
    }
    for (j, key) in keys.iter().enumerate() {
        let mut path = String::new();
        for step in &steps {
            let Some(judged) = step.percentiles.iter().find(|p| p.percentile == *key) else {
                continue;
            };
            let Some(value) = judged.value_ns else {
                continue;
            };
            let (px, py) = (x.map(step.achieved_per_s), y.map(value as f64));
            let _ = write!(
                path,
                "{}{},{} ",
                if path.is_empty() { "M" } else { "L" },
                num(px),
                num(py)
            );
            if let (Some(lo), Some(hi)) = (judged.lower_ns, judged.upper_ns) {
                svg.line(
                    px,
                    y.map(lo as f64),
                    px,
                    y.map(hi as f64),
                    &format!("stroke=\"{colour}\" stroke-width=\"1\" stroke-opacity=\"0.6\""),
                );
            }
            if *key == sweep.percentile.as_str() {
                let fill = match step.class {
                    StepClass::Below => colour,
                    StepClass::Above => "#fff",
                    StepClass::Unsure | StepClass::GeneratorLimited => "#999",
                };
                svg.raw(&format!(
                    "<circle cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"{fill}\" stroke=\"{colour}\" stroke-width=\"1.5\">\
                     <title>{:.0}/s offered, {:.0}/s achieved</title></circle>",
                    num(px),
                    num(py),
                    step.value,
                    step.achieved_per_s
                ));
            }
        }
        svg.raw(&format!(
            "<path d=\"{}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" stroke-dasharray=\"{}\"/>",
            path.trim_end(),
            dash(j)
        ));
    }
}
