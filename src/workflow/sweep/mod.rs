//! `cauda sweep`: how much load a target takes within a latency objective.
//!
//! The probe runs as a child `cauda` once per step ([`step`]), at values
//! the search chooses ([`search`]): doubling from `--from` until the
//! objective's percentile lies wholly above the objective, then halving the
//! widest gap of the bracket. Each step lasts long enough for
//! `--samples-above` samples to be expected above the percentile (so the
//! support rule bounds it); a step the sample cannot judge is measured
//! again and pooled, and when the bracket has closed, its two ends are
//! measured again in the reverse order, so that drift shows. After every
//! step the sweep file is rewritten, so an interrupted sweep keeps its
//! bracket so far.

mod config;
mod finding;
pub mod search;
pub mod step;

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

use anyhow::{Context, Result};

use crate::error::{Outcome, input_error};
use crate::model::Tool;
use crate::model::sweep::{
    Capacity, Ending, Knob, SWEEP_SCHEMA, StepClass, SweepFile, SweepStep, probe_command,
};
use crate::record::StopFlag;
use crate::units::format_duration_compact;
use crate::workflow::child::{self, Ended};
pub use config::SweepConfig;
use config::{STEP_OVERHEAD_NS, check_budget};
use search::{Next, Search};

/// Runs the sweep; writes `sweep.json` and one run file per step in a new
/// directory under `config.parent`.
pub fn run(config: &SweepConfig, stop: &StopFlag) -> Result<Outcome> {
    check_budget(config)?;
    let exe = std::env::current_exe().context("cannot find the cauda executable to run steps")?;
    let dir = child::new_dir(&config.parent, "cauda-sweep", "--dir")?;
    let started = Instant::now();
    let mut sweep = Sweep::new(config, &dir);
    if !config.quiet {
        eprintln!(
            "sweep: {} of {}, {} from {} to {}, budget {}; writing {}",
            config.objective,
            probe_command(&config.probe, &config.probe_args),
            config.knob.flag(),
            config.knob.argument(config.from),
            config.knob.argument(config.to),
            format_duration_compact(config.budget_ns),
            dir.display()
        );
    }
    let mut search = Search::new(
        config.from,
        config.to,
        config.precision,
        config.knob == Knob::Iodepth,
    );
    let mut pending: VecDeque<f64> = VecDeque::new();
    let mut confirmed = false;
    let ending = loop {
        if stop.is_raised() {
            break Ending::Interrupted;
        }
        let value = match pending.pop_front() {
            Some(value) => value,
            None => match search.next() {
                Next::Measure(value) => value,
                Next::Done(Ending::Converged) if !confirmed => {
                    // The bracket's ends again, in the reverse order.
                    confirmed = true;
                    let b = search.bracket();
                    pending.extend(b.above.into_iter().chain(b.below));
                    continue;
                }
                Next::Done(ending) => break ending,
            },
        };
        let runtime = config.step_ns(value);
        if started.elapsed().as_nanos() as u64 + runtime + STEP_OVERHEAD_NS > config.budget_ns {
            if pending.is_empty() && confirmed && search.next() == Next::Done(Ending::Converged) {
                break Ending::Converged;
            }
            break Ending::Budget;
        }
        match sweep.measure(&exe, value, runtime, stop)? {
            Some(step) => {
                let class = step.class;
                if class == StepClass::Unsure && step.runs.len() < 2 {
                    pending.push_front(value);
                }
                search.record(value, class);
            }
            None => {
                break if stop.is_raised() {
                    Ending::Interrupted
                } else {
                    Ending::Failed
                };
            }
        }
        sweep.write(&search, None, started)?;
    };
    let written = sweep.write(&search, Some(ending), started)?;
    if !config.quiet {
        eprintln!("{}", written.capacity.finding);
        eprintln!("saved {}", dir.join("sweep.json").display());
    }
    print!("{}", crate::report::sweep::render(&written));
    Ok(match ending {
        Ending::Interrupted => Outcome::Interrupted,
        Ending::Failed => Outcome::Exit(1),
        _ => Outcome::Done,
    })
}

/// The sweep as it goes: the steps measured and where they are.
struct Sweep<'a> {
    config: &'a SweepConfig,
    dir: PathBuf,
    start_time: String,
    steps: Vec<SweepStep>,
    positions: usize,
    /// Why the last step failed, for the finding.
    failure: Option<String>,
    /// The series judged, as the runs name it.
    series: String,
    /// The steps' warnings already shown.
    warned: Vec<crate::model::Warning>,
}

impl<'a> Sweep<'a> {
    fn new(config: &'a SweepConfig, dir: &Path) -> Sweep<'a> {
        Sweep {
            config,
            dir: dir.to_path_buf(),
            start_time: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
            steps: Vec::new(),
            positions: 0,
            failure: None,
            series: config.series.clone().unwrap_or_default(),
            warned: Vec::new(),
        }
    }

    /// Measures `value` once more and judges all its runs; `None` when the
    /// step did not finish (interrupted: its run is kept but not judged;
    /// failed: the reason is kept). A first step refused as bad input ends
    /// the sweep as bad input.
    fn measure(
        &mut self,
        exe: &Path,
        value: f64,
        runtime: u64,
        stop: &StopFlag,
    ) -> Result<Option<SweepStep>> {
        self.positions += 1;
        let position = self.positions;
        let config = self.config;
        if !config.quiet {
            eprint!(
                "step {position}: {} for {} … ",
                config.knob.argument(value),
                format_duration_compact(runtime)
            );
        }
        let measured = step::measure(exe, config, &self.dir, value, runtime, position, stop)?;
        match measured.ended {
            Ended::Done => {}
            Ended::Interrupted => {
                if !config.quiet {
                    eprintln!("interrupted");
                }
                return Ok(None);
            }
            Ended::Failed { code, words } => {
                if !config.quiet {
                    eprintln!("failed");
                }
                if code == Some(2) && self.steps.is_empty() {
                    return Err(input_error(format!(
                        "{}: {words}",
                        probe_command(&config.probe, &config.probe_args)
                    )));
                }
                self.failure = Some(words);
                return Ok(None);
            }
        }
        // This value's earlier runs (a repeat pools them) and the new one.
        let mut runs: Vec<(String, usize)> = self
            .steps
            .iter()
            .filter(|s| s.value == value)
            .flat_map(|s| s.runs.iter().cloned().zip(s.order.iter().copied()))
            .collect();
        runs.push((measured.run, position));
        let (judged, tag, warnings) = step::judge_runs(
            config,
            &self.dir,
            value,
            &runs,
            crate::analyze::load::load_verdict,
        )?;
        self.series = tag;
        if !config.quiet {
            eprintln!("{}", finding::step_line(&judged, config));
        }
        // What a step's probe warned of, once per sweep (a file on tmpfs,
        // cauda's threads sharing the probe's CPUs): the steps run quiet.
        for warning in warnings {
            if !self.warned.contains(&warning) {
                eprintln!(
                    "warning (from the step's run): {} — {}",
                    warning.message, warning.advice
                );
                self.warned.push(warning);
            }
        }
        self.steps.retain(|s| s.value != value);
        self.steps.push(judged.clone());
        self.steps.sort_by(|a, b| a.value.total_cmp(&b.value));
        Ok(Some(judged))
    }

    /// Writes `sweep.json` as it stands (`ending` once the search is over).
    fn write(
        &self,
        search: &Search,
        ending: Option<Ending>,
        started: Instant,
    ) -> Result<SweepFile> {
        let config = self.config;
        let bracket = search.bracket();
        let ending = ending.unwrap_or(Ending::Interrupted);
        let achieved_at = |value: Option<f64>| {
            let value = value?;
            self.steps
                .iter()
                .find(|s| s.value == value)
                .map(|s| s.achieved_per_s)
        };
        let mut capacity = Capacity {
            below: bracket.below,
            below_achieved_per_s: achieved_at(bracket.below),
            above: bracket.above,
            generator_ceiling: bracket.ceiling,
            ending,
            finding: String::new(),
        };
        capacity.finding = finding::of(&capacity, config, &self.steps, self.failure.as_deref());
        let file = SweepFile {
            schema: SWEEP_SCHEMA.into(),
            tool: Tool::this(),
            start_time: self.start_time.clone(),
            objective: config.objective.to_string(),
            percentile: config.objective.percentile.key.clone(),
            threshold_ns: config.objective.threshold_ns,
            strict: config.objective.strict,
            confidence: config.confidence,
            probe: config.probe.clone(),
            probe_args: config.probe_args.clone(),
            series: self.series.clone(),
            knob: config.knob,
            from: config.from,
            to: config.to,
            precision: config.precision,
            budget_ns: config.budget_ns,
            samples_above: config.samples_above,
            measuring_ns: self.steps.iter().map(|s| s.measured_ns).sum(),
            steps: self.steps.clone(),
            capacity,
            elapsed_ns: started.elapsed().as_nanos() as u64,
        };
        let mut bytes = serde_json::to_vec_pretty(&file)?;
        bytes.push(b'\n');
        crate::output::write_atomic(&self.dir.join("sweep.json"), &bytes)?;
        Ok(file)
    }
}
