//! One step of a workflow run as a child `cauda`: its stderr to a log, in a
//! process group of its own so that the terminal's Ctrl-C reaches the
//! workflow alone, which forwards exactly one SIGINT (a second would make
//! the step exit without saving); a second Ctrl-C kills it.

use std::fs::File;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::record::StopFlag;

/// How a step ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ended {
    /// Exit 0.
    Done,
    /// Exit 130: interrupted, what it measured saved.
    Interrupted,
    /// Any other ending: the exit code (none when killed by a signal) and
    /// the last line the step wrote to its log.
    Failed {
        /// The exit code.
        code: Option<i32>,
        /// The last meaningful line of its log.
        words: String,
    },
}

/// Runs `exe args…` with stdin closed, stderr to `log`, stdout to `stdout`,
/// calling `tick(seconds since start)` about five times a second until it
/// ends.
pub fn run(
    exe: &Path,
    args: &[String],
    log: &Path,
    stdout: Stdio,
    stop: &StopFlag,
    mut tick: impl FnMut(f64),
) -> Result<Ended> {
    let log_file = File::create(log).with_context(|| format!("cannot create {}", log.display()))?;
    let mut command = Command::new(exe);
    command
        .args(args)
        .stdin(Stdio::null())
        .stderr(log_file)
        .stdout(stdout);
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    crate::sys::interrupt_when_parent_dies(&mut command);
    let mut child = command
        .spawn()
        .with_context(|| format!("cannot start {}", exe.display()))?;
    crate::sys::kill_on_insist(Some(crate::sys::child_target(child.id())));
    let started = Instant::now();
    let mut forwarded = false;
    let status = loop {
        if let Some(status) = child.try_wait().context("waiting for a step")? {
            break status;
        }
        if stop.is_raised() {
            if !forwarded {
                let _ = crate::sys::interrupt(child.id());
                forwarded = true;
            }
            // The step saves and exits; look often, draw nothing.
            std::thread::sleep(Duration::from_millis(10));
            continue;
        }
        tick(started.elapsed().as_secs_f64());
        stop.sleep_for(200_000_000);
    };
    crate::sys::kill_on_insist(None);
    Ok(match status.code() {
        Some(0) => Ended::Done,
        Some(130) => Ended::Interrupted,
        code => Ended::Failed {
            code,
            words: last_words(log),
        },
    })
}

/// The last meaningful line a step wrote to its log: its last error line
/// when it wrote one (a refused flag ends with clap's "For more
/// information, try '--help'.", which says nothing), else its last line.
pub fn last_words(log: &Path) -> String {
    std::fs::read_to_string(log)
        .ok()
        .and_then(|text| words_of(&text))
        .unwrap_or_else(|| format!("no message; see {}", log.display()))
}

fn words_of(text: &str) -> Option<String> {
    let lines = || text.lines().rev().map(str::trim).filter(|l| !l.is_empty());
    lines()
        .find(|l| l.starts_with("error:") || l.starts_with("cauda: error:"))
        .or_else(|| lines().next())
        .map(str::to_string)
}

/// Makes a new directory `PREFIX-YYYYMMDD-HHMMSS` (or with `-N` when that
/// exists) in `parent`, which must be an existing directory (`flag` names
/// it in errors).
pub fn new_dir(parent: &Path, prefix: &str, flag: &str) -> Result<std::path::PathBuf> {
    let stamp = humantime::format_rfc3339_seconds(std::time::SystemTime::now())
        .to_string()
        .replace(['-', ':'], "")
        .replace('T', "-")
        .trim_end_matches('Z')
        .to_string();
    for n in 0..1000 {
        let name = if n == 0 {
            format!("{prefix}-{stamp}")
        } else {
            format!("{prefix}-{stamp}-{n}")
        };
        let path = parent.join(name);
        match std::fs::create_dir(&path) {
            Ok(()) => return Ok(path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(crate::error::input_error(format!(
                    "{flag} {}: cannot create {} ({e}); give an existing, writable directory",
                    parent.display(),
                    path.display()
                )));
            }
        }
    }
    Err(crate::error::input_error(format!(
        "{flag} {}: a thousand {prefix} directories of this second exist already",
        parent.display()
    )))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_step_s_last_words_are_its_error_not_clap_s_closing_hint() {
        let clap = "error: unexpected argument '--runtim' found\n\n  tip: a similar argument \
                    exists: '--runtime'\n\nUsage: cauda timer [OPTIONS]\n\nFor more \
                    information, try '--help'.\n";
        assert_eq!(
            super::words_of(clap).as_deref(),
            Some("error: unexpected argument '--runtim' found")
        );
        assert_eq!(
            super::words_of("saved x\nsome failure\n\n").as_deref(),
            Some("some failure")
        );
        assert_eq!(super::words_of(" \n"), None);
    }
}
