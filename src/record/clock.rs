//! The monotonic clock, behind a trait so tests can replace it.
//!
//! Probes are generic over [`Clock`] (no dynamic dispatch in the hot path).
//! [`MonotonicClock`] reads `CLOCK_MONOTONIC` (vDSO, no syscall) and sleeps
//! with `clock_nanosleep(TIMER_ABSTIME)`, so a sleep aims at an absolute
//! intended time and never accumulates drift. [`FakeClock`] advances only
//! when slept on, with a fixed wake-up cost and injectable stalls.

use std::cell::Cell;

use crate::sys;

/// A source of monotonic nanoseconds that can sleep until a deadline.
pub trait Clock {
    /// Nanoseconds on the monotonic clock.
    fn now(&self) -> u64;

    /// Sleeps until `deadline_ns` (absolute). Returns `false` when a signal
    /// interrupted the sleep early, so the caller can check its stop flag.
    fn sleep_until(&self, deadline_ns: u64) -> bool;
}

/// The real clock: `CLOCK_MONOTONIC`.
#[derive(Clone, Copy, Debug, Default)]
pub struct MonotonicClock;

impl Clock for MonotonicClock {
    #[inline]
    fn now(&self) -> u64 {
        sys::monotonic_ns()
    }

    #[inline]
    fn sleep_until(&self, deadline_ns: u64) -> bool {
        sys::sleep_until_ns(deadline_ns)
    }
}

/// A deterministic clock for tests.
///
/// Each sleep to a future deadline wakes `wake_cost_ns` late; a sleep to a
/// past deadline returns at once. A stall planted with [`FakeClock::stall_at`]
/// adds its length to the first sleep that crosses its time, as a frozen
/// process or a descheduled thread would.
#[derive(Debug)]
pub struct FakeClock {
    now: Cell<u64>,
    wake_cost_ns: u64,
    stalls: std::cell::RefCell<Vec<(u64, u64)>>,
}

impl FakeClock {
    /// A clock starting at `start_ns` whose wake-ups cost `wake_cost_ns`.
    pub fn new(start_ns: u64, wake_cost_ns: u64) -> Self {
        FakeClock {
            now: Cell::new(start_ns),
            wake_cost_ns,
            stalls: Default::default(),
        }
    }

    /// Plants a stall of `length_ns` at time `at_ns`.
    pub fn stall_at(&self, at_ns: u64, length_ns: u64) {
        self.stalls.borrow_mut().push((at_ns, length_ns));
    }

    /// Moves the clock forward by `ns` (the cost of work between sleeps).
    pub fn advance(&self, ns: u64) {
        self.now.set(self.now.get() + ns);
    }
}

impl Clock for FakeClock {
    fn now(&self) -> u64 {
        self.now.get()
    }

    fn sleep_until(&self, deadline_ns: u64) -> bool {
        let mut now = self.now.get();
        if deadline_ns > now {
            now = deadline_ns + self.wake_cost_ns;
        }
        let mut stalls = self.stalls.borrow_mut();
        if let Some(pos) = stalls.iter().position(|&(at, _)| at <= now) {
            let (_, length) = stalls.remove(pos);
            now += length;
        }
        self.now.set(now);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_clock_moves_forward_and_sleeps() {
        let clock = MonotonicClock;
        let a = clock.now();
        assert!(clock.sleep_until(a + 200_000));
        let b = clock.now();
        assert!(b >= a + 200_000, "woke before the deadline");
    }

    #[test]
    fn fake_clock_wakes_late_by_its_cost_and_stalls_once() {
        let clock = FakeClock::new(1_000, 10);
        clock.sleep_until(2_000);
        assert_eq!(clock.now(), 2_010);
        clock.sleep_until(100);
        assert_eq!(clock.now(), 2_010, "a past deadline returns at once");
        clock.stall_at(2_500, 50_000);
        clock.sleep_until(3_000);
        assert_eq!(clock.now(), 53_010);
        clock.sleep_until(60_000);
        assert_eq!(clock.now(), 60_010, "a stall happens once");
    }
}
