//! `cauda merge`: exact merge of runs or logs — threads, hosts or
//! repetitions — into one run file.
//!
//! Series with the same tag are merged interval by interval (intervals are
//! matched by their offset from each input's start), so the result's
//! percentiles are those of all the values together, never an average of
//! percentiles. Inputs whose intervals have different lengths, whose
//! histograms keep different precision, or whose series are timed from
//! different origins are refused with the reason; `--tag-by source` keeps
//! each input's series apart instead.

use std::collections::BTreeMap;

use anyhow::Result;

use super::export::run_around;
use crate::error::input_error;
use crate::model::Loaded;
use crate::model::{IntervalRecord, RunFile, Series};
use crate::record::LatencyHistogram;

/// How merged series are named.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TagBy {
    /// Keep each series' tag: same tags merge.
    Tag,
    /// Prefix each tag with its input's file name: nothing merges.
    Source,
}

fn stem(source: &str) -> String {
    std::path::Path::new(source)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| source.to_string())
}

/// The significant digits of a series' histograms (from its first non-empty interval).
fn precision(series: &Series) -> Result<Option<u8>, String> {
    for interval in &series.intervals {
        if interval.count > 0 {
            return Ok(Some(interval.decode()?.hdr().sigfig()));
        }
    }
    Ok(None)
}

/// Merges inputs into one run file.
pub fn merge(inputs: &[Loaded], tag_by: TagBy) -> Result<RunFile> {
    let mut groups: Vec<(String, Vec<(&str, &Series)>)> = Vec::new();
    for input in inputs {
        for series in &input.series {
            let tag = match tag_by {
                TagBy::Tag => series.tag.clone(),
                TagBy::Source => format!("{}:{}", stem(&input.source), series.tag),
            };
            match groups.iter_mut().find(|(t, _)| *t == tag) {
                Some((_, members)) => members.push((&input.source, series)),
                None => groups.push((tag, vec![(&input.source, series)])),
            }
        }
    }
    let mut merged_series = Vec::with_capacity(groups.len());
    for (tag, members) in groups {
        merged_series.push(merge_group(&tag, &members)?);
    }
    let mut run = run_around(inputs, merged_series)?;
    run.probe = "merge".into();
    run.parameters = serde_json::json!({
        "inputs": inputs.iter().map(|i| serde_json::json!({"source": i.source, "format": i.format})).collect::<Vec<_>>(),
        "tag_by": match tag_by { TagBy::Tag => "tag", TagBy::Source => "source" },
    });
    Ok(run)
}

fn merge_group(tag: &str, members: &[(&str, &Series)]) -> Result<Series> {
    let (first_source, first) = members[0];
    let mut lengths: BTreeMap<u64, &str> = BTreeMap::new();
    let mut digits: Option<(u8, &str)> = None;
    for &(source, series) in members {
        if series.measured_from != first.measured_from {
            return Err(input_error(format!(
                "series '{tag}': {first_source} measures it from {:?} but {source} from {:?}; \
                 merging them would mix latency with service time — use --tag-by source",
                first.measured_from, series.measured_from
            )));
        }
        if let Some(p) = precision(series).map_err(|e| input_error(format!("{source}: {e}")))? {
            match digits {
                Some((d, other)) if d != p => {
                    return Err(input_error(format!(
                        "series '{tag}': {other} keeps {d} significant digits but {source} keeps {p}; \
                         the merge would silently lose precision — convert both to the same precision first"
                    )));
                }
                None => digits = Some((p, source)),
                _ => {}
            }
        }
        for interval in series.intervals.iter().filter(|i| i.length_ns > 0) {
            lengths.entry(interval.length_ns).or_insert(source);
        }
    }
    // Partial last intervals are shorter; any other difference is a mismatch.
    let full = lengths.keys().next_back().copied().unwrap_or(0);
    for &(source, series) in members {
        let n = series.intervals.len();
        for (i, interval) in series.intervals.iter().enumerate() {
            let last = i + 1 == n;
            if interval.length_ns != full
                && !(last && interval.length_ns < full)
                && interval.length_ns != 0
            {
                return Err(input_error(format!(
                    "series '{tag}': {source} has {} ns intervals but {} has {full} ns; re-run with the \
                     same --interval-length, or use --tag-by source",
                    interval.length_ns, lengths[&full]
                )));
            }
        }
    }
    let mut by_start: BTreeMap<u64, (u64, LatencyHistogram)> = BTreeMap::new();
    for &(source, series) in members {
        for (i, interval) in series.intervals.iter().enumerate() {
            let entry = by_start
                .entry(interval.start_ns)
                .or_insert_with(|| (interval.length_ns, LatencyHistogram::new()));
            entry.0 = entry.0.max(interval.length_ns);
            if interval.count > 0 {
                let hist = interval.decode().map_err(|e| {
                    input_error(format!("{source}: series '{tag}', interval {i}: {e}"))
                })?;
                entry.1.add(&hist);
            }
        }
    }
    let mut out = Series::new(tag.to_string(), first.measured_from);
    out.intervals = by_start
        .into_iter()
        .map(|(start, (length, hist))| IntervalRecord::from_histogram(start, length, &hist))
        .collect();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Format;
    use crate::model::MeasuredFrom;

    fn input(name: &str, values: &[&[u64]], length: u64) -> Loaded {
        let mut s = Series::new("read".into(), MeasuredFrom::IntendedStart);
        for (i, vs) in values.iter().enumerate() {
            let mut h = LatencyHistogram::new();
            vs.iter().for_each(|&v| h.record(v));
            s.intervals.push(IntervalRecord::from_histogram(
                i as u64 * length,
                length,
                &h,
            ));
        }
        Loaded {
            source: name.into(),
            format: Format::CaudaRun,
            series: vec![s],
            run: None,
            warnings: Vec::new(),
        }
    }

    #[test]
    fn merging_two_hosts_is_exact() {
        let a = input("a.json", &[&[1, 2, 3], &[10]], 1_000);
        let b = input("b.json", &[&[4], &[20, 30], &[7]], 1_000);
        let run = merge(&[a, b], TagBy::Tag).unwrap();
        assert_eq!(run.series.len(), 1);
        let counts: Vec<u64> = run.series[0].intervals.iter().map(|i| i.count).collect();
        assert_eq!(counts, vec![4, 3, 1]);
        let merged = run.series[0].merged().unwrap();
        assert_eq!(merged.stats().count, 8);
        assert_eq!(merged.stats().sum, 1 + 2 + 3 + 10 + 4 + 20 + 30 + 7);
        assert_eq!(run.summary[0].summary.max, 30);
    }

    #[test]
    fn different_interval_lengths_are_refused() {
        let a = input("a.json", &[&[1], &[2]], 1_000);
        let b = input("b.json", &[&[4], &[5]], 100);
        let err = merge(&[a, b], TagBy::Tag).unwrap_err().to_string();
        assert!(err.contains("--interval-length"), "{err}");
    }

    #[test]
    fn tag_by_source_keeps_inputs_apart() {
        let a = input("dir/a.json", &[&[1]], 1_000);
        let b = input("b.json", &[&[4]], 100);
        let run = merge(&[a, b], TagBy::Source).unwrap();
        let tags: Vec<&str> = run.series.iter().map(|s| s.tag.as_str()).collect();
        assert_eq!(tags, ["a.json:read", "b.json:read"]);
    }
}
