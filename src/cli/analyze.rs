//! `cauda analyze`: its flags, and the table or JSON it prints.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use super::inputs::{InputArgs, load_all, sweeps_apart};
use super::parse::{PercentileList, duration, percentile_list};
use crate::analyze;
use crate::error::{Outcome, input_error};
use crate::model::sweep::SweepFile;
use crate::report;

/// `cauda analyze`.
#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    /// Run files, HdrHistogram .hlog/.hgrm, fio JSON/json+/latency/histogram
    /// logs, sockperf full logs, cyclictest output or plain numbers (format
    /// detected from content; .gz decompressed).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Print JSON (schema cauda.analysis/1) instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Percentiles to report, comma-separated.
    #[arg(long, value_name = "LIST", default_value = crate::analyze::quantile::DEFAULT_PERCENTILES, value_parser = percentile_list)]
    pub percentiles: PercentileList,
    /// Input options.
    #[command(flatten)]
    pub input: InputArgs,
    /// Confidence level of the percentile intervals, between 0 and 1.
    #[arg(
        long,
        value_name = "LEVEL",
        default_value_t = 0.95,
        allow_negative_numbers = true
    )]
    pub confidence: f64,
    /// Show what a request that waits for N independent calls to this
    /// distribution sees (its percentiles, and the leaf percentile its p99 needs).
    #[arg(long, value_name = "N")]
    pub fanout: Option<u32>,
    /// Correct imported closed-loop data for coordinated omission, given the
    /// interval at which requests were meant to be sent (values are synthesised
    /// and labelled so; never applied to series measured from intended starts).
    #[arg(long, value_name = "DURATION", value_parser = duration)]
    pub expected_interval: Option<u64>,
    /// Include the per-interval timeline (p50, p99, max, mean, count) in --json.
    #[arg(long)]
    pub timeline: bool,
}

impl AnalyzeArgs {
    /// Loads the inputs, analyses them and prints the result.
    pub fn run(&self) -> Result<Outcome> {
        let options = analyze::Options {
            percentiles: self.percentiles.0.clone(),
            confidence: self.confidence,
            fanout: self.fanout,
            expected_interval_ns: self.expected_interval,
            timeline: self.timeline,
        };
        analyze::validate(&options)?;
        let (sweeps, files) = sweeps_apart(&self.files)?;
        if !sweeps.is_empty() {
            return print_sweeps(&sweeps, &files, self.json);
        }
        let inputs = load_all(&files, &self.input)?;
        let analysis = analyze::analyze(&inputs, &options)?;
        let mut out = std::io::stdout().lock();
        if self.json {
            serde_json::to_writer(&mut out, &analysis)?;
            writeln!(out)?;
        } else {
            write!(out, "{}", report::table::render(&analysis))?;
        }
        out.flush()?;
        Ok(Outcome::Done)
    }
}

/// A sweep's table (or the sweep file as JSON); sweeps are analysed on
/// their own, not beside runs.
fn print_sweeps(sweeps: &[SweepFile], others: &[PathBuf], json: bool) -> Result<Outcome> {
    if let Some(other) = others.first() {
        return Err(input_error(format!(
            "{}: analyse sweep files apart from runs and other inputs (the steps' run files \
             can be analysed on their own)",
            other.display()
        )));
    }
    let mut out = std::io::stdout().lock();
    for sweep in sweeps {
        if json {
            serde_json::to_writer(&mut out, sweep)?;
            writeln!(out)?;
        } else {
            write!(out, "{}", report::sweep::render(sweep))?;
        }
    }
    out.flush()?;
    Ok(Outcome::Done)
}
