//! An open-loop producer's place in its schedule. Records are taken from
//! the schedule as they fall due, at most as many as the batches have
//! room for; the rest wait there, their intended times kept (their
//! latency counts from those). While records are held back by full
//! batches and every leader they are for has all its requests out
//! (`broker_holds`), they wait for the broker, not for the generator: a
//! record's lag is its wait less the time the broker held it meanwhile
//! (`Holds`), and that time is kept (`held_ns`) as the time the broker
//! held the producer, as the in-flight slots held say it for `net` and
//! `disk` (`analyze::load`). Waiting while a leader could take more is
//! waiting for the producer's own loop: that is its lag.

use super::holds::Holds;
use crate::record::Schedule;

pub(super) struct Due {
    schedule: Schedule,
    /// The next record's intended time.
    next: u64,
    /// The schedule's end: records due from then on are not offered.
    end_ns: u64,
    /// The last take left records due behind full batches.
    held: bool,
    /// When the broker held records back.
    holds: Holds,
    /// How long, before the schedule's end, records waited for room while
    /// the broker held the producer.
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
            holds: Holds::default(),
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
    /// `take(intended, lag)` for each: the lag is the time since its
    /// intended time less what the broker held of it.
    pub(super) fn take(&mut self, now: u64, room: usize, mut take: impl FnMut(u64, u64)) {
        if self.held && room > 0 {
            self.end_hold(now);
        }
        let held_by_now = self.holds.until(now);
        let mut taken = 0;
        while self.next <= now && self.next < self.end_ns && taken < room {
            let held = held_by_now - self.holds.until(self.next);
            take(self.next, (now - self.next).saturating_sub(held));
            self.next = self.schedule.next_intended();
            taken += 1;
        }
        self.holds.forget_before(self.next);
        self.held = taken == room && self.next <= now && self.next < self.end_ns;
        if !self.held {
            self.end_hold(now);
        }
    }

    /// After a flush at `now`: whether the broker `holds` the producer
    /// (every leader with queued records has all its requests out), and
    /// the batches' `room`. While it holds and records are held back,
    /// their wait is the broker's; room the flush made ends the holding
    /// back (what is due is taken at once, not after a wait for an answer
    /// that `acks=0` never sends).
    pub(super) fn broker_holds(&mut self, now: u64, holds: bool, room: usize) {
        if room > 0 {
            self.held = false;
        }
        if self.held && holds {
            self.holds.begin(now);
        } else {
            self.end_hold(now);
        }
    }

    /// The broker held the producer from `from` to `to` (a leader kept its
    /// send buffer full): as a hold, where none was open.
    pub(super) fn broker_held(&mut self, from: u64, to: u64) {
        if let Some((start, end)) = self.holds.add(from, to) {
            self.held_ns += end.min(self.end_ns).saturating_sub(start);
        }
    }

    /// The broker's hold, if one is open, ends at `now`; its part before
    /// the schedule's end is counted.
    fn end_hold(&mut self, now: u64) {
        if let Some((start, end)) = self.holds.end(now) {
            self.held_ns += end.min(self.end_ns).saturating_sub(start);
        }
    }

    /// How long records waited for room in the batches, ns, up to the
    /// schedule's end: what the target held of the producer's time.
    pub(super) fn held_ns(&self) -> u64 {
        self.held_ns
    }

    /// Takes and counts the records due by `now` that were never taken
    /// (the run ends: they were never sent).
    pub(super) fn left_behind(&mut self, now: u64) -> u64 {
        self.end_hold(now);
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
    fn a_record_held_back_lags_by_its_wait_less_the_brokers_hold() {
        let mut due = every_100ns(10_000);
        let mut got = Vec::new();
        // At 1,000: ten due, room for four.
        due.take(1_000, 4, |at, lag| got.push((at, lag)));
        assert_eq!(got, [(100, 900), (200, 800), (300, 700), (400, 600)]);
        due.broker_holds(1_000, true, 0);
        assert_eq!(
            due.wake_at(),
            None,
            "held back: wait for room, not a past deadline"
        );
        got.clear();
        // Still full at 1,500: nothing taken, still held.
        due.take(1_500, 0, |at, lag| got.push((at, lag)));
        assert!(got.is_empty());
        due.broker_holds(1_500, true, 0);
        // Room at 2,000: the broker held them from 1,000, which is not
        // their lag; from 500 and 600 to 1,000 the producer was late.
        due.take(2_000, 2, |at, lag| got.push((at, lag)));
        assert_eq!(got, [(500, 500), (600, 400)]);
        // Held again, but a leader could take more: the producer's own.
        due.broker_holds(2_000, false, 0);
        assert_eq!(due.wake_at(), None);
        // Room at 2,100: the rest taken; their wait less the broker's
        // hold (1,000 to 2,000) is the producer's own.
        got.clear();
        due.take(2_100, 100, |at, lag| got.push((at, lag)));
        assert_eq!(got.len(), 15);
        let want: Vec<(u64, u64)> = (7..=21)
            .map(|k| {
                let at = k * 100;
                let held = 2_000u64.saturating_sub(at.max(1_000)).min(1_000);
                (at, 2_100 - at - held)
            })
            .collect();
        assert_eq!(got, want);
        assert_eq!(due.wake_at(), Some(2_200));
        // Woken late at 2,450 with room: that lateness is the generator's.
        got.clear();
        due.take(2_450, 100, |at, lag| got.push((at, lag)));
        assert_eq!(got, [(2_200, 250), (2_300, 150), (2_400, 50)]);
        // The broker held it from 1,000 to 2,000; 2,000 to 2,100 was not
        // the broker's.
        assert_eq!(due.held_ns(), 1_000);
    }

    #[test]
    fn a_hold_counts_until_room_or_the_schedules_end() {
        let mut due = every_100ns(5_000);
        due.take(1_000, 2, |_, _| {});
        due.broker_holds(1_000, true, 0);
        due.take(1_200, 0, |_, _| {});
        due.broker_holds(1_200, true, 0);
        assert_eq!(due.held_ns(), 0, "still held: not yet counted");
        // The run ends at 9,000 with records still held: the hold counts
        // until the schedule's end (5,000), not past it.
        assert!(due.left_behind(9_000) > 0);
        assert_eq!(due.held_ns(), 4_000);
        // A flush that made room ends the holding back: what is due is
        // taken at once (with acks=0 no answer would end the wait).
        let mut due = every_100ns(5_000);
        due.take(1_000, 2, |_, _| {});
        assert_eq!(due.wake_at(), None);
        due.broker_holds(1_000, false, 16);
        assert_eq!(due.wake_at(), Some(300));
        // Nothing held, or held while the broker could take more: the
        // end adds nothing.
        let mut due = every_100ns(5_000);
        due.take(1_000, 100, |_, _| {});
        due.broker_holds(1_000, true, 0);
        due.left_behind(2_000);
        assert_eq!(due.held_ns(), 0);
        let mut due = every_100ns(5_000);
        due.take(1_000, 2, |_, _| {});
        due.broker_holds(1_000, false, 0);
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
