//! The `disk` probe: fio-class storage latency with honest clocks.
//!
//! Each job (thread) owns an engine (io_uring ring or psync) on the target
//! and runs the workload closed loop at `--iodepth`, or open loop at
//! `--rate` from the shared schedule, recording one series per direction
//! (`read`, `write`, `fsync`; in rate mode also `read.service`, …; with
//! `--slat-clat` also `read.slat` and `read.clat`, …). After
//! the run, IOPS and bandwidth, failed I/Os by errno, CPU time per I/O and
//! write amplification are added to the run file under `"disk"`.

pub mod engine;
pub mod mark;
pub mod measure;
pub mod nvme;
pub mod report;
pub mod safety;
pub mod sys;
pub mod target;
pub mod wa;
pub mod workload;

use std::sync::Mutex;

use anyhow::{Context, Result, anyhow};
use serde::Serialize;

use engine::{Completion, Dir, Engine, IoBuffers, Op};
use measure::{Discard, Job, JobStats, SeriesMap};
use target::{OpenRequest, Target, TargetSpec};
use workload::{Distribution, Rw, Workload, WorkloadSpec};

use crate::error::input_error;
use crate::model::disk::EngineKind;
use crate::model::{LoadMode, MeasuredFrom, RunFile, Warning};
use crate::probe::run::SeriesSpec;
use crate::probe::run::{self, Destination, Finished, Plan};
use crate::record::{Arrivals, Clock, MonotonicClock, Recorder, Schedule, StopFlag};
use crate::units::format_duration_compact;

/// The disk probe's parameters as resolved; stored in the run file.
#[derive(Clone, Debug, Serialize)]
pub struct DiskConfig {
    /// The file or device.
    pub target: TargetSpec,
    /// Access pattern.
    pub rw: Rw,
    /// Percent reads (randrw).
    pub read_pct: u8,
    /// Block size in bytes.
    pub bs: u64,
    /// Region size in bytes, if given.
    pub size: Option<u64>,
    /// Region start in bytes.
    pub offset: u64,
    /// In-flight operations per job.
    pub iodepth: usize,
    /// Operations queued before they are submitted together.
    pub submit_batch: usize,
    /// Record fio's slat and clat beside the latency (closed loop).
    pub slat_clat: bool,
    /// Jobs.
    pub jobs: usize,
    /// Measured time in ns.
    pub runtime_ns: u64,
    /// Unrecorded warm-up in ns.
    pub ramp_ns: u64,
    /// Offset distribution of random workloads.
    pub random: Distribution,
    /// The engine asked for (`None`: io_uring if available).
    pub engine: Option<EngineKind>,
    /// O_DIRECT.
    pub direct: bool,
    /// Total operations per second (open loop), if any.
    pub rate_per_s: Option<f64>,
    /// Spacing of intended starts.
    pub arrivals: Arrivals,
    /// fdatasync every N writes.
    pub fsync_every: Option<u64>,
    /// Sequential passes over the region before measuring.
    pub precondition: u32,
    /// Write to an existing file cauda did not create.
    pub force: bool,
    /// Write to a device that holds data.
    pub force_destroy_data: bool,
    /// Verify pattern seed.
    pub verify: Option<u64>,
    /// Seed of offsets, mix and data.
    pub seed: u64,
    /// Histogram interval length in ns.
    pub interval_length_ns: u64,
}

impl DiskConfig {
    /// Whether the run writes to the target (preconditioning counts).
    pub fn writes(&self) -> bool {
        self.rw.writes() || self.precondition > 0
    }

    /// Checks what can be checked before touching the target.
    pub fn validate(&self) -> Result<()> {
        if self.bs == 0 || self.bs > 64 << 20 {
            return Err(input_error("--bs: must be between 1 byte and 64M"));
        }
        if self.runtime_ns < 1_000_000 || self.runtime_ns > 30 * 24 * 3_600_000_000_000 {
            return Err(input_error(format!(
                "--runtime {}: must be between 1ms and 30 days",
                format_duration_compact(self.runtime_ns)
            )));
        }
        crate::probe::check_interval_length(self.interval_length_ns)?;
        if self.fsync_every.is_some() && !self.rw.writes() {
            return Err(input_error(format!(
                "--fsync needs a workload that writes; --rw {:?} only reads (use write, randwrite or randrw)",
                self.rw
            ).to_lowercase()));
        }
        if self.engine == Some(EngineKind::Psync) && self.iodepth > 1 {
            return Err(input_error(
                "--engine psync runs one I/O at a time per job: drop --iodepth, use --jobs N for \
                 parallelism, or --engine io_uring",
            ));
        }
        if self.submit_batch > self.iodepth {
            return Err(input_error(format!(
                "--submit-batch {} is above --iodepth {}: a batch cannot hold more than the queue \
                 (lower --submit-batch or raise --iodepth)",
                self.submit_batch, self.iodepth
            )));
        }
        if let Some(rate) = self.rate_per_s
            && rate < self.jobs as f64 / 3600.0
        {
            return Err(input_error("--rate: below one operation per job per hour"));
        }
        if let (Some(size), true) = (self.size, self.size.is_some_and(|s| s < self.bs)) {
            return Err(input_error(format!(
                "--size {size} is smaller than --bs {}: not one block fits",
                self.bs
            )));
        }
        Ok(())
    }

    fn series(&self) -> (Vec<SeriesSpec>, SeriesMap) {
        let mut specs = Vec::new();
        let mut map = SeriesMap::default();
        let open = self.rate_per_s.is_some();
        for dir in Dir::ALL {
            let used = match dir {
                Dir::Read => self.rw.reads() && !(self.rw == Rw::Randrw && self.read_pct == 0),
                Dir::Write => self.rw.writes() && !(self.rw == Rw::Randrw && self.read_pct == 100),
                Dir::Fsync => self.fsync_every.is_some(),
            };
            if !used {
                continue;
            }
            map.latency[dir as usize] = Some(specs.len());
            specs.push(SeriesSpec {
                tag: dir.tag().into(),
                measured_from: if open {
                    MeasuredFrom::IntendedStart
                } else {
                    MeasuredFrom::ActualStart
                },
            });
            if open {
                map.service[dir as usize] = Some(specs.len());
                specs.push(SeriesSpec {
                    tag: format!("{}.service", dir.tag()),
                    measured_from: MeasuredFrom::ActualStart,
                });
            } else if self.slat_clat {
                for (part, slot) in [("slat", &mut map.slat), ("clat", &mut map.clat)] {
                    slot[dir as usize] = Some(specs.len());
                    specs.push(SeriesSpec {
                        tag: format!("{}.{part}", dir.tag()),
                        measured_from: MeasuredFrom::ActualStart,
                    });
                }
            }
        }
        (specs, map)
    }
}

/// Either engine, so jobs are one type. (One per job, built once and never
/// moved in the measured loop, so the size difference does not matter.)
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum AnyEngine {
    /// psync.
    Psync(engine::psync::Psync),
    /// io_uring.
    Uring(engine::uring::Uring),
}

impl Engine for AnyEngine {
    fn depth(&self) -> usize {
        match self {
            AnyEngine::Psync(e) => e.depth(),
            AnyEngine::Uring(e) => e.depth(),
        }
    }
    fn buffer_mut(&mut self, slot: usize) -> &mut [u8] {
        match self {
            AnyEngine::Psync(e) => e.buffer_mut(slot),
            AnyEngine::Uring(e) => e.buffer_mut(slot),
        }
    }
    #[inline]
    fn queue(&mut self, op: Op) -> std::io::Result<()> {
        match self {
            AnyEngine::Psync(e) => e.queue(op),
            AnyEngine::Uring(e) => e.queue(op),
        }
    }
    #[inline]
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            AnyEngine::Psync(e) => e.flush(),
            AnyEngine::Uring(e) => e.flush(),
        }
    }
    #[inline]
    fn submit(
        &mut self,
        min_complete: usize,
        timeout_ns: Option<u64>,
        out: &mut Vec<Completion>,
    ) -> std::io::Result<()> {
        match self {
            AnyEngine::Psync(e) => e.submit(min_complete, timeout_ns, out),
            AnyEngine::Uring(e) => e.submit(min_complete, timeout_ns, out),
        }
    }
}

/// Creates an engine of `kind` on a duplicate of the target's file.
pub fn make_engine(
    kind: EngineKind,
    target: &Target,
    depth: usize,
    block: usize,
    seed: u64,
) -> Result<AnyEngine> {
    let file = target.file.try_clone().with_context(|| {
        format!(
            "cannot duplicate the descriptor of {}",
            target.path.display()
        )
    })?;
    let align = target.logical_block.max(4096) as usize;
    let buffers = IoBuffers::new(depth, block, align, seed);
    Ok(match kind {
        EngineKind::Psync => AnyEngine::Psync(engine::psync::Psync::new(file, buffers)),
        EngineKind::IoUring => AnyEngine::Uring(
            engine::uring::Uring::new(file, buffers)
                .map_err(|u| anyhow!("io_uring is not available: {}", u.why))?,
        ),
    })
}

/// Picks the engine: io_uring unless unavailable (then psync, with a
/// warning, when the user did not ask for io_uring).
fn choose_engine(
    config: &DiskConfig,
    target: &Target,
    warnings: &mut Vec<Warning>,
) -> Result<EngineKind> {
    if config.engine == Some(EngineKind::Psync) {
        return Ok(EngineKind::Psync);
    }
    match make_engine(
        EngineKind::IoUring,
        target,
        1,
        target.logical_block as usize,
        0,
    ) {
        Ok(_) => Ok(EngineKind::IoUring),
        Err(e) if config.engine.is_none() && config.iodepth == 1 => {
            warnings.push(Warning {
                message: format!("{e}; measuring with psync instead"),
                advice: "psync costs more CPU per I/O; enable io_uring (sysctl \
                         kernel.io_uring_disabled=0) to compare with fio's io_uring"
                    .into(),
            });
            Ok(EngineKind::Psync)
        }
        Err(e) => Err(input_error(format!(
            "{e}; {}",
            if config.iodepth > 1 {
                "--iodepth above 1 needs io_uring: lower it to 1 to measure with --engine psync"
            } else {
                "use --engine psync"
            }
        ))),
    }
}

/// Writes the region sequentially `passes` times, in 1 MiB operations.
fn precondition(
    target: &Target,
    passes: u32,
    region_start: u64,
    region_len: u64,
    seed: u64,
    stop: &StopFlag,
) -> Result<()> {
    let chunk = (1u64 << 20).min(region_len) / target.logical_block * target.logical_block;
    let chunk = chunk.max(target.logical_block);
    let mut engine = make_engine(EngineKind::Psync, target, 1, chunk as usize, seed)?;
    let mut done = Vec::with_capacity(1);
    for _ in 0..passes {
        let mut at = region_start;
        while at + chunk <= region_start + region_len {
            if stop.is_raised() {
                return Err(crate::error::interrupted(format!(
                    "--precondition stopped at offset {at} of {}; nothing was measured",
                    target.path.display()
                )));
            }
            engine.queue(Op {
                dir: Dir::Write,
                offset: at,
                slot: 0,
            })?;
            engine.submit(1, None, &mut done)?;
            for c in done.drain(..) {
                if c.result < 0 {
                    return Err(anyhow!(
                        "--precondition: write at offset {at} of {} failed: {}",
                        target.path.display(),
                        std::io::Error::from_raw_os_error(-c.result)
                    ));
                }
            }
            at += chunk;
        }
    }
    target
        .file
        .sync_data()
        .context("--precondition: cannot flush")?;
    Ok(())
}

/// Runs the disk probe and writes its run file, its `disk` section
/// included (`run.disk`). A full disk or a failed verify saves what was
/// measured and then returns the error.
pub fn run(config: &DiskConfig, destination: &Destination, stop: &StopFlag) -> Result<Finished> {
    config.validate()?;
    destination.check()?;
    let request = OpenRequest {
        spec: config.target.clone(),
        writes: config.writes(),
        direct: config.direct,
        size: config.size,
        offset: config.offset,
        block: config.bs,
        force: config.force,
        force_destroy_data: config.force_destroy_data,
        seed: config.seed,
    };
    let target = target::open(&request, stop)?;
    let mut warnings = Vec::new();
    let kind = choose_engine(config, &target, &mut warnings)?;
    if config.precondition > 0 {
        precondition(
            &target,
            config.precondition,
            config.offset,
            target.region_len,
            config.seed,
            stop,
        )?;
    }
    let before = config.rw.writes().then(|| wa::before(&target));
    let cpu_before = sys::process_cpu();

    let (series, map) = config.series();
    let load = if config.rate_per_s.is_some() {
        LoadMode::OpenLoop
    } else {
        LoadMode::ClosedLoop
    };
    let mut parameters = serde_json::to_value(config)?;
    parameters["engine"] = serde_json::to_value(kind)?;
    parameters["region_len"] = target.region_len.into();
    let plan = Plan {
        probe: "disk",
        load,
        parameters,
        series,
        threads: config.jobs,
        interval_ns: config.interval_length_ns,
        warnings,
    };
    let spec = WorkloadSpec {
        rw: config.rw,
        read_pct: config.read_pct,
        distribution: config.random,
        region_start: config.offset,
        region_len: target.region_len,
        block: config.bs,
        fsync_every: config.fsync_every.unwrap_or(0),
    };
    let engines: Mutex<Vec<Option<(AnyEngine, Workload)>>> =
        Mutex::new((0..config.jobs).map(|_| None).collect());
    let stats: Mutex<Vec<JobStats>> = Mutex::new(Vec::new());
    let period_ns = config.rate_per_s.map(|r| 1e9 * config.jobs as f64 / r);
    // Uniform schedules of the jobs are spread over one period, not in step.
    let phase = |job: usize, period: f64| (period * job as f64 / config.jobs as f64) as u64;
    let job_seed = |job: usize| {
        config
            .seed
            .wrapping_add(job as u64)
            .wrapping_mul(0x2545_F491_4F6C_DD1D)
    };

    let prepare = |job: usize| -> Result<()> {
        let mut engine = make_engine(
            kind,
            &target,
            config.iodepth,
            config.bs as usize,
            job_seed(job),
        )?;
        let mut workload = Workload::new(&spec, job, config.jobs, job_seed(job));
        if config.ramp_ns > 0 {
            let clock = MonotonicClock;
            let mut ignored = JobStats::default();
            // Ctrl-C during the warm-up ends it; the run that follows stops
            // at once and is saved as interrupted.
            let mut job_state = Job {
                engine: &mut engine,
                workload: &mut workload,
                sink: &mut Discard,
                series: map,
                stats: &mut ignored,
                verify: config.verify,
                submit_batch: config.submit_batch,
                stop,
            };
            let start = clock.now();
            match period_ns {
                None => job_state.closed_loop(&clock, start + config.ramp_ns),
                Some(p) => {
                    let mut schedule =
                        Schedule::new(start + phase(job, p), p, config.arrivals, job_seed(job));
                    job_state.open_loop(&clock, &mut schedule, start + config.ramp_ns)
                }
            }
            .context("--ramp: the warm-up failed")?;
        }
        engines.lock().map_err(|_| anyhow!("poisoned"))?[job] = Some((engine, workload));
        Ok(())
    };
    let body = |job: usize, start: u64, recorder: &mut Recorder, stop: &StopFlag| -> Result<u64> {
        let (mut engine, mut workload) = engines.lock().map_err(|_| anyhow!("poisoned"))?[job]
            .take()
            .ok_or_else(|| anyhow!("job {job} was not prepared"))?;
        let clock = MonotonicClock;
        let mut job_stats = JobStats::default();
        let mut job_state = Job {
            engine: &mut engine,
            workload: &mut workload,
            sink: recorder,
            series: map,
            stats: &mut job_stats,
            verify: config.verify,
            submit_batch: config.submit_batch,
            stop,
        };
        let end = start + config.runtime_ns;
        let outcome = match period_ns {
            None => job_state.closed_loop(&clock, end),
            Some(p) => {
                let mut schedule =
                    Schedule::new(start + phase(job, p), p, config.arrivals, job_seed(job));
                job_state.open_loop(&clock, &mut schedule, end)
            }
        };
        stats
            .lock()
            .map_err(|_| anyhow!("poisoned"))?
            .push(job_stats);
        outcome.with_context(|| {
            format!(
                "job {job}: the I/O engine failed on {}",
                target.path.display()
            )
        })
    };
    // The device's diskstats join the host counters of every interval.
    let observe = run::Observe {
        block_device: observed_device(&target.path),
        ..run::Observe::default()
    };
    // The jobs' counts, the write amplification and the CPU time complete
    // the run before its one write, also after Ctrl-C or a failed job.
    let complete = |run: &mut RunFile| -> Result<()> {
        let mut total = JobStats::default();
        for s in stats.lock().map_err(|_| anyhow!("poisoned"))?.iter() {
            total.merge(s);
        }
        if config.rw.writes() {
            // Flush what the run wrote so the device counters include it.
            let _ = target.file.sync_all();
        }
        let write_amplification = before.map(|b| wa::after(b, total.bytes[Dir::Write as usize]));
        let cpu_after = sys::process_cpu();
        let fixed = match make_engine(kind, &target, 1, target.logical_block as usize, 0)? {
            AnyEngine::Uring(u) => Some(u.fixed_buffers()),
            AnyEngine::Psync(_) => None,
        };
        let section = report::build(
            config,
            &target,
            kind,
            fixed,
            run,
            &total,
            write_amplification,
            cpu_before,
            cpu_after,
        );
        report::complete(run, section, &total);
        Ok(())
    };
    let finished = run::run_completing(plan, &observe, destination, stop, prepare, body, complete)?;
    report::outcome(finished)
}

/// The block device whose diskstats a run on `path` moves: the device
/// itself, or the one under the file's filesystem.
fn observed_device(path: &std::path::Path) -> Option<String> {
    use std::os::unix::fs::FileTypeExt;
    let meta = std::fs::metadata(path).ok()?;
    if meta.file_type().is_block_device() {
        let resolved = std::fs::canonicalize(path).ok()?;
        return resolved
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
    }
    crate::host::counters::block_device_of(path)
}
