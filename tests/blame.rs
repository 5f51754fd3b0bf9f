//! "Why the tail" from the command line: a real timer run with a real
//! stall (the process frozen), given a `blame` section as `--kernel blame`
//! writes it, read by `cauda analyze` (text and JSON against the schema)
//! and `cauda compare` (the blame shift, and one side only); the same run
//! without the section prints nothing new.

use std::path::Path;

use serde_json::{Value, json};

mod common;
use common::{analyze_json, assert_valid, cauda, json_stdout, read_json, validator};

const MS: u64 = 1_000_000;

/// A 3 s timer run in 100 ms intervals, frozen for 300 ms in its middle:
/// its run file and the start of the interval the freeze's backlog fell
/// in (the stall that holds the run's max), as an index on its grid.
fn frozen_run(path: &Path) -> (Value, u64) {
    common::frozen_timer_run(path);
    let analysis = analyze_json(path, &[]);
    let series = &analysis["inputs"][0]["series"][0];
    assert_eq!(series["tag"], "wakeup");
    let max = &series["summary"]["max"];
    let stall = series["stalls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| &s["max"] == max)
        .unwrap_or_else(|| panic!("the freeze is not a stall: {series:#}"));
    let index = (stall["start_s"].as_f64().unwrap() * 10.0).round() as u64;
    (read_json(path), index)
}

/// One slowest operation of `wakeup` behind `culprits`.
fn slow(start_ns: u64, latency_ns: u64, run_queue: u64, culprits: Value) -> Value {
    json!({"series": "wakeup", "thread": 0, "tid": 4100, "cpu": 1, "start_ns": start_ns,
           "latency_ns": latency_ns, "causes": {"run_queue": run_queue}, "culprits": culprits})
}

/// The run with a blame section: 30 slow wake-ups in the stall's interval
/// (270 ms of 300 behind a hog, 10 ms NET_RX, 20 ms no key explains) and
/// 10 in the first interval (idle exits, a virtio IRQ, two page faults);
/// written without its checksum, as an edit.
fn with_blame(run: &Value, stall: u64, path: &Path) {
    let mut doc = run.clone();
    doc.as_object_mut().unwrap().remove("integrity");
    let start = stall * 100 * MS;
    doc["blame"] = json!({
        "threshold": {"rule": "previous_p99"},
        "series": [{"tag": "wakeup", "intervals": [
            {"index": 0, "slow": 10, "latency_ns": 10 * MS, "causes": {
                "idle_exit.haltpoll idle": 8 * MS, "irq.virtio0-requests": MS, "page_fault": 2}},
            {"index": stall, "slow": 30, "latency_ns": 300 * MS, "causes": {
                "run_queue": 270 * MS, "softirq.NET_RX": 10 * MS}}
        ]}],
        "slowest": [
            slow(start, 40 * MS, 38 * MS, json!([{"comm": "stress-ng", "pid": 4242, "ns": 30 * MS},
                                               {"comm": "python3", "pid": 77, "ns": 8 * MS}])),
            slow(start + MS, 20 * MS, 19 * MS, json!([{"comm": "stress-ng", "pid": 4242, "ns": 19 * MS}])),
        ],
        "kept": 100,
        "lost": {},
        "steal_resolution": "each scheduler clock update"
    });
    std::fs::write(path, serde_json::to_vec(&doc).unwrap()).unwrap();
}

fn stdout(args: &[&Path], extra: &[&str]) -> String {
    let out = cauda().args(args).args(extra).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        !err.contains("was changed after"),
        "the edited file reads without a warning: {err}"
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn analyze_and_compare_say_why_the_tail() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.json");
    let (run, stall) = frozen_run(&plain);
    assert!(stall > 0, "the freeze came after the first interval");
    let blamed = dir.path().join("blamed.json");
    with_blame(&run, stall, &blamed);

    // A run without blame prints nothing new.
    let text = stdout(&[Path::new("analyze"), &plain], &[]);
    assert!(!text.contains("why the tail"), "{text}");
    assert!(
        analyze_json(&plain, &[])["inputs"][0]["series"][0]
            .get("blame")
            .is_none()
    );

    let text = stdout(&[Path::new("analyze"), &blamed], &[]);
    assert!(
        text.contains("why the tail (--kernel blame): 40 slow operations"),
        "{text}"
    );
    let rows: Vec<&str> = text.lines().map(str::trim_start).collect();
    let at = |start: &str| {
        rows.iter()
            .position(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no '{start}' in {text}"))
    };
    // Largest first; a cause's details under it; what no key explains shown.
    assert!(
        at("run_queue") < at("unexplained") && at("unexplained") < at("softirq"),
        "{text}"
    );
    assert_eq!(at("NET_RX"), at("softirq") + 1, "{text}");
    assert!(
        rows[at("run_queue")].contains("87 %"),
        "270 of 310 ms: {text}"
    );
    assert!(text.contains("page faults: 2"), "{text}");
    assert!(
        text.contains("stress-ng (pid 4242)  49.00 ms  in 2 of 2"),
        "{text}"
    );
    assert!(
        text.contains("run_queue 90 % of 300.0 ms, 30 slow operations"),
        "{text}"
    );

    let analysis = analyze_json(&blamed, &[]);
    assert_valid(&validator("analysis.schema.json"), &analysis);
    // The schema checks the section's fields, not only allows them.
    let mut bad = analysis.clone();
    bad["inputs"][0]["series"][0]["blame"]["causes"][0]["cause"] = json!("gremlins");
    assert!(!validator("analysis.schema.json").is_valid(&bad));
    let series = &analysis["inputs"][0]["series"];
    assert!(series[1].get("blame").is_none(), "self has no blame");
    let blame = &series[0]["blame"];
    assert_eq!(
        (blame["slow"].as_u64(), blame["latency_ns"].as_u64()),
        (Some(40), Some(310 * MS))
    );
    let shares: f64 = blame["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["share"].as_f64().unwrap())
        .sum();
    assert!((shares - 1.0).abs() < 1e-9, "{shares}");
    assert_eq!(blame["causes"][1]["cause"], "unexplained");
    assert_eq!(blame["causes"][1]["ns"], 21 * MS);
    assert_eq!(blame["culprits"][0]["comm"], "stress-ng");
    let stalled = blame["stalls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["slow"] == 30)
        .unwrap_or_else(|| panic!("no stall holds the hog's interval: {blame:#}"));
    assert_eq!(stalled["causes"][0]["cause"], "run_queue");
    assert_eq!(stalled["causes"][0]["share"], 0.9);

    // compare: one side only, then a shift between two runs with blame.
    let text = stdout(&[Path::new("compare"), &blamed, &plain], &[]);
    assert_eq!(
        text.lines().filter(|l| l.starts_with("blame")).count(),
        1,
        "{text}"
    );
    assert!(text.contains("only base has blame for wakeup"), "{text}");
    let mut idle = read_json(&blamed);
    idle["blame"]["series"][0]["intervals"][1]["causes"] =
        json!({"run_queue": 30 * MS, "idle_exit.C6": 240 * MS});
    idle["blame"]["series"][0]["intervals"][1]["slow"] = json!(5);
    let after = dir.path().join("after.json");
    std::fs::write(&after, serde_json::to_vec(&idle).unwrap()).unwrap();
    let text = stdout(&[Path::new("compare"), &blamed, &after], &[]);
    assert!(text.contains("blame shift — wakeup"), "{text}");
    let row = text
        .lines()
        .find(|l| l.trim_start().starts_with("run_queue"))
        .unwrap();
    assert!(
        row.contains("87 %") && row.contains("9.7 %") && row.contains("-77.4 pp"),
        "{text}"
    );
    let markdown = stdout(&[Path::new("compare"), &blamed, &after], &["--markdown"]);
    assert!(markdown.contains("**blame shift — wakeup**"), "{markdown}");
    assert!(
        markdown.contains("| run_queue | 87 % | 9.7 % | -77.4 pp |"),
        "{markdown}"
    );
    let comparison = json_stdout(
        cauda()
            .arg("compare")
            .arg(&blamed)
            .arg(&after)
            .arg("--json")
            .output()
            .unwrap(),
    );
    assert_valid(&validator("compare.schema.json"), &comparison);
    let mut bad = comparison.clone();
    bad["blame"]["shifts"][0]["causes"][0]["base_share"] = json!(87);
    assert!(!validator("compare.schema.json").is_valid(&bad));
    let shift = &comparison["blame"]["shifts"][0];
    assert_eq!(
        (shift["base_slow"].as_u64(), shift["new_slow"].as_u64()),
        (Some(40), Some(15))
    );
    assert_eq!(shift["causes"][0]["cause"], "run_queue");
    let plain_comparison = json_stdout(
        cauda()
            .arg("compare")
            .arg(&plain)
            .arg(&plain)
            .arg("--json")
            .output()
            .unwrap(),
    );
    assert!(plain_comparison.get("blame").is_none());
}
