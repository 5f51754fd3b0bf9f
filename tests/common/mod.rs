//! Helpers shared by the CLI test files: running cauda, reading what it
//! wrote, and the host capabilities a test may need.
#![allow(dead_code)]

pub mod bpf;
pub mod cgroup;
pub mod hog;
pub mod inotify;
pub mod kafka;
pub mod loopdev;
pub mod tuning;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Output};

use assert_cmd::Command;
use serde_json::Value;

/// The cauda binary under test.
pub fn cauda() -> Command {
    Command::cargo_bin("cauda").unwrap()
}

/// The cauda binary as a plain process, for a run the test signals or
/// reads while it goes.
pub fn cauda_process() -> StdCommand {
    StdCommand::new(assert_cmd::cargo::cargo_bin("cauda"))
}

/// Runs cauda with `args` and expects exit 2 with `needle` on stderr.
pub fn refused<S: AsRef<OsStr>>(args: &[S], needle: &str) {
    ended_saying(args, 2, &[needle]);
}

/// Runs `cauda ARGS` and checks how it ended ([`ended`]); returns its stderr.
pub fn ended_saying<S: AsRef<OsStr>>(args: &[S], code: i32, needles: &[&str]) -> String {
    ended(&cauda().args(args).output().unwrap(), code, needles)
}

/// Checks that a finished cauda exited with `code` and that its stderr
/// says each of `needles`; returns the stderr.
pub fn ended(out: &Output, code: i32, needles: &[&str]) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{stderr}");
    for needle in needles {
        assert!(stderr.contains(needle), "no '{needle}' in: {stderr}");
    }
    stderr
}

/// A file below `tests/fixtures`.
pub fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(path)
}

/// The tree `scripts/capture_host_tree.sh` captured on this repository's VM.
pub fn captured() -> PathBuf {
    fixture("host/vm-6.18")
}

/// A copy of the captured tree to edit.
pub fn copy_of_captured() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let status = StdCommand::new("cp")
        .arg("-a")
        .arg(format!("{}/.", captured().display()))
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    dir
}

/// The JSON document in the file at `path` (a run file, a plan, …).
pub fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Runs `command -o OUT`, which must succeed; the run file it saved.
pub fn saved_run(command: &mut Command, out: &Path) -> Value {
    command.arg("-o").arg(out).assert().success();
    read_json(out)
}

/// `cauda timer ARGS -q -o OUT`, which must succeed: the run file.
pub fn timer_run(out: &Path, args: &[&str]) -> Value {
    saved_run(cauda().arg("timer").args(args).arg("-q"), out)
}

/// A finished command's output; panics with its stderr when it failed.
pub fn succeeded(out: Output) -> Output {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The JSON a finished command printed on stdout; panics with its stderr
/// when it failed.
pub fn json_stdout(out: Output) -> Value {
    serde_json::from_slice(&succeeded(out).stdout).unwrap()
}

/// `cauda host audit --json --profile PROFILE --root ROOT`: its document.
pub fn audit(root: &Path, profile: &str) -> Value {
    json_stdout(
        cauda()
            .args(["host", "audit", "--json", "--profile", profile, "--root"])
            .arg(root)
            .output()
            .unwrap(),
    )
}

/// `cauda analyze FILE --json EXTRA…`, which must succeed: its document.
pub fn analyze_json(path: &Path, extra: &[&str]) -> Value {
    let out = cauda()
        .arg("analyze")
        .arg(path)
        .arg("--json")
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `cauda analyze FILE --json --percentiles 50,90,99,99.9 EXTRA…`: the
/// series as (tag, summary).
pub fn summaries(path: &Path, extra: &[&str]) -> Vec<(String, Value)> {
    let args = [&["--percentiles", "50,90,99,99.9"], extra].concat();
    analyze_json(path, &args)["inputs"][0]["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["tag"].as_str().unwrap().to_string(), s["summary"].clone()))
        .collect()
}

/// The summary of the series tagged `tag`.
pub fn series<'a>(all: &'a [(String, Value)], tag: &str) -> &'a Value {
    &all.iter()
        .find(|(t, _)| t == tag)
        .unwrap_or_else(|| panic!("no series {tag}: {all:?}"))
        .1
}

/// The tags of a run file's series, in order.
pub fn series_tags(run: &Value) -> Vec<&str> {
    run["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["tag"].as_str().unwrap())
        .collect()
}

/// Operations a run's schedule offered, all intervals (its `offered`
/// section).
pub fn offered_total(run: &Value) -> u64 {
    run["offered"]["offered"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .sum()
}

/// How many values a run file's series recorded: its intervals' counts.
pub fn recorded(series: &Value) -> u64 {
    series["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["count"].as_u64().unwrap())
        .sum()
}

/// A validator for `schemas/NAME`, which may refer to the run schema.
pub fn validator(name: &str) -> jsonschema::Validator {
    let schema = |name: &str| -> Value {
        read_json(
            &Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("schemas")
                .join(name),
        )
    };
    jsonschema::options()
        .with_resource(
            "https://cauda.dev/schemas/run.schema.json",
            jsonschema::Resource::from_contents(schema("run.schema.json")).unwrap(),
        )
        .build(&schema(name))
        .unwrap()
}

/// Asserts that `doc` is valid, listing every error and where it is.
pub fn assert_valid(validator: &jsonschema::Validator, doc: &Value) {
    let errors: Vec<String> = validator
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

/// Writes `text` to `path` below the fake root `root` (a `/proc` or `/sys`
/// file), making its directories.
pub fn put(root: &Path, path: &str, text: &str) {
    let p = root.join(path.trim_start_matches('/'));
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// Runs a system tool: its trimmed stdout, or what failed.
pub fn sh(cmd: &str, args: &[&str]) -> Result<String, String> {
    let out = StdCommand::new(cmd)
        .args(args)
        .output()
        .map_err(|e| format!("{cmd}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(format!(
            "{cmd} {args:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Unmounts what a test mounted at `at`. The kernel drops an exited
/// process's io_uring file references asynchronously, so the mount can be
/// busy for a moment: tries for 5 s, then detaches it lazily.
pub fn unmount(at: &Path) {
    let at = at.to_str().unwrap();
    let mut tries = 0;
    while let Err(e) = sh("umount", &[at]) {
        tries += 1;
        if tries == 50 {
            eprintln!("cleanup: {e}; detaching lazily");
            let _ = sh("umount", &["-l", at]);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// Whether the tests run as root (the effective uid, read from /proc).
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
}

/// Sends `signal` (`-INT`, `-STOP`, …) to the process `pid`.
pub fn signal(pid: u32, signal: &str) {
    assert!(
        StdCommand::new("kill")
            .args([signal, &pid.to_string()])
            .status()
            .unwrap()
            .success()
    );
}

/// Whether `setpriv` is here to drop root to nobody.
pub fn has_setpriv() -> bool {
    StdCommand::new("setpriv").arg("--version").output().is_ok()
}

/// Copies cauda into `dir`, where nobody may run it (`dir` becomes 0755);
/// the copy's path, for [`as_nobody`].
pub fn copy_for_nobody(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let copy = dir.join("cauda");
    std::fs::copy(assert_cmd::cargo::cargo_bin("cauda"), &copy).unwrap();
    for path in [dir, &copy] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    copy
}

/// A temporary directory anyone may write (0777): where a run as nobody
/// saves its files.
pub fn writable_by_all() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    dir
}

/// `setpriv` running `program` as nobody, with no capabilities.
pub fn as_nobody(program: &Path) -> StdCommand {
    let mut c = StdCommand::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .args(["--inh-caps=-all", "--bounding-set=-all"])
        .arg(program);
    c
}

/// A 3 s `timer` run in 100 ms intervals written to `path`, frozen
/// (SIGSTOP) for 300 ms in its middle: the stall every analysis should find.
pub fn frozen_timer_run(path: &Path) {
    let mut child = cauda_process()
        .args([
            "timer",
            "--runtime",
            "3s",
            "--interval-length",
            "100ms",
            "-q",
            "-o",
        ])
        .arg(path)
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1_500));
    signal(child.id(), "-STOP");
    std::thread::sleep(std::time::Duration::from_millis(300));
    signal(child.id(), "-CONT");
    assert!(child.wait().unwrap().success());
}
