//! An input as loaded for analysis: where it came from, what format it was
//! in, its series and, for a run file, the whole run. Importers
//! (`crate::formats`) produce it; analysis and reports consume it without
//! knowing which importer made it.

use serde::Serialize;

use super::run::{LoadMode, RunFile, Warning};
use super::series::Series;

/// A format cauda can read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// A cauda run file (`cauda.run/1`).
    CaudaRun,
    /// An HdrHistogram interval log (`.hlog`, Java/jHiccup/Python/Rust).
    Hlog,
    /// An HdrHistogram percentile distribution (`.hgrm`): percentiles only.
    Hgrm,
    /// fio `--output-format=json` or `json+`.
    FioJson,
    /// fio per-I/O latency log (`write_lat_log`, `log_avg_msec=0`).
    FioLatLog,
    /// fio histogram log (`write_hist_log`).
    FioHistLog,
    /// sockperf `--full-log` CSV.
    Sockperf,
    /// cyclictest `-h N` text histogram.
    CyclictestHist,
    /// cyclictest `--json` output.
    CyclictestJson,
    /// One number per line.
    Numbers,
}

/// What a file held, ready for analysis.
#[derive(Debug)]
pub struct Loaded {
    /// The path as the user gave it.
    pub source: String,
    /// The detected format.
    pub format: Format,
    /// The series.
    pub series: Vec<Series>,
    /// The rest of the run, when the input was a run file: everything but
    /// its series, which are in `series`.
    pub run: Option<RunFile>,
    /// What the importer passed over and why (a torn last line), to be
    /// shown beside whatever is made of the input.
    pub warnings: Vec<Warning>,
}

impl Loaded {
    /// Open or closed loop, when the source says.
    pub fn load_mode(&self) -> Option<LoadMode> {
        self.run.as_ref().map(|r| r.load)
    }
}
