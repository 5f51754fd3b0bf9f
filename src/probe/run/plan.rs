//! What a probe declares to the run engine before it runs, and what the
//! engine hands back: the plan of series and threads, what is observed
//! beside the probe, and the finished run.

use std::path::PathBuf;

use crate::model::{LoadMode, MeasuredFrom, RunFile, Warning};
use crate::record::Schedule;

/// What a series is, declared before the run.
#[derive(Clone, Debug)]
pub struct SeriesSpec {
    /// The tag, e.g. `wakeup`, `read`, `rtt`.
    pub tag: String,
    /// Where its latencies are measured from.
    pub measured_from: MeasuredFrom,
    /// Whether `--kernel blame` explains its values, and how.
    pub blamed: Blamed,
}

/// Whether `--kernel blame` explains a series' values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Blamed {
    /// Not an operation's latency (a derived part such as a service time
    /// or the lag), or not one its thread has to itself.
    No,
    /// Each value is an operation's latency on its own thread.
    Yes,
    /// Each value is a request to a peer, from its write to its answer, on
    /// a thread that also sleeps on timers of its own while a request is
    /// outstanding (a producer's schedule): all its time asleep is the wait
    /// on the peer (`blocked`), whatever woke it.
    Request,
}

/// What a probe declares before running.
#[derive(Debug)]
pub struct Plan {
    /// The probe's name, e.g. `timer`.
    pub probe: &'static str,
    /// Open or closed loop.
    pub load: LoadMode,
    /// Parameters as resolved, stored in the run file.
    pub parameters: serde_json::Value,
    /// The series the probe records, in `SeriesId` order.
    pub series: Vec<SeriesSpec>,
    /// How many probe threads.
    pub threads: usize,
    /// Interval length in ns.
    pub interval_ns: u64,
    /// Warnings raised while preparing.
    pub warnings: Vec<Warning>,
    /// Open loop: the schedules the threads keep, from which the engine
    /// counts what was offered per interval (`None` in a closed loop, and
    /// for `timer`, whose wake-up latency already is its lateness).
    pub offered: Option<OfferedPlan>,
}

/// What an open-loop probe declares of its schedules and series, so the
/// run file can say what was offered, what was achieved and whether the
/// generator kept up (`model::OfferedLoad`).
#[derive(Debug)]
pub struct OfferedPlan {
    /// `--rate`, over all threads.
    pub rate_per_s: f64,
    /// Each issuing thread's schedule as it would run from time 0 (the
    /// engine replays them shifted to the run's start).
    pub schedules: Vec<Schedule>,
    /// How long the schedules run, ns (`--runtime`).
    pub runtime_ns: u64,
    /// The most operations in flight at once, where fixed.
    pub in_flight_limit: Option<u64>,
    /// The lag series' tag.
    pub lag: String,
    /// The series whose counts are the completed operations.
    pub completed: Vec<String>,
    /// The service time series.
    pub service: Vec<String>,
    /// What to do when the generator fell behind, with this probe's flags.
    pub advice: &'static str,
}

/// What a probe asks the run to observe beside it (what the user asked
/// for, `--no-host-counters` and `--no-self-thread`, is in the
/// [`Destination`](super::destination::Destination)).
#[derive(Clone, Debug)]
pub struct Observe {
    /// The block device the probe works on (`vda`, `nvme0n1`), whose
    /// `/proc/diskstats` line joins the host counters.
    pub block_device: Option<String>,
    /// Record the `self` heartbeat: how late cauda's observer thread woke
    /// at each interval boundary. `false` for a probe that is itself the
    /// control thread (`hiccup`).
    pub self_heartbeat: bool,
    /// The kernel series count every process's block requests, not only
    /// this one's (`cauda kernel`, which watches what others do).
    pub whole_host: bool,
}

impl Default for Observe {
    fn default() -> Self {
        Observe {
            block_device: None,
            self_heartbeat: true,
            whole_host: false,
        }
    }
}

/// What a finished (or interrupted) run produced.
#[derive(Debug)]
pub struct Finished {
    /// The run, as written.
    pub run: RunFile,
    /// Where it was written.
    pub path: PathBuf,
}
