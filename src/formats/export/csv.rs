//! `cauda convert --to csv`: one row per series per interval (start,
//! length, count, min, p50, p90, p99, p99.9, max, mean), then a column per
//! label.

use std::fmt::Write;

use anyhow::Result;

use super::inputs::gather;
use super::labels::{label_columns, label_keys};
use crate::analyze::Percentile;
use crate::error::input_error;
use crate::model::Loaded;
use crate::record::rank::values_at_ranks_in;

/// A CSV field, quoted when it holds a comma, a quote or a line break.
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// Writes one CSV row per series per interval, with a column per label.
pub fn to_csv(inputs: &[Loaded]) -> Result<Vec<u8>> {
    const COLUMNS: &str =
        "series,start_s,length_s,count,min_ns,p50_ns,p90_ns,p99_ns,p99.9_ns,max_ns,mean_ns";
    // One more column per label key any input carries (`--label`), after
    // the fixed ones.
    let keys = label_keys(inputs);
    let fixed: Vec<&str> = COLUMNS.split(',').collect();
    let mut out = String::from(COLUMNS);
    for name in label_columns(&keys, &fixed) {
        let _ = write!(out, ",{}", csv_field(&name));
    }
    out.push('\n');
    // The label cells of each series, in `gather`'s order.
    let label_cells: Vec<String> = inputs
        .iter()
        .flat_map(|input| {
            let labels = input.run.as_ref().map(|r| &r.labels);
            let cells: String = keys
                .iter()
                .map(|k| {
                    format!(
                        ",{}",
                        csv_field(labels.and_then(|l| l.get(*k)).map_or("", |v| v))
                    )
                })
                .collect();
            std::iter::repeat_n(cells, input.series.len())
        })
        .collect();
    let ps = Percentile::parse_list("50,90,99,99.9").map_err(input_error)?;
    for (s, labels) in gather(inputs).into_iter().zip(label_cells) {
        for (i, iv) in s.intervals.iter().enumerate() {
            let entries = iv
                .entries()
                .map_err(|e| input_error(format!("series '{}', interval {i}: {e}", s.tag)))?;
            let stats = iv.stats();
            let ranks: Vec<u64> = ps.iter().map(|p| p.rank(stats.count)).collect();
            let v = values_at_ranks_in(entries.iter().copied(), &stats, &ranks);
            let tag = csv_field(&s.tag);
            let _ = writeln!(
                out,
                "{tag},{:.3},{:.3},{},{},{},{},{},{},{},{:.1}{labels}",
                iv.start_ns as f64 / 1e9,
                iv.length_ns as f64 / 1e9,
                stats.count,
                stats.min,
                v[0],
                v[1],
                v[2],
                v[3],
                stats.max,
                stats.mean()
            );
        }
    }
    Ok(out.into_bytes())
}
