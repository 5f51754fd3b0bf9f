//! One value of a sweep: the probe run as a child `cauda` at that value,
//! and every run of that value judged together (repeats pooled).

use std::path::Path;
use std::process::Stdio;

use anyhow::{Context, Result, anyhow};

use super::config::SweepConfig;
use crate::analyze::load::LoadVerdict;
use crate::analyze::objective::{Objective, judge};
use crate::formats::import::{self, options::ReadOptions};
use crate::model::sweep::{Judged, Knob, StepClass, SweepStep, Verdict};
use crate::model::{RunFile, Series, Warning};
use crate::record::{LatencyHistogram, StopFlag};
use crate::units::{TimeUnit, format_duration_compact};
use crate::workflow::child::{self, Ended};

/// The percentiles every step shows beside the objective's.
const SHOWN: [&str; 3] = ["50", "99", "99.9"];

/// One measurement at one value, as the child left it.
pub struct Measurement {
    /// How the child ended.
    pub ended: Ended,
    /// Its run file's name in the sweep directory.
    pub run: String,
}

/// The child's arguments for one measurement.
pub fn arguments(config: &SweepConfig, value: f64, runtime_ns: u64, run: &Path) -> Vec<String> {
    let mut args = vec![config.probe.clone()];
    args.extend(config.probe_args.iter().cloned());
    args.extend([
        config.knob.flag().to_string(),
        config.knob.argument(value),
        "--runtime".into(),
        format_duration_compact(runtime_ns),
        "--quiet".into(),
        "-o".into(),
        run.display().to_string(),
    ]);
    args
}

/// Runs the probe once at `value` for `runtime_ns`; `position` (1-based)
/// names its files.
pub fn measure(
    exe: &Path,
    config: &SweepConfig,
    dir: &Path,
    value: f64,
    runtime_ns: u64,
    position: usize,
    stop: &StopFlag,
) -> Result<Measurement> {
    let value_name = config.knob.argument(value).replace('/', "per");
    let stem = format!("step-{position:02}-{value_name}");
    let run = format!("{stem}.json");
    let args = arguments(config, value, runtime_ns, &dir.join(&run));
    let log = dir.join(format!("{stem}.log"));
    let ended = child::run(exe, &args, &log, Stdio::null(), stop, |_| {})?;
    Ok(Measurement { ended, run })
}

/// A value's runs judged together.
pub fn judge_runs(
    config: &SweepConfig,
    dir: &Path,
    value: f64,
    runs: &[(String, usize)],
    verdict: impl Fn(&RunFile) -> Option<LoadVerdict>,
) -> Result<(SweepStep, String, Vec<Warning>)> {
    let mut tag = String::new();
    let mut warnings: Vec<Warning> = Vec::new();
    let mut pooled = LatencyHistogram::new();
    let mut lag = LatencyHistogram::new();
    let mut measured_ns = 0;
    // What completed is counted over its own span: a broker's drain
    // completes after the run (not measuring time, which the sweep's cost
    // compares its wall time with).
    let mut completing_ns = 0;
    let mut verdicts = Vec::new();
    let mut behind = None;
    let mut saturated = None;
    for (name, _) in runs {
        let run = read_run(&dir.join(name))?;
        for warning in &run.warnings {
            if !warnings.contains(warning) {
                warnings.push(warning.clone());
            }
        }
        let series =
            judged_series(&run, config.series.as_deref()).with_context(|| format!("in {name}"))?;
        tag.clone_from(&series.tag);
        let hist = series.merged().map_err(|e| anyhow!("{name}: {e}"))?;
        verdicts.push(judge(&hist, &config.objective, config.confidence).verdict);
        pooled.add(&hist);
        if let Some(lag_series) = run.series.iter().find(|s| s.tag == "lag") {
            lag.add(&lag_series.merged().map_err(|e| anyhow!("{name}: {e}"))?);
        }
        measured_ns += run.duration_ns;
        completing_ns += crate::analyze::load::completion_span_ns(&run);
        if let Some(load) = verdict(&run) {
            behind = behind.or(load.generator_fell_behind);
            saturated = saturated.or(load.saturated);
        }
    }
    let objective = judge(&pooled, &config.objective, config.confidence);
    let own = config.objective.percentile.key.as_str();
    let mut keys: Vec<&str> = SHOWN.to_vec();
    if !keys.contains(&own) {
        keys.push(own);
        keys.sort_by(|a, b| {
            percentile(a)
                .quantile()
                .total_cmp(&percentile(b).quantile())
        });
    }
    let percentiles = keys
        .iter()
        .map(|key| at(&pooled, config, key))
        .collect::<Result<Vec<Judged>>>()?;
    let lag_p99_ns = (lag.count() > 0)
        .then(|| crate::analyze::quantile::percentile_values(&lag, &[percentile("99")])[0]);
    let seconds = completing_ns.max(1) as f64 / 1e9;
    let achieved_per_s = pooled.count() as f64 / seconds;
    // The generator's lateness decides the step only where it could: its
    // lag p99 a tenth of the objective's latency or more, or a tenth of the
    // offered load not delivered. Below that the latencies, measured from
    // the intended start, carry the lateness and still meet or miss the
    // objective on their own (a broker sharing two CPUs with its producer
    // lags it ~1–2 ms at any rate, against objectives of tens of ms).
    let material = lag_p99_ns
        .is_some_and(|lag| lag.saturating_mul(10) >= config.objective.threshold_ns)
        || (config.knob == Knob::Rate && achieved_per_s < 0.9 * value);
    let class = if behind.is_some() && material {
        StepClass::GeneratorLimited
    } else {
        match objective.verdict {
            Verdict::Below => StepClass::Below,
            Verdict::Above => StepClass::Above,
            Verdict::Straddles | Verdict::Unsupported => StepClass::Unsure,
        }
    };
    // A step that missed while the generator kept to its schedule (its own
    // lag a tenth of the latency or less) is the target's, even where the
    // drain after the run hides the shortfall in the achieved rate.
    if class == StepClass::Above
        && saturated.is_none()
        && let (Some(lag), Some(value)) = (lag_p99_ns, objective.value_ns)
        && lag.saturating_mul(10) <= value
    {
        saturated = Some(format!(
            "the target's: p{} {} while the generator's own lag p99 was {}",
            config.objective.percentile.key,
            crate::units::format_ns(value as f64),
            crate::units::format_ns(lag as f64)
        ));
    }
    let step = SweepStep {
        value,
        runs: runs.iter().map(|(name, _)| name.clone()).collect(),
        order: runs.iter().map(|(_, position)| *position).collect(),
        measured_ns,
        offered_per_s: (config.knob == Knob::Rate).then_some(value),
        achieved_per_s,
        lag_p99_ns,
        generator_fell_behind: behind,
        saturated,
        percentiles,
        repeats_disagree: verdicts.windows(2).any(|w| w[0] != w[1]),
        objective,
        class,
    };
    Ok((step, tag, warnings))
}

fn percentile(key: &str) -> crate::analyze::Percentile {
    crate::analyze::Percentile::parse(key).expect("a fixed percentile")
}

/// One of the shown percentiles, judged against the objective's latency.
fn at(hist: &LatencyHistogram, config: &SweepConfig, key: &str) -> Result<Judged> {
    let objective = Objective {
        percentile: percentile(key),
        ..config.objective.clone()
    };
    Ok(judge(hist, &objective, config.confidence))
}

/// Reads a step's run file.
pub fn read_run(path: &Path) -> Result<RunFile> {
    let loaded = import::load(path, &ReadOptions::new(TimeUnit::Ns))?;
    let mut run = loaded
        .run
        .ok_or_else(|| anyhow!("{} is not a cauda run file", path.display()))?;
    run.series = loaded.series;
    Ok(run)
}

/// The series the objective judges: `--series`, or the run's first.
fn judged_series<'a>(run: &'a RunFile, tag: Option<&str>) -> Result<&'a Series> {
    match tag {
        Some(tag) => run.series.iter().find(|s| s.tag == tag).ok_or_else(|| {
            let tags: Vec<&str> = run.series.iter().map(|s| s.tag.as_str()).collect();
            crate::error::input_error(format!(
                "--series {tag}: the {} probe recorded no such series; it has {}",
                run.probe,
                tags.join(", ")
            ))
        }),
        None => run
            .series
            .first()
            .ok_or_else(|| anyhow!("the run recorded no series")),
    }
}
