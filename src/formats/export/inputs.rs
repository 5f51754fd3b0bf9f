//! What the exporters take from the loaded inputs: the check that each
//! has a distribution to write, their series gathered under distinct tags,
//! the first known start, and the labels they share.

use anyhow::Result;

use crate::error::input_error;
use crate::model::{Loaded, Series, Warning};

/// Refuses inputs that hold only percentiles a tool printed: they have no
/// distribution to write or merge.
pub fn require_distributions(inputs: &[Loaded]) -> Result<()> {
    for input in inputs {
        if let Some(s) = input
            .series
            .iter()
            .find(|s| s.reported.is_some() && s.intervals.is_empty())
        {
            return Err(input_error(format!(
                "{}: series '{}' holds only the percentiles its tool printed, not a distribution; \
                 convert or merge needs one (for fio, use --output-format=json+ or a latency log)",
                input.source, s.tag
            )));
        }
    }
    Ok(())
}

/// For an exporter that can leave a series out (Parquet): a warning for
/// each series that holds only the percentiles its tool printed (fio json+'s
/// slat and lat beside its clat histogram). An input with no distribution
/// at all is refused, as [`require_distributions`] does.
pub fn left_out(inputs: &[Loaded]) -> Result<Vec<Warning>> {
    let only_printed = |s: &Series| s.reported.is_some() && s.intervals.is_empty();
    let mut warnings = Vec::new();
    for input in inputs {
        if input.series.iter().all(only_printed) {
            require_distributions(std::slice::from_ref(input))?;
        }
        warnings.extend(input.series.iter().filter(|s| only_printed(s)).map(|s| {
            Warning {
                message: format!(
                    "{}: series '{}' holds only the percentiles its tool printed; it is left out",
                    input.source, s.tag
                ),
                advice: "a histogram or a per-value log has the distribution (for fio: \
                     write_lat_log, or json+ for clat)"
                    .into(),
            }
        }));
    }
    Ok(warnings)
}

/// Series of several inputs, tags kept unless they collide, in which case
/// each is prefixed with its input's position (`2:read`).
pub fn gather(inputs: &[Loaded]) -> Vec<Series> {
    let mut out: Vec<Series> = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        for series in &input.series {
            let mut s = series.clone();
            if out.iter().any(|o| o.tag == s.tag) {
                s.tag = format!("{}:{}", i + 1, s.tag);
            }
            out.push(s);
        }
    }
    out
}

/// The start of the first input that knows its wall-clock start.
pub(super) fn start_of(inputs: &[Loaded]) -> Option<(u128, String)> {
    inputs.iter().find_map(|i| {
        i.run
            .as_ref()
            .map(|r| (r.start_unix_ns, r.start_time.clone()))
    })
}

/// The labels every input carries with the same value (an input without a
/// run file carries none).
pub(super) fn common_labels(inputs: &[Loaded]) -> std::collections::BTreeMap<String, String> {
    let mut runs = inputs.iter().map(|i| i.run.as_ref());
    let Some(Some(first)) = runs.next() else {
        return Default::default();
    };
    let mut common = first.labels.clone();
    for run in runs {
        match run {
            Some(run) => common.retain(|k, v| run.labels.get(k) == Some(v)),
            None => common.clear(),
        }
    }
    common
}
