//! Helpers shared by the CLI test files.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::path::Path;

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

/// The cauda binary under test.
pub fn cauda() -> Command {
    Command::cargo_bin("cauda").unwrap()
}

/// Runs cauda with `args` and expects exit 2 with `needle` on stderr.
pub fn refused<S: AsRef<OsStr>>(args: &[S], needle: &str) {
    cauda()
        .args(args)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(needle));
}

/// `cauda analyze FILE --json --percentiles 50,90,99,99.9 EXTRA…`: the
/// series as (tag, summary).
pub fn summaries(path: &Path, extra: &[&str]) -> Vec<(String, Value)> {
    let out = cauda()
        .arg("analyze")
        .arg(path)
        .args(["--json", "--percentiles", "50,90,99,99.9"])
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["inputs"][0]["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["tag"].as_str().unwrap().to_string(), s["summary"].clone()))
        .collect()
}

/// The summary of the series tagged `tag`.
pub fn series<'a>(all: &'a [(String, Value)], tag: &str) -> &'a Value {
    &all.iter()
        .find(|(t, _)| t == tag)
        .unwrap_or_else(|| panic!("no series {tag}: {all:?}"))
        .1
}
