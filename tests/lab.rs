//! `cauda lab` as a newcomer runs it: one command, a directory of results,
//! the findings, and clear refusals.

use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;
use std::time::Duration;

mod common;
use common::{cauda, refused};

fn lab_dir_in(dir: &Path) -> PathBuf {
    let found: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("cauda-lab-"))
        })
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    found.into_iter().next().unwrap()
}

#[test]
fn quick_lab_writes_every_run_a_report_and_findings() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let out = cauda()
        .args(["lab", "--quick", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let lab = lab_dir_in(dir.path());
    for name in [
        "timer",
        "hiccup",
        "disk-randread-qd1",
        "disk-randwrite-qd32",
        "net-tcp-gap0",
        "net-tcp-gap500us",
    ] {
        let run = lab.join(format!("{name}.json"));
        let text = std::fs::read_to_string(&run).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(text.starts_with("{\"schema\":\"cauda.run/1\""), "{name}");
        assert!(lab.join(format!("{name}.log")).exists(), "{name} log");
    }
    let audit = common::read_json(&lab.join("audit.json"));
    assert_eq!(audit["schema"], "cauda.audit/1");
    let report = std::fs::read_to_string(lab.join("report.html")).unwrap();
    assert!(report.contains("<svg"), "the report has charts");
    let summary = std::fs::read_to_string(lab.join("summary.txt")).unwrap();
    assert_eq!(summary, stdout, "summary.txt is what was printed");
    let findings = summary
        .split("== Findings")
        .nth(1)
        .expect("a findings section");
    for n in ["1. ", "2. ", "3. "] {
        assert!(findings.contains(n), "{findings}");
    }
    for row in ["wakeup", "hiccup", "read", "write", "rtt"] {
        assert!(
            summary
                .lines()
                .any(|l| l.split_whitespace().any(|w| w == row)),
            "a table row for {row}: {summary}"
        );
    }
    assert!(!lab.join("disk.data").exists(), "the disk file is removed");
    assert!(
        std::fs::read_dir(&lab).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".hlog")),
        "progress logs are removed"
    );
}

#[test]
fn ctrl_c_keeps_what_was_measured_and_still_summarises() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let child = common::cauda_process()
        .args(["lab", "--quick", "--skip", "audit,disk,net", "--dir"])
        .arg(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The timer step (3 s) is running; interrupt the lab alone, as `kill`
    // would, so the lab must pass the signal on.
    std::thread::sleep(Duration::from_millis(1500));
    common::signal(child.id(), "-INT");
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    let lab = lab_dir_in(dir.path());
    let timer = std::fs::read_to_string(lab.join("timer.json")).unwrap();
    assert!(
        timer.contains("\"interrupted\":true"),
        "the step saved its run"
    );
    assert!(
        !lab.join("hiccup.json").exists(),
        "no step starts after Ctrl-C"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("== Findings"));
    // The summary says which step was cut short and which never ran.
    assert!(stdout.contains("* "), "{stdout}");
    assert!(stdout.contains("was interrupted (marked *)"), "{stdout}");
    assert!(
        stdout.contains("! not run (stopped before they began): "),
        "{stdout}"
    );
    assert!(stderr.contains("cauda lab: interrupted after"), "{stderr}");
    let summary = std::fs::read_to_string(lab.join("summary.txt")).unwrap();
    assert!(summary.contains("was interrupted"), "{summary}");
}

#[test]
fn bad_directories_are_refused_before_anything_runs() {
    refused(
        &["lab", "--dir", "/nonexistent-cauda-dir"],
        "give an existing directory",
    );
    let file = tempfile::NamedTempFile::new().unwrap();
    refused(
        &["lab", "--dir", &file.path().display().to_string()],
        "is not a directory",
    );
    refused(&["lab", "--skip", "everything"], "invalid value");
}

#[test]
fn a_filesystem_without_room_is_refused_with_what_is_needed() {
    if !common::is_root() {
        eprintln!("skipped: mounting a small tmpfs needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mounted = StdCommand::new("mount")
        .args(["-t", "tmpfs", "-o", "size=16m", "tmpfs"])
        .arg(dir.path())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !mounted {
        eprintln!("skipped: cannot mount a tmpfs here (a container?)");
        return;
    }
    let out = cauda()
        .args(["lab", "--quick", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let _ = StdCommand::new("umount").arg(dir.path()).status();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("MiB free"), "{stderr}");
    assert!(stderr.contains("--skip disk"), "{stderr}");
}

#[test]
fn lab_sweep_adds_a_capacity_step_with_its_finding() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let out = cauda()
        .args([
            "lab",
            "--quick",
            "--skip",
            "timer,hiccup,disk,net",
            "--sweep",
            "net",
        ])
        .args(["--sweep-objective", "p90<=20ms", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let lab = lab_dir_in(dir.path());
    assert!(stdout.contains("capacity, sweep: loopback TCP"), "{stdout}");
    let table = std::fs::read_to_string(lab.join("sweep-net.txt")).unwrap();
    assert!(table.contains("p90<=20ms"), "{table}");
    let sweeps: Vec<_> = std::fs::read_dir(lab.join("sweep-net")).unwrap().collect();
    assert_eq!(sweeps.len(), 1);
    // A bad objective is refused before anything runs.
    refused(
        &["lab", "--sweep", "net", "--sweep-objective", "p99<1"],
        "--sweep-objective",
    );
}
