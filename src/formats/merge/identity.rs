//! Which run an input holds, by its content, so that a merge recognises
//! the same run however it is named — a copy, a hard link, another
//! relative path, a file re-indented or relabelled by jq.
//!
//! **The same run** is the same wall-clock start (or none), the same
//! `--label`s, and the same series — tag by tag, interval by interval, the
//! same start, length, count, min, max, sum, clamped values and histogram
//! (and, for a percentiles-only series, the same printed figures). File
//! names, formatting, host and parameters do not count: a copy is the same
//! run wherever it lies; two runs with other labels are two runs, so
//! deliberately identical data (a benchmark's synthetic hosts) is merged
//! by labelling each. A run's id is a 64-bit FNV-1a-style hash of those
//! fields (the histograms' text through CRC-32 first), `run:` and 16 hex digits,
//! stable across cauda versions; a merge
//! records, for each input, its id and those of the runs it holds
//! (`parameters.inputs[].runs`), so a merged run given beside one of its
//! inputs is known by content, wherever either lies.

use crate::model::{Loaded, Series};

/// FNV-1a's step (xor, then multiply by its 64-bit prime) over 64-bit
/// little-endian words rather than bytes, eight times fewer multiplies:
/// small and fixed here, so ids written by one cauda are those another
/// computes.
struct Fnv(u64);

impl Fnv {
    fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    fn word(&mut self, word: u64) {
        self.0 = (self.0 ^ word).wrapping_mul(0x0000_0100_0000_01b3);
    }

    /// A field of variable length: its length first, so that fields never
    /// run into each other, then its bytes in words (the last padded with
    /// zeros).
    fn text(&mut self, text: &str) {
        self.word(text.len() as u64);
        for chunk in text.as_bytes().chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.word(u64::from_le_bytes(word));
        }
    }

    fn number(&mut self, n: impl Into<u128>) {
        let n: u128 = n.into();
        self.word(n as u64);
        self.word((n >> 64) as u64);
    }
}

/// The id of the run `input` holds (see the module's comment).
pub fn run_id(input: &Loaded) -> String {
    let mut h = Fnv::new();
    match input.run.as_ref() {
        Some(run) => {
            h.number(1u8);
            h.number(run.start_unix_ns);
            h.number(run.labels.len() as u64);
            for (key, value) in &run.labels {
                h.text(key);
                h.text(value);
            }
        }
        None => h.number(0u8),
    }
    for series in &input.series {
        add_series(&mut h, series);
    }
    format!("run:{:016x}", h.0)
}

fn add_series(h: &mut Fnv, series: &Series) {
    h.text(&series.tag);
    h.text(series.measured_from.name());
    h.number(series.intervals.len() as u64);
    // The histograms' text, most of the bytes, through CRC-32 (hardware
    // speed; FNV's byte loop took some 40 ms for a fleet's hour): its
    // value and each text's length join the hash.
    let mut texts = flate2::Crc::new();
    for i in &series.intervals {
        for n in [i.start_ns, i.length_ns, i.count, i.min, i.max, i.clamped] {
            h.number(n);
        }
        h.number(i.sum);
        let text = i.histogram.encoded();
        h.number(text.len() as u64);
        texts.update(text.as_bytes());
    }
    h.number(texts.sum());
    if let Some(reported) = &series.reported {
        h.text(&serde_json::to_string(reported).unwrap_or_default());
    }
}

/// The ids of the runs a merged input holds, as its merge recorded them
/// (`parameters.inputs[].runs`); empty for any other input, or a merge
/// written before ids were recorded.
pub fn held_ids(input: &Loaded) -> Vec<&str> {
    let Some(run) = input.run.as_ref().filter(|r| r.probe == "merge") else {
        return Vec::new();
    };
    let inputs = run.parameters["inputs"].as_array().into_iter().flatten();
    inputs
        .flat_map(|i| i["runs"].as_array().into_iter().flatten())
        .filter_map(|id| id.as_str())
        .collect()
}

/// The ids a merge records for `input`: its own, then those it holds.
pub fn recorded_ids(input: &Loaded) -> Vec<String> {
    let mut ids = vec![run_id(input)];
    for held in held_ids(input) {
        if !ids.iter().any(|id| id == held) {
            ids.push(held.to_string());
        }
    }
    ids
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Format, IntervalRecord, MeasuredFrom};
    use crate::record::LatencyHistogram;

    fn loaded(source: &str, values: &[u64]) -> Loaded {
        let mut s = Series::new("read".into(), MeasuredFrom::IntendedStart);
        let mut h = LatencyHistogram::new();
        values.iter().for_each(|&v| h.record(v));
        s.intervals
            .push(IntervalRecord::from_histogram(0, 1_000, &h));
        Loaded {
            source: source.into(),
            format: Format::CaudaRun,
            series: vec![s],
            run: None,
            warnings: Vec::new(),
        }
    }

    #[test]
    fn the_same_measurements_are_the_same_run_whatever_the_name() {
        let a = loaded("a.json", &[1, 2, 3]);
        assert_eq!(run_id(&a), run_id(&loaded("../x/copy.json", &[1, 2, 3])));
        assert_ne!(run_id(&a), run_id(&loaded("a.json", &[1, 2, 4])));
        let mut other_tag = loaded("a.json", &[1, 2, 3]);
        other_tag.series[0].tag = "write".into();
        assert_ne!(run_id(&a), run_id(&other_tag));
        let mut later = loaded("a.json", &[1, 2, 3]);
        later.series[0].intervals[0].start_ns = 1_000;
        assert_ne!(run_id(&a), run_id(&later));
        assert!(run_id(&a).starts_with("run:") && run_id(&a).len() == 20);
    }
}
