//! Per-interval host counters: what the host did while a probe measured.
//!
//! Sampled at each interval boundary by the run engine's observer thread (never
//! a probe thread) and stored as deltas per interval, so a stall can be laid
//! beside the counters of the same second:
//!
//! - PSI (`/proc/pressure/{cpu,io,memory}`, `some` and `full`): µs stalled;
//!   kernel docs: accounting/psi.rst.
//! - `/proc/vmstat`: pgmajfault, pswpin, pswpout, thp_fault_alloc,
//!   compact_stall, allocstall (all zones), nr_dirty and nr_writeback (pages;
//!   these two are levels, so their delta is signed).
//! - `/proc/stat`: ctxt, intr, procs_blocked (level), iowait and steal (ms).
//! - cpuidle: usage, time (µs), above and below of each idle state, summed
//!   over CPUs and keyed by the state's name, never its index.
//! - `/proc/diskstats` of the probed device, when the probe names one.
//! - The probe threads' voluntary and involuntary context switches.
//!
//! Reading them costs a few small `/proc` reads a second; a missing file
//! (no PSI, a container) just leaves its counters out.

use crate::model::{HostCounters, HostInterval, IntervalRecord};
use std::collections::BTreeMap;

use super::root::HostRoot;

/// The kernel's USER_HZ: `/proc/stat` times are in these ticks.
const USER_HZ: i64 = 100;

/// What to read at each sample.
#[derive(Clone, Debug)]
pub struct Sampler {
    root: HostRoot,
    /// The probed block device for diskstats (`vda`, `nvme0n1`).
    device: Option<String>,
    /// The probe threads' kernel ids (for their context switches).
    threads: Vec<i32>,
    /// cpuidle state directories, found once.
    idle_states: Vec<(String, String)>,
    /// Per-thread last known context switches (a thread that exited keeps its last).
    last_switches: BTreeMap<i32, (i64, i64)>,
}

/// One reading: counter name → value.
pub type Reading = BTreeMap<String, i64>;

impl Sampler {
    /// A sampler for the host below `root`.
    pub fn new(root: HostRoot, device: Option<String>, threads: Vec<i32>) -> Self {
        let mut idle_states = Vec::new();
        let cpu = "/sys/devices/system/cpu";
        let numbered = |n: &String| {
            n.strip_prefix("cpu")
                .is_some_and(|d| d.parse::<u32>().is_ok())
        };
        for name in root.list(cpu).into_iter().filter(numbered) {
            let dir = format!("{cpu}/{name}/cpuidle");
            for state in root
                .list(&dir)
                .into_iter()
                .filter(|s| s.starts_with("state"))
            {
                let path = format!("{dir}/{state}");
                if let Some(label) = root.read(&format!("{path}/name")) {
                    idle_states.push((path, label));
                }
            }
        }
        Sampler {
            root,
            device,
            threads,
            idle_states,
            last_switches: BTreeMap::new(),
        }
    }

    /// Reads every counter now.
    pub fn sample(&mut self) -> Reading {
        let mut r = Reading::new();
        for resource in ["cpu", "io", "memory"] {
            if let Some(text) = self.root.read(&format!("/proc/pressure/{resource}")) {
                for (kind, total) in parse_psi(&text) {
                    r.insert(format!("psi.{resource}.{kind}"), total);
                }
            }
        }
        if let Some(text) = self.root.read("/proc/vmstat") {
            parse_vmstat(&text, &mut r);
        }
        if let Some(text) = self.root.read("/proc/stat") {
            parse_stat(&text, &mut r);
        }
        for (dir, label) in &self.idle_states {
            for (file, key) in [
                ("usage", "usage"),
                ("time", "time_us"),
                ("above", "above"),
                ("below", "below"),
            ] {
                if let Some(v) = self
                    .root
                    .read(&format!("{dir}/{file}"))
                    .and_then(|v| v.parse::<i64>().ok())
                {
                    *r.entry(format!("cpuidle.{label}.{key}")).or_insert(0) += v;
                }
            }
        }
        if let Some(dev) = &self.device
            && let Some(text) = self.root.read("/proc/diskstats")
        {
            parse_diskstats(&text, dev, &mut r);
        }
        if !self.threads.is_empty() {
            for &tid in &self.threads {
                let path = format!("/proc/self/task/{tid}/status");
                if let Some(text) = self.root.read(&path) {
                    let field = |key: &str| {
                        text.lines()
                            .find_map(|l| l.strip_prefix(key))
                            .and_then(|v| v.trim().parse::<i64>().ok())
                            .unwrap_or(0)
                    };
                    self.last_switches.insert(
                        tid,
                        (
                            field("voluntary_ctxt_switches:"),
                            field("nonvoluntary_ctxt_switches:"),
                        ),
                    );
                }
            }
            let (v, n) = self
                .last_switches
                .values()
                .fold((0, 0), |(a, b), (v, n)| (a + v, b + n));
            r.insert("probe.voluntary_ctxt".into(), v);
            r.insert("probe.involuntary_ctxt".into(), n);
        }
        r
    }
}

/// The block device (as `/proc/diskstats` names it) holding `path`: the
/// whole disk for a file on a partition (`/tmp/x` on `vda1` → `vda`).
/// `None` for a filesystem without a block device (tmpfs, overlay).
pub fn block_device_of(path: &std::path::Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(path).ok()?.dev();
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    let sys = std::path::PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    let resolved = std::fs::canonicalize(&sys).ok()?;
    let disk = if resolved.join("partition").exists() {
        resolved.parent()?
    } else {
        &resolved
    };
    disk.file_name()?.to_str().map(str::to_string)
}

/// Host counter deltas on the run's interval grid: interval i spans
/// boundary readings i and i+1, the last one ends at the final reading.
pub fn align(readings: Vec<Reading>, grid: &[IntervalRecord]) -> HostCounters {
    let names: Vec<String> = readings
        .first()
        .map(|r| r.keys().cloned().collect())
        .unwrap_or_default();
    let last = readings.len().saturating_sub(1);
    let intervals = grid
        .iter()
        .enumerate()
        .map(|(i, slot)| {
            let start = readings.get(i.min(last));
            let end = if i + 1 < grid.len() {
                readings.get((i + 1).min(last))
            } else {
                readings.get(last)
            };
            HostInterval {
                start_ns: slot.start_ns,
                length_ns: slot.length_ns,
                deltas: match (start, end) {
                    (Some(a), Some(b)) => deltas(&names, a, b),
                    _ => vec![0; names.len()],
                },
            }
        })
        .collect();
    HostCounters { names, intervals }
}

/// `some avg10=… total=N` lines → (`some`, N µs).
fn parse_psi(text: &str) -> Vec<(String, i64)> {
    text.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let kind = words.next()?;
            let total = words.find_map(|w| w.strip_prefix("total="))?.parse().ok()?;
            Some((kind.to_string(), total))
        })
        .collect()
}

const VMSTAT: [&str; 7] = [
    "pgmajfault",
    "pswpin",
    "pswpout",
    "thp_fault_alloc",
    "compact_stall",
    "nr_dirty",
    "nr_writeback",
];

fn parse_vmstat(text: &str, r: &mut Reading) {
    let mut allocstall = None;
    for line in text.lines() {
        let Some((key, value)) = line.split_once(' ') else {
            continue;
        };
        let Ok(value) = value.trim().parse::<i64>() else {
            continue;
        };
        if VMSTAT.contains(&key) {
            r.insert(format!("vmstat.{key}"), value);
        } else if key.starts_with("allocstall") {
            // One counter per zone since 4.10 (allocstall_normal, …).
            *allocstall.get_or_insert(0) += value;
        }
    }
    if let Some(total) = allocstall {
        r.insert("vmstat.allocstall".into(), total);
    }
}

fn parse_stat(text: &str, r: &mut Reading) {
    for line in text.lines() {
        let mut words = line.split_whitespace();
        match words.next() {
            Some("cpu") => {
                let ticks: Vec<i64> = words.filter_map(|w| w.parse().ok()).collect();
                if let Some(iowait) = ticks.get(4) {
                    r.insert("stat.iowait_ms".into(), iowait * 1000 / USER_HZ);
                }
                if let Some(steal) = ticks.get(7) {
                    r.insert("stat.steal_ms".into(), steal * 1000 / USER_HZ);
                }
            }
            Some(key @ ("ctxt" | "intr" | "procs_blocked")) => {
                if let Some(v) = words.next().and_then(|w| w.parse().ok()) {
                    r.insert(format!("stat.{key}"), v);
                }
            }
            _ => {}
        }
    }
}

fn parse_diskstats(text: &str, device: &str, r: &mut Reading) {
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 14 || f[2] != device {
            continue;
        }
        let n = |i: usize| f[i].parse::<i64>().unwrap_or(0);
        for (key, value) in [
            ("reads", n(3)),
            ("read_kb", n(5) / 2),
            ("read_ms", n(6)),
            ("writes", n(7)),
            ("write_kb", n(9) / 2),
            ("write_ms", n(10)),
            ("in_flight", n(11)),
            ("busy_ms", n(12)),
            ("queue_ms", n(13)),
        ] {
            r.insert(format!("disk.{device}.{key}"), value);
        }
    }
}

/// Deltas `after − before` over the names, in order; a counter absent from
/// either reading is 0.
pub fn deltas(names: &[String], before: &Reading, after: &Reading) -> Vec<i64> {
    names
        .iter()
        .map(|n| match (before.get(n), after.get(n)) {
            (Some(b), Some(a)) => a - b,
            _ => 0,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_kernels_formats() {
        let psi = "some avg10=0.00 avg60=0.00 avg300=0.00 total=1234\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=99\n";
        assert_eq!(
            parse_psi(psi),
            vec![("some".to_string(), 1234), ("full".to_string(), 99)]
        );
        let mut r = Reading::new();
        parse_vmstat(
            "nr_dirty 10\nnr_writeback 2\npgmajfault 7\nallocstall_dma 1\nallocstall_normal 3\n",
            &mut r,
        );
        assert_eq!(r["vmstat.nr_dirty"], 10);
        assert_eq!(r["vmstat.allocstall"], 4);
        parse_stat(
            "cpu  10 0 20 300 40 0 5 6 0 0\ncpu0 1 2 3\nintr 555 1 2\nctxt 42\nprocs_blocked 3\n",
            &mut r,
        );
        assert_eq!(r["stat.iowait_ms"], 400);
        assert_eq!(r["stat.steal_ms"], 60);
        assert_eq!(r["stat.intr"], 555);
        assert_eq!(r["stat.ctxt"], 42);
        parse_diskstats(
            " 254       0 vda 100 0 800 50 200 0 1600 70 0 90 120 0 0 0 0\n",
            "vda",
            &mut r,
        );
        assert_eq!(r["disk.vda.reads"], 100);
        assert_eq!(r["disk.vda.write_kb"], 800);
        assert_eq!(r["disk.vda.busy_ms"], 90);
    }

    #[test]
    fn the_root_filesystem_has_a_disk_or_none() {
        // Whatever this host mounts at /, the answer is a /sys/block name.
        if let Some(dev) = block_device_of(std::path::Path::new("/")) {
            assert!(
                std::path::Path::new(&format!("/sys/block/{dev}")).exists(),
                "{dev}"
            );
        }
        assert_eq!(block_device_of(std::path::Path::new("/no/such/path")), None);
    }

    #[test]
    fn the_live_host_has_counters_and_they_only_grow() {
        let mut sampler = Sampler::new(HostRoot::default(), None, vec![crate::sys::thread_id()]);
        let a = sampler.sample();
        std::thread::sleep(std::time::Duration::from_millis(5));
        let b = sampler.sample();
        assert!(a.contains_key("stat.ctxt"), "{a:?}");
        assert!(
            b["probe.voluntary_ctxt"] >= 1,
            "the sleep was a voluntary switch"
        );
        let names: Vec<String> = a.keys().cloned().collect();
        for (name, d) in names.iter().zip(deltas(&names, &a, &b)) {
            if !name.starts_with("vmstat.nr_") && name != "stat.procs_blocked" {
                assert!(d >= 0, "{name} went backwards: {d}");
            }
        }
    }
}
