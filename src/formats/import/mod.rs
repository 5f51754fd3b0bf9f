//! Importers: every input format cauda reads, detected from content and
//! never from the file name (`--format` overrides); gzip is decompressed
//! transparently. One table ([`table::IMPORTERS`]) lists each format with
//! its detection rule and its reader; [`load`] opens a file, asks the table
//! and reads it into a [`Loaded`] that analysis uses without knowing where
//! it came from.
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
pub mod sockperf;
pub mod table;

use std::io::BufRead;
use std::path::Path;

use anyhow::Result;

use crate::model::{Format, Loaded};
use open::{open, sniff};
use options::{Imported, ReadOptions};
use reader::Input;
use table::{detect, importer};

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
        return Ok(loaded(source, format, imported));
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
    Ok(loaded(source, format, imported))
}

fn loaded(source: String, format: Format, imported: Imported) -> Loaded {
    Loaded {
        source,
        format,
        series: imported.series,
        run: imported.run,
        warnings: imported.warnings,
    }
}
