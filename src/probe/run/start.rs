//! When a run starts: at `--start-at` if given (so a fleet's runs share
//! their intervals), else as soon as every probe thread is ready; and the
//! warning for a run that began later than it was told to.

use std::time::SystemTime;

use anyhow::Result;

use crate::host::counters::{Reading, Sampler};
use crate::model::Warning;
use crate::record::{Clock, MonotonicClock, StopFlag};

/// The run's start, on both clocks.
pub struct Start {
    /// Monotonic ns: where the intervals begin.
    pub run_start: u64,
    /// Wall clock, ns since the epoch: for people and for lining up hosts.
    pub start_unix_ns: u128,
    /// The wall-clock start in RFC 3339, to the second.
    pub start_time: String,
}

/// Waits for `--start-at` (`start_at`, ns since the epoch), then fixes the
/// start: the wall clock, the host counters' sampler made and its baseline
/// reading taken (as near the start as possible), and the monotonic
/// clock, in that order.
pub fn fix(
    start_at: Option<u128>,
    stop: &StopFlag,
    sampler: impl FnOnce() -> Option<Sampler>,
) -> Result<(Start, Option<(Sampler, Reading)>)> {
    if let Some(at) = start_at {
        wait_for_wall_clock(at, stop)?;
    }
    let wall_start = SystemTime::now();
    let start_unix_ns = wall_start
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let start_time = humantime::format_rfc3339_seconds(wall_start).to_string();
    let sampling = sampler().map(|mut sampler| {
        let baseline = sampler.sample();
        (sampler, baseline)
    });
    let start = Start {
        run_start: MonotonicClock.now(),
        start_unix_ns,
        start_time,
    };
    Ok((start, sampling))
}

/// A run that began later than its `--start-at` by more than 1 % of an
/// interval (preparing took longer than the time given, or the CPUs were
/// busy at that instant): its intervals are off those of the runs that
/// began on time by that much, as `merge` will also say.
pub fn late_start(start_at: Option<u128>, started: u128, interval_ns: u64) -> Option<Warning> {
    let late = started.saturating_sub(start_at?);
    (late * 100 > u128::from(interval_ns)).then(|| Warning {
        message: format!(
            "the run began {} after --start-at (preparing took longer, or the CPUs were busy \
             at that instant): its intervals are that far off those of runs that began on time",
            crate::units::format_ns(late as f64)
        ),
        advice: "give --start-at more time than this host needs to prepare the probe, and \
                 keep its CPUs free at that instant"
            .into(),
    })
}

/// Waits until the wall clock reads `at` (ns since the epoch), in sleeps
/// on the monotonic clock that the first Ctrl-C or SIGTERM ends at once
/// ([`StopFlag::sleep_until`]); a time already past returns at once (the
/// run records how late it began).
fn wait_for_wall_clock(at: u128, stop: &StopFlag) -> Result<()> {
    // Short steps, so a wall clock stepped meanwhile (NTP) is followed.
    const STEP_NS: u128 = 50_000_000;
    let clock = MonotonicClock;
    let now_unix = || {
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    };
    let mut left = at.saturating_sub(now_unix());
    // Said to a person at a terminal and to an orchestrator's log alike.
    if left > 1_000_000_000 {
        eprintln!(
            "waiting {:.1} s for --start-at (Ctrl-C stops; nothing is measured before it)",
            left as f64 / 1e9
        );
    }
    while left > 0 {
        // Whole steps, then the rest in one sleep aimed at the instant.
        let nap = left.min(STEP_NS) as u64;
        if stop.sleep_until(clock.now() + nap) {
            return Err(crate::error::interrupted(
                "interrupted while waiting for --start-at: nothing was measured",
            ));
        }
        left = at.saturating_sub(now_unix());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::late_start;

    #[test]
    fn a_run_that_began_late_for_its_start_at_says_by_how_much() {
        let second = 1_000_000_000;
        let at = 1_795_000_000 * u128::from(second);
        // On time, or late by up to 1 % of an interval: nothing to say.
        assert!(late_start(None, at + 5 * u128::from(second), second).is_none());
        assert!(late_start(Some(at), at + 10_000_000, second).is_none());
        assert!(late_start(Some(at), at - 1, second).is_none());
        let warning = late_start(Some(at), at + 250_000_000, second).unwrap();
        assert!(warning.message.contains("250"), "{}", warning.message);
        assert!(warning.advice.contains("--start-at"), "{}", warning.advice);
    }
}
