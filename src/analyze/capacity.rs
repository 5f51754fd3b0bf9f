//! Two sweeps' capacities at the same objective, compared: the change as
//! the range of ratios the two brackets allow. A sweep places its capacity
//! between the highest value that met the objective and the lowest that
//! missed it, so the new capacity over the base one lies between
//! new.below / base.above and new.above / base.below; only a range wholly
//! above 1 (or below) is a change the sweeps show.

use serde::Serialize;

use crate::model::sweep::SweepFile;

/// The change of capacity between two sweeps.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CapacityChange {
    /// Always `cauda.capacity-change/1`.
    pub schema: &'static str,
    /// The objective both sweeps judged.
    pub objective: String,
    /// What both varied (`rate` or `iodepth`).
    pub knob: crate::model::sweep::Knob,
    /// The base sweep's bracket: (met, missed), either end open.
    pub base: (Option<f64>, Option<f64>),
    /// The new sweep's bracket.
    pub new: (Option<f64>, Option<f64>),
    /// Lowest ratio new / base the brackets allow (absent: unbounded below).
    pub ratio_low: Option<f64>,
    /// Highest ratio (absent: unbounded above).
    pub ratio_high: Option<f64>,
    /// `more`, `less`, or `no change shown`.
    pub verdict: &'static str,
}

/// Compares two sweeps of the same objective and knob.
pub fn compare(base: &SweepFile, new: &SweepFile) -> Result<CapacityChange, String> {
    if (base.percentile.as_str(), base.threshold_ns, base.strict)
        != (new.percentile.as_str(), new.threshold_ns, new.strict)
    {
        return Err(format!(
            "the sweeps judged different objectives ({} and {}); a capacity is only comparable \
             at the same objective",
            base.objective, new.objective
        ));
    }
    if base.knob != new.knob {
        return Err("one sweep varied the rate and the other the queue depth".into());
    }
    let bracket = |s: &SweepFile| (s.capacity.below, s.capacity.above);
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    let ratio_low = ratio(new.capacity.below, base.capacity.above);
    let ratio_high = ratio(new.capacity.above, base.capacity.below);
    let verdict = match (ratio_low, ratio_high) {
        (Some(low), _) if low > 1.0 => "more",
        (_, Some(high)) if high < 1.0 => "less",
        _ => "no change shown",
    };
    Ok(CapacityChange {
        schema: "cauda.capacity-change/1",
        objective: base.objective.clone(),
        knob: base.knob,
        base: bracket(base),
        new: bracket(new),
        ratio_low,
        ratio_high,
        verdict,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::sweep::{Capacity, Ending, Knob, SWEEP_SCHEMA};

    fn sweep(objective: &str, below: Option<f64>, above: Option<f64>) -> SweepFile {
        let o = crate::analyze::objective::Objective::parse(objective).unwrap();
        SweepFile {
            schema: SWEEP_SCHEMA.into(),
            tool: crate::model::Tool::this(),
            start_time: String::new(),
            objective: o.to_string(),
            percentile: o.percentile.key.clone(),
            threshold_ns: o.threshold_ns,
            strict: o.strict,
            confidence: 0.95,
            probe: "net".into(),
            probe_args: vec![],
            series: "rtt".into(),
            knob: Knob::Rate,
            from: 100.0,
            to: 1e6,
            precision: 0.05,
            budget_ns: 1,
            samples_above: 30,
            steps: vec![],
            capacity: Capacity {
                below,
                below_achieved_per_s: None,
                above,
                generator_ceiling: None,
                ending: Ending::Converged,
                finding: String::new(),
            },
            measuring_ns: 0,
            elapsed_ns: 0,
        }
    }

    #[test]
    fn only_brackets_apart_are_a_change() {
        let base = sweep("p99<=1ms", Some(1000.0), Some(1100.0));
        let more = compare(&base, &sweep("p99<=1ms", Some(1200.0), Some(1300.0))).unwrap();
        assert_eq!(more.verdict, "more");
        assert!((more.ratio_low.unwrap() - 1200.0 / 1100.0).abs() < 1e-12);
        assert!((more.ratio_high.unwrap() - 1.3).abs() < 1e-12);
        let overlap = compare(&base, &sweep("p99<=1ms", Some(1050.0), Some(1150.0))).unwrap();
        assert_eq!(overlap.verdict, "no change shown");
        let less = compare(&base, &sweep("p99<=1ms", Some(500.0), Some(900.0))).unwrap();
        assert_eq!(less.verdict, "less");
        // A sweep that never missed: its capacity is open above.
        let open = compare(&base, &sweep("p99<=1ms", Some(5000.0), None)).unwrap();
        assert_eq!((open.verdict, open.ratio_high), ("more", None));
        let other = compare(&base, &sweep("p99.9<=1ms", Some(1.0), Some(2.0)));
        assert!(other.unwrap_err().contains("different objectives"));
    }
}
