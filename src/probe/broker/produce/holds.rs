//! When the broker held a producer: every leader it had queued records for
//! had all its requests unanswered, so none could be written. Kept so
//! that a record's wait in the schedule splits into the broker's part and
//! the producer's own (its lag).

use std::collections::VecDeque;

/// Past holds kept at most; beyond, neighbours closer than a gap merge
/// (from 1 µs, the gap doubling until half as many are left): a merged
/// hold's time is spread over its span, so a record due inside it is off
/// by at most the largest gap merged, and long holds keep their place.
const KEPT: usize = 1 << 16;

struct Hold {
    start: u64,
    end: u64,
    /// Held time of the holds before this one.
    before: u64,
    /// Held time inside `start..end`.
    within: u64,
}

/// The broker's holds of one producer, ns on the run's clock.
#[derive(Default)]
pub(super) struct Holds {
    closed: VecDeque<Hold>,
    /// Held time of all closed holds.
    total: u64,
    /// The hold going on, since then.
    open: Option<u64>,
}

impl Holds {
    /// A hold begins at `at` (or goes on, if one is open).
    pub(super) fn begin(&mut self, at: u64) {
        self.open.get_or_insert(at);
    }

    /// The open hold ends at `at`: its span, if one was open.
    pub(super) fn end(&mut self, at: u64) -> Option<(u64, u64)> {
        let start = self.open.take()?;
        let end = at.max(start);
        self.closed.push_back(Hold {
            start,
            end,
            before: self.total,
            within: end - start,
        });
        self.total += end - start;
        if self.closed.len() > KEPT {
            self.thin();
        }
        Some((start, end))
    }

    /// Merges neighbours closer than a gap, the gap doubling from 1 µs
    /// until at most half of [`KEPT`] are left.
    fn thin(&mut self) {
        let mut gap = 1_000u64;
        while self.closed.len() > KEPT / 2 {
            for hold in std::mem::take(&mut self.closed) {
                match self.closed.back_mut() {
                    Some(last) if hold.start.saturating_sub(last.end) <= gap => {
                        last.end = hold.end;
                        last.within += hold.within;
                    }
                    _ => self.closed.push_back(hold),
                }
            }
            gap = gap.saturating_mul(2);
        }
    }

    /// A hold from `from` to `to` that was not open (a write the broker
    /// kept waiting): kept where no hold is open, from the end of the
    /// last one on; its span, if anything is left of it.
    pub(super) fn add(&mut self, from: u64, to: u64) -> Option<(u64, u64)> {
        if self.open.is_some() {
            return None;
        }
        let from = from.max(self.closed.back().map_or(0, |h| h.end));
        if to <= from {
            return None;
        }
        self.open = Some(from);
        self.end(to)
    }

    /// Held time up to `t`, all holds counted.
    pub(super) fn until(&self, t: u64) -> u64 {
        if let Some(start) = self.open
            && t >= start
        {
            return self.total + (t - start);
        }
        let i = self.closed.partition_point(|h| h.start <= t);
        let Some(h) = i.checked_sub(1).map(|k| &self.closed[k]) else {
            return self.closed.front().map_or(self.total, |h| h.before);
        };
        if t >= h.end {
            return h.before + h.within;
        }
        let share = u128::from(h.within) * u128::from(t - h.start) / u128::from(h.end - h.start);
        h.before + share as u64
    }

    /// Forgets the holds over by `t`: no record still to be taken was due
    /// before it, so they count whole for every one.
    pub(super) fn forget_before(&mut self, t: u64) {
        while self.closed.front().is_some_and(|h| h.end <= t) {
            self.closed.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_time_up_to_any_moment_counts_closed_and_open_holds() {
        let mut holds = Holds::default();
        assert_eq!(holds.until(500), 0);
        holds.begin(1_000);
        holds.begin(1_200); // still the same hold
        assert_eq!(holds.until(1_500), 500);
        assert_eq!(holds.end(2_000), Some((1_000, 2_000)));
        assert_eq!(holds.end(2_500), None);
        holds.begin(3_000);
        holds.end(3_100);
        for (t, held) in [
            (0, 0),
            (1_000, 0),
            (1_400, 400),
            (2_000, 1_000),
            (2_900, 1_000),
        ] {
            assert_eq!(holds.until(t), held, "at {t}");
        }
        assert_eq!(holds.until(3_050), 1_050);
        assert_eq!(holds.until(9_000), 1_100);
        // Forgotten holds still count for every later moment.
        holds.forget_before(2_500);
        assert_eq!(holds.until(2_600), 1_000);
        assert_eq!(holds.until(3_100), 1_100);
        holds.forget_before(5_000);
        assert_eq!(holds.until(5_000), 1_100);
        holds.begin(6_000);
        assert_eq!(holds.until(5_500), 1_100);
        assert_eq!(holds.until(6_500), 1_600);
    }

    #[test]
    fn a_hold_added_whole_keeps_order_and_never_overlaps() {
        let mut holds = Holds::default();
        assert_eq!(holds.add(100, 300), Some((100, 300)));
        // Overlapping the last: only what is after it.
        assert_eq!(holds.add(200, 400), Some((300, 400)));
        assert_eq!(holds.add(350, 380), None);
        // Inside an open hold: already counted.
        holds.begin(1_000);
        assert_eq!(holds.add(1_100, 1_200), None);
        holds.end(1_500);
        assert_eq!(holds.until(2_000), 800);
    }

    #[test]
    fn past_the_kept_holds_the_oldest_merge_and_stay_in_order() {
        let mut holds = Holds::default();
        // Held 10 of every 20 ns.
        for k in 0..(KEPT as u64 + 10) {
            holds.begin(k * 20);
            holds.end(k * 20 + 10);
        }
        assert!(holds.closed.len() <= KEPT);
        let total = (KEPT as u64 + 10) * 10;
        assert_eq!(holds.until(u64::MAX / 2), total);
        let mut last = 0;
        for t in (0..(KEPT as u64 + 10) * 20).step_by(7) {
            let held = holds.until(t);
            assert!(held >= last && held <= t, "at {t}: {held} after {last}");
            // Merged, never off by more than one gap (10 ns).
            let exact = (t / 20) * 10 + (t % 20).min(10);
            assert!(held.abs_diff(exact) <= 10, "at {t}: {held} against {exact}");
            last = held;
        }
    }

    #[test]
    fn uneven_holds_merged_stay_close_where_they_were() {
        let mut holds = Holds::default();
        // A broker that held 2 ms once, then 10 of every 20 ns.
        holds.begin(0);
        holds.end(2_000_000);
        let from = 3_000_000;
        for k in 0..(KEPT as u64 * 3) {
            holds.begin(from + k * 20);
            holds.end(from + k * 20 + 10);
        }
        assert!(holds.closed.len() <= KEPT);
        // The long hold stays its own (1 ms from the next), and a moment
        // among the short ones is off by a few gaps at most, not by the
        // long hold spread over everything.
        assert_eq!(holds.until(2_000_000), 2_000_000);
        assert_eq!(holds.until(2_500_000), 2_000_000);
        for t in (from..from + KEPT as u64 * 60).step_by(997) {
            let k = t - from;
            let exact = 2_000_000 + (k / 20) * 10 + (k % 20).min(10);
            let held = holds.until(t);
            assert!(held.abs_diff(exact) <= 40, "at {t}: {held} against {exact}");
        }
    }
}
