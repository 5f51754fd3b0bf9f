//! Stopping a run: Ctrl-C or SIGTERM set a flag the probe loops poll (one
//! relaxed load per operation); a second Ctrl-C exits at once with 130
//! (killing a child command cauda waits for, [`crate::sys::kill_on_insist`]).
//!
//! Every wait that is not a probe's measured loop sleeps on the flag's
//! wake-up descriptor ([`StopFlag::sleep_until`], [`StopFlag::wake_fd`]):
//! raising the flag (a signal, or [`StopFlag::raise`]) writes a byte that
//! is never read, so the descriptor stays readable and every waiter, now
//! or later, wakes at once — no wait has to poll the flag on a timer.

use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use anyhow::Context;
use signal_hook::consts::{SIGINT, SIGTERM};

/// A shared flag that says "stop now". The flag is one pointer away, so a
/// probe's loop pays one load per operation; the wake-up pair beside it is
/// for waits only.
#[derive(Clone, Debug)]
pub struct StopFlag {
    raised: Arc<AtomicBool>,
    /// When the flag rose, monotonic ns, as its raiser or (for a signal,
    /// whose handler only sets the flag) the first to see it up took it;
    /// 0 before.
    raised_at: Arc<AtomicU64>,
    /// Readable once the flag is up (read end, write end); `None` when the
    /// process is out of descriptors (waits then look every 10 ms).
    wake: Arc<Option<(UnixStream, UnixStream)>>,
}

impl Default for StopFlag {
    fn default() -> Self {
        let wake = UnixStream::pair()
            .ok()
            .filter(|(_, tx)| tx.set_nonblocking(true).is_ok());
        StopFlag {
            raised: Arc::new(AtomicBool::new(false)),
            raised_at: Arc::new(AtomicU64::new(0)),
            wake: Arc::new(wake),
        }
    }
}

impl StopFlag {
    /// A flag nobody has raised.
    pub fn new() -> Self {
        StopFlag::default()
    }

    /// A flag raised by SIGINT or SIGTERM. A second signal while the flag is
    /// up terminates the process with 130 (the user insisted), after
    /// killing the child command cauda waits for, if any.
    pub fn on_signals() -> anyhow::Result<Self> {
        let flag = StopFlag::new();
        let raised = &flag.raised;
        for signal in [SIGINT, SIGTERM] {
            // In this order: the handler runs its actions as registered.
            crate::sys::register_insist_kill(signal, raised.clone())
                .context("cannot install the signal handler")?;
            signal_hook::flag::register_conditional_shutdown(signal, 130, raised.clone())
                .context("cannot install the signal handler")?;
            signal_hook::flag::register(signal, raised.clone())
                .context("cannot install the signal handler")?;
            if let Some((_, tx)) = &*flag.wake {
                let tx = tx
                    .try_clone()
                    .context("cannot install the signal handler")?;
                signal_hook::low_level::pipe::register(signal, tx)
                    .context("cannot install the signal handler")?;
            }
        }
        Ok(flag)
    }

    /// Raises the flag, waking every wait on it.
    pub fn raise(&self) {
        self.note_time();
        self.raised.store(true, Ordering::SeqCst);
        if let Some((_, tx)) = &*self.wake {
            // Full (raised many times already) is as good as written.
            let _ = (&*tx).write(&[1]);
        }
    }

    /// True once raised.
    #[inline]
    pub fn is_raised(&self) -> bool {
        let raised = self.raised.load(Ordering::Relaxed);
        if raised {
            self.note_time();
        }
        raised
    }

    /// When the flag rose (monotonic ns): the end of an interrupted run's
    /// schedule, what was due after it never offered. `None` while down.
    pub fn raised_at(&self) -> Option<u64> {
        self.is_raised()
            .then(|| self.raised_at.load(Ordering::SeqCst))
    }

    /// Takes the time the flag rose, unless taken already.
    #[cold]
    fn note_time(&self) {
        if self.raised_at.load(Ordering::Relaxed) == 0 {
            let now = crate::sys::monotonic_ns();
            let _ = self
                .raised_at
                .compare_exchange(0, now, Ordering::SeqCst, Ordering::SeqCst);
        }
    }

    /// A descriptor that turns readable when the flag rises (and stays
    /// so), for a wait on several descriptors at once.
    pub fn wake_fd(&self) -> Option<BorrowedFd<'_>> {
        self.wake.as_ref().as_ref().map(|(rx, _)| rx.as_fd())
    }

    /// Sleeps until `deadline_ns` (monotonic) or until the flag rises,
    /// whichever comes first; true when the flag is up.
    pub fn sleep_until(&self, deadline_ns: u64) -> bool {
        let mut ready = Vec::new();
        loop {
            if self.is_raised() {
                return true;
            }
            let now = crate::sys::monotonic_ns();
            if now >= deadline_ns {
                return false;
            }
            let polled = self
                .wake_fd()
                .map(|fd| crate::sys::poll_readable_until(&[fd], deadline_ns, &mut ready));
            if !matches!(polled, Some(Ok(_))) {
                crate::sys::sleep_until_ns(deadline_ns.min(now + 10_000_000));
            }
        }
    }

    /// [`StopFlag::sleep_until`] for `ns` from now.
    pub fn sleep_for(&self, ns: u64) -> bool {
        self.sleep_until(crate::sys::monotonic_ns().saturating_add(ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_keeps_when_it_rose_however_it_was_raised() {
        let stop = StopFlag::new();
        assert_eq!(stop.raised_at(), None);
        let before = crate::sys::monotonic_ns();
        stop.raise();
        let at = stop.raised_at().unwrap();
        assert!(at >= before && at <= crate::sys::monotonic_ns());
        stop.raise();
        assert_eq!(stop.raised_at(), Some(at), "the first time is kept");
        // A signal handler only sets the flag: the first to see it up
        // takes the time.
        let signalled = StopFlag::new();
        signalled.raised.store(true, Ordering::SeqCst);
        let before = crate::sys::monotonic_ns();
        assert!(signalled.is_raised());
        assert!(signalled.raised_at().unwrap() >= before);
    }

    #[test]
    fn raising_the_flag_wakes_a_sleeper_at_once_and_every_later_one() {
        let stop = StopFlag::new();
        assert!(!stop.sleep_for(1_000_000), "nobody raised it");
        let raiser = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(50));
                stop.raise();
            })
        };
        let began = std::time::Instant::now();
        assert!(stop.sleep_for(60_000_000_000));
        assert!(began.elapsed() < std::time::Duration::from_secs(10));
        raiser.join().unwrap();
        // Still readable: a second waiter does not sleep either.
        assert!(stop.sleep_for(60_000_000_000));
        let mut ready = Vec::new();
        let fd = stop.wake_fd().unwrap();
        assert_eq!(
            crate::sys::poll_readable_until(&[fd], 0, &mut ready).unwrap(),
            1
        );
    }
}
