//! Cgroup v1 groups a test plants a capacity with (a CPU quota, a read-IOPS
//! limit), removed on every path out of the test, their tasks moved back
//! to the root group first.

use std::path::{Path, PathBuf};

/// A cgroup v1 CPU group, removed (its tasks moved back to the root
/// group first) on every path out of the test.
pub struct CpuQuota {
    dir: PathBuf,
}

impl CpuQuota {
    /// Where cgroup v1 mounts the CPU controller.
    pub const ROOT: &'static str = "/sys/fs/cgroup/cpu";

    /// A group `NAME-PID` allowed `quota_us` of CPU in every 100 ms,
    /// holding `pid`; `None` without the controller or the permission.
    pub fn new(name: &str, quota_us: u64, pid: u32) -> Option<CpuQuota> {
        let root = Path::new(Self::ROOT);
        if !root.join("cpu.cfs_quota_us").exists() {
            return None;
        }
        let dir = root.join(format!("{name}-{}", std::process::id()));
        std::fs::create_dir(&dir).ok()?;
        let group = CpuQuota { dir };
        group.write("cpu.cfs_period_us", "100000");
        group.write("cpu.cfs_quota_us", &quota_us.to_string());
        group.write("cgroup.procs", &pid.to_string());
        Some(group)
    }

    fn write(&self, file: &str, value: &str) {
        std::fs::write(self.dir.join(file), value)
            .unwrap_or_else(|e| panic!("{}/{file} ← {value}: {e}", self.dir.display()));
    }
}

impl Drop for CpuQuota {
    fn drop(&mut self) {
        remove_group(&self.dir, Path::new(Self::ROOT));
    }
}

/// Moves a group's tasks back to the hierarchy's root, then removes it.
fn remove_group(dir: &Path, root: &Path) {
    let tasks = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
    for pid in tasks.split_whitespace() {
        let _ = std::fs::write(root.join("cgroup.procs"), pid);
    }
    if let Err(e) = std::fs::remove_dir(dir) {
        eprintln!("could not remove {}: {e}", dir.display());
    }
}

/// A cgroup v1 blkio group limiting the read IOPS of one whole disk,
/// removed when dropped; a process joins it by writing its pid.
pub struct ReadIopsLimit {
    /// The group's directory.
    pub dir: PathBuf,
}

impl ReadIopsLimit {
    /// Where cgroup v1 mounts the blkio controller.
    pub const ROOT: &'static str = "/sys/fs/cgroup/blkio";

    /// A group `NAME-PID` limiting reads of `disk` (`MAJOR:MINOR` of a
    /// whole disk: a partition is refused) to `iops`; `None` without the
    /// controller or the permission.
    pub fn new(name: &str, disk: &str, iops: u64) -> Option<ReadIopsLimit> {
        let root = Path::new(Self::ROOT);
        if !root.join("cgroup.procs").exists() {
            return None;
        }
        let dir = root.join(format!("{name}-{}", std::process::id()));
        std::fs::create_dir(&dir).ok()?;
        let group = ReadIopsLimit { dir };
        std::fs::write(
            group.dir.join("blkio.throttle.read_iops_device"),
            format!("{disk} {iops}"),
        )
        .ok()?;
        Some(group)
    }
}

impl Drop for ReadIopsLimit {
    fn drop(&mut self) {
        remove_group(&self.dir, Path::new(Self::ROOT));
    }
}

/// The whole disk (`MAJOR:MINOR`) holding `path`: throttles take a disk,
/// not a partition.
pub fn whole_disk_of(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(path).ok()?.dev();
    let major = ((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0xfff);
    let minor = ((dev >> 12) & 0xffff_ff00) | (dev & 0xff);
    let sys = std::fs::canonicalize(format!("/sys/dev/block/{major}:{minor}")).ok()?;
    let whole = if sys.join("partition").exists() {
        sys.parent()?.to_path_buf()
    } else {
        sys
    };
    Some(
        std::fs::read_to_string(whole.join("dev"))
            .ok()?
            .trim()
            .to_string(),
    )
}
