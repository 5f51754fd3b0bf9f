//! The sweep's words: one line per step as it is measured, and the finding
//! the search ended on.

use super::config::SweepConfig;
use crate::model::sweep::{Capacity, Ending, SweepStep};
use crate::report::sweep::{show_value, verdict_words, with_interval};
use crate::units::format_ns;

/// The line printed when a step ends.
pub fn step_line(step: &SweepStep, config: &SweepConfig) -> String {
    let class = verdict_words(step);
    let lag = step
        .lag_p99_ns
        .map(|ns| format!(", lag p99 {}", format_ns(ns as f64)))
        .unwrap_or_default();
    format!(
        "p{} {} → {class}; achieved {:.0}/s{lag}",
        config.objective.percentile.key,
        with_interval(&step.objective),
        step.achieved_per_s
    )
}

/// The finding the search ended on, in words.
pub fn of(
    capacity: &Capacity,
    config: &SweepConfig,
    steps: &[SweepStep],
    failure: Option<&str>,
) -> String {
    let objective = &config.objective;
    let show = |v: f64| show_value(config.knob, v);
    let bracket = match (capacity.below, capacity.above) {
        (Some(lo), Some(hi)) => format!(
            "capacity at {objective}: between {} (met) and {} (missed), ±{:.1} %",
            show(lo),
            show(hi),
            (hi - lo) / (hi + lo) * 100.0
        ),
        (Some(lo), None) => format!("{objective} met up to {}", show(lo)),
        (None, Some(hi)) => format!("{objective} missed from {}", show(hi)),
        (None, None) => format!("no step judged against {objective}"),
    };
    let achieved = capacity
        .below_achieved_per_s
        .map(|a| format!("; {a:.0} operations/s completed there"))
        .unwrap_or_default();
    match capacity.ending {
        Ending::Converged => format!("{bracket}{achieved}"),
        Ending::Unresolved => format!(
            "{bracket}{achieved}; between them p{} stays within its confidence interval of the \
             objective: more samples per step (--samples-above) would narrow it",
            objective.percentile.key
        ),
        Ending::Budget => {
            format!("the budget ran out: {bracket}{achieved}; a longer --budget would narrow it")
        }
        Ending::Interrupted => format!("interrupted: {bracket} so far{achieved}"),
        Ending::NeverViolated => format!(
            "{objective} holds at every value up to --to {}: the capacity is above it; raise --to",
            show(config.to)
        ),
        Ending::GeneratorLimit => format!(
            "the generator fell behind from {} before {objective} was missed ({bracket}): the \
             target takes more than this generator offers; give the probe more connections, \
             threads or CPUs{}",
            capacity.generator_ceiling.map(show).unwrap_or_default(),
            steps
                .iter()
                .find_map(|s| s.generator_fell_behind.as_deref())
                .map(|why| format!(" ({why})"))
                .unwrap_or_default()
        ),
        Ending::ViolatedAtLowest => format!(
            "{objective} is already missed at the lowest value, {} (p{} {}): lower --from, or the \
             objective is beyond this target",
            show(config.from),
            objective.percentile.key,
            steps
                .first()
                .map(|s| with_interval(&s.objective))
                .unwrap_or_default()
        ),
        Ending::Failed => format!(
            "a step failed ({}): {bracket} so far",
            failure.unwrap_or("no reason given")
        ),
    }
}
