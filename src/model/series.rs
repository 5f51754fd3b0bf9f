//! A series: a tagged sequence of interval histograms, the unit every
//! importer produces and every analysis consumes.

use serde::{Deserialize, Serialize};

use super::encoding;
use super::summary::Percentiles;
use crate::record::histogram::{ExactStats, LatencyHistogram};

/// Where a series' latencies are measured from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MeasuredFrom {
    /// From the intended start time (open loop): stalls show as backlog.
    IntendedStart,
    /// From the actual start of the operation: service time. In a closed
    /// loop this is all there is, and a stall hides behind one sample.
    ActualStart,
    /// Not known (imported values).
    Unknown,
}

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
    pub histogram: String,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

impl IntervalRecord {
    /// Encodes an interval's histogram with its exact statistics.
    pub fn from_histogram(start_ns: u64, length_ns: u64, hist: &LatencyHistogram) -> Self {
        let stats = hist.stats();
        IntervalRecord {
            start_ns,
            length_ns,
            count: stats.count,
            min: stats.min,
            max: stats.max,
            sum: stats.sum,
            clamped: stats.clamped,
            histogram: encoding::encode(hist.hdr()),
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

    /// Decodes the histogram and checks it against the stored count.
    pub fn decode(&self) -> Result<LatencyHistogram, String> {
        let hdr = encoding::decode(&self.histogram)?;
        if self.count > 0 && self.min > self.max {
            return Err(format!("min {} is above max {}", self.min, self.max));
        }
        if hdr.len() != self.count {
            return Err(format!(
                "the histogram holds {} values but the interval says count {}",
                hdr.len(),
                self.count
            ));
        }
        Ok(LatencyHistogram::from_parts(hdr, self.stats()))
    }
}

/// Statistics a tool printed without the distribution behind them (fio's
/// plain JSON, an `.hgrm`): shown as given, never recomputed or extended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reported {
    /// Number of values.
    pub count: u64,
    /// Smallest value, when reported.
    pub min: Option<u64>,
    /// Largest value, when reported.
    pub max: Option<u64>,
    /// Mean, when reported.
    pub mean: Option<f64>,
    /// Standard deviation, when reported.
    pub stddev: Option<f64>,
    /// The percentiles the tool printed, keys normalised (`"99.9"`).
    pub percentiles: Percentiles,
}

/// A tagged series of intervals, all in nanoseconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// What was measured: `wakeup`, `read`, `rtt`, `idle=100us`, …
    pub tag: String,
    /// Always `ns`.
    pub unit: String,
    /// Where latencies were measured from.
    pub measured_from: MeasuredFrom,
    /// The intervals, in time order.
    pub intervals: Vec<IntervalRecord>,
    /// For percentiles-only sources: what the tool printed (no intervals).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reported: Option<Reported>,
}

impl Series {
    /// An empty series.
    pub fn new(tag: String, measured_from: MeasuredFrom) -> Self {
        Series {
            tag,
            unit: "ns".into(),
            measured_from,
            intervals: Vec::new(),
            reported: None,
        }
    }

    /// Every interval merged into one histogram (exact: counts add up).
    /// The error names the interval that failed to decode.
    pub fn merged(&self) -> Result<LatencyHistogram, String> {
        let mut total = LatencyHistogram::new();
        for (i, interval) in self.intervals.iter().enumerate() {
            if interval.count == 0 {
                continue;
            }
            let hist = interval
                .decode()
                .map_err(|e| format!("series '{}', interval {i}: {e}", self.tag))?;
            total.add(&hist);
        }
        Ok(total)
    }

    /// Total number of values across intervals.
    pub fn count(&self) -> u64 {
        self.intervals.iter().map(|i| i.count).sum()
    }
}
