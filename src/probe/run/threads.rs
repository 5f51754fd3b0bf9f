//! The probe's threads: each prepares itself (pinning, priority) and says
//! it is ready; the first failure aborts the run before anything is
//! measured. Once all are ready and the start is fixed, each gets its
//! recorder and measures until its schedule ends or the stop flag rises;
//! a thread that fails or panics still saves its partial interval and
//! stops the others.

use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::{Scope, ScopedJoinHandle};

use anyhow::{Context, Result, anyhow};

use crate::record::{Clock, MonotonicClock, Recorder, StopFlag};
use crate::sys;

/// What a ready thread waits for: its recorder and the run's start, or
/// `None` when the run was called off.
type Go = Option<(Recorder, u64)>;

/// The probe's threads, prepared and waiting for the start.
pub struct Ready<'scope> {
    handles: Vec<ScopedJoinHandle<'scope, Result<()>>>,
    go: Vec<Sender<Go>>,
    /// The threads' kernel ids, in thread order (for their context
    /// switches, the kernel series' filter and the observers' placement).
    pub thread_ids: Vec<i32>,
}

/// The probe's threads, measuring.
pub struct Running<'scope> {
    handles: Vec<ScopedJoinHandle<'scope, Result<()>>>,
}

/// Starts `threads` threads named for `probe`, each running `prepare`,
/// and waits until every one is ready; the first failure (or panic) calls
/// the others off and is returned.
pub fn prepare<'scope, 'env, P, B>(
    scope: &'scope Scope<'scope, 'env>,
    probe: &str,
    threads: usize,
    stop: &'env StopFlag,
    prepare: &'env P,
    body: &'env B,
) -> Result<Ready<'scope>>
where
    P: Fn(usize) -> Result<()> + Sync,
    B: Fn(usize, u64, &mut Recorder, &StopFlag) -> Result<u64> + Sync,
{
    let (ready_tx, ready_rx) = mpsc::channel::<(usize, i32, Result<()>)>();
    // Dropped on any early return, which releases the waiting threads.
    let mut go = Vec::with_capacity(threads);
    let mut handles = Vec::with_capacity(threads);
    for thread in 0..threads {
        let (go_tx, go_rx) = mpsc::channel::<Go>();
        go.push(go_tx);
        let ready_tx = ready_tx.clone();
        let handle = std::thread::Builder::new()
            .name(format!("cauda-{probe}-{thread}"))
            .spawn_scoped(scope, move || {
                // A panic while preparing is a failure to prepare, not a
                // panic of the whole run.
                let prepared =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| prepare(thread)))
                        .unwrap_or_else(|_| {
                            Err(anyhow!("probe thread {thread} panicked while preparing"))
                        });
                let _ = ready_tx.send((thread, sys::thread_id(), prepared));
                // Not held while waiting: a thread that dies preparing
                // must not leave the others' readiness unanswered.
                drop(ready_tx);
                measure(thread, &go_rx, body, stop)
            })
            .context("cannot start a probe thread")?;
        handles.push(handle);
    }
    drop(ready_tx);
    let thread_ids = await_ready(&ready_rx, threads).inspect_err(|_| {
        for go in &go {
            let _ = go.send(None);
        }
    })?;
    Ok(Ready {
        handles,
        go,
        thread_ids,
    })
}

/// One thread's measurement, once it is told to go.
fn measure<B>(thread: usize, go: &Receiver<Go>, body: &B, stop: &StopFlag) -> Result<()>
where
    B: Fn(usize, u64, &mut Recorder, &StopFlag) -> Result<u64>,
{
    let Ok(Some((mut recorder, start))) = go.recv() else {
        return Ok(());
    };
    // A panic in the probe still saves this thread's partial interval and
    // stops the others.
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
}

/// Waits for every thread's readiness; returns their ids in thread order,
/// or the first failure.
fn await_ready(ready: &Receiver<(usize, i32, Result<()>)>, threads: usize) -> Result<Vec<i32>> {
    let mut ids = vec![0; threads];
    let mut failure = None;
    for _ in 0..threads {
        match ready.recv() {
            Ok((thread, id, Ok(()))) => ids[thread] = id,
            Ok((_, _, Err(e))) => {
                failure.get_or_insert(e);
            }
            Err(_) => {
                failure.get_or_insert(anyhow!("a probe thread died while preparing"));
            }
        }
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(ids),
    }
}

impl<'scope> Ready<'scope> {
    /// Hands each thread its recorder: the measurement starts at `run_start`.
    pub fn go(self, recorders: Vec<Recorder>, run_start: u64) -> Running<'scope> {
        for (go, recorder) in self.go.iter().zip(recorders) {
            let _ = go.send(Some((recorder, run_start)));
        }
        Running {
            handles: self.handles,
        }
    }
}

impl Running<'_> {
    /// Waits for every thread; returns the first failure.
    pub fn join(self) -> Option<anyhow::Error> {
        let mut error = None;
        for handle in self.handles {
            match handle.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    error.get_or_insert(e);
                }
                Err(_) => {
                    error.get_or_insert(anyhow!("a probe thread panicked"));
                }
            }
        }
        error
    }
}
