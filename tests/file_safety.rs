//! Files in a shared directory, as a hostile local user or a careless
//! operator would arrange them. Outputs: a link planted at the temporary
//! name, outputs that are links, devices or FIFOs — cauda never writes
//! through them, `--force` or not, and says what to do without suggesting
//! `--force`. Inputs: FIFOs and devices, which may never end, are refused
//! at once with the reason instead of blocking or filling memory.

mod common;

use std::process::Command as StdCommand;

use common::{cauda, fixture, refused};
use predicates::prelude::PredicateBooleanExt;

/// Runs `cauda ARGS` in a new directory where a link to a file holding
/// "precious" was planted at `PLANTED-PID` (the shell `exec`s cauda, so
/// the PID is cauda's): whether cauda succeeded, the directory, and the
/// victim's text afterwards.
fn beside_a_planted_link(planted: &str, args: &str) -> (bool, tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let script = format!(
        "cd {dir} && ln -s {victim} {planted}$$ && exec {cauda} {args}",
        dir = dir.path().display(),
        victim = victim.display(),
        cauda = assert_cmd::cargo::cargo_bin("cauda").display(),
    );
    let status = StdCommand::new("sh")
        .args(["-c", &script])
        .status()
        .unwrap();
    let left = std::fs::read_to_string(&victim).unwrap();
    (status.success(), dir, left)
}

#[test]
fn a_link_planted_at_the_temporary_name_does_not_redirect_the_write() {
    // The attack from the review: the temporary name is `.NAME.tmp-PID`.
    let input = fixture("fio/lat_offset_clat.1.log");
    let args = format!("convert {} --to json -o out.json", input.display());
    let (ok, dir, victim) = beside_a_planted_link(".out.json.tmp-", &args);
    assert!(ok);
    assert_eq!(victim, "precious");
    let out = std::fs::read_to_string(dir.path().join("out.json")).unwrap();
    assert!(out.starts_with("{\"schema\":\"cauda.run/"), "{out}");
}

#[test]
fn outputs_that_are_not_regular_files_are_refused_even_with_force() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim.hlog");
    std::fs::write(&victim, "precious").unwrap();
    let link = dir.path().join("link.hlog");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let link = link.to_str().unwrap();
    let input = fixture("fio/lat_offset_clat.1.log");
    let input = input.to_str().unwrap();
    let runs: [&[&str]; 4] = [
        &["timer", "--runtime", "1s", "-o", "/dev/null", "--force"],
        &["timer", "--runtime", "1s", "--hlog", link, "--force"],
        &["convert", input, "--to", "hlog", "-o", link, "--force"],
        &["convert", input, "--to", "csv", "-o", "/dev/null"],
    ];
    for args in runs {
        let out = cauda().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("cauda writes only regular files"),
            "{stderr}"
        );
        assert!(!stderr.contains("--force"), "{stderr}");
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    refused(
        &["merge", input, "-o", "/dev/null"],
        "is a character device",
    );
}

#[test]
fn inputs_that_may_never_end_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    assert!(
        StdCommand::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let fifo = fifo.to_str().unwrap();
    for (args, kind) in [
        (vec!["analyze", fifo], "is a FIFO"),
        (vec!["analyze", "/dev/zero"], "is a character device"),
        (
            vec!["host", "rollback", "--journal", "/dev/zero"],
            "is a character device",
        ),
        (
            vec!["host", "tune", "--profile", "latency", "--from", fifo],
            "is a FIFO",
        ),
    ] {
        // The test harness's own timeout would catch a hang; a refusal is immediate.
        refused(&args, kind);
    }
}

#[test]
fn a_link_planted_at_the_write_check_name_neither_blocks_nor_redirects() {
    // The directory check used `.cauda-write-check-PID`: a link planted
    // there made every run in the directory fail "File exists".
    let args = "timer --runtime 300ms -q -o out.json";
    let (ok, dir, victim) = beside_a_planted_link(".cauda-write-check-", args);
    assert!(ok);
    assert_eq!(victim, "precious");
    assert!(dir.path().join("out.json").is_file());
}

#[test]
fn a_result_whose_filesystem_is_full_is_saved_elsewhere_and_the_error_says_where() {
    let Some(mut lo) = common::loopdev::Loop::new(8, true) else {
        return;
    };
    let at = lo.mount("rw");
    // Filled to the last block (root may use the reserved ones too).
    let _ = common::sh(
        "dd",
        &[
            "if=/dev/zero",
            &format!("of={}", at.join("filler").display()),
            "bs=4k",
            "status=none",
        ],
    );
    let rescue = tempfile::tempdir().unwrap();
    let out = at.join("run.json");
    let assert = cauda()
        .env("TMPDIR", rescue.path())
        .args(["timer", "--runtime", "500ms", "-q", "-o"])
        .arg(&out)
        .assert()
        .code(1)
        .stderr(predicates::str::contains("the filesystem is full"))
        .stderr(predicates::str::contains("saved in"));
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    let saved: Vec<_> = std::fs::read_dir(rescue.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(saved.len(), 1, "{stderr}");
    assert!(stderr.contains(&saved[0].display().to_string()), "{stderr}");
    // The rescued file is the whole run: it analyses like any run file.
    let run = common::read_json(&saved[0]);
    assert!(common::recorded(&run["series"][0]) > 100);
    assert!(!out.exists(), "no partial file on the full filesystem");
    assert_eq!(
        std::fs::read_dir(&at).unwrap().count(),
        2,
        "only the filler (and lost+found)"
    );
}

#[test]
fn a_disk_file_that_is_a_link_is_never_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim.dat");
    std::fs::write(&victim, vec![7u8; 1 << 20]).unwrap();
    let link = dir.path().join("link.dat");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let out = dir.path().join("o.json");
    for force in [false, true] {
        let mut c = cauda();
        c.args([
            "disk",
            "--rw",
            "randwrite",
            "--runtime",
            "200ms",
            "-q",
            "--file",
        ])
        .arg(&link)
        .arg("-o")
        .arg(&out);
        if force {
            c.arg("--force");
        }
        c.assert()
            .code(2)
            .stderr(predicates::str::contains("is a symbolic link"))
            .stderr(predicates::str::contains("--force").not());
    }
    assert_eq!(std::fs::read(&victim).unwrap(), vec![7u8; 1 << 20]);
    // A link to nothing: said so, not "File exists".
    let dangling = dir.path().join("dangling.dat");
    std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
    cauda()
        .args(["disk", "--runtime", "200ms", "-q", "--file"])
        .arg(&dangling)
        .arg("-o")
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("which does not exist"));
    assert!(!dir.path().join("nowhere").exists());
}
