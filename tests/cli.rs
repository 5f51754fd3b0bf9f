//! The command line as a user meets it: real runs, bad input, exit codes.

use std::process::Command as StdCommand;
use std::time::Duration;

use predicates::prelude::*;

mod common;
use common::{
    analyze_json, as_nobody, cauda, cauda_process, copy_for_nobody, has_setpriv, is_root,
    read_json, recorded, refused, series_tags, summaries, timer_run,
};

#[test]
fn a_short_timer_run_round_trips_through_analyze() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run.json");
    let hlog = dir.path().join("run.hlog");
    cauda()
        .args([
            "timer",
            "--interval",
            "1ms",
            "--runtime",
            "1500ms",
            "--interval-length",
            "500ms",
        ])
        .arg("-o")
        .arg(&run)
        .arg("--hlog")
        .arg(&hlog)
        .assert()
        .success()
        .stdout(predicate::str::contains("wakeup").and(predicate::str::contains("p99.9")))
        .stderr(predicate::str::contains("saved"));

    let doc = read_json(&run);
    assert_eq!(doc["schema"], "cauda.run/1");
    assert_eq!(doc["probe"], "timer");
    assert_eq!(doc["load"], "open-loop");
    assert_eq!(doc["interrupted"], false);
    assert!(doc["host"]["kernel"].is_string());
    let series = &doc["series"][0];
    assert_eq!(series["tag"], "wakeup");
    assert_eq!(series["measured_from"], "intended-start");
    let intervals = series["intervals"].as_array().unwrap();
    assert!(
        (3..=4).contains(&intervals.len()),
        "{} intervals",
        intervals.len()
    );
    let count = recorded(series);
    // A 1 ms period for 1.5 s: 1,499 intended wake-ups before the end.
    assert_eq!(count, 1_499, "every period is recorded");
    let max = intervals
        .iter()
        .map(|i| i["max"].as_u64().unwrap())
        .max()
        .unwrap();

    let analysis = analyze_json(&run, &[]);
    assert_eq!(analysis["schema"], "cauda.analysis/1");
    let summary = &analysis["inputs"][0]["series"][0]["summary"];
    assert_eq!(summary["count"], 1_499);
    assert_eq!(summary["max"], max);
    assert_eq!(
        summary, &doc["summary"][0]["summary"],
        "run-file summary = analyze summary"
    );
    let p = summary["percentiles"].as_object().unwrap();
    let keys: Vec<&str> = p.keys().map(String::as_str).collect();
    assert_eq!(keys, ["50", "90", "95", "99", "99.9", "99.99"]);

    // The interval log carries the same intervals.
    let log = std::fs::read_to_string(&hlog).unwrap();
    assert!(log.starts_with("#[Written by cauda"));
    assert!(log.contains("#[Histogram log format version 1.3]"));
    // The run's main series is untagged (so HdrHistogram tools read it
    // without a tag), and named in a comment for cauda's reader.
    assert!(log.contains("\n#[cauda main series: wakeup]\n"), "{log}");
    assert!(!log.contains("Tag=wakeup,"), "{log}");
    assert_eq!(
        log.lines()
            .filter(|l| l
                .split(',')
                .next_back()
                .is_some_and(|h| h.starts_with("HIST")))
            .count(),
        intervals.len()
    );
}

#[test]
fn ctrl_c_saves_every_interval_and_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run.json");
    let mut child = cauda_process()
        .args(["timer", "--runtime", "30s", "-q", "-o"])
        .arg(&run)
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1_700));
    // SIGINT, as Ctrl-C sends.
    common::signal(child.id(), "-INT");
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let doc = read_json(&run);
    assert_eq!(doc["interrupted"], true);
    let intervals = doc["series"][0]["intervals"].as_array().unwrap();
    assert!(
        intervals.len() >= 2,
        "the full interval and the partial one"
    );
    let last = intervals.last().unwrap();
    assert!(
        last["length_ns"].as_u64().unwrap() < 1_000_000_000,
        "the last one is partial"
    );
    assert!(last["count"].as_u64().unwrap() > 0);
    assert!(doc["duration_ns"].as_u64().unwrap() < 5_000_000_000);
}

#[test]
fn idle_sweep_gives_one_series_per_length() {
    let dir = tempfile::tempdir().unwrap();
    let doc = timer_run(
        &dir.path().join("sweep.json"),
        &[
            "--idle-sweep",
            "--idle-lengths",
            "50us,1ms",
            "--runtime",
            "400ms",
        ],
    );
    assert_eq!(
        series_tags(&doc),
        ["idle=50us", "idle=1ms", "self"],
        "the control thread is last"
    );
    assert_eq!(doc["load"], "closed-loop");
    // The self heartbeat beats at interval boundaries: none in 400 ms.
    for series in &doc["series"].as_array().unwrap()[..2] {
        assert!(recorded(series) > 0, "{}", series["tag"]);
    }
}

#[test]
fn plain_numbers_give_exact_order_statistics() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("values.txt");
    let text: String = (1..=1000).map(|v| format!("{v}\n")).collect();
    std::fs::write(&file, text).unwrap();
    let doc = analyze_json(&file, &["--percentiles", "50,99.9,100", "--unit", "ns"]);
    let s = &doc["inputs"][0]["series"][0]["summary"];
    assert_eq!(s["count"], 1000);
    assert_eq!(s["min"], 1);
    assert_eq!(s["max"], 1000);
    assert_eq!(s["mean"], 500.5);
    assert_eq!(s["percentiles"]["50"], 500);
    assert_eq!(s["percentiles"]["99.9"], 999);
    assert_eq!(s["percentiles"]["100"], 1000);
}

#[test]
fn bad_flags_and_values_exit_2_with_the_reason() {
    refused(&["timer", "--bogus"], "unexpected argument '--bogus'");
    refused(&["frobnicate"], "unrecognized subcommand");
    refused(&["timer", "--interval", "0s"], "at least 1us");
    refused(&["timer", "--interval", "5"], "has no unit");
    refused(&["timer", "--runtime=-5s"], "negative");
    refused(&["timer", "--runtime", "99999999h"], "too large");
    refused(&["timer", "--runtime", "1000h"], "between 1ms and 30 days");
    refused(
        &["timer", "--runtime", "1ms", "--interval", "10ms"],
        "shorter than --interval",
    );
    refused(&["timer", "--priority", "100"], "100");
    refused(&["timer", "--cpus", "4096"], "CPU 4096 is not available");
    refused(&["timer", "--cpus", "3-1"], "backwards");
    refused(&["analyze"], "required");
    refused(&["analyze", "x", "--percentiles", "101"], "above 100");
    refused(&["timer", "--idle-lengths", "1ms"], "--idle-sweep");
}

#[test]
fn bad_input_files_exit_2_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).display().to_string();

    refused(
        &["analyze", &path("missing.json")],
        "missing.json: cannot read",
    );
    refused(&["analyze", dir.path().to_str().unwrap()], "is a directory");

    std::fs::write(
        path("garbage.bin"),
        [0x7f, b'E', b'L', b'F', 0, 1, 2, 0xff, 0xfe],
    )
    .unwrap();
    refused(&["analyze", &path("garbage.bin")], "garbage.bin: byte");

    std::fs::write(path("bad.txt"), "10\n20\nthirty\n").unwrap();
    refused(
        &["analyze", &path("bad.txt")],
        "bad.txt:3: 'thirty' is not a number",
    );

    std::fs::write(path("neg.txt"), "10\n-20\n").unwrap();
    refused(&["analyze", &path("neg.txt")], "neg.txt:2:");

    std::fs::write(path("empty.txt"), "").unwrap();
    refused(&["analyze", &path("empty.txt")], "empty");

    std::fs::write(path("other.json"), "{\"schema\":\"something/9\"}").unwrap();
    refused(&["analyze", &path("other.json")], "schema 'something/9'");

    std::fs::write(
        path("broken.json"),
        "{\"schema\":\"cauda.run/1\", \"probe\": ",
    )
    .unwrap();
    refused(&["analyze", &path("broken.json")], "broken.json:1:");

    // A run file whose histogram was damaged names the series and interval.
    let run = path("run.json");
    cauda()
        .args(["timer", "--runtime", "300ms", "-q", "-o", &run])
        .assert()
        .success();
    let text = std::fs::read_to_string(&run).unwrap();
    let damaged = text.replacen("\"histogram\":\"HISTF", "\"histogram\":\"XXXXX", 1);
    std::fs::write(path("damaged.json"), damaged).unwrap();
    refused(
        &["analyze", &path("damaged.json")],
        "series 'wakeup', interval 0",
    );

    if is_root() {
        eprintln!("skipped: unreadable-file test (root reads any file)");
    } else {
        std::fs::write(path("secret.txt"), "1\n").unwrap();
        StdCommand::new("chmod")
            .args(["000", &path("secret.txt")])
            .status()
            .unwrap();
        refused(&["analyze", &path("secret.txt")], "permission");
    }
}

#[test]
fn a_gz_run_file_is_compressed_read_back_and_ours_to_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run.json.gz");
    for _ in 0..2 {
        // The second run overwrites the first without --force: it is cauda's.
        cauda()
            .args(["timer", "--runtime", "300ms", "--quiet", "-o"])
            .arg(&run)
            .assert()
            .success();
    }
    let bytes = std::fs::read(&run).unwrap();
    assert_eq!(&bytes[..2], &[0x1f, 0x8b], "gzip magic");
    let series = summaries(&run, &[]);
    assert!(
        series
            .iter()
            .any(|(tag, s)| tag == "wakeup" && s["count"].as_u64() > Some(100))
    );
    refused(
        &[
            "timer",
            "--runtime",
            "100ms",
            "--hlog",
            &dir.path().join("x.hlog.gz").display().to_string(),
        ],
        "compress it afterwards",
    );
}

#[test]
fn existing_files_that_are_not_caudas_are_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let precious = dir.path().join("precious.json");
    std::fs::write(&precious, "do not touch").unwrap();
    cauda()
        .args(["timer", "--runtime", "100ms", "-o"])
        .arg(&precious)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--force"));
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "do not touch");
    cauda()
        .args(["timer", "--runtime", "100ms", "--hlog"])
        .arg(&precious)
        .assert()
        .code(2);
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "do not touch");
    // A missing directory is refused before measuring.
    cauda()
        .args([
            "timer",
            "--runtime",
            "100ms",
            "-o",
            "/nonexistent-dir/run.json",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("does not exist"));
}

#[test]
fn priority_without_permission_says_to_drop_the_flag() {
    // A copy in /tmp, so nobody can run it wherever the checkout lives.
    let copy_dir = tempfile::tempdir().unwrap();
    let mut command = if is_root() {
        // Drop to nobody, as an unprivileged user would run it.
        if !has_setpriv() {
            eprintln!("skipped: running as root and setpriv is missing to drop privileges");
            return;
        }
        as_nobody(&copy_for_nobody(copy_dir.path()))
    } else {
        cauda_process()
    };
    let dir = common::writable_by_all();
    let out = command
        .args([
            "timer",
            "--runtime",
            "100ms",
            "--priority",
            "80",
            "--no-mlock",
            "-o",
        ])
        .arg(dir.path().join("run.json"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(0) {
        eprintln!("skipped: this user may use SCHED_FIFO (RLIMIT_RTPRIO allows it)");
        return;
    }
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("drop --priority"), "{stderr}");
    assert!(
        !dir.path().join("run.json").exists(),
        "nothing measured, nothing written"
    );
}

#[test]
fn broken_pipe_is_success() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("values.txt");
    std::fs::write(&file, "1\n2\n3\n").unwrap();
    let script = format!(
        "{} analyze {} | head -c 1 > /dev/null; exit ${{PIPESTATUS[0]}}",
        assert_cmd::cargo::cargo_bin("cauda").display(),
        file.display()
    );
    let status = StdCommand::new("bash")
        .args(["-c", &script])
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn negative_values_reach_their_parser_and_say_what_is_wrong() {
    // clap used to answer "unexpected argument '-1'" (and sometimes
    // advise "-- -1"); the value's own parser now says what is wrong.
    for (args, needle) in [
        (&["timer", "--interval", "-1ms"][..], "'-1ms' is negative"),
        (&["timer", "--runtime", "-5s"][..], "'-5s' is negative"),
        (&["timer", "--priority", "-5"][..], "-5 is not in 1..=99"),
        (
            &["net", "--loopback", "--rate", "-10/s"][..],
            "'-10/s' is negative",
        ),
        (
            &["timer", "--runtime", "--quiet"][..],
            "is an option, not a value",
        ),
    ] {
        common::refused(args, needle);
    }
}

#[test]
fn a_failed_comparison_names_both_inputs_not_a_path_made_of_them() {
    // "a.json//abs/b.json" read like a path that does not exist.
    let plain = common::fixture("fio/randread.json");
    let full = common::fixture("fio/randread.jsonplus");
    let out = cauda()
        .arg("compare")
        .arg(&plain)
        .arg(&full)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let both = format!("{} vs {}:", plain.display(), full.display());
    assert!(stderr.contains(&both), "{stderr}");
}
