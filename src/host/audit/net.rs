//! IRQs (irqbalance, the affinity of block and network IRQs) and network
//! sysctls (busy polling, listen backlog).

use super::rule::{rule, write};
use super::sources::*;
use crate::host::root::HostRoot;
use crate::model::check::{Check, Profile};

pub(super) fn checks(root: &HostRoot, profile: Profile, out: &mut Vec<Check>) {
    out.push(irqbalance(root, profile));
    irq_affinity(root, out);
    sysctls(root, profile, out);
}

fn irqbalance(root: &HostRoot, profile: Profile) -> Check {
    let r = rule(
        "irq.irqbalance",
        "/proc/*/comm",
        "irqbalance moves IRQs every few seconds, possibly onto the measuring CPUs",
        PERFTUNE,
    );
    let pids: Vec<String> = root
        .list("/proc")
        .into_iter()
        .filter(|p| p.bytes().all(|b| b.is_ascii_digit()))
        .collect();
    if pids.is_empty() {
        return r.missing("/proc lists no processes");
    }
    let running = pids
        .iter()
        .any(|p| root.read(&format!("/proc/{p}/comm")).as_deref() == Some("irqbalance"));
    let current = if running { "running" } else { "not running" };
    match profile {
        Profile::Latency => r.info(
            current,
            "banned from the measuring CPUs (IRQBALANCE_BANNED_CPULIST) or stopped with IRQs pinned",
        ),
        _ => r.info(current, "running"),
    }
}

/// The IRQ name fragments of each block and network device: the device
/// name itself and, for virtio, the `virtioN` it sits on.
fn device_names(root: &HostRoot) -> Vec<(String, String)> {
    let mut names = Vec::new();
    for dev in super::block::devices(root) {
        names.push((dev.clone(), dev.clone()));
        if let Some(bus) = root.link_name(&format!("/sys/block/{dev}/device")) {
            names.push((dev.clone(), format!("{bus}-")));
        }
        if let Some(ctrl) = dev.strip_prefix("nvme").and_then(|r| r.split('n').next()) {
            names.push((dev.clone(), format!("nvme{ctrl}q")));
        }
    }
    for iface in root
        .list("/sys/class/net")
        .into_iter()
        .filter(|i| i != "lo")
    {
        names.push((iface.clone(), iface.clone()));
        if let Some(bus) = root.link_name(&format!("/sys/class/net/{iface}/device")) {
            names.push((iface.clone(), format!("{bus}-")));
        }
    }
    names
}

fn irq_affinity(root: &HostRoot, out: &mut Vec<Check>) {
    let text = match root.read_why("/proc/interrupts") {
        Ok(t) => t,
        Err(why) => {
            out.push(rule("irq", "/proc/interrupts", "device interrupts", IRQ).missing(why));
            return;
        }
    };
    let names = device_names(root);
    for line in text.lines() {
        let Some((irq, rest)) = line.trim_start().split_once(':') else {
            continue;
        };
        if !irq.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Some(action) = rest.split_whitespace().last() else {
            continue;
        };
        let Some((device, _)) = names
            .iter()
            .find(|(_, frag)| action.starts_with(frag.as_str()))
        else {
            continue;
        };
        let path = format!("/proc/irq/{irq}/smp_affinity_list");
        let r = rule(
            format!("irq.{irq}.affinity"),
            &path,
            format!("IRQ {irq} ({action}) of {device} runs its handler on these CPUs"),
            IRQ,
        );
        out.push(match root.read_why(&path) {
            Err(why) => r.missing(why),
            Ok(cpus) => r.info(
                cpus,
                "away from the measuring CPUs (or on the CPU that submits, for NVMe)",
            ),
        });
    }
}

fn sysctls(root: &HostRoot, profile: Profile, out: &mut Vec<Check>) {
    for id in ["net.core.busy_poll", "net.core.busy_read"] {
        let path = format!("/proc/sys/{}", id.replace('.', "/"));
        let r = rule(
            id,
            &path,
            "busy polling spins on the socket for this many µs instead of sleeping for the interrupt",
            TUNED_NETLAT,
        );
        out.push(match root.read_why(&path) {
            Err(why) => r.missing(why),
            Ok(v) if profile == Profile::Latency => {
                let good = v.parse::<u64>().is_ok_and(|us| us >= 50);
                r.expect(v, "50", good, write(&path, "50"))
            }
            Ok(v) => r.info(v, "0"),
        });
    }
    let path = "/proc/sys/net/core/somaxconn";
    let r = rule(
        "net.core.somaxconn",
        path,
        "a full listen backlog drops SYNs: the client retries after a second",
        NET_SYSCTL,
    );
    out.push(match root.read_why(path) {
        Err(why) => r.missing(why),
        Ok(v) => r.info(v, "≥ 4096 for servers taking bursts of connections"),
    });
}
