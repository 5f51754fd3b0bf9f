//! Which BPF programs a request loads, the tracepoints each may attach to,
//! and what a failure to load them means for the user.

use super::sys;
use crate::error::input_error;
use crate::host::root::HostRoot;
use crate::model::kernel::KernelSource;

const fn needed(program: &'static str, tracepoints: &'static [&'static str]) -> sys::Attach {
    sys::Attach {
        program,
        tracepoints,
        optional: false,
    }
}

/// The block layer's programs: `block_io_start` is 6.5+; before it,
/// requests that go through an I/O scheduler show their start at
/// insertion.
const BLOCK: [sys::Attach; 3] = [
    needed("block_io_start", &["block_io_start", "block_rq_insert"]),
    needed("block_rq_issue", &["block_rq_issue"]),
    needed("block_rq_complete", &["block_rq_complete"]),
];

const RUNQ: [sys::Attach; 3] = [
    needed("sched_wakeup", &["sched_wakeup"]),
    needed("sched_wakeup_new", &["sched_wakeup_new"]),
    needed("sched_switch", &["sched_switch"]),
];

/// Per-operation blame: the thread's states, what ran on its CPU, the
/// idle exit; page faults where the architecture has their tracepoints
/// (x86).
const BLAME: [sys::Attach; 11] = [
    needed("blame_switch", &["sched_switch"]),
    needed("blame_wakeup", &["sched_wakeup"]),
    needed("blame_irq_entry", &["irq_handler_entry"]),
    needed("blame_irq_exit", &["irq_handler_exit"]),
    needed("blame_softirq_entry", &["softirq_entry"]),
    needed("blame_softirq_exit", &["softirq_exit"]),
    needed("blame_hrtimer_entry", &["hrtimer_expire_entry"]),
    needed("blame_hrtimer_exit", &["hrtimer_expire_exit"]),
    needed("blame_cpu_idle", &["cpu_idle"]),
    sys::Attach {
        program: "blame_fault_user",
        tracepoints: &["page_fault_user"],
        optional: true,
    },
    sys::Attach {
        program: "blame_fault_kernel",
        tracepoints: &["page_fault_kernel"],
        optional: true,
    },
];

/// The programs for each group; blame on a block device also needs the
/// block layer's (its own requests' queue and device time).
pub(super) fn programs(sources: &[KernelSource], device: bool) -> Vec<sys::Attach> {
    let blame = sources.contains(&KernelSource::Blame);
    let mut out = Vec::new();
    if sources.contains(&KernelSource::Block) || (blame && device) {
        out.extend(BLOCK);
    }
    if sources.contains(&KernelSource::Runq) {
        out.extend(RUNQ);
    }
    if blame {
        out.extend(BLAME);
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
        // The verifier's refusals are EACCES too, with its log.
        sys::LoadError::Refused(_, Some(libc::EPERM | libc::EACCES), log)
            if log.trim().is_empty() || !log.contains("processed") =>
        {
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
        let block: Vec<_> = programs(&[KernelSource::Block], false)
            .iter()
            .map(|a| a.program)
            .collect();
        assert_eq!(
            block,
            ["block_io_start", "block_rq_issue", "block_rq_complete"]
        );
        assert_eq!(programs(&[KernelSource::Runq], false).len(), 3);
        assert_eq!(programs(&[KernelSource::Blame], false).len(), 11);
        assert_eq!(programs(&[KernelSource::Blame], true).len(), 14);
        assert_eq!(
            KernelSource::Block.tags().len() + KernelSource::Runq.tags().len(),
            KERNEL_TAGS.len()
        );
    }
}
