//! Histograms as text: the HdrHistogram V2 compressed (deflate) encoding in
//! base64 — the same string a `.hlog` interval line carries, so a run file's
//! histograms can be pasted into any HdrHistogram tool.
//!
//! Spec: HdrHistogram's `encodeIntoCompressedByteBuffer` (V2 cookie
//! 0x1c849304, ZigZag LEB128 counts, zlib-deflated).
//!
//! cauda writes only V2; it also reads the V0 and V1 encodings of older
//! logs (jHiccup up to 2.0.6, YCSB of that era), through the private
//! `legacy`, which rewrites them as V2 for the same decoder.
//!
//! Here: the encoder and the decoders' entry points. The V2 layout itself
//! (header, varints, bounds) is `v2`; reading cauda's own shape straight
//! from the counts, `own_shape`.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hdrhistogram::Histogram;

mod legacy;
mod own_shape;
mod v2;

use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};

use super::zlib;
pub use super::zlib::Effort;
use own_shape::{own_shape_counts, own_shape_counts_into};
pub use v2::Version;
use v2::{
    COOKIE_BASE_MASK, V2_COOKIE, V2_DEFLATE_COOKIE, V2_HEADER_LEN, deflated_stream, payload_bound,
    plain_v2, plain_v2_of, put_zeros, put_zigzag,
};

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
        zlib::with_inflated(deflated_stream(bytes).ok()?, |plain| {
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
    match legacy::plain_v2(&bytes)? {
        Some(legacy) => Ok(legacy),
        None => Ok((plain_v2(&bytes)?, Version::V2)),
    }
}

fn deserialize(plain: &[u8], version: Version) -> Result<Histogram<u64>, String> {
    Deserializer::new()
        .deserialize(&mut &plain[..])
        .map_err(|e| format!("histogram is not a valid HdrHistogram {version:?} encoding ({e:?})"))
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

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(decode("not base64 !!").is_err());
        assert!(decode("SGVsbG8gd29ybGQ=").is_err());
        assert!(decode("").is_err());
    }
}
