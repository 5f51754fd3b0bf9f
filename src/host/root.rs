//! The host's root and identity, which readers (snapshot, audit,
//! counters), tuners and tracers all use.
//!
//! Every read of `/proc` and `/sys` goes through a [`HostRoot`] (`/` on a
//! live host) so tests can point at a captured fake tree; the few values
//! that say which host and boot this is (its name, boot id, kernel release
//! and CPU model) are read here once, for the run file's snapshot, the
//! tuning journal's header and the tracer's error messages alike.

use std::path::{Path, PathBuf};

/// Reads files below a root directory (`/` on a live host).
#[derive(Clone, Debug)]
pub struct HostRoot(PathBuf);

impl Default for HostRoot {
    fn default() -> Self {
        HostRoot(PathBuf::from("/"))
    }
}

impl HostRoot {
    /// A root at `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        HostRoot(dir.into())
    }

    /// The path of an absolute host path under this root.
    pub fn path(&self, absolute: &str) -> PathBuf {
        self.0.join(absolute.trim_start_matches('/'))
    }

    /// A file's content, trimmed; `None` when absent or unreadable.
    pub fn read(&self, absolute: &str) -> Option<String> {
        read_trimmed(&self.path(absolute))
    }

    /// A file's content, or why it cannot be read (`missing`, `permission
    /// denied`, …), for checks that must say why a value is not available.
    pub fn read_why(&self, absolute: &str) -> Result<String, String> {
        match std::fs::read_to_string(self.path(absolute)) {
            Ok(text) => Ok(text.trim().to_string()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Err(format!("{absolute} does not exist"))
            }
            Err(e) => Err(format!("{absolute}: {e}")),
        }
    }

    /// A file's raw bytes (binary files such as `/dev/cpu_dma_latency`).
    pub fn read_bytes(&self, absolute: &str) -> Result<Vec<u8>, String> {
        std::fs::read(self.path(absolute)).map_err(|e| format!("{absolute}: {e}"))
    }

    /// The entries of a directory, sorted naturally (`cpu2` before
    /// `cpu10`); empty when it is absent.
    pub fn list(&self, absolute: &str) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.path(absolute))
            .map(|dir| {
                dir.filter_map(|e| e.ok())
                    .filter_map(|e| e.file_name().into_string().ok())
                    .collect()
            })
            .unwrap_or_default();
        names.sort_by_key(|n| natural_key(n));
        names
    }

    /// The last component of a symlink's target (`/sys/block/vda/device` →
    /// `virtio2`).
    pub fn link_name(&self, absolute: &str) -> Option<String> {
        let target = std::fs::read_link(self.path(absolute)).ok()?;
        target.file_name()?.to_str().map(str::to_string)
    }

    /// True when this root is the live host (`/`), where syscalls such as
    /// `statvfs` describe the same files.
    pub fn is_live(&self) -> bool {
        self.0 == Path::new("/")
    }

    /// True when the root directory exists.
    pub fn exists(&self) -> bool {
        self.0.is_dir()
    }

    /// The root directory.
    pub fn dir(&self) -> &Path {
        &self.0
    }
}

/// Sorts `cpu10` after `cpu2`: the text before the trailing number, then the number.
fn natural_key(name: &str) -> (String, u64, String) {
    let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (stem, number) = name.split_at(name.len() - digits);
    (
        stem.to_string(),
        number.parse().unwrap_or(0),
        name.to_string(),
    )
}

fn read_trimmed(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// Which host and boot this is.
impl HostRoot {
    /// The host name (`/proc/sys/kernel/hostname`).
    pub fn hostname(&self) -> Option<String> {
        self.read("/proc/sys/kernel/hostname")
    }

    /// The kernel's release (`/proc/sys/kernel/osrelease`).
    pub fn kernel_release(&self) -> Option<String> {
        self.read("/proc/sys/kernel/osrelease")
    }

    /// The host name and boot id, `unknown` where one cannot be read: what
    /// a tuning journal is bound to.
    pub fn identity(&self) -> (String, String) {
        (
            self.hostname().unwrap_or_else(|| "unknown".into()),
            self.read("/proc/sys/kernel/random/boot_id")
                .unwrap_or_else(|| "unknown".into()),
        )
    }

    /// The CPU model (`model name` on x86, `Model` or `CPU part` elsewhere
    /// in `/proc/cpuinfo`).
    pub fn cpu_model(&self) -> Option<String> {
        self.read("/proc/cpuinfo").and_then(|info| cpu_model(&info))
    }
}

/// The CPU model from `/proc/cpuinfo`'s text.
fn cpu_model(cpuinfo: &str) -> Option<String> {
    ["model name", "Model", "cpu model", "CPU part"]
        .iter()
        .find_map(|key| {
            cpuinfo.lines().find_map(|line| {
                let (k, v) = line.split_once(':')?;
                (k.trim() == *key).then(|| v.trim().to_string())
            })
        })
        .filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_root_without_the_files_is_an_unknown_host() {
        let dir = tempfile::tempdir().unwrap();
        let root = HostRoot::new(dir.path());
        assert_eq!(root.identity(), ("unknown".into(), "unknown".into()));
        assert_eq!(root.kernel_release(), None);
        assert_eq!(root.cpu_model(), None);
        assert!(!root.is_live() && root.exists());
    }

    #[test]
    fn the_cpu_model_is_read_on_arm_too_and_lists_sort_naturally() {
        assert_eq!(
            cpu_model("processor\t: 0\nCPU part\t: 0xd0c\n").as_deref(),
            Some("0xd0c")
        );
        assert_eq!(cpu_model("model name\t:\n"), None);
        let dir = tempfile::tempdir().unwrap();
        for name in ["cpu10", "cpu2", "cpufreq"] {
            std::fs::create_dir(dir.path().join(name)).unwrap();
        }
        assert_eq!(
            HostRoot::new(dir.path()).list("/"),
            ["cpu2", "cpu10", "cpufreq"]
        );
    }
}
