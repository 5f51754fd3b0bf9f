//! The one way cauda opens a file it reads (inputs to analyse, tuning
//! journals, saved audits): regular files only, and whole-file reads
//! bounded. A FIFO or a device may never end (`analyze FIFO` would wait
//! forever, `--journal /dev/zero` would fill memory), so they are refused
//! with the reason; a directory is named as one.

use std::fmt;
use std::fs::{File, Metadata, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Why a file was not read.
#[derive(Debug)]
pub enum Refusal {
    /// It could not be opened or read.
    Io(std::io::Error),
    /// It is a directory.
    Directory,
    /// It is not a regular file: what it is.
    Special(&'static str),
    /// It is larger than the reader takes.
    TooLarge {
        /// Its size in bytes.
        len: u64,
        /// The most the reader takes.
        limit: u64,
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Io(e) => write!(f, "{e}"),
            Refusal::Directory => f.write_str("is a directory; give a file"),
            Refusal::Special(kind) => write!(
                f,
                "is {kind}; cauda reads regular files (a FIFO or a device may never end): \
                 copy it to a file first"
            ),
            Refusal::TooLarge { len, limit } => write!(
                f,
                "is {len} bytes, more than the {limit} bytes such a file can hold; is it the \
                 right file?"
            ),
        }
    }
}

/// What a path that is not a regular file is, for messages.
pub fn kind_of(meta: &Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_symlink() {
        "a symbolic link"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// Opens `path` for reading if it is a regular file (links followed).
/// Opening never blocks: a FIFO without a writer is refused, not waited on.
pub fn open_regular(path: &Path) -> Result<File, Refusal> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(Refusal::Io)?;
    let meta = file.metadata().map_err(Refusal::Io)?;
    if meta.is_dir() {
        return Err(Refusal::Directory);
    }
    if !meta.is_file() {
        return Err(Refusal::Special(kind_of(&meta)));
    }
    Ok(file)
}

/// Reads the whole of a regular file of at most `limit` bytes.
pub fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>, Refusal> {
    let file = open_regular(path)?;
    let len = file.metadata().map_err(Refusal::Io)?.len();
    if len > limit {
        return Err(Refusal::TooLarge { len, limit });
    }
    let mut bytes = Vec::with_capacity(len as usize);
    // Bounded even if the file grows while it is read.
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(Refusal::Io)?;
    if bytes.len() as u64 > limit {
        return Err(Refusal::TooLarge {
            len: bytes.len() as u64,
            limit,
        });
    }
    Ok(bytes)
}

/// Makes a FIFO at `path` (tests of what refuses one).
#[cfg(test)]
pub(crate) fn make_fifo(path: &Path) {
    let made = std::process::Command::new("mkfifo").arg(path).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo {}", path.display());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        make_fifo(&fifo);
        let refused = |path: &Path| open_regular(path).unwrap_err().to_string();
        assert!(refused(&fifo).contains("is a FIFO"));
        assert!(refused(Path::new("/dev/zero")).contains("is a character device"));
        assert!(refused(dir.path()).contains("is a directory"));
        assert!(matches!(
            open_regular(&dir.path().join("missing")),
            Err(Refusal::Io(_))
        ));
        let file = dir.path().join("f");
        std::fs::write(&file, b"12345").unwrap();
        assert_eq!(read_regular(&file, 5).unwrap(), b"12345");
        assert!(
            read_regular(&file, 4)
                .unwrap_err()
                .to_string()
                .contains("is 5 bytes, more than the 4")
        );
    }
}
