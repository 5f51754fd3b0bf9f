//! Reading and writing the files a setting lives in, byte for byte.
//!
//! Kernel attribute files (procfs, sysfs) and regular files behave
//! differently: a sysfs choice file such as THP `enabled` reads
//! `always [madvise] never` but accepts only the word. Which one a path is
//! comes from `statfs`, never from its name, so a fake root of plain files
//! round-trips byte for byte too. Apply, rollback and persist all read and
//! write through here.

use std::io::Write;
use std::path::Path;

use crate::sys;

const PROC_SUPER_MAGIC: i64 = 0x9fa0;
const SYSFS_MAGIC: i64 = 0x6265_6572;

/// True when `path` is a procfs or sysfs attribute rather than a regular file.
pub fn is_kernel_file(path: &Path) -> bool {
    matches!(
        sys::filesystem_magic(path),
        Ok(PROC_SUPER_MAGIC | SYSFS_MAGIC)
    )
}

/// The value a file states: the bracketed word of a choice file
/// (`always [madvise] never` → `madvise`), else the text with its
/// whitespace normalised.
pub fn effective(text: &str) -> String {
    if let Some(start) = text.find('[')
        && let Some(len) = text[start + 1..].find(']')
    {
        return text[start + 1..start + 1 + len].to_string();
    }
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A file's exact content as text.
pub fn read_exact(path: &Path) -> std::io::Result<String> {
    let bytes = std::fs::read(path)?;
    String::from_utf8(bytes)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text"))
}

/// Writes `value` to an existing file in one `write` (kernel attributes
/// take exactly one), truncating a regular file first.
pub fn write_value(path: &Path, value: &str) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .truncate(!is_kernel_file(path))
        .open(path)?;
    file.write_all(value.as_bytes())?;
    file.flush()
}

/// What the kernel's refusal means, and what to do about it.
pub fn explain_write_error(path: &str, value: &str, err: &std::io::Error) -> String {
    match err.raw_os_error() {
        Some(libc::EINVAL) => format!(
            "the kernel rejected '{value}' for {path} (EINVAL: out of range or not supported here)"
        ),
        Some(libc::EROFS) => format!(
            "{path} is on a read-only file system (sysfs and /proc/sys are mounted read-only in \
             most containers): run cauda on the host itself"
        ),
        Some(libc::EACCES | libc::EPERM) => format!(
            "permission denied writing {path}: cauda must run as root, and the attribute must be \
             writable on this kernel"
        ),
        Some(libc::ENOENT) => format!("{path} does not exist on this host any more"),
        _ => format!("cannot write '{value}' to {path}: {err}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effective_values() {
        assert_eq!(effective("always [madvise] never\n"), "madvise");
        assert_eq!(effective("[none] mq-deadline kyber bfq\n"), "none");
        assert_eq!(effective("60\n"), "60");
        assert_eq!(effective("4096\t16384  65536\n"), "4096 16384 65536");
    }

    #[test]
    fn proc_is_a_kernel_file_and_tmp_is_not() {
        assert!(is_kernel_file(Path::new("/proc/sys/vm/swappiness")));
        let dir = tempfile::tempdir().unwrap();
        assert!(!is_kernel_file(dir.path()));
    }
}
