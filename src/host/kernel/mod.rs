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

mod sys;

use anyhow::Result;
use std::path::Path;

use crate::error::input_error;
use crate::host::root::HostRoot;
use crate::model::kernel::{KernelDropped, KernelProgram, KernelReport, KernelSource};
use crate::model::{IntervalRecord, MeasuredFrom, Series};
use crate::record::ExactStats;
use crate::record::histogram::bucket_top;

pub use crate::model::kernel::KERNEL_TAGS;

/// What a run asks the kernel to measure.
#[derive(Clone, Debug, Default)]
pub struct Request {
    /// The groups of series (`--kernel`).
    pub sources: Vec<KernelSource>,
    /// Count only block requests this process started (its pid).
    pub process: Option<u32>,
    /// Count only requests of this block device (`vda`, `loop3`, `nvme0n1p2`).
    pub device: Option<String>,
}

/// The programs for each group, and the tracepoints each may attach to.
fn programs(sources: &[KernelSource]) -> Vec<sys::Attach> {
    let mut out = Vec::new();
    if sources.contains(&KernelSource::Block) {
        out.extend([
            // block_io_start is 6.5+; before it, requests that go through
            // an I/O scheduler show their start at insertion.
            sys::Attach {
                program: "block_io_start",
                tracepoints: &["block_io_start", "block_rq_insert"],
            },
            sys::Attach {
                program: "block_rq_issue",
                tracepoints: &["block_rq_issue"],
            },
            sys::Attach {
                program: "block_rq_complete",
                tracepoints: &["block_rq_complete"],
            },
        ]);
    }
    if sources.contains(&KernelSource::Runq) {
        out.extend([
            sys::Attach {
                program: "sched_wakeup",
                tracepoints: &["sched_wakeup"],
            },
            sys::Attach {
                program: "sched_wakeup_new",
                tracepoints: &["sched_wakeup_new"],
            },
            sys::Attach {
                program: "sched_switch",
                tracepoints: &["sched_switch"],
            },
        ]);
    }
    out
}

/// The kernel's `dev_t` of a block device named as in `/sys/class/block`,
/// with its `major:minor` as text. A device without a request queue of its
/// own (bio-based: zram, device-mapper, md, brd) is refused: the request
/// events never fire for it, so its series would stay empty.
fn device_number(name: &str) -> Result<(u32, String)> {
    device_number_in(Path::new("/sys/class/block"), name)
}

/// [`device_number`] in a `/sys/class/block` at `class` (tests use a fake).
fn device_number_in(class: &Path, name: &str) -> Result<(u32, String)> {
    let entry = class.join(name);
    let path = entry.join("dev");
    let text = std::fs::read_to_string(&path).map_err(|e| {
        input_error(format!(
            "--kernel block: cannot read {} ({e}): is {name} a block device?",
            path.display()
        ))
    })?;
    let text = text.trim();
    let parsed = text
        .split_once(':')
        .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)));
    let (major, minor) = parsed.ok_or_else(|| {
        input_error(format!(
            "{}: expected MAJOR:MINOR, read '{text}'",
            path.display()
        ))
    })?;
    // A partition's queue is its disk's.
    let device = std::fs::canonicalize(&entry).unwrap_or(entry);
    let disk = match device.parent() {
        Some(parent) if device.join("partition").exists() => parent.to_path_buf(),
        _ => device,
    };
    if !disk.join("mq").is_dir() {
        let below: Vec<String> = std::fs::read_dir(disk.join("slaves"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        let instead = if below.is_empty() {
            format!("(lsblk -s /dev/{name})")
        } else {
            format!("({})", below.join(", "))
        };
        return Err(input_error(format!(
            "block series of {name}: it has no request queue of its own (a bio-based device \
             such as zram, device-mapper or md), so the block layer's request events never \
             fire for it and its series would stay empty; watch the device below it \
             {instead}, or leave the block series out"
        )));
    }
    Ok(((major << 20) | minor, text.to_string()))
}

/// Whether this process is outside the initial PID namespace, whose
/// `/proc/self/ns/pid` is `pid:[4026531836]` (`PROC_PID_INIT_INO`); false
/// when it cannot be read.
fn in_child_pid_namespace() -> bool {
    std::fs::read_link("/proc/self/ns/pid")
        .is_ok_and(|link| link.to_string_lossy() != "pid:[4026531836]")
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
        if request.process.is_some() && in_child_pid_namespace() {
            return Err(input_error(
                "cauda runs in a PID namespace of its own (a container): the kernel knows its \
                 process and threads by other ids, so --kernel cannot tell the probe's block \
                 requests and run-queue waits from others'; run it in the host's PID namespace \
                 (docker run --pid=host, Kubernetes hostPID: true), or watch the whole host \
                 with cauda kernel",
            ));
        }
        let (dev, device) = match &request.device {
            Some(name) if request.sources.contains(&KernelSource::Block) => {
                let (dev, text) = device_number(name)?;
                (dev, Some(format!("{name} ({text})")))
            }
            _ => (0, None),
        };
        let config = sys::Config {
            tgid: request.process.unwrap_or(0),
            dev,
            ..sys::Config::default()
        };
        let loaded = sys::load(config, &programs(&request.sources)).map_err(explain)?;
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

    /// Counts the probe's threads in the `runq` series.
    pub fn own_threads(&mut self, tids: &[i32]) -> Result<()> {
        self.loaded.add_own_threads(tids).map_err(|e| {
            anyhow::anyhow!("cannot mark the probe's threads for --kernel runq: {e}")
        })?;
        self.threads.extend_from_slice(tids);
        Ok(())
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
        let mut report = self.report();
        let mut series = Vec::new();
        for (&index, read) in self.series.iter().zip(std::mem::take(&mut self.read)) {
            // A series that counted nothing (the writes of a read-only
            // run) is named in the report, not written as empty intervals.
            if read.iter().all(|iv| iv.count == 0) {
                report.empty_series.push(KERNEL_TAGS[index].to_string());
            } else {
                series.push(on_grid(KERNEL_TAGS[index], read, grid));
            }
        }
        (series, report)
        // `self.loaded` drops here: the programs detach.
    }

    fn report(&self) -> KernelReport {
        let costs = self.loaded.costs();
        let programs = self
            .loaded
            .attached
            .iter()
            .map(|(program, tracepoint)| {
                let cost = costs.iter().find(|c| c.program == *program);
                let (runs, run_ns) = cost.map_or((0, 0), |c| (c.runs, c.run_ns));
                KernelProgram {
                    program: (*program).into(),
                    tracepoint: (*tracepoint).into(),
                    runs,
                    run_ns,
                    ns_per_run: if runs == 0 {
                        0.0
                    } else {
                        run_ns as f64 / runs as f64
                    },
                }
            })
            .collect();
        let [
            requests_untracked,
            wakeups_untracked,
            other_operations,
            completions_unseen,
        ] = self.loaded.dropped();
        let nested_events = costs.iter().map(|c| c.skipped).sum();
        let in_flight_at_end = self.loaded.requests_in_flight();
        KernelReport {
            sources: self.request.sources.clone(),
            attribution: self.attribution(),
            device: self.device.clone(),
            process: self.request.process,
            threads: self.threads.clone(),
            programs,
            dropped: KernelDropped {
                requests_untracked,
                wakeups_untracked,
                other_operations,
                nested_events,
                in_flight_at_end,
                completions_unseen,
            },
            map_bytes: self.loaded.map_bytes(),
            torn_intervals: self.torn,
            empty_series: Vec::new(),
        }
    }

    fn attribution(&self) -> String {
        let mut parts = Vec::new();
        if self.request.sources.contains(&KernelSource::Block) {
            let who = match self.request.process {
                Some(pid) => format!("started by process {pid} (block_io_start in its context)"),
                None => "started by any process".into(),
            };
            let which = match &self.device {
                Some(d) => format!("on {d}"),
                None => "on any device".into(),
            };
            parts.push(format!(
                "block: requests {who} {which}; an interval holds the requests that \
                 completed in it; reads and writes only"
            ));
        }
        if self.request.sources.contains(&KernelSource::Runq) {
            parts.push(format!(
                "runq: {} thread(s) of the probe; runq.host: every thread; a wait is \
                 counted in the interval it ends in",
                self.threads.len()
            ));
        }
        parts.join("; ")
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

/// Completions the kernel never reported, as a share of the requests seen
/// starting, at and above which a run warns: 0.1 %. Up to a few per 1,000
/// come and go on this project's VM, more under CPU contention (cause not
/// settled, RESULTS §15): always counted in the run file, warned about
/// when they matter.
const UNSEEN_WARN_PER_MILLE: u64 = 1;

/// What a run's kernel series missed, as warnings with advice: events the
/// kernel did not pass to the programs are not in the series.
pub fn warnings(report: &KernelReport) -> Vec<crate::model::Warning> {
    let d = &report.dropped;
    let started: u64 = report
        .programs
        .iter()
        .filter(|p| p.program == "block_io_start")
        .map(|p| p.runs)
        .sum();
    let mut out = Vec::new();
    if d.completions_unseen > 0
        && d.completions_unseen * 1000 >= UNSEEN_WARN_PER_MILLE * started.max(1)
    {
        out.push(crate::model::Warning {
            message: format!(
                "the kernel reported no completion for {} of the {started} block request(s) \
                 started during the run: the kernel series miss them",
                d.completions_unseen
            ),
            advice: "seen most when the probe's CPUs are contended; compare the kernel series' \
                     counts with the probe's, or give the probe a CPU of its own"
                .into(),
        });
    }
    if d.nested_events > 0 {
        out.push(crate::model::Warning {
            message: format!(
                "the kernel skipped cauda's programs for {} event(s) that came while another \
                 ran on the same CPU: the kernel series miss them",
                d.nested_events
            ),
            advice: "another BPF tool on the same events makes this likelier; run cauda's \
                     kernel series alone"
                .into(),
        });
    }
    let untracked = d.requests_untracked + d.wakeups_untracked;
    if untracked > 0 {
        out.push(crate::model::Warning {
            message: format!(
                "{untracked} event(s) found the programs' tables full and were not counted"
            ),
            advice: "more requests or waiting threads than the tables hold (16,384 and \
                     32,768): use --kernel block or runq alone, or a shorter interval"
                .into(),
        });
    }
    out
}

/// A kernel series on the run's grid of (start, length) intervals.
fn on_grid(tag: &str, read: Vec<IntervalRecord>, grid: &[(u64, u64)]) -> Series {
    let mut series = Series::new(tag.into(), MeasuredFrom::ActualStart);
    let mut read = read.into_iter();
    for &(start_ns, length_ns) in grid {
        let mut record = read
            .next()
            .unwrap_or_else(|| IntervalRecord::empty(start_ns, length_ns));
        record.start_ns = start_ns;
        record.length_ns = length_ns;
        series.intervals.push(record);
    }
    series
}

/// Turns a load failure into what the user can do about it (exit 2).
fn explain(error: sys::LoadError) -> anyhow::Error {
    let kernel = HostRoot::default()
        .kernel_release()
        .unwrap_or_else(|| "this kernel".into());
    let message = match error {
        sys::LoadError::NoBtf(e) => format!(
            "--kernel: this kernel ({kernel}) has no readable BTF at /sys/kernel/btf/vmlinux \
             ({e}); the kernel series need a kernel built with CONFIG_DEBUG_INFO_BTF"
        ),
        sys::LoadError::NoTracepoint(program, tracepoints) => format!(
            "--kernel: {kernel} has none of the tracepoints {} for {program}; \
             drop the group that needs it from --kernel",
            tracepoints.join(", ")
        ),
        sys::LoadError::Refused(_, Some(libc::EPERM | libc::EACCES), _) => {
            "--kernel: loading BPF programs needs root, or CAP_BPF and CAP_PERFMON \
             (this process has neither): run cauda as root, give it those capabilities \
             (setcap cap_bpf,cap_perfmon+ep), or drop --kernel"
                .to_string()
        }
        sys::LoadError::Refused(program, errno, log) => {
            let what = program.map_or("the BPF object".to_string(), |p| format!("program {p}"));
            let log: Vec<&str> = log.lines().rev().take(8).collect();
            let log: Vec<&str> = log.into_iter().rev().collect();
            format!(
                "--kernel: {kernel} refused {what}{}: {}; drop --kernel, or report this \
                 with the kernel version",
                errno.map_or(String::new(), |e| format!(
                    " ({})",
                    std::io::Error::from_raw_os_error(e)
                )),
                log.join(" | ")
            )
        }
    };
    input_error(message)
}

/// The run's interval grid as (start, length): the probe's first series'
/// intervals, or with none, intervals of `interval_ns` from the start to
/// `elapsed_ns`, the last one partial, at least one (the collector's rule).
pub fn grid_of(first: Option<&Series>, elapsed_ns: u64, interval_ns: u64) -> Vec<(u64, u64)> {
    if let Some(series) = first {
        return series
            .intervals
            .iter()
            .map(|iv| (iv.start_ns, iv.length_ns))
            .collect();
    }
    let interval = interval_ns.max(1);
    let count = elapsed_ns.div_ceil(interval).max(1);
    (0..count)
        .map(|i| {
            let start = i * interval;
            (start, elapsed_ns.saturating_sub(start).clamp(1, interval))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake `/sys/class/block`: links into a device tree, as the kernel
    /// lays it out.
    fn fake_class() -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        let (devices, class) = (root.path().join("devices"), root.path().join("class"));
        let make = |dir: &Path, dev: &str| {
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(dir.join("dev"), format!("{dev}\n")).unwrap();
        };
        make(&devices.join("vdz"), "252:0");
        std::fs::create_dir(devices.join("vdz/mq")).unwrap();
        make(&devices.join("vdz/vdz1"), "252:1");
        std::fs::write(devices.join("vdz/vdz1/partition"), "1\n").unwrap();
        make(&devices.join("zram9"), "251:9");
        make(&devices.join("dm-7"), "253:7");
        std::fs::create_dir_all(devices.join("dm-7/slaves/vdz1")).unwrap();
        std::fs::create_dir(&class).unwrap();
        for (name, at) in [
            ("vdz", "vdz"),
            ("vdz1", "vdz/vdz1"),
            ("zram9", "zram9"),
            ("dm-7", "dm-7"),
        ] {
            std::os::unix::fs::symlink(devices.join(at), class.join(name)).unwrap();
        }
        root
    }

    #[test]
    fn devices_without_a_request_queue_are_refused_naming_the_one_below() {
        let root = fake_class();
        let class = root.path().join("class");
        assert_eq!(
            device_number_in(&class, "vdz").unwrap(),
            ((252 << 20), "252:0".into())
        );
        // A partition's queue is its disk's.
        assert_eq!(
            device_number_in(&class, "vdz1").unwrap(),
            ((252 << 20) | 1, "252:1".into())
        );
        let refused = |name: &str| format!("{:#}", device_number_in(&class, name).unwrap_err());
        let zram = refused("zram9");
        assert!(zram.contains("no request queue"), "{zram}");
        assert!(zram.contains("lsblk -s /dev/zram9"), "{zram}");
        let dm = refused("dm-7");
        assert!(dm.contains("below it (vdz1)"), "{dm}");
        assert!(refused("sdq").contains("is sdq a block device?"));
    }

    #[test]
    fn the_grid_ends_with_a_partial_interval() {
        assert_eq!(
            grid_of(None, 2_500, 1_000),
            vec![(0, 1_000), (1_000, 1_000), (2_000, 500)]
        );
        assert_eq!(grid_of(None, 0, 1_000), vec![(0, 1)]);
        assert_eq!(
            grid_of(None, 2_000, 1_000),
            vec![(0, 1_000), (1_000, 1_000)]
        );
    }

    #[test]
    fn a_few_unseen_completions_are_counted_and_many_warned_about() {
        let report = |unseen, nested| KernelReport {
            sources: vec![KernelSource::Block],
            attribution: String::new(),
            device: None,
            process: None,
            threads: Vec::new(),
            programs: vec![crate::model::kernel::KernelProgram {
                program: "block_io_start".into(),
                tracepoint: "block_io_start".into(),
                runs: 50_000,
                run_ns: 0,
                ns_per_run: 0.0,
            }],
            dropped: crate::model::kernel::KernelDropped {
                completions_unseen: unseen,
                nested_events: nested,
                ..Default::default()
            },
            map_bytes: 0,
            torn_intervals: 0,
            empty_series: Vec::new(),
        };
        assert!(warnings(&report(0, 0)).is_empty());
        assert!(warnings(&report(49, 0)).is_empty());
        let many = warnings(&report(50, 0));
        assert_eq!(many.len(), 1);
        assert_eq!(
            many[0].message,
            "the kernel reported no completion for 50 of the 50000 block request(s) \
             started during the run: the kernel series miss them"
        );
        assert!(!many[0].advice.contains("  "));
        assert_eq!(warnings(&report(0, 1)).len(), 1);
    }

    #[test]
    fn each_group_attaches_its_programs() {
        let block: Vec<_> = programs(&[KernelSource::Block])
            .iter()
            .map(|a| a.program)
            .collect();
        assert_eq!(
            block,
            ["block_io_start", "block_rq_issue", "block_rq_complete"]
        );
        assert_eq!(programs(&[KernelSource::Runq]).len(), 3);
        assert_eq!(
            KernelSource::Block.tags().len() + KernelSource::Runq.tags().len(),
            KERNEL_TAGS.len()
        );
    }
}
