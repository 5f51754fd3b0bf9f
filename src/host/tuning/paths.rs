//! The only paths host tuning may write: kernel attributes as runtime
//! settings, and cauda's own two boot-time files. The plan builds only
//! these, `--persist` writes only these, and a journal naming anything
//! else is refused before a rollback writes a byte.

/// True when cauda may write `path` as a runtime setting: a kernel
/// attribute under `/proc/sys` or `/sys`, never anything else.
pub fn is_setting_path(path: &str) -> bool {
    (path.starts_with("/proc/sys/") || path.starts_with("/sys/"))
        && !path.split('/').any(|part| part == "..")
}

/// The sysctl.d file cauda writes.
pub const SYSCTL_FILE: &str = "/etc/sysctl.d/90-cauda-tune.conf";
/// The udev rule cauda writes.
pub const UDEV_FILE: &str = "/etc/udev/rules.d/90-cauda-tune.rules";
