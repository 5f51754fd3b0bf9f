//! Hiccups: how late a thread that only sleeps wakes up (jHiccup's idea).
//!
//! A control thread sleeps 1 ms at a time and records how much later than
//! asked it woke. It does no work of its own, so whatever delays it — the
//! scheduler, an interrupt storm, a stolen vCPU, page reclaim, a frozen VM —
//! delays every thread on the host. `cauda hiccup` runs it alone, one pinned
//! thread per chosen CPU. Beside other probes the same idea, at one wake-up
//! per interval, is the run engine's `self` heartbeat (`probe::run::heartbeat`).
//!
//! Unlike the `timer` probe it sleeps *relative* to its last wake-up, as
//! jHiccup does: a long stall is one long sample, not a backlog.

use anyhow::Result;
use serde::Serialize;

use crate::error::input_error;
use crate::model::{LoadMode, MeasuredFrom};
use crate::probe::run::{self, Blamed, Destination, Finished, Observe, Plan, SeriesSpec};
use crate::record::{Clock, Sink, StopFlag};
use crate::sys;
use crate::units::format_duration_compact;

/// The control thread's sleep.
pub const SLEEP_NS: u64 = 1_000_000;

/// `cauda hiccup`'s parameters, as resolved; stored in the run file.
#[derive(Clone, Debug, Serialize)]
pub struct HiccupConfig {
    /// How long to measure, ns.
    pub runtime_ns: u64,
    /// The sleep asked for, ns.
    pub sleep_ns: u64,
    /// One pinned thread per CPU; empty: one unpinned thread.
    pub cpus: Vec<usize>,
    /// The histogram interval length, ns.
    pub interval_length_ns: u64,
}

impl HiccupConfig {
    /// Checks the parameters; each problem names its flag.
    pub fn validate(&self) -> Result<()> {
        if !(10_000..=1_000_000_000).contains(&self.sleep_ns) {
            return Err(input_error("--sleep: must lie between 10us and 1s"));
        }
        if self.runtime_ns < self.sleep_ns || self.runtime_ns > 30 * 24 * 3_600_000_000_000 {
            return Err(input_error(format!(
                "--runtime {}: must be at least --sleep and at most 30 days",
                format_duration_compact(self.runtime_ns)
            )));
        }
        crate::probe::check_interval_length(self.interval_length_ns)?;
        crate::probe::check_cpus(&self.cpus)?;
        Ok(())
    }

    fn tags(&self) -> Vec<String> {
        if self.cpus.is_empty() {
            vec!["hiccup".into()]
        } else {
            self.cpus.iter().map(|c| format!("cpu{c}")).collect()
        }
    }
}

/// Sleeps `sleep_ns` at a time until `end_ns` (or until `done` says so),
/// recording in `series` how late each wake-up was. Returns when it stopped.
pub fn control_loop<C: Clock, S: Sink>(
    clock: &C,
    sleep_ns: u64,
    end_ns: u64,
    sink: &mut S,
    series: usize,
    done: &dyn Fn() -> bool,
) -> u64 {
    let mut now = clock.now();
    while now < end_ns && !done() {
        let deadline = now + sleep_ns;
        sink.begin(deadline);
        clock.sleep_until(deadline);
        now = clock.now();
        if done() {
            break;
        }
        sink.record(now, series, now.saturating_sub(deadline));
    }
    now
}

/// Runs `cauda hiccup` and writes its run file.
pub fn run(config: &HiccupConfig, destination: &Destination, stop: &StopFlag) -> Result<Finished> {
    config.validate()?;
    let tags = config.tags();
    let plan = Plan {
        probe: "hiccup",
        load: LoadMode::OpenLoop,
        parameters: serde_json::to_value(config)?,
        series: tags
            .iter()
            .map(|tag| SeriesSpec {
                blamed: Blamed::Yes,
                tag: tag.clone(),
                measured_from: MeasuredFrom::IntendedStart,
            })
            .collect(),
        threads: tags.len(),
        interval_ns: config.interval_length_ns,
        warnings: Vec::new(),
        offered: None,
    };
    let prepare = |thread: usize| -> Result<()> {
        sys::set_timer_slack_ns(1)
            .map_err(|e| anyhow::anyhow!("cannot set the timer slack ({e})"))?;
        if let Some(&cpu) = config.cpus.get(thread) {
            sys::pin_current_thread(cpu).map_err(|e| {
                input_error(format!("--cpus: cannot pin a thread to CPU {cpu} ({e})"))
            })?;
        }
        Ok(())
    };
    let body =
        |thread: usize, start: u64, recorder: &mut crate::record::Recorder, stop: &StopFlag| {
            let clock = crate::record::MonotonicClock;
            let done = || stop.is_raised();
            Ok(control_loop(
                &clock,
                config.sleep_ns,
                start + config.runtime_ns,
                recorder,
                thread,
                &done,
            ))
        };
    // The probe is the control thread itself: no second one beside it.
    let observe = Observe {
        self_heartbeat: false,
        ..Observe::default()
    };
    run::run_completing(plan, &observe, destination, stop, prepare, body, |_| Ok(()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::FakeClock;

    #[test]
    fn a_stall_is_one_long_sample_not_a_backlog() {
        let clock = FakeClock::new(0, 2_000);
        clock.stall_at(50_000_000, 30_000_000);
        let mut values = Vec::new();
        control_loop(&clock, SLEEP_NS, 200_000_000, &mut values, 0, &|| false);
        let late: Vec<u64> = values.iter().map(|v| v.2).filter(|&v| v > 2_000).collect();
        assert_eq!(late.len(), 1, "{late:?}");
        assert!(late[0] >= 29_000_000);
        assert!(values.iter().all(|v| v.2 >= 2_000));
    }
}
