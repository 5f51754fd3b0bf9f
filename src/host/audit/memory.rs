//! Memory checks: transparent huge pages, swappiness, dirty-page
//! writeback thresholds, vmstat interval, zone reclaim, NUMA balancing and
//! swap in use.

use super::rule::{chosen, rule, write};
use super::sources::*;
use crate::host::root::HostRoot;
use crate::model::check::{Check, Profile};

const THP: &str = "/sys/kernel/mm/transparent_hugepage";

pub(super) fn checks(root: &HostRoot, profile: Profile, out: &mut Vec<Check>) {
    thp(root, profile, out);
    sysctls(root, profile, out);
    out.push(swap(root, profile));
}

fn thp(root: &HostRoot, profile: Profile, out: &mut Vec<Check>) {
    let path = format!("{THP}/enabled");
    let r = rule(
        "memory.thp.enabled",
        &path,
        "huge-page faults zero 2 MB at once and may compact memory in the faulting thread",
        TUNED_NETLAT,
    );
    out.push(match root.read_why(&path) {
        Err(why) => r.missing(why),
        Ok(text) => {
            let current = chosen(&text);
            match profile {
                Profile::Latency => {
                    let good = current == "never";
                    r.expect(current, "never", good, write(&path, "never"))
                }
                Profile::Throughput => {
                    let good = current != "never";
                    r.expect(current, "always or madvise", good, write(&path, "madvise"))
                }
                Profile::Balanced => r.info(current, "madvise"),
            }
        }
    });
    let path = format!("{THP}/defrag");
    let r = rule(
        "memory.thp.defrag",
        &path,
        "defrag=always makes a faulting thread compact memory synchronously (a stall of milliseconds)",
        super::sources::THP,
    );
    out.push(match root.read_why(&path) {
        Err(why) => r.missing(why),
        Ok(text) => {
            let current = chosen(&text);
            match profile {
                Profile::Latency => {
                    let good = current == "never";
                    r.expect(current, "never", good, write(&path, "never"))
                }
                _ => {
                    let good = current != "always";
                    r.expect(current, "madvise", good, write(&path, "madvise"))
                }
            }
        }
    });
    let path = format!("{THP}/khugepaged/defrag");
    let r = rule(
        "memory.thp.khugepaged_defrag",
        &path,
        "khugepaged collapses pages in the background, taking locks the application needs",
        super::sources::THP,
    );
    out.push(match root.read_why(&path) {
        Err(why) => r.missing(why),
        Ok(v) if profile == Profile::Latency => {
            let good = v == "0";
            r.expect(v, "0", good, write(&path, "0"))
        }
        Ok(v) => r.info(v, "1"),
    });
}

/// A numeric sysctl's recommendation: the accepted range and the value to write.
struct Want {
    low: u64,
    high: u64,
    write: &'static str,
}

const fn want(low: u64, high: u64, write: &'static str) -> Option<Want> {
    Some(Want { low, high, write })
}

/// One sysctl the audit judges: its id, why it matters, its source, and
/// what each profile wants of it.
type Sysctl = (
    &'static str,
    &'static str,
    &'static str,
    fn(Profile) -> Option<Want>,
);

/// The sysctls of memory and writeback, in the order they are reported.
fn sysctl_table() -> [Sysctl; 9] {
    use Profile::*;
    [
        (
            "vm.swappiness",
            "swapping out anonymous memory turns a later touch into a major fault",
            RPK,
            |p| match p {
                Latency => want(1, 10, "1"),
                Throughput => want(0, 10, "10"),
                Balanced => None,
            },
        ),
        (
            "vm.dirty_ratio",
            "past this share of memory dirty, writers block in synchronous writeback",
            TUNED_LATENCY,
            |p| match p {
                Latency => want(1, 10, "10"),
                Throughput => want(30, 50, "40"),
                Balanced => None,
            },
        ),
        (
            "vm.dirty_background_ratio",
            "background writeback starts here; low values write early and in small batches",
            TUNED_LATENCY,
            |p| match p {
                Latency => want(1, 5, "3"),
                Throughput => want(5, 15, "10"),
                Balanced => None,
            },
        ),
        (
            "vm.dirty_bytes",
            "an absolute dirty limit (overrides vm.dirty_ratio when set)",
            VM,
            |_| None,
        ),
        (
            "vm.dirty_expire_centisecs",
            "how old dirty data must be before writeback takes it",
            VM,
            |_| None,
        ),
        (
            "vm.dirty_writeback_centisecs",
            "how often the flusher threads wake",
            VM,
            |_| None,
        ),
        (
            "vm.stat_interval",
            "vmstat updates every second wake every CPU (per-CPU counters fold)",
            TUNED_NETLAT,
            |p| match p {
                Latency => want(10, u64::MAX, "10"),
                _ => None,
            },
        ),
        (
            "vm.zone_reclaim_mode",
            "zone reclaim frees local memory synchronously instead of using a remote node",
            VM,
            |_| want(0, 0, "0"),
        ),
        (
            "kernel.numa_balancing",
            "NUMA balancing unmaps pages to sample access, causing hinting faults",
            TUNED_NETLAT,
            |p| match p {
                Latency => want(0, 0, "0"),
                _ => None,
            },
        ),
    ]
}

fn sysctls(root: &HostRoot, profile: Profile, out: &mut Vec<Check>) {
    let dirty_bytes = root
        .read("/proc/sys/vm/dirty_bytes")
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    let dirty_background_bytes = root
        .read("/proc/sys/vm/dirty_background_bytes")
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    for (id, why, source, recommend) in sysctl_table() {
        let path = format!("/proc/sys/{}", id.replace('.', "/"));
        let r = rule(id, &path, why, source);
        let value = match root.read_why(&path) {
            Err(why) => {
                out.push(r.missing(why));
                continue;
            }
            Ok(v) => v,
        };
        let overridden = (id == "vm.dirty_ratio" && dirty_bytes > 0)
            || (id == "vm.dirty_background_ratio" && dirty_background_bytes > 0);
        if overridden {
            out.push(r.info(format!("{value} (a *_bytes limit is in effect)"), ""));
            continue;
        }
        let Some(want) = recommend(profile) else {
            out.push(r.info(value, ""));
            continue;
        };
        let recommended = if want.low == want.high {
            want.low.to_string()
        } else if want.high == u64::MAX {
            format!("≥ {}", want.low)
        } else {
            format!("{}-{}", want.low, want.high)
        };
        let good = value
            .parse::<u64>()
            .is_ok_and(|v| (want.low..=want.high).contains(&v));
        out.push(r.expect(value, recommended, good, write(&path, want.write)));
    }
}

fn swap(root: &HostRoot, profile: Profile) -> Check {
    let path = "/proc/swaps";
    let r = rule(
        "memory.swap",
        path,
        "a page swapped out costs a disk read when touched again",
        VM,
    );
    let text = match root.read_why(path) {
        Err(why) => return r.missing(why),
        Ok(t) => t,
    };
    let devices: Vec<String> = text
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 4).then(|| format!("{} (used {} KiB of {})", f[0], f[3], f[2]))
        })
        .collect();
    let used: u64 = text
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(3)?.parse::<u64>().ok())
        .sum();
    let current = if devices.is_empty() {
        "no swap".to_string()
    } else {
        devices.join(", ")
    };
    match profile {
        Profile::Latency => r.expect(current, "no swap in use", used == 0, None),
        _ => r.info(current, ""),
    }
}
