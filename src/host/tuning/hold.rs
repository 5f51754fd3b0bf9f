//! `cauda host hold-latency`: keep CPUs out of slow idle states while one
//! command runs, without a reboot.
//!
//! It is the PM QoS interface the kernel documents for this
//! (`Documentation/power/pm_qos_interface.rst`): while `/dev/cpu_dma_latency`
//! is held open with a limit written to it, the cpuidle governor picks no
//! idle state whose exit latency exceeds the limit. Closing the file — when
//! the command ends, or when cauda dies in any way — releases it.

use std::os::unix::process::ExitStatusExt;

use anyhow::{Context, Result};

use crate::error::input_error;
use crate::sys;

/// Runs the command with the limit held; returns the command's exit code
/// (128 + the signal number when a signal ended it, as shells report it).
pub fn run(max_latency_ns: u64, command: &[String]) -> Result<i32> {
    let limit_us = i32::try_from(max_latency_ns / 1_000).unwrap_or(i32::MAX);
    let held = sys::hold_cpu_dma_latency(limit_us).map_err(|e| match e.kind() {
        std::io::ErrorKind::PermissionDenied => input_error(format!(
            "cannot open /dev/cpu_dma_latency ({e}): holding a PM QoS limit needs root; run \
             with sudo"
        )),
        _ => anyhow::Error::new(e).context(
            "cannot hold /dev/cpu_dma_latency (a kernel without CONFIG_CPU_IDLE PM QoS, or a \
             container without the device)",
        ),
    })?;
    // Ctrl-C reaches the command (same process group); cauda stays to
    // report its exit code, then releases the limit.
    let interrupted = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGQUIT] {
        signal_hook::flag::register(signal, interrupted.clone())
            .context("cannot install signal handlers")?;
    }
    // SIGTERM and SIGHUP are sent to cauda alone (a service manager, kill):
    // they are passed on to the command, and cauda waits for it, so the
    // command never runs on without the hold.
    let mut forwarded = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ])
    .context("cannot install signal handlers")?;
    eprintln!(
        "cauda: holding /dev/cpu_dma_latency at {limit_us} µs while {} runs",
        command[0]
    );
    let mut child = std::process::Command::new(&command[0])
        .args(&command[1..])
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied => input_error(
                format!("cannot run '{}': {e}; give a command after --", command[0]),
            ),
            _ => anyhow::Error::new(e).context(format!("cannot run '{}'", command[0])),
        })?;
    let pid = child.id();
    let handle = forwarded.handle();
    let forwarder = std::thread::spawn(move || {
        for signal in forwarded.forever() {
            let _ = sys::send_signal(pid, signal);
        }
    });
    let status = child.wait();
    handle.close();
    let _ = forwarder.join();
    let status = status.with_context(|| format!("cannot wait for '{}'", command[0]))?;
    drop(held);
    eprintln!("cauda: released /dev/cpu_dma_latency");
    Ok(status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)))
}
