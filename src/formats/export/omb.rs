//! OpenMessaging Benchmark's result JSON (`TestResult`) from a broker run,
//! so OMB's chart scripts and notebooks work on cauda's data.
//!
//! OMB's fields and units: publish latency in milliseconds (a double),
//! publish delay — how late a send left against its schedule — in
//! microseconds (whole), end-to-end latency in milliseconds; one entry per
//! 10-second window in the lists, the whole run in `aggregated*`. cauda's
//! series map as `publish.service` → `publishLatency*` (OMB times a publish
//! from the actual send), `publish.queue` → `publishDelayLatency*`, and
//! `e2e` → `endToEndLatency*`. cauda's `e2e` is measured from the intended
//! send (OMB's from the actual one), so with a backlog it is the larger,
//! honest figure; `caudaNotes` in the document says so. Percentiles follow
//! cauda's rank rule on the exact histograms, before the unit change.

use anyhow::Result;
use serde_json::{Map, Value, json};

use crate::error::input_error;
use crate::model::{Loaded, Series};
use crate::record::LatencyHistogram;
use crate::record::rank::{rank_of, value_at_rank};

/// OMB's reporting window.
const WINDOW_NS: u64 = 10_000_000_000;

/// The list fields' suffixes and their percentiles (`None`: the mean; 100: max).
const POINTS: [(&str, Option<f64>); 9] = [
    ("Avg", None),
    ("50pct", Some(50.0)),
    ("75pct", Some(75.0)),
    ("95pct", Some(95.0)),
    ("99pct", Some(99.0)),
    ("999pct", Some(99.9)),
    ("9999pct", Some(99.99)),
    ("99999pct", Some(99.999)),
    ("Max", Some(100.0)),
];

/// How a series' values become OMB's numbers.
#[derive(Clone, Copy)]
enum Unit {
    /// Milliseconds, a double.
    Ms,
    /// Microseconds, whole.
    Us,
}

impl Unit {
    fn value(self, ns: f64) -> Value {
        match self {
            Unit::Ms => json!(ns / 1e6),
            Unit::Us => json!((ns / 1e3).round() as u64),
        }
    }
}

fn quantile(hist: &LatencyHistogram, q: f64) -> f64 {
    let n = hist.count();
    if n == 0 {
        return 0.0;
    }
    if q >= 100.0 {
        return hist.stats().max as f64;
    }
    let rank = rank_of(n, (q * 1e5).round() as u128, 10_000_000);
    value_at_rank(hist, rank) as f64
}

fn point(hist: &LatencyHistogram, p: Option<f64>) -> f64 {
    match p {
        None if hist.count() == 0 => 0.0,
        None => hist.stats().mean(),
        Some(q) => quantile(hist, q),
    }
}

/// The most windows an OMB document holds: 100,000 windows of 10 s are
/// 11.5 days; a run whose intervals reach further is refused.
const MAX_WINDOWS: u64 = 100_000;

/// One window's figures: the [`POINTS`] and the count.
#[derive(Clone, Copy, Default)]
struct WindowPoints {
    points: [f64; POINTS.len()],
    count: u64,
}

/// The figures of each 10 s window from the run's start, made one window
/// at a time in a single histogram (a 24-hour run has 8,640 windows: a
/// histogram each took 2.3 GB).
fn windows(series: &Series, count: usize) -> Result<Vec<WindowPoints>> {
    let mut out = vec![WindowPoints::default(); count];
    let mut intervals: Vec<_> = series.intervals.iter().filter(|i| i.count > 0).collect();
    intervals.sort_by_key(|i| i.start_ns);
    let window_of = |start_ns: u64| ((start_ns / WINDOW_NS) as usize).min(count - 1);
    let mut hist = LatencyHistogram::new();
    let mut rest = intervals.as_slice();
    while let Some(first) = rest.first() {
        let w = window_of(first.start_ns);
        let n = rest
            .iter()
            .take_while(|i| window_of(i.start_ns) == w)
            .count();
        hist.reset();
        for interval in &rest[..n] {
            let entries = interval.entries().map_err(input_error)?;
            hist.add_sparse(&entries, &interval.stats());
        }
        out[w] = WindowPoints {
            points: POINTS.map(|(_, p)| point(&hist, p)),
            count: hist.count(),
        };
        rest = &rest[n..];
    }
    Ok(out)
}

/// How many 10 s windows the document lists: as many as the intervals of
/// the series it reads reach — never the run's `duration_ns`, a number a
/// file can claim at will — and at most [`MAX_WINDOWS`].
fn window_count(source: &str, series: &[Option<&Series>]) -> Result<(u64, usize)> {
    let span = series
        .iter()
        .flatten()
        .filter_map(|s| s.intervals.last())
        .map(|i| i.start_ns.saturating_add(i.length_ns))
        .max()
        .unwrap_or(0)
        .max(1);
    let windows = span.div_ceil(WINDOW_NS);
    if windows > MAX_WINDOWS {
        return Err(input_error(format!(
            "{source}: its intervals reach {} s from the start, {windows} windows of 10 s;              --to omb writes at most {MAX_WINDOWS} (11.5 days): cut the run into parts",
            span / 1_000_000_000
        )));
    }
    Ok((span, windows as usize))
}

/// Adds `prefix` fields (lists per window, aggregated values and the
/// quantile map) for `series` in `unit`.
fn latency_fields(
    doc: &mut Map<String, Value>,
    prefix: &str,
    series: Option<&Series>,
    windows_n: usize,
    unit: Unit,
) -> Result<()> {
    let (per_window, whole) = match series {
        Some(s) => (windows(s, windows_n)?, s.merged().map_err(input_error)?),
        None => (
            vec![WindowPoints::default(); windows_n],
            LatencyHistogram::new(),
        ),
    };
    let cap = |s: &str| format!("{}{}", s[..1].to_uppercase(), &s[1..]);
    for (k, (suffix, p)) in POINTS.into_iter().enumerate() {
        let list: Vec<Value> = per_window.iter().map(|w| unit.value(w.points[k])).collect();
        doc.insert(format!("{prefix}{suffix}"), Value::Array(list));
        doc.insert(
            format!("aggregated{}{suffix}", cap(prefix)),
            unit.value(point(&whole, p)),
        );
    }
    let mut quantiles = Map::new();
    let keys = (1..=99).map(f64::from).chain([99.9, 99.99, 99.999, 100.0]);
    for q in keys {
        // As Java prints a Double key: 50.0, 99.9, 99.99.
        let key = if q.fract() == 0.0 {
            format!("{q:.1}")
        } else {
            format!("{q}")
        };
        quantiles.insert(key, unit.value(quantile(&whole, q)));
    }
    doc.insert(
        format!("aggregated{}Quantiles", cap(prefix)),
        Value::Object(quantiles),
    );
    Ok(())
}

/// The OMB result document of one broker run.
pub fn to_omb(inputs: &[Loaded]) -> Result<Vec<u8>> {
    let [input] = inputs else {
        return Err(input_error(
            "--to omb takes one broker run (OMB's result describes one workload)",
        ));
    };
    let run = input
        .run
        .as_ref()
        .filter(|r| r.probe == "broker")
        .ok_or_else(|| {
            input_error(format!(
                "{}: --to omb needs a `cauda broker` run file",
                input.source
            ))
        })?;
    let find = |tag: &str| input.series.iter().find(|s| s.tag == tag);
    let read = ["publish.service", "publish.queue", "e2e"].map(find);
    let (span, windows_n) = window_count(&input.source, &read)?;
    let window_s = |w: usize| {
        let start = w as u64 * WINDOW_NS;
        (span.min(start + WINDOW_NS) - start).max(1) as f64 / 1e9
    };
    let rate = |series: Option<&Series>| -> Result<Vec<Value>> {
        Ok(match series {
            Some(s) => windows(s, windows_n)?
                .iter()
                .enumerate()
                .map(|(w, h)| json!(h.count as f64 / window_s(w)))
                .collect(),
            None => vec![json!(0.0); windows_n],
        })
    };
    let sent = rate(find("publish.queue"))?;
    let consumed = rate(find("e2e"))?;
    let mut backlog = Vec::new();
    let mut pending = 0f64;
    for w in 0..windows_n {
        pending +=
            (sent[w].as_f64().unwrap_or(0.0) - consumed[w].as_f64().unwrap_or(0.0)) * window_s(w);
        backlog.push(json!(pending.max(0.0).round() as u64));
    }
    let broker = run.broker.as_ref();
    let client = broker.map(|b| &b.client);
    let mut doc = Map::new();
    doc.insert(
        "workload".into(),
        json!(format!(
            "cauda broker acks={} {}",
            client.map_or(1, |c| c.acks),
            match run.load {
                crate::model::LoadMode::OpenLoop => "open loop",
                _ => "closed loop",
            }
        )),
    );
    doc.insert("driver".into(), json!("cauda (Kafka protocol)"));
    doc.insert(
        "messageSize".into(),
        json!(client.map_or(0, |c| c.record_bytes)),
    );
    doc.insert("topics".into(), json!(1));
    doc.insert(
        "partitions".into(),
        json!(broker.map_or(0, |b| b.topic.partitions.len())),
    );
    doc.insert(
        "producersPerTopic".into(),
        json!(client.map_or(0, |c| c.producers)),
    );
    doc.insert(
        "consumersPerTopic".into(),
        json!(client.map_or(0, |c| c.consumers)),
    );
    doc.insert("publishRate".into(), Value::Array(sent));
    let failed_rate = broker.map_or(0.0, |b| b.records.failed as f64 / (span as f64 / 1e9));
    doc.insert(
        "publishErrorRate".into(),
        Value::Array(vec![json!(failed_rate); windows_n]),
    );
    doc.insert("consumeRate".into(), Value::Array(consumed));
    doc.insert("backlog".into(), Value::Array(backlog));
    latency_fields(
        &mut doc,
        "publishLatency",
        find("publish.service"),
        windows_n,
        Unit::Ms,
    )?;
    latency_fields(
        &mut doc,
        "publishDelayLatency",
        find("publish.queue"),
        windows_n,
        Unit::Us,
    )?;
    latency_fields(
        &mut doc,
        "endToEndLatency",
        find("e2e"),
        windows_n,
        Unit::Ms,
    )?;
    doc.insert(
        "caudaNotes".into(),
        json!({
            "source": input.source,
            "publishLatency": "cauda's publish.service: actual send to acknowledgement, ms",
            "publishDelayLatency": "cauda's publish.queue: intended send to written, µs",
            "endToEndLatency": "cauda's e2e: from the INTENDED send (OMB: the actual one) to consumed, ms, one clock",
            "publishErrorRate": "the run's failed records per second, the same in every window",
            "windows": "10 s from the run's start; the last may be shorter",
        }),
    );
    let mut out = serde_json::to_vec_pretty(&Value::Object(doc))?;
    out.push(b'\n');
    Ok(out)
}
