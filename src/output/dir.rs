//! Output directories, for a format written as several files (Parquet's
//! two tables): made when missing, never one that holds other files unless
//! `--force`, never a link, each file in it checked and written as
//! [`super::check_writable`] and [`super::write_checked`] do, and all or none
//! of them written (a full disk leaves no new table beside an old one).

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::Result;

use super::{Checked, OwnKind, check_writable, write_all_or_none};
use crate::error::input_error;
use crate::input::kind_of;

/// An output directory as checked: what was there, and what writing each
/// of its files may replace.
#[derive(Clone, Debug)]
pub struct CheckedDir {
    dir: PathBuf,
    /// The directory's device and inode, when it was there.
    existed: Option<(u64, u64)>,
    files: Vec<(PathBuf, Checked)>,
}

/// Checks that the directory `dir` can take `files`, each of `kind`: a
/// missing directory must be creatable; an existing one must be a real
/// directory (not a link) holding nothing but these files unless `force`,
/// and each file is checked as [`check_writable`] does. A regular file at
/// `dir` is refused, `--force` or not.
pub fn check_dir(
    dir: &Path,
    files: &[&str],
    kind: OwnKind,
    force: bool,
    flag: &str,
) -> Result<CheckedDir> {
    let shown = dir.display();
    let names = files.join(" and ");
    let existed = match fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => Some((meta.dev(), meta.ino())),
        Ok(meta) => {
            let what = if meta.is_file() {
                "a file"
            } else {
                kind_of(&meta)
            };
            return Err(input_error(format!(
                "{flag} {shown}: is {what}; this format is a directory holding {names}, so \
                 give the name of a new or empty directory"
            )));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(input_error(format!("{flag} {shown}: {e}"))),
    };
    let files = match existed {
        // Its parent must exist and take a new entry.
        None => check_writable(dir, OwnKind::Other, false, flag)
            .map(|_| files.iter().map(|f| (dir.join(f), Checked::New)).collect())?,
        Some(_) => {
            let entries = fs::read_dir(dir)
                .map_err(|e| input_error(format!("{flag} {shown}: cannot list it ({e})")))?;
            let mut foreign: Vec<String> = entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| !files.contains(&name.as_str()) && !stale_temp(name, files))
                .collect();
            foreign.sort();
            if let (Some(first), false) = (foreign.first(), force) {
                let more = match foreign.len() {
                    1 => String::new(),
                    n => format!(" and {} more", n - 1),
                };
                return Err(input_error(format!(
                    "{flag} {shown}: the directory holds files cauda did not write there \
                     ({first}{more}); choose a new or empty directory, or pass --force to \
                     write {names} beside them"
                )));
            }
            files
                .iter()
                .map(|f| {
                    let path = dir.join(f);
                    check_writable(&path, kind, force, flag).map(|c| (path, c))
                })
                .collect::<Result<_>>()?
        }
    };
    Ok(CheckedDir {
        dir: dir.to_path_buf(),
        existed,
        files,
    })
}

/// Whether `name` is the temporary file of one of `files` that an
/// interrupted cauda left (`.NAME.tmp-PID[-N]`, its PID no longer running):
/// not a foreign file, and removed once the new tables are in place. A
/// live process's temporary file is another cauda writing: foreign.
fn stale_temp(name: &str, files: &[&str]) -> bool {
    let Some(rest) = files
        .iter()
        .find_map(|f| name.strip_prefix(&format!(".{f}.tmp-")))
    else {
        return false;
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let pid = rest.split('-').next().unwrap_or_default();
    rest.split('-').count() <= 2
        && rest.split('-').all(digits)
        && !Path::new("/proc").join(pid).exists()
}

/// Writes the files of a checked directory, in the order given to
/// [`check_dir`], all or none (`write_all_or_none`: a failure leaves no
/// new file beside an old one of the set); the directory is made first
/// when it was missing. A directory that is not the one checked by now
/// (replaced by a link, or made by someone else meanwhile) is left alone.
pub fn write_dir(checked: &CheckedDir, contents: &[&[u8]]) -> Result<()> {
    let changed = || {
        anyhow::anyhow!(
            "{} changed since it was checked (another directory or a link is there now); it \
             was left alone",
            checked.dir.display()
        )
    };
    match checked.existed {
        None => fs::create_dir(&checked.dir).map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => changed(),
            _ => anyhow::Error::new(e).context(format!("cannot create {}", checked.dir.display())),
        })?,
        Some((dev, ino)) => {
            let meta = fs::symlink_metadata(&checked.dir).map_err(|_| changed())?;
            if !(meta.is_dir() && meta.dev() == dev && meta.ino() == ino) {
                return Err(changed());
            }
        }
    }
    let files: Vec<(&Path, Checked, &[u8])> = checked
        .files
        .iter()
        .zip(contents)
        .map(|((path, checked), bytes)| (path.as_path(), *checked, *bytes))
        .collect();
    write_all_or_none(&files)?;
    // What an interrupted conversion left, now replaced.
    let names: Vec<&str> = checked
        .files
        .iter()
        .filter_map(|(p, _)| p.file_name()?.to_str())
        .collect();
    for entry in fs::read_dir(&checked.dir).into_iter().flatten().flatten() {
        let name = entry.file_name();
        if name.to_str().is_some_and(|n| stale_temp(n, &names)) {
            let _ = fs::remove_file(entry.path());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILES: [&str; 2] = ["a.parquet", "b.parquet"];

    #[test]
    fn links_and_files_are_refused_and_a_swapped_directory_left_alone() {
        let root = tempfile::tempdir().unwrap();
        let real = root.path().join("real");
        fs::create_dir(&real).unwrap();
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        for force in [false, true] {
            let err = check_dir(&link, &FILES, OwnKind::Parquet, force, "-o").unwrap_err();
            assert!(err.to_string().contains("a symbolic link"), "{err}");
        }
        let missing = root.path().join("no/such");
        assert!(check_dir(&missing, &FILES, OwnKind::Parquet, false, "-o").is_err());
        // Checked empty, then swapped for a link: nothing is written.
        let out = root.path().join("out");
        fs::create_dir(&out).unwrap();
        let checked = check_dir(&out, &FILES, OwnKind::Parquet, false, "-o").unwrap();
        fs::remove_dir(&out).unwrap();
        std::os::unix::fs::symlink(&real, &out).unwrap();
        let err = write_dir(&checked, &[b"x", b"y"]).unwrap_err();
        assert!(err.to_string().contains("left alone"), "{err}");
        assert_eq!(fs::read_dir(&real).unwrap().count(), 0);
        // A missing directory is made.
        let fresh = root.path().join("fresh");
        let checked = check_dir(&fresh, &FILES, OwnKind::Parquet, false, "-o").unwrap();
        write_dir(&checked, &[b"x", b"y"]).unwrap();
        assert_eq!(fs::read(fresh.join("b.parquet")).unwrap(), b"y");
    }
}
