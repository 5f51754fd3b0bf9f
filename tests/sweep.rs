//! `cauda sweep` as users run it: refusals before anything is measured, a
//! sweep on loopback that ends with a finding and a file the schema takes,
//! Ctrl-C keeping the bracket so far, and a planted capacity (a disk behind
//! a cgroup's read-IOPS limit) found where it was planted.

use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;
use std::time::Duration;

mod common;
mod netsupport;
use common::cgroup::{CpuQuota, ReadIopsLimit, whole_disk_of};
use common::{cauda, ended_saying, read_json};
use serde_json::Value;

/// One measuring test at a time: a sweep's verdicts are timings, and the
/// planted limits must not overlap.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn sweep_dir_in(dir: &Path) -> PathBuf {
    let found: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("cauda-sweep-"))
        })
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    found.into_iter().next().unwrap()
}

fn schema_valid(doc: &Value) {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/schemas/sweep.schema.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
}

#[test]
fn bad_objectives_ranges_budgets_and_probes_are_refused_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    // (the sweep's flags, the probe and its flags, what the message says)
    let cases = [
        (
            "--objective p99.9<=",
            "net --loopback",
            "latency is missing",
        ),
        ("--objective p101<=1ms", "net --loopback", "above 100"),
        ("--objective p99.9<=1", "net --loopback", "no unit"),
        (
            "--objective p99<=1ms --from 1000/s --to 100/s",
            "net --loopback",
            "empty or reversed",
        ),
        (
            "--objective p99<=1ms --from 5/s --budget 30s",
            "net --loopback",
            "one step at 5/s needs",
        ),
        (
            "--objective p99<=1ms --precision 0",
            "net --loopback",
            "--precision",
        ),
        ("--objective p99<=1ms --from 0/s", "net --loopback", "zero"),
        (
            "--objective p99<=1ms --confidence 1.5",
            "net --loopback",
            "--confidence",
        ),
        // A rate below 1/s would be handed to the probe as 0/s.
        (
            "--objective p99<=1ms --from 0.0001/s",
            "net --loopback",
            "start at 1/s",
        ),
        (
            "--objective p99<=1ms --vary iodepth",
            "net --loopback",
            "only disk",
        ),
        (
            "--objective p99<=1ms --vary iodepth --from x",
            "disk --file f",
            "whole number",
        ),
        (
            "--objective p99<=1ms --vary iodepth",
            "disk --file f --iodepth 4",
            "remove --iodepth",
        ),
        ("--objective p99<=1ms", "serve", "'serve'"),
        (
            "--objective p99<=1ms",
            "net --loopback --rate=5/s",
            "remove --rate",
        ),
        // Short flags clustered as the probe's parser reads them: -qo is -q
        // then -o, -ofile is -o file.
        ("--objective p99<=1ms", "net --loopback -qo", "remove -q"),
        ("--objective p99<=1ms", "net --loopback -ofile", "remove -o"),
        // A flag the probe itself refuses ends the sweep as bad input, with
        // the probe's own error line, not clap's closing "For more information".
        (
            "--objective p99<=1ms",
            "net --loopback --conns 0",
            "--conns",
        ),
        (
            "--objective p99<=1ms",
            "net --loopback --runtim=1s",
            "unexpected argument '--runtim'",
        ),
    ];
    for (sweep, probe, says) in cases {
        let mut all = vec!["sweep", "--dir", d];
        all.extend(sweep.split_whitespace());
        all.push("--");
        all.extend(probe.split_whitespace());
        ended_saying(&all, 2, &[says]);
    }
    ended_saying(
        &["sweep", "--dir", d, "--objective", "p99<=1ms"],
        2,
        &["PROBE ARGS"],
    );
    // Nothing was measured: no sweep directory beyond the two refused
    // after their first step.
    let made: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(made.len() <= 2, "{made:?}");
}

#[test]
fn a_loopback_sweep_ends_with_a_finding_every_step_kept_and_a_valid_file() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let out = cauda()
        .args([
            "sweep",
            "--objective",
            "p90<=20ms",
            "--from",
            "500/s",
            "--to",
            "4000/s",
        ])
        .args(["--min-step", "1s", "--budget", "1m", "--dir"])
        .arg(dir.path())
        .args(["--", "net", "--loopback"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let sweep_dir = sweep_dir_in(dir.path());
    let sweep = read_json(&sweep_dir.join("sweep.json"));
    schema_valid(&sweep);
    let steps = sweep["steps"].as_array().unwrap();
    assert!(!steps.is_empty());
    for step in steps {
        for run in step["runs"].as_array().unwrap() {
            let run = read_json(&sweep_dir.join(run.as_str().unwrap()));
            assert_eq!(run["probe"], "net");
            assert_eq!(run["load"], "open-loop");
        }
        // Every step's objective verdict agrees with its interval.
        let o = &step["objective"];
        if o["verdict"] == "below" {
            assert!(o["upper_ns"].as_u64().unwrap() <= 20_000_000, "{step}");
        }
    }
    // Loopback meets p90 ≤ 20 ms at 4,000/s on any machine that runs the suite:
    // the search walks up to --to and says the objective always held.
    let capacity = &sweep["capacity"];
    assert_eq!(capacity["ending"], "never-violated", "{stdout}\n{stderr}");
    assert!(stdout.contains("raise --to"), "{stdout}");
    assert_eq!(capacity["below"].as_f64(), Some(4000.0));
    // The doubling visited 500, 1000, 2000 and 4000/s.
    let values: Vec<f64> = steps.iter().map(|s| s["value"].as_f64().unwrap()).collect();
    assert_eq!(values, [500.0, 1000.0, 2000.0, 4000.0]);
    // analyze of the sweep file prints the same table.
    let analysis = cauda()
        .arg("analyze")
        .arg(sweep_dir.join("sweep.json"))
        .output()
        .unwrap();
    assert!(analysis.status.success());
    let text = String::from_utf8_lossy(&analysis.stdout);
    assert!(
        text.contains("4,000/s") && text.contains("raise --to"),
        "{text}"
    );
    // ...and its JSON is the sweep file.
    let json = cauda()
        .args(["analyze", "--json"])
        .arg(sweep_dir.join("sweep.json"))
        .output()
        .unwrap();
    let again: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(again["capacity"], sweep["capacity"]);
    // The report draws the curve: one point per step and percentile, the
    // objective's line, and the finding.
    let html = dir.path().join("sweep.html");
    let report = cauda()
        .arg("report")
        .arg(sweep_dir.join("sweep.json"))
        .arg("-o")
        .arg(&html)
        .output()
        .unwrap();
    assert!(
        report.status.success(),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("id=\"chart-curve\"") && page.contains("objective p90"),
        "{page}"
    );
    assert_eq!(
        page.matches("<circle").count(),
        steps.len(),
        "one mark per step"
    );
    assert!(page.contains("raise --to"));
    // A sweep beside a run is refused, by compare too.
    let run = sweep_dir.join(steps[0]["runs"][0].as_str().unwrap());
    let sweep_file = sweep_dir.join("sweep.json");
    for command in ["report", "compare"] {
        let mut c = cauda();
        c.arg(command).arg(&sweep_file).arg(&run);
        if command == "report" {
            c.arg("-o").arg(dir.path().join("mixed.html"));
        }
        let out = c.output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{command}");
    }
    // compare of a sweep with itself: the brackets overlap, no change shown.
    let same = cauda()
        .arg("compare")
        .arg(&sweep_file)
        .arg(&sweep_file)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&same.stdout).contains("no change shown"));
}

/// Whether `pid` is a process that has not ended (gone, or a zombie).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let state = stat.rsplit_once(") ")?.1.chars().next()?;
            Some(state != 'Z' && state != 'X')
        })
        .unwrap_or(false)
}

#[test]
fn a_sweep_killed_outright_leaves_no_step_measuring_on() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let mut sweep = StdCommand::new(env!("CARGO_BIN_EXE_cauda"))
        .args(["sweep", "--objective", "p99<=1ms", "--from", "1000/s"])
        .args(["--min-step", "60s", "--max-step", "60s", "--quiet", "--dir"])
        .arg(dir.path())
        .args(["--", "timer"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let children = format!("/proc/{0}/task/{0}/children", sweep.id());
    let mut step = None;
    for _ in 0..100 {
        step = std::fs::read_to_string(&children)
            .ok()
            .and_then(|t| t.split_whitespace().next()?.parse::<u32>().ok());
        if step.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let step = step.expect("the sweep started no step");
    std::thread::sleep(Duration::from_millis(500));
    sweep.kill().unwrap();
    sweep.wait().unwrap();
    // The step (60 s) is interrupted as by Ctrl-C: it saves and exits.
    let mut waited = 0;
    while running(step) && waited < 100 {
        std::thread::sleep(Duration::from_millis(100));
        waited += 1;
    }
    assert!(
        !running(step),
        "step {step} still measuring after its sweep was killed"
    );
    let saved = sweep_dir_in(dir.path()).join("step-01-1000pers.json");
    for _ in 0..50 {
        if saved.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(saved.exists(), "the interrupted step kept no run file");
}

#[test]
fn ctrl_c_keeps_every_finished_step_and_the_bracket_so_far() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let child = StdCommand::new(env!("CARGO_BIN_EXE_cauda"))
        .args([
            "sweep",
            "--objective",
            "p90<=20ms",
            "--from",
            "500/s",
            "--min-step",
            "1s",
        ])
        .args(["--samples-above", "5", "--quiet", "--dir"])
        .arg(dir.path())
        .args(["--", "net", "--loopback"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Two steps of about 1.1 s each, then Ctrl-C in the third.
    std::thread::sleep(Duration::from_millis(3_500));
    StdCommand::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sweep = read_json(&sweep_dir_in(dir.path()).join("sweep.json"));
    schema_valid(&sweep);
    assert_eq!(sweep["capacity"]["ending"], "interrupted");
    let steps = sweep["steps"].as_array().unwrap();
    assert!(!steps.is_empty(), "{sweep}");
    assert!(sweep["capacity"]["below"].as_f64().is_some(), "{sweep}");
}

#[test]
fn a_disk_behind_a_read_iops_limit_is_found_at_that_limit() {
    let _one = one_at_a_time();
    const LIMIT: f64 = 1500.0;
    let root = Path::new("/sys/fs/cgroup/blkio");
    let required = std::env::var_os("CAUDA_REQUIRE_BPF").is_some();
    if !root.join("cgroup.procs").exists() {
        assert!(!required, "no cgroup v1 blkio hierarchy");
        eprintln!(
            "skipped: no cgroup v1 blkio hierarchy at {}",
            root.display()
        );
        return;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let Some(disk) = whole_disk_of(dir.path()) else {
        assert!(!required, "no whole disk under {}", dir.path().display());
        eprintln!("skipped: {} is not on a block device", dir.path().display());
        return;
    };
    let Some(throttle) = ReadIopsLimit::new("cauda-sweep-test", &disk, LIMIT as u64) else {
        assert!(!required, "cannot create a blkio cgroup");
        eprintln!("skipped: cannot create a blkio cgroup (not root?)");
        return;
    };
    let group = throttle.dir.clone();
    // The sweep joins the cgroup before it starts, so every step does.
    // Steps of at least 4 s: the throttle lets a burst through at the start
    // of a step, so 2 s at 1,600/s (7 % over) met p99 ≤ 100 ms once; 4 s of
    // a 5 % excess build a backlog of 200 ms.
    let cauda_bin = env!("CARGO_BIN_EXE_cauda");
    let script = format!(
        "echo $$ > {}/cgroup.procs && exec {cauda_bin} sweep --objective 'p99<=100ms' \
         --from 400/s --to 10k/s --min-step 4s --budget 3m --dir {d} -- disk --file {d}/data \
         --size 64M --rw randread",
        group.display(),
        d = dir.path().display()
    );
    let out = StdCommand::new("sh")
        .args(["-c", &script])
        .output()
        .unwrap();
    drop(throttle);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let sweep = read_json(&sweep_dir_in(dir.path()).join("sweep.json"));
    schema_valid(&sweep);
    let capacity = &sweep["capacity"];
    let below = capacity["below"].as_f64().unwrap();
    let above = capacity["above"].as_f64().unwrap();
    // Below the limit the throttle's slices keep p99 near 10 ms; above it
    // a backlog grows by the excess every second, past 100 ms within a step.
    assert!(
        below < LIMIT && LIMIT <= above,
        "[{below}, {above}]\n{stdout}"
    );
    assert!(
        above <= LIMIT * 1.1,
        "upper end {above} over +10 % of {LIMIT}\n{stdout}"
    );
    assert!(
        matches!(capacity["ending"].as_str(), Some("converged")),
        "{capacity}\n{stdout}"
    );
    assert!(!group.exists(), "the cgroup is removed");
}

#[test]
fn a_sweep_of_a_real_kafka_broker_reports_a_capacity_for_publish() {
    let _one = one_at_a_time();
    let Some(broker) = common::kafka::Broker::start_with(1, "flush.messages=1\n") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // The objective comes from a first short run: four times its p90 (at
    // least 20 ms), which the broker keeps at low rates and loses once its
    // per-message flushes fall behind.
    let first = dir.path().join("first.json");
    let out = cauda()
        .args([
            "broker",
            "--bootstrap",
            &broker.bootstrap,
            "--rate",
            "500/s",
        ])
        .args(["--runtime", "2s", "-q", "-o"])
        .arg(&first)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summaries = common::summaries(&first, &[]);
    let p90 = common::series(&summaries, "publish")["percentiles"]["90"]
        .as_u64()
        .unwrap();
    let threshold_ms = (4 * p90 / 1_000_000).max(20);
    let objective = format!("p90<={threshold_ms}ms");
    // The broker shares this machine's two CPUs with the producer, which
    // then lags its schedule by milliseconds (and the sweep rightly stops
    // there: the generator's limit). Under SCHED_FIFO, as root, the
    // producer keeps to its schedule and the sweep finds the broker's.
    let mut sweep = if common::is_root() {
        let mut c = StdCommand::new("chrt");
        c.args(["-f", "20", env!("CARGO_BIN_EXE_cauda")]);
        c
    } else {
        StdCommand::new(env!("CARGO_BIN_EXE_cauda"))
    };
    let out = sweep
        .args([
            "sweep",
            "--objective",
            &objective,
            "--from",
            "1000/s",
            "--min-step",
            "1s",
        ])
        .args(["--budget", "50s", "--series", "publish", "--dir"])
        .arg(dir.path())
        .args(["--", "broker", "--bootstrap", &broker.bootstrap])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let sweep = read_json(&sweep_dir_in(dir.path()).join("sweep.json"));
    schema_valid(&sweep);
    assert_eq!(sweep["series"], "publish");
    let capacity = &sweep["capacity"];
    let (below, above) = (capacity["below"].as_f64(), capacity["above"].as_f64());
    assert!(
        matches!((below, above), (Some(b), Some(a)) if b < a),
        "{objective}: {capacity}\n{stdout}"
    );
    assert!(
        matches!(
            capacity["ending"].as_str(),
            Some("converged" | "budget" | "unresolved")
        ),
        "{capacity}"
    );
}

#[test]
fn a_server_in_a_cpu_quota_is_found_saturated_not_the_generator() {
    let _one = one_at_a_time();
    let root = common::is_root();
    if !(root
        && std::path::Path::new(CpuQuota::ROOT)
            .join("cpu.cfs_quota_us")
            .exists())
    {
        assert!(
            std::env::var_os("CAUDA_REQUIRE_BPF").is_none(),
            "no cgroup v1 CPU quota"
        );
        eprintln!("skipped: needs root and a cgroup v1 CPU controller");
        return;
    }
    let server = netsupport::Responder::start(&[]);
    // 5 % of one CPU: about 2,000 answers a second.
    let _quota = CpuQuota::new("cauda-sweep-test", 5_000, server.child.id()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    // The client runs under SCHED_FIFO so that nothing else on the machine
    // starves it: what limits the load is the server's quota.
    let cauda_bin = env!("CARGO_BIN_EXE_cauda");
    let out = StdCommand::new("chrt")
        .args(["-f", "20", cauda_bin, "sweep", "--objective", "p99<=50ms"])
        .args([
            "--from",
            "250/s",
            "--samples-above",
            "10",
            "--budget",
            "90s",
            "--dir",
        ])
        .arg(dir.path())
        .args([
            "--",
            "net",
            "--connect",
            &server.addr.to_string(),
            "--conns",
            "1",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let sweep = read_json(&sweep_dir_in(dir.path()).join("sweep.json"));
    schema_valid(&sweep);
    let capacity = &sweep["capacity"];
    let (below, above) = (capacity["below"].as_f64(), capacity["above"].as_f64());
    assert!(
        matches!((below, above), (Some(b), Some(a)) if b < a),
        "{capacity}\n{stdout}"
    );
    let steps = sweep["steps"].as_array().unwrap();
    // No step is the generator's fault, and the steps that missed are the
    // target's saturation.
    assert!(
        steps.iter().all(|s| s["class"] != "generator-limited"),
        "{stdout}"
    );
    let missed: Vec<&Value> = steps.iter().filter(|s| s["class"] == "above").collect();
    assert!(!missed.is_empty());
    assert!(
        missed.iter().any(|s| s["saturated"].is_string()),
        "a step above the knee is named the target's saturation:\n{stdout}"
    );
}
