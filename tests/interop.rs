//! What cauda writes opens in the HdrHistogram ecosystem: an `.hlog` from
//! `cauda convert` and from `cauda timer --hlog` is read by HdrHistogram_py
//! (PyPI `hdrhistogram`) and by Java HdrHistogram's `HistogramLogReader` and
//! `HistogramLogProcessor` (Maven Central `org.hdrhistogram:HdrHistogram`),
//! with the same counts and percentiles cauda reports. The run's main series
//! is untagged, so the tools read it without a tag (`HistogramLogProcessor
//! -i run.hlog` reads only untagged lines); the others by `Tag=`.
//!
//! `.ci/run` installs both and sets `CAUDA_REQUIRE_INTEROP=1`, so there a
//! missing reader fails the test; elsewhere it is skipped with the reason.

use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;

use serde_json::Value;

mod common;
use common::{cauda, fixture, json_stdout};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn required() -> bool {
    std::env::var("CAUDA_REQUIRE_INTEROP").is_ok_and(|v| v == "1")
}

fn skip(why: &str) {
    assert!(!required(), "interop reader unavailable in CI: {why}");
    eprintln!("skipped: {why}");
}

/// cauda's own answer for one series of a file: count and percentiles.
fn cauda_summary(path: &Path, tag: &str) -> Value {
    common::series(&common::summaries(path, &[]), tag).clone()
}

/// The reader's JSON must agree with cauda: count exact, percentiles within 0.1 %.
fn agree(reader: &str, got: &Value, ours: &Value) {
    assert_eq!(got["count"], ours["count"], "{reader}: count");
    for (theirs, key) in [
        ("p50", "50"),
        ("p90", "90"),
        ("p99", "99"),
        ("p999", "99.9"),
    ] {
        let (g, o) = (
            got[theirs].as_u64().unwrap(),
            ours["percentiles"][key].as_u64().unwrap(),
        );
        assert!(
            g.abs_diff(o) <= o / 1000 + 1,
            "{reader} {theirs}: {g} vs cauda {o}"
        );
    }
}

/// A log cauda wrote, and its series: `None` is the main (untagged) one.
struct Log {
    path: PathBuf,
    series: Vec<(Option<&'static str>, &'static str)>,
}

fn hlogs(dir: &Path) -> Vec<Log> {
    // A deterministic one: the sockperf fixture converted to an .hlog.
    let converted = dir.join("rtt.hlog");
    cauda()
        .arg("convert")
        .arg(fixture("sockperf/tcp.csv"))
        .args(["--to", "hlog", "--log-interval", "100ms", "-o"])
        .arg(&converted)
        .assert()
        .success();
    // One streamed by a live run, and the same run converted (with its
    // `self` control series, tagged).
    let streamed = dir.join("timer.hlog");
    let run = dir.join("timer.json");
    common::timer_run(
        &run,
        &[
            "--runtime",
            "1500ms",
            "--interval-length",
            "500ms",
            "--hlog",
            streamed.to_str().unwrap(),
        ],
    );
    let run_converted = dir.join("timer-converted.hlog");
    to_hlog(&run, &run_converted);
    vec![
        Log {
            path: converted,
            series: vec![(None, "rtt")],
        },
        Log {
            path: streamed,
            series: vec![(None, "wakeup")],
        },
        Log {
            path: run_converted,
            series: vec![(None, "wakeup"), (Some("self"), "self")],
        },
    ]
}

fn has_hdrh() -> bool {
    StdCommand::new("python3")
        .args(["-c", "import hdrh"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// HdrHistogram_py's figures for one series (`None`: the untagged lines).
fn python_reads(path: &Path, tag: Option<&str>) -> Value {
    let mut command = StdCommand::new("python3");
    command
        .arg(root().join("tests/interop/read_hlog.py"))
        .arg(path);
    match tag {
        Some(tag) => command.args(["--tag", tag]),
        None => command.arg("--untagged"),
    };
    json_stdout(command.args(["--rank", "ceil"]).output().unwrap())
}

#[test]
fn hdrhistogram_py_reads_caudas_logs() {
    if !has_hdrh() {
        return skip("python3 with the hdrhistogram package (pip install hdrhistogram)");
    }
    let dir = tempfile::tempdir().unwrap();
    for log in hlogs(dir.path()) {
        for (selector, tag) in &log.series {
            let got = python_reads(&log.path, *selector);
            agree(
                &format!("HdrHistogram_py on {}", log.path.display()),
                &got,
                &cauda_summary(&log.path, tag),
            );
        }
    }
}

fn has_java() -> bool {
    let has = |tool: &str| {
        StdCommand::new(tool)
            .arg("-version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    has("java") && has("javac")
}

/// The HdrHistogram jar `run_java.sh` fetched (run it first).
fn java_jar() -> String {
    let version = std::env::var("HDRHISTOGRAM_VERSION").unwrap_or_else(|_| "2.2.2".into());
    let cache = std::env::var("CAUDA_INTEROP_CACHE")
        .unwrap_or_else(|_| format!("{}/cauda-interop-java", std::env::temp_dir().display()));
    format!("{cache}/HdrHistogram-{version}.jar")
}

/// Java `HistogramLogReader`'s figures (`None`: the untagged lines), or
/// `None` when Java HdrHistogram cannot be had (the reason on stderr).
fn java_reads(path: &Path, tag: Option<&str>) -> Result<Value, String> {
    let mut command = StdCommand::new("bash");
    command
        .arg(root().join("tests/interop/run_java.sh"))
        .arg(path);
    match tag {
        Some(tag) => command.args(["--tag", tag]),
        None => command.arg("--untagged"),
    };
    let out = command.output().unwrap();
    if out.status.code() == Some(3) {
        return Err(format!(
            "Java HdrHistogram unavailable: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(json_stdout(out))
}

#[test]
fn java_hdrhistogram_reads_caudas_logs() {
    if !has_java() {
        return skip("java and javac (OpenJDK) with Maven to fetch org.hdrhistogram:HdrHistogram");
    }
    let dir = tempfile::tempdir().unwrap();
    for log in hlogs(dir.path()) {
        for (selector, tag) in &log.series {
            let got = match java_reads(&log.path, *selector) {
                Ok(got) => got,
                Err(why) => return skip(&why),
            };
            agree(
                &format!("Java HistogramLogReader on {}", log.path.display()),
                &got,
                &cauda_summary(&log.path, tag),
            );
        }
    }
}

/// `HistogramLogProcessor -i FILE [-tag TAG] -outputValueUnitRatio 1 -o
/// BASE`: the totals of its last row (count, p50, p90, p99, p99.9) as JSON,
/// and the count of its percentile distribution (`BASE.hgrm`) read by cauda.
fn log_processor(path: &Path, tag: Option<&str>, out_base: &Path) -> (Value, Value) {
    let mut command = StdCommand::new("java");
    command
        .args([
            "-cp",
            &java_jar(),
            "org.HdrHistogram.HistogramLogProcessor",
            "-i",
        ])
        .arg(path);
    if let Some(tag) = tag {
        command.args(["-tag", tag]);
    }
    let out = command
        .args(["-outputValueUnitRatio", "1", "-o"])
        .arg(out_base)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "HistogramLogProcessor failed on {} (tag {tag:?}): {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    // Rows "TIME: I:COUNT ( P50 P90 MAX ) T:COUNT ( P50 P90 P99 P99.9 P99.99
    // MAX )": the totals so far, so the last row's are the whole log's.
    let rows = std::fs::read_to_string(out_base).unwrap();
    let last = rows.lines().rev().find(|l| l.contains(" T:")).unwrap();
    let totals: Vec<u64> = last
        .split(" T:")
        .nth(1)
        .unwrap()
        .split(|c: char| c.is_whitespace() || c == '(' || c == ')')
        .filter(|f| !f.is_empty())
        .map(|f| f.parse::<f64>().unwrap().round() as u64)
        .collect();
    assert_eq!(totals.len(), 7, "{last}");
    let totals = serde_json::json!({
        "count": totals[0], "p50": totals[1], "p90": totals[2], "p99": totals[3], "p999": totals[4],
    });
    // -outputValueUnitRatio 1: the values are nanoseconds.
    let hgrm = out_base.with_extension("hgrm");
    let processed = common::series(&common::summaries(&hgrm, &["--unit", "ns"]), "hgrm").clone();
    (totals, processed)
}

#[test]
fn java_log_processor_reads_the_main_series_without_a_tag() {
    if !has_java() {
        return skip("java and javac (OpenJDK) with Maven to fetch org.hdrhistogram:HdrHistogram");
    }
    let dir = tempfile::tempdir().unwrap();
    for (k, log) in hlogs(dir.path()).into_iter().enumerate() {
        // run_java.sh fetches the jar the processor runs from.
        if let Err(why) = java_reads(&log.path, None) {
            return skip(&why);
        }
        for (selector, tag) in &log.series {
            let out_base = dir.path().join(format!("{k}-{tag}-processed"));
            let (totals, processed) = log_processor(&log.path, *selector, &out_base);
            let ours = cauda_summary(&log.path, tag);
            agree(
                &format!(
                    "HistogramLogProcessor -i {} (tag {selector:?})",
                    log.path.display()
                ),
                &totals,
                &ours,
            );
            assert_eq!(processed["count"], ours["count"], "its .hgrm count");
        }
    }
}

/// A log with the V1 histograms of Java HdrHistogram 2.1.6, which
/// HdrHistogram_py cannot read, converted by cauda: V2 that it reads.
#[test]
fn an_old_java_log_converted_opens_in_hdrhistogram_py() {
    if !has_hdrh() {
        return skip("python3 with the hdrhistogram package (pip install hdrhistogram)");
    }
    let old = fixture("hdr/java-2.1.6.hlog");
    let refused = StdCommand::new("python3")
        .arg(root().join("tests/interop/read_hlog.py"))
        .arg(&old)
        .output()
        .unwrap();
    assert!(!refused.status.success(), "HdrHistogram_py read a V1 log");
    let dir = tempfile::tempdir().unwrap();
    let converted = dir.path().join("v2.hlog");
    to_hlog(&old, &converted);
    let got = python_reads(&converted, None);
    let want = common::read_json(&fixture("hdr/java-2.1.6.expected.json"));
    for key in ["count", "min", "max", "p50", "p90", "p99", "p999"] {
        assert_eq!(got[key], want["top"][key], "{key}");
    }
}

/// `cauda convert INPUT --to hlog -o OUT`, which must succeed.
fn to_hlog(input: &Path, out: &Path) {
    cauda()
        .arg("convert")
        .arg(input)
        .args(["--to", "hlog", "-o"])
        .arg(out)
        .assert()
        .success();
}
