//! The rank rule: which rank a quantile falls on ([`rank_of`], ⌈q·n⌉) and
//! which value stands for the k-th smallest of n values recorded in a
//! histogram. One rule for every reader (the model's digest, the analysis,
//! the exporters), below all of them.
//!
//! Rank 1 is the exact min and rank n the exact max; any other rank is the
//! value of the bucket holding it — its top by default (HdrHistogram's
//! convention, ≤ 0.1 % above the true value at three significant digits) —
//! clamped to the exact min and max. An empty histogram gives 0.

use super::{ExactStats, LatencyHistogram};

/// The value of rank `rank` (1-based) in the histogram; 0 when empty.
pub fn value_at_rank(hist: &LatencyHistogram, rank: u64) -> u64 {
    values_at_ranks(hist, &[rank])[0]
}

/// Which end of a histogram bucket stands for the values in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edge {
    /// The bottom: never above the true value (lower confidence bounds).
    Low,
    /// The top: never below the true value (HdrHistogram's convention).
    High,
}

/// The values of several ranks in one pass; the ranks may come in any order.
pub fn values_at_ranks(hist: &LatencyHistogram, ranks: &[u64]) -> Vec<u64> {
    values_at_ranks_edge(hist, ranks, Edge::High)
}

/// [`values_at_ranks`] with the bucket edge chosen.
pub fn values_at_ranks_edge(hist: &LatencyHistogram, ranks: &[u64], edge: Edge) -> Vec<u64> {
    let hdr = hist.hdr();
    let entries = hdr.iter_recorded().map(|bucket| {
        let value = bucket.value_iterated_to();
        let value = match edge {
            Edge::High => hdr.highest_equivalent(value),
            Edge::Low => hdr.lowest_equivalent(value),
        };
        (value, bucket.count_at_value())
    });
    values_at_ranks_in(entries, &hist.stats(), ranks)
}

/// The values of several ranks (any order) among sparse (value, count)
/// pairs in increasing value whose exact statistics are `stats`: rank 1 is
/// the exact min, rank n the exact max, others the pair's value clamped to
/// them; 0 when empty.
pub fn values_at_ranks_in(
    entries: impl IntoIterator<Item = (u64, u64)>,
    stats: &ExactStats,
    ranks: &[u64],
) -> Vec<u64> {
    let n = stats.count;
    let mut out = vec![0; ranks.len()];
    if n == 0 {
        return out;
    }
    let mut order: Vec<usize> = (0..ranks.len()).collect();
    order.sort_by_key(|&i| ranks[i]);
    let mut next = 0;
    while next < order.len() && ranks[order[next]] <= 1 {
        out[order[next]] = reported_at_rank(ranks[order[next]], None, stats);
        next += 1;
    }
    let mut cumulative = 0u64;
    for (value, count) in entries {
        if next == order.len() {
            break;
        }
        cumulative = cumulative.saturating_add(count);
        while next < order.len() && ranks[order[next]] <= cumulative {
            out[order[next]] = reported_at_rank(ranks[order[next]], Some(value), stats);
            next += 1;
        }
    }
    while next < order.len() {
        out[order[next]] = reported_at_rank(ranks[order[next]], None, stats);
        next += 1;
    }
    out
}

/// The value reported for `rank` (1-based) of the `stats.count` values,
/// given the value of the bucket the rank falls in (`None`: past the
/// buckets): rank 1 is the exact min, rank n and past it the exact max,
/// others the bucket's value clamped to them.
pub fn reported_at_rank(rank: u64, bucket: Option<u64>, stats: &ExactStats) -> u64 {
    match bucket {
        _ if rank <= 1 => stats.min,
        Some(value) if rank < stats.count => value.max(stats.min).min(stats.max),
        _ => stats.max,
    }
}

/// The rank of the q-th quantile of `n` values, q = `numerator /
/// denominator`: the ⌈q·n⌉-th smallest, in exact integer arithmetic (99.9 %
/// of 1,000 is rank 999, not 998.99…), kept within 1..=n.
pub fn rank_of(n: u64, numerator: u128, denominator: u128) -> u64 {
    let rank = (u128::from(n) * numerator).div_ceil(denominator);
    (rank as u64).clamp(1, n.max(1))
}

/// The ranks an interval's p50 and p99 are read at.
pub fn point_ranks(n: u64) -> [u64; 2] {
    [rank_of(n, 1, 2), rank_of(n, 99, 100)]
}
