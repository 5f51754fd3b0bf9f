//! The `net` probe and its responder, `cauda serve`: network round-trip
//! latency with the full round trip recorded (never halved) and, in rate
//! mode, no coordinated omission.
//!
//! - [`protocol`]: the 28-byte-header framed protocol both sides speak;
//! - [`mod@serve`]: the responder (a thread per TCP connection or one epoll
//!   loop; one UDP thread), with limits;
//! - [`client`]: the measuring loop, one connection per probe thread;
//! - [`link`]: the client's socket: connect, send, receive by a deadline;
//! - [`config`]: the parameters and their checks; `conns`: the
//!   connections as the run engine runs them.
//!
//! Message accounting (sent, answered, lost, in flight, duplicates, late
//! and wrong-sequence replies) goes into the run file's `faults` map, all
//! keys present, so `sent = answered + lost + in_flight` can be checked.

pub mod client;
pub mod config;
mod conns;
pub mod link;
pub mod protocol;
pub mod serve;

pub use self::config::{NetConfig, Proto};

use anyhow::Result;

use self::client::Counts;
use self::config::SeriesIds;
use self::conns::Conns;
use self::protocol::MAX_MESSAGE_LIMIT;
use crate::error::input_error;
use crate::model::{LoadMode, RunFile, Warning};
use crate::probe::run::{self, Destination, Finished, Plan};
use crate::record::{Recorder, StopFlag};
use crate::units::format_duration_compact;

/// Runs the probe (starting the loopback responder if asked) and writes
/// its run file, with the message accounting in `faults`.
pub fn run(config: &NetConfig, destination: &Destination, stop: &StopFlag) -> Result<Finished> {
    config.validate()?;
    destination.check_blamed_threads(config.conns)?;
    let (_server, config) = start_loopback(config)?;
    let target = config
        .target
        .ok_or_else(|| input_error("give --connect ADDR:PORT or --loopback"))?;
    let (plan, ids) = plan(&config)?;
    let conns = Conns::new(&config, target, ids, stop);
    let prepare = |thread: usize| conns.prepare(thread);
    let body = |thread: usize, start: u64, recorder: &mut Recorder, stop: &StopFlag| {
        conns.body(thread, start, recorder, stop)
    };
    // The message accounting completes the run before its one write, also
    // when a connection failed after measuring.
    let complete = |run: &mut RunFile| {
        annotate(run, &conns.total(), &config);
        Ok(())
    };
    let observe = run::Observe::default();
    run::run_completing(plan, &observe, destination, stop, prepare, body, complete)
}

/// With `--loopback`, starts the in-process responder (kept running until
/// the returned server is dropped) and aims the probe at it.
fn start_loopback(config: &NetConfig) -> Result<(Option<serve::Server>, NetConfig)> {
    let server_stop = StopFlag::new();
    let server = if config.loopback {
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
    if let Some(server) = &server {
        config.target = Some(server.addr());
    }
    Ok((server, config))
}

/// The engine's plan, and where each connection records.
fn plan(config: &NetConfig) -> Result<(Plan, SeriesIds)> {
    let (series, ids) = config.series();
    let plan = Plan {
        probe: "net",
        load: if config.rate_per_s.is_some() {
            LoadMode::OpenLoop
        } else {
            LoadMode::ClosedLoop
        },
        parameters: serde_json::to_value(config)?,
        series,
        threads: config.conns,
        interval_ns: config.interval_length_ns,
        warnings: Vec::new(),
        offered: config.offered(),
    };
    Ok((plan, ids))
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
