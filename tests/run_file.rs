//! The run file is written exactly once per run: the session lets the probe
//! complete it (faults, warnings, its own section) before one atomic write,
//! on success, after Ctrl-C and after a failure alike.
//!
//! Watched from outside with inotify: each atomic write of the run file is
//! one rename onto its name; a write into the file in place would show as
//! a modification of that name. A run must show one rename and none.
// inotify has no safe wrapper in the dependencies; the calls are confined
// to `Watch` below.
#![allow(unsafe_code)]

mod common;
mod netsupport;

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Command as StdCommand, Stdio};
use std::time::Duration;

use common::cauda;
use netsupport::Responder;

/// An inotify watch on one directory for renames onto a name and in-place
/// modifications of it.
struct Watch {
    fd: i32,
}

impl Watch {
    fn new(dir: &Path) -> Watch {
        // SAFETY: plain syscalls; the fd is owned by the Watch and closed on drop.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        assert!(
            fd >= 0,
            "inotify_init1: {}",
            std::io::Error::last_os_error()
        );
        let path = CString::new(dir.as_os_str().as_bytes()).unwrap();
        // SAFETY: `path` is a valid NUL-terminated string for the call's duration.
        let wd = unsafe {
            libc::inotify_add_watch(fd, path.as_ptr(), libc::IN_MOVED_TO | libc::IN_MODIFY)
        };
        assert!(
            wd >= 0,
            "inotify_add_watch: {}",
            std::io::Error::last_os_error()
        );
        Watch { fd }
    }

    /// How many renames onto `name`, and how many in-place modifications
    /// of it, since the watch began.
    fn writes_of(&self, name: &str) -> (usize, usize) {
        let (mut renames, mut modified) = (0, 0);
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            // SAFETY: `buf` is valid for `buf.len()` bytes.
            let n = unsafe { libc::read(self.fd, buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                break;
            }
            let mut at = 0;
            let header = std::mem::size_of::<libc::inotify_event>();
            while at + header <= n as usize {
                // SAFETY: the kernel wrote a whole event at `at`; read_unaligned
                // copes with any alignment.
                let event: libc::inotify_event =
                    unsafe { std::ptr::read_unaligned(buf[at..].as_ptr().cast()) };
                let raw = &buf[at + header..at + header + event.len as usize];
                let event_name = raw.split(|&b| b == 0).next().unwrap_or(&[]);
                if event_name == name.as_bytes() {
                    if event.mask & libc::IN_MOVED_TO != 0 {
                        renames += 1;
                    }
                    if event.mask & libc::IN_MODIFY != 0 {
                        modified += 1;
                    }
                }
                at += header + event.len as usize;
            }
        }
        (renames, modified)
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        // SAFETY: the fd is ours and closed once.
        unsafe { libc::close(self.fd) };
    }
}

/// Runs `cauda ARGS -q -o DIR/run.json` and returns its exit code and the
/// renames onto run.json and modifications of it.
fn writes_of_a_run(args: &[&str]) -> (Option<i32>, (usize, usize)) {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run.json");
    let watch = Watch::new(dir.path());
    let out = cauda()
        .args(args)
        .args(["-q", "-o"])
        .arg(&run)
        .output()
        .unwrap();
    assert!(run.exists(), "{}", String::from_utf8_lossy(&out.stderr));
    (out.status.code(), watch.writes_of("run.json"))
}

#[test]
fn a_timer_run_is_written_once() {
    assert_eq!(
        writes_of_a_run(&["timer", "--runtime", "1s"]),
        (Some(0), (1, 0))
    );
}

#[test]
fn a_disk_run_with_its_section_is_written_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cauda.dat");
    let file = file.to_str().unwrap();
    let args = [
        "disk",
        "--file",
        file,
        "--size",
        "8M",
        "--rw",
        "randrw",
        "--buffered",
        "--runtime",
        "1s",
    ];
    assert_eq!(writes_of_a_run(&args), (Some(0), (1, 0)));
}

#[test]
fn a_net_run_with_its_accounting_is_written_once() {
    assert_eq!(
        writes_of_a_run(&["net", "--loopback", "--runtime", "1s"]),
        (Some(0), (1, 0))
    );
}

#[test]
fn a_net_run_whose_responder_dies_is_written_once_with_its_accounting() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run.json");
    let watch = Watch::new(dir.path());
    let mut server = Responder::start(&[]);
    let client = StdCommand::new(assert_cmd::cargo::cargo_bin("cauda"))
        .args(["net", "--connect", &server.addr.to_string()])
        .args(["--runtime", "20s", "-q", "-o"])
        .arg(&run)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(800));
    server.child.kill().unwrap();
    let _ = server.child.wait();
    let out = client.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(watch.writes_of("run.json"), (1, 0));
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&run).unwrap()).unwrap();
    assert!(doc["faults"]["answered"].as_u64().unwrap() > 0, "{doc}");
}

#[test]
fn a_disk_run_stopped_by_ctrl_c_is_written_once_with_its_section() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run.json");
    let file = dir.path().join("cauda.dat");
    let watch = Watch::new(dir.path());
    let child = StdCommand::new(assert_cmd::cargo::cargo_bin("cauda"))
        .args(["disk", "--file"])
        .arg(&file)
        .args(["--size", "8M", "--buffered", "--runtime", "30s", "-q", "-o"])
        .arg(&run)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let status = StdCommand::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(watch.writes_of("run.json"), (1, 0));
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&run).unwrap()).unwrap();
    assert_eq!(doc["interrupted"], true);
    assert!(doc["disk"]["ios"]["read"].as_u64().unwrap() > 0, "{doc}");
}
