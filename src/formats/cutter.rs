//! Cutting timestamped values (fio latency logs, sockperf full logs) into
//! interval histograms, with empty intervals for gaps.

use crate::model::{IntervalRecord, MeasuredFrom, Series};

/// The most intervals one series may span (11.5 days of 1 s intervals).
pub const MAX_INTERVALS: u64 = 1_000_000;

/// Cuts a time-ordered stream of (time, value) into interval histograms.
/// Values of the open
/// interval are kept raw and bucketed when it closes (sort, then one
/// bucket boundary per distinct bucket): cheaper per line than a histogram
/// record, and exact statistics come for free.
pub struct Cutter {
    series: Series,
    open: Option<u64>,
    values: Vec<u64>,
    interval_ns: u64,
    /// The latest time seen, so the last interval ends where the log does.
    last_ns: u64,
    /// The radix sort's second buffer, kept between intervals.
    scratch: Vec<u64>,
    /// Counts per bucket of the interval being closed, kept between intervals.
    counts: Vec<u32>,
    /// Where the open interval ends: earlier values join it without a
    /// division.
    open_end_ns: u64,
}

impl Cutter {
    /// A cutter for the series `tag`, intervals of `interval_ns`.
    pub fn new(tag: String, interval_ns: u64) -> Self {
        Cutter {
            series: Series::new(tag, MeasuredFrom::Unknown),
            open: None,
            values: Vec::with_capacity(4096),
            interval_ns,
            last_ns: 0,
            scratch: Vec::new(),
            counts: Vec::new(),
            open_end_ns: 0,
        }
    }

    /// Adds `value` completed at `time_ns` (from the log's start). Fails
    /// when the time would need more than [`MAX_INTERVALS`] intervals (a
    /// corrupt time column would otherwise fill memory with empty ones).
    #[inline]
    pub fn record(
        &mut self,
        time_ns: u64,
        value: u64,
        shape: &hdrhistogram::Histogram<u64>,
    ) -> Result<(), String> {
        self.last_ns = self.last_ns.max(time_ns);
        // Logs are time-ordered; a late line joins the open interval.
        if time_ns < self.open_end_ns {
            self.values.push(value);
            return Ok(());
        }
        let index = time_ns / self.interval_ns;
        if index >= MAX_INTERVALS {
            return Err(format!(
                "the time {} s lies {index} intervals after the start; more than {MAX_INTERVALS} \
                 intervals is not a log this tool wrote — check the time column or raise --log-interval",
                time_ns / 1_000_000_000
            ));
        }
        match self.open {
            Some(open) if index <= open => self.values.push(value),
            _ => {
                self.close(shape);
                let first = self.series.intervals.len() as u64;
                for gap in first..index {
                    self.series.intervals.push(IntervalRecord::empty(
                        gap * self.interval_ns,
                        self.interval_ns,
                    ));
                }
                self.values.push(value);
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
    pub fn append(
        &mut self,
        mut later: Cutter,
        shape: &hdrhistogram::Histogram<u64>,
    ) -> Result<(), String> {
        self.close(shape);
        later.close(shape);
        self.last_ns = self.last_ns.max(later.last_ns);
        let Some(last) = self.series.intervals.len().checked_sub(1) else {
            self.series.intervals = later.series.intervals;
            return Ok(());
        };
        // Intervals sit at their index: position i starts at i × length.
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
        if let Some(hist) = joined {
            let open = &self.series.intervals[last];
            self.series.intervals[last] =
                IntervalRecord::from_histogram(open.start_ns, open.length_ns, &hist);
        }
        self.series.intervals.extend(rest);
        Ok(())
    }

    /// Closes the last interval and returns the series.
    pub fn finish(mut self, shape: &hdrhistogram::Histogram<u64>) -> Series {
        self.close(shape);
        // The log ended inside its last interval: that interval is partial
        // (at least 1 ms), or its rate would look like a collapse.
        if let Some(last) = self.series.intervals.last_mut() {
            let covered = self.last_ns.saturating_sub(last.start_ns).max(1_000_000);
            last.length_ns = last.length_ns.min(covered);
        }
        self.series.intervals.shrink_to_fit();
        self.series
    }

    fn close(&mut self, shape: &hdrhistogram::Histogram<u64>) {
        let Some(index) = self.open.take() else {
            return;
        };
        self.open_end_ns = 0;
        let highest = crate::record::histogram::HIGHEST_NS;
        let (mut min, mut max, mut sum) = (u64::MAX, 0u64, 0u128);
        for &v in &self.values {
            min = min.min(v);
            max = max.max(v);
            sum += u128::from(v);
        }
        let clamped = self.values.iter().filter(|&&v| v > highest).count() as u64;
        let (low, high) = (
            crate::record::histogram::bucket_index(min.min(highest)),
            crate::record::histogram::bucket_index(max.min(highest)),
        );
        let entries = if high - low < 8 * self.values.len() + 4096 {
            // Count per bucket over the interval's span of buckets: one
            // pass, no sort.
            self.counts.clear();
            self.counts.resize(high - low + 1, 0);
            for &v in &self.values {
                self.counts[crate::record::histogram::bucket_index(v.min(highest)) - low] += 1;
            }
            let mut entries = Vec::new();
            for (offset, &count) in self.counts.iter().enumerate() {
                if count > 0 {
                    entries.push((
                        crate::record::histogram::bucket_top(low + offset),
                        u64::from(count),
                    ));
                }
            }
            entries
        } else {
            // A few values spread over many decades: sorting is cheaper.
            radix_sort(&mut self.values, &mut self.scratch);
            let mut entries: Vec<(u64, u64)> = Vec::new();
            for &v in &self.values {
                let top = crate::record::histogram::bucket_top(
                    crate::record::histogram::bucket_index(v.min(highest)),
                );
                match entries.last_mut() {
                    Some(last) if last.0 == top => last.1 += 1,
                    _ => entries.push((top, 1)),
                }
            }
            entries
        };
        debug_assert!(
            entries
                .iter()
                .all(|&(top, _)| top == shape.highest_equivalent(top))
        );
        self.series.intervals.push(IntervalRecord {
            start_ns: index * self.interval_ns,
            length_ns: self.interval_ns,
            count: self.values.len() as u64,
            min,
            max,
            sum,
            clamped,
            histogram: crate::model::series::HistogramData::Sparse(
                crate::model::series::pack_entries(entries),
            ),
        });
        self.values.clear();
    }
}

/// Sorts by the bytes that differ, least significant first (LSD radix
/// sort, 8 bits a pass): latencies in one interval share their high bytes,
/// so a pass per significant byte — about three for microseconds — costs
/// less than comparison sorting a thousand values.
fn radix_sort(values: &mut Vec<u64>, scratch: &mut Vec<u64>) {
    if values.len() < 128 {
        values.sort_unstable();
        return;
    }
    let all = values.iter().fold(0u64, |acc, &v| acc | v);
    let bytes = (64 - all.leading_zeros()).div_ceil(8) as usize;
    scratch.clear();
    scratch.resize(values.len(), 0);
    for byte in 0..bytes {
        let shift = 8 * byte;
        let mut counts = [0usize; 256];
        for &v in values.iter() {
            counts[((v >> shift) & 0xFF) as usize] += 1;
        }
        if counts.contains(&values.len()) {
            continue; // every value has the same byte here
        }
        let mut next = 0;
        for count in counts.iter_mut() {
            let here = *count;
            *count = next;
            next += here;
        }
        for &v in values.iter() {
            let slot = &mut counts[((v >> shift) & 0xFF) as usize];
            scratch[*slot] = v;
            *slot += 1;
        }
        std::mem::swap(values, scratch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counting_and_sorting_close_intervals_alike() {
        let shape = crate::record::histogram::empty_hdr();
        let mut rng = crate::record::schedule::SplitMix64::new(9);
        // Dense values (counted) and a few spread over decades (sorted).
        for (n, spread) in [(5000, 20), (3, 60), (50, 62), (2000, 40)] {
            let values: Vec<u64> = (0..n).map(|_| rng.next_u64() >> (64 - spread)).collect();
            let mut cutter = Cutter::new("x".into(), 1_000_000_000);
            for &v in &values {
                cutter.record(0, v, &shape).unwrap();
            }
            let series = cutter.finish(&shape);
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
    fn radix_sort_sorts() {
        let mut rng = crate::record::schedule::SplitMix64::new(11);
        let mut scratch = Vec::new();
        for (n, bits) in [
            (0, 8),
            (5, 64),
            (127, 20),
            (128, 17),
            (1000, 17),
            (5000, 64),
            (3000, 33),
        ] {
            let mut values: Vec<u64> = (0..n)
                .map(|_| rng.next_u64() >> (64 - bits) | 0x3000)
                .collect();
            let mut expected = values.clone();
            expected.sort_unstable();
            radix_sort(&mut values, &mut scratch);
            assert_eq!(values, expected, "{n} values of {bits} bits");
        }
    }

    #[test]
    fn gaps_are_cheap_and_absurd_times_refused() {
        let shape = crate::record::histogram::empty_hdr();
        let mut cutter = Cutter::new("read".into(), 1_000_000_000);
        cutter.record(0, 10, &shape).unwrap();
        // 200,000 empty intervals: no histogram is allocated for them.
        cutter.record(200_000 * 1_000_000_000, 20, &shape).unwrap();
        let err = cutter.record(u64::MAX / 2, 30, &shape).unwrap_err();
        assert!(err.contains("--log-interval"), "{err}");
        let series = cutter.finish(&shape);
        assert_eq!(series.intervals.len(), 200_001);
        assert_eq!(series.count(), 2);
    }
}
