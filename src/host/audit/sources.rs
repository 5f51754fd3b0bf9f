//! The texts the audit's checks cite as their source: tuned's profiles,
//! Redpanda's and Seastar's tuners, and the kernel's documentation.

pub const TUNED_LATENCY: &str =
    "tuned latency-performance profile (governor=performance, force_latency)";
pub const TUNED_NETLAT: &str = "tuned network-latency profile";
pub const TUNED_THROUGHPUT: &str = "tuned throughput-performance profile";
pub const RPK: &str = "Redpanda rpk tuners";
pub const PERFTUNE: &str = "Seastar perftune.py";
pub const CPUIDLE: &str = "kernel docs: admin-guide/pm/cpuidle.rst";
pub const CPUFREQ: &str = "kernel docs: admin-guide/pm/cpufreq.rst, intel_pstate.rst";
pub const PM_QOS: &str = "kernel docs: power/pm_qos_interface.rst";
pub const PARAMS: &str = "kernel docs: admin-guide/kernel-parameters.txt";
pub const THP: &str = "kernel docs: admin-guide/mm/transhuge.rst";
pub const VM: &str = "kernel docs: admin-guide/sysctl/vm.rst";
pub const NET_SYSCTL: &str = "kernel docs: admin-guide/sysctl/net.rst";
pub const QUEUE: &str = "kernel docs: block/queue-sysfs.rst";
pub const EXT4: &str = "kernel docs: admin-guide/ext4.rst (mount options)";
pub const IRQ: &str = "kernel docs: core-api/irq/irq-affinity.rst";
