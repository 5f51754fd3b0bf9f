//! Signals to and from child processes: the process a child leads (its
//! group), and the one thing cauda does inside a signal handler of its
//! own — on the user's second Ctrl-C or SIGTERM, kill the child command
//! it is waiting for, so that exiting at once leaves nothing running.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// What to SIGKILL when the user insists (0: nothing); a `kill(2)` target,
/// negative for a process group.
static ON_INSIST: AtomicI32 = AtomicI32::new(0);

/// Sends `signal` to `target` as `kill(2)` takes it: a pid, or minus a
/// process group's id for the whole group.
pub fn signal_target(target: i32, signal: i32) -> io::Result<()> {
    // SAFETY: kill(2) takes plain integers; a stale target at worst fails
    // with ESRCH, reported to the caller.
    if unsafe { libc::kill(target, signal) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The `kill(2)` target that reaches the child `pid` and what it started:
/// its process group when it leads one (`setsid`, a shell's job control),
/// else the child alone (it shares cauda's group, and cauda must not
/// signal itself).
pub fn child_target(pid: u32) -> i32 {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return 0;
    };
    // SAFETY: getpgid(2) and getpgrp(2) take and return plain integers.
    let (group, own) = unsafe { (libc::getpgid(pid), libc::getpgrp()) };
    if group == pid && group != own {
        -pid
    } else {
        pid
    }
}

/// From now on, a second SIGINT/SIGTERM kills `target` (a [`child_target`])
/// before cauda exits; `None` forgets it (the child was reaped, and its
/// pid may be reused).
pub fn kill_on_insist(target: Option<i32>) {
    ON_INSIST.store(target.unwrap_or(0), Ordering::SeqCst);
}

/// Registers, for `signal`, the action that runs before cauda exits on a
/// second signal: when `raised` is already up, SIGKILL the child set by
/// [`kill_on_insist`]. Register it before the action that exits.
pub fn register_insist_kill(signal: i32, raised: Arc<AtomicBool>) -> io::Result<()> {
    let action = move || {
        if raised.load(Ordering::SeqCst) {
            let target = ON_INSIST.load(Ordering::SeqCst);
            if target != 0 {
                // SAFETY: kill(2) is async-signal-safe and takes integers.
                unsafe { libc::kill(target, libc::SIGKILL) };
            }
        }
    };
    // SAFETY: the action only loads two atomics and calls kill(2), all
    // async-signal-safe; it allocates and locks nothing.
    unsafe { signal_hook::low_level::register(signal, action) }.map(|_| ())
}

/// Makes the child `command` starts receive SIGINT (as Ctrl-C: it saves
/// what it measured and exits) when the thread that started it dies, so
/// that a workflow killed outright (SIGKILL, the OOM killer) leaves no step
/// measuring on for minutes; a parent already gone when the child starts
/// never starts.
pub fn interrupt_when_parent_dies(command: &mut std::process::Command) {
    // SAFETY: getpid(2) takes nothing and cannot fail.
    let parent = unsafe { libc::getpid() };
    let hook = move || {
        // SAFETY: prctl(PR_SET_PDEATHSIG) and getppid(2) take plain
        // integers and are async-signal-safe, as pre_exec requires.
        unsafe {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGINT as libc::c_ulong) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                libc::_exit(130);
            }
        }
        Ok(())
    };
    // SAFETY: the hook calls only async-signal-safe functions and
    // allocates nothing (see above).
    unsafe { std::os::unix::process::CommandExt::pre_exec(command, hook) };
}
