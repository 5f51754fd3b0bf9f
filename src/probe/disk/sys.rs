//! The disk probe's system calls that need `unsafe`: the io_uring
//! submission path, extended attributes, per-thread CPU time and the NVMe
//! admin ioctl. Everything else in the probe is safe Rust over these small
//! wrappers; each `unsafe` block says why it is sound.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

use io_uring::{IoUring, opcode, types};

use super::engine::{Completion, Dir, IoBuffers, Op};

/// An io_uring with its file and buffers. The ring owns both, so neither can
/// be freed or closed while the kernel may still use them: dropping the ring
/// first waits for every operation in flight.
pub struct Ring {
    ring: IoUring,
    /// Kept open while the ring has it registered.
    _file: File,
    buffers: IoBuffers,
    fixed_buffers: bool,
    in_flight: Vec<bool>,
    count_in_flight: usize,
}

impl std::fmt::Debug for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring")
            .field("fixed_buffers", &self.fixed_buffers)
            .field("in_flight", &self.count_in_flight)
            .finish()
    }
}

impl Ring {
    /// A ring with room for `buffers.depth()` operations on `file`. The file
    /// is registered; the buffers too when the memory-lock limit allows.
    pub fn new(file: File, buffers: IoBuffers) -> io::Result<Ring> {
        let depth = buffers.depth();
        let entries = (depth as u32).next_power_of_two().max(1);
        // One thread submits and reaps (the job that created the ring), so
        // completions can wait for its next io_uring_enter instead of
        // interrupting it (Linux 6.1+; plain setup before that).
        // The task-run flag tells userspace that completions are pending, so
        // the reaping enters the kernel to post them only then.
        let ring = match IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .setup_taskrun_flag()
            .build(entries)
        {
            Ok(ring) => ring,
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                IoUring::builder().build(entries)?
            }
            Err(e) => return Err(e),
        };
        ring.submitter().register_files(&[file.as_raw_fd()])?;
        let mut ring = Ring {
            ring,
            _file: file,
            buffers,
            fixed_buffers: false,
            in_flight: vec![false; depth],
            count_in_flight: 0,
        };
        let region = ring.buffers.region_mut();
        let iovec = libc::iovec {
            iov_base: region.as_mut_ptr().cast(),
            iov_len: region.len(),
        };
        // SAFETY: the iovec covers memory owned by `ring.buffers`, which is
        // never reallocated and lives as long as the ring (dropping the ring
        // unregisters it before the buffers are freed: fields drop in
        // declaration order, `ring` first).
        ring.fixed_buffers = unsafe { ring.ring.submitter().register_buffers(&[iovec]) }.is_ok();
        Ok(ring)
    }

    /// How many slots.
    pub fn depth(&self) -> usize {
        self.in_flight.len()
    }

    /// Whether the buffers are registered (fixed reads and writes).
    pub fn fixed_buffers(&self) -> bool {
        self.fixed_buffers
    }

    /// The buffer of a slot not in flight.
    pub fn buffer_mut(&mut self, slot: usize) -> &mut [u8] {
        assert!(
            !self.in_flight[slot],
            "slot {slot} is in flight; its buffer belongs to the kernel"
        );
        self.buffers.slot_mut(slot)
    }

    /// Queues one operation.
    pub fn push(&mut self, op: Op) -> io::Result<()> {
        if self.in_flight[op.slot] {
            return Err(io::Error::other(format!("slot {} is busy", op.slot)));
        }
        let block = self.buffers.block() as u32;
        let fd = types::Fixed(0);
        let buffer = self.buffers.slot_mut(op.slot).as_mut_ptr();
        let entry = match (op.dir, self.fixed_buffers) {
            (Dir::Read, true) => opcode::ReadFixed::new(fd, buffer, block, 0)
                .offset(op.offset)
                .build(),
            (Dir::Read, false) => opcode::Read::new(fd, buffer, block)
                .offset(op.offset)
                .build(),
            (Dir::Write, true) => opcode::WriteFixed::new(fd, buffer, block, 0)
                .offset(op.offset)
                .build(),
            (Dir::Write, false) => opcode::Write::new(fd, buffer, block)
                .offset(op.offset)
                .build(),
            (Dir::Fsync, _) => opcode::Fsync::new(fd)
                .flags(types::FsyncFlags::DATASYNC)
                .build(),
        }
        .user_data(op.slot as u64);
        // SAFETY: the entry points into `self.buffers` (slot `op.slot`, whole
        // block, inside the registered region when fixed) and at registered
        // file 0, both owned by `self`. The slot is marked in flight until
        // its completion is reaped, and `buffer_mut` refuses it meanwhile, so
        // nothing else touches that memory while the kernel uses it; `Drop`
        // reaps every operation before the memory is freed.
        unsafe { self.ring.submission().push(&entry) }.map_err(|_| {
            io::Error::other("the io_uring submission queue is full (more than --iodepth)")
        })?;
        self.in_flight[op.slot] = true;
        self.count_in_flight += 1;
        Ok(())
    }

    /// Submits queued entries without waiting.
    pub fn submit(&mut self) -> io::Result<()> {
        tolerate_wake(self.ring.submit())
    }

    /// Submits queued entries and waits for `want` completions or the
    /// timeout; appends every completion available to `out`.
    ///
    /// It takes what has completed before it sleeps: when the kernel flags
    /// completions as pending, the submission also posts them, and only
    /// when they are fewer than `want` does the thread wait. On a fast
    /// device something has nearly always completed, and a thread that
    /// sleeps until woken leaves the queue short for as long as its wake-up
    /// takes (fio reaps the same way). With nothing pending, one call
    /// submits and waits.
    pub fn submit_and_reap(
        &mut self,
        want: usize,
        timeout_ns: Option<u64>,
        out: &mut Vec<Completion>,
    ) -> io::Result<()> {
        let before = out.len();
        let completed_meanwhile = {
            let sq = self.ring.submission();
            sq.taskrun() || sq.cq_overflow()
        };
        if completed_meanwhile {
            tolerate_wake(self.ring.submit_and_wait(0))?;
        }
        self.reap(out);
        let want = want
            .saturating_sub(out.len() - before)
            .min(self.count_in_flight);
        if want == 0 && self.ring.submission().is_empty() {
            return Ok(());
        }
        let result = match timeout_ns {
            Some(ns) if want > 0 => {
                let ts = types::Timespec::new()
                    .sec(ns / 1_000_000_000)
                    .nsec((ns % 1_000_000_000) as u32);
                let args = types::SubmitArgs::new().timespec(&ts);
                self.ring.submitter().submit_with_args(want, &args)
            }
            _ => self.ring.submit_and_wait(want),
        };
        tolerate_wake(result)?;
        self.reap(out);
        Ok(())
    }

    /// Appends every completion in the ring to `out`.
    fn reap(&mut self, out: &mut Vec<Completion>) {
        for cqe in self.ring.completion() {
            let slot = cqe.user_data() as usize;
            if slot < self.in_flight.len() && self.in_flight[slot] {
                self.in_flight[slot] = false;
                self.count_in_flight -= 1;
                out.push(Completion {
                    slot,
                    result: cqe.result(),
                });
            }
        }
    }
}

/// A wait that ended by timeout, signal or a full completion queue is not an
/// error: the caller reaps what there is and decides.
fn tolerate_wake(result: io::Result<usize>) -> io::Result<()> {
    match result {
        Err(e)
            if !matches!(
                e.raw_os_error(),
                Some(libc::ETIME) | Some(libc::EINTR) | Some(libc::EBUSY)
            ) =>
        {
            Err(e)
        }
        _ => Ok(()),
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        let mut out = Vec::new();
        let mut attempts = 0;
        while self.count_in_flight > 0 && attempts < 10_000 {
            attempts += 1;
            out.clear();
            if self
                .submit_and_reap(1, Some(100_000_000), &mut out)
                .is_err()
            {
                break;
            }
        }
        if self.count_in_flight > 0 {
            // The kernel still owns some buffers: leak them rather than free
            // memory it may write into.
            std::mem::forget(std::mem::replace(
                &mut self.buffers,
                IoBuffers::new(0, 0, 1, 0),
            ));
        }
    }
}

/// Reads the extended attribute `name` of `file`; `Ok(None)` if absent.
pub fn get_xattr(file: &File, name: &str) -> io::Result<Option<Vec<u8>>> {
    let name = CString::new(name).map_err(io::Error::other)?;
    let mut value = vec![0u8; 256];
    // SAFETY: `name` is NUL-terminated; `value` is writable for its length.
    let n = unsafe {
        libc::fgetxattr(
            file.as_raw_fd(),
            name.as_ptr(),
            value.as_mut_ptr().cast(),
            value.len(),
        )
    };
    if n < 0 {
        let e = io::Error::last_os_error();
        return if e.raw_os_error() == Some(libc::ENODATA) {
            Ok(None)
        } else {
            Err(e)
        };
    }
    value.truncate(n as usize);
    Ok(Some(value))
}

/// Sets the extended attribute `name` of `file` to `value`.
pub fn set_xattr(file: &File, name: &str, value: &[u8]) -> io::Result<()> {
    let name = CString::new(name).map_err(io::Error::other)?;
    // SAFETY: `name` is NUL-terminated; `value` is readable for its length.
    let rc = unsafe {
        libc::fsetxattr(
            file.as_raw_fd(),
            name.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// User and system CPU time, in ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTime {
    /// User time.
    pub user_ns: u64,
    /// System time.
    pub sys_ns: u64,
}

fn rusage(who: libc::c_int) -> CpuTime {
    // SAFETY: an all-zero rusage is valid and writable; `who` is one of the
    // RUSAGE_* constants.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        if libc::getrusage(who, &mut usage) != 0 {
            return CpuTime::default();
        }
        usage
    };
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    CpuTime {
        user_ns: ns(usage.ru_utime),
        sys_ns: ns(usage.ru_stime),
    }
}

/// CPU time of the calling thread.
pub fn thread_cpu() -> CpuTime {
    rusage(libc::RUSAGE_THREAD)
}

/// CPU time of the whole process.
pub fn process_cpu() -> CpuTime {
    rusage(libc::RUSAGE_SELF)
}

/// `struct nvme_passthru_cmd` from `<linux/nvme_ioctl.h>` (72 bytes).
#[repr(C)]
#[derive(Default)]
struct NvmePassthru {
    opcode: u8,
    flags: u8,
    rsvd1: u16,
    nsid: u32,
    cdw2: u32,
    cdw3: u32,
    metadata: u64,
    addr: u64,
    metadata_len: u32,
    data_len: u32,
    cdw10: u32,
    cdw11: u32,
    cdw12: u32,
    cdw13: u32,
    cdw14: u32,
    cdw15: u32,
    timeout_ms: u32,
    result: u32,
}

/// `NVME_IOCTL_ADMIN_CMD` = `_IOWR('N', 0x41, struct nvme_admin_cmd)`.
const NVME_IOCTL_ADMIN_CMD: libc::c_ulong =
    (3 << 30) | (72 << 16) | ((b'N' as libc::c_ulong) << 8) | 0x41;

/// How a Get Log Page command failed.
#[derive(Debug)]
pub enum LogPageError {
    /// The ioctl itself failed (not an NVMe device, no permission).
    Io(io::Error),
    /// The controller answered with this NVMe status (e.g. 0x109: invalid log page).
    Status(i32),
}

/// Get Log Page (admin opcode 0x02) for all namespaces: fills `buf`
/// (a multiple of 4 bytes) with log `lid`, log-specific id `lsi`.
pub fn nvme_get_log_page(
    device: &File,
    lid: u8,
    lsi: u16,
    buf: &mut [u8],
) -> Result<(), LogPageError> {
    let dwords = (buf.len() / 4) as u32;
    let numd = dwords.saturating_sub(1);
    let mut cmd = NvmePassthru {
        opcode: 0x02,
        nsid: 0xFFFF_FFFF,
        addr: buf.as_mut_ptr() as u64,
        data_len: buf.len() as u32,
        cdw10: ((numd & 0xFFFF) << 16) | u32::from(lid),
        cdw11: (numd >> 16) | (u32::from(lsi) << 16),
        timeout_ms: 5_000,
        ..Default::default()
    };
    // SAFETY: `cmd` is a valid nvme_passthru_cmd whose data pointer and
    // length describe `buf`, writable for the call's duration; the kernel
    // checks the fd is an NVMe device and fails with ENOTTY otherwise.
    let rc = unsafe { libc::ioctl(device.as_raw_fd(), NVME_IOCTL_ADMIN_CMD as _, &mut cmd) };
    match rc {
        0 => Ok(()),
        rc if rc > 0 => Err(LogPageError::Status(rc)),
        _ => Err(LogPageError::Io(io::Error::last_os_error())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_passthru_struct_has_the_kernel_layout() {
        assert_eq!(std::mem::size_of::<NvmePassthru>(), 72);
        assert_eq!(NVME_IOCTL_ADMIN_CMD, 0xC048_4E41);
    }
}
