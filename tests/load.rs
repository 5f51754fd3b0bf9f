//! Offered against achieved load, and the generator's own lag, proved on
//! real processes (`cauda net` against `cauda serve` on loopback):
//!
//! - an unloaded run: offered ≈ achieved, a `lag` series, no warning;
//! - the client starved on purpose (its one connection pinned to a CPU it
//!   shares with a SCHED_FIFO loop busy 3 ms in every 10 ms, which it
//!   cannot preempt): the run says the generator fell behind;
//! - `cauda serve` in a cgroup v1 CPU quota of 2 % of one CPU, offered far
//!   more than it can answer: latency grows, the target is named as the
//!   limit, and there is no generator warning.
//!
//! The last two need root (SCHED_FIFO, cgroups) and two CPUs; they say
//! why when they skip. They run one at a time: a hog on a CPU would
//! disturb the others.

use std::path::Path;
use std::process::{Command as StdCommand, Stdio};
use std::sync::Mutex;

mod common;
mod netsupport;
use common::cgroup::CpuQuota;
use common::hog::Hog;
use common::{analyze_json, cauda, is_root, read_json, series_tags};
use netsupport::Responder;
use serde_json::Value;

/// One test at a time: the planted hog and quota must not touch the others.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// How the client runs: as any process, or under SCHED_FIFO so the
/// machine's other work (a compiler beside the tests) cannot starve it.
#[derive(Clone, Copy, PartialEq)]
enum Client {
    Plain,
    Fifo,
}

/// Whether the client can be kept from being starved: SCHED_FIFO needs
/// root and `chrt`.
fn fifo_if_possible() -> Client {
    if is_root() && has("chrt") {
        Client::Fifo
    } else {
        eprintln!("note: not root or no chrt: the client runs at normal priority");
        Client::Plain
    }
}

/// `cauda net --connect SERVER --conns 1 ARGS -q -o RUN`, which must
/// succeed: its stderr and run file.
fn net_run(client: Client, server: &Responder, run: &Path, args: &[&str]) -> (String, Value) {
    let cauda = assert_cmd::cargo::cargo_bin("cauda");
    let mut command = match client {
        Client::Plain => StdCommand::new(&cauda),
        Client::Fifo => {
            let mut c = StdCommand::new("chrt");
            c.args(["-f", "20"]).arg(&cauda);
            c
        }
    };
    let out = command
        .args(["net", "--connect", &server.addr.to_string(), "--conns", "1"])
        .args(args)
        .args(["-q", "-o"])
        .arg(run)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "cauda net failed: {stderr}");
    (stderr, read_json(run))
}

fn behind_warnings(run: &Value) -> Vec<String> {
    run["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["message"].as_str().unwrap().to_string())
        .filter(|m| m.contains("fell behind"))
        .collect()
}

fn has(program: &str) -> bool {
    StdCommand::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn two_cpus() -> bool {
    std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2)
}

/// Pins every thread of `pid` to `cpus`.
fn pin(pid: u32, cpus: &str) {
    let ok = StdCommand::new("taskset")
        .args(["-a", "-p", "-c", cpus, &pid.to_string()])
        .stdout(Stdio::null())
        .status()
        .unwrap()
        .success();
    assert!(ok, "taskset -a -p -c {cpus} {pid}");
}

#[test]
fn an_unloaded_run_offers_what_it_achieves_and_warns_of_nothing() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let server = Responder::start(&[]);
    let run = dir.path().join("unloaded.json");
    let (stderr, doc) = net_run(
        fifo_if_possible(),
        &server,
        &run,
        &["--rate", "500/s", "--runtime", "2s"],
    );
    assert!(behind_warnings(&doc).is_empty(), "{stderr}");
    assert!(
        series_tags(&doc).contains(&"lag"),
        "{:?}",
        series_tags(&doc)
    );
    let offered = &doc["offered"];
    assert_eq!(offered["lag"], "lag");
    assert_eq!(offered["in_flight_limit"], 1);
    // One connection at 500/s from the start: intended at 2 ms, 4 ms, …,
    // 1998 ms — 999 operations, whatever the machine did.
    assert_eq!(common::offered_total(&doc), 999, "{offered}");
    let analysis = analyze_json(&run, &[]);
    let load = &analysis["inputs"][0]["offered_load"];
    let (o, a) = (
        load["offered_per_s"].as_f64().unwrap(),
        load["achieved_per_s"].as_f64().unwrap(),
    );
    assert!(a > 0.8 * o && a < 1.1 * o, "offered {o}/s, achieved {a}/s");
    assert!(load["generator_fell_behind"].is_null(), "{load}");
    assert!(load["saturated"].is_null(), "{load}");
    let table = cauda().arg("analyze").arg(&run).output().unwrap();
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(
        table.contains("load: offered") && table.contains("generator lag"),
        "{table}"
    );
}

#[test]
fn a_starved_generator_says_it_fell_behind() {
    let _one = one_at_a_time();
    if !(is_root() && two_cpus() && has("chrt") && has("taskset") && has("python3")) {
        eprintln!("skipped: needs root, two CPUs, chrt, taskset and python3 to starve the client");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = Responder::start(&[]);
    pin(server.child.id(), "0");
    // Busy 3 ms in every 10 ms on CPU 1, at a priority the client cannot
    // preempt (a same-priority loop would be preempted by the waking client).
    let _hog = Hog::fifo_duty(1, 3, 10, 60).expect("a SCHED_FIFO hog, as root");
    let run = dir.path().join("starved.json");
    let (stderr, doc) = net_run(
        Client::Plain,
        &server,
        &run,
        &["--rate", "1000/s", "--runtime", "3s", "--cpus", "1"],
    );
    let warnings = behind_warnings(&doc);
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(
        stderr.contains("fell behind"),
        "the warning is on stderr too: {stderr}"
    );
    assert!(stderr.contains("--conns"), "and says what to do: {stderr}");
    let analysis = analyze_json(&run, &[]);
    let load = &analysis["inputs"][0]["offered_load"];
    assert!(load["generator_fell_behind"].is_string(), "{load}");
    assert!(load["saturated"].is_null(), "{load}");
}

#[test]
fn a_target_starved_by_its_cpu_quota_is_not_the_generators_fault() {
    let _one = one_at_a_time();
    if !(is_root() && two_cpus() && has("taskset") && has("chrt")) {
        eprintln!(
            "skipped: needs root, two CPUs, taskset and chrt to put `cauda serve` in a CPU quota"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = Responder::start(&[]);
    pin(server.child.id(), "0");
    let Some(_quota) = CpuQuota::new("cauda-load-test", 2_000, server.child.id()) else {
        eprintln!("skipped: no cgroup v1 CPU controller at {}", CpuQuota::ROOT);
        return;
    };
    let run = dir.path().join("saturated.json");
    // About 800/s fit in the quota: 2000 offered in 1 s take a few seconds.
    let (stderr, doc) = net_run(
        Client::Fifo,
        &server,
        &run,
        &["--rate", "2000/s", "--runtime", "1s", "--cpus", "1"],
    );
    assert!(behind_warnings(&doc).is_empty(), "{stderr}");
    let analysis = analyze_json(&run, &[]);
    let load = &analysis["inputs"][0]["offered_load"];
    assert!(load["generator_fell_behind"].is_null(), "{load}");
    assert!(load["saturated"].is_string(), "the target is named: {load}");
    // Latency from the intended start grows with the backlog.
    let rtt = doc["series"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["tag"] == "rtt")
        .unwrap();
    let max = |i: &Value| i["max"].as_u64().unwrap();
    let intervals = rtt["intervals"].as_array().unwrap();
    assert!(intervals.len() > 1, "{intervals:?}");
    assert!(
        max(intervals.last().unwrap()) > max(&intervals[0]),
        "rtt max by interval: {:?}",
        intervals.iter().map(max).collect::<Vec<_>>()
    );
}
