//! Importers: every input format cauda reads, detected from content and
//! never from the file name (`--format` overrides); gzip is decompressed
//! transparently. One table, [`IMPORTERS`], lists each format with its
//! fuzz target, its detection rule and its reader; [`load`] opens a file,
//! asks the table and reads it into a [`Loaded`] that analysis uses without
//! knowing where it came from.
//!
//! Detection asks the rows in order and the first whose rule holds wins,
//! so a row sits below those whose inputs its rule would also take (any
//! JSON object is a run file once fio's and cyclictest's have been ruled
//! out; any text is plain numbers).
//!
//! A new format is three edits: its reader's file (with its `detect` and
//! `import`), its `mod` line and row here, and its `Format` variant
//! (`model::input`: its `--format` name and help, and its name in run
//! files). `fuzz/entry.rs` fuzzes every row by its `fuzz_target`.
//!
//! Shared by the readers: [`reader`] (the bounded input every reader reads
//! through), [`lines`] (line by line with numbers), [`cutter`] (timestamped
//! values cut into intervals) and [`head`] (the first bytes, for detection).

pub mod cutter;
pub mod cyclictest;
pub mod fio;
pub mod fio_lat;
pub mod head;
pub mod hgrm;
pub mod hlog;
pub mod lines;
pub mod numbers;
pub mod open;
pub mod options;
pub mod reader;
pub mod runfile;
mod runfile_blame;
mod runfile_sections;
pub mod sockperf;

use std::io::BufRead;
use std::path::Path;

use anyhow::Result;

use crate::model::{Format, Loaded};
use head::Head;
use open::{open, sniff};
use options::{Imported, ReadOptions};
use reader::Input;

/// A reader of a whole input, named `source` in its errors.
pub type ReadInput = fn(&str, Input, &ReadOptions) -> Result<Imported>;

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
    pub read: ReadInput,
    /// Reads a plain file faster than [`Importer::read`], where it can.
    pub read_file: Option<ReadFile>,
}

/// Every format cauda reads, in the order detection asks them.
pub static IMPORTERS: &[Importer] = &[
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

/// Detects a format from the first bytes of a (decompressed) file: the
/// first row whose rule holds.
pub fn detect(source: &str, head: &[u8]) -> Result<Format> {
    let head = Head::of(source, head)?;
    let row = IMPORTERS.iter().find(|i| (i.detect)(&head));
    // The last row, plain numbers, takes any text.
    Ok(row.map_or(Format::Numbers, |i| i.format))
}

/// Reads a file in whatever supported format it holds (or `options.format`).
pub fn load(path: &Path, options: &ReadOptions) -> Result<Loaded> {
    let source = path.display().to_string();
    let (head, reader) = open(path)?;
    let format = match options.format {
        Some(format) => format,
        None => detect(&source, &head)?,
    };
    if let Some(read_file) = importer(format).read_file
        && let Some(imported) = read_file(&source, path, options)?
    {
        return loaded(source, format, imported);
    }
    load_from(source, format, reader, options)
}

/// Reads bytes already in memory, named `source` in errors (the fuzz
/// targets' entry point; also handy for stdin).
pub fn load_bytes(source: &str, bytes: &[u8], options: &ReadOptions) -> Result<Loaded> {
    let owned: Box<dyn BufRead> = Box::new(std::io::Cursor::new(bytes.to_vec()));
    let (head, reader) = sniff(source, owned)?;
    let format = match options.format {
        Some(format) => format,
        None => detect(source, &head)?,
    };
    load_from(source.to_string(), format, reader, options)
}

fn load_from(
    source: String,
    format: Format,
    reader: Input,
    options: &ReadOptions,
) -> Result<Loaded> {
    let imported = (importer(format).read)(&source, reader, options)?;
    loaded(source, format, imported)
}

/// What an importer read, its names checked: every importer's series tags
/// and a run's labels are bounded and one line of text
/// ([`crate::model::names`]), whatever format brought them.
fn loaded(source: String, format: Format, imported: Imported) -> Result<Loaded> {
    use crate::model::names::check_name;
    let labels = imported.run.iter().flat_map(|r| &r.labels);
    let checked = imported
        .series
        .iter()
        .try_for_each(|s| check_name("series tag", &s.tag))
        .and_then(|()| {
            labels.into_iter().try_for_each(|(key, value)| {
                check_name("label key", key)?;
                check_name(&format!("label '{}'", key.escape_debug()), value)
            })
        });
    checked.map_err(|why| {
        crate::error::input_error(format!(
            "{source}: {why}; edit it in the input (jq edits a run file) and read it again"
        ))
    })?;
    Ok(Loaded {
        source,
        format,
        series: imported.series,
        run: imported.run,
        warnings: imported.warnings,
    })
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
