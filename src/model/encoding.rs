//! Histograms as text: the HdrHistogram V2 compressed (deflate) encoding in
//! base64 — the same string a `.hlog` interval line carries, so a run file's
//! histograms can be pasted into any HdrHistogram tool.
//!
//! Spec: HdrHistogram's `encodeIntoCompressedByteBuffer` (V2 cookie
//! 0x1c849304, ZigZag LEB128 counts, zlib-deflated).
//!
//! cauda writes only V2; it also reads the V0 and V1 encodings of older
//! logs (jHiccup up to 2.0.6, YCSB of that era), through the private
//! `model::legacy_encoding`, which rewrites them as V2 for the same decoder.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hdrhistogram::Histogram;

use super::zlib;
pub use super::zlib::Effort;
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

/// Encodes cauda-shape buckets, (counts index, count) pairs in increasing
/// index, as V2-deflate base64: the plain V2 bytes are those [`encode`]
/// writes for the histogram holding them (tested), made without building
/// that histogram, and deflated by one compressor per thread with
/// `effort`.
pub fn encode_buckets(pairs: impl IntoIterator<Item = (usize, u64)>, effort: Effort) -> String {
    use crate::record::histogram::{HIGHEST_NS, LOWEST_NS, SIGNIFICANT_DIGITS};
    // Counts from index 0 to the last occupied one.
    let mut payload = Vec::with_capacity(256);
    let mut next = 0usize;
    for (index, count) in pairs.into_iter().filter(|&(_, c)| c > 0) {
        put_zeros(&mut payload, (index - next) as u64);
        put_zigzag(&mut payload, count.min(i64::MAX as u64) as i64);
        next = index + 1;
    }
    if next == 0 {
        // An empty histogram holds the one count at index 0.
        put_zigzag(&mut payload, 0);
    }
    let plain = plain_v2_of(SIGNIFICANT_DIGITS.into(), LOWEST_NS, HIGHEST_NS, &payload);
    let mut out = Vec::with_capacity(plain.len() / 2 + 64);
    out.extend_from_slice(&V2_DEFLATE_COOKIE.to_be_bytes());
    out.extend_from_slice(&0u32.to_be_bytes()); // deflated length, below
    zlib::deflate_into(&plain, &mut out, effort);
    let deflated = (out.len() - 8) as u32;
    out[4..8].copy_from_slice(&deflated.to_be_bytes());
    STANDARD.encode(out)
}

/// A plain V2 histogram: the header of these bounds, then `payload`.
pub(super) fn plain_v2_of(digits: u32, lowest: u64, highest: u64, payload: &[u8]) -> Vec<u8> {
    let mut plain = Vec::with_capacity(V2_HEADER_LEN + payload.len());
    plain.extend_from_slice(&V2_COOKIE.to_be_bytes());
    plain.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    plain.extend_from_slice(&0u32.to_be_bytes()); // normalizing offset
    plain.extend_from_slice(&digits.to_be_bytes());
    plain.extend_from_slice(&lowest.to_be_bytes());
    plain.extend_from_slice(&highest.to_be_bytes());
    plain.extend_from_slice(&1.0f64.to_be_bytes()); // integer-to-double ratio
    plain.extend_from_slice(payload);
    plain
}

/// A run of `n` empty counts: one 0, or −n for two or more (V2's rule).
pub(super) fn put_zeros(out: &mut Vec<u8>, n: u64) {
    match n {
        0 => {}
        1 => put_zigzag(out, 0),
        // At most the bounds' counts (≤ 2^31), so the negation fits.
        n => put_zigzag(out, -(n as i64)),
    }
}

/// ZigZag, then LEB128 in at most 9 bytes (the ninth holds 8 bits), as
/// HdrHistogram's `ZigZagEncoding.putLong`.
pub(super) fn put_zigzag(out: &mut Vec<u8>, value: i64) {
    let mut v = ((value << 1) ^ (value >> 63)) as u64;
    for _ in 0..8 {
        if v < 0x80 {
            out.push(v as u8);
            return;
        }
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The plain V2 encoding's cookie, and the deflated one's (HdrHistogram
/// ORs in a word size, 0x10, that readers mask off).
const V2_COOKIE: u32 = 0x1c84_9313;
const V2_DEFLATE_COOKIE: u32 = 0x1c84_9314;
const COOKIE_BASE_MASK: u32 = !0xf0;
/// A plain V2 header: cookie, payload length, normalizing offset,
/// significant digits, lowest, highest, integer-to-double ratio.
const V2_HEADER_LEN: usize = 40;
/// The longest a ZigZag LEB128 count can be.
const MAX_VARINT_LEN: u64 = 9;

/// The HdrHistogram encodings cauda reads (it writes V2 only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// Java HdrHistogram 1.x (cookie base 0x1c849308, deflated 0x1c849309).
    V0,
    /// Java HdrHistogram 2.0.1 – 2.1.6 (0x1c849301, deflated 0x1c849302).
    V1,
    /// Every HdrHistogram since 2.1.7 (0x1c849303, deflated 0x1c849304).
    V2,
}

/// Decodes V2, V1 or V0 (deflated or plain) base64 into a histogram.
///
/// The header's lengths are checked against what the histogram it
/// describes can hold before anything is allocated or inflated: a header
/// claiming a 2 GiB payload, or a few bytes that inflate to gigabytes,
/// is refused at the size the histogram's own bounds allow.
pub fn decode(text: &str) -> Result<Histogram<u64>, String> {
    decode_with_version(text).map(|(hist, _)| hist)
}

/// [`decode`], also saying which encoding the text used.
pub fn decode_with_version(text: &str) -> Result<(Histogram<u64>, Version), String> {
    let (plain, version) = plain_encoding(text)?;
    Ok((deserialize(&plain, version)?, version))
}

/// A stored histogram read for its buckets ([`buckets`]).
#[derive(Debug, PartialEq)]
pub enum Buckets {
    /// cauda's own shape: the occupied buckets as increasing
    /// (bucket value, count) pairs, read straight from the counts.
    Sparse(Vec<(u64, u64)>),
    /// Any other shape, decoded in full.
    Full(Histogram<u64>),
}

/// The buckets of an encoded histogram: for cauda's own shape (lowest 1
/// ns, 3 significant digits, no index offset) read straight from the V2
/// counts without building a 33,792-bucket histogram; any other shape
/// decoded in full. The text is inflated once either way.
pub fn buckets(text: &str) -> Result<Buckets, String> {
    use crate::record::histogram::bucket_top;
    let (plain, version) = plain_encoding(text)?;
    Ok(match own_shape_counts(&plain)? {
        Some(pairs) => {
            Buckets::Sparse(pairs.into_iter().map(|(i, c)| (bucket_top(i), c)).collect())
        }
        None => Buckets::Full(deserialize(&plain, version)?),
    })
}

/// The occupied buckets of an encoded histogram as increasing (cauda
/// counts index, count) pairs, what a merge adds up, and whether it was of
/// cauda's own shape: another shape is decoded in full and each of its
/// values put in cauda's bucket.
pub fn bucket_indexes(text: &str) -> Result<(Vec<(usize, u64)>, bool), String> {
    use crate::record::histogram::own_buckets;
    let (plain, version) = plain_encoding(text)?;
    Ok(match own_shape_counts(&plain)? {
        Some(pairs) => (pairs, true),
        None => (
            own_buckets(
                deserialize(&plain, version)?
                    .iter_recorded()
                    .map(|b| (b.value_iterated_to(), b.count_at_value())),
            ),
            false,
        ),
    })
}

/// [`bucket_indexes`] into `pairs` (cleared first), for a merge that reads
/// thousands: a deflated V2 histogram of cauda's own shape is decoded and
/// inflated in this thread's buffers and read where it lies, with the
/// checks the general path makes; anything else takes [`bucket_indexes`].
pub fn bucket_indexes_into(text: &str, pairs: &mut Vec<(usize, u64)>) -> Result<bool, String> {
    thread_local! {
        static BYTES: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let fast = BYTES.with_borrow_mut(|bytes| {
        bytes.clear();
        STANDARD.decode_vec(text.trim(), bytes).ok()?;
        let cookie = u32::from_be_bytes(bytes.get(..4)?.try_into().ok()?) & COOKIE_BASE_MASK;
        if cookie != V2_DEFLATE_COOKIE & COOKIE_BASE_MASK {
            return None;
        }
        zlib::with_inflated(bytes.get(8..)?, |plain| {
            let plain_cookie = u32::from_be_bytes(plain[..4].try_into().ok()?) & COOKIE_BASE_MASK;
            if plain_cookie != V2_COOKIE & COOKIE_BASE_MASK {
                return None;
            }
            let claimed = payload_bound(plain).ok()?;
            if (plain.len() - V2_HEADER_LEN) as u64 != claimed {
                return None;
            }
            match own_shape_counts_into(plain, pairs) {
                Ok(true) => Some(Ok(true)),
                Ok(false) => None,
                Err(e) => Some(Err(e)),
            }
        })
        .flatten()
    });
    match fast {
        Some(result) => result,
        // Another version or shape, or a damaged one: the general path,
        // which also says what is wrong.
        None => {
            let (all, own) = bucket_indexes(text)?;
            pairs.clear();
            pairs.extend(all);
            Ok(own)
        }
    }
}

/// The plain V2 bytes of a base64 histogram of any version (V0 and V1
/// rewritten as V2), and which version it was.
fn plain_encoding(text: &str) -> Result<(Vec<u8>, Version), String> {
    let bytes = STANDARD
        .decode(text.trim())
        .map_err(|e| format!("histogram is not valid base64 ({e})"))?;
    match super::legacy_encoding::plain_v2(&bytes)? {
        Some(legacy) => Ok(legacy),
        None => Ok((plain_v2(&bytes)?, Version::V2)),
    }
}

fn deserialize(plain: &[u8], version: Version) -> Result<Histogram<u64>, String> {
    Deserializer::new()
        .deserialize(&mut &plain[..])
        .map_err(|e| format!("histogram is not a valid HdrHistogram {version:?} encoding ({e:?})"))
}

/// The occupied buckets of a plain V2 histogram of cauda's own shape as
/// increasing (bucket value, count) pairs; `None` for any other shape.
///
/// The V2 payload lists the counts array from index 0 as ZigZag LEB128
/// numbers (at most 9 bytes, the 9th taken whole): a positive number is
/// the count at the next index, a negative one skips that many empty
/// indexes (HdrHistogram's `fillCountsArrayFromSourceBuffer`).
fn own_shape_counts(plain: &[u8]) -> Result<Option<Vec<(usize, u64)>>, String> {
    let mut entries = Vec::new();
    Ok(own_shape_counts_into(plain, &mut entries)?.then_some(entries))
}

/// [`own_shape_counts`] into `entries` (cleared first); false for another
/// shape, leaving `entries` unspecified.
fn own_shape_counts_into(plain: &[u8], entries: &mut Vec<(usize, u64)>) -> Result<bool, String> {
    use crate::record::histogram::{HIGHEST_NS, bucket_index};
    if plain.len() < V2_HEADER_LEN {
        return Err("histogram is not a valid HdrHistogram V2 encoding (header cut short)".into());
    }
    let word = |at: usize| -> u64 {
        plain[at..at + 8]
            .iter()
            .fold(0u64, |v, &b| (v << 8) | u64::from(b))
    };
    let half =
        |at: usize| u32::from_be_bytes([plain[at], plain[at + 1], plain[at + 2], plain[at + 3]]);
    let (payload_len, offset, digits, lowest) = (half(4) as usize, half(8), half(12), word(16));
    if offset != 0 || digits != 3 || lowest != 1 {
        return Ok(false);
    }
    let payload = plain
        .get(V2_HEADER_LEN..V2_HEADER_LEN + payload_len)
        .ok_or("histogram is not a valid HdrHistogram V2 encoding (payload cut short)")?;
    let last = bucket_index(HIGHEST_NS);
    // Each entry takes a byte of payload at least, so the entries fit in
    // as many slots as the payload has bytes. Each number is written to
    // the next slot and kept only if it is a count: counts and skips
    // alternate at random in a busy interval, and a branch on which it is
    // would be mispredicted half the time.
    // Kept entries have increasing indexes up to `last`, so at most
    // `last + 1` are kept, and one more slot takes a number not kept.
    entries.resize(payload.len().min(last + 2), (0, 0));
    let (mut index, mut at, mut kept) = (0usize, 0usize, 0usize);
    while let Some(&b) = payload.get(at) {
        // Most numbers of a busy interval take one byte.
        let raw = if b < 0x80 {
            at += 1;
            u64::from(b)
        } else {
            leb128(payload, &mut at)?
        };
        let number = (raw >> 1) as i64 ^ -((raw & 1) as i64);
        let skip = number < 0;
        // `&`, not `&&`: one branch, never taken for cauda's own histograms,
        // rather than a branch on `skip`.
        if !skip & (index > last) {
            // Beyond cauda's range: leave it to the full decoder.
            return Ok(false);
        }
        entries[kept] = (index, number as u64);
        kept += usize::from(number > 0);
        index = index.saturating_add(if skip {
            number.unsigned_abs() as usize
        } else {
            1
        });
    }
    entries.truncate(kept);
    Ok(true)
}

/// The LEB128 number at `at` (at most 9 bytes, the 9th taken whole), `at`
/// moved past it.
fn leb128(payload: &[u8], at: &mut usize) -> Result<u64, String> {
    let mut raw = 0u64;
    for k in 0..9 {
        let Some(&b) = payload.get(*at) else {
            return Err(
                "histogram is not a valid HdrHistogram V2 encoding (a count cut short)".into(),
            );
        };
        *at += 1;
        if k == 8 {
            return Ok(raw | u64::from(b) << 56);
        }
        raw |= u64::from(b & 0x7f) << (7 * k);
        if b & 0x80 == 0 {
            break;
        }
    }
    Ok(raw)
}

/// The plain V2 encoding of `bytes` (inflated if deflated), its payload
/// length checked against the most counts its header's bounds can need.
fn plain_v2(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let invalid =
        |what: &str| format!("histogram is not a valid HdrHistogram V2 encoding ({what})");
    let cookie = |b: &[u8]| {
        b.get(..4)
            .map(|s| u32::from_be_bytes([s[0], s[1], s[2], s[3]]) & COOKIE_BASE_MASK)
    };
    let mut plain = match cookie(bytes) {
        Some(c) if c == V2_COOKIE & COOKIE_BASE_MASK => {
            let claimed = payload_bound(bytes).map_err(|e| invalid(&e))?;
            if ((bytes.len() - V2_HEADER_LEN) as u64) < claimed {
                return Err(invalid("the payload is shorter than its header says"));
            }
            bytes.to_vec()
        }
        Some(c) if c == V2_DEFLATE_COOKIE & COOKIE_BASE_MASK => {
            let deflated = bytes.get(8..).ok_or_else(|| invalid("truncated"))?;
            if let Some(plain) = zlib::inflate_whole(deflated) {
                if cookie(&plain) != Some(V2_COOKIE & COOKIE_BASE_MASK) {
                    return Err(invalid("no V2 histogram inside the deflated data"));
                }
                let claimed = payload_bound(&plain).map_err(|e| invalid(&e))?;
                let payload = (plain.len() - V2_HEADER_LEN) as u64;
                if payload < claimed {
                    return Err(invalid("the payload is shorter than its header says"));
                }
                if payload > claimed {
                    return Err(invalid("more data than its header says"));
                }
                let mut plain = plain;
                plain[..4].copy_from_slice(&V2_COOKIE.to_be_bytes());
                return Ok(plain);
            }
            let mut inflater = zlib::Inflater::new(deflated);
            let mut plain = Vec::with_capacity(4096);
            inflater
                .fill(&mut plain, V2_HEADER_LEN)
                .map_err(|e| invalid(&e))?;
            if cookie(&plain) != Some(V2_COOKIE & COOKIE_BASE_MASK) {
                return Err(invalid("no V2 histogram inside the deflated data"));
            }
            let claimed = payload_bound(&plain).map_err(|e| invalid(&e))?;
            // Never more than the header's bounds allow: a small input
            // that inflates to gigabytes stops here.
            inflater
                .fill(&mut plain, V2_HEADER_LEN + claimed as usize)
                .map_err(|e| invalid(&e))?;
            if ((plain.len() - V2_HEADER_LEN) as u64) < claimed {
                return Err(invalid("the payload is shorter than its header says"));
            }
            // The stream must end here, where zlib checks its Adler-32: a
            // flipped byte of deflated data is caught, not decoded.
            if !inflater.ends_here().map_err(|e| invalid(&e))? {
                return Err(invalid("more data than its header says"));
            }
            plain
        }
        _ => {
            return Err(match bytes.get(..4) {
                Some(b) => format!(
                    "histogram is not an HdrHistogram encoding (cookie 0x{:08x}; expected \
                     V2, V1 or V0)",
                    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
                ),
                None => invalid("truncated"),
            });
        }
    };
    // The decoder takes only the cookie with the word size HdrHistogram writes.
    plain[..4].copy_from_slice(&V2_COOKIE.to_be_bytes());
    Ok(plain)
}

/// The payload length a plain V2 header claims, if its histogram's bounds
/// could need that many bytes (every count a 9-byte varint).
fn payload_bound(header: &[u8]) -> Result<u64, String> {
    if header.len() < V2_HEADER_LEN {
        return Err("truncated header".into());
    }
    let field = |at: usize, len: usize| {
        header[at..at + len]
            .iter()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b))
    };
    let (claimed, digits, lowest, highest) =
        (field(4, 4), field(12, 4), field(16, 8), field(24, 8));
    let counts = counts_len(lowest, highest, digits).ok_or("impossible bounds")?;
    if claimed > counts * MAX_VARINT_LEN {
        return Err(format!(
            "a payload of {claimed} bytes for a histogram of {counts} counts"
        ));
    }
    Ok(claimed)
}

/// How many counts HdrHistogram keeps for these bounds (its
/// `counts_array_length`), or `None` for bounds no histogram can have.
pub(super) fn counts_len(lowest: u64, highest: u64, digits: u64) -> Option<u64> {
    if lowest == 0 || digits > 5 || highest < lowest.checked_mul(2)? {
        return None;
    }
    let largest_single_unit = 2 * 10u128.pow(digits as u32);
    let sub_bucket_count = largest_single_unit.next_power_of_two();
    let unit_magnitude = 63 - lowest.leading_zeros();
    // In u128, so no shift can lose bits; HdrHistogram refuses bounds whose
    // first bucket does not fit in 64 bits.
    let smallest_untrackable = sub_bucket_count << unit_magnitude;
    if smallest_untrackable > u128::from(u64::MAX) {
        return None;
    }
    // Buckets double until one covers `highest` (at most 64 of them).
    let mut buckets = 1u64;
    let mut covered = smallest_untrackable;
    while covered <= u128::from(highest) {
        if covered > u128::from(u64::MAX / 2) {
            buckets += 1;
            break;
        }
        covered <<= 1;
        buckets += 1;
    }
    Some((buckets + 1) * (sub_bucket_count as u64 / 2))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::histogram::empty_hdr;

    #[test]
    fn the_merge_s_reading_equals_the_general_one() {
        let mut pairs = vec![(7, 7)];
        let mut rng = crate::record::schedule::SplitMix64::new(5);
        for n in [0, 1, 50, 5_000] {
            let mut h = empty_hdr();
            for _ in 0..n {
                h.record(1 + rng.next_u64() % 10_000_000_000).unwrap();
            }
            let text = encode(&h);
            let own = bucket_indexes_into(&text, &mut pairs).unwrap();
            assert_eq!((pairs.clone(), own), bucket_indexes(&text).unwrap());
        }
        // Damaged: the same error either way.
        let mut bytes = STANDARD.decode(encode(&empty_hdr())).unwrap();
        let at = bytes.len() - 3;
        bytes[at] ^= 0x40;
        let text = STANDARD.encode(&bytes);
        assert_eq!(
            bucket_indexes_into(&text, &mut pairs).unwrap_err(),
            bucket_indexes(&text).unwrap_err()
        );
    }

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

    /// The straight read of the counts gives exactly the decoded
    /// histogram's occupied buckets, across cauda's whole range, for sparse
    /// and dense histograms, large counts and the empty one.
    #[test]
    fn own_shape_buckets_are_the_decoded_histograms_buckets() {
        let mut rng = crate::record::schedule::SplitMix64::new(16);
        for round in 0..300 {
            let mut h = empty_hdr();
            let values = [0, 1, 10, 500, 5_000][round % 5];
            for _ in 0..values {
                // Log-uniform over 1 ns – 1 h, counts up to 2^40.
                let exponent = rng.next_u64() % 42;
                let v = (1u64 << exponent) + rng.next_u64() % (1u64 << exponent);
                let count = 1 + rng.next_u64() % [3, 1 << 20, 1 << 40][round % 3];
                h.record_n(v.min(3_600_000_000_000), count).unwrap();
            }
            let text = encode(&h);
            let expected: Vec<(u64, u64)> = decode(&text)
                .unwrap()
                .iter_recorded()
                .map(|b| (b.value_iterated_to(), b.count_at_value()))
                .collect();
            assert_eq!(
                buckets(&text).unwrap(),
                Buckets::Sparse(expected),
                "round {round}"
            );
        }
    }

    #[test]
    fn other_shapes_are_left_to_the_full_decoder() {
        let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 1_000_000, 2).unwrap();
        h.record(1_234).unwrap();
        assert_eq!(buckets(&encode(&h)).unwrap(), Buckets::Full(h));
        // cauda's shape but a value beyond its range (two hours), after
        // counts within it: read in full, nothing taken from the first read.
        let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, u64::MAX, 3).unwrap();
        h.record(5).unwrap();
        h.record(7_200_000_000_000).unwrap();
        assert_eq!(buckets(&encode(&h)).unwrap(), Buckets::Full(h.clone()));
        let mut pairs = vec![(1, 1)];
        assert!(!bucket_indexes_into(&encode(&h), &mut pairs).unwrap());
        assert_eq!(pairs.len(), 2, "{pairs:?}");
        assert!(buckets("HISTFAAAACB4nJNpmSzMwMDAxcAABMwMEOD4n+Gx").is_err());
    }

    #[test]
    fn counts_length_is_hdrhistograms() {
        for (low, high, digits) in [(1, 3_600_000_000_000, 3), (1, 2, 0), (1000, u64::MAX, 5)] {
            let h = Histogram::<u64>::new_with_bounds(low, high, digits as u8).unwrap();
            assert_eq!(
                counts_len(low, high, digits),
                Some(h.distinct_values() as u64)
            );
        }
        assert_eq!(counts_len(0, 10, 3), None);
        assert_eq!(counts_len(1, 10, 6), None);
        // Found by libFuzzer: a lowest of 2^50 shifted the first bucket's
        // bound out of 64 bits, to 0, and the bucket count never ended.
        assert_eq!(counts_len(1 << 50, u64::MAX, 5), None);
        assert!(Histogram::<u64>::new_with_bounds(1 << 50, u64::MAX, 5).is_err());
    }

    #[test]
    fn lengths_beyond_the_histograms_bounds_are_refused_before_allocating() {
        let h = empty_hdr();
        let mut plain = Vec::new();
        hdrhistogram::serialization::V2Serializer::new()
            .serialize(&h, &mut plain)
            .unwrap();
        // A plain V2 header claiming 2 GiB of payload.
        plain[4..8].copy_from_slice(&(2u32 << 30).to_be_bytes());
        let err = decode(&STANDARD.encode(&plain)).unwrap_err();
        assert!(err.contains("a payload of 2147483648 bytes"), "{err}");
        // The same header deflated: refused from its first 40 inflated bytes.
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        std::io::Write::write_all(&mut z, &plain).unwrap();
        std::io::Write::write_all(&mut z, &vec![0u8; 64 << 20]).unwrap();
        let deflated = z.finish().unwrap();
        let mut bomb = V2_DEFLATE_COOKIE.to_be_bytes().to_vec();
        bomb.extend_from_slice(&(deflated.len() as u32).to_be_bytes());
        bomb.extend_from_slice(&deflated);
        let err = decode(&STANDARD.encode(&bomb)).unwrap_err();
        assert!(err.contains("a payload of"), "{err}");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// The sparse encoder's plain V2 bytes are exactly what
        /// HdrHistogram's serializer writes for the same histogram.
        #[test]
        fn sparse_encoding_is_hdrhistograms_byte_for_byte(
            values in proptest::collection::vec((0u64..4_000_000_000_000, 1u64..1_000), 0..300),
        ) {
            use crate::record::histogram::{HIGHEST_NS, bucket_index};
            let mut h = empty_hdr();
            for &(v, c) in &values {
                h.record_n(v.min(HIGHEST_NS), c).unwrap();
            }
            let pairs = h
                .iter_recorded()
                .map(|b| (bucket_index(b.value_iterated_to()), b.count_at_value()));
            proptest::prop_assert_eq!(
                plain_encoding(&encode_buckets(pairs, Effort::Small)).unwrap(),
                plain_encoding(&encode(&h)).unwrap()
            );
        }
    }

    #[test]
    fn sparse_encoding_writes_single_and_long_empty_runs_as_hdrhistogram_does() {
        use crate::record::histogram::bucket_index;
        for values in [&[][..], &[0], &[1], &[1, 3, 4, 100], &[2, 2, 5, 3_000_000]] {
            let mut h = empty_hdr();
            values.iter().for_each(|&v| h.record(v).unwrap());
            let pairs = h
                .iter_recorded()
                .map(|b| (bucket_index(b.value_iterated_to()), b.count_at_value()));
            assert_eq!(
                plain_encoding(&encode_buckets(pairs, Effort::Small)).unwrap(),
                plain_encoding(&encode(&h)).unwrap(),
                "{values:?}"
            );
        }
    }

    /// The straight read of the counts against a plain loop over the
    /// payload, as HdrHistogram reads it, on random payloads under a header
    /// of cauda's shape: the same entries, the same "not cauda's shape"
    /// (a count beyond its range), the same error for a cut number.
    #[test]
    fn the_straight_read_equals_a_plain_loop_on_any_payload() {
        use crate::record::histogram::{HIGHEST_NS, bucket_index};
        fn plain_loop(payload: &[u8]) -> Result<Option<Vec<(usize, u64)>>, ()> {
            let last = bucket_index(HIGHEST_NS);
            let (mut entries, mut index, mut at) = (Vec::new(), 0usize, 0usize);
            while at < payload.len() {
                let mut raw = 0u64;
                for k in 0..9 {
                    let b = *payload.get(at).ok_or(())?;
                    at += 1;
                    if k == 8 {
                        raw |= u64::from(b) << 56;
                        break;
                    }
                    raw |= u64::from(b & 0x7f) << (7 * k);
                    if b & 0x80 == 0 {
                        break;
                    }
                }
                let number = (raw >> 1) as i64 ^ -((raw & 1) as i64);
                if number < 0 {
                    index = index.saturating_add(number.unsigned_abs() as usize);
                    continue;
                }
                if index > last {
                    return Ok(None);
                }
                if number > 0 {
                    entries.push((index, number as u64));
                }
                index += 1;
            }
            Ok(Some(entries))
        }
        let mut rng = crate::record::schedule::SplitMix64::new(19);
        let mut entries = Vec::new();
        let mut outcomes = [0usize; 3];
        for round in 0..30_000 {
            let len = (rng.next_u64() % 120) as usize;
            let payload: Vec<u8> = (0..len)
                .map(|_| match rng.next_u64() % 8 {
                    // Mostly one-byte counts and skips, some longer numbers.
                    0..=4 => (rng.next_u64() % 0x80) as u8,
                    5 | 6 => 0x80 | (rng.next_u64() % 0x80) as u8,
                    _ => rng.next_u64() as u8,
                })
                .collect();
            let plain = plain_v2_of(3, 1, HIGHEST_NS, &payload);
            let read = own_shape_counts_into(&plain, &mut entries);
            let expected = plain_loop(&payload);
            match (read, expected) {
                (Ok(true), Ok(Some(e))) => {
                    assert_eq!(entries, e, "round {round}: {payload:?}");
                    outcomes[0] += 1;
                }
                (Ok(false), Ok(None)) => outcomes[1] += 1,
                (Err(_), Err(())) => outcomes[2] += 1,
                (read, expected) => {
                    panic!("round {round}: {read:?} vs {expected:?} for {payload:?}")
                }
            }
        }
        // Each outcome was tried many times.
        assert!(outcomes.iter().all(|&n| n > 1_000), "{outcomes:?}");
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(decode("not base64 !!").is_err());
        assert!(decode("SGVsbG8gd29ybGQ=").is_err());
        assert!(decode("").is_err());
    }
}
