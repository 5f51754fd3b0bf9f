//! `cauda net` as users meet it: loopback runs in both protocols, message
//! accounting against a responder that misbehaves on purpose, a responder
//! frozen with SIGSTOP or killed mid-run, and connections refused. The
//! responder under abuse is in `tests/serve.rs`. Everything stays on
//! 127.0.0.1.

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use predicates::prelude::*;
use serde_json::Value;

mod common;
mod netsupport;
use common::{cauda, cauda_process, read_json, refused};
use netsupport::Responder;

/// `cauda net ARGS -o DIR/NAME`, which must succeed and say where it saved
/// (and, without -q, print the accounting and the table); its run file.
fn net_run(dir: &Path, name: &str, args: &[&str]) -> Value {
    let run = dir.join(name);
    let assert = cauda()
        .arg("net")
        .args(args)
        .arg("-o")
        .arg(&run)
        .assert()
        .success()
        .stderr(predicate::str::contains("saved"));
    if !args.contains(&"-q") {
        // Without -q: the accounting on stderr, the table on stdout.
        assert
            .stderr(predicate::str::contains("messages:"))
            .stdout(predicate::str::contains("rtt").and(predicate::str::contains("p99")));
    }
    read_json(&run)
}

/// A quiet 1 s `net_run` against `server` over `proto`, a message lost
/// after `timeout`, with ARGS besides.
fn run_against(
    dir: &Path,
    name: &str,
    server: &Responder,
    proto: &str,
    timeout: &str,
    args: &[&str],
) -> Value {
    let addr = server.addr.to_string();
    let connect = ["--connect", &addr, "--proto", proto, "--timeout", timeout];
    let args = [&connect[..], &["--runtime", "1s", "-q"], args].concat();
    net_run(dir, name, &args)
}

/// `cauda net --connect SERVER ARGS -q -o RUN` started in the background,
/// its stderr to `stderr`, for a test that acts on the responder meanwhile.
fn net_client(server: &Responder, args: &[&str], run: &Path, stderr: Stdio) -> Child {
    cauda_process()
        .args(["net", "--connect", &server.addr.to_string()])
        .args(args)
        .args(["-q", "-o"])
        .arg(run)
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap()
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
            ],
        );
        common::assert_valid(&common::validator("run.schema.json"), &doc);
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
fn hundreds_of_connections_to_the_in_process_responder_all_connect() {
    // 600 connecting at once overflowed the responder's accept queue (the
    // standard 128) and the run failed asking whether `cauda serve` ran.
    let dir = tempfile::tempdir().unwrap();
    let doc = net_run(
        dir.path(),
        "many.json",
        &["--loopback", "--conns", "600", "--runtime", "1s", "-q"],
    );
    assert_eq!(doc["parameters"]["conns"], 600);
    assert_accounted(&doc);
    assert_eq!(fault(&doc, "lost"), 0);
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
        let name = format!("drop-{proto}.json");
        let doc = run_against(dir.path(), &name, &server, proto, "200ms", &[]);
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
    let rate = ["--rate", "200/s"];
    let doc = run_against(dir.path(), "rate-drop.json", &server, "udp", "30ms", &rate);
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
    let doc = run_against(dir.path(), "faults.json", &server, "udp", "200ms", &[]);
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
    let mut client = net_client(
        &server,
        &[
            "--rate",
            "1000/s",
            "--runtime",
            "2s",
            "--interval-length",
            "100ms",
        ],
        &run,
        Stdio::null(),
    );
    std::thread::sleep(Duration::from_millis(700));
    common::signal(server.child.id(), "-STOP");
    std::thread::sleep(Duration::from_millis(300));
    common::signal(server.child.id(), "-CONT");
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
    // Only the responder froze: cauda's own observer thread was on time, so
    // no stall is blamed on the host.
    let analysis = common::json_stdout(
        cauda()
            .args(["analyze", "--json"])
            .arg(&run)
            .output()
            .unwrap(),
    );
    let series = analysis["inputs"][0]["series"].as_array().unwrap();
    let rtt = series.iter().find(|s| s["tag"] == "rtt").unwrap();
    let stalls = rtt["stalls"].as_array().unwrap();
    assert!(!stalls.is_empty(), "the freeze is a stall");
    for stall in stalls {
        assert!(
            !stall["hints"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|h| h["counter"] == "self.max"),
            "a target stall is not the host's: {stall:#?}"
        );
    }
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
    let addr = format!("127.0.0.1:{port}");
    // A 1 s run against that port, which must fail.
    let unanswered = |args: &[&str]| {
        cauda()
            .args(["net", "--connect", &addr, "--runtime", "1s"])
            .args(args)
            .arg("-o")
            .arg(&run)
            .assert()
            .code(1)
    };
    unanswered(&[])
        .stderr(predicate::str::contains("refused").and(predicate::str::contains("cauda serve")));
    assert!(!run.exists(), "nothing measured, nothing written");
    // UDP: no reply to the first message.
    unanswered(&["--proto", "udp", "--timeout", "100ms"])
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
    let watch = common::inotify::Watch::new(dir.path());
    let client = net_client(&server, &["--runtime", "20s"], &run, Stdio::piped());
    std::thread::sleep(Duration::from_millis(800));
    server.child.kill().unwrap();
    let _ = server.child.wait();
    let out = client.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("closed the connection"), "{stderr}");
    assert!(stderr.contains("saved in"), "{stderr}");
    // Written once, with the accounting: one rename onto it, none in place.
    assert_eq!(watch.writes_of("partial.json"), (1, 0));
    let doc = read_json(&run);
    assert!(fault(&doc, "answered") > 0);
    assert_eq!(
        summary(&doc, "rtt")["count"].as_u64(),
        Some(fault(&doc, "answered"))
    );
}
