//! `--kernel blame` in the engine: each probe thread's hook that keeps the
//! vectors of its slow operations, and the run file's `blame` section made
//! of what the threads kept.
//!
//! At an operation's start the hook opens the window on the thread's
//! kernel counters and reads them (plain loads, no system call); when a
//! value of one of the operation's series is recorded it reads them again
//! only if the operation was slow, and keeps its vector: added into the
//! interval's totals, and among the thread's slowest. "Slow" is
//! `--blame-above`, or else above the p99 of the series' operations so far
//! (a coarse histogram of ~9 % buckets, interpolated between the values
//! seen in the p99's bucket), recomputed after 100, 200, 400, …
//! operations and at every interval boundary; the first 100 operations of
//! a series are judged by none and kept by none.

use std::collections::{BTreeMap, BinaryHeap};
use std::sync::{Arc, Mutex};

use super::destination::Destination;
use super::plan::{Blamed, Plan};
use crate::host::trace::Tracer;
use crate::host::trace::backlog;
use crate::host::trace::blame::{self, Counters, Vector, part};
use crate::record::{OpHook, Recorder, SeriesId};

/// With `--kernel blame`, gives each recorder its thread's hook (thread
/// `i` has the tracer's slot `i` and kernel id `tids[i]`).
pub fn attach(
    mut recorders: Vec<Recorder>,
    tids: &[i32],
    tracer: Option<&Tracer>,
    plan: &Plan,
    destination: &Destination,
    run_start_ns: u64,
) -> (Vec<Recorder>, Option<Shared>) {
    let Some(table) = tracer.and_then(Tracer::blame_table) else {
        return (recorders, None);
    };
    let shared = Shared {
        blamed: plan.series.iter().map(|s| s.blamed).collect(),
        above_ns: destination.blame_above_ns,
        keep: destination.blame_keep,
        run_start_ns,
        interval_ns: plan.interval_ns.max(1),
        kept: Arc::new(Mutex::new(Vec::new())),
    };
    for (thread, recorder) in recorders.iter_mut().enumerate() {
        let tid = tids.get(thread).copied().unwrap_or(0) as u32;
        let hook = Hook::new(shared.clone(), thread, tid, table.cell(thread));
        recorder.set_hook(Box::new(hook));
    }
    (recorders, Some(shared))
}

/// What every hook of a run shares: its settings and where the threads
/// leave what they kept.
#[derive(Clone, Debug)]
pub struct Shared {
    /// Which series are an operation's latency, and how (by `SeriesId`).
    pub blamed: Arc<[Blamed]>,
    /// `--blame-above`, ns.
    pub above_ns: Option<u64>,
    /// How many of the slowest each thread (and the run) keeps.
    pub keep: usize,
    /// The run's start and interval length (the grid of the totals).
    pub run_start_ns: u64,
    /// Interval length, ns.
    pub interval_ns: u64,
    /// What each thread kept, left here when its recorder finishes.
    pub kept: Arc<Mutex<Vec<Kept>>>,
}

/// A slow operation as a thread keeps it.
#[derive(Clone, Debug)]
pub struct Slow {
    /// Its latency, ns.
    pub latency_ns: u64,
    /// Its series.
    pub series: SeriesId,
    /// Its intended start, monotonic ns.
    pub start_ns: u64,
    /// The CPU it last ran on.
    pub cpu: u32,
    /// Its vector.
    pub vector: Vector,
    /// The tasks that held its CPU: (pid, comm, ns) in the order written.
    pub culprits: Vec<(u32, String, u64)>,
}

impl PartialEq for Slow {
    fn eq(&self, other: &Self) -> bool {
        self.latency_ns == other.latency_ns
    }
}
impl Eq for Slow {}
impl PartialOrd for Slow {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Slow {
    /// Reversed: the heap's top is the fastest kept, the first to go.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other.latency_ns.cmp(&self.latency_ns)
    }
}

/// One interval's slow operations of one series, added up.
#[derive(Clone, Debug)]
pub struct Totals {
    /// How many.
    pub slow: u64,
    /// Their latencies, ns.
    pub latency_ns: u64,
    /// Their vectors.
    pub parts: [u64; part::PARTS],
    /// Their page faults.
    pub faults: u64,
}

/// What one thread kept.
#[derive(Debug)]
pub struct Kept {
    /// The probe thread.
    pub thread: usize,
    /// Its kernel thread id.
    pub tid: u32,
    /// The IRQ numbers of its IRQ parts (1 + number; 0: none).
    pub irqs: [u32; blame::IRQ_SLOTS],
    /// Per (series, interval), the totals.
    pub totals: BTreeMap<(SeriesId, u64), Totals>,
    /// Its slowest.
    pub slowest: Vec<Slow>,
    /// Culprits its ring overwrote before they were read.
    pub culprits_lost: u64,
    /// Switches to it the kernel did not trace (their time is unexplained).
    pub missed: u64,
    /// The tasks it had switched to before such switches (the first ones
    /// seen: their thread ids) and how many came after switching to each.
    pub untraced_after: Vec<(u32, u64)>,
}

/// The p99 of what a series recorded so far, from a coarse histogram.
#[derive(Clone, Debug)]
struct Coarse {
    counts: Vec<u64>,
    /// The smallest and largest value seen in each bucket: the p99 is
    /// interpolated between them, not across the whole bucket, so that a
    /// tail packed in a narrow part of one bucket (wake-ups all about as
    /// late behind the same hog) still has values above it.
    range: Vec<(u64, u64)>,
    seen: u64,
    next_at: u64,
    p99: u64,
}

const SUB: u32 = 8;

fn bucket(v: u64) -> usize {
    if v < u64::from(SUB) {
        return v as usize;
    }
    let e = 63 - v.leading_zeros();
    ((e - 2) * SUB + ((v >> (e - 3)) & 7) as u32) as usize
}

impl Coarse {
    fn new() -> Coarse {
        Coarse {
            counts: vec![0; 512],
            range: vec![(u64::MAX, 0); 512],
            seen: 0,
            next_at: 100,
            p99: u64::MAX,
        }
    }

    #[inline]
    fn add(&mut self, v: u64) {
        let b = bucket(v);
        self.counts[b] += 1;
        let (low, high) = &mut self.range[b];
        *low = (*low).min(v);
        *high = (*high).max(v);
        self.seen += 1;
        if self.seen >= self.next_at {
            self.next_at = self.seen * 2;
            self.recompute();
        }
    }

    /// The p99, interpolated between the values seen in its bucket.
    fn recompute(&mut self) {
        if self.seen < 100 {
            return;
        }
        let rank = (self.seen * 99).div_ceil(100);
        let mut below = 0;
        for (b, &n) in self.counts.iter().enumerate() {
            if n > 0 && below + n >= rank {
                let (lo, hi) = self.range[b];
                let into = (rank - below) as f64 / n as f64;
                self.p99 = lo + ((hi - lo) as f64 * into) as u64;
                return;
            }
            below += n;
        }
    }
}

/// One probe thread's hook.
#[derive(Debug)]
pub struct Hook {
    shared: Shared,
    thread: usize,
    tid: u32,
    cell: blame::Cell,
    start: Counters,
    /// The reading when a backlogged operation's window opened.
    opened: Counters,
    open: Option<u64>,
    /// When the last operation ended: an operation intended before it is
    /// late (a backlog), and its window opened while the last one ran.
    last_end_ns: u64,
    /// Whether the open operation is such a backlog.
    backlog: bool,
    thresholds: Vec<Coarse>,
    /// When the current interval ends (the thresholds are recomputed then).
    next_boundary_ns: u64,
    kept: Kept,
    heap: BinaryHeap<Slow>,
}

impl Hook {
    /// The hook of probe thread `thread` (kernel id `tid`) on `cell`.
    pub fn new(shared: Shared, thread: usize, tid: u32, cell: blame::Cell) -> Hook {
        let series = shared.blamed.len();
        Hook {
            thread,
            tid,
            cell,
            start: Counters::default(),
            opened: Counters::default(),
            open: None,
            last_end_ns: 0,
            backlog: false,
            thresholds: vec![Coarse::new(); series],
            next_boundary_ns: shared.run_start_ns + shared.interval_ns,
            kept: Kept {
                thread,
                tid,
                irqs: [0; blame::IRQ_SLOTS],
                totals: BTreeMap::new(),
                slowest: Vec::new(),
                culprits_lost: 0,
                missed: 0,
                untraced_after: Vec::new(),
            },
            heap: BinaryHeap::new(),
            shared,
        }
    }

    fn threshold(&mut self, series: SeriesId, now_ns: u64, value_ns: u64) -> u64 {
        if let Some(above) = self.shared.above_ns {
            return above;
        }
        // One comparison per operation; the division only at a boundary.
        if now_ns >= self.next_boundary_ns {
            let interval =
                now_ns.saturating_sub(self.shared.run_start_ns) / self.shared.interval_ns;
            self.next_boundary_ns =
                self.shared.run_start_ns + (interval + 1) * self.shared.interval_ns;
            self.thresholds.iter_mut().for_each(Coarse::recompute);
        }
        let coarse = &mut self.thresholds[series];
        let p99 = coarse.p99;
        coarse.add(value_ns);
        p99
    }

    /// Keeps the vector of an operation that completed at `now_ns`, in the
    /// totals of the interval holding `counted_ns` (the recorder's).
    #[cold]
    fn keep(&mut self, now_ns: u64, counted_ns: u64, series: SeriesId, value_ns: u64) {
        let end = self.cell.read();
        let mut vector = if self.backlog {
            backlog::backlog_vector(&self.start, &self.opened, &end, now_ns, value_ns)
        } else {
            blame::vector(&self.start, &end, now_ns, value_ns)
        };
        if self.shared.blamed.get(series) == Some(&Blamed::Request) {
            vector.parts[part::BLOCKED] += std::mem::take(&mut vector.parts[part::TIMER]);
        }
        let (culprits, lost) = blame::culprits(&self.start, &end);
        self.kept.culprits_lost += lost;
        self.kept.irqs = end.irq;
        let index = counted_ns.saturating_sub(self.shared.run_start_ns) / self.shared.interval_ns;
        let totals = self.kept.totals.entry((series, index)).or_insert(Totals {
            slow: 0,
            latency_ns: 0,
            parts: [0; part::PARTS],
            faults: 0,
        });
        totals.slow += 1;
        totals.latency_ns += value_ns;
        totals.faults += vector.faults;
        for (sum, p) in totals.parts.iter_mut().zip(vector.parts) {
            *sum += p;
        }
        let slow = Slow {
            latency_ns: value_ns,
            series,
            start_ns: now_ns.saturating_sub(value_ns),
            cpu: end.cpu,
            vector,
            culprits,
        };
        if self.heap.len() < self.shared.keep {
            self.heap.push(slow);
        } else if self
            .heap
            .peek()
            .is_some_and(|fastest| fastest.latency_ns < value_ns)
        {
            self.heap.pop();
            self.heap.push(slow);
        }
    }
}

impl OpHook for Hook {
    #[inline]
    fn begin(&mut self, intended_ns: u64) {
        if self.open == Some(intended_ns) {
            return;
        }
        self.cell.open(intended_ns);
        // Due before the last one ended (a backlog): the last one's start
        // stays the start, and the counters now (its window open, the
        // thread running), with the trail of the thread's last spans, split
        // its own window (`backlog::backlog_vector`).
        self.backlog = intended_ns < self.last_end_ns && self.start.window != 0;
        if self.backlog {
            self.cell.read_head_and_trail_into(&mut self.opened);
        } else {
            self.cell.read_head_into(&mut self.start);
        }
        self.open = Some(intended_ns);
    }

    #[inline]
    fn end(&mut self, now_ns: u64, counted_ns: u64, series: SeriesId, value_ns: u64) {
        let blamed = self.shared.blamed.get(series).copied();
        if blamed.is_none_or(|b| b == Blamed::No) || self.open.is_none() {
            return;
        }
        self.open = None;
        self.last_end_ns = now_ns;
        // Started after the schedule's end (a backlog sent while draining):
        // counted in the last interval, but inside no interval of the run.
        if now_ns.saturating_sub(value_ns) > counted_ns {
            return;
        }
        if value_ns > self.threshold(series, counted_ns, value_ns) {
            self.keep(now_ns, counted_ns, series, value_ns);
        }
    }
}

impl Drop for Hook {
    fn drop(&mut self) {
        let mut kept = std::mem::replace(
            &mut self.kept,
            Kept {
                thread: self.thread,
                tid: self.tid,
                irqs: [0; blame::IRQ_SLOTS],
                totals: BTreeMap::new(),
                slowest: Vec::new(),
                culprits_lost: 0,
                missed: 0,
                untraced_after: Vec::new(),
            },
        );
        kept.slowest = std::mem::take(&mut self.heap).into_vec();
        let end = self.cell.read();
        kept.missed = end.missed;
        kept.untraced_after = (end.suspect.iter().zip(end.suspect_missed))
            .filter_map(|(&pid, n)| Some((pid.checked_sub(1)?, n)))
            .collect();
        if let Ok(mut all) = self.shared.kept.lock() {
            all.push(kept);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where bucket `b` starts.
    fn bucket_low(b: usize) -> u64 {
        if b < SUB as usize {
            return b as u64;
        }
        let e = b as u32 / SUB + 2;
        (u64::from(SUB) + (b as u64 % u64::from(SUB))) << (e - 3)
    }

    #[test]
    fn a_tail_packed_in_part_of_one_bucket_still_has_values_above_the_p99() {
        // 90 % near 50 µs; the tail, 10 %, all within 3.000–3.020 ms (one
        // bucket spans about 2.88–3.15 ms): wake-ups behind one hog.
        let mut c = Coarse::new();
        let values: Vec<u64> = (0..10_000u64)
            .map(|i| match i % 10 {
                0 => 3_000_000 + (i * 7919) % 20_000,
                _ => 50_000 + i % 1_000,
            })
            .collect();
        values.iter().for_each(|&v| c.add(v));
        c.recompute();
        let above = values.iter().filter(|&&v| v > c.p99).count();
        assert!((50..=150).contains(&above), "{above} above {}", c.p99);
    }

    #[test]
    fn buckets_are_log_linear_and_cover_every_value() {
        for v in [0u64, 1, 7, 8, 9, 15, 16, 100, 1_000_000, u64::MAX / 3] {
            let b = bucket(v);
            assert!(bucket_low(b) <= v && v < bucket_low(b + 1), "{v} in {b}");
        }
        assert!(bucket(u64::MAX) < 512);
    }

    #[test]
    fn the_threshold_is_about_the_p99_of_what_came_before() {
        let mut c = Coarse::new();
        for i in 0..99 {
            c.add(1_000 + i);
            assert_eq!(c.p99, u64::MAX, "nothing judged before 100 values");
        }
        for i in 0..9_901u64 {
            c.add(1_000 + (i * 7919) % 10_000);
        }
        c.recompute();
        // Uniform on 1,000..11,000: the p99 is near 10,900 (within its ~9 % bucket).
        assert!((10_400..=11_300).contains(&c.p99), "{}", c.p99);
    }
}
