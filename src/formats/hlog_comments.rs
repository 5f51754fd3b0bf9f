//! The lines cauda adds to an HdrHistogram interval log (`.hlog`) beyond
//! the format's own: the mark its writer opens every log with and the
//! comment naming the series its untagged lines hold. The writer
//! ([`super::export::hlog`]) writes them, the reader
//! ([`super::import::hlog`]) and the lab's progress read them back; Java's
//! `HistogramLogScanner` and HdrHistogram_py skip them as comments.

/// The first line of every log cauda writes; `output` looks for it before
/// overwriting a log.
pub const CAUDA_HLOG_MARK: &str = "#[Written by cauda";

/// The comment naming the series of the untagged lines.
pub const MAIN_SERIES_COMMENT: &str = "#[cauda main series: ";

/// The series a log writes untagged: the first that is not the `self`
/// control series.
pub fn main_tag<'a>(tags: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    tags.into_iter().find(|t| *t != crate::model::CONTROL_TAG)
}

/// The main series a header comment names (`#[cauda main series: TAG]`).
pub fn main_tag_in(line: &str) -> Option<&str> {
    line.trim()
        .strip_prefix(MAIN_SERIES_COMMENT)?
        .strip_suffix(']')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_main_series_is_named_and_found_again() {
        assert_eq!(main_tag_in("#[cauda main series: wakeup]"), Some("wakeup"));
        assert_eq!(main_tag(["self", "read", "write"]), Some("read"));
    }
}
