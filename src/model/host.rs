//! What a run stores about its host: the static conditions at the start
//! ([`HostSnapshot`], with the audit's [`Check`]s) and what the host did in
//! each interval ([`HostCounters`]). Data only: `crate::host` reads the
//! system into these types.

use serde::{Deserialize, Serialize};

use super::check::Check;

/// The host's static conditions at the start of a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostSnapshot {
    /// `/proc/sys/kernel/hostname`.
    pub hostname: Option<String>,
    /// `/proc/sys/kernel/osrelease`.
    pub kernel: Option<String>,
    /// The first `model name` in `/proc/cpuinfo`.
    pub cpu_model: Option<String>,
    /// Online logical CPUs (`/sys/devices/system/cpu/online`).
    pub logical_cpus: Option<usize>,
    /// `/proc/cmdline`.
    pub cmdline: Option<String>,
    /// `cpuidle/current_driver` (e.g. `intel_idle`, `acpi_idle`, `none`).
    pub cpuidle_driver: Option<String>,
    /// `cpuidle/current_governor` (e.g. `menu`, `teo`, `haltpoll`).
    pub cpuidle_governor: Option<String>,
    /// `clocksource0/current_clocksource` (e.g. `tsc`, `kvm-clock`).
    pub clocksource: Option<String>,
    /// The full audit of the host's static settings (latency profile), so
    /// every run carries its conditions; empty in run files written before it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<Check>,
    /// Whether the wall clock was disciplined (NTP, chrony, PTP) when the
    /// run started, as the kernel knows it: what wall-clock alignment of
    /// runs on several hosts (`--start-at`, `cauda merge`) can trust.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_sync: Option<ClockSync>,
}

/// The kernel's view of the wall clock's synchronisation (`adjtimex(2)`,
/// read only), which chronyd, ntpd and ptp4l keep up to date.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClockSync {
    /// False when the kernel marks the clock unsynchronised (`STA_UNSYNC`,
    /// or `TIME_ERROR`): nothing is disciplining it.
    pub synchronized: bool,
    /// The estimated error, µs, as the synchronising daemon last set it.
    pub estimated_error_us: i64,
    /// The maximum error, µs (grows while nothing disciplines the clock).
    pub maximum_error_us: i64,
}

/// The counters of a run, column-wise: one name list, one row per interval.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostCounters {
    /// Counter names, e.g. `psi.io.full` (µs), `vmstat.nr_writeback` (pages).
    pub names: Vec<String>,
    /// One entry per run interval, aligned with the series' intervals.
    pub intervals: Vec<HostInterval>,
}

/// The counters' deltas over one interval.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostInterval {
    /// Interval start, ns from the run's start.
    pub start_ns: u64,
    /// Interval length, ns.
    pub length_ns: u64,
    /// One delta per name (end minus start of the interval).
    pub deltas: Vec<i64>,
}

impl HostCounters {
    /// The column of a counter, if it was sampled.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }
}
