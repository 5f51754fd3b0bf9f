//! A series: a tagged sequence of interval histograms, the unit every
//! importer produces and every analysis consumes. Its intervals are
//! [`super::interval`]'s, their histograms [`super::histogram_data`]'s.

use serde::{Deserialize, Serialize};

use super::digest::Digest;
use super::interval::IntervalRecord;
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

impl MeasuredFrom {
    /// The name run files give it (`"measured_from": "intended-start"`),
    /// which messages use too.
    pub fn name(self) -> &'static str {
        match self {
            MeasuredFrom::IntendedStart => "intended-start",
            MeasuredFrom::ActualStart => "actual-start",
            MeasuredFrom::Unknown => "unknown",
        }
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

/// The tag of a run's control series: cauda's own thread sleeping 1 ms
/// beside the probe and recording how late it woke. Its role is in its
/// tag, so run files carry it without a field of its own.
pub const CONTROL_TAG: &str = "self";

/// What a series stands for in its run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// What the probe (or the imported tool) measured.
    Measurement,
    /// The control series: the host's noise as cauda's own thread saw it,
    /// to tell a host-wide stall from the target's.
    Control,
}

impl Role {
    /// The role of a series tagged `tag`.
    pub fn of_tag(tag: &str) -> Role {
        if tag == CONTROL_TAG {
            Role::Control
        } else {
            Role::Measurement
        }
    }
}

/// A tagged series of intervals, all in nanoseconds.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Series {
    /// What was measured: `wakeup`, `read`, `rtt`, `idle=100us`, …
    /// (at most 1 KiB, one line: [`super::names`]).
    #[serde(deserialize_with = "super::names::tag")]
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
    /// What the importer computed for analysis as it cut the intervals;
    /// never saved, and not part of the series' value.
    #[serde(skip)]
    digest: Option<Box<Digest>>,
}

/// Two series are equal when their data is; a digest is only a cache of it.
impl PartialEq for Series {
    fn eq(&self, other: &Self) -> bool {
        self.tag == other.tag
            && self.unit == other.unit
            && self.measured_from == other.measured_from
            && self.intervals == other.intervals
            && self.reported == other.reported
    }
}

impl Series {
    /// What the series stands for in its run.
    pub fn role(&self) -> Role {
        Role::of_tag(&self.tag)
    }

    /// An empty series.
    pub fn new(tag: String, measured_from: MeasuredFrom) -> Self {
        Series {
            tag,
            unit: "ns".into(),
            measured_from,
            intervals: Vec::new(),
            reported: None,
            digest: None,
        }
    }

    /// Keeps `digest`, made from exactly these intervals, beside them.
    pub fn set_digest(&mut self, digest: Digest) {
        self.digest = Some(Box::new(digest));
    }

    /// The digest, while it still matches the intervals: as many points,
    /// and the same count, sum, min and max of values. A change of the
    /// intervals after the digest was made loses it here unless it keeps
    /// all of these (a series built anew starts without one).
    pub fn digest(&self) -> Option<&Digest> {
        let digest = self.digest.as_deref()?;
        let mut all = ExactStats::default();
        self.intervals.iter().for_each(|iv| all.merge(&iv.stats()));
        let held = digest.stats();
        (digest.points().len() == self.intervals.len()
            && (held.count, held.sum, held.min, held.max) == (all.count, all.sum, all.min, all.max))
            .then_some(digest)
    }

    /// Every interval merged into one histogram (exact: counts add up).
    /// The error names the interval that failed to decode.
    pub fn merged(&self) -> Result<LatencyHistogram, String> {
        let mut total = LatencyHistogram::new();
        for (i, interval) in self.intervals.iter().enumerate() {
            if interval.count == 0 {
                continue;
            }
            let entries = interval
                .entries()
                .map_err(|e| format!("series '{}', interval {i}: {e}", self.tag))?;
            total.add_sparse(&entries, &interval.stats());
        }
        Ok(total)
    }

    /// Total number of values across intervals.
    pub fn count(&self) -> u64 {
        self.intervals.iter().map(|i| i.count).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::MeasuredFrom;

    /// Messages name a series' origin as its run file does.
    #[test]
    fn names_are_what_run_files_hold() {
        for m in [
            MeasuredFrom::IntendedStart,
            MeasuredFrom::ActualStart,
            MeasuredFrom::Unknown,
        ] {
            assert_eq!(serde_json::to_value(m).unwrap(), m.name());
        }
    }
}
