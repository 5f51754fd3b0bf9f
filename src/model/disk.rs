//! The `"disk"` section of a run file: what `cauda disk` measured beside its
//! series — the target, IOPS and bandwidth (overall and per interval),
//! failed I/Os, CPU time per I/O and write amplification. The probe fills
//! it in before the run file's one write; readers that do not know it
//! ignore it (an additive key of `cauda.run/1`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Which engine to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
pub enum EngineKind {
    /// Linux io_uring: one ring per job, `--iodepth` operations in flight.
    #[value(name = "io_uring")]
    #[serde(rename = "io_uring")]
    IoUring,
    /// Synchronous pread/pwrite, one operation at a time per job.
    #[value(name = "psync")]
    #[serde(rename = "psync")]
    Psync,
}

/// How a file is known to be cauda's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mark {
    /// The `user.cauda` extended attribute.
    Xattr,
    /// An entry in the registry file (no user xattrs on this filesystem).
    Registry,
    /// Not cauda's (written with `--force`) or a device.
    None,
}

/// Throughput of one interval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IntervalThroughput {
    /// Interval start, ns from the run start.
    pub start_ns: u64,
    /// Interval length, ns (the last one may be partial).
    pub length_ns: u64,
    /// Reads and writes completed in it.
    pub ios: u64,
    /// Reads and writes completed per second.
    pub iops: f64,
    /// Bytes read and written per second.
    pub bandwidth_bytes_per_s: f64,
}

/// CPU time of the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpuReport {
    /// User time of the I/O threads while measuring, ns.
    pub jobs_user_ns: u64,
    /// System time of the I/O threads while measuring, ns.
    pub jobs_sys_ns: u64,
    /// (user + system) of the I/O threads per completed I/O, ns.
    pub jobs_per_io_ns: f64,
    /// User time of the whole process during the run (collector and
    /// snapshot included), ns.
    pub process_user_ns: u64,
    /// System time of the whole process during the run, ns.
    pub process_sys_ns: u64,
    /// (user + system) of the process per completed I/O, ns.
    pub process_per_io_ns: f64,
}

/// The `"disk"` section of a run file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DiskReport {
    /// The target's path.
    pub target: String,
    /// A block device rather than a file.
    pub is_device: bool,
    /// How the file is known to be cauda's (`xattr`, `registry`, `none`).
    pub mark: Mark,
    /// cauda created the file in this run.
    pub created: bool,
    /// Bytes of the region measured.
    pub region_len: u64,
    /// The engine used.
    pub engine: EngineKind,
    /// io_uring with registered buffers (None for psync).
    pub fixed_buffers: Option<bool>,
    /// O_DIRECT.
    pub direct: bool,
    /// The alignment used for O_DIRECT, and where it came from.
    pub logical_block: u64,
    /// Where `logical_block` came from.
    pub logical_block_source: String,
    /// Successful operations by direction.
    pub ios: BTreeMap<String, u64>,
    /// Bytes by direction.
    pub bytes: BTreeMap<String, u64>,
    /// Failed operations (all kinds; by errno in the run's `faults`).
    pub failed: u64,
    /// Reads and writes per second over the run.
    pub iops: f64,
    /// Bytes read and written per second over the run.
    pub bandwidth_bytes_per_s: f64,
    /// Throughput per interval.
    pub intervals: Vec<IntervalThroughput>,
    /// CPU time.
    pub cpu: CpuReport,
    /// Write amplification (write workloads only).
    pub write_amplification: Option<WriteAmplification>,
    /// Why the run stopped early, if it did (e.g. a full disk).
    pub stopped: Option<String>,
}

/// One amplification figure, or why there is none.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Amplification {
    /// Measured.
    Measured {
        /// Written bytes below ÷ written bytes above.
        factor: f64,
        /// Bytes written below (by the device, or to the media).
        below_bytes: u64,
        /// Bytes written above (by the probe, or by the host).
        above_bytes: u64,
        /// Where the figures came from.
        source: String,
    },
    /// Not available, and why.
    NotAvailable {
        /// Why not.
        not_available: String,
    },
}

impl Amplification {
    /// One line for people.
    pub fn describe(&self) -> String {
        match self {
            Amplification::Measured {
                factor,
                below_bytes,
                above_bytes,
                ..
            } => format!("{factor:.3} ({below_bytes} B below / {above_bytes} B above)"),
            Amplification::NotAvailable { not_available } => {
                format!("not available: {not_available}")
            }
        }
    }
}

/// Both figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WriteAmplification {
    /// Block device bytes ÷ probe bytes.
    pub stack: Amplification,
    /// NAND media bytes ÷ host bytes (NVMe).
    pub device: Amplification,
}
