//! The run file's `blame` section, made of what each probe thread's hook
//! kept: the parts of its vectors named (IRQs by their handlers' names,
//! idle exits by the state's name, softirqs by kind), the totals merged
//! per series and interval, the slowest of all threads with their
//! culprits added up per task.

use std::collections::BTreeMap;

use super::blame::{Kept, Shared, Slow};
use super::plan::SeriesSpec;
use crate::host::root::HostRoot;
use crate::host::trace::blame::{self, part};
use crate::model::Warning;
use crate::model::blame::{
    BlameReport, Culprit, IntervalBlame, SeriesBlame, SlowOperation, Threshold, UntracedAfter,
};

/// Names for the parts of a thread's vectors.
struct Names {
    irqs: BTreeMap<u32, String>,
    idle: Vec<String>,
}

impl Names {
    fn key(&self, index: usize, irqs: &[u32; blame::IRQ_SLOTS]) -> String {
        match index {
            part::RUN_QUEUE => "run_queue".into(),
            i if (part::IRQ..part::IRQ_OTHER).contains(&i) => match irqs[i - part::IRQ] {
                0 => "irq.other".into(),
                n => match self.irqs.get(&(n - 1)) {
                    Some(name) => format!("irq.{name}"),
                    None => format!("irq.{}", n - 1),
                },
            },
            part::IRQ_OTHER => "irq.other".into(),
            i if (part::SOFTIRQ..part::IDLE_EXIT).contains(&i) => {
                format!("softirq.{}", blame::SOFTIRQS[i - part::SOFTIRQ])
            }
            i if (part::IDLE_EXIT..part::TIMER).contains(&i) => {
                match self.idle.get(i - part::IDLE_EXIT) {
                    Some(name) => format!("idle_exit.{name}"),
                    None => "idle_exit".into(),
                }
            }
            part::TIMER => "timer".into(),
            part::BLOCK_QUEUE => "block_queue".into(),
            part::BLOCK_DEVICE => "block_device".into(),
            part::RUNNING => "running".into(),
            part::BLOCKED => "blocked".into(),
            part::STEAL => "steal".into(),
            _ => "unexplained".into(),
        }
    }

    /// The non-zero parts, named (two IRQ parts of one name add up).
    fn named(
        &self,
        parts: &[u64; part::PARTS],
        irqs: &[u32; blame::IRQ_SLOTS],
    ) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for (i, &ns) in parts.iter().enumerate() {
            if ns > 0 {
                *out.entry(self.key(i, irqs)).or_insert(0) += ns;
            }
        }
        out
    }
}

/// The run file's section, once every recorder has finished.
pub fn of(shared: Shared, series: &[SeriesSpec]) -> BlameReport {
    let kept = std::mem::take(&mut *shared.kept.lock().unwrap_or_else(|p| p.into_inner()));
    let tags: Vec<String> = series.iter().map(|s| s.tag.clone()).collect();
    let threshold = match shared.above_ns {
        Some(ns) => Threshold::Fixed { ns },
        None => Threshold::PreviousP99,
    };
    report(kept, &tags, threshold, shared.keep, shared.run_start_ns)
}

/// What the kernel could not keep, said as warnings (the counts are in
/// the section's `lost`).
pub fn warnings(report: &BlameReport) -> Vec<Warning> {
    report
        .lost
        .iter()
        .map(|(what, n)| Warning {
            message: format!("--kernel blame: {n} {what}"),
            advice: match what.as_str() {
                "culprits overwritten before read" => {
                    "many tasks held the CPU of one slow operation; its culprits name the last \
                     eight (the ring's size)"
                        .into()
                }
                _ => {
                    let mut advice = "the kernel ran a probe thread without tracing the switch \
                                      to it; that time is unexplained in the operations it fell in"
                        .to_string();
                    if let Some(task) = report.untraced_after.first() {
                        let what = if task.pid == 0 {
                            "a halt of the vCPU the kernel traced no way out of"
                        } else {
                            "a task whose switches away the kernel did not trace: keep it off \
                             the probe's CPUs (taskset -p), see docs/blame.md"
                        };
                        advice += &format!(
                            "; {} of them came after {} ({what})",
                            task.switches,
                            task.after()
                        );
                    }
                    advice
                }
            },
        })
        .collect()
}

/// How the kernel keeps the steal clock, said in the run file.
pub const STEAL_RESOLUTION: &str = "the run queue's steal clock (ns, as the hypervisor \
    reports it, taken by the scheduler at every switch and wake-up), read at each switch \
    and wake-up of the thread; steal while it runs undisturbed shows at its next switch";

/// The section, from every thread's `kept`, for series `tags`.
fn report(
    kept: Vec<Kept>,
    tags: &[String],
    threshold: Threshold,
    keep: usize,
    run_start_ns: u64,
) -> BlameReport {
    let root = HostRoot::default();
    let names = Names {
        irqs: blame::irq_names(&root),
        idle: blame::idle_state_names(&root, 0),
    };
    let mut totals: BTreeMap<(usize, u64), IntervalBlame> = BTreeMap::new();
    let mut slowest = Vec::new();
    let (mut culprits_lost, mut missed) = (0, 0);
    let mut untraced: BTreeMap<u32, u64> = BTreeMap::new();
    for mut thread in kept {
        culprits_lost += thread.culprits_lost;
        missed += thread.missed;
        for &(pid, switches) in &thread.untraced_after {
            *untraced.entry(pid).or_insert(0) += switches;
        }
        for (&(series, index), t) in &thread.totals {
            let sum = totals
                .entry((series, index))
                .or_insert_with(|| IntervalBlame {
                    index,
                    ..IntervalBlame::default()
                });
            sum.slow += t.slow;
            sum.latency_ns += t.latency_ns;
            for (key, ns) in names.named(&t.parts, &thread.irqs) {
                *sum.causes.entry(key).or_insert(0) += ns;
            }
            if t.faults > 0 {
                *sum.causes.entry("page_fault".into()).or_insert(0) += t.faults;
            }
        }
        for slow in std::mem::take(&mut thread.slowest) {
            slowest.push(operation(&names, &thread, slow, tags, run_start_ns));
        }
    }
    slowest.sort_by(|a, b| {
        b.latency_ns
            .cmp(&a.latency_ns)
            .then(a.start_ns.cmp(&b.start_ns))
    });
    slowest.truncate(keep);
    let mut series: Vec<SeriesBlame> = Vec::new();
    for ((id, _), interval) in totals {
        let tag = tags.get(id).cloned().unwrap_or_default();
        match series.last_mut() {
            Some(last) if last.tag == tag => last.intervals.push(interval),
            _ => series.push(SeriesBlame {
                tag,
                intervals: vec![interval],
            }),
        }
    }
    let mut lost = BTreeMap::new();
    if culprits_lost > 0 {
        lost.insert("culprits overwritten before read".into(), culprits_lost);
    }
    if missed > 0 {
        lost.insert("switches to a probe thread not traced".into(), missed);
    }
    BlameReport {
        threshold,
        series,
        slowest,
        kept: keep as u64,
        lost,
        untraced_after: untraced_after(&root, untraced),
        steal_resolution: STEAL_RESOLUTION.into(),
        monotonic_start_ns: run_start_ns,
    }
}

/// The tasks switched to before untraced switches, named (most first).
fn untraced_after(root: &HostRoot, switches: BTreeMap<u32, u64>) -> Vec<UntracedAfter> {
    let mut tasks: Vec<UntracedAfter> = switches
        .into_iter()
        .filter(|&(_, n)| n > 0)
        .map(|(pid, switches)| UntracedAfter {
            comm: match pid {
                0 => "swapper (idle)".into(),
                _ => root
                    .read(&format!("/proc/{pid}/comm"))
                    .map(|c| blame::task_name(c.trim_end_matches('\n').as_bytes()))
                    .unwrap_or_default(),
            },
            pid,
            switches,
        })
        .collect();
    tasks.sort_by(|a, b| b.switches.cmp(&a.switches).then(a.pid.cmp(&b.pid)));
    tasks
}

/// The three tasks that held the CPU longest, each added up over the
/// ring's entries. They are the run-queue wait's: where they held it for
/// longer than `wait` (the hypervisor took the vCPU meanwhile; a backlog's
/// window reaches back into the operation before it; the vector was
/// fitted to the latency), their times are scaled down to it.
fn culprits_of(ring: Vec<(u32, String, u64)>, wait: u64) -> Vec<Culprit> {
    let mut by_task: BTreeMap<(u32, String), u64> = BTreeMap::new();
    for (pid, comm, ns) in ring {
        *by_task.entry((pid, comm)).or_insert(0) += ns;
    }
    let held: u64 = by_task.values().sum();
    let mut culprits: Vec<Culprit> = by_task
        .into_iter()
        .map(|((pid, comm), ns)| Culprit {
            comm,
            pid,
            ns: blame::scaled_down(ns, held, wait),
        })
        .filter(|c| c.ns > 0)
        .collect();
    culprits.sort_by(|a, b| b.ns.cmp(&a.ns).then(a.pid.cmp(&b.pid)));
    culprits.truncate(3);
    culprits
}

fn operation(
    names: &Names,
    thread: &Kept,
    slow: Slow,
    tags: &[String],
    run_start_ns: u64,
) -> SlowOperation {
    let causes = names.named(&slow.vector.parts, &thread.irqs);
    let culprits = culprits_of(slow.culprits, slow.vector.parts[part::RUN_QUEUE]);
    SlowOperation {
        series: tags.get(slow.series).cloned().unwrap_or_default(),
        thread: thread.thread,
        tid: thread.tid,
        cpu: slow.cpu,
        start_ns: slow.start_ns.saturating_sub(run_start_ns),
        latency_ns: slow.latency_ns,
        causes,
        culprits,
        page_faults: slow.vector.faults,
        requests: slow.vector.requests,
        runnable_ns: slow.vector.runnable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn culprits_add_up_to_at_most_the_run_queue_wait() {
        let ring = |held: &[(u32, u64)]| -> Vec<(u32, String, u64)> {
            held.iter()
                .map(|&(pid, ns)| (pid, format!("t{pid}"), ns))
                .collect()
        };
        // Within the wait: as held, added up per task, the longest first.
        let c = culprits_of(ring(&[(7, 100), (9, 300), (7, 250)]), 1_000);
        let got: Vec<(u32, u64)> = c.iter().map(|c| (c.pid, c.ns)).collect();
        assert_eq!(got, vec![(7, 350), (9, 300)]);
        // Held for longer than the wait: scaled down to it.
        let c = culprits_of(ring(&[(1, 600), (2, 200), (3, 200), (4, 1_000)]), 500);
        let got: Vec<(u32, u64)> = c.iter().map(|c| (c.pid, c.ns)).collect();
        assert_eq!(got, vec![(4, 250), (1, 150), (2, 50)]);
        // No wait at all: no culprit.
        assert!(culprits_of(ring(&[(1, 600)]), 0).is_empty());
    }
}
