//! A tally of bucket counts: what a merge adds up, dense and read back in
//! order without a sort.

use crate::record::buckets::SetIndexes;

/// Counts added up by bucket index in a dense array, a bit per bucket
/// marking the occupied ones, read back in order without a sort.
pub(super) struct Tally {
    counts: Vec<u64>,
    occupied: Vec<u64>,
}

impl Tally {
    pub fn new() -> Tally {
        let buckets = crate::record::histogram::bucket_index(u64::MAX) + 1;
        Tally {
            counts: vec![0; buckets],
            occupied: vec![0; buckets.div_ceil(64)],
        }
    }

    pub fn add(&mut self, at: usize, count: u64) {
        self.occupied[at / 64] |= 1 << (at % 64);
        self.counts[at] = self.counts[at].saturating_add(count);
    }

    /// The occupied (index, count) pairs in increasing index, each taken
    /// out: the tally is empty once they have all been read (a word's
    /// marks go as it is reached, so stop early and its counts stay).
    pub fn drain(&mut self) -> impl Iterator<Item = (usize, u64)> + '_ {
        let counts = &mut self.counts;
        SetIndexes::new(self.occupied.iter_mut().map(std::mem::take))
            .map(|at| (at, std::mem::take(&mut counts[at])))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tally_gives_its_buckets_in_order_and_is_empty_after() {
        let mut tally = Tally::new();
        let last = tally.counts.len() - 1;
        for _ in 0..2 {
            for (at, count) in [(64, 1), (0, 2), (last, 3), (63, 4), (64, 5), (1000, 6)] {
                tally.add(at, count);
            }
            let pairs: Vec<_> = tally.drain().collect();
            assert_eq!(pairs, [(0, 2), (63, 4), (64, 6), (1000, 6), (last, 3)]);
            assert!(tally.counts.iter().chain(&tally.occupied).all(|&n| n == 0));
        }
    }
}
