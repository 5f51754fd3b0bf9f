//! What analysis needs of a series — every interval's counts added, and
//! each interval's p50 and p99 — taken by an importer while it cuts the
//! intervals, from counts it still holds by bucket index. Analysing a log
//! just read then does not decode every interval a second time.
//!
//! A digest is a cache beside a series, never saved: [`Series::digest`]
//! hands it out only while it still matches the series' intervals.
//!
//! [`Series::digest`]: super::Series::digest

use crate::record::ExactStats;
use crate::record::buckets::BucketCounts;
use crate::record::histogram::bucket_top;
use crate::record::rank::{point_ranks, reported_at_rank, values_at_ranks_in};

/// Every interval's counts added, and each interval's p50 and p99.
#[derive(Clone, Debug, Default)]
pub struct Digest {
    counts: BucketCounts,
    stats: ExactStats,
    /// Per interval, its values at the ranks of [`point_ranks`].
    points: Vec<[u64; 2]>,
}

impl Digest {
    /// The digest of no intervals.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the next interval: its counts, which it empties, and its
    /// statistics. Returns the counts packed (built in `scratch`, see
    /// [`BucketCounts::take`]).
    pub fn push(
        &mut self,
        counts: &mut BucketCounts,
        stats: &ExactStats,
        scratch: &mut Vec<u8>,
    ) -> Vec<u8> {
        let ranks = point_ranks(stats.count);
        let (packed, found) = counts.take(scratch, &mut self.counts, ranks);
        let value =
            |rank: u64, index: Option<usize>| reported_at_rank(rank, index.map(bucket_top), stats);
        self.stats.merge(stats);
        self.points
            .push([value(ranks[0], found[0]), value(ranks[1], found[1])]);
        packed
    }

    /// Takes an interval with no values.
    pub fn push_empty(&mut self) {
        self.points.push([0, 0]);
    }

    /// Takes `later`'s intervals after these, where `later`'s first
    /// `joined` intervals are not kept: their values went into this
    /// digest's last interval, now `last` (its entries and statistics).
    pub fn append(
        &mut self,
        later: Digest,
        joined: usize,
        last: Option<(&[(u64, u64)], &ExactStats)>,
    ) {
        self.counts.add(&later.counts);
        self.stats.merge(&later.stats);
        if let (Some((entries, stats)), Some(point)) = (last, self.points.last_mut()) {
            let values =
                values_at_ranks_in(entries.iter().copied(), stats, &point_ranks(stats.count));
            *point = [values[0], values[1]];
        }
        self.points.extend(later.points.into_iter().skip(joined));
    }

    /// Every interval's counts, added.
    pub fn counts(&self) -> &BucketCounts {
        &self.counts
    }

    /// Every interval's statistics, merged.
    pub fn stats(&self) -> &ExactStats {
        &self.stats
    }

    /// Per interval, its p50 and p99 (0 for an empty interval).
    pub fn points(&self) -> &[[u64; 2]] {
        &self.points
    }
}
