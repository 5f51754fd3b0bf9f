//! The target: opening the file or device, cauda's own mark, and the
//! safety refusals that keep a write run away from data.
//!
//! - A file cauda creates is filled with random data and marked as cauda's
//!   with the extended attribute `user.cauda`. The mark lives in the inode,
//!   not the contents, so fio (or anything) may rewrite the data and cauda
//!   still knows the file is its own. Where the filesystem has no user
//!   xattrs, the file's (device, inode) goes in a registry file instead
//!   (`$XDG_STATE_HOME/cauda/own-files`, else `~/.local/state/cauda/own-files`).
//! - Writing to an existing file without the mark needs `--force`.
//! - Writing to a block device is refused when it holds a partition table,
//!   a filesystem or volume signature, has holders (device mapper, md,
//!   bcache), partitions, a mount or active swap — unless
//!   `--force-destroy-data`. Every check only reads; a refused run leaves
//!   the target untouched.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;

use super::sys;
use crate::error::input_error;

/// The extended attribute that marks a file as cauda's own.
pub const MARK_XATTR: &str = "user.cauda";
const MARK_VALUE: &[u8] = b"cauda disk target/1";

/// What to open.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TargetSpec {
    /// A regular file (created if absent).
    File(PathBuf),
    /// A block device.
    Device(PathBuf),
}

/// How a file is known to be cauda's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mark {
    /// The `user.cauda` extended attribute.
    Xattr,
    /// An entry in the registry file (no user xattrs on this filesystem).
    Registry,
    /// Not cauda's (written with `--force`) or a device.
    None,
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
pub fn open(req: &OpenRequest) -> Result<Target> {
    match &req.spec {
        TargetSpec::File(path) => open_file(path, req),
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

fn open_file(path: &Path, req: &OpenRequest) -> Result<Target> {
    let shown = path.display();
    let mut created = false;
    let mark;
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
            create_file(path, size, req.seed)?;
            created = true;
            let file = File::open(path).map_err(|e| io_to_input(e, "--file", path))?;
            mark = write_mark(&file, path)?;
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
            extend_file(path, len, wanted, req.seed)?;
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

/// Writes `from..to` of `path` with random data (buffered, then fsync).
fn extend_file(path: &Path, from: u64, to: u64, seed: u64) -> Result<()> {
    use std::io::{Seek, SeekFrom};
    let mut file = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| io_to_input(e, "--file", path))?;
    file.seek(SeekFrom::Start(from))?;
    let mut chunk = vec![0u8; 1 << 20];
    let mut at = from;
    let mut round = 0u64;
    while at < to {
        let n = (to - at).min(chunk.len() as u64) as usize;
        super::engine::fill_random(
            &mut chunk[..n],
            seed ^ round.wrapping_mul(0xA24B_AED4_963E_E407),
        );
        file.write_all(&chunk[..n])
            .map_err(|e| io_to_input(e, "--file", path))?;
        at += n as u64;
        round += 1;
    }
    file.sync_all()
        .with_context(|| format!("cannot flush the new file {}", path.display()))?;
    Ok(())
}

fn create_file(path: &Path, size: u64, seed: u64) -> Result<()> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| io_to_input(e, "--file", path))?;
    if let Err(e) = extend_file(path, 0, size, seed) {
        let _ = std::fs::remove_file(path);
        return Err(e);
    }
    Ok(())
}

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
fn write_mark(file: &File, path: &Path) -> Result<Mark> {
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

/// `/sys/dev/block/MAJ:MIN`, if that block device exists.
pub fn sysfs_block_dir(dev: (u32, u32)) -> Option<PathBuf> {
    let dir = PathBuf::from(format!("/sys/dev/block/{}:{}", dev.0, dev.1));
    std::fs::canonicalize(dir).ok()
}

/// The whole-disk sysfs directory of a device (its parent for a partition).
pub fn whole_disk_dir(dev: (u32, u32)) -> Option<PathBuf> {
    let dir = sysfs_block_dir(dev)?;
    if dir.join("partition").exists() {
        dir.parent().map(Path::to_path_buf)
    } else {
        Some(dir)
    }
}

/// The logical block size of the device `dev`, and where it came from.
pub fn logical_block_size(dev: (u32, u32)) -> (u64, String) {
    if let Some(disk) = whole_disk_dir(dev) {
        let file = disk.join("queue/logical_block_size");
        if let Some(size) = std::fs::read_to_string(&file)
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .filter(|&s| s.is_power_of_two())
        {
            return (size, file.display().to_string());
        }
    }
    (
        4096,
        format!(
            "assumed: device {}:{} has no block queue in sysfs",
            dev.0, dev.1
        ),
    )
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

/// What a device holds that a write would destroy: signatures, partitions,
/// holders, mounts and swap. Empty when it looks blank.
pub fn data_on_device(path: &Path, dev: (u32, u32)) -> Result<Vec<String>> {
    let mut found = Vec::new();
    let mut head = vec![0u8; 128 * 1024];
    let mut file = File::open(path).map_err(|e| io_to_input(e, "--device", path))?;
    let mut n = 0;
    while n < head.len() {
        match file.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        }
    }
    head.truncate(n);
    found.extend(signatures(&head).into_iter().map(String::from));
    if let Some(dir) = sysfs_block_dir(dev) {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if let Ok(holders) = std::fs::read_dir(dir.join("holders")) {
            let names: Vec<String> = holders
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            if !names.is_empty() {
                found.push(format!("held by {}", names.join(", ")));
            }
        }
        if let Ok(children) = std::fs::read_dir(&dir) {
            let parts: Vec<String> = children
                .flatten()
                .filter(|e| e.path().join("partition").exists())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            if !parts.is_empty() {
                found.push(format!("partitions {}", parts.join(", ")));
            }
        }
        let mut devs = vec![dev];
        devs.extend(partition_devs(&dir));
        if let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") {
            for (mount, d) in mounts_of(&info, &devs) {
                found.push(format!(
                    "{} mounted on {mount}",
                    if d == dev {
                        name.clone()
                    } else {
                        format!("{}:{}", d.0, d.1)
                    }
                ));
            }
        }
        if let Ok(swaps) = std::fs::read_to_string("/proc/swaps") {
            let canonical = std::fs::canonicalize(path).unwrap_or(path.to_path_buf());
            if swaps
                .lines()
                .skip(1)
                .any(|l| l.split_whitespace().next().map(Path::new) == Some(canonical.as_path()))
            {
                found.push("active swap".into());
            }
        }
    }
    Ok(found)
}

fn partition_devs(dir: &Path) -> Vec<(u32, u32)> {
    let Ok(children) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    children
        .flatten()
        .filter(|e| e.path().join("partition").exists())
        .filter_map(|e| std::fs::read_to_string(e.path().join("dev")).ok())
        .filter_map(|s| parse_dev(s.trim()))
        .collect()
}

fn parse_dev(text: &str) -> Option<(u32, u32)> {
    let (a, b) = text.split_once(':')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// Mount points in `/proc/self/mountinfo` text whose device is one of `devs`.
pub fn mounts_of(mountinfo: &str, devs: &[(u32, u32)]) -> Vec<(String, (u32, u32))> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let mut fields = line.split(' ');
            let dev = parse_dev(fields.nth(2)?)?;
            let mount = fields.nth(1)?;
            devs.contains(&dev).then(|| (mount.to_string(), dev))
        })
        .collect()
}

/// The signatures found in a device's first bytes (at least 128 KiB for
/// btrfs), by the magic numbers of each format's specification.
pub fn signatures(head: &[u8]) -> Vec<&'static str> {
    let at = |offset: usize, magic: &[u8]| head.get(offset..offset + magic.len()) == Some(magic);
    let mut found = Vec::new();
    // ext2/3/4: superblock at 1024, s_magic 0xEF53 (LE) at byte 56.
    if at(1024 + 56, &[0x53, 0xEF]) {
        found.push("an ext2/3/4 filesystem");
    }
    if at(0, b"XFSB") {
        found.push("an XFS filesystem");
    }
    // btrfs: superblock at 64 KiB, magic "_BHRfS_M" at byte 64.
    if at(0x10040, b"_BHRfS_M") {
        found.push("a btrfs filesystem");
    }
    // swap: the signature ends the first page, whatever the page size.
    if [4096usize, 8192, 16384, 65536]
        .iter()
        .any(|&page| at(page - 10, b"SWAPSPACE2") || at(page - 10, b"SWAP-SPACE"))
    {
        found.push("a swap area");
    }
    // GPT header "EFI PART" in LBA 1 (512- or 4096-byte sectors).
    if at(512, b"EFI PART") || at(4096, b"EFI PART") {
        found.push("a GPT partition table");
    }
    if at(510, &[0x55, 0xAA]) {
        found.push("an MBR partition table or boot sector (0x55AA)");
    }
    if at(0, b"LUKS\xba\xbe") {
        found.push("a LUKS encrypted volume");
    }
    if at(512, b"LABELONE") || at(0, b"LABELONE") {
        found.push("an LVM physical volume");
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_are_found_at_their_spec_offsets() {
        let mut head = vec![0u8; 128 * 1024];
        assert!(signatures(&head).is_empty(), "zeros hold nothing");
        head[1080] = 0x53;
        head[1081] = 0xEF;
        assert_eq!(signatures(&head), ["an ext2/3/4 filesystem"]);
        let mut head = vec![0u8; 128 * 1024];
        head[4086..4096].copy_from_slice(b"SWAPSPACE2");
        head[512..520].copy_from_slice(b"EFI PART");
        head[510] = 0x55;
        head[511] = 0xAA;
        head[0x10040..0x10048].copy_from_slice(b"_BHRfS_M");
        let found = signatures(&head);
        assert_eq!(found.len(), 4, "{found:?}");
        assert!(signatures(b"XFSB").contains(&"an XFS filesystem"));
    }

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

    #[test]
    fn mountinfo_lines_are_matched_by_device() {
        let info = "22 1 253:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n\
                    40 22 7:3 / /mnt/x rw - ext4 /dev/loop3 rw\n";
        assert_eq!(mounts_of(info, &[(7, 3)]), [("/mnt/x".to_string(), (7, 3))]);
        assert!(mounts_of(info, &[(7, 4)]).is_empty());
    }
}
