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
//! Sockets are blocking with timeouts: a thread that keeps a schedule waits
//! for readable sockets with [`crate::sys::poll_readable_until`] and reads
//! what is there without blocking.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::os::fd::{AsFd, BorrowedFd};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

/// The largest response frame accepted (a fetch asks for at most 64 MiB).
const MAX_FRAME: usize = 80 << 20;
/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

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
#[derive(Debug)]
pub struct Conn {
    stream: TcpStream,
    /// The broker's address, for messages.
    pub peer: String,
    next_id: i32,
    /// Bytes read and not yet a whole frame.
    rx: BytesMut,
}

impl Conn {
    /// Connects to `address` (`host:port`); `timeout` bounds each blocking
    /// read and write afterwards.
    pub fn connect(address: &str, timeout: Duration) -> Result<Conn> {
        let addrs: Vec<SocketAddr> = address
            .to_socket_addrs()
            .with_context(|| format!("{address}: not an address this host can resolve"))?
            .collect();
        let mut last = None;
        for addr in &addrs {
            match TcpStream::connect_timeout(addr, CONNECT_TIMEOUT) {
                Ok(stream) => {
                    stream.set_nodelay(true)?;
                    stream.set_read_timeout(Some(timeout))?;
                    stream.set_write_timeout(Some(timeout))?;
                    return Ok(Conn {
                        stream,
                        peer: address.to_string(),
                        next_id: 1,
                        rx: BytesMut::with_capacity(64 << 10),
                    });
                }
                Err(e) => last = Some(e),
            }
        }
        Err(anyhow!(
            "cannot connect to the broker at {address}: {}",
            last.map_or("no address".into(), |e| e.to_string())
        ))
    }

    /// Changes the timeout of blocking reads and writes.
    pub fn set_timeout(&mut self, timeout: Duration) -> Result<()> {
        self.stream.set_read_timeout(Some(timeout))?;
        self.stream.set_write_timeout(Some(timeout))?;
        Ok(())
    }

    /// The socket, to wait on.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.stream.as_fd()
    }

    /// Encodes and writes `request` at `version`; returns its correlation id.
    pub fn send<R: Call>(&mut self, request: &R, version: i16) -> Result<i32> {
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
        self.stream.write_all(&buf).map_err(|e| {
            if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) {
                anyhow!(
                    "the broker at {} did not take a request within the timeout (stopped or \
                     overloaded?)",
                    self.peer
                )
            } else {
                anyhow!("sending to the broker at {}: {e}", self.peer)
            }
        })?;
        Ok(id)
    }

    /// Reads what the socket has without blocking (call when it is
    /// readable) and puts the whole frames it completed in `frames` — also
    /// when it then fails: a broker that closes the connection may first
    /// have sent its last replies, and those count.
    pub fn read_ready(&mut self, frames: &mut Vec<Bytes>) -> Result<()> {
        self.stream.set_nonblocking(true)?;
        let result = self.fill();
        self.stream.set_nonblocking(false)?;
        self.split(frames)?;
        result
    }

    fn fill(&mut self) -> Result<()> {
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
        }
    }

    fn split(&mut self, frames: &mut Vec<Bytes>) -> Result<()> {
        while self.rx.len() >= 4 {
            let len = i32::from_be_bytes([self.rx[0], self.rx[1], self.rx[2], self.rx[3]]);
            if len < 4 || len as usize > MAX_FRAME {
                bail!(
                    "the broker at {} sent a frame of {len} bytes: not the Kafka protocol?",
                    self.peer
                );
            }
            if self.rx.len() < 4 + len as usize {
                break;
            }
            self.rx.advance(4);
            frames.push(self.rx.split_to(len as usize).freeze());
        }
        Ok(())
    }

    /// Blocks (up to the connection's timeout) for the next whole frame.
    pub fn read_frame(&mut self) -> Result<Bytes> {
        let mut frames = Vec::with_capacity(1);
        loop {
            self.split(&mut frames)?;
            if let Some(frame) = frames.pop() {
                return Ok(frame);
            }
            let start = self.rx.len();
            self.rx.resize(start + (64 << 10), 0);
            match self.stream.read(&mut self.rx[start..]) {
                Ok(0) => {
                    self.rx.truncate(start);
                    bail!("the broker at {} closed the connection", self.peer)
                }
                Ok(n) => self.rx.truncate(start + n),
                Err(e) => {
                    self.rx.truncate(start);
                    if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) {
                        bail!(
                            "the broker at {} did not answer within the timeout",
                            self.peer
                        );
                    }
                    if e.kind() != ErrorKind::Interrupted {
                        bail!("reading from the broker at {}: {e}", self.peer)
                    }
                }
            }
        }
    }

    /// Sends `request` and waits for its response.
    pub fn call<R: Call>(&mut self, request: &R, version: i16) -> Result<R::Response> {
        let id = self.send(request, version)?;
        let frame = self.read_frame()?;
        decode::<R>(frame, version, id, &self.peer)
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
