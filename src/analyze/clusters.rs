//! Latency clusters: where the samples bunch up, and the gaps between.
//!
//! The flat stretches of the quantile function are modes and its steep
//! stretches are gaps (the "Measuring jitter" reading of a percentile
//! plot). Equivalently, on a log-value axis the density has peaks separated
//! by valleys. We bin the histogram on a log scale, smooth lightly, cut at
//! every valley, then merge back every cut that noise could explain: a cut
//! stands only if the valley is under half the lower neighbouring peak, the
//! dip is larger than Poisson noise (3·√peak), and both sides hold at least
//! 1 % of the samples. A unimodal distribution, however long its tail,
//! therefore yields one cluster.
//!
//! Each cluster is reported by its core — the 5th to 95th percentile of the
//! samples in it — and its share of all samples.

use serde::Serialize;

use crate::record::LatencyHistogram;

/// One cluster of latencies.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Cluster {
    /// Bottom of the cluster's core (its 5th percentile), ns.
    pub low: u64,
    /// Top of the cluster's core (its 95th percentile), ns.
    pub high: u64,
    /// Share of all samples in the cluster, 0..1.
    pub share: f64,
}

/// Minimum share of samples on each side of a cut.
const MIN_SHARE: f64 = 0.01;

/// Finds the clusters of a histogram, in increasing latency.
pub fn find_clusters(hist: &LatencyHistogram) -> Vec<Cluster> {
    let n = hist.count();
    if n == 0 {
        return Vec::new();
    }
    let hdr = hist.hdr();
    let stats = hist.stats();
    // (value, count) of every recorded bucket, in increasing value.
    let buckets: Vec<(u64, u64)> = hdr
        .iter_recorded()
        .map(|b| {
            let v = hdr
                .median_equivalent(b.value_iterated_to())
                .clamp(stats.min, stats.max);
            (v, b.count_at_value())
        })
        .collect();
    let per_decade = if n >= 100_000 {
        200.0
    } else if n >= 10_000 {
        100.0
    } else {
        50.0
    };
    let base = (stats.min.max(1)) as f64;
    let bin_of = |v: u64| ((v.max(1) as f64 / base).log10().max(0.0) * per_decade) as usize;
    let bins = bin_of(stats.max) + 1;
    let mut counts = vec![0f64; bins];
    for &(v, c) in &buckets {
        counts[bin_of(v)] += c as f64;
    }
    let smooth: Vec<f64> = (0..bins)
        .map(|i| {
            let left = if i > 0 { counts[i - 1] } else { 0.0 };
            let right = if i + 1 < bins { counts[i + 1] } else { 0.0 };
            (left + 2.0 * counts[i] + right) / 4.0
        })
        .collect();

    let segments = segment(&smooth, n as f64);
    // Map buckets to segments and report each segment's core and share.
    let mut out = Vec::with_capacity(segments.len());
    let mut cursor = 0;
    for (start, end) in segments {
        let members: Vec<(u64, u64)> = buckets[cursor..]
            .iter()
            .take_while(|&&(v, _)| bin_of(v) < end)
            .filter(|&&(v, _)| bin_of(v) >= start)
            .copied()
            .collect();
        cursor += buckets[cursor..]
            .iter()
            .take_while(|&&(v, _)| bin_of(v) < end)
            .count();
        let mass = members.iter().fold(0u64, |sum, m| sum.saturating_add(m.1));
        if mass == 0 {
            continue;
        }
        let at = |fraction: f64| {
            let rank = ((mass as f64 * fraction).ceil() as u64).clamp(1, mass);
            let mut seen = 0;
            for &(v, c) in &members {
                seen = c.saturating_add(seen);
                if seen >= rank {
                    return v;
                }
            }
            members.last().map_or(0, |m| m.0)
        };
        out.push(Cluster {
            low: at(0.05),
            high: at(0.95),
            share: mass as f64 / n as f64,
        });
    }
    out
}

/// Splits bins into [start, end) segments at significant valleys.
fn segment(density: &[f64], n: f64) -> Vec<(usize, usize)> {
    // Cut at the lowest point between every pair of consecutive peaks.
    let mut cuts = Vec::new();
    let mut i = 0;
    let len = density.len();
    let mut last_peak: Option<usize> = None;
    while i < len {
        // Find the next local maximum (plateaus count once).
        let rising = i == 0 || density[i] > density[i - 1];
        let mut j = i;
        while j + 1 < len && density[j + 1] == density[i] {
            j += 1;
        }
        let falling = j + 1 == len || density[j + 1] < density[j];
        if rising && falling && density[i] > 0.0 {
            if let Some(prev) = last_peak {
                let valley = (prev..=i)
                    .min_by(|&a, &b| density[a].total_cmp(&density[b]))
                    .unwrap_or(prev);
                cuts.push(valley);
            }
            last_peak = Some(i);
        }
        i = j + 1;
    }
    // Merge cuts noise could explain, weakest first, until all stand.
    loop {
        let bounds: Vec<usize> = std::iter::once(0)
            .chain(cuts.iter().copied())
            .chain(std::iter::once(len))
            .collect();
        let seg_peak = |k: usize| {
            density[bounds[k]..bounds[k + 1]]
                .iter()
                .copied()
                .fold(0.0, f64::max)
        };
        let seg_mass = |k: usize| density[bounds[k]..bounds[k + 1]].iter().sum::<f64>();
        let mut weakest: Option<(usize, f64)> = None;
        for (c, &cut) in cuts.iter().enumerate() {
            let lower_peak = seg_peak(c).min(seg_peak(c + 1));
            let valley = density[cut];
            let dip = lower_peak - valley;
            let stands = valley <= 0.5 * lower_peak
                && dip >= 3.0 * lower_peak.sqrt()
                && seg_mass(c) >= MIN_SHARE * n
                && seg_mass(c + 1) >= MIN_SHARE * n;
            if !stands {
                let strength = dip / lower_peak.max(1e-9);
                if weakest.is_none_or(|(_, s)| strength < s) {
                    weakest = Some((c, strength));
                }
            }
        }
        match weakest {
            Some((c, _)) => {
                cuts.remove(c);
            }
            None => break,
        }
    }
    let mut segments = Vec::with_capacity(cuts.len() + 1);
    let mut start = 0;
    for cut in cuts {
        segments.push((start, cut));
        start = cut;
    }
    segments.push((start, len));
    segments
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::special::normal_quantile;
    use crate::record::schedule::SplitMix64;

    fn lognormal(rng: &mut SplitMix64, median: f64, sigma: f64) -> u64 {
        (median * (sigma * normal_quantile(rng.next_unit().min(1.0 - 1e-12))).exp()) as u64
    }

    #[test]
    fn planted_clusters_are_recovered_with_their_shares() {
        let mut rng = SplitMix64::new(11);
        let mut h = LatencyHistogram::new();
        for _ in 0..100_000 {
            let v = if rng.next_unit() < 0.61 {
                lognormal(&mut rng, 40_000.0, 0.03)
            } else {
                lognormal(&mut rng, 92_000.0, 0.02)
            };
            h.record(v);
        }
        let clusters = find_clusters(&h);
        assert_eq!(clusters.len(), 2, "{clusters:?}");
        assert!((clusters[0].share - 0.61).abs() < 0.02, "{clusters:?}");
        assert!((clusters[1].share - 0.39).abs() < 0.02, "{clusters:?}");
        assert!(
            clusters[0].low > 36_000 && clusters[0].high < 44_000,
            "{clusters:?}"
        );
        assert!(
            clusters[1].low > 86_000 && clusters[1].high < 98_000,
            "{clusters:?}"
        );
    }

    #[test]
    fn three_clusters_including_a_small_one() {
        let mut rng = SplitMix64::new(5);
        let mut h = LatencyHistogram::new();
        for _ in 0..50_000 {
            let u = rng.next_unit();
            let v = if u < 0.70 {
                lognormal(&mut rng, 20_000.0, 0.05)
            } else if u < 0.95 {
                lognormal(&mut rng, 200_000.0, 0.05)
            } else {
                lognormal(&mut rng, 5_000_000.0, 0.05)
            };
            h.record(v);
        }
        let shares: Vec<f64> = find_clusters(&h).iter().map(|c| c.share).collect();
        assert_eq!(shares.len(), 3, "{shares:?}");
        for (got, want) in shares.iter().zip([0.70, 0.25, 0.05]) {
            assert!((got - want).abs() < 0.02, "{shares:?}");
        }
    }

    #[test]
    fn a_unimodal_lognormal_is_one_cluster() {
        for (seed, n, sigma) in [
            (1, 100_000, 0.5),
            (2, 5_000, 0.3),
            (3, 300, 1.0),
            (4, 1_000_000, 0.8),
        ] {
            let mut rng = SplitMix64::new(seed);
            let mut h = LatencyHistogram::new();
            for _ in 0..n {
                h.record(lognormal(&mut rng, 50_000.0, sigma));
            }
            let clusters = find_clusters(&h);
            assert_eq!(clusters.len(), 1, "seed {seed}: {clusters:?}");
            assert!((clusters[0].share - 1.0).abs() < 1e-9);
        }
    }

    #[test]
    fn a_single_value_and_nothing() {
        let mut h = LatencyHistogram::new();
        assert!(find_clusters(&h).is_empty());
        h.record_n(777, 10);
        let c = find_clusters(&h);
        assert_eq!(c.len(), 1);
        assert_eq!((c[0].low, c[0].high), (777, 777));
    }
}
