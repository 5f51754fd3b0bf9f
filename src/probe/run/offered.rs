//! What an open-loop run offered per interval, counted after the run by
//! replaying each thread's schedule (no cost on the hot path), and the
//! warning a run ends with when its generator, not the target, fell
//! behind (`analyze::load`).

use super::plan::OfferedPlan;
use crate::model::{OfferedLoad, RunFile, Warning};

/// The run's `offered` section: each schedule replayed from `run_start`
/// up to the end of `--runtime` (or `end_ns`, when the run was stopped
/// early), counted per interval of `interval_ns`.
pub fn count(
    plan: &OfferedPlan,
    run_start: u64,
    end_ns: u64,
    interval_ns: u64,
    interrupted: bool,
) -> OfferedLoad {
    let mut limit = run_start.saturating_add(plan.runtime_ns);
    if interrupted {
        limit = limit.min(end_ns);
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
