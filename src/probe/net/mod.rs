//! The `net` probe and its responder, `cauda serve`: network round-trip
//! latency with the full round trip recorded (never halved) and, in rate
//! mode, no coordinated omission.
//!
//! - [`protocol`]: the 28-byte-header framed protocol both sides speak;
//! - [`mod@serve`]: the responder (a thread per TCP connection or one epoll
//!   loop; one UDP thread), with limits;
//! - [`client`]: the measuring loop, one connection per probe thread;
//! - [`link`]: the client's socket: connect, send, receive by a deadline.
//!
//! Message accounting (sent, answered, lost, in flight, duplicates, late
//! and wrong-sequence replies) goes into the run file's `faults` map, all
//! keys present, so `sent = answered + lost + in_flight` can be checked.

pub mod client;
mod conn;
mod epoll;
pub mod link;
pub mod protocol;
pub mod serve;

use std::net::SocketAddr;
use std::sync::Mutex;

use anyhow::{Context, Result, anyhow};
use serde::Serialize;

use self::client::{Conversation, Counts, Pacing, SeriesIds, SharedCounts};
use self::link::Link;
use self::protocol::{HEADER_LEN, MAX_MESSAGE_LIMIT};
use crate::error::input_error;
use crate::model::{LoadMode, MeasuredFrom, RunFile, Warning};
use crate::probe::run::SeriesSpec;
use crate::probe::run::{self, Destination, Finished, Plan};
use crate::record::{MonotonicClock, Recorder, StopFlag};
use crate::sys;
use crate::units::format_duration_compact;

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

    fn series(&self) -> (Vec<SeriesSpec>, SeriesIds) {
        let rate = self.rate_per_s.is_some();
        let from = if rate {
            MeasuredFrom::IntendedStart
        } else {
            MeasuredFrom::ActualStart
        };
        let mut specs = vec![SeriesSpec {
            tag: "rtt".into(),
            measured_from: from,
        }];
        let mut ids = SeriesIds {
            rtt: 0,
            service: None,
            half: None,
        };
        if rate {
            ids.service = Some(specs.len());
            specs.push(SeriesSpec {
                tag: "service".into(),
                measured_from: MeasuredFrom::ActualStart,
            });
        }
        if self.report_half {
            ids.half = Some(specs.len());
            specs.push(SeriesSpec {
                tag: "rtt/2".into(),
                measured_from: from,
            });
        }
        (specs, ids)
    }
}

/// Runs the probe (starting the loopback responder if asked) and writes
/// its run file, with the message accounting in `faults`.
pub fn run(config: &NetConfig, destination: &Destination, stop: &StopFlag) -> Result<Finished> {
    config.validate()?;
    let server_stop = StopFlag::new();
    let _server = if config.loopback {
        let serve_config = serve::ServeConfig {
            max_message: MAX_MESSAGE_LIMIT,
            // Room for every connection of this run: none is evicted.
            max_conns: config.conns.max(512),
            ..serve::ServeConfig::loopback(config.proto == Proto::Udp)
        };
        Some(serve::Server::start(serve_config, server_stop.clone())?)
    } else {
        None
    };
    let mut config = config.clone();
    if let Some(server) = &_server {
        config.target = Some(server.addr());
    }
    let target = config
        .target
        .ok_or_else(|| input_error("give --connect ADDR:PORT or --loopback"))?;

    let (series, ids) = config.series();
    let plan = Plan {
        probe: "net",
        load: if config.rate_per_s.is_some() {
            LoadMode::OpenLoop
        } else {
            LoadMode::ClosedLoop
        },
        parameters: serde_json::to_value(&config)?,
        series,
        threads: config.conns,
        interval_ns: config.interval_length_ns,
        warnings: Vec::new(),
    };
    // Each connection, warmed up, and when it was (monotonic ns).
    let links: Vec<Mutex<Option<(Link, Conversation, u64)>>> =
        (0..config.conns).map(|_| Mutex::new(None)).collect();
    let shared = SharedCounts::default();
    let max_frame = config.size.max(config.response_size);

    // Connects and warms up connection `thread`.
    let open = |thread: usize| -> Result<(Link, Conversation)> {
        let mut link = Link::connect(
            config.proto,
            target,
            config.timeout_ns,
            config.busy_poll,
            max_frame,
        )
        .map_err(|e| {
            if config.loopback {
                anyhow!(
                    "{e}: the in-process responder did not take connection {} of {}",
                    thread + 1,
                    config.conns
                )
            } else {
                let udp = if config.proto == Proto::Udp {
                    " --udp"
                } else {
                    ""
                };
                anyhow!("{e}; is `cauda serve --listen {target}{udp}` running there?")
            }
        })?;
        let mut talk = Conversation::new(config.size, config.response_size);
        client::warm_up(
            &MonotonicClock,
            &mut link,
            &mut talk,
            config.timeout_ns,
            stop,
        )?;
        talk.counts = Counts::default();
        Ok((link, talk))
    };
    /// A connection idle this long before the run starts is opened again.
    const REOPEN_AFTER_NS: u64 = 1_000_000_000;
    let prepare = |thread: usize| -> Result<()> {
        if !config.cpus.is_empty() {
            let cpu = config.cpus[thread % config.cpus.len()];
            sys::pin_current_thread(cpu).map_err(|e| {
                input_error(format!("--cpus: cannot pin a thread to CPU {cpu} ({e})"))
            })?;
        }
        let _ = sys::set_timer_slack_ns(1);
        let (link, talk) = open(thread)?;
        *links[thread].lock().map_err(|_| anyhow!("poisoned"))? =
            Some((link, talk, sys::monotonic_ns()));
        Ok(())
    };
    let body =
        |thread: usize, start: u64, recorder: &mut Recorder, stop: &StopFlag| -> Result<u64> {
            let (mut link, mut talk, opened) = links[thread]
                .lock()
                .map_err(|_| anyhow!("poisoned"))?
                .take()
                .ok_or_else(|| anyhow!("connection {thread} was not prepared"))?;
            // After a wait (--start-at) the responder may have closed the
            // idle connection: open it afresh. The one made while preparing
            // checked, before the wait, that the target answers.
            if start.saturating_sub(opened) > REOPEN_AFTER_NS {
                drop(link);
                (link, talk) = open(thread)?;
            }
            let pacing = Pacing {
                rate: config.rate_per_s.map(|r| {
                    let period = 1e9 * config.conns as f64 / r;
                    (
                        period,
                        (period * thread as f64 / config.conns as f64) as u64,
                    )
                }),
                gap_ns: config.gap_ns,
                timeout_ns: config.timeout_ns,
                busy_poll: config.busy_poll,
                start_ns: start,
                end_ns: start + config.runtime_ns,
            };
            let result = client::ping(
                &MonotonicClock,
                &mut link,
                &mut talk,
                pacing,
                ids,
                recorder,
                stop,
            );
            shared.add(&talk.counts);
            result.with_context(|| {
                format!(
                    "connection {thread}: after {} replies to {} messages",
                    talk.counts.answered, talk.counts.sent
                )
            })
        };
    // The message accounting completes the run before its one write, also
    // when a connection failed after measuring.
    let complete = |run: &mut RunFile| {
        annotate(run, &shared.total(), &config);
        Ok(())
    };
    let observe = run::Observe::default();
    run::run_completing(plan, &observe, destination, stop, prepare, body, complete)
}

/// Puts the message accounting in `faults` and warns about what went wrong.
fn annotate(run: &mut RunFile, counts: &Counts, config: &NetConfig) {
    for (name, value) in counts.entries() {
        run.faults.insert(name.into(), value);
    }
    let timeout = format_duration_compact(config.timeout_ns);
    if counts.lost > 0 {
        run.warnings.push(Warning {
            message: format!(
                "{} of {} messages lost (no reply within --timeout {timeout}){}",
                counts.lost,
                counts.sent,
                if config.rate_per_s.is_some() {
                    "; each is recorded in rtt at the latency it had when given up"
                } else {
                    "; closed loop: they are not in rtt"
                }
            ),
            advice: "a loaded or stalled responder, a full socket buffer, or a lossy path; raise \
                     --timeout if replies arrive late (see `late`)"
                .into(),
        });
    }
    if counts.duplicate + counts.late + counts.wrong_seq + counts.malformed > 0 {
        run.warnings.push(Warning {
            message: format!(
                "unexpected replies: {} duplicate, {} late, {} with a sequence number never sent, \
                 {} malformed",
                counts.duplicate, counts.late, counts.wrong_seq, counts.malformed
            ),
            advice:
                "check that the responder is `cauda serve` and nothing else answers on its port"
                    .into(),
        });
    }
    if config.report_half {
        run.warnings.push(Warning {
            message: "rtt/2 is the round trip halved, recorded only for comparison with sockperf \
                      and qperf"
                .into(),
            advice: "quote rtt: halving hides which direction was slow and halves the peaks".into(),
        });
    }
}

/// `cauda serve`: runs the responder until `stop` rises, with its counters
/// served to Prometheus at `metrics` when given.
pub fn serve(
    config: serve::ServeConfig,
    metrics: Option<std::net::SocketAddr>,
    stop: &StopFlag,
    quiet: bool,
) -> Result<()> {
    let server = serve::Server::start(config.clone(), stop.clone())?;
    if !quiet {
        eprintln!(
            "cauda serve: {} on {} (max {} connections, frames up to {} bytes) — Ctrl-C stops",
            if config.udp { "UDP" } else { "TCP" },
            server.addr(),
            config.max_conns,
            config.max_message
        );
    }
    let metrics_endpoint = match metrics {
        Some(addr) => {
            let stats = server.stats();
            let protocol = if config.udp { "udp" } else { "tcp" };
            let endpoint = crate::probe::run::endpoint::Endpoint::start(
                addr,
                Box::new(move || std::sync::Arc::new(stats.page(protocol))),
            )?;
            Some(endpoint)
        }
        None => None,
    };
    if let (Some(endpoint), false) = (&metrics_endpoint, quiet) {
        eprintln!("cauda serve: metrics at http://{}/metrics", endpoint.addr());
    }
    let stats = server.stats();
    server.wait();
    if !quiet {
        eprintln!("cauda serve: stopped; {}", stats.line());
    }
    Ok(())
}
