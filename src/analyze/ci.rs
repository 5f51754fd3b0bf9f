//! Distribution-free confidence intervals for percentiles, and how far the
//! sample supports each percentile.
//!
//! The number of samples at or below the true q-quantile is
//! Binomial(n, q), so the order statistics X₍ₗ₎ and X₍ᵤ₎ bracket it with
//! probability P(l ≤ B < u) whatever the distribution (Hahn & Meeker,
//! *Statistical Intervals*, §5.2; the "Measuring jitter" and Le Boudec
//! *Performance Evaluation* §2.2 treatments). We take the largest l with
//! P(B ≤ l−1) ≤ α/2 and the smallest u with P(B ≤ u−1) ≥ 1−α/2, exact
//! binomial tails rather than the normal approximation that fails in the
//! far tail. From a histogram the lower bound is the bottom of rank l's
//! bucket and the upper bound the top of rank u's, so the interval never
//! narrows because of bucketing.
//!
//! Support: with k = n·(1−q) samples expected above the percentile, the
//! percentile is `insufficient` when no rank u ≤ n bounds it from above
//! (roughly k < 3), `rough` when k < 100, else `ok`.

use serde::Serialize;

use super::quantile::Percentile;
use super::special::binomial_cdf;
use crate::record::LatencyHistogram;
use crate::record::rank::{Edge, values_at_ranks_edge};

/// How far a percentile can be trusted given the sample size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Support {
    /// At least 100 samples expected above it.
    Ok,
    /// Fewer than 100 samples above it: the value moves from run to run.
    Rough,
    /// The sample cannot bound it from above: not a measurement.
    Insufficient,
}

impl Support {
    /// The plain-words note for tables.
    pub fn note(self) -> &'static str {
        match self {
            Support::Ok => "",
            Support::Rough => "rough: under 100 samples above it",
            Support::Insufficient => "insufficient: too few samples to bound it",
        }
    }
}

/// A percentile's confidence interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PercentileCi {
    /// Lower bound in ns, `None` when no order statistic bounds it below.
    pub lower: Option<u64>,
    /// Upper bound in ns, `None` when no order statistic bounds it above.
    pub upper: Option<u64>,
    /// How far the sample supports the percentile.
    pub support: Support,
}

/// The 1-based ranks (l, u) bracketing the q-quantile of n samples with
/// the given confidence; `None` for a side no rank in 1..=n achieves.
pub fn rank_bounds(n: u64, q: f64, confidence: f64) -> (Option<u64>, Option<u64>) {
    if n == 0 {
        return (None, None);
    }
    let alpha = 1.0 - confidence;
    let cdf = |k: u64| binomial_cdf(k, n, q);
    // Lower: the largest l in 1..=n with cdf(l − 1) ≤ α/2 (cdf increases in l).
    let lower = if cdf(0) > alpha / 2.0 {
        None
    } else {
        let (mut lo, mut hi) = (1u64, n);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if cdf(mid - 1) <= alpha / 2.0 {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        Some(lo)
    };
    // Upper: the smallest u in 1..=n with cdf(u − 1) ≥ 1 − α/2.
    let upper = if cdf(n - 1) < 1.0 - alpha / 2.0 {
        None
    } else {
        let (mut lo, mut hi) = (1u64, n);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if cdf(mid - 1) >= 1.0 - alpha / 2.0 {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        Some(lo)
    };
    (lower, upper)
}

/// The support of the q-quantile among n samples.
pub fn support(n: u64, q: f64, upper_rank: Option<u64>) -> Support {
    let above = n as f64 * (1.0 - q);
    if upper_rank.is_none() {
        Support::Insufficient
    } else if above < 100.0 {
        Support::Rough
    } else {
        Support::Ok
    }
}

/// Confidence intervals of several percentiles of one histogram.
pub fn percentile_cis(
    hist: &LatencyHistogram,
    percentiles: &[Percentile],
    confidence: f64,
) -> Vec<PercentileCi> {
    let n = hist.count();
    let bounds: Vec<(Option<u64>, Option<u64>)> = percentiles
        .iter()
        .map(|p| rank_bounds(n, p.quantile(), confidence))
        .collect();
    let lower_ranks: Vec<u64> = bounds.iter().map(|b| b.0.unwrap_or(1)).collect();
    let upper_ranks: Vec<u64> = bounds.iter().map(|b| b.1.unwrap_or(n)).collect();
    let lows = values_at_ranks_edge(hist, &lower_ranks, Edge::Low);
    let highs = values_at_ranks_edge(hist, &upper_ranks, Edge::High);
    percentiles
        .iter()
        .zip(bounds)
        .enumerate()
        .map(|(i, (p, (l, u)))| PercentileCi {
            lower: l.map(|_| lows[i]),
            upper: u.map(|_| highs[i]),
            support: if n == 0 {
                Support::Insufficient
            } else {
                support(n, p.quantile(), u)
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::schedule::SplitMix64;

    #[test]
    fn median_of_ten_thousand() {
        // Normal approximation: 5000 ± 1.96·50 → ranks ≈ 4902 and 5099.
        let (l, u) = rank_bounds(10_000, 0.5, 0.95);
        let (l, u) = (l.unwrap(), u.unwrap());
        assert!((4_899..=4_903).contains(&l), "{l}");
        assert!((5_098..=5_102).contains(&u), "{u}");
    }

    #[test]
    fn the_far_tail_is_unbounded_above() {
        // p99.99 of 10,000: one sample expected above — cannot be bounded.
        let (_, u) = rank_bounds(10_000, 0.9999, 0.95);
        assert_eq!(u, None);
        assert_eq!(support(10_000, 0.9999, u), Support::Insufficient);
        // p99.9 of 10,000: 10 above — bounded, but rough.
        let (_, u) = rank_bounds(10_000, 0.999, 0.95);
        assert!(u.is_some());
        assert_eq!(support(10_000, 0.999, u), Support::Rough);
        // p99 of 100,000: 1,000 above — ok.
        let (_, u) = rank_bounds(100_000, 0.99, 0.95);
        assert_eq!(support(100_000, 0.99, u), Support::Ok);
    }

    #[test]
    fn coverage_is_close_to_nominal() {
        // 1,000 simulated samples of 2,000 exponential values (mean 1 ms):
        // how often does the 95 % CI of p99 contain the true p99?
        let true_p99 = -(0.01f64).ln() * 1e6;
        let mut rng = SplitMix64::new(2026);
        let p99 = Percentile::parse("99").unwrap();
        let trials = 1_000;
        let mut covered = 0;
        for _ in 0..trials {
            let mut h = LatencyHistogram::new();
            for _ in 0..2_000 {
                h.record((-rng.next_unit().ln() * 1e6) as u64);
            }
            let ci = percentile_cis(&h, std::slice::from_ref(&p99), 0.95)[0];
            if (ci.lower.unwrap() as f64) <= true_p99 && true_p99 <= ci.upper.unwrap() as f64 {
                covered += 1;
            }
        }
        let rate = covered as f64 / trials as f64;
        assert!((0.93..=0.975).contains(&rate), "coverage {rate}");
    }

    #[test]
    fn intervals_contain_the_estimate() {
        let mut h = LatencyHistogram::new();
        (1..=100_000u64).for_each(|v| h.record(v * 37));
        let ps = Percentile::defaults();
        let values = super::super::quantile::percentile_values(&h, &ps);
        for (ci, v) in percentile_cis(&h, &ps, 0.95).iter().zip(values) {
            if let (Some(lo), Some(hi)) = (ci.lower, ci.upper) {
                assert!(lo <= v && v <= hi, "{lo} ≤ {v} ≤ {hi}");
            }
        }
    }
}
