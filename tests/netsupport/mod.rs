//! Helpers shared by the `net` and `serve` tests: a `cauda serve` process
//! on an ephemeral loopback port, and a raw client speaking the protocol.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, ChildStderr, Command as StdCommand, Stdio};
use std::time::Duration;

use cauda::probe::net::protocol::{Header, Kind};

/// A `cauda serve` process on an ephemeral loopback port, killed on drop.
pub struct Responder {
    pub child: Child,
    pub addr: SocketAddr,
    /// The rest of its stderr (kept open: its summary is written there).
    stderr: BufReader<ChildStderr>,
}

impl Responder {
    pub fn start(extra: &[&str]) -> Responder {
        let mut child = StdCommand::new(assert_cmd::cargo::cargo_bin("cauda"))
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(extra)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        stderr.read_line(&mut line).unwrap();
        // "cauda serve: TCP on 127.0.0.1:PORT (max …"
        let addr = line
            .split(" on ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .parse()
            .unwrap();
        Responder {
            child,
            addr,
            stderr,
        }
    }

    /// Stops it as Ctrl-C would and returns what it printed from then on
    /// (its counters).
    pub fn stop_and_summary(mut self) -> String {
        let pid = self.pid();
        let status = StdCommand::new("kill").args(["-INT", &pid]).status();
        assert!(status.is_ok_and(|s| s.success()), "kill -INT {pid}");
        let mut rest = String::new();
        self.stderr.read_to_string(&mut rest).unwrap();
        rest
    }

    pub fn pid(&self) -> String {
        self.child.id().to_string()
    }

    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        status
            .lines()
            .find(|l| l.starts_with("VmRSS:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .unwrap()
            .parse()
            .unwrap()
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn request(len: u32, seq: u64) -> Vec<u8> {
    let mut frame = vec![0u8; len as usize];
    Header {
        len,
        kind: Kind::Request,
        seq,
        sent_ns: 7,
        response_size: len,
    }
    .encode(&mut frame);
    frame
}

/// One well-formed TCP exchange on a fresh connection: the responder still serves.
pub fn serves(addr: SocketAddr) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_secs(2)) else {
        return false;
    };
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    if s.write_all(&request(100, 42)).is_err() {
        return false;
    }
    let mut reply = [0u8; 100];
    s.read_exact(&mut reply).is_ok()
        && Header::decode(&reply, 100).is_ok_and(|h| h.seq == 42 && h.kind == Kind::Reply)
}

/// Waits until the responder closes `s` (EOF or reset); false after 10 s.
pub fn closed_by_peer(s: &mut TcpStream) -> bool {
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut buf = [0u8; 256];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
            Err(_) => return true,
        }
    }
}
