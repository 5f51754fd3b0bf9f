//! The vocabulary shared by `host audit` and `host tune`: a profile, a
//! check's verdict, and the runtime change that would satisfy it.
//!
//! The audit produces [`Check`]s; the tuner turns the checks whose
//! [`Fix`] is runtime-applicable into a plan. Keeping one type means the
//! tuner can only change what the audit can explain.

use serde::{Deserialize, Serialize};

/// What the host is being judged (and tuned) for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// Lowest and steadiest latency, at the cost of power and throughput.
    Latency,
    /// Most work per second; tails matter less.
    Throughput,
    /// The kernel's and distributions' middle ground.
    Balanced,
}

/// A check's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// The current value matches the profile.
    Ok,
    /// The current value works against the profile.
    Warn,
    /// Recorded for context (or not available, and why).
    Info,
}

/// One audited setting.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// Stable id, e.g. `vm.swappiness` or `block.sda.scheduler`.
    pub id: String,
    /// What was read (host paths, commands).
    pub read: String,
    /// The value in effect as the kernel states it.
    pub current: String,
    /// The value recommended for the profile (may be a range or a phrase).
    pub recommended: String,
    /// The verdict.
    pub status: Status,
    /// One line: why this matters for the profile.
    pub why: String,
    /// Where the recommendation comes from.
    pub source: String,
    /// The change that would satisfy the recommendation, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<Fix>,
}

/// The change that satisfies a check.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Fix {
    /// Write `value` to a sysctl or sysfs file (runtime only).
    Write {
        /// The absolute host path, e.g. `/proc/sys/vm/swappiness`.
        path: String,
        /// The exact text to write.
        value: String,
    },
    /// A kernel command-line argument; needs a reboot.
    Boot {
        /// The argument to add, e.g. `intel_idle.max_cstate=1`.
        argument: String,
    },
}
