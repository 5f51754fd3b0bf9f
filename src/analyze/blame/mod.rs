//! Why the tail: what a run's `blame` section (`--kernel blame`) says
//! about one series, as `cauda analyze` prints it under the percentiles.
//!
//! For a series with blame: how many operations were slow and against
//! which threshold; the share of the slow operations' time per cause
//! (largest first, a cause's details — `softirq.NET_RX`,
//! `irq.virtio0-requests` — under it); the tasks that held the CPU of the
//! run's slowest operations, added up per task; and for each stall
//! [`crate::analyze::stalls`] found, the blame of the slow operations
//! inside its time range.
//!
//! The shares themselves (every slow operation's time, what no key
//! explains shown as `unexplained`) are [`split`]'s; compare's blame shift
//! between two runs is [`shift`]'s.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::analyze::stalls::Stall;
use crate::model::RunFile;
use crate::model::blame::{BlameReport, SlowOperation, Threshold};

pub mod shift;
pub mod split;

pub use split::{CauseShare, DetailShare, Split, interval_split, operation_split};

/// How many culprit tasks a series' blame lists.
pub const TOP_CULPRITS: usize = 5;

/// Where a split's numbers come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BlameSource {
    /// The per-interval totals: every slow operation.
    Intervals,
    /// The run's slowest operations kept whole (the intervals had none).
    Slowest,
}

/// A task that held the CPU of some of the slowest operations.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CulpritTotal {
    /// Its command name.
    pub comm: String,
    /// Its thread id.
    pub pid: u32,
    /// How long it held their CPU, added up, ns.
    pub ns: u64,
    /// In how many of the slowest operations it did.
    pub operations: u64,
}

/// The blame inside one stall's time range.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StallBlame {
    /// The stall's start, s from the run's start (as in `stalls`).
    pub start_s: f64,
    /// Its end, s.
    pub end_s: f64,
    /// The interval totals of the stall's intervals, or the slowest
    /// operations that started inside it when those have none.
    pub from: BlameSource,
    /// The slow operations' time inside the stall, by cause.
    #[serde(flatten)]
    pub split: Split,
}

/// "Why the tail" of one series.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TailBlame {
    /// Which operations counted as slow.
    pub threshold: Threshold,
    /// Where the split comes from.
    pub from: BlameSource,
    /// All the series' slow operations, by cause.
    #[serde(flatten)]
    pub split: Split,
    /// How many of the run's kept slowest operations are this series'.
    pub slowest: u64,
    /// The tasks that held their CPU, most time first (at most
    /// [`TOP_CULPRITS`]).
    pub culprits: Vec<CulpritTotal>,
    /// The blame inside each of the series' stalls, in the stalls' order.
    pub stalls: Vec<StallBlame>,
    /// Events the kernel could not keep in the whole run (the run file's
    /// `blame.lost`, added up): culprits and shares may miss them.
    pub lost: u64,
    /// The tasks a probe thread had switched to before switches back to
    /// it that the kernel did not trace (the run file's
    /// `blame.untraced_after`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub untraced_after: Vec<crate::model::blame::UntracedAfter>,
}

/// The tasks that held the CPU of `ops`, added up per task (comm and
/// pid), most time first (then in more operations, then by name), at most
/// `top` of them.
pub fn culprits<'a>(
    ops: impl IntoIterator<Item = &'a SlowOperation>,
    top: usize,
) -> Vec<CulpritTotal> {
    let mut tasks: BTreeMap<(&str, u32), (u64, u64)> = BTreeMap::new();
    for op in ops {
        let mut seen: Vec<(&str, u32)> = Vec::new();
        for c in &op.culprits {
            let task = (c.comm.as_str(), c.pid);
            let at = tasks.entry(task).or_default();
            at.0 = at.0.saturating_add(c.ns);
            if !seen.contains(&task) {
                at.1 += 1;
                seen.push(task);
            }
        }
    }
    let mut ranked: Vec<CulpritTotal> = tasks
        .into_iter()
        .map(|((comm, pid), (ns, operations))| CulpritTotal {
            comm: comm.to_string(),
            pid,
            ns,
            operations,
        })
        .collect();
    ranked.sort_by(|a, b| {
        b.ns.cmp(&a.ns)
            .then_with(|| b.operations.cmp(&a.operations))
            .then_with(|| a.comm.cmp(&b.comm))
            .then_with(|| a.pid.cmp(&b.pid))
    });
    ranked.truncate(top);
    ranked
}

/// The stall's range in ns from the run's start, `[start, end)`.
fn range_ns(stall: &Stall) -> (u64, u64) {
    let ns = |s: f64| (s.max(0.0) * 1e9).round() as u64;
    (ns(stall.start_s), ns(stall.end_s))
}

/// The blame inside one stall: the series' intervals that start inside
/// it (at most half an interval before its start, for rounding), or when
/// they hold no slow operation, the slowest operations that started
/// inside it.
pub fn stall_blame(report: &BlameReport, interval_ns: u64, tag: &str, stall: &Stall) -> StallBlame {
    let (start, end) = range_ns(stall);
    let inside = |at: u64| at < end && at.saturating_add(interval_ns / 2) >= start;
    let intervals = report
        .series
        .iter()
        .filter(|s| s.tag == tag)
        .flat_map(|s| &s.intervals)
        .filter(|iv| interval_ns > 0 && inside(iv.index.saturating_mul(interval_ns)));
    let by_interval = interval_split(intervals);
    let (from, split) = if by_interval.slow > 0 || by_interval.latency_ns > 0 {
        (BlameSource::Intervals, by_interval)
    } else {
        let ops = report
            .slowest
            .iter()
            .filter(|op| op.series == tag && op.start_ns >= start && op.start_ns < end);
        (BlameSource::Slowest, operation_split(ops))
    };
    StallBlame {
        start_s: stall.start_s,
        end_s: stall.end_s,
        from,
        split,
    }
}

/// Whether the report has anything on the series: intervals listed for
/// it or slowest operations of it.
pub fn has_series(report: &BlameReport, tag: &str) -> bool {
    report.series.iter().any(|s| s.tag == tag) || report.slowest.iter().any(|op| op.series == tag)
}

/// The split of all the series' slow operations: its interval totals, or
/// its slowest operations when it has no intervals listed.
pub fn series_split(report: &BlameReport, tag: &str) -> (BlameSource, Split) {
    let listed = report.series.iter().filter(|s| s.tag == tag);
    let by_interval = interval_split(listed.flat_map(|s| &s.intervals));
    if by_interval.slow > 0 || by_interval.latency_ns > 0 {
        return (BlameSource::Intervals, by_interval);
    }
    let ops = report.slowest.iter().filter(|op| op.series == tag);
    let whole = operation_split(ops);
    if whole.slow > 0 {
        (BlameSource::Slowest, whole)
    } else {
        (BlameSource::Intervals, by_interval)
    }
}

/// "Why the tail" of one series of a run with blame (`None` when the
/// report has nothing on the series): its split, its culprits, and the
/// blame inside each of `stalls` (the series' own, from
/// [`crate::analyze::stalls::find_stalls`]).
pub fn tail_blame(
    report: &BlameReport,
    interval_ns: u64,
    tag: &str,
    stalls: &[Stall],
) -> Option<TailBlame> {
    if !has_series(report, tag) {
        return None;
    }
    let (from, split) = series_split(report, tag);
    let own: Vec<&SlowOperation> = report
        .slowest
        .iter()
        .filter(|op| op.series == tag)
        .collect();
    Some(TailBlame {
        threshold: report.threshold.clone(),
        from,
        split,
        slowest: own.len() as u64,
        culprits: culprits(own.iter().copied(), TOP_CULPRITS),
        stalls: stalls
            .iter()
            .map(|stall| stall_blame(report, interval_ns, tag, stall))
            .collect(),
        lost: report.lost.values().fold(0u64, |a, &b| a.saturating_add(b)),
        untraced_after: report.untraced_after.clone(),
    })
}

/// The top cause of a run's series and its share of the slow operations'
/// time (`None` without blame for the series, or with no slow time): what
/// the lab's findings name as the cause of a step's tail.
pub fn top_cause(run: &RunFile, tag: &str) -> Option<(String, f64)> {
    top_cause_in(run.blame.as_ref()?, tag)
}

/// The task that held the CPU of a series' kept slowest operations the
/// longest, and how many of those operations were kept (`None` without
/// blame for the series, or when no task held their CPU).
pub fn top_culprit(run: &RunFile, tag: &str) -> Option<(CulpritTotal, u64)> {
    let own: Vec<&SlowOperation> = run
        .blame
        .as_ref()?
        .slowest
        .iter()
        .filter(|op| op.series == tag)
        .collect();
    let top = culprits(own.iter().copied(), 1).pop()?;
    Some((top, own.len() as u64))
}

/// [`top_cause`] in a blame section.
pub fn top_cause_in(report: &BlameReport, tag: &str) -> Option<(String, f64)> {
    if !has_series(report, tag) {
        return None;
    }
    let (_, split) = series_split(report, tag);
    split.top().map(|(cause, share)| (cause.to_string(), share))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::blame::{Culprit, IntervalBlame, SeriesBlame};

    const MS: u64 = 1_000_000;
    const US: u64 = 1_000;

    fn keys(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    fn op(
        start_ns: u64,
        latency_ns: u64,
        causes: &[(&str, u64)],
        who: &[(&str, u32, u64)],
    ) -> SlowOperation {
        SlowOperation {
            series: "wakeup".into(),
            thread: 0,
            tid: 900,
            cpu: 1,
            start_ns,
            latency_ns,
            causes: keys(causes),
            culprits: who
                .iter()
                .map(|(comm, pid, ns)| Culprit {
                    comm: comm.to_string(),
                    pid: *pid,
                    ns: *ns,
                })
                .collect(),
            page_faults: 0,
            requests: 0,
            runnable_ns: 0,
        }
    }

    /// A 10 s timer run at 1 ms (1 s intervals): ten slow wake-ups of
    /// 400 µs in interval 2 (idle exits, NET_RX, a virtio IRQ, 600 µs no
    /// key explains) and twenty of 3 ms in interval 5 behind run-queue
    /// waits; the slowest kept are wake-ups behind stress-ng and python3.
    fn report() -> BlameReport {
        let calm = IntervalBlame {
            index: 2,
            slow: 10,
            latency_ns: 4 * MS,
            causes: keys(&[
                ("run_queue", MS),
                ("idle_exit.haltpoll idle", 2 * MS),
                ("softirq.NET_RX", 300 * US),
                ("irq.virtio0-requests", 100 * US),
                ("page_fault", 3),
            ]),
        };
        let hogged = IntervalBlame {
            index: 5,
            slow: 20,
            latency_ns: 60 * MS,
            causes: keys(&[
                ("run_queue", 54 * MS),
                ("softirq.NET_RX", MS),
                ("unexplained", 5 * MS),
            ]),
        };
        BlameReport {
            threshold: Threshold::PreviousP99,
            series: vec![SeriesBlame {
                tag: "wakeup".into(),
                intervals: vec![calm, hogged],
            }],
            slowest: vec![
                op(
                    5_100 * MS,
                    5 * MS,
                    &[("run_queue", 4_800 * US)],
                    &[("stress-ng", 4242, 3 * MS), ("python3", 77, 1_800 * US)],
                ),
                op(
                    5_300 * MS,
                    4 * MS,
                    &[("run_queue", 3_900 * US)],
                    &[("python3", 77, 3_900 * US)],
                ),
                op(
                    7_200 * MS,
                    3 * MS,
                    &[("run_queue", 2 * MS), ("steal", 500 * US)],
                    &[("stress-ng", 4242, 2 * MS)],
                ),
                op(
                    2_400 * MS,
                    600 * US,
                    &[("idle_exit.haltpoll idle", 500 * US)],
                    &[],
                ),
            ],
            kept: 100,
            lost: keys(&[("culprit_ring", 2)]),
            untraced_after: Vec::new(),
            steal_resolution: "each scheduler clock update".into(),
            monotonic_start_ns: 0,
        }
    }

    fn stall(start_s: f64, end_s: f64) -> Stall {
        Stall {
            start_s,
            end_s,
            p99: 3 * MS,
            max: 5 * MS,
            count: 1000,
            mean: 90_000.0,
            reasons: Vec::new(),
            hints: Vec::new(),
        }
    }

    #[test]
    fn shares_add_up_to_the_whole_with_the_unexplained_shown() {
        let (from, s) = series_split(&report(), "wakeup");
        assert_eq!(
            (from, s.slow, s.latency_ns, s.page_faults),
            (BlameSource::Intervals, 30, 64 * MS, 3)
        );
        let got: Vec<(&str, u64)> = s.causes.iter().map(|c| (c.cause.as_str(), c.ns)).collect();
        // 600 µs left by interval 2's keys join interval 5's explicit 5 ms.
        assert_eq!(
            got,
            [
                ("run_queue", 55 * MS),
                ("unexplained", 5_600 * US),
                ("idle_exit", 2 * MS),
                ("softirq", 1_300 * US),
                ("irq", 100 * US)
            ]
        );
        let total: f64 = s.causes.iter().map(|c| c.share).sum();
        assert!((total - 1.0).abs() < 1e-12, "{total}");
        assert_eq!(s.top(), Some(("run_queue", 55.0 / 64.0)));
        assert_eq!(s.share_of("steal"), 0.0);
        // Details stay under their cause, as shares of the whole.
        let softirq = &s.causes[3];
        assert_eq!(softirq.details.len(), 1);
        assert_eq!(
            (softirq.details[0].key.as_str(), softirq.details[0].ns),
            ("softirq.NET_RX", 1_300 * US)
        );
        assert!(s.causes[0].details.is_empty());
    }

    #[test]
    fn culprits_rank_by_time_then_by_operations() {
        let b = report();
        let ranked = culprits(&b.slowest, TOP_CULPRITS);
        let got: Vec<(&str, u32, u64, u64)> = ranked
            .iter()
            .map(|c| (c.comm.as_str(), c.pid, c.ns, c.operations))
            .collect();
        // python3 held the CPU longer, in fewer operations.
        assert_eq!(
            got,
            [
                ("python3", 77, 5_700 * US, 2),
                ("stress-ng", 4242, 5 * MS, 2)
            ]
        );
        assert_eq!(culprits(&b.slowest, 1).len(), 1);
        // A task named twice in one operation counts once there.
        let twice = op(
            0,
            MS,
            &[],
            &[("kworker/1:1", 12, 100), ("kworker/1:1", 12, 50)],
        );
        assert_eq!(culprits([&twice], 5)[0].operations, 1);
        assert_eq!(culprits([&twice], 5)[0].ns, 150);
    }

    #[test]
    fn a_stall_gets_the_blame_of_its_own_time_range() {
        let b = report();
        let hog = stall_blame(&b, 1_000 * MS, "wakeup", &stall(5.0, 6.0));
        assert_eq!((hog.from, hog.split.slow), (BlameSource::Intervals, 20));
        assert_eq!(hog.split.top(), Some(("run_queue", 0.9)));
        // Two intervals, 4 to 6 s: interval 5 only has slow operations.
        assert_eq!(
            stall_blame(&b, 1_000 * MS, "wakeup", &stall(4.0, 6.0))
                .split
                .slow,
            20
        );
        // No interval totals there: the slowest operations that started in it.
        let late = stall_blame(&b, 1_000 * MS, "wakeup", &stall(7.0, 8.0));
        assert_eq!((late.from, late.split.slow), (BlameSource::Slowest, 1));
        assert_eq!(late.split.share_of("steal"), 500.0 / 3000.0);
        let none = stall_blame(&b, 1_000 * MS, "wakeup", &stall(8.0, 9.0));
        assert_eq!((none.split.slow, none.split.top()), (0, None));
    }

    #[test]
    fn only_series_with_blame_get_a_block() {
        let b = report();
        let tail = tail_blame(&b, 1_000 * MS, "wakeup", &[stall(5.0, 6.0)]).unwrap();
        assert_eq!((tail.slowest, tail.lost, tail.stalls.len()), (4, 2, 1));
        assert_eq!(tail.culprits[0].comm, "python3");
        assert!(tail_blame(&b, 1_000 * MS, "self", &[]).is_none());
        assert_eq!(
            top_cause_in(&b, "wakeup"),
            Some(("run_queue".into(), 55.0 / 64.0))
        );
        assert_eq!(top_cause_in(&b, "self"), None);
        // Without interval totals the slowest operations stand in.
        let mut only_slowest = report();
        only_slowest.series.clear();
        let (from, s) = series_split(&only_slowest, "wakeup");
        assert_eq!(
            (from, s.slow, s.latency_ns),
            (BlameSource::Slowest, 4, 12_600 * US)
        );
    }
}
