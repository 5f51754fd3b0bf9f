//! How cauda knows its own files, so it may write them again: the marks
//! each kind carries near its start (run files, `.hlog`s, HTML reports,
//! manual pages, Parquet tables), read through gzip where a file is compressed.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use crate::formats::export::parquet::MARK as CAUDA_PARQUET_MARK;
use crate::formats::hlog_comments::CAUDA_HLOG_MARK;
use crate::formats::import::open::GZIP_MAGIC;

/// The first `n` bytes of a file, decompressed when it is gzip; empty when
/// unreadable.
fn head_of(path: &Path, n: u64) -> Vec<u8> {
    let mut head = Vec::new();
    let Ok(mut file) = File::open(path) else {
        return head;
    };
    let _ = (&mut file).take(2).read_to_end(&mut head);
    let gzip = head == GZIP_MAGIC;
    let rest = std::io::Cursor::new(std::mem::take(&mut head)).chain(file);
    let _ = if gzip {
        flate2::read::MultiGzDecoder::new(rest)
            .take(n)
            .read_to_end(&mut head)
    } else {
        rest.take(n).read_to_end(&mut head)
    };
    head
}

pub(super) fn is_cauda_run_file(path: &Path) -> bool {
    String::from_utf8_lossy(&head_of(path, 64))
        .trim_start()
        .starts_with("{\"schema\":\"cauda.run/")
}

/// In the head of every HTML report cauda writes, followed by its version:
/// how cauda knows its own reports (and may write them again).
pub const HTML_MARK: &str = "<meta name=\"generator\" content=\"cauda ";

pub(super) fn is_cauda_html(path: &Path) -> bool {
    let head = head_of(path, 512);
    head.starts_with(b"<!DOCTYPE html>")
        && head
            .windows(HTML_MARK.len())
            .any(|w| w == HTML_MARK.as_bytes())
}

/// The first line of every manual page `cauda man` writes (a roff
/// comment), followed by cauda's version: how cauda knows its own pages.
pub const MAN_MARK: &str = ".\\\" Written by `cauda man`";

pub(super) fn is_cauda_man_page(path: &Path) -> bool {
    head_of(path, MAN_MARK.len() as u64).starts_with(MAN_MARK.as_bytes())
}

pub(super) fn is_cauda_hlog(path: &Path) -> bool {
    head_of(path, CAUDA_HLOG_MARK.len() as u64).starts_with(CAUDA_HLOG_MARK.as_bytes())
}

/// Whether a Parquet file's footer (metadata, its 4-byte length, `PAR1`)
/// carries cauda's mark; footers over 16 MiB are not cauda's.
pub(super) fn is_cauda_parquet(path: &Path) -> bool {
    let footer = || -> std::io::Result<Vec<u8>> {
        let mut file = File::open(path)?;
        let mut tail = [0u8; 8];
        file.seek(SeekFrom::End(-8))?;
        file.read_exact(&mut tail)?;
        let [a, b, c, d, magic @ ..] = tail;
        let length = u32::from_le_bytes([a, b, c, d]);
        if magic != *b"PAR1" || length > 16 << 20 {
            return Ok(Vec::new());
        }
        let mut footer = vec![0; length as usize];
        file.seek(SeekFrom::End(-8 - i64::from(length)))?;
        file.read_exact(&mut footer)?;
        Ok(footer)
    };
    footer().is_ok_and(|f| {
        f.windows(CAUDA_PARQUET_MARK.len())
            .any(|w| w == CAUDA_PARQUET_MARK.as_bytes())
    })
}
