//! Prometheus exposition of a run in progress: each series as a **native
//! histogram** (the protobuf exposition format), plus counters and gauges.
//!
//! Native histograms have exponential buckets: at schema 8 (the finest),
//! bucket `i` holds values in `(2^((i-1)/256), 2^(i/256)]` seconds, each
//! 0.271 % wide. cauda's histograms are finer (3 significant digits,
//! 0.1 %), so the exposition puts each of cauda's buckets, whole, into the
//! native bucket that holds the value cauda reports for it (its highest
//! equivalent value). No value moves past a native bucket's edge, so a
//! quantile Prometheus computes from the exposition lies in the same native
//! bucket as the one `cauda analyze` prints: within 0.271 % of it. The run
//! file stays the source of truth.
//!
//! Histograms are cumulative since the run's start, as Prometheus expects
//! of a histogram (`rate()` or `increase()` over a window gives that
//! window's distribution). The count and the sum are exact.
//!
//! The protobuf messages follow `io.prometheus.client` in
//! prometheus/client_model `metrics.proto` (MetricFamily, Metric,
//! LabelPair, Counter, Gauge, Histogram, BucketSpan), each family
//! length-delimited, as Prometheus asks for with the `Accept` header
//! below. The text format (0.0.4) carries the counters and gauges, and the
//! histograms as their count and sum only (it has no native histograms).

use std::collections::BTreeMap;
use std::fmt::Write;

/// The native histogram schema: 2^8 buckets per power of two.
pub const SCHEMA: i32 = 8;
/// How wide a schema-8 bucket is, relative to its lower edge.
pub const BUCKET_WIDTH: f64 = 0.002_711_275_050_202_485;
/// The content type of the protobuf exposition.
pub const PROTOBUF: &str =
    "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited";
/// The content type of the text exposition.
pub const TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";
/// The zero bucket's width: values of 0 ns fall into it.
const ZERO_THRESHOLD: f64 = 2.938_735_877_055_719e-39;

/// A native histogram of latencies in seconds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NativeHistogram {
    /// Exact number of values.
    pub count: u64,
    /// Exact sum of the values, in seconds.
    pub sum_seconds: f64,
    /// Values of 0.
    pub zero: u64,
    /// Count per schema-8 bucket index.
    pub buckets: BTreeMap<i32, u64>,
}

/// The schema-8 bucket holding `seconds` (> 0): the `i` with
/// `2^((i-1)/256) < seconds <= 2^(i/256)`.
pub fn bucket_index(seconds: f64) -> i32 {
    let scale = f64::from(1u32 << SCHEMA);
    let mut i = (seconds.log2() * scale).ceil() as i32;
    // log2 may round across an edge; the edges themselves decide.
    let upper = |i: i32| (f64::from(i) / scale).exp2();
    while upper(i) < seconds {
        i += 1;
    }
    while upper(i - 1) >= seconds {
        i -= 1;
    }
    i
}

impl NativeHistogram {
    /// Adds `count` values that cauda reports as `value_ns`.
    pub fn add(&mut self, value_ns: u64, count: u64) {
        if count == 0 {
            return;
        }
        self.count += count;
        if value_ns == 0 {
            self.zero += count;
        } else {
            *self
                .buckets
                .entry(bucket_index(value_ns as f64 / 1e9))
                .or_default() += count;
        }
    }

    /// Adds to the exact sum (ns).
    pub fn add_sum(&mut self, sum_ns: u128) {
        self.sum_seconds += sum_ns as f64 / 1e9;
    }
}

/// What a metric's value is.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// Only ever goes up.
    Counter(f64),
    /// Goes up and down.
    Gauge(f64),
    /// A cumulative native histogram.
    Histogram(NativeHistogram),
}

/// One labelled metric of a family.
#[derive(Clone, Debug, PartialEq)]
pub struct Metric {
    /// Label names and values.
    pub labels: Vec<(String, String)>,
    /// The value.
    pub value: Value,
}

/// A metric family: one name, one type, one help text.
#[derive(Clone, Debug, PartialEq)]
pub struct Family {
    /// The metric name, e.g. `cauda_latency_seconds`.
    pub name: &'static str,
    /// The help text.
    pub help: &'static str,
    /// Its metrics (all of the same kind of value).
    pub metrics: Vec<Metric>,
}

/// Encodes families in the delimited protobuf exposition.
pub fn to_protobuf(families: &[Family]) -> Vec<u8> {
    let mut out = Vec::new();
    for family in families.iter().filter(|f| !f.metrics.is_empty()) {
        let mut msg = Vec::new();
        put_bytes(&mut msg, 1, family.name.as_bytes());
        put_bytes(&mut msg, 2, family.help.as_bytes());
        let kind = match family.metrics[0].value {
            Value::Counter(_) => 0,
            Value::Gauge(_) => 1,
            Value::Histogram(_) => 4,
        };
        put_varint_field(&mut msg, 3, kind);
        for metric in &family.metrics {
            put_bytes(&mut msg, 4, &metric_message(metric));
        }
        put_varint(&mut out, msg.len() as u64);
        out.extend_from_slice(&msg);
    }
    out
}

fn metric_message(metric: &Metric) -> Vec<u8> {
    let mut msg = Vec::new();
    for (name, value) in &metric.labels {
        let mut pair = Vec::new();
        put_bytes(&mut pair, 1, name.as_bytes());
        put_bytes(&mut pair, 2, value.as_bytes());
        put_bytes(&mut msg, 1, &pair);
    }
    match &metric.value {
        Value::Gauge(v) => put_bytes(&mut msg, 2, &double_message(*v)),
        Value::Counter(v) => put_bytes(&mut msg, 3, &double_message(*v)),
        Value::Histogram(h) => put_bytes(&mut msg, 7, &histogram_message(h)),
    }
    msg
}

/// A `Gauge` or `Counter` message: field 1, the value.
fn double_message(value: f64) -> Vec<u8> {
    let mut msg = Vec::new();
    put_double(&mut msg, 1, value);
    msg
}

fn histogram_message(h: &NativeHistogram) -> Vec<u8> {
    let mut msg = Vec::new();
    put_varint_field(&mut msg, 1, h.count);
    put_double(&mut msg, 2, h.sum_seconds);
    put_varint_field(&mut msg, 5, zigzag(i64::from(SCHEMA)));
    put_double(&mut msg, 6, ZERO_THRESHOLD);
    put_varint_field(&mut msg, 7, h.zero);
    // Spans of consecutive buckets: the first offset is its index, later
    // ones the gap after the previous span; counts as deltas.
    let mut spans: Vec<(i32, u32)> = Vec::new();
    let mut previous: Option<i32> = None;
    let mut deltas = Vec::with_capacity(h.buckets.len());
    let mut last_count = 0i64;
    for (&index, &count) in &h.buckets {
        match (previous, spans.last_mut()) {
            (Some(p), Some(span)) if index == p + 1 => span.1 += 1,
            (Some(p), _) => spans.push((index - p - 1, 1)),
            (None, _) => spans.push((index, 1)),
        }
        previous = Some(index);
        let count = count as i64;
        deltas.push(count - last_count);
        last_count = count;
    }
    if spans.is_empty() {
        // A no-op span marks a histogram with nothing yet as native.
        spans.push((0, 0));
    }
    for (offset, length) in spans {
        let mut span = Vec::new();
        put_varint_field(&mut span, 1, zigzag(i64::from(offset)));
        put_varint_field(&mut span, 2, u64::from(length));
        put_bytes(&mut msg, 12, &span);
    }
    if !deltas.is_empty() {
        let mut packed = Vec::new();
        for delta in deltas {
            put_varint(&mut packed, zigzag(delta));
        }
        put_bytes(&mut msg, 13, &packed);
    }
    msg
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_varint_field(out: &mut Vec<u8>, field: u32, v: u64) {
    put_varint(out, u64::from(field) << 3);
    put_varint(out, v);
}

fn put_double(out: &mut Vec<u8>, field: u32, v: f64) {
    put_varint(out, (u64::from(field) << 3) | 1);
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_bytes(out: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    put_varint(out, (u64::from(field) << 3) | 2);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Encodes families in the text exposition (0.0.4): histograms as their
/// count and sum (with the one bucket `le="+Inf"` the format requires).
pub fn to_text(families: &[Family]) -> Vec<u8> {
    let mut out = String::new();
    for family in families.iter().filter(|f| !f.metrics.is_empty()) {
        let name = family.name;
        let kind = match family.metrics[0].value {
            Value::Counter(_) => "counter",
            Value::Gauge(_) => "gauge",
            Value::Histogram(_) => "histogram",
        };
        let _ = writeln!(out, "# HELP {name} {}", escape_help(family.help));
        let _ = writeln!(out, "# TYPE {name} {kind}");
        for metric in &family.metrics {
            let labels = |extra: Option<&str>| {
                let mut pairs: Vec<String> = metric
                    .labels
                    .iter()
                    .map(|(k, v)| format!("{k}=\"{}\"", escape_value(v)))
                    .collect();
                pairs.extend(extra.map(String::from));
                if pairs.is_empty() {
                    String::new()
                } else {
                    format!("{{{}}}", pairs.join(","))
                }
            };
            match &metric.value {
                Value::Counter(v) | Value::Gauge(v) => {
                    let _ = writeln!(out, "{name}{} {}", labels(None), number(*v));
                }
                Value::Histogram(h) => {
                    let _ = writeln!(
                        out,
                        "{name}_bucket{} {}",
                        labels(Some("le=\"+Inf\"")),
                        h.count
                    );
                    let _ = writeln!(out, "{name}_sum{} {}", labels(None), number(h.sum_seconds));
                    let _ = writeln!(out, "{name}_count{} {}", labels(None), h.count);
                }
            }
        }
    }
    out.into_bytes()
}

fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{v}")
    }
}

fn escape_help(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

fn escape_value(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// True when an `Accept` header asks for the protobuf exposition.
pub fn wants_protobuf(accept: &str) -> bool {
    accept.contains("application/vnd.google.protobuf")
        && accept.contains("io.prometheus.client.MetricFamily")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_edges_are_powers_of_two_to_the_256th() {
        assert_eq!(bucket_index(1.0), 0, "1 s is bucket 0's upper edge");
        assert_eq!(bucket_index(1.000_000_1), 1);
        assert_eq!(bucket_index(2.0), 256);
        assert_eq!(bucket_index(0.5), -256);
        assert_eq!(bucket_index(0.5 + 1e-12), -255);
        // Bucket width is what the docs say.
        assert!(((1.0f64 / 256.0).exp2() - 1.0 - BUCKET_WIDTH).abs() < 1e-15);
        for ns in [1u64, 999, 1_000, 12_345, 1_000_000, 3_600_000_000_000] {
            let s = ns as f64 / 1e9;
            let i = bucket_index(s);
            let upper = (f64::from(i) / 256.0).exp2();
            let lower = (f64::from(i - 1) / 256.0).exp2();
            assert!(lower < s && s <= upper, "{ns} ns in ({lower}, {upper}]");
        }
    }

    #[test]
    fn histogram_counts_zero_and_buckets() {
        let mut h = NativeHistogram::default();
        h.add(0, 2);
        h.add(1_000_000, 3);
        h.add(1_000_100, 4); // the same schema-8 bucket as 1 ms
        h.add(2_000_000, 0);
        h.add_sum(7_000_400);
        assert_eq!(h.count, 9);
        assert_eq!(h.zero, 2);
        assert_eq!(h.buckets.values().sum::<u64>(), 7);
        assert_eq!(h.buckets.len(), 1);
        assert!((h.sum_seconds - 0.0070004).abs() < 1e-15);
    }

    /// Decodes what the encoder wrote, field by field, to check the wire
    /// layout against `metrics.proto` by hand-read numbers.
    fn fields(mut bytes: &[u8]) -> Vec<(u32, u8, Vec<u8>)> {
        fn varint(bytes: &mut &[u8]) -> u64 {
            let mut v = 0u64;
            for shift in (0..).step_by(7) {
                let b = bytes[0];
                *bytes = &bytes[1..];
                v |= u64::from(b & 0x7f) << shift;
                if b & 0x80 == 0 {
                    break;
                }
            }
            v
        }
        let mut out = Vec::new();
        while !bytes.is_empty() {
            let key = varint(&mut bytes);
            let (field, wire) = ((key >> 3) as u32, (key & 7) as u8);
            let value = match wire {
                0 => varint(&mut bytes).to_le_bytes().to_vec(),
                1 => {
                    let v = bytes[..8].to_vec();
                    bytes = &bytes[8..];
                    v
                }
                2 => {
                    let n = varint(&mut bytes) as usize;
                    let v = bytes[..n].to_vec();
                    bytes = &bytes[n..];
                    v
                }
                _ => panic!("wire type {wire}"),
            };
            out.push((field, wire, value));
        }
        out
    }

    #[test]
    fn protobuf_histogram_has_spans_and_deltas() {
        let mut h = NativeHistogram::default();
        h.add(1_000_000, 5); // index i
        h.add(1_002_800, 2); // i + 1
        h.add(1_100_000, 1); // further on
        let i = bucket_index(0.001);
        assert_eq!(bucket_index(0.0010028), i + 1);
        let j = bucket_index(0.0011);
        let family = Family {
            name: "cauda_latency_seconds",
            help: "h",
            metrics: vec![Metric {
                labels: vec![("series".into(), "read".into())],
                value: Value::Histogram(h),
            }],
        };
        let bytes = to_protobuf(&[family]);
        // One length-delimited MetricFamily.
        assert_eq!(bytes[0] as usize, bytes.len() - 1);
        let family = fields(&bytes[1..]);
        assert_eq!(family[0], (1, 2, b"cauda_latency_seconds".to_vec()));
        assert_eq!(family[2].0, 3);
        assert_eq!(family[2].2[0], 4, "type HISTOGRAM");
        let metric = fields(&family[3].2);
        let label = fields(&metric[0].2);
        assert_eq!(label[0].2, b"series");
        assert_eq!(label[1].2, b"read");
        assert_eq!(metric[1].0, 7, "Metric.histogram");
        let hist = fields(&metric[1].2);
        let get = |f: u32| hist.iter().filter(move |x| x.0 == f).collect::<Vec<_>>();
        assert_eq!(get(1)[0].2[0], 8, "sample_count");
        assert_eq!(get(5)[0].2[0], 16, "schema 8, zigzag");
        let spans: Vec<Vec<(u32, u8, Vec<u8>)>> = get(12).iter().map(|s| fields(&s.2)).collect();
        assert_eq!(spans.len(), 2);
        let unzig = |v: u64| ((v >> 1) as i64) ^ -((v & 1) as i64);
        let varint_of = |f: &(u32, u8, Vec<u8>)| u64::from_le_bytes(f.2[..8].try_into().unwrap());
        assert_eq!(unzig(varint_of(&spans[0][0])), i64::from(i));
        assert_eq!(varint_of(&spans[0][1]), 2);
        assert_eq!(unzig(varint_of(&spans[1][0])), i64::from(j - i - 2));
        assert_eq!(varint_of(&spans[1][1]), 1);
        // Deltas: 5, 2-5, 1-2, zigzagged and packed.
        assert_eq!(get(13)[0].2, vec![10, 5, 1]);
    }

    #[test]
    fn an_empty_histogram_is_still_native() {
        let bytes = histogram_message(&NativeHistogram::default());
        let spans: Vec<_> = fields(&bytes).into_iter().filter(|f| f.0 == 12).collect();
        assert_eq!(spans.len(), 1, "a no-op span");
    }

    #[test]
    fn text_carries_counters_gauges_and_histogram_totals() {
        let mut h = NativeHistogram::default();
        h.add(2_000, 3);
        h.add_sum(6_000);
        let families = [
            Family {
                name: "cauda_intervals_total",
                help: "Intervals completed.",
                metrics: vec![Metric {
                    labels: vec![("host".into(), "a\"1".into())],
                    value: Value::Counter(4.0),
                }],
            },
            Family {
                name: "cauda_latency_seconds",
                help: "Latency.",
                metrics: vec![Metric {
                    labels: vec![("series".into(), "rtt".into())],
                    value: Value::Histogram(h),
                }],
            },
        ];
        let text = String::from_utf8(to_text(&families)).unwrap();
        assert!(text.contains("# TYPE cauda_intervals_total counter\n"));
        assert!(text.contains("cauda_intervals_total{host=\"a\\\"1\"} 4\n"));
        assert!(text.contains("cauda_latency_seconds_bucket{series=\"rtt\",le=\"+Inf\"} 3\n"));
        assert!(text.contains("cauda_latency_seconds_sum{series=\"rtt\"} 0.000006\n"));
        assert!(text.contains("cauda_latency_seconds_count{series=\"rtt\"} 3\n"));
    }

    #[test]
    fn accept_header_chooses_the_format() {
        assert!(wants_protobuf(
            "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"
        ));
        assert!(!wants_protobuf("text/plain"));
        assert!(!wants_protobuf("*/*"));
    }
}
