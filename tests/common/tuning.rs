//! What the `host tune` tests share: the checks file `--from` reads (as
//! `cauda host audit --json` writes it) and the tune and rollback commands,
//! for a fake root (`tune.rs`) and for this machine (`tune_host.rs`).

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::{Value, json};

use super::cauda;

/// A warning whose fix writes `value` to `path`, which now holds `current`.
pub fn warn(id: &str, current: &str, path: &str, value: &str) -> Value {
    json!({"id": id, "read": path, "current": current, "recommended": value,
           "status": "warn", "why": format!("{id} works against latency"), "source": "test",
           "fix": {"kind": "write", "path": path, "value": value}})
}

/// Writes `checks` to `DIR/checks.json`, readable by anyone (a test may
/// run cauda as nobody); its path.
pub fn write_checks(dir: &Path, checks: &Value) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("checks.json");
    std::fs::write(&path, serde_json::to_vec(checks).unwrap()).unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    path
}

/// `cauda host tune --profile latency`: a dry run of the plan from the
/// live audit, to which a test adds `--root`, `--from` and the rest.
pub fn host_tune() -> Command {
    let mut c = cauda();
    c.args(["host", "tune", "--profile", "latency"]);
    c
}

/// `cauda host tune --profile latency --from CHECKS`.
pub fn tune_from(from: &Path) -> Command {
    let mut c = host_tune();
    c.arg("--from").arg(from);
    c
}

/// `cauda host tune --profile latency --from CHECKS --apply --journal JOURNAL`.
pub fn apply(from: &Path, journal: &Path) -> Command {
    let mut c = tune_from(from);
    c.arg("--apply").arg("--journal").arg(journal);
    c
}

/// `cauda host rollback --journal JOURNAL`.
pub fn rollback(journal: &Path) -> Command {
    let mut c = cauda();
    c.args(["host", "rollback", "--journal"]).arg(journal);
    c
}
