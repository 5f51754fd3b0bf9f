//! Summarising a histogram: exact count, min, max and mean; percentiles as
//! order statistics; stddev; and the median absolute deviation (MAD), the
//! spread measure that survives fat tails where the stddev does not.

use super::quantile::{Percentile, percentile_values};
use crate::model::{Percentiles, Reported, Series, SeriesSummary, Summary};
use crate::record::LatencyHistogram;
use crate::record::rank::value_at_rank;

/// Rounds to one decimal, the precision summaries print floats at.
fn tenth(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// The summary of one histogram.
pub fn summarize(hist: &LatencyHistogram, percentiles: &[Percentile]) -> Summary {
    let stats = hist.stats();
    let n = stats.count;
    let mean = stats.mean();
    let median = value_at_rank(hist, n.div_ceil(2));
    let values = percentile_values(hist, percentiles);
    Summary {
        unit: "ns".into(),
        count: n,
        min: stats.min,
        max: stats.max,
        mean: tenth(mean),
        stddev: tenth(stddev(hist, mean)),
        median,
        mad: Some(mad(hist, median)),
        percentiles: Percentiles(
            percentiles
                .iter()
                .zip(values)
                .map(|(p, v)| (p.key.clone(), v))
                .collect(),
        ),
        clamped: (stats.clamped > 0).then_some(stats.clamped),
    }
}

/// The value a percentiles-only source printed at or above `key` (the
/// first printed point at or above it: HdrHistogram's "value at
/// percentile"; fio prints the usual ones exactly).
pub fn reported_at(reported: &Reported, key: &str) -> Option<u64> {
    let want: f64 = key.parse().ok()?;
    reported
        .percentiles
        .0
        .iter()
        .filter_map(|(k, v)| Some((k.parse::<f64>().ok()?, *v)))
        .find(|(q, _)| *q >= want - 1e-9)
        .map(|(_, v)| v)
}

/// The summary of a percentiles-only source: what it printed, nothing
/// recomputed (no MAD), and only the percentiles it has.
pub fn summarize_reported(reported: &Reported, percentiles: &[Percentile]) -> Summary {
    Summary {
        unit: "ns".into(),
        count: reported.count,
        min: reported.min.unwrap_or(0),
        max: reported.max.unwrap_or(0),
        mean: reported.mean.map_or(0.0, tenth),
        stddev: reported.stddev.map_or(0.0, tenth),
        median: reported_at(reported, "50").unwrap_or(0),
        mad: None,
        percentiles: Percentiles(
            percentiles
                .iter()
                .filter_map(|p| Some((p.key.clone(), reported_at(reported, &p.key)?)))
                .collect(),
        ),
        clamped: None,
    }
}

/// The run-file summaries (default percentiles) of several series; the
/// error names the series and interval that failed to decode.
pub fn series_summaries(series: &[Series]) -> Result<Vec<SeriesSummary>, String> {
    let percentiles = Percentile::defaults();
    series
        .iter()
        .map(|s| {
            let summary = match (&s.reported, s.intervals.is_empty()) {
                (Some(reported), true) => summarize_reported(reported, &percentiles),
                _ => summarize(&s.merged()?, &percentiles),
            };
            Ok(SeriesSummary {
                tag: s.tag.clone(),
                summary,
            })
        })
        .collect()
}

/// Population standard deviation around the exact mean, each bucket taken
/// at its median-equivalent value.
fn stddev(hist: &LatencyHistogram, mean: f64) -> f64 {
    let n = hist.count();
    if n < 2 {
        return 0.0;
    }
    let hdr = hist.hdr();
    let sum_sq: f64 = hdr
        .iter_recorded()
        .map(|b| {
            let d = hdr.median_equivalent(b.value_iterated_to()) as f64 - mean;
            d * d * b.count_at_value() as f64
        })
        .sum();
    (sum_sq / n as f64).sqrt()
}

/// The ⌈n/2⌉-th smallest |x − median|, each bucket taken at its
/// median-equivalent value (so within one bucket width of exact).
fn mad(hist: &LatencyHistogram, median: u64) -> u64 {
    let n = hist.count();
    if n == 0 {
        return 0;
    }
    let hdr = hist.hdr();
    let mut deviations: Vec<(u64, u64)> = hdr
        .iter_recorded()
        .map(|b| {
            let v = hdr
                .median_equivalent(b.value_iterated_to())
                .clamp(hist.stats().min, hist.stats().max);
            (v.abs_diff(median), b.count_at_value())
        })
        .collect();
    deviations.sort_unstable_by_key(|&(d, _)| d);
    let rank = n.div_ceil(2);
    let mut cumulative = 0;
    for (deviation, count) in deviations {
        cumulative += count;
        if cumulative >= rank {
            return deviation;
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_answers_on_small_integers() {
        let mut h = LatencyHistogram::new();
        for v in [1, 1, 2, 2, 4, 6, 9] {
            h.record(v);
        }
        let s = summarize(&h, &Percentile::defaults());
        assert_eq!((s.count, s.min, s.max, s.median), (7, 1, 9, 2));
        // |x − 2| = 1,1,0,0,2,4,7 → sorted 0,0,1,1,2,4,7 → 4th is 1.
        assert_eq!(s.mad, Some(1));
        assert_eq!(s.mean, 3.6);
        // population stddev of the seven values
        assert_eq!(s.stddev, 2.8);
        assert_eq!(s.percentiles.0[0], ("50".to_string(), 2));
        assert_eq!(s.percentiles.0[5], ("99.99".to_string(), 9));
        assert_eq!(s.clamped, None);
    }

    #[test]
    fn the_mad_ignores_a_fat_tail_the_stddev_does_not() {
        let mut h = LatencyHistogram::new();
        for i in 0..1000u64 {
            h.record(75_000 + (i % 50) * 10);
        }
        h.record_n(12_000_000, 5);
        let s = summarize(&h, &Percentile::defaults());
        assert!(s.mad.unwrap() < 300, "MAD {:?}", s.mad);
        assert!(s.stddev > 800_000.0, "stddev {}", s.stddev);
    }

    #[test]
    fn empty_is_all_zero() {
        let s = summarize(&LatencyHistogram::new(), &Percentile::defaults());
        assert_eq!(
            (s.count, s.min, s.max, s.median, s.mad),
            (0, 0, 0, 0, Some(0))
        );
        assert_eq!(s.mean, 0.0);
    }
}
