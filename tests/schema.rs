//! Machine output validates against the JSON Schemas shipped in `schemas/`:
//! a real run file and a real `analyze --json` output.

use assert_cmd::Command;
use serde_json::Value;

fn schema(name: &str) -> Value {
    let path = format!("{}/schemas/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn validator(name: &str) -> jsonschema::Validator {
    let run = schema("run.schema.json");
    jsonschema::options()
        .with_resource(
            "https://cauda.dev/schemas/run.schema.json",
            jsonschema::Resource::from_contents(run).unwrap(),
        )
        .build(&schema(name))
        .unwrap()
}

fn assert_valid(validator: &jsonschema::Validator, doc: &Value) {
    let errors: Vec<String> = validator
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn real_outputs_match_their_schemas() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run.json");
    Command::cargo_bin("cauda")
        .unwrap()
        .args([
            "timer",
            "--runtime",
            "1200ms",
            "--arrivals",
            "poisson",
            "-q",
            "-o",
        ])
        .arg(&run)
        .assert()
        .success();
    let doc: Value = serde_json::from_slice(&std::fs::read(&run).unwrap()).unwrap();
    assert_valid(&validator("run.schema.json"), &doc);

    let numbers = dir.path().join("n.txt");
    std::fs::write(&numbers, "5\n7\n").unwrap();
    let out = Command::cargo_bin("cauda")
        .unwrap()
        .arg("analyze")
        .arg(&run)
        .arg(&numbers)
        .args(["--json", "--percentiles", "0,50,99.999,100"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let analysis: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_valid(&validator("analysis.schema.json"), &analysis);

    let out = Command::cargo_bin("cauda")
        .unwrap()
        .arg("analyze")
        .arg(&run)
        .args([
            "--json",
            "--fanout",
            "10",
            "--timeline",
            "--expected-interval",
            "1ms",
        ])
        .output()
        .unwrap();
    let analysis: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(analysis["inputs"][0]["series"][0]["fanout"].is_object());
    assert_valid(&validator("analysis.schema.json"), &analysis);

    let out = Command::cargo_bin("cauda")
        .unwrap()
        .arg("compare")
        .arg(&run)
        .arg(&numbers)
        .arg("--json")
        .output()
        .unwrap();
    assert!(out.status.success());
    let comparison: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_valid(&validator("compare.schema.json"), &comparison);
}

#[test]
fn the_schema_rejects_a_broken_run_file() {
    let bad = serde_json::json!({"schema": "cauda.run/1", "probe": "timer"});
    assert!(!validator("run.schema.json").is_valid(&bad));
}
