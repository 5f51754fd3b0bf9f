//! What a comparison is: the metrics compared, their budgets, the options,
//! and the rows, host changes and verdicts it reports (`cauda compare
//! --json`'s schema).

use serde::Serialize;

use crate::analyze::blame::shift::BlameComparison;
use crate::analyze::quantile::Percentile;

/// The schema of `cauda compare --json`.
pub const COMPARE_SCHEMA: &str = "cauda.compare/1";

/// Relative precision below which a change is not a change.
pub(super) const PRECISION: f64 = 0.001;

/// Better, worse or the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Significantly better.
    Better,
    /// Significantly worse.
    Worse,
    /// Not distinguishable.
    Same,
}

/// A metric compared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Metric {
    /// Number of values.
    Count,
    /// Exact mean.
    Mean,
    /// A percentile.
    Percentile(Percentile),
    /// Exact maximum.
    Max,
    /// Values per second (when the runs' durations are known).
    Throughput,
}

impl Metric {
    /// The metric's name in tables, JSON and `--fail-if-worse`.
    pub fn name(&self) -> String {
        match self {
            Metric::Count => "count".into(),
            Metric::Mean => "mean".into(),
            Metric::Percentile(p) => format!("p{}", p.key),
            Metric::Max => "max".into(),
            Metric::Throughput => "throughput".into(),
        }
    }

    /// True when a larger value is better.
    pub fn higher_is_better(&self) -> bool {
        matches!(self, Metric::Count | Metric::Throughput)
    }

    /// Parses `count`, `mean`, `max`, `throughput` or `pNN`.
    pub fn parse(text: &str) -> Result<Metric, String> {
        match text {
            "count" => Ok(Metric::Count),
            "mean" => Ok(Metric::Mean),
            "max" => Ok(Metric::Max),
            "throughput" => Ok(Metric::Throughput),
            _ => text
                .strip_prefix('p')
                .and_then(|p| Percentile::parse(p).ok())
                .map(Metric::Percentile)
                .ok_or_else(|| {
                    format!(
                        "unknown metric '{text}'; allowed: count, mean, max, throughput, or a \
                         percentile such as p50, p99, p99.9"
                    )
                }),
        }
    }
}

/// A `--fail-if-worse` budget: fail when `metric` got worse by more than `budget_pct`.
#[derive(Clone, Debug, PartialEq)]
pub struct Budget {
    /// The metric.
    pub metric: Metric,
    /// The allowed worsening, in percent.
    pub budget_pct: f64,
}

/// Parses `p99:10%,p99.9:20%,mean:5%`.
pub fn parse_budgets(text: &str) -> Result<Vec<Budget>, String> {
    text.split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|item| {
            let (metric, budget) = item
                .trim()
                .split_once(':')
                .ok_or_else(|| format!("'{item}': expected METRIC:PERCENT, e.g. p99:10%"))?;
            let budget_pct = budget
                .trim()
                .trim_end_matches('%')
                .parse::<f64>()
                .ok()
                .filter(|b| b.is_finite() && *b >= 0.0)
                .ok_or_else(|| {
                    format!("'{item}': the budget must be a non-negative percentage such as 10%")
                })?;
            Ok(Budget {
                metric: Metric::parse(metric.trim())?,
                budget_pct,
            })
        })
        .collect()
}

/// Options of a comparison.
#[derive(Clone, Debug)]
pub struct CompareOptions {
    /// Confidence level of the change intervals.
    pub confidence: f64,
    /// Bootstrap resamples.
    pub resamples: usize,
    /// Seed of the bootstrap.
    pub seed: u64,
    /// Extra metrics to include (from `--fail-if-worse`).
    pub extra: Vec<Metric>,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            confidence: 0.95,
            resamples: 400,
            seed: 1,
            extra: Vec::new(),
        }
    }
}

/// One row of the comparison.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// The series' tag (`base-tag→new-tag` when single series of different tags were paired).
    pub series: String,
    /// The metric's name.
    pub metric: String,
    /// Value in base (ns, count, or per second).
    pub base: f64,
    /// Value in new.
    pub new: f64,
    /// new/base − 1, in percent (`null` when base is 0).
    pub change_pct: Option<f64>,
    /// Confidence interval of the change, in percent.
    pub ci_pct: Option<[f64; 2]>,
    /// The verdict.
    pub verdict: Verdict,
    /// How the interval was obtained: `bootstrap` or `quantile-ci`.
    pub method: &'static str,
}

/// A host setting that differs between the runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HostChange {
    /// The setting.
    pub key: String,
    /// Its value in base.
    pub base: serde_json::Value,
    /// Its value in new.
    pub new: serde_json::Value,
}

/// The whole comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// `cauda.compare/1`.
    pub schema: &'static str,
    /// The base input.
    pub base: String,
    /// The new input.
    pub new: String,
    /// Confidence level of the intervals.
    pub confidence: f64,
    /// The rows.
    pub rows: Vec<Row>,
    /// Host settings that differ.
    pub host_changes: Vec<HostChange>,
    /// Tags present on one side only.
    pub unpaired: Vec<String>,
    /// How the blame of the slow operations shifted (`--kernel blame`
    /// runs; absent when neither run has blame for a compared series).
    #[serde(skip_serializing_if = "BlameComparison::is_empty")]
    pub blame: BlameComparison,
}

/// The metrics every comparison reports.
pub fn default_metrics() -> Vec<Metric> {
    let mut m = vec![Metric::Count, Metric::Mean];
    m.extend(Percentile::defaults().into_iter().map(Metric::Percentile));
    m.push(Metric::Max);
    m.push(Metric::Throughput);
    m
}
