//! Whose events a run's kernel series count: the kernel's number of the
//! probe's block device, and whether this process's ids are the kernel's.

use anyhow::Result;
use std::path::Path;

use crate::error::input_error;

/// The kernel's `dev_t` of a block device named as in `/sys/class/block`,
/// with its `major:minor` as text. A device without a request queue of its
/// own (bio-based: zram, device-mapper, md, brd) is refused: the request
/// events never fire for it, so its series would stay empty.
pub(super) fn device_number(name: &str) -> Result<(u32, String)> {
    device_number_in(Path::new("/sys/class/block"), name)
}

/// [`device_number`] in a `/sys/class/block` at `class` (tests use a fake).
fn device_number_in(class: &Path, name: &str) -> Result<(u32, String)> {
    let entry = class.join(name);
    let path = entry.join("dev");
    let text = std::fs::read_to_string(&path).map_err(|e| {
        input_error(format!(
            "--kernel block: cannot read {} ({e}): is {name} a block device?",
            path.display()
        ))
    })?;
    let text = text.trim();
    let parsed = text
        .split_once(':')
        .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)));
    let (major, minor) = parsed.ok_or_else(|| {
        input_error(format!(
            "{}: expected MAJOR:MINOR, read '{text}'",
            path.display()
        ))
    })?;
    // A partition's queue is its disk's.
    let device = std::fs::canonicalize(&entry).unwrap_or(entry);
    let disk = match device.parent() {
        Some(parent) if device.join("partition").exists() => parent.to_path_buf(),
        _ => device,
    };
    if !disk.join("mq").is_dir() {
        let below: Vec<String> = std::fs::read_dir(disk.join("slaves"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        let instead = if below.is_empty() {
            format!("(lsblk -s /dev/{name})")
        } else {
            format!("({})", below.join(", "))
        };
        return Err(input_error(format!(
            "block series of {name}: it has no request queue of its own (a bio-based device \
             such as zram, device-mapper or md), so the block layer's request events never \
             fire for it and its series would stay empty; watch the device below it \
             {instead}, or leave the block series out"
        )));
    }
    Ok(((major << 20) | minor, text.to_string()))
}

/// Whether this process is outside the initial PID namespace, whose
/// `/proc/self/ns/pid` is `pid:[4026531836]` (`PROC_PID_INIT_INO`); an
/// error (what could not be read) when that cannot be told — no `/proc`,
/// as in a container that did not mount its own.
pub(super) fn in_child_pid_namespace() -> Result<bool, String> {
    in_child_pid_namespace_at(Path::new("/proc/self/ns/pid"))
}

fn in_child_pid_namespace_at(link: &Path) -> Result<bool, String> {
    std::fs::read_link(link)
        .map(|target| target.to_string_lossy() != "pid:[4026531836]")
        .map_err(|e| format!("{}: {e}", link.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake `/sys/class/block`: links into a device tree, as the kernel
    /// lays it out.
    fn fake_class() -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        let (devices, class) = (root.path().join("devices"), root.path().join("class"));
        let make = |dir: &Path, dev: &str| {
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(dir.join("dev"), format!("{dev}\n")).unwrap();
        };
        make(&devices.join("vdz"), "252:0");
        std::fs::create_dir(devices.join("vdz/mq")).unwrap();
        make(&devices.join("vdz/vdz1"), "252:1");
        std::fs::write(devices.join("vdz/vdz1/partition"), "1\n").unwrap();
        make(&devices.join("zram9"), "251:9");
        make(&devices.join("dm-7"), "253:7");
        std::fs::create_dir_all(devices.join("dm-7/slaves/vdz1")).unwrap();
        std::fs::create_dir(&class).unwrap();
        for (name, at) in [
            ("vdz", "vdz"),
            ("vdz1", "vdz/vdz1"),
            ("zram9", "zram9"),
            ("dm-7", "dm-7"),
        ] {
            std::os::unix::fs::symlink(devices.join(at), class.join(name)).unwrap();
        }
        root
    }

    #[test]
    fn devices_without_a_request_queue_are_refused_naming_the_one_below() {
        let root = fake_class();
        let class = root.path().join("class");
        assert_eq!(
            device_number_in(&class, "vdz").unwrap(),
            ((252 << 20), "252:0".into())
        );
        // A partition's queue is its disk's.
        assert_eq!(
            device_number_in(&class, "vdz1").unwrap(),
            ((252 << 20) | 1, "252:1".into())
        );
        let refused = |name: &str| format!("{:#}", device_number_in(&class, name).unwrap_err());
        let zram = refused("zram9");
        assert!(zram.contains("no request queue"), "{zram}");
        assert!(zram.contains("lsblk -s /dev/zram9"), "{zram}");
        let dm = refused("dm-7");
        assert!(dm.contains("below it (vdz1)"), "{dm}");
        assert!(refused("sdq").contains("is sdq a block device?"));
    }

    #[test]
    fn a_pid_namespace_that_cannot_be_read_is_not_taken_for_the_host_s() {
        let dir = tempfile::tempdir().unwrap();
        let missing = in_child_pid_namespace_at(&dir.path().join("no-proc/self/ns/pid"));
        assert!(missing.unwrap_err().contains("no-proc"));
        let link = dir.path().join("pid");
        std::os::unix::fs::symlink("pid:[4026531836]", &link).unwrap();
        assert_eq!(in_child_pid_namespace_at(&link), Ok(false));
        std::fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink("pid:[4026532177]", &link).unwrap();
        assert_eq!(in_child_pid_namespace_at(&link), Ok(true));
    }
}
