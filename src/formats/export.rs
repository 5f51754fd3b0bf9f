//! Exporters: pure functions from loaded inputs to bytes. The caller owns
//! files (checks paths first, writes atomically).
//!
//! - `hlog`: an HdrHistogram interval log (format 1.3): the main series
//!   untagged, every other `Tag=NAME` (see `formats::hlog`), so Java's
//!   `HistogramLogProcessor` and HdrHistogram_py read it without a tag.
//! - `json`: a cauda run file (`cauda.run/1`); imported data gets probe
//!   `import` and its source in the parameters.
//! - `csv`: one row per series per interval (start, length, count, min,
//!   p50, p90, p99, p99.9, max, mean).
//! - `hgrm`: HdrHistogram's percentile distribution of each merged series,
//!   in the `outputPercentileDistribution` layout, after a `#[cauda labels:
//!   …]` comment when the inputs share `--label`s.

use std::fmt::Write;

use anyhow::Result;

use super::hlog;
use crate::analyze::Percentile;
use crate::analyze::summary::series_summaries;
use crate::error::input_error;
use crate::model::HostSnapshot;
use crate::model::Loaded;
use crate::model::{LoadMode, RUN_SCHEMA, RunFile, Series, Tool, Warning};
use crate::record::rank::values_at_ranks_in;
use crate::units::TimeUnit;

/// The output formats of `cauda convert`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// HdrHistogram interval log.
    Hlog,
    /// cauda run file.
    Json,
    /// Per-interval CSV.
    Csv,
    /// HdrHistogram percentile distribution.
    Hgrm,
    /// Two Parquet tables in the directory -o names: intervals.parquet (one
    /// row per series per interval) and buckets.parquet (the histograms).
    Parquet,
    /// OpenMessaging Benchmark's result JSON, from one `cauda broker` run.
    Omb,
}

/// Refuses inputs that hold only percentiles a tool printed: they have no
/// distribution to write or merge.
pub fn require_distributions(inputs: &[Loaded]) -> Result<()> {
    for input in inputs {
        if let Some(s) = input
            .series
            .iter()
            .find(|s| s.reported.is_some() && s.intervals.is_empty())
        {
            return Err(input_error(format!(
                "{}: series '{}' holds only the percentiles its tool printed, not a distribution; \
                 convert or merge needs one (for fio, use --output-format=json+ or a latency log)",
                input.source, s.tag
            )));
        }
    }
    Ok(())
}

/// For an exporter that can leave a series out (Parquet): a warning for
/// each series that holds only the percentiles its tool printed (fio json+'s
/// slat and lat beside its clat histogram). An input with no distribution
/// at all is refused, as [`require_distributions`] does.
pub fn left_out(inputs: &[Loaded]) -> Result<Vec<Warning>> {
    let only_printed = |s: &Series| s.reported.is_some() && s.intervals.is_empty();
    let mut warnings = Vec::new();
    for input in inputs {
        if input.series.iter().all(only_printed) {
            require_distributions(std::slice::from_ref(input))?;
        }
        warnings.extend(input.series.iter().filter(|s| only_printed(s)).map(|s| {
            Warning {
                message: format!(
                    "{}: series '{}' holds only the percentiles its tool printed; it is left out",
                    input.source, s.tag
                ),
                advice: "a histogram or a per-value log has the distribution (for fio: \
                     write_lat_log, or json+ for clat)"
                    .into(),
            }
        }));
    }
    Ok(warnings)
}

/// Series of several inputs, tags kept unless they collide, in which case
/// each is prefixed with its input's position (`2:read`).
pub fn gather(inputs: &[Loaded]) -> Vec<Series> {
    let mut out: Vec<Series> = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        for series in &input.series {
            let mut s = series.clone();
            if out.iter().any(|o| o.tag == s.tag) {
                s.tag = format!("{}:{}", i + 1, s.tag);
            }
            out.push(s);
        }
    }
    out
}

/// The start of the first input that knows its wall-clock start.
fn start_of(inputs: &[Loaded]) -> Option<(u128, String)> {
    inputs.iter().find_map(|i| {
        i.run
            .as_ref()
            .map(|r| (r.start_unix_ns, r.start_time.clone()))
    })
}

/// Writes an interval log of every series.
pub fn to_hlog(inputs: &[Loaded]) -> Vec<u8> {
    let series = gather(inputs);
    // The main series is written untagged, as a probe's streamed log does.
    let main = hlog::main_tag(series.iter().map(|s| s.tag.as_str()));
    let mut out = match start_of(inputs) {
        Some((ns, text)) => hlog::header(ns, &text, main),
        None => hlog::header_without_start(main),
    };
    out.push_str(&hlog::labels_comment(&common_labels(inputs)));
    // Interleave by time, as a live log would be.
    let mut lines: Vec<(u64, usize, String)> = Vec::new();
    for (k, s) in series.iter().enumerate() {
        let tag = (Some(s.tag.as_str()) != main).then_some(s.tag.as_str());
        for iv in &s.intervals {
            lines.push((iv.start_ns, k, hlog::interval_line(tag, iv)));
        }
    }
    lines.sort_by_key(|(start, k, _)| (*start, *k));
    for (_, _, line) in lines {
        out.push_str(&line);
    }
    out.into_bytes()
}

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
        observers: Vec::new(),
        integrity: None,
    }
}

/// The labels every input carries with the same value (an input without a
/// run file carries none).
fn common_labels(inputs: &[Loaded]) -> std::collections::BTreeMap<String, String> {
    let mut runs = inputs.iter().map(|i| i.run.as_ref());
    let Some(Some(first)) = runs.next() else {
        return Default::default();
    };
    let mut common = first.labels.clone();
    for run in runs {
        match run {
            Some(run) => common.retain(|k, v| run.labels.get(k) == Some(v)),
            None => common.clear(),
        }
    }
    common
}

/// Writes a run file.
pub fn to_json(inputs: &[Loaded]) -> Result<Vec<u8>> {
    super::runfile::to_bytes(&to_run(inputs)?)
}

/// A CSV field, quoted when it holds a comma, a quote or a line break.
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// The label keys any input carries (`--label`), in order.
pub fn label_keys(inputs: &[Loaded]) -> Vec<&str> {
    let keys: std::collections::BTreeSet<&str> = inputs
        .iter()
        .filter_map(|i| i.run.as_ref())
        .flat_map(|r| r.labels.keys().map(String::as_str))
        .collect();
    keys.into_iter().collect()
}

/// The column name of each label key beside an exporter's `fixed`
/// columns: the bare key, or `label_KEY` when a fixed column has that name
/// (prefixed again in the unlikely case that is taken too). CSV and
/// Parquet name label columns by this one rule.
pub fn label_columns(keys: &[&str], fixed: &[&str]) -> Vec<String> {
    let mut names: Vec<String> = Vec::with_capacity(keys.len());
    for key in keys {
        let mut name = key.to_string();
        while fixed.contains(&name.as_str())
            || names.contains(&name)
            || (name != *key && keys.contains(&name.as_str()))
        {
            name.insert_str(0, "label_");
        }
        names.push(name);
    }
    names
}

/// Writes one CSV row per series per interval, with a column per label.
pub fn to_csv(inputs: &[Loaded]) -> Result<Vec<u8>> {
    const COLUMNS: &str =
        "series,start_s,length_s,count,min_ns,p50_ns,p90_ns,p99_ns,p99.9_ns,max_ns,mean_ns";
    // One more column per label key any input carries (`--label`), after
    // the fixed ones.
    let keys = label_keys(inputs);
    let fixed: Vec<&str> = COLUMNS.split(',').collect();
    let mut out = String::from(COLUMNS);
    for name in label_columns(&keys, &fixed) {
        let _ = write!(out, ",{}", csv_field(&name));
    }
    out.push('\n');
    // The label cells of each series, in `gather`'s order.
    let label_cells: Vec<String> = inputs
        .iter()
        .flat_map(|input| {
            let labels = input.run.as_ref().map(|r| &r.labels);
            let cells: String = keys
                .iter()
                .map(|k| {
                    format!(
                        ",{}",
                        csv_field(labels.and_then(|l| l.get(*k)).map_or("", |v| v))
                    )
                })
                .collect();
            std::iter::repeat_n(cells, input.series.len())
        })
        .collect();
    let ps = Percentile::parse_list("50,90,99,99.9").map_err(input_error)?;
    for (s, labels) in gather(inputs).into_iter().zip(label_cells) {
        for (i, iv) in s.intervals.iter().enumerate() {
            let entries = iv
                .entries()
                .map_err(|e| input_error(format!("series '{}', interval {i}: {e}", s.tag)))?;
            let stats = iv.stats();
            let ranks: Vec<u64> = ps.iter().map(|p| p.rank(stats.count)).collect();
            let v = values_at_ranks_in(entries.iter().copied(), &stats, &ranks);
            let tag = csv_field(&s.tag);
            let _ = writeln!(
                out,
                "{tag},{:.3},{:.3},{},{},{},{},{},{},{},{:.1}{labels}",
                iv.start_ns as f64 / 1e9,
                iv.length_ns as f64 / 1e9,
                stats.count,
                stats.min,
                v[0],
                v[1],
                v[2],
                v[3],
                stats.max,
                stats.mean()
            );
        }
    }
    Ok(out.into_bytes())
}

/// Writes the percentile distribution of each series, values in `unit`.
pub fn to_hgrm(inputs: &[Loaded], unit: TimeUnit) -> Result<Vec<u8>> {
    let scale = unit.nanos() as f64;
    // The labels the inputs share, as in an interval log (readers skip it).
    let mut out = hlog::labels_comment(&common_labels(inputs));
    for s in gather(inputs) {
        let merged = s.merged().map_err(input_error)?;
        let hdr = merged.hdr();
        let _ = writeln!(out, "#[Tag: {}, unit: {}]", s.tag, unit.symbol());
        let _ = writeln!(
            out,
            "{:>12} {:>14} {:>10} {:>14}\n",
            "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
        );
        let mut total = 0u64;
        for v in hdr.iter_quantiles(5) {
            total += v.count_since_last_iteration();
            let q = v.quantile_iterated_to();
            let value = hdr
                .highest_equivalent(v.value_iterated_to())
                .min(merged.stats().max);
            if q < 1.0 {
                let _ = writeln!(
                    out,
                    "{:>12.3} {:>2.12} {:>10} {:>14.2}",
                    value as f64 / scale,
                    q,
                    total,
                    1.0 / (1.0 - q)
                );
            } else {
                let _ = writeln!(
                    out,
                    "{:>12.3} {:>2.12} {:>10}",
                    value as f64 / scale,
                    q,
                    hdr.len()
                );
            }
        }
        let stats = merged.stats();
        let _ = writeln!(
            out,
            "#[Mean    = {:>12.3}, StdDeviation   = {:>12.3}]",
            stats.mean() / scale,
            hdr.stdev() / scale
        );
        let _ = writeln!(
            out,
            "#[Max     = {:>12.3}, Total count    = {:>12}]",
            stats.max as f64 / scale,
            stats.count
        );
        let _ = writeln!(
            out,
            "#[Buckets = {:>12}, SubBuckets     = {:>12}]",
            hdr.buckets(),
            // HdrHistogram's sub-bucket count: 2·10^digits rounded up to a power of two.
            (2 * 10u64.pow(u32::from(hdr.sigfig()))).next_power_of_two()
        );
    }
    Ok(out.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_columns_keep_clear_of_fixed_ones_and_each_other() {
        let fixed = ["series", "count"];
        assert_eq!(
            label_columns(&["count", "host", "label_count"], &fixed),
            ["label_label_count", "host", "label_count"]
        );
        assert_eq!(label_columns(&["zone"], &fixed), ["zone"]);
    }
}
