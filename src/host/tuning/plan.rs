//! A tuning plan: what `host tune` would change, built only from the
//! audit's checks so the tuner can change nothing the audit cannot explain.
//!
//! Every check with status `warn` and a [`Fix::Write`] becomes a runtime
//! change; a [`Fix::Boot`] becomes a recommended kernel argument, printed
//! with the exact line to put in `/etc/default/grub` — boot arguments are
//! never applied. The plan renders as text, JSON (`cauda.plan/1`) or a
//! shell script a reviewer can read line by line.

use serde::Serialize;

use super::paths::is_setting_path;
use crate::error::input_error;
use crate::host::root::HostRoot;
use crate::model::check::{Check, Fix, Profile, Status};

/// The schema of `host tune --json`.
pub const PLAN_SCHEMA: &str = "cauda.plan/1";

/// Where boot arguments are shown to be in effect.
pub const CMDLINE: &str = "/proc/cmdline";

/// One change of the plan.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Change {
    /// The check id.
    pub id: String,
    /// The host path written (`/proc/cmdline` for a boot argument).
    pub path: String,
    /// The value in effect now, as the audit read it.
    pub current: String,
    /// The value to write, or the boot argument to add.
    pub target: String,
    /// True when the change needs a reboot (a boot argument: recommended only).
    pub reboot: bool,
    /// Why, from the audit.
    pub why: String,
}

/// How to add the recommended boot arguments.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BootAdvice {
    /// The arguments, in plan order.
    pub arguments: Vec<String>,
    /// The file to edit, when the host has one (`/etc/default/grub`).
    pub file: Option<String>,
    /// The exact line to put there (or the text to append to the command line).
    pub line: String,
    /// What to run afterwards.
    pub then: String,
}

/// A tuning plan.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Plan {
    /// [`PLAN_SCHEMA`].
    pub schema: &'static str,
    /// The profile.
    pub profile: Profile,
    /// Runtime changes first, then boot arguments.
    pub changes: Vec<Change>,
    /// How to add the boot arguments, when there are any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boot: Option<BootAdvice>,
}

impl Plan {
    /// The runtime (applicable) changes.
    pub fn runtime(&self) -> impl Iterator<Item = &Change> {
        self.changes.iter().filter(|c| !c.reboot)
    }
}

/// True when `id` is selected by `--only` (exact ids, or `prefix*`).
fn selected(id: &str, only: &[String]) -> bool {
    only.is_empty()
        || only.iter().any(|pattern| match pattern.strip_suffix('*') {
            Some(prefix) => id.starts_with(prefix),
            None => id == pattern,
        })
}

/// Builds the plan for `profile` from the audit's checks. `only` (from
/// `--only`) must name ids the audit knows; an unknown one is bad input.
pub fn build(
    checks: &[Check],
    profile: Profile,
    only: &[String],
    root: &HostRoot,
) -> anyhow::Result<Plan> {
    for pattern in only {
        if !checks
            .iter()
            .any(|c| selected(&c.id, std::slice::from_ref(pattern)))
        {
            let mut known: Vec<&str> = checks
                .iter()
                .filter(|c| c.fix.is_some())
                .map(|c| c.id.as_str())
                .collect();
            known.sort_unstable();
            return Err(input_error(format!(
                "--only {pattern}: the audit has no such check id; tunable ids here: {} \
                 (a trailing * matches a prefix, e.g. block.*)",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            )));
        }
    }
    let mut runtime = Vec::new();
    let mut boot = Vec::new();
    for check in checks
        .iter()
        .filter(|c| c.status == Status::Warn && selected(&c.id, only))
    {
        match &check.fix {
            Some(Fix::Write { path, .. }) if !is_setting_path(path) => {
                return Err(input_error(format!(
                    "check {}: its fix writes {path}, but cauda writes only kernel settings \
                     under /proc/sys and /sys",
                    check.id
                )));
            }
            Some(Fix::Write { path, value }) => runtime.push(Change {
                id: check.id.clone(),
                path: path.clone(),
                current: check.current.clone(),
                target: value.clone(),
                reboot: false,
                why: check.why.clone(),
            }),
            Some(Fix::Boot { argument }) => boot.push(Change {
                id: check.id.clone(),
                path: CMDLINE.into(),
                current: check.current.clone(),
                target: argument.clone(),
                reboot: true,
                why: check.why.clone(),
            }),
            None => {}
        }
    }
    let advice = (!boot.is_empty()).then(|| boot_advice(&boot, root));
    runtime.extend(boot);
    Ok(Plan {
        schema: PLAN_SCHEMA,
        profile,
        changes: runtime,
        boot: advice,
    })
}

/// The exact line that adds `changes`' arguments: the host's
/// `GRUB_CMDLINE_LINUX` with them merged in (an argument with the same key
/// replaces the old one), or the arguments alone when there is no GRUB.
fn boot_advice(changes: &[Change], root: &HostRoot) -> BootAdvice {
    let arguments: Vec<String> = changes.iter().map(|c| c.target.clone()).collect();
    let grub = "/etc/default/grub";
    let key = |arg: &str| arg.split('=').next().unwrap_or(arg).to_string();
    match std::fs::read_to_string(root.path(grub)) {
        Ok(text) => {
            let existing = text
                .lines()
                .rev()
                .find_map(|l| l.trim().strip_prefix("GRUB_CMDLINE_LINUX="))
                .map(|v| v.trim().trim_matches('"').trim_matches('\'').to_string())
                .unwrap_or_default();
            let mut tokens: Vec<String> = existing.split_whitespace().map(String::from).collect();
            for arg in &arguments {
                tokens.retain(|t| key(t) != key(arg));
                tokens.push(arg.clone());
            }
            BootAdvice {
                arguments,
                file: Some(grub.into()),
                line: format!("GRUB_CMDLINE_LINUX=\"{}\"", tokens.join(" ")),
                then: "update-grub (Debian/Ubuntu) or grub2-mkconfig -o /boot/grub2/grub.cfg, then reboot".into(),
            }
        }
        Err(_) => BootAdvice {
            line: arguments.join(" "),
            arguments,
            file: None,
            then: "append to the kernel command line of the boot loader (systemd-boot: \
                   /etc/kernel/cmdline, then kernel-install; others: their entry's options), then reboot"
                .into(),
        },
    }
}

/// The plan as the dry run prints it.
pub fn render_text(plan: &Plan, applying: bool) -> String {
    let runtime: Vec<&Change> = plan.runtime().collect();
    let boot = plan.changes.len() - runtime.len();
    let mut out = format!(
        "cauda host tune --profile {}: {} runtime change(s), {} boot argument(s){}\n",
        profile_name(plan.profile),
        runtime.len(),
        boot,
        if applying {
            ""
        } else {
            " — dry run, nothing changed"
        }
    );
    if plan.changes.is_empty() {
        out.push_str("  nothing to change: every tunable check is already ok for this profile\n");
        return out;
    }
    let id_w = plan.changes.iter().map(|c| c.id.len()).max().unwrap_or(0);
    for c in &runtime {
        out.push_str(&format!(
            "  {:id_w$}  {} → {}   (runtime, {})\n      {}\n",
            c.id, c.current, c.target, c.path, c.why
        ));
    }
    if let Some(advice) = &plan.boot {
        out.push_str("boot arguments (recommended only, need a reboot; never applied by cauda):\n");
        for c in plan.changes.iter().filter(|c| c.reboot) {
            out.push_str(&format!(
                "  {:id_w$}  add {}   (now: {})\n      {}\n",
                c.id, c.target, c.current, c.why
            ));
        }
        match &advice.file {
            Some(file) => out.push_str(&format!("  in {file}, set:\n    {}\n", advice.line)),
            None => out.push_str(&format!(
                "  add to the kernel command line:\n    {}\n",
                advice.line
            )),
        }
        out.push_str(&format!("  then: {}\n", advice.then));
    }
    if !applying && !runtime.is_empty() {
        out.push_str(&format!(
            "apply with: cauda host tune --profile {} --apply --journal FILE  (as root; undo with cauda host rollback --journal FILE)\n",
            profile_name(plan.profile)
        ));
    }
    out
}

/// The profile's name on the command line.
pub fn profile_name(profile: Profile) -> &'static str {
    match profile {
        Profile::Latency => "latency",
        Profile::Throughput => "throughput",
        Profile::Balanced => "balanced",
    }
}

/// Quotes `text` for a POSIX shell.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The plan as a shell script to review and run by hand: one commented
/// write per change, with the command that undoes it beside it.
pub fn render_script(plan: &Plan, host: &str) -> String {
    let mut out = format!(
        "#!/bin/sh\n# Written by cauda host tune --profile {} --script, for host {host}.\n\
         # Review each line before running it as root. Unlike `cauda host tune --apply`,\n\
         # this script keeps no journal: the undo line under each change is the way back.\n\
         set -eu\n",
        profile_name(plan.profile)
    );
    for c in plan.runtime() {
        out.push_str(&format!(
            "\n# {}: {} -> {}\n# why: {}\nprintf '%s\\n' {} > {}\n# undo: printf '%s\\n' {} > {}\n",
            c.id,
            c.current,
            c.target,
            c.why,
            shell_quote(&c.target),
            shell_quote(&c.path),
            shell_quote(&c.current),
            shell_quote(&c.path),
        ));
    }
    if let Some(advice) = &plan.boot {
        out.push_str("\n# Boot arguments (need a reboot; not run by this script):\n");
        for c in plan.changes.iter().filter(|c| c.reboot) {
            out.push_str(&format!("#   {}: add {} ({})\n", c.id, c.target, c.why));
        }
        match &advice.file {
            Some(file) => out.push_str(&format!("# In {file}, set:\n#   {}\n", advice.line)),
            None => out.push_str(&format!(
                "# Add to the kernel command line:\n#   {}\n",
                advice.line
            )),
        }
        out.push_str(&format!("# then: {}\n", advice.then));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(id: &str, status: Status, fix: Option<Fix>) -> Check {
        Check {
            id: id.into(),
            read: "test".into(),
            current: "60".into(),
            recommended: "10".into(),
            status,
            why: "because".into(),
            source: "test".into(),
            fix,
        }
    }

    fn write(path: &str, value: &str) -> Option<Fix> {
        Some(Fix::Write {
            path: path.into(),
            value: value.into(),
        })
    }

    #[test]
    fn warnings_with_fixes_become_changes_and_boot_arguments_only_advice() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("etc/default")).unwrap();
        std::fs::write(
            dir.path().join("etc/default/grub"),
            "GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX=\"quiet intel_idle.max_cstate=9\"\n",
        )
        .unwrap();
        let checks = vec![
            check(
                "vm.swappiness",
                Status::Warn,
                write("/proc/sys/vm/swappiness", "10"),
            ),
            check(
                "vm.dirty_ratio",
                Status::Ok,
                write("/proc/sys/vm/dirty_ratio", "10"),
            ),
            check("cpu.smt", Status::Warn, None),
            check(
                "cmdline.max_cstate",
                Status::Warn,
                Some(Fix::Boot {
                    argument: "intel_idle.max_cstate=1".into(),
                }),
            ),
        ];
        let plan = build(&checks, Profile::Latency, &[], &HostRoot::new(dir.path())).unwrap();
        assert_eq!(plan.changes.len(), 2);
        assert_eq!(plan.runtime().count(), 1);
        assert!(plan.changes[1].reboot);
        let advice = plan.boot.as_ref().unwrap();
        assert_eq!(
            advice.line,
            "GRUB_CMDLINE_LINUX=\"quiet intel_idle.max_cstate=1\""
        );
        let text = render_text(&plan, false);
        assert!(
            text.contains("60 → 10") && text.contains("dry run"),
            "{text}"
        );
        let script = render_script(&plan, "box");
        assert!(
            script.contains("printf '%s\\n' '10' > '/proc/sys/vm/swappiness'"),
            "{script}"
        );
        assert!(script.contains("# undo: printf '%s\\n' '60'"));

        let only = build(
            &checks,
            Profile::Latency,
            &["cmdline.*".into()],
            &HostRoot::new(dir.path()),
        )
        .unwrap();
        assert_eq!(only.changes.len(), 1);
        let err = build(
            &checks,
            Profile::Latency,
            &["vm.nope".into()],
            &HostRoot::new(dir.path()),
        )
        .unwrap_err();
        assert!(err.to_string().contains("vm.swappiness"), "{err}");
    }

    #[test]
    fn quoting_survives_single_quotes() {
        assert_eq!(shell_quote("a'b"), r"'a'\''b'");
    }
}
