//! One pair of series compared on each metric: the values on both sides,
//! the change with its confidence interval (a seeded bootstrap over
//! intervals, or the percentiles' own CIs when a side has one interval),
//! and the verdict.

use super::comparison::{CompareOptions, Metric, PRECISION, Row, Verdict};
use crate::analyze::ci::percentile_cis;
use crate::analyze::quantile::Percentile;
use crate::analyze::special::normal_quantile;
use crate::analyze::summary::summarize;
use crate::model::Series;
use crate::record::LatencyHistogram;
use crate::record::schedule::SplitMix64;

/// One interval as sparse bucket counts over a shared value dictionary.
struct SparseInterval {
    entries: Vec<(u32, u64)>,
    count: u64,
    sum: u128,
    max: u64,
    length_ns: u64,
}

struct Prepared {
    intervals: Vec<SparseInterval>,
    merged: LatencyHistogram,
}

/// One interval as (bucket value, count) pairs with its exact statistics:
/// no full histogram is kept per interval.
struct Decoded {
    entries: Vec<(u64, u64)>,
    stats: crate::record::ExactStats,
    length_ns: u64,
}

fn decode_all(series: &Series) -> Result<Vec<Decoded>, String> {
    series
        .intervals
        .iter()
        .enumerate()
        .map(|(i, iv)| {
            let entries = iv
                .entries()
                .map_err(|e| format!("series '{}', interval {i}: {e}", series.tag))?
                .into_owned();
            Ok(Decoded {
                entries,
                stats: iv.stats(),
                length_ns: iv.length_ns,
            })
        })
        .collect()
}

fn prepare(decoded: &[Decoded], dictionary: &[u64]) -> Prepared {
    let mut merged = LatencyHistogram::new();
    let intervals = decoded
        .iter()
        .map(|d| {
            merged.add_sparse(&d.entries, &d.stats);
            let entries = d
                .entries
                .iter()
                .map(|&(v, c)| {
                    let idx = dictionary
                        .binary_search(&v)
                        .unwrap_or_else(|i| i.min(dictionary.len() - 1));
                    (idx as u32, c)
                })
                .collect();
            SparseInterval {
                entries,
                count: d.stats.count,
                sum: d.stats.sum,
                max: d.stats.max,
                length_ns: d.length_ns,
            }
        })
        .collect();
    Prepared { intervals, merged }
}

/// Metric values of a resample: dense counts over the dictionary.
fn resample_metrics(
    prepared: &Prepared,
    dictionary: &[u64],
    metrics: &[Metric],
    rng: &mut SplitMix64,
    dense: &mut [u64],
) -> Vec<f64> {
    dense.iter_mut().for_each(|c| *c = 0);
    let m = prepared.intervals.len();
    let (mut count, mut sum, mut max, mut length) = (0u64, 0u128, 0u64, 0u64);
    for _ in 0..m {
        let iv = &prepared.intervals[(rng.next_u64() % m as u64) as usize];
        for &(idx, c) in &iv.entries {
            dense[idx as usize] += c;
        }
        count += iv.count;
        sum += iv.sum;
        max = max.max(iv.max);
        length += iv.length_ns;
    }
    let mut ranks: Vec<(usize, u64)> = metrics
        .iter()
        .enumerate()
        .filter_map(|(i, metric)| match metric {
            Metric::Percentile(p) => Some((i, p.rank(count))),
            _ => None,
        })
        .collect();
    ranks.sort_by_key(|r| r.1);
    let mut out: Vec<f64> = metrics
        .iter()
        .map(|metric| match metric {
            Metric::Count => count as f64,
            Metric::Mean => {
                if count > 0 {
                    sum as f64 / count as f64
                } else {
                    0.0
                }
            }
            Metric::Max => max as f64,
            Metric::Throughput => {
                if length > 0 {
                    count as f64 / (length as f64 / 1e9)
                } else {
                    0.0
                }
            }
            Metric::Percentile(_) => 0.0,
        })
        .collect();
    let mut cumulative = 0u64;
    let mut next = 0;
    for (idx, &c) in dense.iter().enumerate() {
        if next == ranks.len() {
            break;
        }
        cumulative += c;
        while next < ranks.len() && ranks[next].1 <= cumulative {
            out[ranks[next].0] = (dictionary[idx] as f64).min(max as f64);
            next += 1;
        }
    }
    out
}

fn point_metrics(prepared: &Prepared, metrics: &[Metric]) -> Vec<f64> {
    let hist = &prepared.merged;
    let stats = hist.stats();
    let percentiles: Vec<Percentile> = metrics
        .iter()
        .filter_map(|m| match m {
            Metric::Percentile(p) => Some(p.clone()),
            _ => None,
        })
        .collect();
    let summary = summarize(hist, &percentiles);
    let length: u64 = prepared.intervals.iter().map(|i| i.length_ns).sum();
    let mut pct = summary.percentiles.0.iter();
    metrics
        .iter()
        .map(|m| match m {
            Metric::Count => stats.count as f64,
            Metric::Mean => stats.mean(),
            Metric::Max => stats.max as f64,
            Metric::Throughput => {
                if length > 0 {
                    stats.count as f64 / (length as f64 / 1e9)
                } else {
                    0.0
                }
            }
            Metric::Percentile(_) => pct.next().map_or(0.0, |(_, v)| *v as f64),
        })
        .collect()
}

fn change(base: f64, new: f64) -> Option<f64> {
    (base > 0.0).then(|| new / base - 1.0)
}

fn percentile_of(sorted: &[f64], q: f64) -> f64 {
    let idx = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

fn verdict(metric: &Metric, change: Option<f64>, ci: Option<[f64; 2]>) -> Verdict {
    let (Some(change), Some([lo, hi])) = (change, ci) else {
        return Verdict::Same;
    };
    if change.abs() <= PRECISION || (lo <= 0.0 && hi >= 0.0) {
        return Verdict::Same;
    }
    let up = change > 0.0;
    if up == metric.higher_is_better() {
        Verdict::Better
    } else {
        Verdict::Worse
    }
}

/// The rows comparing one pair of series on `metrics`.
pub(super) fn compare_pair(
    label: &str,
    base: &Series,
    new: &Series,
    metrics: &[Metric],
    options: &CompareOptions,
) -> Result<Vec<Row>, String> {
    for s in [base, new] {
        if s.reported.is_some() && s.intervals.is_empty() {
            return Err(format!(
                "series '{}' holds only the percentiles its tool printed; compare needs the \
                 distribution (for fio, use --output-format=json+ or a latency log)",
                s.tag
            ));
        }
    }
    let base_decoded = decode_all(base)?;
    let new_decoded = decode_all(new)?;
    let mut dictionary: Vec<u64> = base_decoded
        .iter()
        .chain(&new_decoded)
        .flat_map(|d| d.entries.iter().map(|e| e.0))
        .collect();
    dictionary.sort_unstable();
    dictionary.dedup();
    if dictionary.is_empty() {
        dictionary.push(0);
    }
    let pb = prepare(&base_decoded, &dictionary);
    let pn = prepare(&new_decoded, &dictionary);
    let timed = |p: &Prepared| p.intervals.iter().all(|i| i.length_ns > 0);
    let metrics: Vec<Metric> = metrics
        .iter()
        .filter(|m| **m != Metric::Throughput || (timed(&pb) && timed(&pn)))
        .cloned()
        .collect();
    let base_point = point_metrics(&pb, &metrics);
    let new_point = point_metrics(&pn, &metrics);

    let busy = |p: &Prepared| p.intervals.iter().filter(|i| i.count > 0).count();
    let bootstrap = busy(&pb) >= 2 && busy(&pn) >= 2;
    let alpha = 1.0 - options.confidence;
    let cis: Vec<Option<[f64; 2]>> = if bootstrap {
        let mut rng = SplitMix64::new(options.seed);
        let mut dense = vec![0u64; dictionary.len()];
        let mut samples: Vec<Vec<f64>> = vec![Vec::with_capacity(options.resamples); metrics.len()];
        for _ in 0..options.resamples {
            let b = resample_metrics(&pb, &dictionary, &metrics, &mut rng, &mut dense);
            let n = resample_metrics(&pn, &dictionary, &metrics, &mut rng, &mut dense);
            for (k, (bv, nv)) in b.iter().zip(&n).enumerate() {
                if let Some(c) = change(*bv, *nv) {
                    samples[k].push(c);
                }
            }
        }
        samples
            .into_iter()
            .map(|mut s| {
                if s.len() < options.resamples / 2 {
                    return None;
                }
                s.sort_by(f64::total_cmp);
                Some([
                    percentile_of(&s, alpha / 2.0),
                    percentile_of(&s, 1.0 - alpha / 2.0),
                ])
            })
            .collect()
    } else {
        quantile_ci_changes(&pb.merged, &pn.merged, &metrics, options.confidence)
    };

    Ok(metrics
        .iter()
        .enumerate()
        .map(|(k, metric)| {
            let c = change(base_point[k], new_point[k]);
            Row {
                series: label.to_string(),
                metric: metric.name(),
                base: base_point[k],
                new: new_point[k],
                change_pct: c.map(|c| round3(c * 100.0)),
                ci_pct: cis[k].map(|[lo, hi]| [round3(lo * 100.0), round3(hi * 100.0)]),
                verdict: verdict(metric, c, cis[k]),
                method: if bootstrap {
                    "bootstrap"
                } else {
                    "quantile-ci"
                },
            }
        })
        .collect())
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// With one interval on a side: the change interval from the percentiles'
/// own CIs (and the mean's normal CI); none for count, max and throughput.
fn quantile_ci_changes(
    base: &LatencyHistogram,
    new: &LatencyHistogram,
    metrics: &[Metric],
    confidence: f64,
) -> Vec<Option<[f64; 2]>> {
    let z = normal_quantile(1.0 - (1.0 - confidence) / 2.0);
    metrics
        .iter()
        .map(|m| match m {
            Metric::Percentile(p) => {
                let b = percentile_cis(base, std::slice::from_ref(p), confidence)[0];
                let n = percentile_cis(new, std::slice::from_ref(p), confidence)[0];
                match (b.lower, b.upper, n.lower, n.upper) {
                    (Some(bl), Some(bh), Some(nl), Some(nh)) if bl > 0 && bh > 0 => {
                        Some([nl as f64 / bh as f64 - 1.0, nh as f64 / bl as f64 - 1.0])
                    }
                    _ => None,
                }
            }
            Metric::Mean => {
                let interval = |h: &LatencyHistogram| {
                    let s = summarize(h, &[]);
                    let se = s.stddev / (s.count.max(1) as f64).sqrt();
                    (s.mean - z * se, s.mean + z * se)
                };
                let (bl, bh) = interval(base);
                let (nl, nh) = interval(new);
                (bl > 0.0 && bh > 0.0).then(|| [nl / bh - 1.0, nh / bl - 1.0])
            }
            _ => None,
        })
        .collect()
}
