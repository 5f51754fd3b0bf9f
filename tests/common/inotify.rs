//! Counting writes of a file from outside, with inotify: each atomic write
//! is one rename onto the file's name; a write into it in place shows as a
//! modification of that name.
// inotify has no safe wrapper among the dependencies; the calls stay here.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// An inotify watch on one directory for renames onto a name and in-place
/// modifications of it.
pub struct Watch {
    fd: i32,
}

impl Watch {
    /// Watches `dir` from now on.
    pub fn new(dir: &Path) -> Watch {
        // SAFETY: plain syscalls; the fd is owned by the Watch and closed on drop.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        assert!(
            fd >= 0,
            "inotify_init1: {}",
            std::io::Error::last_os_error()
        );
        let path = CString::new(dir.as_os_str().as_bytes()).unwrap();
        // SAFETY: `path` is a valid NUL-terminated string for the call's duration.
        let wd = unsafe {
            libc::inotify_add_watch(fd, path.as_ptr(), libc::IN_MOVED_TO | libc::IN_MODIFY)
        };
        assert!(
            wd >= 0,
            "inotify_add_watch: {}",
            std::io::Error::last_os_error()
        );
        Watch { fd }
    }

    /// How many renames onto `name`, and how many in-place modifications
    /// of it, since the watch began.
    pub fn writes_of(&self, name: &str) -> (usize, usize) {
        let (mut renames, mut modified) = (0, 0);
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            // SAFETY: `buf` is valid for `buf.len()` bytes.
            let n = unsafe { libc::read(self.fd, buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                break;
            }
            let mut at = 0;
            let header = std::mem::size_of::<libc::inotify_event>();
            while at + header <= n as usize {
                // SAFETY: the kernel wrote a whole event at `at`; read_unaligned
                // copes with any alignment.
                let event: libc::inotify_event =
                    unsafe { std::ptr::read_unaligned(buf[at..].as_ptr().cast()) };
                let raw = &buf[at + header..at + header + event.len as usize];
                let event_name = raw.split(|&b| b == 0).next().unwrap_or(&[]);
                if event_name == name.as_bytes() {
                    if event.mask & libc::IN_MOVED_TO != 0 {
                        renames += 1;
                    }
                    if event.mask & libc::IN_MODIFY != 0 {
                        modified += 1;
                    }
                }
                at += header + event.len as usize;
            }
        }
        (renames, modified)
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        // SAFETY: the fd is ours and closed once.
        unsafe { libc::close(self.fd) };
    }
}
