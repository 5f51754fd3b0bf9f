//! `cauda analyze` and `cauda compare` from the command line: real runs,
//! a real stall, and the bad inputs each must refuse.

use predicates::prelude::*;
use serde_json::Value;

mod common;
use common::{cauda, refused};

/// `cauda ARGS`, which must succeed: the JSON it printed.
fn json(args: &[&str]) -> Value {
    common::json_stdout(cauda().args(args).output().unwrap())
}

/// A quiet timer run of `runtime` in 100 ms intervals saved as DIR/NAME; its path.
fn timer_run(dir: &std::path::Path, name: &str, runtime: &str) -> String {
    let path = dir.join(name);
    common::timer_run(&path, &["--runtime", runtime, "--interval-length", "100ms"]);
    path.display().to_string()
}

#[test]
fn a_frozen_process_shows_as_a_stall_at_the_right_time() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("frozen.json");
    common::frozen_timer_run(&run);

    let doc = json(&["analyze", run.to_str().unwrap(), "--json", "--timeline"]);
    let series = &doc["inputs"][0]["series"][0];
    // Every period was recorded, the ones due during the freeze included.
    assert_eq!(series["summary"]["count"], 2_999);
    assert!(
        series["summary"]["max"].as_u64().unwrap() >= 250_000_000,
        "the freeze is the max"
    );
    let stalls = series["stalls"].as_array().unwrap();
    // Wherever the freeze fell (process start-up time varies under load),
    // the interval holding its backlog is a stall, and it holds the run's max.
    let run_max = series["summary"]["max"].as_u64().unwrap();
    let hit = stalls.iter().find(|s| s["max"].as_u64() == Some(run_max));
    let hit = hit.unwrap_or_else(|| panic!("the freeze is not among the stalls: {stalls:#?}"));
    let start = hit["start_s"].as_f64().unwrap();
    assert!((1.0..=2.6).contains(&start), "{stalls:#?}");
    // The whole process froze, so cauda's own observer thread (one wake-up
    // per 100 ms interval) was late too: the stall is blamed on the host,
    // not the target.
    assert!(
        hit["hints"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["counter"] == "self.max"),
        "the self series names a host-wide stall: {hit:#?}"
    );
    // ~300 backlog samples of 300, 299, … 1 ms: p99 of the whole run is in the backlog.
    assert!(series["summary"]["percentiles"]["99"].as_u64().unwrap() > 1_000_000);
    // 30 intervals, and a sliver of a 31st when the last wake-up was late.
    let intervals = series["timeline"].as_array().unwrap().len();
    assert!((30..=31).contains(&intervals), "{intervals}");
    let text =
        String::from_utf8(cauda().arg("analyze").arg(&run).output().unwrap().stdout).unwrap();
    assert!(text.contains("stalls ("), "{text}");
    assert!(text.contains("the interval mean was"), "{text}");
}

#[test]
fn analysis_carries_intervals_support_and_fanout() {
    let dir = tempfile::tempdir().unwrap();
    let run = timer_run(dir.path(), "run.json", "1s");
    let doc = json(&[
        "analyze",
        &run,
        "--json",
        "--fanout",
        "100",
        "--confidence",
        "0.9",
    ]);
    assert_eq!(doc["confidence"], 0.9);
    let s = &doc["inputs"][0]["series"][0];
    let ci = s["percentile_ci"]["50"].as_array().unwrap();
    let p50 = s["summary"]["percentiles"]["50"].as_u64().unwrap();
    assert!(ci[0].as_u64().unwrap() <= p50 && p50 <= ci[1].as_u64().unwrap());
    // 999 samples cannot bound p99.99 from above.
    assert_eq!(s["support"]["99.99"], "insufficient");
    assert_eq!(s["percentile_ci"]["99.99"][1], Value::Null);
    assert_eq!(s["support"]["50"], "ok");
    assert!(!s["clusters"].as_array().unwrap().is_empty());
    let f = &s["fanout"];
    assert_eq!(f["n"], 100);
    assert!((f["p_hit_leaf_p99"].as_f64().unwrap() - 0.634).abs() < 0.001);
    // The timer is measured from intended starts: no CO correction.
    let doc = json(&["analyze", &run, "--json", "--expected-interval", "1ms"]);
    let co = &doc["inputs"][0]["series"][0]["co_correction"];
    assert_eq!(co["applied"], false);
}

#[test]
fn co_correction_applies_to_imported_values() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("closed.txt");
    let mut text = "1\n".repeat(99);
    text.push_str("100\n");
    std::fs::write(&file, text).unwrap();
    let doc = json(&[
        "analyze",
        file.to_str().unwrap(),
        "--unit",
        "ms",
        "--json",
        "--expected-interval",
        "1ms",
    ]);
    let s = &doc["inputs"][0]["series"][0];
    assert_eq!(s["co_correction"]["applied"], true);
    assert_eq!(s["co_correction"]["synthesized"], 99);
    assert_eq!(s["summary"]["count"], 199);
}

#[test]
fn compare_a_run_with_itself_and_gate_on_budgets() {
    let dir = tempfile::tempdir().unwrap();
    let run = timer_run(dir.path(), "a.json", "1s");
    let doc = json(&["compare", &run, &run, "--json"]);
    assert_eq!(doc["schema"], "cauda.compare/1");
    let rows = doc["rows"].as_array().unwrap();
    let metrics: Vec<&str> = rows
        .iter()
        .filter(|r| r["series"] == "wakeup")
        .map(|r| r["metric"].as_str().unwrap())
        .collect();
    let series: std::collections::BTreeSet<&str> =
        rows.iter().map(|r| r["series"].as_str().unwrap()).collect();
    assert_eq!(
        series.into_iter().collect::<Vec<_>>(),
        ["self", "wakeup"],
        "the control thread's series is compared beside the probe's"
    );
    assert_eq!(
        metrics,
        [
            "count",
            "mean",
            "p50",
            "p90",
            "p95",
            "p99",
            "p99.9",
            "p99.99",
            "max",
            "throughput"
        ]
    );
    assert!(rows.iter().all(|r| r["verdict"] == "same"));
    assert!(doc["host_changes"].as_array().unwrap().is_empty());
    cauda()
        .args([
            "compare",
            &run,
            &run,
            "--fail-if-worse",
            "p99:10%,p99.9:20%",
        ])
        .assert()
        .success();
    cauda()
        .args(["compare", &run, &run, "--markdown"])
        .assert()
        .success()
        .stdout(predicate::str::contains("| series | metric | base | new |"));

    // A file of slow numbers is worse than a file of fast ones.
    let fast = dir.path().join("fast.txt");
    let slow = dir.path().join("slow.txt");
    std::fs::write(
        &fast,
        (0..2000)
            .map(|i| format!("{}\n", 100 + i % 50))
            .collect::<String>(),
    )
    .unwrap();
    std::fs::write(
        &slow,
        (0..2000)
            .map(|i| format!("{}\n", 300 + i % 50))
            .collect::<String>(),
    )
    .unwrap();
    cauda()
        .args([
            "compare",
            fast.to_str().unwrap(),
            slow.to_str().unwrap(),
            "--fail-if-worse",
            "p99:10%",
        ])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("worse than allowed: values p99"));
}

#[test]
fn bad_analysis_options_exit_2_with_what_is_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let numbers = dir.path().join("n.txt");
    std::fs::write(&numbers, "1\n2\n").unwrap();
    let n = numbers.to_str().unwrap();
    refused(&["analyze", n, "--fanout", "0"], "at least 1 leaf");
    refused(
        &["analyze", n, "--confidence", "1.5"],
        "strictly between 0 and 1",
    );
    refused(
        &["analyze", n, "--confidence", "0"],
        "strictly between 0 and 1",
    );
    refused(
        &["compare", n, n, "--confidence", "-1"],
        "strictly between 0 and 1",
    );
    refused(
        &["compare", n, n, "--fail-if-worse", "latency:10%"],
        "allowed: count, mean, max",
    );
    refused(
        &["compare", n, n, "--fail-if-worse", "p99"],
        "METRIC:PERCENT",
    );

    let run = dir.path().join("sweep.json");
    common::timer_run(
        &run,
        &[
            "--idle-sweep",
            "--idle-lengths",
            "50us,100us",
            "--runtime",
            "200ms",
        ],
    );
    let other = timer_run(dir.path(), "t.json", "200ms");
    refused(
        &["compare", run.to_str().unwrap(), &other],
        "no common series",
    );
}

#[test]
fn gates_and_corrections_refuse_what_cannot_work() {
    let dir = tempfile::tempdir().unwrap();
    let numbers = dir.path().join("n.txt");
    std::fs::write(&numbers, "1000\n2000\n3600000000000\n").unwrap();
    let n = numbers.to_str().unwrap();
    // Plain numbers have no timed intervals: a throughput budget could never fail.
    refused(
        &["compare", n, n, "--fail-if-worse", "throughput:5%"],
        "no such metric",
    );
    // 1 h at a 1 ns expected interval would synthesise 3.6e12 values.
    refused(
        &["analyze", n, "--expected-interval", "1ns"],
        "expected intervals",
    );
}
