//! The `psync` engine: `pread`/`pwrite`/`fdatasync` on the calling thread,
//! one operation at a time — fio's `psync`. Submitting runs the queued
//! operation; its completion is ready when `submit` returns.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use super::{Completion, Dir, Engine, IoBuffers, Op};

/// Synchronous I/O on one file.
#[derive(Debug)]
pub struct Psync {
    file: File,
    buffers: IoBuffers,
    queued: Option<Op>,
}

impl Psync {
    /// An engine over `file` with one buffer of `buffers.block()` bytes.
    pub fn new(file: File, buffers: IoBuffers) -> Self {
        Psync {
            file,
            buffers,
            queued: None,
        }
    }
}

fn result_of(outcome: io::Result<usize>) -> i32 {
    match outcome {
        Ok(n) => i32::try_from(n).unwrap_or(i32::MAX),
        Err(e) => -e.raw_os_error().unwrap_or(libc::EIO),
    }
}

impl Engine for Psync {
    fn depth(&self) -> usize {
        self.buffers.depth()
    }

    fn buffer_mut(&mut self, slot: usize) -> &mut [u8] {
        self.buffers.slot_mut(slot)
    }

    fn queue(&mut self, op: Op) -> io::Result<()> {
        if self.queued.is_some() {
            return Err(io::Error::other(
                "psync runs one operation at a time (use --engine io_uring for --iodepth > 1)",
            ));
        }
        self.queued = Some(op);
        Ok(())
    }

    fn submit(
        &mut self,
        _min_complete: usize,
        _timeout_ns: Option<u64>,
        out: &mut Vec<Completion>,
    ) -> io::Result<()> {
        let Some(op) = self.queued.take() else {
            return Ok(());
        };
        // One call, no retry of short transfers: a short read or write is
        // reported as such, as the kernel returned it.
        let outcome = match op.dir {
            Dir::Read => self.file.read_at(self.buffers.slot_mut(op.slot), op.offset),
            Dir::Write => self.file.write_at(self.buffers.slot(op.slot), op.offset),
            Dir::Fsync => self.file.sync_data().map(|()| 0),
        };
        out.push(Completion {
            slot: op.slot,
            result: result_of(outcome),
        });
        Ok(())
    }
}
