//! `cauda convert`: its flags, and writing the chosen format.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use super::inputs::{InputArgs, load_all, print_warnings};
use crate::error::Outcome;
use crate::formats::export::{
    ExportFormat, csv, hgrm, hlog, inputs as gathered, json, omb, parquet, trace,
};
use crate::model::Loaded;
use crate::output::{self, OwnKind};
use crate::units::TimeUnit;

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

/// An exporter: the inputs (and the flags) in, the file's bytes out.
type Exporter = fn(&[Loaded], &ConvertArgs) -> Result<Vec<u8>>;

impl ConvertArgs {
    /// Loads the inputs and writes them in the chosen format.
    pub fn run(&self) -> Result<Outcome> {
        let (kind, export): (OwnKind, Exporter) = match self.to {
            ExportFormat::Json => (OwnKind::RunFile, |i, _| json::to_json(i)),
            ExportFormat::Hlog => (OwnKind::Hlog, |i, _| hlog::to_hlog(i)),
            ExportFormat::Csv => (OwnKind::Other, |i, _| csv::to_csv(i)),
            ExportFormat::Hgrm => (OwnKind::Other, |i, a| hgrm::to_hgrm(i, a.hgrm_unit)),
            ExportFormat::Omb => (OwnKind::Other, |i, _| omb::to_omb(i)),
            ExportFormat::Trace => (OwnKind::Other, |i, _| trace::to_trace(i)),
            ExportFormat::Parquet => return self.run_parquet(),
        };
        let checked = output::check_writable(&self.output, kind, self.force, "-o")?;
        let inputs = load_all(&self.files, &self.input)?;
        if !matches!(self.to, ExportFormat::Json | ExportFormat::Trace) {
            gathered::require_distributions(&inputs)?;
        }
        let bytes = export(&inputs, self)?;
        output::write_checked(&self.output, checked, &bytes)?;
        eprintln!("wrote {}", self.output.display());
        Ok(Outcome::Done)
    }

    /// `--to parquet`: a directory of two tables.
    fn run_parquet(&self) -> Result<Outcome> {
        let checked = output::dir::check_dir(
            &self.output,
            &parquet::FILES,
            OwnKind::Parquet,
            self.force,
            "-o",
        )?;
        let inputs = load_all(&self.files, &self.input)?;
        print_warnings(&gathered::left_out(&inputs)?);
        let tables = parquet::to_parquet(&inputs)?;
        output::dir::write_dir(&checked, &[&tables.intervals, &tables.buckets])?;
        eprintln!(
            "wrote {}: {} ({} rows) and {} ({} rows)",
            self.output.display(),
            parquet::FILES[0],
            tables.interval_rows,
            parquet::FILES[1],
            tables.bucket_rows
        );
        Ok(Outcome::Done)
    }
}
