//! The `net` probe's parameters as resolved (stored in the run file),
//! their checks, and the series they ask for ([`SeriesIds`]).

use std::net::SocketAddr;

use anyhow::Result;
use serde::Serialize;

use super::protocol::{HEADER_LEN, MAX_MESSAGE_LIMIT};
use crate::error::input_error;
use crate::model::MeasuredFrom;
use crate::probe::run::{Blamed, OfferedPlan, SeriesSpec};
use crate::record::Schedule;

/// The transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Proto {
    /// TCP, one connection per --conns, TCP_NODELAY on.
    Tcp,
    /// UDP, one connected socket per --conns.
    Udp,
}

/// The `net` probe's parameters, as resolved; stored in the run file.
#[derive(Clone, Debug, Serialize)]
pub struct NetConfig {
    /// The responder; with `loopback`, filled in once it listens.
    pub target: Option<SocketAddr>,
    /// An in-process responder on an ephemeral loopback port.
    pub loopback: bool,
    /// TCP or UDP.
    pub proto: Proto,
    /// Request size in bytes, header included.
    pub size: u32,
    /// Reply size in bytes, header included.
    pub response_size: u32,
    /// Connections, one thread each.
    pub conns: usize,
    /// How long to measure, in ns.
    pub runtime_ns: u64,
    /// Open loop: messages per second over all connections; `None`: ping-pong.
    pub rate_per_s: Option<f64>,
    /// Closed loop: idle this long after each reply, in ns.
    pub gap_ns: u64,
    /// A reply later than this (ns) is lost.
    pub timeout_ns: u64,
    /// Spin on non-blocking sockets.
    pub busy_poll: bool,
    /// CPUs to pin connection threads to; empty = unpinned.
    pub cpus: Vec<usize>,
    /// Also record `rtt/2`.
    pub report_half: bool,
    /// The histogram interval length in ns.
    pub interval_length_ns: u64,
}

impl NetConfig {
    /// Checks the parameters; every problem is an input error naming its flag.
    pub fn validate(&self) -> Result<()> {
        for (flag, bytes) in [
            ("--size", self.size),
            ("--response-size", self.response_size),
        ] {
            if !(HEADER_LEN as u32..=MAX_MESSAGE_LIMIT).contains(&bytes) {
                return Err(input_error(format!(
                    "{flag} {bytes}: must lie between {HEADER_LEN} (the frame header) and \
                     {MAX_MESSAGE_LIMIT} bytes"
                )));
            }
        }
        if self.conns == 0 || self.conns > 1024 {
            return Err(input_error("--conns: must lie between 1 and 1024"));
        }
        if self.runtime_ns < 1_000_000 || self.runtime_ns > 30 * 24 * 3_600_000_000_000 {
            return Err(input_error("--runtime: must lie between 1ms and 30 days"));
        }
        if self.timeout_ns < 1_000_000 || self.timeout_ns > 3_600_000_000_000 {
            return Err(input_error("--timeout: must lie between 1ms and 1h"));
        }
        if self.gap_ns > 3_600_000_000_000 {
            return Err(input_error("--gap: at most 1h"));
        }
        if let Some(rate) = self.rate_per_s
            && rate / self.conns as f64 > 1e6
        {
            return Err(input_error(format!(
                "--rate {rate}/s: above 1M/s per connection, which one message in flight cannot \
                 reach; add --conns"
            )));
        }
        crate::probe::check_interval_length(self.interval_length_ns)?;
        crate::probe::check_cpus(&self.cpus)?;
        Ok(())
    }

    /// Open loop: connection `thread`'s period and phase (the connections'
    /// schedules are spread over one period).
    pub fn rate_of(&self, thread: usize) -> Option<(f64, u64)> {
        self.rate_per_s.map(|r| {
            let period = 1e9 * self.conns as f64 / r;
            (period, (period * thread as f64 / self.conns as f64) as u64)
        })
    }

    /// Open loop: what the engine needs to count the offered load and
    /// judge whether the generator kept up.
    pub(super) fn offered(&self) -> Option<OfferedPlan> {
        let rate = self.rate_per_s?;
        Some(OfferedPlan {
            rate_per_s: rate,
            schedules: (0..self.conns)
                .filter_map(|t| self.rate_of(t).map(|r| schedule(r, 0)))
                .collect(),
            runtime_ns: self.runtime_ns,
            in_flight_limit: Some(self.conns as u64),
            lag: "lag".into(),
            completed: vec!["rtt".into()],
            service: vec!["service".into()],
            advice: "each connection keeps one message in flight and is one thread: add \
                     connections (--conns), give the client CPUs of its own (--cpus, away from \
                     busy tasks), or try --busy-poll; then lower --rate if it still lags",
        })
    }

    /// The series recorded, and where each connection puts them.
    pub(super) fn series(&self) -> (Vec<SeriesSpec>, SeriesIds) {
        let rate = self.rate_per_s.is_some();
        let from = if rate {
            MeasuredFrom::IntendedStart
        } else {
            MeasuredFrom::ActualStart
        };
        let mut specs = vec![SeriesSpec {
            blamed: Blamed::Yes,
            tag: "rtt".into(),
            measured_from: from,
        }];
        let mut ids = SeriesIds {
            rtt: 0,
            service: None,
            half: None,
            lag: None,
        };
        if rate {
            ids.service = Some(specs.len());
            specs.push(SeriesSpec {
                blamed: Blamed::No,
                tag: "service".into(),
                measured_from: MeasuredFrom::ActualStart,
            });
            ids.lag = Some(specs.len());
            specs.push(SeriesSpec {
                blamed: Blamed::No,
                tag: "lag".into(),
                measured_from: MeasuredFrom::IntendedStart,
            });
        }
        if self.report_half {
            ids.half = Some(specs.len());
            specs.push(SeriesSpec {
                blamed: Blamed::No,
                tag: "rtt/2".into(),
                measured_from: from,
            });
        }
        (specs, ids)
    }
}

/// Which series a measurement goes to.
#[derive(Clone, Copy, Debug)]
pub struct SeriesIds {
    /// The round trip (from the intended send in rate mode).
    pub rtt: usize,
    /// From the actual send; rate mode only.
    pub service: Option<usize>,
    /// The round trip halved; `--report-half` only.
    pub half: Option<usize>,
    /// How late each message was sent against the later of its intended
    /// time and the previous reply (the generator's own lag); rate mode only.
    pub lag: Option<usize>,
}

/// A connection's schedule from `start_ns`, given its period and phase.
pub fn schedule((period, phase): (f64, u64), start_ns: u64) -> Schedule {
    Schedule::new(
        start_ns + phase,
        period,
        crate::record::Arrivals::Uniform,
        1,
    )
}
