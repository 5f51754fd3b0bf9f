//! The lab's progress line on a terminal: the step, its elapsed time and
//! the live p50/p99 of its latest interval, read from the interval log the
//! probe streams (`--hlog`), so no probe needs a progress hook.

use std::io::{IsTerminal, Write};
use std::path::Path;

use crate::units::format_ns;

/// Draws one status line on stderr, rewritten in place; silent when stderr
/// is not a terminal (logs get one line per step instead).
pub struct Progress {
    tty: bool,
    drawn: bool,
}

impl Progress {
    /// Progress on stderr.
    pub fn new() -> Self {
        Progress {
            tty: std::io::stderr().is_terminal(),
            drawn: false,
        }
    }

    /// Whether a live line is drawn.
    pub fn live(&self) -> bool {
        self.tty
    }

    /// Redraws the line for a running step.
    pub fn update(
        &mut self,
        position: &str,
        title: &str,
        elapsed_s: f64,
        seconds: u64,
        hlog: &Path,
    ) {
        if !self.tty {
            return;
        }
        let live = latest_percentiles(hlog)
            .map(|(tag, p50, p99)| {
                format!(
                    "  {tag} p50 {} p99 {}",
                    format_ns(p50 as f64),
                    format_ns(p99 as f64)
                )
            })
            .unwrap_or_default();
        let clock = if seconds > 0 {
            format!("{:.0}/{seconds} s", elapsed_s.min(seconds as f64))
        } else {
            format!("{elapsed_s:.0} s")
        };
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{position} {title}  {clock}{live}");
        let _ = err.flush();
        self.drawn = true;
    }

    /// Clears the live line so ordinary output can follow.
    pub fn clear(&mut self) {
        if self.drawn {
            let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
            self.drawn = false;
        }
    }
}

/// The tag, p50 and p99 of the last complete interval in an interval log:
/// of its main series (the untagged lines, named in the header), or in a
/// log without one, of the last tagged series other than the control
/// thread's `self` (the probe's own series is what the user watches).
pub fn latest_percentiles(hlog: &Path) -> Option<(String, u64, u64)> {
    use crate::formats::hlog_comments::main_tag_in;
    let text = std::fs::read_to_string(hlog).ok()?;
    let main = text.lines().find_map(main_tag_in);
    let complete = || {
        text.lines()
            .rev()
            .skip(usize::from(!text.ends_with('\n')))
            .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('"'))
    };
    let (tag, rest) = match main {
        Some(main) => (main, complete().find(|l| !l.starts_with("Tag="))?),
        None => complete()
            .find(|l| l.starts_with("Tag=") && !l.starts_with("Tag=self,"))?
            .strip_prefix("Tag=")?
            .split_once(',')?,
    };
    let encoded = rest.rsplit(',').next()?;
    let hist = crate::model::encoding::decode(encoded).ok()?;
    (!hist.is_empty()).then(|| {
        (
            tag.to_string(),
            hist.value_at_quantile(0.5),
            hist.value_at_quantile(0.99),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::IntervalRecord;
    use crate::record::LatencyHistogram;

    #[test]
    fn the_last_complete_probe_interval_is_shown() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.hlog");
        let interval = |values: &[u64]| {
            let mut hist = LatencyHistogram::new();
            values.iter().for_each(|&v| hist.record(v));
            IntervalRecord::from_histogram(0, 1_000_000_000, &hist)
        };
        use crate::formats::export::hlog::{header_without_start, interval_line};
        let wanted: Vec<u64> = (1..=100).map(|i| i * 1_000).collect();
        // As cauda writes it: the main series untagged.
        let mut text = header_without_start(Some("rtt"));
        text += &interval_line(None, &interval(&[10_000; 100]));
        text += &interval_line(None, &interval(&wanted));
        text += &interval_line(Some("self"), &interval(&[9_999_999]));
        std::fs::write(&path, format!("{text}2.0,1.0,0.1,HISTF")).unwrap();
        let (tag, p50, p99) = latest_percentiles(&path).unwrap();
        assert_eq!(tag, "rtt");
        assert!((49_900..=50_100).contains(&p50), "{p50}");
        assert!((98_900..=99_100).contains(&p99), "{p99}");
        // As cauda wrote it before: every series tagged.
        let mut text = header_without_start(None);
        text += &interval_line(Some("rtt"), &interval(&wanted));
        text += &interval_line(Some("self"), &interval(&[9_999_999]));
        std::fs::write(&path, format!("{text}Tag=rtt,2.0,1.0,0.1,HISTF")).unwrap();
        let (tag, p50, _) = latest_percentiles(&path).unwrap();
        assert_eq!(tag, "rtt");
        assert!((49_900..=50_100).contains(&p50), "{p50}");
        assert!(latest_percentiles(&dir.path().join("missing.hlog")).is_none());
    }
}
