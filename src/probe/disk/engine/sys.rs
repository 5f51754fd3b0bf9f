//! The io_uring engine's system calls that need `unsafe`: the [`Ring`]
//! that owns the submission and completion queues, the file and the
//! buffers, so neither can be freed while the kernel may use them. Each
//! `unsafe` block says why it is sound.
#![allow(unsafe_code)]

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

use io_uring::{IoUring, opcode, types};

use super::{Completion, Dir, IoBuffers, Op};

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
