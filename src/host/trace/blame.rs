//! Per-operation blame (`--kernel blame`), the user-space half: each probe
//! thread's counters as the BPF programs keep them (`bpf/blame.h`), read
//! by the thread itself with plain loads at an operation's start and end,
//! and the vector that splits one operation's latency into causes.
//!
//! The kernel splits the thread's time by state (running, runnable,
//! blocked, blocked until a timer) from the operation's intended start,
//! which the thread writes into its counters first, and moves into causes
//! what happened on its CPU meanwhile (hard IRQs, softirqs, the idle exit,
//! steal). [`vector`] turns the difference of two readings into causes
//! that add up to the latency at most; the rest is `unexplained`.
#![allow(unsafe_code)]

use std::collections::BTreeMap;
use std::sync::Arc;

use super::sys::Mapping;
use crate::host::root::HostRoot;

/// Probe threads the kernel can keep counters for (`BLAME_THREADS`).
pub const THREADS: usize = super::sys::BLAME_THREADS;
/// Culprits a thread's ring holds (`HOLDERS`).
pub const HOLDERS: usize = 8;
/// Tasks named per thread as run before untraced switches (`SUSPECTS`).
pub const SUSPECTS: usize = 3;
/// The ends of a thread's last spans kept (`TRAIL`).
pub const TRAIL: usize = 8;
/// IRQs told apart per thread (`IRQ_SLOTS`); the rest are `irq.other`.
pub const IRQ_SLOTS: usize = 4;
/// Softirq kinds, in the kernel's order.
pub const SOFTIRQS: [&str; 10] = [
    "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU",
];
/// Idle states told apart in a vector.
pub const IDLE_STATES: usize = 8;

/// A trail's span in no state: a switch to the thread went untraced.
pub(super) const UNKNOWN: usize = 0;
pub(super) const RUNNING: usize = 1;
pub(super) const RUNNABLE: usize = 2;
pub(super) const BLOCKED: usize = 3;
pub(super) const BLOCKED_TIMER: usize = 4;

/// A task that held a waiting thread's CPU (`struct holder`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Holder {
    /// 1, 2, … in the order written; 0: never written.
    pub seq: u64,
    /// How long it held the CPU inside the window, ns.
    pub ns: u64,
    /// The window it was counted in.
    pub window: u64,
    /// Its thread id.
    pub pid: u32,
    pad: u32,
    /// Its command name, NUL-padded.
    pub comm: [u8; 16],
}

/// The end of one of a thread's spans in a state (`struct span_end`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct SpanEnd {
    /// The span ended then (and the next began).
    pub(super) at: u64,
    /// Its state, as counted ([`UNKNOWN`]: in none).
    pub(super) state: u32,
    pub(super) pad: u32,
}

/// One thread's counters (`struct cauda_blame`), all ns unless said.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Counters {
    /// The operation's intended start (written by the thread).
    pub window: u64,
    seq: u64,
    pub(super) since: u64,
    steal_since: u64,
    pub(super) state: u32,
    prev_state: u32,
    /// The CPU it last ran on, or waits on.
    pub cpu: u32,
    /// 1 + the idle state of the last idle exit counted.
    pub idle_state: u32,
    pub(super) time: [u64; 8],
    pub(super) stolen: [u64; 8],
    irq_ns: u64,
    irq_slot_ns: [u64; IRQ_SLOTS],
    /// 1 + the IRQ numbers of the first four IRQs seen on its CPU.
    pub irq: [u32; IRQ_SLOTS],
    pub(super) softirq_ns: [u64; 10],
    pub(super) idle_exit_ns: u64,
    steal_ns: u64,
    pub(super) block_queue_ns: u64,
    pub(super) block_device_ns: u64,
    pub(super) requests: u64,
    faults: u64,
    holder_seq: u64,
    /// Wake-ups that found it running with no switch to it traced.
    pub missed: u64,
    left_to: u32,
    /// 1 + the pids of the first tasks it had switched out to before a
    /// switch back to it went untraced (0: none).
    pub suspect: [u32; SUSPECTS],
    /// How many untraced switches came after switching to each.
    pub suspect_missed: [u64; SUSPECTS],
    holders: [Holder; HOLDERS],
    /// How many span ends were written, the last [`TRAIL`] in `trail`.
    pub(super) trail_n: u64,
    pub(super) trail: [SpanEnd; TRAIL],
}

// The C struct's size; a mismatch would read garbage. The copies go by
// 8-byte words.
const _: () = assert!(std::mem::size_of::<Counters>() == super::sys::BLAME_COUNTER_BYTES);
const _: () = assert!(std::mem::offset_of!(Counters, holders) == 416);
const _: () = assert!(std::mem::offset_of!(Counters, trail_n) == 800);

/// The whole counters, in u64 words.
const ALL_WORDS: std::ops::Range<usize> = 0..std::mem::size_of::<Counters>() / 8;
/// The counters before the culprits' ring, in u64 words.
const HEAD_WORDS: std::ops::Range<usize> = 0..std::mem::offset_of!(Counters, holders) / 8;
/// The trail (its count and its entries), in u64 words.
const TRAIL_WORDS: std::ops::Range<usize> =
    std::mem::offset_of!(Counters, trail_n) / 8..std::mem::size_of::<Counters>() / 8;

/// The part of a vector at each index (named in the run file by
/// `probe::run::blame_report`).
pub mod part {
    /// Runnable, waiting for its CPU.
    pub const RUN_QUEUE: usize = 0;
    /// Hard IRQs, by the thread's IRQ slot (`IRQ + slot`), then the rest.
    pub const IRQ: usize = 1;
    /// IRQs beyond the four told apart.
    pub const IRQ_OTHER: usize = IRQ + super::IRQ_SLOTS;
    /// Softirqs by kind (`SOFTIRQ + kind`).
    pub const SOFTIRQ: usize = IRQ_OTHER + 1;
    /// Idle exit by idle state (`IDLE_EXIT + state`).
    pub const IDLE_EXIT: usize = SOFTIRQ + 10;
    /// Blocked until a timer woke it, beyond idle exit and interrupts.
    pub const TIMER: usize = IDLE_EXIT + super::IDLE_STATES;
    /// Its I/O in the block layer's queue.
    pub const BLOCK_QUEUE: usize = TIMER + 1;
    /// Its I/O in the device.
    pub const BLOCK_DEVICE: usize = BLOCK_QUEUE + 1;
    /// On CPU.
    pub const RUNNING: usize = BLOCK_DEVICE + 1;
    /// Asleep on anything else.
    pub const BLOCKED: usize = RUNNING + 1;
    /// The hypervisor's.
    pub const STEAL: usize = BLOCKED + 1;
    /// No event accounts for it.
    pub const UNEXPLAINED: usize = STEAL + 1;
    /// How many parts.
    pub const PARTS: usize = UNEXPLAINED + 1;
}

/// One operation's latency split into parts (indexed by [`part`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Vector {
    /// Time per part, ns; adds up to the latency.
    pub parts: [u64; part::PARTS],
    /// Page faults inside the window.
    pub faults: u64,
    /// Its own block requests that completed inside the window.
    pub requests: u64,
    /// The whole time it was runnable inside the window, as runqslower
    /// counts a wait (woken -> running): its run-queue part plus the idle
    /// exit, interrupts and steal that fell in that time.
    pub runnable: u64,
}

/// The blame counters of every probe thread, shared with the kernel.
#[derive(Clone)]
pub struct Table {
    mapping: Arc<Mapping>,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("blame::Table")
    }
}

impl Table {
    pub(super) fn new(mapping: Arc<Mapping>) -> Table {
        Table { mapping }
    }

    /// Thread `slot`'s counters.
    pub fn cell(&self, slot: usize) -> Cell {
        assert!(slot < THREADS, "blame slot {slot} past the table");
        let base = self.mapping.bytes().cast::<Counters>();
        Cell {
            _table: self.clone(),
            // SAFETY: `slot < THREADS` and the mapping holds THREADS
            // counters, so the pointer stays inside it.
            at: unsafe { base.add(slot) },
        }
    }
}

/// One thread's counters, read and written by that thread only (the
/// kernel writes them too, inside its programs).
pub struct Cell {
    _table: Table,
    at: *mut Counters,
}

impl std::fmt::Debug for Cell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("blame::Cell")
    }
}

// SAFETY: the mapping lives as long as `_table`; the counters are read with
// volatile loads and a sequence check, and the one field user space writes
// (`window`) is an aligned u64 the kernel only reads.
unsafe impl Send for Cell {}

impl Cell {
    /// Starts an operation's window at `intended_ns` (monotonic): the
    /// kernel counts the thread's time from then on.
    #[inline]
    pub fn open(&self, intended_ns: u64) {
        // SAFETY: `at` points to live, aligned counters (see `Table::cell`).
        unsafe { std::ptr::addr_of_mut!((*self.at).window).write_volatile(intended_ns) }
    }

    /// The counters now, with the culprits' ring: copied until no kernel
    /// update overlapped the copy (eight tries; a thread reads its own
    /// counters, which change under it only when an interrupt or a switch
    /// lands in the copy).
    #[inline]
    pub fn read(&self) -> Counters {
        let mut copy = Counters::default();
        self.copy_into(&mut copy, &[ALL_WORDS]);
        copy
    }

    /// The counters now without the culprits' ring, with the trail:
    /// what a backlogged operation's opening needs (`backlog`), written
    /// over `into` in place.
    #[inline]
    pub fn read_head_and_trail_into(&self, into: &mut Counters) {
        self.copy_into(into, &[HEAD_WORDS, TRAIL_WORDS]);
    }

    /// The counters now without the culprits' ring or the trail (what an
    /// operation's start needs), written over `into` in place (no
    /// 936-byte value made and moved at every operation).
    #[inline]
    pub fn read_head_into(&self, into: &mut Counters) {
        self.copy_into(into, &[HEAD_WORDS]);
    }

    /// Copies the counters' `ranges` (in u64 words) as of one moment.
    #[inline]
    fn copy_into(&self, into: &mut Counters, ranges: &[std::ops::Range<usize>]) {
        use std::sync::atomic::{Ordering::Acquire, fence};
        let seq = |c: *const Counters| {
            // SAFETY: as in `open`.
            unsafe { std::ptr::addr_of!((*c).seq).read_volatile() }
        };
        let to = std::ptr::from_mut(into).cast::<u64>();
        let from = self.at.cast::<u64>().cast_const();
        for _ in 0..8 {
            let before = seq(self.at);
            // The copy's loads after the first read of `seq`, and before
            // the second (the kernel's bumps are fully ordered).
            fence(Acquire);
            for range in ranges {
                for i in range.clone() {
                    // SAFETY: every range lies inside the counters (the
                    // `*_WORDS` constants; both are 8-byte aligned,
                    // `Counters` is `repr(C)` of u64s and u32 pairs, any
                    // bit pattern valid); the source is live (see `open`)
                    // and a torn copy is detected by `seq`.
                    unsafe { to.add(i).write(from.add(i).read_volatile()) };
                }
            }
            fence(Acquire);
            if before % 2 == 0 && seq(self.at) == before {
                break;
            }
        }
    }
}

/// The time `end` spent in `state` after `start`, counting the state it is
/// still in up to `now` (not before `window`).
fn time_in(start: &Counters, end: &Counters, state: usize, window: u64, now: u64) -> u64 {
    // The thread reads its counters while it runs: a state other than
    // running means a switch to it went untraced, and the time since is
    // not counted (it is unexplained).
    let open = if end.state as usize == state && state == RUNNING {
        now.saturating_sub(end.since.max(window))
    } else {
        0
    };
    end.time[state].saturating_sub(start.time[state]) + open
}

/// Splits an operation's latency (`window` to `now`, `latency_ns` long)
/// into parts, from the thread's counters at its start and at its end.
/// The parts never add up to more than the latency: when they would
/// (interrupt and steal time overlapping), they are scaled down to it.
pub fn vector(start: &Counters, end: &Counters, now: u64, latency_ns: u64) -> Vector {
    let window = end.window;
    let d = |a: u64, b: u64| b.saturating_sub(a);
    let stolen = |s: usize| d(start.stolen[s], end.stolen[s]);
    let mut parts = [0u64; part::PARTS];
    parts[part::RUNNING] =
        time_in(start, end, RUNNING, window, now).saturating_sub(stolen(RUNNING));
    let runnable = time_in(start, end, RUNNABLE, window, now);
    parts[part::RUN_QUEUE] = runnable.saturating_sub(stolen(RUNNABLE));
    let asleep = time_in(start, end, BLOCKED, window, now);
    let by_timer = time_in(start, end, BLOCKED_TIMER, window, now);
    let blocked = (asleep + by_timer).saturating_sub(stolen(BLOCKED) + stolen(BLOCKED_TIMER));
    // Its own requests' time, at most the time it slept (with requests in
    // flight together, their times overlap: shared out in proportion).
    let (queue, device) = (
        d(start.block_queue_ns, end.block_queue_ns),
        d(start.block_device_ns, end.block_device_ns),
    );
    let io = queue + device;
    parts[part::BLOCK_QUEUE] = scaled_down(queue, io, blocked);
    parts[part::BLOCK_DEVICE] = scaled_down(device, io, blocked);
    let rest = blocked - parts[part::BLOCK_QUEUE] - parts[part::BLOCK_DEVICE];
    if asleep + by_timer > 0 {
        parts[part::TIMER] =
            (u128::from(rest) * u128::from(by_timer) / u128::from(asleep + by_timer)) as u64;
    }
    parts[part::BLOCKED] = rest - parts[part::TIMER];
    let mut told = 0;
    for slot in 0..IRQ_SLOTS {
        parts[part::IRQ + slot] = d(start.irq_slot_ns[slot], end.irq_slot_ns[slot]);
        told += parts[part::IRQ + slot];
    }
    parts[part::IRQ_OTHER] = d(start.irq_ns, end.irq_ns).saturating_sub(told);
    for kind in 0..10 {
        parts[part::SOFTIRQ + kind] = d(start.softirq_ns[kind], end.softirq_ns[kind]);
    }
    let idle = (end.idle_state as usize)
        .saturating_sub(1)
        .min(IDLE_STATES - 1);
    parts[part::IDLE_EXIT + idle] = d(start.idle_exit_ns, end.idle_exit_ns);
    parts[part::STEAL] = d(start.steal_ns, end.steal_ns);
    fit(&mut parts, latency_ns);
    Vector {
        parts,
        faults: d(start.faults, end.faults),
        requests: d(start.requests, end.requests),
        runnable: runnable.min(latency_ns),
    }
}

/// `x`, one of parts that add up to `of`, scaled so that they add up to
/// `to` where `of` is more (the parts are kept as they are otherwise).
pub fn scaled_down(x: u64, of: u64, to: u64) -> u64 {
    if of <= to {
        x
    } else {
        (u128::from(x) * u128::from(to) / u128::from(of)) as u64
    }
}

/// Scales the parts down to `latency_ns` where they add up to more, and
/// puts what they do not explain into `unexplained`.
pub(super) fn fit(parts: &mut [u64; part::PARTS], latency_ns: u64) {
    let total: u64 = parts.iter().sum();
    if total > latency_ns {
        let mut left = latency_ns;
        for p in parts.iter_mut() {
            *p = scaled_down(*p, total, latency_ns);
            left -= *p;
        }
        parts[part::UNEXPLAINED] += left;
    } else {
        parts[part::UNEXPLAINED] += latency_ns - total;
    }
}

/// The culprits written between two readings: (pid, comm, ns) each, in
/// the order written; and how many the ring had already overwritten.
pub fn culprits(start: &Counters, end: &Counters) -> (Vec<(u32, String, u64)>, u64) {
    let from = start.holder_seq + 1;
    let to = end.holder_seq;
    if to < from {
        return (Vec::new(), 0);
    }
    let lost = (to - from + 1).saturating_sub(HOLDERS as u64);
    let mut out = Vec::new();
    for seq in (from + lost)..=to {
        let h = &end.holders[(seq as usize) & (HOLDERS - 1)];
        if h.seq != seq || h.window < start.window {
            continue;
        }
        let len = h.comm.iter().position(|&b| b == 0).unwrap_or(16);
        out.push((h.pid, task_name(&h.comm[..len]), h.ns));
    }
    (out, lost)
}

/// A task's command name as the run file keeps it: any process may name
/// itself with any bytes (`prctl(PR_SET_NAME)`), and a control character
/// would make the file's reader refuse it, so each becomes `?` (as `ps`
/// shows it), and bytes that are not UTF-8 become U+FFFD.
pub fn task_name(comm: &[u8]) -> String {
    String::from_utf8_lossy(comm)
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// IRQ numbers' names as `/proc/interrupts` gives them (the handlers'
/// names after the chip and the hardware IRQ).
pub fn irq_names(root: &HostRoot) -> BTreeMap<u32, String> {
    let text = std::fs::read_to_string(root.path("/proc/interrupts")).unwrap_or_default();
    let mut lines = text.lines();
    let cpus = lines.next().map_or(0, |l| l.split_whitespace().count());
    lines
        .filter_map(|line| {
            let (number, rest) = line.trim_start().split_once(':')?;
            let number: u32 = number.parse().ok()?;
            let words: Vec<&str> = rest.split_whitespace().skip(cpus + 2).collect();
            let name = words.join(" ");
            (!name.is_empty() && crate::model::names::check_name("irq", &name).is_ok())
                .then_some((number, name))
        })
        .collect()
}

/// The names of CPU `cpu`'s idle states, in the kernel's order.
pub fn idle_state_names(root: &HostRoot, cpu: u32) -> Vec<String> {
    (0..IDLE_STATES)
        .map_while(|state| {
            let path = format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle/state{state}/name");
            let name = std::fs::read_to_string(root.path(&path)).ok()?;
            Some(name.trim().to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(state: usize, since: u64) -> Counters {
        Counters {
            window: 1_000,
            state: state as u32,
            since,
            ..Counters::default()
        }
    }

    #[test]
    fn a_wakeup_behind_a_hog_is_run_queue_then_running() {
        // Asleep before the window; woken at 1,100 (a timer), runnable
        // until 4,000, running since; latency measured at 4,050.
        let start = at(BLOCKED, 500);
        let mut end = at(RUNNING, 4_000);
        end.time[BLOCKED_TIMER] = 100;
        end.time[RUNNABLE] = 2_900;
        end.idle_exit_ns = 60;
        end.idle_state = 2;
        end.stolen[BLOCKED] = 60;
        let v = vector(&start, &end, 4_050, 3_050);
        assert_eq!(v.parts[part::RUN_QUEUE], 2_900);
        assert_eq!(v.parts[part::RUNNING], 50);
        assert_eq!(v.parts[part::IDLE_EXIT + 1], 60);
        assert_eq!(v.parts[part::TIMER], 40);
        assert_eq!(v.parts[part::UNEXPLAINED], 0);
        assert_eq!(v.parts.iter().sum::<u64>(), 3_050);
    }

    #[test]
    fn io_splits_the_blocked_time_and_never_exceeds_it() {
        let start = at(RUNNING, 900);
        let mut end = at(RUNNING, 1_900);
        end.time[BLOCKED] = 800;
        end.time[RUNNABLE] = 100;
        // Two overlapping requests: 1,200 of request time in 800 asleep.
        end.block_queue_ns = 300;
        end.block_device_ns = 900;
        end.requests = 2;
        let v = vector(&start, &end, 2_000, 1_000);
        assert_eq!(v.parts[part::BLOCK_QUEUE], 200);
        assert_eq!(v.parts[part::BLOCK_DEVICE], 600);
        assert_eq!(v.parts[part::BLOCKED], 0);
        assert_eq!(v.parts[part::RUNNING], 100);
        assert_eq!(v.parts.iter().sum::<u64>(), 1_000);
        assert_eq!(v.requests, 2);
    }

    #[test]
    fn parts_are_scaled_to_the_latency_and_untracked_time_is_unexplained() {
        let start = at(RUNNING, 0);
        let mut end = at(RUNNING, 0);
        end.steal_ns = 5_000;
        end.softirq_ns[3] = 5_000;
        let v = vector(&start, &end, 1_500, 500);
        assert_eq!(v.parts.iter().sum::<u64>(), 500);
        let quiet = vector(&at(0, 0), &at(0, 0), 2_000, 1_000);
        assert_eq!(quiet.parts[part::UNEXPLAINED], 1_000);
    }

    #[test]
    fn culprits_come_from_the_ring_between_two_readings() {
        let start = Counters {
            holder_seq: 9,
            window: 7,
            ..Counters::default()
        };
        let mut end = Counters {
            holder_seq: 20,
            window: 7,
            ..Counters::default()
        };
        for seq in 13..=20u64 {
            let h = &mut end.holders[(seq as usize) & 7];
            h.seq = seq;
            h.window = 7;
            h.pid = seq as u32;
            h.ns = 10;
            h.comm[..3].copy_from_slice(b"hog");
        }
        let (held, lost) = culprits(&start, &end);
        assert_eq!(lost, 3);
        assert_eq!(held.len(), 8);
        assert_eq!(held[0], (13, "hog".to_string(), 10));
    }

    #[test]
    fn a_task_name_with_control_characters_is_kept_printable() {
        assert_eq!(task_name(b"kworker/1:0"), "kworker/1:0");
        assert_eq!(task_name(b"\x1b[2Jboo\n"), "?[2Jboo?");
        assert_eq!(task_name(b"a\xffb"), "a\u{fffd}b");
        let task = crate::model::blame::UntracedAfter {
            comm: task_name(b"\x07bell"),
            pid: 1,
            switches: 1,
        };
        assert!(crate::model::names::check_name("comm", &task.comm).is_ok());
    }
}
