//! A run file's `blame` section as the readers take it from a hostile or
//! careless hand (review class 16 of issue 33, `bench/review.py`): what
//! disagrees with the run or with itself is refused naming the field; a
//! section that does not parse is left out with a warning that says where;
//! merge says it keeps no blame; `--blame-keep` alone is refused.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

mod common;
use common::{cauda, ended, timer_run};

/// A 1 s timer run (no root needed) and a blame section on it as `--kernel
/// blame` writes it: the slowest wake-up (the series' max) behind a hog,
/// another of half its latency; saved without its checksum, as an edit.
fn run_with_blame(dir: &Path) -> (Value, PathBuf) {
    let plain = dir.join("plain.json");
    let mut doc = timer_run(&plain, &["--runtime", "1s"]);
    doc.as_object_mut().unwrap().remove("integrity");
    let max = doc["series"][0]["intervals"][0]["max"].as_u64().unwrap();
    let op = |latency: u64| {
        json!({"series": "wakeup", "thread": 0, "tid": 4100, "cpu": 1, "start_ns": 5_000_000,
               "latency_ns": latency, "causes": {"run_queue": latency / 2, "softirq.NET_RX": latency / 4},
               "culprits": [{"comm": "stress-ng", "pid": 4242, "ns": latency / 2}]})
    };
    doc["blame"] = json!({
        "threshold": {"rule": "previous_p99"},
        "series": [{"tag": "wakeup", "intervals": [
            {"index": 0, "slow": 2, "latency_ns": max + max / 2, "causes": {"run_queue": max}}]}],
        "slowest": [op(max), op(max / 2)],
        "kept": 100,
        "lost": {},
        "steal_resolution": "each scheduler clock update"
    });
    let path = dir.join("blame.json");
    write(&path, &doc);
    (doc, path)
}

fn write(path: &Path, doc: &Value) {
    std::fs::write(path, serde_json::to_vec(doc).unwrap()).unwrap();
}

/// `cauda analyze PATH` ends with `code`, saying each of `needles`.
fn analyze(path: &Path, code: i32, needles: &[&str]) -> String {
    ended(
        &cauda().arg("analyze").arg(path).output().unwrap(),
        code,
        needles,
    )
}

/// An edit of the blame section, given the series' max.
type Edit = fn(&mut Value, u64);

#[test]
fn a_blame_section_that_disagrees_is_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let (doc, good) = run_with_blame(dir.path());
    let out = analyze(&good, 0, &[]);
    assert!(!out.contains("warning"), "{out}");
    let max = doc["blame"]["slowest"][0]["latency_ns"].as_u64().unwrap();
    let cases: [(&str, Edit, &str); 7] = [
        (
            "after_the_end",
            |b, _| b["slowest"][0]["start_ns"] = json!(u64::MAX),
            "after the run's last interval ends",
        ),
        (
            "unsorted",
            |b, _| b["slowest"].as_array_mut().unwrap().reverse(),
            "slowest[1]: latency",
        ),
        (
            "wraps",
            |b, _| b["slowest"][1]["causes"] = json!({"run_queue": u64::MAX, "irq.x": u64::MAX}),
            "more than 2^64",
        ),
        (
            "escape",
            |b, _| b["slowest"][0]["causes"] = json!({"\u{1b}]0;pwned\u{7}x": 1}),
            "control character",
        ),
        (
            "above_max",
            |b, max| b["slowest"][0]["latency_ns"] = json!(max + 1),
            "above the max of series 'wakeup'",
        ),
        (
            "interval_above_max",
            |b, max| b["series"][0]["intervals"][0]["latency_ns"] = json!(2 * max + 1),
            "series[0].intervals[0]: 2 slow operations",
        ),
        (
            "more_slow_than_counted",
            |b, _| b["series"][0]["intervals"][0]["slow"] = json!(1u64 << 40),
            "more than the",
        ),
    ];
    for (name, edit, needle) in cases {
        let mut bad = doc.clone();
        edit(&mut bad["blame"], max);
        let path = dir.path().join(format!("{name}.json"));
        write(&path, &bad);
        let err = analyze(&path, 2, &[&format!("{name}.json: blame:"), needle]);
        assert!(!err.contains('\u{1b}'), "{err:?}");
    }
}

#[test]
fn a_blame_section_that_does_not_parse_is_left_out_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let (doc, _) = run_with_blame(dir.path());
    for (name, section) in [
        ("negative", json!(-1)),
        ("float", json!(1.5)),
        ("string", json!("100")),
    ] {
        let mut bad = doc.clone();
        bad["blame"]["kept"] = section;
        let path = dir.path().join(format!("{name}.json"));
        write(&path, &bad);
        let err = analyze(&path, 0, &["its blame section cannot be read", "left out"]);
        assert!(err.contains(&format!("{name}.json:1:")), "{err}");
        // The trace export names the damage beside its refusal.
        let out = cauda()
            .args(["convert", "--to", "trace", "-o"])
            .arg(dir.path().join("t.json"))
            .arg(&path)
            .output()
            .unwrap();
        ended(&out, 2, &["cannot be read", "no blame section"]);
    }
    for (name, section) in [
        ("empty", json!({})),
        ("array", json!([])),
        ("text", json!("yes")),
    ] {
        let mut bad = doc.clone();
        bad["blame"] = section;
        let path = dir.path().join(format!("{name}.json"));
        write(&path, &bad);
        analyze(&path, 0, &["its blame section cannot be read"]);
    }
    // Past the limit, the slowest are refused without being held.
    let mut many = doc.clone();
    let one = many["blame"]["slowest"][1].clone();
    many["blame"]["slowest"] = Value::Array(vec![one; 100_001]);
    let path = dir.path().join("many.json");
    write(&path, &many);
    analyze(
        &path,
        2,
        &["blame: slowest holds more than 100000 operations"],
    );
}

#[test]
fn merge_says_it_keeps_no_blame() {
    let dir = tempfile::tempdir().unwrap();
    let (_, a) = run_with_blame(dir.path());
    let b = dir.path().join("b.json");
    timer_run(&b, &["--runtime", "1s"]);
    let merged = dir.path().join("m.json");
    let out = cauda()
        .args(["merge", "-o"])
        .arg(&merged)
        .arg(&a)
        .arg(&b)
        .output()
        .unwrap();
    ended(
        &out,
        0,
        &[
            "blame.json measured with --kernel blame",
            "keeps no blame section",
        ],
    );
    let run = common::read_json(&merged);
    assert!(run.get("blame").is_none());
    assert!(
        run["warnings"]
            .to_string()
            .contains("keeps no blame section")
    );
}

#[test]
fn blame_settings_without_kernel_blame_are_refused_even_at_their_default() {
    for flags in [
        ["--blame-keep", "100"],
        ["--blame-keep", "5"],
        ["--blame-above", "1ms"],
    ] {
        let out = cauda()
            .args([
                "timer",
                "--runtime",
                "1s",
                "-q",
                "-o",
                "/nonexistent/x.json",
            ])
            .args(flags)
            .output()
            .unwrap();
        ended(&out, 2, &["add --kernel blame"]);
    }
}
