//! The `broker` probe: publish and end-to-end latency of a Kafka-protocol
//! broker, with producers and consumers in one process on one monotonic
//! clock, open loop by default.
//!
//! - [`wire`]: one connection, frames and the codec (and why cauda has a
//!   client of its own);
//! - [`admin`]: API versions, the cluster, the topic (created when missing,
//!   deleted after), log ends;
//! - [`produce`] and [`consume`]: the measuring threads;
//! - [`stamp`]: what each record carries so its consumer can time it;
//! - [`ledger`]: what producers and consumers share, and every record's
//!   fate at the end.
//!
//! Series: `publish`, `publish.service`, `publish.queue` (producers) and
//! `e2e`, `e2e.fetch` (consumers); with `acks=0` only `publish.queue` and
//! the `e2e` pair's first. The record accounting goes into the run file's
//! `broker` section and its faults into `faults`.

pub mod admin;
pub mod consume;
pub mod ledger;
pub mod produce;
pub mod stamp;
pub mod wire;

use std::sync::Mutex;
use std::time::Duration;

use anyhow::{Result, anyhow};
use serde::Serialize;

use self::admin::{Bootstrap, TopicWanted};
use self::consume::{ConsumeSeries, Consumer, FetchSettings};
use self::ledger::Ledger;
use self::produce::{Pace, ProduceSeries, ProduceSettings, Producer};
use self::stamp::STAMP_BYTES;
use crate::error::input_error;
use crate::model::broker::{BrokerReport, ClientSettings, TopicInfo};
use crate::model::{LoadMode, MeasuredFrom, RunFile, Warning};
use crate::probe::run::SeriesSpec;
use crate::probe::run::{self, Destination, Finished, Plan};
use crate::record::{Arrivals, MonotonicClock, Recorder, StopFlag};
use crate::units::format_duration_compact;

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

    fn series(&self) -> (Vec<SeriesSpec>, ProduceSeries, ConsumeSeries) {
        let from = if self.rate_per_s.is_some() {
            MeasuredFrom::IntendedStart
        } else {
            MeasuredFrom::ActualStart
        };
        let acked = self.acks != Acks::None;
        let mut specs = Vec::new();
        let mut add = |tag: &str, measured_from| {
            specs.push(SeriesSpec {
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
        (
            specs,
            ProduceSeries {
                publish,
                service,
                queue,
            },
            ConsumeSeries { e2e, fetch },
        )
    }

    fn client(&self) -> ClientSettings {
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
const BATCH_OVERHEAD: usize = 61 + 21;
/// `max.partition.fetch.bytes` (Kafka's default).
const PARTITION_MAX_BYTES: i32 = 1 << 20;

/// Runs the probe and writes its run file, with the record accounting in
/// the `broker` section.
pub fn run(config: &BrokerConfig, destination: &Destination, stop: &StopFlag) -> Result<Finished> {
    config.validate()?;
    let io_timeout = Duration::from_nanos(config.timeout_ns.max(5_000_000_000));
    let mut boot = admin::bootstrap(&config.bootstrap, io_timeout)?;
    let wanted = TopicWanted {
        name: config.topic.clone(),
        partitions: config.partitions,
        replication_factor: config.replication_factor,
        configs: config.topic_configs.clone(),
    };
    let topic = admin::topic(&mut boot, &wanted)?;
    let created = topic.created;
    // From here the topic may be cauda's: a run that failed before its
    // file was completed deletes it here (completing deletes it otherwise).
    let result = measure(config, destination, stop, &mut boot, topic, io_timeout);
    if result.is_err() && created && !config.keep_topic {
        let _ = admin::delete_after_run(&boot, &config.topic);
    }
    result
}

fn measure(
    config: &BrokerConfig,
    destination: &Destination,
    stop: &StopFlag,
    boot: &mut Bootstrap,
    mut topic: TopicInfo,
    io_timeout: Duration,
) -> Result<Finished> {
    let address = |node: i32| -> Result<String> {
        boot.cluster
            .brokers
            .iter()
            .find(|b| b.id == node)
            .map(|b| format!("{}:{}", b.host, b.port))
            .ok_or_else(|| anyhow!("partition leader {node} is not among the brokers named"))
    };
    let used: Vec<(i32, String)> = topic
        .partitions
        .iter()
        .take(config.partitions)
        .map(|p| Ok((p.partition, address(p.leader)?)))
        .collect::<Result<_>>()?;
    if let Some(limit) = topic
        .config
        .get("max.message.bytes")
        .and_then(|v| v.parse::<usize>().ok())
    {
        if config.size + BATCH_OVERHEAD > limit {
            return Err(input_error(format!(
                "--size {}: a batch of one such record is above topic {}'s max.message.bytes \
                 ({limit}); give --size {} or less, or raise max.message.bytes (--topic-config \
                 max.message.bytes=N on a new topic)",
                config.size,
                topic.name,
                limit.saturating_sub(BATCH_OVERHEAD)
            )));
        }
        // A full batch holds up to --batch-bytes of records, and the broker
        // refuses every batch above the limit.
        if config.batch_bytes + BATCH_OVERHEAD > limit {
            return Err(input_error(format!(
                "--batch-bytes {}: a full batch is above topic {}'s max.message.bytes ({limit}); \
                 give --batch-bytes {} or less, or raise max.message.bytes",
                config.batch_bytes,
                topic.name,
                limit.saturating_sub(BATCH_OVERHEAD)
            )));
        }
    }
    let versions = boot.versions;
    let client = config.client();
    let produce_settings = ProduceSettings {
        topic: config.topic.clone(),
        client: client.clone(),
        versions,
        io_timeout,
    };
    let fetch_settings = FetchSettings {
        topic: config.topic.clone(),
        client,
        versions,
        io_timeout,
        drain_ns: (2 * config.fetch_max_wait_ns).max(2_000_000_000),
    };
    let (series, produce_ids, consume_ids) = config.series();
    let mut warnings = Vec::new();
    preflight_warnings(config, &topic, &mut warnings);
    let plan = Plan {
        probe: "broker",
        load: if config.rate_per_s.is_some() {
            LoadMode::OpenLoop
        } else {
            LoadMode::ClosedLoop
        },
        parameters: serde_json::to_value(config)?,
        series,
        threads: config.producers + config.consumers,
        interval_ns: config.interval_length_ns,
        warnings,
    };
    let run_id = random_u64();
    let ledger = Ledger::new(run_id, config.producers);
    let producers: Vec<Mutex<Option<Producer>>> =
        (0..config.producers).map(|_| Mutex::new(None)).collect();
    let consumers: Vec<Mutex<Option<Consumer>>> =
        (0..config.consumers).map(|_| Mutex::new(None)).collect();
    // Consumer c reads partitions c, c + consumers, …
    let share = |c: usize| -> Vec<(i32, String)> {
        used.iter()
            .enumerate()
            .filter(|(i, _)| i % config.consumers == c)
            .map(|(_, p)| p.clone())
            .collect()
    };
    let prepare = |thread: usize| -> Result<()> {
        if thread < config.producers {
            let producer = Producer::connect(thread, &produce_settings, &used).and_then(|mut p| {
                p.warm_up(&MonotonicClock, config.warmup_ns, &ledger, stop)?;
                Ok(p)
            });
            ledger.warmed_up();
            *producers[thread].lock().map_err(|_| anyhow!("poisoned"))? = Some(producer?);
        } else {
            let c = thread - config.producers;
            // Start after the warm-up's records, so none is read while measuring.
            let wait = Duration::from_nanos(config.warmup_ns) + Duration::from_secs(30);
            let given_up = std::time::Instant::now() + wait;
            while !ledger.wait_warmed_up(Duration::from_millis(100)) {
                if stop.is_raised() {
                    return Err(crate::error::interrupted(
                        "interrupted during the warm-up: nothing was measured",
                    ));
                }
                if std::time::Instant::now() > given_up {
                    return Err(anyhow!(
                        "the producers' warm-up did not end within {wait:?}"
                    ));
                }
            }
            let consumer = Consumer::connect(&fetch_settings, &share(c), config.producers)?;
            *consumers[c].lock().map_err(|_| anyhow!("poisoned"))? = Some(consumer);
        }
        Ok(())
    };
    let pace = match config.rate_per_s {
        Some(rate) => Pace::Rate(rate / config.producers as f64, config.arrivals),
        None => Pace::Closed,
    };
    let body =
        |thread: usize, start: u64, recorder: &mut Recorder, stop: &StopFlag| -> Result<u64> {
            let clock = MonotonicClock;
            if thread < config.producers {
                let Some(producer) = producers[thread]
                    .lock()
                    .map_err(|_| anyhow!("poisoned"))?
                    .take()
                else {
                    ledger.producer_gone(thread, crate::sys::monotonic_ns());
                    return Err(anyhow!("producer {thread} was not prepared"));
                };
                producer
                    .run(
                        &clock,
                        recorder,
                        stop,
                        pace,
                        start,
                        start + config.runtime_ns,
                        config.producers,
                        produce_ids,
                        &ledger,
                    )
                    .map_err(|e| anyhow!("producer {thread}: {e:#}"))
            } else {
                let c = thread - config.producers;
                let consumer = consumers[c]
                    .lock()
                    .map_err(|_| anyhow!("poisoned"))?
                    .take()
                    .ok_or_else(|| anyhow!("consumer {c} was not prepared"))?;
                consumer
                    .run(&clock, recorder, stop, consume_ids, &ledger)
                    .map_err(|e| anyhow!("consumer {c}: {e:#}"))
            }
        };
    let complete = |run: &mut RunFile| {
        let records = ledger.account();
        if topic.created && !config.keep_topic {
            match admin::delete_after_run(boot, &config.topic) {
                Ok(()) => topic.deleted = true,
                Err(e) => run.warnings.push(Warning {
                    message: format!("the topic {} was not deleted: {e:#}", config.topic),
                    advice: format!(
                        "delete it by hand (scripts/kafka.sh topic delete {})",
                        config.topic
                    ),
                }),
            }
        }
        annotate(run, &records, config, stop.is_raised());
        run.broker = Some(BrokerReport {
            cluster: boot.cluster.clone(),
            topic: topic.clone(),
            client: config.client(),
            records,
        });
        Ok(())
    };
    let observe = run::Observe::default();
    run::run_completing(plan, &observe, destination, stop, prepare, body, complete)
}

fn preflight_warnings(config: &BrokerConfig, topic: &TopicInfo, warnings: &mut Vec<Warning>) {
    if config.acks == Acks::All && topic.replication_factor <= 1 {
        warnings.push(Warning {
            message: format!(
                "topic {} has one replica per partition: acks=all waits for the leader alone, \
                 the same as acks=1",
                topic.name
            ),
            advice: "measure acks=all on a topic with --replication-factor 3 (three brokers: \
                     scripts/kafka.sh start --brokers 3)"
                .into(),
        });
    }
    let degraded: Vec<String> = topic
        .under_replicated()
        .map(|p| format!("{} (in sync {:?} of {:?})", p.partition, p.isr, p.replicas))
        .collect();
    if !degraded.is_empty() {
        warnings.push(Warning {
            message: format!(
                "topic {}: partition(s) {} under-replicated at the start: acks=all waits for \
                 fewer replicas there than on a healthy cluster, and is refused \
                 (NOT_ENOUGH_REPLICAS) below min.insync.replicas",
                topic.name,
                degraded.join(", ")
            ),
            advice: "check the brokers (one stopped or lagging) and measure again once every \
                     replica is in sync (scripts/kafka.sh topic describe NAME)"
                .into(),
        });
    }
    if config.acks == Acks::None {
        warnings.push(Warning {
            message: "acks=0: the broker acknowledges nothing, so there is no publish latency; \
                      e2e (intended send → consumed) is the measure, and a lost record shows \
                      only as lost"
                .into(),
            advice: "compare with --acks 1 and --acks all (--acks-matrix)".into(),
        });
    }
    if config.fetch_min_bytes > 1 && config.fetch_max_wait_ns >= 10_000_000 {
        warnings.push(Warning {
            message: format!(
                "--fetch-min-bytes {} with --fetch-max-wait {}: when less data than that is \
                 waiting, each fetch waits the whole max-wait, and e2e shows it",
                config.fetch_min_bytes,
                format_duration_compact(config.fetch_max_wait_ns)
            ),
            advice: "keep --fetch-min-bytes 1 to measure the broker, not the consumer's batching"
                .into(),
        });
    }
}

/// Puts the faults in `faults` and warns about what went wrong.
fn annotate(
    run: &mut RunFile,
    r: &crate::model::broker::RecordAccounting,
    config: &BrokerConfig,
    stopped: bool,
) {
    for (name, value) in [
        ("failed", r.failed),
        ("lost", r.lost),
        ("duplicates", r.duplicates),
        ("out_of_order", r.out_of_order),
        ("in_flight", r.in_flight),
    ] {
        run.faults.insert(name.into(), value);
    }
    if r.failed > 0 {
        let why: Vec<String> = r.errors.iter().map(|(k, v)| format!("{v} {k}")).collect();
        run.warnings.push(Warning {
            message: format!(
                "{} of {} records failed: {}",
                r.failed,
                r.sent,
                why.join(", ")
            ),
            advice: "see the broker's log; DELIVERY_TIMEOUT means no acknowledgement within \
                     --timeout (each is in publish at the latency it had then)"
                .into(),
        });
    }
    let delivered = if config.acks == Acks::None {
        "sent"
    } else {
        "acknowledged"
    };
    if r.lost > 0 && stopped {
        run.warnings.push(Warning {
            message: format!(
                "{} records were {delivered} but not consumed before the run stopped (counted \
                 lost): a stop ends the consumers at once",
                r.lost
            ),
            advice: "let the run end by itself (--runtime) to have every record consumed".into(),
        });
    } else if r.lost > 0 {
        run.warnings.push(Warning {
            message: format!("{} records were {delivered} but never consumed", r.lost),
            advice: "with acks=1 a leader that fails loses what it had not replicated; otherwise \
                     the consumers ran out of drain time (a stalled broker?)"
                .into(),
        });
    }
    if r.duplicates + r.out_of_order > 0 {
        run.warnings.push(Warning {
            message: format!(
                "{} records consumed twice, {} out of order",
                r.duplicates, r.out_of_order
            ),
            advice: "records are not retried by cauda: a duplicate came from the broker".into(),
        });
    }
    if r.foreign > 0 {
        run.warnings.push(Warning {
            message: format!(
                "{} records on topic {} were not this run's (another writer)",
                r.foreign, config.topic
            ),
            advice: "measure on a topic of its own (omit --topic for a fresh one)".into(),
        });
    }
}

/// 64 random bits from the kernel, or the clock when that fails.
pub fn random_u64() -> u64 {
    let mut bytes = [0u8; 8];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
        .is_ok()
    {
        return u64::from_le_bytes(bytes);
    }
    crate::sys::monotonic_ns() ^ u64::from(std::process::id()) << 40
}
