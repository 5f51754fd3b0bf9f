//! The target: opening the file or device after the safety checks
//! ([`super::mark`] for files, [`super::safety`] for devices), creating and
//! marking a file cauda owns, and finding the logical block size O_DIRECT
//! must be aligned to.
//!
//! - Writing to an existing file without cauda's mark needs `--force`.
//! - Writing to a block device holding data needs `--force-destroy-data`.
//! - Every refusal happens before the target is opened for writing, so a
//!   refused run leaves it untouched.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;

use super::mark::{read_mark, write_mark};
use super::safety::data_on_device;
use super::sysfs::{logical_block_size, sysfs_block_dir};
use crate::error::{input_error, interrupted};
use crate::model::disk::Mark;
use crate::record::StopFlag;

/// The extended attribute that marks a file as cauda's own.
pub use super::mark::MARK_XATTR;

/// What to open.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TargetSpec {
    /// A regular file (created if absent).
    File(PathBuf),
    /// A block device.
    Device(PathBuf),
}

/// How to open the target.
#[derive(Clone, Debug)]
pub struct OpenRequest {
    /// File or device.
    pub spec: TargetSpec,
    /// The run writes.
    pub writes: bool,
    /// Open with O_DIRECT.
    pub direct: bool,
    /// `--size`: bytes of the region (and of a file created).
    pub size: Option<u64>,
    /// `--offset`.
    pub offset: u64,
    /// `--bs`.
    pub block: u64,
    /// `--force`: write to a file cauda did not create.
    pub force: bool,
    /// `--force-destroy-data`: write to a device that holds data.
    pub force_destroy_data: bool,
    /// Seed of the data a new file is filled with.
    pub seed: u64,
}

/// An opened target.
#[derive(Debug)]
pub struct Target {
    /// The open file or device.
    pub file: File,
    /// Its path.
    pub path: PathBuf,
    /// A block device (not a file).
    pub is_device: bool,
    /// The region's length in bytes, a multiple of the block size.
    pub region_len: u64,
    /// The block device holding the data (major, minor), if there is one.
    pub block_device: Option<(u32, u32)>,
    /// The alignment O_DIRECT needs (the device's logical block size, or
    /// 4096 when it cannot be read).
    pub logical_block: u64,
    /// Where the logical block size came from.
    pub logical_block_source: String,
    /// How the file is known to be cauda's.
    pub mark: Mark,
    /// cauda created the file in this run.
    pub created: bool,
}

/// The default size of a file cauda creates without `--size`.
pub const DEFAULT_FILE_SIZE: u64 = 1 << 30;

/// Opens the target, creating and marking a file if needed, after every
/// safety check.
pub fn open(req: &OpenRequest, stop: &StopFlag) -> Result<Target> {
    match &req.spec {
        TargetSpec::File(path) => open_file(path, req, stop),
        TargetSpec::Device(path) => open_device(path, req),
    }
}

fn io_to_input(e: std::io::Error, what: &str, path: &Path) -> anyhow::Error {
    let shown = path.display();
    match e.raw_os_error() {
        Some(libc::ENOENT) => input_error(format!("{what} {shown}: does not exist")),
        Some(libc::EACCES) | Some(libc::EPERM) => input_error(format!(
            "{what} {shown}: permission denied; run as a user who may open it (root for devices)"
        )),
        Some(libc::EROFS) => input_error(format!(
            "{what} {shown}: the filesystem is read-only; a write run needs a writable place \
             (or use --rw read/randread)"
        )),
        Some(libc::ENOSPC) => input_error(format!(
            "{what} {shown}: no space left to create the file; choose a smaller --size or another place"
        )),
        Some(libc::EBUSY) => input_error(format!(
            "{what} {shown}: the device is busy (mounted or held open exclusively)"
        )),
        _ => anyhow::Error::new(e).context(format!("cannot open {what} {shown}")),
    }
}

fn open_options(req: &OpenRequest, write: bool) -> OpenOptions {
    let mut options = OpenOptions::new();
    options.read(true).write(write);
    let mut flags = 0;
    if req.direct {
        flags |= libc::O_DIRECT;
    }
    options.custom_flags(flags);
    options
}

fn direct_refused(path: &Path) -> anyhow::Error {
    input_error(format!(
        "--file {}: this filesystem refuses O_DIRECT (EINVAL; ramfs, older tmpfs and some FUSE or \
         network filesystems do); add --buffered to go through the page cache, or put the file on a \
         disk-backed filesystem",
        path.display()
    ))
}

/// A symbolic link is refused when it leads nowhere, and for a write run
/// (which writes only to a file named by its own path).
fn refuse_link(path: &Path, req: &OpenRequest) -> Result<()> {
    let shown = path.display();
    if let Ok(link) = std::fs::symlink_metadata(path)
        && link.file_type().is_symlink()
    {
        let target = std::fs::read_link(path).unwrap_or_default();
        if !path.exists() {
            return Err(input_error(format!(
                "--file {shown}: is a symbolic link to {}, which does not exist; give a path of \
                 its own for cauda to create",
                target.display()
            )));
        }
        if req.writes {
            return Err(input_error(format!(
                "--file {shown}: is a symbolic link (to {}); a write run writes only to a file \
                 named by its own path — give that path",
                target.display()
            )));
        }
    }
    Ok(())
}

fn open_file(path: &Path, req: &OpenRequest, stop: &StopFlag) -> Result<Target> {
    let shown = path.display();
    let mut created = false;
    let mark;
    refuse_link(path, req)?;
    match std::fs::metadata(path) {
        Ok(meta) if meta.file_type().is_block_device() => {
            return Err(input_error(format!(
                "--file {shown}: is a block device; use --device {shown}"
            )));
        }
        Ok(meta) if !meta.is_file() => {
            return Err(input_error(format!(
                "--file {shown}: not a regular file; give a file path"
            )));
        }
        Ok(_) => {
            let probe = File::open(path).map_err(|e| io_to_input(e, "--file", path))?;
            mark = read_mark(&probe, path);
            if req.writes && mark == Mark::None && !req.force {
                return Err(input_error(format!(
                    "--file {shown}: the file exists and cauda did not create it (no {MARK_XATTR} \
                     mark); a write run would overwrite its data. Choose a new path (cauda \
                     creates and marks it), or pass --force if the data does not matter"
                )));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let parent = match path.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            let parent_meta =
                std::fs::metadata(parent).map_err(|e| io_to_input(e, "--file", parent))?;
            let dev = (
                libc::major(parent_meta.dev()),
                libc::minor(parent_meta.dev()),
            );
            let (logical_block, source) = logical_block_size(dev);
            check_alignment(req, logical_block, &source)?;
            if let Some(size) = req.size
                && size < req.block
            {
                return Err(input_error(format!(
                    "--size {size} is smaller than --bs {}: not one block fits",
                    req.block
                )));
            }
            let size = req.size.unwrap_or(DEFAULT_FILE_SIZE) + req.offset;
            mark = create_file(path, size, req, stop)?;
            created = true;
        }
        Err(e) => return Err(io_to_input(e, "--file", path)),
    }
    let file = match open_options(req, req.writes).open(path) {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) && req.direct => {
            if created {
                // Made by this run and never measured: leave nothing behind.
                let _ = std::fs::remove_file(path);
            }
            return Err(direct_refused(path));
        }
        Err(e) => return Err(io_to_input(e, "--file", path)),
    };
    let meta = file.metadata()?;
    let mut len = meta.len();
    let wanted = req.size.map(|s| s + req.offset);
    if let Some(wanted) = wanted
        && wanted > len
    {
        if req.writes && (mark != Mark::None || created) {
            extend_file(path, path, (len, wanted), req.seed, stop)?;
            len = wanted;
        } else {
            return Err(input_error(format!(
                "--file {shown} is {len} bytes, less than --offset + --size ({wanted}); \
                 give a smaller --size{}",
                if req.writes {
                    ""
                } else {
                    ", or run a write workload on a file cauda created to grow it"
                }
            )));
        }
    }
    let dev = (libc::major(meta.dev()), libc::minor(meta.dev()));
    let block_device = sysfs_block_dir(dev).map(|_| dev);
    let (logical_block, source) = logical_block_size(dev);
    finish(
        req,
        file,
        path,
        false,
        len,
        block_device,
        logical_block,
        source,
        mark,
        created,
    )
}

#[allow(clippy::too_many_arguments)]
fn finish(
    req: &OpenRequest,
    file: File,
    path: &Path,
    is_device: bool,
    len: u64,
    block_device: Option<(u32, u32)>,
    logical_block: u64,
    logical_block_source: String,
    mark: Mark,
    created: bool,
) -> Result<Target> {
    let flag = if is_device { "--device" } else { "--file" };
    if req.offset >= len {
        return Err(input_error(format!(
            "--offset {}: past the end of {flag} {} ({len} bytes)",
            req.offset,
            path.display()
        )));
    }
    let available = len - req.offset;
    if let Some(size) = req.size
        && size > available
    {
        return Err(input_error(format!(
            "--size {size}: {flag} {} has only {available} bytes after --offset {}; give a \
             smaller --size",
            path.display(),
            req.offset
        )));
    }
    let region = req.size.unwrap_or(available);
    if region < req.block {
        return Err(input_error(format!(
            "--size {region} is smaller than --bs {}: not one block fits; raise --size or lower --bs",
            req.block
        )));
    }
    check_alignment(req, logical_block, &logical_block_source)?;
    Ok(Target {
        file,
        path: path.to_path_buf(),
        is_device,
        region_len: region / req.block * req.block,
        block_device,
        logical_block,
        logical_block_source,
        mark,
        created,
    })
}

/// O_DIRECT needs `--bs` and `--offset` aligned to the logical block size;
/// checked before anything is created or opened for writing.
fn check_alignment(
    req: &OpenRequest,
    logical_block: u64,
    logical_block_source: &str,
) -> Result<()> {
    if req.direct {
        if !req.block.is_multiple_of(logical_block) {
            return Err(input_error(format!(
                "--bs {}: O_DIRECT needs a multiple of the logical block size, {logical_block} \
                 bytes here ({logical_block_source}); use --bs {} or add --buffered",
                req.block,
                req.block.div_ceil(logical_block) * logical_block
            )));
        }
        if !req.offset.is_multiple_of(logical_block) {
            return Err(input_error(format!(
                "--offset {}: O_DIRECT needs a multiple of {logical_block} bytes; or add --buffered",
                req.offset
            )));
        }
    }
    Ok(())
}

/// Writes `from..to` of `path` with random data (buffered, then fsync),
/// after checking the filesystem has the room; stops within a megabyte
/// when `stop` rises. Messages name `shown`, the `--file` being made.
fn extend_file(
    path: &Path,
    shown: &Path,
    (from, to): (u64, u64),
    seed: u64,
    stop: &StopFlag,
) -> Result<()> {
    use std::io::{Seek, SeekFrom};
    check_room(shown, to.saturating_sub(from))?;
    let mut file = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| io_to_input(e, "--file", shown))?;
    file.seek(SeekFrom::Start(from))?;
    let mut chunk = vec![0u8; 1 << 20];
    let mut at = from;
    let mut round = 0u64;
    while at < to {
        if stop.is_raised() {
            return Err(interrupted(format!(
                "stopped while writing --file {} ({at} of {to} bytes); nothing was measured",
                shown.display()
            )));
        }
        let n = (to - at).min(chunk.len() as u64) as usize;
        super::engine::fill_random(
            &mut chunk[..n],
            seed ^ round.wrapping_mul(0xA24B_AED4_963E_E407),
        );
        file.write_all(&chunk[..n])
            .map_err(|e| io_to_input(e, "--file", shown))?;
        at += n as u64;
        round += 1;
    }
    file.sync_all()
        .with_context(|| format!("cannot flush the new file {}", shown.display()))?;
    Ok(())
}

/// Refuses to write `needed` bytes next to `path` when its filesystem has
/// less room free: filling it would end in ENOSPC for every other writer.
fn check_room(path: &Path, needed: u64) -> Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    // A filesystem that reports no size at all (ramfs) cannot be judged.
    match crate::sys::filesystem_space(dir) {
        Ok((total, free)) if total > 0 && needed > free => Err(input_error(format!(
            "--file {}: the file needs {needed} bytes but its filesystem has {free} free; lower \
             --size or put the file on another filesystem",
            path.display()
        ))),
        _ => Ok(()),
    }
}

/// Creates the target file whole: under a name of its own
/// (`.NAME.cauda-partial-PID`, created exclusively and marked before its
/// first byte), filled, then renamed into place without replacing
/// anything that appeared there. A run killed while filling (SIGKILL, a
/// crash) leaves only that marked partial file, never a short file at the
/// path a later run would measure; the next creation removes it.
fn create_file(path: &Path, size: u64, req: &OpenRequest, stop: &StopFlag) -> Result<Mark> {
    remove_stale_partials(path);
    let partial = partial_path(path, std::process::id());
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&partial)
        .map_err(|e| io_to_input(e, "--file", path))?;
    let filled = (|| {
        if let Err(e) = open_options(req, false).open(&partial)
            && e.raw_os_error() == Some(libc::EINVAL)
            && req.direct
        {
            return Err(direct_refused(path));
        }
        // Marked (under the name it will have) before its first byte.
        let mark = write_mark(&file, path)?;
        extend_file(&partial, path, (0, size), req.seed, stop)?;
        match crate::sys::rename_noreplace(&partial, path) {
            Ok(()) => Ok(mark),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(input_error(format!(
                "--file {}: something was put there while cauda filled the file; it was left \
                 alone — choose another path",
                path.display()
            ))),
            Err(e) => Err(anyhow::Error::new(e).context(format!(
                "cannot rename {} to {}",
                partial.display(),
                path.display()
            ))),
        }
    })();
    if filled.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    filled
}

/// Where a file is filled before it takes its name: the prefix, then the
/// filling process's PID.
fn partial_prefix(path: &Path) -> String {
    let name = path
        .file_name()
        .map_or_else(|| "cauda".into(), |n| n.to_string_lossy().into_owned());
    format!(".{name}.cauda-partial-")
}

fn partial_path(path: &Path, pid: u32) -> PathBuf {
    path.with_file_name(format!("{}{pid}", partial_prefix(path)))
}

/// Removes partial files an earlier run left beside `path` when it was
/// killed while filling: only those whose process is gone and that carry
/// cauda's mark.
fn remove_stale_partials(path: &Path) {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let prefix = partial_prefix(path);
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(prefix.as_str()))
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let stale = !Path::new(&format!("/proc/{pid}")).exists();
        let ours = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(entry.path())
            .is_ok_and(|f| {
                f.metadata().is_ok_and(|m| m.is_file())
                    && read_mark(&f, &entry.path()) != Mark::None
            });
        if stale && ours && std::fs::remove_file(entry.path()).is_ok() {
            eprintln!(
                "note: removed {}, a partial file left by an earlier run that was killed while \
                 creating it",
                entry.path().display()
            );
        }
    }
}

fn open_device(path: &Path, req: &OpenRequest) -> Result<Target> {
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| io_to_input(e, "--device", path))?;
    if !meta.file_type().is_block_device() {
        return Err(input_error(format!(
            "--device {shown}: not a block device{}",
            if meta.is_file() {
                "; use --file for a regular file"
            } else {
                ""
            }
        )));
    }
    let dev = (libc::major(meta.rdev()), libc::minor(meta.rdev()));
    if req.writes {
        let found = data_on_device(path, dev)?;
        if !found.is_empty() && !req.force_destroy_data {
            return Err(input_error(format!(
                "--device {shown}: refusing to write, the device holds data: {}. A write run \
                 destroys it; pass --force-destroy-data only if you mean that (or use a read \
                 workload)",
                found.join("; ")
            )));
        }
    }
    let mut options = open_options(req, req.writes);
    if req.writes {
        // An exclusive open also fails if something mounts it meanwhile.
        options.custom_flags(libc::O_EXCL | if req.direct { libc::O_DIRECT } else { 0 });
    }
    let file = options
        .open(path)
        .map_err(|e| io_to_input(e, "--device", path))?;
    let len = device_len(&file).with_context(|| format!("cannot size {shown}"))?;
    let (logical_block, source) = logical_block_size(dev);
    finish(
        req,
        file,
        path,
        true,
        len,
        Some(dev),
        logical_block,
        source,
        Mark::None,
        false,
    )
}

fn device_len(file: &File) -> std::io::Result<u64> {
    use std::io::{Seek, SeekFrom};
    let mut f = file.try_clone()?;
    f.seek(SeekFrom::End(0))
}
