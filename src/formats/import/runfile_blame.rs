//! A run file's `blame` section as it is read: checked against the run
//! it explains, and never left out without saying so.
//!
//! [`BlameReport::check`] holds the section to itself and the run's tags
//! and intervals; here it is also held to the series it explains (no slow
//! operation slower than its series' max, no more slow operations than
//! the series recorded), so an edit that makes the blame disagree with
//! the latencies beside it is refused rather than reported (nor may one
//! start after the run's last interval). A section that does not parse at
//! all is `runfile_sections`'.

use crate::model::RunFile;
use crate::model::blame::BlameReport;

/// The blame section against the run: the first thing that does not
/// hold, named.
pub fn check(run: &RunFile) -> Result<(), String> {
    let Some(blame) = &run.blame else {
        return Ok(());
    };
    let tags: Vec<&str> = run.series.iter().map(|s| s.tag.as_str()).collect();
    let intervals = run.series.iter().map(|s| s.intervals.len()).max();
    blame.check(&tags, intervals.unwrap_or(0))?;
    against_series(blame, run)
}

/// Slow operations are operations of their series: no latency above the
/// series' max, no more of them than it counted.
fn against_series(blame: &BlameReport, run: &RunFile) -> Result<(), String> {
    let series = |tag: &str| run.series.iter().find(|s| s.tag == tag);
    let intervals = run
        .series
        .iter()
        .map(|s| s.intervals.len())
        .max()
        .unwrap_or(0);
    let end = run.interval_ns.saturating_mul(intervals as u64);
    for (i, op) in blame.slowest.iter().enumerate() {
        if op.start_ns > end {
            return Err(format!(
                "slowest[{i}]: starts at {} ns, after the run's last interval ends ({end} ns)",
                op.start_ns
            ));
        }
        let max = series(&op.series).map_or(0, |s| {
            s.intervals.iter().map(|iv| iv.max).max().unwrap_or(0)
        });
        if op.latency_ns > max {
            return Err(format!(
                "slowest[{i}]: latency {} ns, above the max of series '{}' ({max} ns)",
                op.latency_ns, op.series
            ));
        }
    }
    for (i, listed) in blame.series.iter().enumerate() {
        let Some(s) = series(&listed.tag) else {
            continue;
        };
        let count = s
            .intervals
            .iter()
            .fold(0u64, |a, iv| a.saturating_add(iv.count));
        let max = s.intervals.iter().map(|iv| iv.max).max().unwrap_or(0);
        let mut slow = 0u64;
        for (j, iv) in listed.intervals.iter().enumerate() {
            slow = slow.saturating_add(iv.slow);
            if iv.latency_ns > iv.slow.saturating_mul(max) {
                return Err(format!(
                    "series[{i}].intervals[{j}]: {} slow operations of {} ns in all, more than \
                     {} at the series' max ({max} ns)",
                    iv.slow, iv.latency_ns, iv.slow
                ));
            }
        }
        if slow > count {
            return Err(format!(
                "series[{i}]: {slow} slow operations, more than the {count} series '{}' recorded",
                listed.tag
            ));
        }
    }
    Ok(())
}
