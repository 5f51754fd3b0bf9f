//! The lab's suite: which probes run, with what arguments, for how long.
//!
//! Each step is one `cauda` command run as a child process, so a step that
//! fails (no io_uring, O_DIRECT refused) or is interrupted leaves the others
//! and their run files intact, and each probe sets up its own signals,
//! pinning and memory locking as it would when run by hand.

use std::path::{Path, PathBuf};

/// A family of steps, for `--skip`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StepKind {
    /// `cauda host audit`.
    Audit,
    /// `cauda timer`.
    Timer,
    /// `cauda hiccup`.
    Hiccup,
    /// `cauda disk` (random reads at QD1, random writes at QD32).
    Disk,
    /// `cauda net --loopback` (back to back, and after 500 µs idle).
    Net,
}

/// One command of the suite.
#[derive(Clone, Debug)]
pub struct Step {
    /// The family, for `--skip` and the findings.
    pub kind: StepKind,
    /// File stem of its outputs, e.g. `disk-randread-qd1`.
    pub name: &'static str,
    /// What a reader sees in the progress line and the summary.
    pub title: &'static str,
    /// Arguments after `cauda`.
    pub args: Vec<String>,
    /// How long it measures, in seconds (for the progress line).
    pub seconds: u64,
    /// Where its result goes: a run file, or the captured stdout (audit).
    pub output: PathBuf,
    /// Whether `output` is a run file (else captured stdout).
    pub is_run: bool,
}

impl Step {
    /// The live interval log a probe step streams, for the progress line.
    pub fn hlog(&self, dir: &Path) -> PathBuf {
        dir.join(format!(".{}.hlog", self.name))
    }
}

/// The steps of the suite, in order.
pub fn plan(
    dir: &Path,
    quick: bool,
    disk_file: &Path,
    disk_size: u64,
    skip: &[StepKind],
) -> Vec<Step> {
    let secs = |full: u64| if quick { 3 } else { full };
    let run = |kind, name: &'static str, title, seconds: u64, args: &[&str]| {
        let output = dir.join(format!("{name}.json"));
        let mut all: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        all.extend([
            "--runtime".into(),
            format!("{seconds}s"),
            "--quiet".into(),
            "-o".into(),
            output.display().to_string(),
        ]);
        Step {
            kind,
            name,
            title,
            args: all,
            seconds,
            output,
            is_run: true,
        }
    };
    let file = disk_file.display().to_string();
    let size = format!("{}", disk_size);
    let disk = |name, title, seconds, extra: &[&str]| {
        let mut args = vec!["disk", "--file", &file, "--size", &size];
        args.extend_from_slice(extra);
        run(StepKind::Disk, name, title, seconds, &args)
    };
    let steps = vec![
        Step {
            kind: StepKind::Audit,
            name: "audit",
            title: "host audit",
            args: vec!["host".into(), "audit".into(), "--json".into()],
            seconds: 0,
            output: dir.join("audit.json"),
            is_run: false,
        },
        run(
            StepKind::Timer,
            "timer",
            "timer: 1 ms wake-ups",
            secs(10),
            &["timer"],
        ),
        run(
            StepKind::Hiccup,
            "hiccup",
            "hiccup: host noise",
            secs(8),
            &["hiccup"],
        ),
        disk(
            "disk-randread-qd1",
            "disk: 4k random reads, QD1",
            secs(10),
            &["--rw", "randread", "--iodepth", "1"],
        ),
        disk(
            "disk-randwrite-qd32",
            "disk: 4k random writes, QD32",
            secs(10),
            &["--rw", "randwrite", "--iodepth", "32"],
        ),
        run(
            StepKind::Net,
            "net-tcp-gap0",
            "net: TCP ping-pong on loopback",
            secs(8),
            &["net", "--loopback", "--gap", "0s"],
        ),
        run(
            StepKind::Net,
            "net-tcp-gap500us",
            "net: TCP ping-pong, 500 µs idle between pings",
            secs(8),
            &["net", "--loopback", "--gap", "500us"],
        ),
    ];
    steps
        .into_iter()
        .filter(|s| !skip.contains(&s.kind))
        .collect()
}

/// A capacity sweep the lab can add (`--sweep`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SweepKind {
    /// `cauda sweep -- disk`: random reads of the lab's test file.
    Disk,
    /// `cauda sweep -- net --loopback`.
    Net,
}

/// The sweep steps, after the suite: each a `cauda sweep` of at most
/// `budget_s` seconds into `DIR/sweep-PROBE/`, its table captured.
pub fn sweeps(
    dir: &Path,
    kinds: &[SweepKind],
    objective: &str,
    budget_s: u64,
    disk_file: &Path,
    disk_size: u64,
) -> Vec<Step> {
    kinds
        .iter()
        .map(|kind| {
            let (kind, name, title, probe): (_, _, _, Vec<String>) = match kind {
                SweepKind::Disk => (
                    StepKind::Disk,
                    "sweep-disk",
                    "sweep: disk random reads, capacity at the objective",
                    ["disk", "--file", &disk_file.display().to_string(), "--size"]
                        .iter()
                        .map(|a| a.to_string())
                        .chain([disk_size.to_string(), "--rw".into(), "randread".into()])
                        .collect(),
                ),
                SweepKind::Net => (
                    StepKind::Net,
                    "sweep-net",
                    "sweep: loopback TCP, capacity at the objective",
                    vec!["net".into(), "--loopback".into()],
                ),
            };
            let mut args: Vec<String> = [
                "sweep",
                "--objective",
                objective,
                "--budget",
                &format!("{budget_s}s"),
                "--from",
                "1000/s",
                "--quiet",
                "--dir",
                &dir.join(name).display().to_string(),
                "--",
            ]
            .iter()
            .map(|a| a.to_string())
            .collect();
            args.extend(probe);
            Step {
                kind,
                name,
                title,
                args,
                seconds: budget_s,
                output: dir.join(format!("{name}.txt")),
                is_run: false,
            }
        })
        .collect()
}

/// The disk steps' file size: a quarter of the free space, between
/// 64 MiB and 1 GiB (256 MiB with `--quick`), in whole MiB.
pub fn disk_size(free: u64, quick: bool) -> u64 {
    const MIB: u64 = 1 << 20;
    let cap = if quick { 256 * MIB } else { 1024 * MIB };
    (free / 4).clamp(64 * MIB, cap) / MIB * MIB
}

/// Free space the suite needs beside the disk file (run files, logs).
pub const HEADROOM: u64 = 8 << 20;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_fit_their_time_budgets() {
        let dir = Path::new("/tmp/lab");
        for (quick, budget) in [(false, 90), (true, 30)] {
            let steps = plan(dir, quick, &dir.join("disk.data"), 64 << 20, &[]);
            let measuring: u64 = steps.iter().map(|s| s.seconds).sum();
            // Start-up, the disk file and the report take a few seconds.
            assert!(measuring + 10 <= budget, "quick={quick}: {measuring} s");
            assert_eq!(steps.len(), 7);
            assert!(
                steps
                    .iter()
                    .filter(|s| s.is_run)
                    .all(|s| s.args.contains(&"--quiet".into()))
            );
        }
        let no_disk = plan(
            dir,
            true,
            &dir.join("d"),
            1,
            &[StepKind::Disk, StepKind::Audit],
        );
        assert_eq!(no_disk.len(), 4);
    }

    #[test]
    fn disk_size_follows_free_space() {
        const MIB: u64 = 1 << 20;
        assert_eq!(disk_size(100 * 1024 * MIB, false), 1024 * MIB);
        assert_eq!(disk_size(100 * 1024 * MIB, true), 256 * MIB);
        assert_eq!(disk_size(800 * MIB + 12345, false), 200 * MIB);
        assert_eq!(disk_size(10 * MIB, false), 64 * MIB);
    }
}
