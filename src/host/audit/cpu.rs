//! CPU checks: model, frequency governor, EPP, boost, cpuidle driver and
//! governor, every idle state judged by its exit latency, PM QoS and SMT.

use super::rule::{choices, chosen, rule, write};
use super::sources::*;
use crate::host::root::HostRoot;
use crate::model::check::{Check, Profile, Status};

const CPU: &str = "/sys/devices/system/cpu";

/// Idle states that take longer than this to exit are disabled for the
/// latency profile (tuned's latency-performance holds a PM QoS limit of a
/// few µs; `force_latency=cstate.id_no_zero:1|3`).
pub const LATENCY_EXIT_LIMIT_US: u64 = 10;

pub(super) fn checks(root: &HostRoot, profile: Profile, out: &mut Vec<Check>) {
    out.push(model(root));
    frequency(root, profile, out);
    out.push(boost(root, profile));
    idle(root, profile, out);
    out.push(dma_latency(root, profile));
    resume_latency(root, out);
    out.push(smt(root, profile));
}

/// The online CPUs' directory names (`cpu0`, `cpu1`, …).
pub(super) fn cpus(root: &HostRoot) -> Vec<String> {
    root.list(CPU)
        .into_iter()
        .filter(|n| {
            n.strip_prefix("cpu")
                .is_some_and(|d| d.parse::<u32>().is_ok())
        })
        .collect()
}

fn model(root: &HostRoot) -> Check {
    let r = rule(
        "cpu.model",
        "/proc/cpuinfo",
        "the CPU sets which idle states and frequency controls exist",
        "/proc/cpuinfo",
    );
    match root.cpu_model() {
        Some(model) => r.info(model, ""),
        None => r.missing("/proc/cpuinfo has no model name"),
    }
}

fn frequency(root: &HostRoot, profile: Profile, out: &mut Vec<Check>) {
    let base = format!("{CPU}/cpufreq");
    let policies: Vec<String> = root
        .list(&base)
        .into_iter()
        .filter(|p| p.starts_with("policy"))
        .collect();
    if policies.is_empty() {
        out.push(
            rule(
                "cpu.governor",
                format!("{base}/policy*/scaling_governor"),
                "frequency scaling changes how fast a woken CPU runs",
                CPUFREQ,
            )
            .missing(format!(
                "{base} has no policies (no cpufreq driver: a VM or a fixed clock)"
            )),
        );
        return;
    }
    for policy in policies {
        let path = format!("{base}/{policy}/scaling_governor");
        let r = rule(
            format!("cpu.{policy}.governor"),
            &path,
            "a power-saving governor ramps frequency after a wake-up, so short bursts run slow",
            TUNED_LATENCY,
        );
        out.push(match root.read_why(&path) {
            Err(why) => r.missing(why),
            Ok(gov) => match profile {
                Profile::Balanced => r.info(gov, "schedutil or performance"),
                _ => {
                    let good = gov == "performance";
                    r.expect(gov, "performance", good, write(&path, "performance"))
                }
            },
        });
        let path = format!("{base}/{policy}/energy_performance_preference");
        if let Ok(epp) = root.read_why(&path) {
            let r = rule(
                format!("cpu.{policy}.epp"),
                &path,
                "the energy/performance preference biases the hardware toward slow, efficient P-states",
                CPUFREQ,
            );
            out.push(match profile {
                Profile::Balanced => r.info(epp, "balance_performance"),
                _ => {
                    let good = epp == "performance";
                    r.expect(epp, "performance", good, write(&path, "performance"))
                }
            });
        }
    }
}

fn boost(root: &HostRoot, profile: Profile) -> Check {
    let why =
        "turbo raises and lowers the clock with temperature and load: faster, but less steady";
    let boost = format!("{CPU}/cpufreq/boost");
    let no_turbo = format!("{CPU}/intel_pstate/no_turbo");
    let (path, on) = if let Some(v) = root.read(&boost) {
        (boost, v == "1")
    } else if let Some(v) = root.read(&no_turbo) {
        (no_turbo, v == "0")
    } else {
        return rule("cpu.boost", format!("{boost}, {no_turbo}"), why, CPUFREQ)
            .missing("neither boost control exists (no cpufreq driver)");
    };
    let current = if on { "on" } else { "off" };
    let recommended = match profile {
        Profile::Latency => "off for the steadiest clock, on for the fastest (a trade-off)",
        _ => "on",
    };
    rule("cpu.boost", path, why, CPUFREQ).info(current, recommended)
}

/// One idle state of one CPU, as the kernel states it.
struct IdleState {
    dir: String,
    name: String,
    exit_us: u64,
    residency_us: u64,
    disabled: bool,
    usage: u64,
    time_us: u64,
    above: Option<u64>,
    below: Option<u64>,
}

fn read_state(root: &HostRoot, dir: String) -> Option<IdleState> {
    let num = |f: &str| {
        root.read(&format!("{dir}/{f}"))
            .and_then(|v| v.parse().ok())
    };
    Some(IdleState {
        name: root.read(&format!("{dir}/name"))?,
        exit_us: num("latency")?,
        residency_us: num("residency").unwrap_or(0),
        disabled: num("disable").unwrap_or(0) != 0,
        usage: num("usage").unwrap_or(0),
        time_us: num("time").unwrap_or(0),
        above: num("above"),
        below: num("below"),
        dir,
    })
}

fn idle(root: &HostRoot, profile: Profile, out: &mut Vec<Check>) {
    let base = format!("{CPU}/cpuidle");
    let driver = root.read_why(&format!("{base}/current_driver"));
    let r = rule(
        "cpuidle.driver",
        format!("{base}/current_driver"),
        "the driver decides which idle states exist (intel_idle, acpi_idle, haltpoll, none)",
        CPUIDLE,
    );
    out.push(match &driver {
        Ok(d) => r.info(d, ""),
        Err(why) => r.missing(why),
    });
    let gov_path = format!("{base}/current_governor");
    let governor = root
        .read_why(&gov_path)
        .or_else(|_| root.read_why(&format!("{base}/current_governor_ro")));
    let available = root
        .read(&format!("{base}/available_governors"))
        .map(|t| choices(&t))
        .unwrap_or_default();
    let r = rule(
        "cpuidle.governor",
        &gov_path,
        "the governor predicts idle length; menu's mispredictions pick deep states before short sleeps",
        CPUIDLE,
    );
    out.push(match governor {
        Err(why) => r.missing(why),
        Ok(gov) => {
            let gov = chosen(&gov);
            let has_states = driver.as_deref().is_ok_and(|d| d != "none");
            if profile == Profile::Latency && has_states && available.iter().any(|g| g == "teo") {
                let good = gov == "teo" || gov == "haltpoll";
                r.expect(gov, "teo", good, write(&gov_path, "teo"))
            } else {
                r.info(gov, "teo for tickless latency-sensitive hosts")
            }
        }
    });
    for cpu in cpus(root) {
        let dir = format!("{CPU}/{cpu}/cpuidle");
        let mut states: Vec<IdleState> = root
            .list(&dir)
            .into_iter()
            .filter(|s| s.starts_with("state"))
            .filter_map(|s| read_state(root, format!("{dir}/{s}")))
            .collect();
        // Judged by exit latency, never by index: order by it for reading.
        states.sort_by_key(|s| s.exit_us);
        for state in states {
            out.push(judge_state(&cpu, state, profile));
        }
    }
}

fn judge_state(cpu: &str, s: IdleState, profile: Profile) -> Check {
    let mut current = format!(
        "{}, exit {} µs, residency {} µs, usage {}, time {} µs",
        if s.disabled { "disabled" } else { "enabled" },
        s.exit_us,
        s.residency_us,
        s.usage,
        s.time_us
    );
    if let (Some(above), Some(below)) = (s.above, s.below) {
        current.push_str(&format!(", above {above}, below {below}"));
    }
    let disable = format!("{}/disable", s.dir);
    let r = rule(
        format!("cpuidle.{cpu}.{}", s.name),
        &s.dir,
        format!(
            "waking from {} costs up to {} µs on top of every wake-up that finds the CPU there",
            s.name, s.exit_us
        ),
        CPUIDLE,
    );
    match profile {
        Profile::Latency if s.exit_us > LATENCY_EXIT_LIMIT_US => r.expect(
            current,
            format!("disabled (exit latency above {LATENCY_EXIT_LIMIT_US} µs)"),
            s.disabled,
            write(disable, "1"),
        ),
        Profile::Latency => r.expect(
            current,
            format!("enabled (exit latency within {LATENCY_EXIT_LIMIT_US} µs)"),
            true,
            None,
        ),
        _ => r.info(current, "enabled"),
    }
}

fn dma_latency(root: &HostRoot, profile: Profile) -> Check {
    let path = "/dev/cpu_dma_latency";
    let r = rule(
        "pm_qos.cpu_dma_latency",
        path,
        "a held CPU latency limit keeps every CPU out of idle states that exit slower",
        PM_QOS,
    );
    match root.read_bytes(path) {
        Err(why) => r.missing(why),
        Ok(bytes) if bytes.len() >= 4 => {
            let us = i32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
            let current = if us >= 2_000_000_000 {
                "no limit held (2000000000 µs)".to_string()
            } else {
                format!("{us} µs")
            };
            let recommended = match profile {
                Profile::Latency => format!(
                    "≤ {LATENCY_EXIT_LIMIT_US} µs held while measuring (cauda timer --cpu-dma-latency)"
                ),
                _ => "no limit".into(),
            };
            r.info(current, recommended)
        }
        Ok(_) => r.missing(format!("{path} did not return a 32-bit value")),
    }
}

fn resume_latency(root: &HostRoot, out: &mut Vec<Check>) {
    let values: Vec<(String, String)> = cpus(root)
        .into_iter()
        .filter_map(|cpu| {
            let v = root.read(&format!("{CPU}/{cpu}/power/pm_qos_resume_latency_us"))?;
            Some((cpu, v))
        })
        .collect();
    let r = rule(
        "pm_qos.resume_latency",
        format!("{CPU}/cpu*/power/pm_qos_resume_latency_us"),
        "a per-CPU resume latency limit bounds the idle states that CPU may enter (0: none)",
        PM_QOS,
    );
    if values.is_empty() {
        out.push(r.missing("no CPU exposes pm_qos_resume_latency_us"));
        return;
    }
    let current = values
        .iter()
        .map(|(cpu, v)| format!("{cpu}={v}"))
        .collect::<Vec<_>>()
        .join(" ");
    out.push(r.info(current, "0 (none) unless a CPU is dedicated to measuring"));
}

fn smt(root: &HostRoot, profile: Profile) -> Check {
    let path = format!("{CPU}/smt/control");
    let r = rule(
        "cpu.smt",
        &path,
        "a sibling hyperthread shares the core's execution units with the measured thread",
        PERFTUNE,
    );
    match root.read_why(&path) {
        Err(why) => r.missing(why),
        Ok(control) => {
            let active = root.read(&format!("{CPU}/smt/active"));
            let current = match active {
                Some(a) => format!("{control} (active {a})"),
                None => control,
            };
            let recommended = match profile {
                Profile::Latency => "keep siblings of measuring CPUs idle (or off)",
                _ => "on",
            };
            r.judged(current, recommended, Status::Info, None)
        }
    }
}
