//! An open-loop producer's place in its schedule. Records are taken from
//! the schedule as they fall due, at most as many as the batches have
//! room for; the rest wait there, their intended times kept (their
//! latency counts from those). A record held back by full batches is not
//! the generator's own lateness: its lag counts from when room came back.
//! How long records waited so is kept (`held_ns`): the share of the run
//! the target held the producer, as the in-flight slots held say it for
//! `net` and `disk` (`analyze::load`).

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
    /// When the records now held back began to wait for room.
    held_since: u64,
    /// How long, before the schedule's end, records waited for room.
    held_ns: u64,
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
            held_since: 0,
            held_ns: 0,
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
            self.end_hold(now);
        }
        let mut taken = 0;
        while self.next <= now && self.next < self.end_ns && taken < room {
            take(self.next, now.saturating_sub(self.next.max(self.freed_at)));
            self.next = self.schedule.next_intended();
            taken += 1;
        }
        let held = taken == room && self.next <= now && self.next < self.end_ns;
        if held && !self.held {
            self.held_since = now;
        }
        self.held = held;
    }

    /// Records held back since `held_since` got room (or the run ended)
    /// at `now`: that wait, up to the schedule's end, is the target's.
    fn end_hold(&mut self, now: u64) {
        self.held_ns += now.min(self.end_ns).saturating_sub(self.held_since);
        self.held = false;
    }

    /// How long records waited for room in the batches, ns, up to the
    /// schedule's end: what the target held of the producer's time.
    pub(super) fn held_ns(&self) -> u64 {
        self.held_ns
    }

    /// Takes and counts the records due by `now` that were never taken
    /// (the run ends: they were never sent).
    pub(super) fn left_behind(&mut self, now: u64) -> u64 {
        if self.held {
            self.end_hold(now);
        }
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
        // Held from 1,000 to 2,000 and from 2,000 to 2,100.
        assert_eq!(due.held_ns(), 1_100);
    }

    #[test]
    fn a_hold_counts_until_room_or_the_schedules_end() {
        let mut due = every_100ns(5_000);
        due.take(1_000, 2, |_, _| {});
        due.take(1_200, 0, |_, _| {});
        assert_eq!(due.held_ns(), 0, "still held: not yet counted");
        // The run ends at 9,000 with records still held: the hold counts
        // until the schedule's end (5,000), not past it.
        assert!(due.left_behind(9_000) > 0);
        assert_eq!(due.held_ns(), 4_000);
        // Nothing held: the end adds nothing.
        let mut due = every_100ns(5_000);
        due.take(1_000, 100, |_, _| {});
        due.left_behind(2_000);
        assert_eq!(due.held_ns(), 0);
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
