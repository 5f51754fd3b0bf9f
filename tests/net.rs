//! `cauda net` and `cauda serve` as users meet them: loopback runs in both
//! protocols, message accounting against a responder that misbehaves on
//! purpose, a responder frozen with SIGSTOP, and a responder that must
//! survive clients that misbehave. Everything stays on 127.0.0.1.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::path::Path;
use std::process::{Child, Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use cauda::probe::net::protocol::{HEADER_LEN, Header, Kind};
use predicates::prelude::*;
use serde_json::Value;

mod common;
use common::{cauda, refused};

/// Both TCP engines of `cauda serve` must survive the same abuse.
const ENGINES: [&str; 2] = ["threads", "epoll"];

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// A `cauda serve` process on an ephemeral loopback port, killed on drop.
struct Responder {
    child: Child,
    addr: SocketAddr,
}

impl Responder {
    fn start(extra: &[&str]) -> Responder {
        let mut child = StdCommand::new(assert_cmd::cargo::cargo_bin("cauda"))
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(extra)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stderr.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        // "cauda serve: TCP on 127.0.0.1:PORT (max …"
        let addr = line
            .split(" on ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .parse()
            .unwrap();
        Responder { child, addr }
    }

    fn pid(&self) -> String {
        self.child.id().to_string()
    }

    fn signal(&self, signal: &str) {
        assert!(
            StdCommand::new("kill")
                .args([signal, &self.pid()])
                .status()
                .unwrap()
                .success()
        );
    }

    fn rss_kib(&self) -> u64 {
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

fn request(len: u32, seq: u64) -> Vec<u8> {
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
fn serves(addr: SocketAddr) -> bool {
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
fn closed_by_peer(s: &mut TcpStream) -> bool {
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

fn net_run(dir: &Path, name: &str, args: &[&str]) -> Value {
    let run = dir.join(name);
    cauda()
        .arg("net")
        .args(args)
        .arg("-o")
        .arg(&run)
        .assert()
        .success()
        .stderr(predicate::str::contains("messages:"));
    read_json(&run)
}

fn fault(doc: &Value, key: &str) -> u64 {
    doc["faults"][key]
        .as_u64()
        .unwrap_or_else(|| panic!("no fault {key}"))
}

fn summary<'a>(doc: &'a Value, tag: &str) -> &'a Value {
    &doc["summary"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["tag"] == tag)
        .unwrap_or_else(|| panic!("no series {tag}"))["summary"]
}

fn assert_accounted(doc: &Value) {
    let sent = fault(doc, "sent");
    assert!(sent > 0);
    assert_eq!(
        fault(doc, "answered") + fault(doc, "lost") + fault(doc, "in_flight"),
        sent,
        "every message is answered, lost or in flight: {}",
        doc["faults"]
    );
}

#[test]
fn loopback_runs_in_both_protocols_record_the_full_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    for proto in ["tcp", "udp"] {
        let doc = net_run(
            dir.path(),
            &format!("{proto}.json"),
            &[
                "--loopback",
                "--proto",
                proto,
                "--runtime",
                "1s",
                "--report-half",
                "-q",
            ],
        );
        assert_eq!(doc["probe"], "net");
        assert_eq!(doc["load"], "closed-loop");
        assert_eq!(doc["parameters"]["proto"], proto);
        assert_eq!(doc["parameters"]["loopback"], true);
        assert_accounted(&doc);
        assert_eq!(fault(&doc, "lost"), 0);
        assert_eq!(fault(&doc, "in_flight"), 0);
        let rtt = summary(&doc, "rtt");
        assert_eq!(rtt["count"].as_u64(), Some(fault(&doc, "answered")));
        let half = summary(&doc, "rtt/2");
        assert_eq!(half["count"], rtt["count"]);
        // rtt/2 is derived from rtt, value by value.
        assert_eq!(
            half["max"].as_u64().unwrap(),
            rtt["max"].as_u64().unwrap() / 2
        );
        assert!(
            doc["warnings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|w| w["message"].as_str().unwrap().contains("rtt/2"))
        );
    }
}

#[test]
fn gap_and_busy_poll_runs_keep_the_accounting() {
    let dir = tempfile::tempdir().unwrap();
    // --gap: every ping waits at least 2 ms after the previous reply.
    let doc = net_run(
        dir.path(),
        "gap.json",
        &["--loopback", "--runtime", "500ms", "--gap", "2ms", "-q"],
    );
    assert_accounted(&doc);
    assert!(fault(&doc, "sent") <= 251, "{}", doc["faults"]);
    assert_eq!(doc["parameters"]["gap_ns"], 2_000_000);
    // --busy-poll: non-blocking sockets, spinning.
    let doc = net_run(
        dir.path(),
        "spin.json",
        &[
            "--loopback",
            "--proto",
            "udp",
            "--runtime",
            "500ms",
            "--busy-poll",
            "-q",
        ],
    );
    assert_accounted(&doc);
    assert_eq!(fault(&doc, "lost"), 0);
    assert_eq!(doc["parameters"]["busy_poll"], true);
}

#[test]
fn a_responder_dropping_every_tenth_message_is_counted_exactly() {
    let dir = tempfile::tempdir().unwrap();
    for (proto, flag) in [("udp", "--udp"), ("tcp", "--max-conns=8")] {
        let server = Responder::start(&[flag, "--drop-every", "10"]);
        let addr = server.addr.to_string();
        let doc = net_run(
            dir.path(),
            &format!("drop-{proto}.json"),
            &[
                "--connect",
                &addr,
                "--proto",
                proto,
                "--runtime",
                "1s",
                "--timeout",
                "20ms",
                "-q",
            ],
        );
        assert_accounted(&doc);
        let sent = fault(&doc, "sent");
        // The responder also counted the unrecorded warm-up message (its 1st).
        assert_eq!(
            fault(&doc, "lost"),
            (sent + 1) / 10,
            "{proto}: {}",
            doc["faults"]
        );
        assert_eq!(fault(&doc, "late"), 0);
        // Closed loop: lost messages are counted, not recorded.
        assert_eq!(
            summary(&doc, "rtt")["count"].as_u64(),
            Some(fault(&doc, "answered"))
        );
        assert!(
            doc["warnings"][0]["message"]
                .as_str()
                .unwrap()
                .contains("lost")
        );
    }
}

#[test]
fn in_rate_mode_a_lost_message_is_recorded_at_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let server = Responder::start(&["--udp", "--drop-every", "5"]);
    let addr = server.addr.to_string();
    let doc = net_run(
        dir.path(),
        "rate-drop.json",
        &[
            "--connect",
            &addr,
            "--proto",
            "udp",
            "--rate",
            "200/s",
            "--runtime",
            "1s",
            "--timeout",
            "30ms",
            "-q",
        ],
    );
    assert_eq!(doc["load"], "open-loop");
    assert_accounted(&doc);
    let lost = fault(&doc, "lost");
    assert!(lost >= 30, "{}", doc["faults"]);
    let rtt = summary(&doc, "rtt");
    let service = summary(&doc, "service");
    assert_eq!(
        rtt["count"].as_u64(),
        Some(fault(&doc, "sent")),
        "lost ones are in rtt too"
    );
    assert_eq!(service["count"], rtt["count"]);
    assert!(
        rtt["max"].as_u64().unwrap() >= 30_000_000,
        "at least the timeout"
    );
}

#[test]
fn duplicated_and_wrongly_numbered_replies_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let server = Responder::start(&["--udp", "--dup-every", "4", "--wrong-seq-every", "7"]);
    let addr = server.addr.to_string();
    let doc = net_run(
        dir.path(),
        "faults.json",
        &[
            "--connect",
            &addr,
            "--proto",
            "udp",
            "--runtime",
            "1s",
            "--timeout",
            "20ms",
            "-q",
        ],
    );
    assert_accounted(&doc);
    let sent = fault(&doc, "sent");
    let n = sent + 1; // the responder's count includes the warm-up
    let wrong = n / 7;
    // Every 7th is answered with a wrong number, so its own reply never comes.
    assert_eq!(fault(&doc, "wrong_seq"), wrong, "{}", doc["faults"]);
    assert_eq!(fault(&doc, "lost"), wrong);
    // Every 4th not also a 7th is answered twice; the second copy arrives
    // while the next message is in flight (or right away) and is a duplicate.
    let dup = n / 4 - n / 28;
    let seen = fault(&doc, "duplicate");
    assert!(
        seen + 1 >= dup && seen <= dup,
        "duplicates {seen}, expected {dup}"
    );
}

#[test]
fn a_frozen_responder_shows_as_the_backlog_in_rate_mode() {
    let dir = tempfile::tempdir().unwrap();
    let server = Responder::start(&[]);
    let run = dir.path().join("frozen.json");
    let mut client = StdCommand::new(assert_cmd::cargo::cargo_bin("cauda"))
        .args([
            "net",
            "--connect",
            &server.addr.to_string(),
            "--rate",
            "1000/s",
            "--runtime",
            "2s",
            "-q",
            "-o",
        ])
        .arg(&run)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    server.signal("-STOP");
    std::thread::sleep(Duration::from_millis(300));
    server.signal("-CONT");
    assert!(client.wait().unwrap().success());
    let doc = read_json(&run);
    assert_accounted(&doc);
    assert_eq!(
        fault(&doc, "lost"),
        0,
        "TCP: late, not lost, within the 1 s timeout"
    );
    let rtt = summary(&doc, "rtt");
    assert_eq!(rtt["count"].as_u64(), Some(fault(&doc, "sent")));
    assert!(
        rtt["max"].as_u64().unwrap() >= 300_000_000,
        "the freeze itself: {rtt}"
    );
    assert!(
        rtt["percentiles"]["99"].as_u64().unwrap() >= 100_000_000,
        "the backlog behind it reaches p99: {rtt}"
    );
}

#[test]
fn the_responder_drops_garbage_and_huge_lengths_and_serves_the_others() {
    for engine in ENGINES {
        let server = Responder::start(&["--engine", engine]);
        assert!(serves(server.addr));

        // Seeded random bytes.
        let mut garbage = vec![0u8; 4096];
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        for b in garbage.iter_mut() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = x as u8;
        }
        let mut s = TcpStream::connect(server.addr).unwrap();
        let _ = s.write_all(&garbage);
        assert!(closed_by_peer(&mut s), "garbage: connection dropped");
        assert!(serves(server.addr));

        // A valid header claiming 2^31 bytes.
        let mut header = request(HEADER_LEN as u32, 1);
        header[0..4].copy_from_slice(&(1u32 << 31).to_le_bytes());
        let mut s = TcpStream::connect(server.addr).unwrap();
        s.write_all(&header).unwrap();
        assert!(closed_by_peer(&mut s), "2^31: connection dropped");
        assert!(serves(server.addr));
        assert!(
            server.rss_kib() < 64 * 1024,
            "nothing near 2 GiB was allocated"
        );
    }
}

#[test]
fn half_sent_frames_and_slow_senders_are_dropped_while_others_are_served() {
    for engine in ENGINES {
        let server = Responder::start(&["--frame-timeout", "300ms", "--engine", engine]);
        let frame = request(200, 1);

        let mut half = TcpStream::connect(server.addr).unwrap();
        half.write_all(&frame[..50]).unwrap();
        // Held open: the responder serves another client meanwhile…
        assert!(serves(server.addr));
        // …and drops the half frame once its frame timeout passes.
        let began = Instant::now();
        assert!(closed_by_peer(&mut half));
        assert!(began.elapsed() < Duration::from_secs(10));

        // A slow sender: one byte every 50 ms never completes a frame in 300 ms.
        let mut slow = TcpStream::connect(server.addr).unwrap();
        let mut dropped = false;
        for b in &frame {
            if slow.write_all(&[*b]).is_err() {
                dropped = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
            if began.elapsed() > Duration::from_secs(15) {
                break;
            }
        }
        assert!(dropped || closed_by_peer(&mut slow), "slow sender dropped");
        assert!(serves(server.addr));
    }
}

#[test]
fn hundreds_of_idle_connections_cost_bounded_memory() {
    for engine in ENGINES {
        let server = Responder::start(&["--max-conns", "1000", "--engine", engine]);
        assert!(serves(server.addr));
        let before = server.rss_kib();
        let idle: Vec<TcpStream> = (0..300)
            .map(|_| TcpStream::connect(server.addr).unwrap())
            .collect();
        // Every one is accepted and has its thread before we measure.
        assert!(serves(server.addr));
        std::thread::sleep(Duration::from_millis(300));
        let after = server.rss_kib();
        let per_conn = after.saturating_sub(before) / idle.len() as u64;
        assert!(
            per_conn < 64,
            "{engine}: {per_conn} KiB per idle connection ({before} → {after} KiB)"
        );
        drop(idle);
    }
}

#[test]
fn connections_past_max_conns_are_closed_on_accept() {
    for engine in ENGINES {
        let server = Responder::start(&["--max-conns", "5", "--engine", engine]);
        let held: Vec<TcpStream> = (0..5)
            .map(|_| TcpStream::connect(server.addr).unwrap())
            .collect();
        std::thread::sleep(Duration::from_millis(300));
        let mut extra = TcpStream::connect(server.addr).unwrap();
        let _ = extra.write_all(&request(64, 1));
        assert!(closed_by_peer(&mut extra));
        drop(held);
        // Once they are gone, new clients are served again.
        let t = Instant::now();
        while !serves(server.addr) {
            assert!(t.elapsed() < Duration::from_secs(10), "never served again");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

#[test]
fn udp_garbage_is_counted_not_answered() {
    let server = Responder::start(&["--udp"]);
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.connect(server.addr).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut short = request(64, 1);
    short.truncate(40);
    for datagram in [vec![0xAB; 100], short] {
        socket.send(&datagram).unwrap();
        let mut buf = [0u8; 128];
        assert!(socket.recv(&mut buf).is_err(), "no reply to garbage");
    }
    socket
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    socket.send(&request(64, 9)).unwrap();
    let mut buf = [0u8; 128];
    let n = socket.recv(&mut buf).unwrap();
    assert_eq!(Header::decode_datagram(&buf[..n], 128).unwrap().seq, 9);
}

#[test]
fn refused_connections_and_busy_ports_say_what_to_do() {
    // A port nobody listens on: bind one, note it, close it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("never.json");
    cauda()
        .args([
            "net",
            "--connect",
            &format!("127.0.0.1:{port}"),
            "--runtime",
            "1s",
            "-o",
        ])
        .arg(&run)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("refused").and(predicate::str::contains("cauda serve")));
    assert!(!run.exists(), "nothing measured, nothing written");
    // UDP: no reply to the first message.
    cauda()
        .args([
            "net",
            "--proto",
            "udp",
            "--connect",
            &format!("127.0.0.1:{port}"),
            "--timeout",
            "100ms",
            "--runtime",
            "1s",
            "-o",
        ])
        .arg(&run)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("cauda serve").and(predicate::str::contains("--udp")));

    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy = held.local_addr().unwrap().to_string();
    refused(&["serve", "--listen", &busy], "in use");
    refused(&["net", "--loopback", "--size", "10"], "--size 10");
    refused(&["net", "--loopback", "--conns", "0"], "--conns");
    refused(&["net", "--runtime", "1s"], "--connect");
}

#[test]
fn a_responder_that_dies_mid_run_fails_the_run_and_keeps_what_was_measured() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Responder::start(&[]);
    let run = dir.path().join("partial.json");
    let client = StdCommand::new(assert_cmd::cargo::cargo_bin("cauda"))
        .args([
            "net",
            "--connect",
            &server.addr.to_string(),
            "--runtime",
            "20s",
            "-q",
            "-o",
        ])
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
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("closed the connection"), "{stderr}");
    assert!(stderr.contains("saved in"), "{stderr}");
    let doc = read_json(&run);
    assert!(fault(&doc, "answered") > 0);
    assert_eq!(
        summary(&doc, "rtt")["count"].as_u64(),
        Some(fault(&doc, "answered"))
    );
}
