//! What the charts draw, gathered once: the analysis of every input (run
//! in parallel, one input per thread), and per series the quantile steps of
//! its merged histogram and its log-spaced bins.
//!
//! Each stored interval histogram is decoded once, into the sparse
//! in-memory form the model keeps for fresh runs; the analysis, the charts
//! and the comparison then all read that copy instead of decoding again.

use anyhow::Result;

use crate::analyze::{self, InputAnalysis, SeriesAnalysis};
use crate::model::Loaded;
use crate::model::histogram_data::{HistogramData, pack_entries};
use crate::model::{IntervalRecord, Series};

/// Histogram bins per decade of latency.
pub const BINS_PER_DECADE: f64 = 20.0;

/// One step of the quantile function: `value` for quantiles in (`q_from`, `q_to`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Step {
    /// Quantile where the step starts.
    pub q_from: f64,
    /// Quantile where it ends.
    pub q_to: f64,
    /// The latency, ns.
    pub value: u64,
    /// Values at this latency.
    pub count: u64,
}

/// One log-spaced histogram bin.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bin {
    /// Lower edge, ns.
    pub low: f64,
    /// Upper edge, ns.
    pub high: f64,
    /// Values in it.
    pub count: u64,
}

/// The shape of one series as the charts need it.
#[derive(Debug)]
pub enum Shape {
    /// A full distribution: steps of its quantile function and its bins.
    Distribution {
        /// The quantile function.
        steps: Vec<Step>,
        /// Log-spaced bins.
        bins: Vec<Bin>,
    },
    /// Only the percentiles a tool printed: (quantile, value) points.
    PercentilesOnly {
        /// The printed points, in increasing quantile.
        points: Vec<(f64, u64)>,
    },
}

/// One series ready to draw.
#[derive(Debug)]
pub struct SeriesView {
    /// Index of its input in [`Prepared::inputs`].
    pub input: usize,
    /// Index of the series within its input's analysis.
    pub index: usize,
    /// Legend label.
    pub label: String,
    /// Its distribution or printed percentiles.
    pub shape: Shape,
}

/// One input with its analysis.
#[derive(Debug)]
pub struct InputView<'a> {
    /// The loaded input.
    pub loaded: &'a Loaded,
    /// The same input with every histogram decoded (series only, no run series).
    pub decoded: Loaded,
    /// True for `--baseline`.
    pub baseline: bool,
    /// Its short name (file name, or the path when names clash).
    pub name: String,
    /// The analysis.
    pub analysis: InputAnalysis,
}

/// Everything the page draws.
#[derive(Debug)]
pub struct Prepared<'a> {
    /// Baseline first, then the inputs in order.
    pub inputs: Vec<InputView<'a>>,
    /// Every series of every input, in the same order.
    pub series: Vec<SeriesView>,
    /// The confidence level of every interval.
    pub confidence: f64,
}

impl Prepared<'_> {
    /// The analysis of a series.
    pub fn analysis(&self, s: &SeriesView) -> &SeriesAnalysis {
        &self.inputs[s.input].analysis.series[s.index]
    }
}

/// The quantile function of a merged histogram as steps, with the exact
/// min and max at the ends.
pub fn steps(series: &Series) -> Result<Vec<Step>, String> {
    let hist = series.merged()?;
    let n = hist.count();
    if n == 0 {
        return Ok(Vec::new());
    }
    let stats = hist.stats();
    let hdr = hist.hdr();
    let mut out = Vec::new();
    let mut cumulative = 0u64;
    for bucket in hdr.iter_recorded() {
        let before = cumulative;
        cumulative = cumulative.saturating_add(bucket.count_at_value());
        let value = hdr
            .highest_equivalent(bucket.value_iterated_to())
            .clamp(stats.min, stats.max);
        out.push(Step {
            q_from: before as f64 / n as f64,
            q_to: cumulative.min(n) as f64 / n as f64,
            value,
            count: bucket.count_at_value(),
        });
    }
    if let Some(last) = out.last_mut() {
        last.value = stats.max;
    }
    Ok(out)
}

/// Log-spaced bins of a quantile function's steps (each step's values fall
/// in the bin of its value).
pub fn bins(steps: &[Step]) -> Vec<Bin> {
    let mut out: Vec<Bin> = Vec::new();
    for s in steps {
        let count = s.count;
        if count == 0 {
            continue;
        }
        let k = ((s.value.max(1) as f64).log10() * BINS_PER_DECADE).floor();
        let low = 10f64.powf(k / BINS_PER_DECADE);
        match out.last_mut() {
            Some(b) if (b.low - low).abs() < low * 1e-9 => b.count += count,
            _ => out.push(Bin {
                low,
                high: 10f64.powf((k + 1.0) / BINS_PER_DECADE),
                count,
            }),
        }
    }
    out
}

fn shape(series: &Series, analysis: &SeriesAnalysis) -> Result<Shape, String> {
    if analysis.percentiles_only {
        let sum = &analysis.summary;
        let mut points: Vec<(f64, u64)> = Vec::new();
        if let Some(r) = &series.reported {
            if let Some(min) = r.min {
                points.push((0.0, min));
            }
            for (key, value) in &r.percentiles.0 {
                if let Ok(p) = key.parse::<f64>() {
                    points.push(((p / 100.0).clamp(0.0, 1.0), *value));
                }
            }
            if let Some(max) = r.max {
                points.push((1.0, max));
            }
        } else {
            for (key, value) in &sum.percentiles.0 {
                if let Ok(p) = key.parse::<f64>() {
                    points.push(((p / 100.0).clamp(0.0, 1.0), *value));
                }
            }
        }
        points.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        return Ok(Shape::PercentilesOnly { points });
    }
    let steps = steps(series)?;
    let bins = bins(&steps);
    Ok(Shape::Distribution { steps, bins })
}

fn file_name(source: &str) -> String {
    std::path::Path::new(source)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| source.to_string())
}

/// One input's decoded copy, analysis and the shapes of its series.
type Analysed = (Loaded, InputAnalysis, Vec<Shape>);

/// A copy of `loaded` whose interval histograms are sparse pairs, decoded
/// once. Errors name the input, series and interval, as the analysis would.
pub fn decoded(loaded: &Loaded) -> Result<Loaded> {
    let series = loaded
        .series
        .iter()
        .map(|s| {
            let intervals = s
                .intervals
                .iter()
                .enumerate()
                .map(|(i, iv)| {
                    let histogram = match &iv.histogram {
                        HistogramData::Sparse(packed) => HistogramData::Sparse(packed.clone()),
                        HistogramData::Encoded(_) if iv.count == 0 => {
                            HistogramData::Sparse(Vec::new())
                        }
                        HistogramData::Encoded(_) => HistogramData::Sparse(pack_entries(
                            iv.entries()
                                .map_err(|e| {
                                    crate::error::input_error(format!(
                                        "{}: series '{}', interval {i}: {e}",
                                        loaded.source, s.tag
                                    ))
                                })?
                                .iter()
                                .copied(),
                        )),
                    };
                    Ok(IntervalRecord {
                        start_ns: iv.start_ns,
                        length_ns: iv.length_ns,
                        count: iv.count,
                        min: iv.min,
                        max: iv.max,
                        sum: iv.sum,
                        clamped: iv.clamped,
                        histogram,
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            let mut decoded = Series::new(s.tag.clone(), s.measured_from);
            decoded.unit = s.unit.clone();
            decoded.intervals = intervals;
            decoded.reported = s.reported.clone();
            Ok(decoded)
        })
        .collect::<Result<Vec<_>>>()?;
    // Only the series are decoded; the rest of the run (host, warnings) is
    // kept as is, without its stored series.
    let run = loaded.run.as_ref().map(|r| {
        let mut r = r.clone();
        r.series = Vec::new();
        r
    });
    Ok(Loaded {
        source: loaded.source.clone(),
        format: loaded.format,
        series,
        run,
        warnings: loaded.warnings.clone(),
    })
}

/// Analyses every input (one thread per input, at most as many as CPUs)
/// and shapes its series.
pub fn prepare<'a>(
    inputs: &'a [Loaded],
    baseline: Option<&'a Loaded>,
    options: &analyze::Options,
) -> Result<Prepared<'a>> {
    let all: Vec<(&Loaded, bool)> = baseline
        .map(|b| (b, true))
        .into_iter()
        .chain(inputs.iter().map(|l| (l, false)))
        .collect();
    let work = |original: &Loaded| -> Result<Analysed> {
        let loaded = decoded(original)?;
        let mut analysis = analyze::analyze(std::slice::from_ref(&loaded), options)?;
        let input = analysis.inputs.remove(0);
        let shapes = loaded
            .series
            .iter()
            .zip(&input.series)
            .map(|(series, a)| {
                shape(series, a)
                    .map_err(|e| crate::error::input_error(format!("{}: {e}", loaded.source)))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok((loaded, input, shapes))
    };
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, all.len().max(1));
    let mut results: Vec<Option<Result<Analysed>>> = (0..all.len()).map(|_| None).collect();
    std::thread::scope(|scope| {
        let chunks: Vec<Vec<usize>> = (0..threads)
            .map(|t| (t..all.len()).step_by(threads).collect())
            .collect();
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                let all = &all;
                let work = &work;
                scope.spawn(move || {
                    chunk
                        .into_iter()
                        .map(|i| (i, work(all[i].0)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for handle in handles {
            match handle.join() {
                Ok(done) => {
                    for (i, r) in done {
                        results[i] = Some(r);
                    }
                }
                Err(_) => {
                    // A panicking analysis leaves its slots empty; reported below.
                }
            }
        }
    });

    let names: Vec<String> = all.iter().map(|(l, _)| file_name(&l.source)).collect();
    let single = all.len() == 1;
    let mut views = Vec::with_capacity(all.len());
    let mut series = Vec::new();
    for (i, ((loaded, is_baseline), result)) in all.iter().zip(results).enumerate() {
        let (decoded, analysis, shapes) = result.ok_or_else(|| {
            anyhow::anyhow!("{}: the analysis failed unexpectedly", loaded.source)
        })??;
        let clash = names.iter().filter(|n| **n == names[i]).count() > 1;
        let name = if clash {
            loaded.source.clone()
        } else {
            names[i].clone()
        };
        let prefix = if *is_baseline {
            format!("baseline {name}")
        } else {
            name.clone()
        };
        for (index, shape) in shapes.into_iter().enumerate() {
            let tag = &analysis.series[index].tag;
            let label = if single && !*is_baseline {
                tag.clone()
            } else {
                format!("{prefix} · {tag}")
            };
            series.push(SeriesView {
                input: i,
                index,
                label,
                shape,
            });
        }
        views.push(InputView {
            loaded,
            decoded,
            baseline: *is_baseline,
            name,
            analysis,
        });
    }
    Ok(Prepared {
        inputs: views,
        series,
        confidence: options.confidence,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{IntervalRecord, MeasuredFrom};
    use crate::record::LatencyHistogram;

    fn series_of(values: &[u64]) -> Series {
        let mut h = LatencyHistogram::new();
        for &v in values {
            h.record(v);
        }
        let mut s = Series::new("t".into(), MeasuredFrom::IntendedStart);
        s.intervals
            .push(IntervalRecord::from_histogram(0, 1_000_000_000, &h));
        s
    }

    #[test]
    fn steps_cover_all_quantiles_and_end_at_the_exact_max() {
        let s = series_of(&[1_000, 1_000, 2_000, 50_000_123]);
        let st = steps(&s).unwrap();
        assert_eq!(st.len(), 3);
        assert_eq!((st[0].q_from, st[0].q_to), (0.0, 0.5));
        assert_eq!(st[2].q_to, 1.0);
        assert_eq!(st[2].value, 50_000_123);
    }

    #[test]
    fn one_far_sample_gets_a_bin_of_its_own() {
        let mut values = vec![40_000; 10_000];
        values.push(30_000_000);
        let s = series_of(&values);
        let b = bins(&steps(&s).unwrap());
        assert_eq!(b.len(), 2);
        assert_eq!(b[0].count, 10_000);
        assert_eq!(b[1].count, 1);
        assert!(b[1].low <= 30_000_000.0 && b[1].high > 30_000_000.0);
        assert!(b[0].low <= 40_000.0 && b[0].high > 40_000.0);
    }
}
