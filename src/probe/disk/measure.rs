//! The measuring loops, written once over any [`Engine`], [`Clock`] and
//! [`Sink`], so tests can drive them with a fake clock.
//!
//! - Closed loop: `--iodepth` operations kept in flight; each is timed from
//!   its submission to its reaping. A stall delays the next submissions and
//!   hides behind the few operations caught in it (labelled closed loop).
//! - Open loop (`--rate`): operations are due on the schedule whatever
//!   happened; each records latency from its *intended* start and service
//!   time from its actual submission, so a stall shows as its full backlog.
//!
//! Failed operations are counted per direction and errno, never recorded as
//! latencies and never dropped; a full disk (ENOSPC) stops the job.

use std::collections::BTreeMap;

use serde::Serialize;

use super::engine::{Completion, Dir, Engine, Op, fill_random};
use super::sys::{CpuTime, thread_cpu};
use super::workload::Workload;
use crate::record::{Clock, Schedule, SeriesId, Sink, StopFlag};

/// Which series each direction records into.
#[derive(Clone, Copy, Debug, Default)]
pub struct SeriesMap {
    /// Latency (closed loop: from submission; open loop: from intended start).
    pub latency: [Option<SeriesId>; 3],
    /// Service time from submission (open loop only).
    pub service: [Option<SeriesId>; 3],
    /// `--slat-clat`: time in the submitting call (fio's slat).
    pub slat: [Option<SeriesId>; 3],
    /// `--slat-clat`: from the submitting call's return to the completion
    /// (fio's clat).
    pub clat: [Option<SeriesId>; 3],
    /// Open loop: how late each operation was submitted against the later
    /// of its intended start and a free slot (the generator's own lag),
    /// one series for the job's whole schedule (the
    /// direction is drawn after the due time, so lag is the generator's,
    /// not a direction's).
    pub lag: Option<SeriesId>,
}

impl SeriesMap {
    /// Whether submission is a call of its own, timed apart from the wait.
    fn splits_submission(&self) -> bool {
        self.slat.iter().chain(&self.clat).any(Option::is_some)
    }
}

/// What one job did, beside its histograms.
#[derive(Clone, Debug, Default, Serialize)]
pub struct JobStats {
    /// Successful operations per direction (read, write, fsync).
    pub ios: [u64; 3],
    /// Bytes transferred per direction.
    pub bytes: [u64; 3],
    /// Failed operations by "direction errno" (e.g. `write ENOSPC`), short
    /// transfers as "direction short", verify mismatches as "read verify-mismatch".
    pub faults: BTreeMap<String, u64>,
    /// Why the job stopped early, if it did.
    pub fatal: Option<String>,
    /// CPU time of the job's thread while measuring.
    #[serde(skip)]
    pub cpu: CpuTime,
}

impl JobStats {
    /// Adds another job's counts.
    pub fn merge(&mut self, other: &JobStats) {
        for i in 0..3 {
            self.ios[i] += other.ios[i];
            self.bytes[i] += other.bytes[i];
        }
        for (k, v) in &other.faults {
            *self.faults.entry(k.clone()).or_default() += v;
        }
        if self.fatal.is_none() {
            self.fatal.clone_from(&other.fatal);
        }
        self.cpu.user_ns += other.cpu.user_ns;
        self.cpu.sys_ns += other.cpu.sys_ns;
    }

    /// Every operation that completed, successfully or not.
    pub fn total_ios(&self) -> u64 {
        self.ios.iter().sum::<u64>() + self.faults.values().sum::<u64>()
    }
}

/// The errno's symbolic name where common, else its number.
pub fn errno_name(errno: i32) -> String {
    let name = match errno {
        libc::EIO => "EIO",
        libc::ENOSPC => "ENOSPC",
        libc::EINVAL => "EINVAL",
        libc::EAGAIN => "EAGAIN",
        libc::EBADF => "EBADF",
        libc::EFAULT => "EFAULT",
        libc::EROFS => "EROFS",
        libc::EDQUOT => "EDQUOT",
        libc::EFBIG => "EFBIG",
        libc::ENXIO => "ENXIO",
        libc::ENODEV => "ENODEV",
        libc::ETIMEDOUT => "ETIMEDOUT",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ECANCELED => "ECANCELED",
        libc::EINTR => "EINTR",
        libc::EPERM => "EPERM",
        libc::EACCES => "EACCES",
        _ => return format!("errno{errno}"),
    };
    name.into()
}

/// The content a verified block at `offset` must hold.
pub fn fill_pattern(buffer: &mut [u8], seed: u64, offset: u64) {
    fill_random(buffer, seed ^ offset.wrapping_mul(0x9E37_79B9_7F4A_7C15));
}

/// One job's loop state.
pub struct Job<'a, E: Engine, S: Sink> {
    /// The engine.
    pub engine: &'a mut E,
    /// The operation stream.
    pub workload: &'a mut Workload,
    /// Where values go.
    pub sink: &'a mut S,
    /// The series of each direction.
    pub series: SeriesMap,
    /// Counts.
    pub stats: &'a mut JobStats,
    /// `--verify SEED`: writes carry a pattern per offset; reads check it.
    pub verify: Option<u64>,
    /// `--submit-batch`: queued operations are submitted once this many wait.
    pub submit_batch: usize,
    /// Raised by Ctrl-C, or by this or another job on a fatal error.
    pub stop: &'a StopFlag,
}

struct Slot {
    dir: Dir,
    offset: u64,
    intended: u64,
    /// Just before the submitting call.
    started: u64,
    /// When the submitting call returned (with `--slat-clat`).
    issued: u64,
}

impl<E: Engine, S: Sink> Job<'_, E, S> {
    fn prepare_op(
        &mut self,
        slot: usize,
        slots: &mut [Slot],
        intended: u64,
    ) -> std::io::Result<()> {
        self.sink.begin(intended);
        let (dir, offset) = self.workload.next_op();
        if let (Some(seed), Dir::Write) = (self.verify, dir) {
            fill_pattern(self.engine.buffer_mut(slot), seed, offset);
        }
        self.engine.queue(Op { dir, offset, slot })?;
        slots[slot] = Slot {
            dir,
            offset,
            intended,
            started: 0,
            issued: 0,
        };
        Ok(())
    }

    /// Accounts one completion at `now`; returns false if the job must stop.
    fn complete(
        &mut self,
        c: Completion,
        slot: &Slot,
        now: u64,
        open_loop: bool,
        expect: &mut Vec<u8>,
    ) -> bool {
        let d = slot.dir as usize;
        let expected = match slot.dir {
            Dir::Fsync => 0,
            _ => self.workload.block(),
        };
        if c.result < 0 || c.result as u64 != expected {
            self.sink.fault(now);
        }
        if c.result < 0 {
            let errno = -c.result;
            *self
                .stats
                .faults
                .entry(format!("{} {}", slot.dir.tag(), errno_name(errno)))
                .or_default() += 1;
            if errno == libc::ENOSPC || errno == libc::EDQUOT {
                self.stats.fatal = Some(format!(
                    "the disk is full ({}) at offset {}",
                    errno_name(errno),
                    slot.offset
                ));
                return false;
            }
            return true;
        }
        if c.result as u64 != expected {
            *self
                .stats
                .faults
                .entry(format!("{} short", slot.dir.tag()))
                .or_default() += 1;
            return true;
        }
        if let (Some(seed), Dir::Read) = (self.verify, slot.dir) {
            // The buffer is the queue's, reused: no allocation per read.
            expect.resize(self.workload.block() as usize, 0);
            fill_pattern(expect, seed, slot.offset);
            if self.engine.buffer_mut(c.slot) != expect.as_slice() {
                self.sink.fault(now);
                *self
                    .stats
                    .faults
                    .entry("read verify-mismatch".into())
                    .or_default() += 1;
                return true;
            }
        }
        self.stats.ios[d] += 1;
        self.stats.bytes[d] += c.result as u64;
        if let Some(series) = self.series.latency[d] {
            let from = if open_loop {
                slot.intended
            } else {
                slot.started
            };
            self.sink.record(now, series, now.saturating_sub(from));
        }
        if let Some(series) = self.series.service[d] {
            self.sink
                .record(now, series, now.saturating_sub(slot.started));
        }
        if let Some(series) = self.series.slat[d] {
            self.sink
                .record(now, series, slot.issued.saturating_sub(slot.started));
        }
        if let Some(series) = self.series.clat[d] {
            self.sink
                .record(now, series, now.saturating_sub(slot.issued));
        }
        true
    }

    /// Closed loop until `end_ns`: keeps every slot busy. Returns when it stopped.
    pub fn closed_loop<C: Clock>(&mut self, clock: &C, end_ns: u64) -> std::io::Result<u64> {
        let cpu_start = thread_cpu();
        let mut queue = Queue::new(self.engine.depth());
        let mut issuing = true;
        loop {
            let now = clock.now();
            if issuing && (now >= end_ns || self.stop.is_raised()) {
                issuing = false;
            }
            if issuing {
                while let Some(slot) = queue.free.pop() {
                    self.prepare_op(slot, &mut queue.slots, now)?;
                    queue.queued.push(slot);
                    self.submit_full_batch(clock, &mut queue)?;
                }
            }
            if queue.idle() {
                break;
            }
            if !self.submit_and_complete(clock, &mut queue, None, false)? {
                issuing = false;
            }
        }
        self.stats.cpu = cpu_since(cpu_start);
        Ok(clock.now())
    }

    /// Open loop on `schedule` until `end_ns`. Returns when it stopped.
    pub fn open_loop<C: Clock>(
        &mut self,
        clock: &C,
        schedule: &mut Schedule,
        end_ns: u64,
    ) -> std::io::Result<u64> {
        let cpu_start = thread_cpu();
        let mut queue = Queue::new(self.engine.depth());
        let mut issuing = true;
        let mut due = schedule.next_intended();
        loop {
            let mut now = clock.now();
            if issuing && (due >= end_ns || self.stop.is_raised()) {
                issuing = false;
            }
            if issuing && queue.in_flight == 0 && due > now {
                // The operation's window opens before the wait for it.
                self.sink.begin(due);
                // Idle until the next operation is due (in slices, so a stop is seen).
                let target = due.min(now + SLICE_NS);
                clock.sleep_until(target);
                if target < due {
                    continue;
                }
                now = clock.now();
            }
            if issuing {
                while due <= now && due < end_ns {
                    let Some(slot) = queue.free.pop() else { break };
                    self.prepare_op(slot, &mut queue.slots, due)?;
                    queue.queued.push(slot);
                    self.submit_full_batch(clock, &mut queue)?;
                    due = schedule.next_intended();
                }
            }
            if queue.idle() {
                if issuing {
                    continue;
                }
                break;
            }
            // Wait for a completion, but not past the next due time when a
            // slot is free to issue it.
            let wake_at = (issuing && !queue.free.is_empty()).then_some(due);
            if !self.submit_and_complete(clock, &mut queue, wake_at, true)? {
                issuing = false;
            }
        }
        self.stats.cpu = cpu_since(cpu_start);
        Ok(clock.now())
    }

    /// Submits the queued operations without waiting once `--submit-batch`
    /// of them are queued, so the device gets each as soon as it is ready.
    /// With no free slot left, the wait that follows submits them in the
    /// same call (unless `--slat-clat` times the submission apart).
    fn submit_full_batch<C: Clock>(&mut self, clock: &C, queue: &mut Queue) -> std::io::Result<()> {
        let waits_next = queue.free.is_empty() && !self.series.splits_submission();
        if queue.queued.len() < self.submit_batch || waits_next {
            return Ok(());
        }
        self.submit_queued(clock, queue)
    }

    /// Submits the queued operations without waiting, stamped just before
    /// the call (and, with `--slat-clat`, when it returned).
    fn submit_queued<C: Clock>(&mut self, clock: &C, queue: &mut Queue) -> std::io::Result<()> {
        let split = self.series.splits_submission();
        if split {
            queue.submitting.clone_from(&queue.queued);
        }
        self.mark_submitted(queue, clock.now());
        self.engine.flush()?;
        if split {
            let issued = clock.now();
            for &slot in &queue.submitting {
                queue.slots[slot].issued = issued;
            }
        }
        Ok(())
    }

    /// Stamps the queued operations as submitted at `now`, recording how
    /// late each left against the later of its intended start and the
    /// moment a slot was free (open loop): the generator's own lag.
    #[inline]
    fn mark_submitted(&mut self, queue: &mut Queue, now: u64) {
        if let Some(series) = self.series.lag {
            for &slot in &queue.queued {
                // Not before a slot was free: waiting for one is the target's.
                let ready = queue.slots[slot].intended.max(queue.slot_free_at);
                self.sink.record(now, series, now.saturating_sub(ready));
            }
        }
        queue.mark_submitted(now);
    }

    /// Submits what is queued (stamped as late as possible: right before
    /// the call), waits for a completion — or until `wake_at` — and records
    /// each one. False when a completion stops the job (a full disk).
    fn submit_and_complete<C: Clock>(
        &mut self,
        clock: &C,
        queue: &mut Queue,
        wake_at: Option<u64>,
        open_loop: bool,
    ) -> std::io::Result<bool> {
        if self.series.splits_submission() && !queue.queued.is_empty() {
            // Submitted by a call of its own, so the wait is timed apart.
            self.submit_queued(clock, queue)?;
        }
        let submitted = clock.now();
        self.mark_submitted(queue, submitted);
        let timeout = wake_at.map(|due| due.saturating_sub(submitted).clamp(1, SLICE_NS));
        self.engine.submit(1, timeout, &mut queue.done)?;
        let now = clock.now();
        let mut go_on = true;
        for c in queue.done.drain(..) {
            queue.in_flight -= 1;
            if queue.free.is_empty() {
                queue.slot_free_at = now;
            }
            queue.free.push(c.slot);
            let slot = std::mem::replace(&mut queue.slots[c.slot], empty_slot());
            if !self.complete(c, &slot, now, open_loop, &mut queue.expect) {
                go_on = false;
                self.stop.raise();
            }
        }
        Ok(go_on)
    }
}

/// One job's queue: its slots, which are free, which wait to be submitted,
/// and how many are in flight.
struct Queue {
    slots: Vec<Slot>,
    free: Vec<usize>,
    queued: Vec<usize>,
    /// The slots of the call being made (`--slat-clat`).
    submitting: Vec<usize>,
    done: Vec<Completion>,
    in_flight: usize,
    /// When a slot last became free after all were busy (0: never full):
    /// no operation could be submitted before it.
    slot_free_at: u64,
    /// `--verify`: the pattern a read should hold.
    expect: Vec<u8>,
}

impl Queue {
    fn new(depth: usize) -> Self {
        Queue {
            slots: (0..depth).map(|_| empty_slot()).collect(),
            free: (0..depth).rev().collect(),
            queued: Vec::with_capacity(depth),
            submitting: Vec::with_capacity(depth),
            done: Vec::with_capacity(depth),
            in_flight: 0,
            slot_free_at: 0,
            expect: Vec::new(),
        }
    }

    /// Stamps the queued operations as submitted at `now`; they are in flight.
    fn mark_submitted(&mut self, now: u64) {
        for &slot in &self.queued {
            self.slots[slot].started = now;
        }
        self.in_flight += self.queued.len();
        self.queued.clear();
    }

    /// Nothing in flight and nothing to submit.
    fn idle(&self) -> bool {
        self.in_flight == 0 && self.queued.is_empty()
    }
}

/// The longest single wait, so a stop request is seen within it.
pub const SLICE_NS: u64 = 100_000_000;

fn empty_slot() -> Slot {
    Slot {
        dir: Dir::Read,
        offset: 0,
        intended: 0,
        started: 0,
        issued: 0,
    }
}

fn cpu_since(start: CpuTime) -> CpuTime {
    let now = thread_cpu();
    CpuTime {
        user_ns: now.user_ns.saturating_sub(start.user_ns),
        sys_ns: now.sys_ns.saturating_sub(start.sys_ns),
    }
}

/// A sink that keeps nothing: the warm-up (`--ramp`) is run, not recorded.
#[derive(Debug, Default)]
pub struct Discard;

impl Sink for Discard {
    fn record(&mut self, _now_ns: u64, _series: SeriesId, _value: u64) {}
}
