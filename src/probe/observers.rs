//! Where cauda's own threads run beside the probe's, how often they wake,
//! and what they cost.
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
//! and bench/RESULTS.md). A stall of the host or of the process is seen by
//! the heartbeat when it covers a boundary: always when it is longer than
//! an interval, otherwise with a chance of its length over the interval.
//! Shorter intervals (`--interval-length`) watch more closely, at the cost
//! of more wake-ups; `cauda hiccup` is the 1 ms watch on its own.
//!
//! When the probe's threads leave some of the allowed CPUs free
//! (they were pinned, with `--cpus` or by the scheduler's affinity), the
//! observers are pinned to those; when the probe has every allowed CPU to
//! itself — one probe thread per CPU, or a process given one CPU — they
//! share, and the run file says so with advice. Each observer reports its
//! CPU set and CPU time into the run file ([`Observer`]).

use std::time::Duration;

use crate::host::counters::{Reading, Sampler};
use crate::host::trace::Tracer;
use crate::model::{Observer, Warning};
use crate::probe::hiccup::IntervalSink;
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
    pub heartbeat: bool,
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
        heartbeat,
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
/// finished and the session has unparked the thread.
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

/// Where the observers go.
#[derive(Clone, Debug, Default)]
pub struct Placement {
    /// The CPUs to pin them to; empty: wherever the process may run.
    cpus: Vec<usize>,
    /// What they share with the probe, when they cannot keep apart.
    pub shared: Option<Warning>,
}

impl Placement {
    /// The placement for a probe whose threads are `probe_tids`, in a
    /// process that may run on `allowed`.
    pub fn beside(allowed: &[usize], probe_tids: &[i32]) -> Placement {
        let probe_sets: Vec<Vec<usize>> = probe_tids.iter().map(|&t| sys::cpus_of(t)).collect();
        Placement::from_sets(allowed, &probe_sets)
    }

    /// [`Placement::beside`] from the probe threads' CPU sets.
    fn from_sets(allowed: &[usize], probe_sets: &[Vec<usize>]) -> Placement {
        let used: Vec<usize> = allowed
            .iter()
            .copied()
            .filter(|cpu| probe_sets.iter().any(|set| set.contains(cpu)))
            .collect();
        let free: Vec<usize> = allowed
            .iter()
            .copied()
            .filter(|c| !used.contains(c))
            .collect();
        if !free.is_empty() {
            return Placement {
                cpus: free,
                shared: None,
            };
        }
        // Every allowed CPU is the probe's. Only when each is taken by a
        // probe thread of its own (or there is one CPU) do the observers'
        // wake-ups land on a busy probe CPU rather than an idle one.
        let crowded = used.len() <= probe_sets.len();
        Placement {
            cpus: Vec::new(),
            shared: crowded.then(|| Warning {
                message: format!(
                    "cauda's own threads (the observer and the collector) shared CPU{} {} with \
                     the probe's {} thread(s): each of their wake-ups (about one per interval \
                     each, counted under 'observers') can delay one of the probe's operations",
                    if used.len() == 1 { "" } else { "s" },
                    cpu_list(&used),
                    probe_sets.len()
                ),
                advice: "allow the process one CPU more than the probe uses (taskset -c, or \
                         --cpus to a subset of the allowed CPUs): cauda then keeps its own \
                         threads there"
                    .into(),
            }),
        }
    }

    /// Run first on an observer thread: keeps it on the placement's CPUs.
    pub fn enter(&self) {
        if !self.cpus.is_empty() {
            let _ = sys::pin_current_thread_to(&self.cpus);
        }
    }
}

/// What the calling thread, named `thread`, has used so far: where it may
/// run, its CPU time and wake-ups (an observer thread calls it last).
pub fn leave(thread: &str) -> Observer {
    Observer {
        thread: thread.into(),
        cpus: sys::allowed_cpus(),
        cpu_ns: sys::thread_cpu_ns(),
        wakeups: sys::thread_voluntary_switches(),
    }
}

fn cpu_list(cpus: &[usize]) -> String {
    cpus.iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observers_take_the_cpus_the_probe_leaves_free() {
        let p = Placement::from_sets(&[0, 1, 2, 3], &[vec![1], vec![2]]);
        assert_eq!(p.cpus, vec![0, 3]);
        assert!(p.shared.is_none());
    }

    #[test]
    fn an_unpinned_probe_shares_without_a_warning() {
        // One floating probe thread on two CPUs: the scheduler finds the
        // idle one for a waking observer.
        let p = Placement::from_sets(&[0, 1], &[vec![0, 1]]);
        assert!(p.cpus.is_empty());
        assert!(p.shared.is_none());
    }

    /// Runs [`watch`] with a heartbeat until `after` has passed, then stops
    /// it as the session does; returns what it saw and how long it ran.
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
                    heartbeat: true,
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

    #[test]
    fn a_probe_with_every_cpu_to_itself_is_told_what_was_shared() {
        for (allowed, sets) in [
            (vec![1], vec![vec![1]]),
            (vec![0, 1], vec![vec![0], vec![1]]),
            (vec![0, 1], vec![vec![0, 1], vec![0, 1], vec![0, 1]]),
        ] {
            let p = Placement::from_sets(&allowed, &sets);
            assert!(p.cpus.is_empty());
            let warning = p.shared.expect("a warning");
            assert!(
                warning.message.contains(&cpu_list(&allowed)),
                "{}",
                warning.message
            );
            assert!(warning.advice.contains("taskset"));
        }
    }
}
