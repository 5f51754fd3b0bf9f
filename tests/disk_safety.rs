//! `cauda disk` safety: writes to files cauda did not create and to block
//! devices holding data are refused (and leave them untouched), reads are
//! allowed; O_DIRECT refusals, read-only and full filesystems, permissions.
//!
//! The device tests need root and loop devices (`losetup`, `mkfs.ext4`,
//! `mount`); where those are missing they print why they are skipped. Every
//! loop device and mount they make is removed again, also when an assertion
//! fails.

mod common;

use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use common::loopdev::Loop;
use common::{
    as_nobody, cauda, copy_for_nobody, has_setpriv, is_root, read_json, refused, sh, unmount,
};

#[test]
fn writes_to_a_file_cauda_did_not_create_need_force() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("theirs.dat");
    let data: Vec<u8> = (0..1 << 20).map(|i: u32| (i % 251) as u8).collect();
    std::fs::write(&file, &data).unwrap();
    let args = |rw: &str| -> Vec<String> {
        [
            "disk",
            "--file",
            file.to_str().unwrap(),
            "--rw",
            rw,
            "--runtime",
            "200ms",
            "-q",
            "-o",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([dir.path().join(format!("{rw}.json")).display().to_string()])
        .collect()
    };
    refused(&args("randwrite"), "cauda did not create it");
    refused(&args("randrw"), "pass --force");
    assert_eq!(std::fs::read(&file).unwrap(), data, "untouched");
    // Reads are always allowed.
    cauda().args(args("randread")).assert().success();
    let mut forced = args("write");
    forced.push("--force".into());
    cauda().args(&forced).assert().success();
    assert_ne!(std::fs::read(&file).unwrap(), data);
}

#[test]
fn a_filesystem_refusing_o_direct_suggests_buffered_and_one_without_xattrs_uses_the_registry() {
    // ramfs refuses O_DIRECT (tmpfs accepts it since Linux 6.6).
    if !is_root() {
        eprintln!("skipped: mounting ramfs needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let at = dir.path().join("ram");
    std::fs::create_dir(&at).unwrap();
    sh("mount", &["-t", "ramfs", "ramfs", at.to_str().unwrap()]).unwrap();
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            unmount(&self.0);
        }
    }
    let _guard = Unmount(at.clone());
    let f = at.join("t.dat");
    let out = dir.path().join("o.json");
    let f = f.to_str().unwrap();
    let direct = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(at.join("probe"));
    assert!(direct.is_err(), "ramfs took O_DIRECT");
    // ramfs has no extended attributes either: the mark goes to the registry.
    let state = dir.path().join("state");
    let disk = |extra: &[&str]| {
        let mut c = cauda();
        c.env("XDG_STATE_HOME", &state)
            .args([
                "disk",
                "--file",
                f,
                "--size",
                "1M",
                "--runtime",
                "200ms",
                "-q",
                "-o",
            ])
            .arg(&out)
            .args(extra);
        c.assert()
    };
    disk(&[])
        .code(2)
        .stderr(predicates::str::contains("add --buffered"));
    assert!(
        !Path::new(f).exists(),
        "the file made for the refused run is gone"
    );
    assert!(!state.exists(), "and never registered");
    disk(&["--buffered"]).success();
    let run = read_json(&out);
    assert_eq!(run["disk"]["mark"], "registry");
    assert_eq!(run["disk"]["direct"], false);
    let registry = std::fs::read_to_string(state.join("cauda/own-files")).unwrap();
    assert_eq!(registry.lines().count(), 1);
    assert!(registry.trim_end().ends_with("/ram/t.dat"), "{registry}");
    // Known by the registry, the file may be written without --force…
    disk(&["--buffered", "--rw", "randwrite"]).success();
    // …while a file beside it that cauda did not create may not.
    let theirs = at.join("theirs.dat");
    std::fs::write(&theirs, vec![7u8; 1 << 20]).unwrap();
    cauda()
        .env("XDG_STATE_HOME", &state)
        .args(["disk", "--buffered", "--rw", "randwrite", "--file"])
        .arg(&theirs)
        .arg("-o")
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("cauda did not create it"));
}

fn disk_on(dev: &str, rw: &str, extra: &[&str], out: &Path) -> assert_cmd::assert::Assert {
    cauda()
        .args([
            "disk",
            "--device",
            dev,
            "--rw",
            rw,
            "--runtime",
            "200ms",
            "-q",
        ])
        .args(extra)
        .arg("-o")
        .arg(out)
        .assert()
}

#[test]
fn a_device_with_a_filesystem_is_refused_and_left_untouched() {
    let Some(lo) = Loop::new(32, true) else {
        return;
    };
    let out = lo.dir.path().join("o.json");
    let before = lo.backing();
    disk_on(&lo.dev, "randwrite", &[], &out)
        .code(2)
        .stderr(predicates::str::contains("an ext2/3/4 filesystem"))
        .stderr(predicates::str::contains("--force-destroy-data"));
    disk_on(&lo.dev, "write", &["--precondition", "1"], &out).code(2);
    assert!(lo.backing() == before, "the device is untouched");
    disk_on(&lo.dev, "randread", &[], &out).success();
    disk_on(&lo.dev, "randwrite", &["--force-destroy-data"], &out).success();
    assert!(lo.backing() != before, "forced, the run wrote");
}

#[test]
fn a_blank_device_may_be_written_and_a_mounted_one_not() {
    let Some(blank) = Loop::new(16, false) else {
        return;
    };
    let out = blank.dir.path().join("o.json");
    disk_on(&blank.dev, "randwrite", &["--iodepth", "8"], &out).success();
    let run = read_json(&out);
    assert_eq!(run["disk"]["is_device"], true);
    assert!(run["disk"]["ios"]["write"].as_u64().unwrap() > 0);
    assert_eq!(run["disk"]["logical_block"], 512);

    let Some(mut fs) = Loop::new(32, true) else {
        return;
    };
    let at = fs.mount("rw");
    let out = fs.dir.path().join("o.json");
    disk_on(&fs.dev, "randwrite", &["--force-destroy-data"], &out)
        .code(2)
        .stderr(predicates::str::contains("busy"));
    disk_on(&fs.dev, "randwrite", &[], &out)
        .code(2)
        .stderr(predicates::str::contains(format!(
            "mounted on {}",
            at.display()
        )));
}

#[test]
fn read_only_and_full_filesystems() {
    let Some(mut lo) = Loop::new(16, true) else {
        return;
    };
    let at = lo.mount("ro");
    let out = lo.dir.path().join("o.json");
    cauda()
        .args(["disk", "--file"])
        .arg(at.join("new.dat"))
        .args(["--size", "1M", "-q", "-o"])
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("read-only"));
    sh("mount", &["-o", "remount,rw", at.to_str().unwrap()]).unwrap();
    // A sparse file larger than the filesystem: writes allocate until ENOSPC.
    let sparse = at.join("sparse.dat");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    let watch = common::inotify::Watch::new(lo.dir.path());
    cauda()
        .args(["disk", "--file"])
        .arg(&sparse)
        .args([
            "--rw",
            "write",
            "--bs",
            "1M",
            "--force",
            "--runtime",
            "20s",
            "-q",
            "-o",
        ])
        .arg(&out)
        .assert()
        .code(1)
        .stderr(predicates::str::contains("the disk is full (ENOSPC)"))
        .stderr(predicates::str::contains("saved in"));
    // A run stopped by a full disk is written once, with its section.
    assert_eq!(watch.writes_of("o.json"), (1, 0));
    let run = read_json(&out);
    assert!(run["faults"]["write ENOSPC"].as_u64().unwrap() >= 1);
    assert!(
        run["disk"]["ios"]["write"].as_u64().unwrap() >= 5,
        "what was written before is kept"
    );
    assert_eq!(run["interrupted"], false);
    assert!(
        run["duration_ns"].as_u64().unwrap() < 20_000_000_000,
        "stopped early"
    );
}

#[test]
fn no_permission_is_bad_input_naming_the_target() {
    let Some(lo) = Loop::new(8, false) else {
        return;
    };
    if !has_setpriv() {
        eprintln!("skipped: setpriv is missing to drop privileges");
        return;
    }
    // A copy of the binary nobody may run, and a directory nobody may write.
    let dir = tempfile::tempdir().unwrap();
    let copy = copy_for_nobody(dir.path());
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let private = dir.path().join("private.dat");
    std::fs::write(&private, vec![0u8; 1 << 20]).unwrap();
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = dir.path().join("o.json");
    for target in [
        ["--device", lo.dev.as_str()],
        ["--file", private.to_str().unwrap()],
    ] {
        let output = as_nobody(&copy)
            .args([
                "disk",
                target[0],
                target[1],
                "--runtime",
                "100ms",
                "-q",
                "-o",
            ])
            .arg(&out)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains(&format!("{} {}: permission denied", target[0], target[1])),
            "{stderr}"
        );
    }
}
