//! The `self` heartbeat: how late cauda's observer thread woke at each
//! interval boundary, recorded off the collector and aligned with the
//! run's intervals afterwards. It tells a stall of the host or of cauda
//! from a stall of the target (`cauda hiccup` is the same idea at 1 ms, on
//! its own).

use crate::model::{CONTROL_TAG, IntervalRecord, MeasuredFrom, Series};
use crate::record::{LatencyHistogram, Sink};

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

#[cfg(test)]
mod tests {
    use super::*;

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
