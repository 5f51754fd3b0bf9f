//! One tag's series from every input merged into one: the checks that
//! they can be (same origin, same precision, same interval length), each
//! interval placed in its merged interval, and the merged intervals pooled
//! in parallel ([`super::pool`]).

use std::collections::BTreeMap;

use anyhow::Result;

use super::grid::Grid;
use super::pool::{Slot, merge_slots};
use crate::error::input_error;
use crate::model::Series;
use crate::record::LatencyHistogram;

/// The significant digits of a series' histograms (from its first non-empty interval).
fn precision(series: &Series) -> Result<Option<u8>, String> {
    for interval in &series.intervals {
        if interval.count > 0 {
            return Ok(Some(interval.decode()?.hdr().sigfig()));
        }
    }
    Ok(None)
}

/// The merged series of one tag, and its whole run as one histogram.
pub(super) fn merge_group(
    tag: &str,
    members: &[(&str, &Series)],
    grid: &Grid,
) -> Result<(Series, LatencyHistogram)> {
    let (first_source, first) = members[0];
    let mut spans: Vec<(u64, &str)> = Vec::new();
    let mut longest: Option<(u64, &str)> = None;
    let mut digits: Option<(u8, &str)> = None;
    for &(source, series) in members {
        if series.measured_from != first.measured_from {
            return Err(input_error(format!(
                "series '{tag}': {first_source} measures it from {} but {source} from {} \
                 (their \"measured_from\"); merging them would mix latency with service time — \
                 use --tag-by source",
                first.measured_from.name(),
                series.measured_from.name()
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
        // Whole intervals: each but the series' last (which may be cut short).
        let n = series.intervals.len();
        let whole = series.intervals.iter().take(n.saturating_sub(1));
        spans.extend(
            whole
                .filter(|i| i.length_ns > 0)
                .map(|i| (i.length_ns, source)),
        );
        if let Some(last) = series.intervals.last().filter(|i| i.length_ns > 0)
            && longest.is_none_or(|(l, _)| last.length_ns > l)
        {
            longest = Some((last.length_ns, source));
        }
    }
    // The interval length: the median whole interval's (loggers such as
    // jHiccup write 0.999 s, 1.007 s … for 1 s), or without one, the
    // longest. Within 2 % of it is the same length; partial last intervals
    // are shorter; any other difference is a mismatch.
    spans.sort_unstable();
    let (full, full_source) = spans
        .get(spans.len() / 2)
        .copied()
        .or(longest)
        .unwrap_or((0, first_source));
    let near = |length: u64| length.abs_diff(full).saturating_mul(50) <= full;
    for &(source, series) in members {
        let n = series.intervals.len();
        for (i, interval) in series.intervals.iter().enumerate() {
            let length = interval.length_ns;
            let partial = i + 1 == n && length < full;
            if !(near(length) || partial || length == 0) {
                return Err(input_error(format!(
                    "series '{tag}': {source} has {length} ns intervals but {full_source} has {full} ns; \
                     re-run with the same --interval-length, or use --tag-by source"
                )));
            }
        }
    }
    // Which members' intervals fall in each merged interval, in order.
    let mut by_start: BTreeMap<u64, Vec<(usize, usize)>> = BTreeMap::new();
    for (m, &(source, series)) in members.iter().enumerate() {
        for (i, interval) in series.intervals.iter().enumerate() {
            let slot = by_start
                .entry(grid.slot(source, interval.start_ns, full))
                .or_default();
            // Two intervals of one input in one merged interval would mix
            // two of its seconds into one, silently.
            if let Some(&(_, earlier)) = slot.iter().find(|&&(other, _)| other == m) {
                return Err(input_error(format!(
                    "series '{tag}': {source}'s intervals {earlier} and {i} fall in one merged \
                     interval (its interval starts are not {} apart); use --tag-by source to \
                     keep its series apart",
                    crate::units::format_ns(full as f64)
                )));
            }
            slot.push((m, i));
        }
    }
    let slots: Vec<Slot> = by_start.into_iter().collect();
    // Merged intervals are independent: the CPUs share them, in runs.
    let runs: Vec<&[Slot]> = slots.chunks(256).collect();
    let merged = crate::sys::map_parallel(&runs, |part| merge_slots(tag, members, part));
    let mut out = Series::new(tag.to_string(), first.measured_from);
    let mut total = LatencyHistogram::new();
    for part in merged {
        let (intervals, whole) = part?;
        out.intervals.extend(intervals);
        total.add(&whole);
    }
    Ok((out, total))
}
