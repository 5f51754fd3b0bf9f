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
//!   by `--max-conns` (connections past it are closed on accept);
//! - a frame that has begun must complete within `--frame-timeout` (a slow
//!   sender, or half a frame held open), a connection that sends nothing
//!   is closed after `--idle-timeout`, and a reader that does not take its
//!   replies is closed when a write blocks longer than `--frame-timeout`.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result};

use super::protocol::{FrameError, HEADER_LEN, Header, Kind, MAX_MESSAGE_LIMIT};
use crate::error::input_error;
use crate::record::StopFlag;
use crate::sys;

/// How often blocked threads look at the stop flag and their deadlines.
const TICK: Duration = Duration::from_millis(100);
/// The per-connection buffer.
const BUF_LEN: usize = 4096;
/// The stack of a connection thread.
const CONN_STACK: usize = 64 * 1024;

/// The responder's settings.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// Where to listen.
    pub listen: SocketAddr,
    /// UDP instead of TCP.
    pub udp: bool,
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
}

impl ServeConfig {
    /// A loopback responder on an ephemeral port with the default limits.
    pub fn loopback(udp: bool) -> Self {
        ServeConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            udp,
            max_conns: 512,
            max_message: super::protocol::DEFAULT_MAX_MESSAGE,
            idle_timeout_ns: 60_000_000_000,
            frame_timeout_ns: 1_000_000_000,
            drop_every: None,
            dup_every: None,
            wrong_seq_every: None,
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
    /// TCP connections closed on accept because `--max-conns` were open.
    pub refused: AtomicU64,
    /// Connections or datagrams dropped for a malformed frame.
    pub malformed: AtomicU64,
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
        format!(
            "{} replies; {} connections accepted, {} refused (--max-conns), dropped: {} malformed, \
             {} slow, {} idle",
            get(&self.replies),
            get(&self.accepted),
            get(&self.refused),
            get(&self.malformed),
            get(&self.slow),
            get(&self.idle)
        )
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
            listener.set_nonblocking(true)?;
            let addr = listener.local_addr()?;
            let (config, stats, stop) = (config.clone(), stats.clone(), stop.clone());
            let thread = std::thread::Builder::new()
                .name("cauda-serve-accept".into())
                .spawn(move || accept_loop(&listener, &config, &stats, &stop))
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
    while !stop.is_raised() {
        match sys::poll_readable(listener.as_fd(), TICK.as_millis() as i32) {
            Ok(true) => {}
            Ok(false) => continue,
            Err(e) => {
                eprintln!("cauda serve: waiting for connections failed: {e}");
                std::thread::sleep(TICK);
                continue;
            }
        }
        loop {
            let stream = match listener.accept() {
                Ok((stream, _)) => stream,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                // Out of descriptors or a connection reset before accept:
                // this one is lost, the server goes on.
                Err(_) => break,
            };
            if stats.open.load(Ordering::Relaxed) >= config.max_conns {
                stats.refused.fetch_add(1, Ordering::Relaxed);
                drop(stream);
                continue;
            }
            stats.open.fetch_add(1, Ordering::Relaxed);
            stats.accepted.fetch_add(1, Ordering::Relaxed);
            let (config, stats2, stop) = (config.clone(), stats.clone(), stop.clone());
            let spawned = std::thread::Builder::new()
                .name("cauda-serve-conn".into())
                .stack_size(CONN_STACK)
                .spawn(move || {
                    let outcome = serve_conn(stream, &config, &stats2, &stop);
                    match outcome {
                        Closed::Peer | Closed::Stop | Closed::Reset => {}
                        Closed::Malformed => {
                            stats2.malformed.fetch_add(1, Ordering::Relaxed);
                        }
                        Closed::Slow => {
                            stats2.slow.fetch_add(1, Ordering::Relaxed);
                        }
                        Closed::Idle => {
                            stats2.idle.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    stats2.open.fetch_sub(1, Ordering::Relaxed);
                });
            if spawned.is_err() {
                // No thread for it (out of memory or a thread limit): the
                // connection was dropped with the closure.
                stats.open.fetch_sub(1, Ordering::Relaxed);
                stats.refused.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// Why a connection ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Closed {
    Peer,
    Stop,
    Reset,
    Malformed,
    Slow,
    Idle,
}

/// Counts requests and applies the fault injection.
#[derive(Debug, Default)]
struct Faults {
    n: u64,
}

/// What to do with a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Answer {
    Once(u64),
    Twice(u64),
    Not,
}

impl Faults {
    fn answer(&mut self, config: &ServeConfig, seq: u64) -> Answer {
        self.n += 1;
        let every = |k: Option<u64>| k.is_some_and(|k| self.n.is_multiple_of(k));
        if every(config.drop_every) {
            Answer::Not
        } else if every(config.wrong_seq_every) {
            Answer::Once(seq.wrapping_add(1 << 40))
        } else if every(config.dup_every) {
            Answer::Twice(seq)
        } else {
            Answer::Once(seq)
        }
    }
}

fn reply_header(request: &Header, seq: u64) -> Header {
    Header {
        len: request.response_size,
        kind: Kind::Reply,
        seq,
        sent_ns: request.sent_ns,
        response_size: request.response_size,
    }
}

/// Writes one reply of `header.len` bytes from `out` (zeros past the header).
fn write_reply(stream: &mut TcpStream, out: &mut [u8; BUF_LEN], header: &Header) -> io::Result<()> {
    header.encode(&mut out[..HEADER_LEN]);
    let mut left = header.len as usize;
    let first = left.min(BUF_LEN);
    stream.write_all(&out[..first])?;
    left -= first;
    // The rest are zeros: the buffer past the header is never written.
    while left > 0 {
        let n = left.min(BUF_LEN - HEADER_LEN);
        stream.write_all(&out[HEADER_LEN..HEADER_LEN + n])?;
        left -= n;
    }
    Ok(())
}

fn serve_conn(
    mut stream: TcpStream,
    config: &ServeConfig,
    stats: &ServeStats,
    stop: &StopFlag,
) -> Closed {
    if stream.set_nodelay(true).is_err()
        || stream.set_read_timeout(Some(TICK)).is_err()
        || stream
            .set_write_timeout(Some(Duration::from_nanos(config.frame_timeout_ns)))
            .is_err()
    {
        return Closed::Reset;
    }
    let mut buf = [0u8; BUF_LEN];
    let mut out = [0u8; BUF_LEN];
    let (mut start, mut end) = (0usize, 0usize);
    // The request being read: its header and the payload bytes still to skip.
    let mut pending: Option<(Header, usize)> = None;
    let mut faults = Faults::default();
    let mut frame_began = 0u64;
    let mut last_activity = sys::monotonic_ns();
    loop {
        // Take every complete frame (or payload) the buffer holds.
        loop {
            if let Some((header, skip)) = pending {
                let n = skip.min(end - start);
                start += n;
                if skip > n {
                    pending = Some((header, skip - n));
                    break;
                }
                pending = None;
                let answer = faults.answer(config, header.seq);
                let result = match answer {
                    Answer::Not => Ok(()),
                    Answer::Once(seq) => {
                        write_reply(&mut stream, &mut out, &reply_header(&header, seq))
                    }
                    Answer::Twice(seq) => {
                        write_reply(&mut stream, &mut out, &reply_header(&header, seq)).and_then(
                            |()| write_reply(&mut stream, &mut out, &reply_header(&header, seq)),
                        )
                    }
                };
                match result {
                    Ok(()) => {}
                    Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                        return Closed::Slow;
                    }
                    Err(_) => return Closed::Reset,
                }
                if answer != Answer::Not {
                    stats.replies.fetch_add(1, Ordering::Relaxed);
                }
                frame_began = sys::monotonic_ns();
                continue;
            }
            if end - start >= HEADER_LEN {
                let header = match Header::decode(&buf[start..end], config.max_message) {
                    Ok(h) if h.kind == Kind::Request => h,
                    _ => return Closed::Malformed,
                };
                start += HEADER_LEN;
                pending = Some((header, header.len as usize - HEADER_LEN));
                continue;
            }
            break;
        }
        // Fewer than a header's bytes remain: move them to the front.
        buf.copy_within(start..end, 0);
        end -= start;
        start = 0;
        let in_frame = pending.is_some() || end > 0;
        match stream.read(&mut buf[end..]) {
            Ok(0) => return Closed::Peer,
            Ok(n) => {
                let now = sys::monotonic_ns();
                if !in_frame {
                    frame_began = now;
                } else if now.saturating_sub(frame_began) > config.frame_timeout_ns {
                    // A trickle of bytes keeps the read from timing out.
                    return Closed::Slow;
                }
                last_activity = now;
                end += n;
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                if stop.is_raised() {
                    return Closed::Stop;
                }
                let now = sys::monotonic_ns();
                if in_frame && now.saturating_sub(frame_began) > config.frame_timeout_ns {
                    return Closed::Slow;
                }
                if !in_frame && now.saturating_sub(last_activity) > config.idle_timeout_ns {
                    return Closed::Idle;
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return Closed::Reset,
        }
        if stop.is_raised() {
            return Closed::Stop;
        }
    }
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
            Ok(_) | Err(FrameError::Truncated(_) | _) => {
                stats.malformed.fetch_add(1, Ordering::Relaxed);
                continue;
            }
        };
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
