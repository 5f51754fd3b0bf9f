//! Opening an input: a regular file (or bytes already in memory),
//! transparently decompressed when it is gzip, and its first bytes kept for
//! detection while the reader starts again from the beginning.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use anyhow::Result;
use flate2::read::MultiGzDecoder;

use super::reader::Input;
use crate::error::input_error;
use crate::input::{self, Refusal};

/// The gzip magic number.
pub const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// How many first bytes detection reads.
const HEAD_BYTES: u64 = 8192;

/// Opens a file, transparently decompressing gzip, and returns its first
/// bytes (for detection) and a reader positioned at its start.
pub fn open(path: &Path) -> Result<(Vec<u8>, Input)> {
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
pub fn sniff(source: &str, mut raw: Box<dyn BufRead>) -> Result<(Vec<u8>, Input)> {
    let gzip = raw
        .fill_buf()
        .map_err(|e| input_error(format!("{source}: cannot read ({e})")))?
        .starts_with(&GZIP_MAGIC);
    let mut reader: Box<dyn Read> = if gzip {
        Box::new(MultiGzDecoder::new(raw))
    } else {
        raw
    };
    let mut head = Vec::with_capacity(HEAD_BYTES as usize);
    (&mut reader)
        .take(HEAD_BYTES)
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
