//! The one place that owns output files: checks output paths before a
//! measurement starts, refuses to overwrite files that are not cauda's
//! without `--force`, and writes results atomically (temp file, fsync,
//! rename) so a reader never sees half a run file.
//!
//! cauda often runs as root in shared directories, so a write never goes
//! through a name someone else planted: the temporary file is created
//! exclusively (`O_CREAT | O_EXCL | O_NOFOLLOW`, a fresh name if one is
//! taken); only a regular file is ever replaced, `--force` or not (a
//! symbolic link, a device, a FIFO or a socket is refused); and the final
//! rename replaces only what the check before the run allowed ([`Checked`]):
//! a file that appeared at the path meanwhile is left alone
//! (`RENAME_NOREPLACE`) and the result is saved beside it.
//!
//! A format written as several files (Parquet's two tables) goes into a
//! directory of its own ([`dir::check_dir`], [`dir::write_dir`]): made when missing,
//! never one that holds other files unless `--force`, each file written as
//! above.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::error::input_error;
use crate::input::kind_of;

pub mod dir;
mod marks;
pub use marks::{HTML_MARK, MAN_MARK};
use marks::{is_cauda_hlog, is_cauda_html, is_cauda_run_file};

/// What kind of file cauda may overwrite at a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OwnKind {
    /// A cauda run file.
    RunFile,
    /// An interval log cauda wrote.
    Hlog,
    /// A Parquet table cauda wrote (its footer's metadata names it).
    Parquet,
    /// An HTML report cauda wrote (its head carries [`HTML_MARK`]).
    HtmlReport,
    /// A manual page `cauda man` wrote (its first line is [`MAN_MARK`]).
    ManPage,
    /// Anything else (CSV, .hgrm): an existing file is never assumed ours.
    Other,
}

/// What was at an output path when it was checked: what writing it may
/// replace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checked {
    /// Nothing: a file that appears there meanwhile is not replaced.
    New,
    /// This regular file (device and inode numbers), cauda's own or given
    /// up with `--force`; nothing else is replaced.
    Replaces {
        /// `st_dev`.
        dev: u64,
        /// `st_ino`.
        ino: u64,
    },
}

/// Checks that `path` can be written: its directory exists and is
/// writable, nothing but a regular file is there, and an existing file is
/// cauda's own (or `force`). Returns what writing it may replace.
pub fn check_writable(path: &Path, kind: OwnKind, force: bool, flag: &str) -> Result<Checked> {
    let shown = path.display();
    let checked = match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => {
            return Err(input_error(format!(
                "{flag} {shown}: is a directory; give a file name"
            )));
        }
        Ok(meta) if !meta.is_file() => {
            return Err(input_error(format!(
                "{flag} {shown}: is {}; cauda writes only regular files, so choose another name",
                kind_of(&meta)
            )));
        }
        Ok(meta) => {
            let ours = match kind {
                OwnKind::RunFile => is_cauda_run_file(path),
                OwnKind::Hlog => is_cauda_hlog(path),
                OwnKind::Parquet => marks::is_cauda_parquet(path),
                OwnKind::HtmlReport => is_cauda_html(path),
                OwnKind::ManPage => marks::is_cauda_man_page(path),
                OwnKind::Other => false,
            };
            if !ours && !force {
                return Err(input_error(format!(
                    "{flag} {shown}: the file exists and was not written by cauda; choose \
                     another name, or pass --force to overwrite it"
                )));
            }
            Checked::Replaces {
                dev: meta.dev(),
                ino: meta.ino(),
            }
        }
        Err(_) => Checked::New,
    };
    let dir = parent_dir(path);
    if !dir.is_dir() {
        return Err(input_error(format!(
            "{flag} {shown}: the directory {} does not exist; create it first",
            dir.display()
        )));
    }
    match can_create_in(&dir) {
        Ok(()) => Ok(checked),
        Err(e) => Err(input_error(format!(
            "{flag} {shown}: cannot write in {} ({e}); choose a writable directory",
            dir.display()
        ))),
    }
}

/// Whether a file can be created in `dir`, tried with a file that has no
/// name (`O_TMPFILE`), so nothing planted under a guessable name can make
/// the check fail; on a filesystem without it, with a fresh exclusive name.
fn can_create_in(dir: &Path) -> std::io::Result<()> {
    let unnamed = OpenOptions::new()
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_TMPFILE | libc::O_CLOEXEC)
        .open(dir);
    match unnamed {
        Ok(_) => Ok(()),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EOPNOTSUPP | libc::EISDIR)) => {
            let (probe, _) = create_exclusive(&dir.join("cauda"), "write-check")
                .map_err(|e| std::io::Error::other(format!("{e:#}")))?;
            let _ = fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(e),
    }
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Writes `bytes` to `path` atomically, replacing only what `checked`
/// allows: a temp file in the same directory, fsync, rename, fsync the
/// directory. A path ending in `.gz` is written gzip-compressed (every
/// reader of cauda's takes gzip). When something else is at the path by
/// now, it is left alone and the result is saved beside it (the error says
/// where).
pub fn write_checked(path: &Path, checked: Checked, bytes: &[u8]) -> Result<()> {
    write_as(path, Some(checked), bytes)
}

/// [`write_checked`] for a path not checked before (cauda's own files in a
/// directory it made, tuning's own files): replaces a regular file, never
/// anything else.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_as(path, None, bytes)
}

fn write_as(path: &Path, checked: Option<Checked>, bytes: &[u8]) -> Result<()> {
    if path.extension().is_some_and(|e| e == "gz") {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        encoder.write_all(bytes)?;
        return write_plain(path, checked, &encoder.finish()?);
    }
    write_plain(path, checked, bytes)
}

/// Opens `path` to be written as a run goes on (the streamed `.hlog`),
/// empty, if what is there is what `checked` allows: created exclusively
/// when the path was free, else the same regular file, truncated.
pub fn open_checked(path: &Path, checked: Checked) -> Result<File> {
    let changed = || {
        anyhow::anyhow!(
            "{} changed since it was checked (another file or link is there now); it was left \
             alone",
            path.display()
        )
    };
    match checked {
        Checked::New => OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::AlreadyExists => changed(),
                _ => anyhow::Error::new(e).context(format!("cannot create {}", path.display())),
            }),
        Checked::Replaces { dev, ino } => {
            let file = OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
                .open(path)
                .map_err(|_| changed())?;
            let meta = file.metadata()?;
            if !(meta.is_file() && meta.dev() == dev && meta.ino() == ino) {
                return Err(changed());
            }
            file.set_len(0)
                .with_context(|| format!("cannot truncate {}", path.display()))?;
            Ok(file)
        }
    }
}

/// A new file next to `path`, named `.NAME.SUFFIX-PID[-N]`, created
/// exclusively: never through a link or over a file someone put there.
fn create_exclusive(path: &Path, suffix: &str) -> Result<(PathBuf, File)> {
    let dir = parent_dir(path);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "cauda".into());
    let pid = std::process::id();
    let mut last = None;
    for n in 0..64 {
        let tmp = match n {
            0 => dir.join(format!(".{name}.{suffix}-{pid}")),
            _ => dir.join(format!(".{name}.{suffix}-{pid}-{n}")),
        };
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp)
        {
            Ok(file) => return Ok((tmp, file)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e).with_context(|| format!("cannot create {}", tmp.display())),
        }
    }
    Err(anyhow::anyhow!(
        "cannot create a temporary file beside {}: 64 names are taken ({})",
        path.display(),
        last.map_or_else(String::new, |e| e.to_string())
    ))
}

/// Puts `tmp` at `path` if what is there now is what `checked` allows
/// (`None`: any regular file); `Ok(false)` when it is not, leaving both.
fn place(tmp: &Path, path: &Path, checked: Option<Checked>) -> std::io::Result<bool> {
    let now = match fs::symlink_metadata(path) {
        Ok(meta) => Some(meta),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    let replaceable = match (&now, checked) {
        (None, _) => {
            return match crate::sys::rename_noreplace(tmp, path) {
                Ok(()) => Ok(true),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
                Err(e) => Err(e),
            };
        }
        (Some(meta), None) => meta.is_file(),
        (Some(meta), Some(Checked::Replaces { dev, ino })) => {
            meta.is_file() && meta.dev() == dev && meta.ino() == ino
        }
        (Some(_), Some(Checked::New)) => false,
    };
    if replaceable {
        fs::rename(tmp, path)?;
    }
    Ok(replaceable)
}

fn write_plain(path: &Path, checked: Option<Checked>, bytes: &[u8]) -> Result<()> {
    let tmp = stage(path, bytes)?;
    place_staged(&tmp, path, checked)
}

/// Writes `bytes` whole and durably to a new temporary file beside `path`
/// and returns its name; on failure nothing is left (a full filesystem:
/// the result is rescued elsewhere and the error says where).
fn stage(path: &Path, bytes: &[u8]) -> Result<PathBuf> {
    let (tmp, mut file) = create_exclusive(path, "tmp")?;
    if let Err(e) = fill(&mut file, bytes) {
        let _ = fs::remove_file(&tmp);
        if crate::sys::is_out_of_space(&e) {
            return Err(rescue(path, bytes, &e));
        }
        return Err(e).with_context(|| format!("cannot write {}", tmp.display()));
    }
    Ok(tmp)
}

/// Puts the staged file `tmp` at `path` as [`place`] allows.
fn place_staged(tmp: &Path, path: &Path, checked: Option<Checked>) -> Result<()> {
    let placed = place(tmp, path, checked)
        .with_context(|| format!("cannot rename {} to {}", tmp.display(), path.display()))
        .inspect_err(|_| {
            let _ = fs::remove_file(tmp);
        })?;
    if !placed {
        // Something that was not there when the path was checked (or is not
        // a regular file): keep it, and the result beside it — or, if even
        // that fails, where it was written.
        let kept = match create_exclusive(path, "cauda-saved") {
            Ok((kept, _)) => match fs::rename(tmp, &kept) {
                Ok(()) => kept,
                Err(_) => {
                    let _ = fs::remove_file(&kept);
                    tmp.to_path_buf()
                }
            },
            Err(_) => tmp.to_path_buf(),
        };
        return Err(anyhow::anyhow!(
            "{} changed since it was checked (another file or link is there now) and was left \
             alone; the result is saved in {}",
            path.display(),
            kept.display()
        ));
    }
    if let Ok(d) = File::open(parent_dir(path)) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Writes several files as one: each is staged whole first, and only when
/// all are is any put in place, so a failure (a full filesystem) leaves
/// none of them changed — never a new file beside an old one of the set.
/// Gzip is not applied (the files of a set are written as given).
pub(crate) fn write_all_or_none(files: &[(&Path, Checked, &[u8])]) -> Result<()> {
    let mut staged: Vec<PathBuf> = Vec::with_capacity(files.len());
    for (path, _, bytes) in files {
        match stage(path, bytes) {
            Ok(tmp) => staged.push(tmp),
            Err(e) => {
                for tmp in &staged {
                    let _ = fs::remove_file(tmp);
                }
                return Err(e);
            }
        }
    }
    let mut rest = staged.iter().zip(files);
    while let Some((tmp, (path, checked, _))) = rest.next() {
        if let Err(e) = place_staged(tmp, path, Some(*checked)) {
            for (tmp, _) in rest {
                let _ = fs::remove_file(tmp);
            }
            return Err(e);
        }
    }
    Ok(())
}

/// Writes `bytes` to a new file whole and durably, its space reserved
/// first so a full disk shows before anything is written.
fn fill(file: &mut File, bytes: &[u8]) -> std::io::Result<()> {
    crate::sys::reserve(file, bytes.len() as u64)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Where a result goes when its own filesystem is full: the first of
/// `$TMPDIR`, `/var/tmp`, `/dev/shm` and `/tmp` with room, under a fresh
/// exclusive name. The error says where it is (or that nothing had room).
fn rescue(path: &Path, bytes: &[u8], full: &std::io::Error) -> anyhow::Error {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "cauda-result".into());
    let places = std::env::var_os("TMPDIR")
        .map(PathBuf::from)
        .into_iter()
        .chain(["/var/tmp", "/dev/shm", "/tmp"].map(PathBuf::from));
    for dir in places {
        if dir == parent_dir(path) || !dir.is_dir() {
            continue;
        }
        let Ok((kept, mut file)) = create_exclusive(&dir.join(&name), "cauda-rescued") else {
            continue;
        };
        if fill(&mut file, bytes).is_ok() {
            return anyhow::anyhow!(
                "cannot write {} ({full}: the filesystem is full); the result is saved in {} — \
                 free some space and move it there",
                path.display(),
                kept.display()
            );
        }
        let _ = fs::remove_file(&kept);
    }
    anyhow::anyhow!(
        "cannot write {} ({full}: the filesystem is full), and $TMPDIR, /var/tmp, /dev/shm and \
         /tmp had no room for it either; free some space and run again",
        path.display()
    )
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

    #[test]
    fn a_link_planted_at_the_temporary_name_is_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        fs::write(&victim, "precious").unwrap();
        let out = dir.path().join("out.json");
        let planted = dir
            .path()
            .join(format!(".out.json.tmp-{}", std::process::id()));
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        write_atomic(&out, b"{}").unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
        assert_eq!(fs::read_to_string(&out).unwrap(), "{}");
        assert!(fs::symlink_metadata(&planted).unwrap().is_symlink());
    }

    #[test]
    fn only_regular_files_are_ever_replaced_force_or_not() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        fs::write(&victim, "precious").unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let dangling = dir.path().join("dangling.json");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
        let fifo = dir.path().join("fifo.json");
        crate::input::make_fifo(&fifo);
        for (path, kind) in [
            (link.as_path(), "a symbolic link"),
            (dangling.as_path(), "a symbolic link"),
            (fifo.as_path(), "a FIFO"),
            (Path::new("/dev/null"), "a character device"),
        ] {
            for force in [false, true] {
                let err = check_writable(path, OwnKind::RunFile, force, "-o").unwrap_err();
                let text = err.to_string();
                assert!(text.contains(kind), "{text}");
                assert!(!text.contains("--force"), "{text}");
            }
        }
        // Unchecked writes refuse them too, and keep the result beside.
        let err = write_atomic(&link, b"{}").unwrap_err().to_string();
        assert!(err.contains("left alone"), "{err}");
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
        assert!(fs::symlink_metadata(&link).unwrap().is_symlink());
    }

    #[test]
    fn what_appears_after_the_check_is_left_alone_and_the_result_kept() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run.json");
        let checked = check_writable(&out, OwnKind::RunFile, false, "-o").unwrap();
        assert_eq!(checked, Checked::New);
        fs::write(&out, "someone else's").unwrap();
        let err = write_checked(&out, checked, b"{\"schema\":\"cauda.run/1\"}")
            .unwrap_err()
            .to_string();
        assert_eq!(fs::read_to_string(&out).unwrap(), "someone else's");
        let saved = err.rsplit("saved in ").next().unwrap();
        assert_eq!(
            fs::read_to_string(saved).unwrap(),
            "{\"schema\":\"cauda.run/1\"}"
        );
        assert!(open_checked(&out, checked).is_err());

        // A file checked as replaceable, swapped for a link meanwhile.
        let victim = dir.path().join("victim");
        fs::write(&victim, "precious").unwrap();
        let ours = dir.path().join("ours.json");
        write_atomic(&ours, b"{\"schema\":\"cauda.run/1\"}").unwrap();
        let checked = check_writable(&ours, OwnKind::RunFile, false, "-o").unwrap();
        assert!(matches!(checked, Checked::Replaces { .. }));
        fs::remove_file(&ours).unwrap();
        std::os::unix::fs::symlink(&victim, &ours).unwrap();
        assert!(write_checked(&ours, checked, b"{}").is_err());
        assert!(open_checked(&ours, checked).is_err());
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");

        // The same file, unchanged, is replaced.
        let again = dir.path().join("again.json");
        write_atomic(&again, b"{\"schema\":\"cauda.run/1\"}").unwrap();
        let checked = check_writable(&again, OwnKind::RunFile, false, "-o").unwrap();
        write_checked(&again, checked, b"{\"schema\":\"cauda.run/1\",\"n\":2}").unwrap();
        assert!(fs::read_to_string(&again).unwrap().contains("\"n\":2"));
    }
}
