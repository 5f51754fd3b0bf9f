//! `cauda host tune` and `cauda host rollback` as workflows: audit (or a
//! saved audit), plan, a dry run first, then apply through the journal;
//! with `--verify`, measure before and after with a probe, compare, and
//! keep the tuning only if it is better ([`verify`]).
//!
//! The mechanisms (plan, apply, journal, rollback, persist, the host lock)
//! are `crate::host::tuning`'s; this module strings them together with the
//! probes, the comparison and its rendering, which sit above the host
//! layer — a workflow beside `lab` and the acks matrix.

pub mod verify;

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::error::input_error;
use crate::host::root::HostRoot;
use crate::host::tuning::apply::{self, Step};
use crate::host::tuning::journal::{self, DEFAULT_JOURNAL, JOURNAL_SCHEMA, JournalWriter, Record};
use crate::host::tuning::lock::lock_host;
use crate::host::tuning::{persist, plan, rollback};
use crate::model::check::{Check, Profile};
use crate::report;

/// What `cauda host tune` is asked to do.
#[derive(Clone, Debug)]
pub struct TuneRequest {
    /// The profile to tune for.
    pub profile: Profile,
    /// Only these check ids (a trailing `*` matches a prefix).
    pub only: Vec<String>,
    /// Read and write /proc, /sys and /etc below this directory instead of /.
    pub root: Option<PathBuf>,
    /// Print the plan as JSON.
    pub json: bool,
    /// Write the plan as a shell script instead of printing it.
    pub script: Option<PathBuf>,
    /// Apply the runtime changes.
    pub apply: bool,
    /// The journal to write (default [`DEFAULT_JOURNAL`] below the root).
    pub journal: Option<PathBuf>,
    /// Also write boot-time files so the changes survive a reboot.
    pub persist: bool,
    /// Replace files cauda did not write.
    pub force: bool,
    /// Measure with `probe` before and after, and keep only what is better.
    pub verify: bool,
    /// With `verify`: keep the changes whatever the comparison says.
    pub keep: bool,
    /// Plan from a saved audit instead of auditing now.
    pub from: Option<PathBuf>,
    /// With `verify`: the probe and its arguments.
    pub probe: Vec<String>,
}

/// What `cauda host rollback` is asked to do.
#[derive(Clone, Debug)]
pub struct RollbackRequest {
    /// The journal to undo (default [`DEFAULT_JOURNAL`] below the root).
    pub journal: Option<PathBuf>,
    /// The root the journal was written for (default: the journal's own).
    pub root: Option<PathBuf>,
    /// Restore a journal written on another host, or after a reboot.
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
fn load_checks(args: &TuneRequest, root: &HostRoot) -> Result<Vec<Check>> {
    let Some(path) = &args.from else {
        return audit_checks(root, args.profile);
    };
    // An audit is tens of KiB; 64 MiB is far beyond any host's.
    let bytes = crate::input::read_regular(path, 64 << 20).map_err(|refusal| {
        let why = match refusal {
            crate::input::Refusal::Io(e) => format!("cannot read it ({e})"),
            other => other.to_string(),
        };
        input_error(format!("--from {}: {why}", path.display()))
    })?;
    let doc: serde_json::Value = serde_json::from_slice(&bytes)
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
pub fn tune(args: TuneRequest) -> Result<()> {
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
        let checked = crate::output::check_writable(
            script,
            crate::output::OwnKind::Other,
            args.force,
            "--script",
        )?;
        let (host, _) = root.identity();
        let text = plan::render_script(&plan, &host);
        crate::output::write_checked(script, checked, text.as_bytes())?;
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
    let (host, boot_id) = root.identity();
    let header = Record::Header {
        schema: JOURNAL_SCHEMA.into(),
        host,
        boot_id,
        root: root_dir.display().to_string(),
        profile: Some(args.profile),
        cauda: env!("CARGO_PKG_VERSION").into(),
        created_unix: journal::now_unix(),
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
    args: &TuneRequest,
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
    print!("{}", report::compare::render_text(&comparison));
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
pub fn rollback(args: RollbackRequest) -> Result<()> {
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
