//! Stalls over time: the intervals where the tail happened.
//!
//! Each interval's p99, max and completion rate is compared with the run's
//! typical interval, robustly: on a log scale (latencies are multiplicative),
//! against the median and MAD of all intervals. An interval is a stall when
//! its p99 or max stands more than five robust standard deviations *and* 3×
//! above the typical interval (or 30× above it, however noisy the run), or
//! when its completion rate falls below half the typical rate (intervals
//! shorter than half the usual length are not judged on rate). Adjacent stall intervals merge into one stall.
//!
//! The per-interval mean is reported beside each stall: it is the number a
//! per-second monitoring average would show, and it usually hides the stall.

use serde::Serialize;

use crate::record::ExactStats;
use crate::record::rank::{point_ranks, values_at_ranks_in};

/// One interval's shape.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct IntervalPoint {
    /// Start, seconds from the run's start.
    pub start_s: f64,
    /// Length in seconds (0 for untimed inputs).
    pub length_s: f64,
    /// Completions in the interval.
    pub count: u64,
    /// Median, ns.
    pub p50: u64,
    /// 99th percentile, ns.
    pub p99: u64,
    /// Maximum, ns (exact).
    pub max: u64,
    /// Mean, ns (exact).
    pub mean: f64,
}

impl IntervalPoint {
    /// Summarises one interval from its sparse (bucket value, count) pairs.
    pub fn from_entries(
        start_ns: u64,
        length_ns: u64,
        entries: impl IntoIterator<Item = (u64, u64)>,
        stats: &ExactStats,
    ) -> Self {
        let values = values_at_ranks_in(entries, stats, &point_ranks(stats.count));
        Self::from_values(start_ns, length_ns, [values[0], values[1]], stats)
    }

    /// Summarises one interval whose p50 and p99 are known.
    pub fn from_values(
        start_ns: u64,
        length_ns: u64,
        [p50, p99]: [u64; 2],
        stats: &ExactStats,
    ) -> Self {
        IntervalPoint {
            start_s: start_ns as f64 / 1e9,
            length_s: length_ns as f64 / 1e9,
            count: stats.count,
            p50,
            p99,
            max: stats.max,
            mean: (stats.mean() * 10.0).round() / 10.0,
        }
    }
}

/// Why an interval counts as a stall.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StallReason {
    /// The p99 stands far above the typical interval's.
    HighP99,
    /// The max stands far above the typical interval's.
    HighMax,
    /// Completions fell below half the typical rate.
    CountCollapse,
}

/// A stretch of stalled intervals.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stall {
    /// Start, seconds from the run's start.
    pub start_s: f64,
    /// End, seconds from the run's start.
    pub end_s: f64,
    /// Highest interval p99 in the stretch, ns.
    pub p99: u64,
    /// Highest max in the stretch, ns.
    pub max: u64,
    /// Completions in the stretch.
    pub count: u64,
    /// Mean latency over the stretch, ns: what an average would have shown.
    pub mean: f64,
    /// Why these intervals stand out.
    pub reasons: Vec<StallReason>,
    /// Host counters that stood out at the same time (run files with host
    /// counters only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hints: Vec<Hint>,
}

/// One counter that stands out during a stall.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Hint {
    /// The counter, e.g. `psi.io.full`.
    pub counter: String,
    /// Its value during the stall, in the unit of the text (%, /s, MB, ns).
    pub value: f64,
    /// Its typical value over the run, same unit.
    pub baseline: f64,
    /// The hint in words.
    pub text: String,
    /// The audit check it relates to (`cauda host audit`), if any.
    pub check: Option<String>,
}

/// The run's typical interval, for comparison with stalls.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Typical {
    /// Median of the interval p99s, ns.
    pub p99: u64,
    /// Median of the interval maxima, ns.
    pub max: u64,
    /// Median of the interval means, ns.
    pub mean: f64,
    /// Median completions per second.
    pub rate: f64,
}

/// Robust standard deviations a value must stand above the median.
const ROBUST_SIGMAS: f64 = 5.0;
/// ...and the factor it must exceed the median by.
const MIN_FACTOR: f64 = 3.0;
/// A value this many times the median is a stall however noisy the run.
const MAX_FACTOR: f64 = 30.0;

fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

/// Flags values far above the rest, on a log scale.
fn outliers(values: &[f64]) -> Vec<bool> {
    let logs: Vec<f64> = values.iter().map(|v| v.max(1.0).ln()).collect();
    let med = median(&mut logs.clone());
    let mut deviations: Vec<f64> = logs.iter().map(|l| (l - med).abs()).collect();
    let sigma = 1.4826 * median(&mut deviations);
    let threshold = (ROBUST_SIGMAS * sigma).clamp(MIN_FACTOR.ln(), MAX_FACTOR.ln());
    logs.iter().map(|l| l - med > threshold).collect()
}

/// The typical interval of a run (intervals with completions only).
pub fn typical(points: &[IntervalPoint]) -> Option<Typical> {
    let busy: Vec<&IntervalPoint> = points.iter().filter(|p| p.count > 0).collect();
    if busy.is_empty() {
        return None;
    }
    let mut p99: Vec<f64> = busy.iter().map(|p| p.p99 as f64).collect();
    let mut max: Vec<f64> = busy.iter().map(|p| p.max as f64).collect();
    let mut mean: Vec<f64> = busy.iter().map(|p| p.mean).collect();
    let mut rate: Vec<f64> = points
        .iter()
        .filter(|p| p.length_s > 0.0)
        .map(|p| p.count as f64 / p.length_s)
        .collect();
    Some(Typical {
        p99: median(&mut p99) as u64,
        max: median(&mut max) as u64,
        mean: median(&mut mean),
        rate: median(&mut rate),
    })
}

/// Which intervals are part of a stall [`find_stalls`] reports: one flag
/// per point, in order.
pub fn stalled(points: &[IntervalPoint]) -> Vec<bool> {
    reasons(points).iter().map(|r| !r.is_empty()).collect()
}

/// Why each interval stands out (empty: it does not); all empty for fewer
/// than 5 timed intervals.
fn reasons(points: &[IntervalPoint]) -> Vec<Vec<StallReason>> {
    let mut reasons: Vec<Vec<StallReason>> = vec![Vec::new(); points.len()];
    let timed = points.iter().filter(|p| p.length_s > 0.0).count();
    if timed < 5 {
        return reasons;
    }
    let Some(typical) = typical(points) else {
        return reasons;
    };
    let busy: Vec<usize> = (0..points.len()).filter(|&i| points[i].count > 0).collect();
    let high_p99 = outliers(
        &busy
            .iter()
            .map(|&i| points[i].p99 as f64)
            .collect::<Vec<_>>(),
    );
    let high_max = outliers(
        &busy
            .iter()
            .map(|&i| points[i].max as f64)
            .collect::<Vec<_>>(),
    );
    for (k, &i) in busy.iter().enumerate() {
        if high_p99[k] {
            reasons[i].push(StallReason::HighP99);
        }
        if high_max[k] {
            reasons[i].push(StallReason::HighMax);
        }
    }
    if typical.rate >= 10.0 {
        let mut lengths: Vec<f64> = points.iter().map(|p| p.length_s).collect();
        let typical_length = median(&mut lengths);
        for (i, p) in points.iter().enumerate() {
            // A sliver of a final interval says nothing about the rate.
            let judged = p.length_s >= 0.5 * typical_length;
            if judged && (p.count as f64 / p.length_s) < 0.5 * typical.rate {
                reasons[i].push(StallReason::CountCollapse);
            }
        }
    }
    reasons
}

/// Finds stalls in a run's intervals (needs at least 5 timed intervals).
pub fn find_stalls(points: &[IntervalPoint]) -> Vec<Stall> {
    let reasons = reasons(points);
    let mut stalls: Vec<Stall> = Vec::new();
    let mut sum = 0.0;
    for (i, p) in points.iter().enumerate() {
        if reasons[i].is_empty() {
            continue;
        }
        let extends = i > 0 && !reasons[i - 1].is_empty();
        match stalls.last_mut() {
            Some(s) if extends => {
                sum += p.mean * p.count as f64;
                s.end_s = p.start_s + p.length_s;
                s.p99 = s.p99.max(p.p99);
                s.max = s.max.max(p.max);
                s.count += p.count;
                s.mean = if s.count > 0 {
                    (sum / s.count as f64 * 10.0).round() / 10.0
                } else {
                    0.0
                };
                for r in &reasons[i] {
                    if !s.reasons.contains(r) {
                        s.reasons.push(*r);
                    }
                }
            }
            _ => {
                sum = p.mean * p.count as f64;
                stalls.push(Stall {
                    start_s: p.start_s,
                    end_s: p.start_s + p.length_s,
                    p99: p.p99,
                    max: p.max,
                    count: p.count,
                    mean: p.mean,
                    reasons: reasons[i].clone(),
                    hints: Vec::new(),
                });
            }
        }
    }
    stalls
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::special::normal_quantile;
    use crate::record::schedule::SplitMix64;

    fn interval(
        rng: &mut SplitMix64,
        i: usize,
        n: u64,
        median: f64,
        tail: Option<u64>,
    ) -> IntervalPoint {
        let mut h = crate::record::LatencyHistogram::new();
        for _ in 0..n {
            let z = normal_quantile(rng.next_unit().min(1.0 - 1e-12));
            h.record((median * (0.4 * z).exp()) as u64);
        }
        if let Some(v) = tail {
            h.record_n(v, n / 20);
        }
        let record = crate::model::IntervalRecord::from_histogram(
            i as u64 * 1_000_000_000,
            1_000_000_000,
            &h,
        );
        IntervalPoint::from_entries(
            record.start_ns,
            record.length_ns,
            record.entries().unwrap().iter().copied(),
            &record.stats(),
        )
    }

    #[test]
    fn no_stall_on_stationary_data() {
        for seed in 0..5 {
            let mut rng = SplitMix64::new(seed);
            let points: Vec<_> = (0..300)
                .map(|i| interval(&mut rng, i, 1_000, 50_000.0, None))
                .collect();
            assert!(
                find_stalls(&points).is_empty(),
                "seed {seed}: {:?}",
                find_stalls(&points)
            );
        }
    }

    #[test]
    fn a_planted_stall_is_found_with_its_time() {
        let mut rng = SplitMix64::new(9);
        let mut points: Vec<_> = (0..120)
            .map(|i| {
                let tail = (i == 13 || i == 14).then_some(38_000_000);
                interval(&mut rng, i, 1_000, 50_000.0, tail)
            })
            .collect();
        // A collapse at 60 s: almost nothing completed.
        points[60] = interval(&mut rng, 60, 40, 50_000.0, None);
        let stalls = find_stalls(&points);
        assert_eq!(stalls.len(), 2, "{stalls:?}");
        assert_eq!((stalls[0].start_s, stalls[0].end_s), (13.0, 15.0));
        assert!(stalls[0].p99 >= 38_000_000);
        assert!(stalls[0].reasons.contains(&StallReason::HighP99));
        assert!(
            stalls[0].mean < 5_000_000.0,
            "the mean hides it: {}",
            stalls[0].mean
        );
        assert_eq!(stalls[1].start_s, 60.0);
        assert!(stalls[1].reasons.contains(&StallReason::CountCollapse));
        // The flags mark exactly the intervals of the stalls reported.
        let flagged: Vec<usize> = (0..points.len()).filter(|&i| stalled(&points)[i]).collect();
        assert_eq!(flagged, [13, 14, 60]);
    }

    #[test]
    fn too_few_intervals_find_nothing() {
        let mut rng = SplitMix64::new(1);
        let points: Vec<_> = (0..4)
            .map(|i| interval(&mut rng, i, 100, 1.0e6, Some(1_000_000_000)))
            .collect();
        assert!(find_stalls(&points).is_empty());
    }
}
