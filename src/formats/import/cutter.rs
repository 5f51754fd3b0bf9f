//! Cutting timestamped values (fio latency logs, sockperf full logs) into
//! interval histograms, with empty intervals for gaps.

use crate::model::digest::Digest;
use crate::model::histogram_data::HistogramData;
use crate::model::{IntervalRecord, MeasuredFrom, Series};
use crate::record::buckets::BucketCounts;
use crate::record::histogram::ExactStats;

/// The most intervals one series may span (11.5 days of 1 s intervals).
pub const MAX_INTERVALS: u64 = 1_000_000;

/// Cuts a time-ordered stream of (time, value) into interval histograms.
/// The open interval is kept as counts by bucket index and exact
/// statistics: a value costs an index computation and an add, and closing
/// walks only the buckets touched — to pack the interval, and to take what
/// analysis needs of it into the series' [`Digest`].
pub struct Cutter {
    series: Series,
    open: Option<u64>,
    counts: BucketCounts,
    stats: ExactStats,
    interval_ns: u64,
    /// The latest time seen, so the last interval ends where the log does.
    last_ns: u64,
    /// Where the open interval ends: earlier values join it without a
    /// division.
    open_end_ns: u64,
    /// Room to pack an interval in before it is copied to its exact size.
    packing: Vec<u8>,
    digest: Digest,
}

impl Cutter {
    /// A cutter for the series `tag`, intervals of `interval_ns`.
    pub fn new(tag: String, interval_ns: u64) -> Self {
        Cutter {
            series: Series::new(tag, MeasuredFrom::Unknown),
            open: None,
            counts: BucketCounts::new(),
            stats: ExactStats::RECORDING,
            interval_ns,
            last_ns: 0,
            open_end_ns: 0,
            packing: Vec::new(),
            digest: Digest::new(),
        }
    }

    /// Counts `value` into the open interval.
    #[inline(always)]
    fn count(&mut self, value: u64) {
        self.stats.record(value);
        self.counts.record(value);
    }

    /// Adds `value` completed at `time_ns` (from the log's start). Fails
    /// when the time would need more than [`MAX_INTERVALS`] intervals (a
    /// corrupt time column would otherwise fill memory with empty ones).
    #[inline(always)]
    pub fn record(&mut self, time_ns: u64, value: u64) -> Result<(), String> {
        self.last_ns = self.last_ns.max(time_ns);
        // Logs are time-ordered; a late line joins the open interval.
        if time_ns < self.open_end_ns {
            self.count(value);
            return Ok(());
        }
        self.record_in_another(time_ns, value)
    }

    /// [`Cutter::record`] of a value past the open interval's end.
    #[inline(never)]
    fn record_in_another(&mut self, time_ns: u64, value: u64) -> Result<(), String> {
        let index = time_ns / self.interval_ns;
        if index >= MAX_INTERVALS {
            return Err(format!(
                "the time {} s lies {index} intervals after the start; more than {MAX_INTERVALS} \
                 intervals is not a log this tool wrote — check the time column or raise --log-interval",
                time_ns / 1_000_000_000
            ));
        }
        match self.open {
            Some(open) if index <= open => self.count(value),
            _ => {
                self.close();
                let first = self.series.intervals.len() as u64;
                for gap in first..index {
                    self.series.intervals.push(IntervalRecord::empty(
                        gap * self.interval_ns,
                        self.interval_ns,
                    ));
                    self.digest.push_empty();
                }
                self.count(value);
                self.open = Some(index);
                self.open_end_ns = (index + 1).saturating_mul(self.interval_ns);
            }
        }
        Ok(())
    }

    /// Appends what `later` cut from the lines that follow this cutter's,
    /// with exactly the result of one pass over both: `later`'s values in
    /// intervals up to this cutter's last one arrived late, so they join
    /// that last (then open) interval, as [`Cutter::record`] would have
    /// done. Fails only on a histogram this module did not write.
    pub fn append(&mut self, mut later: Cutter) -> Result<(), String> {
        self.close();
        later.close();
        self.last_ns = self.last_ns.max(later.last_ns);
        let Some(last) = self.series.intervals.len().checked_sub(1) else {
            self.series.intervals = later.series.intervals;
            self.digest = later.digest;
            return Ok(());
        };
        // Intervals sit at their index: position i starts at i × length.
        let later_len = later.series.intervals.len();
        let mut rest = later.series.intervals.into_iter();
        let mut joined: Option<crate::record::LatencyHistogram> = None;
        for late in rest.by_ref().take(last + 1) {
            if late.count > 0 {
                let hist = match &mut joined {
                    Some(hist) => hist,
                    None => joined.insert(self.series.intervals[last].decode()?),
                };
                hist.add_sparse(&late.entries()?, &late.stats());
            }
        }
        let joined_count = self.series.intervals.len().min(later_len);
        match joined {
            Some(hist) => {
                let open = &self.series.intervals[last];
                let record = IntervalRecord::from_histogram(open.start_ns, open.length_ns, &hist);
                let entries = record.entries()?;
                self.digest.append(
                    later.digest,
                    joined_count,
                    Some((&entries, &record.stats())),
                );
                self.series.intervals[last] = record;
            }
            None => self.digest.append(later.digest, joined_count, None),
        }
        self.series.intervals.extend(rest);
        Ok(())
    }

    /// Closes the last interval and returns the series.
    pub fn finish(mut self) -> Series {
        self.close();
        // The log ended inside its last interval: that interval is partial
        // (at least 1 ms), or its rate would look like a collapse.
        if let Some(last) = self.series.intervals.last_mut() {
            let covered = self.last_ns.saturating_sub(last.start_ns).max(1_000_000);
            last.length_ns = last.length_ns.min(covered);
        }
        self.series.intervals.shrink_to_fit();
        self.series.set_digest(self.digest);
        self.series
    }

    fn close(&mut self) {
        let Some(index) = self.open.take() else {
            return;
        };
        self.open_end_ns = 0;
        let stats = std::mem::replace(&mut self.stats, ExactStats::RECORDING);
        self.series.intervals.push(IntervalRecord {
            start_ns: index * self.interval_ns,
            length_ns: self.interval_ns,
            count: stats.count,
            min: stats.min,
            max: stats.max,
            sum: stats.sum,
            clamped: stats.clamped,
            histogram: HistogramData::Sparse(self.digest.push(
                &mut self.counts,
                &stats,
                &mut self.packing,
            )),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closed_intervals_match_a_recorded_histogram() {
        let mut rng = crate::record::schedule::SplitMix64::new(9);
        // Dense values, and a few spread over decades.
        for (n, spread) in [(5000, 20), (3, 60), (50, 62), (2000, 40)] {
            let values: Vec<u64> = (0..n).map(|_| rng.next_u64() >> (64 - spread)).collect();
            let mut cutter = Cutter::new("x".into(), 1_000_000_000);
            for &v in &values {
                cutter.record(0, v).unwrap();
            }
            let series = cutter.finish();
            let record = &series.intervals[0];
            let mut hist = crate::record::LatencyHistogram::new();
            values.iter().for_each(|&v| hist.record(v));
            let expected = IntervalRecord::from_histogram(0, 1_000_000_000, &hist);
            assert_eq!(
                record.entries().unwrap(),
                expected.entries().unwrap(),
                "{n} × {spread} bits"
            );
            assert_eq!(record.stats(), expected.stats(), "{n} × {spread} bits");
        }
    }

    #[test]
    fn appending_a_later_cut_equals_one_pass_wherever_the_cut() {
        // Late values, a gap of several intervals, a first value late in
        // the log.
        let seconds = |s: f64| (s * 1e9) as u64;
        let values: Vec<(u64, u64)> = [
            (2.1, 5),
            (2.5, 70),
            (3.2, 9),
            (2.9, 11),
            (3.0, 40),
            (3.9, 8),
            (7.4, 300),
            (7.1, 2),
            (6.9, 17),
            (8.0, 6),
            (8.2, 1000),
        ]
        .iter()
        .map(|&(t, v)| (seconds(t), v))
        .collect();
        let cut = |part: &[(u64, u64)]| {
            let mut cutter = Cutter::new("x".into(), 1_000_000_000);
            part.iter().for_each(|&(t, v)| cutter.record(t, v).unwrap());
            cutter
        };
        let one = cut(&values).finish();
        assert_eq!(one.intervals.len(), 9);
        // What analysis decodes from the intervals, without a digest.
        let mut undigested = Series::new("x".into(), MeasuredFrom::Unknown);
        undigested.intervals = one.intervals.clone();
        let (total, points) = crate::analyze::merge_with_points(&undigested).unwrap();
        let expected: Vec<[u64; 2]> = points.iter().map(|p| [p.p50, p.p99]).collect();
        for at in 0..=values.len() {
            let mut joined = cut(&values[..at]);
            joined.append(cut(&values[at..])).unwrap();
            let joined = joined.finish();
            assert_eq!(joined, one, "cut at {at}");
            let digest = joined.digest().expect("a digest that matches");
            assert_eq!(*digest.stats(), total.stats(), "cut at {at}");
            assert_eq!(digest.points(), expected, "cut at {at}");
        }
    }

    #[test]
    fn gaps_are_cheap_and_absurd_times_refused() {
        let mut cutter = Cutter::new("read".into(), 1_000_000_000);
        cutter.record(0, 10).unwrap();
        // 200,000 empty intervals: no histogram is allocated for them.
        cutter.record(200_000 * 1_000_000_000, 20).unwrap();
        let err = cutter.record(u64::MAX / 2, 30).unwrap_err();
        assert!(err.contains("--log-interval"), "{err}");
        let series = cutter.finish();
        assert_eq!(series.intervals.len(), 200_001);
        assert_eq!(series.count(), 2);
    }
}
