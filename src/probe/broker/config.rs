//! The `broker` probe's parameters: `--acks`, the resolved configuration
//! stored in the run file, its checks, and what follows from it (the series
//! recorded, the client settings the run file reports).

use anyhow::Result;
use serde::Serialize;

use super::consume::ConsumeSeries;
use super::produce::ProduceSeries;
use super::stamp::STAMP_BYTES;
use crate::error::input_error;
use crate::model::MeasuredFrom;
use crate::model::broker::ClientSettings;
use crate::probe::run::{Blamed, OfferedPlan, SeriesSpec};
use crate::record::Arrivals;

/// `acks`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Acks {
    /// No acknowledgement: the broker sends no response.
    None,
    /// The leader's.
    Leader,
    /// Every in-sync replica's (`-1`).
    All,
}

impl Acks {
    /// The protocol's value.
    pub fn code(self) -> i16 {
        match self {
            Acks::None => 0,
            Acks::Leader => 1,
            Acks::All => -1,
        }
    }

    /// As `--acks` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Acks::None => "0",
            Acks::Leader => "1",
            Acks::All => "all",
        }
    }

    /// Parses `0`, `1`, `all` or `-1`.
    pub fn parse(text: &str) -> Result<Acks, String> {
        match text {
            "0" => Ok(Acks::None),
            "1" => Ok(Acks::Leader),
            "all" | "-1" => Ok(Acks::All),
            _ => Err(format!("'{text}': acks is 0, 1 or all")),
        }
    }
}

/// The `broker` probe's parameters, as resolved; stored in the run file.
#[derive(Clone, Debug, Serialize)]
pub struct BrokerConfig {
    /// The bootstrap broker, `host:port`.
    pub bootstrap: String,
    /// The topic; created when missing.
    pub topic: String,
    /// Whether `topic` was chosen by cauda (a fresh name per run).
    pub topic_generated: bool,
    /// `acks`.
    pub acks: Acks,
    /// Record value size in bytes.
    pub size: usize,
    /// Partitions (when creating; at least this many are used).
    pub partitions: usize,
    /// Replicas per partition when creating; `None`: the broker's default.
    pub replication_factor: Option<i16>,
    /// Topic configs to set when creating (`--topic-config`).
    pub topic_configs: Vec<(String, String)>,
    /// Producer threads.
    pub producers: usize,
    /// Consumer threads.
    pub consumers: usize,
    /// Open loop: records per second over all producers; `None`: closed loop.
    pub rate_per_s: Option<f64>,
    /// How intended send times are spaced.
    pub arrivals: Arrivals,
    /// `linger.ms`, ns.
    pub linger_ns: u64,
    /// `batch.size`.
    pub batch_bytes: usize,
    /// Requests in flight per connection.
    pub max_in_flight: usize,
    /// `fetch.max.wait.ms`, ns.
    pub fetch_max_wait_ns: u64,
    /// `fetch.min.bytes`.
    pub fetch_min_bytes: i32,
    /// A record unacknowledged this long is given up.
    pub timeout_ns: u64,
    /// How long to measure, ns.
    pub runtime_ns: u64,
    /// Warm-up before measuring, ns.
    pub warmup_ns: u64,
    /// Leave a topic cauda created in place.
    pub keep_topic: bool,
    /// The histogram interval length, ns.
    pub interval_length_ns: u64,
}

/// `--size`'s bounds: the stamp, and Kafka's default message limit.
const MAX_SIZE: usize = 64 << 20;

impl BrokerConfig {
    /// Checks the parameters; every problem is an input error naming its flag.
    pub fn validate(&self) -> Result<()> {
        if !(STAMP_BYTES..=MAX_SIZE).contains(&self.size) {
            return Err(input_error(format!(
                "--size {}: must lie between {STAMP_BYTES} (the stamp each record carries: run, \
                 producer, sequence, intended send time) and {MAX_SIZE} bytes",
                self.size
            )));
        }
        for (flag, n) in [
            ("--producers", self.producers),
            ("--consumers", self.consumers),
            ("--partitions", self.partitions),
        ] {
            if n == 0 || n > 256 {
                return Err(input_error(format!(
                    "{flag} {n}: must lie between 1 and 256"
                )));
            }
        }
        if self.max_in_flight == 0 || self.max_in_flight > 64 {
            return Err(input_error("--max-in-flight: must lie between 1 and 64"));
        }
        if let Some(rf) = self.replication_factor
            && !(1..=16).contains(&rf)
        {
            return Err(input_error(format!(
                "--replication-factor {rf}: must lie between 1 and 16"
            )));
        }
        if self.topic.is_empty()
            || self.topic.len() > 249
            || !self
                .topic
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        {
            return Err(input_error(format!(
                "--topic '{}': Kafka topic names are 1–249 of a-z, A-Z, 0-9, '.', '_', '-'",
                self.topic
            )));
        }
        if self.runtime_ns < 1_000_000 || self.runtime_ns > 30 * 24 * 3_600_000_000_000 {
            return Err(input_error("--runtime: must lie between 1ms and 30 days"));
        }
        if self.warmup_ns > 3_600_000_000_000 {
            return Err(input_error("--warmup: at most 1h"));
        }
        if self.linger_ns > 60_000_000_000 {
            return Err(input_error("--linger: at most 60s"));
        }
        if self.fetch_max_wait_ns > 60_000_000_000 {
            return Err(input_error("--fetch-max-wait: at most 60s"));
        }
        if self.timeout_ns < 1_000_000 || self.timeout_ns > 3_600_000_000_000 {
            return Err(input_error("--timeout: must lie between 1ms and 1h"));
        }
        if let Some(rate) = self.rate_per_s
            && !(rate > 0.0 && rate <= 10_000_000.0)
        {
            return Err(input_error(format!(
                "--rate {rate}/s: must lie between 1/s and 10M/s"
            )));
        }
        crate::probe::check_interval_length(self.interval_length_ns)
    }

    /// The series recorded, and where producers and consumers put them.
    pub(super) fn series(&self) -> (Vec<SeriesSpec>, ProduceSeries, ConsumeSeries) {
        let from = if self.rate_per_s.is_some() {
            MeasuredFrom::IntendedStart
        } else {
            MeasuredFrom::ActualStart
        };
        let acked = self.acks != Acks::None;
        let mut specs = Vec::new();
        let mut add = |tag: &str, measured_from| {
            specs.push(SeriesSpec {
                // A produce request, write to acknowledgement: the one
                // operation a producer's thread has alone (`check_blame`).
                blamed: if tag == "publish.service" {
                    Blamed::Request
                } else {
                    Blamed::No
                },
                tag: tag.into(),
                measured_from,
            });
            specs.len() - 1
        };
        let publish = acked.then(|| add("publish", from));
        let service = acked.then(|| add("publish.service", MeasuredFrom::ActualStart));
        let queue = add("publish.queue", from);
        let e2e = add("e2e", from);
        let fetch = acked.then(|| add("e2e.fetch", MeasuredFrom::ActualStart));
        let lag = self
            .rate_per_s
            .is_some()
            .then(|| add("lag", MeasuredFrom::IntendedStart));
        (
            specs,
            ProduceSeries {
                publish,
                service,
                queue,
                lag,
            },
            ConsumeSeries { e2e, fetch },
        )
    }

    /// Open loop: what the engine needs to count the offered load and
    /// judge whether the producers kept up.
    pub(super) fn offered(&self) -> Option<OfferedPlan> {
        let rate = self.rate_per_s?;
        let acked = self.acks != Acks::None;
        let share = rate / self.producers as f64;
        Some(OfferedPlan {
            rate_per_s: rate,
            schedules: (0..self.producers)
                .map(|i| super::produce::schedule(share, self.arrivals, i, self.producers, 0))
                .collect(),
            runtime_ns: self.runtime_ns,
            in_flight_limit: None,
            lag: "lag".into(),
            completed: vec![if acked { "publish" } else { "publish.queue" }.into()],
            service: if acked {
                vec!["publish.service".into()]
            } else {
                Vec::new()
            },
            advice: "each producer is one thread: add producers (--producers), give cauda CPUs \
                     away from busy tasks, or batch more per request (--linger, --batch-bytes); \
                     then lower --rate if it still lags",
        })
    }

    /// The client settings the run file reports.
    pub(super) fn client(&self) -> ClientSettings {
        ClientSettings {
            acks: self.acks.code(),
            record_bytes: self.size,
            linger_ns: self.linger_ns,
            batch_bytes: self.batch_bytes,
            max_in_flight: self.max_in_flight,
            request_timeout_ms: REQUEST_TIMEOUT_MS,
            delivery_timeout_ns: self.timeout_ns,
            fetch_max_wait_ns: self.fetch_max_wait_ns,
            fetch_min_bytes: self.fetch_min_bytes,
            fetch_partition_max_bytes: PARTITION_MAX_BYTES,
            compression: "none".into(),
            producers: self.producers,
            consumers: self.consumers,
            partitioner: "round robin per record, each producer from its own first partition"
                .into(),
        }
    }
}

/// The broker's wait for replicas in a Produce request (Kafka's
/// `request.timeout.ms` default).
const REQUEST_TIMEOUT_MS: i32 = 30_000;
/// A record batch's header and one record's framing, at most (v2 format).
pub(super) const BATCH_OVERHEAD: usize = 61 + 21;
/// `max.partition.fetch.bytes` (Kafka's default).
const PARTITION_MAX_BYTES: i32 = 1 << 20;
