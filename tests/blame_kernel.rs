//! `--kernel blame` against the real kernel, on planted causes: each slow
//! operation's vector must name what was planted as its largest cause,
//! with at least 70 % of the slow operations' time (its share printed),
//! and no vector may explain more than its operation's latency.
//!
//! Real processes only: a SCHED_FIFO hog on the probe's CPU, a second
//! process writing hard to the same disk, a UDP flood in a network
//! namespace of the test's own whose receive processing RPS steers onto
//! the probe's CPU, and nothing at all.
//! Root and BTF are needed (`common::bpf`); elsewhere each test is skipped.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command as StdCommand, Stdio};

use common::bpf::bpf_ready;
use common::hog::Hog;
use common::{cauda, read_json, succeeded};
use serde_json::Value;

/// The slow operations' time per top-level cause over the whole run, and
/// their latency added up.
fn shares(run: &Value) -> (BTreeMap<String, u64>, u64) {
    let mut causes = BTreeMap::new();
    let mut latency = 0;
    for series in run["blame"]["series"].as_array().expect("a blame section") {
        for interval in series["intervals"].as_array().unwrap() {
            latency += interval["latency_ns"].as_u64().unwrap();
            for (key, ns) in interval["causes"].as_object().unwrap() {
                let cause = key.split('.').next().unwrap().to_string();
                if cause != "page_fault" {
                    *causes.entry(cause).or_insert(0) += ns.as_u64().unwrap();
                }
            }
        }
    }
    (causes, latency)
}

/// The share of `cause` in the slow operations' time, printed with the
/// others, how many were slow, and the five slowest vectors (what a
/// failure on another machine needs to be understood).
fn share_of(run: &Value, cause: &str) -> f64 {
    let (causes, latency) = shares(run);
    assert!(latency > 0, "no slow operation was kept");
    let slow: u64 = run["blame"]["series"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|s| s["intervals"].as_array().into_iter().flatten())
        .map(|iv| iv["slow"].as_u64().unwrap_or(0))
        .sum();
    eprintln!("  {slow} slow operations, {latency} ns in all");
    let mut sorted: Vec<_> = causes.iter().collect();
    sorted.sort_by(|a, b| b.1.cmp(a.1));
    for (name, ns) in &sorted {
        eprintln!(
            "  {name:<14} {:5.1} %",
            **ns as f64 * 100.0 / latency as f64
        );
    }
    for op in run["blame"]["slowest"]
        .as_array()
        .into_iter()
        .flatten()
        .take(5)
    {
        eprintln!(
            "  slowest: {} ns, causes {}, culprits {}",
            op["latency_ns"], op["causes"], op["culprits"]
        );
    }
    causes.get(cause).copied().unwrap_or(0) as f64 / latency as f64
}

/// Every kept vector adds up to at most its latency, and the totals too.
fn vectors_fit(run: &Value) {
    for op in run["blame"]["slowest"].as_array().unwrap() {
        let latency = op["latency_ns"].as_u64().unwrap();
        let sum: u64 = op["causes"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, _)| !k.starts_with("page_fault"))
            .map(|(_, v)| v.as_u64().unwrap())
            .sum();
        assert!(sum <= latency, "{sum} ns of causes in {latency} ns: {op}");
    }
    let (causes, latency) = shares(run);
    assert!(causes.values().sum::<u64>() <= latency);
}

fn blamed_timer(dir: &Path, cpu: &str, runtime: &str, args: &[&str]) -> Value {
    let path = dir.join("timer.json");
    succeeded(
        cauda()
            .args(["timer", "--cpus", cpu, "--runtime", runtime])
            .args(args)
            .args(["--kernel", "blame", "-q", "-o"])
            .arg(&path)
            .output()
            .unwrap(),
    );
    let run = read_json(&path);
    common::assert_valid(&common::validator("run.schema.json"), &run);
    run
}

#[test]
fn a_hog_the_timer_cannot_preempt_is_named_with_its_pid() {
    let Some(_alone) = bpf_ready() else {
        return;
    };
    // Busy 10 ms in every 50: the slow wake-ups (above the previous
    // intervals' p99) are those that waited 9.5–10 ms behind it, longer
    // than the stalls of a host that takes the vCPU without a steal
    // clock. Busy 3 ms in every 10, CI's run read run_queue 56.3 %, timer
    // 23.9 % and running 14.2 %: those stalls, not the hog, filled the
    // slowest 1 %. Here both read 99 %.
    // Named with control characters, as any process may name itself: the
    // run file keeps it readable ('?' for each), and names it so.
    let Some(hog) = Hog::fifo_duty_named(1, 10, 50, 60, Some("\u{1b}[31mhog\u{7}")) else {
        assert!(
            std::env::var_os("CAUDA_REQUIRE_BPF").is_none(),
            "no SCHED_FIFO hog"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let run = blamed_timer(dir.path(), "1", "3s", &[]);
    let pid = hog.pid();
    drop(hog);
    vectors_fit(&run);
    let share = share_of(&run, "run_queue");
    assert!(
        share >= 0.7,
        "run_queue {:.1} % of the slow wake-ups' time",
        share * 100.0
    );
    // The hog is the first culprit of most of the slowest wake-ups.
    let slowest = run["blame"]["slowest"].as_array().unwrap();
    let named = slowest
        .iter()
        .filter(|op| {
            op["culprits"][0]["pid"].as_u64() == Some(u64::from(pid))
                && op["culprits"][0]["comm"] == "?[31mhog?"
        })
        .count();
    assert!(
        named * 2 >= slowest.len(),
        "the hog (?[31mhog?, pid {pid}) first culprit of {named} of {} slowest",
        slowest.len()
    );
    let path = dir.path().join("timer.json");
    let analysis = cauda().args(["analyze"]).arg(&path).output().unwrap();
    let text = String::from_utf8_lossy(&analysis.stdout).into_owned();
    succeeded(analysis);
    assert!(text.contains(&format!("?[31mhog? (pid {pid})")), "{text}");
    // The whole wait (runnable_ns) holds the run-queue part and what ran
    // meanwhile; it is most of each slow wake-up behind the hog.
    let waited: u64 = slowest
        .iter()
        .map(|op| op["runnable_ns"].as_u64().unwrap())
        .sum();
    let late: u64 = slowest
        .iter()
        .map(|op| op["latency_ns"].as_u64().unwrap())
        .sum();
    for op in slowest {
        let runnable = op["runnable_ns"].as_u64().unwrap();
        let run_queue = op["causes"]["run_queue"].as_u64().unwrap_or(0);
        assert!(runnable >= run_queue, "{op}");
        assert!(runnable <= op["latency_ns"].as_u64().unwrap(), "{op}");
    }
    assert!(waited * 10 >= late * 7, "runnable {waited} ns of {late} ns");
}

/// The threads of one process kept off a CPU while it lives: each
/// thread's affinity put back when dropped, and checked.
struct KeptOff(Vec<(String, String)>);

impl KeptOff {
    /// Every thread of the process holding thread `tid`, off `cpu` (on the
    /// other CPUs it was allowed); `None` when it is gone.
    fn process_of(tid: u64, cpu: usize) -> Option<KeptOff> {
        let tgid = process_of(tid)?;
        let mut saved = Vec::new();
        for task in std::fs::read_dir(format!("/proc/{tgid}/task"))
            .ok()?
            .flatten()
        {
            let tid = task.file_name().to_string_lossy().into_owned();
            let Some(mask) = affinity(&tid) else { continue };
            let without = mask & !(1u64 << cpu);
            if without == 0 || without == mask {
                continue;
            }
            let set = StdCommand::new("taskset")
                .args(["-p", &format!("{without:x}"), &tid])
                .output()
                .unwrap();
            if set.status.success() {
                saved.push((tid, format!("{mask:x}")));
            }
        }
        Some(KeptOff(saved))
    }
}

/// The process (thread group) of thread `tid`, if it still runs.
fn process_of(tid: u64) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    let tgid = status.lines().find_map(|l| l.strip_prefix("Tgid:"))?;
    Some(tgid.trim().to_string())
}

/// A thread's CPU mask (`taskset -p`), if it still runs.
fn affinity(tid: &str) -> Option<u64> {
    let out = StdCommand::new("taskset").args(["-p", tid]).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    u64::from_str_radix(text.rsplit(':').next()?.trim(), 16).ok()
}

impl Drop for KeptOff {
    fn drop(&mut self) {
        for (tid, mask) in &self.0 {
            let _ = StdCommand::new("taskset").args(["-p", mask, tid]).output();
            // A thread that ended meanwhile has nothing to restore.
            if let Some(now) = affinity(tid) {
                assert_eq!(
                    format!("{now:x}"),
                    *mask,
                    "thread {tid}'s affinity restored"
                );
            }
        }
    }
}

#[test]
fn an_unloaded_timer_names_the_idle_exit_and_leaves_little_unexplained() {
    let Some(_alone) = bpf_ready() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // This guest's kernel sometimes runs a thread without tracing the
    // switch to it (bpftrace sees the same gaps); that time is unexplained,
    // counted in blame.lost, and the run names the task the thread had
    // switched to before (blame.untraced_after). And other tasks may hold
    // the CPU most of the slow time (here DAMON's kdamond.0, for 0.5 ms at
    // a time: run_queue 56–82 %). Either way the processes named (the
    // suspects, or the culprits) are kept off the probe's CPU, their
    // affinity restored after, and the run made again, up to four in all:
    // the shares are judged on a run the kernel traced whole, on a CPU
    // left to the probe (idle exit 69–90 % then).
    let untraced =
        |run: &Value| run["blame"]["lost"]["switches to a probe thread not traced"].as_u64();
    let busy = |run: &Value| {
        let (causes, latency) = shares(run);
        causes.get("run_queue").copied().unwrap_or(0) * 2 > latency
    };
    let ours = std::process::id().to_string();
    let mut run = blamed_timer(dir.path(), "1", "4s", &[]);
    let mut kept_off = Vec::new();
    for _ in 0..3 {
        let named: Vec<u64> = if let Some(n) = untraced(&run) {
            let warned = run["warnings"].as_array().unwrap().iter().any(|w| {
                w["message"]
                    .as_str()
                    .unwrap()
                    .contains("switches to a probe thread not traced")
            });
            assert!(warned, "untraced switches counted but not warned about");
            // Each is put after the task the thread had switched to (up
            // to three per thread), named with its pid.
            let suspects = run["blame"]["untraced_after"].as_array().unwrap();
            let after: u64 = suspects
                .iter()
                .map(|t| t["switches"].as_u64().unwrap())
                .sum();
            eprintln!("{n} untraced switches, after: {suspects:?}");
            assert!(
                after > 0 && after <= n,
                "{after} of {n} untraced switches named"
            );
            suspects.iter().filter_map(|t| t["pid"].as_u64()).collect()
        } else if busy(&run) {
            let culprits: std::collections::BTreeSet<u64> = run["blame"]["slowest"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|op| op["culprits"].as_array().into_iter().flatten())
                .filter_map(|c| c["pid"].as_u64())
                .collect();
            eprintln!("the timer's CPU was busy, culprits {culprits:?}");
            culprits.into_iter().collect()
        } else {
            break;
        };
        for pid in named {
            if pid != 0 && process_of(pid).as_deref() != Some(&ours) {
                kept_off.extend(KeptOff::process_of(pid, 1));
            }
        }
        run = blamed_timer(dir.path(), "1", "4s", &[]);
    }
    drop(kept_off);
    vectors_fit(&run);
    let unexplained = share_of(&run, "unexplained");
    match untraced(&run) {
        None => assert!(
            unexplained < 0.2,
            "unexplained {:.1} %",
            unexplained * 100.0
        ),
        Some(n) => eprintln!(
            "four runs with untraced switches (last: {n}); unexplained {:.1} %",
            unexplained * 100.0
        ),
    }
    // The vCPU halts between wake-ups: its exit is named with the state,
    // where the CPU was idle (not held by another task most of the time).
    let idle_exit = share_of(&run, "idle_exit");
    if busy(&run) {
        eprintln!(
            "the timer's CPU was busy (run_queue over half): {}",
            run["blame"]["slowest"][0]["culprits"]
        );
    } else {
        assert!(idle_exit > 0.0, "no idle exit");
    }
    let states: Vec<&str> = run["blame"]["series"][0]["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|iv| iv["causes"].as_object().unwrap().keys())
        .filter_map(|k| k.strip_prefix("idle_exit."))
        .collect::<Vec<_>>();
    let names = cpuidle_names();
    assert!(
        states.iter().all(|s| names.iter().any(|n| n == s)),
        "idle states {states:?}, the CPU's {names:?}"
    );
    assert!(
        !run["blame"]["steal_resolution"]
            .as_str()
            .unwrap()
            .is_empty()
    );
}

fn cpuidle_names() -> Vec<String> {
    (0..8)
        .map_while(|i| {
            std::fs::read_to_string(format!(
                "/sys/devices/system/cpu/cpu1/cpuidle/state{i}/name"
            ))
            .ok()
        })
        .map(|n| n.trim().to_string())
        .collect()
}

/// Writes 64 MiB again and again with O_DIRECT for `seconds`.
fn writer(file: &Path, seconds: u64) -> Child {
    StdCommand::new("sh")
        .arg("-c")
        .arg(format!(
            "end=$(( $(date +%s) + {seconds} )); while [ $(date +%s) -lt $end ]; do \
             dd if=/dev/zero of={} bs=1M count=64 oflag=direct status=none; done",
            file.display()
        ))
        .spawn()
        .unwrap()
}

#[test]
fn reads_behind_a_writer_are_blamed_on_the_block_layer_and_match_its_series() {
    let Some(_alone) = bpf_ready() else {
        return;
    };
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let mut write = writer(&dir.path().join("writer.dat"), 8);
    std::thread::sleep(std::time::Duration::from_millis(500));
    let reads = |kernel: &str, runtime: &str, name: &str| {
        let path = dir.path().join(name);
        let out = cauda()
            .args(["disk", "--file"])
            .arg(dir.path().join("reader.dat"))
            .args(["--size", "32M", "--rw", "randread", "--runtime", runtime])
            .args(["--kernel", kernel, "-q", "-o"])
            .arg(&path)
            .output()
            .unwrap();
        succeeded(out);
        let run = read_json(&path);
        vectors_fit(&run);
        let (causes, latency) = shares(&run);
        let block =
            causes.get("block_queue").unwrap_or(&0) + causes.get("block_device").unwrap_or(&0);
        share_of(&run, "block_queue");
        assert!(
            block as f64 >= 0.7 * latency as f64,
            "{kernel}: block layer {block} ns of {latency} ns"
        );
        run
    };
    let run = reads("blame,block", "3s", "disk.json");
    // Blame alone: the block layer's programs give each request's times
    // to its thread, and no block series is recorded.
    let alone = reads("blame", "2s", "alone.json");
    let _ = write.kill();
    let _ = write.wait();
    let tags: Vec<&str> = alone["series"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["tag"].as_str())
        .collect();
    assert!(!tags.iter().any(|t| t.starts_with("block.")), "{tags:?}");
    // Each slow read's own queue and device time is one of the run's
    // requests: never above the block series' largest (1 % for rounding).
    let max = |tag: &str| {
        run["summary"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["tag"] == tag)
            .and_then(|s| s["summary"]["max"].as_u64())
            .unwrap_or_else(|| panic!("no {tag} series"))
    };
    let (queue_max, device_max) = (max("block.queue:read"), max("block.device:read"));
    for op in run["blame"]["slowest"].as_array().unwrap() {
        let part = |k: &str| op["causes"][k].as_u64().unwrap_or(0);
        assert!(part("block_queue") <= queue_max + queue_max / 100, "{op}");
        assert!(
            part("block_device") <= device_max + device_max / 100,
            "{op}"
        );
        // Block time comes only from its own requests (a slow read may
        // also be slow for another reason, with its request quick).
        if part("block_queue") + part("block_device") > 0 {
            assert!(op["requests"].as_u64().unwrap() >= 1, "{op}");
        }
    }
}

/// The filters the flood starts with: few, so that its calibration runs on
/// every machine.
const FIRST_FILTERS: u32 = 300;

/// A network namespace of the test's own whose loopback's receive
/// processing (RPS) runs on `cpu`, where a flood of UDP datagrams arrives
/// in bursts, killed and deleted when dropped.
///
/// Each datagram first passes tc u32 filters that none matches, as many as
/// make its receive work at least 14 µs on this machine
/// (`common/net_rx_flood.py` adds them until it is: about 2,000 here, more
/// on a faster one). A burst every 10 ms, sized to take about 4 ms, keeps
/// that CPU in NET_RX for 4 ms of each 10, as the FIFO hog above keeps it
/// busy. With a fixed 2,000 filters, CI's machine had only 84 wake-ups
/// slower than 2 ms in 4 s (here 231–453) and NET_RX 55 % of their time.
/// A flood with cheap datagrams does not do it: the sender on the other
/// CPU cannot send faster than this one receives, and the softirq runs stay
/// short. Nothing of the host's network settings changes.
struct Flood {
    name: String,
    sender: Child,
}

impl Flood {
    fn onto(cpu: usize) -> Flood {
        let name = format!("cauda-test-netrx-{}", std::process::id());
        let ip = |args: &[&str]| succeeded(StdCommand::new("ip").args(args).output().unwrap());
        ip(&["netns", "add", &name]);
        let inside = |program: &str, args: &[&str]| {
            let mut c = StdCommand::new("ip");
            c.args(["netns", "exec", &name, program]).args(args);
            c
        };
        let mask = format!("{:x}", 1u64 << cpu);
        succeeded(
            inside(
                "sh",
                &[
                    "-c",
                    &format!(
                        "ip link set lo up && echo {mask} > /sys/class/net/lo/queues/rx-0/rps_cpus \
                     && tc qdisc add dev lo ingress"
                    ),
                ],
            )
            .output()
            .unwrap(),
        );
        // Few to start with, so that the calibration runs on every machine.
        let filters: String = (1..=FIRST_FILTERS)
            .map(|i| {
                format!(
                    "filter add dev lo parent ffff: protocol ip prio 1 u32 \
                     match ip dport {} 0xffff classid ffff:1\n",
                    1000 + i
                )
            })
            .collect();
        let batch = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(batch.path(), filters).unwrap();
        succeeded(
            inside("tc", &["-batch", batch.path().to_str().unwrap()])
                .output()
                .unwrap(),
        );
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/common/net_rx_flood.py");
        let other = if cpu == 0 { "1" } else { "0" };
        let mut sender = inside(
            "taskset",
            &["-c", other, "python3", script, &FIRST_FILTERS.to_string()],
        )
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
        let stdout = sender.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let mut flood = Flood { name, sender };
        match rx.recv_timeout(std::time::Duration::from_secs(30)) {
            Ok(line) if line.starts_with("ready") => eprintln!("flood {}", line.trim()),
            Ok(line) => panic!(
                "the flood ended before it calibrated ({:?}): {line:?}",
                flood.sender.try_wait()
            ),
            Err(_) => panic!("the flood did not calibrate in 30 s"),
        }
        flood
    }

    /// The sender still floods (it may have died after calibrating: the
    /// shares would only be low).
    fn still_running(&mut self) {
        let ended = self.sender.try_wait().unwrap();
        assert!(ended.is_none(), "the flood's sender ended: {ended:?}");
    }
}

impl Drop for Flood {
    fn drop(&mut self) {
        let _ = self.sender.kill();
        let _ = self.sender.wait();
        let deleted = StdCommand::new("ip")
            .args(["netns", "del", &self.name])
            .status();
        assert!(
            deleted.is_ok_and(|s| s.success()),
            "ip netns del {}",
            self.name
        );
    }
}

/// `cauda serve` on CPU 0 under SCHED_FIFO 20, killed when dropped.
struct Server(Child);

impl Server {
    fn start(port: u16) -> Server {
        // chrt and taskset before it starts: every thread it makes inherits them.
        let child = StdCommand::new("taskset")
            .args(["-c", "0", "chrt", "-f", "20"])
            .arg(env!("CARGO_BIN_EXE_cauda"))
            .args(["serve", "--listen", &format!("127.0.0.1:{port}"), "-q"])
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        Server(child)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Adds up the slow operations' softirq time per kind.
fn softirq_kinds(run: &Value) -> BTreeMap<String, u64> {
    let mut kinds = BTreeMap::new();
    for iv in run["blame"]["series"][0]["intervals"].as_array().unwrap() {
        for (k, v) in iv["causes"].as_object().unwrap() {
            if let Some(kind) = k.strip_prefix("softirq.") {
                *kinds.entry(kind.to_string()).or_insert(0) += v.as_u64().unwrap();
            }
        }
    }
    kinds
}

/// NET_RX is the largest cause, with at least 70 % of the slow
/// operations' time.
fn blamed_on_net_rx(run: &Value, what: &str) {
    vectors_fit(run);
    let slow: u64 = run["blame"]["series"][0]["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|iv| iv["slow"].as_u64().unwrap())
        .sum();
    eprintln!("{what}: {slow} slow operations");
    let share = share_of(run, "softirq");
    let kinds = softirq_kinds(run);
    let net_rx = kinds.get("NET_RX").copied().unwrap_or(0);
    let (_, latency) = shares(run);
    let net_rx_share = net_rx as f64 / latency as f64;
    // Who held the CPU of the slowest, for a failure to name.
    let mut culprits = BTreeMap::new();
    let slowest = run["blame"]["slowest"].as_array().unwrap();
    let (mut held, mut ksoftirqd, mut waited, mut slowest_ns) = (0, 0, 0, 0);
    for op in slowest {
        for c in op["culprits"].as_array().into_iter().flatten() {
            let comm = c["comm"].as_str().unwrap_or("?");
            *culprits.entry(comm).or_insert(0) += 1;
            held += c["ns"].as_u64().unwrap();
            if comm.starts_with("ksoftirqd") {
                ksoftirqd += c["ns"].as_u64().unwrap();
            }
        }
        waited += op["causes"]["run_queue"].as_u64().unwrap_or(0);
        slowest_ns += op["latency_ns"].as_u64().unwrap();
    }
    // The tasks that held the CPU are the run-queue wait's: ksoftirqd/1
    // held 281 ms of the timer's 1.7 ms wait while the softirqs it ran
    // (counted as theirs) were not taken out of its time, and culprits
    // were not scaled down to the wait.
    eprintln!(
        "{what}: culprits {held} ns, ksoftirqd {ksoftirqd} ns, wait {waited} ns, of {slowest_ns} ns"
    );
    assert!(
        held <= waited + slowest_ns / 100,
        "{what}: culprits held {held} ns of a {waited} ns run-queue wait"
    );
    // Measured here: NET_RX 92–99 % of the slow operations' time, for the
    // timer and for the round trips alike.
    assert!(
        net_rx_share >= 0.70,
        "{what}: NET_RX {:.1} % of the {slow} slow operations' time (softirq {:.1} %, kinds \
         {kinds:?}; culprits of the {} slowest: {culprits:?})",
        net_rx_share * 100.0,
        share * 100.0,
        slowest.len()
    );
    // A burst that ran on the idle CPU after the wake-up is NET_RX, not
    // also idle exit: counted as both, the parts were scaled down to the
    // latency, and the idle exit had 6–16 % here (under 1 % since).
    let (causes, latency) = shares(run);
    let idle = causes.get("idle_exit").copied().unwrap_or(0) as f64 / latency as f64;
    assert!(idle < 0.05, "{what}: idle_exit {:.1} %", idle * 100.0);
}

#[test]
fn a_udp_flood_steered_onto_the_probes_cpu_is_blamed_on_net_rx() {
    let Some(_alone) = bpf_ready() else {
        return;
    };
    let mut flood = Flood::onto(1);
    let dir = tempfile::tempdir().unwrap();
    // Slow is above 2 ms: the hundreds of wake-ups a burst delayed (not
    // only the run's top 1 %, some 40 wake-ups, which a rarer stall of
    // this VM's own, a few ms long, can take: NET_RX had 33 % and 44 % of
    // them in two runs of ten here).
    let above = ["--blame-above", "2ms"];
    let timer = blamed_timer(dir.path(), "1", "4s", &above);
    // A ping-pong whose client shares CPU 1 with the flood's receive
    // processing; its server, on CPU 0, and the client under SCHED_FIFO so
    // that the flood's sender delays neither.
    let server = Server::start(7791);
    let path = dir.path().join("net.json");
    let out = StdCommand::new("taskset")
        .args(["-c", "1", "chrt", "-f", "20"])
        .arg(env!("CARGO_BIN_EXE_cauda"))
        .args(["net", "--connect", "127.0.0.1:7791", "--runtime", "4s"])
        .args(above)
        .args(["--kernel", "blame", "-q", "-o"])
        .arg(&path)
        .output()
        .unwrap();
    drop(server);
    flood.still_running();
    drop(flood);
    succeeded(out);
    blamed_on_net_rx(&timer, "timer");
    blamed_on_net_rx(&read_json(&path), "net");
}
