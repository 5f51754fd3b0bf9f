//! The framed protocol `cauda net` and `cauda serve` speak.
//!
//! Every message, request or reply, TCP or UDP, is one frame: a fixed
//! 28-byte little-endian header followed by payload bytes.
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 4 | `len`: the whole frame in bytes, header included |
//! | 4 | 2 | magic `0xCA0D` |
//! | 6 | 1 | version (1) |
//! | 7 | 1 | kind: 1 request, 2 reply |
//! | 8 | 8 | sequence number, per connection |
//! | 16 | 8 | the client's send time (monotonic ns), echoed in the reply |
//! | 24 | 4 | `response_size`: the reply's `len` the client asks for |
//!
//! Decoding is strict: a wrong magic, version or kind, a length below the
//! header or above the receiver's limit, or a response size outside those
//! bounds is refused, so a receiver learns from 28 bytes whether it may
//! read on, and never buffers more than its limit.

use std::fmt;

/// Bytes in a frame header (also the smallest frame).
pub const HEADER_LEN: usize = 28;
/// The magic number at offset 4.
pub const MAGIC: u16 = 0xCA0D;
/// The protocol version at offset 6.
pub const VERSION: u8 = 1;
/// The default largest frame a receiver accepts: the largest UDP payload.
pub const DEFAULT_MAX_MESSAGE: u32 = MAX_MESSAGE_LIMIT;
/// The largest frame anyone may ask for (a UDP datagram's payload limit).
pub const MAX_MESSAGE_LIMIT: u32 = 65_507;

/// A frame's direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// From the client.
    Request,
    /// From the responder.
    Reply,
}

impl Kind {
    fn byte(self) -> u8 {
        match self {
            Kind::Request => 1,
            Kind::Reply => 2,
        }
    }
}

/// A decoded frame header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// The whole frame's length in bytes.
    pub len: u32,
    /// Request or reply.
    pub kind: Kind,
    /// The sequence number.
    pub seq: u64,
    /// The client's send time in monotonic ns.
    pub sent_ns: u64,
    /// The reply length asked for.
    pub response_size: u32,
}

/// Why a frame was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// Fewer than [`HEADER_LEN`] bytes.
    Truncated(usize),
    /// Not a cauda frame (the magic number is wrong).
    BadMagic(u16),
    /// A protocol version this build does not speak.
    BadVersion(u8),
    /// Neither request nor reply.
    BadKind(u8),
    /// `len` is below the header size.
    TooShort(u32),
    /// `len` is above the receiver's limit.
    TooLong {
        /// The length in the frame.
        len: u32,
        /// The receiver's limit.
        max: u32,
    },
    /// `response_size` is below the header or above the limit.
    BadResponseSize {
        /// The size asked for.
        size: u32,
        /// The receiver's limit.
        max: u32,
    },
    /// A datagram whose size differs from its `len`.
    LengthMismatch {
        /// The length in the frame.
        len: u32,
        /// The bytes actually received.
        got: usize,
    },
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            FrameError::Truncated(n) => {
                write!(f, "truncated frame: {n} of {HEADER_LEN} header bytes")
            }
            FrameError::BadMagic(m) => write!(
                f,
                "not a cauda frame (magic {m:#06x}, expected {MAGIC:#06x})"
            ),
            FrameError::BadVersion(v) => {
                write!(f, "protocol version {v}, this build speaks {VERSION}")
            }
            FrameError::BadKind(k) => write!(f, "unknown frame kind {k}"),
            FrameError::TooShort(len) => write!(
                f,
                "frame length {len} is below the {HEADER_LEN}-byte header"
            ),
            FrameError::TooLong { len, max } => {
                write!(f, "frame length {len} exceeds the limit of {max} bytes")
            }
            FrameError::BadResponseSize { size, max } => write!(
                f,
                "response size {size} is outside {HEADER_LEN}..={max} bytes"
            ),
            FrameError::LengthMismatch { len, got } => {
                write!(f, "datagram of {got} bytes says its length is {len}")
            }
        }
    }
}

impl std::error::Error for FrameError {}

impl Header {
    /// Writes the header into `out[..HEADER_LEN]`.
    ///
    /// # Panics
    /// If `out` is shorter than [`HEADER_LEN`] (a caller bug).
    #[inline]
    pub fn encode(&self, out: &mut [u8]) {
        out[0..4].copy_from_slice(&self.len.to_le_bytes());
        out[4..6].copy_from_slice(&MAGIC.to_le_bytes());
        out[6] = VERSION;
        out[7] = self.kind.byte();
        out[8..16].copy_from_slice(&self.seq.to_le_bytes());
        out[16..24].copy_from_slice(&self.sent_ns.to_le_bytes());
        out[24..28].copy_from_slice(&self.response_size.to_le_bytes());
    }

    /// Decodes and validates the header at the start of `bytes`; `max` is
    /// the largest frame (and response) the receiver accepts.
    #[inline]
    pub fn decode(bytes: &[u8], max: u32) -> Result<Header, FrameError> {
        if bytes.len() < HEADER_LEN {
            return Err(FrameError::Truncated(bytes.len()));
        }
        let u32_at = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap_or_default());
        let u64_at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap_or_default());
        let magic = u16::from_le_bytes([bytes[4], bytes[5]]);
        if magic != MAGIC {
            return Err(FrameError::BadMagic(magic));
        }
        if bytes[6] != VERSION {
            return Err(FrameError::BadVersion(bytes[6]));
        }
        let kind = match bytes[7] {
            1 => Kind::Request,
            2 => Kind::Reply,
            k => return Err(FrameError::BadKind(k)),
        };
        let len = u32_at(0);
        if (len as usize) < HEADER_LEN {
            return Err(FrameError::TooShort(len));
        }
        if len > max {
            return Err(FrameError::TooLong { len, max });
        }
        let response_size = u32_at(24);
        if (response_size as usize) < HEADER_LEN || response_size > max {
            return Err(FrameError::BadResponseSize {
                size: response_size,
                max,
            });
        }
        Ok(Header {
            len,
            kind,
            seq: u64_at(8),
            sent_ns: u64_at(16),
            response_size,
        })
    }

    /// Decodes a whole datagram: the header, and its length must match.
    pub fn decode_datagram(bytes: &[u8], max: u32) -> Result<Header, FrameError> {
        let header = Header::decode(bytes, max)?;
        if header.len as usize != bytes.len() {
            return Err(FrameError::LengthMismatch {
                len: header.len,
                got: bytes.len(),
            });
        }
        Ok(header)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(len: u32, response_size: u32) -> Header {
        Header {
            len,
            kind: Kind::Request,
            seq: 0x0102_0304_0506_0708,
            sent_ns: u64::MAX - 1,
            response_size,
        }
    }

    #[test]
    fn headers_round_trip() {
        for header in [
            request(28, 28),
            request(64, 1024),
            Header {
                kind: Kind::Reply,
                seq: 0,
                sent_ns: 0,
                ..request(65_507, 65_507)
            },
        ] {
            let mut buf = [0u8; HEADER_LEN];
            header.encode(&mut buf);
            assert_eq!(Header::decode(&buf, MAX_MESSAGE_LIMIT), Ok(header));
        }
    }

    #[test]
    fn the_layout_is_little_endian_as_documented() {
        let mut buf = [0u8; HEADER_LEN];
        request(64, 28).encode(&mut buf);
        assert_eq!(&buf[0..4], &[64, 0, 0, 0]);
        assert_eq!(&buf[4..8], &[0x0D, 0xCA, 1, 1]);
        assert_eq!(&buf[8..16], &[8, 7, 6, 5, 4, 3, 2, 1]);
        assert_eq!(&buf[24..28], &[28, 0, 0, 0]);
    }

    #[test]
    fn malformed_headers_are_refused_with_the_reason() {
        let good = {
            let mut buf = [0u8; HEADER_LEN];
            request(64, 64).encode(&mut buf);
            buf
        };
        let with = |f: &dyn Fn(&mut [u8; HEADER_LEN])| {
            let mut b = good;
            f(&mut b);
            Header::decode(&b, 1024)
        };
        assert_eq!(
            Header::decode(&good[..27], 1024),
            Err(FrameError::Truncated(27))
        );
        assert_eq!(with(&|b| b[4] = 0), Err(FrameError::BadMagic(0xCA00)));
        assert_eq!(with(&|b| b[6] = 9), Err(FrameError::BadVersion(9)));
        assert_eq!(with(&|b| b[7] = 0), Err(FrameError::BadKind(0)));
        assert_eq!(
            with(&|b| b[0..4].copy_from_slice(&27u32.to_le_bytes())),
            Err(FrameError::TooShort(27))
        );
        assert_eq!(
            with(&|b| b[0..4].copy_from_slice(&(1u32 << 31).to_le_bytes())),
            Err(FrameError::TooLong {
                len: 1 << 31,
                max: 1024
            })
        );
        assert_eq!(
            with(&|b| b[24..28].copy_from_slice(&2048u32.to_le_bytes())),
            Err(FrameError::BadResponseSize {
                size: 2048,
                max: 1024
            })
        );
        assert_eq!(
            with(&|b| b[24..28].copy_from_slice(&3u32.to_le_bytes())),
            Err(FrameError::BadResponseSize { size: 3, max: 1024 })
        );
        let mut datagram = vec![0u8; 64];
        request(64, 64).encode(&mut datagram);
        assert!(Header::decode_datagram(&datagram, 1024).is_ok());
        assert_eq!(
            Header::decode_datagram(&datagram[..40], 1024),
            Err(FrameError::LengthMismatch { len: 64, got: 40 })
        );
    }

    #[test]
    fn random_bytes_almost_never_pass() {
        // Seeded garbage: the magic, version and kind checks leave about
        // one chance in 2^26 per header, and no accepted header may claim
        // more than the limit.
        let mut rng = crate::record::schedule::SplitMix64::new(7);
        let mut accepted = 0;
        for _ in 0..100_000 {
            let mut buf = [0u8; HEADER_LEN];
            for chunk in buf.chunks_mut(8) {
                let bytes = rng.next_u64().to_le_bytes();
                chunk.copy_from_slice(&bytes[..chunk.len()]);
            }
            if let Ok(h) = Header::decode(&buf, 1024) {
                assert!(h.len <= 1024);
                accepted += 1;
            }
        }
        assert_eq!(accepted, 0);
    }
}
