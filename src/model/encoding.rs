//! Histograms as text: the HdrHistogram V2 compressed (deflate) encoding in
//! base64 — the same string a `.hlog` interval line carries, so a run file's
//! histograms can be pasted into any HdrHistogram tool.
//!
//! Spec: HdrHistogram's `encodeIntoCompressedByteBuffer` (V2 cookie
//! 0x1c849304, ZigZag LEB128 counts, zlib-deflated).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};

/// Encodes a histogram as V2-deflate base64.
pub fn encode(hist: &Histogram<u64>) -> String {
    let mut bytes = Vec::with_capacity(256);
    // Serializing into a Vec cannot fail for a valid histogram; if the crate
    // ever refuses, an empty string decodes as an error rather than as data.
    if V2DeflateSerializer::new()
        .serialize(hist, &mut bytes)
        .is_err()
    {
        return String::new();
    }
    STANDARD.encode(bytes)
}

/// Decodes V2 (deflate or plain) base64 into a histogram.
pub fn decode(text: &str) -> Result<Histogram<u64>, String> {
    let bytes = STANDARD
        .decode(text.trim())
        .map_err(|e| format!("histogram is not valid base64 ({e})"))?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| format!("histogram is not a valid HdrHistogram V2 encoding ({e:?})"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::histogram::empty_hdr;

    #[test]
    fn round_trip_keeps_every_count() {
        let mut h = empty_hdr();
        for v in [1u64, 2, 3, 1_000, 43_896, 24_437_721, 3_600_000_000_000] {
            h.record_n(v, v % 7 + 1).unwrap();
        }
        let text = encode(&h);
        assert!(text.starts_with("HISTFA"), "V2 deflate cookie: {text}");
        let back = decode(&text).unwrap();
        assert_eq!(back, h);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(decode("not base64 !!").is_err());
        assert!(decode("SGVsbG8gd29ybGQ=").is_err());
        assert!(decode("").is_err());
    }
}
