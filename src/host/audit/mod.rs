//! `cauda host audit`: what the host is set to, judged against a profile,
//! with why it matters and where the recommendation comes from.
//!
//! Read-only. Every check reads files below a [`HostRoot`] (so tests use
//! captured trees), states the value in effect as the kernel states it (the
//! bracketed word of a sysfs choice file), and never fails: a file that is
//! missing or unreadable (a container, another kernel) becomes an `info`
//! check saying "not available: why".
//!
//! Sources: tuned's profiles (latency-performance, network-latency,
//! throughput-performance), Redpanda's rpk tuners, Seastar's perftune.py and
//! the kernel's documentation (admin-guide/pm/cpuidle.rst,
//! admin-guide/mm/transhuge.rst, admin-guide/sysctl/vm.rst,
//! block/queue-sysfs.rst, admin-guide/kernel-parameters.txt).

mod block;
mod cmdline;
mod cpu;
mod memory;
mod net;

use serde::{Deserialize, Serialize};

use super::root::HostRoot;
use crate::model::check::{Check, Fix, Profile, Status};

/// The schema of `cauda host audit --json`.
pub const AUDIT_SCHEMA: &str = "cauda.audit/1";

/// The audit of one host for one profile.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Audit {
    /// `cauda.audit/1`.
    pub schema: String,
    /// The profile judged against.
    pub profile: Profile,
    /// Every check, grouped by area (CPU, command line, memory, block, IRQ/network).
    pub checks: Vec<Check>,
}

/// Audits the host below `root` for `profile`.
pub fn audit(root: &HostRoot, profile: Profile) -> Audit {
    let mut checks = Vec::new();
    cpu::checks(root, profile, &mut checks);
    cmdline::checks(root, profile, &mut checks);
    memory::checks(root, profile, &mut checks);
    block::checks(root, profile, &mut checks);
    net::checks(root, profile, &mut checks);
    Audit {
        schema: AUDIT_SCHEMA.into(),
        profile,
        checks,
    }
}

/// `cauda host audit`: checks `--root`, audits for `profile`, prints a
/// table or JSON.
pub fn command(root: Option<&std::path::Path>, profile: Profile, json: bool) -> anyhow::Result<()> {
    use std::io::Write;
    let root = match root {
        None => HostRoot::default(),
        Some(dir) => {
            let root = HostRoot::new(dir);
            if !root.exists() {
                return Err(crate::error::input_error(format!(
                    "--root {}: no such directory; give a captured tree (scripts/capture_host_tree.sh) or drop --root to audit this host",
                    dir.display()
                )));
            }
            if !root.path("/proc").is_dir() && !root.path("/sys").is_dir() {
                return Err(crate::error::input_error(format!(
                    "--root {}: holds neither proc/ nor sys/, so there is nothing to audit; give a captured tree (scripts/capture_host_tree.sh)",
                    dir.display()
                )));
            }
            root
        }
    };
    let audit = audit(&root, profile);
    let mut out = std::io::stdout().lock();
    if json {
        let mut bytes = serde_json::to_vec(&audit)?;
        bytes.push(b'\n');
        out.write_all(&bytes)?;
    } else {
        write!(out, "{}", render(&audit))?;
    }
    out.flush()?;
    Ok(())
}

/// A check being built: what it is and why, before its value is judged.
pub(crate) struct Rule {
    id: String,
    read: String,
    why: String,
    source: &'static str,
}

/// Starts a check with its id, the path it reads, why it matters and its source.
pub(crate) fn rule(
    id: impl Into<String>,
    read: impl Into<String>,
    why: impl Into<String>,
    source: &'static str,
) -> Rule {
    Rule {
        id: id.into(),
        read: read.into(),
        why: why.into(),
        source,
    }
}

impl Rule {
    /// The check with its current value, recommendation, verdict and fix.
    pub(crate) fn judged(
        self,
        current: impl Into<String>,
        recommended: impl Into<String>,
        status: Status,
        fix: Option<Fix>,
    ) -> Check {
        Check {
            id: self.id,
            read: self.read,
            current: current.into(),
            recommended: recommended.into(),
            status,
            why: self.why,
            source: self.source.into(),
            // A fix only where the value is wrong for the profile.
            fix: fix.filter(|_| status == Status::Warn),
        }
    }

    /// Recorded for context: no recommendation for this profile.
    pub(crate) fn info(self, current: impl Into<String>, recommended: impl Into<String>) -> Check {
        self.judged(current, recommended, Status::Info, None)
    }

    /// Ok when `good`, else a warning with its fix.
    pub(crate) fn expect(
        self,
        current: impl Into<String>,
        recommended: impl Into<String>,
        good: bool,
        fix: Option<Fix>,
    ) -> Check {
        let status = if good { Status::Ok } else { Status::Warn };
        self.judged(current, recommended, status, fix)
    }

    /// The value could not be read: `info`, saying why.
    pub(crate) fn missing(self, why: impl std::fmt::Display) -> Check {
        let current = format!("not available: {why}");
        self.judged(current, "", Status::Info, None)
    }
}

/// A runtime write of `value` to `path`.
pub(crate) fn write(path: impl Into<String>, value: impl Into<String>) -> Option<Fix> {
    Some(Fix::Write {
        path: path.into(),
        value: value.into(),
    })
}

/// A boot argument.
pub(crate) fn boot(argument: impl Into<String>) -> Option<Fix> {
    Some(Fix::Boot {
        argument: argument.into(),
    })
}

/// The value in effect of a sysfs choice file: the bracketed word of
/// `always [madvise] never`, or the whole text when nothing is bracketed.
pub fn chosen(text: &str) -> String {
    match (text.find('['), text.find(']')) {
        (Some(open), Some(close)) if open < close => text[open + 1..close].to_string(),
        _ => text.trim().to_string(),
    }
}

/// The choices a sysfs choice file offers (`none [mq-deadline] kyber` → three words).
pub fn choices(text: &str) -> Vec<String> {
    text.split_whitespace()
        .map(|w| w.trim_matches(|c| c == '[' || c == ']').to_string())
        .collect()
}

/// The text output: one line per check, grouped, with a count by status.
pub fn render(audit: &Audit) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let profile = match audit.profile {
        Profile::Latency => "latency",
        Profile::Throughput => "throughput",
        Profile::Balanced => "balanced",
    };
    let count = |s: Status| audit.checks.iter().filter(|c| c.status == s).count();
    let _ = writeln!(
        out,
        "host audit, profile {profile}: {} ok, {} warn, {} info",
        count(Status::Ok),
        count(Status::Warn),
        count(Status::Info)
    );
    for check in &audit.checks {
        let mark = match check.status {
            Status::Ok => "ok  ",
            Status::Warn => "WARN",
            Status::Info => "info",
        };
        let mut line = format!("{mark} {:<44} {}", check.id, check.current);
        if check.status == Status::Warn && !check.recommended.is_empty() {
            let _ = write!(line, "  → {}", check.recommended);
        }
        let _ = writeln!(out, "{line}");
        if check.status == Status::Warn {
            let _ = writeln!(out, "       {} [{}]", check.why, check.source);
            match &check.fix {
                Some(Fix::Write { path, value }) => {
                    let _ = writeln!(out, "       fix: echo {value} > {path}");
                }
                Some(Fix::Boot { argument }) => {
                    let _ = writeln!(out, "       fix: boot with {argument}");
                }
                None => {}
            }
        }
    }
    out
}

/// Source texts, cited by the checks.
pub(crate) mod sources {
    pub const TUNED_LATENCY: &str =
        "tuned latency-performance profile (governor=performance, force_latency)";
    pub const TUNED_NETLAT: &str = "tuned network-latency profile";
    pub const TUNED_THROUGHPUT: &str = "tuned throughput-performance profile";
    pub const RPK: &str = "Redpanda rpk tuners";
    pub const PERFTUNE: &str = "Seastar perftune.py";
    pub const CPUIDLE: &str = "kernel docs: admin-guide/pm/cpuidle.rst";
    pub const CPUFREQ: &str = "kernel docs: admin-guide/pm/cpufreq.rst, intel_pstate.rst";
    pub const PM_QOS: &str = "kernel docs: power/pm_qos_interface.rst";
    pub const PARAMS: &str = "kernel docs: admin-guide/kernel-parameters.txt";
    pub const THP: &str = "kernel docs: admin-guide/mm/transhuge.rst";
    pub const VM: &str = "kernel docs: admin-guide/sysctl/vm.rst";
    pub const NET_SYSCTL: &str = "kernel docs: admin-guide/sysctl/net.rst";
    pub const QUEUE: &str = "kernel docs: block/queue-sysfs.rst";
    pub const EXT4: &str = "kernel docs: admin-guide/ext4.rst (mount options)";
    pub const IRQ: &str = "kernel docs: core-api/irq/irq-affinity.rst";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choice_files_state_the_bracketed_word() {
        assert_eq!(chosen("always [madvise] never"), "madvise");
        assert_eq!(chosen("none [mq-deadline] kyber bfq"), "mq-deadline");
        assert_eq!(chosen("[none]"), "none");
        assert_eq!(chosen("menu"), "menu");
        assert_eq!(
            choices("none [mq-deadline] kyber"),
            vec!["none", "mq-deadline", "kyber"]
        );
    }

    #[test]
    fn a_fix_is_kept_only_on_a_warning() {
        let make = || rule("x", "/x", "why", "src");
        let ok = make().expect("1", "1", true, write("/x", "1"));
        assert_eq!((ok.status, ok.fix), (Status::Ok, None));
        let warn = make().expect("60", "1", false, write("/x", "1"));
        assert_eq!(warn.status, Status::Warn);
        assert!(warn.fix.is_some());
        let missing = make().missing("/x does not exist");
        assert_eq!(missing.status, Status::Info);
        assert_eq!(missing.current, "not available: /x does not exist");
    }
}
