//! `cauda convert --to parquet`: the two tables, read back with pyarrow and
//! with DuckDB (PyPI `pyarrow`, `duckdb`; `tests/parquet/read_tables.py`),
//! give exactly — to the nanosecond — the percentiles `cauda analyze`
//! prints: each series' whole-run p50, p99 and p99.9 recomputed from
//! `buckets`, and each interval's p99 both from `buckets` and as `intervals`
//! holds it. Row counts, label columns and the stall flags are checked too,
//! and the output rules: a regular file, a directory holding other files
//! and a corrupt input are refused (exit 2) and left as they were.
//!
//! `.ci/run` installs both readers and sets `CAUDA_REQUIRE_PARQUET=1`, so
//! there a missing reader fails the test; elsewhere it is skipped with the
//! reason.

use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;

use serde_json::Value;

mod common;
use common::{cauda, fixture, json_stdout, succeeded};

fn required() -> bool {
    std::env::var("CAUDA_REQUIRE_PARQUET").is_ok_and(|v| v == "1")
}

/// Whether pyarrow and DuckDB are importable; if not, fails under
/// `CAUDA_REQUIRE_PARQUET=1` and otherwise says why the test is skipped.
fn have_readers() -> bool {
    let found = StdCommand::new("python3")
        .args(["-c", "import pyarrow, duckdb"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        let why = "python3 with pyarrow and duckdb (pip install pyarrow duckdb)";
        assert!(!required(), "Parquet readers unavailable in CI: {why}");
        eprintln!("skipped: {why}");
    }
    found
}

/// `cauda convert INPUTS --to parquet -o DIR`, which must succeed: its stderr.
fn to_parquet(inputs: &[&Path], dir: &Path) -> String {
    let out = succeeded(
        cauda()
            .arg("convert")
            .args(inputs)
            .args(["--to", "parquet", "-o"])
            .arg(dir)
            .output()
            .unwrap(),
    );
    String::from_utf8(out.stderr).unwrap()
}

/// What the readers made of the tables in `dir` (see read_tables.py).
fn read_tables(dir: &Path, histograms: Option<&Path>) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/parquet/read_tables.py");
    let mut command = StdCommand::new("python3");
    command.arg(script).arg(dir);
    if let Some(path) = histograms {
        command.arg("--histograms").arg(path);
    }
    json_stdout(command.output().unwrap())
}

/// Checks the tables read from `input`'s conversion against `cauda analyze`.
fn agrees_with_analyze(input: &Path, read: &Value) {
    let analysis = common::analyze_json(input, &["--percentiles", "50,99,99.9", "--timeline"]);
    let series: Vec<&Value> = analysis["inputs"][0]["series"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["percentiles_only"] != true)
        .collect();
    let (pyarrow, duckdb) = (&read["pyarrow"], &read["duckdb"]);
    for table in ["intervals", "buckets"] {
        assert_eq!(
            pyarrow[table], duckdb[table],
            "{table}: both readers see the same"
        );
    }
    let intervals: u64 = series
        .iter()
        .map(|s| s["intervals"].as_u64().unwrap())
        .sum();
    let values: u64 = series
        .iter()
        .map(|s| s["summary"]["count"].as_u64().unwrap())
        .sum();
    assert_eq!(
        pyarrow["intervals"]["rows"], intervals,
        "a row per interval"
    );
    assert_eq!(pyarrow["intervals"]["values"], values);
    assert_eq!(
        pyarrow["buckets"]["values"], values,
        "every value in a bucket"
    );
    for s in &series {
        let tag = s["tag"].as_str().unwrap();
        for reader in [pyarrow, duckdb] {
            for p in ["50", "99", "99.9"] {
                assert_eq!(
                    reader["whole"][tag][p], s["summary"]["percentiles"][p],
                    "{tag} p{p} from buckets"
                );
            }
        }
        // Each interval: its p99 from buckets, as the table holds it and as
        // analyze's timeline shows it; its stall flag as analyze's stalls.
        let rows = pyarrow["table"][tag].as_array().unwrap();
        let timeline = s["timeline"].as_array().unwrap();
        let stalls = s["stalls"].as_array().unwrap();
        assert_eq!(rows.len(), timeline.len(), "{tag}");
        for (i, (row, point)) in rows.iter().zip(timeline).enumerate() {
            assert_eq!(row["interval"], i as u64);
            assert_eq!(row["count"], point["count"], "{tag} interval {i}");
            let p99 = if row["count"] == 0 {
                Value::Null
            } else {
                point["p99"].clone()
            };
            assert_eq!(
                row["p99_ns"], p99,
                "{tag} interval {i}: p99 as analyze's timeline"
            );
            for reader in [pyarrow, duckdb] {
                assert_eq!(reader["interval_p99"][tag][i], p99, "{tag} interval {i}");
            }
            let start_s = row["start_ns"].as_u64().unwrap() as f64 / 1e9;
            let stalled = stalls.iter().any(|st| {
                st["start_s"].as_f64().unwrap() <= start_s
                    && start_s < st["end_s"].as_f64().unwrap()
            });
            assert_eq!(row["stall"], stalled, "{tag} interval {i}: stall flag");
        }
    }
    if !read["occupied"].is_null() {
        assert_eq!(
            pyarrow["buckets"]["rows"], read["occupied"],
            "a row per occupied bucket"
        );
    }
}

#[test]
fn a_timer_run_reads_back_exactly_in_pyarrow_and_duckdb() {
    if !have_readers() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let run_path = dir.path().join("timer.json");
    // `count` is also a fixed column's name: its column is `label_count`.
    let run = common::timer_run(
        &run_path,
        &[
            "--runtime",
            "3s",
            "--interval-length",
            "500ms",
            "--label",
            "host=a1",
            "--label",
            "count=7",
        ],
    );
    let out = dir.path().join("tables");
    let said = to_parquet(&[&run_path], &out);
    assert!(said.contains("intervals.parquet"), "{said}");
    let read = read_tables(&out, Some(&run_path));
    agrees_with_analyze(&run_path, &read);
    for table in ["intervals", "buckets"] {
        let columns = &read["duckdb"][table]["columns"];
        for label in ["host", "label_count"] {
            assert!(
                columns.as_array().unwrap().contains(&Value::from(label)),
                "{table}: {columns}"
            );
        }
    }
    let start = run["start_unix_ns"].as_u64().unwrap();
    for tag in common::series_tags(&run) {
        for row in read["pyarrow"]["table"][tag].as_array().unwrap() {
            assert_eq!(row["run"], run_path.to_str().unwrap());
            assert_eq!(row["probe"], "timer");
            assert_eq!(row["host"], "a1");
            assert_eq!(row["label_count"], "7");
            assert_eq!(
                row["start_time"].as_u64().unwrap(),
                start + row["start_ns"].as_u64().unwrap(),
                "the interval's UTC start"
            );
        }
    }
}

#[test]
fn other_tools_files_read_back_exactly() {
    if !have_readers() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // A Java HdrHistogram log (every histogram in the log is a table row's).
    let hlog = fixture("hdr/java.hlog");
    let out = dir.path().join("hlog");
    to_parquet(&[&hlog], &out);
    let read = read_tables(&out, Some(&hlog));
    agrees_with_analyze(&hlog, &read);
    for row in read["pyarrow"]["table"]["read"].as_array().unwrap() {
        assert!(
            row["start_time"].is_null() && row["probe"].is_null(),
            "{row}"
        );
    }
    // fio json+: a histogram of clat only; slat and lat, printed as
    // percentiles, are left out with a warning.
    let fio = fixture("fio/randread.jsonplus");
    let out = dir.path().join("fio");
    let said = to_parquet(&[&fio], &out);
    assert!(
        said.contains("warning") && said.contains("read.slat"),
        "{said}"
    );
    let read = read_tables(&out, None);
    agrees_with_analyze(&fio, &read);
    let tags: Vec<&String> = read["pyarrow"]["table"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(tags, ["read.clat"]);
}

/// What pyarrow reads from the tables' footers (see check_metadata.py).
fn read_metadata(dir: &Path) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/parquet/check_metadata.py");
    json_stdout(
        StdCommand::new("python3")
            .arg(script)
            .arg(dir)
            .output()
            .unwrap(),
    )
}

/// Each column's physical type, logical type and repetition, as pyarrow
/// names them.
const INTERVALS: [(&str, &str); 18] = [
    ("run", "BYTE_ARRAY String required"),
    ("probe", "BYTE_ARRAY String optional"),
    ("series", "BYTE_ARRAY String required"),
    ("interval", "INT64 None required"),
    ("start_ns", "INT64 None required"),
    (
        "start_time",
        "INT64 Timestamp(isAdjustedToUTC=true, timeUnit=nanoseconds, \
         is_from_converted_type=false, force_set_converted_type=false) optional",
    ),
    ("length_ns", "INT64 None required"),
    ("count", "INT64 None required"),
    ("min_ns", "INT64 None optional"),
    ("max_ns", "INT64 None optional"),
    ("sum_ns", "INT64 None required"),
    ("mean_ns", "DOUBLE None optional"),
    ("p50_ns", "INT64 None optional"),
    ("p90_ns", "INT64 None optional"),
    ("p99_ns", "INT64 None optional"),
    ("p99_9_ns", "INT64 None optional"),
    ("p99_99_ns", "INT64 None optional"),
    ("stall", "BOOLEAN None required"),
];
const BUCKETS: [(&str, &str); 6] = [
    ("run", "BYTE_ARRAY String required"),
    ("series", "BYTE_ARRAY String required"),
    ("interval", "INT64 None required"),
    ("start_ns", "INT64 None required"),
    ("value_ns", "INT64 None required"),
    ("count", "INT64 None required"),
];

/// A table past one row group (2^20 rows) and many pages (20,000 rows
/// each): a short timer run's intervals repeated, one after another, until
/// `buckets` has 1.1 M rows. Its footers, as pyarrow reads them, hold the
/// right row counts per row group, column types and key-value metadata,
/// and statistics that match the data; the data, read by both readers,
/// still gives analyze's percentiles.
#[test]
fn a_table_of_two_row_groups_has_a_true_footer() {
    if !have_readers() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let short = dir.path().join("short.json");
    common::timer_run(
        &short,
        &[
            "--runtime",
            "1s",
            "--interval",
            "100us",
            "--interval-length",
            "10ms",
        ],
    );
    // Repeated until `buckets` holds a fifth more than a row group (how
    // many buckets one pass fills depends on the host's wake-ups).
    let once = dir.path().join("once");
    to_parquet(&[&short], &once);
    let per_pass = read_tables(&once, Some(&short))["pyarrow"]["buckets"]["rows"]
        .as_u64()
        .unwrap()
        .max(1);
    let passes = (1u64 << 20) * 6 / 5 / per_pass + 1;
    let mut run = common::read_json(&short);
    for series in run["series"].as_array_mut().unwrap() {
        let intervals = series["intervals"].as_array().unwrap().clone();
        let length = intervals[0]["length_ns"].as_u64().unwrap();
        let mut repeated = Vec::new();
        let mut at = 0;
        for _ in 0..passes {
            for interval in &intervals {
                let mut interval = interval.clone();
                interval["start_ns"] = Value::from(at * length);
                repeated.push(interval);
                at += 1;
            }
        }
        series["intervals"] = Value::from(repeated);
    }
    let long = dir.path().join("long.json");
    std::fs::write(&long, serde_json::to_vec(&run).unwrap()).unwrap();
    let out = dir.path().join("tables");
    to_parquet(&[&long], &out);
    let meta = read_metadata(&out);
    let read = read_tables(&out, Some(&long));
    // The data across pages and row groups: both readers agree, and the
    // whole run's percentiles are analyze's (agrees_with_analyze's stall
    // check compares float seconds, which drift this far into a run).
    let analysis = common::analyze_json(&long, &["--percentiles", "50,99,99.9"]);
    for table in ["intervals", "buckets", "whole", "interval_p99"] {
        assert_eq!(read["pyarrow"][table], read["duckdb"][table], "{table}");
    }
    assert_eq!(read["pyarrow"]["buckets"]["rows"], read["occupied"]);
    for s in analysis["inputs"][0]["series"].as_array().unwrap() {
        let tag = s["tag"].as_str().unwrap();
        for p in ["50", "99", "99.9"] {
            let whole = &read["pyarrow"]["whole"][tag][p];
            assert_eq!(whole, &s["summary"]["percentiles"][p], "{tag} p{p}");
        }
    }
    for (table, columns) in [("intervals", &INTERVALS[..]), ("buckets", &BUCKETS[..])] {
        let m = &meta[table];
        let rows = read["pyarrow"][table]["rows"].as_u64().unwrap();
        assert_eq!(m["rows"], rows, "{table}: the footer's row count");
        let groups: Vec<u64> = m["row_groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g.as_u64().unwrap())
            .collect();
        assert_eq!(groups.iter().sum::<u64>(), rows, "{table}: {groups:?}");
        assert!(groups.iter().all(|&g| g <= 1 << 20), "{table}: {groups:?}");
        let want: serde_json::Map<String, Value> = columns
            .iter()
            .map(|(name, kind)| (name.to_string(), Value::from(*kind)))
            .collect();
        assert_eq!(m["columns"], Value::from(want), "{table}: column types");
        assert_eq!(m["statistics"], serde_json::json!([]), "{table}");
        assert_eq!(m["metadata"]["cauda.schema"], "cauda.parquet/1");
        assert_eq!(m["metadata"]["cauda.table"], table);
        assert!(
            m["created_by"]
                .as_str()
                .unwrap()
                .starts_with("cauda version ")
        );
    }
    let groups = meta["buckets"]["row_groups"].as_array().unwrap().len();
    assert!(groups >= 2, "buckets spans {groups} row groups");
}

/// What is at `path`, to check it was left alone.
fn snapshot(path: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = match std::fs::read_dir(path) {
        Ok(entries) => entries
            .map(|e| {
                let e = e.unwrap();
                let name = e.file_name().to_string_lossy().into_owned();
                (name, std::fs::read(e.path()).unwrap())
            })
            .collect(),
        Err(_) => vec![(String::new(), std::fs::read(path).unwrap_or_default())],
    };
    files.sort();
    files
}

#[test]
fn what_is_not_caudas_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let input = fixture("hdr/java.hlog");
    let convert = |out: &Path, force: bool| {
        let mut command = cauda();
        command
            .arg("convert")
            .arg(&input)
            .args(["--to", "parquet", "-o"]);
        command.arg(out);
        if force {
            command.arg("--force");
        }
        command.assert()
    };
    // A regular file, --force or not.
    let file = dir.path().join("notes.parquet");
    std::fs::write(&file, "precious").unwrap();
    for force in [false, true] {
        let out = convert(&file, force).code(2).get_output().stderr.clone();
        assert!(String::from_utf8_lossy(&out).contains("is a file"));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "precious");
    }
    // A directory holding something else.
    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::write(shared.join("notes.txt"), "precious").unwrap();
    let before = snapshot(&shared);
    let out = convert(&shared, false).code(2).get_output().stderr.clone();
    let text = String::from_utf8_lossy(&out);
    assert!(
        text.contains("notes.txt") && text.contains("--force"),
        "{text}"
    );
    assert_eq!(snapshot(&shared), before);
    // A Parquet file of someone else's under one of the two names.
    let theirs = dir.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::fs::write(theirs.join("buckets.parquet"), b"PAR1\0\0\0\0PAR1").unwrap();
    convert(&theirs, false).code(2);
    assert_eq!(
        std::fs::read(theirs.join("buckets.parquet")).unwrap(),
        b"PAR1\0\0\0\0PAR1"
    );
    // --force writes the two tables beside the other files.
    convert(&shared, true).success();
    let names: Vec<String> = snapshot(&shared).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["buckets.parquet", "intervals.parquet", "notes.txt"]);
    assert_eq!(
        std::fs::read_to_string(shared.join("notes.txt")).unwrap(),
        "precious"
    );
    // cauda's own tables are replaced without --force.
    let ours = dir.path().join("ours");
    convert(&ours, false).success();
    convert(&ours, false).success();
    // A corrupt input: refused before anything is made.
    let run = dir.path().join("run.json");
    common::timer_run(&run, &["--runtime", "1s"]);
    let mut doc = common::read_json(&run);
    let count = &mut doc["series"][0]["intervals"][0]["count"];
    *count = Value::from(count.as_u64().unwrap() + 1);
    let corrupt = dir.path().join("corrupt.json");
    std::fs::write(&corrupt, serde_json::to_vec(&doc).unwrap()).unwrap();
    let fresh = dir.path().join("fresh");
    let out = cauda()
        .arg("convert")
        .arg(&corrupt)
        .args(["--to", "parquet", "-o"])
        .arg(&fresh)
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    let text = String::from_utf8_lossy(&out);
    assert!(
        text.contains("corrupt.json") && text.contains("interval 0"),
        "{text}"
    );
    assert!(!fresh.exists(), "nothing is made for a refused input");
}

/// Whether this process may mount a tmpfs (root); if not, says why the
/// test is skipped.
fn can_mount(at: &Path) -> bool {
    let ok = StdCommand::new("mount")
        .args(["-t", "tmpfs", "-o", "size=16k", "none"])
        .arg(at)
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: mounting a 16 KiB tmpfs needs root");
    }
    ok
}

/// A full filesystem fails the conversion (exit 1, saying so) and leaves
/// the previous tables as they were: never the new `intervals` beside the
/// old `buckets`, each reading as complete.
#[test]
fn a_full_filesystem_leaves_the_previous_pair_whole() {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("small");
    std::fs::create_dir(&mnt).unwrap();
    if !can_mount(&mnt) {
        return;
    }
    let out = mnt.join("tables");
    let convert = |input: &str| {
        cauda()
            .env("TMPDIR", dir.path())
            .arg("convert")
            .arg(fixture(input))
            .args(["--to", "parquet", "-o"])
            .arg(&out)
            .output()
            .unwrap()
    };
    let first = convert("hdr/python.hlog");
    let before = snapshot(&out);
    let second = convert("hdr/java.hlog");
    let after = snapshot(&out);
    let _ = StdCommand::new("umount").arg(&mnt).status();
    assert!(first.status.success());
    let err = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(1), "{err}");
    assert!(err.contains("No space left"), "{err}");
    assert_eq!(after, before, "the previous pair, unchanged");
}

/// A conversion interrupted mid-write (Ctrl-C) leaves its temporary table
/// (`.intervals.parquet.tmp-PID`); the next conversion into the directory
/// is not refused for it, and removes it. One of a live process is another
/// cauda writing: the directory is refused.
#[test]
fn an_interrupted_conversions_temporary_table_does_not_block_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("tables");
    let input = fixture("hdr/python.hlog");
    let convert = || {
        cauda()
            .arg("convert")
            .arg(&input)
            .args(["--to", "parquet", "-o"])
            .arg(&out)
            .assert()
    };
    convert().success();
    let mut gone = StdCommand::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let stale = out.join(format!(".intervals.parquet.tmp-{dead}"));
    std::fs::write(&stale, b"PAR1 half").unwrap();
    convert().success();
    let names: Vec<String> = snapshot(&out).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["buckets.parquet", "intervals.parquet"]);
    let live = out.join(format!(".buckets.parquet.tmp-{}", std::process::id()));
    std::fs::write(&live, b"PAR1 writing").unwrap();
    convert().code(2);
    assert!(live.exists());
}
