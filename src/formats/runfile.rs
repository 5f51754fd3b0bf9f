//! Reading cauda run files (`cauda.run/1`).

use anyhow::Result;

use crate::error::input_error;
use crate::model::{RUN_SCHEMA, RunFile};

/// Parses a run file; `source` names it in errors.
pub fn parse(source: &str, text: &str) -> Result<RunFile> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        input_error(format!(
            "{source}:{}:{}: not valid JSON ({e}); expected a cauda run file",
            e.line(),
            e.column()
        ))
    })?;
    match value.get("schema").and_then(|s| s.as_str()) {
        Some(RUN_SCHEMA) => {}
        Some(other) => {
            return Err(input_error(format!(
                "{source}: schema '{other}' is not one this cauda reads (it reads {RUN_SCHEMA}); \
                 upgrade cauda or re-export the file"
            )));
        }
        None => {
            return Err(input_error(format!(
                "{source}: a JSON document without a \"schema\" field; expected a cauda run file \
                 ({RUN_SCHEMA})"
            )));
        }
    }
    let run: RunFile = serde_json::from_value(value)
        .map_err(|e| input_error(format!("{source}: not a valid {RUN_SCHEMA} run file: {e}")))?;
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
