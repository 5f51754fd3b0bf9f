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

use std::io::Write;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
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

/// How long a command still running when the watch ends (at `--runtime`,
/// or at the user's Ctrl-C or SIGTERM) has, after cauda's SIGTERM, before
/// cauda sends SIGKILL.
pub const GRACE_NS: u64 = 5_000_000_000;

/// How the watched command ended, as cauda's exit code says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// It exited by itself, with this code (128 + N for signal N, as a
    /// shell reports it).
    Itself(i32),
    /// cauda stopped it with SIGTERM and it exited within the grace.
    Stopped,
    /// It ignored SIGTERM for the whole grace and was killed (SIGKILL).
    Killed,
}

impl Ended {
    /// cauda's exit code for it: the command's own code; 0 when cauda
    /// stopped it as asked; 137 (128 + SIGKILL) when it had to be killed.
    pub fn exit_code(self) -> i32 {
        match self {
            Ended::Itself(code) => code,
            Ended::Stopped => 0,
            Ended::Killed => 128 + libc::SIGKILL,
        }
    }
}

/// Runs `cauda kernel`: returns the run and, when a command ran, how it
/// ended. The run file is written as soon as the watch ends; a command
/// still running then is stopped afterwards ([`GRACE_NS`]).
pub fn run(
    config: &KernelConfig,
    destination: &Destination,
    stop: &StopFlag,
) -> Result<(Finished, Option<Ended>)> {
    config.validate()?;
    let plan = Plan {
        probe: "kernel",
        load: LoadMode::Unknown,
        parameters: serde_json::to_value(config)?,
        series: Vec::new(),
        threads: 1,
        interval_ns: config.interval_length_ns,
        warnings: Vec::new(),
        offered: None,
    };
    let observe = Observe {
        block_device: config.device.clone(),
        whole_host: true,
        ..Observe::default()
    };
    let mut destination = destination.clone();
    destination.kernel = config.sources.clone();
    // The command, started at the run's start; and whether it exited by
    // itself during the watch.
    let watched: Mutex<Option<(Child, bool)>> = Mutex::new(None);
    let body = |_: usize, start: u64, _: &mut crate::record::Recorder, stop: &StopFlag| {
        let deadline = config
            .runtime_ns
            .map_or(u64::MAX, |r| start.saturating_add(r));
        let child = Child::start(&config.command)?;
        let exited = watch(child.as_ref(), deadline, stop);
        let stopped_at = MonotonicClock.now();
        if let Some(child) = child
            && let Ok(mut watched) = watched.lock()
        {
            *watched = Some((child, exited));
        }
        Ok(stopped_at)
    };
    let finished = run::run_completing(
        plan,
        &observe,
        &destination,
        stop,
        |_| Ok(()),
        body,
        |_| Ok(()),
    );
    // The run file is safe (or the run failed): now the command's end.
    let ended = match watched.into_inner().unwrap_or(None) {
        Some((child, exited)) => Some(child.end(exited, GRACE_NS)?),
        None => None,
    };
    Ok((finished?, ended))
}

/// A command cauda runs while it watches, and the thread that reaps it.
struct Child {
    pid: u32,
    waiter: std::thread::JoinHandle<std::io::Result<std::process::ExitStatus>>,
    /// Readable once the command exited.
    exited: UnixStream,
}

impl Child {
    /// Starts `command` (none when empty) in a process group of its own,
    /// so that cauda's SIGTERM and SIGKILL reach whatever it started (a
    /// shell's children too), and a Ctrl-C at the terminal reaches cauda
    /// alone, which saves the run first. The command keeps cauda's stdin,
    /// stdout and stderr, but it is not the terminal's foreground: give
    /// it its input by redirection.
    fn start(command: &[String]) -> Result<Option<Child>> {
        let Some(program) = command.first() else {
            return Ok(None);
        };
        let (exited, exit_tx) = UnixStream::pair().context("cannot make a wake-up pipe")?;
        let mut child = std::process::Command::new(program)
            .args(&command[1..])
            .process_group(0)
            .spawn()
            .with_context(|| format!("cannot run '{program}'"))?;
        let pid = child.id();
        // A second Ctrl-C (cauda exits at once) takes the command along.
        sys::kill_on_insist(Some(sys::child_target(pid)));
        let waiter = std::thread::spawn(move || {
            let status = child.wait();
            let _ = (&exit_tx).write_all(&[1]);
            status
        });
        Ok(Some(Child {
            pid,
            waiter,
            exited,
        }))
    }

    /// Waits up to `until_ns` (monotonic) for the command to exit.
    fn exits_by(&self, until_ns: u64) -> bool {
        let mut ready = Vec::new();
        while sys::monotonic_ns() < until_ns {
            match sys::poll_readable_until(&[self.exited.as_fd()], until_ns, &mut ready) {
                Ok(n) if n > 0 => return true,
                Ok(_) => {}
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
            }
        }
        self.waiter.is_finished()
    }

    /// Ends the command: one that `exited` by itself is reaped; one still
    /// running gets SIGTERM (its process group), and SIGKILL after
    /// `grace_ns`.
    fn end(self, exited: bool, grace_ns: u64) -> Result<Ended> {
        let target = sys::child_target(self.pid);
        let mut ended = None;
        if !exited && !self.exits_by(sys::monotonic_ns()) {
            let _ = sys::signal_target(target, libc::SIGTERM);
            ended = Some(Ended::Stopped);
            if !self.exits_by(sys::monotonic_ns().saturating_add(grace_ns)) {
                eprintln!(
                    "the command ignored SIGTERM for {}: killed (SIGKILL)",
                    crate::units::format_duration_compact(grace_ns)
                );
                let _ = sys::signal_target(target, libc::SIGKILL);
                ended = Some(Ended::Killed);
            }
        }
        let status = self
            .waiter
            .join()
            .map_err(|_| anyhow!("the thread waiting for the command panicked"))?
            .context("cannot wait for the command")?;
        sys::kill_on_insist(None);
        Ok(ended.unwrap_or_else(|| {
            Ended::Itself(
                status
                    .code()
                    .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)),
            )
        }))
    }
}

/// Sleeps (in `ppoll`, no periodic wake-up) until the command (if any)
/// exits, `deadline_ns` passes or `stop` rises; true when the command
/// exited.
fn watch(child: Option<&Child>, deadline_ns: u64, stop: &StopFlag) -> bool {
    let mut fds = Vec::new();
    fds.extend(child.map(|c| c.exited.as_fd()));
    let no_wake_fd = stop.wake_fd().is_none();
    fds.extend(stop.wake_fd());
    let mut ready = Vec::new();
    while !stop.is_raised() && sys::monotonic_ns() < deadline_ns {
        // Without the flag's descriptor, look at the flag every 10 ms.
        let until = if no_wake_fd {
            deadline_ns.min(sys::monotonic_ns().saturating_add(10_000_000))
        } else {
            deadline_ns
        };
        match sys::poll_readable_until(&fds, until, &mut ready) {
            Ok(_) if child.is_some() && ready.first() == Some(&true) => return true,
            Ok(_) => {}
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
        }
    }
    child.is_some_and(|c| c.waiter.is_finished())
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
        let child = Child::start(&cmd).unwrap().unwrap();
        assert!(watch(Some(&child), u64::MAX, &stop));
        assert_eq!(child.end(true, GRACE_NS).unwrap(), Ended::Itself(3));
    }

    #[test]
    fn a_command_still_running_at_the_deadline_is_stopped_with_sigterm() {
        let stop = StopFlag::new();
        let cmd = ["sleep", "30"].map(String::from);
        let child = Child::start(&cmd).unwrap().unwrap();
        let deadline = sys::monotonic_ns() + 200_000_000;
        assert!(!watch(Some(&child), deadline, &stop));
        assert_eq!(child.end(false, GRACE_NS).unwrap(), Ended::Stopped);
        assert_eq!(Ended::Stopped.exit_code(), 0);
    }

    #[test]
    fn a_command_that_ignores_sigterm_is_killed_after_the_grace() {
        let stop = StopFlag::new();
        // Ignores SIGINT and SIGTERM; exec keeps one process to kill.
        let cmd = ["sh", "-c", "trap '' INT TERM; exec sleep 30"].map(String::from);
        let child = Child::start(&cmd).unwrap().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
        stop.raise();
        let began = std::time::Instant::now();
        assert!(
            !watch(Some(&child), u64::MAX, &stop),
            "the flag ends the watch"
        );
        assert!(began.elapsed() < std::time::Duration::from_secs(5));
        assert_eq!(child.end(false, 300_000_000).unwrap(), Ended::Killed);
        assert_eq!(Ended::Killed.exit_code(), 137);
    }
}
