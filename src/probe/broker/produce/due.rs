//! An open-loop producer's place in its schedule. Records are taken from
//! the schedule as they fall due, at most as many as the batches have
//! room for; the rest wait there, their intended times kept (their
//! latency counts from those). A record held back by full batches is not
//! the generator's own lateness: its lag counts from when room came back.

use crate::record::Schedule;

pub(super) struct Due {
    schedule: Schedule,
    /// The next record's intended time.
    next: u64,
    /// The schedule's end: records due from then on are not offered.
    end_ns: u64,
    /// The last take left records due behind full batches.
    held: bool,
    /// When the batches last had room again after holding records back.
    freed_at: u64,
}

impl Due {
    pub(super) fn new(mut schedule: Schedule, end_ns: u64) -> Due {
        let next = schedule.next_intended();
        Due {
            schedule,
            next,
            end_ns,
            held: false,
            freed_at: 0,
        }
    }

    /// The schedule's end.
    pub(super) fn end_ns(&self) -> u64 {
        self.end_ns
    }

    /// Whether records are still to come.
    pub(super) fn scheduled(&self) -> bool {
        self.next < self.end_ns
    }

    /// When to wake for the next record: `None` while full batches hold
    /// records back (an acknowledgement makes room: a deadline already
    /// past would spin) or once the schedule is over.
    pub(super) fn wake_at(&self) -> Option<u64> {
        (self.scheduled() && !self.held).then_some(self.next)
    }

    /// Takes the records due by `now`, at most `room` of them, calling
    /// `take(intended, lag)` for each: the lag from its intended time, or
    /// from when room came back if it was held back longer.
    pub(super) fn take(&mut self, now: u64, room: usize, mut take: impl FnMut(u64, u64)) {
        if self.held && room > 0 {
            self.freed_at = now;
        }
        let mut taken = 0;
        while self.next <= now && self.next < self.end_ns && taken < room {
            take(self.next, now.saturating_sub(self.next.max(self.freed_at)));
            self.next = self.schedule.next_intended();
            taken += 1;
        }
        self.held = taken == room && self.next <= now && self.next < self.end_ns;
    }

    /// Takes and counts the records due by `now` that were never taken
    /// (the run ends: they were never sent).
    pub(super) fn left_behind(&mut self, now: u64) -> u64 {
        let limit = now.saturating_add(1).min(self.end_ns);
        if self.next >= limit {
            return 0;
        }
        let left = 1 + self.schedule.take_before(limit);
        self.next = self.schedule.next_intended();
        left
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Arrivals;

    fn every_100ns(end_ns: u64) -> Due {
        // Due at 100, 200, 300, ...
        Due::new(Schedule::new(0, 100.0, Arrivals::Uniform, 1), end_ns)
    }

    #[test]
    fn a_record_held_back_by_full_batches_lags_from_when_room_came_back() {
        let mut due = every_100ns(10_000);
        let mut got = Vec::new();
        // At 1,000: ten due, room for four.
        due.take(1_000, 4, |at, lag| got.push((at, lag)));
        assert_eq!(got, [(100, 900), (200, 800), (300, 700), (400, 600)]);
        assert_eq!(
            due.wake_at(),
            None,
            "held back: wait for room, not a past deadline"
        );
        got.clear();
        // Still full at 1,500: nothing taken, still held.
        due.take(1_500, 0, |at, lag| got.push((at, lag)));
        assert!(got.is_empty());
        // Room at 2,000: the held records lag from 2,000 on, not from
        // their intended times; none was late of the generator's own.
        due.take(2_000, 2, |at, lag| got.push((at, lag)));
        assert_eq!(got, [(500, 0), (600, 0)]);
        // Full again; room enough at 2,100: the rest taken, none late.
        got.clear();
        due.take(2_100, 100, |at, lag| got.push((at, lag)));
        assert_eq!(got.len(), 15);
        assert!(got.iter().all(|&(_, lag)| lag == 0), "{got:?}");
        assert_eq!(due.wake_at(), Some(2_200));
        // Woken late at 2,450 with room: that lateness is the generator's.
        got.clear();
        due.take(2_450, 100, |at, lag| got.push((at, lag)));
        assert_eq!(got, [(2_200, 250), (2_300, 150), (2_400, 50)]);
    }

    #[test]
    fn what_was_due_and_never_taken_is_counted_once() {
        let mut due = every_100ns(10_000);
        due.take(1_000, 3, |_, _| {});
        // 4..=10 due by 1,000 and not taken; none of what falls due later.
        assert_eq!(due.left_behind(1_000), 7);
        assert_eq!(due.left_behind(1_000), 0);
        // Past the end: only what was due before it.
        assert_eq!(due.left_behind(50_000), 89);
        assert!(!due.scheduled());
    }
}
