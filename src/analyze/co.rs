//! Coordinated-omission correction for imported closed-loop data.
//!
//! A closed-loop tool that waits for a slow response does not issue the
//! requests that would have queued behind it. Given the interval at which
//! requests were expected, each value v > E implies the missing values
//! v − E, v − 2E, … down to E, as HdrHistogram's
//! `recordValueWithExpectedInterval` synthesises them. The result is
//! labelled as synthesised, and never applied to data that was already
//! measured from intended start times (that would count stalls twice).

use serde::Serialize;

use crate::record::LatencyHistogram;

/// What the correction did to a series.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CoCorrection {
    /// The expected interval between requests, ns.
    pub expected_interval_ns: u64,
    /// Whether it was applied.
    pub applied: bool,
    /// How many values were synthesised.
    pub synthesized: u64,
    /// Why not, when not applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Most values one bucket may imply (max / expected interval): beyond it
/// the expected interval is not one the data could have been sent at.
pub const MAX_STEPS: u64 = 1_000_000;

/// Checks that correcting would stay within [`MAX_STEPS`] per value.
pub fn check(hist: &LatencyHistogram, expected_ns: u64) -> Result<(), String> {
    let max = hist.stats().max;
    if expected_ns == 0 || max / expected_ns > MAX_STEPS {
        return Err(format!(
            "--expected-interval: the max {max} ns is more than {MAX_STEPS} expected intervals; \
             give the interval the tool actually sent requests at"
        ));
    }
    Ok(())
}

/// Returns a copy of `hist` with the missing values added, and their count.
pub fn correct(hist: &LatencyHistogram, expected_ns: u64) -> (LatencyHistogram, u64) {
    let mut out = hist.clone();
    let mut synthesized = 0;
    if expected_ns == 0 {
        return (out, 0);
    }
    for bucket in hist.hdr().iter_recorded() {
        let value = bucket.value_iterated_to();
        let count = bucket.count_at_value();
        let mut missing = value.saturating_sub(expected_ns);
        while missing >= expected_ns {
            out.record_n(missing, count);
            synthesized += count;
            missing -= expected_ns;
        }
    }
    (out, synthesized)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stall_fills_in_its_queue() {
        let mut h = LatencyHistogram::new();
        h.record_n(1_000, 99);
        h.record(100_000_000); // a 100 ms stall at a 1 ms expected interval
        let (c, n) = correct(&h, 1_000_000);
        assert_eq!(n, 99, "99 ms … 1 ms");
        assert_eq!(c.count(), 100 + 99);
        assert_eq!(c.stats().max, 100_000_000);
    }

    #[test]
    fn fast_values_are_untouched() {
        let mut h = LatencyHistogram::new();
        h.record_n(500, 10);
        let (c, n) = correct(&h, 1_000);
        assert_eq!((n, c.count()), (0, 10));
    }
}
