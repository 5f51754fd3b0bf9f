//! Probes: one module per kind of latency, all run by the same engine
//! ([`run`]: threads, start barrier, recorders, collector, observers, the
//! live view and the one write of the run file).

pub mod broker;
pub mod connect;
pub mod disk;
pub mod hiccup;
pub mod kernel;
pub mod net;
pub mod run;
pub mod timer;

use crate::error::input_error;

/// Checks `--interval-length` (at least 1 ms: shorter intervals cost more
/// to store than they tell).
pub fn check_interval_length(ns: u64) -> anyhow::Result<()> {
    if ns < 1_000_000 {
        return Err(input_error("--interval-length: must be at least 1ms"));
    }
    Ok(())
}

/// Checks that every CPU of `--cpus` is one this process may run on.
pub fn check_cpus(cpus: &[usize]) -> anyhow::Result<()> {
    let allowed = crate::sys::allowed_cpus();
    if let Some(cpu) = cpus.iter().find(|c| !allowed.contains(c)) {
        return Err(input_error(format!(
            "--cpus: CPU {cpu} is not available to this process (allowed: {allowed:?})"
        )));
    }
    Ok(())
}
