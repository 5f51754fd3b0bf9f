//! A planted CPU hog the probe's thread cannot preempt: a Python loop under
//! SCHED_FIFO, pinned to one CPU, busy for a part of every period. A hog at
//! the probe's own priority does not do (the waking thread preempts it, so
//! wake-ups even get faster: ../shared/notes/blame-and-capacity.md).

use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running hog, killed when dropped; it also stops itself after its
/// lifetime, should the test process be killed first.
pub struct Hog(Child);

impl Hog {
    /// The hog's process id (taskset execs chrt, which execs python3).
    pub fn pid(&self) -> u32 {
        self.0.id()
    }

    /// Busy `busy_ms` in every `period_ms` on `cpu` under SCHED_FIFO 10,
    /// for at most `lifetime_s` seconds. `None` (with a message) when
    /// `chrt`, `taskset` or `python3` is missing or real-time scheduling
    /// is refused.
    pub fn fifo_duty(cpu: usize, busy_ms: u64, period_ms: u64, lifetime_s: u64) -> Option<Hog> {
        Hog::fifo_duty_named(cpu, busy_ms, period_ms, lifetime_s, None)
    }

    /// The same hog, naming itself `comm` (prctl PR_SET_NAME: any bytes
    /// but NUL, as any process may) instead of `python3`.
    pub fn fifo_duty_named(
        cpu: usize,
        busy_ms: u64,
        period_ms: u64,
        lifetime_s: u64,
        comm: Option<&str>,
    ) -> Option<Hog> {
        let name = comm.map_or(String::new(), |c| {
            let hex: String = c.bytes().map(|b| format!("{b:02x}")).collect();
            format!("import ctypes; ctypes.CDLL(None).prctl(15, bytes.fromhex('{hex}'), 0, 0, 0)\n")
        });
        let script = format!(
            "{name}import time\n\
             end = time.monotonic() + {lifetime_s}\n\
             while time.monotonic() < end:\n\
             \x20   busy = time.monotonic() + {busy}\n\
             \x20   while time.monotonic() < busy: pass\n\
             \x20   time.sleep({idle})\n",
            busy = busy_ms as f64 / 1000.0,
            idle = period_ms.saturating_sub(busy_ms) as f64 / 1000.0,
        );
        let child = Command::new("taskset")
            .args([
                "-c",
                &cpu.to_string(),
                "chrt",
                "-f",
                "10",
                "python3",
                "-c",
                &script,
            ])
            .stdin(Stdio::null())
            .spawn();
        let mut child = match child {
            Ok(child) => child,
            Err(e) => {
                eprintln!("skipped: cannot start a SCHED_FIFO hog ({e})");
                return None;
            }
        };
        // Let it start spinning, and see that chrt was allowed.
        std::thread::sleep(Duration::from_millis(300));
        if let Ok(Some(status)) = child.try_wait() {
            eprintln!("skipped: the SCHED_FIFO hog ended at once ({status})");
            return None;
        }
        Some(Hog(child))
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
