//! `lab --kernel`: which kernel groups this host can record, which steps
//! take each, and what the summary says about them.
//!
//! Each group is tried once before the suite by loading its programs as a
//! step would (`host::trace::Tracer::attach`); a group that cannot load
//! (not root, no BTF, a missing tracepoint, a PID namespace) is skipped
//! with the step's own error text and the steps run without it, rather
//! than every step failing. `--kernel blame` goes only to the steps whose
//! operations it can explain one at a time per thread: timer, hiccup, net
//! and disk at `--iodepth 1`; a step it cannot explain (the lab's QD32
//! writes) runs without it, and the summary says which and why.

use crate::model::kernel::KernelSource;

use super::steps::Step;

/// The kernel groups the steps get, and what was said about the rest.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KernelPlan {
    /// Groups this host loaded.
    pub groups: Vec<KernelSource>,
    /// Lines for the summary: groups skipped and steps run without one.
    pub notes: Vec<String>,
}

/// Tries the asked groups on this host: all together, and where that
/// fails, each alone, so a group that cannot load does not take the others
/// with it. A skipped group is said on stderr once, with the reason.
pub fn loadable(sources: &[KernelSource]) -> KernelPlan {
    let mut plan = KernelPlan::default();
    if sources.is_empty() || try_load(sources).is_ok() {
        plan.groups = sources.to_vec();
        return plan;
    }
    let mut skipped: Vec<(KernelSource, String)> = Vec::new();
    for &source in sources {
        match try_load(&[source]) {
            Ok(()) => plan.groups.push(source),
            Err(why) => skipped.push((source, why)),
        }
    }
    let lines: Vec<String> = match (plan.groups.is_empty(), skipped.first()) {
        (true, Some((_, why))) => vec![format!(
            "kernel series skipped, the steps run without them: {why}"
        )],
        _ => skipped
            .iter()
            .map(|(source, why)| {
                format!(
                    "--kernel {} skipped, the steps run without it: {why}",
                    source.name()
                )
            })
            .collect(),
    };
    for line in lines {
        eprintln!("cauda lab: {line}");
        plan.notes.push(line);
    }
    plan
}

/// Loads and detaches the programs of `sources` for this process: the
/// error text a step would print.
fn try_load(sources: &[KernelSource]) -> Result<(), String> {
    let request = crate::host::trace::Request {
        sources: sources.to_vec(),
        process: Some(std::process::id()),
        device: None,
        threads: 0,
    };
    crate::host::trace::Tracer::attach(&request)
        .map(drop)
        .map_err(|e| format!("{e:#}"))
}

/// Gives every probe step `--kernel` with the plan's groups, leaving
/// `blame` out of the steps it cannot explain; each such step is named in
/// the plan's notes, and said once on stderr.
pub fn apply(plan: &mut KernelPlan, steps: &mut [Step]) {
    if plan.groups.is_empty() {
        return;
    }
    let mut without = Vec::new();
    for step in steps.iter_mut().filter(|s| s.is_run) {
        let refusal = blame_refusal(&step.args);
        let groups: Vec<&str> = plan
            .groups
            .iter()
            .filter(|&&g| g != KernelSource::Blame || refusal.is_none())
            .map(|g| g.name())
            .collect();
        if plan.groups.contains(&KernelSource::Blame)
            && let Some(why) = refusal
        {
            without.push(format!("{} ran without --kernel blame: {why}", step.title));
        }
        if !groups.is_empty() {
            step.args.extend(["--kernel".into(), groups.join(",")]);
        }
    }
    if !without.is_empty() {
        eprintln!("cauda lab: {}", without.join("; "));
    }
    plan.notes.extend(without);
}

/// Why a step's command cannot take `--kernel blame` (`None`: it can),
/// from its arguments after `cauda`.
pub fn blame_refusal(args: &[String]) -> Option<String> {
    match args.first().map(String::as_str) {
        Some("disk") => {
            let depth = flag_value(args, "--iodepth").unwrap_or("1");
            (depth != "1").then(|| {
                format!(
                    "--iodepth {depth} keeps several I/Os in flight on each thread, and blame \
                     explains one operation at a time per thread (the QD1 step is the one to \
                     read)"
                )
            })
        }
        _ => None,
    }
}

/// The value of `--flag VALUE` or `--flag=VALUE` in `args`.
fn flag_value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    args.iter().enumerate().find_map(|(i, arg)| {
        if arg == flag {
            args.get(i + 1).map(String::as_str)
        } else {
            arg.strip_prefix(flag)?.strip_prefix('=')
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn args(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn blame_goes_to_steps_with_one_operation_in_flight_per_thread() {
        for ok in [
            &["timer"][..],
            &["hiccup"],
            &["net", "--loopback"],
            &["disk", "--iodepth", "1"],
            &["disk", "--rw", "randread"],
            &["disk", "--iodepth=1"],
        ] {
            assert_eq!(blame_refusal(&args(ok)), None, "{ok:?}");
        }
        let deep = blame_refusal(&args(&["disk", "--iodepth", "32"])).unwrap();
        assert!(deep.contains("--iodepth 32"), "{deep}");
        assert!(blame_refusal(&args(&["disk", "--iodepth=4"])).is_some());
    }

    #[test]
    fn the_lab_steps_get_their_groups_and_the_qd32_writes_no_blame() {
        let dir = Path::new("/tmp/lab");
        let mut steps = super::super::steps::plan(dir, true, &dir.join("d"), 64 << 20, &[]);
        let mut plan = KernelPlan {
            groups: vec![KernelSource::Runq, KernelSource::Blame],
            notes: Vec::new(),
        };
        apply(&mut plan, &mut steps);
        let kernel = |name: &str| {
            let step = steps.iter().find(|s| s.name == name).unwrap();
            flag_value(&step.args, "--kernel").map(str::to_string)
        };
        assert_eq!(kernel("audit"), None);
        for name in ["timer", "hiccup", "disk-randread-qd1", "net-tcp-gap0"] {
            assert_eq!(kernel(name).as_deref(), Some("runq,blame"), "{name}");
        }
        assert_eq!(kernel("disk-randwrite-qd32").as_deref(), Some("runq"));
        assert_eq!(plan.notes.len(), 1, "{:?}", plan.notes);
        assert!(
            plan.notes[0].starts_with("disk: 4k random writes, QD32 ran without --kernel blame")
        );
        // Blame alone: the QD32 step gets no --kernel at all.
        let mut steps = super::super::steps::plan(dir, true, &dir.join("d"), 64 << 20, &[]);
        let mut plan = KernelPlan {
            groups: vec![KernelSource::Blame],
            notes: Vec::new(),
        };
        apply(&mut plan, &mut steps);
        let qd32 = steps.iter().find(|s| s.name == "disk-randwrite-qd32");
        assert!(!qd32.unwrap().args.contains(&"--kernel".to_string()));
    }
}
