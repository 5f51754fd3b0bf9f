//! The disk run's own figures beside its series: IOPS and bandwidth (per
//! interval and overall), failed I/Os by errno, CPU time per I/O and write
//! amplification. They complete the run file (its `"disk"` section, typed
//! in [`crate::model::disk`], its faults and warnings) before the run engine
//! writes it, and make the printed summary.

use std::collections::BTreeMap;

use anyhow::{Result, anyhow};

use super::config::DiskConfig;
use super::engine::Dir;
use super::measure::JobStats;
use super::sys::CpuTime;
use super::target::Target;
use crate::model::disk::{
    CpuReport, DiskReport, EngineKind, IntervalThroughput, WriteAmplification,
};
use crate::model::{RunFile, Warning};
use crate::probe::run::Finished;
use crate::units::format_ns;

/// The disk section of a run the run engine has collected but not written.
#[allow(clippy::too_many_arguments)]
pub fn build(
    config: &DiskConfig,
    target: &Target,
    engine: EngineKind,
    fixed_buffers: Option<bool>,
    run: &RunFile,
    total: &JobStats,
    write_amplification: Option<WriteAmplification>,
    cpu_before: CpuTime,
    cpu_after: CpuTime,
) -> DiskReport {
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
    let by_dir = |values: [u64; 3]| -> BTreeMap<String, u64> {
        Dir::ALL
            .iter()
            .filter(|d| values[**d as usize] > 0)
            .map(|d| (d.tag().to_string(), values[*d as usize]))
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

/// Completes the run with the disk section, the failed I/Os in `faults`
/// and the warnings they call for.
pub fn complete(run: &mut RunFile, report: DiskReport, total: &JobStats) {
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
    run.disk = Some(report);
}

/// The saved run, or, once it is saved, the error of a run that stopped
/// on a full disk or failed verification.
pub fn outcome(finished: Finished) -> Result<Finished> {
    let path = finished.path.display();
    let run = &finished.run;
    if let Some(why) = run.disk.as_ref().and_then(|d| d.stopped.as_ref()) {
        return Err(anyhow!(
            "{why}; the run stopped, and what was measured is saved in {path}"
        ));
    }
    let mismatches = run.faults.get("read verify-mismatch").copied().unwrap_or(0);
    if mismatches > 0 {
        return Err(anyhow!(
            "--verify: {mismatches} block(s) read back did not hold the pattern written; the run \
             is saved in {path}"
        ));
    }
    Ok(finished)
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
