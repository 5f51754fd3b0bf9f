//! Culprit hints: for each stall, the host counters that stand out against
//! the run's baseline, phrased with the audit check they relate to.
//!
//! A counter's value over the stall's intervals is normalised (PSI to the
//! share of time stalled, events to a rate, page levels to MB) and compared
//! with the median of the same value over every interval of the run. It
//! stands out when it passes an absolute floor *and* three times the
//! baseline. The `self` control series adds one more: when cauda's own
//! sleeping thread was late in the same seconds, the host stalled, not only
//! the target.

use super::stalls::{Hint, IntervalPoint, Stall};
use crate::model::HostCounters;

/// How a counter's deltas become a comparable value.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// PSI µs stalled → % of the time.
    Pressure,
    /// Events → per second.
    Rate,
    /// ms of CPU time → ms per second.
    MsPerSecond,
    /// A level in 4 KiB pages → MB of change.
    PagesMb,
}

struct Rule {
    counter: &'static str,
    kind: Kind,
    /// The value must reach this, whatever the baseline.
    floor: f64,
    label: &'static str,
    meaning: &'static str,
    check: Option<&'static str>,
}

const fn rule(
    counter: &'static str,
    kind: Kind,
    floor: f64,
    label: &'static str,
    meaning: &'static str,
    check: Option<&'static str>,
) -> Rule {
    Rule {
        counter,
        kind,
        floor,
        label,
        meaning,
        check,
    }
}

const RULES: &[Rule] = &[
    rule(
        "psi.io.full",
        Kind::Pressure,
        5.0,
        "io pressure full",
        "every task waited on I/O: synchronous dirty writeback or a saturated device",
        Some("vm.dirty_ratio"),
    ),
    rule(
        "psi.io.some",
        Kind::Pressure,
        10.0,
        "io pressure some",
        "tasks waited on I/O: dirty writeback or a slow device",
        Some("vm.dirty_ratio"),
    ),
    rule(
        "vmstat.nr_writeback",
        Kind::PagesMb,
        16.0,
        "nr_writeback",
        "dirty pages went to disk (writeback)",
        Some("vm.dirty_ratio"),
    ),
    rule(
        "vmstat.nr_dirty",
        Kind::PagesMb,
        64.0,
        "nr_dirty",
        "dirty pages piled up before writeback",
        Some("vm.dirty_background_ratio"),
    ),
    rule(
        "stat.iowait_ms",
        Kind::MsPerSecond,
        100.0,
        "iowait",
        "CPUs sat idle waiting for I/O",
        Some("vm.dirty_ratio"),
    ),
    rule(
        "psi.memory.full",
        Kind::Pressure,
        5.0,
        "memory pressure full",
        "every task waited on reclaim or compaction",
        Some("vm.swappiness"),
    ),
    rule(
        "psi.memory.some",
        Kind::Pressure,
        10.0,
        "memory pressure some",
        "tasks waited on reclaim or compaction",
        Some("vm.swappiness"),
    ),
    rule(
        "vmstat.compact_stall",
        Kind::Rate,
        1.0,
        "direct compaction",
        "a faulting task compacted memory itself",
        Some("memory.thp.defrag"),
    ),
    rule(
        "vmstat.thp_fault_alloc",
        Kind::Rate,
        10.0,
        "huge-page faults",
        "2 MB pages were zeroed at fault time",
        Some("memory.thp.enabled"),
    ),
    rule(
        "vmstat.allocstall",
        Kind::Rate,
        1.0,
        "direct reclaim",
        "an allocation had to reclaim memory itself",
        Some("vm.swappiness"),
    ),
    rule(
        "vmstat.pswpin",
        Kind::Rate,
        1.0,
        "swap-ins",
        "touched pages came back from swap",
        Some("memory.swap"),
    ),
    rule(
        "vmstat.pswpout",
        Kind::Rate,
        1.0,
        "swap-outs",
        "pages were written to swap",
        Some("vm.swappiness"),
    ),
    rule(
        "vmstat.pgmajfault",
        Kind::Rate,
        50.0,
        "major faults",
        "page faults read from disk",
        Some("vm.swappiness"),
    ),
    rule(
        "psi.cpu.some",
        Kind::Pressure,
        20.0,
        "cpu pressure",
        "runnable tasks waited for a CPU",
        Some("cmdline.isolcpus"),
    ),
    rule(
        "stat.steal_ms",
        Kind::MsPerSecond,
        20.0,
        "steal",
        "the hypervisor ran something else on these vCPUs",
        None,
    ),
    rule(
        "probe.involuntary_ctxt",
        Kind::Rate,
        5.0,
        "probe preemptions",
        "the probe's threads were preempted",
        Some("cmdline.isolcpus"),
    ),
    rule(
        "stat.intr",
        Kind::Rate,
        5_000.0,
        "interrupts",
        "an interrupt burst",
        Some("irq.irqbalance"),
    ),
    rule(
        "stat.ctxt",
        Kind::Rate,
        20_000.0,
        "context switches",
        "the scheduler switched tasks far more often",
        Some("cmdline.isolcpus"),
    ),
];

/// Baseline and stall values must differ by this factor.
const FACTOR: f64 = 3.0;
/// At most this many hints per stall, strongest first.
const MAX_HINTS: usize = 4;

fn value(kind: Kind, delta: i64, length_ns: u64) -> f64 {
    let seconds = length_ns.max(1) as f64 / 1e9;
    match kind {
        Kind::Pressure => delta as f64 / (length_ns.max(1) as f64 / 1e3) * 100.0,
        Kind::Rate => delta as f64 / seconds,
        Kind::MsPerSecond => delta as f64 / seconds,
        Kind::PagesMb => delta as f64 * 4096.0 / 1e6,
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn format(kind: Kind, v: f64) -> String {
    match kind {
        Kind::Pressure => format!("{v:.0} %"),
        Kind::Rate => format!("{v:.0}/s"),
        Kind::MsPerSecond => format!("{v:.0} ms/s"),
        Kind::PagesMb => format!("{v:+.0} MB"),
    }
}

/// The intervals (indices) a stall covers.
fn covered(counters: &HostCounters, stall: &Stall) -> Vec<usize> {
    let (start, end) = ((stall.start_s * 1e9) as u64, (stall.end_s * 1e9) as u64);
    counters
        .intervals
        .iter()
        .enumerate()
        .filter(|(_, i)| i.start_ns < end && i.start_ns + i.length_ns > start)
        .map(|(k, _)| k)
        .collect()
}

/// The host-counter hints of one stall.
pub fn counter_hints(counters: &HostCounters, stall: &Stall) -> Vec<Hint> {
    let inside = covered(counters, stall);
    if inside.is_empty() {
        return Vec::new();
    }
    let mut hints: Vec<(f64, Hint)> = Vec::new();
    for rule in RULES {
        let Some(col) = counters.column(rule.counter) else {
            continue;
        };
        let per_interval: Vec<f64> = counters
            .intervals
            .iter()
            .map(|i| {
                value(
                    rule.kind,
                    i.deltas.get(col).copied().unwrap_or(0),
                    i.length_ns,
                )
            })
            .collect();
        let baseline = match rule.kind {
            // A level's change: the typical size of a change, either way.
            Kind::PagesMb => median(per_interval.iter().map(|v| v.abs()).collect()),
            _ => median(per_interval.clone()),
        };
        let (delta, length): (i64, u64) = inside.iter().fold((0, 0), |(d, l), &k| {
            let i = &counters.intervals[k];
            (d + i.deltas.get(col).copied().unwrap_or(0), l + i.length_ns)
        });
        let stall_value = match rule.kind {
            // The largest change in one interval, either way: dirty pages
            // pile up and are flushed within a stall, so a sum can hide both.
            Kind::PagesMb => inside
                .iter()
                .map(|&k| per_interval[k])
                .fold(0.0, |a: f64, v| if v.abs() > a.abs() { v } else { a }),
            _ => value(rule.kind, delta, length),
        };
        let size = stall_value.abs();
        if size < rule.floor || size < FACTOR * baseline {
            continue;
        }
        let strength = size / baseline.max(rule.floor / FACTOR);
        let meaning = if stall_value < 0.0 {
            "dirty pages were written out (writeback)"
        } else {
            rule.meaning
        };
        let mut text = format!(
            "{} {} (baseline {}) → {}",
            rule.label,
            format(rule.kind, stall_value),
            format(rule.kind, baseline).trim_start_matches('+'),
            meaning
        );
        if let Some(check) = rule.check {
            text.push_str(&format!("; see {check}"));
        }
        hints.push((
            strength,
            Hint {
                counter: rule.counter.into(),
                value: (stall_value * 100.0).round() / 100.0,
                baseline: (baseline * 100.0).round() / 100.0,
                text,
                check: rule.check.map(str::to_string),
            },
        ));
    }
    hints.sort_by(|a, b| b.0.total_cmp(&a.0));
    hints.into_iter().take(MAX_HINTS).map(|(_, h)| h).collect()
}

/// A hint when cauda's own `self` thread was late in the stall's seconds,
/// by enough to explain it: the host stalled, not only the target.
pub fn self_hint(self_points: &[IntervalPoint], stall: &Stall) -> Option<Hint> {
    let busy: Vec<&IntervalPoint> = self_points.iter().filter(|p| p.count > 0).collect();
    let baseline = median(busy.iter().map(|p| p.max as f64).collect());
    let worst = busy
        .iter()
        .filter(|p| p.start_s < stall.end_s && p.start_s + p.length_s > stall.start_s)
        .map(|p| p.max as f64)
        .fold(0.0, f64::max);
    // 1 ms late and 3× the typical worst wake-up, and a tenth of the
    // stall's worst: a host hiccup of 1.6 ms does not explain a target
    // that stopped answering for 300 ms (a host freeze of that length
    // makes the observer late by about as much).
    if worst < 1e6 || worst < FACTOR * baseline || worst < stall.max as f64 / 10.0 {
        return None;
    }
    let ns = crate::units::format_ns;
    Some(Hint {
        counter: "self.max".into(),
        value: worst,
        baseline,
        text: format!(
            "cauda's own observer thread woke {} late (typical {}) → the host stalled every thread, not only the target",
            ns(worst),
            ns(baseline)
        ),
        check: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::HostInterval;

    fn counters(io_full_us: &[i64], writeback_pages: &[i64]) -> HostCounters {
        HostCounters {
            names: vec!["psi.io.full".into(), "vmstat.nr_writeback".into()],
            intervals: io_full_us
                .iter()
                .zip(writeback_pages)
                .enumerate()
                .map(|(k, (&io, &wb))| HostInterval {
                    start_ns: k as u64 * 1_000_000_000,
                    length_ns: 1_000_000_000,
                    deltas: vec![io, wb],
                })
                .collect(),
        }
    }

    fn stall(start_s: f64, end_s: f64) -> Stall {
        Stall {
            start_s,
            end_s,
            p99: 0,
            max: 0,
            count: 0,
            mean: 0.0,
            reasons: Vec::new(),
            hints: Vec::new(),
        }
    }

    #[test]
    fn io_pressure_during_the_stall_names_writeback() {
        let mut io = vec![0i64; 20];
        let mut wb = vec![0i64; 20];
        io[13] = 380_000; // 38 % of a second
        wb[13] = 12_000; // +49 MB
        wb[14] = -12_000;
        let hints = counter_hints(&counters(&io, &wb), &stall(13.0, 14.0));
        // The flush a second later is writeback too.
        let flushed = counter_hints(&counters(&[0; 20], &wb), &stall(14.0, 15.0));
        assert_eq!(flushed.len(), 1, "{flushed:?}");
        assert!(
            flushed[0]
                .text
                .starts_with("nr_writeback -49 MB (baseline 0 MB) → dirty pages were written out"),
            "{}",
            flushed[0].text
        );
        assert_eq!(hints.len(), 2, "{hints:?}");
        let first = &hints[0];
        assert_eq!(first.counter, "psi.io.full");
        assert_eq!(first.value, 38.0);
        assert_eq!(first.baseline, 0.0);
        assert_eq!(first.check.as_deref(), Some("vm.dirty_ratio"));
        assert!(
            first
                .text
                .starts_with("io pressure full 38 % (baseline 0 %)"),
            "{}",
            first.text
        );
        assert!(
            hints[1].text.contains("nr_writeback +49 MB"),
            "{}",
            hints[1].text
        );
        // A quiet second has no hint.
        assert!(counter_hints(&counters(&io, &wb), &stall(3.0, 4.0)).is_empty());
    }

    #[test]
    fn a_noisy_baseline_needs_three_times_more() {
        let io = vec![100_000i64; 10]; // 10 % all along
        let mut io2 = io.clone();
        io2[5] = 250_000; // 25 %: under 3× the baseline
        assert!(counter_hints(&counters(&io2, &[0; 10]), &stall(5.0, 6.0)).is_empty());
        io2[5] = 400_000;
        assert_eq!(
            counter_hints(&counters(&io2, &[0; 10]), &stall(5.0, 6.0)).len(),
            1
        );
    }

    #[test]
    fn the_host_is_blamed_only_when_its_own_lateness_explains_the_stall() {
        // cauda's observer wakes 96 µs late, and 1.6 ms late in second 5.
        let points: Vec<IntervalPoint> = (0..10)
            .map(|k| IntervalPoint {
                start_s: k as f64,
                length_s: 1.0,
                count: 1,
                p50: 50_000,
                p99: 96_000,
                max: if k == 5 { 1_600_000 } else { 96_000 },
                mean: 60_000.0,
            })
            .collect();
        let with_max = |max: u64| Stall {
            max,
            ..stall(5.0, 6.0)
        };
        // A target that stopped answering for 300 ms: not the host's 1.6 ms.
        assert!(self_hint(&points, &with_max(300_000_000)).is_none());
        // A 5 ms stall the host's 1.6 ms can explain.
        let hint = self_hint(&points, &with_max(5_000_000)).unwrap();
        assert_eq!(hint.counter, "self.max");
        assert_eq!(hint.value, 1_600_000.0);
        // Outside the stall's seconds, nothing.
        assert!(
            self_hint(
                &points,
                &Stall {
                    max: 5_000_000,
                    ..stall(7.0, 8.0)
                }
            )
            .is_none()
        );
    }
}
