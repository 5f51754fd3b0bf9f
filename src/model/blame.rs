//! The `"blame"` section of a run file (`--kernel blame`): why each slow
//! operation was slow, as the kernel saw the operation's own thread from
//! its intended start to its completion.
//!
//! A **blame vector** splits one operation's latency into causes that add
//! up to it (never more): time waiting on a run queue, hard-IRQ and
//! softirq work on its CPU, its CPU leaving an idle state, its own I/O in
//! the block layer's queue and in the device, time on CPU, time blocked
//! on anything else, time the hypervisor took the vCPU away, and what no
//! event explains. A cause may carry a detail after a dot: the IRQ's name
//! (`irq.virtio0-requests`), the softirq's kind (`softirq.NET_RX`), the
//! idle state (`idle_exit.haltpoll idle`).
//!
//! The section keeps, per series and interval, the totals of that
//! interval's slow operations, and the run's slowest operations with their
//! whole vector and the tasks that held their CPU. Runs without
//! `--kernel blame`, imported data and older files have no section.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::names::check_name;

/// The causes a vector is made of, in the order people read them.
pub const CAUSES: [&str; 12] = [
    "run_queue",
    "irq",
    "softirq",
    "idle_exit",
    "timer",
    "block_queue",
    "block_device",
    "running",
    "blocked",
    "steal",
    "page_fault",
    "unexplained",
];

/// What each cause means, for tables, reports and the schema.
pub fn cause_meaning(cause: &str) -> &'static str {
    match cause {
        "run_queue" => "runnable, waiting for its CPU (the tasks that held it are the culprits)",
        "irq" => "hard-IRQ handlers on its CPU",
        "softirq" => "softirq work on its CPU (by kind)",
        "idle_exit" => "its CPU leaving an idle state when the operation was due",
        "timer" => "asleep until a timer woke it, beyond the idle exit and interrupts",
        "block_queue" => "its I/O in the block layer before the driver took it",
        "block_device" => "its I/O in the device",
        "running" => "on CPU: its own work and the kernel's on its behalf",
        "blocked" => "asleep, waiting on anything else (a peer, a lock, a page)",
        "steal" => "the hypervisor ran something else on its vCPU",
        "page_fault" => "page faults (counted; their time is inside running)",
        _ => "time no event accounts for",
    }
}

/// The top-level cause of a vector key (`softirq.NET_RX` → `softirq`).
pub fn cause_of(key: &str) -> &str {
    key.split_once('.').map_or(key, |(cause, _)| cause)
}

/// How slow an operation had to be for its vector to be kept.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "rule", rename_all = "snake_case")]
pub enum Threshold {
    /// Slower than the p99 of the series' operations so far (the first
    /// operations of a run are judged against those before them).
    PreviousP99,
    /// Slower than a fixed latency (`--blame-above`).
    Fixed {
        /// The latency, ns.
        ns: u64,
    },
}

/// A task that held the operation's CPU while it waited on the run queue.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Culprit {
    /// Its command name (16 bytes at most, as the kernel keeps it).
    pub comm: String,
    /// Its thread id.
    pub pid: u32,
    /// How long it held the CPU inside the operation's window, ns.
    pub ns: u64,
}

/// One slow operation and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SlowOperation {
    /// The series it was recorded in.
    pub series: String,
    /// The probe thread (0-based) and its thread id.
    pub thread: usize,
    /// Its thread id in the kernel.
    pub tid: u32,
    /// The CPU it last ran on.
    pub cpu: u32,
    /// Its intended start, ns from the run's start.
    pub start_ns: u64,
    /// Its latency, ns (from the intended start to completion).
    pub latency_ns: u64,
    /// Time per cause (and detail), ns; adds up to `latency_ns`.
    pub causes: BTreeMap<String, u64>,
    /// The tasks that held its CPU while it waited, longest first (three
    /// at most).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub culprits: Vec<Culprit>,
    /// Page faults it took inside the window.
    #[serde(default)]
    pub page_faults: u64,
    /// Block requests of its own that completed inside the window.
    #[serde(default)]
    pub requests: u64,
    /// The whole time it was runnable inside the window (woken ->
    /// running, as runqslower counts a wait), at most `latency_ns`: its
    /// `run_queue` plus the idle exit, interrupts and steal in that time.
    #[serde(default)]
    pub runnable_ns: u64,
}

/// The slow operations of one series in one interval.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IntervalBlame {
    /// The interval on the run's grid (0 from the run's start).
    pub index: u64,
    /// How many operations were slow.
    pub slow: u64,
    /// Their latencies added up, ns.
    pub latency_ns: u64,
    /// Their vectors added up, per cause (and detail), ns.
    pub causes: BTreeMap<String, u64>,
}

/// The blame of one series: its intervals with slow operations.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SeriesBlame {
    /// The series' tag.
    pub tag: String,
    /// Intervals with at least one slow operation, in order.
    pub intervals: Vec<IntervalBlame>,
}

/// The run file's `blame` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BlameReport {
    /// Which operations count as slow.
    pub threshold: Threshold,
    /// Per series, the slow operations' totals by interval.
    pub series: Vec<SeriesBlame>,
    /// The run's slowest operations (at most `kept`), slowest first.
    #[serde(deserialize_with = "at_most_the_limit")]
    pub slowest: Vec<SlowOperation>,
    /// How many of the slowest are kept.
    pub kept: u64,
    /// Events the kernel could not keep, by reason (a culprit ring that
    /// went round, a thread beyond the table): never silently dropped.
    #[serde(default)]
    pub lost: BTreeMap<String, u64>,
    /// The tasks a probe thread had switched to before switches back to it
    /// that the kernel did not trace (`lost`): what its CPU ran while
    /// nothing was traced, most switches first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub untraced_after: Vec<UntracedAfter>,
    /// How finely the kernel keeps the steal clock (what `steal` can
    /// resolve), in words.
    #[serde(default)]
    pub steal_resolution: String,
    /// The run's start on `CLOCK_MONOTONIC` (the kernel's `ktime_get_ns`,
    /// bpftrace's `nsecs`), ns: `start_ns + monotonic_start_ns` lines a
    /// slow operation up with other traces of the same host.
    #[serde(default)]
    pub monotonic_start_ns: u64,
}

/// A task a probe thread had switched to before an untraced switch back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UntracedAfter {
    /// Its command name (`/proc/PID/comm` at the run's end; empty if it
    /// had exited).
    pub comm: String,
    /// Its thread id.
    pub pid: u32,
    /// How many untraced switches came after switching to it.
    pub switches: u64,
}

impl UntracedAfter {
    /// What the probe thread did before the untraced switches, in words:
    /// "its CPU went idle" (the idle task, pid 0) or "it switched to COMM
    /// (pid N)".
    pub fn after(&self) -> String {
        match (self.pid, self.comm.as_str()) {
            (0, _) => "its CPU went idle".into(),
            (pid, "") => format!("it switched to a task now gone (pid {pid})"),
            (pid, comm) => format!("it switched to {comm} (pid {pid})"),
        }
    }
}

/// At most this many slowest operations in a file.
pub const SLOWEST_LIMIT: u64 = 100_000;

/// The slowest operations, read only up to one past [`SLOWEST_LIMIT`] (the
/// rest skipped, not kept), so that [`BlameReport::check`] refuses a list
/// past the limit without holding it: a million of them took 1.3 GB.
fn at_most_the_limit<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Vec<SlowOperation>, D::Error> {
    struct Bounded;
    impl<'de> serde::de::Visitor<'de> for Bounded {
        type Value = Vec<SlowOperation>;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a list of slow operations")
        }

        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let mut ops = Vec::new();
            while (ops.len() as u64) <= SLOWEST_LIMIT {
                match seq.next_element()? {
                    Some(op) => ops.push(op),
                    None => return Ok(ops),
                }
            }
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
            Ok(ops)
        }
    }
    d.deserialize_seq(Bounded)
}

impl BlameReport {
    /// What cauda writes always holds, checked against the run's series
    /// tags and intervals; the first field that does not, named.
    pub fn check(&self, tags: &[&str], intervals: usize) -> Result<(), String> {
        if self.kept > SLOWEST_LIMIT || self.slowest.len() as u64 > self.kept {
            let held = match self.slowest.len() as u64 {
                n if n > SLOWEST_LIMIT => format!("more than {SLOWEST_LIMIT}"),
                n => n.to_string(),
            };
            return Err(format!(
                "slowest holds {held} operations, kept says {} (at most {SLOWEST_LIMIT})",
                self.kept
            ));
        }
        for (i, series) in self.series.iter().enumerate() {
            if !tags.contains(&series.tag.as_str()) {
                return Err(format!(
                    "series[{i}]: no series '{}' in the run",
                    series.tag
                ));
            }
            let mut last = None;
            for (j, iv) in series.intervals.iter().enumerate() {
                let at = format!("series[{i}].intervals[{j}]");
                if iv.index as usize >= intervals.max(1) || last.is_some_and(|l| l >= iv.index) {
                    return Err(format!(
                        "{at}: index {} out of order or past the run",
                        iv.index
                    ));
                }
                last = Some(iv.index);
                check_vector(&at, &iv.causes, iv.latency_ns)?;
            }
        }
        for (i, op) in self.slowest.iter().enumerate() {
            let at = format!("slowest[{i}]");
            if let Some(before) = i.checked_sub(1).map(|b| &self.slowest[b])
                && before.latency_ns < op.latency_ns
            {
                return Err(format!(
                    "{at}: latency {} ns after slowest[{}]'s {} ns; the slowest are kept \
                     slowest first",
                    op.latency_ns,
                    i - 1,
                    before.latency_ns
                ));
            }
            if !tags.contains(&op.series.as_str()) {
                return Err(format!("{at}: no series '{}' in the run", op.series));
            }
            check_vector(&at, &op.causes, op.latency_ns)?;
            if op.runnable_ns > op.latency_ns {
                return Err(format!(
                    "{at}: runnable for {} ns, longer than its latency ({} ns)",
                    op.runnable_ns, op.latency_ns
                ));
            }
            if op.culprits.len() > 3 {
                return Err(format!("{at}: more than three culprits"));
            }
            for c in &op.culprits {
                check_name(&format!("{at}'s culprit"), &c.comm)?;
            }
        }
        for key in self.lost.keys() {
            check_name("blame.lost", key)?;
        }
        if self.untraced_after.len() > 256 {
            return Err("blame.untraced_after: more tasks than probe threads (256)".into());
        }
        for task in &self.untraced_after {
            check_name("blame.untraced_after's comm", &task.comm)?;
        }
        check_name("blame.steal_resolution", &self.steal_resolution)
    }
}

/// The most keys a vector holds: cauda writes the 12 causes, 10 softirq
/// kinds, 8 idle states and 4 IRQs per probe thread (256 threads) at most;
/// a million keys made a report of 300 MB.
pub const VECTOR_KEYS: usize = 4096;

/// A vector's keys are causes (with a detail) and its time is at most the
/// latency it explains.
fn check_vector(at: &str, causes: &BTreeMap<String, u64>, latency_ns: u64) -> Result<(), String> {
    if causes.len() > VECTOR_KEYS {
        return Err(format!(
            "{at}: {} causes and details, more than {VECTOR_KEYS}",
            causes.len()
        ));
    }
    let mut total: u64 = 0;
    for (key, &ns) in causes {
        // The name first: a key is quoted in the errors below.
        check_name(&format!("{at}'s cause"), key)?;
        if !CAUSES.contains(&cause_of(key)) {
            return Err(format!(
                "{at}: '{key}' is not a cause ({})",
                CAUSES.join(", ")
            ));
        }
        if cause_of(key) != "page_fault" {
            total = total.checked_add(ns).ok_or_else(|| {
                format!("{at}: causes add up to more than 2^64 ns, more than any latency")
            })?;
        }
    }
    if total > latency_ns {
        return Err(format!(
            "{at}: causes add up to {total} ns, more than the latency {latency_ns} ns"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(causes: &[(&str, u64)], latency_ns: u64) -> SlowOperation {
        SlowOperation {
            series: "wakeup".into(),
            thread: 0,
            tid: 7,
            cpu: 1,
            start_ns: 0,
            latency_ns,
            causes: causes.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            culprits: Vec::new(),
            page_faults: 0,
            requests: 0,
            runnable_ns: 0,
        }
    }

    fn report(slowest: Vec<SlowOperation>) -> BlameReport {
        BlameReport {
            threshold: Threshold::PreviousP99,
            series: Vec::new(),
            kept: 100,
            slowest,
            lost: BTreeMap::new(),
            untraced_after: Vec::new(),
            steal_resolution: "each scheduler clock update".into(),
            monotonic_start_ns: 0,
        }
    }

    #[test]
    fn an_untraced_suspect_is_said_by_what_ran() {
        let task = |pid, comm: &str| UntracedAfter {
            comm: comm.into(),
            pid,
            switches: 2,
        };
        assert_eq!(task(0, "swapper (idle)").after(), "its CPU went idle");
        assert_eq!(
            task(75, "tokio-rt-worker").after(),
            "it switched to tokio-rt-worker (pid 75)"
        );
        assert_eq!(
            task(9, "").after(),
            "it switched to a task now gone (pid 9)"
        );
    }

    #[test]
    fn a_vector_never_explains_more_than_its_latency() {
        let fits = report(vec![op(&[("run_queue", 60), ("softirq.NET_RX", 40)], 100)]);
        assert!(fits.check(&["wakeup"], 1).is_ok());
        let over = report(vec![op(&[("run_queue", 60), ("irq.eth0", 41)], 100)]);
        assert!(
            over.check(&["wakeup"], 1)
                .unwrap_err()
                .contains("more than the latency")
        );
        let faults_are_counts = report(vec![op(&[("running", 100), ("page_fault", 9)], 100)]);
        assert!(faults_are_counts.check(&["wakeup"], 1).is_ok());
    }

    #[test]
    fn unknown_causes_and_series_are_named() {
        let bad = report(vec![op(&[("gremlins", 1)], 100)]);
        assert!(
            bad.check(&["wakeup"], 1)
                .unwrap_err()
                .contains("'gremlins' is not a cause")
        );
        assert!(
            report(vec![op(&[], 1)])
                .check(&["rtt"], 1)
                .unwrap_err()
                .contains("wakeup")
        );
    }

    /// Review class 16: keys are checked as names before they are quoted,
    /// a sum past 2^64 is not saturated into a fit, and the slowest are in
    /// order.
    #[test]
    fn hostile_vectors_and_orders_are_named() {
        let escape = report(vec![op(&[("\u{1b}]0;pwned\u{7}x", 1)], 100)]);
        let err = escape.check(&["wakeup"], 1).unwrap_err();
        assert!(
            err.contains("control character") && !err.contains('\u{1b}'),
            "{err}"
        );
        let long = report(vec![op(&[(&"g".repeat(100_000), 1)], 100)]);
        let err = long.check(&["wakeup"], 1).unwrap_err();
        assert!(err.contains("bytes long") && err.len() < 400, "{err}");
        let wraps = report(vec![op(
            &[("run_queue", u64::MAX), ("irq.x", u64::MAX)],
            u64::MAX,
        )]);
        assert!(
            wraps
                .check(&["wakeup"], 1)
                .unwrap_err()
                .contains("more than 2^64"),
            "{:?}",
            wraps.check(&["wakeup"], 1)
        );
        let unsorted = report(vec![op(&[], 100), op(&[], 200)]);
        assert!(
            unsorted
                .check(&["wakeup"], 1)
                .unwrap_err()
                .contains("slowest[1]: latency 200 ns")
        );
        assert!(
            report(vec![op(&[], 200), op(&[], 200), op(&[], 100)])
                .check(&["wakeup"], 1)
                .is_ok()
        );
        let keys: Vec<(String, u64)> = (0..=VECTOR_KEYS)
            .map(|i| (format!("irq.n{i}"), 0))
            .collect();
        let keys: Vec<(&str, u64)> = keys.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        let err = report(vec![op(&keys, 1)])
            .check(&["wakeup"], 1)
            .unwrap_err();
        assert!(err.contains("more than 4096"), "{err}");
        assert!(
            report(vec![op(&keys[1..], 1)])
                .check(&["wakeup"], 1)
                .is_ok()
        );
        let mut waited_longer = op(&[("run_queue", 50)], 100);
        waited_longer.runnable_ns = 101;
        let err = report(vec![waited_longer])
            .check(&["wakeup"], 1)
            .unwrap_err();
        assert!(err.contains("runnable for 101 ns"), "{err}");
    }

    #[test]
    fn past_the_limit_the_slowest_are_refused_without_being_held() {
        let one = serde_json::to_string(&op(&[], 1)).unwrap();
        let doc = |n: usize| {
            format!(
                r#"{{"threshold":{{"rule":"previous_p99"}},"series":[],"kept":100000,"slowest":[{}]}}"#,
                vec![one.as_str(); n].join(",")
            )
        };
        let at_limit: BlameReport = serde_json::from_str(&doc(SLOWEST_LIMIT as usize)).unwrap();
        assert!(at_limit.check(&["wakeup"], 1).is_ok());
        let past: BlameReport = serde_json::from_str(&doc(SLOWEST_LIMIT as usize + 7)).unwrap();
        assert_eq!(past.slowest.len() as u64, SLOWEST_LIMIT + 1);
        let err = past.check(&["wakeup"], 1).unwrap_err();
        assert!(
            err.starts_with("slowest holds more than 100000 operations"),
            "{err}"
        );
    }

    #[test]
    fn the_threshold_reads_as_written() {
        let fixed: Threshold = serde_json::from_str(r#"{"rule":"fixed","ns":5}"#).unwrap();
        assert_eq!(fixed, Threshold::Fixed { ns: 5 });
        let p99 = serde_json::to_string(&Threshold::PreviousP99).unwrap();
        assert_eq!(p99, r#"{"rule":"previous_p99"}"#);
        assert_eq!(cause_of("softirq.NET_RX"), "softirq");
        assert_eq!(cause_of("idle_exit.haltpoll idle"), "idle_exit");
    }
}
