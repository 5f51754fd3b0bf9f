//! The live view of a run (`--metrics-listen`): the collector feeds each
//! final interval in, and a Prometheus page of the run so far is published
//! to the metrics endpoint ([`super::endpoint`]).
//!
//! Families (every metric labelled with the run's `--label`s and `probe`):
//! - `cauda_latency_seconds{series}`: a native histogram of every value
//!   since the run started (count and sum exact, buckets schema 8);
//! - `cauda_latency_last_interval_seconds{series,quantile}`: the last
//!   completed interval's p50, p99, p99.9 and max, exact, for one host's
//!   panel (percentiles of several hosts do not average: use the histogram);
//! - `cauda_intervals_total`: intervals completed;
//! - `cauda_faults_total`: operations that failed (lost messages, I/O
//!   errors; by kind in the run file's `faults`);
//! - `cauda_interval_length_seconds` and `cauda_run_start_time_seconds`
//!   (Unix time), to line runs up.

use super::endpoint::{Latest, Page};
use crate::formats::export::prometheus::{Family, Metric, NativeHistogram, Value};
use crate::model::IntervalRecord;
use crate::record::rank::{rank_of, values_at_ranks_in};

/// The quantiles of the last interval, as (label, numerator, denominator).
const LAST_QUANTILES: [(&str, u128, u128); 4] = [
    ("0.5", 1, 2),
    ("0.99", 99, 100),
    ("0.999", 999, 1000),
    ("1", 1, 1),
];

/// Label names cauda sets itself, which a `--label` may not take.
pub const RESERVED_LABELS: [&str; 4] = ["probe", "series", "quantile", "le"];

/// One series as the live view holds it.
struct LiveSeries {
    tag: String,
    total: NativeHistogram,
    /// The last interval's quantiles in ns (empty when it had no values).
    last: Vec<u64>,
}

/// The run so far, published after each interval.
pub struct LiveFeed {
    labels: Vec<(String, String)>,
    series: Vec<LiveSeries>,
    intervals: u64,
    faults: u64,
    interval_ns: u64,
    start_unix_ns: u128,
    latest: Latest,
}

impl LiveFeed {
    /// A feed for a run of `probe` with these series tags, publishing to `latest`.
    pub fn new(
        probe: &str,
        run_labels: &std::collections::BTreeMap<String, String>,
        tags: &[String],
        interval_ns: u64,
        start_unix_ns: u128,
        latest: Latest,
    ) -> LiveFeed {
        let mut labels: Vec<(String, String)> = run_labels
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        labels.push(("probe".into(), probe.into()));
        let feed = LiveFeed {
            labels,
            series: tags
                .iter()
                .map(|tag| LiveSeries {
                    tag: tag.clone(),
                    total: NativeHistogram::default(),
                    last: Vec::new(),
                })
                .collect(),
            intervals: 0,
            faults: 0,
            interval_ns,
            start_unix_ns,
            latest,
        };
        // Scrapes before the first interval see the run's shape, with zeros.
        feed.latest.publish(Page::of(&feed.families(), 0));
        feed
    }

    /// Adds series `index`'s final interval.
    pub fn interval(&mut self, index: usize, record: &IntervalRecord) -> Result<(), String> {
        let Some(series) = self.series.get_mut(index) else {
            return Ok(());
        };
        let entries = record.histogram.entries()?;
        let stats = record.stats();
        // Each bucket goes in at the value cauda reports for it.
        for &(value, count) in entries.iter() {
            series.total.add(value.max(stats.min).min(stats.max), count);
        }
        series.total.add_sum(record.sum);
        series.last = if stats.count == 0 {
            Vec::new()
        } else {
            let ranks: Vec<u64> = LAST_QUANTILES
                .iter()
                .map(|&(_, num, den)| rank_of(stats.count, num, den))
                .collect();
            values_at_ranks_in(entries.iter().copied(), &stats, &ranks)
        };
        Ok(())
    }

    /// Publishes the run so far, once every series' interval is in, with
    /// the interval's faults.
    pub fn publish(&mut self, faults: u64) {
        self.intervals += 1;
        self.faults += faults;
        self.latest
            .publish(Page::of(&self.families(), self.intervals));
    }

    fn families(&self) -> Vec<Family> {
        let with = |extra: &[(&str, &str)]| -> Vec<(String, String)> {
            let mut labels = self.labels.clone();
            labels.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
            labels
        };
        let run = |value: Value| Metric {
            labels: with(&[]),
            value,
        };
        vec![
            Family {
                name: "cauda_latency_seconds",
                help: "Latency of every operation since the run started: a native histogram \
                       (schema 8, buckets 0.27 % wide; count and sum exact). The run file holds \
                       the exact distribution.",
                metrics: self
                    .series
                    .iter()
                    .map(|s| Metric {
                        labels: with(&[("series", &s.tag)]),
                        value: Value::Histogram(s.total.clone()),
                    })
                    .collect(),
            },
            Family {
                name: "cauda_latency_last_interval_seconds",
                help: "The last completed interval's exact p50, p99, p99.9 and max (quantile 1), \
                       for one run's panel; to combine runs use cauda_latency_seconds.",
                metrics: self
                    .series
                    .iter()
                    .flat_map(|s| {
                        LAST_QUANTILES
                            .iter()
                            .zip(&s.last)
                            .map(|(&(q, _, _), &ns)| Metric {
                                labels: with(&[("series", &s.tag), ("quantile", q)]),
                                value: Value::Gauge(ns as f64 / 1e9),
                            })
                    })
                    .collect(),
            },
            Family {
                name: "cauda_intervals_total",
                help: "Intervals completed since the run started.",
                metrics: vec![run(Value::Counter(self.intervals as f64))],
            },
            Family {
                name: "cauda_faults_total",
                help: "Operations that failed since the run started (lost messages, I/O errors); \
                       by kind in the run file's faults.",
                metrics: vec![run(Value::Counter(self.faults as f64))],
            },
            Family {
                name: "cauda_interval_length_seconds",
                help: "The length of each interval (--interval-length).",
                metrics: vec![run(Value::Gauge(self.interval_ns as f64 / 1e9))],
            },
            Family {
                name: "cauda_run_start_time_seconds",
                help: "When the run started, in Unix time.",
                metrics: vec![run(Value::Gauge(self.start_unix_ns as f64 / 1e9))],
            },
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::LatencyHistogram;

    #[test]
    fn the_page_holds_the_run_so_far() {
        let latest = Latest::default();
        let labels = [("host".to_string(), "a1".to_string())].into();
        let mut feed = LiveFeed::new(
            "timer",
            &labels,
            &["wakeup".into()],
            1_000_000_000,
            1_700_000_000_000_000_000,
            latest.clone(),
        );
        assert_eq!(latest.generation(), 0);
        let mut total = 0;
        for i in 0..3u64 {
            let mut h = LatencyHistogram::new();
            for v in [50_000, 60_000, 70_000 + i * 1_000_000] {
                h.record(v);
                total += 1;
            }
            let record = IntervalRecord::from_histogram(i * 1_000_000_000, 1_000_000_000, &h);
            feed.interval(0, &record).unwrap();
            feed.publish(i);
        }
        assert_eq!(latest.generation(), 3);
        let families = feed.families();
        let Value::Histogram(h) = &families[0].metrics[0].value else {
            panic!("a histogram");
        };
        assert_eq!(h.count, total);
        assert_eq!(h.buckets.values().sum::<u64>(), total);
        assert!(
            families[0].metrics[0]
                .labels
                .contains(&("host".into(), "a1".into()))
        );
        // The last interval's max is exact: 2.07 ms.
        let max = families[1]
            .metrics
            .iter()
            .find(|m| m.labels.contains(&("quantile".into(), "1".into())))
            .unwrap();
        assert_eq!(max.value, Value::Gauge(0.00207));
        assert_eq!(families[2].metrics[0].value, Value::Counter(3.0));
        assert_eq!(families[3].name, "cauda_faults_total");
        assert_eq!(
            families[3].metrics[0].value,
            Value::Counter(3.0),
            "0 + 1 + 2"
        );
        let text = String::from_utf8(latest.get().text.clone()).unwrap();
        assert!(text.contains(
            "cauda_latency_seconds_count{host=\"a1\",probe=\"timer\",series=\"wakeup\"} 9"
        ));
    }
}
