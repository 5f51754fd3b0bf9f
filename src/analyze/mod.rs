//! Analysis: from series to summaries. Works on any series, whichever
//! probe or importer produced it.

pub mod quantile;
pub mod summary;

use anyhow::Result;
use serde::Serialize;

use crate::error::input_error;
use crate::formats::{Format, Loaded};
use crate::model::{LoadMode, MeasuredFrom, Summary};
pub use quantile::Percentile;

/// The schema of `cauda analyze --json`.
pub const ANALYSIS_SCHEMA: &str = "cauda.analysis/1";

/// The whole analysis output.
#[derive(Debug, Serialize)]
pub struct Analysis {
    /// `cauda.analysis/1`.
    pub schema: &'static str,
    /// One entry per input file, in the order given.
    pub inputs: Vec<InputAnalysis>,
}

/// The analysis of one input.
#[derive(Debug, Serialize)]
pub struct InputAnalysis {
    /// The path as given.
    pub source: String,
    /// The detected format.
    pub format: Format,
    /// The probe that made a run file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe: Option<String>,
    /// Open or closed loop, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load: Option<LoadMode>,
    /// Duration of a run in ns, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ns: Option<u64>,
    /// True when the run was stopped early.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// One entry per series.
    pub series: Vec<SeriesAnalysis>,
}

/// The analysis of one series.
#[derive(Debug, Serialize)]
pub struct SeriesAnalysis {
    /// The series' tag.
    pub tag: String,
    /// Where its latencies were measured from.
    pub measured_from: MeasuredFrom,
    /// How many intervals it has.
    pub intervals: usize,
    /// The summary over all intervals.
    pub summary: Summary,
}

/// Analyses every loaded input.
pub fn analyze(inputs: &[Loaded], percentiles: &[Percentile]) -> Result<Analysis> {
    let inputs = inputs
        .iter()
        .map(|input| analyze_input(input, percentiles))
        .collect::<Result<_>>()?;
    Ok(Analysis {
        schema: ANALYSIS_SCHEMA,
        inputs,
    })
}

fn analyze_input(input: &Loaded, percentiles: &[Percentile]) -> Result<InputAnalysis> {
    let series = input
        .series
        .iter()
        .map(|series| {
            let merged = series
                .merged()
                .map_err(|e| input_error(format!("{}: {e}", input.source)))?;
            Ok(SeriesAnalysis {
                tag: series.tag.clone(),
                measured_from: series.measured_from,
                intervals: series.intervals.len(),
                summary: summary::summarize(&merged, percentiles),
            })
        })
        .collect::<Result<_>>()?;
    Ok(InputAnalysis {
        source: input.source.clone(),
        format: input.format,
        probe: input.run.as_ref().map(|r| r.probe.clone()),
        load: input.load_mode(),
        duration_ns: input.run.as_ref().map(|r| r.duration_ns),
        interrupted: input.run.as_ref().is_some_and(|r| r.interrupted),
        series,
    })
}
