//! Percentiles from a histogram, defined as exact order statistics.
//!
//! The p-th percentile of n values is the ⌈q·n⌉-th smallest value
//! (q = p/100), computed with integer arithmetic on the percentile's
//! decimal digits so that 99.9 % of 1,000 is rank 999 exactly, not 998.99…
//! Which value stands for a rank is the one rule of [`crate::record::rank`]:
//! the top of the bucket holding it, clamped to the exact min and max.
//!
//! We work in quantiles and print percentiles, as HdrHistogram_rust advises.

use crate::record::LatencyHistogram;
use crate::record::rank::{rank_of, values_at_ranks};
use crate::units::Decimal;

/// A percentile as the user wrote it, kept exact.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Percentile {
    /// The key printed and used in JSON: the percentile without trailing
    /// zeros (`"99.9"`, `"50"`).
    pub key: String,
    /// q = numerator / denominator, 0 ≤ q ≤ 1.
    numerator: u128,
    denominator: u128,
}

/// The percentiles reported when none are asked for.
pub const DEFAULT_PERCENTILES: &str = "50,90,95,99,99.9,99.99";

impl Percentile {
    /// Parses `99.9`; the value must lie in [0, 100].
    pub fn parse(text: &str) -> Result<Percentile, String> {
        let text = text.trim();
        let decimal = Decimal::parse(text).ok_or_else(|| {
            format!("'{text}' is not a percentile; expected a number from 0 to 100 such as 99.9")
        })?;
        if decimal.scale > 12 {
            return Err(format!(
                "'{text}' has more than 12 decimals; no sample could tell them apart"
            ));
        }
        let denominator = 100u128 * 10u128.pow(decimal.scale);
        if decimal.digits > denominator {
            return Err(format!(
                "'{text}' is above 100; a percentile lies in 0..100"
            ));
        }
        Ok(Percentile {
            key: normalize_key(text),
            numerator: decimal.digits,
            denominator,
        })
    }

    /// Parses a comma-separated list such as `50,99,99.9`.
    pub fn parse_list(text: &str) -> Result<Vec<Percentile>, String> {
        let list: Vec<Percentile> = text
            .split(',')
            .filter(|s| !s.trim().is_empty())
            .map(Percentile::parse)
            .collect::<Result<_, _>>()?;
        if list.is_empty() {
            return Err(format!(
                "'{text}' lists no percentile; expected e.g. 50,99,99.9"
            ));
        }
        Ok(list)
    }

    /// The default list.
    pub fn defaults() -> Vec<Percentile> {
        Percentile::parse_list(DEFAULT_PERCENTILES).unwrap_or_default()
    }

    /// The quantile q in [0, 1].
    pub fn quantile(&self) -> f64 {
        self.numerator as f64 / self.denominator as f64
    }

    /// The 1-based rank ⌈q·n⌉ of this percentile among `n` values, at least 1.
    pub fn rank(&self, n: u64) -> u64 {
        rank_of(n, self.numerator, self.denominator)
    }
}

/// `"99.90"` → `"99.9"`, `"050"` → `"50"`, `"100.0"` → `"100"`.
fn normalize_key(text: &str) -> String {
    let (int, frac) = text.split_once('.').unwrap_or((text, ""));
    let int = int.trim_start_matches('0');
    let int = if int.is_empty() { "0" } else { int };
    let frac = frac.trim_end_matches('0');
    if frac.is_empty() {
        int.to_string()
    } else {
        format!("{int}.{frac}")
    }
}

/// The values of percentiles, in the order given.
pub fn percentile_values(hist: &LatencyHistogram, percentiles: &[Percentile]) -> Vec<u64> {
    let n = hist.count();
    let ranks: Vec<u64> = percentiles.iter().map(|p| p.rank(n)).collect();
    values_at_ranks(hist, &ranks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn exact(sorted: &[u64], p: &Percentile) -> u64 {
        sorted[(p.rank(sorted.len() as u64) - 1) as usize]
    }

    #[test]
    fn keys_lose_trailing_zeros() {
        assert_eq!(Percentile::parse("99.90").unwrap().key, "99.9");
        assert_eq!(Percentile::parse("050").unwrap().key, "50");
        assert_eq!(Percentile::parse("100.0").unwrap().key, "100");
        assert_eq!(Percentile::parse("0").unwrap().key, "0");
        assert_eq!(Percentile::parse("99.999").unwrap().key, "99.999");
    }

    #[test]
    fn bad_percentiles_are_refused() {
        for bad in ["", "abc", "100.01", "-1", "1e2", "99,9x"] {
            assert!(Percentile::parse_list(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn ranks_use_integer_arithmetic() {
        let p999 = Percentile::parse("99.9").unwrap();
        assert_eq!(p999.rank(1_000), 999);
        assert_eq!(p999.rank(1_001), 1_000);
        let p50 = Percentile::parse("50").unwrap();
        assert_eq!(p50.rank(4), 2);
        assert_eq!(p50.rank(5), 3);
        assert_eq!(Percentile::parse("0").unwrap().rank(10), 1);
        assert_eq!(Percentile::parse("100").unwrap().rank(10), 10);
        assert_eq!(Percentile::parse("99.99").unwrap().rank(121_334), 121_322);
    }

    #[test]
    fn one_to_a_thousand() {
        let mut h = LatencyHistogram::new();
        (1..=1000).for_each(|v| h.record(v));
        let ps = Percentile::parse_list("0,50,90,99,99.9,100").unwrap();
        assert_eq!(
            percentile_values(&h, &ps),
            vec![1, 500, 900, 990, 999, 1000]
        );
    }

    #[test]
    fn empty_histogram_gives_zeros() {
        let h = LatencyHistogram::new();
        assert_eq!(percentile_values(&h, &Percentile::defaults()), vec![0; 6]);
    }

    proptest! {
        #[test]
        fn within_a_tenth_of_a_percent_of_the_exact_order_statistic(
            values in prop::collection::vec(0u64..5_000_000_000, 1..2_000),
            p in prop::sample::select(vec!["0", "1", "25", "50", "90", "95", "99", "99.9", "99.99", "100"]),
        ) {
            let mut h = LatencyHistogram::new();
            values.iter().for_each(|&v| h.record(v));
            let mut sorted = values.clone();
            sorted.sort_unstable();
            let p = Percentile::parse(p).unwrap();
            let got = percentile_values(&h, std::slice::from_ref(&p))[0];
            let want = exact(&sorted, &p);
            let tolerance = (want as f64 * 0.001).max(1.0);
            prop_assert!(got >= want, "never below the order statistic: {got} < {want}");
            prop_assert!((got - want) as f64 <= tolerance, "{got} vs {want}");
        }
    }
}
