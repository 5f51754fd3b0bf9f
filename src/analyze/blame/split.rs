//! A split of slow operations' time by cause: blame vectors added up,
//! what their keys leave of each latency counted as `unexplained`, and the
//! causes ranked with their details (`softirq.NET_RX`) under them.
//!
//! Shares are of the slow operations' latencies added up, so a split's
//! shares add up to 100 % and nothing is hidden; `page_fault` is a count,
//! kept apart (its time is inside `running`).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::model::blame::{CAUSES, IntervalBlame, SlowOperation, cause_of};

/// The cause whose key is a count, not time.
const COUNTED: &str = "page_fault";
/// The cause that takes what the other keys leave of a latency.
const UNEXPLAINED: &str = "unexplained";

/// One detail of a cause (`softirq.NET_RX`) and its time.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DetailShare {
    /// The whole key, `softirq.NET_RX`.
    pub key: String,
    /// The time, ns.
    pub ns: u64,
    /// Its share of the slow operations' time (not of its cause's), 0–1.
    pub share: f64,
}

/// One cause's time in the slow operations.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CauseShare {
    /// The cause, one of `model::blame::CAUSES` (never `page_fault`).
    pub cause: String,
    /// Its time, details included, ns.
    pub ns: u64,
    /// Its share of the slow operations' time, 0–1.
    pub share: f64,
    /// Its details, largest first (absent when the kernel gave none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<DetailShare>,
}

/// Slow operations' time split by cause.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Split {
    /// How many operations were slow.
    pub slow: u64,
    /// Their latencies added up, ns.
    pub latency_ns: u64,
    /// Time per cause, largest first (ties in `CAUSES` order); the shares
    /// add up to 1 when `latency_ns` is not 0.
    pub causes: Vec<CauseShare>,
    /// Page faults they took (a count; their time is inside `running`).
    pub page_faults: u64,
}

impl Split {
    /// The largest cause and its share, if any time was blamed.
    pub fn top(&self) -> Option<(&str, f64)> {
        self.causes.first().map(|c| (c.cause.as_str(), c.share))
    }

    /// The share of one cause (0 when it took no time).
    pub fn share_of(&self, cause: &str) -> f64 {
        self.causes
            .iter()
            .find(|c| c.cause == cause)
            .map_or(0.0, |c| c.share)
    }
}

/// Adds up vectors — (slow operations, their latency, their causes) —
/// into a [`Split`]: each vector's time keys, and what they leave of its
/// latency as `unexplained`.
pub fn split<'a>(
    vectors: impl IntoIterator<Item = (u64, u64, &'a BTreeMap<String, u64>)>,
) -> Split {
    let mut slow = 0u64;
    let mut latency_ns = 0u64;
    let mut page_faults = 0u64;
    let mut keys: BTreeMap<&str, u64> = BTreeMap::new();
    for (count, latency, causes) in vectors {
        slow = slow.saturating_add(count);
        latency_ns = latency_ns.saturating_add(latency);
        let mut timed = 0u64;
        for (key, &ns) in causes {
            if cause_of(key) == COUNTED {
                page_faults = page_faults.saturating_add(ns);
                continue;
            }
            timed = timed.saturating_add(ns);
            let at = keys.entry(key.as_str()).or_default();
            *at = at.saturating_add(ns);
        }
        let rest = latency.saturating_sub(timed);
        if rest > 0 {
            let at = keys.entry(UNEXPLAINED).or_default();
            *at = at.saturating_add(rest);
        }
    }
    Split {
        slow,
        latency_ns,
        causes: shares(&keys, latency_ns),
        page_faults,
    }
}

/// Groups keys by cause, each with its details, as shares of `total_ns`.
fn shares(keys: &BTreeMap<&str, u64>, total_ns: u64) -> Vec<CauseShare> {
    let of = |ns: u64| {
        if total_ns == 0 {
            0.0
        } else {
            ns as f64 / total_ns as f64
        }
    };
    let mut causes: Vec<CauseShare> = Vec::new();
    for (&key, &ns) in keys.iter().filter(|(_, ns)| **ns > 0) {
        let cause = cause_of(key);
        let at = match causes.iter().position(|c| c.cause == cause) {
            Some(at) => at,
            None => {
                causes.push(CauseShare {
                    cause: cause.to_string(),
                    ns: 0,
                    share: 0.0,
                    details: Vec::new(),
                });
                causes.len() - 1
            }
        };
        let entry = &mut causes[at];
        entry.ns = entry.ns.saturating_add(ns);
        if key.len() > cause.len() {
            entry.details.push(DetailShare {
                key: key.to_string(),
                ns,
                share: of(ns),
            });
        }
    }
    let rank = |cause: &str| {
        CAUSES
            .iter()
            .position(|c| *c == cause)
            .unwrap_or(CAUSES.len())
    };
    for c in &mut causes {
        c.share = of(c.ns);
        c.details
            .sort_by(|a, b| b.ns.cmp(&a.ns).then_with(|| a.key.cmp(&b.key)));
    }
    causes.sort_by(|a, b| {
        b.ns.cmp(&a.ns)
            .then_with(|| rank(&a.cause).cmp(&rank(&b.cause)))
    });
    causes
}

/// The split of some intervals' totals.
pub fn interval_split<'a>(intervals: impl IntoIterator<Item = &'a IntervalBlame>) -> Split {
    split(
        intervals
            .into_iter()
            .map(|iv| (iv.slow, iv.latency_ns, &iv.causes)),
    )
}

/// The split of some slow operations kept whole (their page faults from
/// the operation's own count where the vector has none).
pub fn operation_split<'a>(ops: impl IntoIterator<Item = &'a SlowOperation>) -> Split {
    let ops: Vec<&SlowOperation> = ops.into_iter().collect();
    let mut whole = split(ops.iter().map(|op| (1, op.latency_ns, &op.causes)));
    let counted: u64 = ops
        .iter()
        .filter(|op| !op.causes.keys().any(|k| cause_of(k) == COUNTED))
        .map(|op| op.page_faults)
        .sum();
    whole.page_faults = whole.page_faults.saturating_add(counted);
    whole
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn a_whole_vector_leaves_nothing_unexplained_and_nothing_splits_nothing() {
        let whole = keys(&[("run_queue", 700), ("irq.eth0", 300)]);
        let s = split([(1, 1_000, &whole)]);
        assert!(s.causes.iter().all(|c| c.cause != "unexplained"), "{s:?}");
        let empty = split(std::iter::empty());
        assert_eq!((empty.slow, empty.causes.len(), empty.top()), (0, 0, None));
        // A latency no key explains is all unexplained.
        let bare = BTreeMap::new();
        assert_eq!(split([(1, 500, &bare)]).top(), Some(("unexplained", 1.0)));
    }
}
