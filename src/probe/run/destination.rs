//! Where a run's results go and what the user asked to watch beside the
//! probe (the flags every probe command shares), and the engine's first
//! stage: everything that can refuse the run is checked, bound or attached
//! before any thread starts, so a refusal costs no measurement.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::SystemTime;

use anyhow::Result;

use super::endpoint::{Endpoint, Latest};
use super::plan::{Observe, Plan};
use crate::formats::export::hlog::HlogWriter;
use crate::host::root::HostRoot;
use crate::host::snapshot;
use crate::host::trace::{self, Tracer};
use crate::model::HostSnapshot;
use crate::model::kernel::KernelSource;
use crate::output::{self, Checked};

/// Where a run's results go, checked before it starts, and what is
/// observed beside the probe.
#[derive(Clone, Debug)]
pub struct Destination {
    /// The run file (`-o`), or `None` for the default name.
    pub run_file: Option<PathBuf>,
    /// The streamed interval log (`--hlog`).
    pub hlog: Option<PathBuf>,
    /// Overwrite files that are not cauda's.
    pub force: bool,
    /// `--label` pairs written into the run file.
    pub labels: BTreeMap<String, String>,
    /// `--start-at`: the wall-clock time (ns since the epoch) to start the
    /// schedule at, once every probe thread is ready.
    pub start_at_unix_ns: Option<u128>,
    /// `--metrics-listen`: where to serve the live view to Prometheus.
    pub metrics: Option<SocketAddr>,
    /// `--kernel`: the kernel series to record beside the probe's.
    pub kernel: Vec<KernelSource>,
    /// `--blame-above`: with `--kernel blame`, an operation is slow above
    /// this latency, ns (default: the p99 of the series so far).
    pub blame_above_ns: Option<u64>,
    /// `--blame-keep`: how many of the slowest keep their whole vector.
    pub blame_keep: usize,
    /// Sample host counters (PSI, vmstat, …) at each interval boundary
    /// (off with the hidden `--no-host-counters`, to measure its cost).
    pub host_counters: bool,
    /// Record the `self` heartbeat where the probe allows it (off with the
    /// hidden `--no-self-thread`, to measure its cost).
    pub self_heartbeat: bool,
}

impl Default for Destination {
    /// The default name, no interval log, no labels, every observer on.
    fn default() -> Self {
        Destination {
            run_file: None,
            hlog: None,
            force: false,
            labels: BTreeMap::new(),
            start_at_unix_ns: None,
            metrics: None,
            kernel: Vec::new(),
            blame_above_ns: None,
            blame_keep: 100,
            host_counters: true,
            self_heartbeat: true,
        }
    }
}

impl Destination {
    /// Whether the run explains its slow operations (`--kernel blame`).
    pub fn blamed(&self) -> bool {
        self.kernel
            .contains(&crate::model::kernel::KernelSource::Blame)
    }

    /// Refuses, with `--kernel blame`, more probe threads than it keeps
    /// counters for: for a probe to call before it prepares anything (a
    /// server; `disk --jobs` is at most 256 already).
    pub fn check_blamed_threads(&self, threads: usize) -> Result<()> {
        crate::host::trace::check_blamed_threads(&self.kernel, threads)
    }

    /// Checks the paths given (the default name is checked when chosen):
    /// what writing the run file and the interval log may replace.
    pub fn check(&self) -> Result<(Option<Checked>, Option<Checked>)> {
        let run_file = match &self.run_file {
            Some(path) => Some(output::check_writable(
                path,
                output::OwnKind::RunFile,
                self.force,
                "-o",
            )?),
            None => None,
        };
        let hlog = match &self.hlog {
            Some(path) => {
                HlogWriter::check_name(path)?;
                Some(output::check_writable(
                    path,
                    output::OwnKind::Hlog,
                    self.force,
                    "--hlog",
                )?)
            }
            None => None,
        };
        Ok((run_file, hlog))
    }
}

/// The live view's server and the page it serves (`--metrics-listen`).
pub struct Live {
    /// The endpoint thread, bound.
    pub endpoint: Endpoint,
    /// The page the collector publishes to.
    pub latest: Latest,
}

/// Where a run writes, checked (and bound) before any thread starts.
pub struct Outputs {
    /// The run file's path (given, or the default name chosen).
    pub path: PathBuf,
    /// What writing the run file may replace.
    pub run_checked: Checked,
    /// What writing the interval log may replace.
    pub hlog_checked: Option<Checked>,
    /// The metrics endpoint, bound.
    pub live: Option<Live>,
}

/// The first stage's result: the outputs, and what watches the run.
pub struct Opened {
    /// Where the run writes.
    pub outputs: Outputs,
    /// The kernel series' programs, loaded and attached.
    pub tracer: Option<Tracer>,
    /// The host's settings as the run begins.
    pub host: HostSnapshot,
}

/// The first stage: checks the given outputs, binds the metrics endpoint,
/// chooses (and checks) the default name, attaches the kernel series'
/// programs and takes the host snapshot (its audit is this stage's
/// slowest step).
pub fn open(plan: &Plan, observe: &Observe, destination: &Destination) -> Result<Opened> {
    let (run_checked, hlog_checked) = destination.check()?;
    // Bound before anything runs: an address in use stops the run here.
    let live = match destination.metrics {
        Some(addr) => {
            let latest = Latest::default();
            let source = latest.clone();
            let endpoint = Endpoint::start(addr, Box::new(move || source.get()))?;
            eprintln!(
                "metrics: http://{}/metrics (Prometheus native histograms)",
                endpoint.addr()
            );
            Some(Live { endpoint, latest })
        }
        None => None,
    };
    // The default name is chosen (never an existing file) and checked
    // before anything runs.
    let (path, run_checked) = match (&destination.run_file, run_checked) {
        (Some(path), Some(checked)) => (path.clone(), checked),
        _ => {
            let now = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
            let path = output::unused_default_path(plan.probe, &now);
            let checked = output::check_writable(&path, output::OwnKind::RunFile, false, "-o")?;
            (path, checked)
        }
    };
    // Loaded and attached before anything runs: a kernel that refuses the
    // programs stops the run here (exit 2), and the load's cost (the
    // kernel's BTF is parsed) is not in any interval.
    let tracer = if destination.kernel.is_empty() {
        None
    } else {
        Some(Tracer::attach(&trace::Request {
            sources: destination.kernel.clone(),
            process: (!observe.whole_host).then(std::process::id),
            device: observe.block_device.clone(),
            threads: plan.threads,
        })?)
    };
    Ok(Opened {
        outputs: Outputs {
            path,
            run_checked,
            hlog_checked,
            live,
        },
        tracer,
        host: snapshot::capture_full(&HostRoot::default()),
    })
}
