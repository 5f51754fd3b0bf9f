//! The host: `cauda host audit` on a tree captured from this machine and on
//! edited copies of it (one edit per recommendation), the full audit and
//! the host counters in every run file, the `self` series, `cauda hiccup`,
//! and a write storm whose stall the analysis blames on I/O.

mod common;

use std::path::{Path, PathBuf};

use common::{
    analyze_json, audit, captured, cauda, copy_of_captured, json_stdout, put, recorded, refused,
    series_tags, timer_run,
};
use serde_json::Value;

/// The (start, length) of each interval in `intervals`.
fn interval_grid(intervals: &Value) -> Vec<(u64, u64)> {
    intervals
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["start_ns"].as_u64().unwrap(),
                i["length_ns"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn check<'a>(audit: &'a Value, id: &str) -> &'a Value {
    audit["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no check {id}"))
}

#[test]
fn the_captured_tree_is_audited_with_the_kernels_own_values() {
    let doc = audit(&captured(), "latency");
    assert_eq!(doc["schema"], "cauda.audit/1");
    assert_eq!(doc["profile"], "latency");
    let checks = doc["checks"].as_array().unwrap();
    for c in checks {
        for key in [
            "id",
            "read",
            "current",
            "recommended",
            "status",
            "why",
            "source",
        ] {
            assert!(c[key].is_string(), "{c}: {key}");
        }
        assert!(["ok", "warn", "info"].contains(&c["status"].as_str().unwrap()));
        if c["status"] != "warn" {
            assert!(c.get("fix").is_none(), "only a warning carries a fix: {c}");
        }
    }
    // What this VM states, read from the same files by hand.
    let tree = captured();
    let read = |p: &str| {
        std::fs::read_to_string(tree.join(p))
            .unwrap()
            .trim()
            .to_string()
    };
    let thp = read("sys/kernel/mm/transparent_hugepage/enabled");
    let bracketed = thp.split('[').nth(1).unwrap().split(']').next().unwrap();
    assert_eq!(check(&doc, "memory.thp.enabled")["current"], bracketed);
    assert_eq!(
        check(&doc, "vm.swappiness")["current"],
        read("proc/sys/vm/swappiness")
    );
    let sched = read("sys/block/vda/queue/scheduler");
    let chosen = sched.split('[').nth(1).unwrap().split(']').next().unwrap();
    assert_eq!(check(&doc, "block.vda.scheduler")["current"], chosen);
    // No cpufreq on this VM: said, not failed.
    let gov = check(&doc, "cpu.governor");
    assert_eq!(gov["status"], "info");
    assert!(
        gov["current"]
            .as_str()
            .unwrap()
            .starts_with("not available: ")
    );
    // statvfs cannot describe a captured tree.
    assert!(
        check(&doc, "fs./.free")["current"]
            .as_str()
            .unwrap()
            .starts_with("not available")
    );
    // Every area is covered.
    for prefix in [
        "cpu.",
        "cpuidle.",
        "pm_qos.",
        "cmdline.",
        "clocksource",
        "kernel.timer_migration",
        "memory.thp.",
        "vm.dirty_ratio",
        "vm.stat_interval",
        "kernel.numa_balancing",
        "memory.swap",
        "block.vda.",
        "fs./.",
        "irq.",
        "net.core.busy_poll",
        "net.core.somaxconn",
    ] {
        assert!(
            checks
                .iter()
                .any(|c| c["id"].as_str().unwrap().starts_with(prefix)),
            "{prefix}"
        );
    }
}

#[test]
fn each_recommendation_flips_when_its_file_is_edited() {
    let dir = copy_of_captured();
    let root = dir.path();
    // (file, bad value, good value, check id, the fix's value)
    let cases = [
        (
            "/sys/kernel/mm/transparent_hugepage/enabled",
            "[always] madvise never",
            "always madvise [never]",
            "memory.thp.enabled",
            "never",
        ),
        (
            "/sys/kernel/mm/transparent_hugepage/defrag",
            "[always] defer defer+madvise madvise never",
            "always defer defer+madvise madvise [never]",
            "memory.thp.defrag",
            "never",
        ),
        ("/proc/sys/vm/swappiness", "60", "1", "vm.swappiness", "1"),
        (
            "/proc/sys/vm/dirty_ratio",
            "20",
            "10",
            "vm.dirty_ratio",
            "10",
        ),
        (
            "/proc/sys/vm/stat_interval",
            "1",
            "10",
            "vm.stat_interval",
            "10",
        ),
        (
            "/proc/sys/kernel/numa_balancing",
            "1",
            "0",
            "kernel.numa_balancing",
            "0",
        ),
        (
            "/proc/sys/kernel/timer_migration",
            "1",
            "0",
            "kernel.timer_migration",
            "0",
        ),
        (
            "/proc/sys/net/core/busy_poll",
            "0",
            "50",
            "net.core.busy_poll",
            "50",
        ),
        (
            "/sys/block/vda/queue/rotational",
            "0",
            "0",
            "block.vda.nomerges",
            "2",
        ),
        (
            "/sys/devices/system/clocksource/clocksource0/current_clocksource",
            "kvm-clock",
            "tsc",
            "clocksource",
            "tsc",
        ),
    ];
    for (file, bad, good, id, value) in cases {
        put(root, file, bad);
        if id == "block.vda.nomerges" {
            put(root, "/sys/block/vda/queue/nomerges", "0");
        }
        let doc = audit(root, "latency");
        let c = check(&doc, id);
        assert_eq!(c["status"], "warn", "{id} with {bad}: {c}");
        assert_eq!(c["fix"]["kind"], "write", "{id}");
        assert_eq!(c["fix"]["value"], value, "{id}");
        assert!(
            c["fix"]["path"].as_str().unwrap().starts_with('/'),
            "{id}: a host path"
        );
        put(root, file, good);
        if id == "block.vda.nomerges" {
            put(root, "/sys/block/vda/queue/nomerges", "2");
        }
        let c = check(&audit(root, "latency"), id).clone();
        assert_eq!(c["status"], "ok", "{id} with {good}: {c}");
    }
    // The scheduler of a non-rotational queue: none.
    put(
        root,
        "/sys/block/vda/queue/scheduler",
        "none [mq-deadline] kyber bfq",
    );
    let c = check(&audit(root, "latency"), "block.vda.scheduler").clone();
    assert_eq!(
        (c["current"].as_str(), c["fix"]["value"].as_str()),
        (Some("mq-deadline"), Some("none"))
    );
    // A boot argument is a boot fix.
    put(root, "/proc/cmdline", "quiet console=ttyS0");
    let c = check(&audit(root, "latency"), "cmdline.skew_tick").clone();
    assert_eq!(
        c["fix"],
        serde_json::json!({"kind": "boot", "argument": "skew_tick=1"})
    );
    put(root, "/proc/cmdline", "quiet skew_tick=1 -- skew_tick=0");
    assert_eq!(
        check(&audit(root, "latency"), "cmdline.skew_tick")["status"],
        "ok"
    );
}

#[test]
fn idle_states_are_judged_by_exit_latency_not_index() {
    let dir = copy_of_captured();
    let root = dir.path();
    put(
        root,
        "/sys/devices/system/cpu/cpuidle/current_driver",
        "intel_idle",
    );
    put(
        root,
        "/sys/devices/system/cpu/cpuidle/available_governors",
        "ladder menu teo",
    );
    // Deliberately out of order: state1 is the deepest, state3 shallow.
    for cpu in ["cpu0", "cpu1"] {
        for (state, name, latency, residency, disable) in [
            ("state0", "POLL", "0", "0", "0"),
            ("state1", "C6", "133", "400", "0"),
            ("state2", "C1E", "10", "20", "0"),
            ("state3", "C1", "2", "2", "0"),
        ] {
            let dir = format!("/sys/devices/system/cpu/{cpu}/cpuidle/{state}");
            for (file, text) in [
                ("name", name),
                ("latency", latency),
                ("residency", residency),
                ("disable", disable),
                ("usage", "5"),
                ("time", "70"),
                ("above", "1"),
                ("below", "2"),
            ] {
                put(root, &format!("{dir}/{file}"), text);
            }
        }
    }
    let doc = audit(root, "latency");
    let c6 = check(&doc, "cpuidle.cpu0.C6");
    assert_eq!(c6["status"], "warn");
    assert_eq!(
        c6["fix"]["path"],
        "/sys/devices/system/cpu/cpu0/cpuidle/state1/disable"
    );
    assert_eq!(c6["fix"]["value"], "1");
    assert!(
        c6["current"].as_str().unwrap().contains("exit 133 µs"),
        "{c6}"
    );
    assert!(
        c6["current"].as_str().unwrap().contains("above 1, below 2"),
        "{c6}"
    );
    for shallow in ["cpuidle.cpu1.C1E", "cpuidle.cpu1.C1", "cpuidle.cpu1.POLL"] {
        assert_eq!(check(&doc, shallow)["status"], "ok", "{shallow}");
    }
    // Listed shallow to deep whatever the index.
    let order: Vec<&str> = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["id"].as_str())
        .filter(|id| id.starts_with("cpuidle.cpu0."))
        .collect();
    assert_eq!(
        order,
        [
            "cpuidle.cpu0.POLL",
            "cpuidle.cpu0.C1",
            "cpuidle.cpu0.C1E",
            "cpuidle.cpu0.C6"
        ]
    );
    // The governor: teo offered, menu in use.
    let gov = check(&doc, "cpuidle.governor");
    assert_eq!(
        (gov["status"].as_str(), gov["fix"]["value"].as_str()),
        (Some("warn"), Some("teo"))
    );
    // Disabled deep states are fine; throughput does not judge them.
    put(
        root,
        "/sys/devices/system/cpu/cpu0/cpuidle/state1/disable",
        "1",
    );
    assert_eq!(
        check(&audit(root, "latency"), "cpuidle.cpu0.C6")["status"],
        "ok"
    );
    assert_eq!(
        check(&audit(root, "throughput"), "cpuidle.cpu1.C6")["status"],
        "info"
    );
}

#[test]
fn profiles_recommend_differently() {
    let dir = copy_of_captured();
    put(dir.path(), "/sys/block/vda/queue/read_ahead_kb", "128");
    put(dir.path(), "/proc/sys/vm/dirty_ratio", "20");
    let lat = audit(dir.path(), "latency");
    let thr = audit(dir.path(), "throughput");
    let bal = audit(dir.path(), "balanced");
    assert_eq!(check(&thr, "block.vda.read_ahead_kb")["status"], "warn");
    assert_eq!(
        check(&thr, "block.vda.read_ahead_kb")["fix"]["value"],
        "4096"
    );
    assert_eq!(check(&lat, "block.vda.read_ahead_kb")["status"], "info");
    assert_eq!(check(&lat, "vm.dirty_ratio")["fix"]["value"], "10");
    assert_eq!(check(&thr, "vm.dirty_ratio")["fix"]["value"], "40");
    assert!(
        bal["checks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c.get("fix").is_none() || c["status"] == "warn")
    );
}

#[test]
fn missing_files_are_info_and_a_root_of_nothing_is_bad_input() {
    // A tree with almost nothing (a container's view): every check still answers.
    let dir = tempfile::tempdir().unwrap();
    put(dir.path(), "/proc/cmdline", "quiet");
    let doc = audit(dir.path(), "latency");
    let missing: Vec<&Value> = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| {
            c["current"]
                .as_str()
                .unwrap()
                .starts_with("not available: ")
        })
        .collect();
    assert!(missing.len() >= 10, "{}", missing.len());
    assert!(missing.iter().all(|c| c["status"] == "info"));
    assert!(
        check(&doc, "vm.swappiness")["current"]
            .as_str()
            .unwrap()
            .contains("/proc/sys/vm/swappiness does not exist")
    );

    refused(
        &["host", "audit", "--root", "/no/such/dir"],
        "--root /no/such/dir: no such directory",
    );
    let empty = tempfile::tempdir().unwrap();
    refused(
        &["host", "audit", "--root", empty.path().to_str().unwrap()],
        "holds neither proc/ nor sys/",
    );
}

#[test]
fn the_live_audit_prints_a_table() {
    cauda()
        .args(["host", "audit"])
        .assert()
        .success()
        .stdout(predicates::str::contains("host audit, profile latency:"))
        .stdout(predicates::str::contains("vm.swappiness"));
}

#[test]
fn a_run_carries_the_audit_counters_and_its_self_series() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run.json");
    let doc = timer_run(&run, &["--runtime", "2500ms", "--interval-length", "500ms"]);
    let checks = doc["host"]["checks"].as_array().unwrap();
    assert!(checks.iter().any(|c| c["id"] == "vm.swappiness"));
    assert_eq!(series_tags(&doc), ["wakeup", "self"]);
    let grid = interval_grid(&doc["series"][0]["intervals"]);
    let self_grid = interval_grid(&doc["series"][1]["intervals"]);
    assert_eq!(
        grid, self_grid,
        "the self series shares the run's intervals"
    );
    // One heartbeat per interval boundary crossed (4 in 2.5 s of 500 ms
    // intervals, a 5th when the run ends late).
    let self_count = recorded(&doc["series"][1]);
    assert!((4..=5).contains(&self_count), "{self_count}");
    // cauda's own threads wake about once per interval each, not a thousand
    // times a second (the old 1 ms control thread woke 2,500 times here).
    let observers = doc["observers"].as_array().unwrap();
    let wakeups = |name: &str| {
        let o = observers.iter().find(|o| o["thread"] == name);
        o.unwrap_or_else(|| panic!("{name} in {observers:?}"))["wakeups"]
            .as_u64()
            .unwrap()
    };
    assert!(wakeups("cauda-observer") <= 8, "{observers:?}");
    assert!(wakeups("cauda-collector") <= 12, "{observers:?}");

    let counters = &doc["host_counters"];
    let names: Vec<&str> = counters["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    for name in [
        "stat.ctxt",
        "stat.intr",
        "vmstat.pgmajfault",
        "vmstat.nr_dirty",
        "probe.voluntary_ctxt",
    ] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    let intervals = counters["intervals"].as_array().unwrap();
    let counter_grid = interval_grid(&counters["intervals"]);
    assert_eq!(counter_grid, grid, "one row of deltas per interval");
    let col = |n: &str| names.iter().position(|x| *x == n).unwrap();
    let ctxt: i64 = intervals
        .iter()
        .map(|i| i["deltas"][col("stat.ctxt")].as_i64().unwrap())
        .sum();
    assert!(ctxt > 0, "the host switched context");
    // The timer thread sleeps 2,500 times: voluntary switches in full intervals.
    let voluntary = intervals[0]["deltas"][col("probe.voluntary_ctxt")]
        .as_i64()
        .unwrap();
    assert!(voluntary >= 100, "{voluntary}");

    // A run file from before the audit and the counters still loads.
    let mut old = doc.clone();
    old.as_object_mut().unwrap().remove("host_counters");
    old["host"].as_object_mut().unwrap().remove("checks");
    let old_path = dir.path().join("old.json");
    std::fs::write(&old_path, serde_json::to_vec(&old).unwrap()).unwrap();
    cauda().arg("analyze").arg(&old_path).assert().success();

    // compare names a changed setting by its check id, not a blob.
    let mut edited = doc.clone();
    for c in edited["host"]["checks"].as_array_mut().unwrap() {
        if c["id"] == "vm.swappiness" {
            c["current"] = Value::from("7");
        }
    }
    let other = dir.path().join("edited.json");
    std::fs::write(&other, serde_json::to_vec(&edited).unwrap()).unwrap();
    let cmp = json_stdout(
        cauda()
            .args(["compare", "--json"])
            .arg(&run)
            .arg(&other)
            .output()
            .unwrap(),
    );
    let changes = cmp["host_changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0]["key"], "check:vm.swappiness");
    assert_eq!(changes[0]["new"], "7");
}

#[test]
fn hiccup_runs_one_pinned_thread_per_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("h.json");
    let cpus = cauda::sys::allowed_cpus();
    let list = cpus
        .iter()
        .take(2)
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(",");
    cauda()
        .args(["hiccup", "--runtime", "1500ms", "--cpus", &list, "-o"])
        .arg(&run)
        .assert()
        .success()
        .stdout(predicates::str::contains(format!("cpu{} —", cpus[0])));
    let doc = common::read_json(&run);
    assert_eq!(doc["probe"], "hiccup");
    let expected: Vec<String> = cpus.iter().take(2).map(|c| format!("cpu{c}")).collect();
    assert_eq!(
        series_tags(&doc),
        expected,
        "no second control thread beside the probe"
    );
    for s in doc["series"].as_array().unwrap() {
        let count = recorded(s);
        assert!(
            (200..=1_500).contains(&count),
            "{}: {count} wake-ups of ≥1 ms in 1.5 s",
            s["tag"]
        );
    }
    refused(&["hiccup", "--sleep", "1us"], "--sleep");
}

/// A probe that appends 4 KiB and fdatasyncs every 20 ms (open loop,
/// latency from the intended start) while `dd` floods the same disk in the
/// middle of the run: the stall must be blamed on I/O pressure or writeback.
#[test]
fn a_write_storm_is_blamed_on_io_in_a_hint() {
    if std::fs::read_to_string("/proc/pressure/io").is_err() {
        eprintln!(
            "skipped: /proc/pressure/io is absent (kernel without PSI, or psi=0), so no I/O-pressure hint can exist"
        );
        return;
    }
    let io = [
        "psi.io.some",
        "psi.io.full",
        "vmstat.nr_writeback",
        "vmstat.nr_dirty",
        "stat.iowait_ms",
    ];
    // Other work on a shared machine can hide one storm in its own I/O
    // noise (no stall, or a stall blamed on something else): one retry.
    for attempt in 1..=2 {
        let dir = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
        let run = storm_run(dir.path());
        let doc = analyze_json(&run, &[]);
        let write = &doc["inputs"][0]["series"][0];
        assert_eq!(write["tag"], "write");
        let stalls = write["stalls"].as_array().unwrap().clone();
        let hints: Vec<&Value> = stalls
            .iter()
            .flat_map(|s| s["hints"].as_array().into_iter().flatten())
            .collect();
        let Some(named) = hints
            .iter()
            .find(|h| io.contains(&h["counter"].as_str().unwrap()))
        else {
            assert!(
                attempt < 2,
                "no I/O hint in two storms; stalls: {stalls:#?}"
            );
            eprintln!("attempt {attempt}: no I/O hint (stalls: {stalls:?}); retrying once");
            continue;
        };
        assert!(
            named["check"].as_str().unwrap().starts_with("vm.dirty"),
            "{named}"
        );
        assert!(named["value"].as_f64().unwrap().abs() > named["baseline"].as_f64().unwrap());
        // …and the table says it in words.
        cauda()
            .arg("analyze")
            .arg(&run)
            .assert()
            .success()
            .stdout(predicates::str::contains("hint: "))
            .stdout(predicates::str::contains("see vm.dirty"));
        return;
    }
}

/// One 20 s run of the write loop with a 600 MB `dd` at 9 s; the run file's path.
fn storm_run(dir: &Path) -> PathBuf {
    use cauda::probe::run::{self, Destination, Observe, Plan};
    use cauda::probe::run::{Blamed, SeriesSpec};
    use cauda::record::{Arrivals, Clock, MonotonicClock, Schedule, StopFlag};
    use std::io::Write;

    let device = cauda::host::counters::block_device_of(dir);
    let run = dir.join("storm.json");
    let target = dir.join("target.dat");
    let storm = dir.join("storm.dat");
    let runtime_ns: u64 = 20_000_000_000;
    let plan = Plan {
        probe: "write-loop",
        load: cauda::model::LoadMode::OpenLoop,
        parameters: serde_json::json!({"period": "20ms", "write": "4k + fdatasync"}),
        series: vec![SeriesSpec {
            blamed: Blamed::Yes,
            tag: "write".into(),
            measured_from: cauda::model::MeasuredFrom::IntendedStart,
        }],
        threads: 1,
        interval_ns: 1_000_000_000,
        warnings: Vec::new(),
        offered: None,
    };
    let observe = Observe {
        block_device: device,
        ..Observe::default()
    };
    let destination = Destination {
        run_file: Some(run.clone()),
        ..Destination::default()
    };
    let storm_path = storm.clone();
    let dd = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(9));
        std::process::Command::new("dd")
            .arg("if=/dev/zero")
            .arg(format!("of={}", storm_path.display()))
            .args(["bs=1M", "count=600", "conv=fdatasync"])
            .output()
            .unwrap()
    });
    let finished = run::run_completing(
        plan,
        &observe,
        &destination,
        &StopFlag::new(),
        |_| Ok(()),
        |_, start, recorder, stop| {
            let clock = MonotonicClock;
            let mut file = std::fs::File::create(&target)?;
            let block = [7u8; 4096];
            let mut schedule = Schedule::new(start, 20e6, Arrivals::Uniform, 1);
            loop {
                let intended = schedule.next_intended();
                if intended >= start + runtime_ns || stop.is_raised() {
                    return Ok(clock.now());
                }
                clock.sleep_until(intended);
                file.write_all(&block)?;
                file.sync_data()?;
                let now = clock.now();
                recorder.record(now, 0, now.saturating_sub(intended));
            }
        },
        |_| Ok(()),
    )
    .unwrap();
    let dd = dd.join().unwrap();
    assert!(
        dd.status.success(),
        "dd: {}",
        String::from_utf8_lossy(&dd.stderr)
    );
    let _ = std::fs::remove_file(&storm);
    assert!(finished.run.host_counters.is_some());
    // For the README's example: CAUDA_KEEP_STORM=FILE keeps the run file.
    if let Some(keep) = std::env::var_os("CAUDA_KEEP_STORM") {
        std::fs::copy(&run, keep).unwrap();
    }

    run
}
