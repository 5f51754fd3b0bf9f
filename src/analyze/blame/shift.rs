//! How the blame shifted between two runs (`cauda compare`): per cause,
//! the share of the slow operations' time in each run and the change in
//! percentage points, beside how many operations were slow per second in
//! each. A tuning that removes one cause shows as that cause's share
//! falling and the slow operations' rate with it; the other causes' shares
//! then rise even where their time did not, which is why the rate stands
//! beside the shares.

use serde::Serialize;

use super::{has_series, series_split};
use crate::model::RunFile;
use crate::model::blame::{BlameReport, CAUSES, Threshold};

/// One cause's share in both runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CauseShift {
    /// The cause.
    pub cause: String,
    /// Its share of the slow operations' time in base, 0–1.
    pub base_share: f64,
    /// Its share in new, 0–1.
    pub new_share: f64,
    /// new − base, in percentage points.
    pub change_pp: f64,
}

/// One series' blame in both runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BlameShift {
    /// The series, as the comparison's rows name it.
    pub series: String,
    /// Slow operations in base.
    pub base_slow: u64,
    /// Slow operations in new.
    pub new_slow: u64,
    /// Slow operations per second of base's run (`null` when its duration
    /// is unknown).
    pub base_slow_per_s: Option<f64>,
    /// Slow operations per second of new's run.
    pub new_slow_per_s: Option<f64>,
    /// What counted as slow in base.
    pub base_threshold: Threshold,
    /// What counted as slow in new.
    pub new_threshold: Threshold,
    /// Per cause with time on either side, the larger share first.
    pub causes: Vec<CauseShift>,
}

/// Which run of a comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// The first input.
    Base,
    /// The second input.
    New,
}

/// A series only one run has blame for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OneSided {
    /// The series.
    pub series: String,
    /// The run that has blame for it.
    pub has: Side,
}

/// The blame part of a comparison.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct BlameComparison {
    /// Series both runs have blame for.
    pub shifts: Vec<BlameShift>,
    /// Series one run only has blame for.
    pub one_side: Vec<OneSided>,
}

impl BlameComparison {
    /// Neither run had blame for any compared series.
    pub fn is_empty(&self) -> bool {
        self.shifts.is_empty() && self.one_side.is_empty()
    }
}

/// One run's blame of one series, as [`shift`] takes it.
#[derive(Clone, Copy, Debug)]
pub struct SideBlame<'a> {
    /// The run's blame section.
    pub report: &'a BlameReport,
    /// The series' tag in that run.
    pub tag: &'a str,
    /// The run's duration, ns (0 when unknown).
    pub duration_ns: u64,
}

/// The shift of one series' blame from `base` to `new`.
pub fn shift(series: &str, base: SideBlame, new: SideBlame) -> BlameShift {
    let (_, b) = series_split(base.report, base.tag);
    let (_, n) = series_split(new.report, new.tag);
    let mut causes: Vec<CauseShift> = CAUSES
        .iter()
        .map(|&cause| (cause, b.share_of(cause), n.share_of(cause)))
        .filter(|(_, bs, ns)| *bs > 0.0 || *ns > 0.0)
        .map(|(cause, base_share, new_share)| CauseShift {
            cause: cause.to_string(),
            base_share,
            new_share,
            change_pp: (new_share - base_share) * 100.0,
        })
        .collect();
    // A stable sort keeps CAUSES' order among equals.
    causes.sort_by(|x, y| {
        let larger = |c: &CauseShift| c.base_share.max(c.new_share);
        larger(y).total_cmp(&larger(x))
    });
    let per_s = |slow: u64, ns: u64| (ns > 0).then(|| slow as f64 / (ns as f64 / 1e9));
    BlameShift {
        series: series.to_string(),
        base_slow: b.slow,
        new_slow: n.slow,
        base_slow_per_s: per_s(b.slow, base.duration_ns),
        new_slow_per_s: per_s(n.slow, new.duration_ns),
        base_threshold: base.report.threshold.clone(),
        new_threshold: new.report.threshold.clone(),
        causes,
    }
}

/// A run's blame section and its duration in ns, when it has one.
pub fn of_run(run: Option<&RunFile>) -> Option<(&BlameReport, u64)> {
    run.and_then(|r| r.blame.as_ref().map(|b| (b, r.duration_ns)))
}

/// The blame part of comparing `base` with `new` (each a blame section
/// and its run's duration, [`of_run`]) over the series pairs the
/// comparison made: `(label, base tag, new tag)`.
pub fn compare_blame<'a>(
    base: Option<(&'a BlameReport, u64)>,
    new: Option<(&'a BlameReport, u64)>,
    pairs: &[(&'a str, &'a str, &'a str)],
) -> BlameComparison {
    let side = |run: Option<(&'a BlameReport, u64)>, tag: &'a str| {
        let (report, duration_ns) = run.filter(|(r, _)| has_series(r, tag))?;
        Some(SideBlame {
            report,
            tag,
            duration_ns,
        })
    };
    let mut out = BlameComparison::default();
    for &(label, base_tag, new_tag) in pairs {
        let has = match (side(base, base_tag), side(new, new_tag)) {
            (Some(b), Some(n)) => {
                out.shifts.push(shift(label, b, n));
                continue;
            }
            (Some(_), None) => Side::Base,
            (None, Some(_)) => Side::New,
            (None, None) => continue,
        };
        out.one_side.push(OneSided {
            series: label.to_string(),
            has,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::model::blame::{IntervalBlame, SeriesBlame};

    const MS: u64 = 1_000_000;
    const SECOND: u64 = 1_000_000_000;

    /// One interval of `slow` operations whose time is `causes`.
    fn report(tag: &str, slow: u64, causes: &[(&str, u64)]) -> BlameReport {
        let causes: BTreeMap<String, u64> =
            causes.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        BlameReport {
            threshold: Threshold::PreviousP99,
            series: vec![SeriesBlame {
                tag: tag.into(),
                intervals: vec![IntervalBlame {
                    index: 0,
                    slow,
                    latency_ns: causes.values().sum(),
                    causes,
                }],
            }],
            slowest: Vec::new(),
            kept: 100,
            lost: BTreeMap::new(),
            untraced_after: Vec::new(),
            steal_resolution: String::new(),
            monotonic_start_ns: 0,
        }
    }

    #[test]
    fn a_removed_hog_shows_as_its_share_and_rate_falling() {
        // Before: 100 slow wake-ups in 10 s, 90 % behind a hog; after: 20 in
        // 10 s, mostly idle exits.
        let before = report(
            "wakeup",
            100,
            &[("run_queue", 90 * MS), ("idle_exit.C6", 10 * MS)],
        );
        let after = report(
            "wakeup",
            20,
            &[("idle_exit.C6", 7 * MS), ("unexplained", 3 * MS)],
        );
        let side = |report| SideBlame {
            report,
            tag: "wakeup",
            duration_ns: 10 * SECOND,
        };
        let s = shift("wakeup", side(&before), side(&after));
        let got: Vec<(&str, f64, f64)> = s
            .causes
            .iter()
            .map(|c| (c.cause.as_str(), c.base_share, c.new_share))
            .collect();
        assert_eq!(
            got,
            [
                ("run_queue", 0.9, 0.0),
                ("idle_exit", 0.1, 0.7),
                ("unexplained", 0.0, 0.3)
            ]
        );
        assert!((s.causes[0].change_pp + 90.0).abs() < 1e-9);
        assert!((s.causes[1].change_pp - 60.0).abs() < 1e-9);
        assert_eq!(
            (s.base_slow_per_s, s.new_slow_per_s),
            (Some(10.0), Some(2.0))
        );
        let unknown = shift(
            "wakeup",
            side(&before),
            SideBlame {
                duration_ns: 0,
                ..side(&after)
            },
        );
        assert_eq!(unknown.new_slow_per_s, None);
    }

    #[test]
    fn a_series_with_blame_on_one_side_is_named_once() {
        let a = report("wakeup", 1, &[("run_queue", MS)]);
        let b = report("read", 1, &[("block_device", MS)]);
        let pairs = [
            ("wakeup", "wakeup", "wakeup"),
            ("read", "read", "read"),
            ("rtt", "rtt", "rtt"),
        ];
        let c = compare_blame(Some((&a, SECOND)), Some((&b, SECOND)), &pairs);
        assert!(c.shifts.is_empty());
        assert_eq!(
            c.one_side,
            [
                OneSided {
                    series: "wakeup".into(),
                    has: Side::Base
                },
                OneSided {
                    series: "read".into(),
                    has: Side::New
                }
            ]
        );
        let both = compare_blame(Some((&a, SECOND)), Some((&a, SECOND)), &pairs[..1]);
        assert_eq!((both.shifts.len(), both.one_side.len()), (1, 0));
        assert!(compare_blame(None, None, &pairs).is_empty());
    }
}
