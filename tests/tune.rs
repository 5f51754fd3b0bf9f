//! `cauda host tune`, `rollback` and `hold-latency` through the binary:
//! dry runs change nothing; apply + rollback restores every touched file
//! byte for byte on a fake root and on this machine's real safe settings;
//! a `kill -9` half-way through an apply rolls back exactly; bad input is
//! refused without changing anything.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;

use assert_cmd::Command;
use common::tuning::{apply, host_tune, rollback, tune_from, warn, write_checks};
use common::{audit, cauda, cauda_process, copy_of_captured, json_stdout, put};
use predicates::prelude::*;
use serde_json::{Value, json};

/// Every file below `dir` with its bytes (a symlink: its target), except
/// cauda's own state directory (its lock file).
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            let kind = entry.file_type().unwrap();
            let bytes = if kind.is_dir() {
                if !path.ends_with("var/lib/cauda") {
                    stack.push(path);
                }
                continue;
            } else if kind.is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                format!("-> {}", target.display()).into_bytes()
            } else {
                std::fs::read(&path).unwrap()
            };
            out.insert(path.strip_prefix(dir).unwrap().to_path_buf(), bytes);
        }
    }
    out
}

/// A fake host: sysctls, THP choice files, a disk queue, GRUB, sysctl.d.
fn fake_root() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    put(r, "/proc/sys/kernel/hostname", "fakebox\n");
    put(r, "/proc/sys/kernel/random/boot_id", "0f0f0f0f-boot\n");
    put(r, "/proc/sys/vm/swappiness", "60\n");
    put(r, "/proc/sys/vm/dirty_ratio", "20\n");
    put(r, "/proc/sys/vm/dirty_background_ratio", "10\n");
    put(
        r,
        "/sys/kernel/mm/transparent_hugepage/enabled",
        "always [madvise] never\n",
    );
    put(
        r,
        "/sys/kernel/mm/transparent_hugepage/defrag",
        "always defer defer+madvise [madvise] never\n",
    );
    put(r, "/sys/block/sda/queue/scheduler", "[mq-deadline] none\n");
    put(
        r,
        "/etc/default/grub",
        "GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX=\"quiet\"\n",
    );
    std::fs::create_dir_all(r.join("etc/sysctl.d")).unwrap();
    std::fs::create_dir_all(r.join("etc/udev/rules.d")).unwrap();
    dir
}

/// Hand-built checks for the fake root, as `cauda host audit --json` writes them.
fn fake_checks() -> Value {
    json!({"schema": "cauda.audit/1", "profile": "latency", "checks": [
        warn("vm.swappiness", "60", "/proc/sys/vm/swappiness", "10"),
        warn("vm.dirty_ratio", "20", "/proc/sys/vm/dirty_ratio", "10"),
        warn("vm.dirty_background_ratio", "10", "/proc/sys/vm/dirty_background_ratio", "5"),
        warn("mm.thp.enabled", "madvise", "/sys/kernel/mm/transparent_hugepage/enabled", "never"),
        warn("mm.thp.defrag", "madvise", "/sys/kernel/mm/transparent_hugepage/defrag", "never"),
        warn("block.sda.scheduler", "mq-deadline", "/sys/block/sda/queue/scheduler", "none"),
        {"id": "cmdline.max_cstate", "read": "/proc/cmdline", "current": "(absent)",
         "recommended": "intel_idle.max_cstate=1", "status": "warn", "why": "deep C-states",
         "source": "test", "fix": {"kind": "boot", "argument": "intel_idle.max_cstate=1"}},
        {"id": "cpu.model", "read": "/proc/cpuinfo", "current": "x", "recommended": "",
         "status": "info", "why": "context", "source": "test"}
    ]})
}

/// The fake root, a work directory beside it and the hand-built checks
/// written there: where most tests here start.
struct Fake {
    root: tempfile::TempDir,
    work: tempfile::TempDir,
    from: PathBuf,
}

impl Fake {
    fn new() -> Fake {
        let work = tempfile::tempdir().unwrap();
        let from = write_checks(work.path(), &fake_checks());
        Fake {
            root: fake_root(),
            work,
            from,
        }
    }

    fn root(&self) -> &Path {
        self.root.path()
    }

    /// `NAME` in the work directory (a journal, a script).
    fn file(&self, name: &str) -> PathBuf {
        self.work.path().join(name)
    }

    /// A dry run of the hand-built checks on the fake root.
    fn tune(&self) -> Command {
        tune(self.root(), &self.from)
    }

    /// Applies the hand-built checks on the fake root, journalled to `journal`.
    fn apply(&self, journal: &Path) -> Command {
        let mut c = apply(&self.from, journal);
        c.arg("--root").arg(self.root());
        c
    }
}

/// `cauda host tune --profile latency --root ROOT --from CHECKS`.
fn tune(root: &Path, from: &Path) -> Command {
    let mut c = tune_from(from);
    c.arg("--root").arg(root);
    c
}

/// The text of `path` below the fake root.
fn read(root: &Path, path: &str) -> String {
    std::fs::read_to_string(root.join(path.trim_start_matches('/'))).unwrap()
}

#[test]
fn dry_run_prints_the_plan_and_changes_nothing() {
    let fake = Fake::new();
    let before = tree(fake.root());
    fake.tune()
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "6 runtime change(s), 1 boot argument(s)",
        ))
        .stdout(predicate::str::contains("60 → 10"))
        .stdout(predicate::str::contains("dry run, nothing changed"))
        .stdout(predicate::str::contains(
            "GRUB_CMDLINE_LINUX=\"quiet intel_idle.max_cstate=1\"",
        ));
    let plan = json_stdout(fake.tune().arg("--json").output().unwrap());
    assert_eq!(plan["schema"], "cauda.plan/1");
    assert_eq!(plan["changes"].as_array().unwrap().len(), 7);
    assert_eq!(plan["changes"][6]["reboot"], true);
    assert_eq!(tree(fake.root()), before, "a dry run wrote something");
    assert!(
        !fake.root().join("var").exists(),
        "a dry run made a journal"
    );
}

#[test]
fn script_is_valid_shell_with_an_undo_per_change() {
    let fake = Fake::new();
    let script = fake.file("tune.sh");
    fake.tune().arg("--script").arg(&script).assert().success();
    let text = std::fs::read_to_string(&script).unwrap();
    assert_eq!(text.matches("\n# undo: ").count(), 6, "{text}");
    let syntax = StdCommand::new("sh")
        .arg("-n")
        .arg(&script)
        .status()
        .unwrap();
    assert!(syntax.success(), "sh -n rejected the script:\n{text}");
    // An existing script is not overwritten without --force.
    fake.tune()
        .arg("--script")
        .arg(&script)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--force"));
}

#[test]
fn apply_and_rollback_round_trip_byte_for_byte_on_a_fake_root() {
    let fake = Fake::new();
    let r = fake.root();
    // An earlier sysctl.d file that sorts after ours would override it.
    put(r, "/etc/sysctl.d/99-sysctl.conf", "vm.swappiness = 60\n");
    put(r, "/proc/4242/comm", "irqbalance\n");
    let journal = fake.file("tune.journal");
    let before = tree(r);
    fake.apply(&journal)
        .arg("--persist")
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "applied 6 setting(s) and 2 file(s)",
        ))
        .stderr(predicate::str::contains(
            "99-sysctl.conf:1: sets vm.swappiness = 60",
        ))
        .stderr(predicate::str::contains("irqbalance is running"))
        .stderr(predicate::str::contains(
            "mm.thp.enabled is kept at runtime only",
        ));
    assert_eq!(read(r, "/proc/sys/vm/swappiness"), "10");
    assert_eq!(
        read(r, "/sys/kernel/mm/transparent_hugepage/enabled"),
        "never"
    );
    assert_eq!(read(r, "/sys/block/sda/queue/scheduler"), "none");
    let sysctl = read(r, "/etc/sysctl.d/90-cauda-tune.conf");
    assert!(sysctl.contains("vm.swappiness = 10\n"), "{sysctl}");
    let rule = read(r, "/etc/udev/rules.d/90-cauda-tune.rules");
    assert!(
        rule.contains("KERNEL==\"sda\", ATTR{queue/scheduler}=\"none\""),
        "{rule}"
    );
    assert_eq!(
        std::fs::read_to_string(&journal).unwrap().lines().count(),
        17
    );

    rollback(&journal)
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "rolled back 8 change(s), each verified byte for byte",
        ));
    assert_eq!(tree(r), before, "rollback did not restore every byte");
    // A second rollback knows it is done and changes nothing.
    rollback(&journal)
        .assert()
        .success()
        .stderr(predicate::str::contains("already rolled back"));
    assert_eq!(tree(r), before);
}

#[test]
fn kill_9_half_way_then_rollback_restores_everything() {
    let fake = Fake::new();
    let r = fake.root();
    let journal = fake.file("tune.journal");
    let before = tree(r);
    let mut child = cauda_process()
        .args(["host", "tune", "--profile", "latency", "--apply", "--root"])
        .arg(r)
        .arg("--from")
        .arg(&fake.from)
        .arg("--journal")
        .arg(&journal)
        .env("CAUDA_TUNE_TEST_STALL_AFTER", "2")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until two changes are done (the child then stalls before the third).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let text = std::fs::read_to_string(&journal).unwrap_or_default();
        if text.matches("\"kind\":\"done\"").count() >= 2 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "apply never progressed"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // While it runs, a second apply or a rollback on the same host waits its turn.
    fake.apply(&fake.file("second.journal"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "another cauda host tune or rollback is running",
        ));
    rollback(&journal)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!("pid {}", child.id())));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let changed: Vec<_> = tree(r)
        .into_iter()
        .filter(|(p, b)| before.get(p) != Some(b))
        .map(|(p, _)| p)
        .collect();
    assert_eq!(
        changed.len(),
        2,
        "expected exactly two applied: {changed:?}"
    );

    // A crash while writing the next record leaves a torn line: ignored.
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&journal)
        .unwrap();
    file.write_all(b"{\"kind\":\"change\",\"seq\":3,\"id\":\"vm.dirty_backgr")
        .unwrap();
    drop(file);

    rollback(&journal)
        .assert()
        .success()
        .stderr(predicate::str::contains("last record was torn"))
        .stderr(predicate::str::contains("rolled back 2 change(s)"));
    assert_eq!(
        tree(r),
        before,
        "rollback after kill -9 did not restore every byte"
    );
    // The torn fragment was cut before the rollback record was appended.
    let text = std::fs::read_to_string(&journal).unwrap();
    assert!(text.ends_with('\n') && !text.contains("dirty_backgr"));
}

#[test]
fn a_corrupt_journal_is_refused_and_nothing_changes() {
    let fake = Fake::new();
    let r = fake.root();
    let journal = fake.file("tune.journal");
    fake.apply(&journal).assert().success();
    let applied = tree(r);
    let text = std::fs::read_to_string(&journal).unwrap();
    // Change the recorded old swappiness (line 2): the checksum no longer matches.
    let damaged = text.replacen("\"old\":\"60\\n\"", "\"old\":\"61\\n\"", 1);
    assert_ne!(damaged, text);
    std::fs::write(&journal, &damaged).unwrap();
    rollback(&journal)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("line 2"))
        .stderr(predicate::str::contains("checksum mismatch"))
        .stderr(predicate::str::contains("nothing was changed"));
    assert_eq!(tree(r), applied);
    assert_eq!(std::fs::read_to_string(&journal).unwrap(), damaged);
    // An existing journal that was not rolled back is never replaced.
    std::fs::write(&journal, &text).unwrap();
    fake.apply(&journal)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("has not been rolled back"));
}

#[test]
fn a_link_planted_at_the_tuning_lock_is_refused_and_its_target_untouched() {
    let fake = Fake::new();
    let victim = fake.file("victim");
    std::fs::write(&victim, "precious").unwrap();
    let lock = fake.root().join("var/lib/cauda/tune.lock");
    std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&victim, &lock).unwrap();
    let before = tree(fake.root());
    let journal = fake.file("tune.journal");
    fake.apply(&journal)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("is a symbolic link"))
        .stderr(predicate::str::contains("--force").not());
    assert_eq!(tree(fake.root()), before, "nothing applied");
    assert!(!journal.exists());

    // Applied with the lock in place, then a link planted for the rollback.
    std::fs::remove_file(&lock).unwrap();
    fake.apply(&journal).assert().success();
    let applied = tree(fake.root());
    std::fs::remove_file(&lock).unwrap();
    std::os::unix::fs::symlink(&victim, &lock).unwrap();
    let mut back = rollback(&journal);
    back.arg("--root").arg(fake.root());
    back.assert()
        .code(2)
        .stderr(predicate::str::contains("is a symbolic link"));
    assert_eq!(tree(fake.root()), applied, "nothing rolled back unlocked");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
}

#[test]
fn a_journal_from_another_host_needs_force() {
    let fake = Fake::new();
    let r = fake.root();
    let journal = fake.file("tune.journal");
    let before = tree(r);
    fake.apply(&journal).assert().success();
    put(r, "/proc/sys/kernel/hostname", "otherbox\n");
    let applied = tree(r);
    rollback(&journal)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("written on host 'fakebox'"))
        .stderr(predicate::str::contains("'otherbox'"));
    assert_eq!(tree(r), applied);
    rollback(&journal).arg("--force").assert().success();
    put(r, "/proc/sys/kernel/hostname", "fakebox\n");
    assert_eq!(tree(r), before);
}

#[test]
fn unknown_profile_id_and_misplaced_flags_are_refused() {
    let fake = Fake::new();
    cauda()
        .args(["host", "tune", "--profile", "fastest", "--root"])
        .arg(fake.root())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("latency, throughput, balanced"));
    fake.tune()
        .args(["--only", "vm.swapiness"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no such check id"))
        .stderr(predicate::str::contains("vm.swappiness"));
    fake.tune()
        .args(["--only", "vm.*", "--json"])
        .assert()
        .success()
        .stdout(predicate::str::contains("vm.dirty_ratio"))
        .stdout(predicate::str::contains("mm.thp").not());
    fake.tune()
        .arg("--persist")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--apply"));
    host_tune()
        .args(["--root", "/nonexistent-root"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--root /nonexistent-root"));
    let foreign = write_checks(
        fake.work.path(),
        &json!([warn("evil", "x", "/etc/passwd", "root::0:0:")]),
    );
    tune(fake.root(), &foreign)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("only kernel settings"));
    let junk = fake.file("junk.json");
    std::fs::write(&junk, "{\"checks\": 3}").unwrap();
    tune(fake.root(), &junk)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("list of checks"));
}

#[test]
fn a_foreign_persist_file_is_not_replaced_without_force() {
    let fake = Fake::new();
    let r = fake.root();
    put(r, "/etc/sysctl.d/90-cauda-tune.conf", "vm.swappiness = 1\n");
    let journal = fake.file("j");
    let before = tree(r);
    fake.apply(&journal)
        .arg("--persist")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("was not written by cauda"));
    assert_eq!(tree(r), before);
    assert!(!journal.exists());
    fake.apply(&journal)
        .args(["--persist", "--force"])
        .assert()
        .success();
    rollback(&journal).assert().success();
    assert_eq!(tree(r), before, "the foreign file was not restored");
}

#[test]
fn the_plan_matches_its_schema() {
    let fake = Fake::new();
    let validator = common::validator("plan.schema.json");
    for only in ["*", "vm.*", "cmdline.*"] {
        let plan = json_stdout(
            fake.tune()
                .args(["--json", "--only", only])
                .output()
                .unwrap(),
        );
        let errors: Vec<String> = validator
            .iter_errors(&plan)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "--only {only}: {errors:?}");
    }
    // Without a GRUB file the boot advice names no file.
    std::fs::remove_file(fake.root().join("etc/default/grub")).unwrap();
    let plan = json_stdout(fake.tune().arg("--json").output().unwrap());
    assert!(validator.is_valid(&plan));
    assert_eq!(plan["boot"]["file"], Value::Null);
    assert_eq!(plan["boot"]["line"], "intel_idle.max_cstate=1");
}

/// `--verify`: both runs are saved, compare is printed, and the changes are
/// kept exactly when the verdict (or --keep) says so.
#[test]
fn verify_measures_around_the_change_and_keeps_or_rolls_back() {
    let fake = Fake::new();
    let r = fake.root();
    let before = tree(r);
    for keep in [false, true] {
        let journal = fake.file(&format!("verify-{keep}.journal"));
        let mut command = fake.tune();
        command.args(["--only", "vm.swappiness", "--verify", "--journal"]);
        command.arg(&journal);
        if keep {
            command.arg("--keep");
        }
        let out = command
            .args(["--", "timer", "--runtime", "1200ms"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("p99"), "no comparison printed: {stdout}");
        for suffix in [".before.json", ".after.json"] {
            let run = PathBuf::from(format!("{}{suffix}", journal.display()));
            let text = std::fs::read_to_string(&run).unwrap();
            assert!(text.starts_with("{\"schema\":\"cauda.run/1\""));
        }
        let kept = stderr.contains("kept (");
        assert_eq!(
            kept,
            keep || !stderr.contains("rolled back: not better"),
            "{stderr}"
        );
        assert_eq!(read(r, "/proc/sys/vm/swappiness") == "10", kept, "{stderr}");
        if kept {
            rollback(&journal).assert().success();
        }
        assert_eq!(tree(r), before);
    }
    // The probe's own output flags belong to cauda.
    fake.tune()
        .args(["--verify", "--journal"])
        .arg(fake.file("x"))
        .args(["--", "timer", "-o", "mine.json"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("leave out -o"));
}

/// Without --from, the plan comes from `cauda host audit` itself: on a
/// copy of the tree captured from this VM, every fixable warning is
/// planned, applied (after which the audit finds nothing left to fix) and
/// rolled back byte for byte.
#[test]
fn the_live_audit_drives_the_plan_on_a_captured_tree() {
    let copy = copy_of_captured();
    let r = copy.path();
    let work = tempfile::tempdir().unwrap();
    let audit = audit(r, "latency");
    let mut fixable: Vec<String> = audit["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "warn" && c["fix"]["kind"] == "write")
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect();
    assert!(
        !fixable.is_empty(),
        "the fake root raised no fixable warning"
    );
    let plan = json_stdout(
        host_tune()
            .args(["--json", "--root"])
            .arg(r)
            .output()
            .unwrap(),
    );
    let mut planned: Vec<String> = plan["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["reboot"] == false)
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect();
    fixable.sort();
    planned.sort();
    assert_eq!(planned, fixable);
    let before = tree(r);
    let journal = work.path().join("j");
    host_tune()
        .args(["--apply", "--root"])
        .arg(r)
        .arg("--journal")
        .arg(&journal)
        .assert()
        .success();
    assert_ne!(tree(r), before);
    // The audit now finds nothing left to fix.
    let again = json_stdout(
        host_tune()
            .args(["--json", "--root"])
            .arg(r)
            .output()
            .unwrap(),
    );
    assert!(
        again["changes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["reboot"] == true),
        "{again}"
    );
    rollback(&journal).assert().success();
    assert_eq!(tree(r), before);
}

/// After a reboot the runtime values are already gone: rollback leaves
/// them and removes only what survives (the persisted files).
#[test]
fn after_a_reboot_only_persisted_files_are_rolled_back() {
    let fake = Fake::new();
    let r = fake.root();
    let journal = fake.file("j");
    fake.apply(&journal)
        .args(["--persist", "--only", "vm.swappiness"])
        .assert()
        .success();
    put(r, "/proc/sys/kernel/random/boot_id", "after-reboot\n");
    rollback(&journal)
        .assert()
        .success()
        .stderr(predicate::str::contains("skipped vm.swappiness"))
        .stderr(predicate::str::contains(
            "removed /etc/sysctl.d/90-cauda-tune.conf",
        ));
    assert_eq!(read(r, "/proc/sys/vm/swappiness"), "10");
    assert!(!r.join("etc/sysctl.d/90-cauda-tune.conf").exists());
}
