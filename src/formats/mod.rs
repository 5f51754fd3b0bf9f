//! Importers and exporters. Every importer turns a file into tagged
//! interval series, so analysis never needs to know where data came from.
//!
//! Input formats are detected from content, never from the file name: a
//! JSON document with a `cauda.run/*` schema is a run file; text is plain
//! numbers; anything binary is refused. New importers plug into
//! [`detect`] and [`load`].

pub mod hlog;
pub mod numbers;
pub mod runfile;

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use anyhow::Result;
use serde::Serialize;

use crate::error::input_error;
use crate::model::{LoadMode, RunFile, Series};
use crate::units::TimeUnit;

/// A format cauda can read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// A cauda run file (`cauda.run/1`).
    CaudaRun,
    /// One number per line.
    Numbers,
}

/// What a file held, ready for analysis.
#[derive(Debug)]
pub struct Loaded {
    /// The path as the user gave it.
    pub source: String,
    /// The detected format.
    pub format: Format,
    /// The series.
    pub series: Vec<Series>,
    /// The whole run, when the input was a run file.
    pub run: Option<RunFile>,
}

impl Loaded {
    /// Open or closed loop, when the source says.
    pub fn load_mode(&self) -> Option<LoadMode> {
        self.run.as_ref().map(|r| r.load)
    }
}

/// Options that only some formats use.
#[derive(Clone, Copy, Debug)]
pub struct ReadOptions {
    /// The unit of plain numbers.
    pub unit: TimeUnit,
}

/// Detects a format from the first bytes of a file.
pub fn detect(source: &str, head: &[u8]) -> Result<Format> {
    if head.is_empty() {
        return Err(input_error(format!(
            "{source}: the file is empty; expected a cauda run file or one number per line"
        )));
    }
    let text_prefix = match std::str::from_utf8(head) {
        Ok(text) => text,
        // A multi-byte character cut at the end of the sample is still text.
        Err(e) if e.error_len().is_none() => {
            std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or("")
        }
        Err(e) => {
            return Err(input_error(format!(
                "{source}: byte {} is not text; expected a cauda run file or one number per line",
                e.valid_up_to()
            )));
        }
    };
    if let Some(pos) = text_prefix.find('\0') {
        return Err(input_error(format!(
            "{source}: byte {pos} is a NUL, so this is a binary file; expected a cauda run file \
             or one number per line"
        )));
    }
    if text_prefix.trim_start().starts_with('{') {
        Ok(Format::CaudaRun)
    } else {
        Ok(Format::Numbers)
    }
}

/// Reads a file in whatever supported format it holds.
pub fn load(path: &Path, options: ReadOptions) -> Result<Loaded> {
    let source = path.display().to_string();
    let open_error = |e: std::io::Error| {
        let hint = match e.kind() {
            std::io::ErrorKind::NotFound => "check the path",
            std::io::ErrorKind::PermissionDenied => "check its permissions or run as its owner",
            _ => "is it a regular, readable file?",
        };
        input_error(format!("{source}: cannot read ({e}); {hint}"))
    };
    let file = File::open(path).map_err(open_error)?;
    if file.metadata().map(|m| m.is_dir()).unwrap_or(false) {
        return Err(input_error(format!(
            "{source}: is a directory; give a file"
        )));
    }
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let mut head = Vec::with_capacity(4096);
    (&mut reader)
        .take(4096)
        .read_to_end(&mut head)
        .map_err(open_error)?;
    let format = detect(&source, &head)?;
    let rest = std::io::Cursor::new(head).chain(reader);
    match format {
        Format::CaudaRun => {
            let mut text = String::new();
            BufReader::new(rest)
                .read_to_string(&mut text)
                .map_err(|e| input_error(format!("{source}: cannot read as text ({e})")))?;
            let run = runfile::parse(&source, &text)?;
            Ok(Loaded {
                source,
                format,
                series: run.series.clone(),
                run: Some(run),
            })
        }
        Format::Numbers => {
            let series = numbers::read(&source, BufReader::new(rest), options.unit)?;
            Ok(Loaded {
                source,
                format,
                series: vec![series],
                run: None,
            })
        }
    }
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
}
