//! I/O engines: one interface over synchronous `pread`/`pwrite` (`psync`)
//! and `io_uring`, so the measuring loops are written once.
//!
//! An engine has `depth` slots, each with its own aligned buffer. The loop
//! queues an operation in a free slot, submits, and gets back completions
//! carrying the slot and the kernel's result (bytes or `-errno`), as
//! io_uring reports them. Timing stays in the loop: an engine never reads
//! the clock.

pub mod psync;
mod sys;
pub mod uring;

use std::io;

/// What an operation does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dir {
    /// Read a block.
    Read = 0,
    /// Write a block.
    Write = 1,
    /// `fdatasync` the file.
    Fsync = 2,
}

impl Dir {
    /// All directions, in series order.
    pub const ALL: [Dir; 3] = [Dir::Read, Dir::Write, Dir::Fsync];

    /// The series tag of this direction.
    pub fn tag(self) -> &'static str {
        match self {
            Dir::Read => "read",
            Dir::Write => "write",
            Dir::Fsync => "fsync",
        }
    }
}

/// One operation for a slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Op {
    /// Read, write or fsync.
    pub dir: Dir,
    /// Byte offset in the file or device (ignored by fsync).
    pub offset: u64,
    /// The slot whose buffer is used; its completion names it.
    pub slot: usize,
}

/// A finished operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The slot of the operation.
    pub slot: usize,
    /// Bytes transferred, or `-errno`.
    pub result: i32,
}

/// `depth` buffers of `block` bytes, each aligned to `align` bytes (for
/// O_DIRECT), in one allocation that never moves.
#[derive(Debug)]
pub struct IoBuffers {
    memory: Vec<u8>,
    start: usize,
    block: usize,
    depth: usize,
}

impl IoBuffers {
    /// Allocates the buffers and fills them with random, incompressible
    /// bytes from `seed` (so a compressing device cannot shrink the writes).
    pub fn new(depth: usize, block: usize, align: usize, seed: u64) -> Self {
        let align = align.max(1);
        let mut memory = vec![0u8; depth * block + align];
        let start = memory.as_ptr().align_offset(align);
        fill_random(&mut memory, seed);
        IoBuffers {
            memory,
            start,
            block,
            depth,
        }
    }

    /// The block size.
    pub fn block(&self) -> usize {
        self.block
    }

    /// How many buffers.
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// The buffer of `slot`.
    pub fn slot(&self, slot: usize) -> &[u8] {
        let at = self.start + slot * self.block;
        &self.memory[at..at + self.block]
    }

    /// The buffer of `slot`, writable.
    pub fn slot_mut(&mut self, slot: usize) -> &mut [u8] {
        let at = self.start + slot * self.block;
        &mut self.memory[at..at + self.block]
    }

    /// All buffers as one aligned region (for io_uring registration).
    pub fn region_mut(&mut self) -> &mut [u8] {
        let len = self.depth * self.block;
        &mut self.memory[self.start..self.start + len]
    }
}

/// Fills `bytes` with SplitMix64 output from `seed`.
pub fn fill_random(bytes: &mut [u8], seed: u64) {
    let mut rng = crate::record::schedule::SplitMix64::new(seed);
    for chunk in bytes.chunks_mut(8) {
        let word = rng.next_u64().to_le_bytes();
        chunk.copy_from_slice(&word[..chunk.len()]);
    }
}

/// An I/O engine.
pub trait Engine {
    /// How many operations may be in flight.
    fn depth(&self) -> usize;

    /// The buffer of a slot that is not in flight (to fill before a write or
    /// check after a read).
    fn buffer_mut(&mut self, slot: usize) -> &mut [u8];

    /// Queues an operation; it starts at the next [`Engine::flush`] or
    /// [`Engine::submit`].
    fn queue(&mut self, op: Op) -> io::Result<()>;

    /// Starts the queued operations without waiting for any. An engine that
    /// cannot start an operation without waiting for it (psync) starts it at
    /// the next [`Engine::submit`] instead.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }

    /// Submits what was queued and waits until at least `min_complete`
    /// operations completed or `timeout_ns` passed, appending every
    /// completion available to `out`.
    fn submit(
        &mut self,
        min_complete: usize,
        timeout_ns: Option<u64>,
        out: &mut Vec<Completion>,
    ) -> io::Result<()>;
}

/// Why an engine could not be created.
#[derive(Debug)]
pub struct Unavailable {
    /// What failed, for the user.
    pub why: String,
}
