//! The collector: merges every thread's interval histograms, off the hot
//! path, into one interval series per tag.
//!
//! An interval is final once every thread has moved past it, so a thread
//! stuck in a long operation delays the merge but never loses a value.
//! Every interval from the start to the end of the run is emitted, empty
//! ones included (an empty interval is itself a finding: nothing completed).
//! Each final interval is encoded at once and, with `--hlog`, written to the
//! interval log immediately, so a killed run still leaves its data; with
//! `--metrics-listen`, the live view is published too.

use std::collections::BTreeMap;
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;

use anyhow::Context;

use super::live::LiveFeed;
use super::placement::Placement;
use super::plan::SeriesSpec;
use crate::formats::export::hlog::HlogWriter;
use crate::model::{IntervalRecord, Series};
use crate::record::LatencyHistogram;
use crate::record::recorder::{IntervalReport, Recorder};

/// What the collector hands back when every recorder has finished.
#[derive(Debug)]
pub struct Collected {
    /// One series per spec, with every interval.
    pub series: Vec<Series>,
    /// When the last thread stopped, in monotonic ns (the run's end).
    pub end_ns: u64,
    /// Per series, when the last value counted in an earlier interval
    /// than its completion completed (a broker's drain, counted in the
    /// schedule's last interval), monotonic ns; 0 where none was.
    pub completed_late_ns: Vec<u64>,
    /// A failure writing the interval log, if any (the run file is still written).
    pub hlog_error: Option<anyhow::Error>,
    /// Where the collector thread ran and what it used.
    pub observer: crate::model::Observer,
}

/// Creates one recorder per thread and starts the collector thread.
pub fn start(
    specs: Vec<SeriesSpec>,
    threads: usize,
    run_start_ns: u64,
    interval_ns: u64,
    hlog: Option<HlogWriter>,
    live: Option<LiveFeed>,
    placement: &Placement,
) -> anyhow::Result<(Vec<Recorder>, JoinHandle<Collected>)> {
    let (to_collector, reports) = mpsc::channel();
    let mut recorders = Vec::with_capacity(threads);
    let mut spares = Vec::with_capacity(threads);
    for thread in 0..threads {
        let (spare_tx, spare_rx) = mpsc::channel();
        recorders.push(Recorder::new(
            thread,
            run_start_ns,
            interval_ns,
            specs.len(),
            to_collector.clone(),
            spare_rx,
        ));
        spares.push(spare_tx);
    }
    drop(to_collector);
    let series_count = specs.len();
    let collector = Collector {
        series: specs
            .into_iter()
            .map(|spec| Series::new(spec.tag, spec.measured_from))
            .collect(),
        interval_ns,
        progress: vec![0; threads],
        pending: BTreeMap::new(),
        pending_faults: BTreeMap::new(),
        next_to_emit: 0,
        pool: Vec::new(),
        spares,
        end_ns: run_start_ns,
        completed_late_ns: vec![0; series_count],
        run_start_ns,
        hlog,
        hlog_error: None,
        live,
    };
    let placement = placement.clone();
    let handle = std::thread::Builder::new()
        .name("cauda-collector".into())
        .spawn(move || {
            placement.enter();
            // Merging and encoding wait for the probe's idle moments: a
            // probe thread waking meanwhile preempts the collector at once.
            let _ = crate::sys::set_idle_policy(true);
            collector.run(reports)
        })
        .context("cannot start the collector thread")?;
    Ok((recorders, handle))
}

struct Collector {
    series: Vec<Series>,
    interval_ns: u64,
    /// Per thread: the first interval it may still report.
    progress: Vec<u64>,
    /// Merged histograms of intervals not yet final.
    pending: BTreeMap<u64, Vec<LatencyHistogram>>,
    /// Faults counted in intervals not yet final.
    pending_faults: BTreeMap<u64, u64>,
    next_to_emit: u64,
    /// Reset histogram sets ready to hand back to recorders.
    pool: Vec<Vec<LatencyHistogram>>,
    spares: Vec<Sender<Vec<LatencyHistogram>>>,
    end_ns: u64,
    completed_late_ns: Vec<u64>,
    run_start_ns: u64,
    hlog: Option<HlogWriter>,
    hlog_error: Option<anyhow::Error>,
    /// The live view (`--metrics-listen`), fed each final interval.
    live: Option<LiveFeed>,
}

impl Collector {
    fn run(mut self, reports: Receiver<IntervalReport>) -> Collected {
        for report in reports {
            self.absorb(report);
            // `u64::MAX` means every thread has finished: the tail is
            // emitted below, with its partial last interval.
            let complete_below = self.progress.iter().copied().min().unwrap_or(u64::MAX);
            while complete_below != u64::MAX && self.next_to_emit < complete_below {
                self.emit_next(self.interval_ns);
            }
        }
        // Every recorder has finished: emit the rest, the last one partial.
        let elapsed = self.end_ns.saturating_sub(self.run_start_ns);
        let last = elapsed.div_ceil(self.interval_ns).max(1);
        let last_pending = self.pending.keys().next_back().map_or(0, |k| k + 1);
        while self.next_to_emit < last.max(last_pending) {
            let start = self.next_to_emit * self.interval_ns;
            let length = elapsed.saturating_sub(start).clamp(1, self.interval_ns);
            self.emit_next(length);
        }
        if let Some(hlog) = self.hlog.as_mut()
            && let Err(err) = hlog.flush()
        {
            self.hlog_error.get_or_insert(err);
        }
        Collected {
            series: self.series,
            end_ns: self.end_ns,
            completed_late_ns: self.completed_late_ns,
            hlog_error: self.hlog_error,
            observer: super::placement::leave("cauda-collector"),
        }
    }

    fn absorb(&mut self, report: IntervalReport) {
        let IntervalReport {
            thread,
            index,
            mut hists,
            next_index,
            end_ns,
            faults,
            completed_late_ns,
        } = report;
        self.progress[thread] = next_index;
        for (last, late) in self.completed_late_ns.iter_mut().zip(completed_late_ns) {
            *last = (*last).max(late);
        }
        if faults > 0 {
            *self.pending_faults.entry(index).or_default() += faults;
        }
        if let Some(end) = end_ns {
            self.end_ns = self.end_ns.max(end);
        }
        let give_back = match self.pending.get_mut(&index) {
            Some(merged) => {
                for (into, from) in merged.iter_mut().zip(&hists) {
                    into.add(from);
                }
                hists.iter_mut().for_each(LatencyHistogram::reset);
                Some(hists)
            }
            None => {
                self.pending.insert(index, hists);
                self.pool.pop()
            }
        };
        if end_ns.is_none() {
            let set = give_back.unwrap_or_else(|| {
                (0..self.series.len())
                    .map(|_| LatencyHistogram::new())
                    .collect()
            });
            // The recorder may have finished meanwhile; then the set is dropped.
            let _ = self.spares[thread].send(set);
        } else if let Some(set) = give_back {
            self.pool.push(set);
        }
    }

    fn emit_next(&mut self, length_ns: u64) {
        let index = self.next_to_emit;
        self.next_to_emit += 1;
        let start_ns = index * self.interval_ns;
        let merged = self.pending.remove(&index);
        for i in 0..self.series.len() {
            let record = match merged.as_ref() {
                Some(m) => IntervalRecord::from_histogram(start_ns, length_ns, &m[i]),
                None => IntervalRecord::empty(start_ns, length_ns),
            };
            let tag = &self.series[i].tag;
            if self.hlog_error.is_none()
                && let Some(hlog) = self.hlog.as_mut()
                && let Err(err) = hlog.write_interval(tag, &record)
            {
                self.hlog_error = Some(err);
            }
            if let Some(live) = self.live.as_mut() {
                // A histogram just encoded here always decodes.
                let _ = live.interval(i, &record);
            }
            self.series[i].intervals.push(record);
        }
        self.flush_hlog();
        let faults = self.pending_faults.remove(&index).unwrap_or(0);
        if let Some(live) = self.live.as_mut() {
            live.publish(faults);
        }
        if let Some(mut set) = merged {
            set.iter_mut().for_each(LatencyHistogram::reset);
            self.pool.push(set);
        }
    }

    /// Flushes the interval log unless it already failed (the first error is kept).
    fn flush_hlog(&mut self) {
        if self.hlog_error.is_none()
            && let Some(hlog) = self.hlog.as_mut()
            && let Err(err) = hlog.flush()
        {
            self.hlog_error = Some(err);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::MeasuredFrom;
    use crate::probe::run::plan::Blamed;

    fn spec(tag: &str) -> SeriesSpec {
        SeriesSpec {
            blamed: Blamed::No,
            tag: tag.into(),
            measured_from: MeasuredFrom::IntendedStart,
        }
    }

    /// Two threads' recorders of series `a` and `b`, from 1,000 ns in
    /// 100 ns intervals, and the collector's handle.
    fn two_recorders() -> (Recorder, Recorder, JoinHandle<Collected>) {
        let (recorders, handle) = start(
            vec![spec("a"), spec("b")],
            2,
            1_000,
            100,
            None,
            None,
            &Placement::default(),
        )
        .unwrap();
        let mut it = recorders.into_iter();
        (it.next().unwrap(), it.next().unwrap(), handle)
    }

    #[test]
    fn threads_merge_into_aligned_intervals() {
        let (mut r0, mut r1, handle) = two_recorders();
        r0.record(1_010, 0, 5); // interval 0
        r1.record(1_020, 0, 7); // interval 0
        r1.record(1_150, 1, 9); // interval 1
        r0.record(1_450, 0, 11); // interval 4: 2 and 3 are empty
        r0.finish(1_460);
        r1.finish(1_300);
        let collected = handle.join().unwrap();
        let a = &collected.series[0];
        let b = &collected.series[1];
        assert_eq!(a.intervals.len(), 5);
        assert_eq!(b.intervals.len(), 5);
        let counts: Vec<u64> = a.intervals.iter().map(|i| i.count).collect();
        assert_eq!(counts, vec![2, 0, 0, 0, 1]);
        assert_eq!(b.intervals[1].count, 1);
        assert_eq!(a.intervals[0].min, 5);
        assert_eq!(a.intervals[0].max, 7);
        assert_eq!(a.intervals[4].start_ns, 400);
        assert_eq!(a.intervals[4].length_ns, 60, "the last interval is partial");
        assert_eq!(a.intervals[3].length_ns, 100);
    }

    #[test]
    fn what_completes_after_the_last_interval_is_counted_there_with_its_time_kept() {
        let (mut r0, mut r1, handle) = two_recorders();
        r0.record_by(1_150, 1_199, 0, 5); // on time
        r0.record_by(1_700, 1_199, 0, 6); // late: counted in interval 1
        r1.record_by(1_650, 1_199, 0, 7);
        r1.record_by(1_900, 1_199, 1, 8); // another series
        r0.finish(1_200);
        r1.finish(1_200);
        let collected = handle.join().unwrap();
        assert_eq!(collected.series[0].intervals[1].count, 3);
        assert_eq!(collected.completed_late_ns, vec![1_700, 1_900]);
        assert_eq!(collected.end_ns, 1_200);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        /// Recording across threads and intervals, then merging, equals
        /// recording everything in one histogram.
        #[test]
        fn merged_intervals_equal_one_histogram(
            events in proptest::collection::vec((0usize..3, 0u64..5_000, 0u64..10_000_000_000), 1..400),
        ) {
            let mut events = events;
            // Each thread records in time order, as a real thread does.
            events.sort_by_key(|&(thread, at, _)| (thread, at));
            let (recorders, handle) = start(vec![spec("a")], 3, 0, 1_000, None, None, &Placement::default()).unwrap();
            let mut all = LatencyHistogram::new();
            let mut recorders: Vec<_> = recorders.into_iter().map(Some).collect();
            for &(thread, at, value) in &events {
                recorders[thread].as_mut().unwrap().record(at, 0, value);
                all.record(value);
            }
            for r in recorders.iter_mut() {
                r.take().unwrap().finish(5_000);
            }
            let collected = handle.join().unwrap();
            let series = &collected.series[0];
            proptest::prop_assert_eq!(series.intervals.len(), 5);
            let merged = series.merged().unwrap();
            proptest::prop_assert_eq!(merged.stats(), all.stats());
            proptest::prop_assert_eq!(merged.hdr(), all.hdr());
        }
    }

    #[test]
    fn a_thread_that_records_nothing_still_ends_the_run() {
        let (recorders, handle) = start(
            vec![spec("a")],
            1,
            0,
            1_000,
            None,
            None,
            &Placement::default(),
        )
        .unwrap();
        for r in recorders {
            r.finish(2_500);
        }
        let collected = handle.join().unwrap();
        let a = &collected.series[0];
        assert_eq!(a.intervals.len(), 3);
        assert_eq!(a.intervals[2].length_ns, 500);
        assert!(a.intervals.iter().all(|i| i.count == 0));
    }
}
