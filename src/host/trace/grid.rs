//! The run's interval grid, and a kernel series laid on it: the series
//! read from the kernel's slots line up with the probe's intervals.

use crate::model::{IntervalRecord, MeasuredFrom, Series};

/// The run's interval grid as (start, length): the probe's first series'
/// intervals, or with none, intervals of `interval_ns` from the start to
/// `elapsed_ns`, the last one partial, at least one (the collector's rule).
pub fn grid_of(first: Option<&Series>, elapsed_ns: u64, interval_ns: u64) -> Vec<(u64, u64)> {
    if let Some(series) = first {
        return series
            .intervals
            .iter()
            .map(|iv| (iv.start_ns, iv.length_ns))
            .collect();
    }
    let interval = interval_ns.max(1);
    let count = elapsed_ns.div_ceil(interval).max(1);
    (0..count)
        .map(|i| {
            let start = i * interval;
            (start, elapsed_ns.saturating_sub(start).clamp(1, interval))
        })
        .collect()
}

/// A kernel series on the run's grid of (start, length) intervals.
pub(super) fn on_grid(tag: &str, read: Vec<IntervalRecord>, grid: &[(u64, u64)]) -> Series {
    let mut series = Series::new(tag.into(), MeasuredFrom::ActualStart);
    let mut read = read.into_iter();
    for &(start_ns, length_ns) in grid {
        let mut record = read
            .next()
            .unwrap_or_else(|| IntervalRecord::empty(start_ns, length_ns));
        record.start_ns = start_ns;
        record.length_ns = length_ns;
        series.intervals.push(record);
    }
    series
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grid_ends_with_a_partial_interval() {
        assert_eq!(
            grid_of(None, 2_500, 1_000),
            vec![(0, 1_000), (1_000, 1_000), (2_000, 500)]
        );
        assert_eq!(grid_of(None, 0, 1_000), vec![(0, 1)]);
        assert_eq!(
            grid_of(None, 2_000, 1_000),
            vec![(0, 1_000), (1_000, 1_000)]
        );
    }
}
