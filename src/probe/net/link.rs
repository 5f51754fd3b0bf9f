//! The client's side of a connection: connect (TCP with TCP_NODELAY, or a
//! connected UDP socket), send a frame, receive the next reply by a
//! deadline — blocking with a 100 ms tick to see the stop flag, or spinning
//! on a non-blocking socket with `--busy-poll`.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::Duration;

use anyhow::{Result, anyhow};

use super::config::Proto;
use super::protocol::{FrameError, HEADER_LEN, Header, Kind};
use crate::record::{Clock, StopFlag};

/// How often a blocked receive looks at the stop flag and its deadline.
const TICK: Duration = Duration::from_millis(100);
/// The least time a TCP handshake is given.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// A connection to the responder.
#[derive(Debug)]
pub struct Link {
    /// TCP or UDP.
    pub(super) proto: Proto,
    tcp: Option<TcpStream>,
    udp: Option<UdpSocket>,
    /// The responder's address.
    pub(super) peer: SocketAddr,
    busy_poll: bool,
    /// Received bytes not yet consumed (TCP) or the last datagram (UDP).
    rx: Vec<u8>,
    filled: usize,
    max_frame: u32,
}

/// What a receive produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Received {
    /// A well-formed reply.
    Reply(Header),
    /// A malformed datagram (UDP only), skipped.
    Malformed(FrameError),
    /// The deadline passed.
    Timeout,
    /// The stop flag rose.
    Stopped,
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

impl Link {
    /// Connects to `peer`; `max_frame` is the largest reply accepted.
    pub fn connect(
        proto: Proto,
        peer: SocketAddr,
        timeout_ns: u64,
        busy_poll: bool,
        max_frame: u32,
        stop: &StopFlag,
    ) -> Result<Link> {
        let what = match proto {
            Proto::Tcp => "TCP",
            Proto::Udp => "UDP",
        };
        let fail = |e: io::Error| anyhow!("cannot connect to {peer} over {what} ({e})");
        let timeout = Duration::from_nanos(timeout_ns.max(1_000_000));
        let (tcp, udp) = match proto {
            Proto::Tcp => {
                // Setting up is not measured: a short --timeout must not
                // fail a handshake that a busy listener answers late.
                let setup = timeout.max(CONNECT_TIMEOUT);
                let s = crate::probe::connect::connect_tcp(peer, setup, stop).map_err(fail)?;
                s.set_nodelay(true).map_err(fail)?;
                s.set_read_timeout(Some(TICK.min(timeout))).map_err(fail)?;
                s.set_write_timeout(Some(timeout)).map_err(fail)?;
                (Some(s), None)
            }
            Proto::Udp => {
                let local: SocketAddr = match peer {
                    SocketAddr::V4(a) if a.ip().is_loopback() => ([127, 0, 0, 1], 0).into(),
                    SocketAddr::V4(_) => ([0, 0, 0, 0], 0).into(),
                    SocketAddr::V6(_) => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
                };
                let s = UdpSocket::bind(local).map_err(fail)?;
                s.connect(peer).map_err(fail)?;
                s.set_read_timeout(Some(TICK.min(timeout))).map_err(fail)?;
                (None, Some(s))
            }
        };
        let mut link = Link {
            proto,
            tcp,
            udp,
            peer,
            busy_poll,
            // UDP: one byte more than the largest frame, so an oversized
            // datagram shows as such.
            rx: vec![0; max_frame as usize + 1],
            filled: 0,
            max_frame,
        };
        if busy_poll {
            link.set_nonblocking().map_err(fail)?;
        }
        Ok(link)
    }

    fn set_nonblocking(&mut self) -> io::Result<()> {
        if let Some(s) = &self.tcp {
            s.set_nonblocking(true)?;
        }
        if let Some(s) = &self.udp {
            s.set_nonblocking(true)?;
        }
        Ok(())
    }

    /// Sends one frame whole.
    #[inline]
    pub fn send(&mut self, frame: &[u8]) -> Result<()> {
        let result = match (&mut self.tcp, &self.udp) {
            (Some(s), _) => write_all_spinning(s, frame),
            (_, Some(s)) => loop {
                match s.send(frame) {
                    Ok(_) => break Ok(()),
                    Err(e)
                        if e.kind() == ErrorKind::WouldBlock
                            || e.kind() == ErrorKind::Interrupted => {}
                    Err(e) => break Err(e),
                }
            },
            _ => unreachable!("a link has a socket"),
        };
        result.map_err(|e| self.io_error("sending to", e))
    }

    fn io_error(&self, doing: &str, e: io::Error) -> anyhow::Error {
        match e.kind() {
            ErrorKind::ConnectionRefused => anyhow!(
                "{doing} {}: connection refused — nothing answers there (is `cauda serve --listen {}{}` running?)",
                self.peer,
                self.peer,
                if self.proto == Proto::Udp {
                    " --udp"
                } else {
                    ""
                }
            ),
            ErrorKind::ConnectionReset | ErrorKind::BrokenPipe => {
                anyhow!(
                    "the responder at {} closed the connection mid-run ({e})",
                    self.peer
                )
            }
            _ => anyhow!("{doing} {} failed: {e}", self.peer),
        }
    }

    /// Receives the next reply, or times out at `deadline_ns`.
    #[inline]
    pub fn recv<C: Clock>(
        &mut self,
        clock: &C,
        deadline_ns: u64,
        stop: &StopFlag,
    ) -> Result<Received> {
        match self.proto {
            Proto::Tcp => self.recv_tcp(clock, deadline_ns, stop),
            Proto::Udp => self.recv_udp(clock, deadline_ns, stop),
        }
    }

    fn recv_tcp<C: Clock>(
        &mut self,
        clock: &C,
        deadline_ns: u64,
        stop: &StopFlag,
    ) -> Result<Received> {
        loop {
            if self.filled >= HEADER_LEN {
                let header = Header::decode(&self.rx[..self.filled], self.max_frame)
                    .and_then(|h| if h.kind == Kind::Reply { Ok(h) } else { Err(FrameError::BadKind(1)) })
                    .map_err(|e| {
                        anyhow!(
                            "the responder at {} sent a malformed frame ({e}); is it `cauda serve`?",
                            self.peer
                        )
                    })?;
                let len = header.len as usize;
                if self.filled >= len {
                    self.rx.copy_within(len..self.filled, 0);
                    self.filled -= len;
                    return Ok(Received::Reply(header));
                }
            }
            let Some(stream) = &mut self.tcp else {
                unreachable!("a TCP link has a stream")
            };
            match stream.read(&mut self.rx[self.filled..]) {
                Ok(0) => {
                    return Err(anyhow!(
                        "the responder at {} closed the connection mid-run",
                        self.peer
                    ));
                }
                Ok(n) => self.filled += n,
                Err(e) if is_timeout(&e) || e.kind() == ErrorKind::Interrupted => {
                    if let Some(r) = self.expired(clock, deadline_ns, stop) {
                        return Ok(r);
                    }
                }
                Err(e) => return Err(self.io_error("receiving from", e)),
            }
        }
    }

    fn recv_udp<C: Clock>(
        &mut self,
        clock: &C,
        deadline_ns: u64,
        stop: &StopFlag,
    ) -> Result<Received> {
        loop {
            let Some(socket) = &self.udp else {
                unreachable!("a UDP link has a socket")
            };
            match socket.recv(&mut self.rx) {
                Ok(n) => {
                    return Ok(
                        match Header::decode_datagram(&self.rx[..n], self.max_frame) {
                            Ok(h) if h.kind == Kind::Reply => Received::Reply(h),
                            Ok(_) => Received::Malformed(FrameError::BadKind(1)),
                            Err(e) => Received::Malformed(e),
                        },
                    );
                }
                Err(e) if is_timeout(&e) || e.kind() == ErrorKind::Interrupted => {
                    if let Some(r) = self.expired(clock, deadline_ns, stop) {
                        return Ok(r);
                    }
                }
                Err(e) => return Err(self.io_error("receiving from", e)),
            }
        }
    }

    /// After a receive came back empty: time out, stop, or go on.
    #[inline]
    fn expired<C: Clock>(&self, clock: &C, deadline_ns: u64, stop: &StopFlag) -> Option<Received> {
        if clock.now() >= deadline_ns {
            Some(Received::Timeout)
        } else if stop.is_raised() {
            Some(Received::Stopped)
        } else {
            None
        }
    }

    /// Whether receives spin.
    pub fn busy_poll(&self) -> bool {
        self.busy_poll
    }
}

fn write_all_spinning(s: &mut TcpStream, mut frame: &[u8]) -> io::Result<()> {
    while !frame.is_empty() {
        match s.write(frame) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => frame = &frame[n..],
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
