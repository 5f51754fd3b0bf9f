//! Writing HdrHistogram interval logs (`.hlog`), the format Java
//! HdrHistogram's `HistogramLogWriter`, jHiccup and HdrHistogram_py use:
//! streamed by a probe as each interval completes ([`HlogWriter`]), or made
//! at once from loaded inputs ([`to_hlog`], `cauda convert --to hlog`).
//! Reading them back is [`crate::formats::import::hlog`]'s.
//!
//! Layout cauda writes (log format 1.3): a version comment, `#[StartTime: …]`
//! and `#[BaseTime: …]` lines, a `#[cauda main series: TAG]` comment, the
//! CSV legend, then one line per series per interval:
//! `[Tag=TAG,]START_S,LENGTH_S,MAX_MS,HISTOGRAM` with times in seconds since
//! the start, the max in milliseconds (the writer's default
//! `maxValueUnitRatio` of 10⁶ for nanosecond values) and the histogram in V2
//! deflate base64. Lines are flushed as each interval completes.
//!
//! The run's **main series** (its first, never the `self` control series) is
//! written **untagged** and every other series with `Tag=NAME`, so the tools
//! that read only untagged lines unless told a tag — Java's
//! `HistogramLogProcessor -i run.hlog`, HdrHistogram_py's reader — see the
//! main series without `-tag`. The comment names it for cauda's own reader
//! (Java's `HistogramLogScanner` and HdrHistogram_py skip any `#` line they
//! do not know); in a log without it, untagged lines form the series `default`.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::inputs::{common_labels, gather, start_of};
use crate::formats::hlog_comments::{CAUDA_HLOG_MARK, MAIN_SERIES_COMMENT, main_tag};
use crate::model::{IntervalRecord, Loaded};

/// A streaming interval-log writer.
#[derive(Debug)]
pub struct HlogWriter {
    out: BufWriter<File>,
    path: PathBuf,
    /// The series written untagged.
    main: Option<String>,
}

/// The legend line.
const LEGEND: &str =
    "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n";

fn main_comment(main: Option<&str>) -> String {
    main.map_or_else(String::new, |tag| format!("{MAIN_SERIES_COMMENT}{tag}]\n"))
}

/// The comment carrying a run's `--label`s (`#[cauda labels: host=a1,zone=eu-1]`),
/// empty without labels; HdrHistogram readers skip it as a comment.
pub fn labels_comment(labels: &std::collections::BTreeMap<String, String>) -> String {
    if labels.is_empty() {
        return String::new();
    }
    let pairs: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("#[cauda labels: {}]\n", pairs.join(","))
}

/// Formats the header lines for a log started at `start_unix_ns` whose
/// untagged lines are the series `main`.
pub fn header(start_unix_ns: u128, start_rfc3339: &str, main: Option<&str>) -> String {
    let seconds = start_unix_ns as f64 / 1e9;
    format!(
        "{CAUDA_HLOG_MARK} {}]\n\
         #[Histogram log format version 1.3]\n\
         #[StartTime: {seconds:.3} (seconds since epoch), {start_rfc3339}]\n\
         #[BaseTime: {seconds:.3} (seconds since epoch)]\n\
         {}{LEGEND}",
        env!("CARGO_PKG_VERSION"),
        main_comment(main),
    )
}

/// Header lines for a log whose wall-clock start is unknown.
pub fn header_without_start(main: Option<&str>) -> String {
    format!(
        "{CAUDA_HLOG_MARK} {}]\n\
         #[Histogram log format version 1.3]\n\
         {}{LEGEND}",
        env!("CARGO_PKG_VERSION"),
        main_comment(main),
    )
}

/// Formats one interval line, untagged when `tag` is `None` (the main series).
pub fn interval_line(tag: Option<&str>, interval: &IntervalRecord) -> String {
    let prefix = tag.map_or_else(String::new, |tag| format!("Tag={tag},"));
    format!(
        "{prefix}{:.3},{:.3},{:.3},{}\n",
        interval.start_ns as f64 / 1e9,
        interval.length_ns as f64 / 1e9,
        interval.max as f64 / 1e6,
        interval.histogram.encoded()
    )
}

impl HlogWriter {
    /// Refuses a log name that cannot be streamed (`.gz`).
    pub fn check_name(path: &Path) -> anyhow::Result<()> {
        if path.extension().is_some_and(|e| e == "gz") {
            return Err(crate::error::input_error(format!(
                "--hlog {}: the interval log is streamed as plain text while the run goes on; \
                 name it .hlog and compress it afterwards",
                path.display()
            )));
        }
        Ok(())
    }

    /// Starts the log in `file` (opened empty at `path`) with its header;
    /// the series `main` will be written untagged.
    pub fn start(
        file: File,
        path: &Path,
        start_unix_ns: u128,
        start_rfc3339: &str,
        main: Option<&str>,
        labels: &std::collections::BTreeMap<String, String>,
    ) -> anyhow::Result<Self> {
        Self::check_name(path)?;
        let mut writer = HlogWriter {
            out: BufWriter::new(file),
            path: path.to_path_buf(),
            main: main.map(str::to_string),
        };
        writer
            .out
            .write_all(
                (header(start_unix_ns, start_rfc3339, main) + &labels_comment(labels)).as_bytes(),
            )
            .with_context(|| writer.describe())?;
        writer.flush()?;
        Ok(writer)
    }

    fn describe(&self) -> String {
        format!("cannot write the interval log {}", self.path.display())
    }

    /// Appends one interval of one series (untagged for the main series).
    pub fn write_interval(&mut self, tag: &str, interval: &IntervalRecord) -> anyhow::Result<()> {
        let tag = (self.main.as_deref() != Some(tag)).then_some(tag);
        self.out
            .write_all(interval_line(tag, interval).as_bytes())
            .with_context(|| self.describe())
    }

    /// Hands what was written to the kernel, so a killed run keeps it.
    pub fn flush(&mut self) -> anyhow::Result<()> {
        self.out.flush().with_context(|| self.describe())
    }
}

/// Refuses a tag an interval log cannot carry so that cauda reads it back
/// as it was: a `,` (it ends the tag of a `Tag=NAME,…` line) or a control
/// character (a newline ends the line).
fn check_tag(tag: &str) -> anyhow::Result<()> {
    let refuse = |why: &str| {
        Err(crate::error::input_error(format!(
            "series tag '{}' cannot be written to an .hlog: {why}, so the log would not read \
             back as this series; rename the series (e.g. with jq) or convert to json",
            tag.escape_debug()
        )))
    };
    if tag.contains(',') {
        return refuse("a ',' ends the tag of a Tag=NAME,… line");
    }
    if tag.chars().any(char::is_control) {
        return refuse("a control character breaks the line");
    }
    Ok(())
}

/// Writes an interval log of every series; a tag the log cannot carry
/// (`check_tag`) or a histogram that does not decode is refused.
pub fn to_hlog(inputs: &[Loaded]) -> anyhow::Result<Vec<u8>> {
    let series = gather(inputs);
    series.iter().try_for_each(|s| check_tag(&s.tag))?;
    // The main series is written untagged, as a probe's streamed log does.
    let main = main_tag(series.iter().map(|s| s.tag.as_str()));
    let mut out = match start_of(inputs) {
        Some((ns, text)) => header(ns, &text, main),
        None => header_without_start(main),
    };
    out.push_str(&labels_comment(&common_labels(inputs)));
    // Interleave by time, as a live log would be.
    let mut lines: Vec<(u64, usize, String)> = Vec::new();
    let mut pairs = Vec::new();
    for (k, s) in series.iter().enumerate() {
        let tag = (Some(s.tag.as_str()) != main).then_some(s.tag.as_str());
        for (i, iv) in s.intervals.iter().enumerate() {
            // A line whose histogram does not decode is never written.
            iv.bucket_indexes_into(&mut pairs).map_err(|why| {
                crate::error::input_error(format!("series '{}', interval {i}: {why}", s.tag))
            })?;
            lines.push((iv.start_ns, k, interval_line(tag, iv)));
        }
    }
    lines.sort_by_key(|(start, k, _)| (*start, *k));
    for (_, _, line) in lines {
        out.push_str(&line);
    }
    Ok(out.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::LatencyHistogram;

    #[test]
    fn lines_follow_the_java_layout() {
        let mut h = LatencyHistogram::new();
        h.record(1_007_000);
        let record = IntervalRecord::from_histogram(127_000_000, 1_000_000_000, &h);
        let line = interval_line(Some("wakeup"), &record);
        assert!(
            line.starts_with("Tag=wakeup,0.127,1.000,1.007,HISTF"),
            "{line}"
        );
        let line = interval_line(None, &record);
        assert!(line.starts_with("0.127,1.000,1.007,HISTF"), "{line}");
        let head = header(
            1_441_812_279_474_000_000,
            "2015-09-09T15:24:39Z",
            Some("wakeup"),
        );
        assert!(head.contains("\n#[cauda main series: wakeup]\n"), "{head}");
        assert!(
            head.contains(
                "#[StartTime: 1441812279.474 (seconds since epoch), 2015-09-09T15:24:39Z]"
            )
        );
        assert!(head.contains("#[Histogram log format version 1.3]"));
        assert!(head.ends_with("\"Interval_Compressed_Histogram\"\n"));
    }
}
