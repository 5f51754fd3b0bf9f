//! Whether a test may load BPF programs here, and the machine to itself
//! while it does: root and BTF, or a skip with the reason printed (a
//! failure under `CAUDA_REQUIRE_BPF=1`, which `.ci/run` sets).

use std::path::Path;

use super::is_root;

/// One BPF test at a time: they share the CPUs, and the run-queue test's
/// busy loops must be the only load beside its timer.
pub static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The machine to this test alone when BPF programs can be loaded here;
/// `None` (the reason printed, or a failure under CAUDA_REQUIRE_BPF=1)
/// when they cannot.
pub fn bpf_ready() -> Option<std::sync::MutexGuard<'static, ()>> {
    let missing = if !is_root() {
        Some("needs root to load BPF programs")
    } else if !Path::new("/sys/kernel/btf/vmlinux").exists() {
        Some("the kernel has no BTF (/sys/kernel/btf/vmlinux)")
    } else {
        None
    };
    match missing {
        None => Some(ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())),
        Some(why) => {
            let required = std::env::var("CAUDA_REQUIRE_BPF").is_ok_and(|v| v == "1");
            assert!(!required, "CAUDA_REQUIRE_BPF=1 but {why}");
            eprintln!("skipped: {why}");
            None
        }
    }
}
