//! `cauda disk`: engine correctness (each engine reads back what the other
//! wrote; verify mode), the rate-mode backlog with an injected stall, bad
//! input, and `analyze` of a real run. Safety is in `disk_safety.rs`.

mod common;

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use cauda::model::disk::EngineKind;
use cauda::probe::disk::any_engine::{AnyEngine, make_engine};
use cauda::probe::disk::engine::{Dir, Engine, Op};
use cauda::probe::disk::measure::{Job, JobStats, SeriesMap};
use cauda::probe::disk::target::{self, OpenRequest, Target, TargetSpec};
use cauda::probe::disk::workload::{Distribution, Rw, Workload, WorkloadSpec};
use cauda::record::{Arrivals, FakeClock, Schedule, StopFlag};
use common::{cauda, read_json, refused, saved_run};
use serde_json::Value;

fn request(path: &Path, writes: bool) -> OpenRequest {
    OpenRequest {
        spec: TargetSpec::File(path.to_path_buf()),
        writes,
        direct: true,
        size: Some(1 << 20),
        offset: 0,
        block: 4096,
        force: false,
        force_destroy_data: false,
        seed: 5,
    }
}

/// `cauda disk --file FILE`, to which a test adds the rest.
fn disk(file: &Path) -> Command {
    let mut c = cauda();
    c.args(["disk", "--file"]).arg(file);
    c
}

/// `cauda disk --file DIR/FILE ARGS -q -o DIR/FILE.json`, which must
/// succeed; its run file.
fn disk_run(dir: &Path, file: &str, args: &[&str]) -> Value {
    let out = dir.join(format!("{file}.json"));
    saved_run(disk(&dir.join(file)).args(args).arg("-q"), &out)
}

/// An engine of `kind` on `target` with 4 KiB buffers, `depth` deep
/// (psync runs one I/O at a time), seeded with `seed`.
fn open_engine(kind: EngineKind, target: &Target, depth: usize, seed: u64) -> AnyEngine {
    let depth = if kind == EngineKind::Psync { 1 } else { depth };
    make_engine(kind, target, depth, 4096, seed).unwrap()
}

/// A uniform `rw` workload with `read_pct` % reads over the first
/// `region_len` bytes in 4 KiB blocks, seeded with `seed`.
fn uniform_workload(rw: Rw, read_pct: u8, region_len: u64, seed: u64) -> Workload {
    let spec = WorkloadSpec {
        rw,
        read_pct,
        distribution: Distribution::Uniform,
        region_start: 0,
        region_len,
        block: 4096,
        fsync_every: 0,
    };
    Workload::new(&spec, 0, 1, seed)
}

/// What one job recorded: (time, series, value) triples.
type Values = Vec<(u64, usize, u64)>;

/// Runs one job of `engine` over `workload` into `series` through `run`
/// (its open or closed loop); what it recorded and its counts.
fn run_job(
    engine: &mut AnyEngine,
    mut workload: Workload,
    series: SeriesMap,
    run: impl FnOnce(&mut Job<'_, AnyEngine, Values>),
) -> (Values, JobStats) {
    let mut values = Values::new();
    let mut stats = JobStats::default();
    let stop = StopFlag::new();
    run(&mut Job {
        engine,
        workload: &mut workload,
        sink: &mut values,
        series,
        stats: &mut stats,
        verify: None,
        submit_batch: 1,
        stop: &stop,
    });
    (values, stats)
}

/// Writes distinct random blocks with one engine, reads them back with the
/// other, and compares every byte.
fn write_then_read(writer: EngineKind, reader: EngineKind) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.dat");
    let target = target::open(&request(&path, true), &StopFlag::new()).unwrap();
    assert!(target.created);
    let mut w = open_engine(writer, &target, 4, 11);
    let mut r = open_engine(reader, &target, 4, 99);
    let offsets: Vec<u64> = (0..32).map(|i| ((i * 37) % 256) * 4096).collect();
    let mut written = Vec::new();
    let mut done = Vec::new();
    for (i, &offset) in offsets.iter().enumerate() {
        let slot = i % w.depth();
        let block: Vec<u8> = (0..4096)
            .map(|b| (b as u64 * 31 + i as u64 * 7 + offset) as u8)
            .collect();
        w.buffer_mut(slot).copy_from_slice(&block);
        w.queue(Op {
            dir: Dir::Write,
            offset,
            slot,
        })
        .unwrap();
        written.push(block);
        if slot + 1 == w.depth() || i + 1 == offsets.len() {
            let want = slot + 1;
            while done.len() < want {
                w.submit(want - done.len(), None, &mut done).unwrap();
            }
            assert!(done.iter().all(|c| c.result == 4096), "{done:?}");
            done.clear();
        }
    }
    for (i, &offset) in offsets.iter().enumerate() {
        r.queue(Op {
            dir: Dir::Read,
            offset,
            slot: 0,
        })
        .unwrap();
        while done.is_empty() {
            r.submit(1, None, &mut done).unwrap();
        }
        assert_eq!(done[0].result, 4096);
        done.clear();
        assert!(
            r.buffer_mut(0) == written[i].as_slice(),
            "block {i} at {offset} differs"
        );
    }
    if let AnyEngine::Uring(u) = &w {
        eprintln!("io_uring fixed buffers: {}", u.fixed_buffers());
    }
}

#[test]
fn io_uring_writes_what_psync_reads_and_back() {
    write_then_read(EngineKind::IoUring, EngineKind::Psync);
    write_then_read(EngineKind::Psync, EngineKind::IoUring);
    write_then_read(EngineKind::IoUring, EngineKind::IoUring);
}

#[test]
fn verify_mode_reads_back_the_bytes_written_and_catches_a_change() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("v.dat");
    let run = |engine: &str, rw: &str, out: &str| {
        disk(&file)
            .args([
                "--size", "256k", "--rw", rw, "--engine", engine, "--verify", "42",
            ])
            .args(["--runtime", "300ms", "-q", "-o"])
            .arg(dir.path().join(out))
            .assert()
    };
    // Sequential writes cover all 64 blocks many times over in 300 ms.
    run("psync", "write", "w.json").success();
    run("io_uring", "randread", "r1.json").success();
    let r1 = read_json(&dir.path().join("r1.json"));
    assert!(r1["disk"]["ios"]["read"].as_u64().unwrap() > 64);
    assert_eq!(r1["faults"], serde_json::json!({}));
    // Another tool rewrites one block: the mark stays, the check fails.
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[5 * 4096 + 17] ^= 0xFF;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&file)
        .and_then(|mut f| std::io::Write::write_all(&mut f, &bytes))
        .unwrap();
    run("io_uring", "read", "r2.json")
        .code(1)
        .stderr(predicates::str::contains("did not hold the pattern"));
    let r2 = read_json(&dir.path().join("r2.json"));
    assert!(r2["faults"]["read verify-mismatch"].as_u64().unwrap() >= 1);
    // Writes are still allowed: the file is still cauda's.
    run("io_uring", "randwrite", "w2.json").success();
    // Deep queues, submitted one operation at a time or in batches, move the
    // same bytes: a sequential pass rewrites every block, then reads check.
    for (rw, batch) in [("write", "1"), ("randread", "1"), ("randread", "4")] {
        let out = dir.path().join(format!("deep-{rw}-{batch}.json"));
        let run = saved_run(
            disk(&file)
                .args(["--size", "256k", "--rw", rw, "--engine", "io_uring"])
                .args(["--verify", "42", "--iodepth", "8", "--submit-batch", batch])
                .args(["--runtime", "300ms", "-q"]),
            &out,
        );
        assert_eq!(run["faults"], serde_json::json!({}), "{rw} batch {batch}");
        assert!(
            run["disk"]["ios"][if rw == "write" { "write" } else { "read" }]
                .as_u64()
                .is_some_and(|n| n > 64)
        );
    }
}

#[test]
fn an_open_loop_stall_shows_as_its_backlog() {
    // 1000/s for 2 s through psync on a real file, with the clock frozen
    // for 500 ms at t = 0.5 s (as SIGSTOP would).
    let dir = tempfile::tempdir().unwrap();
    let t = target::open(&request(&dir.path().join("s.dat"), false), &StopFlag::new()).unwrap();
    let mut engine = open_engine(EngineKind::Psync, &t, 1, 1);
    let workload = uniform_workload(Rw::Randread, 100, t.region_len, 3);
    let clock = FakeClock::new(0, 20_000);
    clock.stall_at(500_000_000, 500_000_000);
    let mut map = SeriesMap::default();
    map.latency[0] = Some(0);
    map.service[0] = Some(1);
    let (values, stats) = run_job(&mut engine, workload, map, |job| {
        let mut schedule = Schedule::new(0, 1_000_000.0, Arrivals::Uniform, 1);
        job.open_loop(&clock, &mut schedule, 2_000_000_000).unwrap();
    });

    let latency: Vec<u64> = values.iter().filter(|v| v.1 == 0).map(|v| v.2).collect();
    let service: Vec<u64> = values.iter().filter(|v| v.1 == 1).map(|v| v.2).collect();
    assert_eq!(
        latency.len(),
        1_999,
        "every intended start is measured, none skipped"
    );
    assert_eq!(stats.ios[0], 1_999);
    let late: Vec<u64> = latency.iter().copied().filter(|&v| v > 20_000).collect();
    assert!(
        (499..=501).contains(&late.len()),
        "backlog of {}",
        late.len()
    );
    assert!(
        late[0] >= 500_000_000,
        "the first carries the whole stall: {}",
        late[0]
    );
    assert!(
        late.windows(2).all(|w| w[1] < w[0]),
        "the backlog drains one period at a time"
    );
    let mut sorted = latency.clone();
    sorted.sort_unstable();
    let p99 = sorted[sorted.len() * 99 / 100];
    assert!(p99 >= 100_000_000, "p99 {p99} carries the stall");
    // Service time never saw the stall: the fake clock does not move during I/O.
    assert!(service.iter().all(|&v| v == 0));
}

#[test]
fn a_real_short_run_analyses_and_matches_its_counts() {
    let dir = tempfile::tempdir().unwrap();
    let run = disk_run(
        dir.path(),
        "a.dat",
        &[
            "--size",
            "8M",
            "--rw",
            "randrw",
            "--mix",
            "70",
            "--iodepth",
            "4",
            "--jobs",
            "2",
            "--fsync",
            "16",
            "--runtime",
            "1500ms",
            "--interval-length",
            "500ms",
        ],
    );
    assert_eq!(run["probe"], "disk");
    common::assert_valid(&common::validator("run.schema.json"), &run);
    assert_eq!(run["load"], "closed-loop");
    // Every run also carries cauda's own control thread, last.
    assert_eq!(
        common::series_tags(&run),
        ["read", "write", "fsync", "self"]
    );
    let disk = &run["disk"];
    assert_eq!(disk["engine"], "io_uring");
    let summaries = common::summaries(&dir.path().join("a.dat.json"), &[]);
    for dir in ["read", "write", "fsync"] {
        let s = common::series(&summaries, dir);
        assert_eq!(
            s["count"], disk["ios"][dir],
            "{dir}: analyze and the run agree"
        );
    }
    let reads = disk["ios"]["read"].as_f64().unwrap();
    let writes = disk["ios"]["write"].as_f64().unwrap();
    let share = reads / (reads + writes);
    assert!((0.6..0.8).contains(&share), "--mix 70 gave {share}");
    // Interval counts add up to the totals; rates are counts over lengths.
    let intervals = disk["intervals"].as_array().unwrap();
    let counted: u64 = intervals.iter().map(|i| i["ios"].as_u64().unwrap()).sum();
    assert_eq!(counted as f64, reads + writes);
    for i in intervals {
        let rate = i["ios"].as_f64().unwrap() / (i["length_ns"].as_f64().unwrap() / 1e9);
        assert!((rate - i["iops"].as_f64().unwrap()).abs() < 1e-6 * rate.max(1.0));
        let bandwidth = i["bandwidth_bytes_per_s"].as_f64().unwrap();
        assert!((bandwidth - rate * 4096.0).abs() <= 1e-9 * bandwidth.max(1.0));
    }
    assert!(disk["cpu"]["jobs_per_io_ns"].as_f64().unwrap() > 0.0);
    let wa = &disk["write_amplification"];
    assert!(wa["stack"]["factor"].as_f64().is_some() || wa["stack"]["not_available"].is_string());
    assert!(wa["device"]["not_available"].as_str().unwrap().len() > 5);
}

#[test]
fn slat_and_clat_split_each_latency_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let run = disk_run(
        dir.path(),
        "s.dat",
        &[
            "--size",
            "4M",
            "--rw",
            "randrw",
            "--iodepth",
            "4",
            "--slat-clat",
            "--runtime",
            "300ms",
            "--interval-length",
            "100ms",
        ],
    );
    let series = |tag: &str| {
        run["series"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["tag"] == tag)
            .unwrap_or_else(|| panic!("no series {tag}"))["intervals"]
            .as_array()
            .unwrap()
            .clone()
    };
    for dir in ["read", "write"] {
        let (lat, slat, clat) = (
            series(dir),
            series(&format!("{dir}.slat")),
            series(&format!("{dir}.clat")),
        );
        assert!(!lat.is_empty());
        // Each operation's latency is its slat plus its clat, to the
        // nanosecond, so counts match and sums add up in every interval.
        let sum = |i: &Value| {
            i["sum"].as_str().map_or_else(
                || i["sum"].as_u64().unwrap() as u128,
                |s| s.parse().unwrap(),
            )
        };
        for ((l, s), c) in lat.iter().zip(&slat).zip(&clat) {
            assert_eq!(l["count"], s["count"]);
            assert_eq!(l["count"], c["count"]);
            assert_eq!(sum(l), sum(s) + sum(c), "{dir}");
        }
    }
    assert!(
        run["summary"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["tag"] == "read.clat"),
        "the split series are summarised like any other"
    );
}

#[test]
fn rate_mode_labels_latency_and_service() {
    let dir = tempfile::tempdir().unwrap();
    let run = disk_run(
        dir.path(),
        "r.dat",
        &["--size", "4M", "--rate", "500/s", "--runtime", "1s"],
    );
    assert_eq!(run["load"], "open-loop");
    let series = run["series"].as_array().unwrap();
    assert_eq!(series[0]["tag"], "read");
    assert_eq!(series[0]["measured_from"], "intended-start");
    assert_eq!(series[1]["tag"], "read.service");
    assert_eq!(series[1]["measured_from"], "actual-start");
    let n = run["disk"]["ios"]["read"].as_u64().unwrap();
    assert!((400..=500).contains(&n), "500/s for 1 s gave {n}");
    // The generator's own lag: one value per operation submitted.
    assert_eq!(series[2]["tag"], "lag");
    assert_eq!(series[2]["measured_from"], "intended-start");
    assert!(common::recorded(&series[2]) >= n);
    // What the schedule offered: due every 2 ms from the start, 499 before 1 s.
    let offered = &run["offered"];
    assert_eq!(common::offered_total(&run), 499, "{offered}");
    assert_eq!(offered["completed"], serde_json::json!(["read"]));
    assert_eq!(offered["service"], serde_json::json!(["read.service"]));
}

#[test]
fn bad_input_is_refused_with_what_to_change() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("b.dat");
    let f = f.to_str().unwrap();
    for (args, needle) in [
        (
            &["--size", "1M", "--bs", "1000"][..],
            "--bs 1000: O_DIRECT needs a multiple",
        ),
        (&["--size", "2k", "--bs", "4k"], "smaller than --bs"),
        (
            &["--mix", "70"],
            "--mix sets the share of reads of --rw randrw",
        ),
        (&["--rw", "randrw", "--mix", "101"], "101"),
        (&["--fsync", "4"], "--fsync needs a workload that writes"),
        (
            &["--engine", "psync", "--iodepth", "8"],
            "--engine psync runs one I/O at a time",
        ),
        (&["--rate", "100/s", "--slat-clat"], "cannot be used with"),
        (
            &["--iodepth", "4", "--submit-batch", "8"],
            "--submit-batch 8 is above --iodepth 4",
        ),
        (&["--device", "/dev/null"], "cannot be used with"),
        (&["--random", "zipf:1"], "zipf:THETA"),
    ] {
        refused(&[&["disk", "--file", f][..], args].concat(), needle);
    }
    refused(
        &["disk", "--device", "/dev/cauda-no-such-disk"],
        "does not exist",
    );
    refused(&["disk", "--device", f, "--size", "1M"], "does not exist");
    refused(&["disk", "--device", "/dev/null"], "not a block device");
    assert!(
        !Path::new(f).exists(),
        "nothing was created by refused runs"
    );
}

/// Sends SIGINT to `child` `after_ms` after `file` appears (the signal
/// handler is installed before the file is created).
fn interrupt_once_created(child: &std::process::Child, file: &Path, after_ms: u64) {
    for _ in 0..600 {
        if file.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    std::thread::sleep(std::time::Duration::from_millis(after_ms));
    common::signal(child.id(), "-INT");
}

#[test]
fn ctrl_c_saves_the_run_with_its_disk_figures() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.json");
    let watch = common::inotify::Watch::new(dir.path());
    let mut child = common::cauda_process()
        .args(["disk", "--file"])
        .arg(dir.path().join("c.dat"))
        .args(["--size", "4M", "--runtime", "60s", "-q", "-o"])
        .arg(&out)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Give the run a moment to measure once its file exists.
    interrupt_once_created(&child, &dir.path().join("c.dat"), 800);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    // Written once, with the disk section: one rename onto it, none in place.
    assert_eq!(watch.writes_of("run.json"), (1, 0));
    let run = read_json(&out);
    assert_eq!(run["interrupted"], true);
    assert!(run["duration_ns"].as_u64().unwrap() < 30_000_000_000);
    let reads = run["disk"]["ios"]["read"].as_u64().unwrap();
    assert!(reads > 0);
    let summaries = common::summaries(&out, &[]);
    assert_eq!(common::series(&summaries, "read")["count"], reads);
}

#[test]
fn failed_and_short_ios_are_counted_by_errno_never_timed() {
    // The target is opened read-only, so every write fails with EBADF; the
    // file is then cut to half the region, so reads past the end come back
    // short. Both engines must count each, and time only the good reads.
    for kind in [EngineKind::Psync, EngineKind::IoUring] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e.dat");
        drop(target::open(&request(&path, true), &StopFlag::new()).unwrap());
        let t = target::open(&request(&path, false), &StopFlag::new()).unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(t.region_len / 2)
            .unwrap();
        let mut engine = open_engine(kind, &t, 4, 1);
        let workload = uniform_workload(Rw::Randrw, 50, t.region_len, 9);
        let mut map = SeriesMap::default();
        map.latency[0] = Some(0);
        map.latency[1] = Some(1);
        let clock = cauda::record::MonotonicClock;
        let end = cauda::record::Clock::now(&clock) + 200_000_000;
        let (values, stats) = run_job(&mut engine, workload, map, |job| {
            job.closed_loop(&clock, end).unwrap();
        });
        let failed_writes = stats.faults["write EBADF"];
        let short_reads = stats.faults["read short"];
        assert!(
            failed_writes > 10 && short_reads > 10,
            "{kind:?}: {:?}",
            stats.faults
        );
        assert_eq!(stats.ios[1], 0, "no write succeeded");
        assert!(stats.ios[0] > 10, "reads inside the file succeed");
        assert_eq!(
            values.iter().filter(|v| v.1 == 1).count(),
            0,
            "failures are not timed"
        );
        assert_eq!(values.len() as u64, stats.ios[0]);
        assert_eq!(
            stats.total_ios(),
            stats.ios[0] + failed_writes + short_reads
        );
        assert!(stats.fatal.is_none(), "EBADF does not stop the run");
    }
}

#[test]
fn a_file_larger_than_the_free_space_is_refused_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("huge.dat");
    cauda()
        .args(["disk", "--file"])
        .arg(&file)
        .args(["--size", "1000T", "--runtime", "1s", "-q"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("its filesystem has"));
    assert!(!file.exists(), "nothing is left behind");
}

/// Room for a file whose filling outlasts a signal: a quarter of what is
/// free, at most 4 GiB; `None` (printed) when that is under 256 MiB.
fn slow_file_size(dir: &Path) -> Option<u64> {
    let free = common::sh("df", &["--output=avail", "-B1", dir.to_str().unwrap()])
        .unwrap()
        .lines()
        .last()
        .and_then(|l| l.trim().parse::<u64>().ok())
        .unwrap();
    let size = (free / 4).min(4 << 30);
    if size < 256 << 20 {
        eprintln!("skipped: {free} bytes free, too little to create a file slowly");
        return None;
    }
    Some(size)
}

/// The file being filled for `file` (`.NAME.cauda-partial-PID`), once it
/// exists (waits up to 6 s).
fn partial_of(file: &Path) -> Option<PathBuf> {
    let prefix = format!(".{}.cauda-partial-", file.file_name()?.to_str()?);
    for _ in 0..600 {
        let found = std::fs::read_dir(file.parent()?)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(&prefix))
            });
        if found.is_some() {
            return found;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    None
}

#[test]
fn ctrl_c_while_the_file_is_created_stops_and_removes_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("slow.dat");
    let Some(size) = slow_file_size(dir.path()) else {
        return;
    };
    let child = common::cauda_process()
        .args(["disk", "--file"])
        .arg(&file)
        .args(["--size", &size.to_string(), "--runtime", "5s", "-q"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let partial = partial_of(&file).expect("the file is filled under a name of its own");
    std::thread::sleep(std::time::Duration::from_millis(100));
    common::signal(child.id(), "-INT");
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("nothing was measured"), "{stderr}");
    assert!(!file.exists(), "nothing at the path");
    assert!(!partial.exists(), "the partly created file is removed");
}

#[test]
fn a_run_killed_while_creating_leaves_only_a_marked_partial_file_that_the_next_removes() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("killed.dat");
    let Some(size) = slow_file_size(dir.path()) else {
        return;
    };
    let mut child = common::cauda_process()
        .args(["disk", "--file"])
        .arg(&file)
        .args(["--size", &size.to_string(), "--runtime", "5s", "-q"])
        .spawn()
        .unwrap();
    let partial = partial_of(&file).expect("the file is filled under a name of its own");
    std::thread::sleep(std::time::Duration::from_millis(100));
    child.kill().unwrap();
    child.wait().unwrap();
    // No short file where a later run would measure it…
    assert!(!file.exists());
    assert!(partial.exists());
    // …and the next run that creates the file removes the leftover.
    let out = dir.path().join("run.json");
    cauda()
        .args(["disk", "--file"])
        .arg(&file)
        .args(["--size", "4M", "--runtime", "200ms", "-q", "-o"])
        .arg(&out)
        .assert()
        .success()
        .stderr(predicates::str::contains(
            "partial file left by an earlier run",
        ));
    assert!(!partial.exists());
    assert!(file.exists());
}

#[test]
fn a_file_in_memory_is_measured_with_a_warning_that_says_so() {
    let Ok(dir) = tempfile::tempdir_in("/dev/shm") else {
        eprintln!("skipped: no /dev/shm");
        return;
    };
    let file = dir.path().join("t.dat");
    let out = cauda()
        .args(["disk", "--file"])
        .arg(&file)
        .args([
            "--size",
            "4M",
            "--rw",
            "randread",
            "--runtime",
            "1s",
            "-q",
            "-o",
        ])
        .arg(dir.path().join("run.json"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() && stderr.contains("O_DIRECT") {
        eprintln!("skipped: this tmpfs refuses O_DIRECT");
        return;
    }
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("is on tmpfs") && stderr.contains("measures memory, not a disk"),
        "{stderr}"
    );
    let run = read_json(&dir.path().join("run.json"));
    assert!(
        run["warnings"].to_string().contains("measures memory"),
        "{run}"
    );
}
