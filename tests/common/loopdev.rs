//! Loop devices over temporary files, for the tests that need a real block
//! device (`disk_safety.rs`) or a real queue scheduler (`tune_host.rs`).

use std::path::PathBuf;

use super::{is_root, sh, unmount};

/// A loop device over a temp file, optionally with ext4 and mounted;
/// detached (and unmounted) on drop, also when an assertion fails.
pub struct Loop {
    pub dev: String,
    mount: Option<PathBuf>,
    pub dir: tempfile::TempDir,
}

impl Loop {
    /// A loop device over `size_mb` MiB, made ext4 if `ext4`; `None`
    /// (with the reason printed) where root or the tools are missing.
    pub fn new(size_mb: u64, ext4: bool) -> Option<Loop> {
        if !is_root() {
            eprintln!("skipped: needs root for loop devices");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let backing = dir.path().join("backing.img");
        std::fs::File::create(&backing)
            .unwrap()
            .set_len(size_mb << 20)
            .unwrap();
        if ext4 && let Err(e) = sh("mkfs.ext4", &["-q", "-F", backing.to_str().unwrap()]) {
            eprintln!("skipped: {e}");
            return None;
        }
        match sh("losetup", &["-f", "--show", backing.to_str().unwrap()]) {
            Ok(dev) => Some(Loop {
                dev,
                mount: None,
                dir,
            }),
            Err(e) => {
                eprintln!("skipped: no loop device ({e})");
                None
            }
        }
    }

    /// The kernel's name for it (`loop3`), as under `/sys/block`.
    pub fn name(&self) -> &str {
        self.dev.trim_start_matches("/dev/")
    }

    /// The bytes of the backing file.
    pub fn backing(&self) -> Vec<u8> {
        std::fs::read(self.dir.path().join("backing.img")).unwrap()
    }

    /// Mounts it with `options` in its temp dir; the mount point.
    pub fn mount(&mut self, options: &str) -> PathBuf {
        let at = self.dir.path().join("mnt");
        std::fs::create_dir_all(&at).unwrap();
        sh("mount", &["-o", options, &self.dev, at.to_str().unwrap()]).unwrap();
        self.mount = Some(at.clone());
        at
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        if let Some(at) = &self.mount {
            unmount(at);
        }
        let _ = sh("losetup", &["-d", &self.dev]);
    }
}
