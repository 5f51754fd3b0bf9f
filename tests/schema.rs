//! Machine output validates against the JSON Schemas shipped in `schemas/`:
//! a real run file and a real `analyze --json` output.

mod common;
use common::{analyze_json, assert_valid, cauda, json_stdout, timer_run, validator};

#[test]
fn real_outputs_match_their_schemas() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run.json");
    let doc = timer_run(&run, &["--runtime", "1200ms", "--arrivals", "poisson"]);
    assert_valid(&validator("run.schema.json"), &doc);

    let numbers = dir.path().join("n.txt");
    std::fs::write(&numbers, "5\n7\n").unwrap();
    let analysis = json_stdout(
        cauda()
            .arg("analyze")
            .arg(&run)
            .arg(&numbers)
            .args(["--json", "--percentiles", "0,50,99.999,100"])
            .output()
            .unwrap(),
    );
    assert_valid(&validator("analysis.schema.json"), &analysis);

    let analysis = analyze_json(
        &run,
        &["--fanout", "10", "--timeline", "--expected-interval", "1ms"],
    );
    assert!(analysis["inputs"][0]["series"][0]["fanout"].is_object());
    assert_valid(&validator("analysis.schema.json"), &analysis);

    let comparison = json_stdout(
        cauda()
            .arg("compare")
            .arg(&run)
            .arg(&numbers)
            .arg("--json")
            .output()
            .unwrap(),
    );
    assert_valid(&validator("compare.schema.json"), &comparison);
}

#[test]
fn an_open_loop_run_and_its_load_verdict_match_their_schemas() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("net.json");
    let doc = common::saved_run(
        cauda().args([
            "net",
            "--loopback",
            "--rate",
            "1000/s",
            "--runtime",
            "1200ms",
            "-q",
        ]),
        &run,
    );
    assert!(
        doc["offered"].is_object(),
        "an open-loop run has its offered section"
    );
    assert_valid(&validator("run.schema.json"), &doc);
    let analysis = analyze_json(&run, &[]);
    assert!(analysis["inputs"][0]["offered_load"].is_object());
    assert_valid(&validator("analysis.schema.json"), &analysis);
    // The section's fields are checked, not only allowed.
    let mut bad = doc.clone();
    bad["offered"]["offered"] = serde_json::json!([-1]);
    assert!(!validator("run.schema.json").is_valid(&bad));
}

#[test]
fn the_schema_rejects_a_broken_run_file() {
    let bad = serde_json::json!({"schema": "cauda.run/1", "probe": "timer"});
    assert!(!validator("run.schema.json").is_valid(&bad));
}
