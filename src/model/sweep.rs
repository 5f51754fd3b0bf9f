//! The sweep file (`cauda.sweep/1`): a search for the load a target takes
//! within a latency objective, written beside one run file per step.
//!
//! It holds what was asked (the objective, the probe and its arguments, the
//! range, the budget), each step as measured (the value varied, offered and
//! achieved rates, the percentiles with their intervals, the generator's
//! lag and the objective's verdict), and the capacity found: the highest
//! value wholly below the objective and the lowest wholly above it, with
//! why the search ended. The step files are named relative to it.

use serde::{Deserialize, Serialize};

use super::run::Tool;

/// The schema identifier written in every sweep file.
pub const SWEEP_SCHEMA: &str = "cauda.sweep/1";

/// What the sweep varies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Knob {
    /// The offered rate (`--rate`), operations per second: open loop.
    Rate,
    /// The queue depth (`disk --iodepth`), closed loop: fio's
    /// `latency_target` case.
    Iodepth,
}

impl Knob {
    /// The probe flag that carries the value.
    pub fn flag(self) -> &'static str {
        match self {
            Knob::Rate => "--rate",
            Knob::Iodepth => "--iodepth",
        }
    }

    /// The value as the probe flag takes it (`2500/s`, `16`).
    pub fn argument(self, value: f64) -> String {
        match self {
            Knob::Rate => format!("{}/s", trim_float(value)),
            Knob::Iodepth => format!("{}", value.round() as u64),
        }
    }
}

fn trim_float(value: f64) -> String {
    let text = format!("{value:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Where a measured distribution stands against the objective.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The percentile's whole confidence interval meets the objective.
    Below,
    /// The whole interval misses it.
    Above,
    /// The interval holds the threshold: the sample cannot tell.
    Straddles,
    /// Too few samples to bound the percentile at all.
    Unsupported,
}

/// One percentile of a step, with its confidence interval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Judged {
    /// The percentile, e.g. `99.9`.
    pub percentile: String,
    /// Samples in the distribution.
    pub count: u64,
    /// The point estimate, ns (absent with no samples).
    pub value_ns: Option<u64>,
    /// Lower end of its confidence interval, ns (absent when unbounded).
    pub lower_ns: Option<u64>,
    /// Upper end, ns (absent when unbounded).
    pub upper_ns: Option<u64>,
    /// Against the objective's latency (for the other percentiles too: the
    /// whole curve is judged against the same line).
    pub verdict: Verdict,
}

/// Why the search ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Ending {
    /// The bracket lies within the precision.
    Converged,
    /// No gap inside the bracket is wide enough to measure: the objective's
    /// percentile is within its interval of the threshold across it.
    Unresolved,
    /// The budget would not hold another step.
    Budget,
    /// Interrupted (Ctrl-C).
    Interrupted,
    /// The objective holds at every value up to the highest allowed.
    NeverViolated,
    /// The generator fell behind before the objective was violated.
    GeneratorLimit,
    /// The objective is already missed at the lowest value.
    ViolatedAtLowest,
    /// A step failed.
    Failed,
}

/// What one value was found to be, all its repeats pooled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepClass {
    /// The objective is met, interval and all.
    Below,
    /// The objective is missed, interval and all.
    Above,
    /// The sample could not tell.
    Unsure,
    /// The generator, not the target, fell behind: not the target's figure.
    GeneratorLimited,
}

/// One value measured (its repeats pooled).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepStep {
    /// The value varied: operations per second, or a queue depth.
    pub value: f64,
    /// The run files of its measurements, relative to the sweep file, in
    /// the order they ran.
    pub runs: Vec<String>,
    /// When each measurement ran, as its position in the sweep (1-based),
    /// so that repeats in alternating order show drift.
    pub order: Vec<usize>,
    /// Measuring time, all repeats, ns.
    pub measured_ns: u64,
    /// Operations offered per second (open loop; absent closed loop).
    pub offered_per_s: Option<f64>,
    /// Operations completed per second in the judged series.
    pub achieved_per_s: f64,
    /// The generator's lag (how late operations were issued), p99, ns,
    /// where the probe records it.
    pub lag_p99_ns: Option<u64>,
    /// Why the generator, not the target, is blamed for this step, if it is.
    pub generator_fell_behind: Option<String>,
    /// Why the target is named as the limit (it held the generator's
    /// slots and completed less than was offered), if it is.
    #[serde(default)]
    pub saturated: Option<String>,
    /// p50, p99, p99.9 and the objective's percentile of the judged series.
    pub percentiles: Vec<Judged>,
    /// The objective's percentile against the objective.
    pub objective: Judged,
    /// The class the search used.
    pub class: StepClass,
    /// The repeats' own verdicts disagreed (drift, or a knee this close).
    #[serde(default)]
    pub repeats_disagree: bool,
}

/// The capacity found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Capacity {
    /// The highest value wholly below the objective.
    pub below: Option<f64>,
    /// Achieved operations per second there.
    pub below_achieved_per_s: Option<f64>,
    /// The lowest value wholly above it.
    pub above: Option<f64>,
    /// The lowest value where the generator fell behind.
    pub generator_ceiling: Option<f64>,
    /// Why the search ended.
    pub ending: Ending,
    /// The finding in words.
    pub finding: String,
}

/// A sweep, as written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepFile {
    /// Always [`SWEEP_SCHEMA`].
    pub schema: String,
    /// The cauda that ran it.
    pub tool: Tool,
    /// When it started (RFC 3339, UTC).
    pub start_time: String,
    /// The objective as cauda reads it, e.g. `p99.9<=1ms`.
    pub objective: String,
    /// Its percentile, e.g. `99.9`.
    pub percentile: String,
    /// Its latency, ns.
    pub threshold_ns: u64,
    /// `<` rather than `<=`.
    pub strict: bool,
    /// Confidence level of the intervals.
    pub confidence: f64,
    /// The probe swept.
    pub probe: String,
    /// The probe's arguments as given (the sweep adds the varied flag,
    /// `--runtime`, `--quiet` and `-o`).
    pub probe_args: Vec<String>,
    /// The series judged.
    pub series: String,
    /// What was varied.
    pub knob: Knob,
    /// The lowest and highest value allowed.
    pub from: f64,
    /// See `from`.
    pub to: f64,
    /// The bracket's half-width the search aims for, as a fraction.
    pub precision: f64,
    /// The time budget, ns.
    pub budget_ns: u64,
    /// Samples expected above the objective's percentile in each step.
    pub samples_above: u64,
    /// The steps, by value.
    pub steps: Vec<SweepStep>,
    /// The capacity found.
    pub capacity: Capacity,
    /// Measuring time of all steps, ns.
    pub measuring_ns: u64,
    /// Wall time of the whole sweep, ns.
    pub elapsed_ns: u64,
}

/// The probe and its arguments as one command line (`net --loopback`,
/// or `timer` alone).
pub fn probe_command(probe: &str, args: &[String]) -> String {
    std::iter::once(probe)
        .chain(args.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ")
}
