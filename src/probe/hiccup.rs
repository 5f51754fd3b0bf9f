//! Hiccups: how late a thread that only sleeps wakes up (jHiccup's idea).
//!
//! A control thread sleeps 1 ms at a time and records how much later than
//! asked it woke. It does no work of its own, so whatever delays it — the
//! scheduler, an interrupt storm, a stolen vCPU, page reclaim, a frozen VM —
//! delays every thread on the host. `cauda hiccup` runs it alone, one pinned
//! thread per chosen CPU. Beside other probes the same idea, at one wake-up
//! per interval, is the `self` heartbeat (`probe::observers::watch`), whose
//! [`IntervalSink`] lives here.
//!
//! Unlike the `timer` probe it sleeps *relative* to its last wake-up, as
//! jHiccup does: a long stall is one long sample, not a backlog.

use anyhow::Result;
use serde::Serialize;

use crate::error::input_error;
use crate::model::{CONTROL_TAG, IntervalRecord, LoadMode, MeasuredFrom, Series};
use crate::probe::collector::SeriesSpec;
use crate::probe::session::{self, Destination, Finished, Observe, Plan};
use crate::record::{Clock, LatencyHistogram, Sink, StopFlag};
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
        clock.sleep_until(deadline);
        now = clock.now();
        if done() {
            break;
        }
        sink.record(now, series, now.saturating_sub(deadline));
    }
    now
}

/// A sink that cuts what it records into intervals by itself, off the
/// collector: the `self` thread's, whose intervals are aligned with the
/// run's afterwards.
#[derive(Debug)]
pub struct IntervalSink {
    run_start_ns: u64,
    interval_ns: u64,
    index: u64,
    current: LatencyHistogram,
    /// Finished intervals as (index, record).
    pub done: Vec<(u64, IntervalRecord)>,
}

impl IntervalSink {
    /// A sink for a run starting at `run_start_ns`.
    pub fn new(run_start_ns: u64, interval_ns: u64) -> Self {
        IntervalSink {
            run_start_ns,
            interval_ns,
            index: 0,
            current: LatencyHistogram::new(),
            done: Vec::new(),
        }
    }

    fn close(&mut self) {
        if self.current.stats().count > 0 {
            let start = self.index * self.interval_ns;
            let record = IntervalRecord::from_histogram(start, self.interval_ns, &self.current);
            self.done.push((self.index, record));
            self.current.reset();
        }
    }

    /// The series aligned with `grid` (the run's intervals: start and
    /// length are copied; anything recorded after the last interval is
    /// folded into it).
    pub fn into_series(mut self, grid: &[IntervalRecord]) -> Series {
        self.close();
        let mut series = Series::new(CONTROL_TAG.into(), MeasuredFrom::IntendedStart);
        let mut merged: Vec<LatencyHistogram> = Vec::with_capacity(grid.len());
        for (index, record) in self.done {
            let Some(last) = grid.len().checked_sub(1) else {
                break;
            };
            let at = (index as usize).min(last);
            while merged.len() <= at {
                merged.push(LatencyHistogram::new());
            }
            if let Ok(hist) = record.decode() {
                merged[at].add(&hist);
            }
        }
        for (i, slot) in grid.iter().enumerate() {
            series.intervals.push(match merged.get(i) {
                Some(h) if h.stats().count > 0 => {
                    IntervalRecord::from_histogram(slot.start_ns, slot.length_ns, h)
                }
                _ => IntervalRecord::empty(slot.start_ns, slot.length_ns),
            });
        }
        series
    }
}

impl Sink for IntervalSink {
    fn record(&mut self, now_ns: u64, _series: usize, value: u64) {
        let index = now_ns.saturating_sub(self.run_start_ns) / self.interval_ns;
        if index != self.index {
            self.close();
            self.index = index;
        }
        self.current.record(value);
    }
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
                tag: tag.clone(),
                measured_from: MeasuredFrom::IntendedStart,
            })
            .collect(),
        threads: tags.len(),
        interval_ns: config.interval_length_ns,
        warnings: Vec::new(),
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
        self_hiccups: false,
        ..Observe::default()
    };
    session::run_completing(plan, &observe, destination, stop, prepare, body, |_| Ok(()))
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

    #[test]
    fn the_self_series_takes_the_runs_grid() {
        let mut sink = IntervalSink::new(1_000, 100);
        sink.record(1_010, 0, 5);
        sink.record(1_250, 0, 7);
        sink.record(1_420, 0, 9); // past the run's last interval: folded into it
        let grid: Vec<IntervalRecord> = (0..3)
            .map(|i| IntervalRecord::empty(i * 100, if i == 2 { 60 } else { 100 }))
            .collect();
        let series = sink.into_series(&grid);
        assert_eq!(series.tag, CONTROL_TAG);
        let counts: Vec<u64> = series.intervals.iter().map(|i| i.count).collect();
        assert_eq!(counts, vec![1, 0, 2]);
        assert_eq!(series.intervals[2].length_ns, 60);
        assert_eq!(series.intervals[2].max, 9);
    }
}
