//! Which BPF programs a request loads, the tracepoints each may attach to,
//! and what a failure to load them means for the user.

use super::sys;
use crate::error::input_error;
use crate::host::root::HostRoot;
use crate::model::kernel::KernelSource;

/// The programs for each group, and the tracepoints each may attach to.
pub(super) fn programs(sources: &[KernelSource]) -> Vec<sys::Attach> {
    let mut out = Vec::new();
    if sources.contains(&KernelSource::Block) {
        out.extend([
            // block_io_start is 6.5+; before it, requests that go through
            // an I/O scheduler show their start at insertion.
            sys::Attach {
                program: "block_io_start",
                tracepoints: &["block_io_start", "block_rq_insert"],
            },
            sys::Attach {
                program: "block_rq_issue",
                tracepoints: &["block_rq_issue"],
            },
            sys::Attach {
                program: "block_rq_complete",
                tracepoints: &["block_rq_complete"],
            },
        ]);
    }
    if sources.contains(&KernelSource::Runq) {
        out.extend([
            sys::Attach {
                program: "sched_wakeup",
                tracepoints: &["sched_wakeup"],
            },
            sys::Attach {
                program: "sched_wakeup_new",
                tracepoints: &["sched_wakeup_new"],
            },
            sys::Attach {
                program: "sched_switch",
                tracepoints: &["sched_switch"],
            },
        ]);
    }
    out
}

/// Turns a load failure into what the user can do about it (exit 2).
pub(super) fn explain(error: sys::LoadError) -> anyhow::Error {
    let kernel = HostRoot::default()
        .kernel_release()
        .unwrap_or_else(|| "this kernel".into());
    let message = match error {
        sys::LoadError::NoBtf(e) => format!(
            "--kernel: this kernel ({kernel}) has no readable BTF at /sys/kernel/btf/vmlinux \
             ({e}); the kernel series need a kernel built with CONFIG_DEBUG_INFO_BTF"
        ),
        sys::LoadError::NoTracepoint(program, tracepoints) => format!(
            "--kernel: {kernel} has none of the tracepoints {} for {program}; \
             drop the group that needs it from --kernel",
            tracepoints.join(", ")
        ),
        sys::LoadError::Refused(_, Some(libc::EPERM | libc::EACCES), _) => {
            "--kernel: loading BPF programs needs root, or CAP_BPF and CAP_PERFMON \
             (this process has neither): run cauda as root, give it those capabilities \
             (setcap cap_bpf,cap_perfmon+ep), or drop --kernel"
                .to_string()
        }
        sys::LoadError::Refused(program, errno, log) => {
            let what = program.map_or("the BPF object".to_string(), |p| format!("program {p}"));
            let log: Vec<&str> = log.lines().rev().take(8).collect();
            let log: Vec<&str> = log.into_iter().rev().collect();
            format!(
                "--kernel: {kernel} refused {what}{}: {}; drop --kernel, or report this \
                 with the kernel version",
                errno.map_or(String::new(), |e| format!(
                    " ({})",
                    std::io::Error::from_raw_os_error(e)
                )),
                log.join(" | ")
            )
        }
    };
    input_error(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::kernel::KERNEL_TAGS;

    #[test]
    fn each_group_attaches_its_programs() {
        let block: Vec<_> = programs(&[KernelSource::Block])
            .iter()
            .map(|a| a.program)
            .collect();
        assert_eq!(
            block,
            ["block_io_start", "block_rq_issue", "block_rq_complete"]
        );
        assert_eq!(programs(&[KernelSource::Runq]).len(), 3);
        assert_eq!(
            KernelSource::Block.tags().len() + KernelSource::Runq.tags().len(),
            KERNEL_TAGS.len()
        );
    }
}
