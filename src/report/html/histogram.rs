//! The latency histogram: log-spaced bins (20 per decade) on a log latency
//! axis and a log count axis whose floor sits below 1, so a single sample
//! in the far tail stands as a visible bar. Series are overlaid as outlines.

use std::fmt::Write;

use super::legend::{LegendEntry, legend, legend_height};
use super::prepare::{Bin, Prepared, Shape};
use super::svg::{self, Axis, Frame, Scale, Svg, Tick, colour, dash, esc, num};

const WIDTH: f64 = 1000.0;
const PLOT_HEIGHT: f64 = 340.0;
/// The count axis starts here, below one sample.
const FLOOR: f64 = 0.5;

/// The outline of one series' bins: runs of adjacent bins share a path,
/// gaps drop to the floor.
fn outline(bins: &[Bin], x: &Axis, y: &Axis) -> String {
    let base = y.map(FLOOR);
    let mut d = String::new();
    let mut prev_high: Option<f64> = None;
    for b in bins {
        let adjacent = prev_high.is_some_and(|h| (h - b.low).abs() <= b.low * 1e-9);
        if !adjacent {
            if prev_high.is_some() {
                let _ = write!(d, "V{}", num(base));
            }
            let _ = write!(d, "M{} {}", num(x.map(b.low)), num(base));
        }
        let _ = write!(d, "V{}H{}", num(y.map(b.count as f64)), num(x.map(b.high)));
        prev_high = Some(b.high);
    }
    if prev_high.is_some() {
        let _ = write!(d, "V{}", num(base));
    }
    d
}

/// Draws the histogram of every series that has a distribution; `None`
/// when none has.
pub fn render(prep: &Prepared, id: &str, standalone: bool) -> Option<String> {
    let series: Vec<(usize, &str, &[Bin])> = prep
        .series
        .iter()
        .enumerate()
        .filter_map(|(k, s)| match &s.shape {
            Shape::Distribution { bins, .. } if !bins.is_empty() => {
                Some((k, s.label.as_str(), bins.as_slice()))
            }
            _ => None,
        })
        .collect();
    if series.is_empty() {
        return None;
    }
    let entries: Vec<LegendEntry> = series
        .iter()
        .map(|&(k, label, _)| LegendEntry {
            label: label.to_string(),
            colour: colour(k).into(),
            dash: dash(k).into(),
            series: Some(k),
            swatch: true,
        })
        .collect();
    let frame = Frame::chart(WIDTH, PLOT_HEIGHT, 30.0);
    let legend_top = frame.bottom() + 56.0;
    let height = legend_top + legend_height(&entries, WIDTH - 100.0) + 8.0;
    let mut svg = Svg::new(
        id,
        WIDTH,
        height,
        "Latency histogram, log-spaced bins, log count",
        standalone,
    );
    let all = || series.iter().flat_map(|(_, _, b)| b.iter());
    let lo = all().map(|b| b.low).fold(f64::INFINITY, f64::min);
    let hi = all().map(|b| b.high).fold(0.0, f64::max);
    let top = all().map(|b| b.count).max().unwrap_or(1) as f64;
    let (lo, hi) = (lo / 1.1, (hi * 1.1).max(lo * 10.0));
    let x_axis = Axis {
        lo,
        hi,
        px_lo: frame.left,
        px_hi: frame.right(),
        scale: Scale::Log,
    };
    let y_hi = 10f64.powf((top * 1.5).log10().ceil());
    let y_axis = Axis {
        lo: FLOOR,
        hi: y_hi,
        px_lo: frame.bottom(),
        px_hi: frame.top,
        scale: Scale::Log,
    };
    let y_ticks: Vec<Tick> = svg::log_count_ticks(y_hi);
    svg.axes(
        &frame,
        (&x_axis, &svg::log_ns_ticks(lo, hi), "latency (log scale)"),
        (&y_axis, &y_ticks, "values per bin (log scale)"),
    );
    let fill_opacity = if series.len() <= 3 { "0.18" } else { "0" };
    for &(k, label, bins) in &series {
        let dash_attr = if dash(k).is_empty() {
            String::new()
        } else {
            format!(" stroke-dasharray=\"{}\"", dash(k))
        };
        svg.raw(&format!(
            "<g data-s=\"{k}\" class=\"series\"><path class=\"bars\" d=\"{}\" fill=\"{c}\" fill-opacity=\"{fill_opacity}\" stroke=\"{c}\" stroke-width=\"1.6\"{dash_attr}><title>{}</title></path></g>",
            outline(bins, &x_axis, &y_axis),
            esc(label),
            c = colour(k),
        ));
    }
    legend(&mut svg, &entries, 20.0, legend_top, WIDTH - 100.0);
    Some(svg.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lone_far_bin_gets_its_own_bar_above_the_floor() {
        let x = Axis {
            lo: 1e3,
            hi: 1e8,
            px_lo: 0.0,
            px_hi: 500.0,
            scale: Scale::Log,
        };
        let y = Axis {
            lo: FLOOR,
            hi: 1e4,
            px_lo: 300.0,
            px_hi: 0.0,
            scale: Scale::Log,
        };
        let bins = [
            Bin {
                low: 1e4,
                high: 1.2e4,
                count: 9_000,
            },
            Bin {
                low: 1.2e4,
                high: 1.4e4,
                count: 1_000,
            },
            Bin {
                low: 3e7,
                high: 3.5e7,
                count: 1,
            },
        ];
        let d = outline(&bins, &x, &y);
        assert_eq!(d.matches('M').count(), 2, "{d}");
        let one = y.map(1.0);
        assert!(
            one < 300.0 - 20.0,
            "one sample stands {} px tall",
            300.0 - one
        );
        assert!(d.contains(&format!("V{}", num(one))));
    }
}
