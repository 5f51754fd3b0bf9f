//! One connection to a Kafka-protocol broker: size-prefixed frames over
//! TCP, a request header, and the response matched by correlation id.
//!
//! Why a client of our own: the `kafka-protocol` crate is a codec
//! generated from Kafka's message schemas (no I/O, no async runtime, any
//! `acks`, Fetch's `min_bytes`/`max_wait`), so cauda keeps its own sockets
//! and takes the time of an acknowledgement when `read` returns it, on the
//! recorder's clock. librdkafka (`rdkafka`) stamps a delivery when its poll
//! thread serves the report, not when the response arrives, and needs a C
//! build; `rskafka` hard-codes `acks=-1` and needs tokio; kafka-rust speaks
//! request versions Kafka 4 refuses.
//!
//! A thread waits for readable sockets with
//! [`crate::sys::poll_readable_until`] and reads what is there without
//! blocking; every wait has a deadline and yields to the stop flag.
//! Decoding is bounded by the bytes received: the codec is
//! `vendor/kafka-protocol`, which refuses a count or length larger than
//! what is left of the frame before allocating for it, and a frame is
//! refused as soon as its length says more than a response can hold.

use std::io::{ErrorKind, Read};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::os::fd::{AsFd, BorrowedFd};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

use crate::error::interrupted;
use crate::record::StopFlag;
use crate::sys::monotonic_ns;
use crate::units::format_duration_compact;

/// The largest response frame taken, but for fetches (`set_max_frame`):
/// the API versions, the metadata of a cluster and one topic, a topic's
/// configs, the acknowledgement of one produce request are kilobytes.
/// (Decoded, a frame takes up to about ten times its size: the bound on
/// a frame is the bound on memory.)
pub const FRAME: usize = 4 << 20;
/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one wait on the socket lasts before the stop flag and the
/// deadline are looked at again.
const SLICE: Duration = Duration::from_millis(50);

/// The name of a Kafka error code, e.g. `NOT_ENOUGH_REPLICAS (19)`.
pub fn error_name(code: i16) -> String {
    match ResponseError::try_from_code(code) {
        None => "NONE (0)".into(),
        Some(ResponseError::Unknown(_)) => format!("error code {code}"),
        Some(e) => format!("{e} ({code})"),
    }
}

/// A request cauda sends: its API and the response it expects. (The
/// crate's own `Request` trait needs its broker-side codecs compiled too.)
pub trait Call: Encodable {
    /// The API.
    const API: ApiKey;
    /// What the broker answers.
    type Response: Decodable;
}

macro_rules! calls {
    ($($request:ident => $response:ident, $api:ident;)*) => {
        $(impl Call for kafka_protocol::messages::$request {
            const API: ApiKey = ApiKey::$api;
            type Response = kafka_protocol::messages::$response;
        })*
    };
}

calls! {
    ApiVersionsRequest => ApiVersionsResponse, ApiVersions;
    MetadataRequest => MetadataResponse, Metadata;
    CreateTopicsRequest => CreateTopicsResponse, CreateTopics;
    DeleteTopicsRequest => DeleteTopicsResponse, DeleteTopics;
    DescribeConfigsRequest => DescribeConfigsResponse, DescribeConfigs;
    ListOffsetsRequest => ListOffsetsResponse, ListOffsets;
    ProduceRequest => ProduceResponse, Produce;
    FetchRequest => FetchResponse, Fetch;
}

/// A connection to one broker.
///
/// Every wait on it has an end: a request (written, then its response
/// read whole) gets the connection's timeout overall, not per read, so a
/// broker that trickles a byte at a time is given up like a silent one;
/// and each wait lasts at most 50 ms before the stop flag is looked
/// at, so Ctrl-C or SIGTERM ends it at once.
#[derive(Debug)]
pub struct Conn {
    stream: TcpStream,
    /// The broker's address, for messages.
    pub peer: String,
    next_id: i32,
    /// Bytes read and not yet a whole frame.
    rx: BytesMut,
    /// How long one request may take, overall.
    timeout: Duration,
    /// The largest response frame taken ([`FRAME`] unless set).
    max_frame: usize,
    /// Where `timeout` comes from, for messages.
    limit: &'static str,
    stop: StopFlag,
    /// When the broker kept the send buffer full, since the last
    /// [`Conn::take_blocked`].
    blocked: Vec<(u64, u64)>,
}

/// Blocked spans a connection keeps between two [`Conn::take_blocked`].
const BLOCKED_KEPT: usize = 256;

impl Conn {
    /// Connects to `address` (`host:port`); `timeout` bounds each request
    /// afterwards, and `stop` ends any wait.
    pub fn connect(address: &str, timeout: Duration, stop: &StopFlag) -> Result<Conn> {
        let addrs: Vec<SocketAddr> = address
            .to_socket_addrs()
            .with_context(|| format!("{address}: not an address this host can resolve"))?
            .collect();
        let mut last = None;
        for addr in &addrs {
            if stop.is_raised() {
                return Err(interrupted(format!(
                    "interrupted while connecting to the broker at {address}"
                )));
            }
            match crate::probe::connect::connect_tcp(*addr, CONNECT_TIMEOUT.min(timeout), stop) {
                Ok(stream) => {
                    stream.set_nodelay(true)?;
                    return Ok(Conn {
                        stream,
                        peer: address.to_string(),
                        next_id: 1,
                        rx: BytesMut::with_capacity(64 << 10),
                        timeout,
                        max_frame: FRAME,
                        limit: "--timeout, at least 5s",
                        stop: stop.clone(),
                        blocked: Vec::new(),
                    });
                }
                Err(e) if e.kind() == ErrorKind::Interrupted && stop.is_raised() => {
                    return Err(interrupted(format!(
                        "interrupted while connecting to the broker at {address}"
                    )));
                }
                Err(e) => last = Some(e),
            }
        }
        Err(anyhow!(
            "cannot connect to the broker at {address}: {}",
            last.map_or("no address".into(), |e| e.to_string())
        ))
    }

    /// Changes how long one request may take, and where that limit comes
    /// from (for messages).
    pub fn set_timeout(&mut self, timeout: Duration, limit: &'static str) {
        self.timeout = timeout;
        self.limit = limit;
    }

    /// Takes response frames up to `bytes` (a consumer's fetches).
    pub fn set_max_frame(&mut self, bytes: usize) {
        self.max_frame = bytes;
    }

    /// The socket, to wait on.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.stream.as_fd()
    }

    /// When a request begun now must be done.
    fn deadline(&self) -> u64 {
        monotonic_ns().saturating_add(self.timeout.as_nanos() as u64)
    }

    /// Encodes and writes `request` at `version` within the connection's
    /// timeout; returns its correlation id.
    pub fn send<R: Call>(&mut self, request: &R, version: i16) -> Result<i32> {
        let deadline = self.deadline();
        self.send_until(request, version, deadline)
    }

    fn send_until<R: Call>(&mut self, request: &R, version: i16, deadline: u64) -> Result<i32> {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1).max(1);
        let mut header = RequestHeader::default();
        header.request_api_key = R::API as i16;
        header.request_api_version = version;
        header.correlation_id = id;
        header.client_id = Some(StrBytes::from_static_str("cauda"));
        let mut buf = BytesMut::with_capacity(256);
        buf.put_i32(0);
        header
            .encode(&mut buf, R::API.request_header_version(version))
            .map_err(|e| anyhow!("encoding a {:?} request header: {e}", R::API))?;
        request
            .encode(&mut buf, version)
            .map_err(|e| anyhow!("encoding a {:?} v{version} request: {e}", R::API))?;
        let len = (buf.len() - 4) as i32;
        buf[..4].copy_from_slice(&len.to_be_bytes());
        self.write_until(&buf, deadline, R::API)?;
        Ok(id)
    }

    /// Writes `buf` whole by `deadline`: what the socket takes at once,
    /// then, while its send buffer is full (the broker not reading), a wait
    /// for room of at most a slice, kept in [`Conn::take_blocked`].
    fn write_until(&mut self, buf: &[u8], deadline: u64, api: ApiKey) -> Result<()> {
        let mut written = 0;
        while written < buf.len() {
            self.check_wait(deadline, || format!("take its {api:?} request"))?;
            match crate::sys::send_now(self.stream.as_fd(), &buf[written..]) {
                Ok(0) => bail!("the broker at {} closed the connection", self.peer),
                Ok(n) => written += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    let from = monotonic_ns();
                    crate::sys::poll_writable(self.stream.as_fd(), SLICE.as_millis() as i32)
                        .with_context(|| format!("sending to the broker at {}", self.peer))?;
                    self.blocked(from, monotonic_ns());
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => bail!("sending to the broker at {}: {e}", self.peer),
            }
        }
        Ok(())
    }

    /// The broker kept this connection's send buffer full from `from` to
    /// `to`: kept, at most [`BLOCKED_KEPT`] spans (the last one grows).
    fn blocked(&mut self, from: u64, to: u64) {
        let full = self.blocked.len() >= BLOCKED_KEPT;
        match self.blocked.last_mut() {
            Some(last) if full || last.1 >= from => last.1 = last.1.max(to),
            _ => self.blocked.push((from, to)),
        }
    }

    /// The spans (monotonic ns) the broker kept the send buffer full since
    /// the last call: its backpressure, which a producer counts as the
    /// broker holding it.
    pub fn take_blocked(&mut self) -> Vec<(u64, u64)> {
        std::mem::take(&mut self.blocked)
    }

    /// Fails when the run was stopped or `deadline` passed; `what` the
    /// broker did not do in time.
    fn check_wait(&self, deadline: u64, what: impl FnOnce() -> String) -> Result<()> {
        if self.stop.is_raised() {
            return Err(interrupted(format!(
                "interrupted while waiting for the broker at {}",
                self.peer
            )));
        }
        if monotonic_ns() >= deadline {
            bail!(
                "the broker at {} did not {} within {} ({})",
                self.peer,
                what(),
                format_duration_compact(self.timeout.as_nanos() as u64),
                self.limit
            );
        }
        Ok(())
    }

    /// Reads what the socket has without blocking (call when it is
    /// readable) and puts the whole frames it completed in `frames` — also
    /// when it then fails: a broker that closes the connection may first
    /// have sent its last replies, and those count.
    pub fn read_ready(&mut self, frames: &mut Vec<Bytes>) -> Result<()> {
        let result = self.fill();
        while let Some(frame) = self.next_frame()? {
            frames.push(frame);
        }
        result
    }

    fn fill(&mut self) -> Result<()> {
        self.stream.set_nonblocking(true)?;
        let result = self.fill_nonblocking();
        self.stream.set_nonblocking(false)?;
        result
    }

    fn fill_nonblocking(&mut self) -> Result<()> {
        loop {
            if self.rx.capacity() - self.rx.len() < 16 << 10 {
                self.rx.reserve(64 << 10);
            }
            let start = self.rx.len();
            let room = self.rx.capacity() - start;
            self.rx.resize(start + room, 0);
            match self.stream.read(&mut self.rx[start..]) {
                Ok(0) => {
                    self.rx.truncate(start);
                    bail!("the broker at {} closed the connection", self.peer)
                }
                Ok(n) => self.rx.truncate(start + n),
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    self.rx.truncate(start);
                    return Ok(());
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => self.rx.truncate(start),
                Err(e) => {
                    self.rx.truncate(start);
                    bail!("reading from the broker at {}: {e}", self.peer)
                }
            }
            // Not more than a frame's worth ahead of what is taken.
            if self.rx.len() > self.max_frame + 4 {
                return Ok(());
            }
        }
    }

    /// The next whole frame read, if there is one; refuses a frame whose
    /// length is not one a response can have, as soon as its length is in.
    fn next_frame(&mut self) -> Result<Option<Bytes>> {
        if self.rx.len() < 4 {
            return Ok(None);
        }
        let len = i32::from_be_bytes([self.rx[0], self.rx[1], self.rx[2], self.rx[3]]);
        if len < 4 || len as usize > self.max_frame {
            bail!(
                "the broker at {} sent a frame of {len} bytes, where a response has 4 to {}: \
                 not the Kafka protocol?",
                self.peer,
                self.max_frame
            );
        }
        if self.rx.len() < 4 + len as usize {
            return Ok(None);
        }
        self.rx.advance(4);
        Ok(Some(self.rx.split_to(len as usize).freeze()))
    }

    /// Waits for the next whole frame until `deadline` (or a stop).
    fn read_frame_until(&mut self, deadline: u64, api: ApiKey) -> Result<Bytes> {
        let mut ready = Vec::with_capacity(1);
        loop {
            if let Some(frame) = self.next_frame()? {
                return Ok(frame);
            }
            self.check_wait(deadline, || format!("answer its {api:?} request whole"))?;
            let slice = deadline.min(monotonic_ns() + SLICE.as_nanos() as u64);
            let n = crate::sys::poll_readable_until(&[self.fd()], slice, &mut ready)
                .map_err(|e| anyhow!("waiting for the broker at {}: {e}", self.peer))?;
            if n > 0
                && let Err(e) = self.fill()
            {
                // A reply completed before the connection closed counts.
                return self.next_frame()?.ok_or(e);
            }
        }
    }

    /// Waits (within the connection's timeout) for the next whole frame:
    /// the response to a request of `api`.
    pub fn read_frame(&mut self, api: ApiKey) -> Result<Bytes> {
        let deadline = self.deadline();
        self.read_frame_until(deadline, api)
    }

    /// Sends `request` and waits for its response, both within the
    /// connection's timeout.
    pub fn call<R: Call>(&mut self, request: &R, version: i16) -> Result<R::Response> {
        let deadline = self.deadline();
        let id = self.send_until(request, version, deadline)?;
        let frame = self.read_frame_until(deadline, R::API)?;
        decode::<R>(frame, version, id, &self.peer)
    }
}

/// Whether `e` is a wait ended by the stop flag: the run stops, it did
/// not fail.
pub fn stopped(e: &anyhow::Error) -> bool {
    crate::error::exit_code_for(e) == crate::error::EXIT_INTERRUPTED
}

/// A broker's failure before anything was measured: an unusable peer, so
/// bad input (exit 2, as in the handshake), naming `--bootstrap`. A stop
/// stays a stop, and an error already on the user's side stays as it is.
pub fn unusable(e: anyhow::Error, bootstrap: &str) -> anyhow::Error {
    let decided = e.chain().any(|c| {
        c.downcast_ref::<crate::error::Interrupted>().is_some()
            || c.downcast_ref::<crate::error::InputError>().is_some()
    });
    if decided {
        e
    } else {
        crate::error::input_error(format!(
            "--bootstrap {bootstrap}: {e:#} (before measuring): check the broker, or give \
             another --bootstrap"
        ))
    }
}

/// Waits until one of `conns` has something to read or `deadline_ns`
/// passes (`ppoll`), marking in `ready` which do; when any does, returns
/// the time the wait ended — the time their replies are stamped with.
pub fn wait_readable<'a>(
    conns: impl Iterator<Item = &'a Conn>,
    deadline_ns: u64,
    ready: &mut Vec<bool>,
    clock: &impl crate::record::Clock,
) -> Result<Option<u64>> {
    let fds: Vec<BorrowedFd<'_>> = conns.map(Conn::fd).collect();
    let n = crate::sys::poll_readable_until(&fds, deadline_ns, ready)
        .map_err(|e| anyhow!("waiting for the broker: {e}"))?;
    Ok((n > 0).then(|| clock.now()))
}

/// Decodes a response `frame` to a request sent at `version` with
/// correlation id `id`.
pub fn decode<R: Call>(mut frame: Bytes, version: i16, id: i32, peer: &str) -> Result<R::Response> {
    let header = ResponseHeader::decode(&mut frame, R::API.response_header_version(version))
        .map_err(|e| anyhow!("a malformed response header from {peer}: {e}"))?;
    if header.correlation_id != id {
        bail!(
            "the broker at {peer} answered request {} where {id} was next: responses out of order",
            header.correlation_id
        );
    }
    R::Response::decode(&mut frame, version).map_err(|e| {
        anyhow!(
            "a malformed {:?} v{version} response from {peer}: {e}",
            R::API
        )
    })
}

/// The correlation id of a response frame, without decoding the rest.
pub fn correlation_id(frame: &Bytes) -> Option<i32> {
    let b = frame.get(..4)?;
    Some(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}
