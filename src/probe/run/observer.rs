//! The observer thread: cauda's own thread beside the probe's that wakes
//! once per interval boundary, and why it wakes so seldom.
//!
//! Beside the probe threads a run has two of cauda's own: the collector,
//! woken when a probe thread hands over an interval, and the observer
//! ([`watch`]), which wakes once at each interval boundary to sample the
//! host counters and to record how late it woke — the `self` heartbeat,
//! which tells a stall of the host or of cauda from a stall of the target.
//!
//! Why once per interval and not jHiccup's 1 ms: every wake-up is part of
//! what the probe measures. On this project's VM a 1 kHz control thread
//! took a same-CPU TCP round trip's p99 from 12.5 µs to 30 µs, and even a
//! timer that only wakes its CPU now and then makes the *next* wake-ups of
//! that CPU faster (the hypervisor keeps polling for a vCPU that wakes
//! often): a 4k QD1 read's p50 fell 1 % beside a process sleeping 1 s,
//! 4 % at 300 ms, 6 % at 100 ms, 8 % at 30 ms (`bench/observer_effect.sh`
//! and bench/journal/2026-11.md §12). A stall of the host or of the process is seen by
//! the heartbeat when it covers a boundary: always when it is longer than
//! an interval, otherwise with a chance of its length over the interval.
//! Shorter intervals (`--interval-length`) watch more closely, at the cost
//! of more wake-ups; `cauda hiccup` is the 1 ms watch on its own.
//!
//! Where it runs, beside the probe's threads, is [`super::placement`]'s.

use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{Scope, ScopedJoinHandle};
use std::time::Duration;

use super::heartbeat::IntervalSink;
use super::placement::{Placement, leave};
use crate::host::counters::{Reading, Sampler};
use crate::host::trace::Tracer;
use crate::model::Observer;
use crate::record::{Clock, Sink};
use crate::sys;

/// The observer thread's name.
pub const THREAD: &str = "cauda-observer";

/// The interval boundaries of a run, where the observer wakes.
#[derive(Clone, Copy, Debug)]
pub struct Boundaries {
    /// The run's start, monotonic ns.
    pub run_start_ns: u64,
    /// The interval length, ns.
    pub interval_ns: u64,
}

/// What the observer thread is to do at each boundary.
pub struct Watching {
    /// Record how late it woke (the `self` series).
    pub self_heartbeat: bool,
    /// Sample the host counters: the sampler and its baseline reading.
    pub sampling: Option<(Sampler, Reading)>,
    /// Read the kernel series' finished intervals, and stop them when the
    /// probes are done.
    pub tracer: Option<Tracer>,
}

/// What the observer thread saw.
#[derive(Debug)]
pub struct Watched {
    /// How late it woke at each boundary (the `self` series), when asked.
    pub heartbeat: Option<IntervalSink>,
    /// Host counter readings `[baseline, boundary 1, …, final]`, when asked.
    pub readings: Option<Vec<Reading>>,
    /// The kernel series, stopped, with what is left to read.
    pub tracer: Option<Tracer>,
    /// Where it ran, what it used and how often it woke.
    pub observer: Observer,
}

impl Watching {
    /// Whether there is anything to do at the boundaries.
    fn is_idle(&self) -> bool {
        !self.self_heartbeat && self.sampling.is_none() && self.tracer.is_none()
    }
}

/// Starts the observer thread (when it has something to watch) until
/// `done` is set. Off the probes' threads: a failure to start it only
/// loses what it would have observed.
pub fn spawn<'scope>(
    scope: &'scope Scope<'scope, '_>,
    placement: &Placement,
    boundaries: Boundaries,
    watching: Watching,
    done: &'scope AtomicBool,
) -> Option<ScopedJoinHandle<'scope, Watched>> {
    if watching.is_idle() {
        return None;
    }
    let placement = placement.clone();
    std::thread::Builder::new()
        .name(THREAD.into())
        .spawn_scoped(scope, move || {
            let done = || done.load(Ordering::Acquire);
            watch(&placement, boundaries, watching, &done)
        })
        .ok()
}

/// Ends the observer's watch once the probes are done (`done` is set):
/// cuts its sleep short and takes what it saw.
pub fn finish(watcher: Option<ScopedJoinHandle<'_, Watched>>) -> Option<Watched> {
    let watcher = watcher?;
    watcher.thread().unpark();
    watcher.join().ok()
}

/// The observer thread: sleeps to each interval boundary until the probes
/// are done (`done`, with an unpark), and there records how late it woke
/// (`heartbeat`), samples the host counters (`sampling`: the sampler and
/// its baseline reading) and reads the kernel series' finished intervals
/// (`tracer`); at the end it stops the kernel series and samples once more.
///
/// The sampling and reading run under SCHED_IDLE where the thread may come
/// back from it, so they never delay a probe thread that wakes meanwhile.
///
/// A boundary missed by more than an interval (the process was frozen)
/// is recorded at each boundary it missed, late by as much as it was —
/// the backlog a wake-up every interval would have had, as jHiccup fills
/// in its expected intervals.
pub fn watch(
    placement: &Placement,
    boundaries: Boundaries,
    watching: Watching,
    done: &dyn Fn() -> bool,
) -> Watched {
    let Watching {
        self_heartbeat: heartbeat,
        sampling,
        mut tracer,
    } = watching;
    placement.enter();
    // Host noise, not the default 50 µs of timer slack.
    let _ = sys::set_timer_slack_ns(1);
    let clock = ObserverClock { done };
    let mut may_yield = sys::may_leave_idle_policy();
    let Boundaries {
        run_start_ns,
        interval_ns,
    } = boundaries;
    let mut sink = heartbeat.then(|| IntervalSink::new(run_start_ns, interval_ns));
    let (mut sampler, mut readings) = sampling
        .map(|(sampler, baseline)| (sampler, vec![baseline]))
        .unzip();
    for k in 1.. {
        let boundary = run_start_ns + k * interval_ns;
        if !clock.sleep_until(boundary) {
            break;
        }
        let now = clock.now();
        if let Some(sink) = sink.as_mut() {
            sink.record(now, 0, now.saturating_sub(boundary));
        }
        let sampling = sampler.is_some() && readings.is_some();
        if sampling || tracer.is_some() {
            // The sample (a few hundred µs of /proc reads) and the kernel
            // series' read give way to any probe thread that wants this
            // CPU; the next wake-up, whose lateness is the heartbeat, is
            // under the normal policy again.
            let yielding = may_yield && sys::set_idle_policy(true).is_ok();
            if let (Some(sampler), Some(readings)) = (sampler.as_mut(), readings.as_mut()) {
                readings.push(sampler.sample());
            }
            if let Some(tracer) = tracer.as_mut() {
                tracer.boundary(now);
            }
            if yielding && sys::set_idle_policy(false).is_err() {
                may_yield = false;
            }
        }
    }
    // The probes are done: the kernel's events from now on are not the run's.
    if let Some(tracer) = tracer.as_mut() {
        tracer.stop(clock.now());
    }
    if let (Some(sampler), Some(readings)) = (sampler.as_mut(), readings.as_mut()) {
        readings.push(sampler.sample());
    }
    Watched {
        heartbeat: sink,
        readings,
        tracer,
        observer: leave(THREAD),
    }
}

/// The monotonic clock observer threads sleep on: a sleep ends at its
/// deadline, or early (returning `false`) once `done` says the probes have
/// finished and the engine has unparked the thread.
pub struct ObserverClock<'a> {
    /// Whether the probes have finished.
    pub done: &'a dyn Fn() -> bool,
}

impl Clock for ObserverClock<'_> {
    fn now(&self) -> u64 {
        sys::monotonic_ns()
    }

    fn sleep_until(&self, deadline_ns: u64) -> bool {
        loop {
            if (self.done)() {
                return false;
            }
            let now = sys::monotonic_ns();
            if now >= deadline_ns {
                return true;
            }
            // A futex wait on CLOCK_MONOTONIC (absolute), as precise as
            // clock_nanosleep; an unpark or a spurious return loops.
            std::thread::park_timeout(Duration::from_nanos(deadline_ns - now));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs [`watch`] with a heartbeat until `after` has passed, then stops
    /// it as the engine does; returns what it saw and how long it ran.
    fn watch_for(interval_ns: u64, after: std::time::Duration) -> (Watched, u64) {
        use std::sync::atomic::{AtomicBool, Ordering};
        let done = AtomicBool::new(false);
        let start = sys::monotonic_ns();
        std::thread::scope(|scope| {
            let watcher = scope.spawn(|| {
                let boundaries = Boundaries {
                    run_start_ns: start,
                    interval_ns,
                };
                let done = || done.load(Ordering::Acquire);
                let watching = Watching {
                    self_heartbeat: true,
                    sampling: None,
                    tracer: None,
                };
                watch(&Placement::default(), boundaries, watching, &done)
            });
            std::thread::sleep(after);
            done.store(true, Ordering::Release);
            watcher.thread().unpark();
            let watched = watcher.join().unwrap();
            (watched, sys::monotonic_ns() - start)
        })
    }

    /// How many beats the heartbeat recorded over `elapsed` ns.
    fn beats(sink: IntervalSink, interval_ns: u64, elapsed: u64) -> u64 {
        let grid: Vec<_> = (0..=elapsed / interval_ns)
            .map(|k| crate::model::IntervalRecord::empty(k * interval_ns, interval_ns))
            .collect();
        let series = sink.into_series(&grid);
        series.intervals.iter().map(|i| i.count).sum()
    }

    #[test]
    fn the_heartbeat_beats_once_per_boundary_crossed() {
        let interval = 5_000_000;
        let (watched, elapsed) = watch_for(interval, std::time::Duration::from_millis(40));
        let beats = beats(watched.heartbeat.expect("a heartbeat"), interval, elapsed);
        assert!(
            (1..=elapsed / interval).contains(&beats),
            "{beats} beats in {elapsed} ns of {interval} ns intervals"
        );
        assert_eq!(watched.observer.thread, THREAD);
        assert!(watched.observer.wakeups >= 1);
    }

    #[test]
    fn a_long_sleep_ends_when_the_probes_are_done() {
        // A one-hour interval: the unpark, not the boundary, ends the watch.
        let (watched, elapsed) = watch_for(3_600_000_000_000, std::time::Duration::from_millis(10));
        assert!(elapsed < 60_000_000_000, "{elapsed} ns");
        let hour = 3_600_000_000_000;
        assert_eq!(beats(watched.heartbeat.unwrap(), hour, elapsed), 0);
    }
}
