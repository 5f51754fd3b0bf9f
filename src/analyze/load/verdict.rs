//! What [`super::load_verdict`] finds: offered against achieved per
//! interval, the generator's lag, the target's service time, and who fell
//! behind; with the thresholds the reasons use.

use serde::Serialize;

use crate::record::LatencyHistogram;
use crate::record::rank::{rank_of, values_at_ranks};

/// From this share of its in-flight slots held by the target (with
/// achieved below [`KEPT_UP`] of offered), the target limited the rate.
pub const HELD_BY_TARGET: f64 = 0.5;

/// Achieved below this share of offered is falling behind.
pub const KEPT_UP: f64 = 0.9;

/// p50, p99 and max of a series over the whole run, ns.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Spread {
    /// Values.
    pub count: u64,
    /// Median.
    pub p50_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// Largest (exact).
    pub max_ns: u64,
    /// Mean (exact).
    pub mean_ns: f64,
}

impl Spread {
    pub(super) fn of(hist: &LatencyHistogram) -> Spread {
        let stats = hist.stats();
        let n = stats.count;
        let v = values_at_ranks(hist, &[rank_of(n, 1, 2), rank_of(n, 99, 100)]);
        Spread {
            count: n,
            p50_ns: v[0],
            p99_ns: v[1],
            max_ns: if n == 0 { 0 } else { stats.max },
            mean_ns: stats.mean(),
        }
    }
}

/// One interval: what was offered, what completed, how late the generator was.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LoadInterval {
    /// Start, ns from the run's start.
    pub start_ns: u64,
    /// Length, ns.
    pub length_ns: u64,
    /// Operations whose intended start fell in it, per second.
    pub offered_per_s: f64,
    /// Operations completed in it, per second.
    pub achieved_per_s: f64,
    /// The lag's p99 among operations issued in it, ns.
    pub lag_p99_ns: u64,
    /// The largest lag among them, ns.
    pub lag_max_ns: u64,
}

/// Offered against achieved, the generator's lag and who fell behind.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LoadVerdict {
    /// `--rate` as asked, per second.
    pub rate_per_s: f64,
    /// Operations offered per second over the schedule's span.
    pub offered_per_s: f64,
    /// Operations completed per second over the run, or until the last
    /// completed where that was later.
    pub achieved_per_s: f64,
    /// How long after the run's end the last operation completed (a
    /// broker's drain), ns; absent when none did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed_after_end_ns: Option<u64>,
    /// One thread's gap between intended starts, ns.
    pub period_ns: f64,
    /// The generator's lag (actual issue − intended start).
    pub lag: Spread,
    /// The target's service time, where the run has a service series.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service: Option<Spread>,
    /// The most operations the generator could have in flight.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_flight_limit: Option<u64>,
    /// Mean operations waiting on the target over the limit (Little's law:
    /// achieved × mean service ÷ limit), where both are known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub occupancy: Option<f64>,
    /// The share of the schedules' time that due operations waited for
    /// room in the generator (a broker's full batches), where the run
    /// counts it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_share: Option<f64>,
    /// Per interval.
    pub intervals: Vec<LoadInterval>,
    /// Why the generator, not the target, fell behind; `None` when it kept
    /// its schedule or the target explains the lateness.
    pub generator_fell_behind: Option<String>,
    /// Why the target, not the generator, limited the rate: achieved
    /// below offered with the in-flight slots held by the target.
    pub saturated: Option<String>,
}
