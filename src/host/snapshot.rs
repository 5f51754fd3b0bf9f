//! Capturing the host snapshot stored in every run
//! ([`crate::model::HostSnapshot`]): the static conditions that shape a
//! latency distribution. A value the host does not expose (a container,
//! another kernel) is `null`, never an error.
//!
//! Reads go through a [`HostRoot`] (`/` normally) so tests can point at a
//! captured fake `/proc` and `/sys` tree.

use super::cpulist::parse_cpu_list;
use super::root::HostRoot;
use crate::model::HostSnapshot;
use crate::model::check::Profile;

/// Reads the snapshot from a host root.
pub fn capture(root: &HostRoot) -> HostSnapshot {
    let cpuidle = "/sys/devices/system/cpu/cpuidle";
    HostSnapshot {
        hostname: root.hostname(),
        kernel: root.kernel_release(),
        cpu_model: root.cpu_model(),
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
