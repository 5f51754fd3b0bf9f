//! Analysis: from series to summaries, confidence intervals, clusters,
//! stalls and fan-out. Works on any series, whichever probe or importer
//! produced it.

pub mod blame;
pub mod capacity;
pub mod ci;
pub mod clusters;
pub mod co;
pub mod compare;
pub mod fanout;
pub mod hints;
pub mod keyed;
pub mod layers;
pub mod load;
pub mod objective;
pub mod quantile;
pub mod special;
pub mod stalls;
pub mod summary;

use anyhow::Result;
use serde::Serialize;

use crate::error::input_error;
use crate::model::{Format, Loaded};
use crate::model::{LoadMode, MeasuredFrom, Role, Series, Summary};
use crate::record::buckets::BucketCounts;
use crate::record::{ExactStats, LatencyHistogram};
pub use ci::Support;
pub use keyed::Keyed;
pub use quantile::Percentile;

/// The schema of `cauda analyze --json`.
pub const ANALYSIS_SCHEMA: &str = "cauda.analysis/1";

/// What to compute.
#[derive(Clone, Debug)]
pub struct Options {
    /// Percentiles to report.
    pub percentiles: Vec<Percentile>,
    /// Confidence level of the intervals, in (0, 1).
    pub confidence: f64,
    /// Leaf calls per request for the fan-out view.
    pub fanout: Option<u32>,
    /// Expected interval for coordinated-omission correction, ns.
    pub expected_interval_ns: Option<u64>,
    /// Include the per-interval timeline.
    pub timeline: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            percentiles: Percentile::defaults(),
            confidence: 0.95,
            fanout: None,
            expected_interval_ns: None,
            timeline: false,
        }
    }
}

/// The whole analysis output.
#[derive(Debug, Serialize)]
pub struct Analysis {
    /// `cauda.analysis/1`.
    pub schema: &'static str,
    /// The confidence level of every interval.
    pub confidence: f64,
    /// One entry per input file, in the order given.
    pub inputs: Vec<InputAnalysis>,
}

/// The analysis of one input.
#[derive(Debug, Serialize)]
pub struct InputAnalysis {
    /// The path as given.
    pub source: String,
    /// The detected format.
    pub format: Format,
    /// The probe that made a run file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe: Option<String>,
    /// Open or closed loop, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load: Option<LoadMode>,
    /// Duration of a run in ns, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ns: Option<u64>,
    /// True when the run was stopped early.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// One entry per series.
    pub series: Vec<SeriesAnalysis>,
    /// Each probe series split at the block device, when the run has
    /// kernel series (`--kernel block`): the time above the device.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub layers: Vec<layers::LayerSplit>,
    /// An open-loop run's offered against achieved rate and its
    /// generator's lag ([`load::load_verdict`]); absent for closed-loop
    /// runs and inputs without the data.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offered_load: Option<load::LoadVerdict>,
}

impl InputAnalysis {
    /// Whether a stall of the probe's own operations counts once instead
    /// of as the backlog it caused: a closed loop, or a probe series timed
    /// from the actual start. The kernel's series are service times by
    /// nature and do not make a run so.
    pub fn counts_stalls_once(&self) -> bool {
        self.load == Some(LoadMode::ClosedLoop)
            || self.series.iter().any(|s| {
                s.measured_from == MeasuredFrom::ActualStart && !layers::is_kernel_series(&s.tag)
            })
    }
}

/// The analysis of one series.
#[derive(Debug, Serialize)]
pub struct SeriesAnalysis {
    /// The series' tag.
    pub tag: String,
    /// Where its latencies were measured from.
    pub measured_from: MeasuredFrom,
    /// How many intervals it has.
    pub intervals: usize,
    /// True when the source printed only percentiles (fio's plain JSON,
    /// .hgrm): no distribution, so no intervals, clusters or stalls.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub percentiles_only: bool,
    /// The summary over all intervals.
    pub summary: Summary,
    /// Confidence interval of each percentile: `[low, high]` in ns, `null`
    /// for a side the sample cannot bound.
    pub percentile_ci: Keyed<[Option<u64>; 2]>,
    /// How far the sample supports each percentile.
    pub support: Keyed<Support>,
    /// Latency clusters.
    pub clusters: Vec<clusters::Cluster>,
    /// The typical interval (absent for untimed inputs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub typical_interval: Option<stalls::Typical>,
    /// Intervals where the tail happened.
    pub stalls: Vec<stalls::Stall>,
    /// The fan-out view, with `--fanout`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fanout: Option<fanout::Fanout>,
    /// Coordinated-omission correction, with `--expected-interval`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub co_correction: Option<co::CoCorrection>,
    /// Per-interval p50/p99/max/mean/count, with `--timeline`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeline: Option<Vec<stalls::IntervalPoint>>,
    /// Why the tail (`--kernel blame` runs, series with blame only): the
    /// slow operations' time by cause, the culprit tasks, each stall's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blame: Option<blame::TailBlame>,
}

/// Checks the options; errors say what is allowed.
pub fn validate(options: &Options) -> Result<()> {
    if !(options.confidence > 0.0 && options.confidence < 1.0) {
        return Err(input_error(format!(
            "--confidence {}: must lie strictly between 0 and 1 (e.g. 0.95)",
            options.confidence
        )));
    }
    if options.fanout == Some(0) {
        return Err(input_error(
            "--fanout 0: a request calls at least 1 leaf (e.g. --fanout 100)",
        ));
    }
    Ok(())
}

/// Analyses every loaded input.
pub fn analyze(inputs: &[Loaded], options: &Options) -> Result<Analysis> {
    validate(options)?;
    let inputs = inputs
        .iter()
        .map(|input| analyze_input(input, options))
        .collect::<Result<_>>()?;
    Ok(Analysis {
        schema: ANALYSIS_SCHEMA,
        confidence: options.confidence,
        inputs,
    })
}

/// A series merged, and its per-interval points: from the series' digest
/// when it has one, else in one decoding pass, long series in parallel
/// slices merged in order.
pub fn merge_with_points(
    series: &Series,
) -> Result<(LatencyHistogram, Vec<stalls::IntervalPoint>), String> {
    // An importer that cut the intervals already took what is needed.
    if let Some(digest) = series.digest() {
        let points = series
            .intervals
            .iter()
            .zip(digest.points())
            .map(|(interval, &values)| {
                let (start, length) = (interval.start_ns, interval.length_ns);
                stalls::IntervalPoint::from_values(start, length, values, &interval.stats())
            })
            .collect();
        return Ok((digest.counts().to_histogram(*digest.stats()), points));
    }
    const SLICE_MIN: usize = 512;
    let n = series.intervals.len();
    let threads = std::thread::available_parallelism()
        .map_or(1, |t| t.get())
        .min(n / SLICE_MIN)
        .max(1);
    let per = n.div_ceil(threads).max(1);
    // The first slice is decoded here, into the counts that become the total.
    let (first, rest): (_, Vec<_>) = std::thread::scope(|scope| {
        let handles: Vec<_> = (1..threads)
            .map(|t| scope.spawn(move || merge_slice(series, t * per..((t + 1) * per).min(n))))
            .collect();
        let first = merge_slice(series, 0..per.min(n));
        let rest = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a decoding thread panicked".into()))
            })
            .collect();
        (first, rest)
    });
    let mut total = first?;
    total.points.reserve_exact(n - total.points.len());
    for part in rest {
        let part = part?;
        total.counts.add(&part.counts);
        total.stats.merge(&part.stats);
        total.points.extend(part.points);
    }
    Ok((total.counts.to_histogram(total.stats), total.points))
}

/// What [`merge_slice`] makes of some intervals.
struct Slice {
    counts: BucketCounts,
    stats: ExactStats,
    points: Vec<stalls::IntervalPoint>,
}

/// [`merge_with_points`] over some of a series' intervals: their buckets
/// added by index (no histogram decoded for sparse intervals) and one point
/// per interval.
fn merge_slice(series: &Series, range: std::ops::Range<usize>) -> Result<Slice, String> {
    let first = range.start;
    let intervals = &series.intervals[range];
    let mut slice = Slice {
        counts: BucketCounts::new(),
        stats: ExactStats::default(),
        points: Vec::with_capacity(intervals.len()),
    };
    for (i, interval) in intervals.iter().enumerate() {
        let stats = interval.stats();
        let (start, length) = (interval.start_ns, interval.length_ns);
        if interval.count == 0 {
            let point = stalls::IntervalPoint::from_entries(start, length, [], &stats);
            slice.points.push(point);
            continue;
        }
        let points = &mut slice.points;
        interval
            .add_to(&mut slice.counts, |entries| {
                points.push(stalls::IntervalPoint::from_entries(
                    start, length, entries, &stats,
                ));
            })
            .map_err(|e| format!("series '{}', interval {}: {e}", series.tag, first + i))?;
        slice.stats.merge(&stats);
    }
    Ok(slice)
}

/// A percentiles-only series: what the tool printed, nothing recomputed.
fn analyze_reported(
    series: &Series,
    reported: &crate::model::Reported,
    options: &Options,
) -> SeriesAnalysis {
    let mut percentile_ci = Keyed(Vec::new());
    let mut support = Keyed(Vec::new());
    let summary = summary::summarize_reported(reported, &options.percentiles);
    for p in options
        .percentiles
        .iter()
        .filter(|p| summary.percentiles.0.iter().any(|(k, _)| *k == p.key))
    {
        let (_, upper) = ci::rank_bounds(reported.count, p.quantile(), options.confidence);
        percentile_ci.0.push((p.key.clone(), [None, None]));
        support.0.push((
            p.key.clone(),
            ci::support(reported.count, p.quantile(), upper),
        ));
    }
    SeriesAnalysis {
        tag: series.tag.clone(),
        measured_from: series.measured_from,
        intervals: 0,
        percentiles_only: true,
        summary,
        percentile_ci,
        support,
        clusters: Vec::new(),
        typical_interval: None,
        stalls: Vec::new(),
        fanout: None,
        co_correction: None,
        timeline: None,
        blame: None,
    }
}

fn analyze_series(series: &Series, options: &Options) -> Result<SeriesAnalysis, String> {
    if let (Some(reported), true) = (&series.reported, series.intervals.is_empty()) {
        return Ok(analyze_reported(series, reported, options));
    }
    let (merged, points) = merge_with_points(series)?;
    let (hist, co_correction) = match options.expected_interval_ns {
        None => (merged, None),
        Some(expected) if series.measured_from == MeasuredFrom::IntendedStart => (
            merged,
            Some(co::CoCorrection {
                expected_interval_ns: expected,
                applied: false,
                synthesized: 0,
                reason: Some(
                    "already measured from intended start times: correcting would count stalls twice"
                        .into(),
                ),
            }),
        ),
        Some(expected) => {
            co::check(&merged, expected)?;
            let (corrected, synthesized) = co::correct(&merged, expected);
            (
                corrected,
                Some(co::CoCorrection {
                    expected_interval_ns: expected,
                    applied: true,
                    synthesized,
                    reason: None,
                }),
            )
        }
    };
    let cis = ci::percentile_cis(&hist, &options.percentiles, options.confidence);
    let percentile_ci = Keyed(
        options
            .percentiles
            .iter()
            .zip(&cis)
            .map(|(p, c)| (p.key.clone(), [c.lower, c.upper]))
            .collect(),
    );
    let support = Keyed(
        options
            .percentiles
            .iter()
            .zip(&cis)
            .map(|(p, c)| (p.key.clone(), c.support))
            .collect(),
    );
    Ok(SeriesAnalysis {
        tag: series.tag.clone(),
        measured_from: series.measured_from,
        intervals: series.intervals.len(),
        percentiles_only: false,
        summary: summary::summarize(&hist, &options.percentiles),
        percentile_ci,
        support,
        clusters: clusters::find_clusters(&hist),
        typical_interval: stalls::typical(&points)
            .filter(|_| points.iter().any(|p| p.length_s > 0.0)),
        stalls: stalls::find_stalls(&points),
        fanout: options
            .fanout
            .map(|n| fanout::fanout(&hist, n, &options.percentiles, options.confidence)),
        co_correction,
        timeline: options.timeline.then_some(points),
        blame: None,
    })
}

fn analyze_input(input: &Loaded, options: &Options) -> Result<InputAnalysis> {
    let mut series: Vec<SeriesAnalysis> = input
        .series
        .iter()
        .map(|series| {
            analyze_series(series, options)
                .map_err(|e| input_error(format!("{}: {e}", input.source)))
        })
        .collect::<Result<_>>()?;
    add_hints(input, &mut series);
    if let Some(run) = &input.run
        && let Some(report) = &run.blame
    {
        for s in &mut series {
            s.blame = blame::tail_blame(report, run.interval_ns, &s.tag, &s.stalls);
        }
    }
    let tagged: Vec<(&str, &Summary)> = series
        .iter()
        .map(|s| (s.tag.as_str(), &s.summary))
        .collect();
    let layers = layers::splits(&tagged);
    Ok(InputAnalysis {
        source: input.source.clone(),
        format: input.format,
        probe: input.run.as_ref().map(|r| r.probe.clone()),
        load: input.load_mode(),
        duration_ns: input.run.as_ref().map(|r| r.duration_ns),
        interrupted: input.run.as_ref().is_some_and(|r| r.interrupted),
        series,
        layers,
        offered_load: input
            .run
            .as_ref()
            .and_then(|run| load::load_verdict_of(run, &input.series)),
    })
}

/// Puts culprit hints on every stall of a run that carries host counters
/// or a `self` series.
fn add_hints(input: &Loaded, analyses: &mut [SeriesAnalysis]) {
    let counters = input.run.as_ref().and_then(|r| r.host_counters.as_ref());
    let self_points = input
        .series
        .iter()
        .find(|s| s.role() == Role::Control)
        .and_then(|s| merge_with_points(s).ok())
        .map(|(_, points)| points);
    let points_of = |tag: &str| {
        let series = input.series.iter().find(|s| s.tag == tag)?;
        merge_with_points(series).ok().map(|(_, points)| points)
    };
    let runq_points = points_of("runq");
    for analysis in analyses.iter_mut() {
        let own = Role::of_tag(&analysis.tag) == Role::Control;
        let kernel = layers::is_kernel_series(&analysis.tag);
        let device_points = crate::model::kernel::device_tag_of(&analysis.tag)
            .filter(|_| !analysis.stalls.is_empty())
            .and_then(points_of);
        for stall in &mut analysis.stalls {
            if let Some(points) = self_points.as_deref().filter(|_| !own) {
                stall.hints.extend(hints::self_hint(points, stall));
            }
            if let Some(points) = &device_points {
                stall.hints.extend(layers::device_hint(points, stall));
            }
            if let Some(points) = runq_points.as_deref().filter(|_| !own && !kernel) {
                stall.hints.extend(layers::runq_hint(points, stall));
            }
            if let Some(counters) = counters {
                let found = hints::counter_hints(counters, stall);
                stall.hints.extend(found);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{IntervalRecord, MeasuredFrom};

    #[test]
    fn parallel_decoding_equals_one_pass() {
        let mut rng = crate::record::schedule::SplitMix64::new(21);
        let mut series = Series::new("x".into(), MeasuredFrom::IntendedStart);
        for i in 0..3000u64 {
            let mut hist = LatencyHistogram::new();
            for _ in 0..(rng.next_u64() % 50) {
                hist.record(1_000 + rng.next_u64() % 1_000_000);
            }
            series.intervals.push(IntervalRecord::from_histogram(
                i * 1_000_000_000,
                1_000_000_000,
                &hist,
            ));
        }
        let (whole, points) = merge_with_points(&series).unwrap();
        // Against a plain sequential merge of decoded histograms.
        let mut one = LatencyHistogram::new();
        let mut one_points = Vec::new();
        for interval in &series.intervals {
            let hist = interval.decode().unwrap();
            one.add(&hist);
            let entries = interval.entries().unwrap();
            one_points.push(stalls::IntervalPoint::from_entries(
                interval.start_ns,
                interval.length_ns,
                entries.iter().copied(),
                &interval.stats(),
            ));
        }
        assert_eq!(whole.stats(), one.stats());
        assert!(whole.hdr() == one.hdr());
        assert_eq!(points, one_points);
        // A damaged interval is named by its place in the whole series.
        series.intervals[2500].count += 1;
        let err = merge_with_points(&series).unwrap_err();
        assert!(err.contains("interval 2500"), "{err}");
    }
}
