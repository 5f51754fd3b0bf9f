//! `cauda convert --to hgrm`: HdrHistogram's percentile distribution of
//! each merged series, in the `outputPercentileDistribution` layout, after
//! a `#[cauda labels: …]` comment when the inputs share `--label`s.

use std::fmt::Write;

use anyhow::Result;

use super::hlog::labels_comment;
use super::inputs::{common_labels, gather};
use crate::error::input_error;
use crate::model::Loaded;
use crate::units::TimeUnit;

/// Writes the percentile distribution of each series, values in `unit`.
pub fn to_hgrm(inputs: &[Loaded], unit: TimeUnit) -> Result<Vec<u8>> {
    let scale = unit.nanos() as f64;
    // The labels the inputs share, as in an interval log (readers skip it).
    let mut out = labels_comment(&common_labels(inputs));
    for s in gather(inputs) {
        let merged = s.merged().map_err(input_error)?;
        let hdr = merged.hdr();
        let _ = writeln!(out, "#[Tag: {}, unit: {}]", s.tag, unit.symbol());
        let _ = writeln!(
            out,
            "{:>12} {:>14} {:>10} {:>14}\n",
            "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
        );
        let mut total = 0u64;
        for v in hdr.iter_quantiles(5) {
            total += v.count_since_last_iteration();
            let q = v.quantile_iterated_to();
            let value = hdr
                .highest_equivalent(v.value_iterated_to())
                .min(merged.stats().max);
            if q < 1.0 {
                let _ = writeln!(
                    out,
                    "{:>12.3} {:>2.12} {:>10} {:>14.2}",
                    value as f64 / scale,
                    q,
                    total,
                    1.0 / (1.0 - q)
                );
            } else {
                let _ = writeln!(
                    out,
                    "{:>12.3} {:>2.12} {:>10}",
                    value as f64 / scale,
                    q,
                    hdr.len()
                );
            }
        }
        let stats = merged.stats();
        let _ = writeln!(
            out,
            "#[Mean    = {:>12.3}, StdDeviation   = {:>12.3}]",
            stats.mean() / scale,
            hdr.stdev() / scale
        );
        let _ = writeln!(
            out,
            "#[Max     = {:>12.3}, Total count    = {:>12}]",
            stats.max as f64 / scale,
            stats.count
        );
        let _ = writeln!(
            out,
            "#[Buckets = {:>12}, SubBuckets     = {:>12}]",
            hdr.buckets(),
            // HdrHistogram's sub-bucket count: 2·10^digits rounded up to a power of two.
            (2 * 10u64.pow(u32::from(hdr.sigfig()))).next_power_of_two()
        );
    }
    Ok(out.into_bytes())
}
