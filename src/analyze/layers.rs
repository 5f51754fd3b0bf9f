//! Which layer made the latency: a probe's series beside what the kernel
//! measured for the same requests in the same intervals (`--kernel`).
//!
//! The figure users ask for first is how much of the application's
//! latency the device explains: application p50 − device p50 is the time
//! spent above the device (the I/O engine, the syscall, the block layer's
//! queue, waiting for a CPU), which no peer tool prints. Stalls get the
//! same split: a second whose tail the device (or the run queue) already
//! shows is not the stack's.
//!
//! Series are matched by tag (`read` ↔ `block.device:read`, see
//! [`crate::model::kernel`]); nothing here asks which probe made them.

use serde::Serialize;

use super::stalls::Hint;
use super::stalls::{IntervalPoint, Stall};
use crate::model::Summary;
use crate::model::kernel::{KERNEL_TAGS, device_tag_of};

/// A probe's series split at the block device.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LayerSplit {
    /// The probe's series, e.g. `read`.
    pub series: String,
    /// The kernel's device series for it, e.g. `block.device:read`.
    pub device_series: String,
    /// The split at p50 and p99.
    pub at: Vec<LayerPoint>,
}

/// One percentile of a [`LayerSplit`], in ns.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LayerPoint {
    /// The percentile, e.g. `50`.
    pub percentile: String,
    /// What the application saw.
    pub app_ns: u64,
    /// What the device took (issue → completion).
    pub device_ns: u64,
    /// The block layer's whole time (start → completion), when measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_total_ns: Option<u64>,
    /// The time above the device: `app_ns − device_ns` (negative only
    /// through the percentiles' own uncertainty).
    pub above_device_ns: i64,
    /// The probe's threads' wait for a CPU after a wake-up (`runq`) at the
    /// same percentile, when measured: part of the time above the device
    /// (on a VM, mostly an idle vCPU coming back).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runq_ns: Option<u64>,
}

const SPLIT_AT: [&str; 2] = ["50", "99"];

/// The split of every series (its tag and summary) that has a device
/// series beside it.
pub fn splits(series: &[(&str, &Summary)]) -> Vec<LayerSplit> {
    let find = |tag: &str| {
        series
            .iter()
            .find(|(t, s)| *t == tag && s.count > 0)
            .map(|(_, s)| *s)
    };
    series
        .iter()
        .filter_map(|&(app_tag, app_summary)| {
            let device_tag = device_tag_of(app_tag)?;
            let device = find(device_tag)?;
            let total = find(&device_tag.replace("block.device", "block.total"));
            let runq = find("runq");
            let at: Vec<LayerPoint> = SPLIT_AT
                .iter()
                .filter_map(|p| {
                    let app_ns = app_summary.percentiles.get(p)?;
                    let device_ns = device.percentiles.get(p)?;
                    Some(LayerPoint {
                        percentile: (*p).to_string(),
                        app_ns,
                        device_ns,
                        block_total_ns: total.and_then(|t| t.percentiles.get(p)),
                        above_device_ns: app_ns as i64 - device_ns as i64,
                        runq_ns: runq.and_then(|r| r.percentiles.get(p)),
                    })
                })
                .collect();
            (!at.is_empty()).then(|| LayerSplit {
                series: app_tag.to_string(),
                device_series: device_tag.to_string(),
                at,
            })
        })
        .collect()
}

/// Whether a series is one of the kernel's (no layer hints on those).
pub fn is_kernel_series(tag: &str) -> bool {
    KERNEL_TAGS.contains(&tag)
}

/// The worst max of `points` overlapping the stall, and the median of the
/// points' maxima (the typical worst).
fn worst_and_typical(points: &[IntervalPoint], stall: &Stall) -> Option<(f64, f64)> {
    let busy: Vec<&IntervalPoint> = points.iter().filter(|p| p.count > 0).collect();
    let worst = busy
        .iter()
        .filter(|p| p.start_s < stall.end_s && p.start_s + p.length_s > stall.start_s)
        .map(|p| p.max as f64)
        .fold(None, |w: Option<f64>, m| Some(w.map_or(m, |w| w.max(m))))?;
    let mut maxima: Vec<f64> = busy.iter().map(|p| p.max as f64).collect();
    maxima.sort_by(f64::total_cmp);
    let typical = maxima.get(maxima.len() / 2).copied().unwrap_or(0.0);
    Some((worst, typical))
}

/// A stall of a probe's series against its device series in the same
/// seconds: the device took (most of) the stall's worst, or it did not.
pub fn device_hint(device_points: &[IntervalPoint], stall: &Stall) -> Option<Hint> {
    let (worst, typical) = worst_and_typical(device_points, stall)?;
    let ns = crate::units::format_ns;
    let app = stall.max as f64;
    let text = if worst >= 0.5 * app {
        format!(
            "the device took up to {} in these seconds (typical worst {}; the application's \
             worst {}) → the device, not the stack",
            ns(worst),
            ns(typical),
            ns(app)
        )
    } else {
        format!(
            "the device took at most {} in these seconds (the application's worst {}) → the \
             time was spent above the device: the I/O path, the block queue or a wait for a CPU",
            ns(worst),
            ns(app)
        )
    };
    Some(Hint {
        counter: "block.device.max".into(),
        value: worst,
        baseline: typical,
        text,
        check: None,
    })
}

/// A stall in seconds where the probe's own threads waited long for a CPU
/// (the `runq` series): at least 1 ms and 3× their typical worst wait.
pub fn runq_hint(runq_points: &[IntervalPoint], stall: &Stall) -> Option<Hint> {
    let (worst, typical) = worst_and_typical(runq_points, stall)?;
    if worst < 1e6 || worst < 3.0 * typical {
        return None;
    }
    let ns = crate::units::format_ns;
    Some(Hint {
        counter: "runq.max".into(),
        value: worst,
        baseline: typical,
        text: format!(
            "the probe's threads waited up to {} on the run queue for a CPU (typical worst {}) \
             → CPU contention, not the target",
            ns(worst),
            ns(typical)
        ),
        check: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::SeriesAnalysis;
    use crate::model::{IntervalRecord, MeasuredFrom, Series};
    use crate::record::LatencyHistogram;

    /// The series as [`splits`] takes them.
    fn tagged(all: &[SeriesAnalysis]) -> Vec<(&str, &Summary)> {
        all.iter().map(|s| (s.tag.as_str(), &s.summary)).collect()
    }

    /// `tag`: two intervals of 1,000 values, `low` for 98 % and `high` for
    /// the rest.
    fn analysed(tag: &str, low: u64, high: u64) -> SeriesAnalysis {
        let mut series = Series::new(tag.into(), MeasuredFrom::ActualStart);
        for i in 0..2u64 {
            let mut h = LatencyHistogram::new();
            for k in 0..1_000 {
                h.record(if k < 980 { low } else { high });
            }
            series.intervals.push(IntervalRecord::from_histogram(
                i * 1_000_000_000,
                1_000_000_000,
                &h,
            ));
        }
        super::super::analyze_series(&series, &super::super::Options::default()).unwrap()
    }

    #[test]
    fn the_split_shows_the_device_and_the_wait_for_a_cpu() {
        let all = [
            analysed("read", 50_000, 90_000),
            analysed("block.device:read", 35_000, 70_000),
            analysed("runq", 9_000, 12_000),
        ];
        let [app, device, runq] = &all;
        let split = &splits(&tagged(&all))[0];
        assert_eq!(
            (split.series.as_str(), split.device_series.as_str()),
            ("read", "block.device:read")
        );
        for (point, p) in split.at.iter().zip(["50", "99"]) {
            assert_eq!(point.percentile, p);
            let a = app.summary.percentiles.get(p).unwrap();
            let d = device.summary.percentiles.get(p).unwrap();
            assert_eq!(point.above_device_ns, a as i64 - d as i64);
            assert_eq!(point.runq_ns, runq.summary.percentiles.get(p));
        }
        // p50 is the low value, p99 the high one, to cauda's precision.
        assert!(split.at[0].above_device_ns.abs_diff(15_000) <= 50);
        assert!(split.at[1].above_device_ns.abs_diff(20_000) <= 100);
        assert!(split.at[0].runq_ns.unwrap().abs_diff(9_000) <= 10);
        // Without a run-queue series there is no wait to show, and without
        // a device series no split.
        let no_runq = [
            analysed("read", 50_000, 90_000),
            analysed("block.device:read", 35_000, 70_000),
        ];
        assert_eq!(splits(&tagged(&no_runq))[0].at[0].runq_ns, None);
        let no_device = [
            analysed("read", 50_000, 90_000),
            analysed("runq", 9_000, 12_000),
        ];
        assert!(splits(&tagged(&no_device)).is_empty());
    }

    fn point(start_s: f64, max: u64) -> IntervalPoint {
        IntervalPoint {
            start_s,
            length_s: 1.0,
            count: 10,
            p50: max / 2,
            p99: max,
            max,
            mean: max as f64 / 2.0,
        }
    }

    fn stall(start_s: f64, max: u64) -> Stall {
        Stall {
            start_s,
            end_s: start_s + 1.0,
            p99: max,
            max,
            count: 10,
            mean: max as f64 / 2.0,
            reasons: Vec::new(),
            hints: Vec::new(),
        }
    }

    #[test]
    fn a_slow_device_takes_the_blame_a_fast_one_does_not() {
        let device: Vec<_> = (0..5)
            .map(|i| point(i as f64, if i == 3 { 11_800_000 } else { 80_000 }))
            .collect();
        let slow = device_hint(&device, &stall(3.0, 12_000_000)).unwrap();
        assert!(
            slow.text.contains("the device, not the stack"),
            "{}",
            slow.text
        );
        assert_eq!(slow.value, 11_800_000.0);
        let fast = device_hint(&device, &stall(1.0, 12_000_000)).unwrap();
        assert!(fast.text.contains("above the device"), "{}", fast.text);
    }

    #[test]
    fn only_a_long_run_queue_wait_is_a_hint() {
        let runq: Vec<_> = (0..5)
            .map(|i| point(i as f64, if i == 2 { 4_000_000 } else { 50_000 }))
            .collect();
        assert!(runq_hint(&runq, &stall(2.0, 5_000_000)).is_some());
        assert!(runq_hint(&runq, &stall(0.0, 5_000_000)).is_none());
    }
}
