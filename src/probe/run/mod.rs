//! The run engine: the machinery every probe shares, as five stages.
//!
//! 1. **Open** ([`destination::open`]): the outputs are checked, the
//!    metrics endpoint bound, the default name chosen, the kernel series'
//!    programs attached and the host snapshot taken — a refusal here costs
//!    no measurement.
//! 2. **Start** ([`threads::prepare`], then `begin`): each probe thread
//!    prepares itself (pinning, priority) and reports back, the first
//!    failure aborting the run; then the start is fixed (at `--start-at`
//!    if given, [`start::fix`]), the collector starts, each thread gets its
//!    recorder and the observer thread starts.
//! 3. **Observe and join** (`observe_and_join`): the observer wakes at each
//!    interval boundary ([`observer`]) while the threads measure until
//!    their schedule ends or the stop flag rises; then all are joined.
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
pub mod blame;
pub mod blame_report;
pub mod collector;
pub mod destination;
pub mod endpoint;
pub mod heartbeat;
pub mod live;
pub mod observer;
pub mod offered;
pub mod placement;
pub mod plan;
pub mod start;
pub mod threads;

use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{JoinHandle, Scope, ScopedJoinHandle};

use anyhow::{Context, Result, anyhow};

pub use destination::Destination;
pub use plan::{Blamed, Finished, Observe, OfferedPlan, Plan, SeriesSpec};

use crate::formats::export::hlog::HlogWriter;
use crate::formats::hlog_comments;
use crate::host::counters::Sampler;
use crate::host::root::HostRoot;
use crate::host::trace::Tracer;
use crate::model::{RunFile, Warning};
use crate::output::{self, Checked};
use crate::record::{Recorder, StopFlag};
use assemble::{Failures, Measured};
use collector::Collected;
use destination::{Opened, Outputs};
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
    let Opened {
        outputs,
        tracer,
        host,
    } = destination::open(&plan, observe, destination)?;
    let setting = Setting {
        plan: &plan,
        observe,
        destination,
        outputs: &outputs,
        stop,
    };
    let probes_done = AtomicBool::new(false);
    let measured = std::thread::scope(|scope| -> Result<Measured> {
        let ready = threads::prepare(scope, plan.probe, plan.threads, stop, &prepare, &body)?;
        let started = begin(scope, &setting, tracer, ready, &probes_done)?;
        observe_and_join(started, &probes_done)
    })?;
    let advice = plan.offered.as_ref().map(|o| o.advice);
    let (run, failures) = assemble::assemble(plan, destination, host, measured, stop)?;
    // Whether the generator fell behind is judged on the completed run:
    // the probe may add what the verdict reads (a broker's held time).
    let complete = |run: &mut RunFile| {
        let completed = complete(run);
        if let Some(advice) = advice {
            run.warnings.extend(offered::behind_warning(run, advice));
        }
        completed
    };
    write_and_report(run, complete, outputs, failures, stop)
}

/// What the stages of one run read: the probe's plan and what was asked.
struct Setting<'a> {
    plan: &'a Plan,
    observe: &'a Observe,
    destination: &'a Destination,
    outputs: &'a Outputs,
    stop: &'a StopFlag,
}

/// The second stage's result: the run has started.
struct Started<'scope> {
    start: start::Start,
    running: threads::Running<'scope>,
    collector: JoinHandle<Collected>,
    watcher: Option<ScopedJoinHandle<'scope, observer::Watched>>,
    /// What cauda's threads share with the probe's, when they cannot keep apart.
    shared_cpus: Option<Warning>,
    /// `--kernel blame`: what the probe threads' hooks share.
    blame: Option<blame::Shared>,
}

/// The second stage, once every probe thread is ready: places cauda's own
/// threads beside the probe's, fixes the start (at `--start-at` if given),
/// arms the kernel series, opens the streamed outputs, starts the
/// collector, hands each thread its recorder and starts the observer.
fn begin<'scope>(
    scope: &'scope Scope<'scope, '_>,
    setting: &Setting,
    mut tracer: Option<Tracer>,
    ready: threads::Ready<'scope>,
    done: &'scope AtomicBool,
) -> Result<Started<'scope>> {
    let Setting {
        plan,
        observe,
        destination,
        stop,
        ..
    } = *setting;
    // The probe threads have pinned themselves: the observers keep off
    // their CPUs where they can.
    if let Some(tracer) = tracer.as_mut() {
        tracer.own_threads(&ready.thread_ids)?;
    }
    let placement = Placement::beside(&crate::sys::allowed_cpus(), &ready.thread_ids);
    let sampler = || {
        let ids = ready.thread_ids.clone();
        let device = observe.block_device.clone();
        (destination.host_counters).then(|| Sampler::new(HostRoot::default(), device, ids))
    };
    let (start, sampling) = start::fix(destination.start_at_unix_ns, stop, sampler)?;
    if let Some(tracer) = tracer.as_mut() {
        tracer.arm(start.run_start, plan.interval_ns)?;
    }
    let (hlog, feed) = streams(setting, &start)?;
    let (recorders, collector) = collector::start(
        plan.series.clone(),
        plan.threads,
        start.run_start,
        plan.interval_ns,
        hlog,
        feed,
        &placement,
    )?;
    let (recorders, blame) = blame::attach(
        recorders,
        &ready.thread_ids,
        tracer.as_ref(),
        plan,
        destination,
        start.run_start,
    );
    let running = ready.go(recorders, start.run_start);
    let watching = observer::Watching {
        self_heartbeat: observe.self_heartbeat && destination.self_heartbeat,
        sampling,
        tracer,
    };
    let boundaries = observer::Boundaries {
        run_start_ns: start.run_start,
        interval_ns: plan.interval_ns,
    };
    let watcher = observer::spawn(scope, &placement, boundaries, watching, done);
    Ok(Started {
        start,
        running,
        collector,
        watcher,
        shared_cpus: placement.shared,
        blame,
    })
}

/// The third stage: waits for the probe threads, then stops the observer
/// and takes what it and the collector gathered.
fn observe_and_join(started: Started<'_>, done: &AtomicBool) -> Result<Measured> {
    let thread_error = started.running.join();
    done.store(true, Ordering::Release);
    let watched = observer::finish(started.watcher);
    let collected = started
        .collector
        .join()
        .map_err(|_| anyhow!("the collector thread panicked"))?;
    Ok(Measured {
        start: started.start,
        collected,
        watched,
        thread_error,
        shared_cpus: started.shared_cpus,
        blame: started.blame,
    })
}

/// The streamed outputs, opened once the start is fixed: the interval log
/// (`--hlog`) and the live view (`--metrics-listen`).
fn streams(
    setting: &Setting,
    start: &start::Start,
) -> Result<(Option<HlogWriter>, Option<LiveFeed>)> {
    let Setting {
        plan,
        destination,
        outputs,
        ..
    } = *setting;
    let hlog = match &destination.hlog {
        Some(path) => {
            let checked = outputs.hlog_checked.unwrap_or(Checked::New);
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
    let feed = outputs.live.as_ref().map(|live| {
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
    outputs: Outputs,
    failures: Failures,
    stop: &StopFlag,
) -> Result<Finished>
where
    C: FnOnce(&mut RunFile) -> Result<()>,
{
    let Outputs {
        path,
        run_checked,
        live,
        ..
    } = outputs;
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
    if let Some(e) = failures.thread {
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
    if let Some(e) = failures.hlog {
        return Err(e.context(format!(
            "the run finished but the interval log is incomplete; the run file {} is complete",
            path.display()
        )));
    }
    Ok(Finished { run, path })
}
