//! Exporters: pure functions from loaded inputs to bytes, one file per
//! format. The caller owns files (checks paths first, writes atomically).
//!
//! - [`hlog`]: an HdrHistogram interval log (format 1.3): the main series
//!   untagged, every other `Tag=NAME`, so Java's `HistogramLogProcessor`
//!   and HdrHistogram_py read it without a tag; also a probe's streamed log.
//! - [`json`] and [`runfile`]: a cauda run file (`cauda.run/1`).
//! - [`csv`]: one row per series per interval.
//! - [`hgrm`]: HdrHistogram's percentile distribution of each series.
//! - [`parquet`]: two tables for notebooks and SQL.
//! - [`omb`]: OpenMessaging Benchmark's result JSON of a broker run.
//! - [`trace`]: the slowest operations of a run with `--kernel blame` and
//!   their causes in the Trace Event Format (ui.perfetto.dev,
//!   chrome://tracing).
//! - [`prometheus`]: the text and native-histogram encodings the live
//!   metrics page serves.
//!
//! [`inputs`] and [`labels`] hold what several of them share.

#[cfg(test)]
pub mod blame_sample;
pub mod csv;
pub mod hgrm;
pub mod hlog;
pub mod inputs;
pub mod json;
pub mod labels;
pub mod omb;
pub mod parquet;
pub mod prometheus;
pub mod runfile;
pub mod trace;

/// The output formats of `cauda convert`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// HdrHistogram interval log.
    Hlog,
    /// cauda run file.
    Json,
    /// Per-interval CSV.
    Csv,
    /// HdrHistogram percentile distribution.
    Hgrm,
    /// Two Parquet tables in the directory -o names: intervals.parquet (one
    /// row per series per interval) and buckets.parquet (the histograms).
    Parquet,
    /// OpenMessaging Benchmark's result JSON, from one `cauda broker` run.
    Omb,
    /// Trace Event Format JSON of a run's slowest operations and their
    /// causes (a run measured with --kernel blame), for ui.perfetto.dev
    /// and chrome://tracing.
    Trace,
}
