//! Applying a plan: for each step, journal the old value (fsynced), write
//! the new one, read it back and verify it; on the first failure, undo what
//! was already applied, newest first, and fail.

use anyhow::{Result, anyhow};

use super::files::{effective, explain_write_error, read_exact, write_value};
use super::journal::{JournalWriter, Record, now_unix};
use super::rollback;
use crate::host::root::HostRoot;

/// When set to N, the apply stalls for an hour after its N-th step: lets
/// tests `kill -9` it half-way at a known point. Not for users.
pub const TEST_STALL_ENV: &str = "CAUDA_TUNE_TEST_STALL_AFTER";

/// One thing `apply` does.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Write a runtime setting.
    Setting {
        /// The check id.
        id: String,
        /// The absolute host path.
        path: String,
        /// The value to write.
        value: String,
    },
    /// Write a whole file (a persisted sysctl.d file or udev rule).
    File {
        /// The absolute host path.
        path: String,
        /// The content.
        content: String,
    },
}

/// An applied step, as the undo needs it.
#[derive(Clone, Debug)]
pub struct Applied {
    /// The journal record made for it.
    pub record: Record,
}

/// Applies `steps` under `root`, journalling each before it is made. On
/// failure everything applied is undone (newest first, verified) and the
/// error says what failed and what was restored.
pub fn apply(steps: &[Step], root: &HostRoot, journal: &mut JournalWriter) -> Result<Vec<Applied>> {
    let stall_after = std::env::var(TEST_STALL_ENV)
        .ok()
        .and_then(|v| v.parse::<usize>().ok());
    let mut applied: Vec<Applied> = Vec::new();
    let mut seq = 0;
    for (i, step) in steps.iter().enumerate() {
        match apply_one(step, &mut seq, root, journal, &mut applied) {
            Ok(()) => {}
            Err(failure) => {
                let undone = rollback::undo(applied.iter().rev().map(|a| &a.record), root);
                let summary = rollback::summarize(&undone);
                let reason = format!("apply failed: {failure}");
                let logged = journal.append(&Record::RolledBack {
                    reason: reason.clone(),
                    at_unix: now_unix(),
                });
                let mut message = format!("{failure}; {summary}");
                if let Err(e) = logged {
                    message.push_str(&format!(" (and the journal could not record it: {e:#})"));
                }
                return Err(anyhow!(message));
            }
        }
        if stall_after == Some(i + 1) {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }
    Ok(applied)
}

/// Settings the kernel changes when `path` is written: writing
/// `vm.dirty_ratio` zeroes `vm.dirty_bytes` (and the other way round), and
/// changing a cpufreq governor resets the policy's energy-performance
/// preference. They are journalled before the write, so rollback restores
/// them after the setting itself.
pub fn coupled(path: &str) -> Vec<String> {
    let vm = |name: &str| format!("/proc/sys/vm/{name}");
    let pairs = [
        ("dirty_ratio", "dirty_bytes"),
        ("dirty_background_ratio", "dirty_background_bytes"),
    ];
    for (a, b) in pairs {
        if path == vm(a) {
            return vec![vm(b)];
        }
        if path == vm(b) {
            return vec![vm(a)];
        }
    }
    match path.strip_suffix("/scaling_governor") {
        Some(dir) => vec![format!("{dir}/energy_performance_preference")],
        None => Vec::new(),
    }
}

/// Journals a setting as it is now, before `seq` is written over it.
fn journal_old(
    id: &str,
    path: &str,
    new: &str,
    seq: &mut u32,
    root: &HostRoot,
    journal: &mut JournalWriter,
    applied: &mut Vec<Applied>,
) -> Result<(), String> {
    let old = read_exact(&root.path(path)).map_err(|e| format!("{id}: cannot read {path}: {e}"))?;
    *seq += 1;
    let record = Record::Change {
        seq: *seq,
        id: id.to_string(),
        path: path.to_string(),
        old,
        new: new.to_string(),
    };
    journal.append(&record).map_err(|e| format!("{e:#}"))?;
    // From here on the change may have happened: undo must consider it.
    applied.push(Applied { record });
    Ok(())
}

fn apply_one(
    step: &Step,
    seq: &mut u32,
    root: &HostRoot,
    journal: &mut JournalWriter,
    applied: &mut Vec<Applied>,
) -> Result<(), String> {
    match step {
        Step::Setting { id, path, value } => {
            for other in coupled(path) {
                if root.path(&other).exists() {
                    let label = format!("{id}, side effect");
                    journal_old(
                        &label,
                        &other,
                        "(reset by the kernel)",
                        seq,
                        root,
                        journal,
                        applied,
                    )?;
                    journal
                        .append(&Record::Done { seq: *seq })
                        .map_err(|e| format!("{e:#}"))?;
                }
            }
            journal_old(id, path, value, seq, root, journal, applied)?;
            let file = root.path(path);
            write_value(&file, value)
                .map_err(|e| format!("{id}: {}", explain_write_error(path, value, &e)))?;
            let now =
                read_exact(&file).map_err(|e| format!("{id}: cannot read {path} back: {e}"))?;
            if effective(&now) != effective(value) {
                return Err(format!(
                    "{id}: wrote '{value}' to {path} but it reads back '{}': the kernel adjusted \
                     or ignored it",
                    now.trim_end()
                ));
            }
        }
        Step::File { path, content } => {
            let file = root.path(path);
            let old = match read_exact(&file) {
                Ok(text) => Some(text),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => return Err(format!("cannot read {path}: {e}")),
            };
            *seq += 1;
            let record = Record::File {
                seq: *seq,
                path: path.clone(),
                old,
                new: content.clone(),
            };
            journal.append(&record).map_err(|e| format!("{e:#}"))?;
            applied.push(Applied { record });
            crate::output::write_atomic(&file, content.as_bytes()).map_err(|e| format!("{e:#}"))?;
            let now = read_exact(&file).map_err(|e| format!("cannot read {path} back: {e}"))?;
            if now != *content {
                return Err(format!(
                    "{path} reads back different content than was written"
                ));
            }
        }
    }
    journal
        .append(&Record::Done { seq: *seq })
        .map_err(|e| format!("{e:#}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_coupled_settings() {
        assert_eq!(
            coupled("/proc/sys/vm/dirty_ratio"),
            ["/proc/sys/vm/dirty_bytes"]
        );
        assert_eq!(
            coupled("/proc/sys/vm/dirty_background_bytes"),
            ["/proc/sys/vm/dirty_background_ratio"]
        );
        assert_eq!(
            coupled("/sys/devices/system/cpu/cpufreq/policy0/scaling_governor"),
            ["/sys/devices/system/cpu/cpufreq/policy0/energy_performance_preference"]
        );
        assert!(coupled("/proc/sys/vm/swappiness").is_empty());
    }
}
