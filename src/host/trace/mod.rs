//! Kernel series beside a probe's: the block layer (queue, device, total,
//! per direction) and run-queue delay, measured inside the kernel by BPF
//! programs during exactly the run, on the run's clock and intervals, with
//! cauda's histogram precision.
//!
//! The programs (`bpf/cauda.bpf.c`) count each event into a histogram of
//! cauda's own bucket layout (3 significant digits, 1 ns – 1 h; not
//! biolatency's powers of two) with its exact count, sum, min and max,
//! in one of four interval slots chosen by the event's completion time on
//! `CLOCK_MONOTONIC`. Nothing per event crosses to user space: the observer
//! thread, at the boundary it already wakes for, reads each interval's slot
//! one interval after it ended (so no event is still being counted) and
//! clears it ([`Tracer::boundary`]). The series come out as ordinary series
//! ([`KERNEL_TAGS`]) on the run's interval grid.
//!
//! Attribution (libbpf-tools' events, keyed by the request, not by device
//! and sector): a block request is the run's when the process that started
//! it (`block_io_start`, in the submitter's context) is the run's and its
//! device is the probe's; `runq` counts the probe's own threads, `runq.host`
//! every thread.
//!
//! Here is the [`Tracer`] (attach, arm, read at each boundary, finish);
//! `programs` chooses the BPF programs and explains a failure to load
//! them, `target` finds whose events count, [`grid`] lays the series on the
//! run's intervals, [`report`] says what was counted and missed, and `sys`
//! holds the aya calls and the shared mapping.

pub mod backlog;
pub mod blame;
pub mod grid;
mod programs;
pub mod report;
mod sys;
mod target;

use anyhow::Result;

use crate::error::input_error;
use crate::model::kernel::{KERNEL_TAGS, KernelReport, KernelSource};
use crate::model::{IntervalRecord, Series};
use crate::record::ExactStats;
use crate::record::histogram::bucket_top;

/// What a run asks the kernel to measure.
#[derive(Clone, Debug, Default)]
pub struct Request {
    /// The groups of series (`--kernel`).
    pub sources: Vec<KernelSource>,
    /// Count only block requests this process started (its pid).
    pub process: Option<u32>,
    /// Count only requests of this block device (`vda`, `loop3`, `nvme0n1p2`).
    pub device: Option<String>,
    /// The probe threads the run will start (0: not known yet).
    pub threads: usize,
}

/// Refuses more probe threads than `--kernel blame` keeps counters for
/// (exit 2), when `sources` has blame.
pub fn check_blamed_threads(sources: &[KernelSource], threads: usize) -> Result<()> {
    if sources.contains(&KernelSource::Blame) && threads > blame::THREADS {
        return Err(input_error(format!(
            "--kernel blame keeps counters for at most {} probe threads; this run has \
             {threads}: use fewer threads (--threads, --jobs, --conns, --producers and \
             --consumers)",
            blame::THREADS
        )));
    }
    Ok(())
}

/// The kernel series of one run, from attach to the last read.
#[derive(Debug)]
pub struct Tracer {
    loaded: sys::Loaded,
    config: sys::Config,
    request: Request,
    device: Option<String>,
    threads: Vec<i32>,
    /// The indexes in [`KERNEL_TAGS`] recorded.
    series: Vec<usize>,
    /// Read intervals per recorded series, by interval index.
    read: Vec<Vec<IntervalRecord>>,
    /// The next interval to read.
    next: u64,
    torn: u64,
}

impl Tracer {
    /// Loads and attaches the programs for `request`, before anything is
    /// measured; nothing is counted until [`Tracer::arm`]. Every failure
    /// is the user's to fix (privileges, kernel features, a device) and
    /// exits 2 with what to do.
    pub fn attach(request: &Request) -> Result<Tracer> {
        // Before anything is loaded or any thread started.
        check_blamed_threads(&request.sources, request.threads)?;
        let namespace = match request.process {
            Some(_) => target::in_child_pid_namespace(),
            None => Ok(false),
        };
        if let Err(unreadable) = namespace {
            return Err(input_error(format!(
                "--kernel: cannot tell whether cauda runs in the host's PID namespace \
                 ({unreadable}; is /proc mounted?), so the probe's process and threads \
                 cannot be identified to the kernel; mount /proc (or run in the host's PID \
                 namespace with it), or watch the whole host with cauda kernel"
            )));
        }
        if namespace == Ok(true) {
            return Err(input_error(
                "cauda runs in a PID namespace of its own (a container): the kernel knows its \
                 process and threads by other ids, so --kernel cannot tell the probe's block \
                 requests and run-queue waits from others'; run it in the host's PID namespace \
                 (docker run --pid=host, Kubernetes hostPID: true), or watch the whole host \
                 with cauda kernel",
            ));
        }
        let (dev, device) = match &request.device {
            Some(name)
                if request.sources.contains(&KernelSource::Block)
                    || request.sources.contains(&KernelSource::Blame) =>
            {
                let (dev, text) = target::device_number(name)?;
                (dev, Some(format!("{name} ({text})")))
            }
            _ => (0, None),
        };
        let config = sys::Config {
            tgid: request.process.unwrap_or(0),
            dev,
            blame: u32::from(request.sources.contains(&KernelSource::Blame)),
            block: u32::from(request.sources.contains(&KernelSource::Block)),
            ..sys::Config::default()
        };
        let loaded = sys::load(
            config,
            &programs::programs(&request.sources, request.device.is_some()),
        )
        .map_err(programs::explain)?;
        // The whole host has no "own" threads: only runq.host then.
        let series: Vec<usize> = request
            .sources
            .iter()
            .flat_map(|s| s.tags())
            .filter(|&&tag| request.process.is_some() || tag != "runq")
            .filter_map(|tag| KERNEL_TAGS.iter().position(|t| t == tag))
            .collect();
        let tracer = Tracer {
            loaded,
            config,
            request: request.clone(),
            device,
            threads: Vec::new(),
            read: vec![Vec::new(); series.len()],
            series,
            next: 0,
            torn: 0,
        };
        for slot in 0..sys::SLOTS {
            tracer.clear(slot);
        }
        Ok(tracer)
    }

    /// Counts the probe's threads in the `runq` series, and gives each its
    /// blame counters (in thread order) with `--kernel blame`.
    pub fn own_threads(&mut self, tids: &[i32]) -> Result<()> {
        self.loaded.add_own_threads(tids).map_err(|e| {
            anyhow::anyhow!("cannot mark the probe's threads for --kernel runq: {e}")
        })?;
        if self.request.sources.contains(&KernelSource::Blame) {
            check_blamed_threads(&self.request.sources, tids.len())?;
            self.loaded.add_blamed_threads(tids).map_err(|e| {
                anyhow::anyhow!(
                    "cannot give the probe's threads their --kernel blame counters: {e}"
                )
            })?;
        }
        self.threads.extend_from_slice(tids);
        Ok(())
    }

    /// The probe threads' blame counters (slot `i` is thread `i`), with
    /// `--kernel blame`.
    pub fn blame_table(&self) -> Option<blame::Table> {
        self.request
            .sources
            .contains(&KernelSource::Blame)
            .then(|| blame::Table::new(self.loaded.blame.clone()))
    }

    /// Starts counting: interval 0 begins at `run_start_ns` (monotonic).
    pub fn arm(&mut self, run_start_ns: u64, interval_ns: u64) -> Result<()> {
        self.config.run_start_ns = run_start_ns;
        self.config.interval_ns = interval_ns;
        self.loaded
            .configure(self.config)
            .map_err(|e| anyhow::anyhow!("cannot start the kernel series: {e}"))
    }

    /// At an interval boundary (`now_ns`): reads every interval that ended
    /// at least one interval ago.
    pub fn boundary(&mut self, now_ns: u64) {
        let Some(elapsed) = now_ns.checked_sub(self.config.run_start_ns) else {
            return;
        };
        let current = elapsed / self.config.interval_ns.max(1);
        // Woken so late that the slots went round: interval `current`
        // (in progress) counts into the slot of `current - SLOTS`, so every
        // unread interval from there down holds later events too.
        self.torn += (current + 1).saturating_sub(self.next + sys::SLOTS as u64);
        while self.next + 1 < current {
            self.read_next();
        }
    }

    /// Stops counting at `now_ns`: events from then on are not the run's.
    pub fn stop(&mut self, now_ns: u64) {
        self.config.end_ns = now_ns.max(1);
        // Failing here leaves the programs counting into later slots until
        // they are detached; the intervals up to the end are read before.
        let _ = self.loaded.configure(self.config);
    }

    /// Reads what is left, detaches the programs, and returns the series on
    /// `grid` (the run's intervals) and how they were measured.
    pub fn finish(mut self, grid: &[(u64, u64)]) -> (Vec<Series>, KernelReport) {
        if self.config.end_ns == 0 {
            self.stop(crate::sys::monotonic_ns());
        }
        while (self.next as usize) < grid.len() {
            self.read_next();
        }
        let mut report = report::report(
            &self.loaded,
            &self.request.sources,
            self.request.process,
            self.device.as_deref(),
            &self.threads,
            self.torn,
        );
        let mut series = Vec::new();
        for (&index, read) in self.series.iter().zip(std::mem::take(&mut self.read)) {
            // A series that counted nothing (the writes of a read-only
            // run) is named in the report, not written as empty intervals.
            if read.iter().all(|iv| iv.count == 0) {
                report.empty_series.push(KERNEL_TAGS[index].to_string());
            } else {
                series.push(grid::on_grid(KERNEL_TAGS[index], read, grid));
            }
        }
        (series, report)
        // `self.loaded` drops here: the programs detach.
    }

    /// Reads interval `next` out of its slot into `read`, and clears the slot.
    fn read_next(&mut self) {
        let index = self.next;
        let slot = (index % sys::SLOTS as u64) as usize;
        for (at, &series) in self.series.iter().enumerate() {
            let words = self.loaded.stats(slot, series);
            let load = |i: usize| words[i].load(std::sync::atomic::Ordering::Acquire);
            let stats = ExactStats {
                count: load(0),
                sum: u128::from(load(1)),
                min: load(2),
                max: load(3),
                clamped: load(4),
            };
            let record = if stats.count == 0 {
                IntervalRecord::empty(0, 0)
            } else {
                let buckets = self.loaded.buckets(slot, series);
                let entries: Vec<(u64, u64)> = buckets
                    .iter()
                    .enumerate()
                    .filter_map(|(i, c)| {
                        let n = c.load(std::sync::atomic::Ordering::Relaxed);
                        (n > 0).then(|| (bucket_top(i), n))
                    })
                    .collect();
                let held: u64 = entries.iter().map(|(_, n)| n).sum();
                if held != stats.count {
                    self.torn += 1;
                }
                IntervalRecord::from_buckets(0, 0, &stats, entries)
            };
            // Intervals are read in order, one each call: index `index`.
            self.read[at].push(record);
        }
        self.clear(slot);
        self.next += 1;
    }

    fn clear(&self, slot: usize) {
        use std::sync::atomic::Ordering::Relaxed;
        for &series in &self.series {
            for bucket in self.loaded.buckets(slot, series) {
                if bucket.load(Relaxed) != 0 {
                    bucket.store(0, Relaxed);
                }
            }
            let stats = self.loaded.stats(slot, series);
            for (i, word) in stats.iter().enumerate() {
                word.store(if i == 2 { u64::MAX } else { 0 }, Relaxed);
            }
        }
    }
}
