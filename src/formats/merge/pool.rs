//! Pooling histograms: the members' intervals of each merged interval
//! added up bucket by bucket ([`super::tally`]) and encoded, and the whole
//! series as one histogram for its summary. The merge's hot loop.

use anyhow::Result;

use super::tally::Tally;
use crate::error::input_error;
use crate::model::encoding::{Effort, encode_buckets};
use crate::model::{IntervalRecord, Series};
use crate::record::{ExactStats, LatencyHistogram};

/// A merged interval's start and its members' intervals (member, index).
pub(super) type Slot = (u64, Vec<(usize, usize)>);

/// Merges the members' intervals of each slot, each bucket an addition
/// (a one-hour run of ten hosts has some 14 million), and encodes each
/// merged interval's histogram; also returns the slots all together as one
/// histogram, for the series' summary.
pub(super) fn merge_slots(
    tag: &str,
    members: &[(&str, &Series)],
    slots: &[Slot],
) -> Result<(Vec<IntervalRecord>, LatencyHistogram)> {
    use crate::record::histogram::bucket_top;
    let (mut slot, mut all) = (Tally::new(), Tally::new());
    let mut all_stats = ExactStats::default();
    let mut pairs: Vec<(usize, u64)> = Vec::new();
    let mut out = Vec::with_capacity(slots.len());
    for (start, parts) in slots {
        let mut length_ns = 0;
        let mut stats = ExactStats::default();
        for &(m, i) in parts {
            let (source, series) = members[m];
            let interval = &series.intervals[i];
            length_ns = length_ns.max(interval.length_ns);
            if interval.count == 0 {
                continue;
            }
            interval
                .bucket_indexes_into(&mut pairs)
                .map_err(|e| input_error(format!("{source}: series '{tag}', interval {i}: {e}")))?;
            stats.merge(&interval.stats());
            for &(at, count) in pairs.iter().filter(|&&(_, count)| count > 0) {
                slot.add(at, count);
            }
        }
        // The user waits for a merge: its histograms are deflated fast.
        let summed = slot.drain().inspect(|&(at, count)| all.add(at, count));
        let text = encode_buckets(summed, Effort::Fast);
        all_stats.merge(&stats);
        out.push(IntervalRecord::from_encoded(
            *start, length_ns, &stats, text,
        ));
    }
    let buckets: Vec<_> = all
        .drain()
        .map(|(at, count)| (bucket_top(at), count))
        .collect();
    let mut whole = LatencyHistogram::new();
    whole.add_sparse(&buckets, &all_stats);
    Ok((out, whole))
}
