//! The formats cauda reads, one row each: the format, its fuzz target, its
//! detection rule and its reader. Detection asks the rows in order and the
//! first whose rule holds wins, so a row sits below those whose inputs its
//! rule would also take (any JSON object is a run file once fio's and
//! cyclictest's have been ruled out; any text is plain numbers).
//!
//! A new format is its reader's file (with its `detect` and `import`), its
//! row here, and its `Format` variant; the fuzz harness (`fuzz/entry.rs`)
//! fuzzes every row by its target name.

use std::path::Path;

use anyhow::Result;

use super::head::Head;
use super::options::{Imported, ReadOptions};
use super::reader::Input;
use super::{cyclictest, fio, fio_lat, hgrm, hlog, numbers, runfile, sockperf};
use crate::model::Format;

/// A reader of a whole input, named `source` in its errors.
pub type Read = fn(&str, Input, &ReadOptions) -> Result<Imported>;

/// A faster reader of a plain file by its path; `None` when it cannot
/// (compressed, say) and the input is read as a stream instead.
pub type ReadFile = fn(&str, &Path, &ReadOptions) -> Result<Option<Imported>>;

/// One format cauda reads.
pub struct Importer {
    /// The format: its `--format` name, and its name in run files.
    pub format: Format,
    /// Its fuzz target: `fuzz/fuzz_targets/NAME.rs`, `fuzz/corpus/NAME/`.
    pub fuzz_target: &'static str,
    /// Whether the first bytes are this format's (asked in table order).
    pub detect: fn(&Head) -> bool,
    /// Reads the input.
    pub read: Read,
    /// Reads a plain file faster than [`Importer::read`], where it can.
    pub read_file: Option<ReadFile>,
}

/// Every format cauda reads, in the order detection asks them.
pub static IMPORTERS: [Importer; 10] = [
    Importer {
        format: Format::FioJson,
        fuzz_target: "fio_json",
        detect: fio::detect_json,
        read: fio::import_json,
        read_file: None,
    },
    Importer {
        format: Format::CyclictestJson,
        fuzz_target: "cyclictest_json",
        detect: cyclictest::detect_json,
        read: cyclictest::import_json,
        read_file: None,
    },
    Importer {
        format: Format::CaudaRun,
        fuzz_target: "runfile",
        detect: runfile::detect,
        read: runfile::import,
        read_file: None,
    },
    Importer {
        format: Format::Sockperf,
        fuzz_target: "sockperf",
        detect: sockperf::detect,
        read: sockperf::import,
        read_file: None,
    },
    Importer {
        format: Format::CyclictestHist,
        fuzz_target: "cyclictest_hist",
        detect: cyclictest::detect_text,
        read: cyclictest::import_text,
        read_file: None,
    },
    Importer {
        format: Format::Hgrm,
        fuzz_target: "hgrm",
        detect: hgrm::detect,
        read: hgrm::import,
        read_file: None,
    },
    Importer {
        format: Format::Hlog,
        fuzz_target: "hlog",
        detect: hlog::detect,
        read: hlog::import,
        read_file: None,
    },
    Importer {
        format: Format::FioHistLog,
        fuzz_target: "fio_hist",
        detect: fio::detect_hist_log,
        read: fio::import_hist_log,
        read_file: None,
    },
    Importer {
        format: Format::FioLatLog,
        fuzz_target: "fio_lat",
        detect: fio_lat::detect,
        read: fio_lat::import,
        read_file: Some(fio_lat::import_file),
    },
    Importer {
        format: Format::Numbers,
        fuzz_target: "numbers",
        detect: numbers::detect,
        read: numbers::import,
        read_file: None,
    },
];

/// The row of `format`.
pub fn importer(format: Format) -> &'static Importer {
    IMPORTERS
        .iter()
        .find(|i| i.format == format)
        .expect("every format has a row in IMPORTERS")
}

/// Detects a format from the first bytes of a (decompressed) file.
pub fn detect(source: &str, head: &[u8]) -> Result<Format> {
    let head = Head::of(source, head)?;
    let row = IMPORTERS.iter().find(|i| (i.detect)(&head));
    // The last row, plain numbers, takes any text.
    Ok(row.map_or(Format::Numbers, |i| i.format))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detection_by_content() {
        assert_eq!(detect("f", b"  {\"schema\"").unwrap(), Format::CaudaRun);
        assert_eq!(detect("f", b"12\n13\n").unwrap(), Format::Numbers);
        assert!(detect("f", b"").is_err());
        let err = detect("f", b"12\x00\x01").unwrap_err().to_string();
        assert!(err.contains("binary"), "{err}");
        let err = detect("f", b"\xff\xfe12").unwrap_err().to_string();
        assert!(err.contains("byte 0"), "{err}");
    }

    #[test]
    fn every_format_has_one_row_and_one_fuzz_target() {
        use clap::ValueEnum;
        for format in Format::value_variants() {
            let rows = IMPORTERS.iter().filter(|i| i.format == *format).count();
            assert_eq!(rows, 1, "{format:?} has {rows} rows");
        }
        let mut targets: Vec<_> = IMPORTERS.iter().map(|i| i.fuzz_target).collect();
        targets.sort_unstable();
        targets.dedup();
        assert_eq!(
            targets.len(),
            IMPORTERS.len(),
            "two rows share a fuzz target"
        );
        assert_eq!(IMPORTERS.last().map(|i| i.format), Some(Format::Numbers));
    }
}
