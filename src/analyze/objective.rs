//! A latency objective (`p99.9<=1ms`) and whether a measured distribution
//! meets it, judged by the percentile's confidence interval rather than its
//! point estimate: a step is below the objective only when the whole
//! interval is, above it only when the whole interval is, and otherwise
//! the sample cannot tell (more samples would).

use super::ci::{Support, percentile_cis};
use super::quantile::Percentile;
pub use crate::model::sweep::{Judged, Verdict};
use crate::record::LatencyHistogram;
use crate::units::{format_duration_compact, parse_duration};

/// A percentile that must stay at or under (or strictly under) a latency.
#[derive(Clone, Debug, PartialEq)]
pub struct Objective {
    /// The percentile judged, e.g. 99.9.
    pub percentile: Percentile,
    /// The latency it must not exceed, ns.
    pub threshold_ns: u64,
    /// `<` rather than `<=`.
    pub strict: bool,
}

impl Objective {
    /// Parses `p99.9<=1ms`, `p99 < 500us` (spaces allowed, `p` optional).
    pub fn parse(text: &str) -> Result<Objective, String> {
        const SYNTAX: &str = "expected PERCENTILE<=LATENCY, e.g. 'p99.9<=1ms' or 'p99<500us'";
        let (left, right, strict) = if let Some((l, r)) = text.split_once("<=") {
            (l.trim(), r.trim(), false)
        } else if let Some((l, r)) = text.split_once('<') {
            (l.trim(), r.trim(), true)
        } else {
            return Err(format!("'{text}': no '<=' or '<'; {SYNTAX}"));
        };
        // A space between the number and its unit is fine; one anywhere
        // else means there is more than an objective.
        let right: String = match right.split_whitespace().collect::<Vec<_>>()[..] {
            [number, unit]
                if number.chars().all(|c| c.is_ascii_digit() || c == '.')
                    && unit.chars().all(char::is_alphabetic) =>
            {
                format!("{number}{unit}")
            }
            [one] => one.to_string(),
            [] => String::new(),
            _ => {
                return Err(format!(
                    "'{text}': '{right}' is more than a latency; {SYNTAX}"
                ));
            }
        };
        let right = right.as_str();
        let number = left.strip_prefix(['p', 'P']).unwrap_or(left);
        if number.is_empty() {
            return Err(format!("'{text}': the percentile is missing; {SYNTAX}"));
        }
        let percentile = Percentile::parse(number).map_err(|e| format!("'{text}': {e}"))?;
        let q = percentile.quantile();
        if q <= 0.0 || q >= 1.0 {
            return Err(format!(
                "'{text}': the percentile must lie strictly between 0 and 100 \
                 (p0 and p100 are the minimum and the maximum, which no sample bounds)"
            ));
        }
        if right.is_empty() {
            return Err(format!("'{text}': the latency is missing; {SYNTAX}"));
        }
        let threshold_ns = parse_duration(right).map_err(|e| format!("'{text}': {e}"))?;
        if threshold_ns == 0 {
            return Err(format!(
                "'{text}': a latency objective of zero cannot be met"
            ));
        }
        Ok(Objective {
            percentile,
            threshold_ns,
            strict,
        })
    }

    /// Samples a step needs so that `above` of them are expected above the
    /// percentile (the support rule counts samples above it).
    pub fn samples_for(&self, above: u64) -> u64 {
        (above as f64 / (1.0 - self.percentile.quantile())).ceil() as u64
    }

    /// Whether a latency meets the objective.
    pub fn met_by(&self, ns: u64) -> bool {
        if self.strict {
            ns < self.threshold_ns
        } else {
            ns <= self.threshold_ns
        }
    }
}

impl std::fmt::Display for Objective {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let op = if self.strict { "<" } else { "<=" };
        write!(
            f,
            "p{}{op}{}",
            self.percentile.key,
            format_duration_compact(self.threshold_ns)
        )
    }
}

/// Judges a distribution against an objective at the given confidence.
pub fn judge(hist: &LatencyHistogram, objective: &Objective, confidence: f64) -> Judged {
    let p = std::slice::from_ref(&objective.percentile);
    let ci = percentile_cis(hist, p, confidence)[0];
    let value_ns = (hist.count() > 0).then(|| super::quantile::percentile_values(hist, p)[0]);
    let verdict = match (ci.support, ci.lower, ci.upper) {
        (Support::Insufficient, Some(lower), _) if !objective.met_by(lower) => Verdict::Above,
        (Support::Insufficient, _, _) | (_, _, None) => Verdict::Unsupported,
        (_, _, Some(upper)) if objective.met_by(upper) => Verdict::Below,
        (_, Some(lower), _) if !objective.met_by(lower) => Verdict::Above,
        _ => Verdict::Straddles,
    };
    Judged {
        percentile: objective.percentile.key.clone(),
        count: hist.count(),
        value_ns,
        lower_ns: ci.lower,
        upper_ns: ci.upper,
        verdict,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objectives_parse_with_their_units_and_refuse_what_is_not_one() {
        let o = Objective::parse("p99.9<=1ms").unwrap();
        assert_eq!(
            (o.percentile.key.as_str(), o.threshold_ns, o.strict),
            ("99.9", 1_000_000, false)
        );
        let o = Objective::parse(" 99 < 500 us").unwrap();
        assert_eq!(
            (o.percentile.key.as_str(), o.threshold_ns, o.strict),
            ("99", 500_000, true)
        );
        assert_eq!(o.to_string(), "p99<500us");
        for (bad, says) in [
            ("p99.9<=", "latency is missing"),
            ("p101<=1ms", "above 100"),
            ("p99.9<=1", "no unit"),
            ("p99.9=1ms", "no '<='"),
            ("<=1ms", "percentile is missing"),
            ("p100<=1ms", "strictly between"),
            ("p0<=1ms", "strictly between"),
            ("p99<=0ms", "zero"),
            ("pxx<=1ms", "not a percentile"),
            ("p99<=1ms extra", "more than a latency"),
        ] {
            let e = Objective::parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    fn hist_of(values: impl IntoIterator<Item = u64>) -> LatencyHistogram {
        let mut h = LatencyHistogram::new();
        for v in values {
            h.record(v);
        }
        h
    }

    #[test]
    fn the_verdict_follows_the_confidence_interval_not_the_point() {
        let o = Objective::parse("p99<=1ms").unwrap();
        // 10,000 samples, the top 1 % at 2 ms: p99's interval lies above.
        let above = hist_of((0..10_000).map(|i| if i < 9_850 { 100_000 } else { 2_000_000 }));
        assert_eq!(judge(&above, &o, 0.95).verdict, Verdict::Above);
        // The top 0.5 % at 2 ms: p99 is 100 µs with room to spare.
        let below = hist_of((0..10_000).map(|i| if i < 9_950 { 100_000 } else { 2_000_000 }));
        assert_eq!(judge(&below, &o, 0.95).verdict, Verdict::Below);
        // Exactly 1 % above: rank 9,900 sits on the edge, the interval holds it.
        let edge = hist_of((0..10_000).map(|i| if i < 9_900 { 100_000 } else { 2_000_000 }));
        assert_eq!(judge(&edge, &o, 0.95).verdict, Verdict::Straddles);
        // 50 samples cannot bound p99 from above.
        let few = hist_of((0..50).map(|_| 100_000));
        assert_eq!(judge(&few, &o, 0.95).verdict, Verdict::Unsupported);
        assert_eq!(
            judge(&LatencyHistogram::new(), &o, 0.95).verdict,
            Verdict::Unsupported
        );
        // ...unless even its lower bound misses the objective.
        let few_slow = hist_of((0..50).map(|_| 5_000_000));
        assert_eq!(judge(&few_slow, &o, 0.95).verdict, Verdict::Above);
    }

    #[test]
    fn samples_needed_grow_with_the_percentile() {
        assert_eq!(Objective::parse("p99<=1ms").unwrap().samples_for(30), 3_000);
        assert_eq!(
            Objective::parse("p99.9<=1ms").unwrap().samples_for(30),
            30_000
        );
    }
}
