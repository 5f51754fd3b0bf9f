//! The run file is written exactly once per run: the session lets the probe
//! complete it (faults, warnings, its own section) before one atomic write.
//! Watched from outside with inotify, a run shows one rename onto its run
//! file and no write in place. The failure and Ctrl-C paths are checked the
//! same way in `net.rs` (a responder that dies) and `disk.rs` (Ctrl-C).

mod common;

use common::cauda;
use common::inotify::Watch;
use predicates::prelude::PredicateBooleanExt;

/// Runs `cauda ARGS -q -o DIR/run.json` and returns its exit code and the
/// renames onto run.json and modifications of it.
fn writes_of_a_run(args: &[&str]) -> (Option<i32>, (usize, usize)) {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run.json");
    let watch = Watch::new(dir.path());
    let out = cauda()
        .args(args)
        .args(["-q", "-o"])
        .arg(&run)
        .output()
        .unwrap();
    assert!(run.exists(), "{}", String::from_utf8_lossy(&out.stderr));
    (out.status.code(), watch.writes_of("run.json"))
}

#[test]
fn a_timer_run_is_written_once() {
    assert_eq!(
        writes_of_a_run(&["timer", "--runtime", "1s"]),
        (Some(0), (1, 0))
    );
}

#[test]
fn a_disk_run_with_its_section_is_written_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cauda.dat");
    let file = file.to_str().unwrap();
    let args = [
        "disk",
        "--file",
        file,
        "--size",
        "8M",
        "--rw",
        "randrw",
        "--buffered",
        "--runtime",
        "1s",
    ];
    assert_eq!(writes_of_a_run(&args), (Some(0), (1, 0)));
}

#[test]
fn a_net_run_with_its_accounting_is_written_once() {
    assert_eq!(
        writes_of_a_run(&["net", "--loopback", "--runtime", "1s"]),
        (Some(0), (1, 0))
    );
}

#[test]
fn a_run_file_changed_after_writing_is_read_with_a_warning_and_a_reformatted_one_without() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.json");
    let run = common::timer_run(&out, &["--runtime", "300ms"]);
    let sealed = run["integrity"].as_str().unwrap();
    assert!(
        sealed.starts_with("crc32:") && sealed.len() == 14,
        "{sealed}"
    );
    // Pretty-printed (as jq does): the same content, no warning.
    let pretty = dir.path().join("pretty.json");
    std::fs::write(&pretty, serde_json::to_vec_pretty(&run).unwrap()).unwrap();
    common::cauda()
        .arg("analyze")
        .arg(&pretty)
        .assert()
        .success()
        .stderr(predicates::str::contains("changed after").not());
    // One interval's sum moved by 1 ns: still consistent, so only the
    // checksum can tell; analysed with a warning naming the file.
    let mut edited = run.clone();
    let sum = &mut edited["series"][0]["intervals"][0]["sum"];
    *sum = serde_json::json!(sum.as_u64().unwrap() + 1);
    let changed = dir.path().join("changed.json");
    std::fs::write(&changed, serde_json::to_vec(&edited).unwrap()).unwrap();
    common::cauda()
        .arg("analyze")
        .arg(&changed)
        .assert()
        .success()
        .stderr(predicates::str::contains(
            "changed.json was changed after cauda wrote it",
        ));
    // Edited in place with the seal kept (the fast byte check fails, the
    // content decides): the same warning.
    let raw = std::fs::read_to_string(&out).unwrap();
    let at = raw.find("\"sum\":").unwrap() + "\"sum\":".len();
    let digits = raw[at..].find(|c: char| !c.is_ascii_digit()).unwrap();
    let sum: u64 = raw[at..at + digits].parse().unwrap();
    let in_place = dir.path().join("in-place.json");
    std::fs::write(
        &in_place,
        format!("{}{}{}", &raw[..at], sum + 1, &raw[at + digits..]),
    )
    .unwrap();
    common::cauda()
        .arg("analyze")
        .arg(&in_place)
        .assert()
        .success()
        .stderr(predicates::str::contains(
            "in-place.json was changed after cauda wrote it",
        ));
    // Converting seals it again: the copy is what cauda wrote.
    let copy = dir.path().join("copy.json");
    common::cauda()
        .args(["convert", "--to", "json", "-o"])
        .arg(&copy)
        .arg(&changed)
        .assert()
        .success();
    common::cauda()
        .arg("analyze")
        .arg(&copy)
        .assert()
        .success()
        .stderr(predicates::str::contains("changed after").not());
}

#[test]
fn the_run_file_says_where_caudas_own_threads_ran_and_keeps_them_off_pinned_probe_cpus() {
    let dir = tempfile::tempdir().unwrap();
    let observers = |run: &serde_json::Value| -> Vec<(String, Vec<u64>, u64)> {
        run["observers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| {
                let cpus = o["cpus"].as_array().unwrap().iter();
                (
                    o["thread"].as_str().unwrap().to_string(),
                    cpus.map(|c| c.as_u64().unwrap()).collect(),
                    o["cpu_ns"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    let shared = |run: &serde_json::Value| {
        run["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["message"].as_str().unwrap().contains("own threads"))
    };
    let run = common::timer_run(&dir.path().join("plain.json"), &["--runtime", "300ms"]);
    let threads: Vec<String> = observers(&run).into_iter().map(|o| o.0).collect();
    assert_eq!(threads, ["cauda-observer", "cauda-collector"]);
    assert!(observers(&run).iter().all(|o| !o.1.is_empty() && o.2 > 0));

    let allowed = cauda::sys::allowed_cpus();
    if allowed.len() < 2 {
        eprintln!("skipped the placement half: one CPU allowed");
        return;
    }
    // The probe pinned to one CPU: the observers go to the others.
    let pinned = allowed[0].to_string();
    let run = common::timer_run(
        &dir.path().join("pinned.json"),
        &["--runtime", "300ms", "--cpus", &pinned],
    );
    for (thread, cpus, _) in observers(&run) {
        assert!(!cpus.contains(&(allowed[0] as u64)), "{thread} on {cpus:?}");
    }
    assert!(!shared(&run));
    // A process given one CPU: shared, and the run file says so.
    let out = dir.path().join("one-cpu.json");
    let status = std::process::Command::new("taskset")
        .args(["-c", &pinned])
        .arg(assert_cmd::cargo::cargo_bin("cauda"))
        .args(["timer", "--runtime", "300ms", "-q", "-o"])
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success());
    let run = common::read_json(&out);
    assert!(shared(&run), "{}", run["warnings"]);
    for (_, cpus, _) in observers(&run) {
        assert_eq!(cpus, [allowed[0] as u64]);
    }
}
