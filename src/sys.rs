//! Thin, safe wrappers over the Linux calls the probes need: the monotonic
//! clock, absolute sleeps, CPU pinning, SCHED_FIFO and memory locking.
//!
//! The only module allowed `unsafe`; each block says why it is sound.
#![allow(unsafe_code)]

use std::io;

/// Nanoseconds on `CLOCK_MONOTONIC` (a vDSO read, no syscall).
#[inline]
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always
    // exists on Linux, so the call cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sleeps until the absolute `CLOCK_MONOTONIC` time `deadline_ns`.
/// Returns `false` if a signal interrupted the sleep before the deadline.
#[inline]
pub fn sleep_until_ns(deadline_ns: u64) -> bool {
    let ts = libc::timespec {
        tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: `ts` is a valid timespec; with TIMER_ABSTIME the remainder
    // pointer is unused and may be null.
    let rc = unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    };
    rc != libc::EINTR
}

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

/// `statfs(2)`'s `f_type` of the file system holding `path`: tells kernel
/// attribute files (procfs `0x9fa0`, sysfs `0x62656572`) from regular ones.
pub fn filesystem_magic(path: &std::path::Path) -> io::Result<i64> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: an all-zero statfs is a valid out-parameter; `c_path` is a
    // NUL-terminated string that outlives the call.
    let (rc, buf) = unsafe {
        let mut buf: libc::statfs = std::mem::zeroed();
        let rc = libc::statfs(c_path.as_ptr(), &mut buf);
        (rc, buf)
    };
    if rc == 0 {
        // f_type is i64 on x86_64 but narrower elsewhere.
        #[allow(clippy::unnecessary_cast)]
        Ok(buf.f_type as i64)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Total and available bytes of the filesystem holding `path` (`statvfs`).
pub fn filesystem_space(path: &std::path::Path) -> io::Result<(u64, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: an all-zero statvfs is a valid out-parameter; `c_path` is a
    // NUL-terminated string that outlives the call.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are valid for the duration of the call.
    let rc = unsafe { libc::statvfs(c_path.as_ptr(), &mut stat) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let unit = stat.f_frsize as u64;
    Ok((stat.f_blocks as u64 * unit, stat.f_bavail as u64 * unit))
}

/// Reserves `len` bytes for `file` (`posix_fallocate`), so a full disk
/// shows before anything is written. Filesystems that cannot reserve
/// (`EOPNOTSUPP`, `EINVAL`) are not an error: the write itself will tell.
pub fn reserve(file: &std::fs::File, len: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let Ok(len) = libc::off_t::try_from(len) else {
        return Err(io::Error::from_raw_os_error(libc::EFBIG));
    };
    if len == 0 {
        return Ok(());
    }
    // SAFETY: an open descriptor and plain integers; no memory is passed.
    match unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len) } {
        0 | libc::EOPNOTSUPP | libc::EINVAL => Ok(()),
        e => Err(io::Error::from_raw_os_error(e)),
    }
}

/// Whether an error means the filesystem (or the user's quota) is full.
pub fn is_out_of_space(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT))
}

/// Renames `from` to `to` only if nothing is at `to` (`renameat2` with
/// `RENAME_NOREPLACE`, or a hard link and an unlink on a filesystem
/// without it): `AlreadyExists` if something is, and then nothing changed.
pub fn rename_noreplace(from: &std::path::Path, to: &std::path::Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &std::path::Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes())
            .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
    };
    let (c_from, c_to) = (c(from)?, c(to)?);
    // SAFETY: both strings are NUL-terminated and outlive the call; AT_FDCWD
    // resolves them like rename(2).
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            c_from.as_ptr(),
            libc::AT_FDCWD,
            c_to.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::EINVAL) | Some(libc::ENOSYS) => {
            // link(2) never replaces: it fails with EEXIST.
            std::fs::hard_link(from, to)?;
            std::fs::remove_file(from)
        }
        _ => Err(err),
    }
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

/// Takes an exclusive advisory lock on `file` without waiting (`flock`):
/// `Ok(false)` when another open file holds it. Released when the file
/// is closed, including when the process dies.
pub fn try_lock_exclusive(file: &std::fs::File) -> io::Result<bool> {
    use std::os::fd::AsRawFd;
    // SAFETY: the descriptor is valid for as long as `file` is borrowed.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(true);
    }
    let err = io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(err)
    }
}

/// Sets a listening socket's accept queue to `backlog` connections (Linux
/// takes a second `listen(2)` as a resize; the kernel caps it at
/// `net.core.somaxconn`). The standard library listens with 128, which
/// drops the SYNs of a few hundred clients connecting at once.
pub fn set_listen_backlog(fd: std::os::fd::BorrowedFd<'_>, backlog: usize) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let backlog = i32::try_from(backlog).unwrap_or(i32::MAX);
    // SAFETY: listen on a borrowed, open socket descriptor; no memory is passed.
    if unsafe { libc::listen(fd.as_raw_fd(), backlog) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Waits up to `timeout_ms` for `fd` to become readable (`poll(2)`).
/// Returns `Ok(true)` when it is (or has an error or hang-up to report),
/// `Ok(false)` on timeout or when a signal interrupted the wait.
pub fn poll_readable(fd: std::os::fd::BorrowedFd<'_>, timeout_ms: i32) -> io::Result<bool> {
    use std::os::fd::AsRawFd;
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: `pfd` is one valid pollfd and nfds is 1; the borrowed fd is
    // open for the duration of the call.
    let rc = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
    match rc {
        n if n > 0 => Ok(true),
        0 => Ok(false),
        _ => {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                Ok(false)
            } else {
                Err(err)
            }
        }
    }
}

/// Waits until one of `fds` is readable or `deadline_ns` (monotonic) passes,
/// with nanosecond resolution (`ppoll(2)`): a thread that both keeps a
/// schedule and reads replies sleeps exactly to its next send. Sets
/// `ready[i]` for each readable fd (or one with an error or hang-up to
/// report) and returns how many are; 0 on timeout or a signal.
pub fn poll_readable_until(
    fds: &[std::os::fd::BorrowedFd<'_>],
    deadline_ns: u64,
    ready: &mut Vec<bool>,
) -> io::Result<usize> {
    use std::os::fd::AsRawFd;
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|fd| libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let wait = deadline_ns.saturating_sub(monotonic_ns());
    let ts = libc::timespec {
        tv_sec: (wait / 1_000_000_000) as libc::time_t,
        tv_nsec: (wait % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: `pfds` holds `pfds.len()` valid pollfds, the borrowed fds are
    // open for the duration of the call, `ts` is a valid timespec and the
    // signal mask pointer may be null.
    let rc = unsafe {
        libc::ppoll(
            pfds.as_mut_ptr(),
            pfds.len() as libc::nfds_t,
            &ts,
            std::ptr::null(),
        )
    };
    ready.clear();
    ready.extend(pfds.iter().map(|p| p.revents != 0));
    match rc {
        n if n >= 0 => Ok(n as usize),
        _ => {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                ready.iter_mut().for_each(|r| *r = false);
                Ok(0)
            } else {
                Err(err)
            }
        }
    }
}

/// An epoll instance (level-triggered, read readiness only).
#[derive(Debug)]
pub struct Epoll(std::os::fd::OwnedFd);

impl Epoll {
    /// A new epoll instance, closed on exec.
    pub fn new() -> io::Result<Epoll> {
        use std::os::fd::FromRawFd;
        // SAFETY: epoll_create1 takes only flags.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a freshly created descriptor nobody else owns.
        Ok(Epoll(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) }))
    }

    /// Watches `fd` for readability (and hang-up), reporting `token`. A
    /// descriptor is unwatched automatically when it is closed.
    pub fn add(&self, fd: std::os::fd::BorrowedFd<'_>, token: u64) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        let mut event = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLRDHUP) as u32,
            u64: token,
        };
        // SAFETY: both descriptors are open; `event` is a valid epoll_event.
        let rc = unsafe {
            libc::epoll_ctl(
                self.0.as_raw_fd(),
                libc::EPOLL_CTL_ADD,
                fd.as_raw_fd(),
                &mut event,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Waits up to `timeout_ms` and writes the ready tokens into `tokens`;
    /// returns how many (0 on timeout or a signal).
    pub fn wait(&self, tokens: &mut [u64; 64], timeout_ms: i32) -> io::Result<usize> {
        use std::os::fd::AsRawFd;
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; 64];
        // SAFETY: `events` holds 64 writable epoll_events and 64 is passed.
        let n =
            unsafe { libc::epoll_wait(self.0.as_raw_fd(), events.as_mut_ptr(), 64, timeout_ms) };
        if n < 0 {
            let err = io::Error::last_os_error();
            return if err.kind() == io::ErrorKind::Interrupted {
                Ok(0)
            } else {
                Err(err)
            };
        }
        let n = n as usize;
        for (token, event) in tokens.iter_mut().zip(&events[..n]) {
            *token = event.u64;
        }
        Ok(n)
    }
}

/// Bit k set when byte k of `block` is not an ASCII digit, 16 bytes at a
/// time with SSE2: less `'0'`, a digit is at most 9 (unsigned). The hot
/// step of fio log import.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn non_digit_bits_64(block: &[u8; 64]) -> u64 {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_max_epu8, _mm_movemask_epi8, _mm_set_epi64x, _mm_set1_epi8,
        _mm_sub_epi8,
    };
    let half = |bytes: &[u8]| i64::from_le_bytes(bytes.try_into().expect("8 bytes"));
    let mut bits = 0u64;
    for (k, lane) in block.chunks_exact(16).enumerate() {
        let (low, high) = (half(&lane[..8]), half(&lane[8..]));
        // SAFETY: SSE2 is part of the x86-64 baseline, enabled on every
        // x86_64 target, and these intrinsics take values, not pointers: they
        // cannot touch memory.
        let digits = unsafe {
            let t = _mm_sub_epi8(_mm_set_epi64x(high, low), _mm_set1_epi8(b'0' as i8));
            let nine = _mm_set1_epi8(9);
            _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_max_epu8(t, nine), nine))
        };
        bits |= u64::from(!(digits as u16)) << (16 * k);
    }
    bits
}

/// `f` of each item, in order, spread over the CPUs this process may use
/// (one thread for one item or CPU). Each thread takes the next item not yet
/// taken, so items of uneven cost do not leave a CPU idle at the end.
pub fn map_parallel<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(items.len());
    if threads <= 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let at = next.fetch_add(1, Relaxed);
            let Some(item) = items.get(at) else {
                return done;
            };
            done.push((at, f(item)));
        }
    };
    let parts: Vec<Vec<(usize, R)>> = std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..threads).map(|_| scope.spawn(work)).collect();
        let mut parts = vec![work()];
        // A panic in `f` is a bug; it carries on in the caller.
        parts.extend(
            helpers
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))),
        );
        parts
    });
    let mut slots: Vec<Option<R>> = std::iter::repeat_with(|| None).take(items.len()).collect();
    for (at, result) in parts.into_iter().flatten() {
        slots[at] = Some(result);
    }
    slots.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn map_parallel_keeps_the_items_order_whatever_each_costs() {
        let items: Vec<u64> = (0..1_000).collect();
        // Uneven work: every tenth item is a hundred times the others.
        let mapped = super::map_parallel(&items, |&i| {
            let rounds = if i % 10 == 0 { 10_000 } else { 100 };
            (0..rounds).fold(i, |v, k| std::hint::black_box(v ^ k))
                ^ (0..rounds).fold(0, |v, k| v ^ k)
        });
        assert_eq!(mapped, items);
        assert!(super::map_parallel(&[] as &[u64], |&i| i).is_empty());
        assert_eq!(super::map_parallel(&[7u64], |&i| i * 2), [14]);
    }
}
