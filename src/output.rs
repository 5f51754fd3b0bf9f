//! The one place that owns output files: checks output paths before a
//! measurement starts, refuses to overwrite files that are not cauda's
//! without `--force`, and writes results atomically (temp file, fsync,
//! rename) so a reader never sees half a run file.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::error::input_error;
use crate::formats::GZIP_MAGIC;
use crate::formats::hlog::CAUDA_HLOG_MARK;

/// What kind of file cauda may overwrite at a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OwnKind {
    /// A cauda run file.
    RunFile,
    /// An interval log cauda wrote.
    Hlog,
    /// Anything else (CSV, .hgrm): an existing file is never assumed ours.
    Other,
}

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

fn is_cauda_run_file(path: &Path) -> bool {
    String::from_utf8_lossy(&head_of(path, 64))
        .trim_start()
        .starts_with("{\"schema\":\"cauda.run/")
}

fn is_cauda_hlog(path: &Path) -> bool {
    head_of(path, CAUDA_HLOG_MARK.len() as u64).starts_with(CAUDA_HLOG_MARK.as_bytes())
}

/// Checks that `path` can be written: its directory exists and is
/// writable, and an existing file there is cauda's own (or `force`).
pub fn check_writable(path: &Path, kind: OwnKind, force: bool, flag: &str) -> Result<()> {
    let shown = path.display();
    if path.is_dir() {
        return Err(input_error(format!(
            "{flag} {shown}: is a directory; give a file name"
        )));
    }
    if path.exists() && !force {
        let ours = match kind {
            OwnKind::RunFile => is_cauda_run_file(path),
            OwnKind::Hlog => is_cauda_hlog(path),
            OwnKind::Other => false,
        };
        if !ours {
            return Err(input_error(format!(
                "{flag} {shown}: the file exists and was not written by cauda; choose another \
                 name, or pass --force to overwrite it"
            )));
        }
    }
    let dir = parent_dir(path);
    if !dir.is_dir() {
        return Err(input_error(format!(
            "{flag} {shown}: the directory {} does not exist; create it first",
            dir.display()
        )));
    }
    let probe = dir.join(format!(".cauda-write-check-{}", std::process::id()));
    match OpenOptions::new().write(true).create_new(true).open(&probe) {
        Ok(_) => {
            let _ = fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(input_error(format!(
            "{flag} {shown}: cannot write in {} ({e}); choose a writable directory",
            dir.display()
        ))),
    }
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Writes `bytes` to `path` atomically: a temp file in the same directory,
/// fsync, rename over the target, fsync the directory. A path ending in
/// `.gz` is written gzip-compressed (every reader of cauda's takes gzip).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    if path.extension().is_some_and(|e| e == "gz") {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        encoder.write_all(bytes)?;
        return write_plain(path, &encoder.finish()?);
    }
    write_plain(path, bytes)
}

fn write_plain(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = parent_dir(path);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "cauda".into());
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let result = (|| -> Result<()> {
        let mut file =
            File::create(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
        file.write_all(bytes)
            .and_then(|()| file.sync_all())
            .with_context(|| format!("cannot write {} (is the disk full?)", tmp.display()))?;
        fs::rename(&tmp, path)
            .with_context(|| format!("cannot rename {} to {}", tmp.display(), path.display()))?;
        if let Ok(d) = File::open(&dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// The default run-file name, never an existing file: a second run in the
/// same second gets `-2`, `-3`, … rather than overwriting the first.
pub fn unused_default_path(probe: &str, start_rfc3339: &str) -> PathBuf {
    let first = default_run_path(probe, start_rfc3339);
    if !first.exists() {
        return first;
    }
    let stem = first
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    (2..)
        .map(|n| PathBuf::from(format!("{stem}-{n}.json")))
        .find(|p| !p.exists())
        .unwrap_or(first)
}

/// The default run-file name for a probe started at an RFC 3339 time:
/// `cauda-timer-20261122-153012.json`.
pub fn default_run_path(probe: &str, start_rfc3339: &str) -> PathBuf {
    let stamp: String = start_rfc3339
        .chars()
        .take(19)
        .filter(|c| c.is_ascii_digit() || *c == 'T')
        .map(|c| if c == 'T' { '-' } else { c })
        .collect();
    PathBuf::from(format!("cauda-{probe}-{stamp}.json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_names_carry_probe_and_time() {
        assert_eq!(
            default_run_path("timer", "2026-11-22T15:30:12Z"),
            PathBuf::from("cauda-timer-20261122-153012.json")
        );
    }

    #[test]
    fn refuses_foreign_files_but_not_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let foreign = dir.path().join("notes.txt");
        fs::write(&foreign, "precious").unwrap();
        let err = check_writable(&foreign, OwnKind::RunFile, false, "-o").unwrap_err();
        assert!(err.to_string().contains("--force"));
        assert_eq!(fs::read_to_string(&foreign).unwrap(), "precious");
        check_writable(&foreign, OwnKind::RunFile, true, "-o").unwrap();

        let ours = dir.path().join("run.json");
        write_atomic(&ours, b"{\"schema\":\"cauda.run/1\"}").unwrap();
        check_writable(&ours, OwnKind::RunFile, false, "-o").unwrap();

        let missing = dir.path().join("no/such/dir/run.json");
        assert!(check_writable(&missing, OwnKind::RunFile, false, "-o").is_err());
    }
}
