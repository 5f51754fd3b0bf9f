//! Waiting on descriptors: `poll(2)` for one, `epoll` for many, and the
//! accept queue of a listening socket.

use std::io;

use super::clock::monotonic_ns;

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
    poll_one(fd, libc::POLLIN, timeout_ms)
}

/// Waits up to `timeout_ms` for `fd` to take more bytes (`POLLOUT`); as
/// [`poll_readable`] otherwise.
pub fn poll_writable(fd: std::os::fd::BorrowedFd<'_>, timeout_ms: i32) -> io::Result<bool> {
    poll_one(fd, libc::POLLOUT, timeout_ms)
}

/// Writes what of `buf` the socket `fd` takes now (`send(2)` with
/// `MSG_DONTWAIT`, and `MSG_NOSIGNAL`: a closed peer is an error, not a
/// signal): `WouldBlock` when its send buffer is full, the socket itself
/// staying blocking for everyone else.
pub fn send_now(fd: std::os::fd::BorrowedFd<'_>, buf: &[u8]) -> io::Result<usize> {
    use std::os::fd::AsRawFd;
    // SAFETY: `buf` is valid for `buf.len()` bytes for the duration of the
    // call, and the borrowed fd is open.
    let rc = unsafe {
        libc::send(
            fd.as_raw_fd(),
            buf.as_ptr().cast(),
            buf.len(),
            libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
        )
    };
    usize::try_from(rc).map_err(|_| io::Error::last_os_error())
}

fn poll_one(fd: std::os::fd::BorrowedFd<'_>, events: i16, timeout_ms: i32) -> io::Result<bool> {
    use std::os::fd::AsRawFd;
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events,
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
