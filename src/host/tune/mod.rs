//! `cauda host tune` and `cauda host rollback`: tune the host for a profile
//! with a dry run first, a journal before every change, a verified way
//! back, and optionally a before/after measurement that decides.
//!
//! The plan comes only from the audit's checks ([`plan`]); applying writes
//! the journal before each change ([`journal`], [`apply`]); rollback
//! restores byte for byte ([`mod@rollback`]); `--persist` writes cauda-named
//! boot-time files through the same journal ([`persist`]); `--verify`
//! measures around the change ([`verify`]); `host hold-latency` holds a PM
//! QoS limit for one command ([`hold`]).

pub mod apply;
pub mod hold;
pub mod journal;
pub mod persist;
pub mod plan;
pub mod rollback;
pub mod verify;

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;

use self::apply::Step;
use self::journal::{JOURNAL_SCHEMA, JournalWriter, Record};
use crate::error::input_error;
use crate::host::snapshot::HostRoot;
use crate::model::check::{Check, Profile};

/// Where the journal goes when `--journal` is not given (below `--root`).
pub const DEFAULT_JOURNAL: &str = "/var/lib/cauda/tune.journal";

/// The lock that keeps two applies or rollbacks on one host apart (below `--root`).
pub const LOCK_FILE: &str = "/var/lib/cauda/tune.lock";

/// Holds [`LOCK_FILE`] until dropped (or the process dies).
#[derive(Debug)]
pub struct HostLock {
    _file: std::fs::File,
}

/// Takes the host's tuning lock, or says who holds it. Two applies that
/// interleave would each journal the other's values as "old", and their
/// rollbacks would undo each other wrongly. Where the lock file cannot be
/// created (a read-only /var), cauda says so and goes on unlocked.
pub fn lock_host(root: &HostRoot) -> Result<Option<HostLock>> {
    let path = root.path(LOCK_FILE);
    let opened = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| {
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
        });
    let mut file = match opened {
        Ok(file) => file,
        Err(e) => {
            eprintln!(
                "warning: cannot create the lock {} ({e}); not guarded against a concurrent tune",
                path.display()
            );
            return Ok(None);
        }
    };
    if !crate::sys::try_lock_exclusive(&file)
        .with_context(|| format!("cannot lock {}", path.display()))?
    {
        let holder = std::fs::read_to_string(&path).unwrap_or_default();
        return Err(input_error(format!(
            "another cauda host tune or rollback is running on this host (pid {}, lock {}); \
             wait for it to finish",
            holder.trim(),
            path.display()
        )));
    }
    file.set_len(0)?;
    writeln!(file, "{}", std::process::id())?;
    Ok(Some(HostLock { _file: file }))
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

fn host_root(dir: Option<&Path>) -> Result<(HostRoot, PathBuf)> {
    let dir = dir.unwrap_or(Path::new("/"));
    let canonical = dir.canonicalize().map_err(|e| {
        input_error(format!(
            "--root {}: {e}; give a directory holding proc/ and sys/",
            dir.display()
        ))
    })?;
    if !canonical.is_dir() {
        return Err(input_error(format!(
            "--root {}: not a directory",
            dir.display()
        )));
    }
    Ok((HostRoot::new(&canonical), canonical))
}

/// The checks to plan from: a saved audit, or the audit run now.
fn load_checks(args: &TuneArgs, root: &HostRoot) -> Result<Vec<Check>> {
    let Some(path) = &args.from else {
        return audit_checks(root, args.profile);
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| input_error(format!("--from {}: cannot read it ({e})", path.display())))?;
    let doc: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| input_error(format!("--from {}: not JSON ({e})", path.display())))?;
    let list = doc.get("checks").cloned().unwrap_or(doc);
    serde_json::from_value(list).map_err(|e| {
        input_error(format!(
            "--from {}: expected `cauda host audit --json` output or a list of checks ({e})",
            path.display()
        ))
    })
}

/// The audit's checks for `profile` under `root`.
fn audit_checks(root: &HostRoot, profile: Profile) -> Result<Vec<Check>> {
    Ok(crate::host::audit::audit(root, profile).checks)
}

/// `cauda host tune`.
pub fn tune(args: TuneArgs) -> Result<()> {
    let (root, root_dir) = host_root(args.root.as_deref())?;
    if args.verify {
        verify::check_probe(&args.probe)?;
    } else if !args.probe.is_empty() {
        return Err(input_error(format!(
            "`-- {}`: a probe command is only used with --verify",
            args.probe.join(" ")
        )));
    }
    let checks = load_checks(&args, &root)?;
    let plan = plan::build(&checks, args.profile, &args.only, &root)?;
    if let Some(script) = &args.script {
        crate::output::check_writable(
            script,
            crate::output::OwnKind::Other,
            args.force,
            "--script",
        )?;
        let (host, _) = rollback::identity(&root);
        crate::output::write_atomic(script, plan::render_script(&plan, &host).as_bytes())?;
        eprintln!(
            "wrote {} ({} change(s)); review it, then run it as root",
            script.display(),
            plan.runtime().count()
        );
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut out, &plan)?;
        writeln!(out)?;
    } else {
        write!(
            out,
            "{}",
            plan::render_text(&plan, args.apply || args.verify)
        )?;
    }
    out.flush()?;
    if !(args.apply || args.verify) {
        return Ok(());
    }
    if root_dir == Path::new("/") && !crate::sys::is_root() {
        return Err(input_error(
            "--apply changes kernel settings and needs root: run it with sudo (the dry run, \
             without --apply, works as any user)",
        ));
    }
    let mut steps: Vec<Step> = plan
        .runtime()
        .map(|c| Step::Setting {
            id: c.id.clone(),
            path: c.path.clone(),
            value: c.target.clone(),
        })
        .collect();
    let persisted = if args.persist {
        Some(persist::plan(&plan, &root, args.force)?)
    } else {
        None
    };
    if let Some(p) = &persisted {
        steps.extend(p.steps.iter().cloned());
    }
    if steps.is_empty() {
        eprintln!("nothing to apply; no journal written");
        return Ok(());
    }
    let _lock = lock_host(&root)?;
    let journal_path = journal_path(args.journal.as_deref(), &root)?;
    let (host, boot_id) = rollback::identity(&root);
    let header = Record::Header {
        schema: JOURNAL_SCHEMA.into(),
        host,
        boot_id,
        root: root_dir.display().to_string(),
        profile: Some(args.profile),
        cauda: env!("CARGO_PKG_VERSION").into(),
        created_unix: apply::now_unix(),
    };
    if args.verify {
        return verify_tune(&args, &steps, &root, &journal_path, &header);
    }
    let mut journal = JournalWriter::create(&journal_path, &header)?;
    apply::apply(&steps, &root, &mut journal)?;
    eprintln!(
        "applied {}, each read back and verified; journal: {}\nundo with: cauda host rollback --journal {}",
        count_steps(&steps),
        journal_path.display(),
        journal_path.display()
    );
    if let Some(p) = persisted {
        for note in &p.notes {
            eprintln!("note: {note}");
        }
        for conflict in &p.conflicts {
            eprintln!("conflict: {conflict}");
        }
    }
    Ok(())
}

/// "3 setting(s)" or "3 setting(s) and 2 file(s)".
fn count_steps(steps: &[Step]) -> String {
    let files = steps
        .iter()
        .filter(|s| matches!(s, Step::File { .. }))
        .count();
    let settings = steps.len() - files;
    if files == 0 {
        format!("{settings} setting(s)")
    } else {
        format!("{settings} setting(s) and {files} file(s)")
    }
}

fn journal_path(given: Option<&Path>, root: &HostRoot) -> Result<PathBuf> {
    if let Some(path) = given {
        return Ok(path.to_path_buf());
    }
    let path = root.path(DEFAULT_JOURNAL);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create {} for the journal", dir.display()))?;
    }
    Ok(path)
}

fn verify_tune(
    args: &TuneArgs,
    steps: &[Step],
    root: &HostRoot,
    journal_path: &Path,
    header: &Record,
) -> Result<()> {
    let (before, after) = verify::run_paths(journal_path);
    for path in [&before, &after] {
        crate::output::check_writable(
            path,
            crate::output::OwnKind::RunFile,
            args.force,
            "--journal",
        )?;
    }
    eprintln!("measuring before: cauda {}", args.probe.join(" "));
    verify::run_probe(&args.probe, &before)?;
    let mut journal = JournalWriter::create(journal_path, header)?;
    apply::apply(steps, root, &mut journal)?;
    eprintln!("applied {}; measuring after", count_steps(steps));
    let measured =
        verify::run_probe(&args.probe, &after).and_then(|()| verify::compare_runs(&before, &after));
    let comparison = match measured {
        Ok(c) => c,
        Err(e) => {
            let report = rollback::rollback_journal(journal_path, None, false)?;
            return Err(e.context(rollback::summarize(&report.undone)));
        }
    };
    print!("{}", crate::report::compare::render_text(&comparison));
    let (better, why) = verify::judge(&comparison);
    if better || args.keep {
        eprintln!(
            "kept ({}{why}); undo with: cauda host rollback --journal {}",
            if better { "" } else { "--keep; " },
            journal_path.display()
        );
    } else {
        let report = rollback::rollback_journal(journal_path, None, false)?;
        eprintln!(
            "rolled back: not better ({why}); {}",
            rollback::summarize(&report.undone)
        );
    }
    Ok(())
}

/// `cauda host rollback`.
pub fn rollback(args: RollbackArgs) -> Result<()> {
    let path = match &args.journal {
        Some(p) => p.clone(),
        None => {
            let (root, _) = host_root(args.root.as_deref())?;
            root.path(DEFAULT_JOURNAL)
        }
    };
    let journal_root = match journal::parse(&path)?.header {
        Record::Header { root, .. } => PathBuf::from(root),
        _ => unreachable!("parse guarantees a header first"),
    };
    let _lock = lock_host(&HostRoot::new(journal_root))?;
    let report = rollback::rollback_journal(&path, args.root.as_deref(), args.force)?;
    for note in &report.notes {
        eprintln!("note: {note}");
    }
    for undone in &report.undone {
        eprintln!("  {undone}");
    }
    if !report.undone.is_empty() {
        eprintln!("{}", rollback::summarize(&report.undone));
    }
    Ok(())
}
