//! Kernel command line (isolation, idle limits, THP, mitigations,
//! skew_tick), the clocksource and timer migration.

use super::rule::{boot, choices, rule, write};
use super::sources::*;
use crate::host::root::HostRoot;
use crate::model::check::{Check, Profile};

/// The kernel's own arguments: everything before a lone `--` (the rest goes to init).
pub fn arguments(cmdline: &str) -> Vec<(&str, Option<&str>)> {
    cmdline
        .split_whitespace()
        .take_while(|a| *a != "--")
        .map(|a| match a.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (a, None),
        })
        .collect()
}

pub(super) fn checks(root: &HostRoot, profile: Profile, out: &mut Vec<Check>) {
    let path = "/proc/cmdline";
    let cmdline = match root.read_why(path) {
        Ok(c) => c,
        Err(why) => {
            out.push(rule("cmdline", path, "boot arguments", PARAMS).missing(why));
            String::new()
        }
    };
    let args = arguments(&cmdline);
    let get = |key: &str| -> Option<String> {
        args.iter()
            .rev()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.unwrap_or("").to_string())
    };
    let latency = profile == Profile::Latency;
    let shown = |v: Option<String>| v.unwrap_or_else(|| "not set".into());

    for (key, why) in [
        (
            "isolcpus",
            "isolated CPUs get no ordinary tasks: a measuring thread runs alone",
        ),
        (
            "nohz_full",
            "adaptive-tick CPUs skip the scheduler tick while one task runs",
        ),
        ("rcu_nocbs", "RCU callbacks move off these CPUs"),
    ] {
        let r = rule(format!("cmdline.{key}"), path, why, TUNED_NETLAT);
        let recommended = if latency {
            "the CPUs dedicated to measuring"
        } else {
            ""
        };
        out.push(if cmdline.is_empty() {
            r.missing("/proc/cmdline not readable")
        } else {
            r.info(shown(get(key)), recommended)
        });
    }
    for (key, why, recommended) in [
        (
            "idle",
            "idle=poll never sleeps: lowest wake-up latency, a core's full power",
            "not set (use idle-state disable instead)",
        ),
        (
            "intel_idle.max_cstate",
            "caps intel_idle's deepest state at boot",
            "runtime idle-state disable (see cpuidle.*)",
        ),
        (
            "processor.max_cstate",
            "caps acpi_idle's deepest state at boot",
            "runtime idle-state disable (see cpuidle.*)",
        ),
        (
            "transparent_hugepage",
            "THP's boot-time mode; the runtime mode is memory.thp.enabled",
            "never (latency) — runtime setting checked below",
        ),
        (
            "mitigations",
            "CPU vulnerability mitigations cost syscalls and context switches; a security trade-off, never recommended off here",
            "auto",
        ),
    ] {
        let r = rule(format!("cmdline.{key}"), path, why, PARAMS);
        out.push(if cmdline.is_empty() {
            r.missing("/proc/cmdline not readable")
        } else {
            r.info(shown(get(key)), recommended)
        });
    }
    let r = rule(
        "cmdline.skew_tick",
        path,
        "without skew_tick all CPUs' ticks fire at once and contend for the same locks",
        TUNED_NETLAT,
    );
    out.push(if cmdline.is_empty() {
        r.missing("/proc/cmdline not readable")
    } else if latency {
        let value = get("skew_tick");
        let good = value.as_deref() == Some("1");
        r.expect(shown(value), "1", good, boot("skew_tick=1"))
    } else {
        r.info(shown(get("skew_tick")), "")
    });

    out.push(clocksource(root, profile));
    out.push(timer_migration(root, profile));
}

fn clocksource(root: &HostRoot, profile: Profile) -> Check {
    let dir = "/sys/devices/system/clocksource/clocksource0";
    let path = format!("{dir}/current_clocksource");
    let r = rule(
        "clocksource",
        &path,
        "a clocksource other than the TSC makes every time read a slow (sometimes trapping) access",
        RPK,
    );
    match root.read_why(&path) {
        Err(why) => r.missing(why),
        Ok(current) => {
            let available = root
                .read(&format!("{dir}/available_clocksource"))
                .map(|t| choices(&t))
                .unwrap_or_default();
            if profile == Profile::Balanced || !available.iter().any(|c| c == "tsc") {
                r.info(current, "tsc where available")
            } else {
                let good = current == "tsc";
                r.expect(current, "tsc", good, write(&path, "tsc"))
            }
        }
    }
}

fn timer_migration(root: &HostRoot, profile: Profile) -> Check {
    let path = "/proc/sys/kernel/timer_migration";
    let r = rule(
        "kernel.timer_migration",
        path,
        "migrating timers to busy CPUs wakes them for other CPUs' work",
        TUNED_NETLAT,
    );
    match root.read_why(path) {
        Err(why) => r.missing(why),
        Ok(v) if profile == Profile::Latency => {
            let good = v == "0";
            r.expect(v, "0", good, write(path, "0"))
        }
        Ok(v) => r.info(v, "1"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_arguments_are_not_the_kernels() {
        let args = arguments("quiet isolcpus=1 -- --isolcpus=9 init");
        assert_eq!(args, vec![("quiet", None), ("isolcpus", Some("1"))]);
    }
}
