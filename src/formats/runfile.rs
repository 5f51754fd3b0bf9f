//! Reading cauda run files (`cauda.run/1`).

use anyhow::Result;

use crate::error::input_error;
use crate::model::{RUN_SCHEMA, RunFile};

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
    for series in &run.series {
        if series.unit != "ns" {
            return Err(input_error(format!(
                "{source}: series '{}' has unit '{}'; run files hold nanoseconds",
                series.tag, series.unit
            )));
        }
    }
    Ok(run)
}
