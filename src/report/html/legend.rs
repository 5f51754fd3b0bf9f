//! Chart legends: entries laid out in rows that wrap at the chart's width,
//! each a line (or a swatch) and its label; entries tied to a series carry
//! its index so the page's script can toggle the series.

use super::svg::{Svg, TICK_SIZE, num, text_width};

/// One legend entry: its label, colour and dash, and the series index the
/// page's script toggles.
pub struct LegendEntry {
    /// The text.
    pub label: String,
    /// Stroke colour.
    pub colour: String,
    /// Dash pattern ("" for solid).
    pub dash: String,
    /// Series index for the toggle (`data-s`), if any.
    pub series: Option<usize>,
    /// Draw a filled swatch instead of a line.
    pub swatch: bool,
}

/// The height a legend needs when wrapped into `width` px.
pub fn legend_height(entries: &[LegendEntry], width: f64) -> f64 {
    legend_layout(entries, width).1
}

fn legend_layout(entries: &[LegendEntry], width: f64) -> (Vec<(f64, f64)>, f64) {
    const ROW: f64 = 20.0;
    let mut positions = Vec::with_capacity(entries.len());
    let (mut x, mut y) = (0.0, 0.0);
    for e in entries {
        let w = 30.0 + text_width(&e.label, TICK_SIZE) + 18.0;
        if x > 0.0 && x + w > width {
            x = 0.0;
            y += ROW;
        }
        positions.push((x, y));
        x += w;
    }
    let height = if entries.is_empty() { 0.0 } else { y + ROW };
    (positions, height)
}

/// Draws a legend wrapped into `width` px from (`left`, `top`).
pub fn legend(svg: &mut Svg, entries: &[LegendEntry], left: f64, top: f64, width: f64) {
    let (positions, _) = legend_layout(entries, width);
    for (e, (x, y)) in entries.iter().zip(positions) {
        let (x, y) = (left + x, top + y);
        let data = e
            .series
            .map_or_else(String::new, |s| format!(" data-s=\"{s}\" class=\"lg\""));
        svg.raw(&format!("<g{data}>"));
        let dash = if e.dash.is_empty() {
            String::new()
        } else {
            format!(" stroke-dasharray=\"{}\"", e.dash)
        };
        if e.swatch {
            svg.raw(&format!(
                "<rect x=\"{}\" y=\"{}\" width=\"22\" height=\"10\" fill=\"{}\" fill-opacity=\"0.3\" stroke=\"{}\" stroke-width=\"1.5\"{dash}/>",
                num(x),
                num(y + 5.0),
                e.colour,
                e.colour
            ));
        } else {
            svg.line(
                x,
                y + 10.0,
                x + 22.0,
                y + 10.0,
                &format!("stroke=\"{}\" stroke-width=\"2.5\"{dash}", e.colour),
            );
        }
        svg.text(x + 28.0, y + 14.0, "start", " fill=\"#222\"", &e.label);
        svg.raw("</g>");
    }
}
