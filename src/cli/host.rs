//! `cauda host`: audit, tune, rollback and hold-latency — their flags,
//! and which workflow or mechanism each runs.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};

use crate::error::Outcome;
use crate::model::check::Profile;

/// `cauda host`.
#[derive(Debug, Args)]
pub struct HostArgs {
    /// What to do with the host.
    #[command(subcommand)]
    pub command: HostCommand,
}

impl HostArgs {
    /// Runs the subcommand.
    pub fn run(self) -> Result<Outcome> {
        match self.command {
            HostCommand::Audit(args) => {
                crate::host::audit::command(args.root.as_deref(), args.profile, args.json)?
            }
            HostCommand::Tune(args) => crate::workflow::tune::tune(args.request())?,
            HostCommand::Rollback(args) => crate::workflow::tune::rollback(args.request())?,
            HostCommand::HoldLatency(args) => {
                return crate::host::tuning::hold::run(args.max_latency, &args.command)
                    .map(Outcome::Exit);
            }
        }
        Ok(Outcome::Done)
    }
}

/// The `cauda host` subcommands (one place: audit, and tuning beside it).
#[derive(Debug, Subcommand)]
pub enum HostCommand {
    /// Read-only: each setting that shapes latency, its current value, the
    /// value recommended for the profile, why, and the source.
    ///
    /// Example: cauda host audit --json --profile throughput
    Audit(HostAuditArgs),
    /// Plan the changes that tune the host for a profile (a dry run by
    /// default); --apply makes them, journalled and verified.
    ///
    /// Example: cauda host tune --profile latency --apply --journal tune.journal
    Tune(TuneArgs),
    /// Restore every value a tuning journal recorded, newest first, byte for byte.
    ///
    /// Example: cauda host rollback --journal tune.journal
    Rollback(RollbackArgs),
    /// Keep CPUs out of slow idle states (PM QoS) while a command runs.
    ///
    /// Example: cauda host hold-latency --max-latency 10us -- ./my-benchmark
    HoldLatency(HoldArgs),
}

/// `cauda host audit`.
#[derive(Debug, Args)]
pub struct HostAuditArgs {
    /// Print JSON (schema cauda.audit/1) instead of a table.
    #[arg(long)]
    pub json: bool,
    /// What the host is judged for.
    #[arg(long, value_enum, default_value_t = crate::model::check::Profile::Latency)]
    pub profile: crate::model::check::Profile,
    /// Read /proc and /sys below this directory instead of the live host
    /// (a captured tree, see scripts/capture_host_tree.sh).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
}

/// `cauda host tune`.
#[derive(Debug, Args)]
pub struct TuneArgs {
    /// The profile to tune for.
    #[arg(long, value_enum)]
    pub profile: Profile,
    /// Only these check ids, comma-separated (a trailing * matches a prefix: block.*).
    #[arg(long, value_name = "IDS", value_delimiter = ',')]
    pub only: Vec<String>,
    /// Read and write /proc, /sys and /etc below DIR instead of / (a fake tree for tests).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Print the plan as JSON (schema cauda.plan/1).
    #[arg(long)]
    pub json: bool,
    /// Write the plan as a shell script to review, instead of printing it.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["apply", "verify", "json"])]
    pub script: Option<PathBuf>,
    /// Apply the runtime changes (root): journal each old value, write, read
    /// back and verify; on any failure roll back what was applied and exit 1.
    #[arg(long)]
    pub apply: bool,
    /// The journal to write [default: /var/lib/cauda/tune.journal]; `cauda
    /// host rollback --journal FILE` undoes the changes it lists.
    #[arg(long, value_name = "FILE")]
    pub journal: Option<PathBuf>,
    /// Also write /etc/sysctl.d/90-cauda-tune.conf and a udev rule for block
    /// settings, so they survive a reboot (rollback removes them); reports
    /// tuned, irqbalance and sysctl.d files that would override them.
    #[arg(long, requires = "apply", conflicts_with = "verify")]
    pub persist: bool,
    /// Replace persist files that cauda did not write, and overwrite --script FILE.
    #[arg(long)]
    pub force: bool,
    /// Run the probe given after --, apply, run it again, compare, and roll
    /// back unless the second run is better.
    #[arg(long)]
    pub verify: bool,
    /// With --verify: keep the changes whatever the comparison says.
    #[arg(long, requires = "verify")]
    pub keep: bool,
    /// Plan from a saved `cauda host audit --json` output (or a JSON list of
    /// checks) instead of auditing now.
    #[arg(long, value_name = "FILE")]
    pub from: Option<PathBuf>,
    /// With --verify: the probe and its arguments, e.g. -- timer --runtime 10s.
    #[arg(last = true, value_name = "PROBE ARGS")]
    pub probe: Vec<String>,
}

/// `cauda host rollback`.
#[derive(Debug, Args)]
pub struct RollbackArgs {
    /// The journal `host tune --apply` wrote [default: /var/lib/cauda/tune.journal].
    #[arg(long, value_name = "FILE")]
    pub journal: Option<PathBuf>,
    /// The root the journal was written for [default: the journal's own].
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Restore a journal written on another host, or runtime values after a reboot.
    #[arg(long)]
    pub force: bool,
}

/// `cauda host hold-latency`.
#[derive(Debug, Args)]
pub struct HoldArgs {
    /// The CPU wake-up latency limit to hold (e.g. 10us; 0 keeps CPUs out of
    /// every idle state but polling).
    #[arg(long, value_name = "DURATION", value_parser = crate::units::parse_duration)]
    pub max_latency: u64,
    /// The command to run while the limit is held, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

impl TuneArgs {
    /// The request these flags make.
    pub fn request(self) -> crate::workflow::tune::TuneRequest {
        crate::workflow::tune::TuneRequest {
            profile: self.profile,
            only: self.only,
            root: self.root,
            json: self.json,
            script: self.script,
            apply: self.apply,
            journal: self.journal,
            persist: self.persist,
            force: self.force,
            verify: self.verify,
            keep: self.keep,
            from: self.from,
            probe: self.probe,
        }
    }
}

impl RollbackArgs {
    /// The request these flags make.
    pub fn request(self) -> crate::workflow::tune::RollbackRequest {
        crate::workflow::tune::RollbackRequest {
            journal: self.journal,
            root: self.root,
            force: self.force,
        }
    }
}
