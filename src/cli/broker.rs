//! `cauda broker`: its flags, its configuration, its banner and every
//! record's fate.

use anyhow::Result;
use clap::Args;

use super::measure::{ProbeCommand, Ran};
use super::parse::{duration, rate};
use super::run_output::RunOutputArgs;
use crate::error::Outcome;
use crate::probe::broker::{Acks, BrokerConfig};
use crate::probe::run::{Destination, Finished};
use crate::record::Arrivals;
use crate::record::StopFlag;
use crate::units::{self, Rate};

fn bytes(text: &str) -> Result<usize, String> {
    let n = units::parse_size(text)?;
    usize::try_from(n).map_err(|_| format!("'{text}' is too large"))
}

fn topic_config(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((k, v)) if !k.is_empty() && !v.is_empty() => Ok((k.into(), v.into())),
        _ => Err(format!(
            "'{text}': expected NAME=VALUE, e.g. flush.messages=1 or min.insync.replicas=2"
        )),
    }
}

/// `cauda broker`.
#[derive(Debug, Args)]
pub struct BrokerArgs {
    /// A broker of the cluster, HOST:PORT (`scripts/kafka.sh start` runs
    /// one on 127.0.0.1:9092).
    #[arg(long, value_name = "HOST:PORT")]
    pub bootstrap: String,
    /// Acknowledgements to wait for: 0 (none; e2e only), 1 (the leader),
    /// all (every in-sync replica).
    #[arg(long, value_name = "0|1|all", default_value = "1", value_parser = Acks::parse)]
    pub acks: Acks,
    /// Open loop: records per second over all producers, each measured from
    /// its intended send time.
    #[arg(long, value_name = "N/s", default_value = "1000/s", value_parser = rate)]
    pub rate: Rate,
    /// How intended send times are spaced.
    #[arg(long, value_enum, default_value_t = Arrivals::Uniform)]
    pub arrivals: Arrivals,
    /// Closed loop instead (like kafka-e2e-latency): each producer sends
    /// its next record once the previous one was consumed. Latency is then
    /// measured from the actual send and the run is labelled closed loop.
    #[arg(long)]
    pub closed_loop: bool,
    /// Record value size (at least 36 bytes: the stamp), e.g. 1k.
    #[arg(long, value_name = "BYTES", default_value = "1k", value_parser = bytes)]
    pub size: usize,
    /// The topic; created when missing (and then deleted after the run
    /// unless --keep-topic). Default: a fresh cauda-XXXXXXXX per run.
    #[arg(long, value_name = "NAME")]
    pub topic: Option<String>,
    /// Partitions of a topic cauda creates (an existing topic must have at
    /// least this many; the first N are used).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub partitions: usize,
    /// Replicas per partition of a topic cauda creates [default: the
    /// broker's default.replication.factor].
    #[arg(long, value_name = "N")]
    pub replication_factor: Option<i16>,
    /// A config of a topic cauda creates, NAME=VALUE (repeatable), e.g.
    /// flush.messages=1 (fsync every append) or min.insync.replicas=2.
    #[arg(long, value_name = "NAME=VALUE", value_parser = topic_config)]
    pub topic_config: Vec<(String, String)>,
    /// Keep a topic cauda created.
    #[arg(long)]
    pub keep_topic: bool,
    /// Producer threads (each with its own connection to every leader).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub producers: usize,
    /// Consumer threads; partitions are assigned round robin (no group).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub consumers: usize,
    /// How long a batch waits for more records (`linger.ms`). cauda's
    /// default is 0; Kafka's Java client has used 5ms since 4.0.
    #[arg(long, value_name = "DURATION", default_value = "0ms", value_parser = duration)]
    pub linger: u64,
    /// A batch is written once it holds this many bytes (`batch.size`).
    #[arg(long, value_name = "BYTES", default_value = "16k", value_parser = bytes)]
    pub batch_bytes: usize,
    /// Requests in flight per connection (`max.in.flight.requests.per.connection`).
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub max_in_flight: usize,
    /// Longest a fetch waits for --fetch-min-bytes (`fetch.max.wait.ms`).
    #[arg(long, value_name = "DURATION", default_value = "500ms", value_parser = duration)]
    pub fetch_max_wait: u64,
    /// Bytes a fetch waits for (`fetch.min.bytes`); 1 answers as soon as a
    /// record is there.
    #[arg(long, value_name = "BYTES", default_value_t = 1)]
    pub fetch_min_bytes: i32,
    /// A record not acknowledged this long after it was written is given
    /// up (failed, and in publish at the latency it had then).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = duration)]
    pub timeout: u64,
    /// How long to measure.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = duration)]
    pub runtime: u64,
    /// Before measuring, each producer sends records one at a time for this
    /// long (not measured; consumers skip them).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = duration)]
    pub warmup: u64,
    /// Run the same workload with acks 0, 1 and all, in rounds whose order
    /// alternates (0, 1, all; then all, 1, 0), a run file each (-o's name
    /// with -acks0, -acks1, -acksall and -rN), then print each setting's
    /// rounds pooled, side by side, and compare acks=1 with the other two,
    /// with confidence intervals.
    #[arg(long, conflicts_with = "acks")]
    pub acks_matrix: bool,
    /// Rounds of --acks-matrix: 2 or more let the order of the settings
    /// alternate, so warming brokers favour none of them.
    #[arg(long, value_name = "N", default_value_t = 2, requires = "acks_matrix",
          value_parser = clap::value_parser!(usize))]
    pub matrix_rounds: usize,
    /// Output options.
    #[command(flatten)]
    pub output: RunOutputArgs,
}

impl BrokerArgs {
    /// `--acks-matrix`: the broker measured at each acknowledgement
    /// setting, in rounds, and compared.
    pub fn run_matrix(&self) -> Result<Outcome> {
        let config = self.config()?;
        let destination = self.output.destination()?;
        if destination.blamed() {
            return Err(crate::error::input_error(
                "--kernel blame with --acks-matrix: its acks=0 rounds have no acknowledgement to \
                 end a request's window; run the matrix without --kernel blame, or --acks 1 and \
                 --acks all one at a time with it",
            ));
        }
        crate::workflow::matrix::run(&config, &destination, self.matrix_rounds)
    }
}

impl ProbeCommand for BrokerArgs {
    type Config = BrokerConfig;

    fn output(&self) -> &RunOutputArgs {
        &self.output
    }

    /// The configuration these flags ask for (a fresh topic name unless
    /// --topic; a --rate divided by --shard).
    fn config(&self) -> Result<BrokerConfig> {
        let (topic, topic_generated) = match &self.topic {
            Some(t) => (t.clone(), false),
            None => (
                format!("cauda-{:08x}", crate::probe::broker::random_u64() as u32),
                true,
            ),
        };
        let config = BrokerConfig {
            bootstrap: self.bootstrap.clone(),
            topic,
            topic_generated,
            acks: self.acks,
            size: self.size,
            partitions: self.partitions,
            replication_factor: self.replication_factor,
            topic_configs: self.topic_config.clone(),
            producers: self.producers,
            consumers: self.consumers,
            rate_per_s: if self.closed_loop {
                None
            } else {
                self.output
                    .sharded_rate(Some(self.rate))?
                    .map(|r| r.per_second)
            },
            arrivals: self.arrivals,
            linger_ns: self.linger,
            batch_bytes: self.batch_bytes,
            max_in_flight: self.max_in_flight,
            fetch_max_wait_ns: self.fetch_max_wait,
            fetch_min_bytes: self.fetch_min_bytes,
            timeout_ns: self.timeout,
            runtime_ns: self.runtime,
            warmup_ns: self.warmup,
            keep_topic: self.keep_topic,
            interval_length_ns: self.output.interval_length,
        };
        config.validate()?;
        Ok(config)
    }

    fn banner(config: &BrokerConfig) -> String {
        format!(
            "cauda broker: {} topic {}, acks={}, {} B records, {} producer(s), {} consumer(s), {} for {} — Ctrl-C stops and saves",
            config.bootstrap,
            config.topic,
            config.acks.name(),
            config.size,
            config.producers,
            config.consumers,
            match config.rate_per_s {
                Some(r) => format!("{r}/s open loop"),
                None => "closed loop".into(),
            },
            units::format_duration_compact(config.runtime_ns),
        )
    }

    fn run(config: &BrokerConfig, destination: &Destination, stop: &StopFlag) -> Result<Ran> {
        Ok(crate::probe::broker::run(config, destination, stop)?.into())
    }

    /// Every record's fate.
    fn epilogue(finished: &Finished) {
        if let Some(b) = &finished.run.broker {
            let r = &b.records;
            eprintln!(
                "records: {} sent, {} acked, {} failed, {} in flight at stop; {} consumed, {} lost, {} duplicate, {} out of order",
                r.sent,
                r.acked,
                r.failed,
                r.in_flight,
                r.consumed,
                r.lost,
                r.duplicates,
                r.out_of_order
            );
        }
    }
}
