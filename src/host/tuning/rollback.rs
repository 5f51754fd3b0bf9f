//! `cauda host rollback`: restore every value a journal recorded, newest
//! first, byte for byte, and prove it by reading each file back.
//!
//! A journal left by an apply that was killed half-way holds every change
//! that may have been made (records are synced before the write), so
//! restoring each recorded old value undoes exactly what happened; a change
//! announced but never made already reads its old value and is left alone.

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow};

use super::files::{effective, explain_write_error, is_kernel_file, read_exact, write_value};
use super::journal::{self, JournalWriter, Record, now_unix};
use crate::error::input_error;
use crate::host::root::HostRoot;

/// What happened to one journalled change.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Written back and verified byte for byte.
    Restored,
    /// Already held its old bytes (announced but never made, or undone before).
    AlreadyOld,
    /// A file cauda created, removed.
    Removed,
    /// Left alone, and why.
    Skipped(String),
    /// Could not be restored, and why.
    Failed(String),
}

/// One journalled change after an undo.
#[derive(Clone, Debug, PartialEq)]
pub struct Undone {
    /// The check id, or the file's path.
    pub what: String,
    /// The host path.
    pub path: String,
    /// The result.
    pub outcome: Outcome,
}

impl fmt::Display for Undone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let label = if self.what == self.path {
            self.path.clone()
        } else {
            format!("{} ({})", self.what, self.path)
        };
        match &self.outcome {
            Outcome::Restored => write!(f, "restored {label}, verified byte for byte"),
            Outcome::AlreadyOld => write!(f, "{label} already held its old value"),
            Outcome::Removed => write!(f, "removed {label}"),
            Outcome::Skipped(why) => write!(f, "skipped {label}: {why}"),
            Outcome::Failed(why) => write!(f, "FAILED to restore {label}: {why}"),
        }
    }
}

/// The text to write so that `path` reads `old` again: a kernel choice
/// file takes only the bracketed word; everything else takes the bytes.
fn restore_text(file: &Path, old: &str) -> String {
    if old.contains('[') && is_kernel_file(file) {
        effective(old)
    } else {
        old.to_string()
    }
}

/// Undoes `records` (give them newest first) under `root`.
pub fn undo<'a>(records: impl Iterator<Item = &'a Record>, root: &HostRoot) -> Vec<Undone> {
    records.filter_map(|r| undo_one(r, root)).collect()
}

fn undo_one(record: &Record, root: &HostRoot) -> Option<Undone> {
    let (what, path, outcome) = match record {
        Record::Change { id, path, old, .. } => {
            let file = root.path(path);
            let outcome = match read_exact(&file) {
                Ok(now) if now == *old => Outcome::AlreadyOld,
                _ => {
                    let text = restore_text(&file, old);
                    match write_value(&file, &text) {
                        Err(e) => Outcome::Failed(explain_write_error(path, &text, &e)),
                        Ok(()) => match read_exact(&file) {
                            Ok(now) if now == *old => Outcome::Restored,
                            Ok(now) => {
                                Outcome::Failed(format!("reads back {now:?}, expected {old:?}"))
                            }
                            Err(e) => Outcome::Failed(format!("cannot read it back: {e}")),
                        },
                    }
                }
            };
            (id.clone(), path.clone(), outcome)
        }
        Record::File { path, old, .. } => {
            let file = root.path(path);
            let outcome = match old {
                None => match std::fs::remove_file(&file) {
                    Ok(()) => Outcome::Removed,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Outcome::AlreadyOld,
                    Err(e) => Outcome::Failed(format!("cannot remove it: {e}")),
                },
                Some(old) => match read_exact(&file) {
                    Ok(now) if now == *old => Outcome::AlreadyOld,
                    _ => match crate::output::write_atomic(&file, old.as_bytes()) {
                        Err(e) => Outcome::Failed(format!("{e:#}")),
                        Ok(()) => match read_exact(&file) {
                            Ok(now) if now == *old => Outcome::Restored,
                            _ => Outcome::Failed("reads back different content".into()),
                        },
                    },
                },
            };
            (path.clone(), path.clone(), outcome)
        }
        _ => return None,
    };
    Some(Undone {
        what,
        path,
        outcome,
    })
}

/// One line: how many were restored, or which could not be.
pub fn summarize(undone: &[Undone]) -> String {
    let failed: Vec<String> = undone
        .iter()
        .filter(|u| matches!(u.outcome, Outcome::Failed(_)))
        .map(|u| u.to_string())
        .collect();
    if failed.is_empty() {
        let changed = undone
            .iter()
            .filter(|u| matches!(u.outcome, Outcome::Restored | Outcome::Removed))
            .count();
        format!(
            "rolled back {changed} change(s), each verified byte for byte ({} already at the old value)",
            undone.len() - changed
        )
    } else {
        format!("ROLLBACK INCOMPLETE: {}", failed.join("; "))
    }
}

/// What `host rollback` did.
#[derive(Debug)]
pub struct Report {
    /// Every journalled change, newest first.
    pub undone: Vec<Undone>,
    /// Notes for the user (a torn final record, an earlier rollback).
    pub notes: Vec<String>,
}

/// Rolls back the journal at `path`. `root` overrides the journal's own
/// root only when it names the same directory; `force` accepts a journal
/// from another host, or restores runtime values after a reboot.
pub fn rollback_journal(path: &Path, root: Option<&Path>, force: bool) -> Result<Report> {
    let parsed = journal::parse(path)?;
    let Record::Header {
        host,
        boot_id,
        root: journal_root,
        ..
    } = &parsed.header
    else {
        unreachable!("parse guarantees a header first")
    };
    let root_dir = match root {
        Some(given) if !same_dir(given, Path::new(journal_root)) => {
            return Err(input_error(format!(
                "--root {}: the journal {} was written for root {journal_root}; pass --root \
                 {journal_root} or leave --root out",
                given.display(),
                path.display()
            )));
        }
        _ => PathBuf::from(journal_root),
    };
    let host_root = HostRoot::new(&root_dir);
    let (here, boot_here) = host_root.identity();
    if here != *host && !force {
        return Err(input_error(format!(
            "journal {}: written on host '{host}', but this is '{here}': its values belong to \
             that host. Nothing was changed; run the rollback there, or pass --force to restore \
             them here anyway",
            path.display()
        )));
    }
    let mut notes = Vec::new();
    if parsed.torn_bytes > 0 {
        notes.push(format!(
            "the journal's last record was torn ({} bytes, the apply was killed while writing \
             it); the change it announced was never made",
            parsed.torn_bytes
        ));
    }
    if parsed.rolled_back {
        notes.push("this journal was already rolled back; nothing to do".into());
        return Ok(Report {
            undone: Vec::new(),
            notes,
        });
    }
    let rebooted = boot_here != *boot_id && !force;
    let undone: Vec<Undone> = parsed
        .entries
        .iter()
        .rev()
        .filter_map(|entry| match &entry.record {
            Record::Change { id, path, .. } if rebooted => Some(Undone {
                what: id.clone(),
                path: path.clone(),
                outcome: Outcome::Skipped(
                    "the host rebooted since, which reset runtime settings (--force restores it anyway)"
                        .into(),
                ),
            }),
            record => undo_one(record, &host_root),
        })
        .collect();
    if undone
        .iter()
        .any(|u| matches!(u.outcome, Outcome::Failed(_)))
    {
        // Not marked rolled back: running the rollback again retries.
        let lines: Vec<String> = undone.iter().map(|u| format!("  {u}")).collect();
        return Err(anyhow!(
            "{}\n{}\nthe journal is kept as it was; fix the cause and run the rollback again",
            summarize(&undone),
            lines.join("\n")
        ));
    }
    let mut writer = JournalWriter::reopen(&parsed)?;
    writer.append(&Record::RolledBack {
        reason: "cauda host rollback".into(),
        at_unix: now_unix(),
    })?;
    Ok(Report { undone, notes })
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}
