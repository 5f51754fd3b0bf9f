//! Where people read a run's blame section outside `analyze`: `cauda
//! convert --to trace` (the Trace Event Format, for ui.perfetto.dev and
//! chrome://tracing) and the HTML report's "Why the tail" section. The
//! runs are real `cauda timer` runs with a blame section written into the
//! file (the kernel side that fills it is tested with the probes).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use common::{cauda, read_json, refused};
use serde_json::{Value, json};

/// The causes with time a vector holds, as the sample below writes them.
const SAMPLE_CAUSES: [&str; 5] = [
    "idle_exit",
    "softirq",
    "run_queue",
    "running",
    "unexplained",
];

/// A real 2-second timer run, and the same run with a blame section of
/// `slow` wake-ups added (their vectors add up to their latency), its
/// integrity field removed since the file was edited.
fn runs(dir: &Path, slow: u64) -> (PathBuf, PathBuf, Vec<Value>) {
    let plain = dir.join("plain.json");
    let mut run = common::timer_run(&plain, &["--runtime", "2s", "--interval-length", "500ms"]);
    let tag = run["series"][0]["tag"].as_str().unwrap().to_string();
    // Slow wake-ups are wake-ups of the run: none above its max (the
    // reader refuses a blame section slower than its series).
    let max = run["series"][0]["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|iv| iv["max"].as_u64().unwrap())
        .max()
        .unwrap();
    let step = max / (slow + 1);
    let mut ops: Vec<Value> = (0..slow)
        .map(|k| {
            let latency: u64 = max - k * step;
            let idle = latency / 10 + 7;
            let softirq = latency / 20 + 3;
            let run_queue = latency * 6 / 10 + 1;
            let running = latency / 50;
            let unexplained = latency - idle - softirq - run_queue - running;
            json!({
                "series": tag, "thread": 0, "tid": 4242, "cpu": k % 2,
                "start_ns": k * 37_000_123 + (k % 3) * 1_001,
                "latency_ns": latency,
                "causes": {"idle_exit.haltpoll idle": idle, "softirq.NET_RX": softirq,
                           "run_queue": run_queue, "running": running,
                           "unexplained": unexplained, "page_fault": 2},
                "culprits": [{"comm": "stress-ng", "pid": 777, "ns": run_queue * 3 / 4},
                             {"comm": "python3", "pid": 901, "ns": run_queue / 4}],
                "page_faults": 2, "requests": 0, "runnable_ns": run_queue + idle,
            })
        })
        .collect();
    ops.sort_by_key(|op| std::cmp::Reverse(op["latency_ns"].as_u64().unwrap()));
    let mut totals: BTreeMap<String, u64> = BTreeMap::new();
    for op in &ops {
        for (key, ns) in op["causes"].as_object().unwrap() {
            *totals.entry(key.clone()).or_default() += ns.as_u64().unwrap();
        }
    }
    let latency: u64 = ops
        .iter()
        .map(|op| op["latency_ns"].as_u64().unwrap())
        .sum();
    run["blame"] = json!({
        "threshold": {"rule": "previous_p99"},
        "series": [{"tag": tag, "intervals": [
            {"index": 0, "slow": slow, "latency_ns": latency, "causes": totals}]}],
        "slowest": ops, "kept": 100, "lost": {}, "steal_resolution": "each scheduler clock update",
    });
    run.as_object_mut().unwrap().remove("integrity");
    let blamed = dir.join("blamed.json");
    std::fs::write(&blamed, serde_json::to_vec(&run).unwrap()).unwrap();
    (plain, blamed, ops)
}

/// A time in the trace's microseconds as Perfetto reads it (× 1000,
/// truncated to whole nanoseconds).
fn ns(v: &Value) -> u64 {
    (v.as_f64().unwrap() * 1000.0) as u64
}

#[test]
fn a_run_with_blame_converts_to_a_trace_holding_every_slow_operation() {
    let dir = tempfile::tempdir().unwrap();
    let (plain, blamed, ops) = runs(dir.path(), 12);
    let out = dir.path().join("trace.json");
    cauda()
        .args(["convert"])
        .arg(&blamed)
        .args(["--to", "trace", "-o"])
        .arg(&out)
        .assert()
        .success();
    let doc = read_json(&out);
    assert_eq!(doc["displayTimeUnit"], "ns");
    assert_eq!(doc["metadata"]["probe"], "timer");
    let events = doc["traceEvents"].as_array().unwrap();
    for e in events {
        let ph = e["ph"].as_str().unwrap();
        assert!(ph == "X" || ph == "M", "{e}");
        assert!(e["pid"].is_u64() && e["tid"].is_u64(), "{e}");
        assert!(e["name"].is_string(), "{e}");
        if ph == "X" {
            assert!(e["ts"].as_f64().unwrap() >= 0.0 && e["dur"].as_f64().unwrap() > 0.0);
        }
    }
    let slices: Vec<&Value> = events.iter().filter(|e| e["ph"] == "X").collect();
    for op in &ops {
        let (start, latency) = (
            op["start_ns"].as_u64().unwrap(),
            op["latency_ns"].as_u64().unwrap(),
        );
        let mine: Vec<&&Value> = slices
            .iter()
            .filter(|e| e["cat"] == "slow_operation" && e["args"]["start_ns"] == start)
            .collect();
        assert_eq!(
            mine.len(),
            2,
            "on its thread's track and on its CPU's: {op}"
        );
        let parent = mine.iter().find(|e| e["pid"] == 1).unwrap();
        assert_eq!((ns(&parent["ts"]), ns(&parent["dur"])), (start, latency));
        assert_eq!(parent["args"]["causes"], op["causes"]);
        assert_eq!(parent["args"]["runnable_ns"], op["runnable_ns"]);
        let on_cpu = mine.iter().find(|e| e["pid"] == 2).unwrap();
        assert!(
            on_cpu["name"].as_str().unwrap().contains("stress-ng"),
            "{on_cpu}"
        );
        let children: Vec<&&Value> = slices
            .iter()
            .filter(|e| {
                e["cat"] == "cause"
                    && e["tid"] == parent["tid"]
                    && (start..start + latency).contains(&ns(&e["ts"]))
            })
            .collect();
        let causes: BTreeSet<&str> = children
            .iter()
            .map(|c| c["args"]["cause"].as_str().unwrap())
            .collect();
        assert_eq!(causes, SAMPLE_CAUSES.into_iter().collect());
        let sum: u64 = children.iter().map(|c| ns(&c["dur"])).sum();
        assert!(sum <= latency, "causes {sum} ns inside {latency} ns");
        let end = children
            .iter()
            .map(|c| ns(&c["ts"]) + ns(&c["dur"]))
            .max()
            .unwrap();
        assert!(end <= start + latency);
    }
    refused(
        &[
            "convert".as_ref(),
            plain.as_os_str(),
            "--to".as_ref(),
            "trace".as_ref(),
            "-o".as_ref(),
            dir.path().join("none.json").as_os_str(),
        ],
        "--kernel blame",
    );
    assert!(!dir.path().join("none.json").exists());
}

#[test]
fn the_report_of_a_run_with_blame_says_why_the_tail_and_one_without_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let (plain, blamed, ops) = runs(dir.path(), 25);
    let page = |run: &Path| {
        let out = run.with_extension("html");
        cauda()
            .arg("report")
            .arg(run)
            .arg("-o")
            .arg(&out)
            .assert()
            .success();
        std::fs::read_to_string(out).unwrap()
    };
    let with = page(&blamed);
    let start = with
        .find("<section id=\"why\">")
        .expect("a Why the tail section");
    let section = &with[start..start + with[start..].find("</section>").unwrap()];
    let series_chart = &section[..section.find("chart-blame-slowest").unwrap()];
    for cause in SAMPLE_CAUSES {
        assert_eq!(
            series_chart
                .matches(&format!("data-cause=\"{cause}\""))
                .count(),
            1,
            "{cause}"
        );
    }
    assert_eq!(section.matches("<g class=\"op\">").count(), 20);
    // Labelled as the report labels durations (ms or µs, by size).
    let slowest = cauda::units::format_ns(ops[0]["latency_ns"].as_u64().unwrap() as f64);
    let first = &section[section.find("<g class=\"op\">").unwrap()..];
    assert!(
        first[..first.find("</g>").unwrap()].contains(&format!(": {slowest}")),
        "the slowest first: {slowest}"
    );
    assert!(section.contains("stress-ng (pid 777)"));
    let without = page(&plain);
    assert!(!without.contains("id=\"why\"") && !without.contains("class=\"slow\""));
}
