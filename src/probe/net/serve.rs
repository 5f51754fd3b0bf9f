//! `cauda serve`: the responder `cauda net` measures against.
//!
//! One thread accepts TCP connections and hands each to a thread of its own
//! (a blocking read wakes the connection's thread directly: no event loop
//! between the packet and the reply). UDP is one thread answering
//! datagrams. The responder trusts nothing it reads:
//!
//! - a frame is validated from its 28-byte header before anything else is
//!   read (wrong magic, a length of 2^31: the connection is closed at once);
//! - the request payload is read through a fixed 4 KiB buffer and discarded,
//!   the reply written from the same buffer, so a connection costs that
//!   buffer and a 64 KiB stack whatever the frame sizes — memory is bounded
//!   by `--max-conns` (at the limit, the connection silent longest is
//!   closed to make room for the new one);
//! - a frame that has begun must complete within `--frame-timeout` (a slow
//!   sender, or half a frame held open), a connection that sends nothing
//!   is closed after `--idle-timeout`, and a reader that does not take its
//!   replies is closed when a write blocks longer than `--frame-timeout`.

use std::io::{self, ErrorKind};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result};

use super::conn::{Answer, Closed, Conn, Faults, Watch, longest_idle, reply_header};
use super::protocol::{HEADER_LEN, Header, Kind, MAX_MESSAGE_LIMIT};
use crate::error::input_error;
use crate::record::StopFlag;
use crate::sys;

/// How often blocked threads look at the stop flag and their deadlines.
const TICK: Duration = Duration::from_millis(100);
/// The stack of a connection thread.
const CONN_STACK: usize = 64 * 1024;

/// How TCP connections are served.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// A thread per connection, blocking reads: the packet wakes the
    /// connection's own thread.
    #[default]
    Threads,
    /// One thread, one epoll loop, non-blocking sockets.
    Epoll,
}

/// The responder's settings.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// Where to listen.
    pub listen: SocketAddr,
    /// UDP instead of TCP.
    pub udp: bool,
    /// The TCP engine.
    pub engine: Engine,
    /// Most TCP connections at once.
    pub max_conns: usize,
    /// Largest frame accepted or sent.
    pub max_message: u32,
    /// A TCP connection silent this long is closed.
    pub idle_timeout_ns: u64,
    /// A frame must complete within this long of its first byte.
    pub frame_timeout_ns: u64,
    /// Fault injection: do not answer every Nth request.
    pub drop_every: Option<u64>,
    /// Fault injection: answer every Nth request twice.
    pub dup_every: Option<u64>,
    /// Fault injection: answer every Nth request with a wrong sequence number.
    pub wrong_seq_every: Option<u64>,
    /// Answer UDP requests with replies more than [`REFLECTION_FACTOR`]
    /// times their size on a listener beyond loopback.
    pub allow_large_replies: bool,
}

/// The most a UDP reply may outgrow its request on a listener beyond
/// loopback, unless allowed: a spoofed 28-byte request must not turn cauda
/// into a 2,000× reflector aimed at someone else.
pub const REFLECTION_FACTOR: u64 = 8;

impl ServeConfig {
    /// Whether a UDP request of `request_len` bytes asking for a reply of
    /// `response_size` bytes is answered.
    pub fn reply_allowed(&self, request_len: usize, response_size: u32) -> bool {
        self.allow_large_replies
            || self.listen.ip().is_loopback()
            || u64::from(response_size) <= REFLECTION_FACTOR * request_len as u64
    }

    /// A loopback responder on an ephemeral port with the default limits.
    pub fn loopback(udp: bool) -> Self {
        ServeConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            udp,
            engine: Engine::default(),
            max_conns: 512,
            max_message: super::protocol::DEFAULT_MAX_MESSAGE,
            idle_timeout_ns: 60_000_000_000,
            frame_timeout_ns: 1_000_000_000,
            drop_every: None,
            dup_every: None,
            wrong_seq_every: None,
            allow_large_replies: false,
        }
    }

    /// Checks the limits; errors name the flag.
    pub fn validate(&self) -> Result<()> {
        if !(HEADER_LEN as u32..=MAX_MESSAGE_LIMIT).contains(&self.max_message) {
            return Err(input_error(format!(
                "--max-message {}: must lie between {HEADER_LEN} and {MAX_MESSAGE_LIMIT} bytes",
                self.max_message
            )));
        }
        if self.max_conns == 0 || self.max_conns > 100_000 {
            return Err(input_error("--max-conns: must lie between 1 and 100000"));
        }
        if self.idle_timeout_ns < 1_000_000 || self.frame_timeout_ns < 1_000_000 {
            return Err(input_error(
                "--idle-timeout and --frame-timeout must be at least 1ms",
            ));
        }
        for (flag, n) in [
            ("--drop-every", self.drop_every),
            ("--dup-every", self.dup_every),
            ("--wrong-seq-every", self.wrong_seq_every),
        ] {
            if n == Some(0) {
                return Err(input_error(format!("{flag}: must be at least 1")));
            }
        }
        Ok(())
    }
}

/// What the responder did, counted.
#[derive(Debug, Default)]
pub struct ServeStats {
    /// Requests answered.
    pub replies: AtomicU64,
    /// TCP connections accepted.
    pub accepted: AtomicU64,
    /// TCP connections closed on accept: no descriptor, thread or room.
    pub refused: AtomicU64,
    /// Connections closed to make room at `--max-conns` (the longest idle).
    pub evicted: AtomicU64,
    /// Connections or datagrams dropped for a malformed frame.
    pub malformed: AtomicU64,
    /// UDP requests not answered because the reply would be more than
    /// [`REFLECTION_FACTOR`] times the request (beyond loopback).
    pub oversized: AtomicU64,
    /// Connections dropped because a frame was not completed in time.
    pub slow: AtomicU64,
    /// Connections closed for being idle.
    pub idle: AtomicU64,
    /// TCP connections open now.
    pub open: AtomicUsize,
}

impl ServeStats {
    /// One line for people.
    pub fn line(&self) -> String {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut line = format!(
            "{} replies; {} connections accepted, {} refused, {} evicted (longest idle at \
             --max-conns), dropped: {} malformed, {} slow, {} idle",
            get(&self.replies),
            get(&self.accepted),
            get(&self.refused),
            get(&self.evicted),
            get(&self.malformed),
            get(&self.slow),
            get(&self.idle)
        );
        let oversized = get(&self.oversized);
        if oversized > 0 {
            line.push_str(&format!(
                "; {oversized} UDP request(s) unanswered: the reply would be over \
                 {REFLECTION_FACTOR}× the request beyond loopback (--allow-large-replies)"
            ));
        }
        line
    }

    /// The counters as a Prometheus page, labelled with the protocol.
    pub fn page(&self, protocol: &str) -> crate::probe::endpoint::Page {
        use crate::formats::export::prometheus::{Family, Metric, Value};
        let labels = vec![("protocol".to_string(), protocol.to_string())];
        let counter = |name, help, a: &AtomicU64| Family {
            name,
            help,
            metrics: vec![Metric {
                labels: labels.clone(),
                value: Value::Counter(a.load(Ordering::Relaxed) as f64),
            }],
        };
        let families = [
            counter(
                "cauda_serve_replies_total",
                "Requests answered.",
                &self.replies,
            ),
            counter(
                "cauda_serve_connections_accepted_total",
                "TCP connections accepted.",
                &self.accepted,
            ),
            counter(
                "cauda_serve_connections_refused_total",
                "TCP connections closed on accept: no descriptor, thread or room.",
                &self.refused,
            ),
            counter(
                "cauda_serve_connections_evicted_total",
                "Connections closed to make room at --max-conns (the longest idle).",
                &self.evicted,
            ),
            counter(
                "cauda_serve_malformed_total",
                "Connections or datagrams dropped for a malformed frame.",
                &self.malformed,
            ),
            counter(
                "cauda_serve_oversized_total",
                "UDP requests unanswered: the reply would be too large beyond loopback.",
                &self.oversized,
            ),
            counter(
                "cauda_serve_slow_total",
                "Connections dropped because a frame was not completed in time.",
                &self.slow,
            ),
            counter(
                "cauda_serve_idle_total",
                "Connections closed for being idle.",
                &self.idle,
            ),
            Family {
                name: "cauda_serve_connections_open",
                help: "TCP connections open now.",
                metrics: vec![Metric {
                    labels: labels.clone(),
                    value: Value::Gauge(self.open.load(Ordering::Relaxed) as f64),
                }],
            },
        ];
        crate::probe::endpoint::Page::of(&families, 0)
    }
}

/// A running responder.
#[derive(Debug)]
pub struct Server {
    addr: SocketAddr,
    stop: StopFlag,
    stats: Arc<ServeStats>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Binds and starts serving on background threads until `stop` rises
    /// (or the server is dropped).
    pub fn start(config: ServeConfig, stop: StopFlag) -> Result<Server> {
        config.validate()?;
        let stats = Arc::new(ServeStats::default());
        let bind_error = |e: io::Error| {
            let why = match e.kind() {
                ErrorKind::AddrInUse => {
                    "the port is in use; choose another port or stop what holds it".to_string()
                }
                ErrorKind::AddrNotAvailable => "no local interface has this address".to_string(),
                ErrorKind::PermissionDenied => {
                    "permission denied (ports below 1024 need root)".to_string()
                }
                _ => e.to_string(),
            };
            input_error(format!("--listen {}: cannot bind: {why}", config.listen))
        };
        let (addr, thread) = if config.udp {
            let socket = UdpSocket::bind(config.listen).map_err(bind_error)?;
            socket.set_read_timeout(Some(TICK))?;
            let addr = socket.local_addr()?;
            let (config, stats, stop) = (config.clone(), stats.clone(), stop.clone());
            let thread = std::thread::Builder::new()
                .name("cauda-serve-udp".into())
                .spawn(move || serve_udp(&socket, &config, &stats, &stop))
                .context("cannot start the responder thread")?;
            (addr, thread)
        } else {
            let listener = TcpListener::bind(config.listen).map_err(bind_error)?;
            sys::set_listen_backlog(listener.as_fd(), config.max_conns)?;
            listener.set_nonblocking(true)?;
            let addr = listener.local_addr()?;
            let (config, stats, stop) = (config.clone(), stats.clone(), stop.clone());
            let thread = std::thread::Builder::new()
                .name("cauda-serve-accept".into())
                .spawn(move || match config.engine {
                    Engine::Threads => accept_loop(&listener, &config, &stats, &stop),
                    Engine::Epoll => {
                        if let Err(e) = super::epoll::serve(&listener, &config, &stats, &stop) {
                            eprintln!("cauda serve: the epoll loop failed: {e}");
                        }
                    }
                })
                .context("cannot start the responder thread")?;
            (addr, thread)
        };
        Ok(Server {
            addr,
            stop,
            stats,
            thread: Some(thread),
        })
    }

    /// The address it listens on (with the ephemeral port filled in).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its counters (live while it runs).
    pub fn stats(&self) -> Arc<ServeStats> {
        self.stats.clone()
    }

    /// Waits until the stop flag rises and the listening thread ends.
    pub fn wait(mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(t) = self.thread.take() {
            self.stop.raise();
            let _ = t.join();
        }
    }
}

fn accept_loop(
    listener: &TcpListener,
    config: &ServeConfig,
    stats: &Arc<ServeStats>,
    stop: &StopFlag,
) {
    // Connection threads block in read with no timeout; this thread closes
    // the overdue ones (and all of them when stopping) every tick.
    let mut watches: Vec<Arc<Watch>> = Vec::new();
    let mut last_sweep = sys::monotonic_ns();
    while !stop.is_raised() {
        match sys::poll_readable(listener.as_fd(), TICK.as_millis() as i32) {
            Ok(true) => accept_all(listener, config, stats, stop, &mut watches),
            Ok(false) => {}
            Err(e) => {
                eprintln!("cauda serve: waiting for connections failed: {e}");
                std::thread::sleep(TICK);
            }
        }
        let now = sys::monotonic_ns();
        if now.saturating_sub(last_sweep) >= TICK.as_nanos() as u64 {
            last_sweep = now;
            // A watch only this thread holds belongs to a finished connection.
            watches.retain(|w| Arc::strong_count(w) > 1);
            for watch in &watches {
                watch.check(now, config, false);
            }
        }
    }
    for watch in &watches {
        watch.check(0, config, true);
    }
}

fn accept_all(
    listener: &TcpListener,
    config: &ServeConfig,
    stats: &Arc<ServeStats>,
    stop: &StopFlag,
    watches: &mut Vec<Arc<Watch>>,
) {
    loop {
        let stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            // Drained (WouldBlock), or out of descriptors or a connection
            // reset before accept: the server goes on.
            Err(_) => return,
        };
        if stats.open.load(Ordering::Relaxed) >= config.max_conns
            && !make_room(watches, stats, config.max_conns)
        {
            stats.refused.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        let Ok(watch) = Watch::new(&stream) else {
            stats.refused.fetch_add(1, Ordering::Relaxed);
            continue;
        };
        stats.open.fetch_add(1, Ordering::Relaxed);
        stats.accepted.fetch_add(1, Ordering::Relaxed);
        let (config, stats2, stop, watch2) =
            (config.clone(), stats.clone(), stop.clone(), watch.clone());
        let spawned = std::thread::Builder::new()
            .name("cauda-serve-conn".into())
            .stack_size(CONN_STACK)
            .spawn(move || {
                count_closed(
                    &stats2,
                    serve_conn(stream, &watch2, &config, &stats2, &stop),
                );
                stats2.open.fetch_sub(1, Ordering::Relaxed);
            });
        match spawned {
            Ok(_) => watches.push(watch),
            Err(_) => {
                // No thread for it (out of memory or a thread limit): the
                // connection was dropped with the closure.
                stats.open.fetch_sub(1, Ordering::Relaxed);
                stats.refused.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// At `--max-conns`, asks the connection silent longest to close; false
/// when none can. Connections being closed count as open until their thread
/// ends, and are not asked twice.
fn make_room(watches: &mut Vec<Arc<Watch>>, stats: &ServeStats, max_conns: usize) -> bool {
    watches.retain(|w| Arc::strong_count(w) > 1);
    let closing = watches.iter().filter(|w| w.closing()).count();
    if stats.open.load(Ordering::Relaxed).saturating_sub(closing) < max_conns {
        return true;
    }
    let open = watches.iter().filter(|w| !w.closing());
    match longest_idle(open.map(|w| (w, w.last_activity()))) {
        Some(victim) => {
            victim.evict();
            true
        }
        None => false,
    }
}

/// Counts a closed connection by why it closed.
pub(super) fn count_closed(stats: &ServeStats, why: Closed) {
    let counter = match why {
        Closed::Peer | Closed::Stop | Closed::Reset => return,
        Closed::Malformed => &stats.malformed,
        Closed::Slow => &stats.slow,
        Closed::Idle => &stats.idle,
        Closed::Evicted => &stats.evicted,
    };
    counter.fetch_add(1, Ordering::Relaxed);
}

fn serve_conn(
    stream: TcpStream,
    watch: &Watch,
    config: &ServeConfig,
    stats: &ServeStats,
    stop: &StopFlag,
) -> Closed {
    if stream.set_nodelay(true).is_err()
        || stream.set_read_timeout(None).is_err()
        || stream
            .set_write_timeout(Some(Duration::from_nanos(config.frame_timeout_ns)))
            .is_err()
    {
        return Closed::Reset;
    }
    let mut conn = Conn::new(stream);
    let result = (|| -> Result<(), Closed> {
        loop {
            conn.take_frames(config, stats)?;
            watch.publish(&conn);
            if stop.is_raised() {
                return Err(Closed::Stop);
            }
            conn.read_once(config)?;
        }
    })();
    let why = result.err().unwrap_or(Closed::Stop);
    // A read ended by the watchdog's shutdown looks like the peer closing.
    watch.why().unwrap_or(why)
}

fn serve_udp(socket: &UdpSocket, config: &ServeConfig, stats: &ServeStats, stop: &StopFlag) {
    // One byte more than the limit, so an oversized datagram shows as such
    // instead of being silently truncated to a valid length.
    let mut buf = vec![0u8; config.max_message as usize + 1];
    let mut out = vec![0u8; config.max_message as usize];
    let mut faults = Faults::default();
    while !stop.is_raised() {
        let (n, peer) = match socket.recv_from(&mut buf) {
            Ok(x) => x,
            Err(_) => continue,
        };
        let header = match Header::decode_datagram(&buf[..n], config.max_message) {
            Ok(h) if h.kind == Kind::Request => h,
            _ => {
                stats.malformed.fetch_add(1, Ordering::Relaxed);
                continue;
            }
        };
        if !config.reply_allowed(n, header.response_size) {
            stats.oversized.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        let (seq, times) = match faults.answer(config, header.seq) {
            Answer::Not => continue,
            Answer::Once(seq) => (seq, 1),
            Answer::Twice(seq) => (seq, 2),
        };
        let reply = reply_header(&header, seq);
        reply.encode(&mut out[..HEADER_LEN]);
        for _ in 0..times {
            // A send that fails (the peer's buffer is full) is the same as
            // a lost reply: the client counts it.
            let _ = socket.send_to(&out[..reply.len as usize], peer);
        }
        stats.replies.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udp_replies_beyond_loopback_are_bounded_by_the_request() {
        let on = |ip: [u8; 4], allow: bool| ServeConfig {
            listen: SocketAddr::from((ip, 7470)),
            allow_large_replies: allow,
            ..ServeConfig::loopback(true)
        };
        // The review's case: a 28-byte request asking for 65,507 bytes.
        assert!(!on([0, 0, 0, 0], false).reply_allowed(28, 65_507));
        assert!(!on([10, 0, 0, 1], false).reply_allowed(28, 225));
        assert!(on([10, 0, 0, 1], false).reply_allowed(28, 224));
        assert!(on([10, 0, 0, 1], true).reply_allowed(28, 65_507));
        assert!(on([127, 0, 0, 2], false).reply_allowed(28, 65_507));
    }
}
