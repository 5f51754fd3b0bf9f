//! The `disk` probe: fio-class storage latency with honest clocks.
//!
//! Each job (thread) owns an engine (io_uring ring or psync) on the target
//! and runs the workload closed loop at `--iodepth`, or open loop at
//! `--rate` from the shared schedule, recording one series per direction
//! (`read`, `write`, `fsync`; in rate mode also `read.service`, …; with
//! `--slat-clat` also `read.slat` and `read.clat`, …). After
//! the run, IOPS and bandwidth, failed I/Os by errno, CPU time per I/O and
//! write amplification are added to the run file under `"disk"`.

pub mod any_engine;
pub mod config;
pub mod engine;
mod jobs;
pub mod mark;
pub mod measure;
pub mod nvme;
pub mod report;
pub mod safety;
pub mod sys;
pub mod sysfs;
pub mod target;
pub mod wa;
pub mod workload;

pub use self::config::DiskConfig;

use anyhow::{Context, Result, anyhow};

use self::any_engine::{AnyEngine, choose_engine, make_engine};
use self::engine::{Dir, Engine, Op};
use self::jobs::Jobs;
use self::measure::SeriesMap;
use self::sys::CpuTime;
use self::target::{OpenRequest, Target};
use crate::model::disk::EngineKind;
use crate::model::{LoadMode, RunFile, Warning};
use crate::probe::run::{self, Destination, Finished, Plan};
use crate::record::{Recorder, StopFlag};

/// Runs the disk probe and writes its run file, its `disk` section
/// included (`run.disk`). A full disk or a failed verify saves what was
/// measured and then returns the error.
pub fn run(config: &DiskConfig, destination: &Destination, stop: &StopFlag) -> Result<Finished> {
    config.validate()?;
    destination.check()?;
    check_block_target(config, destination)?;
    check_blame(config, destination)?;
    let (target, kind, warnings) = open_target(config, stop)?;
    let baseline = Baseline::take(config, &target);
    let (plan, map) = plan(config, &target, kind, warnings)?;
    let jobs = Jobs::new(config, &target, kind, map, stop);
    let prepare = |job: usize| jobs.prepare(job);
    let body = |job: usize, start: u64, recorder: &mut Recorder, stop: &StopFlag| {
        jobs.body(job, start, recorder, stop)
    };
    // The device's diskstats join the host counters of every interval.
    let observe = run::Observe {
        block_device: observed_device(&target.path),
        ..run::Observe::default()
    };
    // The jobs' counts, the write amplification and the CPU time complete
    // the run before its one write, also after Ctrl-C or a failed job.
    let complete = |run: &mut RunFile| complete(run, config, &target, kind, &jobs, baseline);
    let finished = run::run_completing(plan, &observe, destination, stop, prepare, body, complete)?;
    report::outcome(finished)
}

/// Opens the target (checked, created or extended as needed), chooses the
/// engine and preconditions the region when asked.
fn open_target(config: &DiskConfig, stop: &StopFlag) -> Result<(Target, EngineKind, Vec<Warning>)> {
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
    let mut warnings: Vec<Warning> = in_memory(&target.path).into_iter().collect();
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
    Ok((target, kind, warnings))
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

/// The engine's plan (the engine chosen and the region's length join the
/// parameters), and where each direction's values go.
fn plan(
    config: &DiskConfig,
    target: &Target,
    kind: EngineKind,
    warnings: Vec<Warning>,
) -> Result<(Plan, SeriesMap)> {
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
        offered: config.offered(),
    };
    Ok((plan, map))
}

/// What the completion measures the run against, read just before it.
struct Baseline {
    /// The device's write counters (when the run writes).
    wa: Option<wa::Before>,
    /// The process's CPU time.
    cpu: CpuTime,
}

impl Baseline {
    fn take(config: &DiskConfig, target: &Target) -> Baseline {
        let wa = config.rw.writes().then(|| wa::before(target));
        Baseline {
            wa,
            cpu: sys::process_cpu(),
        }
    }
}

/// What the probe adds to the run once its jobs are done: their counts,
/// the write amplification and the CPU time, as the `disk` section.
fn complete(
    run: &mut RunFile,
    config: &DiskConfig,
    target: &Target,
    kind: EngineKind,
    jobs: &Jobs,
    baseline: Baseline,
) -> Result<()> {
    let total = jobs.total()?;
    if config.rw.writes() {
        // Flush what the run wrote so the device counters include it.
        let _ = target.file.sync_all();
    }
    let write_amplification = baseline
        .wa
        .map(|b| wa::after(b, total.bytes[Dir::Write as usize]));
    let cpu_after = sys::process_cpu();
    let fixed = match make_engine(kind, target, 1, target.logical_block as usize, 0)? {
        AnyEngine::Uring(u) => Some(u.fixed_buffers()),
        AnyEngine::Psync(_) => None,
    };
    let section = report::build(
        config,
        target,
        kind,
        fixed,
        run,
        &total,
        write_amplification,
        baseline.cpu,
        cpu_after,
    );
    report::complete(run, section, &total);
    Ok(())
}

/// Filesystems whose files no block request ever serves, by `statfs`'s
/// magic: in memory (tmpfs, ramfs, hugetlbfs) or over a network or a
/// user-space daemon (NFS, SMB, FUSE and virtiofs, 9p, Ceph). Overlay and
/// btrfs also lack a block device of their own in `st_dev`, but their
/// requests do reach a disk, so they are not here.
const NO_BLOCK_LAYER: [(i64, &str); 9] = [
    (0x0102_1994, "tmpfs"),
    (0x8584_58f6, "ramfs"),
    (0x9584_58f6, "hugetlbfs"),
    (0x6969, "NFS"),
    (0xfe53_4d42, "SMB"),
    (0xff53_4d42, "CIFS"),
    (0x6573_5546, "FUSE"),
    (0x0102_1997, "9p"),
    (0x00c3_6400, "Ceph"),
];

/// A warning when the file lives in memory (tmpfs, ramfs, hugetlbfs): the
/// run then measures the page cache's memory, not a disk, and a sweep of
/// it finds memory's capacity.
fn in_memory(path: &std::path::Path) -> Option<Warning> {
    let magic = crate::sys::filesystem_magic(path).ok()?;
    let name = NO_BLOCK_LAYER[..3].iter().find(|(m, _)| *m == magic)?.1;
    Some(Warning {
        message: format!(
            "{} is on {name}: its reads and writes are served from memory, so this run \
             measures memory, not a disk",
            path.display()
        ),
        advice: "put the file on the filesystem of the disk to be measured (df -T shows \
                 where a path lives), or give --device"
            .into(),
    })
}

/// `--kernel blame` explains one operation per thread at a time: with
/// several in flight on a thread, no window is one operation's own.
fn check_blame(config: &DiskConfig, destination: &Destination) -> Result<()> {
    if destination.blamed() && config.iodepth > 1 {
        return Err(crate::error::input_error(format!(
            "--kernel blame explains one operation at a time per thread, and --iodepth {} keeps \
             several in flight on each: use --iodepth 1 with --jobs N for N in flight",
            config.iodepth
        )));
    }
    Ok(())
}

/// Refuses `--kernel block` for a file on a filesystem without a block
/// layer ([`NO_BLOCK_LAYER`]): no request of the run would reach it and
/// its six series would stay empty. A file not yet created is judged by
/// its directory.
fn check_block_target(config: &DiskConfig, destination: &Destination) -> Result<()> {
    let target::TargetSpec::File(path) = &config.target else {
        return Ok(());
    };
    if !destination
        .kernel
        .contains(&crate::model::kernel::KernelSource::Block)
    {
        return Ok(());
    }
    let existing = if path.exists() {
        path.clone()
    } else {
        match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
            _ => std::path::PathBuf::from("."),
        }
    };
    let Ok(magic) = crate::sys::filesystem_magic(&existing) else {
        return Ok(());
    };
    match NO_BLOCK_LAYER.iter().find(|(m, _)| *m == magic) {
        None => Ok(()),
        Some((_, name)) => Err(crate::error::input_error(format!(
            "--kernel block: {} is on {name}, a filesystem without a block device, so no \
             request of this run reaches the block layer and its block series would stay \
             empty; put the file on a disk's filesystem, or leave block out of --kernel",
            path.display()
        ))),
    }
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
