//! Files: which file system holds a path and its room, reserving space,
//! telling a full disk, renaming without replacing, advisory locks.

use std::io;

/// `statfs(2)`'s `f_type` of the file system holding `path`: tells kernel
/// attribute files (procfs `0x9fa0`, sysfs `0x62656572`) from regular ones.
pub fn filesystem_magic(path: &std::path::Path) -> io::Result<i64> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: an all-zero statfs is a valid out-parameter; `c_path` is a
    // NUL-terminated string that outlives the call.
    let (rc, buf) = unsafe {
        let mut buf: libc::statfs = std::mem::zeroed();
        let rc = libc::statfs(c_path.as_ptr(), &mut buf);
        (rc, buf)
    };
    if rc == 0 {
        // f_type is i64 on x86_64 but narrower elsewhere.
        #[allow(clippy::unnecessary_cast)]
        Ok(buf.f_type as i64)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Total and available bytes of the filesystem holding `path` (`statvfs`).
pub fn filesystem_space(path: &std::path::Path) -> io::Result<(u64, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: an all-zero statvfs is a valid out-parameter; `c_path` is a
    // NUL-terminated string that outlives the call.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are valid for the duration of the call.
    let rc = unsafe { libc::statvfs(c_path.as_ptr(), &mut stat) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let unit = stat.f_frsize as u64;
    Ok((stat.f_blocks as u64 * unit, stat.f_bavail as u64 * unit))
}

/// Reserves `len` bytes for `file` (`posix_fallocate`), so a full disk
/// shows before anything is written. Filesystems that cannot reserve
/// (`EOPNOTSUPP`, `EINVAL`) are not an error: the write itself will tell.
pub fn reserve(file: &std::fs::File, len: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let Ok(len) = libc::off_t::try_from(len) else {
        return Err(io::Error::from_raw_os_error(libc::EFBIG));
    };
    if len == 0 {
        return Ok(());
    }
    // SAFETY: an open descriptor and plain integers; no memory is passed.
    match unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len) } {
        0 | libc::EOPNOTSUPP | libc::EINVAL => Ok(()),
        e => Err(io::Error::from_raw_os_error(e)),
    }
}

/// Whether an error means the filesystem (or the user's quota) is full.
pub fn is_out_of_space(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT))
}

/// Renames `from` to `to` only if nothing is at `to` (`renameat2` with
/// `RENAME_NOREPLACE`, or a hard link and an unlink on a filesystem
/// without it): `AlreadyExists` if something is, and then nothing changed.
pub fn rename_noreplace(from: &std::path::Path, to: &std::path::Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &std::path::Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes())
            .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
    };
    let (c_from, c_to) = (c(from)?, c(to)?);
    // SAFETY: both strings are NUL-terminated and outlive the call; AT_FDCWD
    // resolves them like rename(2).
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            c_from.as_ptr(),
            libc::AT_FDCWD,
            c_to.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::EINVAL) | Some(libc::ENOSYS) => {
            // link(2) never replaces: it fails with EEXIST.
            std::fs::hard_link(from, to)?;
            std::fs::remove_file(from)
        }
        _ => Err(err),
    }
}

/// Takes an exclusive advisory lock on `file` without waiting (`flock`):
/// `Ok(false)` when another open file holds it. Released when the file
/// is closed, including when the process dies.
pub fn try_lock_exclusive(file: &std::fs::File) -> io::Result<bool> {
    use std::os::fd::AsRawFd;
    // SAFETY: the descriptor is valid for as long as `file` is borrowed.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(true);
    }
    let err = io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(err)
    }
}
