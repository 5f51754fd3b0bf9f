//! A cauda run file made of loaded inputs (`cauda convert --to json`, and
//! the run `cauda merge` writes): imported data gets probe `import` and
//! its sources in the parameters.

use anyhow::Result;

use super::inputs::{common_labels, gather, start_of};
use super::runfile::to_bytes;
use crate::analyze::summary::series_summaries;
use crate::error::input_error;
use crate::model::{HostSnapshot, Loaded};
use crate::model::{LoadMode, RUN_SCHEMA, RunFile, Series, Tool};

/// Builds a run file around imported series (a single run file is
/// returned as it is).
pub fn to_run(inputs: &[Loaded]) -> Result<RunFile> {
    if let [single] = inputs
        && let Some(run) = &single.run
    {
        let mut whole = run.clone();
        whole.series = single.series.clone();
        return Ok(whole);
    }
    run_around(inputs, gather(inputs))
}

/// A run file holding `series`, described as made from `inputs` (probe
/// `import`, their sources in the parameters, the first known start and host).
pub fn run_around(inputs: &[Loaded], series: Vec<Series>) -> Result<RunFile> {
    let summary = series_summaries(&series).map_err(input_error)?;
    Ok(run_with_summary(inputs, series, summary))
}

/// [`run_around`] with the series' summaries already made.
pub fn run_with_summary(
    inputs: &[Loaded],
    series: Vec<Series>,
    summary: Vec<crate::model::SeriesSummary>,
) -> RunFile {
    let end = series
        .iter()
        .flat_map(|s| s.intervals.iter().map(|i| i.start_ns + i.length_ns))
        .max()
        .unwrap_or(0);
    let (start_unix_ns, start_time) = start_of(inputs).unwrap_or((0, String::new()));
    let sources: Vec<serde_json::Value> = inputs
        .iter()
        .map(|i| serde_json::json!({"source": i.source, "format": i.format}))
        .collect();
    RunFile {
        schema: RUN_SCHEMA.into(),
        tool: Tool::this(),
        probe: "import".into(),
        load: inputs
            .iter()
            .find_map(|i| i.load_mode())
            .unwrap_or(LoadMode::Unknown),
        parameters: serde_json::json!({ "inputs": sources }),
        start_time,
        start_unix_ns,
        start_at_unix_ns: None,
        labels: common_labels(inputs),
        duration_ns: end,
        interval_ns: series
            .iter()
            .flat_map(|s| s.intervals.first())
            .map(|i| i.length_ns)
            .max()
            .unwrap_or(0)
            .max(1),
        interrupted: false,
        host: inputs
            .iter()
            .find_map(|i| i.run.as_ref().map(|r| r.host.clone()))
            .unwrap_or_else(HostSnapshot::default),
        faults: Default::default(),
        warnings: Vec::new(),
        series,
        summary,
        // One input's host counters stay aligned with its intervals; merged
        // inputs' would not.
        host_counters: match inputs {
            [only] => only.run.as_ref().and_then(|r| r.host_counters.clone()),
            _ => None,
        },
        disk: None,
        broker: None,
        kernel: None,
        // One input's offered load stays on its grid; merged inputs'
        // offered counts are not added up (yet): unknown.
        offered: match inputs {
            [only] => only.run.as_ref().and_then(|r| r.offered.clone()),
            _ => None,
        },
        blame: match inputs {
            [only] => only.run.as_ref().and_then(|r| r.blame.clone()),
            _ => None,
        },
        observers: Vec::new(),
        integrity: None,
    }
}

/// Writes a run file.
pub fn to_json(inputs: &[Loaded]) -> Result<Vec<u8>> {
    to_bytes(&to_run(inputs)?)
}
