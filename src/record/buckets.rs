//! Counts by bucket index of cauda's histogram shape, for the bulk paths
//! (importers cutting millions of values, analysis merging thousands of
//! intervals): adding costs an index computation at most, never a
//! histogram record, and only the buckets touched are walked or cleared.
//!
//! The packed form is the run file's sparse histogram: LEB128 deltas of the
//! bucket index, each followed by its count.

use super::histogram::{ExactStats, HIGHEST_NS, LatencyHistogram, bucket_index, bucket_top};

/// Counts per bucket, with a bitmap of the buckets holding any.
#[derive(Clone, Debug)]
pub struct BucketCounts {
    counts: Vec<u64>,
    touched: Vec<u64>,
}

impl Default for BucketCounts {
    fn default() -> Self {
        Self::new()
    }
}

impl BucketCounts {
    /// No counts, room for every bucket from 1 ns to [`HIGHEST_NS`].
    pub fn new() -> Self {
        let buckets = bucket_index(HIGHEST_NS) + 1;
        BucketCounts {
            counts: vec![0; buckets],
            touched: vec![0; buckets.div_ceil(64)],
        }
    }

    /// Counts one value (past [`HIGHEST_NS`]: in the top bucket).
    #[inline(always)]
    pub fn record(&mut self, value: u64) {
        self.record_n(value, 1);
    }

    /// Counts `count` occurrences of one value.
    #[inline(always)]
    pub fn record_n(&mut self, value: u64, count: u64) {
        self.add_index(bucket_index(value.min(HIGHEST_NS)), count);
    }

    /// Adds every count of `other`.
    pub fn add(&mut self, other: &BucketCounts) {
        for (index, count) in other.iter() {
            self.add_index(index, count);
        }
    }

    /// Adds `count` to the bucket at `index`; false (nothing added) for an
    /// index past the top bucket, which only a corrupt file can hold.
    #[inline(always)]
    pub fn add_index(&mut self, index: usize, count: u64) -> bool {
        let Some(slot) = self.counts.get_mut(index) else {
            return false;
        };
        *slot = slot.saturating_add(count);
        self.touched[index / 64] |= 1 << (index % 64);
        true
    }

    /// Adds packed pairs (see [`pack_pairs`]) and returns
    /// how many values they held. `visit` reads the (bucket value, count)
    /// pairs as they are added — one pass over the bytes — and what it
    /// leaves unread is added after. Fails if the bytes end inside a pair
    /// or name a bucket past the top (what came before is added).
    pub fn add_packed(
        &mut self,
        packed: &[u8],
        visit: impl FnOnce(&mut dyn Iterator<Item = (u64, u64)>),
    ) -> Result<u64, String> {
        let mut pairs = PackedPairs::new(packed);
        let (mut held, mut past_top) = (0u64, None);
        let mut adding = pairs.by_ref().map(|(index, count)| {
            if !self.add_index(index, count) {
                past_top = Some(index);
            }
            held = held.saturating_add(count);
            (bucket_top(index), count)
        });
        visit(&mut adding);
        adding.for_each(drop);
        if let Some(index) = past_top {
            return Err(format!("bucket index {index} is past the histogram's top"));
        }
        if !pairs.complete() {
            return Err("the packed histogram ends inside a bucket".into());
        }
        Ok(held)
    }

    /// The (bucket index, count) pairs in increasing index.
    pub fn iter(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        SetIndexes::new(self.touched.iter().copied()).map(|index| (index, self.counts[index]))
    }

    /// Empties the counts in one walk of the buckets touched: packs them
    /// ([`pack_pairs`]) into `scratch` (kept for the next call) and
    /// returns them at their exact size, adds them to `total`, and finds,
    /// for each of two ranks (1-based, ascending), the index of the bucket
    /// holding the value of that rank, if the counts reach it.
    pub fn take(
        &mut self,
        scratch: &mut Vec<u8>,
        total: &mut BucketCounts,
        ranks: [u64; 2],
    ) -> (Vec<u8>, [Option<usize>; 2]) {
        scratch.clear();
        let mut found = [None; 2];
        let (mut cumulative, mut previous) = (0u64, 0);
        for (word, bits) in self.touched.iter_mut().enumerate() {
            let bits = std::mem::take(bits);
            if bits == 0 {
                continue;
            }
            total.touched[word] |= bits;
            for bit in SetBits(bits) {
                let index = word * 64 + bit;
                let count = std::mem::take(&mut self.counts[index]);
                push_leb128(scratch, (index - previous) as u64);
                push_leb128(scratch, count);
                previous = index;
                total.counts[index] = total.counts[index].saturating_add(count);
                cumulative = cumulative.saturating_add(count);
                if found[1].is_none() && cumulative >= ranks[0] {
                    found[0].get_or_insert(index);
                    if cumulative >= ranks[1] {
                        found[1] = Some(index);
                    }
                }
            }
        }
        (scratch.as_slice().to_vec(), found)
    }

    /// A histogram of these counts whose exact statistics are `stats`.
    pub fn to_histogram(&self, stats: ExactStats) -> LatencyHistogram {
        let mut hdr = super::histogram::empty_hdr();
        for (index, count) in self.iter() {
            let _ = hdr.record_n(bucket_top(index).min(HIGHEST_NS), count);
        }
        LatencyHistogram::from_parts(hdr, stats)
    }
}

/// The indexes of the set bits of a word, lowest first.
struct SetBits(u64);

impl Iterator for SetBits {
    type Item = usize;

    #[inline(always)]
    fn next(&mut self) -> Option<usize> {
        if self.0 == 0 {
            return None;
        }
        let bit = self.0.trailing_zeros() as usize;
        self.0 &= self.0 - 1;
        Some(bit)
    }
}

/// The indexes of the set bits of a bitmap, given as its words in order,
/// lowest first. A struct with an inlined `next` rather than a `flat_map`
/// over the words: a merge walks every occupied bucket through it, and
/// with no LTO between codegen units a flatten adapter's fold was not
/// inlined into its caller in another unit (a ten-host merge took 18 %
/// longer).
pub struct SetIndexes<W> {
    words: W,
    base: usize,
    next_base: usize,
    bits: SetBits,
}

impl<W: Iterator<Item = u64>> SetIndexes<W> {
    /// The set bits of `words`: bit `b` of word `w` is index `64 w + b`.
    pub fn new(words: W) -> Self {
        SetIndexes {
            words,
            base: 0,
            next_base: 0,
            bits: SetBits(0),
        }
    }
}

impl<W: Iterator<Item = u64>> Iterator for SetIndexes<W> {
    type Item = usize;

    #[inline(always)]
    fn next(&mut self) -> Option<usize> {
        loop {
            if let Some(bit) = self.bits.next() {
                return Some(self.base + bit);
            }
            self.bits = SetBits(self.words.next()?);
            self.base = self.next_base;
            self.next_base += 64;
        }
    }
}

/// The (bucket index, count) pairs of packed bytes; stops at bytes that
/// end inside a pair or overflow.
pub struct PackedPairs<'a> {
    bytes: &'a [u8],
    at: usize,
    index: u64,
}

impl<'a> PackedPairs<'a> {
    /// The pairs of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        PackedPairs {
            bytes,
            at: 0,
            index: 0,
        }
    }

    /// Whether every byte was read as whole pairs.
    pub fn complete(&self) -> bool {
        self.at == self.bytes.len()
    }
}

impl Iterator for PackedPairs<'_> {
    type Item = (usize, u64);

    #[inline]
    fn next(&mut self) -> Option<(usize, u64)> {
        if self.at >= self.bytes.len() {
            return None;
        }
        let mut at = self.at;
        let delta = read_leb128(self.bytes, &mut at)?;
        let count = read_leb128(self.bytes, &mut at)?;
        let index = self.index.checked_add(delta)?;
        let as_usize = usize::try_from(index).ok()?;
        self.at = at;
        self.index = index;
        Some((as_usize, count))
    }
}

/// Appends (bucket index, count) pairs in increasing index to `out` as
/// LEB128 deltas of the index, each followed by its count.
pub fn pack_pairs(pairs: impl IntoIterator<Item = (usize, u64)>, out: &mut Vec<u8>) {
    let mut previous = 0;
    for (index, count) in pairs {
        push_leb128(out, (index - previous) as u64);
        push_leb128(out, count);
        previous = index;
    }
}

/// Appends `v` as LEB128.
#[inline(always)]
fn push_leb128(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads a LEB128 value at `at`, moving past it; `None` if the bytes end
/// inside it or it overflows a u64.
#[inline(always)]
fn read_leb128(bytes: &[u8], at: &mut usize) -> Option<u64> {
    // One byte holds most counts and deltas.
    let &first = bytes.get(*at)?;
    if first < 0x80 {
        *at += 1;
        return Some(u64::from(first));
    }
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let b = *bytes.get(*at)?;
        *at += 1;
        v |= u64::from(b & 0x7f).checked_shl(shift)?;
        if b < 0x80 {
            return Some(v);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_indexes_count_across_words_and_skip_empty_ones() {
        let words = [0, 1 << 63 | 1, 0, 2, 0];
        let got: Vec<usize> = SetIndexes::new(words.into_iter()).collect();
        assert_eq!(got, [64, 127, 193]);
        assert_eq!(SetIndexes::new(std::iter::empty()).next(), None);
    }

    #[test]
    fn counts_pack_and_add_back_exactly() {
        let mut rng = crate::record::schedule::SplitMix64::new(5);
        let mut counts = BucketCounts::new();
        let mut hist = LatencyHistogram::new();
        for _ in 0..20_000 {
            let v = rng.next_u64() >> (rng.next_u64() % 64);
            counts.record(v);
            hist.record(v);
        }
        let expected: Vec<(u64, u64)> = hist
            .hdr()
            .iter_recorded()
            .map(|b| (b.value_iterated_to(), b.count_at_value()))
            .collect();
        let got: Vec<(u64, u64)> = counts.iter().map(|(i, c)| (bucket_top(i), c)).collect();
        assert_eq!(got, expected);

        let mut packed = Vec::new();
        pack_pairs(counts.iter(), &mut packed);
        let mut again = BucketCounts::new();
        let mut visited = Vec::new();
        let held = again.add_packed(&packed, |pairs| visited.extend(pairs.take(10)));
        assert_eq!(held, Ok(20_000));
        assert_eq!(visited, expected[..10]);
        again.add(&counts);
        let doubled: Vec<(u64, u64)> = expected.iter().map(|&(v, c)| (v, 2 * c)).collect();
        let got: Vec<(u64, u64)> = again.iter().map(|(i, c)| (bucket_top(i), c)).collect();
        assert_eq!(got, doubled);

        // Taking packs the same bytes, adds to the total, finds the ranks
        // and leaves nothing behind.
        let mut total = BucketCounts::new();
        let (taken, found) = counts.take(&mut Vec::new(), &mut total, [10_000, 19_800]);
        assert_eq!(taken, packed);
        let got: Vec<(u64, u64)> = total.iter().map(|(i, c)| (bucket_top(i), c)).collect();
        assert_eq!(got, expected);
        let rank_bucket = |rank: u64| {
            let mut cumulative = 0;
            expected.iter().position(|&(_, c)| {
                cumulative += c;
                cumulative >= rank
            })
        };
        let value_of = |index: Option<usize>| index.map(bucket_top);
        assert_eq!(
            value_of(found[0]),
            rank_bucket(10_000).map(|i| expected[i].0)
        );
        assert_eq!(
            value_of(found[1]),
            rank_bucket(19_800).map(|i| expected[i].0)
        );
        assert_eq!(counts.iter().count(), 0);
        assert!(counts.counts.iter().all(|&c| c == 0));
        assert_eq!(
            counts.take(&mut Vec::new(), &mut total, [1, 1]).1,
            [None, None]
        );
    }

    #[test]
    fn corrupt_packed_bytes_stop_without_a_panic() {
        let mut counts = BucketCounts::new();
        // A pair cut short, an index past the top, an overflowing delta.
        for corrupt in [&[3][..], &[0xFF, 0xFF, 0x7F, 1], &[0xFF; 12]] {
            assert!(counts.add_packed(corrupt, |_| {}).is_err(), "{corrupt:?}");
        }
        let mut pairs = PackedPairs::new(&[1, 2, 0x80]);
        assert_eq!(pairs.next(), Some((1, 2)));
        assert_eq!(pairs.next(), None);
        assert!(!pairs.complete());
    }
}
