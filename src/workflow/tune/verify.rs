//! `host tune --verify -- PROBE ARGS...`: measure, tune, measure again,
//! and keep the tuning only if the second run is better.
//!
//! The probe is cauda itself (`std::env::current_exe()`) run as a child
//! with `-q -o FILE`, so both runs are ordinary run files that `compare`
//! and anyone else can re-read. "Better" is `compare`'s verdict: at least
//! one latency metric (mean or a percentile, any series) significantly
//! better and none significantly worse; the max alone decides nothing,
//! being one sample, and the `self` series (the tool's own hiccups)
//! describes cauda, not the target.

use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow};

use crate::analyze::compare::{CompareOptions, Comparison, Verdict, compare};
use crate::error::input_error;
use crate::formats::import;
use crate::model::Role;

/// The two run files of a verification, named after the journal.
pub fn run_paths(journal: &Path) -> (PathBuf, PathBuf) {
    let name = |suffix: &str| {
        let mut text = journal.as_os_str().to_owned();
        text.push(suffix);
        PathBuf::from(text)
    };
    (name(".before.json"), name(".after.json"))
}

/// Refuses probe arguments that would fight the ones cauda adds.
pub fn check_probe(probe: &[String]) -> Result<()> {
    if probe.is_empty() {
        return Err(input_error(
            "--verify: give the probe after --, e.g. --verify -- timer --runtime 10s",
        ));
    }
    if let Some(flag) = probe
        .iter()
        .find(|a| *a == "-o" || a.starts_with("--output") || (a.starts_with("-o") && a.len() > 2))
    {
        return Err(input_error(format!(
            "--verify -- {}: leave out {flag}; cauda names the before and after run files after \
             the journal",
            probe.join(" ")
        )));
    }
    Ok(())
}

/// Runs `cauda PROBE ARGS -q -o output` and waits for it.
pub fn run_probe(probe: &[String], output: &Path) -> Result<()> {
    let exe =
        std::env::current_exe().map_err(|e| anyhow!("cannot find cauda's own binary: {e}"))?;
    let mut command = std::process::Command::new(exe);
    command.args(probe);
    if !probe.iter().any(|a| a == "-q" || a == "--quiet") {
        command.arg("-q");
    }
    let status = command
        .arg("-o")
        .arg(output)
        .arg("--force")
        .status()
        .map_err(|e| anyhow!("cannot start the probe: {e}"))?;
    match status.code() {
        Some(0) => Ok(()),
        Some(2) => Err(input_error(format!(
            "the probe `cauda {}` refused its arguments (see above)",
            probe.join(" ")
        ))),
        _ => Err(anyhow!(
            "the probe `cauda {}` failed ({status})",
            probe.join(" ")
        )),
    }
}

/// Compares the before and after run files.
pub fn compare_runs(before: &Path, after: &Path) -> Result<Comparison> {
    let options = import::options::ReadOptions::new(crate::units::TimeUnit::Ns);
    let base = import::load(before, &options)?;
    let new = import::load(after, &options)?;
    compare(&base, &new, &CompareOptions::default())
}

/// Whether the tuned run is better, and the rows that say so.
pub fn judge(comparison: &Comparison) -> (bool, String) {
    let latency = |metric: &str| metric == "mean" || metric.starts_with('p');
    let mut better = Vec::new();
    let mut worse = Vec::new();
    for row in comparison
        .rows
        .iter()
        .filter(|r| latency(&r.metric) && Role::of_tag(&r.series) != Role::Control)
    {
        let label = format!(
            "{} {} {:+.1} %",
            row.series,
            row.metric,
            row.change_pct.unwrap_or(0.0)
        );
        match row.verdict {
            Verdict::Better => better.push(label),
            Verdict::Worse => worse.push(label),
            Verdict::Same => {}
        }
    }
    let keep = !better.is_empty() && worse.is_empty();
    let why = match (better.is_empty(), worse.is_empty()) {
        (true, true) => "no latency metric changed significantly".to_string(),
        (false, true) => format!("better: {}", better.join(", ")),
        (true, false) => format!("worse: {}", worse.join(", ")),
        (false, false) => format!(
            "better: {}; but worse: {}",
            better.join(", "),
            worse.join(", ")
        ),
    };
    (keep, why)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::compare::Row;

    fn row(metric: &str, verdict: Verdict) -> Row {
        Row {
            series: "wakeup".into(),
            metric: metric.into(),
            base: 1.0,
            new: 1.0,
            change_pct: Some(-10.0),
            ci_pct: None,
            verdict,
            method: "bootstrap",
        }
    }

    fn comparison(rows: Vec<Row>) -> Comparison {
        Comparison {
            schema: "cauda.compare/1",
            base: "a".into(),
            new: "b".into(),
            confidence: 0.95,
            rows,
            host_changes: Vec::new(),
            unpaired: Vec::new(),
            blame: Default::default(),
        }
    }

    #[test]
    fn keeps_only_what_is_better_and_nowhere_worse() {
        let keep = |rows| judge(&comparison(rows)).0;
        assert!(keep(vec![
            row("p99", Verdict::Better),
            row("p50", Verdict::Same)
        ]));
        assert!(!keep(vec![
            row("p99", Verdict::Better),
            row("p50", Verdict::Worse)
        ]));
        assert!(!keep(vec![row("p99", Verdict::Same)]));
        // A single sample (max) or the count decides nothing.
        assert!(!keep(vec![
            row("max", Verdict::Better),
            row("count", Verdict::Better)
        ]));
        assert!(keep(vec![
            row("mean", Verdict::Better),
            row("max", Verdict::Worse)
        ]));
        // The tool's own hiccups say nothing about the target.
        let mut own = row("p99", Verdict::Better);
        own.series = "self".into();
        assert!(!keep(vec![own.clone()]));
        own.verdict = Verdict::Worse;
        assert!(keep(vec![row("p99", Verdict::Better), own]));
    }

    #[test]
    fn probe_arguments_cauda_owns_are_refused() {
        assert!(check_probe(&["timer".into(), "-o".into(), "x".into()]).is_err());
        assert!(check_probe(&[]).is_err());
        check_probe(&["timer".into(), "--runtime".into(), "2s".into()]).unwrap();
    }
}
