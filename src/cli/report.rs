//! `cauda report`: its flags, and the self-contained HTML report (and
//! its charts as SVG files with `--svg`).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use super::inputs::{InputArgs, load, load_all};
use crate::analyze;
use crate::error::{Outcome, input_error};
use crate::output::{self, OwnKind};
use crate::report::html;

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

impl ReportArgs {
    /// Loads the inputs and writes the report.
    pub fn run(self) -> Result<Outcome> {
        let checked = output::check_writable(&self.output, OwnKind::HtmlReport, self.force, "-o")?;
        if let Some(dir) = &self.svg {
            html::check_svg_dir(dir)?;
        }
        let options = html::Options {
            title: self.title.clone().unwrap_or_else(|| "cauda report".into()),
            confidence: self.confidence,
        };
        analyze::validate(&analyze::Options {
            confidence: options.confidence,
            ..analyze::Options::default()
        })?;
        let (sweeps, files) = super::inputs::sweeps_apart(&self.files)?;
        let built = if sweeps.is_empty() {
            self.build(&files, &options)?
        } else if let Some(other) = files.first().or(self.baseline.as_ref()) {
            return Err(input_error(format!(
                "{}: a report shows sweep files or runs, not both; report the steps' run files \
                 on their own",
                other.display()
            )));
        } else {
            html::sweep_page(&sweeps, &options, self.svg.is_some())
        };
        if let Some(dir) = &self.svg {
            html::check_svgs(dir, &built.charts, self.force)?;
        }
        output::write_checked(&self.output, checked, built.html.as_bytes())?;
        eprintln!("wrote {}", self.output.display());
        if let Some(dir) = &self.svg {
            let written = html::write_svgs(dir, &built.charts, self.force)?;
            eprintln!("wrote {} chart(s) into {}", written.len(), dir.display());
        }
        Ok(Outcome::Done)
    }
}

impl ReportArgs {
    /// The report on runs and other tools' outputs.
    fn build(&self, files: &[PathBuf], options: &html::Options) -> Result<html::Report> {
        let inputs = load_all(files, &self.input)?;
        let baseline = self
            .baseline
            .as_ref()
            .map(|path| load(path, &self.input.read_options()))
            .transpose()?;
        html::build(&inputs, baseline.as_ref(), options, self.svg.is_some())
    }
}
