//! `host tune` and `hold-latency` against this machine's real kernel: the
//! safe subset (swappiness, dirty ratios, THP enabled, the scheduler of a
//! loop device the test creates) is applied and rolled back and proven
//! restored byte for byte — restored by a guard even if the test fails;
//! a value the kernel rejects (EINVAL) rolls back what was applied; a
//! read-only sysfs and a non-root user are refused. Each test needs root
//! and says so when it skips.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;

use common::loopdev::Loop;
use common::tuning::{self, apply, rollback, write_checks};
use common::{as_nobody, cauda, copy_for_nobody, has_setpriv, is_root, put};
use predicates::prelude::*;
use serde_json::{Value, json};

/// The tests here change the same real files: one at a time.
static HOST: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    HOST.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn can_tune_here(test: &str) -> bool {
    let ok = is_root()
        && std::fs::OpenOptions::new()
            .write(true)
            .open("/proc/sys/vm/swappiness")
            .is_ok();
    if !ok {
        eprintln!("skipped {test}: needs root and a writable /proc/sys (not a container)");
    }
    ok
}

/// The bracketed word of a choice file, else the trimmed text.
fn word(text: &str) -> String {
    match (text.find('['), text.find(']')) {
        (Some(a), Some(b)) if a < b => text[a + 1..b].to_string(),
        _ => text.trim().to_string(),
    }
}

/// Puts every saved file back as it was if a test left it different.
struct Restore(Vec<(PathBuf, String)>);

impl Restore {
    fn save(paths: &[&str]) -> Restore {
        Restore(
            paths
                .iter()
                .map(|p| (PathBuf::from(p), std::fs::read_to_string(p).unwrap()))
                .collect(),
        )
    }

    /// Files whose bytes differ from the saved ones.
    fn differing(&self) -> Vec<String> {
        self.0
            .iter()
            .filter(|(p, old)| std::fs::read_to_string(p).ok().as_ref() != Some(old))
            .map(|(p, old)| {
                format!(
                    "{}: {:?} now, {old:?} before",
                    p.display(),
                    std::fs::read_to_string(p).unwrap_or_default()
                )
            })
            .collect()
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        for (path, old) in &self.0 {
            if std::fs::read_to_string(path).ok().as_ref() != Some(old) {
                let text = if old.contains('[') {
                    word(old)
                } else {
                    old.clone()
                };
                let _ = std::fs::write(path, text);
            }
        }
    }
}

/// A warning to set `path` to `value`, with its current value on this machine.
fn warn(id: &str, path: &str, value: &str) -> Value {
    tuning::warn(
        id,
        &word(&std::fs::read_to_string(path).unwrap()),
        path,
        value,
    )
}

/// A different valid number than the file holds now.
fn other_number(path: &str) -> String {
    let n: u64 = std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    (if n >= 50 { n - 1 } else { n + 1 }).to_string()
}

const SWAPPINESS: &str = "/proc/sys/vm/swappiness";
const DIRTY: &str = "/proc/sys/vm/dirty_ratio";
const DIRTY_BG: &str = "/proc/sys/vm/dirty_background_ratio";
const THP: &str = "/sys/kernel/mm/transparent_hugepage/enabled";

#[test]
fn real_safe_subset_applies_and_rolls_back_byte_for_byte() {
    let _serial = one_at_a_time();
    if !can_tune_here("real_safe_subset") {
        return;
    }
    let Some(disk) = Loop::new(8, false) else {
        eprintln!("skipped real_safe_subset: losetup could not create a loop device");
        return;
    };
    let scheduler = format!("/sys/block/{}/queue/scheduler", disk.name());
    // The byte-sized dirty limits are compared too: writing a ratio resets
    // them, so they prove nothing else moved.
    let guard = Restore::save(&[
        SWAPPINESS,
        DIRTY,
        DIRTY_BG,
        "/proc/sys/vm/dirty_bytes",
        "/proc/sys/vm/dirty_background_bytes",
        THP,
        &scheduler,
    ]);
    if std::fs::read_to_string(DIRTY).unwrap().trim() == "0" {
        eprintln!("skipped real_safe_subset: dirty limits are set in bytes on this host");
        return;
    }
    let thp_target = if word(&std::fs::read_to_string(THP).unwrap()) == "never" {
        "madvise"
    } else {
        "never"
    };
    let sched_now = std::fs::read_to_string(&scheduler).unwrap();
    let Some(sched_target) = sched_now
        .split_whitespace()
        .find(|w| !w.starts_with('['))
        .map(String::from)
    else {
        eprintln!("skipped real_safe_subset: {scheduler} offers one scheduler only");
        return;
    };
    let targets = [
        (SWAPPINESS, other_number(SWAPPINESS)),
        (DIRTY, other_number(DIRTY)),
        (DIRTY_BG, other_number(DIRTY_BG)),
        (THP, thp_target.to_string()),
        (scheduler.as_str(), sched_target.clone()),
    ];
    let work = tempfile::tempdir().unwrap();
    let checks: Value = targets
        .iter()
        .enumerate()
        .map(|(i, (path, value))| warn(&format!("real.{i}"), path, value))
        .collect();
    let from = write_checks(work.path(), &checks);
    let journal = work.path().join("real.journal");
    apply(&from, &journal)
        .assert()
        .success()
        .stderr(predicate::str::contains("applied 5 setting(s)"));
    for (path, value) in &targets {
        assert_eq!(
            word(&std::fs::read_to_string(path).unwrap()),
            *value,
            "{path}"
        );
    }
    assert_eq!(guard.differing().len(), 5, "{:?}", guard.differing());
    rollback(&journal)
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "rolled back 5 change(s), each verified byte for byte",
        ));
    assert!(
        guard.differing().is_empty(),
        "not restored: {:?}",
        guard.differing()
    );
}

#[test]
fn a_value_the_kernel_rejects_rolls_back_what_was_applied() {
    let _serial = one_at_a_time();
    if !can_tune_here("kernel_rejects") {
        return;
    }
    let guard = Restore::save(&[SWAPPINESS, DIRTY_BG]);
    let work = tempfile::tempdir().unwrap();
    let from = write_checks(
        work.path(),
        &json!([
            warn("vm.swappiness", SWAPPINESS, &other_number(SWAPPINESS)),
            warn("vm.dirty_background_ratio", DIRTY_BG, "999"),
        ]),
    );
    let journal = work.path().join("j");
    apply(&from, &journal)
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "the kernel rejected '999' for /proc/sys/vm/dirty_background_ratio (EINVAL",
        ))
        .stderr(predicate::str::contains("rolled back 1 change(s)"));
    assert!(guard.differing().is_empty(), "{:?}", guard.differing());
    // The journal says it was rolled back; rolling back again changes nothing.
    rollback(&journal)
        .assert()
        .success()
        .stderr(predicate::str::contains("already rolled back"));
}

#[test]
fn a_read_only_sysfs_is_reported_and_nothing_changes() {
    if !is_root() {
        eprintln!("skipped read_only_sysfs: needs root for a private read-only mount");
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let r = root.path().canonicalize().unwrap();
    put(&r, THP, "always [madvise] never\n");
    let work = tempfile::tempdir().unwrap();
    let from = write_checks(
        work.path(),
        &json!([tuning::warn("mm.thp.enabled", "madvise", THP, "never")]),
    );
    let bin = assert_cmd::cargo::cargo_bin("cauda");
    // A private mount namespace: the read-only bind mount is seen by cauda only.
    let script = format!(
        "mount --bind {r} {r} && mount -o remount,bind,ro {r} && exec {bin} host tune \
         --profile latency --apply --root {r} --from {from} --journal {journal}",
        r = r.display(),
        bin = bin.display(),
        from = from.display(),
        journal = work.path().join("j").display()
    );
    let out = StdCommand::new("unshare")
        .args(["-m", "sh", "-c", &script])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("mount:") || stderr.contains("unshare:") {
        eprintln!("skipped read_only_sysfs: cannot make a private mount here: {stderr}");
        return;
    }
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("read-only file system"), "{stderr}");
    assert!(stderr.contains("run cauda on the host"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(r.join(THP.trim_start_matches('/'))).unwrap(),
        "always [madvise] never\n"
    );
}

#[test]
fn apply_needs_root_but_the_dry_run_does_not() {
    let _serial = one_at_a_time();
    if !is_root() || !has_setpriv() {
        eprintln!("skipped needs_root: needs root and setpriv to drop to nobody");
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let from = write_checks(
        work.path(),
        &json!([warn("vm.swappiness", SWAPPINESS, &other_number(SWAPPINESS))]),
    );
    let copy = copy_for_nobody(work.path());
    let guard = Restore::save(&[SWAPPINESS]);
    let run = |extra: &[&str]| {
        as_nobody(&copy)
            .args(["host", "tune", "--profile", "latency", "--from"])
            .arg(&from)
            .args(extra)
            .output()
            .unwrap()
    };
    let dry = run(&[]);
    assert!(
        dry.status.success(),
        "{}",
        String::from_utf8_lossy(&dry.stderr)
    );
    assert!(String::from_utf8_lossy(&dry.stdout).contains("dry run"));
    let apply = run(&["--apply", "--journal", "/tmp/cauda-never-written.journal"]);
    assert_eq!(apply.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&apply.stderr);
    assert!(
        stderr.contains("needs root") && stderr.contains("dry run"),
        "{stderr}"
    );
    assert!(guard.differing().is_empty());
    assert!(!Path::new("/tmp/cauda-never-written.journal").exists());
}

#[test]
fn hold_latency_holds_the_limit_while_the_command_runs_and_forwards_its_code() {
    let _serial = one_at_a_time();
    if !is_root() || !Path::new("/dev/cpu_dma_latency").exists() {
        eprintln!("skipped hold_latency: needs root and /dev/cpu_dma_latency");
        return;
    }
    // The device reads the limit in force: the smallest any holder asked for.
    let out = cauda()
        .args(["host", "hold-latency", "--max-latency", "10us", "--"])
        .args(["sh", "-c", "od -An -td4 /dev/cpu_dma_latency; exit 3"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let held: i64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert!(
        (0..=10).contains(&held),
        "limit in force while held: {held}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("released"));
    cauda()
        .args(["host", "hold-latency", "--max-latency", "10us", "--"])
        .arg("/nonexistent/command")
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "cannot run '/nonexistent/command'",
        ));
    cauda()
        .args(["host", "hold-latency", "--max-latency", "10"])
        .args(["--", "true"])
        .assert()
        .code(2);
    // SIGTERM to cauda alone reaches the command, and cauda waits for it
    // before releasing the hold (it used to exit and leave it running).
    let child = common::cauda_process()
        .args(["host", "hold-latency", "--max-latency", "10us", "--"])
        .args([
            "sh",
            "-c",
            "sleep 30 & p=$!; trap 'kill $p; exit 7' TERM; wait",
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    common::signal(child.id(), "-TERM");
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(7));
    assert!(String::from_utf8_lossy(&out.stderr).contains("released"));
}

/// Writing `vm.dirty_ratio` makes the kernel zero `vm.dirty_bytes`: the
/// journal records it too, so a host that limited dirty memory in bytes
/// gets its byte limit back, not a ratio of 0.
#[test]
fn a_setting_the_kernel_resets_as_a_side_effect_is_restored_too() {
    if !can_tune_here("kernel_coupled") {
        return;
    }
    let _serial = one_at_a_time();
    const BYTES: &str = "/proc/sys/vm/dirty_bytes";
    // Restored in this order: the ratio first (which zeroes the bytes).
    let guard = Restore::save(&[DIRTY, BYTES]);
    if std::fs::read_to_string(BYTES).unwrap().trim() != "0" {
        eprintln!("skipped kernel_coupled: this host already limits dirty memory in bytes");
        return;
    }
    std::fs::write(BYTES, "268435456").unwrap();
    assert_eq!(std::fs::read_to_string(DIRTY).unwrap(), "0\n");
    let work = tempfile::tempdir().unwrap();
    let from = write_checks(work.path(), &json!([warn("vm.dirty_ratio", DIRTY, "10")]));
    let journal = work.path().join("j");
    apply(&from, &journal).assert().success();
    assert_eq!(std::fs::read_to_string(BYTES).unwrap(), "0\n");
    rollback(&journal)
        .assert()
        .success()
        .stderr(predicate::str::contains("rolled back 2 change(s)"));
    assert_eq!(std::fs::read_to_string(BYTES).unwrap(), "268435456\n");
    assert_eq!(std::fs::read_to_string(DIRTY).unwrap(), "0\n");
    drop(guard);
    assert_eq!(std::fs::read_to_string(BYTES).unwrap(), "0\n");
}
