//! The plain V2 layout of an HdrHistogram encoding, which the encoder
//! writes, the legacy reader rewrites V0 and V1 into, and the decoders
//! check before reading: its cookies and header, its ZigZag LEB128 counts,
//! and the most counts a header's bounds can need (so nothing is allocated
//! or inflated beyond them).
//!
//! Spec: HdrHistogram's `encodeIntoByteBuffer` / `decodeFromByteBuffer`
//! (V2 cookie 0x1c849303, deflated 0x1c849304).

use super::super::zlib;

/// The plain V2 encoding's cookie, and the deflated one's (HdrHistogram
/// ORs in a word size, 0x10, that readers mask off).
pub const V2_COOKIE: u32 = 0x1c84_9313;
pub const V2_DEFLATE_COOKIE: u32 = 0x1c84_9314;
pub const COOKIE_BASE_MASK: u32 = !0xf0;
/// A plain V2 header: cookie, payload length, normalizing offset,
/// significant digits, lowest, highest, integer-to-double ratio.
pub const V2_HEADER_LEN: usize = 40;
/// The longest a ZigZag LEB128 count can be.
pub const MAX_VARINT_LEN: u64 = 9;

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

/// A plain V2 histogram: the header of these bounds, then `payload`.
pub fn plain_v2_of(digits: u32, lowest: u64, highest: u64, payload: &[u8]) -> Vec<u8> {
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
pub fn put_zeros(out: &mut Vec<u8>, n: u64) {
    match n {
        0 => {}
        1 => put_zigzag(out, 0),
        // At most the bounds' counts (≤ 2^31), so the negation fits.
        n => put_zigzag(out, -(n as i64)),
    }
}

/// ZigZag, then LEB128 in at most 9 bytes (the ninth holds 8 bits), as
/// HdrHistogram's `ZigZagEncoding.putLong`.
pub fn put_zigzag(out: &mut Vec<u8>, value: i64) {
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

/// The plain V2 encoding of `bytes` (inflated if deflated), its payload
/// length checked against the most counts its header's bounds can need.
pub fn plain_v2(bytes: &[u8]) -> Result<Vec<u8>, String> {
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
            let deflated = deflated_stream(bytes).map_err(|e| invalid(&e))?;
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

/// The zlib stream of a deflated encoding: what follows its cookie and
/// length, which must be exactly as long as that length says —
/// HdrHistogram's decoders inflate that many bytes, so an encoding whose
/// length disagrees is one they cannot read (Java's
/// `decodeFromCompressedByteBuffer`).
pub fn deflated_stream(bytes: &[u8]) -> Result<&[u8], String> {
    let (Some(length), Some(stream)) = (bytes.get(4..8), bytes.get(8..)) else {
        return Err("truncated".into());
    };
    let claimed = u32::from_be_bytes([length[0], length[1], length[2], length[3]]);
    if u64::from(claimed) != stream.len() as u64 {
        return Err(format!(
            "its header says {claimed} deflated bytes, {} follow",
            stream.len()
        ));
    }
    Ok(stream)
}

/// The payload length a plain V2 header claims, if its histogram's bounds
/// could need that many bytes (every count a 9-byte varint).
pub fn payload_bound(header: &[u8]) -> Result<u64, String> {
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
pub fn counts_len(lowest: u64, highest: u64, digits: u64) -> Option<u64> {
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
    use hdrhistogram::Histogram;

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
}
