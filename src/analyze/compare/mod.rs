//! `cauda compare`: is "new" really better than "base"?
//!
//! Series are paired by tag. For each metric the change is new/base − 1,
//! with a confidence interval from a bootstrap over *intervals* (tails
//! cluster in time, so resampling single values would understate the
//! uncertainty), seeded for repeatability. With a single interval on either
//! side there is nothing to resample, and the interval comes from the two
//! percentiles' distribution-free CIs instead. The verdict is `same` when
//! the interval spans zero or the change is within the histogram's 0.1 %
//! precision; otherwise `better` or `worse` (lower latency is better;
//! higher count and throughput are better).

mod comparison;
mod pair;

use anyhow::Result;

use crate::analyze::blame::shift::{compare_blame, of_run};
use crate::error::input_error;
use crate::model::{Loaded, Role, Series};
use pair::compare_pair;

pub use comparison::{
    Budget, COMPARE_SCHEMA, CompareOptions, Comparison, HostChange, Metric, Row, Verdict,
    default_metrics, parse_budgets,
};

fn host_changes(base: &Loaded, new: &Loaded) -> Vec<HostChange> {
    let (Some(b), Some(n)) = (&base.run, &new.run) else {
        return Vec::new();
    };
    // Each audit check is one key (`check:vm.swappiness`), compared by its
    // current value, so a comparison names the setting that changed.
    let to_map = |h: &crate::model::HostSnapshot| {
        let mut map = match serde_json::to_value(h) {
            Ok(serde_json::Value::Object(m)) => m,
            _ => serde_json::Map::new(),
        };
        map.remove("checks");
        for check in &h.checks {
            // An idle state's usage and time grow between any two runs; its
            // setting (enabled, exit latency) is what compares.
            let setting = match check.current.find(", usage ") {
                Some(at) if check.id.starts_with("cpuidle.") => &check.current[..at],
                _ => &check.current,
            };
            map.insert(
                format!("check:{}", check.id),
                serde_json::Value::String(setting.to_string()),
            );
        }
        map
    };
    let (bm, nm) = (to_map(&b.host), to_map(&n.host));
    let mut keys: Vec<&String> = bm.keys().chain(nm.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter_map(|k| {
            let bv = bm.get(k).cloned().unwrap_or(serde_json::Value::Null);
            let nv = nm.get(k).cloned().unwrap_or(serde_json::Value::Null);
            (bv != nv).then(|| HostChange {
                key: k.clone(),
                base: bv,
                new: nv,
            })
        })
        .collect()
}

/// Compares two inputs, pairing series by tag (or the only series of each).
pub fn compare<'a>(
    base: &'a Loaded,
    new: &'a Loaded,
    options: &CompareOptions,
) -> Result<Comparison> {
    if !(options.confidence > 0.0 && options.confidence < 1.0) {
        return Err(input_error(format!(
            "--confidence {}: must lie strictly between 0 and 1 (e.g. 0.95)",
            options.confidence
        )));
    }
    let mut metrics = default_metrics();
    for extra in &options.extra {
        if !metrics.contains(extra) {
            let at = metrics.len() - 2;
            metrics.insert(at, extra.clone());
        }
    }
    // The probes' series pair by tag, or the only one of each side pairs
    // whatever its tag. A run's `self` control series pairs with the other
    // run's only beside them: alone it says nothing about the target.
    let probe_series = |l: &'a Loaded| -> Vec<&'a Series> {
        l.series
            .iter()
            .filter(|s| s.role() != Role::Control || l.series.len() == 1)
            .collect()
    };
    let (base_probe, new_probe) = (probe_series(base), probe_series(new));
    let mut pairs: Vec<(String, &Series, &Series)> = base_probe
        .iter()
        .filter_map(|b| {
            new_probe
                .iter()
                .find(|n| n.tag == b.tag)
                .map(|n| (b.tag.clone(), *b, *n))
        })
        .collect();
    if let (true, [b], [n]) = (
        pairs.is_empty(),
        base_probe.as_slice(),
        new_probe.as_slice(),
    ) {
        pairs.push((format!("{}→{}", b.tag, n.tag), *b, *n));
    }
    let find_self = |l: &'a Loaded| {
        l.series
            .iter()
            .find(|s| s.role() == Role::Control && l.series.len() > 1)
    };
    if let (false, Some(b), Some(n)) = (pairs.is_empty(), find_self(base), find_self(new)) {
        pairs.push((b.tag.clone(), b, n));
    }
    if pairs.is_empty() {
        let tags = |l: &Loaded| {
            l.series
                .iter()
                .map(|s| s.tag.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(input_error(format!(
            "no common series to compare: {} has [{}], {} has [{}]",
            base.source,
            tags(base),
            new.source,
            tags(new)
        )));
    }
    let mut rows = Vec::new();
    for (label, b, n) in &pairs {
        rows.extend(
            compare_pair(label, b, n, &metrics, options)
                .map_err(|e| input_error(format!("{} vs {}: {e}", base.source, new.source)))?,
        );
    }
    let paired: Vec<&str> = pairs
        .iter()
        .flat_map(|(_, b, n)| [b.tag.as_str(), n.tag.as_str()])
        .collect();
    let unpaired = base
        .series
        .iter()
        .chain(&new.series)
        .map(|s| s.tag.clone())
        .filter(|t| !paired.contains(&t.as_str()))
        .collect();
    let labels: Vec<(&str, &str, &str)> = pairs
        .iter()
        .map(|(label, b, n)| (label.as_str(), b.tag.as_str(), n.tag.as_str()))
        .collect();
    let blame = compare_blame(of_run(base.run.as_ref()), of_run(new.run.as_ref()), &labels);
    Ok(Comparison {
        schema: COMPARE_SCHEMA,
        base: base.source.clone(),
        new: new.source.clone(),
        confidence: options.confidence,
        rows,
        host_changes: host_changes(base, new),
        unpaired,
        blame,
    })
}

/// The rows that break a budget: worse, significantly, by more than allowed.
pub fn over_budget<'a>(comparison: &'a Comparison, budgets: &[Budget]) -> Vec<(&'a Row, f64)> {
    comparison
        .rows
        .iter()
        // The gate judges the target, never cauda's own control thread.
        .filter(|row| Role::of_tag(&row.series) != Role::Control)
        .filter_map(|row| {
            let budget = budgets.iter().find(|b| b.metric.name() == row.metric)?;
            let change = row.change_pct?;
            let worse_by = if Metric::parse(&row.metric).is_ok_and(|m| m.higher_is_better()) {
                -change
            } else {
                change
            };
            (row.verdict == Verdict::Worse && worse_by > budget.budget_pct)
                .then_some((row, budget.budget_pct))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Format;
    use crate::model::{IntervalRecord, MeasuredFrom};
    use crate::record::LatencyHistogram;
    use crate::record::schedule::SplitMix64;

    fn series(tag: &str, intervals: usize, seed: u64, scale: f64) -> Series {
        let mut rng = SplitMix64::new(seed);
        let mut s = Series::new(tag.into(), MeasuredFrom::IntendedStart);
        for i in 0..intervals {
            let mut h = LatencyHistogram::new();
            for _ in 0..2_000 {
                h.record((scale * 50_000.0 * (1.0 + -rng.next_unit().ln())) as u64);
            }
            s.intervals.push(IntervalRecord::from_histogram(
                i as u64 * 1_000_000_000,
                1_000_000_000,
                &h,
            ));
        }
        s
    }

    fn loaded(name: &str, series: Vec<Series>) -> Loaded {
        Loaded {
            source: name.into(),
            format: Format::CaudaRun,
            series,
            run: None,
            warnings: Vec::new(),
        }
    }

    #[test]
    fn a_run_compared_with_itself_is_the_same_everywhere() {
        let a = loaded("a", vec![series("rtt", 20, 1, 1.0)]);
        let c = compare(&a, &a, &CompareOptions::default()).unwrap();
        assert!(
            c.rows.iter().all(|r| r.verdict == Verdict::Same),
            "{:#?}",
            c.rows
        );
        assert!(c.rows.iter().all(|r| r.change_pct == Some(0.0)));
        assert!(c.rows.iter().any(|r| r.metric == "throughput"));
    }

    #[test]
    fn a_slower_run_is_worse_and_a_faster_one_better() {
        let base = loaded("base", vec![series("rtt", 20, 1, 1.0)]);
        let slow = loaded("slow", vec![series("rtt", 20, 2, 1.3)]);
        let c = compare(&base, &slow, &CompareOptions::default()).unwrap();
        let p99 = c.rows.iter().find(|r| r.metric == "p99").unwrap();
        assert_eq!(p99.verdict, Verdict::Worse, "{p99:?}");
        assert!((p99.change_pct.unwrap() - 30.0).abs() < 8.0, "{p99:?}");
        let [lo, hi] = p99.ci_pct.unwrap();
        assert!(lo > 0.0 && hi > lo);
        let back = compare(&slow, &base, &CompareOptions::default()).unwrap();
        assert_eq!(
            back.rows
                .iter()
                .find(|r| r.metric == "p50")
                .unwrap()
                .verdict,
            Verdict::Better
        );
        let budgets = parse_budgets("p99:10%").unwrap();
        assert_eq!(over_budget(&c, &budgets).len(), 1);
        let generous = parse_budgets("p99:80%").unwrap();
        assert!(over_budget(&c, &generous).is_empty());
    }

    #[test]
    fn single_interval_inputs_use_quantile_cis() {
        let base = loaded("a", vec![series("values", 1, 1, 1.0)]);
        let new = loaded("b", vec![series("values", 1, 2, 2.0)]);
        let c = compare(&base, &new, &CompareOptions::default()).unwrap();
        let p50 = c.rows.iter().find(|r| r.metric == "p50").unwrap();
        assert_eq!(p50.method, "quantile-ci");
        assert_eq!(p50.verdict, Verdict::Worse);
    }

    #[test]
    fn no_common_series_is_an_input_error() {
        let a = loaded(
            "a",
            vec![series("read", 2, 1, 1.0), series("write", 2, 1, 1.0)],
        );
        let b = loaded("b", vec![series("rtt", 2, 1, 1.0)]);
        let err = compare(&a, &b, &CompareOptions::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("no common series"), "{err}");
    }

    #[test]
    fn budgets_parse_and_refuse_unknown_metrics() {
        let b = parse_budgets("p99:10%,p99.9:20%,mean:5").unwrap();
        assert_eq!(b.len(), 3);
        assert_eq!(b[1].metric.name(), "p99.9");
        assert!(parse_budgets("p99").unwrap_err().contains("METRIC:PERCENT"));
        assert!(
            parse_budgets("latency:10%")
                .unwrap_err()
                .contains("allowed")
        );
        assert!(parse_budgets("p99:-5%").is_err());
    }
}
