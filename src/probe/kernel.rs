//! `cauda kernel`: the kernel series — block layer and run queue — of the
//! whole host, or of one device, while something else runs (`-- fio
//! job.fio`) or for a while (`--runtime`). What `biolatency -D 1` and
//! `runqlat` show, with cauda's precision (3 significant digits, not
//! powers of two), per-interval histograms and a run file that `analyze`,
//! `compare`, `report` and `merge` take like any other.
//!
//! The probe thread does no measuring of its own: it starts the command
//! at the run's start and sleeps (in `ppoll`, no periodic wake-up) until
//! the command exits, the runtime ends or a signal comes; the run engine's
//! observer reads the kernel's histograms at each boundary
//! ([`crate::host::trace`]).

use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::sync::Mutex;

use anyhow::{Context, Result, anyhow};
use serde::Serialize;

use crate::error::input_error;
use crate::model::LoadMode;
use crate::model::kernel::KernelSource;
use crate::probe::run::{self, Destination, Finished, Observe, Plan};
use crate::record::{Clock, MonotonicClock, StopFlag};
use crate::sys;

/// What `cauda kernel` watches, and for how long.
#[derive(Clone, Debug, Serialize)]
pub struct KernelConfig {
    /// The groups of series.
    pub sources: Vec<KernelSource>,
    /// Only this block device's requests (its name in `/sys/class/block`).
    pub device: Option<String>,
    /// How long to watch; `None`: until the command exits.
    pub runtime_ns: Option<u64>,
    /// The command to run while watching (empty: none).
    pub command: Vec<String>,
    /// Interval length, ns.
    pub interval_length_ns: u64,
}

impl KernelConfig {
    /// Checks the configuration before anything is loaded or run.
    pub fn validate(&self) -> Result<()> {
        crate::probe::check_interval_length(self.interval_length_ns)?;
        if self.command.is_empty() && self.runtime_ns.is_none() {
            return Err(input_error(
                "cauda kernel: give --runtime, or a command to watch after -- \
                 (e.g. cauda kernel -- fio job.fio)",
            ));
        }
        if self.runtime_ns == Some(0) {
            return Err(input_error("--runtime: must be longer than 0"));
        }
        if let Some(program) = self.command.first()
            && !runnable(program)
        {
            return Err(input_error(format!(
                "cannot run '{program}': no such executable (in PATH or as a path); \
                 give the command to watch after --"
            )));
        }
        Ok(())
    }
}

/// The name `/sys/class/block` knows a device by: `vda` for `vda` or
/// `/dev/vda` (or a link to it, such as `/dev/disk/by-id/…`).
pub fn device_name(given: &str) -> Result<String> {
    let name = if given.contains('/') {
        let resolved = std::fs::canonicalize(given)
            .map_err(|e| input_error(format!("--device {given}: {e}")))?;
        resolved
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    } else {
        given.to_string()
    };
    if name.is_empty() || !std::path::Path::new(&format!("/sys/class/block/{name}")).exists() {
        return Err(input_error(format!(
            "--device {given}: not a block device of this host (see lsblk for names)"
        )));
    }
    Ok(name)
}

fn runnable(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &std::path::Path| {
        p.metadata()
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    };
    if program.contains('/') {
        return executable(std::path::Path::new(program));
    }
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| executable(&dir.join(program))))
}

/// Runs `cauda kernel`: returns the run and, when a command ran, its exit
/// code (128 + the signal when a signal ended it, as shells report it).
pub fn run(
    config: &KernelConfig,
    destination: &Destination,
    stop: &StopFlag,
) -> Result<(Finished, Option<i32>)> {
    config.validate()?;
    let plan = Plan {
        probe: "kernel",
        load: LoadMode::Unknown,
        parameters: serde_json::to_value(config)?,
        series: Vec::new(),
        threads: 1,
        interval_ns: config.interval_length_ns,
        warnings: Vec::new(),
    };
    let observe = Observe {
        block_device: config.device.clone(),
        whole_host: true,
        ..Observe::default()
    };
    let mut destination = destination.clone();
    destination.kernel = config.sources.clone();
    let code = Mutex::new(None);
    let body = |_: usize, start: u64, _: &mut crate::record::Recorder, stop: &StopFlag| {
        let deadline = config
            .runtime_ns
            .map_or(u64::MAX, |r| start.saturating_add(r));
        let status = watch(&config.command, deadline, stop)?;
        if let Ok(mut code) = code.lock() {
            *code = status;
        }
        Ok(MonotonicClock.now())
    };
    let finished = run::run_completing(
        plan,
        &observe,
        &destination,
        stop,
        |_| Ok(()),
        body,
        |_| Ok(()),
    )?;
    let code = code.into_inner().unwrap_or(None);
    Ok((finished, code))
}

/// Runs `command` (if any) until it exits, `deadline_ns` passes or `stop`
/// rises, sleeping in `ppoll` on a pipe that a signal or the command's end
/// writes to; a command still running at the end gets SIGINT (as Ctrl-C
/// would), then is waited for.
fn watch(command: &[String], deadline_ns: u64, stop: &StopFlag) -> Result<Option<i32>> {
    let pipe = || UnixStream::pair().context("cannot make a wake-up pipe");
    // One pipe the signals write to, one the command's end writes to.
    let (signal_rx, signal_tx) = pipe()?;
    let (exit_rx, exit_tx) = pipe()?;
    let mut registered = Vec::new();
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let tx = signal_tx
            .try_clone()
            .context("cannot make a wake-up pipe")?;
        registered.push(
            signal_hook::low_level::pipe::register(signal, tx)
                .context("cannot install the signal handler")?,
        );
    }
    let mut waiter = None;
    if let Some(program) = command.first() {
        let mut child = std::process::Command::new(program)
            .args(&command[1..])
            .spawn()
            .with_context(|| format!("cannot run '{program}'"))?;
        let pid = child.id();
        waiter = Some((
            pid,
            std::thread::spawn(move || {
                let status = child.wait();
                let _ = (&exit_tx).write_all(&[1]);
                status
            }),
        ));
    }
    let mut ready = Vec::new();
    let mut exited = false;
    while !exited && !stop.is_raised() && sys::monotonic_ns() < deadline_ns {
        sys::poll_readable_until(
            &[signal_rx.as_fd(), exit_rx.as_fd()],
            deadline_ns,
            &mut ready,
        )
        .context("cannot wait")?;
        if ready.first() == Some(&true) {
            let _ = (&signal_rx).read(&mut [0u8; 64]);
        }
        exited = ready.get(1) == Some(&true);
    }
    for id in registered {
        signal_hook::low_level::unregister(id);
    }
    let Some((pid, waiter)) = waiter else {
        return Ok(None);
    };
    if !exited {
        // The time is up or cauda was stopped: end the command as Ctrl-C would.
        let _ = sys::interrupt(pid);
    }
    let status = waiter
        .join()
        .map_err(|_| anyhow!("the thread waiting for the command panicked"))?
        .context("cannot wait for the command")?;
    Ok(Some(
        status
            .code()
            .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(command: &[&str], runtime_ns: Option<u64>) -> KernelConfig {
        KernelConfig {
            sources: vec![KernelSource::Block],
            device: None,
            runtime_ns,
            command: command.iter().map(|s| s.to_string()).collect(),
            interval_length_ns: 1_000_000_000,
        }
    }

    #[test]
    fn a_run_needs_a_runtime_or_a_command_that_exists() {
        assert!(config(&[], None).validate().is_err());
        assert!(config(&[], Some(1_000_000_000)).validate().is_ok());
        assert!(config(&["true"], None).validate().is_ok());
        let missing = config(&["no-such-command-here"], None).validate();
        assert!(
            missing
                .unwrap_err()
                .to_string()
                .contains("no such executable")
        );
    }

    #[test]
    fn the_command_runs_and_its_code_comes_back() {
        let stop = StopFlag::new();
        let cmd = ["sh", "-c", "exit 3"].map(String::from);
        let code = watch(&cmd, u64::MAX, &stop).unwrap();
        assert_eq!(code, Some(3));
    }

    #[test]
    fn a_command_still_running_at_the_deadline_is_interrupted() {
        let stop = StopFlag::new();
        let cmd = ["sleep", "30"].map(String::from);
        let deadline = sys::monotonic_ns() + 200_000_000;
        let code = watch(&cmd, deadline, &stop).unwrap();
        assert_eq!(code, Some(128 + libc::SIGINT));
    }
}
