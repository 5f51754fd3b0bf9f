//! `cauda serve`: the responder `cauda net` measures against.

use std::net::SocketAddr;

use anyhow::Result;
use clap::Args;

use super::parse::{duration, message_size};
use crate::error::Outcome;
use crate::probe::net::serve::ServeConfig;
use crate::record::StopFlag;

/// `cauda serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on. Loopback by default; give 0.0.0.0:PORT to accept
    /// other hosts.
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:7470")]
    pub listen: SocketAddr,
    /// Serve UDP instead of TCP.
    #[arg(long)]
    pub udp: bool,
    /// How TCP connections are served: a thread each, or one epoll loop.
    #[arg(long, value_enum, default_value_t = crate::probe::net::serve::Engine::Threads)]
    pub engine: crate::probe::net::serve::Engine,
    /// Most TCP connections served at once; at the limit, the connection
    /// silent longest is closed to make room for a new one.
    #[arg(long, value_name = "N", default_value_t = 512)]
    pub max_conns: usize,
    /// Largest frame accepted or sent, in bytes (at most 65507).
    #[arg(long, value_name = "BYTES", default_value = "65507", value_parser = message_size)]
    pub max_message: u32,
    /// Close a TCP connection that sends nothing for this long.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = duration)]
    pub idle_timeout: u64,
    /// Close a TCP connection whose frame, once begun, is not complete
    /// within this long (a slow or stuck sender).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = duration)]
    pub frame_timeout: u64,
    /// Fault injection for tests: do not answer every Nth request.
    #[arg(long, value_name = "N", hide = true)]
    pub drop_every: Option<u64>,
    /// Fault injection for tests: answer every Nth request twice.
    #[arg(long, value_name = "N", hide = true)]
    pub dup_every: Option<u64>,
    /// Fault injection for tests: answer every Nth request with a wrong sequence number.
    #[arg(long, value_name = "N", hide = true)]
    pub wrong_seq_every: Option<u64>,
    /// Answer UDP requests with replies more than 8 times their size when
    /// listening beyond loopback (by default such requests go unanswered,
    /// so a spoofed request cannot make cauda a traffic reflector).
    #[arg(long)]
    pub allow_large_replies: bool,
    /// Print nothing but errors.
    #[arg(short, long)]
    pub quiet: bool,
    /// Serve the responder's counters (replies, connections, drops) to
    /// Prometheus at http://ADDR/metrics. PORT alone listens on loopback.
    #[arg(long, value_name = "ADDR", value_parser = crate::probe::run::endpoint::parse_listen)]
    pub metrics_listen: Option<std::net::SocketAddr>,
}

impl ServeArgs {
    /// Serves until Ctrl-C.
    pub fn run(self) -> Result<Outcome> {
        let config = ServeConfig {
            listen: self.listen,
            udp: self.udp,
            engine: self.engine,
            max_conns: self.max_conns,
            max_message: self.max_message,
            idle_timeout_ns: self.idle_timeout,
            frame_timeout_ns: self.frame_timeout,
            drop_every: self.drop_every,
            dup_every: self.dup_every,
            wrong_seq_every: self.wrong_seq_every,
            allow_large_replies: self.allow_large_replies,
        };
        config.validate()?;
        let stop = StopFlag::on_signals()?;
        crate::probe::net::serve(config, self.metrics_listen, &stop, self.quiet)?;
        Ok(Outcome::Done)
    }
}
