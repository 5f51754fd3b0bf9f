//! Writing HdrHistogram interval logs (`.hlog`), the format Java
//! HdrHistogram's `HistogramLogWriter`, jHiccup and HdrHistogram_py use.
//!
//! Layout (log format 1.3): a version comment, `#[StartTime: …]` and
//! `#[BaseTime: …]` lines, the CSV legend, then one line per interval:
//! `Tag=TAG,START_S,LENGTH_S,MAX_MS,HISTOGRAM` with times in seconds since
//! the start, the max in milliseconds (the writer's default
//! `maxValueUnitRatio` of 10⁶ for nanosecond values) and the histogram in V2
//! deflate base64. Lines are flushed as each interval completes.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::model::IntervalRecord;

/// The first line of every log cauda writes; [`is_cauda_hlog`] looks for it.
pub const CAUDA_HLOG_MARK: &str = "#[Written by cauda";

/// A streaming interval-log writer.
#[derive(Debug)]
pub struct HlogWriter {
    out: BufWriter<File>,
    path: PathBuf,
}

/// Formats the header lines for a log started at `start_unix_ns`.
pub fn header(start_unix_ns: u128, start_rfc3339: &str) -> String {
    let seconds = start_unix_ns as f64 / 1e9;
    format!(
        "{CAUDA_HLOG_MARK} {}]\n\
         #[Histogram log format version 1.3]\n\
         #[StartTime: {seconds:.3} (seconds since epoch), {start_rfc3339}]\n\
         #[BaseTime: {seconds:.3} (seconds since epoch)]\n\
         \"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n",
        env!("CARGO_PKG_VERSION"),
    )
}

/// Formats one interval line.
pub fn interval_line(tag: &str, interval: &IntervalRecord) -> String {
    format!(
        "Tag={tag},{:.3},{:.3},{:.3},{}\n",
        interval.start_ns as f64 / 1e9,
        interval.length_ns as f64 / 1e9,
        interval.max as f64 / 1e6,
        interval.histogram
    )
}

/// True when the file at `path` begins with cauda's mark.
pub fn is_cauda_hlog(path: &Path) -> bool {
    std::fs::read(path)
        .map(|bytes| bytes.starts_with(CAUDA_HLOG_MARK.as_bytes()))
        .unwrap_or(false)
}

impl HlogWriter {
    /// Creates (or truncates) the log and writes its header.
    pub fn create(path: &Path, start_unix_ns: u128, start_rfc3339: &str) -> anyhow::Result<Self> {
        let file = File::create(path)
            .with_context(|| format!("cannot create the interval log {}", path.display()))?;
        let mut writer = HlogWriter {
            out: BufWriter::new(file),
            path: path.to_path_buf(),
        };
        writer
            .out
            .write_all(header(start_unix_ns, start_rfc3339).as_bytes())
            .with_context(|| writer.describe())?;
        writer.flush()?;
        Ok(writer)
    }

    fn describe(&self) -> String {
        format!("cannot write the interval log {}", self.path.display())
    }

    /// Appends one interval of one series.
    pub fn write_interval(&mut self, tag: &str, interval: &IntervalRecord) -> anyhow::Result<()> {
        self.out
            .write_all(interval_line(tag, interval).as_bytes())
            .with_context(|| self.describe())
    }

    /// Hands what was written to the kernel, so a killed run keeps it.
    pub fn flush(&mut self) -> anyhow::Result<()> {
        self.out.flush().with_context(|| self.describe())
    }
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
        let line = interval_line("wakeup", &record);
        assert!(
            line.starts_with("Tag=wakeup,0.127,1.000,1.007,HISTF"),
            "{line}"
        );
        let head = header(1_441_812_279_474_000_000, "2015-09-09T15:24:39Z");
        assert!(
            head.contains(
                "#[StartTime: 1441812279.474 (seconds since epoch), 2015-09-09T15:24:39Z]"
            )
        );
        assert!(head.contains("#[Histogram log format version 1.3]"));
        assert!(head.ends_with("\"Interval_Compressed_Histogram\"\n"));
    }
}
