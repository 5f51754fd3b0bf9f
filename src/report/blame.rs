//! "Why the tail" for people: under a series' percentiles, the blame of
//! its slow operations (`cauda analyze`: causes with their shares and
//! details, culprit tasks, each stall's own blame), and how the blame
//! shifted between two runs (`cauda compare`), from `analyze::blame`.

use std::fmt::Write;

use crate::analyze::blame::shift::{BlameComparison, BlameShift, Side};
use crate::analyze::blame::{BlameSource, Split, StallBlame, TailBlame};
use crate::model::blame::{Threshold, cause_meaning};
use crate::report::numbers::{percent, seconds, thousands};
use crate::units::format_ns;

/// How many stalls' blame the terminal lists (all are in `--json`).
const STALLS_SHOWN: usize = 10;

/// The threshold in words: "slower than the p99 of the series'
/// operations before them", "slower than 1.000 ms (--blame-above)".
pub fn threshold_words(threshold: &Threshold) -> String {
    match threshold {
        Threshold::PreviousP99 => {
            "slower than the p99 of the series' operations before them".into()
        }
        Threshold::Fixed { ns } => {
            format!("slower than {} (--blame-above)", format_ns(*ns as f64))
        }
    }
}

/// "1 slow operation", "1,204 slow operations".
fn slow_operations(n: u64) -> String {
    match n {
        1 => "1 slow operation".into(),
        n => format!("{} slow operations", thousands(n)),
    }
}

/// A share, with an exact 0 as such.
fn share(s: f64) -> String {
    if s == 0.0 { "0 %".into() } else { percent(s) }
}

/// The "why the tail" block under a series' percentiles; nothing for a
/// series without blame.
pub fn write_tail(out: &mut String, blame: Option<&TailBlame>) {
    let Some(b) = blame else {
        return;
    };
    let split = &b.split;
    if split.slow == 0 && split.latency_ns == 0 {
        let _ = writeln!(
            out,
            "  why the tail (--kernel blame): no operation was {}",
            threshold_words(&b.threshold)
        );
        return;
    }
    let from = match b.from {
        BlameSource::Intervals => String::new(),
        BlameSource::Slowest => " (the slowest kept: no interval totals)".into(),
    };
    let _ = writeln!(
        out,
        "  why the tail (--kernel blame): {}{from}, {}; {} in all",
        slow_operations(split.slow),
        threshold_words(&b.threshold),
        format_ns(split.latency_ns as f64)
    );
    write_causes(out, split);
    write_culprits(out, b);
    write_stalls(out, &b.stalls);
    if b.lost > 0 {
        let _ = writeln!(
            out,
            "    note: the kernel could not keep {} events in this run (blame.lost): culprits and \
             shares may miss them",
            thousands(b.lost)
        );
    }
    for task in b.untraced_after.iter().take(3) {
        let _ = writeln!(
            out,
            "    note: {} of the switches back to a probe thread the kernel did not trace came \
             after {}",
            thousands(task.switches),
            task.after()
        );
    }
}

/// One row per cause, largest first, with its details under it, then the
/// page faults.
fn write_causes(out: &mut String, split: &Split) {
    let mut rows: Vec<(String, String, String, &str)> = Vec::new();
    for c in &split.causes {
        let time = format_ns(c.ns as f64);
        rows.push((
            c.cause.clone(),
            time,
            percent(c.share),
            cause_meaning(&c.cause),
        ));
        for d in &c.details {
            let name = d.key.split_once('.').map_or(d.key.as_str(), |(_, d)| d);
            let time = format_ns(d.ns as f64);
            rows.push((format!("  {name}"), time, percent(d.share), ""));
        }
    }
    let width =
        |f: fn(&(String, String, String, &str)) -> usize| rows.iter().map(f).max().unwrap_or(0);
    let (w0, w1, w2) = (
        width(|r| r.0.chars().count()),
        width(|r| r.1.chars().count()),
        width(|r| r.2.chars().count()),
    );
    for (label, time, pct, meaning) in &rows {
        let line = format!("    {label:<w0$}  {time:>w1$}  {pct:>w2$}  {meaning}");
        let _ = writeln!(out, "{}", line.trim_end());
    }
    if split.page_faults > 0 {
        let _ = writeln!(
            out,
            "    page faults: {} (a count; their time is inside running)",
            thousands(split.page_faults)
        );
    }
}

/// The tasks that held the CPU of the series' slowest operations.
fn write_culprits(out: &mut String, b: &TailBlame) {
    if b.culprits.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "    culprits (tasks that held the CPU of the {} slowest operations kept):",
        thousands(b.slowest)
    );
    let names: Vec<String> = b
        .culprits
        .iter()
        .map(|c| format!("{} (pid {})", c.comm, c.pid))
        .collect();
    let w0 = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    let times: Vec<String> = b.culprits.iter().map(|c| format_ns(c.ns as f64)).collect();
    let w1 = times.iter().map(|t| t.chars().count()).max().unwrap_or(0);
    for ((c, name), time) in b.culprits.iter().zip(&names).zip(&times) {
        let _ = writeln!(
            out,
            "      {name:<w0$}  {time:>w1$}  in {} of {}",
            thousands(c.operations),
            thousands(b.slowest)
        );
    }
}

/// Each stall's own blame: its top cause and share.
fn write_stalls(out: &mut String, stalls: &[StallBlame]) {
    if stalls.is_empty() {
        return;
    }
    let _ = writeln!(out, "    inside each stall:");
    for stall in stalls.iter().take(STALLS_SHOWN) {
        let when = format!("t={}–{} s", seconds(stall.start_s), seconds(stall.end_s));
        let Some((cause, top)) = stall.split.top() else {
            let _ = writeln!(out, "      {when}: no slow operation recorded inside");
            continue;
        };
        let from = match stall.from {
            BlameSource::Intervals => slow_operations(stall.split.slow),
            BlameSource::Slowest => format!(
                "{} of the slowest kept (no interval totals there)",
                thousands(stall.split.slow)
            ),
        };
        let _ = writeln!(
            out,
            "      {when}: {cause} {} of {}, {from}",
            percent(top),
            format_ns(stall.split.latency_ns as f64)
        );
    }
    if stalls.len() > STALLS_SHOWN {
        let _ = writeln!(
            out,
            "      … {} more in --json",
            stalls.len() - STALLS_SHOWN
        );
    }
}

/// `compare`'s blame shift: per series both runs have blame for, each
/// cause's share in base and new and the change, then the slow
/// operations per second; a line per series only one run has blame for.
pub fn write_shift(out: &mut String, c: &BlameComparison) {
    for s in &c.shifts {
        write_one_shift(out, s);
    }
    for one in &c.one_side {
        let (has, lacks) = match one.has {
            Side::Base => ("base", "new"),
            Side::New => ("new", "base"),
        };
        let _ = writeln!(
            out,
            "\nblame: only {has} has blame for {} (run {lacks} with --kernel blame to see how it shifted)",
            one.series
        );
    }
}

/// The rows of one series' shift: cause, base, new, change.
fn shift_rows(s: &BlameShift) -> Vec<[String; 4]> {
    let mut rows = vec![["cause", "base", "new", "change"].map(String::from)];
    for c in &s.causes {
        rows.push([
            c.cause.clone(),
            share(c.base_share),
            share(c.new_share),
            format!("{:+.1} pp", c.change_pp),
        ]);
    }
    let rate = |r: Option<f64>, n: u64| r.map_or_else(|| thousands(n), |r| format!("{r:.2}/s"));
    rows.push([
        "slow operations".into(),
        rate(s.base_slow_per_s, s.base_slow),
        rate(s.new_slow_per_s, s.new_slow),
        String::new(),
    ]);
    rows
}

fn write_one_shift(out: &mut String, s: &BlameShift) {
    let _ = writeln!(
        out,
        "\nblame shift — {} (share of the slow operations' time):",
        s.series
    );
    let rows = shift_rows(s);
    let widths: Vec<usize> = (0..4)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    for row in &rows {
        let line = format!(
            "  {:<w0$}  {:>w1$}  {:>w2$}  {:>w3$}",
            row[0],
            row[1],
            row[2],
            row[3],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
            w3 = widths[3]
        );
        let _ = writeln!(out, "{}", line.trim_end());
    }
    if s.base_threshold != s.new_threshold {
        let _ = writeln!(
            out,
            "  note: slow meant different things: base {}, new {}",
            threshold_words(&s.base_threshold),
            threshold_words(&s.new_threshold)
        );
    }
}

/// The blame shift as Markdown tables.
pub fn write_shift_markdown(out: &mut String, c: &BlameComparison) {
    for s in &c.shifts {
        let _ = writeln!(
            out,
            "\n**blame shift — {}** (share of the slow operations' time)\n",
            s.series
        );
        let rows = shift_rows(s);
        for (i, row) in rows.iter().enumerate() {
            let _ = writeln!(out, "| {} |", row.join(" | "));
            if i == 0 {
                let _ = writeln!(out, "|---|--:|--:|--:|");
            }
        }
    }
    for one in &c.one_side {
        let has = match one.has {
            Side::Base => "base",
            Side::New => "new",
        };
        let _ = writeln!(out, "\nblame: only {has} has blame for {}", one.series);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::analyze::blame::shift::compare_blame;
    use crate::analyze::blame::tail_blame;
    use crate::analyze::stalls::Stall;
    use crate::model::blame::{BlameReport, Culprit, IntervalBlame, SeriesBlame, SlowOperation};

    const MS: u64 = 1_000_000;

    /// Twenty 3 ms wake-ups in interval 5 of a 1 s grid, 90 % behind a
    /// hog, and the slowest one kept with its culprit.
    fn report(threshold: Threshold) -> BlameReport {
        let keys = |pairs: &[(&str, u64)]| -> BTreeMap<String, u64> {
            pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
        };
        BlameReport {
            threshold,
            series: vec![SeriesBlame {
                tag: "wakeup".into(),
                intervals: vec![IntervalBlame {
                    index: 5,
                    slow: 20,
                    latency_ns: 60 * MS,
                    causes: keys(&[("run_queue", 54 * MS), ("softirq.NET_RX", MS)]),
                }],
            }],
            slowest: vec![SlowOperation {
                series: "wakeup".into(),
                thread: 0,
                tid: 900,
                cpu: 1,
                start_ns: 5_100 * MS,
                latency_ns: 5 * MS,
                causes: keys(&[("run_queue", 4 * MS)]),
                culprits: vec![Culprit {
                    comm: "stress-ng".into(),
                    pid: 4242,
                    ns: 4 * MS,
                }],
                page_faults: 0,
                requests: 0,
                runnable_ns: 0,
            }],
            kept: 100,
            lost: BTreeMap::new(),
            untraced_after: Vec::new(),
            steal_resolution: String::new(),
            monotonic_start_ns: 0,
        }
    }

    #[test]
    fn the_block_names_causes_details_culprits_and_stalls() {
        let stall = Stall {
            start_s: 5.0,
            end_s: 6.0,
            p99: 3 * MS,
            max: 5 * MS,
            count: 1000,
            mean: 90_000.0,
            reasons: Vec::new(),
            hints: Vec::new(),
        };
        let b = report(Threshold::PreviousP99);
        let tail = tail_blame(&b, 1_000 * MS, "wakeup", &[stall]);
        let mut out = String::new();
        write_tail(&mut out, tail.as_ref());
        let lines: Vec<&str> = out.lines().collect();
        assert!(
            lines[0].contains("20 slow operations, slower than the p99"),
            "{out}"
        );
        assert!(
            lines[1].starts_with("    run_queue") && lines[1].contains("90 %"),
            "{out}"
        );
        // 6 ms of 60 no key explains, then softirq with its kind under it.
        assert!(
            lines[2].starts_with("    unexplained") && lines[2].contains("8.3 %"),
            "{out}"
        );
        assert!(
            lines[3].starts_with("    softirq") && lines[4].starts_with("      NET_RX"),
            "{out}"
        );
        assert!(
            out.contains("stress-ng (pid 4242)  4.000 ms  in 1 of 1"),
            "{out}"
        );
        assert!(
            out.contains("t=5–6 s: run_queue 90 % of 60.00 ms, 20 slow operations"),
            "{out}"
        );
        let mut none = String::new();
        write_tail(&mut none, None);
        assert!(none.is_empty());
    }

    #[test]
    fn the_shift_shows_points_rates_and_a_changed_threshold() {
        let a = report(Threshold::PreviousP99);
        let b = report(Threshold::Fixed { ns: MS });
        let pairs = [("wakeup", "wakeup", "wakeup")];
        let c = compare_blame(Some((&a, 10_000 * MS)), Some((&b, 5_000 * MS)), &pairs);
        let mut out = String::new();
        write_shift(&mut out, &c);
        assert!(out.contains("blame shift — wakeup"), "{out}");
        assert!(out.contains("run_queue"), "{out}");
        assert!(out.contains("+0.0 pp"), "{out}");
        assert!(out.contains("2.00/s") && out.contains("4.00/s"), "{out}");
        assert!(
            out.contains("slower than 1.000 ms (--blame-above)"),
            "{out}"
        );
        let one = compare_blame(Some((&a, MS)), None, &pairs);
        let mut out = String::new();
        write_shift(&mut out, &one);
        assert_eq!(out.lines().filter(|l| !l.is_empty()).count(), 1, "{out}");
        assert!(out.contains("only base has blame for wakeup"), "{out}");
    }
}
