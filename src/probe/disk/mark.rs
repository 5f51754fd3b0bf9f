//! cauda's own mark on a file it created: the extended attribute
//! `user.cauda`, which lives in the inode and so survives other tools
//! rewriting the contents (cauda and fio can take turns on one file). Where
//! the filesystem has no user xattrs, the file's (device, inode) goes in a
//! registry file instead (`$XDG_STATE_HOME/cauda/own-files`, else
//! `~/.local/state/cauda/own-files`); a deleted file's inode may be reused,
//! so the registry is the weaker of the two.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::sys;
use crate::model::disk::Mark;

/// The extended attribute that marks a file as cauda's own.
pub const MARK_XATTR: &str = "user.cauda";
const MARK_VALUE: &[u8] = b"cauda disk target/1";

fn registry_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".local/state")))?;
    Some(base.join("cauda/own-files"))
}

/// The registry line for a file: "DEV INODE PATH".
fn registry_key(meta: &std::fs::Metadata) -> String {
    format!("{} {}", meta.dev(), meta.ino())
}

/// Whether `registry` lists the file of `meta`.
pub fn registry_lists(registry: &str, meta: &std::fs::Metadata) -> bool {
    let key = registry_key(meta);
    registry
        .lines()
        .any(|l| l.splitn(3, ' ').take(2).collect::<Vec<_>>().join(" ") == key)
}

/// How `file` is marked as cauda's, if it is.
pub fn read_mark(file: &File, path: &Path) -> Mark {
    if let Ok(Some(value)) = sys::get_xattr(file, MARK_XATTR)
        && value == MARK_VALUE
    {
        return Mark::Xattr;
    }
    let (Some(registry), Ok(meta)) = (registry_path(), file.metadata()) else {
        return Mark::None;
    };
    let _ = path;
    match std::fs::read_to_string(registry) {
        Ok(text) if registry_lists(&text, &meta) => Mark::Registry,
        _ => Mark::None,
    }
}

/// Marks a file cauda just created: the xattr, else the registry.
pub fn write_mark(file: &File, path: &Path) -> Result<Mark> {
    match sys::set_xattr(file, MARK_XATTR, MARK_VALUE) {
        Ok(()) => return Ok(Mark::Xattr),
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOTSUP) | Some(libc::EPERM)) => {}
        Err(e) => {
            return Err(anyhow::Error::new(e)
                .context(format!("cannot mark {} as cauda's own", path.display())));
        }
    }
    let registry = registry_path().ok_or_else(|| {
        anyhow::anyhow!(
            "{}: the filesystem has no user extended attributes and neither XDG_STATE_HOME \
             nor HOME is set, so cauda cannot remember the file is its own",
            path.display()
        )
    })?;
    if let Some(dir) = registry.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let meta = file.metadata()?;
    let line = format!(
        "{} {}\n",
        registry_key(&meta),
        std::fs::canonicalize(path)
            .unwrap_or(path.to_path_buf())
            .display()
    );
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(&registry)
        .and_then(|mut f| f.write_all(line.as_bytes()))
        .with_context(|| format!("cannot record the file in {}", registry.display()))?;
    Ok(Mark::Registry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_knows_a_file_by_device_and_inode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"x").unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        let line = format!("{} {} {}\n", meta.dev(), meta.ino(), path.display());
        assert!(registry_lists(&format!("1 2 /elsewhere\n{line}"), &meta));
        // Renamed or rewritten, the inode is the same; another inode is not ours.
        let other = format!("{} {} {}\n", meta.dev(), meta.ino() + 1, path.display());
        assert!(!registry_lists(&other, &meta));
        assert!(!registry_lists("", &meta));
    }
}
