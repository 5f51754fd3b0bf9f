//! The per-thread recorder: the only part of cauda a probe touches in its
//! measured loop.
//!
//! Each probe thread owns one [`Recorder`] holding one histogram per series
//! for the current interval. Recording is a bucket increment plus exact
//! min/max/sum updates — no allocation, lock, syscall or I/O. When a value
//! completes past the interval's end, the recorder hands the filled
//! histograms to the collector over a channel and takes back a recycled,
//! already-reset set; that happens once per interval, between operations,
//! never inside a timed section.

use std::sync::mpsc::{Receiver, Sender};

use super::histogram::LatencyHistogram;

/// Index of a series within a run, as declared to the collector.
pub type SeriesId = usize;

/// One thread's histograms for one interval, sent to the collector.
#[derive(Debug)]
pub struct IntervalReport {
    /// Which recorder sent it.
    pub thread: usize,
    /// The interval the histograms belong to.
    pub index: u64,
    /// One histogram per series, in declaration order.
    pub hists: Vec<LatencyHistogram>,
    /// The first interval the thread may still report; every interval
    /// before it is complete as far as this thread is concerned.
    pub next_index: u64,
    /// Set on the thread's last report: when it stopped, in monotonic ns.
    pub end_ns: Option<u64>,
    /// Operations that failed in the interval (counted by kind in the run
    /// file; this total feeds the live view).
    pub faults: u64,
    /// Set on the last report: per series, when the last value counted in
    /// an earlier interval than its completion completed (0: none; empty
    /// when no value was).
    pub completed_late_ns: Vec<u64>,
}

/// What a run adds to each operation a probe records (`--kernel blame`):
/// told when an operation's window opens (before its intended start where
/// the probe knows it) and of every value recorded.
pub trait OpHook: Send + std::fmt::Debug {
    /// The next operation is intended to start at `intended_ns`.
    fn begin(&mut self, intended_ns: u64);
    /// `value_ns` was recorded in `series`, completed at `now_ns` and
    /// counted in the interval holding `counted_ns` (earlier for what
    /// completes after a schedule's end: `Recorder::record_by`).
    fn end(&mut self, now_ns: u64, counted_ns: u64, series: SeriesId, value_ns: u64);
}

/// A probe thread's recorder.
#[derive(Debug)]
pub struct Recorder {
    thread: usize,
    run_start_ns: u64,
    interval_ns: u64,
    index: u64,
    interval_end_ns: u64,
    hists: Vec<LatencyHistogram>,
    faults: u64,
    to_collector: Sender<IntervalReport>,
    spares: Receiver<Vec<LatencyHistogram>>,
    hook: Option<Box<dyn OpHook>>,
    /// Per series, when the last value counted before its completion
    /// (`record_by`) completed; empty until one is.
    completed_late_ns: Vec<u64>,
}

impl Recorder {
    /// A recorder for `thread` that sends each finished interval to the
    /// collector (`crate::probe::run::collector`) and takes spare histograms back.
    pub fn new(
        thread: usize,
        run_start_ns: u64,
        interval_ns: u64,
        series: usize,
        to_collector: Sender<IntervalReport>,
        spares: Receiver<Vec<LatencyHistogram>>,
    ) -> Self {
        Recorder {
            thread,
            run_start_ns,
            interval_ns,
            index: 0,
            interval_end_ns: run_start_ns + interval_ns,
            hists: (0..series).map(|_| LatencyHistogram::new()).collect(),
            faults: 0,
            to_collector,
            spares,
            hook: None,
            completed_late_ns: Vec::new(),
        }
    }

    /// Tells `hook` of every operation this recorder records.
    pub fn set_hook(&mut self, hook: Box<dyn OpHook>) {
        self.hook = Some(hook);
    }

    /// The next operation is intended to start at `intended_ns`.
    #[inline]
    pub fn begin(&mut self, intended_ns: u64) {
        if let Some(hook) = self.hook.as_mut() {
            hook.begin(intended_ns);
        }
    }

    /// Records `value` (ns) in `series`, in the interval containing `now_ns`
    /// (the completion time of the operation measured).
    #[inline]
    pub fn record(&mut self, now_ns: u64, series: SeriesId, value: u64) {
        self.record_in(now_ns, now_ns, series, value);
    }

    /// Records `value` (ns) in `series`, completed at `now_ns` but counted
    /// in the interval containing `last_ns` if it is earlier (what
    /// completes after a schedule's end goes in its last interval); the
    /// hook is told the true completion.
    #[inline]
    pub fn record_by(&mut self, now_ns: u64, last_ns: u64, series: SeriesId, value: u64) {
        if now_ns > last_ns {
            self.completed_late(series, now_ns);
        }
        self.record_in(now_ns, now_ns.min(last_ns), series, value);
    }

    /// Records `value` in `series`, completed at `now_ns`, counted at `at`.
    #[inline]
    fn record_in(&mut self, now_ns: u64, at: u64, series: SeriesId, value: u64) {
        if at >= self.interval_end_ns {
            self.rotate(at);
        }
        self.hists[series].record(value);
        if let Some(hook) = self.hook.as_mut() {
            hook.end(now_ns, at, series, value);
        }
    }

    /// Records `n` copies of `value` in `series` at `now_ns`.
    #[inline]
    pub fn record_n(&mut self, now_ns: u64, series: SeriesId, value: u64, n: u64) {
        if now_ns >= self.interval_end_ns {
            self.rotate(now_ns);
        }
        self.hists[series].record_n(value, n);
    }

    /// Counts an operation that failed at `now_ns` (a lost message, an I/O
    /// error), in the interval containing it.
    #[inline]
    pub fn fault(&mut self, now_ns: u64) {
        if now_ns >= self.interval_end_ns {
            self.rotate(now_ns);
        }
        self.faults += 1;
    }

    /// Keeps `now_ns` as `series`' latest completion counted in an
    /// earlier interval.
    #[cold]
    fn completed_late(&mut self, series: SeriesId, now_ns: u64) {
        if self.completed_late_ns.is_empty() {
            self.completed_late_ns = vec![0; self.hists.len()];
        }
        if let Some(last) = self.completed_late_ns.get_mut(series) {
            *last = (*last).max(now_ns);
        }
    }

    /// The interval a monotonic time falls in.
    fn interval_of(&self, now_ns: u64) -> u64 {
        now_ns.saturating_sub(self.run_start_ns) / self.interval_ns
    }

    #[cold]
    fn rotate(&mut self, now_ns: u64) {
        let next_index = self.interval_of(now_ns);
        let fresh = self.spares.try_recv().unwrap_or_else(|_| {
            (0..self.hists.len())
                .map(|_| LatencyHistogram::new())
                .collect()
        });
        let full = std::mem::replace(&mut self.hists, fresh);
        // A closed channel means the run is being torn down: nothing to save.
        let _ = self.to_collector.send(IntervalReport {
            thread: self.thread,
            index: self.index,
            hists: full,
            next_index,
            end_ns: None,
            faults: std::mem::take(&mut self.faults),
            completed_late_ns: Vec::new(),
        });
        self.index = next_index;
        self.interval_end_ns = self.run_start_ns + (next_index + 1) * self.interval_ns;
    }

    /// Sends the last, partial interval; `now_ns` is when the thread stopped.
    pub fn finish(self, now_ns: u64) {
        let Recorder {
            thread,
            index,
            hists,
            faults,
            to_collector,
            completed_late_ns,
            ..
        } = self;
        let _ = to_collector.send(IntervalReport {
            thread,
            index,
            hists,
            next_index: u64::MAX,
            end_ns: Some(now_ns),
            faults,
            completed_late_ns,
        });
    }
}

/// Where a probe's measured loop sends values: the [`Recorder`] in a run,
/// a plain vector in tests that need the exact sequence.
pub trait Sink {
    /// Records `value` in `series`, completed at `now_ns`.
    fn record(&mut self, now_ns: u64, series: SeriesId, value: u64);

    /// The next operation is intended to start at `intended_ns` (called
    /// before waiting for it, where the probe waits).
    fn begin(&mut self, _intended_ns: u64) {}

    /// Counts an operation that failed at `now_ns`.
    fn fault(&mut self, _now_ns: u64) {}
}

impl Sink for Recorder {
    #[inline]
    fn record(&mut self, now_ns: u64, series: SeriesId, value: u64) {
        Recorder::record(self, now_ns, series, value);
    }

    #[inline]
    fn begin(&mut self, intended_ns: u64) {
        Recorder::begin(self, intended_ns);
    }

    #[inline]
    fn fault(&mut self, now_ns: u64) {
        Recorder::fault(self, now_ns);
    }
}

impl Sink for Vec<(u64, SeriesId, u64)> {
    fn record(&mut self, now_ns: u64, series: SeriesId, value: u64) {
        self.push((now_ns, series, value));
    }
}
