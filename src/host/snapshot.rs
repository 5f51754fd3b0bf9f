//! Capturing the host snapshot stored in every run
//! ([`crate::model::HostSnapshot`]): the static conditions that shape a
//! latency distribution. A value the host does not expose (a container,
//! another kernel) is `null`, never an error.
//!
//! Reads go through a root directory (`/` normally) so tests can point at a
//! captured fake `/proc` and `/sys` tree.

use std::path::{Path, PathBuf};

use super::cpulist::parse_cpu_list;
use crate::model::HostSnapshot;
use crate::model::check::Profile;

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

/// Reads the snapshot from a host root.
pub fn capture(root: &HostRoot) -> HostSnapshot {
    let cpuidle = "/sys/devices/system/cpu/cpuidle";
    HostSnapshot {
        hostname: root.read("/proc/sys/kernel/hostname"),
        kernel: root.read("/proc/sys/kernel/osrelease"),
        cpu_model: root.read("/proc/cpuinfo").and_then(|info| cpu_model(&info)),
        logical_cpus: root
            .read("/sys/devices/system/cpu/online")
            .and_then(|list| parse_cpu_list(&list).ok())
            .map(|cpus| cpus.len()),
        cmdline: root.read("/proc/cmdline"),
        cpuidle_driver: root.read(&format!("{cpuidle}/current_driver")),
        cpuidle_governor: root
            .read(&format!("{cpuidle}/current_governor"))
            .or_else(|| root.read(&format!("{cpuidle}/current_governor_ro"))),
        clocksource: root.read("/sys/devices/system/clocksource/clocksource0/current_clocksource"),
        checks: Vec::new(),
        clock_sync: None,
    }
}

/// The snapshot with the full audit (latency profile) of the host's
/// static settings: what a run file stores.
pub fn capture_full(root: &HostRoot) -> HostSnapshot {
    HostSnapshot {
        checks: super::audit::audit(root, Profile::Latency).checks,
        clock_sync: crate::sys::clock_sync().map(|(synchronized, estimated, maximum)| {
            crate::model::ClockSync {
                synchronized,
                estimated_error_us: estimated,
                maximum_error_us: maximum,
            }
        }),
        ..capture(root)
    }
}

/// The CPU model from `/proc/cpuinfo` (`model name` on x86, `Model` or
/// `CPU part` elsewhere).
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
    fn reads_a_fake_root_and_tolerates_missing_files() {
        let dir = tempfile::tempdir().unwrap();
        let put = |path: &str, text: &str| {
            let p = dir.path().join(path.trim_start_matches('/'));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        put("/proc/sys/kernel/hostname", "box\n");
        put(
            "/proc/cpuinfo",
            "processor\t: 0\nmodel name\t: Intel(R) Xeon(R)\n",
        );
        put("/sys/devices/system/cpu/online", "0-3\n");
        put(
            "/sys/devices/system/cpu/cpuidle/current_governor_ro",
            "menu\n",
        );
        let snap = capture(&HostRoot::new(dir.path()));
        assert_eq!(snap.hostname.as_deref(), Some("box"));
        assert_eq!(snap.cpu_model.as_deref(), Some("Intel(R) Xeon(R)"));
        assert_eq!(snap.logical_cpus, Some(4));
        assert_eq!(snap.cpuidle_governor.as_deref(), Some("menu"));
        assert_eq!(snap.kernel, None);
        assert_eq!(snap.clocksource, None);
    }

    #[test]
    fn this_host_has_a_kernel() {
        let snap = capture(&HostRoot::default());
        assert!(snap.kernel.is_some());
        assert!(snap.logical_cpus.unwrap_or(0) >= 1);
    }
}
