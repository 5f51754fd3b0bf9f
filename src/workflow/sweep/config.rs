//! What a sweep is asked to do, and the time a step takes within it.

use std::path::PathBuf;

use anyhow::Result;

use crate::analyze::objective::Objective;
use crate::error::input_error;
use crate::model::sweep::Knob;
use crate::units::format_duration_compact;

/// What `cauda sweep` is asked to do.
#[derive(Clone, Debug)]
pub struct SweepConfig {
    /// The objective.
    pub objective: Objective,
    /// What is varied.
    pub knob: Knob,
    /// The lowest value.
    pub from: f64,
    /// The highest value.
    pub to: f64,
    /// The bracket's half-width to reach, as a fraction.
    pub precision: f64,
    /// The whole sweep's time budget, ns.
    pub budget_ns: u64,
    /// A step's shortest measuring time, ns.
    pub min_step_ns: u64,
    /// A step's longest measuring time, ns.
    pub max_step_ns: u64,
    /// Samples expected above the objective's percentile per step.
    pub samples_above: u64,
    /// Confidence level of the intervals.
    pub confidence: f64,
    /// The series judged (`None`: the run's first).
    pub series: Option<String>,
    /// Where the sweep's directory is made.
    pub parent: PathBuf,
    /// The probe.
    pub probe: String,
    /// Its arguments.
    pub probe_args: Vec<String>,
    /// No progress lines.
    pub quiet: bool,
}

impl SweepConfig {
    /// A step's measuring time at `value`: enough for the samples the
    /// objective needs at that rate, within the step limits (closed loop,
    /// where the rate is not known beforehand: the shortest).
    pub fn step_ns(&self, value: f64) -> u64 {
        let wanted = match self.knob {
            Knob::Rate => {
                let samples = self.objective.samples_for(self.samples_above) as f64;
                (samples / value * 1e9).ceil() as u64
            }
            Knob::Iodepth => self.min_step_ns,
        };
        // Whole milliseconds: what `--runtime` is given and what is shown.
        (wanted.clamp(self.min_step_ns, self.max_step_ns)).div_ceil(1_000_000) * 1_000_000
    }
}

/// A step's fixed cost beside its measuring time (start, setup, writing
/// the run file), used only to plan within the budget.
pub const STEP_OVERHEAD_NS: u64 = 500_000_000;

/// Refuses, before measuring, a budget that cannot hold the first step.
pub fn check_budget(config: &SweepConfig) -> Result<()> {
    let first = config.step_ns(config.from);
    if first + STEP_OVERHEAD_NS > config.budget_ns {
        let wanted = config.objective.samples_for(config.samples_above);
        // What the step holds: the samples wanted, or as many as
        // --max-step (or, closed loop, --min-step) lets it take.
        let why = match config.knob {
            Knob::Rate if first < config.max_step_ns => format!(
                "{wanted} samples, so that {} are expected above p{}",
                config.samples_above, config.objective.percentile.key
            ),
            Knob::Rate => "--max-step".to_string(),
            Knob::Iodepth => "--min-step".to_string(),
        };
        return Err(input_error(format!(
            "--budget {}: one step at {} needs {} ({why}); give --budget {} or more, a higher \
             --from, or a lower --samples-above",
            format_duration_compact(config.budget_ns),
            config.knob.argument(config.from),
            format_duration_compact(first),
            format_duration_compact(
                (first + STEP_OVERHEAD_NS).div_ceil(60_000_000_000) * 60_000_000_000
            ),
        )));
    }
    Ok(())
}
