//! The responder's settings (`cauda serve`'s flags, or the loopback
//! responder `cauda net --loopback` starts) and their checks.

use std::net::SocketAddr;

use anyhow::Result;

use crate::error::input_error;
use crate::probe::net::protocol::{DEFAULT_MAX_MESSAGE, HEADER_LEN, MAX_MESSAGE_LIMIT};

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
            max_message: DEFAULT_MAX_MESSAGE,
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
