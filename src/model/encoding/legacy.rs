//! The two histogram encodings HdrHistogram wrote before V2, read so that
//! old interval logs open: **V0** (Java HdrHistogram 1.x, 2014) and **V1**
//! (2.0.1 – 2.1.6, 2014–15) — the histograms in logs written by jHiccup up
//! to 2.0.6 and by YCSB of that era. HdrHistogram_py and the Rust crate read
//! only V2; Java reads all three, and this follows its reader.
//!
//! Spec: Java HdrHistogram 2.2.2 `AbstractHistogram.decodeFromByteBuffer`
//! and `decodeFromCompressedByteBuffer` (the reader), and the writers'
//! `encodeIntoByteBuffer` in 1.2.1 (V0) and 2.1.6 (V1). Big-endian
//! throughout:
//!
//! - **cookie** (i32): its base (`cookie & !0xf0`) names the encoding —
//!   `0x1c849308` V0, `0x1c849309` V0 deflated, `0x1c849301` V1,
//!   `0x1c849302` V1 deflated — and bits 4–7 the size of a count: the
//!   writers added `wordSizeInBytes << 4` (2, 4 or 8 bytes for short, int
//!   and long counts); the reader takes `(cookie >> 4) & 0xe`.
//! - **V0 header** (32 bytes): cookie, i32 significant digits, i64 lowest
//!   trackable value, i64 highest trackable value, i64 total count (which
//!   Java's reader discards, counting the counts instead). No payload
//!   length: the counts run to the end of the data.
//! - **V1 header** (40 bytes, V2's layout): cookie, i32 payload length in
//!   bytes, i32 normalizing index offset, i32 significant digits, i64
//!   lowest, i64 highest, f64 integer-to-double conversion ratio.
//! - **counts**: one word per counts-array index, from index 0 up to the
//!   index of the largest value (the writers' `relevantLength`), in the
//!   same index layout as V2 (1.2.1's `countsArrayIndex` is 2.2.2's), so
//!   index i stands for the same value in all three.
//! - **deflated**: cookie, i32 length of the deflated data, then a zlib
//!   stream holding the plain encoding (its own V0 or V1 cookie first).
//!
//! The normalizing index offset and the conversion ratio change no value:
//! 2.1.x writes the counts in logical order (from the normalized zero
//! index), and Java's reader sets the offset on the new histogram and
//! stores each count through it, so index i reads back as written; the
//! ratio matters only to a `DoubleHistogram`. Both are dropped.
//!
//! Each encoding is rewritten as the plain V2 encoding of the same bounds
//! and counts, which the V2 decoder then reads: one decoder, one set of
//! checks, and the same histogram type. As on the V2 path nothing is
//! allocated from a length the histogram's bounds have not vouched for.

use std::io::Read;

use super::v2::{Version, counts_len, plain_v2_of, put_zeros, put_zigzag};

const V0_COOKIE: u32 = 0x1c84_9308;
const V0_DEFLATE_COOKIE: u32 = 0x1c84_9309;
const V1_COOKIE: u32 = 0x1c84_9301;
const V1_DEFLATE_COOKIE: u32 = 0x1c84_9302;
const V0_HEADER_LEN: usize = 32;
const V1_HEADER_LEN: usize = 40;

fn base(cookie: u32) -> u32 {
    cookie & !0xf0
}

fn be(bytes: &[u8], at: usize, len: usize) -> u64 {
    bytes[at..at + len]
        .iter()
        .fold(0u64, |acc, &b| (acc << 8) | u64::from(b))
}

/// A legacy header, read and checked.
struct Header {
    /// Bytes a count takes: 2, 4 or 8.
    word: usize,
    /// V1's payload length in bytes; V0 has none.
    payload: Option<u64>,
    digits: u64,
    lowest: u64,
    highest: u64,
    /// How many counts the bounds hold (the most words read).
    counts: u64,
}

/// The plain V2 encoding of `bytes` when they hold a V0 or V1 histogram
/// (plain or deflated), and which; `None` for any other cookie.
pub(super) fn plain_v2(bytes: &[u8]) -> Result<Option<(Vec<u8>, Version)>, String> {
    let Some(cookie) = bytes.get(..4).map(|_| be(bytes, 0, 4) as u32) else {
        return Ok(None);
    };
    let (deflated, header_len) = match base(cookie) {
        V0_COOKIE => (false, V0_HEADER_LEN),
        V1_COOKIE => (false, V1_HEADER_LEN),
        V0_DEFLATE_COOKIE => (true, V0_HEADER_LEN),
        V1_DEFLATE_COOKIE => (true, V1_HEADER_LEN),
        _ => return Ok(None),
    };
    let version = if header_len == V0_HEADER_LEN {
        Version::V0
    } else {
        Version::V1
    };
    let invalid =
        |what: &str| format!("histogram is not a valid HdrHistogram {version:?} encoding ({what})");
    let plain_cookie = if version == Version::V0 {
        V0_COOKIE
    } else {
        V1_COOKIE
    };
    if !deflated {
        let head = header(bytes, plain_cookie).map_err(|e| invalid(&e))?;
        let body = &bytes[header_len..];
        let words = match head.payload {
            Some(payload) => {
                if (body.len() as u64) < payload {
                    return Err(invalid("the payload is shorter than its header says"));
                }
                &body[..payload as usize]
            }
            None => {
                let most = (head.counts as usize).saturating_mul(head.word);
                &body[..body.len().min(most) / head.word * head.word]
            }
        };
        return Ok(Some((
            to_v2(&head, words).map_err(|e| invalid(&e))?,
            version,
        )));
    }
    // Deflated: the header first, checked before any payload is inflated.
    let stream = bytes.get(8..).ok_or_else(|| invalid("truncated"))?;
    let mut inflater = flate2::read::ZlibDecoder::new(stream);
    let mut plain = Vec::with_capacity(header_len);
    (&mut inflater)
        .take(header_len as u64)
        .read_to_end(&mut plain)
        .map_err(|e| invalid(&format!("cannot inflate: {e}")))?;
    let head = header(&plain, plain_cookie).map_err(|e| invalid(&e))?;
    let limit = match head.payload {
        Some(payload) => payload,
        None => head.counts * head.word as u64,
    };
    (&mut inflater)
        .take(limit)
        .read_to_end(&mut plain)
        .map_err(|e| invalid(&format!("cannot inflate: {e}")))?;
    let got = (plain.len() - header_len) as u64;
    match head.payload {
        Some(payload) if got < payload => {
            return Err(invalid("the payload is shorter than its header says"));
        }
        // V1: the stream must end here, where zlib checks its Adler-32.
        Some(_) => match inflater.read(&mut [0u8; 1]) {
            Ok(0) => {}
            Ok(_) => return Err(invalid("more data than its header says")),
            Err(e) => return Err(invalid(&format!("cannot inflate: {e}"))),
        },
        // V0 has no length: a stream that ended before the bounds' last
        // count was checked at its end; one that goes on past it is read no
        // further, as Java's reader does.
        None if !got.is_multiple_of(head.word as u64) => {
            return Err(invalid("the counts end inside a count"));
        }
        None => {}
    }
    let words = &plain[header_len..];
    Ok(Some((
        to_v2(&head, words).map_err(|e| invalid(&e))?,
        version,
    )))
}

/// Reads and checks a plain V0 or V1 header whose cookie base must be
/// `expected`.
fn header(bytes: &[u8], expected: u32) -> Result<Header, String> {
    let version = if expected == V0_COOKIE {
        Version::V0
    } else {
        Version::V1
    };
    let len = if version == Version::V0 {
        V0_HEADER_LEN
    } else {
        V1_HEADER_LEN
    };
    if bytes.len() < len {
        return Err("truncated header".into());
    }
    let cookie = be(bytes, 0, 4) as u32;
    if base(cookie) != expected {
        return Err(format!(
            "cookie 0x{cookie:08x} inside the deflated data, expected 0x{expected:08x}"
        ));
    }
    let word = ((cookie >> 4) & 0xe) as usize;
    if !matches!(word, 2 | 4 | 8) {
        return Err(format!(
            "its cookie 0x{cookie:08x} gives counts of {word} bytes, not 2, 4 or 8"
        ));
    }
    let (payload, digits, lowest, highest) = match version {
        Version::V0 => (None, be(bytes, 4, 4), be(bytes, 8, 8), be(bytes, 16, 8)),
        _ => (
            Some(be(bytes, 4, 4)),
            be(bytes, 12, 4),
            be(bytes, 16, 8),
            be(bytes, 24, 8),
        ),
    };
    // Java reads these as signed: a top bit set is a negative length or bound.
    let negative = payload.is_some_and(|p| p > i32::MAX as u64)
        || lowest > i64::MAX as u64
        || highest > i64::MAX as u64;
    if negative {
        return Err("a negative length or bound".into());
    }
    let counts = counts_len(lowest, highest, digits).ok_or("impossible bounds")?;
    if let Some(p) = payload {
        if !p.is_multiple_of(word as u64) {
            return Err(format!(
                "a payload of {p} bytes is not a whole number of {word}-byte counts"
            ));
        }
        if p / word as u64 > counts {
            return Err(format!(
                "a payload of {p} bytes for a histogram of {counts} counts"
            ));
        }
    }
    Ok(Header {
        word,
        payload,
        digits,
        lowest,
        highest,
        counts,
    })
}

/// The plain V2 encoding of `head`'s bounds and the counts in `words`
/// (whole words, at most `head.counts` of them), runs of zeros as V2
/// writes them.
fn to_v2(head: &Header, words: &[u8]) -> Result<Vec<u8>, String> {
    debug_assert!(words.len().is_multiple_of(head.word));
    let mut payload = Vec::with_capacity(words.len() / head.word + 16);
    let mut zeros: u64 = 0;
    for (index, word) in words.chunks_exact(head.word).enumerate() {
        let raw = be(word, 0, head.word);
        // Sign-extend from the word's width, as Java's getShort/getInt/getLong.
        let shift = 64 - 8 * head.word as u32;
        let count = ((raw << shift) as i64) >> shift;
        if count < 0 {
            return Err(format!("a negative count ({count}) at index {index}"));
        }
        if count == 0 {
            zeros += 1;
            continue;
        }
        put_zeros(&mut payload, zeros);
        zeros = 0;
        put_zigzag(&mut payload, count);
    }
    // Trailing zeros are left out, as V2's writer stops at the largest value.
    Ok(plain_v2_of(
        head.digits as u32,
        head.lowest,
        head.highest,
        &payload,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::encoding::decode_with_version;
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;

    /// A V1 (or V0) encoding laid out as Java's 2.1.x (1.2.1) writer does.
    fn legacy(version: Version, word: usize, counts: &[i64], deflate: bool) -> String {
        let (lowest, highest, digits) = (1u64, 3_600_000_000_000u64, 3u32);
        let mut plain = Vec::new();
        let words: Vec<u8> = counts
            .iter()
            .flat_map(|&c| c.to_be_bytes()[8 - word..].to_vec())
            .collect();
        match version {
            Version::V0 => {
                plain.extend_from_slice(&(V0_COOKIE + ((word as u32) << 4)).to_be_bytes());
                plain.extend_from_slice(&digits.to_be_bytes());
                plain.extend_from_slice(&lowest.to_be_bytes());
                plain.extend_from_slice(&highest.to_be_bytes());
                plain.extend_from_slice(&(counts.iter().sum::<i64>()).to_be_bytes());
            }
            _ => {
                plain.extend_from_slice(&(V1_COOKIE + ((word as u32) << 4)).to_be_bytes());
                plain.extend_from_slice(&(words.len() as u32).to_be_bytes());
                plain.extend_from_slice(&0u32.to_be_bytes());
                plain.extend_from_slice(&digits.to_be_bytes());
                plain.extend_from_slice(&lowest.to_be_bytes());
                plain.extend_from_slice(&highest.to_be_bytes());
                plain.extend_from_slice(&1.0f64.to_be_bytes());
            }
        }
        plain.extend_from_slice(&words);
        if !deflate {
            return STANDARD.encode(plain);
        }
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        std::io::Write::write_all(&mut z, &plain).unwrap();
        let deflated = z.finish().unwrap();
        let outer = if version == Version::V0 {
            V0_DEFLATE_COOKIE
        } else {
            V1_DEFLATE_COOKIE
        };
        let mut bytes = (outer + ((word as u32) << 4)).to_be_bytes().to_vec();
        bytes.extend_from_slice(&(deflated.len() as u32).to_be_bytes());
        bytes.extend_from_slice(&deflated);
        STANDARD.encode(bytes)
    }

    #[test]
    fn every_word_size_and_form_reads_to_the_same_histogram() {
        // Index i holds value i below 2048 (lowest 1, 3 digits); 3000 sits
        // at index 2048 + (3000 - 2048) / 2 = 2524.
        let mut counts = vec![0i64; 2525];
        counts[0] = 1;
        counts[7] = 3;
        counts[1000] = 5;
        counts[2524] = 2;
        let mut want = crate::record::histogram::empty_hdr();
        want.record_n(0, 1).unwrap();
        want.record_n(7, 3).unwrap();
        want.record_n(1000, 5).unwrap();
        want.record_n(3000, 2).unwrap();
        for version in [Version::V0, Version::V1] {
            for word in [2, 4, 8] {
                for deflate in [false, true] {
                    let text = legacy(version, word, &counts, deflate);
                    let (got, seen) = decode_with_version(&text)
                        .unwrap_or_else(|e| panic!("{version:?} {word} {deflate}: {e}"));
                    assert_eq!(seen, version);
                    assert_eq!(got, want, "{version:?} word {word} deflate {deflate}");
                }
            }
        }
    }

    #[test]
    fn java_cookies_have_the_word_size_added() {
        // What 2.1.x's Histogram (8-byte counts) writes in a log: 0x1c849382.
        let text = legacy(Version::V1, 8, &[0, 1], true);
        let bytes = STANDARD.decode(&text).unwrap();
        assert_eq!(&bytes[..4], &[0x1c, 0x84, 0x93, 0x82]);
        // And 1.2.1's: 0x1c849389.
        let text = legacy(Version::V0, 8, &[0, 1], true);
        let bytes = STANDARD.decode(&text).unwrap();
        assert_eq!(&bytes[..4], &[0x1c, 0x84, 0x93, 0x89]);
    }

    #[test]
    fn malformed_legacy_encodings_are_errors() {
        // A V1 header claiming more counts than its bounds hold.
        let mut bytes = STANDARD
            .decode(legacy(Version::V1, 8, &[1, 2], false))
            .unwrap();
        bytes[4..8].copy_from_slice(&(1u32 << 30).to_be_bytes());
        let err = decode_with_version(&STANDARD.encode(&bytes)).unwrap_err();
        assert!(err.contains("V1") && err.contains("a payload of"), "{err}");
        // A payload that is not whole words.
        bytes[4..8].copy_from_slice(&12u32.to_be_bytes());
        let err = decode_with_version(&STANDARD.encode(&bytes)).unwrap_err();
        assert!(err.contains("whole number"), "{err}");
        // A payload shorter than it says.
        bytes[4..8].copy_from_slice(&24u32.to_be_bytes());
        let err = decode_with_version(&STANDARD.encode(&bytes)).unwrap_err();
        assert!(err.contains("shorter"), "{err}");
        // A word size Java refuses (the TLZE bit alone).
        let mut odd = STANDARD
            .decode(legacy(Version::V1, 8, &[1], false))
            .unwrap();
        odd[3] = 0x11;
        let err = decode_with_version(&STANDARD.encode(&odd)).unwrap_err();
        assert!(err.contains("0 bytes"), "{err}");
        // A negative count.
        let err = decode_with_version(&legacy(Version::V0, 4, &[1, -3], true)).unwrap_err();
        assert!(err.contains("negative count"), "{err}");
        // Impossible bounds (lowest 0).
        let mut zero = STANDARD
            .decode(legacy(Version::V0, 8, &[1], false))
            .unwrap();
        zero[8..16].copy_from_slice(&0u64.to_be_bytes());
        let err = decode_with_version(&STANDARD.encode(&zero)).unwrap_err();
        assert!(err.contains("impossible bounds"), "{err}");
        // Truncated everywhere.
        let whole = STANDARD
            .decode(legacy(Version::V1, 8, &[1, 2, 3], true))
            .unwrap();
        for cut in 1..whole.len() {
            let _ = decode_with_version(&STANDARD.encode(&whole[..cut]));
        }
        let v0 = STANDARD
            .decode(legacy(Version::V0, 2, &[1, 2, 3], true))
            .unwrap();
        for cut in 1..v0.len() {
            let _ = decode_with_version(&STANDARD.encode(&v0[..cut]));
        }
    }

    #[test]
    fn a_v0_bomb_is_inflated_no_further_than_its_bounds() {
        // A V0 header with lowest 1, highest 2, digits 0: 2 counts. Then
        // 64 MiB of zeros: read no further than the bounds' two words.
        let mut plain = (V0_COOKIE + 0x80).to_be_bytes().to_vec();
        plain.extend_from_slice(&0u32.to_be_bytes());
        plain.extend_from_slice(&1u64.to_be_bytes());
        plain.extend_from_slice(&2u64.to_be_bytes());
        plain.extend_from_slice(&0u64.to_be_bytes());
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        std::io::Write::write_all(&mut z, &plain).unwrap();
        std::io::Write::write_all(&mut z, &vec![0u8; 64 << 20]).unwrap();
        let deflated = z.finish().unwrap();
        let mut bytes = (V0_DEFLATE_COOKIE + 0x80).to_be_bytes().to_vec();
        bytes.extend_from_slice(&(deflated.len() as u32).to_be_bytes());
        bytes.extend_from_slice(&deflated);
        let (h, _) = decode_with_version(&STANDARD.encode(&bytes)).unwrap();
        assert!(h.is_empty());
    }
}
