//! The `"offered"` section of an open-loop run file: what the schedule
//! offered in each interval, and which of the run's series say what was
//! achieved, how late the generator issued, and what the target took.
//!
//! It holds only what the series cannot give: the operations whose
//! intended start fell in each interval (replayed from the schedule after
//! the run; for Poisson arrivals the rate is not constant) and the
//! generator's in-flight limit. The achieved rate is the completion
//! series' counts, the generator's lateness its `lag` series. Closed-loop
//! runs, imported data and files written before it have no section:
//! absent means unknown.

use serde::{Deserialize, Serialize};

/// What an open-loop generator offered, and where the run says how it went.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OfferedLoad {
    /// The rate asked for (`--rate`), operations per second over all of
    /// the generator's threads.
    pub rate_per_s: f64,
    /// How intended starts were spaced: `uniform` or `poisson`.
    pub arrivals: String,
    /// How many threads kept a schedule of their own (connections, jobs,
    /// producers): one thread's gap between intended starts is
    /// `schedules / rate_per_s`.
    pub schedules: u64,
    /// The most operations the generator could have in flight at once
    /// (`--conns` for `net`, `--jobs` × `--iodepth` for `disk`); absent
    /// where it has no fixed limit (`broker` batches records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_flight_limit: Option<u64>,
    /// How long the schedule ran from the run's start, ns: `--runtime`,
    /// or until the run was stopped (a generator behind its schedule goes
    /// on issuing what was due after it).
    pub span_ns: u64,
    /// When the last operation completed, ns from the run's start, where
    /// that was after `span_ns`: a broker's acknowledgements after the
    /// schedule's end are counted in its last interval, and the achieved
    /// rate is counted over this instead (absent: over the run's duration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_until_ns: Option<u64>,
    /// How long due operations waited in the schedule because every one
    /// of the generator's places was taken, ns, added up over its
    /// schedules (`broker`: its producers' batches full, so the target
    /// held them); absent where the probe does not count it (`net` and
    /// `disk` say it with `in_flight_limit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_ns: Option<u64>,
    /// Operations whose intended start fell in each interval of the run's
    /// grid (interval `i` starts at `i × interval_ns` from the run's start).
    pub offered: Vec<u64>,
    /// The series that holds the generator's own lag: how late each
    /// operation was issued against the later of its intended start and
    /// the moment an in-flight slot was free (ns, 0 when on time; waiting
    /// for a slot is the target's and shows in the latency, not here).
    pub lag: String,
    /// The series whose counts add up to the operations completed (a
    /// probe's latency series, one per direction).
    pub completed: Vec<String>,
    /// The target's service time series (measured from the actual start).
    #[serde(default)]
    pub service: Vec<String>,
}

/// A year in ns: no run lasts longer.
const YEAR_NS: u64 = 366 * 24 * 3600 * 1_000_000_000;

impl OfferedLoad {
    /// What cauda writes always holds, checked against the run it is in
    /// (its series' tags, the most intervals any holds, the grid's
    /// length); the first field that does not, named.
    pub fn check(&self, tags: &[&str], intervals: usize, interval_ns: u64) -> Result<(), String> {
        if !(self.rate_per_s.is_finite() && self.rate_per_s > 0.0 && self.rate_per_s <= 1e9) {
            return Err(format!(
                "rate_per_s is {:e}; a rate lies above 0 and at most 1G/s",
                self.rate_per_s
            ));
        }
        if self.arrivals != "uniform" && self.arrivals != "poisson" {
            return Err("arrivals is neither 'uniform' nor 'poisson'".into());
        }
        if self.schedules == 0 || self.in_flight_limit == Some(0) {
            return Err("schedules and in_flight_limit are at least 1".into());
        }
        if self.span_ns == 0 {
            return Err("span_ns is 0; a schedule that ran offered nothing".into());
        }
        // After the schedule, and within a year of the run's start.
        if let Some(until) = self.completed_until_ns
            && !(self.span_ns..=YEAR_NS).contains(&until)
        {
            return Err(format!(
                "completed_until_ns is {until}, not between span_ns ({}) and a year",
                self.span_ns
            ));
        }
        // Each schedule waits at most its whole span.
        if let Some(held) = self.held_ns
            && held > self.span_ns.saturating_mul(self.schedules)
        {
            return Err(format!(
                "held_ns is {held}, more than the schedules' span ({} × {} ns)",
                self.schedules, self.span_ns
            ));
        }
        // The schedule is counted on the run's grid, which the series
        // hold (one interval more where the run was stopped mid-way).
        if self.offered.len() > intervals.saturating_add(1) {
            return Err(format!(
                "offered has {} intervals, the run's series at most {intervals}",
                self.offered.len()
            ));
        }
        // At most one operation a nanosecond: beyond any generator.
        if let Some(i) = self.offered.iter().position(|&n| n > interval_ns.max(1)) {
            return Err(format!(
                "offered[{i}] is {}, more operations than nanoseconds in an interval",
                self.offered[i]
            ));
        }
        let named = |field: &str, tag: &str| {
            if tag == "self" || !tags.contains(&tag) {
                Err(format!(
                    "{field} names '{}', not one of the run's measured series",
                    tag.chars().take(40).collect::<String>()
                ))
            } else {
                Ok(())
            }
        };
        named("lag", &self.lag)?;
        if self.completed.is_empty() {
            return Err("completed names no series".into());
        }
        for (i, tag) in self.completed.iter().enumerate() {
            named("completed", tag)?;
            if *tag == self.lag || self.completed[..i].contains(tag) {
                return Err(format!(
                    "completed names '{tag}' twice, or the lag series; each operation counts once"
                ));
            }
        }
        for tag in &self.service {
            named("service", tag)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offered() -> OfferedLoad {
        OfferedLoad {
            rate_per_s: 2000.0,
            arrivals: "uniform".into(),
            schedules: 1,
            in_flight_limit: Some(1),
            span_ns: 3_000_000_000,
            completed_until_ns: None,
            held_ns: Some(1_000_000_000),
            offered: vec![1999, 2000, 2000],
            lag: "lag".into(),
            completed: vec!["rtt".into()],
            service: vec!["service".into()],
        }
    }

    #[test]
    fn an_offered_section_cauda_never_writes_is_named() {
        let tags = ["rtt", "service", "lag", "self"];
        assert_eq!(offered().check(&tags, 3, 1_000_000_000), Ok(()));
        type Edit = fn(&mut OfferedLoad);
        let cases: [(Edit, &str); 15] = [
            (|o| o.offered = vec![u64::MAX, u64::MAX, 5], "offered[0]"),
            (|o| o.offered = vec![1; 1000], "offered has 1000 intervals"),
            (|o| o.span_ns = 0, "span_ns"),
            (|o| o.rate_per_s = 0.0, "rate_per_s"),
            (|o| o.rate_per_s = -5.0, "rate_per_s"),
            (|o| o.rate_per_s = 1e308, "rate_per_s"),
            (|o| o.lag = "nosuch".into(), "lag names 'nosuch'"),
            (|o| o.lag = "self".into(), "lag names 'self'"),
            (|o| o.completed = vec!["rtt".into(); 2], "twice"),
            (|o| o.completed = vec!["lag".into()], "twice, or the lag"),
            (|o| o.schedules = 0, "schedules"),
            (
                |o| o.completed_until_ns = Some(5),
                "completed_until_ns is 5",
            ),
            (
                |o| o.completed_until_ns = Some(u64::MAX),
                "completed_until_ns",
            ),
            (|o| o.held_ns = Some(3_000_000_001), "held_ns is 3000000001"),
            (|o| o.held_ns = Some(u64::MAX), "held_ns"),
        ];
        for (edit, says) in cases {
            let mut o = offered();
            edit(&mut o);
            let e = o.check(&tags, 3, 1_000_000_000).unwrap_err();
            assert!(e.contains(says), "{says}: {e}");
        }
    }
}
