//! A run file's `blame` section as it is read: checked against the run
//! it explains, and never left out without saying so.
//!
//! [`BlameReport::check`] holds the section to itself and the run's tags
//! and intervals; here it is also held to the series it explains (no slow
//! operation slower than its series' max, no more slow operations than
//! the series recorded), so an edit that makes the blame disagree with
//! the latencies beside it is refused rather than reported (nor may one
//! start after the run's last interval). A section
//! that does not parse is left out of the run like any probe section
//! (`model::run`'s `section`), but with a warning naming it, where in the
//! file and why: otherwise the run read as one measured without `--kernel
//! blame`, and `convert --to trace` told the user to measure again.

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::model::blame::BlameReport;
use crate::model::{RunFile, Warning};

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

/// Just the blame section's text.
#[derive(Deserialize)]
struct Section<'a> {
    #[serde(borrow, default)]
    blame: Option<&'a RawValue>,
}

/// A warning when `text` holds a blame section that `run` left out since
/// it does not parse: the section, where in the file and what is wrong.
/// Read again only when a run without one mentions `"blame"` at all.
pub fn left_out(source: &str, text: &str, run: &RunFile) -> Option<Warning> {
    if run.blame.is_some() || !text.contains("\"blame\"") {
        return None;
    }
    let raw = serde_json::from_str::<Section>(text).ok()?.blame?;
    let why = serde_json::from_str::<BlameReport>(raw.get()).err()?;
    // The error's place in the section, as a place in the file.
    let start = raw.get().as_ptr() as usize - text.as_ptr() as usize;
    let before = &text[..start];
    let line = before.matches('\n').count() + why.line();
    let column = match why.line() {
        1 => start - before.rfind('\n').map_or(0, |n| n + 1) + why.column(),
        _ => why.column(),
    };
    let what = why.to_string();
    let what = what.split(" at line ").next().unwrap_or(&what);
    Some(Warning {
        message: format!(
            "{source}:{line}:{column}: its blame section cannot be read ({what}) and is left \
             out: the run reads as one without --kernel blame"
        ),
        advice: "the file is damaged, was edited or comes from another version of cauda: \
                 re-export it from the original"
            .into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_text(blame: &str) -> String {
        let run = crate::formats::export::json::run_around(&[], Vec::new()).unwrap();
        let text = serde_json::to_string_pretty(&run).unwrap();
        let body = text.trim_end().strip_suffix('}').unwrap();
        format!("{body},\n  \"blame\": {blame}\n}}")
    }

    #[test]
    fn a_section_left_out_is_named_with_its_place() {
        let text = run_text(
            "{\"threshold\": {\"rule\": \"previous_p99\"}, \"series\": [],\n \"slowest\": [], \"kept\": -1}",
        );
        let run: RunFile = serde_json::from_str(&text).unwrap();
        assert!(run.blame.is_none());
        let w = left_out("x.json", &text, &run).expect("a warning");
        let line = text.lines().count() - 1; // the section's second line
        assert!(
            w.message.starts_with(&format!("x.json:{line}:")),
            "{}",
            w.message
        );
        assert!(
            w.message
                .contains("invalid value: integer `-1`, expected u64"),
            "{}",
            w.message
        );
        let at: usize = w.message.split(':').nth(2).unwrap().parse().unwrap();
        // serde places it at the value's last character.
        let place = text.lines().nth(line - 1).unwrap();
        assert_eq!(&place[at - 2..at], "-1", "{}", w.message);
        for not_one in ["[]", "\"yes\"", "{}"] {
            let text = run_text(not_one);
            let run: RunFile = serde_json::from_str(&text).unwrap();
            assert!(left_out("x.json", &text, &run).is_some(), "{not_one}");
        }
        let absent = run_text("null");
        let run: RunFile = serde_json::from_str(&absent).unwrap();
        assert!(left_out("x.json", &absent, &run).is_none());
    }
}
