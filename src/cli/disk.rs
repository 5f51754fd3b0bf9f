//! `cauda disk`: its flags, its configuration, its banner and its figures.

use std::path::PathBuf;

use anyhow::Result;
use clap::{ArgGroup, Args};

use super::measure::{ProbeCommand, Ran};
use super::parse::{duration, rate};
use super::run_output::RunOutputArgs;
use crate::error::input_error;
use crate::model::disk::EngineKind;
use crate::probe::disk::DiskConfig;
use crate::probe::disk::target::TargetSpec;
use crate::probe::disk::workload::{Distribution, Rw, parse_distribution};
use crate::probe::run::{Destination, Finished};
use crate::record::Arrivals;
use crate::record::StopFlag;
use crate::units::{self, Rate};

fn size(text: &str) -> Result<u64, String> {
    units::parse_size(text)
}

/// `cauda disk`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("target").required(true).args(["file", "device"])))]
pub struct DiskArgs {
    /// The file to measure on. Created if absent (filled with random data,
    /// --size long, default 1G) and marked as cauda's own, so later write
    /// runs may reuse it; writing to an existing file cauda did not create
    /// needs --force.
    #[arg(long, value_name = "PATH")]
    pub file: Option<PathBuf>,
    /// The block device to measure on. Reads are always allowed; writes are
    /// refused on a device holding a partition table, filesystem, holders or
    /// a mount, unless --force-destroy-data.
    #[arg(long, value_name = "DEV")]
    pub device: Option<PathBuf>,
    /// Access pattern.
    #[arg(long, value_enum, default_value_t = Rw::Randread)]
    pub rw: Rw,
    /// Percent of reads for --rw randrw (0–100) [default: 50].
    #[arg(long, value_name = "PCT", value_parser = clap::value_parser!(u8).range(0..=100))]
    pub mix: Option<u8>,
    /// Block size of each I/O (e.g. 4k, 128k).
    #[arg(long, value_name = "SIZE", default_value = "4k", value_parser = size)]
    pub bs: u64,
    /// Bytes of the region measured [default: the whole file or device;
    /// 1G for a file cauda creates].
    #[arg(long, value_name = "SIZE", value_parser = size)]
    pub size: Option<u64>,
    /// Where the region starts in the file or device.
    #[arg(long, value_name = "SIZE", default_value = "0", value_parser = size)]
    pub offset: u64,
    /// Operations in flight per job (io_uring).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub iodepth: u32,
    /// Submit as soon as N operations are queued (fio's
    /// iodepth_batch_submit). 1 keeps the device fed most evenly; larger
    /// batches cost fewer system calls but can lose IOPS, notably on virtual
    /// disks.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub submit_batch: u32,
    /// Also record fio's split of the closed-loop latency: time in the
    /// submitting call (`read.slat`, …) and from its return to the
    /// completion (`read.clat`, …). Submission then gets a call of its own.
    #[arg(long, conflicts_with = "rate")]
    pub slat_clat: bool,
    /// Jobs: threads, each with its own queue, all on the same region.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub jobs: u32,
    /// How long to measure.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = duration)]
    pub runtime: u64,
    /// Warm-up before measuring, run but not recorded.
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = duration)]
    pub ramp: u64,
    /// Offsets of random workloads: uniform, or zipf:THETA (hot blocks).
    #[arg(long, value_name = "DIST", default_value = "uniform", value_parser = parse_distribution)]
    pub random: Distribution,
    /// I/O engine [default: io_uring where the kernel allows it, else psync].
    #[arg(long, value_enum)]
    pub engine: Option<EngineKind>,
    /// Go through the page cache instead of O_DIRECT.
    #[arg(long)]
    pub buffered: bool,
    /// Open loop: issue this many operations per second in total (shared
    /// evenly by the jobs), each timed from its intended start; without it,
    /// closed loop at --iodepth.
    #[arg(long, value_name = "N/s", value_parser = rate)]
    pub rate: Option<Rate>,
    /// Spacing of intended starts with --rate.
    #[arg(long, value_enum, default_value_t = Arrivals::Uniform, requires = "rate")]
    pub arrivals: Arrivals,
    /// fdatasync after every N writes (its own series, `fsync`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub fsync: Option<u64>,
    /// Write the whole region sequentially N times before measuring (SSD
    /// steady state). Counts as a write to the target.
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub precondition: u32,
    /// Allow writes to a block device that holds data (destroys it).
    #[arg(long, requires = "device")]
    pub force_destroy_data: bool,
    /// Writes carry a pattern derived from SEED and their offset; reads
    /// check it and count mismatches as faults (exit 1).
    #[arg(long, value_name = "SEED")]
    pub verify: Option<u64>,
    /// Seed of offsets, mix and the random data written.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output options (--force also allows writing to an existing file
    /// cauda did not create).
    #[command(flatten)]
    pub output: RunOutputArgs,
}

impl ProbeCommand for DiskArgs {
    type Config = DiskConfig;

    fn output(&self) -> &RunOutputArgs {
        &self.output
    }

    fn config(&self) -> Result<DiskConfig> {
        let args = self;
        if args.mix.is_some() && args.rw != Rw::Randrw {
            return Err(input_error(format!(
                "--mix sets the share of reads of --rw randrw; with --rw {} drop it (or use --rw randrw)",
                serde_json::to_value(args.rw)?.as_str().unwrap_or("?")
            )));
        }
        let target = match (&args.file, &args.device) {
            (_, Some(device)) => TargetSpec::Device(device.clone()),
            (Some(file), None) => TargetSpec::File(file.clone()),
            (None, None) => TargetSpec::File("cauda-disk.dat".into()),
        };
        let config = DiskConfig {
            target,
            rw: args.rw,
            read_pct: args.mix.unwrap_or(match args.rw {
                Rw::Read | Rw::Randread => 100,
                Rw::Write | Rw::Randwrite => 0,
                Rw::Randrw => 50,
            }),
            bs: args.bs,
            size: args.size,
            offset: args.offset,
            iodepth: args.iodepth as usize,
            submit_batch: args.submit_batch as usize,
            slat_clat: args.slat_clat,
            jobs: args.jobs as usize,
            runtime_ns: args.runtime,
            ramp_ns: args.ramp,
            random: args.random,
            engine: args.engine,
            direct: !args.buffered,
            rate_per_s: args.output.sharded_rate(args.rate)?.map(|r| r.per_second),
            arrivals: args.arrivals,
            fsync_every: args.fsync,
            precondition: args.precondition,
            force: args.output.force,
            force_destroy_data: args.force_destroy_data,
            verify: args.verify,
            seed: args.output.sharded_seed(args.seed)?,
            interval_length_ns: args.output.interval_length,
        };
        config.validate()?;
        Ok(config)
    }

    fn banner(config: &DiskConfig) -> String {
        format!(
            "cauda disk: {} job(s), --rw {} {} for {} — Ctrl-C stops and saves",
            config.jobs,
            serde_json::to_value(config.rw)
                .ok()
                .as_ref()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_else(|| "?".into()),
            match config.rate_per_s {
                Some(rate) => format!("at {rate}/s (open loop)"),
                None => format!("at iodepth {} (closed loop)", config.iodepth),
            },
            units::format_duration_compact(config.runtime_ns),
        )
    }

    fn run(config: &DiskConfig, destination: &Destination, stop: &StopFlag) -> Result<Ran> {
        Ok(crate::probe::disk::run(config, destination, stop)?.into())
    }

    /// The jobs' figures: IOPS, bandwidth, CPU per I/O, write amplification.
    fn epilogue(finished: &Finished) {
        if let Some(section) = &finished.run.disk {
            let closed = finished.run.load == crate::model::LoadMode::ClosedLoop;
            print!("{}", crate::probe::disk::report::render(section, closed));
        }
    }
}
