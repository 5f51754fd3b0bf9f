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

/// Whether BPF programs can load here (root, BTF); prints why not, and
/// fails instead under CAUDA_REQUIRE_BPF=1.
fn bpf_ready() -> bool {
    let missing = if !common::is_root() {
        Some("needs root to load BPF programs")
    } else if !Path::new("/sys/kernel/btf/vmlinux").exists() {
        Some("the kernel has no BTF (/sys/kernel/btf/vmlinux)")
    } else {
        None
    };
    if let Some(why) = missing {
        let required = std::env::var("CAUDA_REQUIRE_BPF").is_ok_and(|v| v == "1");
        assert!(!required, "CAUDA_REQUIRE_BPF=1 but {why}");
        eprintln!("skipped: {why}");
    }
    missing.is_none()
}

/// A quick lab of `steps` only (the others skipped) with `--kernel blame`:
/// its stdout, stderr and directory.
fn blamed_lab(skip: &str, dir: &Path) -> (String, String, PathBuf) {
    let out = cauda()
        .args([
            "lab", "--quick", "--kernel", "blame", "--skip", skip, "--dir",
        ])
        .arg(dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stdout}\n{stderr}");
    (stdout, stderr, lab_dir_in(dir))
}

/// `lab --kernel blame`: the timer step's run has a blame section, and the
/// summary names the top cause of its tail with its share; as nobody, the
/// lab says why blame is skipped and runs the step anyway.
#[test]
fn lab_blame_names_the_top_cause_of_the_timer_steps_tail() {
    if !bpf_ready() {
        return;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let (stdout, stderr, lab) = blamed_lab("audit,hiccup,disk,net", dir.path());
    assert!(!stderr.contains("skipped"), "{stderr}");
    let run = common::read_json(&lab.join("timer.json"));
    assert_eq!(run["kernel"]["sources"][0], "blame", "{stderr}");
    assert!(
        run["blame"]["series"][0]["tag"] == "wakeup",
        "{}",
        run["blame"]
    );
    let section = stdout
        .split("== Why the tail")
        .nth(1)
        .unwrap_or_else(|| panic!("no why-the-tail section: {stdout}"));
    let line = section
        .lines()
        .find(|l| l.starts_with("  timer: 1 ms wake-ups (wakeup): "))
        .unwrap_or_else(|| panic!("no top cause for the timer step: {stdout}"));
    // "<cause>, <share> % of the slow operations' time — <meaning>"
    let (cause, rest) = line
        .trim_start_matches("  timer: 1 ms wake-ups (wakeup): ")
        .split_once(", ")
        .unwrap();
    assert!(cauda::model::blame::CAUSES.contains(&cause), "{line}");
    let share: f64 = rest.split(' ').next().unwrap().parse().unwrap();
    assert!(share > 0.0 && share <= 100.0, "{line}");
    assert!(
        rest.contains(" % of the slow operations' time — "),
        "{line}"
    );
    // Then, for a run-queue wait, the task that held the CPU longest (one
    // of the kept slowest operations' culprits); for `unexplained`, the
    // task the untraced switches followed; else nothing.
    let meaning = cauda::model::blame::cause_meaning(cause);
    let (_, after) = line.split_once(meaning).unwrap_or_else(|| panic!("{line}"));
    let culprits = run["blame"]["slowest"]
        .as_array()
        .unwrap()
        .iter()
        .any(|op| op["culprits"].as_array().is_some_and(|c| !c.is_empty()));
    let untraced = run["blame"]["untraced_after"]
        .as_array()
        .is_some_and(|u| !u.is_empty());
    match cause {
        // Named whenever the run has one to name.
        "run_queue" if culprits || !after.is_empty() => {
            let pid = after
                .split("(pid ")
                .nth(1)
                .and_then(|p| p.split(':').next())
                .unwrap_or_else(|| panic!("{line}"));
            let pid: u64 = pid.parse().unwrap_or_else(|_| panic!("{line}"));
            let named = run["blame"]["slowest"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|op| op["culprits"].as_array().into_iter().flatten())
                .any(|c| c["pid"].as_u64() == Some(pid));
            assert!(
                after.starts_with("; its CPU held longest by ") && named,
                "{line}"
            );
        }
        "unexplained" if untraced || !after.is_empty() => {
            assert!(
                after.contains(" the kernel did not trace came after "),
                "{line}"
            );
        }
        _ => assert!(after.is_empty(), "{line}"),
    }

    if !common::has_setpriv() {
        eprintln!("skipped (the unprivileged part): setpriv is missing");
        return;
    }
    let copy_dir = tempfile::tempdir().unwrap();
    let nobody_dir = common::writable_by_all();
    let out = common::as_nobody(&common::copy_for_nobody(copy_dir.path()))
        .args(["lab", "--quick", "--kernel", "blame"])
        .args(["--skip", "audit,timer,disk,net", "--dir"])
        .arg(nobody_dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("kernel series skipped"), "{stderr}");
    assert!(stderr.contains("CAP_BPF"), "{stderr}");
    assert!(
        stdout.contains("! kernel series skipped, the steps run without them: "),
        "the summary says it too: {stdout}"
    );
    assert!(!stdout.contains("== Why the tail"), "{stdout}");
    let run = common::read_json(&lab_dir_in(nobody_dir.path()).join("hiccup.json"));
    assert!(run["blame"].is_null() && run["kernel"].is_null());
}

/// `lab --kernel blame` with the disk steps: the QD1 reads are blamed, the
/// QD32 writes run without blame (it explains one operation at a time per
/// thread) and the summary says so, instead of the step failing.
#[test]
fn lab_blame_leaves_out_the_deeper_disk_queue_and_says_so() {
    if !bpf_ready() {
        return;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let (stdout, stderr, lab) = blamed_lab("audit,timer,hiccup,net", dir.path());
    assert!(!stdout.contains("failed"), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(
            "! disk: 4k random writes, QD32 ran without --kernel blame: --iodepth 32 keeps \
             several I/Os in flight on each thread"
        ),
        "{stdout}"
    );
    assert_eq!(
        stderr.matches("ran without --kernel blame").count(),
        1,
        "said once: {stderr}"
    );
    let reads = common::read_json(&lab.join("disk-randread-qd1.json"));
    assert!(reads["blame"].is_object(), "the QD1 reads are blamed");
    let writes = common::read_json(&lab.join("disk-randwrite-qd32.json"));
    assert!(writes["blame"].is_null() && writes["kernel"].is_null());
}
