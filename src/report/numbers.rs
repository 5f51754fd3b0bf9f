//! Numbers for people, shared by every table: digits grouped in
//! thousands, shares as percentages, seconds without a needless decimal.

/// Groups digits in thousands: 121334 → "121,334".
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Formats a share as a percentage with sensible precision.
pub fn percent(share: f64) -> String {
    let p = share * 100.0;
    if p >= 10.0 {
        format!("{p:.0} %")
    } else if p >= 1.0 {
        format!("{p:.1} %")
    } else {
        format!("{p:.2} %")
    }
}

/// Seconds with a decimal only when needed: `13`, `1.5`.
pub fn seconds(s: f64) -> String {
    if (s - s.round()).abs() < 1e-9 {
        format!("{s:.0}")
    } else {
        format!("{s:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(121_334), "121,334");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn shares_keep_two_significant_digits_when_small() {
        assert_eq!(percent(0.859375), "86 %");
        assert_eq!(percent(0.0876), "8.8 %");
        assert_eq!(percent(0.0015625), "0.16 %");
    }
}
