//! One interval of one series: its exact statistics and its histogram,
//! and the checks that the two agree.

use serde::{Deserialize, Serialize};

use super::encoding;
use super::histogram_data::{
    HistogramData, hdr_from_packed, pack_entries, recorded, unpack_entries,
};
use crate::record::buckets::BucketCounts;
use crate::record::histogram::{ExactStats, LatencyHistogram, MAX_VALUES, bucket_range};

/// One interval of one series: exact statistics and the histogram.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IntervalRecord {
    /// Start of the interval, in ns from the run's start.
    pub start_ns: u64,
    /// Length of the interval in ns; 0 when the source had no timing
    /// (a list of numbers is one untimed interval).
    pub length_ns: u64,
    /// Exact number of values.
    pub count: u64,
    /// Exact smallest value (0 when empty).
    pub min: u64,
    /// Exact largest value (0 when empty).
    pub max: u64,
    /// Exact sum of the values.
    pub sum: u128,
    /// Values above the histogram's range, clamped into its top bucket.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub clamped: u64,
    /// HdrHistogram V2 deflate, base64 (the `.hlog` line encoding).
    pub histogram: HistogramData,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

impl IntervalRecord {
    /// Encodes an interval's histogram with its exact statistics.
    pub fn from_histogram(start_ns: u64, length_ns: u64, hist: &LatencyHistogram) -> Self {
        Self::from_buckets(start_ns, length_ns, &hist.stats(), recorded(hist.hdr()))
    }

    /// An interval from its exact statistics and its (bucket value, count)
    /// pairs in increasing order, held sparse: no histogram is allocated.
    pub fn from_buckets(
        start_ns: u64,
        length_ns: u64,
        stats: &crate::record::ExactStats,
        entries: impl IntoIterator<Item = (u64, u64)>,
    ) -> Self {
        Self::of_stats(
            start_ns,
            length_ns,
            stats,
            HistogramData::Sparse(pack_entries(entries)),
        )
    }

    /// An interval of these statistics whose histogram is already encoded
    /// (what [`encoding::encode_buckets`] made of its buckets).
    pub fn from_encoded(
        start_ns: u64,
        length_ns: u64,
        stats: &crate::record::ExactStats,
        text: String,
    ) -> Self {
        Self::of_stats(start_ns, length_ns, stats, HistogramData::Encoded(text))
    }

    /// An interval of these statistics holding `histogram`.
    fn of_stats(
        start_ns: u64,
        length_ns: u64,
        stats: &crate::record::ExactStats,
        histogram: HistogramData,
    ) -> Self {
        IntervalRecord {
            start_ns,
            length_ns,
            count: stats.count,
            min: stats.min,
            max: stats.max,
            sum: stats.sum,
            clamped: stats.clamped,
            histogram,
        }
    }

    /// An interval in which nothing completed (no histogram allocated).
    pub fn empty(start_ns: u64, length_ns: u64) -> Self {
        IntervalRecord {
            start_ns,
            length_ns,
            count: 0,
            min: 0,
            max: 0,
            sum: 0,
            clamped: 0,
            histogram: HistogramData::Sparse(Vec::new()),
        }
    }

    /// The exact statistics.
    pub fn stats(&self) -> ExactStats {
        ExactStats {
            count: self.count,
            min: self.min,
            max: self.max,
            sum: self.sum,
            clamped: self.clamped,
        }
    }

    /// Checks the stored statistics against each other: min ≤ max, the sum
    /// between count × min and count × max, and an empty interval all zero.
    pub fn check_stats(&self) -> Result<(), String> {
        if self.count > MAX_VALUES {
            return Err(format!(
                "count {} is more values than any run holds (at most {MAX_VALUES})",
                self.count
            ));
        }
        if self.count == 0 {
            if self.min != 0 || self.max != 0 || self.sum != 0 {
                return Err(format!(
                    "count 0 but min {}, max {}, sum {}",
                    self.min, self.max, self.sum
                ));
            }
            return Ok(());
        }
        if self.min > self.max {
            return Err(format!("min {} is above max {}", self.min, self.max));
        }
        let (n, min, max) = (
            u128::from(self.count),
            u128::from(self.min),
            u128::from(self.max),
        );
        if self.sum < n * min || self.sum > n * max {
            return Err(format!(
                "sum {} is outside what {} values between min {} and max {} can add up to",
                self.sum, self.count, self.min, self.max
            ));
        }
        Ok(())
    }

    /// Checks the stored statistics against each other and the histogram:
    /// the count is what it holds, min lies in its lowest occupied bucket
    /// and max in its highest (or above it, when values were clamped).
    fn check(&self, total: u64, occupied: Option<Occupied>) -> Result<(), String> {
        self.check_stats()?;
        if total != self.count {
            return Err(format!(
                "the histogram holds {total} values but the interval says count {}",
                self.count
            ));
        }
        let Some(Occupied { first, last }) = occupied else {
            return Ok(());
        };
        // Values above the histogram's range are counted in its top bucket.
        let clamped_above =
            |value: u64, bucket: (u64, u64)| self.clamped > 0 && bucket == last && value > bucket.1;
        if !(first.0..=first.1).contains(&self.min) && !clamped_above(self.min, first) {
            return Err(format!(
                "min {} is outside the histogram's lowest occupied bucket ({}–{})",
                self.min, first.0, first.1
            ));
        }
        if !(last.0..=last.1).contains(&self.max) && !clamped_above(self.max, last) {
            return Err(format!(
                "max {} is outside the histogram's highest occupied bucket ({}–{})",
                self.max, last.0, last.1
            ));
        }
        Ok(())
    }

    /// The histogram's (bucket value, count) pairs, checked against the
    /// stored statistics.
    pub fn entries(&self) -> Result<std::borrow::Cow<'_, [(u64, u64)]>, String> {
        let (entries, occupied) = match &self.histogram {
            HistogramData::Sparse(packed) => {
                let entries = unpack_entries(packed);
                let occupied = Occupied::of_buckets(entries.iter().map(|e| e.0));
                (entries, occupied)
            }
            HistogramData::Encoded(text) => match encoding::buckets(text)? {
                // cauda's own shape: the counts straight from the encoding.
                encoding::Buckets::Sparse(entries) => {
                    let occupied = Occupied::of_buckets(entries.iter().map(|e| e.0));
                    (entries, occupied)
                }
                encoding::Buckets::Full(hdr) => (recorded(&hdr), Occupied::of_hdr(&hdr)),
            },
        };
        let total = entries.iter().fold(0u64, |sum, e| sum.saturating_add(e.1));
        self.check(total, occupied)?;
        Ok(std::borrow::Cow::Owned(entries))
    }

    /// The histogram's (cauda counts index, count) pairs in increasing
    /// index, checked against the stored statistics: what a merge adds up
    /// (another shape's values each in cauda's bucket; its min and max are
    /// then checked against the count only).
    pub fn bucket_indexes(&self) -> Result<Vec<(usize, u64)>, String> {
        let mut pairs = Vec::new();
        self.bucket_indexes_into(&mut pairs)?;
        Ok(pairs)
    }

    /// [`IntervalRecord::bucket_indexes`] into `pairs` (cleared first), so
    /// that a merge reuses one vector for all its intervals.
    pub fn bucket_indexes_into(&self, pairs: &mut Vec<(usize, u64)>) -> Result<(), String> {
        use crate::record::histogram::bucket_top;
        let own_shape = match &self.histogram {
            HistogramData::Sparse(packed) => {
                pairs.clear();
                pairs.extend(crate::record::buckets::PackedPairs::new(packed));
                true
            }
            HistogramData::Encoded(text) => encoding::bucket_indexes_into(text, pairs)?,
        };
        let total = pairs.iter().fold(0u64, |sum, p| sum.saturating_add(p.1));
        let ends = [pairs.first(), pairs.last()].into_iter().flatten();
        let occupied = own_shape
            .then(|| Occupied::of_buckets(ends.map(|p| bucket_top(p.0))))
            .flatten();
        self.check(total, occupied)
    }

    /// Adds the interval's buckets to `total` — without decoding a histogram
    /// when it is held sparse — and yields its (bucket value, count) pairs
    /// to `visit`; checked against the stored statistics.
    pub fn add_to(
        &self,
        total: &mut BucketCounts,
        visit: impl FnOnce(&mut dyn Iterator<Item = (u64, u64)>),
    ) -> Result<(), String> {
        match &self.histogram {
            HistogramData::Sparse(packed) => {
                let (mut first, mut last) = (None, 0);
                let held = total.add_packed(packed, |pairs| {
                    let mut seen = pairs.inspect(|&(value, _)| {
                        first.get_or_insert(value);
                        last = value;
                    });
                    visit(&mut seen);
                    seen.for_each(drop);
                })?;
                let occupied = first.and_then(|first| Occupied::of_buckets([first, last]));
                self.check(held, occupied)?;
            }
            HistogramData::Encoded(_) => {
                let entries = self.entries()?;
                for &(value, count) in entries.iter() {
                    total.record_n(value, count);
                }
                visit(&mut entries.iter().copied());
            }
        }
        Ok(())
    }

    /// Decodes the histogram and checks it against the stored count.
    pub fn decode(&self) -> Result<LatencyHistogram, String> {
        let hdr = match &self.histogram {
            HistogramData::Encoded(text) => encoding::decode(text)?,
            HistogramData::Sparse(packed) => hdr_from_packed(packed),
        };
        self.check(hdr.len(), Occupied::of_hdr(&hdr))?;
        Ok(LatencyHistogram::from_parts(hdr, self.stats()))
    }
}

/// The values a histogram's lowest and highest occupied buckets can hold,
/// each as (lowest, highest): where an interval's exact min and max must lie.
#[derive(Clone, Copy, Debug)]
struct Occupied {
    first: (u64, u64),
    last: (u64, u64),
}

impl Occupied {
    /// From the bucket values (in increasing order) of cauda's own shape.
    fn of_buckets(values: impl IntoIterator<Item = u64>) -> Option<Occupied> {
        let mut values = values.into_iter();
        let first = values.next()?;
        let last = values.last().unwrap_or(first);
        Some(Occupied {
            first: bucket_range(first),
            last: bucket_range(last),
        })
    }

    /// From a decoded histogram, in its own shape.
    fn of_hdr(hdr: &hdrhistogram::Histogram<u64>) -> Option<Occupied> {
        if hdr.is_empty() {
            return None;
        }
        let (min, max) = (hdr.min(), hdr.max());
        Some(Occupied {
            first: (hdr.lowest_equivalent(min), hdr.highest_equivalent(min)),
            last: (hdr.lowest_equivalent(max), hdr.highest_equivalent(max)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::histogram::HIGHEST_NS;

    #[test]
    fn min_and_max_must_lie_in_the_histograms_extreme_buckets() {
        let mut hist = LatencyHistogram::new();
        for v in [8_400, 9_000, 2_454_999] {
            hist.record(v);
        }
        let good = IntervalRecord::from_histogram(0, 1_000_000_000, &hist);
        let encoded = IntervalRecord {
            histogram: HistogramData::Encoded(good.histogram.encoded().into_owned()),
            ..good.clone()
        };
        for record in [&good, &encoded] {
            assert!(record.entries().is_ok());
            assert!(record.decode().is_ok());
            let mut total = BucketCounts::new();
            assert!(record.add_to(&mut total, |_| {}).is_ok());
            // The review's flips: max 2454999 → 2494999, min 8400 → 9404.
            for (min, max, what) in [(8_400, 2_494_999, "max"), (9_404, 2_454_999, "min")] {
                let bad = IntervalRecord {
                    min,
                    max,
                    sum: 3 * 100_000,
                    ..record.clone()
                };
                let err = bad.entries().unwrap_err();
                assert!(err.starts_with(&format!("{what} ")), "{err}");
                assert!(err.contains("occupied bucket"), "{err}");
                assert!(bad.decode().is_err());
                assert!(bad.add_to(&mut BucketCounts::new(), |_| {}).is_err());
            }
        }
        // Values above the range are counted in the top bucket: a max
        // beyond it is what they were.
        let mut over = LatencyHistogram::new();
        over.record(5);
        over.record(HIGHEST_NS * 2);
        let record = IntervalRecord::from_histogram(0, 1, &over);
        assert_eq!(record.clamped, 1);
        assert!(record.entries().is_ok());
    }
}
