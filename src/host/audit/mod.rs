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
mod rule;
mod sources;

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
