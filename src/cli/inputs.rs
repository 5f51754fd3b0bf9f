//! The arguments of the commands that read files: `analyze`, `compare`,
//! `convert`, `merge` and `report`.

use std::path::PathBuf;

use clap::Args;

use super::{PercentileList, duration, percentile_list};
use crate::model::Format;
use crate::units::TimeUnit;

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

fn budgets(text: &str) -> Result<BudgetList, String> {
    crate::analyze::compare::parse_budgets(text).map(BudgetList)
}

/// A parsed `--fail-if-worse` list (a newtype so clap treats it as one value).
#[derive(Clone, Debug)]
pub struct BudgetList(pub Vec<crate::analyze::compare::Budget>);

/// `cauda compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The baseline (a run file or any supported input).
    #[arg(value_name = "BASE")]
    pub base: PathBuf,
    /// The run to judge against it.
    #[arg(value_name = "NEW")]
    pub new: PathBuf,
    /// Print JSON (schema cauda.compare/1).
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    /// Print a Markdown table, as before/after results are published.
    #[arg(long)]
    pub markdown: bool,
    /// Exit 1 when a metric got significantly worse by more than its budget,
    /// e.g. p99:10%,p99.9:20% (metrics: count, mean, max, throughput, pNN).
    #[arg(long, value_name = "SPEC", value_parser = budgets)]
    pub fail_if_worse: Option<BudgetList>,
    /// Confidence level of the change intervals, between 0 and 1.
    #[arg(
        long,
        value_name = "LEVEL",
        default_value_t = 0.95,
        allow_negative_numbers = true
    )]
    pub confidence: f64,
    /// Bootstrap resamples over intervals.
    #[arg(long, value_name = "N", default_value_t = 400, value_parser = clap::value_parser!(u32).range(50..=100_000))]
    pub resamples: u32,
    /// Seed of the bootstrap.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Input options.
    #[command(flatten)]
    pub input: InputArgs,
}

/// Input options shared by commands that read files.
#[derive(Debug, Args)]
pub struct InputArgs {
    /// Unit of plain numbers (and of .hlog and .hgrm values) in the inputs [default: ns].
    #[arg(long, value_enum)]
    pub unit: Option<TimeUnit>,
    /// The input format, instead of detecting it from the content.
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Interval length to cut timestamped logs into (fio latency logs, sockperf).
    #[arg(long = "log-interval", value_name = "DURATION", default_value = "1s", value_parser = duration)]
    pub log_interval: u64,
    /// For CSV input: the column holding the values, by header name or 1-based position.
    #[arg(long, value_name = "NAME|N")]
    pub column: Option<String>,
}

impl InputArgs {
    /// The read options these flags ask for.
    pub fn read_options(&self) -> crate::formats::import::options::ReadOptions {
        crate::formats::import::options::ReadOptions {
            unit: self.unit.unwrap_or(TimeUnit::Ns),
            unit_given: self.unit.is_some(),
            format: self.format,
            interval_ns: self.log_interval.max(1_000_000),
            column: self
                .column
                .as_deref()
                .map(crate::formats::import::options::Column::parse),
        }
    }
}

/// `cauda convert`.
#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// Inputs in any supported format.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The output format.
    #[arg(long, value_enum)]
    pub to: crate::formats::export::ExportFormat,
    /// The output file; for --to parquet, a directory (made if missing)
    /// that gets intervals.parquet and buckets.parquet.
    #[arg(short = 'o', long = "output", value_name = "PATH")]
    pub output: PathBuf,
    /// Overwrite an existing output file that cauda did not write (with
    /// --to parquet: also write into a directory holding other files).
    #[arg(long)]
    pub force: bool,
    /// Unit of the values in --to hgrm output.
    #[arg(long, value_enum, default_value_t = TimeUnit::Us)]
    pub hgrm_unit: TimeUnit,
    /// Input options.
    #[command(flatten)]
    pub input: InputArgs,
}

/// `cauda merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Inputs in any supported format.
    #[arg(required = true, num_args = 1.., value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The merged run file.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: PathBuf,
    /// Merge series with the same tag, or keep each input's apart.
    #[arg(long, value_enum, default_value_t = crate::formats::merge::TagBy::Tag)]
    pub tag_by: crate::formats::merge::TagBy,
    /// Overwrite an existing output file that cauda did not write.
    #[arg(long)]
    pub force: bool,
    /// Input options.
    #[command(flatten)]
    pub input: InputArgs,
}

/// `cauda report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Run files and other tools' outputs (any format `cauda analyze` reads).
    #[arg(required = true, num_args = 1.., value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The HTML file to write.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: PathBuf,
    /// Compare every input against this run (before/after table); it is
    /// also drawn in the charts.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// The page's title [default: "cauda report"].
    #[arg(long, value_name = "TEXT")]
    pub title: Option<String>,
    /// Also write each chart as a standalone SVG file into this directory
    /// (created if missing).
    #[arg(long, value_name = "DIR")]
    pub svg: Option<PathBuf>,
    /// Overwrite an existing output file (or SVG) that cauda did not write.
    #[arg(long)]
    pub force: bool,
    /// Confidence level of the intervals.
    #[arg(
        long,
        default_value_t = 0.95,
        value_name = "LEVEL",
        allow_negative_numbers = true
    )]
    pub confidence: f64,
    /// Input options.
    #[command(flatten)]
    pub input: InputArgs,
}
