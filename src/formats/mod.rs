//! Importers and exporters. Every importer turns a file into tagged
//! interval series, so analysis never needs to know where data came from.
//!
//! Input formats are detected from content, never from the file name
//! (`--format` overrides); gzip is decompressed transparently. A JSON
//! document is a run file; lines of `#[StartTime…`, `Tag=` or `…,HISTF…`
//! are an HdrHistogram log; other text is plain numbers; anything binary is
//! refused. New importers plug into [`detect`] and [`load`].

pub mod cutter;
pub mod cyclictest;
pub mod export;
pub mod fio;
pub mod fio_lat;
pub mod hgrm;
pub mod hlog;
pub mod lines;
pub mod merge;
pub mod numbers;
pub mod omb;
pub mod parquet;
pub mod prometheus;
pub mod reader;
pub mod runfile;
pub mod sockperf;

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use flate2::read::MultiGzDecoder;

use anyhow::Result;

use crate::error::input_error;
use crate::input::{self, Refusal};
use crate::model::{Format, Loaded};
use crate::units::TimeUnit;
use reader::Input;

/// Options that only some formats use.
#[derive(Clone, Debug)]
pub struct ReadOptions {
    /// The unit of plain numbers (and of .hlog and .hgrm values).
    pub unit: TimeUnit,
    /// Whether the user said the unit (an .hgrm cannot be read without it).
    pub unit_given: bool,
    /// The format, when the user says rather than detection.
    pub format: Option<Format>,
    /// Interval length for logs of timestamped values (fio, sockperf), ns.
    pub interval_ns: u64,
    /// The CSV column holding the values.
    pub column: Option<numbers::Column>,
}

impl ReadOptions {
    /// Nanoseconds, detected format, 1 s intervals.
    pub fn new(unit: TimeUnit) -> Self {
        ReadOptions {
            unit,
            unit_given: true,
            format: None,
            interval_ns: 1_000_000_000,
            column: None,
        }
    }
}

/// The gzip magic number.
pub(crate) const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Detects a format from the first bytes of a (decompressed) file.
pub fn detect(source: &str, head: &[u8]) -> Result<Format> {
    const EXPECTED: &str = "expected a cauda run file, an HdrHistogram .hlog or .hgrm, fio JSON or logs, a sockperf \
         full log, cyclictest output, or one number per line";
    if head.is_empty() {
        return Err(input_error(format!(
            "{source}: the file is empty; {EXPECTED}"
        )));
    }
    let text = match std::str::from_utf8(head) {
        Ok(text) => text,
        // A multi-byte character cut at the end of the sample is still text.
        Err(e) if e.error_len().is_none() => {
            std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or("")
        }
        Err(e) => {
            return Err(input_error(format!(
                "{source}: byte {} is not text; {EXPECTED}",
                e.valid_up_to()
            )));
        }
    };
    if let Some(pos) = text.find('\0') {
        return Err(input_error(format!(
            "{source}: byte {pos} is a NUL, so this is a binary file; {EXPECTED}"
        )));
    }
    let trimmed = text.trim_start();
    if text.contains("\"fio version\"") {
        return Ok(Format::FioJson);
    }
    if trimmed.starts_with('{') {
        let cyclictest = text.contains("\"rt_test_version")
            || (text.contains("\"thread\"") && !text.contains("\"schema\""));
        return Ok(if cyclictest {
            Format::CyclictestJson
        } else {
            Format::CaudaRun
        });
    }
    let lines: Vec<&str> = trimmed
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(40)
        .collect();
    if lines
        .iter()
        .any(|l| sockperf::is_header(l) || l.starts_with("sockperf:"))
    {
        return Ok(Format::Sockperf);
    }
    if lines.contains(&"# Histogram") {
        return Ok(Format::CyclictestHist);
    }
    let hgrm_header =
        |l: &&str| l.starts_with("Value") && l.contains("Percentile") && l.contains("TotalCount");
    if lines.iter().any(hgrm_header) {
        return Ok(Format::Hgrm);
    }
    let hlog_line = |l: &&str| {
        l.starts_with("#[StartTime")
            || l.starts_with("#[BaseTime")
            || l.starts_with("#[Histogram log format")
            || l.starts_with("\"StartTimestamp\"")
            || l.starts_with("Tag=")
            || l.rsplit(',')
                .next()
                .is_some_and(|last| last.starts_with("HIST"))
    };
    if lines.iter().any(hlog_line) {
        return Ok(Format::Hlog);
    }
    // fio logs: comma-separated integers, 4–6 per line (latency) or 1859 (histogram).
    if let Some(first) = lines.first() {
        let fields: Vec<&str> = first.split(',').map(str::trim).collect();
        let numeric = |f: &&str| {
            !f.is_empty() && (f.bytes().all(|b| b.is_ascii_digit()) || f.starts_with("0x"))
        };
        if fields.iter().all(numeric) {
            if fields.len() == fio::HIST_BINS + 3 || (fields.len() > 1000 && !text.contains('\n')) {
                return Ok(Format::FioHistLog);
            }
            if (4..=6).contains(&fields.len()) {
                return Ok(Format::FioLatLog);
            }
        }
    }
    Ok(Format::Numbers)
}

/// Opens a file, transparently decompressing gzip, and returns its first
/// bytes (for detection) and a reader positioned at its start.
fn open(path: &Path) -> Result<(Vec<u8>, Input)> {
    let source = path.display().to_string();
    let open_error = |e: std::io::Error| {
        let hint = match e.kind() {
            std::io::ErrorKind::NotFound => "check the path",
            std::io::ErrorKind::PermissionDenied => "check its permissions or run as its owner",
            _ => "is it a regular, readable file?",
        };
        input_error(format!("{source}: cannot read ({e}); {hint}"))
    };
    let file = input::open_regular(path).map_err(|refusal| match refusal {
        Refusal::Io(e) => open_error(e),
        other => input_error(format!("{source}: {other}")),
    })?;
    let size = file.metadata().map_or(0, |m| m.len());
    let raw = BufReader::with_capacity(1 << 16, file);
    let (head, input) = sniff(&source, Box::new(raw))?;
    Ok((head, input.with_size_hint(size)))
}

/// Decompresses gzip when the stream starts with its magic number, and
/// returns the first bytes (for detection) and a reader from the start.
fn sniff(source: &str, mut raw: Box<dyn BufRead>) -> Result<(Vec<u8>, Input)> {
    let gzip = raw
        .fill_buf()
        .map_err(|e| input_error(format!("{source}: cannot read ({e})")))?
        .starts_with(&GZIP_MAGIC);
    let mut reader: Box<dyn Read> = if gzip {
        Box::new(MultiGzDecoder::new(raw))
    } else {
        raw
    };
    let mut head = Vec::with_capacity(8192);
    (&mut reader)
        .take(8192)
        .read_to_end(&mut head)
        .map_err(|e| read_error(source, gzip, e))?;
    let rest = std::io::Cursor::new(head.clone()).chain(reader);
    Ok((head, Input::new(source, Box::new(rest), gzip)))
}

fn read_error(source: &str, gzip: bool, e: std::io::Error) -> anyhow::Error {
    if gzip {
        input_error(format!(
            "{source}: the gzip stream is truncated or corrupt ({e}); re-copy or re-compress the file"
        ))
    } else {
        input_error(format!("{source}: cannot read ({e})"))
    }
}

fn read_text(source: &str, reader: Input) -> Result<String> {
    reader
        .into_text()
        .map_err(|e| input_error(format!("{source}: cannot read as text ({e})")))
}

/// Reads a file in whatever supported format it holds (or `options.format`).
pub fn load(path: &Path, options: &ReadOptions) -> Result<Loaded> {
    let source = path.display().to_string();
    let (head, reader) = open(path)?;
    let format = match options.format {
        Some(format) => format,
        None => detect(&source, &head)?,
    };
    if format == Format::FioLatLog
        && let Some(series) = fio_lat::read_lat_log_file(&source, path, options.interval_ns)?
    {
        return Ok(Loaded {
            source,
            format,
            series,
            run: None,
            warnings: Vec::new(),
        });
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
    let loaded = |series, run| Loaded {
        source: source.clone(),
        format,
        series,
        run,
        warnings: Vec::new(),
    };
    let json = matches!(
        format,
        Format::CaudaRun | Format::FioJson | Format::CyclictestJson
    );
    let reader = if json {
        reader
    } else {
        reader.with_line_limit()
    };
    match format {
        Format::CaudaRun => {
            let text = read_text(&source, reader)?;
            let (mut run, changed) = runfile::parse(&source, &text)?;
            drop(text);
            // The series move out of the run rather than being copied
            // (a one-hour run holds some 7,000 stored histograms).
            let series = std::mem::take(&mut run.series);
            Ok(Loaded {
                warnings: changed.into_iter().collect(),
                ..loaded(series, Some(run))
            })
        }
        Format::Hlog => {
            let (series, warnings) = hlog::read(&source, reader, options.unit.nanos())?;
            Ok(Loaded {
                warnings,
                ..loaded(series, None)
            })
        }
        Format::Hgrm => Ok(loaded(
            hgrm::read(&source, reader, options.unit_given.then_some(options.unit))?,
            None,
        )),
        Format::FioJson => {
            let text = read_text(&source, reader)?;
            Ok(loaded(fio::read_json(&source, &text)?, None))
        }
        Format::FioLatLog => Ok(loaded(
            fio_lat::read_lat_log(&source, reader, options.interval_ns)?,
            None,
        )),
        Format::FioHistLog => Ok(loaded(fio::read_hist_log(&source, reader)?, None)),
        Format::Sockperf => Ok(loaded(
            vec![sockperf::read(&source, reader, options.interval_ns)?],
            None,
        )),
        Format::CyclictestHist => Ok(loaded(cyclictest::read_text(&source, reader)?, None)),
        Format::CyclictestJson => {
            let text = read_text(&source, reader)?;
            Ok(loaded(cyclictest::read_json(&source, &text)?, None))
        }
        Format::Numbers => Ok(loaded(
            vec![numbers::read(
                &source,
                reader,
                options.unit,
                options.column.as_ref(),
            )?],
            None,
        )),
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
