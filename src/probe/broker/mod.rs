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
//! - [`replies`]: every response decoded, for the fuzz target;
//! - [`ledger`]: what producers and consumers share, and every record's
//!   fate at the end;
//! - [`config`]: the parameters and their checks; `threads`: the
//!   measuring threads as the run engine runs them; `warnings`: what the run
//!   file says beside the series.
//!
//! Series: `publish`, `publish.service`, `publish.queue` (producers) and
//! `e2e`, `e2e.fetch` (consumers); with `acks=0` only `publish.queue` and
//! the `e2e` pair's first. The record accounting goes into the run file's
//! `broker` section and its faults into `faults`.

pub mod admin;
pub mod config;
pub mod consume;
pub mod ledger;
pub mod produce;
pub mod replies;
pub mod stamp;
mod threads;
mod warnings;
pub mod wire;

pub use self::config::{Acks, BrokerConfig};

use std::time::Duration;

use anyhow::{Result, anyhow};

use self::admin::{Bootstrap, TopicWanted};
use self::config::BATCH_OVERHEAD;
use self::consume::ConsumeSeries;
use self::ledger::Ledger;
use self::produce::ProduceSeries;
use self::threads::Threads;
use self::warnings::{annotate, preflight_warnings};
use crate::error::input_error;
use crate::model::broker::{BrokerReport, TopicInfo};
use crate::model::{LoadMode, RunFile, Warning};
use crate::probe::run::{self, Destination, Finished, Plan};
use crate::record::{Recorder, StopFlag};

/// Runs the probe and writes its run file, with the record accounting in
/// the `broker` section.
pub fn run(config: &BrokerConfig, destination: &Destination, stop: &StopFlag) -> Result<Finished> {
    config.validate()?;
    if destination.blamed() {
        check_blame(config)?;
    }
    let io_timeout = Duration::from_nanos(config.timeout_ns.max(5_000_000_000));
    let mut boot = admin::bootstrap(&config.bootstrap, io_timeout, stop)?;
    let wanted = TopicWanted {
        name: config.topic.clone(),
        partitions: config.partitions,
        replication_factor: config.replication_factor,
        configs: config.topic_configs.clone(),
    };
    let topic =
        admin::topic(&mut boot, &wanted).map_err(|e| wire::unusable(e, &config.bootstrap))?;
    let created = topic.created;
    // From here the topic may be cauda's: a run that failed before its
    // file was completed deletes it here (completing deletes it otherwise).
    let result = measure(config, destination, stop, &mut boot, topic, io_timeout);
    if result.is_err() && created && !config.keep_topic {
        let _ = admin::delete_after_run(&boot, &config.topic, stop);
    }
    result
}

/// Measures on a topic that exists: plan → threads → complete.
fn measure(
    config: &BrokerConfig,
    destination: &Destination,
    stop: &StopFlag,
    boot: &mut Bootstrap,
    mut topic: TopicInfo,
    io_timeout: Duration,
) -> Result<Finished> {
    let partitions =
        leaders(boot, &topic, config).map_err(|e| wire::unusable(e, &config.bootstrap))?;
    if destination.blamed() {
        check_blame_leaders(&partitions)?;
    }
    check_message_limit(config, &topic)?;
    let (plan, produce_ids, consume_ids) = plan(config, &topic)?;
    let ledger = Ledger::new(random_u64(), config.producers);
    let threads = Threads::new(
        config,
        boot.versions,
        io_timeout,
        partitions,
        (produce_ids, consume_ids),
        ledger,
        stop,
    )
    .with_largest_batch(largest_batch(config, &topic));
    let prepare = |thread: usize| threads.prepare(thread);
    let body = |thread: usize, start: u64, recorder: &mut Recorder, stop: &StopFlag| {
        threads.body(thread, start, recorder, stop)
    };
    let complete = |run: &mut RunFile| {
        complete(run, config, &threads.ledger, boot, &mut topic, stop);
        Ok(())
    };
    let observe = run::Observe::default();
    run::run_completing(plan, &observe, destination, stop, prepare, body, complete)
}

/// The partitions measured (at most `--partitions`), each with its
/// leader's address.
fn leaders(
    boot: &Bootstrap,
    topic: &TopicInfo,
    config: &BrokerConfig,
) -> Result<Vec<(i32, String)>> {
    let address = |node: i32| -> Result<String> {
        boot.cluster
            .brokers
            .iter()
            .find(|b| b.id == node)
            .map(|b| format!("{}:{}", b.host, b.port))
            .ok_or_else(|| anyhow!("partition leader {node} is not among the brokers named"))
    };
    topic
        .partitions
        .iter()
        .take(config.partitions)
        .map(|p| Ok((p.partition, address(p.leader)?)))
        .collect()
}

/// `--kernel blame` explains one operation per thread at a time: here a
/// produce request, from its write to its acknowledgement
/// (`publish.service`), so a producer may keep only one in flight.
fn check_blame(config: &BrokerConfig) -> Result<()> {
    if config.acks == Acks::None {
        return Err(input_error(
            "--kernel blame explains each slow produce request, from its write to its \
             acknowledgement, and --acks 0 has none: use --acks 1 or all",
        ));
    }
    let threads = config.producers + config.consumers;
    if threads > crate::host::trace::blame::THREADS {
        return Err(input_error(format!(
            "--kernel blame keeps counters for at most {} probe threads, and --producers {} \
             with --consumers {} make {threads}: use fewer",
            crate::host::trace::blame::THREADS,
            config.producers,
            config.consumers
        )));
    }
    if config.max_in_flight > 1 {
        return Err(input_error(format!(
            "--kernel blame explains one request at a time per producer thread, and \
             --max-in-flight {} keeps several in flight on each: use --max-in-flight 1 with \
             --producers N for N in flight",
            config.max_in_flight
        )));
    }
    Ok(())
}

/// With partitions on several leaders, a producer keeps a request in
/// flight to each at once.
fn check_blame_leaders(partitions: &[(i32, String)]) -> Result<()> {
    let mut addresses: Vec<&str> = partitions.iter().map(|(_, a)| a.as_str()).collect();
    addresses.sort_unstable();
    addresses.dedup();
    if addresses.len() > 1 {
        return Err(input_error(format!(
            "--kernel blame explains one request at a time per producer thread, and the \
             topic's partitions have {} leaders ({}), each with a request in flight: give \
             --partitions 1, or a topic led by one broker",
            addresses.len(),
            addresses.join(", ")
        )));
    }
    Ok(())
}

/// The largest record batch a fetch may bring: the topic's
/// `max.message.bytes` (Kafka's default, 1 MiB, when unknown), or cauda's
/// own batches if larger.
fn largest_batch(config: &BrokerConfig, topic: &TopicInfo) -> usize {
    let topic_limit = topic
        .config
        .get("max.message.bytes")
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(1 << 20);
    topic_limit
        .max(config.size + BATCH_OVERHEAD)
        .max(config.batch_bytes + BATCH_OVERHEAD)
}

/// Refuses `--size` and `--batch-bytes` that the topic's
/// `max.message.bytes` would refuse batch by batch.
fn check_message_limit(config: &BrokerConfig, topic: &TopicInfo) -> Result<()> {
    let Some(limit) = topic
        .config
        .get("max.message.bytes")
        .and_then(|v| v.parse::<usize>().ok())
    else {
        return Ok(());
    };
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
    Ok(())
}

/// The engine's plan (series, threads, the warnings known before
/// measuring), and where producers and consumers record.
fn plan(config: &BrokerConfig, topic: &TopicInfo) -> Result<(Plan, ProduceSeries, ConsumeSeries)> {
    let (series, produce_ids, consume_ids) = config.series();
    let mut warnings = Vec::new();
    preflight_warnings(config, topic, &mut warnings);
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
        offered: config.offered(),
    };
    Ok((plan, produce_ids, consume_ids))
}

/// What the probe adds to the run once its threads are done: every
/// record's fate, the topic deleted when cauda created it, the faults and
/// their warnings, how long the target held the producers' schedules, and
/// the `broker` section.
fn complete(
    run: &mut RunFile,
    config: &BrokerConfig,
    ledger: &Ledger,
    boot: &Bootstrap,
    topic: &mut TopicInfo,
    stop: &StopFlag,
) {
    let records = ledger.account();
    if topic.created && !config.keep_topic {
        match admin::delete_after_run(boot, &config.topic, stop) {
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
    // What the target held of the producers' schedules (each at most its
    // span: a hold is counted up to the schedule's end).
    if let Some(offered) = run.offered.as_mut() {
        let most = offered.span_ns.saturating_mul(offered.schedules);
        offered.held_ns = Some(ledger.held_ns().min(most));
    }
    run.broker = Some(BrokerReport {
        cluster: boot.cluster.clone(),
        topic: topic.clone(),
        client: config.client(),
        records,
    });
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
