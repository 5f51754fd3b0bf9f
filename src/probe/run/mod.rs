//! The run engine: the machinery every probe shares, as five stages.
//!
//! 1. **Open** ([`destination::open`]): the outputs are checked (the default
//!    name chosen), the metrics endpoint bound, the kernel series'
//!    programs attached and the host snapshot taken — a refusal here costs
//!    no measurement.
//! 2. **Start** ([`threads::start`], [`start::begin`]): each probe thread
//!    prepares itself (pinning, priority) and reports back, the first
//!    failure aborting the run; then the start is fixed (at `--start-at`
//!    if given), recorders are handed out and the collector starts.
//! 3. **Observe and join**: the observer thread wakes at each interval
//!    boundary ([`observer`]) while the threads measure until their
//!    schedule ends or the stop flag rises; then all are joined.
//! 4. **Assemble** ([`assemble::assemble`]): the series, the kernel series,
//!    the `self` heartbeat, the host counters and the summaries become the
//!    run file, and the probe completes it (faults, warnings, its section).
//! 5. **Write and report**: the run file is written once, atomically —
//!    also after Ctrl-C (marked `interrupted`) and after a thread failed;
//!    errors are returned once the data is safe.
//!
//! The live view (`--metrics-listen`) is served from here too: the
//! collector publishes each interval's page ([`live`]) to the endpoint
//! thread ([`endpoint`]).

pub mod assemble;
pub mod collector;
pub mod destination;
pub mod endpoint;
pub mod heartbeat;
pub mod live;
pub mod observer;
pub mod placement;
pub mod plan;
pub mod start;
pub mod threads;

use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result, anyhow};

pub use destination::Destination;
pub use plan::{Finished, Observe, Plan, SeriesSpec};

use crate::formats::export::hlog::HlogWriter;
use crate::formats::hlog_comments;
use crate::host::counters::Sampler;
use crate::host::root::HostRoot;
use crate::model::RunFile;
use crate::output::{self, Checked};
use crate::record::{Recorder, StopFlag};
use assemble::Measured;
use destination::Opened;
use live::LiveFeed;
use placement::Placement;

/// Runs `body` on `plan.threads` threads after each ran `prepare`, with
/// what every probe observes by default ([`Observe::default`]).
///
/// `body(thread, run_start_ns, recorder, stop)` measures until its work is
/// done or `stop` rises, and returns the time it stopped.
pub fn run<P, B>(
    plan: Plan,
    destination: &Destination,
    stop: &StopFlag,
    prepare: P,
    body: B,
) -> Result<Finished>
where
    P: Fn(usize) -> Result<()> + Sync,
    B: Fn(usize, u64, &mut Recorder, &StopFlag) -> Result<u64> + Sync,
{
    let observe = Observe::default();
    run_completing(plan, &observe, destination, stop, prepare, body, |_| Ok(()))
}

/// [`run`], choosing what is observed beside the probe, with `complete`
/// adding the probe's own part of the run (faults, warnings, its section)
/// once the threads are done. It is called on every path that saves
/// measurements (success, Ctrl-C, a failed thread), and the run file is
/// written once, after it; an error from `complete` is returned after the
/// file is saved without what `complete` did not finish.
pub fn run_completing<P, B, C>(
    plan: Plan,
    observe: &Observe,
    destination: &Destination,
    stop: &StopFlag,
    prepare: P,
    body: B,
    complete: C,
) -> Result<Finished>
where
    P: Fn(usize) -> Result<()> + Sync,
    B: Fn(usize, u64, &mut Recorder, &StopFlag) -> Result<u64> + Sync,
    C: FnOnce(&mut RunFile) -> Result<()>,
{
    let mut opened = destination::open(&plan, observe, destination)?;
    let probes_done = AtomicBool::new(false);
    let mut measured = std::thread::scope(|scope| -> Result<Measured> {
        let ready = threads::start(scope, plan.probe, plan.threads, stop, &prepare, &body)?;
        // The probe threads have pinned themselves: the observers keep off
        // their CPUs where they can.
        if let Some(tracer) = opened.tracer.as_mut() {
            tracer.own_threads(&ready.thread_ids)?;
        }
        let placement = Placement::beside(&crate::sys::allowed_cpus(), &ready.thread_ids);
        let sampler = destination.host_counters.then(|| {
            let ids = ready.thread_ids.clone();
            Sampler::new(HostRoot::default(), observe.block_device.clone(), ids)
        });
        let (start, sampling) = start::begin(destination.start_at_unix_ns, stop, sampler)?;
        if let Some(tracer) = opened.tracer.as_mut() {
            tracer.arm(start.run_start, plan.interval_ns)?;
        }
        let (hlog, feed) = streams(&plan, destination, &opened, &start)?;
        let (recorders, collector) = collector::start(
            plan.series.clone(),
            plan.threads,
            start.run_start,
            plan.interval_ns,
            hlog,
            feed,
            &placement,
        )?;
        let running = ready.go(recorders, start.run_start);
        let watching = observer::Watching {
            heartbeat: observe.self_hiccups && destination.self_heartbeat,
            sampling,
            tracer: opened.tracer.take(),
        };
        let boundaries = observer::Boundaries {
            run_start_ns: start.run_start,
            interval_ns: plan.interval_ns,
        };
        let watcher = observer::spawn(scope, &placement, boundaries, watching, &probes_done);
        let thread_error = running.join();
        probes_done.store(true, Ordering::Release);
        let watched = observer::finish(watcher);
        let collected = collector
            .join()
            .map_err(|_| anyhow!("the collector thread panicked"))?;
        Ok(Measured {
            start,
            collected,
            watched,
            thread_error,
            shared: placement.shared,
        })
    })?;
    let host = std::mem::take(&mut opened.host);
    let run = assemble::assemble(plan, destination, host, &mut measured, stop)?;
    write_and_report(run, complete, opened, measured, stop)
}

/// The streamed outputs, opened once the start is fixed: the interval log
/// (`--hlog`) and the live view (`--metrics-listen`).
fn streams(
    plan: &Plan,
    destination: &Destination,
    opened: &Opened,
    start: &start::Start,
) -> Result<(Option<HlogWriter>, Option<LiveFeed>)> {
    let hlog = match &destination.hlog {
        Some(path) => {
            let checked = opened.hlog_checked.unwrap_or(Checked::New);
            let file = output::open_checked(path, checked).context("--hlog")?;
            let main = hlog_comments::main_tag(plan.series.iter().map(|s| s.tag.as_str()));
            Some(HlogWriter::start(
                file,
                path,
                start.start_unix_ns,
                &start.start_time,
                main,
                &destination.labels,
            )?)
        }
        None => None,
    };
    let feed = opened.live.as_ref().map(|live| {
        let tags: Vec<String> = plan.series.iter().map(|s| s.tag.clone()).collect();
        LiveFeed::new(
            plan.probe,
            &destination.labels,
            &tags,
            plan.interval_ns,
            start.start_unix_ns,
            live.latest.clone(),
        )
    });
    Ok((hlog, feed))
}

/// The last stage: the probe completes the run file, which is written
/// once; then the errors, in order of what they cost the user.
fn write_and_report<C>(
    mut run: RunFile,
    complete: C,
    opened: Opened,
    measured: Measured,
    stop: &StopFlag,
) -> Result<Finished>
where
    C: FnOnce(&mut RunFile) -> Result<()>,
{
    let Opened {
        path,
        run_checked,
        live,
        ..
    } = opened;
    // The endpoint's thread as of its last scrape during the run.
    run.observers
        .extend(live.as_ref().and_then(|live| live.endpoint.observer()));
    let completed = complete(&mut run);
    let bytes = crate::formats::export::runfile::to_bytes(&run)?;
    output::write_checked(&path, run_checked, &bytes)
        .with_context(|| format!("cannot save the run file {}", path.display()))?;
    // A run that ended by itself lets Prometheus take its last interval.
    if let Some(live) = &live
        && !stop.is_raised()
    {
        live.endpoint
            .await_scrape_of(live.latest.generation(), stop);
    }
    if let Some(e) = measured.thread_error {
        return Err(e.context(format!(
            "the run failed; what was measured is saved in {}",
            path.display()
        )));
    }
    if let Err(e) = completed {
        return Err(e.context(format!(
            "the run's measurements are saved in {}, without the figures that failed",
            path.display()
        )));
    }
    if let Some(e) = measured.collected.hlog_error {
        return Err(e.context(format!(
            "the run finished but the interval log is incomplete; the run file {} is complete",
            path.display()
        )));
    }
    Ok(Finished { run, path })
}
