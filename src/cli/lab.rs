//! `cauda lab`: the default suite's flags, and its run.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use crate::error::Outcome;
use crate::record::StopFlag;

/// `cauda lab`.
#[derive(Debug, Args)]
pub struct LabArgs {
    /// Where to create cauda-lab-DATE-TIME/ (its filesystem also holds the
    /// disk steps' temporary file, sized to the free space and removed
    /// afterwards).
    #[arg(long, value_name = "PATH", default_value = ".")]
    pub dir: PathBuf,
    /// The short suite: about 20 s instead of about 60 s.
    #[arg(long)]
    pub quick: bool,
    /// Steps to leave out (comma-separated).
    #[arg(long, value_enum, value_delimiter = ',', value_name = "STEPS")]
    pub skip: Vec<crate::workflow::lab::steps::StepKind>,
    /// Record kernel series beside each probe step (block, runq; see
    /// `cauda timer --help`); skipped with the reason where BPF cannot load.
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_enum)]
    pub kernel: Vec<crate::model::kernel::KernelSource>,
    /// Add capacity sweeps after the suite (comma-separated: disk, net):
    /// `cauda sweep` of each at --sweep-objective, 60 s each (20 s with
    /// --quick); off by default.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "PROBES")]
    pub sweep: Vec<crate::workflow::lab::steps::SweepKind>,
    /// The sweeps' latency objective.
    #[arg(long, value_name = "OBJECTIVE", default_value = "p99<=1ms")]
    pub sweep_objective: String,
}

impl LabArgs {
    /// The suite these flags ask for.
    pub fn config(&self) -> crate::workflow::lab::LabConfig {
        crate::workflow::lab::LabConfig {
            dir: self.dir.clone(),
            quick: self.quick,
            skip: self.skip.clone(),
            kernel: self.kernel.clone(),
            sweep: self.sweep.clone(),
            sweep_objective: self.sweep_objective.clone(),
        }
    }
}

impl LabArgs {
    /// Runs the suite (Ctrl-C stops it and keeps what finished).
    pub fn run(&self) -> Result<Outcome> {
        if !self.sweep.is_empty() {
            crate::analyze::objective::Objective::parse(&self.sweep_objective)
                .map_err(|e| crate::error::input_error(format!("--sweep-objective {e}")))?;
        }
        crate::workflow::lab::run(&self.config(), &StopFlag::on_signals()?)
    }
}
