//! Fan-out: what a request that waits for N independent leaf calls sees.
//!
//! The root's latency is the maximum of N draws from the leaf distribution
//! F, so its CDF is Fᴺ: the root's p-th percentile is the leaf's
//! (p/100)^(1/N) quantile. A request meets at least one leaf p99 with
//! probability 1 − 0.99ᴺ (63 % at N = 100), and the root's p99 needs the
//! leaf's 100·0.99^(1/N) percentile (p99.99 at N = 100).

use serde::Serialize;

use super::ci::{Support, rank_bounds, support};
use super::quantile::Percentile;
use crate::model::Percentiles;
use crate::record::LatencyHistogram;
use crate::record::rank::values_at_ranks;

/// The fan-out view of one series.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Fanout {
    /// Leaf calls per request.
    pub n: u32,
    /// The root's percentiles, ns.
    pub root_percentiles: Percentiles,
    /// How far the leaf sample supports each root percentile.
    pub root_support: super::keyed::Keyed<Support>,
    /// Probability that a request meets at least one leaf p99.
    pub p_hit_leaf_p99: f64,
    /// The leaf percentile the root's p99 requires.
    pub leaf_percentile_for_root_p99: f64,
}

/// Computes the fan-out view for `n` leaves.
pub fn fanout(
    hist: &LatencyHistogram,
    n: u32,
    percentiles: &[Percentile],
    confidence: f64,
) -> Fanout {
    let count = hist.count();
    let leaf_q: Vec<f64> = percentiles
        .iter()
        .map(|p| p.quantile().powf(1.0 / n as f64))
        .collect();
    let ranks: Vec<u64> = leaf_q
        .iter()
        .map(|q| ((q * count as f64).ceil() as u64).clamp(1, count.max(1)))
        .collect();
    let values = values_at_ranks(hist, &ranks);
    Fanout {
        n,
        root_percentiles: Percentiles(
            percentiles
                .iter()
                .zip(values)
                .map(|(p, v)| (p.key.clone(), v))
                .collect(),
        ),
        root_support: super::keyed::Keyed(
            percentiles
                .iter()
                .zip(&leaf_q)
                .map(|(p, &q)| {
                    let (_, upper) = rank_bounds(count, q, confidence);
                    let s = if count == 0 {
                        Support::Insufficient
                    } else {
                        support(count, q, upper)
                    };
                    (p.key.clone(), s)
                })
                .collect(),
        ),
        p_hit_leaf_p99: 1.0 - 0.99f64.powi(n as i32),
        leaf_percentile_for_root_p99: 100.0 * 0.99f64.powf(1.0 / n as f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hundred_leaves() {
        let mut h = LatencyHistogram::new();
        (1..=1_000_000u64).for_each(|v| h.record(v));
        let ps = Percentile::parse_list("50,99").unwrap();
        let f = fanout(&h, 100, &ps, 0.95);
        assert!((f.p_hit_leaf_p99 - 0.634).abs() < 0.001);
        assert!((f.leaf_percentile_for_root_p99 - 99.98995).abs() < 1e-4);
        // Root p50 = leaf 0.5^(1/100) ≈ 99.309 % → ≈ 993,092 of 1..1e6.
        let root_p50 = f.root_percentiles.0[0].1;
        assert!((992_000..=994_100).contains(&root_p50), "{root_p50}");
        let root_p99 = f.root_percentiles.0[1].1;
        assert!((999_800..=1_000_000).contains(&root_p99), "{root_p99}");
        assert_eq!(f.root_support.get("99"), Some(&Support::Ok));
    }

    #[test]
    fn one_leaf_is_the_distribution_itself() {
        let mut h = LatencyHistogram::new();
        (1..=1000u64).for_each(|v| h.record(v));
        let ps = Percentile::parse_list("50,90").unwrap();
        let f = fanout(&h, 1, &ps, 0.95);
        assert_eq!(f.root_percentiles.0[0].1, 500);
        assert_eq!(f.root_percentiles.0[1].1, 900);
    }
}
