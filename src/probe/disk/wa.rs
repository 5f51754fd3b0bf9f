//! Write amplification of a write run, measured before and after it.
//!
//! - Stack amplification: sectors the block device under the target wrote
//!   (`/proc/diskstats`, field 10, 512-byte sectors) divided by the bytes
//!   the probe wrote. Above 1 it shows journalling, metadata and
//!   read-modify-write; it counts every writer on that device, so other
//!   activity inflates it.
//! - Device amplification (NVMe only): media bytes over host bytes from the
//!   log pages read in [`super::nvme`].
//!
//! Where a figure cannot be had, the reason is reported instead.

use std::fs::File;

use super::nvme::{self, NvmeCounters};
use super::sysfs::{sysfs_block_dir, whole_disk_dir};
use super::target::Target;
use crate::model::disk::{Amplification, WriteAmplification};

/// No figure, and why.
fn not(why: impl Into<String>) -> Amplification {
    Amplification::NotAvailable {
        not_available: why.into(),
    }
}

/// `below ÷ above`, or why there is none.
fn ratio(below: u64, above: u64, source: String) -> Amplification {
    if above == 0 {
        return not("nothing was written above the device");
    }
    Amplification::Measured {
        factor: below as f64 / above as f64,
        below_bytes: below,
        above_bytes: above,
        source,
    }
}

/// Sectors written by device `dev` in `/proc/diskstats` text.
pub fn sectors_written(diskstats: &str, dev: (u32, u32)) -> Option<u64> {
    diskstats.lines().find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        let matches =
            f.first()?.parse::<u32>().ok()? == dev.0 && f.get(1)?.parse::<u32>().ok()? == dev.1;
        if matches {
            f.get(9)?.parse().ok()
        } else {
            None
        }
    })
}

fn read_sectors(dev: (u32, u32)) -> Result<u64, String> {
    let text = std::fs::read_to_string("/proc/diskstats")
        .map_err(|e| format!("cannot read /proc/diskstats: {e}"))?;
    sectors_written(&text, dev)
        .ok_or_else(|| format!("device {}:{} is not in /proc/diskstats", dev.0, dev.1))
}

/// Counters read before the run.
#[derive(Debug)]
pub struct Before {
    stack: Result<((u32, u32), String, u64), String>,
    device: Result<(File, NvmeCounters), String>,
}

/// Reads the counters before a write run.
pub fn before(target: &Target) -> Before {
    let stack = match target.block_device {
        None => Err(format!(
            "{} is on a filesystem without a block device of its own (tmpfs, overlayfs, \
             btrfs, NFS…), so there are no diskstats to compare",
            target.path.display()
        )),
        Some(dev) => {
            let name = sysfs_block_dir(dev)
                .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
                .unwrap_or_else(|| format!("{}:{}", dev.0, dev.1));
            read_sectors(dev).map(|s| (dev, name, s))
        }
    };
    let device =
        nvme::namespace_device(target.block_device.and_then(whole_disk_dir)).and_then(|path| {
            let file =
                File::open(&path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
            let counters = nvme::read_counters(&file)?;
            Ok((file, counters))
        });
    Before { stack, device }
}

/// Reads the counters again and computes both figures; `probe_bytes` is
/// what the probe wrote. Call after the data is flushed.
pub fn after(before: Before, probe_bytes: u64) -> WriteAmplification {
    let stack = match before.stack {
        Err(why) => not(why),
        Ok((dev, name, start)) => match read_sectors(dev) {
            Err(why) => not(why),
            Ok(end) => ratio(
                end.saturating_sub(start) * 512,
                probe_bytes,
                format!("/proc/diskstats sectors written by {name} (every writer on it counts)"),
            ),
        },
    };
    let device = match before.device {
        Err(why) => not(why),
        Ok((file, start)) => match nvme::read_counters(&file) {
            Err(why) => not(why),
            Ok(end) => {
                let media = end.media_bytes.saturating_sub(start.media_bytes);
                let host = end.host_bytes.saturating_sub(start.host_bytes);
                ratio(
                    u64::try_from(media).unwrap_or(u64::MAX),
                    u64::try_from(host).unwrap_or(u64::MAX),
                    format!("{} ÷ SMART 0x02 Data Units Written", end.media_source),
                )
            }
        },
    };
    WriteAmplification { stack, device }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diskstats_field_ten_is_sectors_written() {
        // vda: a line of this host's /proc/diskstats (kernel 6.18, 17 fields).
        let text = " 254       0 vda 1131277 45217 62336322 2585975 236176 152621 90746768 454115 0 347980 3245836 175248 6 36400464 205521 5158 224\n   7       0 loop0 10 0 80 1 2 0 16 0 0 4 1 0 0 0 0 0\n";
        assert_eq!(sectors_written(text, (254, 0)), Some(90_746_768));
        assert_eq!(sectors_written(text, (7, 0)), Some(16));
        assert_eq!(sectors_written(text, (7, 1)), None);
    }

    #[test]
    fn ratios_and_reasons() {
        assert_eq!(
            ratio(3 * 4096, 4096, "x".into()).describe(),
            "3.000 (12288 B below / 4096 B above)"
        );
        assert!(
            ratio(1, 0, "x".into())
                .describe()
                .starts_with("not available: nothing was written")
        );
    }
}
