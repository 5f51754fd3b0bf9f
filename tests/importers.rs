//! Importers against fixtures made by the real tools (see
//! tests/fixtures/README.md), checked against answers computed without
//! cauda: exact order statistics, or the writing tool's own numbers.

mod common;
use common::{analyze_json, cauda, fixture, series, succeeded};

use predicates::prelude::*;
use serde_json::Value;

fn expected(path: &str) -> Value {
    common::read_json(&fixture(path))
}

/// `cauda analyze --json` of a fixture: tag → summary.
fn analyze(path: &str, extra: &[&str]) -> Vec<(String, Value)> {
    common::summaries(&fixture(path), extra)
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

/// Percentiles within `tolerance(want)` of the known answers.
fn check_percentiles(
    what: &str,
    got: &Value,
    want: &Value,
    scale: u64,
    tolerance: impl Fn(u64) -> u64,
) {
    for (key, ours) in [
        ("p50", "50"),
        ("p90", "90"),
        ("p99", "99"),
        ("p999", "99.9"),
    ] {
        let Some(w) = want[key].as_u64() else {
            continue;
        };
        let w = w * scale;
        let g = u(&got["percentiles"][ours]);
        assert!(
            g.abs_diff(w) <= tolerance(w),
            "{what} {key}: cauda {g}, expected {w}"
        );
    }
}

fn tenth_percent(v: u64) -> u64 {
    v / 1000 + 1
}

#[test]
fn fio_latency_logs_match_exact_order_statistics() {
    for variant in ["nooffset", "offset", "prio", "rw"] {
        for metric in ["clat", "slat", "lat"] {
            let name = format!("fio/lat_{variant}_{metric}.1");
            let all = analyze(&format!("{name}.log"), &[]);
            let want = expected(&format!("{name}.expected.json"));
            for (dir, w) in want["by_ddir"].as_object().unwrap() {
                let got = series(&all, &format!("{dir}.{metric}"));
                assert_eq!(u(&got["count"]), u(&w["count"]), "{name} {dir}");
                assert_eq!(u(&got["min"]), u(&w["min"]), "{name} {dir}");
                assert_eq!(u(&got["max"]), u(&w["max"]), "{name} {dir}");
                check_percentiles(&name, got, w, 1, tenth_percent);
            }
        }
    }
}

#[test]
fn fio_averaged_logs_are_refused_with_the_reason() {
    cauda()
        .arg("analyze")
        .arg(fixture("fio/avg_clat.1.log"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("log_avg_msec=0"));
}

#[test]
fn fio_histogram_logs_match_fio_bins() {
    for name in ["fio/hist_clat_hist.1", "fio/hist_rw_clat_hist.1"] {
        let all = analyze(&format!("{name}.log"), &[]);
        let want = expected(&format!("{name}.expected.json"));
        let total: u64 = all.iter().map(|(_, s)| u(&s["count"])).sum();
        assert_eq!(total, u(&want["all"]["count"]), "{name}");
        if all.len() == 1 {
            for (key, ours) in [
                ("p50", "50"),
                ("p90", "90"),
                ("p99", "99"),
                ("p999", "99.9"),
            ] {
                let fio_value = u(&want["all"][key]["fio_value_ns"]);
                let g = u(&all[0].1["percentiles"][ours]);
                assert!(
                    g.abs_diff(fio_value) <= tenth_percent(fio_value),
                    "{name} {key}: {g} vs {fio_value}"
                );
            }
        }
    }
}

/// Width of fio's histogram bucket holding `v` ns.
fn fio_bucket(v: u64) -> u64 {
    if v < 128 {
        1
    } else {
        1 << (63 - v.leading_zeros() - 6)
    }
}

#[test]
fn fio_json_plus_is_within_one_fio_bucket_of_fios_percentiles() {
    for name in [
        "fio/randread.jsonplus",
        "fio/randrw.jsonplus",
        "fio/hist.jsonplus",
    ] {
        let all = analyze(name, &[]);
        let doc = expected(name);
        let job = &doc["jobs"][0];
        for dir in ["read", "write"] {
            let clat = &job[dir]["clat_ns"];
            if clat["N"].as_u64().unwrap_or(0) == 0 {
                continue;
            }
            let got = series(&all, &format!("{dir}.clat"));
            assert_eq!(u(&got["count"]), u(&clat["N"]));
            assert_eq!(u(&got["min"]), u(&clat["min"]));
            assert_eq!(u(&got["max"]), u(&clat["max"]));
            for (fio_key, ours) in [
                ("50.000000", "50"),
                ("90.000000", "90"),
                ("99.000000", "99"),
                ("99.900000", "99.9"),
            ] {
                let f = u(&clat["percentile"][fio_key]);
                let g = u(&got["percentiles"][ours]);
                assert!(
                    g.abs_diff(f) <= fio_bucket(f) + tenth_percent(f),
                    "{name} {dir} p{ours}: {g} vs fio {f}"
                );
            }
        }
    }
}

#[test]
fn fio_plain_json_keeps_fios_percentiles_and_says_so() {
    let doc = analyze_json(&fixture("fio/randread.json"), &[]);
    let fio = expected("fio/randread.json");
    let clat = &fio["jobs"][0]["read"]["clat_ns"];
    let s = doc["inputs"][0]["series"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["tag"] == "read.clat")
        .unwrap();
    assert_eq!(s["percentiles_only"], true);
    assert_eq!(
        s["summary"]["percentiles"]["99"],
        clat["percentile"]["99.000000"]
    );
    assert_eq!(
        s["summary"]["percentiles"]["99.99"],
        clat["percentile"]["99.990000"]
    );
    assert_eq!(s["summary"]["count"], clat["N"]);
    assert_eq!(s["summary"]["mad"], Value::Null);
}

#[test]
fn sockperf_logs_give_the_full_round_trip() {
    for proto in ["tcp", "udp"] {
        let all = analyze(&format!("sockperf/{proto}.csv"), &[]);
        let want = &expected(&format!("sockperf/{proto}.expected.json"))["rtt_ns"];
        let got = series(&all, "rtt");
        assert_eq!(u(&got["count"]), u(&want["count"]));
        assert_eq!(u(&got["min"]), u(&want["min"]));
        assert_eq!(u(&got["max"]), u(&want["max"]));
        check_percentiles(proto, got, want, 1, tenth_percent);
    }
}

#[test]
fn cyclictest_histograms_within_their_microsecond_bucket() {
    for (file, want) in [
        ("cyclictest/hist.txt", "cyclictest/hist.expected.json"),
        ("cyclictest/run.json", "cyclictest/hist.expected.json"),
        (
            "cyclictest/hist_overflow.txt",
            "cyclictest/hist_overflow.expected.json",
        ),
    ] {
        let all = analyze(file, &[]);
        let want = expected(want);
        for (thread, w) in want["per_thread"].as_object().unwrap() {
            let got = series(&all, &format!("thread{thread}"));
            assert_eq!(u(&got["count"]), u(&w["count"]), "{file}");
            assert_eq!(u(&got["min"]), u(&w["min"]) * 1000, "{file}");
            assert_eq!(u(&got["max"]), u(&w["max"]) * 1000, "{file}");
            check_percentiles(file, got, w, 1000, |v| 1000 + tenth_percent(v));
        }
    }
}

#[test]
fn hdrhistogram_logs_from_java_and_python() {
    let all = analyze("hdr/java.hlog", &[]);
    let want = expected("hdr/java.expected.json");
    for (tag, ours) in [
        ("untagged", "default"),
        ("read", "read"),
        ("write", "write"),
    ] {
        let w = &want["tags"][tag];
        let got = series(&all, ours);
        assert_eq!(u(&got["count"]), u(&w["count"]), "{tag}");
        check_percentiles(tag, got, w, 1, tenth_percent);
        assert!(u(&got["max"]).abs_diff(u(&w["max"])) <= tenth_percent(u(&w["max"])));
    }
    let all = analyze("hdr/python.hlog", &[]);
    let w = &expected("hdr/python.expected.json")["all_ceil_rank"];
    let got = series(&all, "default");
    assert_eq!(u(&got["count"]), u(&w["count"]));
    check_percentiles("python", got, w, 1, tenth_percent);
}

/// Logs written by the Java HdrHistogram versions jHiccup 2.0.2 (1.1.4:
/// V0 histograms), 2.0.4 (2.0.3: V1) and 2.0.6 (2.1.6: V1) used, read exactly as
/// Java reads them: the writing library's own figures (as bucket tops, 2.x's
/// convention) and those today's Java reader (2.2.2) gives for the same file.
#[test]
fn old_java_logs_with_v0_and_v1_histograms_give_javas_figures() {
    use base64::Engine;
    // The cookies each version writes in a log (deflated, word size added;
    // 2.1.6 writes 2-byte counts when an interval holds under 32767 values).
    for (version, cookie) in [
        ("1.1.4", 0x1c84_9389u32),
        ("2.0.3", 0x1c84_9382),
        ("2.1.6", 0x1c84_9322),
    ] {
        let name = format!("hdr/java-{version}");
        let text = std::fs::read_to_string(fixture(&format!("{name}.hlog"))).unwrap();
        let lines: Vec<&str> = text.lines().filter(|l| l.contains(",HIST")).collect();
        assert_eq!(lines.len(), 5, "{name}");
        for line in lines {
            let encoded = line.rsplit(',').next().unwrap();
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .unwrap();
            assert_eq!(bytes[..4], cookie.to_be_bytes(), "{name}: {line}");
        }
        let all = analyze(&format!("{name}.hlog"), &[]);
        let got = series(&all, "default");
        let writer = &expected(&format!("{name}.expected.json"))["top"];
        let reader = expected(&format!("{name}.reader-2.2.2.expected.json"));
        for (who, want) in [("the writer", writer), ("Java 2.2.2", &reader)] {
            for key in ["count", "min", "max"] {
                assert_eq!(u(&got[key]), u(&want[key]), "{name} {key} vs {who}");
            }
            check_percentiles(&format!("{name} vs {who}"), got, want, 1, |_| 0);
        }
    }
}

#[test]
fn hgrm_from_java_is_read_in_the_unit_given() {
    let all = analyze("hdr/java.hgrm", &["--unit", "us"]);
    let want = &expected("hdr/java.expected.json")["all"];
    let got = series(&all, "hgrm");
    assert_eq!(u(&got["count"]), u(&want["count"]));
    // An .hgrm holds points at its own percentile steps: the value at p is
    // the first point at or above p, an upper bound within the next step.
    for (key, ours) in [("p50", "50"), ("p90", "90"), ("p99", "99")] {
        let (w, g) = (u(&want[key]), u(&got["percentiles"][ours]));
        assert!(g + 1 >= w && g <= w + w / 10, "hgrm {key}: {g} vs {w}");
    }
}

fn refused(file: &std::path::Path, extra: &[&str], needle: &str) {
    let mut args = vec![
        std::ffi::OsString::from("analyze"),
        file.as_os_str().to_owned(),
    ];
    args.extend(extra.iter().map(std::ffi::OsString::from));
    common::refused(&args, needle);
}

#[test]
fn damaged_inputs_name_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, bytes: &[u8]| {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    };
    // Truncated files: a cut fio log line, a cut hlog histogram, a cut gzip.
    let lat = std::fs::read(fixture("fio/lat_offset_clat.1.log")).unwrap();
    refused(
        &write("cut.log", &lat[..lat.len() - 9]),
        &[],
        "cut.log:1000: the last line is cut short",
    );
    let hlog = std::fs::read_to_string(fixture("hdr/java.hlog")).unwrap();
    // A cut last line of an interval log is left out, named, and the rest kept.
    cauda()
        .arg("analyze")
        .arg(write("cut.hlog", &hlog.as_bytes()[..hlog.len() - 40]))
        .assert()
        .success()
        .stderr(predicate::str::contains("cut.hlog:").and(predicate::str::contains("cut short")));
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, hlog.as_bytes()).unwrap();
    let gz = gz.finish().unwrap();
    refused(
        &write("cut.hlog.gz", &gz[..gz.len() / 2]),
        &[],
        "gzip stream is truncated",
    );
    // Wrong column counts, negative values, NaN, numbers past u64.
    refused(
        &write("cols.log", b"0, 100, 0, 4096, 0\n1, 200, 0\n"),
        &[],
        "cols.log:2:",
    );
    refused(
        &write("neg.log", b"0, 100, 0, 4096, 0\n1, -200, 0, 4096, 0\n"),
        &[],
        "neg.log:2:",
    );
    refused(&write("nan.txt", b"1\nNaN\n"), &[], "nan.txt:2:");
    refused(
        &write("big.txt", b"1\n99999999999999999999999\n"),
        &[],
        "big.txt:2:",
    );
    refused(
        &write("big.log", b"0, 99999999999999999999999, 0, 4096, 0\n"),
        &[],
        "big.log:1:",
    );
    let sock = std::fs::read_to_string(fixture("sockperf/tcp.csv")).unwrap();
    refused(
        &write(
            "sock.csv",
            sock.replacen(", 2.404258214,", ", x,", 1).as_bytes(),
        ),
        &[],
        "rxTime 'x'",
    );
    // Empty files and a format forced on the wrong content.
    refused(&write("empty.log", b""), &[], "empty");
    refused(
        &fixture("fio/randread.json"),
        &["--format", "hlog"],
        "randread.json:1:",
    );
    refused(
        &fixture("sockperf/tcp.csv"),
        &["--format", "fio-lat-log"],
        "tcp.csv:1:",
    );
    refused(
        &fixture("hdr/java.hlog"),
        &["--format", "cyclictest-hist"],
        "java.hlog:",
    );
    refused(
        &fixture("cyclictest/hist.txt"),
        &["--format", "fio-json"],
        "hist.txt:",
    );
}

#[test]
fn gzip_inputs_read_like_the_original() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read(fixture("sockperf/tcp.csv")).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, &text).unwrap();
    std::fs::write(dir.path().join("tcp.csv.gz"), gz.finish().unwrap()).unwrap();
    let plain = analyze("sockperf/tcp.csv", &[]);
    let gz = common::summaries(&dir.path().join("tcp.csv.gz"), &[]);
    assert_eq!(gz[0].1, plain[0].1);
}

#[test]
fn percentiles_only_inputs_cannot_be_merged_or_converted() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("m.json");
    for args in [vec!["merge", "-o"], vec!["convert", "--to", "hlog", "-o"]] {
        let mut full: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
        full.push(out.clone().into());
        full.push(fixture("fio/randread.json").into());
        common::refused(&full, "holds only the percentiles");
    }
    assert!(!out.exists(), "nothing written");
}

#[test]
fn a_log_ending_mid_interval_is_not_a_collapse() {
    // 10.2 s of one I/O per ms: the last interval is 0.2 s long, not a stall.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("job_clat.1.log");
    let text: String = (0..10_200)
        .map(|t| format!("{t}, {}, 0, 4096\n", 50_000 + t % 7))
        .collect();
    std::fs::write(&log, text).unwrap();
    let out = common::cauda()
        .arg("analyze")
        .arg(&log)
        .arg("--json")
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let series = &doc["inputs"][0]["series"][0];
    assert_eq!(
        series["stalls"].as_array().unwrap().len(),
        0,
        "{}",
        series["stalls"]
    );
}

/// The fio per-I/O log fixture cut into 10 ms intervals (about a hundred)
/// and converted to `to` (`hlog`, `json`) in `dir`.
fn fio_log_as(dir: &tempfile::TempDir, to: &str) -> std::path::PathBuf {
    let out = dir.path().join(format!("fio.{to}"));
    cauda()
        .arg("convert")
        .arg(fixture("fio/lat_offset_clat.1.log"))
        .args(["--log-interval", "10ms", "--to", to, "-o"])
        .arg(&out)
        .assert()
        .success();
    out
}

#[test]
fn a_torn_last_line_of_an_hlog_keeps_every_complete_interval() {
    // A log cut mid-line, as a full disk or a copy taken mid-write leaves it.
    let dir = tempfile::tempdir().unwrap();
    let hlog = fio_log_as(&dir, "hlog");
    let whole = std::fs::read(&hlog).unwrap();
    let complete = analyze_json(&hlog, &["--timeline"]);
    std::fs::write(&hlog, &whole[..whole.len() - 10]).unwrap();
    let out = succeeded(
        cauda()
            .arg("analyze")
            .arg(&hlog)
            .args(["--json", "--timeline"])
            .output()
            .unwrap(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cut short and was left out"), "{stderr}");
    let torn: Value = serde_json::from_slice(&out.stdout).unwrap();
    let timeline = |doc: &Value| {
        doc["inputs"][0]["series"][0]["timeline"]
            .as_array()
            .unwrap()
            .clone()
    };
    // Exactly the last interval is missing; every other one is kept as it was.
    let (all, kept) = (timeline(&complete), timeline(&torn));
    assert!(all.len() > 50);
    assert_eq!(kept.len(), all.len() - 1);
    assert_eq!(kept[..], all[..kept.len()]);
}

#[test]
fn run_files_whose_figures_disagree_are_refused_naming_series_and_interval() {
    let dir = tempfile::tempdir().unwrap();
    let good = fio_log_as(&dir, "json");
    let run: Value = serde_json::from_slice(&std::fs::read(&good).unwrap()).unwrap();
    let tag = run["series"][0]["tag"].as_str().unwrap().to_string();
    let damaged = |name: &str, edit: &dyn Fn(&mut Value)| {
        let mut doc = run.clone();
        edit(&mut doc);
        let path = dir.path().join(name);
        std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
        path
    };
    let interval = |doc: &mut Value, i: usize, key: &str, value: Value| {
        doc["series"][0]["intervals"][i][key] = value;
    };
    let cases: Vec<(std::path::PathBuf, String)> = vec![
        (
            damaged("sum.json", &|d| interval(d, 3, "sum", Value::from(1u64))),
            format!("series '{tag}', interval 3: sum 1 is outside"),
        ),
        (
            damaged("minmax.json", &|d| {
                let max = d["series"][0]["intervals"][2]["max"].clone();
                interval(d, 2, "min", Value::from(max.as_u64().unwrap() + 1));
            }),
            format!("series '{tag}', interval 2: min"),
        ),
        (
            damaged("overlap.json", &|d| {
                interval(d, 5, "start_ns", Value::from(0u64))
            }),
            format!("series '{tag}', interval 5 starts at 0 ns, before the previous one ends"),
        ),
        (
            damaged("twice.json", &|d| {
                let first = d["series"][0].clone();
                d["series"].as_array_mut().unwrap().push(first);
            }),
            format!("two series are tagged '{tag}'"),
        ),
    ];
    for (path, needle) in cases {
        cauda()
            .arg("analyze")
            .arg(&path)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(needle));
    }
    // The file as written is accepted.
    cauda().arg("analyze").arg(&good).assert().success();
}
