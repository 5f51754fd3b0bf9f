//! `cauda merge`: exact merge of runs or logs — threads, hosts or
//! repetitions — into one run file.
//!
//! Series with the same tag are merged interval by interval, so the
//! result's percentiles are those of all the values together, never an
//! average of percentiles. Intervals are matched by **wall-clock** time
//! when every input is a run file (it knows its start): an interval goes
//! to the interval of the earliest input nearest its own start, and runs
//! whose starts are not a whole number of intervals apart are named in a
//! warning with how far off the grid they were (`--start-at` aligns runs
//! exactly). Inputs without a wall-clock start are matched by offset from
//! their own start, and the run says so. Inputs whose intervals have different lengths, whose
//! histograms keep different precision, or whose series are timed from
//! different origins are refused with the reason; `--tag-by source` keeps
//! each input's series apart instead.

use std::collections::BTreeMap;

use anyhow::Result;

use super::export::run_with_summary;
use crate::analyze::quantile::Percentile;
use crate::analyze::summary::summarize;
use crate::error::input_error;
use crate::model::Loaded;
use crate::model::encoding::{Effort, encode_buckets};
use crate::model::{IntervalRecord, RunFile, Series, SeriesSummary, Warning};
use crate::record::{ExactStats, LatencyHistogram};

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

/// Refuses a merge that would count values twice: a file given twice,
/// the output among the inputs (a second `merge runs/*.json -o
/// runs/fleet.json` would take in the first one's result), or a merged
/// input that already holds another input. Files are compared by device
/// and inode (`replaced`: those of the file the output replaces); a
/// merge's inputs by the paths it recorded, from here.
pub fn refuse_double_counting(
    files: &[std::path::PathBuf],
    replaced: Option<(u64, u64)>,
    inputs: &[Loaded],
) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let id = |p: &std::path::Path| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
    let mut seen: Vec<((u64, u64), &std::path::Path)> = Vec::new();
    for file in files {
        let Some(key) = id(file) else { continue };
        if let Some((_, first)) = seen.iter().find(|(k, _)| *k == key) {
            return Err(input_error(format!(
                "{} and {} are the same file: its values would count twice; give each run once",
                first.display(),
                file.display()
            )));
        }
        if replaced == Some(key) {
            return Err(input_error(format!(
                "-o {0}: is also an input, so the merge would count it and then replace it; \
                 write the merge elsewhere, or leave {0} out of the inputs",
                file.display()
            )));
        }
        seen.push((key, file));
    }
    for (input, file) in inputs.iter().zip(files) {
        let Some(run) = input.run.as_ref().filter(|r| r.probe == "merge") else {
            continue;
        };
        let held = run.parameters["inputs"].as_array().into_iter().flatten();
        for source in held.filter_map(|i| i["source"].as_str()) {
            let Some(key) = id(std::path::Path::new(source)) else {
                continue;
            };
            if let Some((_, other)) = seen.iter().find(|(k, p)| *k == key && *p != file) {
                return Err(input_error(format!(
                    "{}: a merge that already holds {}, which is given too: its values would \
                     count twice; leave one of them out",
                    file.display(),
                    other.display()
                )));
            }
        }
    }
    Ok(())
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
    let grid = Grid::of(inputs);
    let percentiles = Percentile::defaults();
    let mut merged_series = Vec::with_capacity(groups.len());
    let mut summary = Vec::with_capacity(groups.len());
    for (tag, members) in groups {
        let (series, total) = merge_group(&tag, &members, &grid)?;
        summary.push(SeriesSummary {
            tag,
            summary: summarize(&total, &percentiles),
        });
        merged_series.push(series);
    }
    let mut run = run_with_summary(inputs, merged_series, summary);
    run.probe = "merge".into();
    run.parameters = serde_json::json!({
        "inputs": inputs.iter().map(|i| serde_json::json!({
            "source": i.source,
            "format": i.format,
            "labels": i.run.as_ref().map(|r| r.labels.clone()).unwrap_or_default(),
        })).collect::<Vec<_>>(),
        "tag_by": match tag_by { TagBy::Tag => "tag", TagBy::Source => "source" },
        "aligned_by": if grid.wall_clock { "wall-clock start" } else { "offset from each input's start" },
    });
    if let Some(earliest) = grid.earliest.and_then(|i| inputs[i].run.as_ref()) {
        run.start_unix_ns = earliest.start_unix_ns;
        run.start_time = earliest.start_time.clone();
    }
    run.warnings = grid.warnings(inputs, run.interval_ns);
    Ok(run)
}

/// Where each input's intervals sit on the merged run's time line.
struct Grid {
    /// Per input (by source), ns after the earliest start.
    offsets: BTreeMap<String, u64>,
    /// True when every input knew its wall-clock start.
    wall_clock: bool,
    /// The input that started first.
    earliest: Option<usize>,
}

impl Grid {
    fn of(inputs: &[Loaded]) -> Grid {
        let starts: Option<Vec<u128>> = inputs
            .iter()
            .map(|i| i.run.as_ref().map(|r| r.start_unix_ns).filter(|&s| s > 0))
            .collect();
        let Some(starts) = starts.filter(|s| !s.is_empty()) else {
            return Grid {
                offsets: BTreeMap::new(),
                wall_clock: false,
                earliest: None,
            };
        };
        let min = starts.iter().copied().min().unwrap_or(0);
        Grid {
            offsets: inputs
                .iter()
                .zip(&starts)
                .map(|(i, &s)| (i.source.clone(), (s - min).min(u64::MAX as u128) as u64))
                .collect(),
            wall_clock: true,
            earliest: starts.iter().position(|&s| s == min),
        }
    }

    /// The merged interval (its start) an interval of `source` starting
    /// at `start_ns` of its own run belongs to: the nearest on the grid.
    fn slot(&self, source: &str, start_ns: u64, length_ns: u64) -> u64 {
        let at = self
            .offsets
            .get(source)
            .copied()
            .unwrap_or(0)
            .saturating_add(start_ns);
        if length_ns == 0 {
            return at;
        }
        at.saturating_add(length_ns / 2) / length_ns * length_ns
    }

    /// What the merge should say: inputs off the grid by more than 1 % of
    /// an interval, clocks not known to be synchronised.
    fn warnings(&self, inputs: &[Loaded], interval_ns: u64) -> Vec<Warning> {
        let mut out = Vec::new();
        let fmt = crate::units::format_ns;
        if self.wall_clock && interval_ns > 0 {
            let off: Vec<String> = self
                .offsets
                .iter()
                .filter_map(|(source, &offset)| {
                    let r = offset % interval_ns;
                    let miss = r.min(interval_ns - r);
                    (miss * 100 > interval_ns).then(|| {
                        format!(
                            "{} started {} after the first ({} off the interval grid)",
                            stem(source),
                            fmt(offset as f64),
                            fmt(miss as f64)
                        )
                    })
                })
                .collect();
            if !off.is_empty() {
                out.push(Warning {
                    message: format!(
                        "intervals do not line up: {}; each of their intervals was merged into the \
                         nearest interval of the first, so values up to that far apart share an interval",
                        off.join("; ")
                    ),
                    advice: "start the runs with --start-at TIME (the same on every host) so \
                             their intervals are the same wall-clock seconds"
                        .into(),
                });
            }
            // One host's runs share one clock, however far off it is.
            let hosts: std::collections::BTreeSet<_> = inputs
                .iter()
                .filter_map(|i| i.run.as_ref()?.host.hostname.as_deref())
                .collect();
            for input in inputs.iter().filter(|_| hosts.len() > 1) {
                if let Some(sync) = input.run.as_ref().and_then(|r| r.host.clock_sync.as_ref())
                    && !sync.synchronized
                {
                    out.push(Warning {
                        message: format!(
                            "{}: the host's clock was not synchronised (maximum error {}): its \
                             intervals are placed by a wall clock that may be off by that much",
                            stem(&input.source),
                            fmt(sync.maximum_error_us as f64 * 1e3)
                        ),
                        advice: "run chrony, ntpd or ptp4l on every host of a coordinated run"
                            .into(),
                    });
                }
            }
        } else if !self.wall_clock && inputs.len() > 1 {
            out.push(Warning {
                message: "an input has no wall-clock start (not a cauda run file): intervals \
                          were matched by their offset from each input's own start"
                    .into(),
                advice: "merge run files to align by wall clock".into(),
            });
        }
        out
    }
}

/// The merged series of one tag, and its whole run as one histogram.
fn merge_group(
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

/// A merged interval's start and its members' intervals (member, index).
type Slot = (u64, Vec<(usize, usize)>);

/// Merges the members' intervals of each slot, each bucket an addition
/// (a one-hour run of ten hosts has some 14 million), and encodes each
/// merged interval's histogram; also returns the slots all together as one
/// histogram, for the series' summary.
fn merge_slots(
    tag: &str,
    members: &[(&str, &Series)],
    slots: &[Slot],
) -> Result<(Vec<IntervalRecord>, LatencyHistogram)> {
    use crate::record::histogram::bucket_top;
    let (mut slot, mut all) = (Tally::new(), Tally::new());
    let mut all_stats = ExactStats::default();
    let mut pairs: Vec<(usize, u64)> = Vec::new();
    let mut out = Vec::with_capacity(slots.len());
    for (start, parts) in slots {
        let mut length_ns = 0;
        let mut stats = ExactStats::default();
        for &(m, i) in parts {
            let (source, series) = members[m];
            let interval = &series.intervals[i];
            length_ns = length_ns.max(interval.length_ns);
            if interval.count == 0 {
                continue;
            }
            interval
                .bucket_indexes_into(&mut pairs)
                .map_err(|e| input_error(format!("{source}: series '{tag}', interval {i}: {e}")))?;
            stats.merge(&interval.stats());
            for &(at, count) in pairs.iter().filter(|&&(_, count)| count > 0) {
                slot.add(at, count);
            }
        }
        // The user waits for a merge: its histograms are deflated fast.
        let summed = slot.drain().inspect(|&(at, count)| all.add(at, count));
        let text = encode_buckets(summed, Effort::Fast);
        all_stats.merge(&stats);
        out.push(IntervalRecord::from_encoded(
            *start, length_ns, &stats, text,
        ));
    }
    let buckets: Vec<_> = all
        .drain()
        .map(|(at, count)| (bucket_top(at), count))
        .collect();
    let mut whole = LatencyHistogram::new();
    whole.add_sparse(&buckets, &all_stats);
    Ok((out, whole))
}

/// Counts added up by bucket index in a dense array, a bit per bucket
/// marking the occupied ones, read back in order without a sort.
struct Tally {
    counts: Vec<u64>,
    occupied: Vec<u64>,
}

impl Tally {
    fn new() -> Tally {
        let buckets = crate::record::histogram::bucket_index(u64::MAX) + 1;
        Tally {
            counts: vec![0; buckets],
            occupied: vec![0; buckets.div_ceil(64)],
        }
    }

    fn add(&mut self, at: usize, count: u64) {
        self.occupied[at / 64] |= 1 << (at % 64);
        self.counts[at] = self.counts[at].saturating_add(count);
    }

    /// The occupied (index, count) pairs in increasing index, each taken
    /// out: the tally is empty once they have all been read (a word's
    /// marks go as it is reached, so stop early and its counts stay).
    fn drain(&mut self) -> impl Iterator<Item = (usize, u64)> + '_ {
        let counts = &mut self.counts;
        self.occupied
            .iter_mut()
            .enumerate()
            .flat_map(|(word_at, word)| {
                let mut bits = std::mem::take(word);
                std::iter::from_fn(move || {
                    let at = word_at * 64 + bits.trailing_zeros() as usize;
                    bits &= bits.wrapping_sub(1);
                    (at < (word_at + 1) * 64).then_some(at)
                })
            })
            .map(|at| (at, std::mem::take(&mut counts[at])))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Format;
    use crate::model::MeasuredFrom;
    use crate::record::LatencyHistogram;

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

    /// The summary made from the merged runs of intervals is the one made
    /// again from the merged series (more intervals than one run holds).
    #[test]
    fn the_summary_is_that_of_the_merged_intervals() {
        let mut rng = crate::record::schedule::SplitMix64::new(7);
        let mut values = |n: usize| -> Vec<Vec<u64>> {
            (0..n)
                .map(|i| (0..i % 9).map(|_| 1 + rng.next_u64() % 5_000_000).collect())
                .collect()
        };
        let (a, b) = (values(700), values(650));
        fn slices(v: &[Vec<u64>]) -> Vec<&[u64]> {
            v.iter().map(|x| x.as_slice()).collect()
        }
        let inputs = [
            input("a.json", &slices(&a), 1_000),
            input("b.json", &slices(&b), 1_000),
        ];
        let run = merge(&inputs, TagBy::Tag).unwrap();
        assert_eq!(run.series[0].intervals.len(), 700);
        let again = crate::analyze::summary::series_summaries(&run.series).unwrap();
        assert_eq!(run.summary, again);
        let all = a.iter().chain(&b).flatten();
        assert_eq!(run.summary[0].summary.max, *all.clone().max().unwrap());
        assert_eq!(run.summary[0].summary.count, all.count() as u64);
    }

    #[test]
    fn a_tally_gives_its_buckets_in_order_and_is_empty_after() {
        let mut tally = Tally::new();
        let last = tally.counts.len() - 1;
        for _ in 0..2 {
            for (at, count) in [(64, 1), (0, 2), (last, 3), (63, 4), (64, 5), (1000, 6)] {
                tally.add(at, count);
            }
            let pairs: Vec<_> = tally.drain().collect();
            assert_eq!(pairs, [(0, 2), (63, 4), (64, 6), (1000, 6), (last, 3)]);
            assert!(tally.counts.iter().chain(&tally.occupied).all(|&n| n == 0));
        }
    }

    #[test]
    fn two_intervals_of_one_input_never_share_a_merged_interval() {
        // Starts 0 and 0.4 of an interval apart: both round to the first.
        let mut a = input("a.json", &[&[1], &[2]], 1_000);
        a.series[0].intervals[1].start_ns = 400;
        let b = input("b.json", &[&[3], &[4]], 1_000);
        let err = merge(&[a, b], TagBy::Tag).unwrap_err().to_string();
        assert!(err.contains("a.json's intervals 0 and 1"), "{err}");
        assert!(err.contains("--tag-by source"), "{err}");
    }

    #[test]
    fn interval_lengths_that_jitter_a_little_still_merge() {
        // A logger's 1 s intervals as written: 1.007, 0.999, 1.001 s.
        let jittery = || {
            let mut a = input("a.log", &[&[1], &[2], &[3]], 1_000_000);
            for (interval, (start, length)) in a.series[0].intervals.iter_mut().zip([
                (0, 1_007_000),
                (1_007_000, 999_000),
                (2_006_000, 1_001_000),
            ]) {
                interval.start_ns = start;
                interval.length_ns = length;
            }
            a
        };
        let b = input("b.log", &[&[4], &[5], &[6]], 1_000_000);
        let run = merge(&[jittery(), b], TagBy::Tag).unwrap();
        let counts: Vec<u64> = run.series[0].intervals.iter().map(|i| i.count).collect();
        assert_eq!(counts, [2, 2, 2]);
        // Twice as long is another interval length, refused.
        let c = input("c.log", &[&[7], &[8], &[9]], 2_000_000);
        let err = merge(&[jittery(), c], TagBy::Tag).unwrap_err().to_string();
        assert!(err.contains("ns intervals but"), "{err}");
    }

    /// `input` as a run file that started at `start_unix_ns` on `host`.
    fn run_input(name: &str, values: &[&[u64]], start_unix_ns: u128, host: &str) -> Loaded {
        let mut loaded = input(name, values, 1_000_000_000);
        let mut run = crate::formats::export::run_around(
            std::slice::from_ref(&loaded),
            loaded.series.clone(),
        )
        .unwrap();
        run.start_unix_ns = start_unix_ns;
        run.host.hostname = Some(host.into());
        run.labels.insert("host".into(), host.into());
        run.labels.insert("zone".into(), "z1".into());
        loaded.run = Some(run);
        loaded
    }

    fn counts(run: &RunFile) -> Vec<(u64, u64)> {
        let intervals = &run.series[0].intervals;
        intervals.iter().map(|i| (i.start_ns, i.count)).collect()
    }

    #[test]
    fn runs_are_aligned_by_wall_clock_and_keep_their_common_labels() {
        const T: u128 = 1_795_000_000_000_000_000;
        // b started exactly one interval after a: its first second is a's second.
        let a = run_input("a.json", &[&[1], &[2, 2], &[3]], T, "a");
        let b = run_input("b.json", &[&[10, 10], &[20]], T + 1_000_000_000, "b");
        let run = merge(&[b, a], TagBy::Tag).unwrap();
        assert_eq!(
            counts(&run),
            [(0, 1), (1_000_000_000, 4), (2_000_000_000, 2)]
        );
        assert_eq!(run.start_unix_ns, T, "the merged run starts with the first");
        assert_eq!(run.parameters["aligned_by"], "wall-clock start");
        assert!(run.warnings.is_empty(), "{:?}", run.warnings);
        let labels: Vec<_> = run.labels.iter().collect();
        assert_eq!(labels, [(&"zone".to_string(), &"z1".to_string())]);
        assert_eq!(run.parameters["inputs"][0]["labels"]["host"], "b");
    }

    #[test]
    fn runs_off_the_grid_are_merged_to_the_nearest_interval_with_a_warning() {
        const T: u128 = 1_795_000_000_000_000_000;
        let a = run_input("a.json", &[&[1], &[2]], T, "a");
        // 1.4 s later: its intervals are 400 ms off a's; each goes to the nearest.
        let b = run_input("b.json", &[&[10], &[20]], T + 1_400_000_000, "a");
        let run = merge(&[a, b], TagBy::Tag).unwrap();
        assert_eq!(
            counts(&run),
            [(0, 1), (1_000_000_000, 2), (2_000_000_000, 1)]
        );
        let [warning] = run.warnings.as_slice() else {
            panic!("one warning: {:?}", run.warnings);
        };
        assert!(
            warning.message.contains("b.json started 1.400 s after"),
            "{}",
            warning.message
        );
        assert!(
            warning.message.contains("400.0 ms off"),
            "{}",
            warning.message
        );
        assert!(warning.advice.contains("--start-at"));
    }

    #[test]
    fn inputs_without_a_start_are_matched_by_offset_and_the_run_says_so() {
        let a = input("a.json", &[&[1], &[2]], 1_000);
        let b = input("b.hlog", &[&[4]], 1_000);
        let run = merge(&[a, b], TagBy::Tag).unwrap();
        assert_eq!(
            run.parameters["aligned_by"],
            "offset from each input's start"
        );
        assert!(run.warnings[0].message.contains("no wall-clock start"));
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
