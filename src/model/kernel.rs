//! The run file's `kernel` section: how the kernel series of a run
//! (`--kernel block,runq`) were measured — what was attributed to the run
//! and how, what the programs cost, and what they could not count.
//!
//! The series themselves are ordinary series in the run's `series`, tagged
//! by [`KERNEL_TAGS`], so every analysis, comparison and export takes them
//! as it takes a probe's.

use serde::{Deserialize, Serialize};

/// A group of kernel series a run can ask for.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum KernelSource {
    /// The block layer, per direction: queue (request started → issued to
    /// the driver), device (issued → completed) and total.
    Block,
    /// Run-queue delay (woken or preempted → running) of the probe's own
    /// threads (`runq`) and of every thread on the host (`runq.host`).
    Runq,
    /// Per-operation blame: for each slow operation of the probe, where
    /// its latency went (run queue, interrupts, idle exit, its I/O, …);
    /// no series of its own, the run file's `blame` section.
    Blame,
}

impl KernelSource {
    /// The flag value naming it.
    pub fn name(self) -> &'static str {
        match self {
            KernelSource::Block => "block",
            KernelSource::Runq => "runq",
            KernelSource::Blame => "blame",
        }
    }

    /// The tags of the series it records, in [`KERNEL_TAGS`] order.
    pub fn tags(self) -> &'static [&'static str] {
        match self {
            KernelSource::Block => &KERNEL_TAGS[..6],
            KernelSource::Runq => &KERNEL_TAGS[6..],
            KernelSource::Blame => &[],
        }
    }
}

/// Every kernel series' tag, in the order the BPF programs count them.
pub const KERNEL_TAGS: [&str; 8] = [
    "block.queue:read",
    "block.queue:write",
    "block.device:read",
    "block.device:write",
    "block.total:read",
    "block.total:write",
    "runq",
    "runq.host",
];

/// The kernel series' tag that holds what the device took for a probe's
/// series `tag` (`read` → `block.device:read`), if it has one.
pub fn device_tag_of(tag: &str) -> Option<&'static str> {
    match tag {
        "read" => Some(KERNEL_TAGS[2]),
        "write" => Some(KERNEL_TAGS[3]),
        _ => None,
    }
}

/// How a run's kernel series were measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelReport {
    /// The groups recorded.
    pub sources: Vec<KernelSource>,
    /// How block requests and threads were attributed to the run, in words.
    pub attribution: String,
    /// The block device whose requests count (name and major:minor); none:
    /// every device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// The process whose block requests count (its pid); none: every process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<u32>,
    /// The thread ids counted in `runq` (the probe's threads).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<i32>,
    /// Each program, where it was attached and what it cost.
    pub programs: Vec<KernelProgram>,
    /// Events the programs saw but could not count.
    pub dropped: KernelDropped,
    /// Kernel memory the programs' maps hold, bytes.
    pub map_bytes: u64,
    /// Intervals whose exact count and histogram disagreed when read (an
    /// event counted during the read); 0 in a sound run.
    #[serde(default)]
    pub torn_intervals: u64,
    /// Series asked for that counted nothing in the whole run (not in
    /// `series`): no such request, or no thread waited.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub empty_series: Vec<String>,
}

/// One BPF program of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelProgram {
    /// The program's name.
    pub program: String,
    /// The BTF tracepoint it was attached to.
    pub tracepoint: String,
    /// Times it ran during the run (the kernel's BPF run-time statistics).
    pub runs: u64,
    /// Time it ran, ns.
    pub run_ns: u64,
    /// Mean time per run, ns (0 when it never ran).
    pub ns_per_run: f64,
}

/// Events the programs saw but could not count.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelDropped {
    /// Requests not tracked because the in-flight table was full.
    pub requests_untracked: u64,
    /// Wake-ups not tracked because the waiting-thread table was full.
    pub wakeups_untracked: u64,
    /// Completed requests that were neither reads nor writes (flush,
    /// discard, write-zeroes…), or whose stamps were out of order (never
    /// seen; kept out rather than wrapped): not in the read or write series.
    pub other_operations: u64,
    /// Events the kernel did not pass to a program because the same
    /// program was already running on that CPU (an interrupt's completion
    /// inside another's; the kernel's `recursion_misses`): lost, on any
    /// device, and counted here so a missing request is never silent.
    #[serde(default)]
    pub nested_events: u64,
    /// Requests seen starting or issued whose completion the programs had
    /// not seen when the run ended (still queued, or merged into another).
    #[serde(default)]
    pub in_flight_at_end: u64,
    /// Requests that started again (the kernel reuses them) while the
    /// programs were still waiting for their previous completion: a
    /// completion the programs never saw. Up to a few per 1,000 on this
    /// project's VM, more when the probe's CPU was contended (bench/journal/2026-11.md §15).
    #[serde(default)]
    pub completions_unseen: u64,
}
