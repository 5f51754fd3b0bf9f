//! What cauda writes opens in the HdrHistogram ecosystem: an `.hlog` from
//! `cauda convert` and from `cauda timer --hlog` is read by HdrHistogram_py
//! (PyPI `hdrhistogram`) and by Java HdrHistogram's `HistogramLogReader` and
//! `HistogramLogProcessor` (Maven Central `org.hdrhistogram:HdrHistogram`),
//! with the same counts and percentiles cauda reports.
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

fn hlogs(dir: &Path) -> Vec<(PathBuf, &'static str)> {
    // A deterministic one: the sockperf fixture converted to an .hlog.
    let converted = dir.join("rtt.hlog");
    cauda()
        .arg("convert")
        .arg(fixture("sockperf/tcp.csv"))
        .args(["--to", "hlog", "--log-interval", "100ms", "-o"])
        .arg(&converted)
        .assert()
        .success();
    // And one streamed by a live run.
    let streamed = dir.join("timer.hlog");
    let hlog = streamed.to_str().unwrap();
    common::timer_run(
        &dir.join("timer.json"),
        &[
            "--runtime",
            "1500ms",
            "--interval-length",
            "500ms",
            "--hlog",
            hlog,
        ],
    );
    vec![(converted, "rtt"), (streamed, "wakeup")]
}

#[test]
fn hdrhistogram_py_reads_caudas_logs() {
    let probe = StdCommand::new("python3")
        .args(["-c", "import hdrh"])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        return skip("python3 with the hdrhistogram package (pip install hdrhistogram)");
    }
    let dir = tempfile::tempdir().unwrap();
    for (path, tag) in hlogs(dir.path()) {
        let out = StdCommand::new("python3")
            .arg(root().join("tests/interop/read_hlog.py"))
            .arg(&path)
            .args(["--tag", tag, "--rank", "ceil"])
            .output()
            .unwrap();
        let got = json_stdout(out);
        agree("HdrHistogram_py", &got, &cauda_summary(&path, tag));
    }
}

#[test]
fn java_hdrhistogram_reads_caudas_logs() {
    let has = |tool: &str| {
        StdCommand::new(tool)
            .arg("-version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !has("java") || !has("javac") {
        return skip("java and javac (OpenJDK) with Maven to fetch org.hdrhistogram:HdrHistogram");
    }
    let dir = tempfile::tempdir().unwrap();
    for (path, tag) in hlogs(dir.path()) {
        let out = StdCommand::new("bash")
            .arg(root().join("tests/interop/run_java.sh"))
            .arg(&path)
            .args(["--tag", tag])
            .output()
            .unwrap();
        if out.status.code() == Some(3) {
            return skip(&format!(
                "Java HdrHistogram unavailable: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let got = json_stdout(out);
        agree("Java HistogramLogReader", &got, &cauda_summary(&path, tag));

        // HistogramLogProcessor's percentile distribution, read back by cauda.
        let version = std::env::var("HDRHISTOGRAM_VERSION").unwrap_or_else(|_| "2.2.2".into());
        let cache = std::env::var("CAUDA_INTEROP_CACHE")
            .unwrap_or_else(|_| format!("{}/cauda-interop-java", std::env::temp_dir().display()));
        let jar = format!("{cache}/HdrHistogram-{version}.jar");
        let out_base = dir.path().join(format!("{tag}-processed"));
        let status = StdCommand::new("java")
            .args(["-cp", &jar, "org.HdrHistogram.HistogramLogProcessor", "-i"])
            .arg(&path)
            .args(["-tag", tag, "-outputValueUnitRatio", "1", "-o"])
            .arg(&out_base)
            .status()
            .unwrap();
        assert!(
            status.success(),
            "HistogramLogProcessor failed on {}",
            path.display()
        );
        let hgrm = out_base.with_extension("hgrm");
        // -outputValueUnitRatio 1: the values are nanoseconds.
        let processed =
            common::series(&common::summaries(&hgrm, &["--unit", "ns"]), "hgrm").clone();
        assert_eq!(
            processed["count"],
            cauda_summary(&path, tag)["count"],
            "HistogramLogProcessor count"
        );
    }
}
