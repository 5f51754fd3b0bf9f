//! `cauda net`: its flags, its configuration, its banner and its message
//! accounting.

use std::net::SocketAddr;

use anyhow::Result;
use clap::Args;

use super::measure::{ProbeCommand, Ran};
use super::parse::{CpuList, cpu_list, duration, message_size, rate};
use super::run_output::RunOutputArgs;
use crate::probe::net::Proto;
use crate::probe::net::{self, NetConfig};
use crate::probe::run::{Destination, Finished};
use crate::record::StopFlag;
use crate::units::{Rate, format_duration_compact};

/// `cauda net`.
#[derive(Debug, Args)]
pub struct NetArgs {
    /// The responder (`cauda serve`) to measure against, e.g. 127.0.0.1:7470.
    #[arg(long, value_name = "ADDR:PORT", required_unless_present = "loopback")]
    pub connect: Option<SocketAddr>,
    /// Start an in-process responder on an ephemeral 127.0.0.1 port and
    /// measure this host's own network stack.
    #[arg(long, conflicts_with = "connect")]
    pub loopback: bool,
    /// Transport protocol.
    #[arg(long, value_enum, default_value_t = Proto::Tcp)]
    pub proto: Proto,
    /// Request size in bytes, the 28-byte header included (e.g. 64, 4k).
    #[arg(long, value_name = "BYTES", default_value = "64", value_parser = message_size)]
    pub size: u32,
    /// Reply size in bytes, header included [default: --size].
    #[arg(long, value_name = "BYTES", value_parser = message_size)]
    pub response_size: Option<u32>,
    /// Concurrent connections, one measuring thread each.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub conns: usize,
    /// How long to measure.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = duration)]
    pub runtime: u64,
    /// Open loop: send this many messages per second in total (spread over
    /// --conns); latency (`rtt`) is measured from each intended send time and
    /// `service` from the actual send. Default: closed-loop ping-pong.
    #[arg(long, value_name = "N/s", value_parser = rate)]
    pub rate: Option<Rate>,
    /// Idle this long between a reply and the next ping (closed loop), to
    /// expose the cost of waking an idle CPU, e.g. 500us.
    #[arg(long, value_name = "DURATION", value_parser = duration, conflicts_with = "rate")]
    pub gap: Option<u64>,
    /// A reply not received within this long is counted lost (and, in rate
    /// mode, recorded in `rtt` at the latency it had when given up, at least
    /// this: it was slow, not absent).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = duration)]
    pub timeout: u64,
    /// Spin on non-blocking receive instead of sleeping in the kernel
    /// (lower latency, one full CPU per connection).
    #[arg(long)]
    pub busy_poll: bool,
    /// Pin connection threads to these CPUs (thread i on the i-th, round robin).
    #[arg(long, value_name = "LIST", value_parser = cpu_list)]
    pub cpus: Option<CpuList>,
    /// Also record `rtt/2`, the round trip halved, only to compare with
    /// tools that print half the round trip (sockperf, qperf). Not a latency.
    #[arg(long)]
    pub report_half: bool,
    /// Output options.
    #[command(flatten)]
    pub output: RunOutputArgs,
}

impl ProbeCommand for NetArgs {
    type Config = NetConfig;

    fn output(&self) -> &RunOutputArgs {
        &self.output
    }

    fn config(&self) -> Result<NetConfig> {
        let config = NetConfig {
            target: self.connect,
            loopback: self.loopback,
            proto: self.proto,
            size: self.size,
            response_size: self.response_size.unwrap_or(self.size),
            conns: self.conns,
            runtime_ns: self.runtime,
            rate_per_s: self.output.sharded_rate(self.rate)?.map(|r| r.per_second),
            gap_ns: self.gap.unwrap_or(0),
            timeout_ns: self.timeout,
            busy_poll: self.busy_poll,
            cpus: self.cpus.clone().map(|c| c.0).unwrap_or_default(),
            report_half: self.report_half,
            interval_length_ns: self.output.interval_length,
        };
        config.validate()?;
        Ok(config)
    }

    fn banner(config: &NetConfig) -> String {
        format!(
            "cauda net: {:?} to {}, {} B / {} B, {} connection(s), {} for {} — Ctrl-C stops and saves",
            config.proto,
            config
                .target
                .map_or("an in-process loopback responder".into(), |a| a.to_string()),
            config.size,
            config.response_size,
            config.conns,
            match config.rate_per_s {
                Some(r) => format!("{r}/s open loop"),
                None => "closed-loop ping-pong".into(),
            },
            format_duration_compact(config.runtime_ns),
        )
    }

    fn run(config: &NetConfig, destination: &Destination, stop: &StopFlag) -> Result<Ran> {
        Ok(net::run(config, destination, stop)?.into())
    }

    /// The message accounting: what was sent, answered, lost, and what
    /// was wrong with the replies.
    fn epilogue(finished: &Finished) {
        let faults = &finished.run.faults;
        let get = |k: &str| faults.get(k).copied().unwrap_or(0);
        eprintln!(
            "messages: {} sent, {} answered, {} lost, {} in flight at stop; replies: {} duplicate, {} late, {} wrong sequence, {} malformed",
            get("sent"),
            get("answered"),
            get("lost"),
            get("in_flight"),
            get("duplicate"),
            get("late"),
            get("wrong_seq"),
            get("malformed")
        );
    }
}
