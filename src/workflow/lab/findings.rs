//! The lab's findings: what a performance engineer would point at first,
//! ranked by how far each result strays from what a quiet host gives.
//!
//! The scores are heuristics on one scale (about 1 = worth a look, 2 =
//! clearly wrong): the idle wake-up penalty as a ratio, tails as decades
//! above the median, host stalls as decades above 100 µs, stalls by count,
//! audit warnings by count. They order the findings; the figures in each
//! sentence are measured.

use crate::analyze::{InputAnalysis, SeriesAnalysis};
use crate::model::{Role, RunFile};
use crate::units::format_ns;

/// One ranked sentence.
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    /// How much it matters (higher first).
    pub score: f64,
    /// What was found, with the figures and what to look at next.
    pub text: String,
}

/// A finished probe step, as the findings see it.
pub struct Measured<'a> {
    /// The step's file stem, e.g. `net-tcp-gap0`.
    pub name: &'a str,
    /// The step's title.
    pub title: &'a str,
    /// Its run, analysed.
    pub analysis: &'a InputAnalysis,
    /// Its run file (its `blame` section names the tail's top cause).
    pub run: Option<&'a RunFile>,
}

/// The findings, best first.
pub fn rank(runs: &[Measured], audit: Option<&serde_json::Value>) -> Vec<Finding> {
    let mut found = Vec::new();
    let main = |name: &str| {
        runs.iter()
            .find(|m| m.name == name)
            .and_then(|m| main_series(m.analysis))
    };
    if let (Some(busy), Some(idle)) = (main("net-tcp-gap0"), main("net-tcp-gap500us")) {
        let (busy_p50, idle_p50) = (busy.summary.median as f64, idle.summary.median as f64);
        if busy_p50 > 0.0 {
            let ratio = idle_p50 / busy_p50;
            found.push(Finding {
                score: (ratio - 1.0) * 2.0,
                text: format!(
                    "A loopback round trip after 500 µs idle takes {} at p50 against {} back to \
                     back (×{ratio:.2}): {}.",
                    format_ns(idle_p50),
                    format_ns(busy_p50),
                    if ratio > 1.2 {
                        "waking idle CPUs costs this much — see the cpuidle checks of the audit, \
                         or hold `cauda host hold-latency --max-latency 10us -- …` while measuring"
                    } else {
                        "idle CPUs wake quickly here"
                    }
                ),
            });
        }
    }
    if let Some(timer) = main("timer") {
        let s = &timer.summary;
        found.push(Finding {
            score: decades(s.max, s.median),
            text: format!(
                "Timer wake-ups are late by {} at p50, {} at p99 and {} at worst.{}",
                format_ns(s.median as f64),
                format_ns(percentile(timer, "99").unwrap_or(s.max) as f64),
                format_ns(s.max as f64),
                tail_sentence(runs, "timer", &timer.tag)
            ),
        });
    }
    if let Some(hiccup) = main("hiccup") {
        let s = &hiccup.summary;
        found.push(Finding {
            score: decades(s.max, 100_000),
            text: format!(
                "The host held a sleeping thread up to {} past its wake-up (p99.9 {}): any \
                 measurement here can show stalls this long that are not the target's.{}",
                format_ns(s.max as f64),
                format_ns(percentile(hiccup, "99.9").unwrap_or(s.max) as f64),
                tail_sentence(runs, "hiccup", &hiccup.tag)
            ),
        });
    }
    for name in ["disk-randread-qd1", "disk-randwrite-qd32"] {
        if let Some(disk) = main(name) {
            let s = &disk.summary;
            let p99 = percentile(disk, "99").unwrap_or(s.max);
            found.push(Finding {
                score: decades(p99, s.median),
                text: format!(
                    "{}: {} at p50, {} at p99, {} at worst.{}",
                    title(runs, name),
                    format_ns(s.median as f64),
                    format_ns(p99 as f64),
                    format_ns(s.max as f64),
                    tail_sentence(runs, name, &disk.tag)
                ),
            });
        }
    }
    for run in runs {
        for series in &run.analysis.series {
            let Some(worst) = series.stalls.iter().max_by_key(|s| s.max) else {
                continue;
            };
            let n = series.stalls.len();
            found.push(Finding {
                score: 0.5 + 0.25 * n.min(6) as f64,
                text: format!(
                    "{} ({}): {n} stall{} — the worst at t = {:.0} s with a max of {}.",
                    run.title,
                    series.tag,
                    if n == 1 { "" } else { "s" },
                    worst.start_s,
                    format_ns(worst.max as f64)
                ),
            });
        }
    }
    if let Some(warned) = audit.map(warnings).filter(|w| !w.is_empty()) {
        let shown: Vec<&str> = warned.iter().take(4).map(String::as_str).collect();
        found.push(Finding {
            score: (0.3 * warned.len() as f64).min(2.0),
            text: format!(
                "{} host setting{} against low latency ({}{}): `cauda host tune \
                 --profile latency` shows the plan, changing nothing.",
                warned.len(),
                if warned.len() == 1 {
                    " works"
                } else {
                    "s work"
                },
                shown.join(", "),
                if warned.len() > shown.len() {
                    ", …"
                } else {
                    ""
                }
            ),
        });
    }
    found.sort_by(|a, b| b.score.total_cmp(&a.score));
    found
}

/// The top cause of a series' tail (`--kernel blame`) with its share of
/// the slow operations' time and what it means: `run_queue, 58 % of the
/// slow operations' time — runnable, …`; for the run-queue wait, the task
/// that held the CPU longest too (what a user can move or stop).
pub fn tail_cause(run: &RunFile, tag: &str) -> Option<String> {
    let (cause, share) = crate::analyze::blame::top_cause(run, tag)?;
    let percent = if share >= 0.1 {
        format!("{:.0}", share * 100.0)
    } else {
        format!("{:.1}", share * 100.0)
    };
    let who = match cause.as_str() {
        "run_queue" => crate::analyze::blame::top_culprit(run, tag).map(|(task, kept)| {
            format!(
                "; its CPU held longest by {} (pid {}: {} in {} of the {kept} slowest)",
                task.comm,
                task.pid,
                format_ns(task.ns as f64),
                task.operations
            )
        }),
        "unexplained" => run
            .blame
            .as_ref()
            .and_then(|b| b.untraced_after.first())
            .map(|t| {
                format!(
                    "; {} of the switches back to the probe's thread the kernel did not trace \
                     came after {}",
                    t.switches,
                    t.after()
                )
            }),
        _ => None,
    };
    Some(format!(
        "{cause}, {percent} % of the slow operations' time — {}{}",
        crate::model::blame::cause_meaning(&cause),
        who.unwrap_or_default()
    ))
}

/// " Its tail: …" for a step's finding, or nothing without blame.
fn tail_sentence(runs: &[Measured], name: &str, tag: &str) -> String {
    runs.iter()
        .find(|m| m.name == name)
        .and_then(|m| tail_cause(m.run?, tag))
        .map_or(String::new(), |cause| format!(" Its tail: {cause}."))
}

/// The probe's own series: the first that is not the control thread's.
fn main_series(analysis: &InputAnalysis) -> Option<&SeriesAnalysis> {
    analysis
        .series
        .iter()
        .find(|s| Role::of_tag(&s.tag) != Role::Control && s.summary.count > 0)
}

fn percentile(series: &SeriesAnalysis, key: &str) -> Option<u64> {
    series.summary.percentiles.get(key)
}

fn title<'a>(runs: &'a [Measured], name: &str) -> &'a str {
    runs.iter().find(|m| m.name == name).map_or("", |m| m.title)
}

/// Decades `value` lies above `base` (0 when below).
fn decades(value: u64, base: u64) -> f64 {
    if base == 0 {
        return 0.0;
    }
    (value as f64 / base as f64).log10().max(0.0)
}

/// The ids of an audit's `warn` checks.
fn warnings(audit: &serde_json::Value) -> Vec<String> {
    audit["checks"]
        .as_array()
        .map(|checks| {
            checks
                .iter()
                .filter(|c| c["status"] == "warn")
                .filter_map(|c| c["id"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Format, Loaded};
    use crate::model::{IntervalRecord, MeasuredFrom, Series};
    use crate::record::LatencyHistogram;

    fn analysed(tag: &str, values: &[u64]) -> InputAnalysis {
        let mut hist = LatencyHistogram::new();
        values.iter().for_each(|&v| hist.record(v));
        let mut series = Series::new(tag.into(), MeasuredFrom::ActualStart);
        series
            .intervals
            .push(IntervalRecord::from_histogram(0, 1_000_000_000, &hist));
        let loaded = Loaded {
            source: "x".into(),
            format: Format::CaudaRun,
            series: vec![series],
            run: None,
            warnings: Vec::new(),
        };
        crate::analyze::analyze(&[loaded], &crate::analyze::Options::default())
            .unwrap()
            .inputs
            .remove(0)
    }

    #[test]
    fn a_large_idle_penalty_outranks_a_quiet_timer() {
        let busy = analysed("rtt", &[20_000; 1000]);
        let idle = analysed("rtt", &[60_000; 1000]);
        let timer: Vec<u64> = (0..1000).map(|i| 50_000 + i).collect();
        let timer = analysed("wakeup", &timer);
        let runs = [
            Measured {
                name: "net-tcp-gap0",
                title: "net",
                analysis: &busy,
                run: None,
            },
            Measured {
                name: "net-tcp-gap500us",
                title: "net idle",
                analysis: &idle,
                run: None,
            },
            Measured {
                name: "timer",
                title: "timer",
                analysis: &timer,
                run: None,
            },
        ];
        let audit = serde_json::json!({"checks": [
            {"id": "vm.swappiness", "status": "warn"},
            {"id": "cpu.governor", "status": "ok"},
        ]});
        let found = rank(&runs, Some(&audit));
        assert!(found[0].text.contains("×3.00"), "{found:#?}");
        assert!(found[0].text.contains("cpuidle"), "{found:#?}");
        assert!(
            found
                .iter()
                .any(|f| f.text.starts_with("1 host setting works against")
                    && f.text.contains("vm.swappiness"))
        );
        assert!(found.windows(2).all(|w| w[0].score >= w[1].score));
    }

    /// A timer run at 1 ms whose slow wake-ups waited behind a hog: 36
    /// slow wake-ups in three intervals, most of their time on the run
    /// queue, some leaving `haltpoll idle`, some NET_RX.
    fn blamed_timer_run() -> RunFile {
        use crate::model::LoadMode;
        use crate::model::blame::{BlameReport, IntervalBlame, SeriesBlame, Threshold};
        const MS: u64 = 1_000_000;
        const US: u64 = 1_000;
        let interval = |index, slow, run_queue, idle, net_rx| {
            let causes = [
                ("run_queue", run_queue),
                ("idle_exit.haltpoll idle", idle),
                ("softirq.NET_RX", net_rx),
                ("running", 40 * US),
            ];
            IntervalBlame {
                index,
                slow,
                latency_ns: run_queue + idle + net_rx + 40 * US + 100 * US,
                causes: causes.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            }
        };
        RunFile {
            blame: Some(BlameReport {
                threshold: Threshold::PreviousP99,
                series: vec![SeriesBlame {
                    tag: "wakeup".into(),
                    intervals: vec![
                        interval(0, 10, 21 * MS, 2 * MS, 300 * US),
                        interval(1, 14, 30 * MS, 3 * MS, 500 * US),
                        interval(2, 12, 24 * MS, MS, 200 * US),
                    ],
                }],
                slowest: Vec::new(),
                kept: 100,
                lost: Default::default(),
                untraced_after: Vec::new(),
                steal_resolution: String::new(),
                monotonic_start_ns: 0,
            }),
            ..RunFile::empty("timer", LoadMode::OpenLoop, 3_000 * MS, 1_000 * MS)
        }
    }

    #[test]
    fn a_blamed_step_names_its_tails_top_cause_and_share() {
        let run = blamed_timer_run();
        let cause = tail_cause(&run, "wakeup").unwrap();
        // 75 ms of run-queue wait in 82.42 ms of slow wake-ups.
        assert!(
            cause.starts_with("run_queue, 91 % of the slow operations' time — runnable"),
            "{cause}"
        );
        assert_eq!(tail_cause(&run, "self"), None);
        let timer: Vec<u64> = (0..1000).map(|i| 50_000 + i).collect();
        let timer = analysed("wakeup", &timer);
        let with = [Measured {
            name: "timer",
            title: "timer",
            analysis: &timer,
            run: Some(&run),
        }];
        let found = rank(&with, None);
        assert!(
            found[0].text.ends_with(&format!(" Its tail: {cause}.")),
            "{found:#?}"
        );
        let without = [Measured {
            run: None,
            ..with[0]
        }];
        assert!(rank(&without, None)[0].text.ends_with("at worst."));
    }

    #[test]
    fn a_tail_names_the_task_behind_it_where_blame_knows_one() {
        const MS: u64 = 1_000_000;
        let mut run = blamed_timer_run();
        let op = |pid: u32, held_ns: u64| crate::model::blame::SlowOperation {
            series: "wakeup".into(),
            thread: 0,
            tid: 900,
            cpu: 1,
            start_ns: 0,
            latency_ns: 3 * MS,
            causes: [("run_queue".to_string(), held_ns)].into(),
            culprits: vec![crate::model::blame::Culprit {
                comm: format!("task{pid}"),
                pid,
                ns: held_ns,
            }],
            page_faults: 0,
            requests: 0,
            runnable_ns: held_ns,
        };
        let blame = run.blame.as_mut().unwrap();
        blame.slowest = vec![op(77, 2 * MS), op(77, 2 * MS), op(12, 3 * MS)];
        let cause = tail_cause(&run, "wakeup").unwrap();
        assert!(
            cause.ends_with(
                "; its CPU held longest by task77 (pid 77: 4.000 ms in 2 of the 3 slowest)"
            ),
            "{cause}"
        );
        // Another top cause names no task.
        let blame = run.blame.as_mut().unwrap();
        for interval in &mut blame.series[0].intervals {
            interval.causes.insert("idle_exit".into(), 80 * MS);
        }
        let cause = tail_cause(&run, "wakeup").unwrap();
        assert!(
            cause.starts_with("idle_exit") && !cause.contains("held longest"),
            "{cause}"
        );
        // An unexplained tail names the task its untraced switches followed.
        let blame = run.blame.as_mut().unwrap();
        for interval in &mut blame.series[0].intervals {
            interval.causes.insert("unexplained".into(), 900 * MS);
        }
        // (The run file lists them most switches first.)
        blame.untraced_after = vec![
            crate::model::blame::UntracedAfter {
                comm: "init".into(),
                pid: 75,
                switches: 3,
            },
            crate::model::blame::UntracedAfter {
                comm: String::new(),
                pid: 0,
                switches: 1,
            },
        ];
        let cause = tail_cause(&run, "wakeup").unwrap();
        assert!(
            cause.ends_with(
                "; 3 of the switches back to the probe's thread the kernel did not trace came \
                 after it switched to init (pid 75)"
            ),
            "{cause}"
        );
    }
}
