//! The disk probe's system calls that need `unsafe` beside the io_uring
//! engine's (in `engine/sys.rs`): extended attributes, per-thread CPU time
//! and the NVMe admin ioctl. Everything else in the probe is safe Rust
//! over these small wrappers; each `unsafe` block says why it is sound.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// Reads the extended attribute `name` of `file`; `Ok(None)` if absent.
pub fn get_xattr(file: &File, name: &str) -> io::Result<Option<Vec<u8>>> {
    let name = CString::new(name).map_err(io::Error::other)?;
    let mut value = vec![0u8; 256];
    // SAFETY: `name` is NUL-terminated; `value` is writable for its length.
    let n = unsafe {
        libc::fgetxattr(
            file.as_raw_fd(),
            name.as_ptr(),
            value.as_mut_ptr().cast(),
            value.len(),
        )
    };
    if n < 0 {
        let e = io::Error::last_os_error();
        return if e.raw_os_error() == Some(libc::ENODATA) {
            Ok(None)
        } else {
            Err(e)
        };
    }
    value.truncate(n as usize);
    Ok(Some(value))
}

/// Sets the extended attribute `name` of `file` to `value`.
pub fn set_xattr(file: &File, name: &str, value: &[u8]) -> io::Result<()> {
    let name = CString::new(name).map_err(io::Error::other)?;
    // SAFETY: `name` is NUL-terminated; `value` is readable for its length.
    let rc = unsafe {
        libc::fsetxattr(
            file.as_raw_fd(),
            name.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// User and system CPU time, in ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTime {
    /// User time.
    pub user_ns: u64,
    /// System time.
    pub sys_ns: u64,
}

fn rusage(who: libc::c_int) -> CpuTime {
    // SAFETY: an all-zero rusage is valid and writable; `who` is one of the
    // RUSAGE_* constants.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        if libc::getrusage(who, &mut usage) != 0 {
            return CpuTime::default();
        }
        usage
    };
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    CpuTime {
        user_ns: ns(usage.ru_utime),
        sys_ns: ns(usage.ru_stime),
    }
}

/// CPU time of the calling thread.
pub fn thread_cpu() -> CpuTime {
    rusage(libc::RUSAGE_THREAD)
}

/// CPU time of the whole process.
pub fn process_cpu() -> CpuTime {
    rusage(libc::RUSAGE_SELF)
}

/// `struct nvme_passthru_cmd` from `<linux/nvme_ioctl.h>` (72 bytes).
#[repr(C)]
#[derive(Default)]
struct NvmePassthru {
    opcode: u8,
    flags: u8,
    rsvd1: u16,
    nsid: u32,
    cdw2: u32,
    cdw3: u32,
    metadata: u64,
    addr: u64,
    metadata_len: u32,
    data_len: u32,
    cdw10: u32,
    cdw11: u32,
    cdw12: u32,
    cdw13: u32,
    cdw14: u32,
    cdw15: u32,
    timeout_ms: u32,
    result: u32,
}

/// `NVME_IOCTL_ADMIN_CMD` = `_IOWR('N', 0x41, struct nvme_admin_cmd)`.
const NVME_IOCTL_ADMIN_CMD: libc::c_ulong =
    (3 << 30) | (72 << 16) | ((b'N' as libc::c_ulong) << 8) | 0x41;

/// How a Get Log Page command failed.
#[derive(Debug)]
pub enum LogPageError {
    /// The ioctl itself failed (not an NVMe device, no permission).
    Io(io::Error),
    /// The controller answered with this NVMe status (e.g. 0x109: invalid log page).
    Status(i32),
}

/// Get Log Page (admin opcode 0x02) for all namespaces: fills `buf`
/// (a multiple of 4 bytes) with log `lid`, log-specific id `lsi`.
pub fn nvme_get_log_page(
    device: &File,
    lid: u8,
    lsi: u16,
    buf: &mut [u8],
) -> Result<(), LogPageError> {
    let dwords = (buf.len() / 4) as u32;
    let numd = dwords.saturating_sub(1);
    let mut cmd = NvmePassthru {
        opcode: 0x02,
        nsid: 0xFFFF_FFFF,
        addr: buf.as_mut_ptr() as u64,
        data_len: buf.len() as u32,
        cdw10: ((numd & 0xFFFF) << 16) | u32::from(lid),
        cdw11: (numd >> 16) | (u32::from(lsi) << 16),
        timeout_ms: 5_000,
        ..Default::default()
    };
    // SAFETY: `cmd` is a valid nvme_passthru_cmd whose data pointer and
    // length describe `buf`, writable for the call's duration; the kernel
    // checks the fd is an NVMe device and fails with ENOTTY otherwise.
    let rc = unsafe { libc::ioctl(device.as_raw_fd(), NVME_IOCTL_ADMIN_CMD as _, &mut cmd) };
    match rc {
        0 => Ok(()),
        rc if rc > 0 => Err(LogPageError::Status(rc)),
        _ => Err(LogPageError::Io(io::Error::last_os_error())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_passthru_struct_has_the_kernel_layout() {
        assert_eq!(std::mem::size_of::<NvmePassthru>(), 72);
        assert_eq!(NVME_IOCTL_ADMIN_CMD, 0xC048_4E41);
    }
}
