//! The command-line arguments of `cauda net` and `cauda serve`.

use std::net::SocketAddr;

use clap::Args;

use super::{CpuList, RunOutputArgs, cpu_list, duration, rate};
use crate::probe::net::Proto;
use crate::units::{self, Rate};

fn size(text: &str) -> Result<u32, String> {
    let bytes = units::parse_size(text)?;
    u32::try_from(bytes).map_err(|_| format!("'{text}' is too large"))
}

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
    #[arg(long, value_name = "BYTES", default_value = "64", value_parser = size)]
    pub size: u32,
    /// Reply size in bytes, header included [default: --size].
    #[arg(long, value_name = "BYTES", value_parser = size)]
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
    #[arg(long, value_name = "BYTES", default_value = "65507", value_parser = size)]
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
