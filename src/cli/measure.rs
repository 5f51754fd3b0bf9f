//! The one path every probe command takes: flags → configuration (checked)
//! → the stop flag (Ctrl-C saves) → the destination (checked) → a banner →
//! the run → the probe's epilogue → warnings, the summary table and where
//! the run was saved. Each probe supplies only what differs
//! ([`ProbeCommand`]).

use std::io::Write;

use anyhow::Result;

use super::inputs::print_warnings;
use super::run_output::RunOutputArgs;
use crate::analyze;
use crate::error::Outcome;
use crate::model::{Format, Loaded};
use crate::probe::run::{Destination, Finished};
use crate::record::StopFlag;
use crate::report;

/// What a probe run left: the run, and the exit code of a command it ran
/// (`cauda kernel -- CMD`), which becomes cauda's.
pub struct Ran {
    /// The run, as written.
    pub finished: Finished,
    /// The exit code of the command the run watched, if any.
    pub exit_code: Option<i32>,
}

impl From<Finished> for Ran {
    fn from(finished: Finished) -> Ran {
        Ran {
            finished,
            exit_code: None,
        }
    }
}

/// What a probe command supplies to [`measure`].
pub trait ProbeCommand {
    /// The probe's configuration, as its `run` takes it.
    type Config;
    /// The flags every probe shares.
    fn output(&self) -> &RunOutputArgs;
    /// The flags turned into the probe's configuration, checked (each
    /// problem names its flag).
    fn config(&self) -> Result<Self::Config>;
    /// One line to stderr before the run: what is about to be measured.
    fn banner(config: &Self::Config) -> String;
    /// Measures, and writes the run file.
    fn run(config: &Self::Config, destination: &Destination, stop: &StopFlag) -> Result<Ran>;
    /// What the probe prints after its run, before the table (its own
    /// accounting); nothing by default.
    fn epilogue(_finished: &Finished) {}
}

/// Runs a probe command from its flags to the printed summary.
pub fn measure<C: ProbeCommand>(command: &C) -> Result<Outcome> {
    let config = command.config()?;
    let stop = StopFlag::on_signals()?;
    let output = command.output();
    let destination = output.destination()?;
    if !output.quiet {
        eprintln!("{}", C::banner(&config));
    }
    let Ran {
        finished,
        exit_code,
    } = C::run(&config, &destination, &stop)?;
    if !output.quiet {
        C::epilogue(&finished);
    }
    let outcome = finish_run(finished, output.quiet)?;
    Ok(match exit_code {
        Some(code) if code != 0 && outcome == Outcome::Done => Outcome::Exit(code),
        _ => outcome,
    })
}

/// Prints a finished run's warnings, its table and where it was saved.
fn finish_run(finished: Finished, quiet: bool) -> Result<Outcome> {
    let Finished { mut run, path } = finished;
    print_warnings(&run.warnings);
    let interrupted = run.interrupted;
    let source = path.display().to_string();
    if !quiet {
        let loaded = Loaded {
            source: source.clone(),
            format: Format::CaudaRun,
            series: std::mem::take(&mut run.series),
            run: Some(run),
            warnings: Vec::new(),
        };
        let analysis = analyze::analyze(&[loaded], &analyze::Options::default())?;
        let mut out = std::io::stdout().lock();
        write!(out, "{}", report::table::render(&analysis))?;
    }
    if interrupted {
        eprintln!(
            "interrupted: every completed interval and the partial one are saved in {source}"
        );
        Ok(Outcome::Interrupted)
    } else {
        eprintln!("saved {source}");
        Ok(Outcome::Done)
    }
}
