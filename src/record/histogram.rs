//! The latency histogram every probe records into: an HdrHistogram at three
//! significant digits from 1 ns to one hour, with the exact count, min, max
//! and sum kept beside it.
//!
//! HdrHistogram buckets values (≤ 0.1 % relative error at 3 digits), so the
//! extremes and the mean would be approximate if taken from it; we keep
//! them exactly. A value past the trackable range is clamped into the top
//! bucket *and counted* in `clamped`, so it is never lost nor a panic.

use hdrhistogram::Histogram;

/// Significant decimal digits kept by every histogram.
pub const SIGNIFICANT_DIGITS: u8 = 3;
/// Lowest discernible value: 1 ns.
pub const LOWEST_NS: u64 = 1;
/// Highest trackable value: one hour in nanoseconds.
pub const HIGHEST_NS: u64 = 3_600_000_000_000;
/// The most values one series is taken to hold (2^53, 285 years of one
/// value a microsecond): a count above it is a damaged input, and below it
/// every count and sum stays exact in u64, u128 and f64 arithmetic.
pub const MAX_VALUES: u64 = 1 << 53;

/// Sub-buckets per histogram bucket half (3 significant digits keep 2,048
/// sub-buckets; the upper 1,024 are new in each bucket past the first).
const HALF_SUB_BUCKETS: usize = 1024;

/// The histogram's counts index of a value (1 ns lowest discernible value,
/// 3 significant digits), computed as HdrHistogram does: equal for values
/// in one bucket, increasing with the value. Importers count by it, and
/// in-memory histograms store it (small deltas, one byte each).
#[inline(always)]
pub fn bucket_index(value: u64) -> usize {
    let bucket = 53 - (value | 2047).leading_zeros();
    ((bucket as usize + 1) * HALF_SUB_BUCKETS) + (value >> bucket) as usize - HALF_SUB_BUCKETS
}

/// The highest value of the bucket at a counts index (what the histogram
/// reports for it).
#[inline]
pub fn bucket_top(index: usize) -> u64 {
    if index < 2 * HALF_SUB_BUCKETS {
        return index as u64;
    }
    let bucket = index / HALF_SUB_BUCKETS - 1;
    let sub = (index % HALF_SUB_BUCKETS + HALF_SUB_BUCKETS) as u64;
    // `sub + 1` takes at most 12 bits; an index whose top would not fit a
    // u64 (no histogram makes one) saturates.
    if bucket > 52 {
        return u64::MAX;
    }
    ((sub + 1) << bucket) - 1
}

/// (value, count) pairs in increasing value, of any histogram shape, as
/// (counts index, count) pairs of cauda's shape: values above its range in
/// its top bucket, neighbours that share a bucket added up.
pub fn own_buckets(entries: impl IntoIterator<Item = (u64, u64)>) -> Vec<(usize, u64)> {
    let mut out: Vec<(usize, u64)> = Vec::new();
    for (value, count) in entries {
        let index = bucket_index(value.min(HIGHEST_NS));
        match out.last_mut() {
            Some((last, sum)) if *last == index => *sum = sum.saturating_add(count),
            _ => out.push((index, count)),
        }
    }
    out
}

/// The lowest and highest value of the bucket `value` falls in (counts
/// indexes cover contiguous ranges of values).
pub fn bucket_range(value: u64) -> (u64, u64) {
    let index = bucket_index(value);
    let low = match index {
        0 => 0,
        _ => bucket_top(index - 1).saturating_add(1),
    };
    (low, bucket_top(index))
}

/// Exact statistics kept beside the histogram.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ExactStats {
    /// Number of values recorded.
    pub count: u64,
    /// Smallest value recorded (0 when `count == 0`).
    pub min: u64,
    /// Largest value recorded, before any clamping (0 when `count == 0`).
    pub max: u64,
    /// Sum of all values, before any clamping.
    pub sum: u128,
    /// How many values exceeded [`HIGHEST_NS`] and were clamped to it.
    pub clamped: u64,
}

impl ExactStats {
    /// Statistics of nothing yet, to [`record`](Self::record) into: `min`
    /// at `u64::MAX` so recording needs no first-value branch.
    pub const RECORDING: ExactStats = ExactStats {
        count: 0,
        min: u64::MAX,
        max: 0,
        sum: 0,
        clamped: 0,
    };

    /// Takes one value (one past [`HIGHEST_NS`] is counted as clamped).
    #[inline(always)]
    pub fn record(&mut self, value: u64) {
        self.count += 1;
        self.sum += u128::from(value);
        self.min = self.min.min(value);
        self.max = self.max.max(value);
        self.clamped += u64::from(value > HIGHEST_NS);
    }

    /// Folds another interval's statistics into these.
    pub fn merge(&mut self, other: &ExactStats) {
        if other.count == 0 {
            return;
        }
        if self.count == 0 {
            *self = *other;
            return;
        }
        // Saturating: counts from imported files can be anything.
        self.count = self.count.saturating_add(other.count);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.sum = self.sum.saturating_add(other.sum);
        self.clamped = self.clamped.saturating_add(other.clamped);
    }

    /// The exact mean, or 0 for no values.
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }
}

/// Empty statistics to record into: `min` at `u64::MAX` so recording
/// needs no first-value branch (read them only once they hold a value).
const EMPTY: ExactStats = ExactStats::RECORDING;

/// A histogram of nanosecond values with exact count, min, max and sum.
#[derive(Clone, Debug)]
pub struct LatencyHistogram {
    hist: Histogram<u64>,
    stats: ExactStats,
}

/// Creates an empty HdrHistogram with cauda's range and precision.
pub fn empty_hdr() -> Histogram<u64> {
    // The bounds are constants the crate accepts (low ≥ 1, high ≥ 2·low,
    // digits ≤ 5); a failure here is a programming error caught by tests.
    Histogram::new_with_bounds(LOWEST_NS, HIGHEST_NS, SIGNIFICANT_DIGITS)
        .expect("constant histogram bounds are valid")
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    /// An empty histogram.
    pub fn new() -> Self {
        LatencyHistogram {
            hist: empty_hdr(),
            stats: EMPTY,
        }
    }

    /// Builds one from a decoded HdrHistogram and the exact statistics that
    /// were stored with it.
    pub fn from_parts(hist: Histogram<u64>, stats: ExactStats) -> Self {
        let stats = if stats.count == 0 { EMPTY } else { stats };
        LatencyHistogram { hist, stats }
    }

    /// Records one value. The hot path: no allocation, no branch that can
    /// fail; `min` sits at `u64::MAX` while empty so no first-value branch.
    #[inline(always)]
    pub fn record(&mut self, value: u64) {
        self.stats.record(value);
        // In range by construction, so this cannot fail.
        let _ = self.hist.record(value.min(HIGHEST_NS));
    }

    /// Records `n` occurrences of one value.
    #[inline]
    pub fn record_n(&mut self, value: u64, n: u64) {
        if n == 0 {
            return;
        }
        let stats = &mut self.stats;
        stats.count = stats.count.saturating_add(n);
        stats.sum = stats.sum.saturating_add(value as u128 * n as u128);
        stats.min = stats.min.min(value);
        stats.max = stats.max.max(value);
        if value > HIGHEST_NS {
            stats.clamped = stats.clamped.saturating_add(n);
        }
        let _ = self.hist.record_n(value.min(HIGHEST_NS), n);
    }

    /// Adds every value of `other` into `self` (exact merge).
    pub fn add(&mut self, other: &LatencyHistogram) {
        self.stats.merge(&other.stats());
        // Both sides were created with the same bounds, so the addition
        // cannot fail; auto-resize covers histograms decoded from files.
        self.hist.auto(true);
        if self.hist.add(&other.hist).is_err() {
            // Unreachable for same-bounds histograms; fall back to adding
            // bucket by bucket with clamping rather than losing counts.
            for v in other.hist.iter_recorded() {
                self.hist
                    .saturating_record_n(v.value_iterated_to(), v.count_at_value());
            }
        }
    }

    /// Adds sparse (bucket value, count) pairs whose exact statistics are
    /// `stats` (one interval's worth): an exact merge without a decode.
    pub fn add_sparse(&mut self, entries: &[(u64, u64)], stats: &ExactStats) {
        self.stats.merge(stats);
        for &(value, count) in entries {
            let _ = self.hist.record_n(value.min(HIGHEST_NS), count);
        }
    }

    /// Imported data: a tool's exact min and max beside its bucketed
    /// values. One value of the lowest occupied bucket moves to `min` and one
    /// of the highest to `max` — the tool saw a value exactly there — and the
    /// exact statistics take the tool's figures (the sum from its `mean` when
    /// given), so the histogram and its statistics agree.
    pub fn pin_extremes(&mut self, min: u64, max: u64, mean: Option<f64>) {
        let count = self.stats.count;
        if count == 0 {
            return;
        }
        // Figures that contradict each other are kept as given, for the
        // run-file checks to refuse with the reason.
        let moves = if min <= max { count.min(2) as usize } else { 0 };
        let extremes = [(self.hist.min(), min), (self.hist.max(), max)];
        for &(from, to) in &extremes[..moves] {
            let mut one = empty_hdr();
            let _ = one.record(from);
            if self.hist.subtract(&one).is_ok() {
                let _ = self.hist.record(to.min(HIGHEST_NS));
            }
        }
        let stats = &mut self.stats;
        stats.min = min;
        stats.max = max;
        if min > HIGHEST_NS {
            stats.clamped = count;
        } else if max > HIGHEST_NS {
            stats.clamped = stats.clamped.max(1);
        }
        if let Some(mean) = mean {
            stats.sum = (mean * count as f64).round() as u128;
        }
    }

    /// Empties the histogram for reuse without freeing its memory.
    pub fn reset(&mut self) {
        self.hist.reset();
        self.stats = EMPTY;
    }

    /// The exact statistics (min and max are 0 when empty).
    pub fn stats(&self) -> ExactStats {
        if self.stats.count == 0 {
            ExactStats::default()
        } else {
            self.stats
        }
    }

    /// The underlying HdrHistogram (bucketed values).
    pub fn hdr(&self) -> &Histogram<u64> {
        &self.hist
    }

    /// Number of values recorded.
    pub fn count(&self) -> u64 {
        self.stats.count
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.stats.count == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_stats_beside_buckets() {
        let mut h = LatencyHistogram::new();
        for v in [110, 43_896, 24_437_721] {
            h.record(v);
        }
        let s = h.stats();
        assert_eq!((s.count, s.min, s.max), (3, 110, 24_437_721));
        assert_eq!(s.sum, 110 + 43_896 + 24_437_721);
        assert_eq!(s.clamped, 0);
        assert_eq!(h.hdr().len(), 3);
    }

    #[test]
    fn values_past_an_hour_are_clamped_and_counted() {
        let mut h = LatencyHistogram::new();
        h.record(u64::MAX);
        h.record(HIGHEST_NS + 1);
        h.record(5);
        assert_eq!(h.stats().clamped, 2);
        assert_eq!(h.stats().max, u64::MAX);
        assert_eq!(h.hdr().len(), 3);
    }

    #[test]
    fn zero_is_recordable() {
        let mut h = LatencyHistogram::new();
        h.record(0);
        assert_eq!(h.stats().min, 0);
        assert_eq!(h.count(), 1);
    }

    #[test]
    fn merge_is_exact() {
        let mut a = LatencyHistogram::new();
        let mut b = LatencyHistogram::new();
        a.record(10);
        b.record(1_000_000);
        b.record(7);
        a.add(&b);
        assert_eq!(a.stats().count, 3);
        assert_eq!(a.stats().min, 7);
        assert_eq!(a.stats().max, 1_000_000);
        assert_eq!(a.hdr().len(), 3);
        let mut empty = LatencyHistogram::new();
        empty.add(&a);
        assert_eq!(empty.stats(), a.stats());
    }

    #[test]
    fn bucket_math_is_the_histograms() {
        let shape = empty_hdr();
        let mut rng = crate::record::schedule::SplitMix64::new(5);
        let mut values: Vec<u64> = (0..200_000)
            .map(|_| rng.next_u64() >> (rng.next_u64() % 64) as u32)
            .map(|v| v.min(HIGHEST_NS))
            .collect();
        values.extend((0..5000).chain([2047, 2048, 4095, 4096, 1 << 40]));
        values.push(HIGHEST_NS);
        for v in values {
            assert_eq!(
                bucket_top(bucket_index(v)),
                shape.highest_equivalent(v),
                "{v}"
            );
        }
    }
}
