//! A tiny SVG writer for the report's charts: a buffer with escaping, axes
//! (linear and log) with "nice" ticks, tick labels thinned by their
//! measured width so they never overlap, and a legend that wraps.
//!
//! Nice numbers follow Heckbert, "Nice numbers for graph labels" (Graphics
//! Gems, 1990): steps of 1, 2 or 5 × 10^k. Text width is estimated from
//! per-character advances of DejaVu Sans / Liberation Sans (the fonts a
//! Linux browser falls back to), rounded up so estimates err on the wide side.

use std::fmt::Write;

use crate::units::TimeUnit;

/// The fonts every chart asks for.
pub const FONT: &str = "DejaVu Sans, Liberation Sans, Arial, Helvetica, sans-serif";
/// Tick label font size, px.
pub const TICK_SIZE: f64 = 12.0;

/// Colour-blind-safe series colours (Okabe & Ito, 2008), darkest first,
/// without the yellow that is unreadable on white.
pub const PALETTE: [&str; 7] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#000000", "#E69F00", "#56B4E9",
];

/// Dash patterns that tell series apart once the colours repeat.
const DASHES: [&str; 3] = ["", "6 3", "2 2"];

/// The colour of series `i`.
pub fn colour(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// The dash pattern of series `i` (empty for solid).
pub fn dash(i: usize) -> &'static str {
    DASHES[(i / PALETTE.len()) % DASHES.len()]
}

/// Escapes text for HTML and SVG content and attribute values.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// A coordinate with at most one decimal, no trailing zero.
pub fn num(v: f64) -> String {
    let r = (v * 10.0).round() / 10.0;
    if r == r.trunc() {
        format!("{r:.0}")
    } else {
        format!("{r:.1}")
    }
}

/// Estimated width of `text` in px at `size` px.
pub fn text_width(text: &str, size: f64) -> f64 {
    let em: f64 = text
        .chars()
        .map(|c| match c {
            '.' | ',' | ':' | ';' | 'i' | 'l' | 'j' | '|' | '\'' | '!' => 0.32,
            ' ' | 'f' | 't' | 'r' | '(' | ')' | '[' | ']' | '–' => 0.42,
            '0'..='9' | 'µ' | '≈' | '+' | '-' | '−' => 0.64,
            'm' | 'w' | '%' | 'M' | 'W' | '—' => 0.95,
            c if c.is_ascii_uppercase() => 0.72,
            _ => 0.62,
        })
        .sum();
    em * size
}

/// How an axis maps values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Evenly spaced values.
    Linear,
    /// Evenly spaced powers of ten (values must be > 0).
    Log,
}

/// A data range mapped onto a pixel range.
#[derive(Clone, Copy, Debug)]
pub struct Axis {
    /// Lowest value shown.
    pub lo: f64,
    /// Highest value shown.
    pub hi: f64,
    /// Pixel position of `lo`.
    pub px_lo: f64,
    /// Pixel position of `hi` (smaller than `px_lo` on a y axis).
    pub px_hi: f64,
    /// Linear or log.
    pub scale: Scale,
}

impl Axis {
    /// The pixel position of `v`, clamped to the axis.
    pub fn map(&self, v: f64) -> f64 {
        let t = match self.scale {
            Scale::Linear => (v - self.lo) / (self.hi - self.lo),
            Scale::Log => (v.max(self.lo).ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln()),
        };
        let t = if t.is_finite() {
            t.clamp(0.0, 1.0)
        } else {
            0.0
        };
        self.px_lo + t * (self.px_hi - self.px_lo)
    }
}

/// One tick: where, what it says, and whether it outranks its neighbours
/// when labels must be dropped.
#[derive(Clone, Debug, PartialEq)]
pub struct Tick {
    /// The value.
    pub value: f64,
    /// The label.
    pub label: String,
    /// Major ticks are kept first.
    pub major: bool,
}

/// The nice step (1, 2 or 5 × 10^k) giving about `count` steps over `span`.
pub fn nice_step(span: f64, count: usize) -> f64 {
    let raw = (span / count.max(1) as f64).max(f64::MIN_POSITIVE);
    let magnitude = 10f64.powf(raw.log10().floor());
    let fraction = raw / magnitude;
    let nice = if fraction <= 1.0 {
        1.0
    } else if fraction <= 2.0 {
        2.0
    } else if fraction <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * magnitude
}

/// A number with at most `decimals` decimals, trailing zeros dropped.
pub fn trim_number(v: f64, decimals: usize) -> String {
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A latency tick label in the unit that suits it: `250 µs`, `1.5 ms`.
pub fn ns_label(ns: f64) -> String {
    let unit = TimeUnit::auto(ns);
    format!(
        "{} {}",
        trim_number(ns / unit.nanos() as f64, 3),
        unit.symbol()
    )
}

/// Ticks for a log latency axis: decades, plus 2 and 5 between them when
/// the axis spans few decades.
pub fn log_ns_ticks(lo: f64, hi: f64) -> Vec<Tick> {
    let decades = (hi / lo).log10();
    let mids: &[f64] = if decades <= 1.2 {
        &[2.0, 3.0, 5.0, 7.0]
    } else if decades <= 4.0 {
        &[2.0, 5.0]
    } else {
        &[]
    };
    let mut ticks = Vec::new();
    let mut k = lo.log10().floor() as i32;
    while 10f64.powi(k) <= hi * 1.000_001 {
        let decade = 10f64.powi(k);
        for (m, major) in std::iter::once((1.0, true)).chain(mids.iter().map(|&m| (m, false))) {
            let v = decade * m;
            if v >= lo * 0.999_999 && v <= hi * 1.000_001 {
                ticks.push(Tick {
                    value: v,
                    label: ns_label(v),
                    major,
                });
            }
        }
        k += 1;
    }
    ticks.sort_by(|a, b| a.value.total_cmp(&b.value));
    ticks
}

/// Ticks for a linear latency axis from 0, all labelled in one unit.
pub fn linear_ns_ticks(hi: f64) -> Vec<Tick> {
    let step = nice_step(hi, 6);
    let unit = TimeUnit::auto(hi);
    let scaled = step / unit.nanos() as f64;
    let decimals = if scaled >= 1.0 {
        0
    } else {
        (-scaled.log10().floor()) as usize
    };
    (0..)
        .map(|i| i as f64 * step)
        .take_while(|v| *v <= hi * 1.000_001)
        .map(|v| Tick {
            value: v,
            label: format!(
                "{} {}",
                trim_number(v / unit.nanos() as f64, decimals),
                unit.symbol()
            ),
            major: true,
        })
        .collect()
}

/// A count with a metric suffix: `1`, `10`, `1k`, `100k`, `1M`, `1G`.
pub fn count_label(v: f64) -> String {
    for (scale, suffix) in [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")] {
        if v >= scale {
            return format!("{}{suffix}", trim_number(v / scale, 1));
        }
    }
    trim_number(v, 1)
}

/// Decade ticks for a log count axis.
pub fn log_count_ticks(hi: f64) -> Vec<Tick> {
    (0..)
        .map(|k| 10f64.powi(k))
        .take_while(|v| *v <= hi * 1.000_001)
        .map(|v| Tick {
            value: v,
            label: count_label(v),
            major: true,
        })
        .collect()
}

/// Ticks for a time axis in seconds from the run's start (minutes or hours
/// on long runs).
pub fn time_ticks(hi_s: f64) -> Vec<Tick> {
    let (unit, symbol) = if hi_s >= 7_200.0 {
        (3_600.0, "h")
    } else if hi_s >= 600.0 {
        (60.0, "min")
    } else {
        (1.0, "s")
    };
    let span = hi_s / unit;
    let step = nice_step(span, 8);
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10().floor()) as usize
    };
    (0..)
        .map(|i| i as f64 * step)
        .take_while(|v| *v <= span * 1.000_001)
        .map(|v| Tick {
            value: v * unit,
            label: format!("{} {symbol}", trim_number(v, decimals)),
            major: true,
        })
        .collect()
}

/// Keeps the ticks whose labels fit without overlapping: every s-th major
/// tick for the smallest stride s that fits (so spacing stays regular),
/// then minors into the gaps. `horizontal` measures label widths;
/// otherwise labels are one line tall.
pub fn thin(ticks: &[Tick], axis: &Axis, horizontal: bool, size: f64) -> Vec<Tick> {
    let extent = |t: &Tick| {
        let centre = axis.map(t.value);
        let half = if horizontal {
            text_width(&t.label, size) / 2.0 + 4.0
        } else {
            size * 0.9
        };
        (centre - half, centre + half)
    };
    let fits = |kept: &[(f64, f64, usize)], (a, b): (f64, f64)| {
        kept.iter().all(|&(ka, kb, _)| b <= ka || a >= kb)
    };
    let majors: Vec<usize> = (0..ticks.len()).filter(|&i| ticks[i].major).collect();
    let mut kept: Vec<(f64, f64, usize)> = Vec::new();
    for stride in 1..=majors.len().max(1) {
        kept.clear();
        let mut ok = true;
        for &i in majors.iter().step_by(stride) {
            let e = extent(&ticks[i]);
            if !fits(&kept, e) {
                ok = false;
                break;
            }
            kept.push((e.0, e.1, i));
        }
        if ok {
            break;
        }
    }
    for (i, tick) in ticks.iter().enumerate().filter(|(_, t)| !t.major) {
        let e = extent(tick);
        if fits(&kept, e) {
            kept.push((e.0, e.1, i));
        }
    }
    kept.sort_by_key(|&(_, _, i)| i);
    kept.into_iter().map(|(_, _, i)| ticks[i].clone()).collect()
}

/// The plot area inside a chart.
#[derive(Clone, Copy, Debug)]
pub struct Frame {
    /// Left edge, px.
    pub left: f64,
    /// Top edge, px.
    pub top: f64,
    /// Width, px.
    pub width: f64,
    /// Height, px.
    pub height: f64,
}

impl Frame {
    /// The plot area of a chart `width` wide: room on the left for the
    /// y-axis labels, `right_margin` on the right (labels, max marks).
    pub fn chart(width: f64, plot_height: f64, right_margin: f64) -> Self {
        const LEFT: f64 = 84.0;
        Frame {
            left: LEFT,
            top: 16.0,
            width: width - LEFT - right_margin,
            height: plot_height,
        }
    }

    /// The right edge.
    pub fn right(&self) -> f64 {
        self.left + self.width
    }

    /// The bottom edge.
    pub fn bottom(&self) -> f64 {
        self.top + self.height
    }
}

/// An SVG document being written.
pub struct Svg {
    out: String,
    standalone: bool,
}

impl Svg {
    /// Opens a chart `width` × `height` px with an id and an accessible title.
    /// A standalone chart (a file of its own) carries the SVG namespace; one
    /// inlined in HTML does not need it.
    pub fn new(id: &str, width: f64, height: f64, title: &str, standalone: bool) -> Svg {
        let mut out = String::with_capacity(16 * 1024);
        if standalone {
            out.push_str(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!-- cauda report chart -->\n",
            );
        }
        let ns = if standalone {
            " xmlns=\"http://www.w3.org/2000/svg\""
        } else {
            ""
        };
        let _ = write!(
            out,
            "<svg{ns} id=\"{id}\" class=\"chart\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" \
             role=\"img\" aria-label=\"{t}\" font-family=\"{FONT}\" font-size=\"{TICK_SIZE}\">\
             <title>{t}</title><rect width=\"{w}\" height=\"{h}\" fill=\"#fff\"/>",
            id = esc(id),
            w = num(width),
            h = num(height),
            t = esc(title),
        );
        Svg { out, standalone }
    }

    /// Whether this chart is written as a file of its own.
    pub fn standalone(&self) -> bool {
        self.standalone
    }

    /// Appends raw SVG markup.
    pub fn raw(&mut self, markup: &str) {
        self.out.push_str(markup);
    }

    /// A text element; `anchor` is `start`, `middle` or `end`.
    pub fn text(&mut self, x: f64, y: f64, anchor: &str, extra: &str, text: &str) {
        let _ = write!(
            self.out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"{anchor}\"{extra}>{}</text>",
            num(x),
            num(y),
            esc(text)
        );
    }

    /// A straight line.
    pub fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, style: &str) {
        let _ = write!(
            self.out,
            "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" {style}/>",
            num(x1),
            num(y1),
            num(x2),
            num(y2)
        );
    }

    /// Closes the document.
    pub fn finish(mut self) -> String {
        self.out.push_str("</svg>");
        self.out
    }

    /// Draws grid lines, tick labels and axis titles around a frame.
    pub fn axes(&mut self, frame: &Frame, x: (&Axis, &[Tick], &str), y: (&Axis, &[Tick], &str)) {
        let (x_axis, x_ticks, x_title) = x;
        let (y_axis, y_ticks, y_title) = y;
        let grid = "stroke=\"#d9d9d9\" stroke-width=\"1\"";
        for t in thin(x_ticks, x_axis, true, TICK_SIZE) {
            let px = x_axis.map(t.value);
            self.line(px, frame.top, px, frame.bottom(), grid);
            self.text(
                px,
                frame.bottom() + TICK_SIZE + 6.0,
                "middle",
                " fill=\"#333\"",
                &t.label,
            );
        }
        for t in thin(y_ticks, y_axis, false, TICK_SIZE) {
            let py = y_axis.map(t.value);
            self.line(frame.left, py, frame.right(), py, grid);
            self.text(
                frame.left - 6.0,
                py + TICK_SIZE * 0.35,
                "end",
                " fill=\"#333\"",
                &t.label,
            );
        }
        let _ = write!(
            self.out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#666\"/>",
            num(frame.left),
            num(frame.top),
            num(frame.width),
            num(frame.height)
        );
        self.text(
            frame.left + frame.width / 2.0,
            frame.bottom() + TICK_SIZE * 2.0 + 14.0,
            "middle",
            " font-size=\"13\" fill=\"#222\"",
            x_title,
        );
        let cy = frame.top + frame.height / 2.0;
        let _ = write!(
            self.out,
            "<text transform=\"translate({},{}) rotate(-90)\" text-anchor=\"middle\" font-size=\"13\" fill=\"#222\">{}</text>",
            num(frame.left - 62.0),
            num(cy),
            esc(y_title)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn x_axis(lo: f64, hi: f64, scale: Scale) -> Axis {
        Axis {
            lo,
            hi,
            px_lo: 0.0,
            px_hi: 800.0,
            scale,
        }
    }

    #[test]
    fn nice_steps_are_1_2_5() {
        assert_eq!(nice_step(10.0, 5), 2.0);
        assert_eq!(nice_step(3_600.0, 8), 500.0);
        assert_eq!(nice_step(0.7, 7), 0.1);
        assert_eq!(nice_step(95.0, 6), 20.0);
    }

    #[test]
    fn latency_labels_pick_their_unit() {
        assert_eq!(ns_label(1_000.0), "1 µs");
        assert_eq!(ns_label(250_000.0), "250 µs");
        assert_eq!(ns_label(1_500_000.0), "1.5 ms");
        assert_eq!(ns_label(20.0), "20 ns");
        assert_eq!(count_label(100_000.0), "100k");
        assert_eq!(count_label(1.0), "1");
    }

    #[test]
    fn log_axis_ticks_are_decades_with_fillers_on_short_ranges() {
        let wide = log_ns_ticks(1_000.0, 1e9);
        assert!(wide.iter().all(|t| t.major));
        assert_eq!(wide.len(), 7);
        let narrow = log_ns_ticks(20_000.0, 300_000.0);
        let labels: Vec<&str> = narrow.iter().map(|t| t.label.as_str()).collect();
        assert!(
            labels.contains(&"100 µs") && labels.contains(&"50 µs"),
            "{labels:?}"
        );
    }

    #[test]
    fn thinned_labels_never_overlap() {
        let axis = x_axis(0.0, 3_600.0, Scale::Linear);
        let ticks: Vec<Tick> = (0..=360)
            .map(|i| Tick {
                value: i as f64 * 10.0,
                label: format!("{} s", i * 10),
                major: i % 6 == 0,
            })
            .collect();
        let kept = thin(&ticks, &axis, true, TICK_SIZE);
        assert!(kept.len() > 5 && kept.len() < 60, "{}", kept.len());
        for pair in kept.windows(2) {
            let right = axis.map(pair[0].value) + text_width(&pair[0].label, TICK_SIZE) / 2.0;
            let left = axis.map(pair[1].value) - text_width(&pair[1].label, TICK_SIZE) / 2.0;
            assert!(right <= left, "{pair:?}");
        }
        let majors: Vec<f64> = kept.iter().filter(|t| t.major).map(|t| t.value).collect();
        assert_eq!(majors[0], 0.0);
        let stride = majors[1] - majors[0];
        assert!(
            majors.windows(2).all(|w| w[1] - w[0] == stride),
            "{majors:?}"
        );
    }

    #[test]
    fn log_mapping_is_monotone_and_clamped() {
        let axis = x_axis(1.0, 1e5, Scale::Log);
        assert_eq!(axis.map(1.0), 0.0);
        assert_eq!(axis.map(1e5), 800.0);
        assert!((axis.map(100.0) - 320.0).abs() < 1e-9);
        assert_eq!(axis.map(0.0), 0.0);
        assert_eq!(axis.map(1e9), 800.0);
    }

    #[test]
    fn escaping_covers_markup() {
        assert_eq!(esc("a<b & \"c\"'"), "a&lt;b &amp; &quot;c&quot;&#39;");
        assert_eq!(num(12.345), "12.3");
        assert_eq!(num(12.0), "12");
    }
}
