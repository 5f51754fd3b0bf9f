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
