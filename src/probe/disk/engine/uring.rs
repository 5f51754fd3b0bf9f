//! The `io_uring` engine: one ring per job with `--iodepth` slots, the file
//! and (when `RLIMIT_MEMLOCK` allows) the buffers registered, so each
//! operation costs no fd lookup or page pinning. `flush` submits without
//! waiting (the loop calls it per `--submit-batch`); `submit` takes what has
//! completed and, only when that is not enough, submits and waits in one
//! `io_uring_enter`. The `unsafe` it needs lives in the engines' `sys`.

use std::fs::File;
use std::io;

use super::sys::Ring;
use super::{Completion, Engine, IoBuffers, Op, Unavailable};

/// io_uring on one file.
#[derive(Debug)]
pub struct Uring {
    ring: Ring,
}

/// Why io_uring may be missing on this host, for the message.
pub fn explain(error: &io::Error) -> String {
    let disabled = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok());
    explain_with(error, disabled)
}

/// [`explain`] given the value of `kernel.io_uring_disabled`, if readable.
pub fn explain_with(error: &io::Error, disabled: Option<u32>) -> String {
    match (error.raw_os_error(), disabled) {
        (_, Some(2)) => "io_uring is disabled on this host (kernel.io_uring_disabled = 2)".into(),
        (Some(libc::EPERM), Some(1)) => {
            "io_uring is restricted to the io_uring_group (kernel.io_uring_disabled = 1) and this \
             process is not in it"
                .into()
        }
        (Some(libc::ENOSYS), _) => {
            "this kernel has no io_uring (ENOSYS: built without CONFIG_IO_URING, or blocked by a \
             seccomp filter, as in some containers)"
                .into()
        }
        (Some(libc::EPERM), _) => {
            "io_uring_setup was refused (EPERM: a seccomp filter or LSM policy blocks it)".into()
        }
        (Some(libc::ENOMEM), _) => {
            "io_uring_setup ran out of locked memory (ENOMEM: raise RLIMIT_MEMLOCK)".into()
        }
        _ => format!("io_uring_setup failed: {error}"),
    }
}

impl Uring {
    /// A ring over `file` with `buffers.depth()` slots.
    pub fn new(file: File, buffers: IoBuffers) -> Result<Self, Unavailable> {
        Ring::new(file, buffers)
            .map(|ring| Uring { ring })
            .map_err(|e| Unavailable { why: explain(&e) })
    }

    /// Whether the buffers are registered with the ring.
    pub fn fixed_buffers(&self) -> bool {
        self.ring.fixed_buffers()
    }
}

impl Engine for Uring {
    fn depth(&self) -> usize {
        self.ring.depth()
    }

    fn buffer_mut(&mut self, slot: usize) -> &mut [u8] {
        self.ring.buffer_mut(slot)
    }

    fn queue(&mut self, op: Op) -> io::Result<()> {
        self.ring.push(op)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.ring.submit()
    }

    fn submit(
        &mut self,
        min_complete: usize,
        timeout_ns: Option<u64>,
        out: &mut Vec<Completion>,
    ) -> io::Result<()> {
        self.ring.submit_and_reap(min_complete, timeout_ns, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_way_io_uring_is_missing_is_told_apart() {
        let e = |errno| io::Error::from_raw_os_error(errno);
        assert!(explain_with(&e(libc::EPERM), Some(2)).contains("io_uring_disabled = 2"));
        assert!(explain_with(&e(libc::EPERM), Some(1)).contains("io_uring_group"));
        assert!(explain_with(&e(libc::ENOSYS), None).contains("CONFIG_IO_URING"));
        assert!(explain_with(&e(libc::EPERM), Some(0)).contains("seccomp"));
        assert!(explain_with(&e(libc::ENOMEM), Some(0)).contains("RLIMIT_MEMLOCK"));
    }
}
