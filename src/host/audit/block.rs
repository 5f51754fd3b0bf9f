//! Block devices (scheduler, queue depth, merges, read-ahead, write cache,
//! partition alignment) and filesystems (type, mount options, free space).

use super::rule::{choices, chosen, rule, write};
use super::sources::*;
use crate::host::root::HostRoot;
use crate::model::check::{Check, Profile};

/// The block devices worth auditing: not loop, RAM or zram devices.
pub fn devices(root: &HostRoot) -> Vec<String> {
    root.list("/sys/block")
        .into_iter()
        .filter(|d| {
            !["loop", "ram", "zram", "nbd"]
                .iter()
                .any(|p| d.starts_with(p))
        })
        .collect()
}

pub(super) fn checks(root: &HostRoot, profile: Profile, out: &mut Vec<Check>) {
    let devices = devices(root);
    if devices.is_empty() {
        out.push(
            rule(
                "block",
                "/sys/block",
                "the devices a disk probe measures",
                QUEUE,
            )
            .missing("/sys/block lists no disk (a container?)"),
        );
    }
    for dev in devices {
        device(root, &dev, profile, out);
    }
    filesystems(root, profile, out);
}

fn device(root: &HostRoot, dev: &str, profile: Profile, out: &mut Vec<Check>) {
    let q = format!("/sys/block/{dev}/queue");
    let rotational = root
        .read(&format!("{q}/rotational"))
        .is_some_and(|v| v == "1");
    let latency = profile == Profile::Latency;

    let path = format!("{q}/scheduler");
    let r = rule(
        format!("block.{dev}.scheduler"),
        &path,
        "an I/O scheduler reorders and holds requests; fast SSDs need none of it",
        RPK,
    );
    out.push(match root.read_why(&path) {
        Err(why) => r.missing(why),
        Ok(text) => {
            let current = chosen(&text);
            let offered = choices(&text);
            let best = if rotational { "mq-deadline" } else { "none" };
            if profile == Profile::Balanced || !offered.iter().any(|c| c == best) {
                r.info(current, best)
            } else {
                let good = current == best;
                r.expect(current, best, good, write(&path, best))
            }
        }
    });
    let path = format!("{q}/nomerges");
    let r = rule(
        format!("block.{dev}.nomerges"),
        &path,
        "merge lookups cost CPU on every request; 2 turns them off (rpk, perftune)",
        PERFTUNE,
    );
    out.push(match root.read_why(&path) {
        Err(why) => r.missing(why),
        Ok(v) if latency && !rotational => {
            let good = v == "2";
            r.expect(v, "2", good, write(&path, "2"))
        }
        Ok(v) => r.info(v, "0"),
    });
    let path = format!("{q}/read_ahead_kb");
    let r = rule(
        format!("block.{dev}.read_ahead_kb"),
        &path,
        "read-ahead turns a small random read into a large one",
        TUNED_THROUGHPUT,
    );
    out.push(match root.read_why(&path) {
        Err(why) => r.missing(why),
        Ok(v) if profile == Profile::Throughput => {
            let good = v.parse::<u64>().is_ok_and(|kb| kb >= 4096);
            r.expect(v, "≥ 4096", good, write(&path, "4096"))
        }
        Ok(v) => r.info(v, "128 for random I/O"),
    });
    for (file, why) in [
        (
            "nr_requests",
            "the queue depth the block layer allows per hardware queue",
        ),
        (
            "rotational",
            "1 for spinning disks: seeks dominate, a scheduler helps",
        ),
        (
            "write_cache",
            "write back: the device acknowledges before data is durable; flushes cost",
        ),
    ] {
        let path = format!("{q}/{file}");
        let r = rule(format!("block.{dev}.{file}"), &path, why, QUEUE);
        out.push(match root.read_why(&path) {
            Err(why) => r.missing(why),
            Ok(v) => r.info(v, ""),
        });
    }
    alignment(root, dev, out);
}

fn alignment(root: &HostRoot, dev: &str, out: &mut Vec<Check>) {
    let q = format!("/sys/block/{dev}/queue");
    let num = |p: &str| root.read(p).and_then(|v| v.parse::<u64>().ok());
    let physical = num(&format!("{q}/physical_block_size")).unwrap_or(512);
    let optimal = num(&format!("{q}/optimal_io_size")).unwrap_or(0);
    let unit = physical.max(optimal).max(4096);
    for part in root
        .list(&format!("/sys/block/{dev}"))
        .into_iter()
        .filter(|p| p.starts_with(dev) && p.len() > dev.len())
    {
        let path = format!("/sys/block/{dev}/{part}/start");
        let r = rule(
            format!("block.{part}.alignment"),
            &path,
            "a partition that starts off the physical block splits writes: read-modify-write and write amplification",
            QUEUE,
        );
        out.push(match num(&path) {
            None => r.missing(format!("{path} not readable")),
            Some(sectors) => {
                let offset = sectors * 512;
                let good = offset % unit == 0;
                r.expect(
                    format!("starts at byte {offset}"),
                    format!("a multiple of {unit} (physical {physical}, optimal I/O {optimal})"),
                    good,
                    None,
                )
            }
        });
    }
}

/// Filesystem types on real devices.
const DISK_FS: [&str; 6] = ["ext4", "ext3", "xfs", "btrfs", "f2fs", "zfs"];

fn filesystems(root: &HostRoot, profile: Profile, out: &mut Vec<Check>) {
    let path = "/proc/mounts";
    let text = match root
        .read_why(path)
        .or_else(|_| root.read_why("/proc/self/mounts"))
    {
        Ok(t) => t,
        Err(why) => {
            out.push(rule("fs", path, "filesystems and their mount options", EXT4).missing(why));
            return;
        }
    };
    let mut seen = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 4 || !DISK_FS.contains(&f[2]) || seen.contains(&f[1]) {
            continue;
        }
        seen.push(f[1]);
        let (device, mount, fstype, options) = (f[0], f[1], f[2], f[3]);
        let opts: Vec<&str> = options.split(',').collect();
        let id = |what: &str| format!("fs.{mount}.{what}");
        out.push(
            rule(
                id("type"),
                path,
                "the filesystem on the measured path",
                EXT4,
            )
            .info(format!("{fstype} on {device}"), ""),
        );
        let atime = if opts.contains(&"noatime") {
            "noatime"
        } else if opts.contains(&"relatime") {
            "relatime"
        } else {
            "atime"
        };
        let r = rule(
            id("atime"),
            path,
            "access-time updates turn reads into metadata writes",
            EXT4,
        );
        out.push(if profile == Profile::Balanced {
            r.info(atime, "relatime")
        } else {
            r.expect(atime, "noatime", atime == "noatime", None)
        });
        let discard = opts.contains(&"discard");
        let r = rule(
            id("discard"),
            path,
            "online discard issues a TRIM with every delete, stalling writes on many SSDs; prefer periodic fstrim",
            RPK,
        );
        out.push(if profile == Profile::Balanced {
            r.info(
                if discard { "discard" } else { "nodiscard" },
                "periodic fstrim",
            )
        } else {
            r.expect(
                if discard { "discard" } else { "nodiscard" },
                "nodiscard + periodic fstrim",
                !discard,
                None,
            )
        });
        for key in ["data", "commit"] {
            let value = opts
                .iter()
                .find_map(|o| o.strip_prefix(&format!("{key}=")))
                .unwrap_or("default");
            let why = match key {
                "data" => "ext4 journalling mode: data=writeback journals less (weaker ordering)",
                _ => "seconds between journal commits; longer batches more, bursts harder",
            };
            out.push(rule(id(key), path, why, EXT4).info(value, ""));
        }
        out.push(free_space(root, mount, path, profile));
    }
}

fn free_space(root: &HostRoot, mount: &str, read: &str, profile: Profile) -> Check {
    let r = rule(
        format!("fs.{mount}.free"),
        format!("{read}, statvfs({mount})"),
        "a nearly full SSD has little spare area: garbage collection runs in the write path",
        RPK,
    );
    if !root.is_live() {
        return r.missing("statvfs describes only the live host, not a captured tree");
    }
    match crate::sys::filesystem_space(std::path::Path::new(mount)) {
        Err(e) => r.missing(format!("statvfs({mount}): {e}")),
        Ok((0, _)) => r.missing(format!("{mount} reports no size")),
        Ok((total, free)) => {
            let share = free as f64 / total as f64 * 100.0;
            let current = format!(
                "{share:.0} % free ({} GiB of {} GiB)",
                free >> 30,
                total >> 30
            );
            match profile {
                Profile::Balanced => r.info(current, "≥ 10 % free"),
                _ => r.expect(current, "≥ 10 % free", share >= 10.0, None),
            }
        }
    }
}
