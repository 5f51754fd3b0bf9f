//! What an open-loop run offered per interval, counted after the run by
//! replaying each thread's schedule (no cost on the hot path), and the
//! warning a run ends with when its generator, not the target, fell
//! behind (`analyze::load`).

use super::plan::OfferedPlan;
use crate::model::{OfferedLoad, RunFile, Warning};

/// The run's `offered` section: each schedule replayed from `run_start`
/// up to the end of `--runtime`, or `stopped_at` when the run was stopped
/// early (what fell due after the stop was never offered; the threads end
/// a little later, by `end_ns`), counted per interval of `interval_ns`;
/// `completed_late_ns` is when the last operation counted in an earlier
/// interval completed (0: none was).
pub fn count(
    plan: &OfferedPlan,
    run_start: u64,
    end_ns: u64,
    interval_ns: u64,
    stopped_at: Option<u64>,
    completed_late_ns: u64,
) -> OfferedLoad {
    let mut limit = run_start.saturating_add(plan.runtime_ns);
    if let Some(stop) = stopped_at {
        limit = limit.min(stop.max(run_start + 1));
    }
    let interval_ns = interval_ns.max(1);
    let intervals = limit.saturating_sub(run_start).div_ceil(interval_ns) as usize;
    let mut offered = vec![0u64; intervals];
    for schedule in &plan.schedules {
        let mut replay = schedule.restarted(run_start);
        for (i, slot) in offered.iter_mut().enumerate() {
            let boundary = run_start + (i as u64 + 1) * interval_ns;
            *slot += replay.take_before(boundary.min(limit));
        }
    }
    let arrivals = plan
        .schedules
        .first()
        .map(|s| s.arrivals())
        .unwrap_or(crate::record::Arrivals::Uniform);
    OfferedLoad {
        rate_per_s: plan.rate_per_s,
        arrivals: match arrivals {
            crate::record::Arrivals::Uniform => "uniform",
            crate::record::Arrivals::Poisson => "poisson",
        }
        .into(),
        schedules: plan.schedules.len() as u64,
        in_flight_limit: plan.in_flight_limit,
        span_ns: limit.saturating_sub(run_start),
        completed_until_ns: (completed_late_ns > limit.max(end_ns))
            .then(|| completed_late_ns - run_start),
        held_ns: None,
        offered,
        lag: plan.lag.clone(),
        completed: plan.completed.clone(),
        service: plan.service.clone(),
    }
}

/// The warning of a run whose generator fell behind its schedule, with
/// the probe's own advice.
pub fn behind_warning(run: &RunFile, advice: &str) -> Option<Warning> {
    let verdict = crate::analyze::load::load_verdict(run)?;
    Some(Warning {
        message: verdict.generator_fell_behind?,
        advice: advice.into(),
    })
}
