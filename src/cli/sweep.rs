//! `cauda sweep`: its flags, checked before anything is measured, and the
//! sweep they ask for.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use super::parse::duration;
use crate::analyze::objective::Objective;
use crate::error::{Outcome, input_error};
use crate::model::sweep::Knob;
use crate::record::StopFlag;
use crate::workflow::sweep::SweepConfig;

/// The deepest queue `disk --iodepth` takes.
const MAX_IODEPTH: u32 = 4096;

/// The most samples a step may aim to put above the percentile: a
/// million is already p99.9 over a billion operations.
const MAX_SAMPLES_ABOVE: u64 = 1_000_000;

/// The probes a sweep can drive: the open-loop ones.
const PROBES: [&str; 4] = ["disk", "net", "broker", "timer"];

/// Probe flags the sweep sets itself, or that make a probe closed loop or
/// several runs in one.
const OWN_FLAGS: [&str; 10] = [
    "--rate",
    "--runtime",
    "-o",
    "--output",
    "--quiet",
    "-q",
    "--hlog",
    "--closed-loop",
    "--acks-matrix",
    "--gap",
];

/// The flag an argument gives, as [`OWN_FLAGS`] names it: `--rate=5/s`
/// is `--rate`, and a cluster of short flags (`-qo`, `-ofile`) is its
/// first (`-q`, `-o`), the way the probe's parser reads it.
fn flag_name(arg: &str) -> &str {
    if arg.starts_with("--") {
        return arg.split('=').next().unwrap_or(arg);
    }
    match arg.char_indices().nth(1) {
        Some((at, c)) if arg.starts_with('-') => &arg[..at + c.len_utf8()],
        _ => arg,
    }
}

/// `cauda sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// The latency objective: a percentile and the latency it must stay
    /// under, e.g. 'p99.9<=1ms' or 'p99<500us'.
    #[arg(long, value_name = "OBJECTIVE")]
    pub objective: String,
    /// What to vary: the offered rate (open loop), or the queue depth of a
    /// closed-loop `disk` (fio's latency_target case).
    #[arg(long, value_enum, default_value = "rate")]
    pub vary: Knob,
    /// The lowest value: a rate (e.g. 100/s) or a queue depth.
    #[arg(long, value_name = "VALUE")]
    pub from: Option<String>,
    /// The highest value: a rate (e.g. 200k/s) or a queue depth.
    #[arg(long, value_name = "VALUE")]
    pub to: Option<String>,
    /// The longest the whole sweep may take; it stops with the bracket so
    /// far when another step would not fit.
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = duration)]
    pub budget: u64,
    /// Stop when the capacity's bracket is within ± this percentage of its
    /// middle.
    #[arg(long, value_name = "PCT", default_value_t = 5.0)]
    pub precision: f64,
    /// Each step measures at least this long.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = duration)]
    pub min_step: u64,
    /// ...and at most this long, however many samples the percentile needs.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = duration)]
    pub max_step: u64,
    /// Samples each step should put above the objective's percentile (30:
    /// 30,000 samples for p99.9), which decides a step's length at a rate.
    #[arg(long, value_name = "N", default_value_t = 30)]
    pub samples_above: u64,
    /// Confidence level of the percentile intervals, between 0 and 1.
    #[arg(long, value_name = "LEVEL", default_value_t = 0.95)]
    pub confidence: f64,
    /// The series the objective judges (default: the probe's first, e.g.
    /// net's rtt, disk's read or write, broker's publish).
    #[arg(long, value_name = "TAG")]
    pub series: Option<String>,
    /// Where to create cauda-sweep-DATE-TIME/ (sweep.json, one run file and
    /// log per step).
    #[arg(long, value_name = "PATH", default_value = ".")]
    pub dir: PathBuf,
    /// No progress lines (the table is still printed).
    #[arg(short, long)]
    pub quiet: bool,
    /// The probe and its flags, after `--`: disk, net, broker or timer
    /// (the sweep adds --rate or --iodepth, --runtime, --quiet and -o).
    #[arg(last = true, required = true, value_name = "PROBE ARGS")]
    pub probe: Vec<String>,
}

impl SweepArgs {
    /// The sweep these flags ask for, every problem named before measuring.
    pub fn config(&self) -> Result<SweepConfig> {
        let objective = Objective::parse(&self.objective)
            .map_err(|e| input_error(format!("--objective {e}")))?;
        let (probe, probe_args) = self.probe.split_first().expect("required by clap");
        if !PROBES.contains(&probe.as_str()) {
            return Err(input_error(format!(
                "sweep drives an open-loop probe: disk, net, broker or timer, not '{probe}'"
            )));
        }
        if self.vary == Knob::Iodepth && probe != "disk" {
            return Err(input_error(format!(
                "--vary iodepth: only disk has a queue depth; sweep {probe} by --vary rate"
            )));
        }
        let mut own: Vec<&str> = OWN_FLAGS.to_vec();
        if self.vary == Knob::Iodepth {
            own.push("--iodepth");
        }
        if let Some(flag) = probe_args.iter().find_map(|a| {
            let name = flag_name(a);
            own.contains(&name).then_some(name)
        }) {
            return Err(input_error(format!(
                "{probe} {flag}: the sweep sets the load and the runtime of each step itself \
                 (and needs one open-loop run per step); remove {flag}"
            )));
        }
        let (from, to) = self.range()?;
        if !(self.precision > 0.0 && self.precision < 50.0) {
            return Err(input_error(format!(
                "--precision {}: give a percentage between 0 and 50, e.g. 5",
                self.precision
            )));
        }
        if !(self.confidence > 0.5 && self.confidence < 1.0) {
            return Err(input_error(format!(
                "--confidence {}: give a level between 0.5 and 1, e.g. 0.95",
                self.confidence
            )));
        }
        if self.min_step == 0 || self.min_step > self.max_step {
            return Err(input_error(format!(
                "--min-step must be above zero and at most --max-step ({} > {})",
                crate::units::format_duration_compact(self.min_step),
                crate::units::format_duration_compact(self.max_step)
            )));
        }
        if !(1..=MAX_SAMPLES_ABOVE).contains(&self.samples_above) {
            return Err(input_error(format!(
                "--samples-above {}: give 1 to {MAX_SAMPLES_ABOVE} (30 is the default; each \
                 step is capped by --max-step anyway)",
                self.samples_above
            )));
        }
        Ok(SweepConfig {
            objective,
            knob: self.vary,
            from,
            to,
            precision: self.precision / 100.0,
            budget_ns: self.budget,
            min_step_ns: self.min_step,
            max_step_ns: self.max_step,
            samples_above: self.samples_above,
            confidence: self.confidence,
            series: self.series.clone(),
            parent: self.dir.clone(),
            probe: probe.clone(),
            probe_args: probe_args.to_vec(),
            quiet: self.quiet,
        })
    }

    /// `--from` and `--to` as the knob reads them; defaults 100/s to 1M/s,
    /// or depths 1 to 256.
    fn range(&self) -> Result<(f64, f64)> {
        let read = |flag: &str, text: &Option<String>, default: f64| -> Result<f64> {
            let Some(text) = text else {
                return Ok(default);
            };
            match self.vary {
                Knob::Rate => crate::units::parse_rate(text)
                    .map(|r| r.per_second)
                    .map_err(|e| input_error(format!("{flag} {e}"))),
                Knob::Iodepth => match text.parse::<u32>() {
                    Ok(n) if (1..=MAX_IODEPTH).contains(&n) => Ok(n as f64),
                    _ => Err(input_error(format!(
                        "{flag} '{text}': a queue depth is a whole number from 1 to \
                         {MAX_IODEPTH} (disk's --iodepth)"
                    ))),
                },
            }
        };
        let (low, high) = match self.vary {
            Knob::Rate => (100.0, 1e6),
            Knob::Iodepth => (1.0, 256.0),
        };
        let from = read("--from", &self.from, low)?;
        let to = read("--to", &self.to, high)?;
        if self.vary == Knob::Rate
            && let Some((flag, rate)) = [("--from", from), ("--to", to)]
                .into_iter()
                .find(|(_, rate)| *rate < 1.0)
        {
            return Err(input_error(format!(
                "{flag} {rate}/s: a sweep's rates start at 1/s (a step must hold enough \
                 samples to judge a percentile)"
            )));
        }
        if from >= to {
            return Err(input_error(format!(
                "--from {} --to {}: the range is empty or reversed; --from must be below --to",
                self.vary.argument(from),
                self.vary.argument(to)
            )));
        }
        Ok((from, to))
    }

    /// Runs the sweep (Ctrl-C keeps every finished step and the bracket).
    pub fn run(&self) -> Result<Outcome> {
        let config = self.config()?;
        crate::workflow::sweep::run(&config, &StopFlag::on_signals()?)
    }
}
