//! The disk run's own figures beside its series: IOPS and bandwidth (per
//! interval and overall), failed I/Os by errno, CPU time per I/O and write
//! amplification. They go in the run file under `"disk"` (an additive key:
//! readers of `cauda.run/1` ignore it) and in the printed summary.

use std::collections::BTreeMap;

use anyhow::{Result, anyhow};
use serde::Serialize;

use super::engine::{Dir, EngineKind};
use super::measure::JobStats;
use super::sys::CpuTime;
use super::target::{Mark, Target};
use super::wa::WriteAmplification;
use super::{DiskConfig, DiskRun};
use crate::model::{RunFile, Warning};
use crate::output;
use crate::probe::session::Finished;
use crate::units::format_ns;

/// Throughput of one interval.
#[derive(Clone, Debug, PartialEq, Serialize)]
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
#[derive(Clone, Debug, PartialEq, Serialize)]
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
#[derive(Clone, Debug, PartialEq, Serialize)]
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
    pub ios: BTreeMap<&'static str, u64>,
    /// Bytes by direction.
    pub bytes: BTreeMap<&'static str, u64>,
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

impl DiskReport {
    /// Builds the report from the finished run and the jobs' counts.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        config: &DiskConfig,
        target: &Target,
        engine: EngineKind,
        fixed_buffers: Option<bool>,
        run: &RunFile,
        total: &JobStats,
        write_amplification: Option<WriteAmplification>,
        cpu_before: CpuTime,
        cpu_after: CpuTime,
    ) -> Self {
        let data_ios = total.ios[Dir::Read as usize] + total.ios[Dir::Write as usize];
        let data_bytes = total.bytes[Dir::Read as usize] + total.bytes[Dir::Write as usize];
        let seconds = (run.duration_ns as f64 / 1e9).max(1e-9);
        let mut per_interval: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
        for series in &run.series {
            if series.tag != "read" && series.tag != "write" {
                continue;
            }
            for interval in &series.intervals {
                let entry = per_interval
                    .entry(interval.start_ns)
                    .or_insert((interval.length_ns, 0));
                entry.1 += interval.count;
            }
        }
        let intervals = per_interval
            .into_iter()
            .map(|(start_ns, (length_ns, count))| {
                let s = (length_ns as f64 / 1e9).max(1e-9);
                IntervalThroughput {
                    start_ns,
                    length_ns,
                    ios: count,
                    iops: count as f64 / s,
                    bandwidth_bytes_per_s: (count * config.bs) as f64 / s,
                }
            })
            .collect();
        let all_ios = total.total_ios().max(1) as f64;
        let process_user = cpu_after.user_ns.saturating_sub(cpu_before.user_ns);
        let process_sys = cpu_after.sys_ns.saturating_sub(cpu_before.sys_ns);
        let by_dir = |values: [u64; 3]| -> BTreeMap<&'static str, u64> {
            Dir::ALL
                .iter()
                .filter(|d| values[**d as usize] > 0)
                .map(|d| (d.tag(), values[*d as usize]))
                .collect()
        };
        DiskReport {
            target: target.path.display().to_string(),
            is_device: target.is_device,
            mark: target.mark,
            created: target.created,
            region_len: target.region_len,
            engine,
            fixed_buffers,
            direct: config.direct,
            logical_block: target.logical_block,
            logical_block_source: target.logical_block_source.clone(),
            ios: by_dir(total.ios),
            bytes: by_dir(total.bytes),
            failed: total.faults.values().sum(),
            iops: data_ios as f64 / seconds,
            bandwidth_bytes_per_s: data_bytes as f64 / seconds,
            intervals,
            cpu: CpuReport {
                jobs_user_ns: total.cpu.user_ns,
                jobs_sys_ns: total.cpu.sys_ns,
                jobs_per_io_ns: (total.cpu.user_ns + total.cpu.sys_ns) as f64 / all_ios,
                process_user_ns: process_user,
                process_sys_ns: process_sys,
                process_per_io_ns: (process_user + process_sys) as f64 / all_ios,
            },
            write_amplification,
            stopped: total.fatal.clone(),
        }
    }
}

/// Adds the faults, warnings and the `"disk"` section to the run file
/// (rewritten atomically), then returns the run — or, after saving, the
/// error of a run that stopped on a full disk or failed verification.
pub fn save(finished: Finished, report: DiskReport, total: &JobStats) -> Result<DiskRun> {
    let Finished { mut run, path } = finished;
    run.faults
        .extend(total.faults.iter().map(|(k, v)| (k.clone(), *v)));
    if report.failed > 0 {
        let list: Vec<String> = total
            .faults
            .iter()
            .map(|(k, v)| format!("{k} ×{v}"))
            .collect();
        run.warnings.push(Warning {
            message: format!("{} I/O(s) failed: {}", report.failed, list.join(", ")),
            advice: "failed I/Os are counted, not timed; check dmesg for device errors".into(),
        });
    }
    if let Some(why) = &report.stopped {
        // The stop was ours, not the user's.
        run.interrupted = false;
        run.warnings.push(Warning {
            message: format!("the run stopped early: {why}"),
            advice: "free space on the filesystem or lower --size".into(),
        });
    }
    let mut value = serde_json::to_value(&run)?;
    value["disk"] = serde_json::to_value(&report)?;
    let mut bytes = serde_json::to_vec(&value)?;
    bytes.push(b'\n');
    output::write_atomic(&path, &bytes)?;
    let mismatches = total
        .faults
        .get("read verify-mismatch")
        .copied()
        .unwrap_or(0);
    if let Some(why) = &report.stopped {
        return Err(anyhow!(
            "{why}; the run stopped, and what was measured is saved in {}",
            path.display()
        ));
    }
    if mismatches > 0 {
        return Err(anyhow!(
            "--verify: {mismatches} block(s) read back did not hold the pattern written; the run \
             is saved in {}",
            path.display()
        ));
    }
    Ok(DiskRun {
        finished: Finished { run, path },
        report,
    })
}

fn bytes_per_s(b: f64) -> String {
    const UNITS: [&str; 5] = ["B/s", "KiB/s", "MiB/s", "GiB/s", "TiB/s"];
    let mut v = b;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    format!("{v:.1} {}", UNITS[i])
}

/// The summary lines printed before the latency table.
pub fn render(report: &DiskReport, load_closed: bool) -> String {
    let mut out = String::new();
    let ios: Vec<String> = report.ios.iter().map(|(k, v)| format!("{k} {v}")).collect();
    out.push_str(&format!(
        "disk {}: {} {}, {} — {:.0} IOPS, {} ({})\n",
        report.target,
        match report.engine {
            EngineKind::IoUring => "io_uring",
            EngineKind::Psync => "psync",
        },
        if report.direct {
            "O_DIRECT"
        } else {
            "buffered"
        },
        if load_closed {
            "closed loop"
        } else {
            "open loop (latency from intended start)"
        },
        report.iops,
        bytes_per_s(report.bandwidth_bytes_per_s),
        ios.join(", "),
    ));
    out.push_str(&format!(
        "cpu per I/O: {} in the I/O threads (user {} + sys {} total), {} for the whole process\n",
        format_ns(report.cpu.jobs_per_io_ns),
        format_ns(report.cpu.jobs_user_ns as f64),
        format_ns(report.cpu.jobs_sys_ns as f64),
        format_ns(report.cpu.process_per_io_ns),
    ));
    if report.failed > 0 {
        out.push_str(&format!("failed I/Os: {}\n", report.failed));
    }
    if let Some(wa) = &report.write_amplification {
        out.push_str(&format!(
            "stack write amplification: {}\n",
            wa.stack.describe()
        ));
        out.push_str(&format!(
            "device write amplification: {}\n",
            wa.device.describe()
        ));
    }
    out
}
