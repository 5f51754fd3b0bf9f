//! The lock that keeps two applies or rollbacks on one host apart.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;

use anyhow::{Context, Result};

use crate::error::input_error;
use crate::host::root::HostRoot;

/// The lock that keeps two applies or rollbacks on one host apart (below `--root`).
pub const LOCK_FILE: &str = "/var/lib/cauda/tune.lock";

/// Holds [`LOCK_FILE`] until dropped (or the process dies).
#[derive(Debug)]
pub struct HostLock {
    _file: std::fs::File,
}

/// Takes the host's tuning lock, or says who holds it. Two applies that
/// interleave would each journal the other's values as "old", and their
/// rollbacks would undo each other wrongly. Where the lock file cannot be
/// created (a read-only /var), cauda says so and goes on unlocked.
pub fn lock_host(root: &HostRoot) -> Result<Option<HostLock>> {
    let path = root.path(LOCK_FILE);
    let opened = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| {
            // Never through a link planted there, never onto a FIFO or a
            // device: the lock's own regular file or nothing.
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o644)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
                .open(&path)
        });
    let refuse = |what: &str| {
        input_error(format!(
            "the tuning lock {} is {what}, not cauda's lock file; remove it and run again",
            path.display()
        ))
    };
    let mut file = match opened {
        Ok(file) if file.metadata().is_ok_and(|m| m.is_file()) => file,
        Ok(file) => {
            let meta = file.metadata()?;
            return Err(refuse(crate::input::kind_of(&meta)));
        }
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(refuse("a symbolic link"));
        }
        Err(e) => {
            eprintln!(
                "warning: cannot create the lock {} ({e}); not guarded against a concurrent tune",
                path.display()
            );
            return Ok(None);
        }
    };
    if !crate::sys::try_lock_exclusive(&file)
        .with_context(|| format!("cannot lock {}", path.display()))?
    {
        let holder = std::fs::read_to_string(&path).unwrap_or_default();
        return Err(input_error(format!(
            "another cauda host tune or rollback is running on this host (pid {}, lock {}); \
             wait for it to finish",
            holder.trim(),
            path.display()
        )));
    }
    file.set_len(0)?;
    writeln!(file, "{}", std::process::id())?;
    Ok(Some(HostLock { _file: file }))
}
