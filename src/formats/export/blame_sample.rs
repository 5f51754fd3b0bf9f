//! A timer run with a blame section, built in code, for the tests of what
//! reads the section (the trace export, the report). The numbers follow a
//! timer run at 1 ms on this class of VM: p99 about 300 µs, slow wake-ups of
//! 0.3–5 ms behind `stress-ng` and `python3`, idle exits of 50–600 µs from
//! `haltpoll idle`, NET_RX softirqs and virtio interrupts.

use std::collections::BTreeMap;

use crate::model::blame::{
    BlameReport, Culprit, IntervalBlame, SeriesBlame, SlowOperation, Threshold,
};
use crate::model::{Format, IntervalRecord, LoadMode, Loaded, MeasuredFrom, RunFile, Series};
use crate::record::LatencyHistogram;

const SECOND: u64 = 1_000_000_000;
/// How many seconds the run lasts.
const SECONDS: u64 = 3;

/// A small deterministic generator (a 64-bit LCG), so the sample is the
/// same in every run.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n.max(1)
    }
}

/// The slow operations, slowest first: two threads on two CPUs, 40
/// wake-ups; two of thread 0's overlap (a 5 ms one covers the next
/// wake-up's intended start) and several share a CPU with the other
/// thread's.
pub fn slow_operations() -> Vec<SlowOperation> {
    let mut rng = Lcg(33);
    let mut ops = Vec::new();
    for k in 0..40u64 {
        let thread = (k % 2) as usize;
        let start_ns = (k * 70 + rng.below(60)) * 1_000_000 + rng.below(1_000_000);
        let latency_ns = 300_000 + rng.below(4_700_000);
        ops.push(operation(&mut rng, thread, start_ns, latency_ns));
    }
    // Thread 0 late by 5 ms at 1 s: the next wake-up (due 1 ms later)
    // completes after it, so their windows overlap.
    ops.push(operation(&mut rng, 0, SECOND, 5_000_000));
    ops.push(operation(&mut rng, 0, SECOND + 1_000_000, 4_500_000));
    ops.sort_by_key(|op| std::cmp::Reverse(op.latency_ns));
    ops
}

/// One wake-up whose vector adds up to its latency.
fn operation(rng: &mut Lcg, thread: usize, start_ns: u64, latency_ns: u64) -> SlowOperation {
    let mut left = latency_ns;
    let mut take = |share_pct: u64| {
        let ns = (latency_ns * share_pct / 100).min(left);
        left -= ns;
        ns
    };
    let idle = take(5 + rng.below(10));
    let irq = take(rng.below(3));
    let softirq = take(rng.below(8));
    let run_queue = take(50 + rng.below(20));
    let running = take(3);
    let mut causes = BTreeMap::new();
    for (key, ns) in [
        ("idle_exit.haltpoll idle", idle),
        ("irq.virtio0-requests", irq),
        ("softirq.NET_RX", softirq),
        ("softirq.TIMER", softirq / 3),
        ("run_queue", run_queue),
        ("running", running),
        ("page_fault", rng.below(3)),
    ] {
        if ns > 0 {
            causes.insert(key.to_string(), ns);
        }
    }
    let timer_share = causes.get("softirq.TIMER").copied().unwrap_or(0);
    causes.insert("unexplained".into(), left.saturating_sub(timer_share));
    let hog = run_queue * 4 / 5;
    SlowOperation {
        series: "wakeup".into(),
        thread,
        tid: 4242 + thread as u32,
        cpu: (thread as u32 + (start_ns / 100_000_000) as u32 % 2) % 2,
        start_ns,
        latency_ns,
        causes,
        culprits: vec![
            Culprit {
                comm: "stress-ng".into(),
                pid: 777,
                ns: hog,
            },
            Culprit {
                comm: "python3".into(),
                pid: 901,
                ns: run_queue - hog,
            },
        ],
        page_faults: rng.below(3),
        requests: 0,
        runnable_ns: run_queue,
    }
}

/// The blame section of [`slow_operations`], with each interval's totals.
pub fn blame() -> BlameReport {
    let slowest = slow_operations();
    let mut intervals: BTreeMap<u64, IntervalBlame> = BTreeMap::new();
    for op in &slowest {
        let index = op.start_ns / SECOND;
        let iv = intervals.entry(index).or_insert_with(|| IntervalBlame {
            index,
            ..Default::default()
        });
        iv.slow += 1;
        iv.latency_ns += op.latency_ns;
        for (key, ns) in &op.causes {
            *iv.causes.entry(key.clone()).or_default() += ns;
        }
    }
    BlameReport {
        threshold: Threshold::PreviousP99,
        series: vec![SeriesBlame {
            tag: "wakeup".into(),
            intervals: intervals.into_values().collect(),
        }],
        kept: 100,
        slowest,
        lost: BTreeMap::new(),
        untraced_after: Vec::new(),
        steal_resolution: "each scheduler clock update".into(),
        monotonic_start_ns: 0,
    }
}

/// The `wakeup` series: 1,000 wake-ups a second, most of 60–120 µs, one in
/// a hundred slow.
fn wakeups() -> Series {
    let mut rng = Lcg(7);
    let mut series = Series::new("wakeup".into(), MeasuredFrom::IntendedStart);
    for i in 0..SECONDS {
        let mut h = LatencyHistogram::new();
        for k in 0..1000 {
            let v = if k % 100 == 0 {
                300_000 + rng.below(4_700_000)
            } else {
                60_000 + rng.below(60_000)
            };
            h.record(v);
        }
        series
            .intervals
            .push(IntervalRecord::from_histogram(i * SECOND, SECOND, &h));
    }
    series
}

/// The run, loaded, with or without its blame section.
pub fn timer_run(with_blame: bool) -> Loaded {
    let series = vec![wakeups()];
    let run = RunFile {
        parameters: serde_json::json!({"interval_ns": 1_000_000}),
        start_time: "2026-11-20T10:00:00Z".into(),
        start_unix_ns: 1_795_000_000_000_000_000,
        labels: BTreeMap::from([("host".to_string(), "vm-a".to_string())]),
        series: series.clone(),
        blame: with_blame.then(blame),
        ..RunFile::empty("timer", LoadMode::OpenLoop, SECONDS * SECOND, SECOND)
    };
    Loaded {
        source: "timer.json".into(),
        format: Format::CaudaRun,
        series,
        run: Some(run),
        warnings: Vec::new(),
    }
}

#[test]
fn the_sample_holds_what_a_run_file_may() {
    let blame = blame();
    assert!(blame.check(&["wakeup"], SECONDS as usize).is_ok());
    let ops = slow_operations();
    assert!(ops.windows(2).all(|w| w[0].latency_ns >= w[1].latency_ns));
}
