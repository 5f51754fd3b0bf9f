//! Thin, safe wrappers over the Linux calls the probes need: the monotonic
//! clock, absolute sleeps, CPU pinning, SCHED_FIFO, memory locking and
//! signals here; files, waiting on descriptors, and spreading work over the
//! CPUs in the submodules.
//!
//! The only module allowed `unsafe`; each block says why it is sound.
#![allow(unsafe_code)]

use std::io;

mod clock;
mod files;
mod parallel;
mod poll;
mod signals;

pub use clock::{monotonic_ns, sleep_until_ns};
pub use files::{
    filesystem_magic, filesystem_space, is_out_of_space, rename_noreplace, reserve,
    try_lock_exclusive,
};
pub use parallel::map_parallel;
#[cfg(target_arch = "x86_64")]
pub use parallel::non_digit_bits_64;
pub use poll::{
    Epoll, poll_readable, poll_readable_until, poll_writable, send_now, set_listen_backlog,
};
pub use signals::{
    child_target, interrupt_when_parent_dies, kill_on_insist, register_insist_kill, signal_target,
};

/// Pins the calling thread to one CPU.
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    pin_current_thread_to(&[cpu])
}

/// Lets the calling thread run only on `cpus`.
pub fn pin_current_thread_to(cpus: &[usize]) -> io::Result<()> {
    if cpus.is_empty() || cpus.iter().any(|&cpu| cpu >= libc::CPU_SETSIZE as usize) {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: an all-zero cpu_set_t is a valid empty set; CPU_SET writes
    // inside it for cpu < CPU_SETSIZE (checked above); the size passed is
    // the set's own size; pid 0 means the calling thread.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &cpu in cpus {
            libc::CPU_SET(cpu, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The CPU time the calling thread has used, in ns
/// (`CLOCK_THREAD_CPUTIME_ID`).
pub fn thread_cpu_ns() -> u64 {
    // SAFETY: an all-zero timespec is a valid out-parameter for clock_gettime.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: a valid clock id and a pointer to a live timespec.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The kernel's wall-clock synchronisation state (`adjtimex` with no
/// modes: a read, allowed to anyone): (synchronised, estimated error µs,
/// maximum error µs); `None` when it cannot be read.
pub fn clock_sync() -> Option<(bool, i64, i64)> {
    // SAFETY: an all-zero timex with modes 0 asks for a read only.
    let mut tx: libc::timex = unsafe { std::mem::zeroed() };
    // SAFETY: a pointer to a live timex.
    let state = unsafe { libc::adjtimex(&mut tx) };
    if state < 0 {
        return None;
    }
    let unsynced = state == libc::TIME_ERROR || tx.status & libc::STA_UNSYNC != 0;
    Some((!unsynced, tx.esterror as i64, tx.maxerror as i64))
}

/// How many times the calling thread gave up its CPU to wait (its
/// voluntary context switches); 0 when it cannot be read.
pub fn thread_voluntary_switches() -> u64 {
    // SAFETY: an all-zero rusage is a valid out-parameter for getrusage.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_THREAD and a pointer to a live rusage.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) } != 0 {
        return 0;
    }
    usage.ru_nvcsw.max(0) as u64
}

/// Puts the calling thread under SCHED_IDLE (`idle`), where it runs only
/// when nothing else wants its CPU and any waking thread of a normal
/// policy preempts it at once, or back under SCHED_OTHER.
pub fn set_idle_policy(idle: bool) -> io::Result<()> {
    let policy = if idle {
        libc::SCHED_IDLE
    } else {
        libc::SCHED_OTHER
    };
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is a valid sched_param; pid 0 is the calling thread.
    let rc = unsafe { libc::sched_setscheduler(0, policy, &param) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Whether the calling thread could return from SCHED_IDLE to SCHED_OTHER:
/// the kernel allows it to root, or under an RLIMIT_NICE of 20 or more
/// (`sched_setscheduler(2)`).
pub fn may_leave_idle_policy() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    // SAFETY: an all-zero rlimit is a valid out-parameter.
    let mut limit: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: a valid resource and a pointer to a live rlimit.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NICE, &mut limit) };
    rc == 0 && limit.rlim_cur >= 20
}

/// Puts the calling thread under SCHED_FIFO at `priority` (1–99).
pub fn set_fifo_priority(priority: i32) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: `param` is a valid sched_param; pid 0 is the calling thread.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Locks current and future memory (`mlockall`) when that is safe: as root,
/// or with an unlimited `RLIMIT_MEMLOCK`. Under a finite limit, locking
/// future pages would make later allocations fail, so it is skipped and the
/// reason returned.
pub fn lock_memory() -> Result<(), String> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid, writable rlimit.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut limit) };
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root && (rc != 0 || limit.rlim_cur != libc::RLIM_INFINITY) {
        return Err(format!(
            "RLIMIT_MEMLOCK is {} bytes and cauda is not root",
            limit.rlim_cur
        ));
    }
    // SAFETY: mlockall takes only flags.
    let rc = unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error().to_string())
    }
}

/// Undoes [`lock_memory`].
pub fn unlock_memory() {
    // SAFETY: munlockall has no preconditions.
    unsafe { libc::munlockall() };
}

/// The CPUs the calling thread may run on (on the main thread before
/// any pinning: the process's).
pub fn allowed_cpus() -> Vec<usize> {
    cpus_of(0)
}

/// The CPUs thread `tid` may run on (0: the calling thread); empty when
/// it cannot be read (the thread has ended).
pub fn cpus_of(tid: i32) -> Vec<usize> {
    // SAFETY: an all-zero cpu_set_t is valid; the size passed is its own;
    // CPU_ISSET reads inside the set for i < CPU_SETSIZE.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&i| libc::CPU_ISSET(i, &set))
            .collect()
    }
}

/// Sets the calling thread's timer slack (`PR_SET_TIMERSLACK`). Threads
/// outside real-time classes get 50 µs by default, which the kernel may add
/// to any sleep; a latency probe wants the wake-up it asked for.
pub fn set_timer_slack_ns(ns: u64) -> io::Result<()> {
    // SAFETY: PR_SET_TIMERSLACK takes one unsigned long argument; the
    // remaining varargs are ignored.
    let rc = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Holds a PM QoS CPU latency limit (`/dev/cpu_dma_latency`) while the
/// returned file stays open: the cpuidle governor will not pick idle states
/// whose exit latency exceeds `limit_us`. Closing the file releases it.
pub fn hold_cpu_dma_latency(limit_us: i32) -> io::Result<std::fs::File> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/cpu_dma_latency")?;
    file.write_all(&limit_us.to_ne_bytes())?;
    Ok(file)
}

/// True when the process runs with effective uid 0.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// The calling thread's kernel id (`gettid`), to read its `/proc` entry.
pub fn thread_id() -> i32 {
    // SAFETY: gettid has no preconditions and cannot fail.
    unsafe { libc::gettid() }
}

/// Sends SIGINT to a process (a child the caller started), as Ctrl-C would.
pub fn interrupt(pid: u32) -> io::Result<()> {
    send_signal(pid, libc::SIGINT)
}

/// Sends `signal` to a process (a child the caller started).
pub fn send_signal(pid: u32, signal: i32) -> io::Result<()> {
    let pid = libc::pid_t::try_from(pid).map_err(|_| io::Error::from_raw_os_error(libc::ESRCH))?;
    // SAFETY: kill(2) takes plain integers; a stale pid at worst fails with
    // ESRCH, reported to the caller.
    if unsafe { libc::kill(pid, signal) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
