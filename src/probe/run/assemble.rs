//! The engine's fourth stage: what the threads left becomes the run file —
//! the probe's series, then the kernel series and the `self` heartbeat on
//! the probe's grid, the host counters aligned with it, cauda's own
//! threads, the summaries and every warning.

use anyhow::{Result, anyhow};

use super::collector::Collected;
use super::destination::Destination;
use super::heartbeat::IntervalSink;
use super::observer::Watched;
use super::plan::Plan;
use super::start::{Start, late_start};
use crate::analyze::summary::series_summaries;
use crate::host::counters;
use crate::host::trace;
use crate::model::kernel::KernelReport;
use crate::model::{
    HostCounters, HostSnapshot, Observer, RUN_SCHEMA, RunFile, Series, Tool, Warning,
};
use crate::record::StopFlag;

/// What the threads of a run left for its run file.
pub struct Measured {
    /// The run's start.
    pub start: Start,
    /// The collector's series and the run's end.
    pub collected: Collected,
    /// What the observer thread saw, if it ran.
    pub watched: Option<Watched>,
    /// The first failure of a probe thread.
    pub thread_error: Option<anyhow::Error>,
    /// What cauda's threads shared with the probe's, when they could not keep apart.
    pub shared_cpus: Option<Warning>,
    /// `--kernel blame`: what the probe threads kept.
    pub blame: Option<super::blame::Shared>,
}

/// What went wrong while measuring, reported once the run file is saved.
pub struct Failures {
    /// The first failure of a probe thread.
    pub thread: Option<anyhow::Error>,
    /// A failure writing the interval log.
    pub hlog: Option<anyhow::Error>,
}

/// The series and observations of a run, on one grid.
struct Gathered {
    series: Vec<Series>,
    host_counters: Option<HostCounters>,
    kernel: Option<KernelReport>,
    observers: Vec<Observer>,
}

/// Puts the kernel series (on the probe's grid or, with no series of the
/// probe's, on the run's) and then the `self` series after the probe's,
/// and aligns the host counters with the same grid.
fn gather(
    collected: &mut Collected,
    watched: Option<Watched>,
    start: &Start,
    interval_ns: u64,
) -> Gathered {
    let (heartbeat, readings, tracer, watcher_use): (Option<IntervalSink>, _, _, _) = match watched
    {
        Some(w) => (w.heartbeat, w.readings, w.tracer, Some(w.observer)),
        None => (None, None, None, None),
    };
    let mut series = std::mem::take(&mut collected.series);
    let kernel = tracer.map(|tracer| {
        let elapsed = collected.end_ns.saturating_sub(start.run_start);
        let grid = trace::grid::grid_of(series.first(), elapsed, interval_ns);
        let (kernel_series, report) = tracer.finish(&grid);
        series.extend(kernel_series);
        report
    });
    if let (Some(sink), Some(first)) = (heartbeat, series.first()) {
        let grid = first.intervals.clone();
        series.push(sink.into_series(&grid));
    }
    let host_counters = readings.and_then(|readings| {
        let grid = &series.first()?.intervals;
        Some(counters::align(readings, grid))
    });
    Gathered {
        series,
        host_counters,
        kernel,
        observers: [watcher_use, Some(collected.observer.clone())]
            .into_iter()
            .flatten()
            .collect(),
    }
}

/// The run file, as the engine knows it (the probe completes it after),
/// and what went wrong while measuring.
pub fn assemble(
    plan: Plan,
    destination: &Destination,
    host: HostSnapshot,
    measured: Measured,
    stop: &StopFlag,
) -> Result<(RunFile, Failures)> {
    let Measured {
        start,
        mut collected,
        watched,
        thread_error,
        shared_cpus,
        blame,
    } = measured;
    let blame = blame.map(|b| super::blame_report::of(b, &plan.series));
    let gathered = gather(&mut collected, watched, &start, plan.interval_ns);
    let cut_short = stop.is_raised() || thread_error.is_some();
    let offered = plan.offered.as_ref().map(|o| {
        // The completed series' last completion counted before it happened.
        let completed_late_ns = plan
            .series
            .iter()
            .zip(&collected.completed_late_ns)
            .filter(|(spec, _)| o.completed.contains(&spec.tag))
            .map(|(_, &late)| late)
            .max()
            .unwrap_or(0);
        super::offered::count(
            o,
            start.run_start,
            collected.end_ns,
            plan.interval_ns,
            cut_short.then(|| stop.raised_at().unwrap_or(collected.end_ns)),
            completed_late_ns,
        )
    });
    let summary = series_summaries(&gathered.series).map_err(|e| anyhow!(e))?;
    let warnings = plan
        .warnings
        .into_iter()
        .chain(shared_cpus)
        .chain(late_start(
            destination.start_at_unix_ns,
            start.start_unix_ns,
            plan.interval_ns,
        ))
        .chain(gathered.kernel.iter().flat_map(trace::report::warnings))
        .chain(blame.iter().flat_map(super::blame_report::warnings))
        .collect();
    let run = RunFile {
        schema: RUN_SCHEMA.into(),
        tool: Tool::this(),
        probe: plan.probe.into(),
        load: plan.load,
        parameters: plan.parameters,
        start_time: start.start_time,
        start_unix_ns: start.start_unix_ns,
        start_at_unix_ns: destination.start_at_unix_ns,
        labels: destination.labels.clone(),
        duration_ns: collected.end_ns.saturating_sub(start.run_start),
        interval_ns: plan.interval_ns,
        interrupted: stop.is_raised() && thread_error.is_none(),
        host,
        faults: Default::default(),
        warnings,
        series: gathered.series,
        summary,
        host_counters: gathered.host_counters,
        disk: None,
        broker: None,
        kernel: gathered.kernel,
        offered,
        blame,
        observers: gathered.observers,
        integrity: None,
    };
    let failures = Failures {
        thread: thread_error,
        hlog: collected.hlog_error,
    };
    Ok((run, failures))
}
