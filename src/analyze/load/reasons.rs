//! Who fell behind, in words: the generator (the rule of
//! [`super`]'s doc comment) or the target (its slots or a broker's
//! batches held), for [`super::LoadVerdict`].

use super::verdict::{HELD_BY_TARGET, KEPT_UP, LoadVerdict};

/// The rule of [`super`]'s doc comment, as a sentence, or `None`.
pub(super) fn generator_reason(v: &LoadVerdict) -> Option<String> {
    let lag = v.lag.p99_ns as f64;
    if v.lag.count == 0 || lag <= v.period_ns || held_by_target(v) {
        return None;
    }
    if let Some(service) = &v.service
        && v.lag.p99_ns <= service.p50_ns
    {
        return None;
    }
    let ms = |ns: f64| format!("{:.3} ms", ns / 1e6);
    let mut reason = format!(
        "the load generator fell behind its own schedule: it issued operations late by {} at p99 \
         (max {}) after they were due and a slot was free, more than one gap between its \
         operations ({})",
        ms(lag),
        ms(v.lag.max_ns as f64),
        ms(v.period_ns)
    );
    if let Some(service) = &v.service {
        reason += &format!(
            " and more than the target's median service time ({})",
            ms(service.p50_ns as f64)
        );
    }
    if let (Some(occupancy), Some(limit)) = (v.occupancy, v.in_flight_limit) {
        reason += &format!(
            ", while the target held on average {:.2} of its {limit} in-flight slots",
            occupancy * limit as f64
        );
    }
    if v.achieved_per_s < KEPT_UP * v.offered_per_s {
        reason += &format!(
            "; it achieved {:.0}/s of {:.0}/s offered",
            v.achieved_per_s, v.offered_per_s
        );
    }
    reason += ": latencies from the intended start include the generator's own lateness, \
               not only the target's";
    Some(reason)
}

/// The target held a broker's producers (their batches full) for at
/// least [`HELD_BY_TARGET`] of the schedules' time, and the rate fell
/// short.
fn held_by_target(v: &LoadVerdict) -> bool {
    v.held_share.is_some_and(|h| h >= HELD_BY_TARGET)
        && v.achieved_per_s < KEPT_UP * v.offered_per_s
}

/// A held share as a percentage, rounded down to a tenth: never "100 %"
/// for a producer held all but its first milliseconds, nor "50 %" below
/// the half that decides.
pub fn held_percent(share: f64) -> String {
    format!("{:.1} %", (share * 1000.0).floor() / 10.0)
}

/// The target held the generator's slots, or its batches, and the rate
/// fell short.
pub(super) fn saturation_reason(v: &LoadVerdict) -> Option<String> {
    if v.achieved_per_s >= KEPT_UP * v.offered_per_s {
        return None;
    }
    let rates = format!(
        "the target limited the rate: {:.0}/s achieved of {:.0}/s offered",
        v.achieved_per_s, v.offered_per_s
    );
    if let Some(occupancy) = v.occupancy.filter(|&o| o >= HELD_BY_TARGET) {
        return Some(format!(
            "{rates} with {:.0} % of the in-flight slots waiting on it",
            occupancy * 100.0
        ));
    }
    let held = v.held_share.filter(|_| held_by_target(v))?;
    Some(format!(
        "{rates}, the producers' batches full and due records waiting for the broker {} of \
         the time",
        held_percent(held)
    ))
}
