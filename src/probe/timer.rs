//! The `timer` probe: how late does the OS wake a sleeping thread?
//!
//! A cyclictest-class loop: each thread sleeps with
//! `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)` until its next intended
//! wake-up and records how late it woke. Unlike cyclictest, a wake-up so
//! late that it overran later periods does not skip them: those periods
//! were due too, so each is recorded from its own intended time (the
//! backlog a stall causes, counted in full).
//!
//! `--idle-sweep` measures wake-up latency as a function of how long the
//! CPU was idle (one series per idle length), the curve that exposes the
//! exit cost of deep C-states.

use anyhow::Result;
use serde::Serialize;

use crate::error::input_error;
use crate::model::{LoadMode, MeasuredFrom, Warning};
use crate::probe::run::{self, Destination, Finished, Plan};
use crate::probe::run::{Blamed, SeriesSpec};
use crate::record::{Arrivals, Clock, MonotonicClock, Schedule, Sink, StopFlag};
use crate::sys;
use crate::units::format_duration_compact;

/// The idle lengths swept by default: 10 µs to 10 ms, 1-2-5 log spacing.
pub const DEFAULT_IDLE_LENGTHS_NS: [u64; 10] = [
    10_000, 20_000, 50_000, 100_000, 200_000, 500_000, 1_000_000, 2_000_000, 5_000_000, 10_000_000,
];

/// The timer probe's parameters, as resolved; stored in the run file.
#[derive(Clone, Debug, Serialize)]
pub struct TimerConfig {
    /// The wake-up period in ns (the mean gap for Poisson arrivals).
    pub interval_ns: u64,
    /// How long to measure, in ns.
    pub runtime_ns: u64,
    /// How many threads.
    pub threads: usize,
    /// CPUs to pin threads to (thread i on `cpus[i % len]`); empty = unpinned.
    pub cpus: Vec<usize>,
    /// SCHED_FIFO priority, if any.
    pub priority: Option<i32>,
    /// Wake-up spacing.
    pub arrivals: Arrivals,
    /// Seed of the Poisson schedule (thread i uses seed + i).
    pub seed: u64,
    /// Whether to `mlockall`.
    pub lock_memory: bool,
    /// PM QoS CPU latency limit held during the run (`/dev/cpu_dma_latency`), in µs.
    pub cpu_dma_latency_us: Option<i32>,
    /// Timer slack of the measuring threads, in ns (1: none beyond the minimum).
    pub timer_slack_ns: u64,
    /// Idle lengths for `--idle-sweep`, in ns; `None` for a periodic run.
    pub idle_sweep_ns: Option<Vec<u64>>,
    /// The histogram interval length in ns.
    pub interval_length_ns: u64,
}

/// The series of a periodic run.
pub const WAKEUP: usize = 0;

impl TimerConfig {
    /// Checks the parameters; every problem is an input error naming its flag.
    pub fn validate(&self) -> Result<()> {
        const MAX_RUNTIME: u64 = 30 * 24 * 3_600_000_000_000;
        if self.interval_ns < 1_000 {
            return Err(input_error(format!(
                "--interval {}: must be at least 1us (a timer cannot wake more often usefully)",
                format_duration_compact(self.interval_ns)
            )));
        }
        if self.interval_ns > 3_600_000_000_000 {
            return Err(input_error("--interval: at most 1h"));
        }
        if self.runtime_ns < 1_000_000 || self.runtime_ns > MAX_RUNTIME {
            return Err(input_error(format!(
                "--runtime {}: must be between 1ms and 30 days",
                format_duration_compact(self.runtime_ns)
            )));
        }
        if self.idle_sweep_ns.is_none() && self.runtime_ns < self.interval_ns {
            return Err(input_error(format!(
                "--runtime {} is shorter than --interval {}: no wake-up would be measured",
                format_duration_compact(self.runtime_ns),
                format_duration_compact(self.interval_ns)
            )));
        }
        crate::probe::check_interval_length(self.interval_length_ns)?;
        if self.threads == 0 || self.threads > 1024 {
            return Err(input_error("--threads: must be between 1 and 1024"));
        }
        crate::probe::check_cpus(&self.cpus)?;
        if let Some(lengths) = &self.idle_sweep_ns {
            if lengths.is_empty()
                || lengths
                    .iter()
                    .any(|&l| !(1_000..=10_000_000_000).contains(&l))
            {
                return Err(input_error(
                    "--idle-lengths: each idle length must lie between 1us and 10s",
                ));
            }
            let phase = self.runtime_ns / lengths.len() as u64;
            if let Some(&longest) = lengths.iter().max()
                && phase < longest
            {
                return Err(input_error(format!(
                    "--runtime {} gives each of the {} idle lengths {}, less than the longest \
                         ({}); raise --runtime",
                    format_duration_compact(self.runtime_ns),
                    lengths.len(),
                    format_duration_compact(phase),
                    format_duration_compact(longest)
                )));
            }
        }
        Ok(())
    }

    fn series(&self) -> Vec<SeriesSpec> {
        let spec = |tag: String| SeriesSpec {
            blamed: Blamed::Yes,
            tag,
            measured_from: MeasuredFrom::IntendedStart,
        };
        match &self.idle_sweep_ns {
            None => vec![spec("wakeup".into())],
            Some(lengths) => lengths
                .iter()
                .map(|&l| spec(format!("idle={}", format_duration_compact(l))))
                .collect(),
        }
    }
}

/// The longest single sleep: a stop request is noticed within this long,
/// whatever the interval (the last slice still aims at the exact deadline).
pub const SLICE_NS: u64 = 100_000_000;

/// Sleeps until `deadline`, in slices of at most [`SLICE_NS`] when it is far
/// from `last_now`; returns `false` when `stop` rose first.
#[inline]
fn sleep_sliced<C: Clock>(clock: &C, deadline: u64, mut last_now: u64, stop: &StopFlag) -> bool {
    while deadline > last_now.saturating_add(SLICE_NS) {
        clock.sleep_until(last_now + SLICE_NS);
        if stop.is_raised() {
            return false;
        }
        last_now = clock.now();
    }
    while !clock.sleep_until(deadline) {
        if stop.is_raised() {
            return false;
        }
    }
    true
}

/// Wakes on `schedule` until `end_ns`, recording lateness in `WAKEUP`.
/// Returns the time it stopped.
pub fn periodic<C: Clock, S: Sink>(
    clock: &C,
    schedule: &mut Schedule,
    end_ns: u64,
    sink: &mut S,
    stop: &StopFlag,
) -> u64 {
    let mut now = clock.now();
    loop {
        let intended = schedule.next_intended();
        if intended >= end_ns {
            return clock.now();
        }
        sink.begin(intended);
        if !sleep_sliced(clock, intended, now, stop) {
            return clock.now();
        }
        now = clock.now();
        sink.record(now, WAKEUP, now.saturating_sub(intended));
        if stop.is_raised() {
            return now;
        }
    }
}

/// For each idle length in turn (series i for length i), sleeps that long
/// after each wake-up for `phase_ns`, recording lateness.
pub fn idle_sweep<C: Clock, S: Sink>(
    clock: &C,
    lengths_ns: &[u64],
    phase_ns: u64,
    sink: &mut S,
    stop: &StopFlag,
) -> u64 {
    for (series, &idle) in lengths_ns.iter().enumerate() {
        let phase_end = clock.now() + phase_ns;
        loop {
            let start = clock.now();
            let intended = start + idle;
            if intended > phase_end {
                break;
            }
            sink.begin(intended);
            if !sleep_sliced(clock, intended, start, stop) {
                return clock.now();
            }
            let now = clock.now();
            sink.record(now, series, now.saturating_sub(intended));
            if stop.is_raised() {
                return now;
            }
        }
    }
    clock.now()
}

/// Runs the timer probe and writes its run file.
pub fn run(config: &TimerConfig, destination: &Destination, stop: &StopFlag) -> Result<Finished> {
    config.validate()?;
    let mut warnings = Vec::new();
    let locked = config.lock_memory && {
        match sys::lock_memory() {
            Ok(()) => true,
            Err(why) => {
                warnings.push(Warning {
                    message: format!("memory not locked: {why}"),
                    advice: "run as root or raise RLIMIT_MEMLOCK (ulimit -l unlimited) so page \
                             faults cannot add latency"
                        .into(),
                });
                false
            }
        }
    };
    let plan = Plan {
        probe: "timer",
        load: match config.idle_sweep_ns {
            None => LoadMode::OpenLoop,
            Some(_) => LoadMode::ClosedLoop,
        },
        parameters: serde_json::to_value(config)?,
        series: config.series(),
        threads: config.threads,
        interval_ns: config.interval_length_ns,
        warnings,
        offered: None,
    };
    // Held until this function returns, i.e. for the whole run.
    let _pm_qos = match config.cpu_dma_latency_us {
        None => None,
        Some(limit) => Some(sys::hold_cpu_dma_latency(limit).map_err(|e| {
            input_error(format!(
                "--cpu-dma-latency: cannot hold /dev/cpu_dma_latency ({e}); this needs root — or drop the flag"
            ))
        })?),
    };
    let prepare = |thread: usize| -> Result<()> {
        sys::set_timer_slack_ns(config.timer_slack_ns)
            .map_err(|e| anyhow::anyhow!("cannot set the timer slack ({e})"))?;
        if !config.cpus.is_empty() {
            let cpu = config.cpus[thread % config.cpus.len()];
            sys::pin_current_thread(cpu).map_err(|e| {
                input_error(format!("--cpus: cannot pin a thread to CPU {cpu} ({e})"))
            })?;
        }
        if let Some(priority) = config.priority {
            sys::set_fifo_priority(priority).map_err(|e| {
                input_error(format!(
                    "--priority {priority}: cannot switch to SCHED_FIFO ({e}); this needs root, \
                     CAP_SYS_NICE or an RLIMIT_RTPRIO of at least {priority} — or drop --priority \
                     to measure at normal priority"
                ))
            })?;
        }
        Ok(())
    };
    let body =
        |thread: usize, start: u64, recorder: &mut crate::record::Recorder, stop: &StopFlag| {
            let clock = MonotonicClock;
            let end = match &config.idle_sweep_ns {
                None => {
                    let mut schedule = Schedule::new(
                        start,
                        config.interval_ns as f64,
                        config.arrivals,
                        config.seed.wrapping_add(thread as u64),
                    );
                    periodic(
                        &clock,
                        &mut schedule,
                        start + config.runtime_ns,
                        recorder,
                        stop,
                    )
                }
                Some(lengths) => {
                    let phase = config.runtime_ns / lengths.len() as u64;
                    idle_sweep(&clock, lengths, phase, recorder, stop)
                }
            };
            Ok(end)
        };
    let result = run::run(plan, destination, stop, prepare, body);
    if locked {
        sys::unlock_memory();
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::FakeClock;

    #[test]
    fn a_stall_shows_as_its_full_backlog() {
        // 1 ms period, 10 µs wake-up cost, a 50 ms stall at t = 100 ms.
        let clock = FakeClock::new(0, 10_000);
        clock.stall_at(100_000_000, 50_000_000);
        let mut schedule = Schedule::new(0, 1_000_000.0, Arrivals::Uniform, 1);
        let mut values = Vec::new();
        periodic(
            &clock,
            &mut schedule,
            300_000_000,
            &mut values,
            &StopFlag::new(),
        );

        assert_eq!(values.len(), 299, "every period is recorded, none skipped");
        let late: Vec<u64> = values
            .iter()
            .map(|&(_, _, v)| v)
            .filter(|&v| v > 10_000)
            .collect();
        assert!(
            (49..=51).contains(&late.len()),
            "backlog of {} samples",
            late.len()
        );
        assert!(
            late[0] >= 50_000_000,
            "the first sample carries the whole stall: {}",
            late[0]
        );
        assert!(
            late.windows(2).all(|w| w[1] < w[0]),
            "backlog latencies decrease: {late:?}"
        );
        let step = late[0] - late[1];
        assert_eq!(
            step, 1_000_000,
            "each queued period is one period less late"
        );
        // Outside the stall, every wake-up costs exactly the fake 10 µs.
        assert_eq!(
            values.iter().filter(|&&(_, _, v)| v == 10_000).count(),
            299 - late.len()
        );
    }

    #[test]
    fn cyclictest_style_skipping_would_lose_the_backlog() {
        // The same stall seen by a loop that re-arms from "now": one sample.
        let clock = FakeClock::new(0, 10_000);
        clock.stall_at(100_000_000, 50_000_000);
        let mut next = 1_000_000;
        let mut late = 0;
        while next < 300_000_000 {
            clock.sleep_until(next);
            let now = clock.now();
            if now - next > 10_000 {
                late += 1;
            }
            while next <= now {
                next += 1_000_000;
            }
        }
        assert_eq!(
            late, 1,
            "skipping overrun periods hides the stall in one sample"
        );
    }

    #[test]
    fn idle_sweep_fills_one_series_per_length() {
        let clock = FakeClock::new(0, 5_000);
        let mut values = Vec::new();
        let lengths = [10_000, 100_000, 1_000_000];
        idle_sweep(&clock, &lengths, 10_000_000, &mut values, &StopFlag::new());
        for (series, length) in lengths.iter().enumerate() {
            let n = values.iter().filter(|v| v.1 == series).count();
            let expected = 10_000_000 / (length + 5_000);
            assert!(
                n as u64 >= expected - 1 && n as u64 <= expected + 1,
                "{series}: {n}"
            );
        }
        assert!(values.iter().all(|v| v.2 == 5_000));
    }

    #[test]
    fn long_sleeps_are_sliced_so_a_stop_is_seen() {
        let clock = FakeClock::new(0, 0);
        let stop = StopFlag::new();
        // A 20 s period: the first slice ends at 100 ms; raise stop "then".
        let mut schedule = Schedule::new(0, 20e9, Arrivals::Uniform, 1);
        stop.raise();
        let mut values = Vec::new();
        let stopped = periodic(&clock, &mut schedule, u64::MAX, &mut values, &stop);
        assert!(values.is_empty(), "no wake-up recorded");
        assert_eq!(stopped, SLICE_NS, "stopped after one slice, not 20 s");
    }

    #[test]
    fn stop_ends_the_loop_at_once() {
        let clock = FakeClock::new(0, 1_000);
        let stop = StopFlag::new();
        stop.raise();
        let mut schedule = Schedule::new(0, 1_000_000.0, Arrivals::Uniform, 1);
        let mut values = Vec::new();
        periodic(&clock, &mut schedule, u64::MAX, &mut values, &stop);
        assert_eq!(values.len(), 1);
    }
}
