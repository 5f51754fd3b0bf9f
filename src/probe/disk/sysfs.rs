//! Where sysfs keeps a block device (`/sys/dev/block/MAJ:MIN`), its whole
//! disk's directory, and the logical block size found there: what opening
//! a target, the safety checks and write amplification all look up.

use std::path::{Path, PathBuf};

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
