//! Running a probe: the machinery every probe shares.
//!
//! 1. Each probe thread prepares itself (pinning, priority) and reports
//!    back; any failure aborts before anything is measured.
//! 2. The start time is fixed, recorders are created and handed out, and
//!    the threads measure until their schedule ends or the stop flag rises.
//! 3. The collector's series, the host snapshot and the summaries become
//!    the run file; the probe completes it (its faults, warnings and its
//!    own section) and the session writes it once, atomically — also after
//!    Ctrl-C (marked `interrupted`) and after a thread failed (the error is
//!    returned once the data is safe).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, mpsc};
use std::time::SystemTime;

use anyhow::{Context, Result, anyhow};

use crate::analyze::summary::series_summaries;
use crate::formats::export::hlog::HlogWriter;
use crate::host::counters::{self, Sampler};
use crate::host::kernel::{self, Tracer};
use crate::host::snapshot::{self, HostRoot};
use crate::model::HostCounters;
use crate::model::kernel::KernelSource;
use crate::model::{LoadMode, Observer, RUN_SCHEMA, RunFile, Tool, Warning};
use crate::output::{self, Checked};
use crate::probe::collector::{self, SeriesSpec};
use crate::probe::endpoint::{Endpoint, Latest};
use crate::probe::live::LiveFeed;
use crate::probe::observers::{self, Placement};
use crate::record::{Clock, MonotonicClock, Recorder, StopFlag};
use crate::sys;

/// Where a run's results go, checked before it starts.
#[derive(Clone, Debug)]
pub struct Destination {
    /// The run file (`-o`), or `None` for the default name.
    pub run_file: Option<PathBuf>,
    /// The streamed interval log (`--hlog`).
    pub hlog: Option<PathBuf>,
    /// Overwrite files that are not cauda's.
    pub force: bool,
    /// `--label` pairs written into the run file.
    pub labels: std::collections::BTreeMap<String, String>,
    /// `--start-at`: the wall-clock time (ns since the epoch) to start the
    /// schedule at, once every probe thread is ready.
    pub start_at_unix_ns: Option<u128>,
    /// `--metrics-listen`: where to serve the live view to Prometheus.
    pub metrics: Option<std::net::SocketAddr>,
    /// `--kernel`: the kernel series to record beside the probe's.
    pub kernel: Vec<KernelSource>,
}

impl Destination {
    /// Checks the paths given (the default name is checked when chosen):
    /// what writing the run file and the interval log may replace.
    pub fn check(&self) -> Result<(Option<Checked>, Option<Checked>)> {
        let run_file = match &self.run_file {
            Some(path) => Some(output::check_writable(
                path,
                output::OwnKind::RunFile,
                self.force,
                "-o",
            )?),
            None => None,
        };
        let hlog = match &self.hlog {
            Some(path) => {
                HlogWriter::check_name(path)?;
                Some(output::check_writable(
                    path,
                    output::OwnKind::Hlog,
                    self.force,
                    "--hlog",
                )?)
            }
            None => None,
        };
        Ok((run_file, hlog))
    }
}

/// What a probe declares before running.
#[derive(Debug)]
pub struct Plan {
    /// The probe's name, e.g. `timer`.
    pub probe: &'static str,
    /// Open or closed loop.
    pub load: LoadMode,
    /// Parameters as resolved, stored in the run file.
    pub parameters: serde_json::Value,
    /// The series the probe records, in `SeriesId` order.
    pub series: Vec<SeriesSpec>,
    /// How many probe threads.
    pub threads: usize,
    /// Interval length in ns.
    pub interval_ns: u64,
    /// Warnings raised while preparing.
    pub warnings: Vec<Warning>,
}

/// What a finished (or interrupted) run produced.
#[derive(Debug)]
pub struct Finished {
    /// The run, as written.
    pub run: RunFile,
    /// Where it was written.
    pub path: PathBuf,
}

/// What the threads of a run left for its run file.
struct Measured {
    collected: collector::Collected,
    run_start: u64,
    start_time: String,
    start_unix_ns: u128,
    thread_error: Option<anyhow::Error>,
    host_counters: Option<HostCounters>,
    observers: Observers,
    kernel_report: Option<crate::model::kernel::KernelReport>,
}

/// cauda's own threads of a run: their use, and what they shared.
struct Observers {
    threads: Vec<Observer>,
    shared: Option<Warning>,
}

/// What a run observes beside its probe.
#[derive(Clone, Debug)]
pub struct Observe {
    /// The block device the probe works on (`vda`, `nvme0n1`), whose
    /// `/proc/diskstats` line joins the host counters.
    pub block_device: Option<String>,
    /// Sample host counters (PSI, vmstat, …) at each interval boundary.
    pub host_counters: bool,
    /// Record the `self` heartbeat: how late cauda's observer thread woke
    /// at each interval boundary ([`observers::watch`]).
    pub self_hiccups: bool,
    /// The kernel series count every process's block requests, not only
    /// this one's (`cauda kernel`, which watches what others do).
    pub whole_host: bool,
}

static HOST_COUNTERS: AtomicBool = AtomicBool::new(true);
static SELF_THREAD: AtomicBool = AtomicBool::new(true);

/// Sets what this process's runs observe by default (the hidden
/// `--no-host-counters` and `--no-self-thread`, for measuring their cost).
pub fn observe_by_default(host_counters: bool, self_thread: bool) {
    HOST_COUNTERS.store(host_counters, Ordering::Relaxed);
    SELF_THREAD.store(self_thread, Ordering::Relaxed);
}

impl Default for Observe {
    fn default() -> Self {
        Observe {
            block_device: None,
            host_counters: HOST_COUNTERS.load(Ordering::Relaxed),
            self_hiccups: SELF_THREAD.load(Ordering::Relaxed),
            whole_host: false,
        }
    }
}

/// Runs `body` on `plan.threads` threads after each ran `prepare`.
///
/// `body(thread, run_start_ns, recorder, stop)` measures until its work is
/// done or `stop` rises, and returns the time it stopped. The run also
/// samples host counters and runs the `self` control thread
/// ([`Observe::default`]); [`run_completing`] chooses, and lets the probe
/// complete the run file before it is written.
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
    let (run_checked, hlog_checked) = destination.check()?;
    // Bound before anything runs: an address in use stops the run here.
    let live = match destination.metrics {
        Some(addr) => {
            let latest = Latest::default();
            let source = latest.clone();
            let endpoint = Endpoint::start(addr, Box::new(move || source.get()))?;
            eprintln!(
                "metrics: http://{}/metrics (Prometheus native histograms)",
                endpoint.addr()
            );
            Some((endpoint, latest))
        }
        None => None,
    };
    // The default name is chosen (never an existing file) and checked
    // before anything runs.
    let (path, run_checked) = match (&destination.run_file, run_checked) {
        (Some(path), Some(checked)) => (path.clone(), checked),
        _ => {
            let now = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
            let path = output::unused_default_path(plan.probe, &now);
            let checked = output::check_writable(&path, output::OwnKind::RunFile, false, "-o")?;
            (path, checked)
        }
    };
    // Loaded and attached before anything runs: a kernel that refuses the
    // programs stops the run here (exit 2), and the load's cost (the
    // kernel's BTF is parsed) is not in any interval.
    let mut tracer = if destination.kernel.is_empty() {
        None
    } else {
        Some(Tracer::attach(&kernel::Request {
            sources: destination.kernel.clone(),
            process: (!observe.whole_host).then(std::process::id),
            device: observe.block_device.clone(),
        })?)
    };
    let host = snapshot::capture_full(&HostRoot::default());
    let clock = MonotonicClock;
    // Probe thread ids (for their context switches) and the end of the
    // probes, which stops the sampler and the `self` thread.
    let thread_ids = Mutex::new(Vec::with_capacity(plan.threads));
    let probes_done = AtomicBool::new(false);

    let (ready_tx, ready_rx) = mpsc::channel::<(usize, Result<()>)>();
    let outcome = std::thread::scope(|scope| -> Result<_> {
        // Dropped on any early return, which releases the waiting threads.
        let mut go_senders = Vec::with_capacity(plan.threads);
        let mut handles = Vec::with_capacity(plan.threads);
        for thread in 0..plan.threads {
            let (go_tx, go_rx) = mpsc::channel::<Option<(Recorder, u64)>>();
            go_senders.push(go_tx);
            let ready_tx = ready_tx.clone();
            let (prepare, body, thread_ids) = (&prepare, &body, &thread_ids);
            let handle = std::thread::Builder::new()
                .name(format!("cauda-{}-{thread}", plan.probe))
                .spawn_scoped(scope, move || -> Result<()> {
                    if let Ok(mut ids) = thread_ids.lock() {
                        ids.push(sys::thread_id());
                    }
                    let _ = ready_tx.send((thread, prepare(thread)));
                    // Not held while waiting: a thread that dies preparing
                    // must not leave the others' readiness unanswered.
                    drop(ready_tx);
                    let Ok(Some((mut recorder, start))) = go_rx.recv() else {
                        return Ok(());
                    };
                    // A panic in the probe still saves this thread's partial
                    // interval and stops the others.
                    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        body(thread, start, &mut recorder, stop)
                    }))
                    .unwrap_or_else(|_| Err(anyhow!("probe thread {thread} panicked")));
                    let end = match &result {
                        Ok(end) => *end,
                        Err(_) => {
                            stop.raise();
                            MonotonicClock.now()
                        }
                    };
                    recorder.finish(end);
                    result.map(|_| ())
                })
                .context("cannot start a probe thread")?;
            handles.push(handle);
        }
        drop(ready_tx);

        // Wait for every thread to be ready; the first failure aborts.
        let mut failure = None;
        for _ in 0..plan.threads {
            match ready_rx.recv() {
                Ok((_, Ok(()))) => {}
                Ok((_, Err(e))) => {
                    failure.get_or_insert(e);
                }
                Err(_) => {
                    failure.get_or_insert(anyhow!("a probe thread died while preparing"));
                }
            }
        }
        if let Some(e) = failure {
            for go in &go_senders {
                let _ = go.send(None);
            }
            return Err(e);
        }
        // The probe threads have pinned themselves: the observers keep off
        // their CPUs where they can.
        let placement = {
            let ids = thread_ids.lock().map(|ids| ids.clone()).unwrap_or_default();
            if let Some(tracer) = tracer.as_mut() {
                tracer.own_threads(&ids)?;
            }
            Placement::beside(&sys::allowed_cpus(), &ids)
        };

        if let Some(at) = destination.start_at_unix_ns {
            wait_for_wall_clock(at, stop)?;
        }
        // Fix the start: wall clock for people, monotonic for intervals.
        let wall_start = SystemTime::now();
        let start_unix_ns = wall_start
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let start_time = humantime::format_rfc3339_seconds(wall_start).to_string();
        let mut sampler = observe.host_counters.then(|| {
            let ids = thread_ids.lock().map(|ids| ids.clone()).unwrap_or_default();
            Sampler::new(HostRoot::default(), observe.block_device.clone(), ids)
        });
        let baseline = sampler.as_mut().map(Sampler::sample);
        let run_start = clock.now();
        if let Some(tracer) = tracer.as_mut() {
            tracer.arm(run_start, plan.interval_ns)?;
        }
        let hlog = match &destination.hlog {
            Some(p) => {
                let checked = hlog_checked.unwrap_or(Checked::New);
                let file = output::open_checked(p, checked).context("--hlog")?;
                let main = crate::formats::hlog_comments::main_tag(
                    plan.series.iter().map(|s| s.tag.as_str()),
                );
                Some(HlogWriter::start(
                    file,
                    p,
                    start_unix_ns,
                    &start_time,
                    main,
                    &destination.labels,
                )?)
            }
            None => None,
        };
        let feed = live.as_ref().map(|(_, latest)| {
            let tags: Vec<String> = plan.series.iter().map(|s| s.tag.clone()).collect();
            LiveFeed::new(
                plan.probe,
                &destination.labels,
                &tags,
                plan.interval_ns,
                start_unix_ns,
                latest.clone(),
            )
        });
        let (recorders, collector) = collector::start(
            plan.series.clone(),
            plan.threads,
            run_start,
            plan.interval_ns,
            hlog,
            feed,
            &placement,
        )?;
        for (go, recorder) in go_senders.iter().zip(recorders) {
            let _ = go.send(Some((recorder, run_start)));
        }
        let done = || probes_done.load(Ordering::Acquire);
        // Off the probes' threads: a failure to start it only loses what
        // it would have observed.
        let heartbeat = observe.self_hiccups;
        let sampling = sampler.zip(baseline);
        let tracing = tracer.take();
        let watcher = (heartbeat || sampling.is_some() || tracing.is_some())
            .then(|| {
                let placement = placement.clone();
                std::thread::Builder::new()
                    .name(observers::THREAD.into())
                    .spawn_scoped(scope, move || {
                        let schedule = observers::Boundaries {
                            run_start_ns: run_start,
                            interval_ns: plan.interval_ns,
                        };
                        let watching = observers::Watching {
                            heartbeat,
                            sampling,
                            tracer: tracing,
                        };
                        observers::watch(&placement, schedule, watching, &done)
                    })
                    .ok()
            })
            .flatten();

        let mut thread_error = None;
        for handle in handles {
            match handle.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    thread_error.get_or_insert(e);
                }
                Err(_) => {
                    thread_error.get_or_insert(anyhow!("a probe thread panicked"));
                }
            }
        }
        probes_done.store(true, Ordering::Release);
        // Cut the observer's sleep short: the run is over.
        if let Some(handle) = &watcher {
            handle.thread().unpark();
        }
        let watched = watcher.and_then(|h| h.join().ok());
        let mut collected = collector
            .join()
            .map_err(|_| anyhow!("the collector thread panicked"))?;
        let (heartbeat, readings, tracer, watcher_use) = match watched {
            Some(w) => (w.heartbeat, w.readings, w.tracer, Some(w.observer)),
            None => (None, None, None, None),
        };
        // The kernel series, on the probe's grid (or, with no series of
        // the probe's, on the run's), before the `self` series.
        let kernel_report = tracer.map(|tracer| {
            let elapsed = collected.end_ns.saturating_sub(run_start);
            let grid = kernel::grid_of(collected.series.first(), elapsed, plan.interval_ns);
            let (series, report) = tracer.finish(&grid);
            collected.series.extend(series);
            report
        });
        let observers = Observers {
            threads: [watcher_use, Some(collected.observer.clone())]
                .into_iter()
                .flatten()
                .collect(),
            shared: placement.shared.clone(),
        };
        if let (Some(sink), Some(first)) = (heartbeat, collected.series.first()) {
            let grid = first.intervals.clone();
            collected.series.push(sink.into_series(&grid));
        }
        let host_counters = readings.and_then(|readings| {
            let grid = &collected.series.first()?.intervals;
            Some(counters::align(readings, grid))
        });
        Ok(Measured {
            collected,
            run_start,
            start_time,
            start_unix_ns,
            thread_error,
            host_counters,
            observers,
            kernel_report,
        })
    })?;
    let Measured {
        collected,
        run_start,
        start_time,
        start_unix_ns,
        thread_error,
        host_counters,
        observers,
        kernel_report,
    } = outcome;

    let summary = series_summaries(&collected.series).map_err(|e| anyhow!(e))?;
    let mut run = RunFile {
        schema: RUN_SCHEMA.into(),
        tool: Tool::this(),
        probe: plan.probe.into(),
        load: plan.load,
        parameters: plan.parameters,
        start_time,
        start_unix_ns,
        start_at_unix_ns: destination.start_at_unix_ns,
        labels: destination.labels.clone(),
        duration_ns: collected.end_ns.saturating_sub(run_start),
        interval_ns: plan.interval_ns,
        interrupted: stop.is_raised() && thread_error.is_none(),
        host,
        faults: Default::default(),
        warnings: plan
            .warnings
            .into_iter()
            .chain(observers.shared)
            .chain(late_start(
                destination.start_at_unix_ns,
                start_unix_ns,
                plan.interval_ns,
            ))
            .chain(kernel_report.iter().flat_map(kernel::warnings))
            .collect(),
        series: collected.series,
        summary,
        host_counters,
        disk: None,
        broker: None,
        kernel: kernel_report,
        observers: observers.threads,
        integrity: None,
    };
    // The endpoint's thread as of its last scrape during the run.
    run.observers
        .extend(live.as_ref().and_then(|(endpoint, _)| endpoint.observer()));
    let completed = complete(&mut run);
    let bytes = crate::formats::export::runfile::to_bytes(&run)?;
    output::write_checked(&path, run_checked, &bytes)
        .with_context(|| format!("cannot save the run file {}", path.display()))?;
    // A run that ended by itself lets Prometheus take its last interval.
    if let Some((endpoint, latest)) = &live
        && !stop.is_raised()
    {
        endpoint.await_scrape_of(latest.generation(), stop);
    }
    if let Some(e) = thread_error {
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
    if let Some(e) = collected.hlog_error {
        return Err(e.context(format!(
            "the run finished but the interval log is incomplete; the run file {} is complete",
            path.display()
        )));
    }
    Ok(Finished { run, path })
}

/// A run that began later than its `--start-at` by more than 1 % of an
/// interval (preparing took longer than the time given, or the CPUs were
/// busy at that instant): its intervals are off those of the runs that
/// began on time by that much, as `merge` will also say.
fn late_start(start_at: Option<u128>, started: u128, interval_ns: u64) -> Option<Warning> {
    let late = started.saturating_sub(start_at?);
    (late * 100 > u128::from(interval_ns)).then(|| Warning {
        message: format!(
            "the run began {} after --start-at (preparing took longer, or the CPUs were busy \
             at that instant): its intervals are that far off those of runs that began on time",
            crate::units::format_ns(late as f64)
        ),
        advice: "give --start-at more time than this host needs to prepare the probe, and \
                 keep its CPUs free at that instant"
            .into(),
    })
}

/// Waits until the wall clock reads `at` (ns since the epoch), in sleeps
/// on the monotonic clock that end early for Ctrl-C; a time already past
/// returns at once (the run records how late it began).
fn wait_for_wall_clock(at: u128, stop: &StopFlag) -> Result<()> {
    const STEP_NS: u128 = 50_000_000;
    let clock = MonotonicClock;
    let now_unix = || {
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    };
    let mut left = at.saturating_sub(now_unix());
    // Progress for a person at a terminal, not for an orchestrator's log.
    if left > 1_000_000_000 && std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        eprintln!("waiting {:.1} s for --start-at", left as f64 / 1e9);
    }
    while left > 0 {
        if stop.is_raised() {
            return Err(crate::error::interrupted(
                "interrupted while waiting for --start-at: nothing was measured",
            ));
        }
        // Whole steps, then the rest in one sleep aimed at the instant.
        let nap = left.min(STEP_NS) as u64;
        clock.sleep_until(clock.now() + nap);
        left = at.saturating_sub(now_unix());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::late_start;

    #[test]
    fn a_run_that_began_late_for_its_start_at_says_by_how_much() {
        let second = 1_000_000_000;
        let at = 1_795_000_000 * u128::from(second);
        // On time, or late by up to 1 % of an interval: nothing to say.
        assert!(late_start(None, at + 5 * u128::from(second), second).is_none());
        assert!(late_start(Some(at), at + 10_000_000, second).is_none());
        assert!(late_start(Some(at), at - 1, second).is_none());
        let warning = late_start(Some(at), at + 250_000_000, second).unwrap();
        assert!(warning.message.contains("250"), "{}", warning.message);
        assert!(warning.advice.contains("--start-at"), "{}", warning.advice);
    }
}
