//! The input options of the commands that read files (`analyze`,
//! `compare`, `convert`, `merge`, `report`), and loading those files (and
//! telling sweep files, which `analyze` and `report` read apart, from the
//! rest).

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;

use super::parse::duration;
use crate::error::input_error;
use crate::formats::import;
use crate::formats::import::options::{Column, ReadOptions};
use crate::model::sweep::SweepFile;
use crate::model::{Format, Loaded, Warning};
use crate::units::TimeUnit;

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
    pub fn read_options(&self) -> ReadOptions {
        ReadOptions {
            unit: self.unit.unwrap_or(TimeUnit::Ns),
            unit_given: self.unit.is_some(),
            format: self.format,
            interval_ns: self.log_interval.max(1_000_000),
            column: self.column.as_deref().map(Column::parse),
        }
    }
}

/// Loads an input and prints what its importer passed over.
pub fn load(path: &Path, options: &ReadOptions) -> Result<Loaded> {
    let loaded = import::load(path, options)?;
    print_warnings(&loaded.warnings);
    Ok(loaded)
}

/// Loads every input, on every CPU (files are independent).
pub fn load_all(files: &[PathBuf], input: &InputArgs) -> Result<Vec<Loaded>> {
    let options = input.read_options();
    crate::sys::map_parallel(files, |path| load(path, &options))
        .into_iter()
        .collect()
}

/// Prints warnings, one line each: what happened — what to do.
pub fn print_warnings(warnings: &[Warning]) {
    for warning in warnings {
        eprintln!("warning: {} — {}", warning.message, warning.advice);
    }
}

/// The sweep files among the inputs, read, and the other inputs.
pub fn sweeps_apart(files: &[PathBuf]) -> Result<(Vec<SweepFile>, Vec<PathBuf>)> {
    let mut sweeps = Vec::new();
    let mut others = Vec::new();
    for path in files {
        match SweepFile::read(path).map_err(input_error)? {
            Some(sweep) => sweeps.push(sweep),
            None => others.push(path.clone()),
        }
    }
    Ok((sweeps, others))
}
