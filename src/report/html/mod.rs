//! `cauda report`: one self-contained HTML page with the charts a
//! performance engineer pastes into a postmortem — summary with confidence
//! intervals, percentile spectrum, histogram, timelines with stalls, the
//! host snapshot and its audit, and a before/after table against a
//! baseline. Everything is inline (styles, script, SVG): the page fetches
//! nothing, so it opens offline and archives as one file.
//!
//! [`render`] is a library function so other commands (`cauda lab`) can
//! build a report from inputs they already hold; [`build`] also returns
//! each chart as a standalone SVG for `--svg DIR`.

mod assets;
pub mod blame;
pub mod curve;
pub mod histogram;
pub mod host;
pub mod legend;
pub mod page;
pub mod prepare;
pub mod spectrum;
pub mod svg;
pub mod tables;
pub mod timeline;

use std::fmt::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::analyze::{self, compare};
use crate::error::input_error;
use crate::model::Loaded;
use page::Page;
use prepare::{Prepared, Shape};
use svg::esc;

/// What the report shows.
#[derive(Clone, Debug)]
pub struct Options {
    /// The page title.
    pub title: String,
    /// Confidence level of every interval, in (0, 1).
    pub confidence: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            title: "cauda report".into(),
            confidence: 0.95,
        }
    }
}

/// One chart as a standalone SVG document.
#[derive(Clone, Debug)]
pub struct Chart {
    /// The file name it is written under (`spectrum.svg`).
    pub file: String,
    /// The SVG document.
    pub svg: String,
}

/// The page and, when asked, its charts as standalone SVGs.
#[derive(Clone, Debug)]
pub struct Report {
    /// The HTML page.
    pub html: String,
    /// The charts (empty unless asked for).
    pub charts: Vec<Chart>,
}

/// Renders the report page for `inputs`, compared against `baseline` when given.
pub fn render(inputs: &[Loaded], baseline: Option<&Loaded>, options: &Options) -> Result<String> {
    build(inputs, baseline, options, false).map(|r| r.html)
}

/// A file-name-safe form of a label.
fn slug(text: &str) -> String {
    let s: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let s = s
        .split('-')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    s.chars().take(60).collect()
}

/// Builds the page, and the standalone charts when `svgs` is set.
pub fn build(
    inputs: &[Loaded],
    baseline: Option<&Loaded>,
    options: &Options,
    svgs: bool,
) -> Result<Report> {
    if inputs.is_empty() {
        return Err(input_error(
            "no inputs: give at least one file to report on",
        ));
    }
    let prep = analyse(inputs, baseline, options)?;
    let comparisons = compare_to_baseline(&prep, options)?;
    let mut charts = Vec::new();
    let mut page = Page::new(&options.title);

    page.intro(&prep, inputs.len(), baseline.is_some());
    page.push(&host::findings(&prep));
    page.section("summary", "Summary", &tables::summary(&prep));
    spectrum_section(&mut page, &prep, svgs, &mut charts);
    histogram_section(&mut page, &prep, svgs, &mut charts);
    timelines_section(&mut page, &prep, svgs, &mut charts);
    if let Some((body, svg_files)) = blame::section(&prep, svgs) {
        charts.extend(svg_files.into_iter().map(|(file, svg)| Chart { file, svg }));
        page.section("why", "Why the tail", &body);
    }
    if !comparisons.is_empty() {
        let body: String = comparisons.iter().map(tables::comparison).collect();
        page.section("comparison", "Before / after", &body);
    }
    page.section("host", "Host conditions", &host::hosts(&prep));
    Ok(Report {
        html: page.finish(),
        charts,
    })
}

/// The page for sweep files: the latency–throughput curve of all of them
/// (a before and an after side by side), then each sweep's table.
pub fn sweep_page(
    sweeps: &[crate::model::sweep::SweepFile],
    options: &Options,
    svgs: bool,
) -> Report {
    let mut page = Page::new(&options.title);
    let all: Vec<&crate::model::sweep::SweepFile> = sweeps.iter().collect();
    let mut charts = Vec::new();
    let findings: String = sweeps
        .iter()
        .map(|s| format!("<p class=\"lead\">{}</p>", esc(&s.capacity.finding)))
        .collect();
    let chart = curve::render(&all, "chart-curve", false).unwrap_or_default();
    if svgs && let Some(svg) = curve::render(&all, "chart-curve", true) {
        charts.push(Chart {
            file: "curve.svg".into(),
            svg,
        });
    }
    page.section(
        "curve",
        "Latency against load",
        &format!(
            "{findings}<figure>{chart}</figure><p class=\"caption\">Each line is a percentile of the \
             judged series at each step, against the rate the target achieved there; bars are the \
             percentiles' confidence intervals, the dashed red line the objective. Circles mark the \
             objective's percentile: filled where the step met the objective (interval and all), open \
             where it missed it, grey where the sample could not tell or the generator fell behind. \
             The band is the capacity bracket.</p>"
        ),
    );
    let tables: String = sweeps
        .iter()
        .map(|s| {
            format!(
                "<pre style=\"overflow-x:auto\">{}</pre>",
                esc(&crate::report::sweep::render(s))
            )
        })
        .collect();
    page.section("steps", "Steps", &tables);
    Report {
        html: page.finish(),
        charts,
    }
}

/// Analyses every input (and the baseline) with timelines, at the report's
/// confidence level.
fn analyse<'a>(
    inputs: &'a [Loaded],
    baseline: Option<&'a Loaded>,
    options: &Options,
) -> Result<Prepared<'a>> {
    let analysis_options = analyze::Options {
        confidence: options.confidence,
        timeline: true,
        ..analyze::Options::default()
    };
    analyze::validate(&analysis_options)?;
    prepare::prepare(inputs, baseline, &analysis_options)
}

/// Each input compared against the baseline, when there is one.
fn compare_to_baseline(prep: &Prepared, options: &Options) -> Result<Vec<compare::Comparison>> {
    let Some(base) = prep.inputs.iter().find(|i| i.baseline) else {
        return Ok(Vec::new());
    };
    let compare_options = compare::CompareOptions {
        confidence: options.confidence,
        ..compare::CompareOptions::default()
    };
    prep.inputs
        .iter()
        .filter(|i| !i.baseline)
        .map(|new| compare::compare(&base.decoded, &new.decoded, &compare_options))
        .collect()
}

/// The spectrum, log and linear (the page's buttons switch between them).
fn spectrum_section(page: &mut Page, prep: &Prepared, svgs: bool, charts: &mut Vec<Chart>) {
    let log = spectrum::render(prep, true, "chart-spectrum", false);
    let linear = spectrum::render(prep, false, "chart-spectrum-linear", false);
    if svgs {
        charts.push(Chart {
            file: "spectrum.svg".into(),
            svg: spectrum::render(prep, true, "chart-spectrum", true),
        });
        charts.push(Chart {
            file: "spectrum-linear.svg".into(),
            svg: spectrum::render(prep, false, "chart-spectrum-linear", true),
        });
    }
    page.section(
        "spectrum",
        "Percentile spectrum",
        &format!(
            "<div class=\"yscale\" role=\"group\" aria-label=\"latency axis\">latency axis: \
             <button type=\"button\" data-y=\"log\" aria-pressed=\"true\">log</button>\
             <button type=\"button\" data-y=\"linear\" aria-pressed=\"false\">linear</button></div>\
             <figure id=\"fig-spectrum-log\">{log}</figure><figure id=\"fig-spectrum-linear\" hidden>{linear}</figure>\
             <p class=\"caption\">Each line is the latency below which a share of the values fall: left is the \
             median, each step right is ten times rarer (90 %, 99 %, 99.9 % …). A line ends where its sample \
             runs out (at 1 − 1/n), at its max (○). Dots mark percentiles a tool printed without its \
             distribution. Bands: latency clusters, drawn when a series has more than one (and at most {} \
             series are drawn). Click a legend entry to hide or show a series.{}</p>",
            spectrum::MAX_BANDED,
            undrawn(prep)
        ),
    );
}

/// The histogram, or a note when no input carries a distribution.
fn histogram_section(page: &mut Page, prep: &Prepared, svgs: bool, charts: &mut Vec<Chart>) {
    match histogram::render(prep, "chart-histogram", false) {
        Some(h) => {
            if let Some(s) = svgs
                .then(|| histogram::render(prep, "chart-histogram", true))
                .flatten()
            {
                charts.push(Chart {
                    file: "histogram.svg".into(),
                    svg: s,
                });
            }
            page.section(
                "histogram",
                "Histogram",
                &format!(
                    "<figure>{h}</figure><p class=\"caption\">How many values fell in each latency bin \
                     (20 bins per decade). Both axes are logarithmic, so a single value far in the tail \
                     still shows as a bar.{}</p>",
                    printed_note(prep, "the histogram")
                ),
            );
        }
        None => page.section(
            "histogram",
            "Histogram",
            "<p class=\"note\">No input carries a distribution (only printed percentiles), so there is no histogram.</p>",
        ),
    }
}

/// A timeline and stall table per series with timed intervals.
fn timelines_section(page: &mut Page, prep: &Prepared, svgs: bool, charts: &mut Vec<Chart>) {
    let mut timelines = String::new();
    for (k, view) in prep.series.iter().enumerate() {
        let a = prep.analysis(view);
        let points = a.timeline.as_deref().unwrap_or(&[]);
        if matches!(view.shape, Shape::PercentilesOnly { .. }) || !timeline::drawable(points) {
            continue;
        }
        let id = format!("chart-timeline-{k}");
        let run = prep.inputs[view.input].loaded.run.as_ref();
        let marks = blame::marks(run.and_then(|r| r.blame.as_ref()), &a.tag);
        let t = timeline::render(points, &a.stalls, &marks, &view.label, &id, false);
        if svgs {
            charts.push(Chart {
                file: format!("timeline-{k}-{}.svg", slug(&view.label)),
                svg: timeline::render(points, &a.stalls, &marks, &view.label, &id, true).svg,
            });
        }
        let _ = write!(
            timelines,
            "<h3 id=\"timeline-{k}\"><span class=\"sw\" style=\"background:{}\"></span>{}</h3>\
             <figure class=\"timeline\">{}<script type=\"application/json\" class=\"hover-data\">{}</script>\
             <div class=\"tip\" hidden></div></figure>{}",
            svg::colour(k),
            esc(&view.label),
            t.svg,
            t.hover,
            tables::stalls(prep, k)
        );
    }
    if timelines.is_empty() {
        timelines.push_str(
            "<p class=\"note\">No series has timed intervals, so there is no timeline.</p>",
        );
    } else {
        timelines.insert_str(
            0,
            &format!(
                "<p class=\"caption\">Per interval: p50, p99, max and mean. The mean is what a per-second \
                 monitoring average shows; it stays flat while the max spikes. Shaded: stalls found by the \
                 analysis. Hover for an interval's values.{}{}</p>",
                printed_note(prep, "timelines"),
                if prep.inputs.iter().any(|i| i.loaded.run.as_ref().is_some_and(|r| r.blame.is_some())) {
                    " Rings: the slowest operations at their intended start and latency (their causes are under Why the tail)."
                } else {
                    ""
                }
            ),
        );
    }
    page.section("timelines", "Timelines and stalls", &timelines);
}

/// Names the series the spectrum leaves out (no printed percentile).
fn undrawn(prep: &Prepared) -> String {
    let left: Vec<&str> = prep
        .series
        .iter()
        .filter(|s| !spectrum::drawn(prep, s))
        .map(|s| s.label.as_str())
        .collect();
    if left.is_empty() {
        String::new()
    } else {
        format!(
            " Not drawn (the tool printed no percentile for them, only min/mean/max): {}.",
            esc(&left.join(", "))
        )
    }
}

/// " Printed-percentile series … are not drawn here." when there are any.
fn printed_note(prep: &Prepared, what: &str) -> String {
    let printed: Vec<&str> = prep
        .series
        .iter()
        .filter(|s| matches!(s.shape, Shape::PercentilesOnly { .. }))
        .map(|s| s.label.as_str())
        .collect();
    if printed.is_empty() {
        String::new()
    } else {
        format!(
            " Not in {what}: {} (printed percentiles only, no distribution).",
            esc(&printed.join(", "))
        )
    }
}

/// Checks, before any work, that `--svg DIR` can be written (it may not
/// exist yet; its parent must).
pub fn check_svg_dir(dir: &Path) -> Result<()> {
    if dir.exists() && !dir.is_dir() {
        return Err(input_error(format!(
            "--svg {}: is not a directory; give a directory for the chart files",
            dir.display()
        )));
    }
    let probe = if dir.is_dir() {
        dir.join("spectrum.svg")
    } else {
        dir.to_path_buf()
    };
    crate::output::check_writable(&probe, crate::output::OwnKind::Other, true, "--svg").map(|_| ())
}

/// The first bytes of every standalone chart: how cauda knows its own files.
const SVG_MARK: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!-- cauda report chart -->";

/// Checks that the standalone charts can go into `dir` without replacing
/// a file cauda did not write (unless `force`): called before the page is
/// written, so a collision stops the command before it writes anything.
pub fn check_svgs(dir: &Path, charts: &[Chart], force: bool) -> Result<()> {
    for path in charts.iter().map(|c| dir.join(&c.file)) {
        if path.exists() && !force {
            let head = std::fs::read(&path).unwrap_or_default();
            if !head.starts_with(SVG_MARK.as_bytes()) {
                return Err(input_error(format!(
                    "--svg: {} exists and was not written by cauda; choose another directory, or pass --force",
                    path.display()
                )));
            }
        }
    }
    Ok(())
}

/// Writes the standalone charts into `dir` (created if missing), checked
/// again with [`check_svgs`] first.
pub fn write_svgs(dir: &Path, charts: &[Chart], force: bool) -> Result<Vec<PathBuf>> {
    check_svgs(dir, charts, force)?;
    std::fs::create_dir_all(dir).map_err(|e| {
        input_error(format!(
            "--svg {}: cannot create the directory ({e})",
            dir.display()
        ))
    })?;
    let paths: Vec<PathBuf> = charts.iter().map(|c| dir.join(&c.file)).collect();
    for (path, chart) in paths.iter().zip(charts) {
        crate::output::write_atomic(path, chart.svg.as_bytes())?;
    }
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_file_names() {
        assert_eq!(slug("run-1.json · idle=100us"), "run-1-json-idle-100us");
        assert_eq!(slug("wakeup"), "wakeup");
    }

    #[test]
    fn standalone_charts_carry_the_mark() {
        let s = svg::Svg::new("x", 10.0, 10.0, "t", true).finish();
        assert!(s.starts_with(SVG_MARK));
    }
}
