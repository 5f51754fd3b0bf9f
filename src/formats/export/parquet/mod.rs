//! `cauda convert --to parquet -o DIR`: two Parquet tables for notebooks and
//! SQL (pandas, polars, DuckDB, ClickHouse), written by cauda's own
//! Parquet writer (`columns.rs`, `chunk.rs`, `encode.rs`, `file.rs`,
//! `thrift.rs`; no Arrow, no Parquet crate). `DIR/intervals.parquet` has one
//! row per input × series × interval; `DIR/buckets.parquet` the sparse
//! histogram behind it, one row per occupied bucket of each interval, so
//! any percentile of any grouping (a host, a zone, an hour, a whole fleet)
//! is exact from it. Every time is an integer number of nanoseconds; each
//! file's metadata says `cauda.schema` = [`MARK`] and which table it is.
//!
//! `intervals`: `run` (the input's path as given), `probe` (null for other
//! tools' files), `series` (the tag as the input has it: `run` tells inputs
//! apart), one text column per `--label` key (named as in the CSV: the
//! key, `label_KEY` beside a fixed column of that name; null where an input
//! has no such label), `interval` (its index in the series), `start_ns`
//! (from the run's start), `start_time` (UTC timestamp, ns; null when the
//! input does not know its wall-clock start: run files do), `length_ns`,
//! `count`, `min_ns`, `max_ns`, `sum_ns`, `mean_ns` (double), `p50_ns`,
//! `p90_ns`, `p99_ns`, `p99_9_ns`, `p99_99_ns` (as `cauda analyze`
//! computes an interval's percentiles) and `stall` (the interval is part of
//! a stall `cauda analyze` reports). An empty interval has null min, max,
//! mean and percentiles. A start, max or sum past int64 (2^63 ns, 292
//! years) is refused rather than rounded. A series holding only the
//! percentiles its tool printed (fio json+'s slat) has no rows.
//!
//! `buckets`: `run`, `series`, the label columns, `interval`, `start_ns`,
//! `value_ns` and `count`, in increasing `value_ns` within each interval.
//! `value_ns` is the top of the bucket in cauda's histogram shape (three
//! significant digits, 1 ns to 1 h), the value the rank rule
//! (`crate::record::rank`) reports for it. A histogram of a finer shape (an
//! `.hlog` at 4 or 5 digits) is counted into cauda's buckets, as `analyze`
//! and `merge` do for a whole series; an interval's own percentiles
//! (`p99_ns`, like `analyze --timeline`) keep its finer buckets, so they
//! may lie up to 0.1 % below what its rows in `buckets` give.
//!
//! The exact p-th percentile of any set of rows, as `cauda analyze` prints
//! it: n = Σ count, rank r = ⌈p/100 · n⌉ (at least 1); r = 1 is the exact
//! minimum (`min(min_ns)` over the same intervals), r = n the exact
//! maximum (`max(max_ns)`); any other rank is the `value_ns` at which the
//! running Σ count, in increasing `value_ns`, first reaches r, capped at
//! that maximum (the top bucket's top may lie above it).

mod chunk;
mod columns;
mod encode;
mod file;
mod thrift;

use anyhow::Result;

pub use columns::MARK;
use columns::{Column, Dense, Field, Text, text, write_table};
use file::Logical;

use super::labels::{label_columns, label_keys};
use crate::analyze::Percentile;
use crate::analyze::stalls::{IntervalPoint, stalled};
use crate::error::input_error;
use crate::model::{Loaded, Series};
use crate::record::ExactStats;
use crate::record::histogram::{bucket_top, own_buckets};
use crate::record::rank::values_at_ranks_in;

/// The files `-o DIR` gets.
pub const FILES: [&str; 2] = ["intervals.parquet", "buckets.parquet"];

/// The percentiles of the `intervals` table, and their columns.
const PERCENTILES: [(&str, &str); 5] = [
    ("50", "p50_ns"),
    ("90", "p90_ns"),
    ("99", "p99_ns"),
    ("99.9", "p99_9_ns"),
    ("99.99", "p99_99_ns"),
];

/// Every fixed column of either table: label columns keep clear of them.
const FIXED: &str = "run probe series interval start_ns start_time length_ns count min_ns max_ns \
                     sum_ns mean_ns p50_ns p90_ns p99_ns p99_9_ns p99_99_ns stall value_ns";

/// The two tables, as file contents.
pub struct Tables {
    /// `intervals.parquet`.
    pub intervals: Vec<u8>,
    /// `buckets.parquet`.
    pub buckets: Vec<u8>,
    /// Rows of `intervals`.
    pub interval_rows: usize,
    /// Rows of `buckets`.
    pub bucket_rows: usize,
}

/// The columns both tables begin with.
struct Keys {
    run: Column<Text>,
    series: Column<Text>,
    labels: Vec<Column<Text>>,
    interval: Column<i64>,
    start_ns: Column<i64>,
}

impl Keys {
    fn new(labels: &[String]) -> Self {
        Keys {
            run: text("run", false),
            series: text("series", false),
            labels: labels.iter().map(|n| text(n, true)).collect(),
            interval: Column::new("interval"),
            start_ns: Column::new("start_ns"),
        }
    }

    /// Adds `rows` rows of one interval.
    fn push(&mut self, source: &Source, tag: &Text, [interval, start]: [i64; 2], rows: usize) {
        if rows == 0 {
            return;
        }
        self.run.push(Some(source.run.clone()), rows);
        self.series.push(Some(tag.clone()), rows);
        for (column, label) in self.labels.iter_mut().zip(&source.labels) {
            column.push(label.clone(), rows);
        }
        self.interval.push(Some(interval), rows);
        self.start_ns.push(Some(start), rows);
    }

    fn rows(&self) -> usize {
        self.run.rows()
    }
}

/// The `intervals` table as it fills (`keys.run`, `probe`, the rest of
/// `keys`, then the figures).
struct Intervals {
    keys: Keys,
    probe: Column<Text>,
    start_time: Column<i64>,
    /// `length_ns`, `count`, `min_ns`, `max_ns`, `sum_ns`.
    ints: [Column<i64>; 5],
    mean: Column<f64>,
    percentiles: [Column<i64>; 5],
    stall: Column<bool>,
}

impl Intervals {
    fn fields(&self) -> Vec<&dyn Field> {
        let k = &self.keys;
        let mut fields: Vec<&dyn Field> = vec![&k.run, &self.probe, &k.series];
        fields.extend(k.labels.iter().map(|c| c as &dyn Field));
        fields.extend([&k.interval as &dyn Field, &k.start_ns, &self.start_time]);
        fields.extend(self.ints.iter().map(|c| c as &dyn Field));
        fields.push(&self.mean);
        fields.extend(self.percentiles.iter().map(|c| c as &dyn Field));
        fields.push(&self.stall);
        fields
    }
}

/// The `buckets` table as it fills.
struct Buckets {
    keys: Keys,
    value: Dense,
    count: Dense,
}

impl Buckets {
    fn fields(&self) -> Vec<&dyn Field> {
        let k = &self.keys;
        let mut fields: Vec<&dyn Field> = vec![&k.run, &k.series];
        fields.extend(k.labels.iter().map(|c| c as &dyn Field));
        fields.extend([
            &k.interval as &dyn Field,
            &k.start_ns,
            &self.value,
            &self.count,
        ]);
        fields
    }
}

/// Refuses an interval whose figures int64 cannot hold (2^63 ns is 292
/// years) rather than round them; its percentiles and bucket values lie
/// below its max (buckets end at one hour), its counts below 2^53.
fn fits(stats: &ExactStats, start: u64, length: u64, wall: Option<u128>) -> Result<(), String> {
    let figures = [
        ("start", u128::from(start)),
        ("length", u128::from(length)),
        ("max", u128::from(stats.max)),
        ("sum", stats.sum),
        ("wall-clock start", wall.unwrap_or(0)),
    ];
    match figures.into_iter().find(|&(_, ns)| ns > i64::MAX as u128) {
        Some((what, ns)) => Err(format!(
            "{what} {ns} ns is past what Parquet's int64 holds (2^63 ns, 292 years)"
        )),
        None => Ok(()),
    }
}

/// What one input brings to every row of its series.
struct Source {
    run: Text,
    probe: Option<Text>,
    labels: Vec<Option<Text>>,
    start_unix_ns: Option<u128>,
}

/// Builds both tables from loaded inputs; a series holding only the
/// percentiles its tool printed has no rows (`export::left_out` says so).
pub fn to_parquet(inputs: &[Loaded]) -> Result<Tables> {
    let keys = label_keys(inputs);
    let fixed: Vec<&str> = FIXED.split_whitespace().collect();
    let names = label_columns(&keys, &fixed);
    let mut iv = Intervals {
        keys: Keys::new(&names),
        probe: text("probe", true),
        start_time: Column::nullable("start_time").of(Logical::TimestampNanos),
        ints: [
            Column::new("length_ns"),
            Column::new("count"),
            Column::nullable("min_ns"),
            Column::nullable("max_ns"),
            Column::new("sum_ns"),
        ],
        mean: Column::nullable("mean_ns"),
        percentiles: PERCENTILES.map(|(_, name)| Column::nullable(name)),
        stall: Column::new("stall"),
    };
    let mut bk = Buckets {
        keys: Keys::new(&names),
        value: Dense::increasing("value_ns"),
        count: Dense::new("count"),
    };
    for input in inputs {
        let run = input.run.as_ref();
        let source = Source {
            run: input.source.as_str().into(),
            probe: run.map(|r| r.probe.as_str().into()),
            labels: keys
                .iter()
                .map(|k| {
                    run.and_then(|r| r.labels.get(*k))
                        .map(|v| v.as_str().into())
                })
                .collect(),
            // 0: a run file made from an input that did not know it.
            start_unix_ns: run.map(|r| r.start_unix_ns).filter(|&ns| ns > 0),
        };
        for series in &input.series {
            add_series(series, &source, &mut iv, &mut bk).map_err(|e| {
                input_error(format!("{}: series '{}', {e}", input.source, series.tag))
            })?;
        }
    }
    let interval_rows = iv.keys.rows();
    let bucket_rows = bk.keys.rows();
    Ok(Tables {
        intervals: write_table("intervals", &iv.fields(), interval_rows)?,
        buckets: write_table("buckets", &bk.fields(), bucket_rows)?,
        interval_rows,
        bucket_rows,
    })
}

/// Adds one series' intervals and buckets.
fn add_series(
    series: &Series,
    source: &Source,
    iv: &mut Intervals,
    bk: &mut Buckets,
) -> Result<(), String> {
    let percentiles: Vec<Percentile> = PERCENTILES
        .iter()
        .map(|(p, _)| Percentile::parse(p))
        .collect::<Result<_, _>>()?;
    let tag: Text = series.tag.as_str().into();
    let mut points = Vec::with_capacity(series.intervals.len());
    for (i, interval) in series.intervals.iter().enumerate() {
        let at = |e: String| format!("interval {i}: {e}");
        let stats = interval.stats();
        let (start, length) = (interval.start_ns, interval.length_ns);
        let wall = source.start_unix_ns.map(|s| s + u128::from(start));
        fits(&stats, start, length, wall).map_err(at)?;
        let entries = interval.entries().map_err(at)?;
        let ranks: Vec<u64> = percentiles.iter().map(|p| p.rank(stats.count)).collect();
        let values = values_at_ranks_in(entries.iter().copied(), &stats, &ranks);
        points.push(IntervalPoint::from_values(
            start,
            length,
            [values[0], values[2]],
            &stats,
        ));
        let key = [i as i64, start as i64];
        iv.keys.push(source, &tag, key, 1);
        iv.probe.push(source.probe.clone(), 1);
        iv.start_time.push(wall.map(|ns| ns as i64), 1);
        // An empty interval has no min, max, mean or percentiles.
        let filled = |value| (stats.count > 0).then_some(value as i64);
        let ints = [
            Some(length as i64),
            Some(stats.count as i64),
            filled(stats.min),
            filled(stats.max),
            Some(stats.sum as i64),
        ];
        for (column, cell) in iv.ints.iter_mut().zip(ints) {
            column.push(cell, 1);
        }
        iv.mean.push((stats.count > 0).then(|| stats.mean()), 1);
        for (column, &value) in iv.percentiles.iter_mut().zip(&values) {
            column.push(filled(value), 1);
        }
        // The buckets in cauda's shape (several of another shape may share one).
        let shaped = own_buckets(entries.iter().copied());
        bk.keys.push(source, &tag, key, shaped.len());
        bk.value
            .values
            .extend(shaped.iter().map(|&(i, _)| bucket_top(i) as i64));
        bk.count
            .values
            .extend(shaped.iter().map(|&(_, n)| n as i64));
    }
    for flag in stalled(&points) {
        iv.stall.push(Some(flag), 1);
    }
    Ok(())
}
