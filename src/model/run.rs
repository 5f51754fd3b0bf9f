//! The run file: one JSON document per measurement (`cauda.run/1`).
//!
//! It carries what was run (tool, probe, parameters), when and for how
//! long, on what host, the interval series with their histograms, the
//! faults counted, and a summary per series. A reader needs nothing else to
//! re-analyse the run, compare it or plot it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::disk::DiskReport;
use super::host::{HostCounters, HostSnapshot};
use super::series::Series;
use super::summary::Summary;

/// The schema identifier written in every run file.
pub const RUN_SCHEMA: &str = "cauda.run/1";

/// Keys of a run's `faults` that are totals, not faults: what the faults
/// are out of (`net` keeps its messages sent and answered there).
pub const FAULT_TOTALS: [&str; 2] = ["sent", "answered"];

/// Whether the load waited for each operation before issuing the next.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoadMode {
    /// Operations issued on a schedule regardless of completions; latency
    /// from the intended start (no coordinated omission).
    OpenLoop,
    /// Each operation issued after the previous completed: a stall delays
    /// the next issue and is under-counted (coordinated omission).
    ClosedLoop,
    /// Not known (imported data).
    Unknown,
}

/// The tool that wrote the file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// Always `cauda`.
    pub name: String,
    /// The cauda version.
    pub version: String,
}

impl Tool {
    /// This build of cauda.
    pub fn this() -> Self {
        Tool {
            name: "cauda".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

/// One of cauda's own threads that ran beside the probe.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Observer {
    /// The thread's name (`cauda-observer`, `cauda-collector`, and with
    /// `--metrics-listen` `cauda-metrics`).
    pub thread: String,
    /// The CPUs it was allowed to run on.
    pub cpus: Vec<usize>,
    /// The CPU time it used, in ns.
    pub cpu_ns: u64,
    /// How many times it woke up (its voluntary context switches): each
    /// wake-up on a probe's CPU can delay one of the probe's operations.
    #[serde(default)]
    pub wakeups: u64,
}

/// A warning raised during a run, with what to do about it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Warning {
    /// What happened.
    pub message: String,
    /// What the user can do about it.
    pub advice: String,
}

/// A series' summary as embedded in the run file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SeriesSummary {
    /// The series' tag.
    pub tag: String,
    /// Its summary over the whole run.
    pub summary: Summary,
}

/// One measurement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunFile {
    /// `cauda.run/1`.
    pub schema: String,
    /// The tool and version that wrote the file.
    pub tool: Tool,
    /// The probe: `timer`, `disk`, `net`, …
    pub probe: String,
    /// Open or closed loop.
    pub load: LoadMode,
    /// The probe's parameters as resolved (defaults filled in).
    pub parameters: serde_json::Value,
    /// Wall-clock start, RFC 3339 UTC.
    pub start_time: String,
    /// Wall-clock start in ns since the Unix epoch.
    pub start_unix_ns: u128,
    /// The wall-clock start asked for with `--start-at` (ns since the
    /// epoch): `start_unix_ns` minus this is how late the run began.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at_unix_ns: Option<u128>,
    /// `--label KEY=VALUE` pairs (host, zone, shard, …) that say which
    /// part of a larger test this run was; kept by `merge` where all
    /// inputs agree.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "super::names::labels"
    )]
    pub labels: BTreeMap<String, String>,
    /// Measured duration in ns.
    pub duration_ns: u64,
    /// The interval length in ns.
    pub interval_ns: u64,
    /// True when Ctrl-C or SIGTERM stopped the run before its end.
    pub interrupted: bool,
    /// The host's conditions.
    pub host: HostSnapshot,
    /// Counted faults by kind (failed operations, timeouts, …), and beside
    /// them the totals they are out of ([`FAULT_TOTALS`]: `net`'s).
    pub faults: BTreeMap<String, u64>,
    /// Warnings raised during the run.
    pub warnings: Vec<Warning>,
    /// The interval series.
    pub series: Vec<Series>,
    /// One summary per series over the whole run.
    pub summary: Vec<SeriesSummary>,
    /// What the host did in each interval (PSI, vmstat, …, as deltas);
    /// absent in imported data and in run files written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_counters: Option<HostCounters>,
    /// The disk probe's figures beside its series (`cauda disk` only).
    ///
    /// Probe sections: a probe whose run has figures beyond its series
    /// and faults gets one optional, typed field here, filled in before
    /// the run file's single write (the kernel and broker sections go
    /// beside this one). A section that does not parse (a file from
    /// another version) is left out rather than refusing the run.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "section"
    )]
    pub disk: Option<DiskReport>,
    /// `cauda broker`: the cluster, the topic, the client settings and the
    /// record accounting.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "section"
    )]
    pub broker: Option<crate::model::broker::BrokerReport>,
    /// `--kernel`: how the kernel series (block layer, run queue) were
    /// measured and attributed, and what their programs cost.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "section"
    )]
    pub kernel: Option<crate::model::kernel::KernelReport>,
    /// Open-loop runs of `net`, `disk` and `broker`: what the schedule
    /// offered per interval and which series say what was achieved and
    /// how late the generator was; absent in closed-loop runs, imported
    /// data and files written before it (unknown).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "section"
    )]
    pub offered: Option<crate::model::load::OfferedLoad>,
    /// `--kernel blame`: why the slow operations were slow (per series
    /// and interval, and the slowest with their whole vector); absent
    /// without it, in imported data and in older files.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "section"
    )]
    pub blame: Option<crate::model::blame::BlameReport>,
    /// cauda's own threads beside the probe's (the observer, which samples
    /// the host and beats the `self` heartbeat, the collector, and the
    /// metrics endpoint's server when there is one): where
    /// they ran, what they cost and how often they woke; absent in
    /// imported data and in files written before it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub observers: Vec<Observer>,
    /// A checksum of everything above as cauda wrote it (`crc32:` and 8
    /// hex digits of the compact JSON without this field): a file changed
    /// afterwards — by hand, a tool or damage — is read with a warning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integrity: Option<String>,
}

impl RunFile {
    /// A run of `probe` with nothing in it, `duration_ns` long on a grid of
    /// `interval_ns`: what tests and samples built in code fill with the
    /// sections they need.
    pub fn empty(probe: &str, load: LoadMode, duration_ns: u64, interval_ns: u64) -> RunFile {
        RunFile {
            schema: RUN_SCHEMA.into(),
            tool: Tool::this(),
            probe: probe.into(),
            load,
            parameters: serde_json::Value::Null,
            start_time: String::new(),
            start_unix_ns: 0,
            start_at_unix_ns: None,
            labels: Default::default(),
            duration_ns,
            interval_ns,
            interrupted: false,
            host: HostSnapshot::default(),
            faults: Default::default(),
            warnings: Vec::new(),
            series: Vec::new(),
            summary: Vec::new(),
            host_counters: None,
            disk: None,
            broker: None,
            kernel: None,
            offered: None,
            blame: None,
            observers: Vec::new(),
            integrity: None,
        }
    }
}

/// A probe section, or `None` when it is absent or does not parse. The
/// section is kept as its text and parsed from it, not through a
/// `serde_json::Value` (a run kept with `--blame-keep 100000`, 42 MB, was
/// read in 490 MB that way, 180 MB this one).
fn section<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    let raw = Box::<serde_json::value::RawValue>::deserialize(deserializer)?;
    Ok(serde_json::from_str(raw.get()).ok())
}
