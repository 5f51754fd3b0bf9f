//! Reading cauda run files (`cauda.run/1`).

use anyhow::Result;

use crate::error::input_error;
use crate::model::{RUN_SCHEMA, RunFile, Series};

/// Just the schema, read first so a file of another schema gets that
/// answer rather than a list of missing fields.
#[derive(serde::Deserialize)]
struct Head {
    #[serde(default)]
    schema: Option<serde_json::Value>,
}

/// Parses a run file; `source` names it in errors, with line and column.
pub fn parse(source: &str, text: &str) -> Result<RunFile> {
    let located = |e: &serde_json::Error| format!("{source}:{}:{}", e.line(), e.column());
    let head: Head = serde_json::from_str(text).map_err(|e| {
        input_error(format!(
            "{}: not valid JSON ({e}); expected a cauda run file",
            located(&e)
        ))
    })?;
    match head.schema.as_ref().map(|s| s.as_str()) {
        Some(Some(RUN_SCHEMA)) => {}
        Some(other) => {
            return Err(input_error(format!(
                "{source}: schema '{}' is not one this cauda reads (it reads {RUN_SCHEMA}); \
                 upgrade cauda or re-export the file",
                other.unwrap_or("(not a string)")
            )));
        }
        None => {
            return Err(input_error(format!(
                "{source}: a JSON document without a \"schema\" field; expected a cauda run file \
                 ({RUN_SCHEMA})"
            )));
        }
    }
    let run: RunFile = serde_json::from_str(text).map_err(|e| {
        input_error(format!(
            "{}: not a valid {RUN_SCHEMA} run file: {e}",
            located(&e)
        ))
    })?;
    for (i, series) in run.series.iter().enumerate() {
        if series.unit != "ns" {
            return Err(input_error(format!(
                "{source}: series '{}' has unit '{}'; run files hold nanoseconds",
                series.tag, series.unit
            )));
        }
        if run.series[..i].iter().any(|s| s.tag == series.tag) {
            return Err(input_error(format!(
                "{source}: two series are tagged '{}'; a run file's tags are unique",
                series.tag
            )));
        }
        check_intervals(series).map_err(|why| {
            input_error(format!(
                "{source}: series '{}', {why}; the file is damaged or was edited — re-export it \
                 from the original",
                series.tag
            ))
        })?;
    }
    Ok(run)
}

/// Each interval's statistics agree with each other, and the intervals
/// follow each other in time without overlapping.
fn check_intervals(series: &Series) -> Result<(), String> {
    let mut end = 0u64;
    for (i, interval) in series.intervals.iter().enumerate() {
        interval
            .check_stats()
            .map_err(|why| format!("interval {i}: {why}"))?;
        if interval.start_ns < end {
            return Err(format!(
                "interval {i} starts at {} ns, before the previous one ends ({end} ns)",
                interval.start_ns
            ));
        }
        end = interval.start_ns.saturating_add(interval.length_ns);
    }
    Ok(())
}
