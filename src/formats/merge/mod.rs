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

mod grid;
mod group;
mod identity;
mod name;
mod pool;
mod refuse;
mod tally;

use anyhow::Result;

use crate::analyze::quantile::Percentile;
use crate::analyze::summary::summarize;
use crate::formats::export::json::run_with_summary;
use crate::model::{Loaded, RunFile, Series, SeriesSummary, Warning};
use grid::Grid;
use group::merge_group;
use name::stem;
pub use refuse::refuse_double_counting;

/// How merged series are named.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TagBy {
    /// Keep each series' tag: same tags merge.
    Tag,
    /// Prefix each tag with its input's file name: nothing merges.
    Source,
}

/// The series of one merged tag, each with its input's source.
type Group<'a> = (String, Vec<(&'a str, &'a Series)>);

/// Merges inputs into one run file: the series grouped by tag, each group
/// merged interval by interval, and the run assembled around them.
pub fn merge(inputs: &[Loaded], tag_by: TagBy) -> Result<RunFile> {
    let grid = Grid::of(inputs);
    let percentiles = Percentile::defaults();
    let groups = group_by_tag(inputs, tag_by);
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
    run.parameters = parameters(inputs, tag_by, &grid);
    if let Some(earliest) = grid.earliest.and_then(|i| inputs[i].run.as_ref()) {
        run.start_unix_ns = earliest.start_unix_ns;
        run.start_time = earliest.start_time.clone();
    }
    run.warnings = grid.warnings(inputs, run.interval_ns);
    run.warnings.extend(blame_left_out(inputs));
    Ok(run)
}

/// A merged run keeps no blame section (`--kernel blame`): an input's
/// slow operations were judged against its own series and kept per its
/// own threads, which no longer exist apart. Said, not dropped silently.
fn blame_left_out(inputs: &[Loaded]) -> Option<Warning> {
    let with: Vec<&str> = inputs
        .iter()
        .filter(|i| i.run.as_ref().is_some_and(|r| r.blame.is_some()))
        .map(|i| i.source.as_str())
        .collect();
    (!with.is_empty()).then(|| Warning {
        message: format!(
            "{} measured with --kernel blame; the merged run keeps no blame section (each \
             run's slow operations were judged and kept on its own series and threads)",
            with.join(", ")
        ),
        advice: "for why each tail, analyze, report or convert --to trace the inputs themselves"
            .into(),
    })
}

/// The inputs' series by merged tag, tags in order of first appearance.
fn group_by_tag(inputs: &[Loaded], tag_by: TagBy) -> Vec<Group<'_>> {
    let mut groups: Vec<Group<'_>> = Vec::new();
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
    groups
}

/// What the merged run records of how it was made: its inputs (with their
/// labels and the ids of the runs each holds, [`identity`]), `--tag-by`,
/// and how intervals were aligned.
fn parameters(inputs: &[Loaded], tag_by: TagBy, grid: &Grid) -> serde_json::Value {
    serde_json::json!({
        "inputs": inputs.iter().map(|i| serde_json::json!({
            "source": i.source,
            "format": i.format,
            "labels": i.run.as_ref().map(|r| r.labels.clone()).unwrap_or_default(),
            "runs": identity::recorded_ids(i),
        })).collect::<Vec<_>>(),
        "tag_by": match tag_by { TagBy::Tag => "tag", TagBy::Source => "source" },
        "aligned_by": if grid.wall_clock { "wall-clock start" } else { "offset from each input's start" },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Format;
    use crate::model::IntervalRecord;
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
        let mut run = crate::formats::export::json::run_around(
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
