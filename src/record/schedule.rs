//! The open-loop schedule: when each operation was *meant* to start.
//!
//! In rate mode a probe asks the schedule for the next intended start time
//! and measures latency from it, whether or not it could start on time. If
//! the target or the tool stalls, the intended times keep advancing, the
//! operations queued behind the stall start late, and their latencies carry
//! the backlog — the correction for coordinated omission that wrk2 and
//! jHiccup make, built in rather than patched afterwards.
//!
//! Arrivals are `uniform` (a fixed period) or `poisson` (exponential gaps
//! with the same mean, from a seeded generator so runs are repeatable).

/// How intended start times are spaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Arrivals {
    /// A fixed period between operations.
    Uniform,
    /// Exponentially distributed gaps (a Poisson process) with the same mean.
    Poisson,
}

/// A seeded SplitMix64 generator: small, fast and good enough for gaps.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform value in (0, 1].
    pub fn next_unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }
}

/// How many gaps of a Poisson schedule [`Schedule::take_before`] replays
/// one by one before its limit.
pub const REPLAYED: u64 = 1 << 20;

/// Intended start times from `start_ns`, one per call to [`Schedule::next_intended`].
#[derive(Clone, Debug)]
pub struct Schedule {
    start_ns: u64,
    period_ns: f64,
    arrivals: Arrivals,
    rng: SplitMix64,
    /// Offset of the next intended time from `start_ns`, in ns.
    offset: f64,
    index: u64,
    /// The seed it was made with, for [`Schedule::replay`].
    seed: u64,
}

impl Schedule {
    /// A schedule whose first operation is due one gap after `start_ns`.
    pub fn new(start_ns: u64, period_ns: f64, arrivals: Arrivals, seed: u64) -> Self {
        let mut schedule = Schedule {
            start_ns,
            period_ns: period_ns.max(1.0),
            arrivals,
            rng: SplitMix64::new(seed),
            offset: 0.0,
            index: 0,
            seed,
        };
        schedule.offset = schedule.gap(1);
        schedule
    }

    fn gap(&mut self, index: u64) -> f64 {
        match self.arrivals {
            // Multiplying rather than summing keeps a uniform schedule exact.
            Arrivals::Uniform => index as f64 * self.period_ns,
            Arrivals::Poisson => self.offset - self.rng.next_unit().ln() * self.period_ns,
        }
    }

    /// How intended starts are spaced.
    pub fn arrivals(&self) -> Arrivals {
        self.arrivals
    }

    /// The next intended start time, in monotonic nanoseconds.
    #[inline]
    pub fn next_intended(&mut self) -> u64 {
        let due = self.start_ns + self.offset.round() as u64;
        self.index += 1;
        self.offset = self.gap(self.index + 1);
        due
    }

    /// The same schedule from its first operation, every time later by
    /// `shift_ns`: a plan made from time 0 replayed on the run's clock.
    pub fn restarted(&self, shift_ns: u64) -> Schedule {
        Schedule::new(
            self.start_ns + shift_ns,
            self.period_ns,
            self.arrivals,
            self.seed,
        )
    }

    /// Takes every intended time before `limit_ns` and returns how many
    /// there were: the operations offered up to then. Uniform schedules
    /// jump there by arithmetic; Poisson ones replay their gaps (some 20 ns
    /// each, off the hot path), the last [`REPLAYED`] of them: further
    /// ahead they advance by the mean gap (a count within about √n of the
    /// replay's, 0.01 % at 10⁸), so a stop after an hour at 10M/s is
    /// counted in milliseconds, not a minute.
    pub fn take_before(&mut self, limit_ns: u64) -> u64 {
        let mut taken = 0;
        if self.arrivals == Arrivals::Uniform && limit_ns > self.start_ns {
            // Jump to just short of the limit, then step the last few.
            let span = (limit_ns - self.start_ns) as f64 / self.period_ns;
            let target = (span.floor() as u64).saturating_sub(2);
            if target > self.index + 1 {
                taken = target - (self.index + 1);
                self.index = target - 1;
                self.offset = self.gap(self.index + 1);
            }
        } else if limit_ns > self.start_ns {
            let ahead = ((limit_ns - self.start_ns) as f64 - self.offset) / self.period_ns;
            if ahead > REPLAYED as f64 {
                let jump = (ahead - REPLAYED as f64) as u64;
                taken = jump;
                self.index += jump;
                self.offset += jump as f64 * self.period_ns;
            }
        }
        while self.start_ns + (self.offset.round() as u64) < limit_ns {
            self.next_intended();
            taken += 1;
        }
        taken
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_is_exact_and_drift_free() {
        let mut s = Schedule::new(1_000, 1_000_000.0, Arrivals::Uniform, 1);
        assert_eq!(s.next_intended(), 1_001_000);
        assert_eq!(s.next_intended(), 2_001_000);
        for _ in 0..999_997 {
            s.next_intended();
        }
        assert_eq!(s.next_intended(), 1_000 + 1_000_000 * 1_000_000);
    }

    #[test]
    fn poisson_has_the_right_mean_and_is_seeded() {
        let mut a = Schedule::new(0, 1_000.0, Arrivals::Poisson, 42);
        let mut b = Schedule::new(0, 1_000.0, Arrivals::Poisson, 42);
        let n = 200_000;
        let mut last = 0;
        for _ in 0..n {
            last = a.next_intended();
            assert_eq!(last, b.next_intended());
        }
        let mean_gap = last as f64 / n as f64;
        assert!((mean_gap - 1_000.0).abs() < 10.0, "mean gap {mean_gap}");
    }

    #[test]
    fn take_before_counts_what_next_intended_would_give() {
        for (period, arrivals) in [
            (1_000.0, Arrivals::Uniform),
            (333.3, Arrivals::Uniform),
            (777.0, Arrivals::Poisson),
        ] {
            let plan = Schedule::new(500, period, arrivals, 9);
            let mut stepped = plan.restarted(1_000);
            let mut jumped = plan.restarted(1_000);
            for limit in [
                0, 1_500, 2_500, 2_501, 10_000, 1_000_000, 1_000_001, 5_000_000,
            ] {
                let mut n = 0;
                while stepped.clone().next_intended() < limit {
                    stepped.next_intended();
                    n += 1;
                }
                assert_eq!(
                    jumped.take_before(limit),
                    n,
                    "{arrivals:?} {period} {limit}"
                );
                assert_eq!(jumped.next_intended(), stepped.next_intended());
            }
        }
    }

    #[test]
    fn a_poisson_count_far_ahead_jumps_and_stays_within_its_noise() {
        let plan = Schedule::new(0, 100.0, Arrivals::Poisson, 3);
        let (mut stepped, mut jumped) = (plan.restarted(0), plan.restarted(0));
        // 5·10⁶ arrivals expected: the first ~3.9·10⁶ jumped.
        let limit = 500_000_000;
        let mut n = 0u64;
        while stepped.next_intended() < limit {
            n += 1;
        }
        let counted = jumped.take_before(limit);
        let noise = 4.0 * (n as f64).sqrt();
        assert!(
            (counted as f64 - n as f64).abs() < noise,
            "{counted} against {n} replayed"
        );
        assert!(jumped.next_intended() >= limit);
        // Near, it still replays: exact.
        let mut near = plan.restarted(0);
        let mut exact = plan.restarted(0);
        let mut m = 0;
        while exact.next_intended() < 50_000_000 {
            m += 1;
        }
        assert_eq!(near.take_before(50_000_000), m);
    }

    #[test]
    fn poisson_times_never_go_backwards() {
        let mut s = Schedule::new(0, 50.0, Arrivals::Poisson, 7);
        let mut prev = 0;
        for _ in 0..100_000 {
            let t = s.next_intended();
            assert!(t >= prev);
            prev = t;
        }
    }
}
