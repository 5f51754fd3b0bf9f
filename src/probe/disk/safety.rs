//! The write-safety checks for block devices: what a device holds that a
//! write run would destroy. Every check only reads: the first 128 KiB for
//! signatures (by each format's documented magic number and offset), sysfs
//! for holders and partitions, `/proc/self/mountinfo` and `/proc/swaps`.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result};

use super::sysfs::sysfs_block_dir;
use crate::error::input_error;

/// What a device holds that a write would destroy: signatures, partitions,
/// holders, mounts and swap. Empty when it looks blank.
pub fn data_on_device(path: &Path, dev: (u32, u32)) -> Result<Vec<String>> {
    let mut found = Vec::new();
    let mut head = vec![0u8; 128 * 1024];
    let mut file = File::open(path).map_err(|e| {
        input_error(format!(
            "--device {}: cannot read it to check for data ({e})",
            path.display()
        ))
    })?;
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
    fn mountinfo_lines_are_matched_by_device() {
        let info = "22 1 253:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n\
                    40 22 7:3 / /mnt/x rw - ext4 /dev/loop3 rw\n";
        assert_eq!(mounts_of(info, &[(7, 3)]), [("/mnt/x".to_string(), (7, 3))]);
        assert!(mounts_of(info, &[(7, 4)]).is_empty());
    }
}
