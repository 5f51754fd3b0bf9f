//! The run's slowest operations and their causes (`--kernel blame`) in the
//! Trace Event Format, so ui.perfetto.dev and chrome://tracing show each
//! outlier on a time line beside its neighbours (`cauda convert --to trace`).
//!
//! The format is the JSON object form of Google's "Trace Event Format"
//! document: `{"traceEvents": [...], "displayTimeUnit": "ns", "metadata":
//! {...}}`, with complete events (`"ph": "X"`, `ts` and `dur` in
//! microseconds, fractional) and metadata events (`"ph": "M"`,
//! `process_name`, `thread_name` and their sort indices). `ts` 0 is the
//! run's start.
//!
//! Layout: process 1, `cauda PROBE`, has a track per probe thread; each
//! slow operation is a slice from its intended start for its latency, and
//! under it one slice per cause, laid one after another (the order of the
//! causes inside the window is not known, only each one's total). Process
//! 2, `CPUs`, has a track per CPU holding the same operations named with
//! their culprits, so operations that shared a CPU line up.
//!
//! Two rules of the readers shape the numbers:
//! - slices on one track must nest or be disjoint: Perfetto drops a
//!   complete event that overlaps another without nesting. Operations of
//!   one thread can overlap (an open loop's latency runs from the
//!   intended start, so a late operation's window covers the next one's
//!   start), as can operations of different threads on one CPU; each such
//!   operation goes on a further track of its thread or CPU.
//! - Perfetto reads `ts` and `dur` as a double and truncates µs × 1000 to
//!   whole nanoseconds, so `1.001` can come back as 1000 ns and a cause
//!   laid at the end of its operation would end a nanosecond after it (and
//!   be dropped). Every time is written as (ns + ½) / 1000 µs: readers that
//!   truncate get the exact nanosecond back, the others are half a
//!   nanosecond off, both for the start and the end, so nesting holds.

use std::collections::BTreeMap;

use anyhow::Result;
use serde_json::{Map, Value, json};

use crate::error::input_error;
use crate::model::blame::{BlameReport, SlowOperation, cause_meaning, cause_of};
use crate::model::{Loaded, RunFile};
use crate::units::format_ns;

/// The causes with time, in the order their slices are laid inside an
/// operation: what delays the start first, then the operation's own
/// time, and what no event accounts for last.
pub const LAYOUT: [&str; 11] = [
    "idle_exit",
    "irq",
    "softirq",
    "timer",
    "block_queue",
    "block_device",
    "blocked",
    "run_queue",
    "steal",
    "running",
    "unexplained",
];

/// The process that holds a track per probe thread.
pub const THREADS_PID: u32 = 1;
/// The process that holds a track per CPU.
pub const CPUS_PID: u32 = 2;
/// The first track's tid: tracks are numbered from here across both
/// processes, clear of the pids (a reader takes tid = pid for a process's
/// main thread).
const FIRST_TID: u32 = 10;

/// What each cause slice says of its place in the operation.
const ORDER_NOTE: &str = "the order of the causes inside the operation is not known, only each \
                          one's total; they are laid one after another";

/// The trace document of the one run in `inputs`.
pub fn to_trace(inputs: &[Loaded]) -> Result<Vec<u8>> {
    let (source, run, blame) = run_with_blame(inputs)?;
    let mut events = process_names(&run.probe);
    let ops = &blame.slowest;
    let mut threads = Tracks::new(ops, |op| op.thread as u64);
    let mut cpus = Tracks::new(ops, |op| u64::from(op.cpu));
    let mut next_tid = FIRST_TID;
    events.extend(
        threads.names(ops, THREADS_PID, &mut next_tid, |thread, lane, first| {
            let tid = first.tid;
            lane_name(format!("thread {thread} (tid {tid})"), lane)
        }),
    );
    events.extend(cpus.names(ops, CPUS_PID, &mut next_tid, |cpu, lane, _| {
        lane_name(format!("cpu {cpu}"), lane)
    }));
    // Each operation's events are written as they are made: held as JSON
    // trees until the end, 100,000 operations took 6 GB.
    let mut out = Events::default();
    for event in &events {
        out.put(event)?;
    }
    for (rank, op) in blame.slowest.iter().enumerate() {
        let tid = threads.tid_of(rank);
        out.put(&operation(op, rank, tid))?;
        for event in causes(op, tid) {
            out.put(&event)?;
        }
        out.put(&on_cpu(op, rank, cpus.tid_of(rank)))?;
    }
    let mut bytes = out.bytes;
    bytes.extend_from_slice(b"],\"displayTimeUnit\":\"ns\",\"metadata\":");
    serde_json::to_writer(&mut bytes, &metadata(source, run, blame))?;
    bytes.push(b'}');
    Ok(bytes)
}

/// The document as it is written: its opening and the events so far.
struct Events {
    bytes: Vec<u8>,
    first: bool,
}

impl Default for Events {
    fn default() -> Events {
        Events {
            bytes: b"{\"traceEvents\":[".to_vec(),
            first: true,
        }
    }
}

impl Events {
    /// Appends one event to `traceEvents`.
    fn put(&mut self, event: &Value) -> Result<()> {
        if !std::mem::take(&mut self.first) {
            self.bytes.push(b',');
        }
        serde_json::to_writer(&mut self.bytes, event)?;
        Ok(())
    }
}

/// The one input, its run file and its blame section; anything else is
/// refused with the fix.
fn run_with_blame(inputs: &[Loaded]) -> Result<(&str, &RunFile, &BlameReport)> {
    let [input] = inputs else {
        return Err(input_error(format!(
            "--to trace takes one run file, not {}: convert each run on its own",
            inputs.len()
        )));
    };
    let Some(run) = &input.run else {
        return Err(input_error(format!(
            "{}: --to trace needs a cauda run file measured with --kernel blame; this input \
             holds only latencies, not why each operation was slow",
            input.source
        )));
    };
    let Some(blame) = &run.blame else {
        return Err(input_error(format!(
            "{}: this run has no blame section, so there are no slow operations to trace; \
             measure again with --kernel blame (cauda {} --kernel blame ...)",
            input.source, run.probe
        )));
    };
    Ok((&input.source, run, blame))
}

/// A time in the format's microseconds: (ns + ½) / 1000, so a reader that
/// truncates to whole nanoseconds reads `ns` back (see the module's note).
pub fn micros(ns: u64) -> Value {
    json!((ns as f64 + 0.5) / 1000.0)
}

/// The two processes' names and their order.
fn process_names(probe: &str) -> Vec<Value> {
    let mut events = Vec::new();
    for (pid, name) in [
        (THREADS_PID, format!("cauda {probe}")),
        (CPUS_PID, "CPUs".into()),
    ] {
        events.push(
            json!({"name": "process_name", "ph": "M", "pid": pid, "tid": pid,
                           "args": {"name": name}}),
        );
        events.push(json!({"name": "process_sort_index", "ph": "M", "pid": pid,
                           "tid": pid, "args": {"sort_index": pid}}));
    }
    events
}

/// A track's name, with the lane when its operations overlap.
fn lane_name(base: String, lane: usize) -> String {
    if lane == 0 {
        base
    } else {
        format!("{base}, overlapping {}", lane + 1)
    }
}

/// The tracks of one process: per key (a thread or a CPU) as many lanes
/// as its operations need to stay disjoint, and each operation's lane.
struct Tracks {
    /// Per key, its lanes' count and the first operation seen on it.
    keys: BTreeMap<u64, (usize, usize)>,
    /// Per operation (by rank), its key and lane.
    placed: Vec<(u64, usize)>,
    /// Per (key, lane), its tid, once named.
    tids: BTreeMap<(u64, usize), u32>,
}

impl Tracks {
    /// Places each operation on the first lane of its key that is free at
    /// its start (operations taken by start).
    fn new(ops: &[SlowOperation], key_of: impl Fn(&SlowOperation) -> u64) -> Tracks {
        let mut by_start: Vec<usize> = (0..ops.len()).collect();
        by_start.sort_by_key(|&i| (ops[i].start_ns, i));
        let mut lane_ends: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        let mut keys = BTreeMap::new();
        let mut placed = vec![(0, 0); ops.len()];
        for i in by_start {
            let op = &ops[i];
            let key = key_of(op);
            let ends = lane_ends.entry(key).or_default();
            let end = op.start_ns.saturating_add(op.latency_ns);
            let lane = match ends.iter().position(|&e| e <= op.start_ns) {
                Some(lane) => lane,
                None => {
                    ends.push(0);
                    ends.len() - 1
                }
            };
            ends[lane] = end;
            keys.entry(key).or_insert((0, i)).0 = ends.len();
            placed[i] = (key, lane);
        }
        Tracks {
            keys,
            placed,
            tids: BTreeMap::new(),
        }
    }

    /// Gives every lane a tid (from `next_tid` on, unique across the
    /// document) and returns their `thread_name` and `thread_sort_index`
    /// events, named by `name(key, lane, first operation of the key)`.
    fn names(
        &mut self,
        ops: &[SlowOperation],
        pid: u32,
        next_tid: &mut u32,
        name: impl Fn(u64, usize, &SlowOperation) -> String,
    ) -> Vec<Value> {
        let mut events = Vec::new();
        for (&key, &(lanes, first)) in &self.keys {
            for lane in 0..lanes {
                let tid = *next_tid;
                *next_tid += 1;
                self.tids.insert((key, lane), tid);
                events.push(
                    json!({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                                   "args": {"name": name(key, lane, &ops[first])}}),
                );
                events.push(json!({"name": "thread_sort_index", "ph": "M", "pid": pid,
                                   "tid": tid, "args": {"sort_index": tid}}));
            }
        }
        events
    }

    /// The tid of the operation of rank `rank`.
    fn tid_of(&self, rank: usize) -> u32 {
        self.tids.get(&self.placed[rank]).copied().unwrap_or(0)
    }
}

/// The operation's slice on its thread's track: named by its series and
/// latency, with the whole vector and what else the kernel counted.
fn operation(op: &SlowOperation, rank: usize, tid: u32) -> Value {
    json!({
        "name": format!("{} {}", op.series, format_ns(op.latency_ns as f64)),
        "cat": "slow_operation",
        "ph": "X",
        "ts": micros(op.start_ns),
        "dur": micros(op.latency_ns),
        "pid": THREADS_PID,
        "tid": tid,
        "args": operation_args(op, rank),
    })
}

/// What every slice of an operation carries.
fn operation_args(op: &SlowOperation, rank: usize) -> Value {
    let culprits: Vec<Value> = op
        .culprits
        .iter()
        .map(|c| json!({"comm": c.comm, "pid": c.pid, "ns": c.ns}))
        .collect();
    json!({
        "rank": rank + 1,
        "series": op.series,
        "thread": op.thread,
        "tid": op.tid,
        "cpu": op.cpu,
        "start_ns": op.start_ns,
        "latency_ns": op.latency_ns,
        "causes": op.causes,
        "culprits": culprits,
        "page_faults": op.page_faults,
        "requests": op.requests,
        "runnable_ns": op.runnable_ns,
    })
}

/// One slice per cause with time, laid one after another from the
/// operation's start in [`LAYOUT`]'s order, never past its end.
fn causes(op: &SlowOperation, tid: u32) -> Vec<Value> {
    let mut events = Vec::new();
    let mut offset: u64 = 0;
    for cause in LAYOUT {
        let mut details: Vec<(&str, u64)> = op
            .causes
            .iter()
            .filter(|(key, _)| cause_of(key) == cause)
            .map(|(key, &ns)| (key.split_once('.').map_or("", |(_, d)| d), ns))
            .collect();
        let total: u64 = details.iter().map(|(_, ns)| ns).sum();
        let dur = total.min(op.latency_ns.saturating_sub(offset));
        if dur == 0 {
            continue;
        }
        details.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let named: Vec<&str> = details
            .iter()
            .map(|(d, _)| *d)
            .filter(|d| !d.is_empty())
            .collect();
        let name = if named.is_empty() {
            cause.to_string()
        } else {
            format!("{cause}: {}", named.join(", "))
        };
        let by_detail: Map<String, Value> = details
            .iter()
            .filter(|(d, _)| !d.is_empty())
            .map(|(d, ns)| (d.to_string(), json!(ns)))
            .collect();
        events.push(json!({
            "name": name,
            "cat": "cause",
            "ph": "X",
            "ts": micros(op.start_ns + offset),
            "dur": micros(dur),
            "pid": THREADS_PID,
            "tid": tid,
            "args": {
                "cause": cause,
                "ns": total,
                "share_of_latency": total as f64 / op.latency_ns.max(1) as f64,
                "by_detail": by_detail,
                "meaning": cause_meaning(cause),
                "order": ORDER_NOTE,
            },
        }));
        offset += dur;
    }
    events
}

/// The operation's slice on its CPU's track, named with its culprits.
fn on_cpu(op: &SlowOperation, rank: usize, tid: u32) -> Value {
    let culprits: Vec<String> = op
        .culprits
        .iter()
        .map(|c| format!("{} ({}) {}", c.comm, c.pid, format_ns(c.ns as f64)))
        .collect();
    let behind = if culprits.is_empty() {
        String::new()
    } else {
        format!(" behind {}", culprits.join(", "))
    };
    json!({
        "name": format!("{} {} (thread {}){behind}", op.series,
                        format_ns(op.latency_ns as f64), op.thread),
        "cat": "slow_operation",
        "ph": "X",
        "ts": micros(op.start_ns),
        "dur": micros(op.latency_ns),
        "pid": CPUS_PID,
        "tid": tid,
        "args": operation_args(op, rank),
    })
}

/// The run the trace comes from: where, when, what, and how slow counted.
fn metadata(source: &str, run: &RunFile, blame: &BlameReport) -> Value {
    json!({
        "source": source,
        "tool": format!("{} {}", run.tool.name, run.tool.version),
        "probe": run.probe,
        "start_time": run.start_time,
        "start_unix_ns": u64::try_from(run.start_unix_ns).ok(),
        "labels": run.labels,
        "duration_ns": run.duration_ns,
        "time_origin": "ts 0 is the run's start; each operation starts at its intended start",
        "threshold": blame.threshold,
        "slowest_kept": blame.slowest.len(),
        "kept_at_most": blame.kept,
        "lost": blame.lost,
        "steal_resolution": blame.steal_resolution,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::export::blame_sample::{slow_operations, timer_run};

    /// A time as Perfetto's importer reads it: the double × 1000,
    /// truncated to whole nanoseconds.
    fn truncated_ns(v: &Value) -> u64 {
        let text = v.to_string();
        (text.parse::<f64>().unwrap() * 1000.0) as u64
    }

    fn document() -> Value {
        serde_json::from_slice(&to_trace(&[timer_run(true)]).unwrap()).unwrap()
    }

    fn slices(doc: &Value) -> Vec<&Value> {
        let events = doc["traceEvents"].as_array().unwrap();
        events.iter().filter(|e| e["ph"] == "X").collect()
    }

    #[test]
    fn times_read_back_to_the_nanosecond_by_truncation() {
        for ns in [
            0,
            1,
            999,
            1_001,
            1_000_000_007,
            3_600_000_000_123,
            86_400_000_000_001,
        ] {
            assert_eq!(truncated_ns(&micros(ns)), ns, "{ns} ns");
            let read = micros(ns).as_f64().unwrap() * 1000.0;
            assert!(
                (read - ns as f64 - 0.5).abs() < 0.01,
                "{ns} ns read as {read}"
            );
        }
    }

    #[test]
    fn every_operation_and_its_causes_are_slices_that_nest() {
        let doc = document();
        let ops = slow_operations();
        let all = slices(&doc);
        for (rank, op) in ops.iter().enumerate() {
            let mine: Vec<&&Value> = all
                .iter()
                .filter(|e| e["args"]["rank"] == rank + 1 || e["args"]["cause"].is_string())
                .collect();
            let parent = mine
                .iter()
                .find(|e| {
                    e["pid"] == THREADS_PID
                        && e["cat"] == "slow_operation"
                        && e["args"]["rank"] == rank + 1
                })
                .unwrap();
            assert_eq!(truncated_ns(&parent["ts"]), op.start_ns);
            assert_eq!(truncated_ns(&parent["dur"]), op.latency_ns);
            let (start, end) = (op.start_ns, op.start_ns + op.latency_ns);
            let children: Vec<&&&Value> = mine
                .iter()
                .filter(|e| {
                    e["cat"] == "cause"
                        && e["tid"] == parent["tid"]
                        && (start..end).contains(&truncated_ns(&e["ts"]))
                })
                .collect();
            let time_causes = op.causes.keys().filter(|k| cause_of(k) != "page_fault");
            let expected: std::collections::BTreeSet<&str> =
                time_causes.map(|k| cause_of(k)).collect();
            let found: std::collections::BTreeSet<&str> = children
                .iter()
                .map(|c| c["args"]["cause"].as_str().unwrap())
                .collect();
            assert_eq!(found, expected, "operation {rank}");
            let mut at = start;
            for child in &children {
                assert_eq!(truncated_ns(&child["ts"]), at, "laid one after another");
                at += truncated_ns(&child["dur"]);
            }
            assert!(at <= end, "causes end inside their operation");
        }
    }

    #[test]
    fn slices_on_one_track_nest_or_are_disjoint() {
        let doc = document();
        let mut by_track: BTreeMap<(u64, u64), Vec<(u64, u64)>> = BTreeMap::new();
        for e in slices(&doc) {
            let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
            let ts = truncated_ns(&e["ts"]);
            by_track
                .entry(key)
                .or_default()
                .push((ts, ts + truncated_ns(&e["dur"])));
        }
        let lanes = by_track
            .keys()
            .filter(|(pid, _)| *pid == u64::from(THREADS_PID))
            .count();
        assert!(
            lanes > 2,
            "the overlapping wake-ups of thread 0 got a track of their own"
        );
        for (track, spans) in by_track {
            for (i, a) in spans.iter().enumerate() {
                for b in &spans[i + 1..] {
                    let disjoint = a.1 <= b.0 || b.1 <= a.0;
                    let nested = (a.0 <= b.0 && b.1 <= a.1) || (b.0 <= a.0 && a.1 <= b.1);
                    assert!(disjoint || nested, "{track:?}: {a:?} and {b:?} cross");
                }
            }
        }
    }

    #[test]
    fn tracks_are_named_and_the_run_described() {
        let doc = document();
        let events = doc["traceEvents"].as_array().unwrap();
        let names: Vec<&str> = events
            .iter()
            .filter(|e| {
                e["ph"] == "M"
                    && e["name"] != "thread_sort_index"
                    && e["name"] != "process_sort_index"
            })
            .map(|e| e["args"]["name"].as_str().unwrap())
            .collect();
        for name in [
            "cauda timer",
            "CPUs",
            "thread 0 (tid 4242)",
            "thread 1 (tid 4243)",
            "thread 0 (tid 4242), overlapping 2",
            "cpu 0",
            "cpu 1",
        ] {
            assert!(names.contains(&name), "{name} in {names:?}");
        }
        assert_eq!(doc["displayTimeUnit"], "ns");
        assert_eq!(doc["metadata"]["probe"], "timer");
        assert_eq!(doc["metadata"]["labels"]["host"], "vm-a");
        assert_eq!(doc["metadata"]["start_time"], "2026-11-20T10:00:00Z");
        let on_cpu = events
            .iter()
            .find(|e| e["pid"] == CPUS_PID && e["ph"] == "X")
            .unwrap();
        assert!(
            on_cpu["name"]
                .as_str()
                .unwrap()
                .contains("behind stress-ng (777)")
        );
    }

    #[test]
    fn a_run_without_blame_is_refused_with_the_fix() {
        let err = to_trace(&[timer_run(false)]).unwrap_err();
        assert!(err.to_string().contains("--kernel blame"), "{err}");
        assert_eq!(crate::error::exit_code_for(&err), crate::error::EXIT_USAGE);
    }
}
