//! `--persist`: keep applied settings across reboots with files named as
//! cauda's — a sysctl.d file for `/proc/sys` settings and a udev rule for
//! block-queue settings — written through the journal so rollback removes
//! them. Settings neither can carry (THP, cpufreq, cpuidle) are reported as
//! runtime-only, with the systemd-tmpfiles line that would keep them.
//!
//! It also looks for what would undo ours: an active tuned profile,
//! irqbalance, and sysctl.d files or udev rules applied after ours
//! (sysctl.d files are applied in file-name order across directories and
//! the last value wins: `sysctl.d(5)`, procps `sysctl --system`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Result;

use super::apply::Step;
use super::files::read_exact;
use super::paths::{SYSCTL_FILE, UDEV_FILE};
use super::plan::Plan;
use crate::error::input_error;
use crate::host::root::HostRoot;

/// The first line of both, which marks them as cauda's.
pub const MARK: &str = "# Written by cauda host tune --persist";

const SYSCTL_DIRS: [&str; 5] = [
    "/etc/sysctl.d",
    "/run/sysctl.d",
    "/usr/local/lib/sysctl.d",
    "/usr/lib/sysctl.d",
    "/lib/sysctl.d",
];
const UDEV_DIRS: [&str; 4] = [
    "/etc/udev/rules.d",
    "/run/udev/rules.d",
    "/usr/lib/udev/rules.d",
    "/lib/udev/rules.d",
];

/// The files to write and what the user should know.
#[derive(Debug, Default)]
pub struct Persist {
    /// File writes, to append to the apply's steps.
    pub steps: Vec<Step>,
    /// Settings kept at runtime only, and other notes.
    pub notes: Vec<String>,
    /// Things that would override or undo the persisted settings.
    pub conflicts: Vec<String>,
}

fn sysctl_key(path: &str) -> Option<String> {
    path.strip_prefix("/proc/sys/").map(|k| k.replace('/', "."))
}

/// `(device, attribute)` of a block queue setting such as `/sys/block/sda/queue/scheduler`.
fn block_attr(path: &str) -> Option<(String, String)> {
    let rest = path.strip_prefix("/sys/block/")?;
    let (dev, attr) = rest.split_once('/')?;
    attr.starts_with("queue/")
        .then(|| (dev.to_string(), attr.to_string()))
}

/// Builds the persisted files for the plan's runtime changes.
pub fn plan(plan: &Plan, root: &HostRoot, force: bool) -> Result<Persist> {
    let mut out = Persist::default();
    let mut sysctls: BTreeMap<String, String> = BTreeMap::new();
    let mut rules: Vec<(String, String, String)> = Vec::new();
    for c in plan.runtime() {
        if let Some(key) = sysctl_key(&c.path) {
            sysctls.insert(key, c.target.clone());
        } else if let Some((dev, attr)) = block_attr(&c.path) {
            rules.push((dev, attr, c.target.clone()));
        } else {
            out.notes.push(format!(
                "{} is kept at runtime only and is lost at reboot (a systemd-tmpfiles.d line \
                 would keep it: w {} - - - - {})",
                c.id, c.path, c.target
            ));
        }
    }
    if !sysctls.is_empty() {
        let mut text = format!("{MARK}; `cauda host rollback` removes it.\n");
        for (key, value) in &sysctls {
            text.push_str(&format!("{key} = {value}\n"));
        }
        push_file(&mut out, root, SYSCTL_FILE, text, force)?;
        sysctl_conflicts(&mut out, root, &sysctls);
    }
    if !rules.is_empty() {
        let mut text = format!("{MARK}; `cauda host rollback` removes it.\n");
        for (dev, attr, value) in &rules {
            text.push_str(&format!(
                "ACTION==\"add|change\", KERNEL==\"{dev}\", ATTR{{{attr}}}=\"{value}\"\n"
            ));
        }
        push_file(&mut out, root, UDEV_FILE, text, force)?;
        udev_conflicts(&mut out, root, &rules);
    }
    service_conflicts(&mut out, root);
    Ok(out)
}

fn push_file(
    out: &mut Persist,
    root: &HostRoot,
    path: &str,
    text: String,
    force: bool,
) -> Result<()> {
    let file = root.path(path);
    let dir = file.parent().map(PathBuf::from).unwrap_or_default();
    if !dir.is_dir() {
        out.notes.push(format!(
            "{} does not exist, so {path} was not written (the settings stay runtime only)",
            dir.display()
        ));
        return Ok(());
    }
    if let Ok(existing) = read_exact(&file)
        && !existing.starts_with(MARK)
        && !force
    {
        return Err(input_error(format!(
            "--persist: {path} exists and was not written by cauda; move it away, or pass \
             --force to replace it (rollback restores it)"
        )));
    }
    out.steps.push(Step::File {
        path: path.into(),
        content: text,
    });
    Ok(())
}

/// Config files in `dirs` whose names sort after `ours` (deduplicated).
fn later_files(root: &HostRoot, dirs: &[&str], ours: &str, ext: &str) -> Vec<(String, PathBuf)> {
    let mut seen = std::collections::BTreeSet::new();
    let mut files = Vec::new();
    for dir in dirs {
        let Ok(read) = std::fs::read_dir(root.path(dir)) else {
            continue;
        };
        for entry in read.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.ends_with(ext) || name.as_str() <= ours {
                continue;
            }
            let path = entry.path();
            let key = path.canonicalize().unwrap_or_else(|_| path.clone());
            if seen.insert(key) {
                files.push((format!("{dir}/{name}"), path));
            }
        }
    }
    files.sort();
    files
}

fn sysctl_conflicts(out: &mut Persist, root: &HostRoot, ours: &BTreeMap<String, String>) {
    let mut files = later_files(root, &SYSCTL_DIRS, "90-cauda-tune.conf", ".conf");
    // procps `sysctl --system` reads /etc/sysctl.conf after every directory.
    let conf = root.path("/etc/sysctl.conf");
    let canonical = conf.canonicalize().ok();
    if conf.is_file()
        && !files
            .iter()
            .any(|(_, p)| p.canonicalize().ok() == canonical)
    {
        files.push(("/etc/sysctl.conf".into(), conf));
    }
    for (shown, path) in files {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.starts_with('#') || line.starts_with(';') {
                continue;
            }
            let Some((key, value)) = line.split_once('=') else {
                continue;
            };
            let key = key.trim().trim_start_matches('-').replace('/', ".");
            let value = value.trim();
            if let Some(mine) = ours.get(&key)
                && mine != value
            {
                out.conflicts.push(format!(
                    "{shown}:{}: sets {key} = {value} and is applied after {SYSCTL_FILE}, so at \
                     boot {key} would be {value}, not {mine}; remove that line or rename the file",
                    n + 1
                ));
            }
        }
    }
}

fn udev_conflicts(out: &mut Persist, root: &HostRoot, ours: &[(String, String, String)]) {
    for (shown, path) in later_files(root, &UDEV_DIRS, "90-cauda-tune.rules", ".rules") {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            for (_, attr, _) in ours {
                if line.contains(&format!("ATTR{{{attr}}}=\"")) {
                    out.conflicts.push(format!(
                        "{shown}:{}: also sets {attr} and runs after {UDEV_FILE}; it would win",
                        n + 1
                    ));
                }
            }
        }
    }
}

/// Process names running under `root` (from `/proc/PID/comm`).
fn running(root: &HostRoot) -> Vec<String> {
    let Ok(read) = std::fs::read_dir(root.path("/proc")) else {
        return Vec::new();
    };
    read.flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|e| std::fs::read_to_string(e.path().join("comm")).ok())
        .map(|s| s.trim().to_string())
        .collect()
}

fn service_conflicts(out: &mut Persist, root: &HostRoot) {
    let procs = running(root);
    let is_running = |name: &str| procs.iter().any(|p| p == name);
    if let Some(profile) = root.read("/etc/tuned/active_profile") {
        if is_running("tuned") {
            out.conflicts.push(format!(
                "tuned is running with profile '{profile}': it applies its own sysctl and sysfs \
                 values and may undo these (tuned-adm off, or put them in a custom tuned profile)"
            ));
        } else {
            out.notes.push(format!(
                "tuned profile '{profile}' is selected but tuned is not running; if it starts, it \
                 may undo these settings"
            ));
        }
    }
    if is_running("irqbalance") {
        out.conflicts.push(
            "irqbalance is running: it moves IRQs between CPUs periodically, so IRQ placement \
             is not stable (stop it, or ban latency CPUs with IRQBALANCE_BANNED_CPULIST)"
                .into(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_map_to_keys_and_rules() {
        assert_eq!(
            sysctl_key("/proc/sys/vm/swappiness").as_deref(),
            Some("vm.swappiness")
        );
        assert_eq!(
            block_attr("/sys/block/loop3/queue/scheduler"),
            Some(("loop3".into(), "queue/scheduler".into()))
        );
        assert_eq!(
            block_attr("/sys/kernel/mm/transparent_hugepage/enabled"),
            None
        );
    }
}
