//! One TCP connection's state on the responder, shared by both engines
//! (a thread per connection, or one epoll loop).
//!
//! Fixed memory: a 4 KiB receive buffer through which request payloads are
//! skipped (never stored) and a 4 KiB reply buffer whose bytes past the
//! header stay zero. A header is validated before any payload is read.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::config::ServeConfig;
use super::stats::ServeStats;
use crate::probe::net::protocol::{HEADER_LEN, Header, Kind};
use crate::sys;

/// The per-connection buffer size.
pub(super) const BUF_LEN: usize = 4096;

/// Why a connection ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Closed {
    /// The client closed it.
    Peer,
    /// The responder is stopping.
    Stop,
    /// A socket error.
    Reset,
    /// A malformed frame.
    Malformed,
    /// A frame not completed (or a reply not taken) in time.
    Slow,
    /// Nothing sent for the idle timeout.
    Idle,
    /// The longest idle when a new connection arrived at `--max-conns`.
    Evicted,
}

/// Which connection makes room for a new one at `--max-conns`: the one
/// silent longest. Candidates are `(key, last activity)`; idle clients (or
/// a flood of connections that never speak) go before busy ones, so a full
/// table cannot lock a measuring client out for the idle timeout.
pub(super) fn longest_idle<K>(candidates: impl Iterator<Item = (K, u64)>) -> Option<K> {
    candidates.min_by_key(|&(_, last)| last).map(|(key, _)| key)
}

/// Counts requests and applies the fault injection.
#[derive(Debug, Default)]
pub(super) struct Faults {
    n: u64,
}

/// What to do with a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Answer {
    Once(u64),
    Twice(u64),
    Not,
}

impl Faults {
    pub(super) fn answer(&mut self, config: &ServeConfig, seq: u64) -> Answer {
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

/// The reply to `request`, numbered `seq`.
pub(super) fn reply_header(request: &Header, seq: u64) -> Header {
    Header {
        len: request.response_size,
        kind: Kind::Reply,
        seq,
        sent_ns: request.sent_ns,
        response_size: request.response_size,
    }
}

/// A connection and its buffers.
#[derive(Debug)]
pub(super) struct Conn {
    pub(super) stream: TcpStream,
    buf: [u8; BUF_LEN],
    out: [u8; BUF_LEN],
    start: usize,
    end: usize,
    /// The request being read: its header and the payload bytes still to skip.
    pending: Option<(Header, usize)>,
    faults: Faults,
    frame_began: u64,
    last_activity: u64,
}

impl Conn {
    pub(super) fn new(stream: TcpStream) -> Conn {
        Conn {
            stream,
            buf: [0; BUF_LEN],
            out: [0; BUF_LEN],
            start: 0,
            end: 0,
            pending: None,
            faults: Faults::default(),
            frame_began: 0,
            last_activity: sys::monotonic_ns(),
        }
    }

    fn in_frame(&self) -> bool {
        self.pending.is_some() || self.end > self.start
    }

    /// Writes one reply of `header.len` bytes (zeros past the header).
    fn write_reply(&mut self, header: &Header) -> Result<(), Closed> {
        header.encode(&mut self.out[..HEADER_LEN]);
        let mut left = header.len as usize;
        let first = left.min(BUF_LEN);
        let mut result = self.stream.write_all(&self.out[..first]);
        left -= first;
        while result.is_ok() && left > 0 {
            let n = left.min(BUF_LEN - HEADER_LEN);
            result = self.stream.write_all(&self.out[HEADER_LEN..HEADER_LEN + n]);
            left -= n;
        }
        result.map_err(|e| match e.kind() {
            ErrorKind::WouldBlock | ErrorKind::TimedOut => Closed::Slow,
            _ => Closed::Reset,
        })
    }

    /// Answers every complete request the buffer holds, skips payload, and
    /// moves the rest (less than a header) to the front.
    pub(super) fn take_frames(
        &mut self,
        config: &ServeConfig,
        stats: &ServeStats,
    ) -> Result<(), Closed> {
        loop {
            if let Some((header, skip)) = self.pending {
                let n = skip.min(self.end - self.start);
                self.start += n;
                if skip > n {
                    self.pending = Some((header, skip - n));
                    break;
                }
                self.pending = None;
                let answer = self.faults.answer(config, header.seq);
                match answer {
                    Answer::Not => {}
                    Answer::Once(seq) => self.write_reply(&reply_header(&header, seq))?,
                    Answer::Twice(seq) => {
                        self.write_reply(&reply_header(&header, seq))?;
                        self.write_reply(&reply_header(&header, seq))?;
                    }
                }
                if answer != Answer::Not {
                    stats
                        .replies
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                // Bytes left over began the next frame when they were read.
                self.frame_began = self.last_activity;
                continue;
            }
            if self.end - self.start >= HEADER_LEN {
                let header =
                    match Header::decode(&self.buf[self.start..self.end], config.max_message) {
                        Ok(h) if h.kind == Kind::Request => h,
                        _ => return Err(Closed::Malformed),
                    };
                self.start += HEADER_LEN;
                self.pending = Some((header, header.len as usize - HEADER_LEN));
                continue;
            }
            break;
        }
        self.buf.copy_within(self.start..self.end, 0);
        self.end -= self.start;
        self.start = 0;
        Ok(())
    }

    /// Free bytes in the receive buffer (the most one read can take).
    pub(super) fn room(&self) -> usize {
        BUF_LEN - self.end
    }

    /// One read: the bytes that came, 0 when none were ready (a timeout,
    /// `EAGAIN` or a signal).
    pub(super) fn read_once(&mut self, config: &ServeConfig) -> Result<usize, Closed> {
        let in_frame = self.in_frame();
        match self.stream.read(&mut self.buf[self.end..]) {
            Ok(0) => Err(Closed::Peer),
            Ok(n) => {
                let now = sys::monotonic_ns();
                if !in_frame {
                    self.frame_began = now;
                } else if now.saturating_sub(self.frame_began) > config.frame_timeout_ns {
                    // A trickle of bytes keeps reads from timing out.
                    return Err(Closed::Slow);
                }
                self.last_activity = now;
                self.end += n;
                Ok(n)
            }
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) =>
            {
                Ok(0)
            }
            Err(_) => Err(Closed::Reset),
        }
    }

    /// When the connection last read anything (monotonic ns).
    pub(super) fn last_activity(&self) -> u64 {
        self.last_activity
    }

    /// Closes a connection whose frame is overdue or that has idled too long.
    pub(super) fn check_deadlines(&self, now: u64, config: &ServeConfig) -> Result<(), Closed> {
        verdict(
            self.in_frame(),
            self.frame_began,
            self.last_activity,
            now,
            config,
        )
    }
}

/// The deadline rules: a begun frame must complete within the frame
/// timeout, a connection between frames may idle for the idle timeout.
fn verdict(
    in_frame: bool,
    began: u64,
    last: u64,
    now: u64,
    config: &ServeConfig,
) -> Result<(), Closed> {
    if in_frame {
        if now.saturating_sub(began) > config.frame_timeout_ns {
            return Err(Closed::Slow);
        }
    } else if now.saturating_sub(last) > config.idle_timeout_ns {
        return Err(Closed::Idle);
    }
    Ok(())
}

/// What a connection thread publishes so the accept thread can close it
/// when it is overdue or the responder stops: its thread blocks in `read`
/// with no timeout (no timer armed per request, no wake-ups while idle),
/// and a shutdown of the socket is what wakes it.
#[derive(Debug)]
pub(super) struct Watch {
    stream: TcpStream,
    /// When the current frame began; `u64::MAX` between frames.
    began: AtomicU64,
    last: AtomicU64,
    why: Mutex<Option<Closed>>,
}

impl Watch {
    /// Watches a connection through a clone of its socket.
    pub(super) fn new(stream: &TcpStream) -> std::io::Result<Arc<Watch>> {
        Ok(Arc::new(Watch {
            stream: stream.try_clone()?,
            began: AtomicU64::new(u64::MAX),
            last: AtomicU64::new(sys::monotonic_ns()),
            why: Mutex::new(None),
        }))
    }

    /// Publishes the connection's deadlines (two relaxed stores).
    #[inline]
    pub(super) fn publish(&self, conn: &Conn) {
        let began = if conn.in_frame() {
            conn.frame_began
        } else {
            u64::MAX
        };
        self.began.store(began, Ordering::Relaxed);
        self.last.store(conn.last_activity, Ordering::Relaxed);
    }

    /// Closes the connection if it is overdue (or `stopping`).
    pub(super) fn check(&self, now: u64, config: &ServeConfig, stopping: bool) {
        let began = self.began.load(Ordering::Relaxed);
        let last = self.last.load(Ordering::Relaxed);
        let why = if stopping {
            Err(Closed::Stop)
        } else {
            verdict(began != u64::MAX, began, last, now, config)
        };
        if let Err(why) = why {
            if let Ok(mut slot) = self.why.lock() {
                slot.get_or_insert(why);
            }
            let _ = self.stream.shutdown(Shutdown::Both);
        }
    }

    /// When the connection last read anything (monotonic ns).
    pub(super) fn last_activity(&self) -> u64 {
        self.last.load(Ordering::Relaxed)
    }

    /// Whether the watchdog has closed (or is closing) the connection.
    pub(super) fn closing(&self) -> bool {
        self.why().is_some()
    }

    /// Closes the connection to make room for a new one.
    pub(super) fn evict(&self) {
        if let Ok(mut slot) = self.why.lock() {
            slot.get_or_insert(Closed::Evicted);
        }
        let _ = self.stream.shutdown(Shutdown::Both);
    }

    /// Why the watchdog closed the connection, if it did.
    pub(super) fn why(&self) -> Option<Closed> {
        self.why.lock().ok().and_then(|w| *w)
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
