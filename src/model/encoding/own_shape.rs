//! Reading a plain V2 histogram of cauda's own shape (lowest 1 ns, 3
//! significant digits, no index offset) straight from its counts, without
//! building the 33,792-bucket histogram: what a merge of thousands of
//! stored histograms spends its time in.

use super::v2::V2_HEADER_LEN;

/// The occupied buckets of a plain V2 histogram of cauda's own shape as
/// increasing (bucket value, count) pairs; `None` for any other shape.
///
/// The V2 payload lists the counts array from index 0 as ZigZag LEB128
/// numbers (at most 9 bytes, the 9th taken whole): a positive number is
/// the count at the next index, a negative one skips that many empty
/// indexes (HdrHistogram's `fillCountsArrayFromSourceBuffer`).
pub fn own_shape_counts(plain: &[u8]) -> Result<Option<Vec<(usize, u64)>>, String> {
    let mut entries = Vec::new();
    Ok(own_shape_counts_into(plain, &mut entries)?.then_some(entries))
}

/// [`own_shape_counts`] into `entries` (cleared first); false for another
/// shape, leaving `entries` unspecified.
pub fn own_shape_counts_into(
    plain: &[u8],
    entries: &mut Vec<(usize, u64)>,
) -> Result<bool, String> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::encoding::v2::plain_v2_of;

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
}
