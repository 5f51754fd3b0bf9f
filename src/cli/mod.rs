//! The command line: clap derive definitions whose doc comments are the
//! help text.

mod broker;
mod disk;
mod host;
mod inputs;
mod kernel;
mod net;
mod shard;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::analyze::Percentile;
use crate::host::cpulist::parse_cpu_list;
use crate::record::Arrivals;
use crate::units::{self, Rate};

pub use broker::BrokerArgs;
pub use disk::DiskArgs;
pub use host::{HoldArgs, HostArgs, HostAuditArgs, HostCommand, RollbackArgs, TuneArgs};
pub use inputs::{
    AnalyzeArgs, BudgetList, CompareArgs, ConvertArgs, InputArgs, MergeArgs, ReportArgs,
};
pub use kernel::KernelArgs;
pub use net::{NetArgs, ServeArgs};
pub use shard::Shard;

/// cauda — a tail-latency lab for Linux.
///
/// Measures latency distributions honestly (open loop, interval
/// histograms, no coordinated omission) and analyses them with statistics a
/// skeptic accepts.
#[derive(Debug, Parser)]
#[command(
    name = "cauda",
    version,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the default suite on this host (about 60 s, --quick about 20 s):
    /// host audit, timer, hiccup, disk random reads and writes, loopback
    /// network round trips; writes cauda-lab-DATE-TIME/ with every run
    /// file and report.html, and prints the summary and the three most
    /// important findings.
    ///
    /// Example: cauda lab --quick
    Lab(LabArgs),
    /// Measure OS wake-up latency (cyclictest-class): how late a sleeping
    /// thread wakes, from each intended wake-up time.
    ///
    /// Example: cauda timer --interval 1ms --runtime 10s --priority 80 --cpus 0
    Timer(TimerArgs),
    /// Measure storage latency (fio-class): psync or io_uring, O_DIRECT,
    /// closed loop at a queue depth or open loop at a rate, with IOPS, CPU
    /// per I/O and write amplification; refuses to overwrite data.
    ///
    /// Example: cauda disk --file /data/cauda.dat --rw randread --iodepth 32 --runtime 30s
    Disk(DiskArgs),
    /// Measure network round-trip latency against `cauda serve` (sockperf-class):
    /// the full round trip, never halved; `--rate` for open loop.
    ///
    /// Example: cauda net --loopback --proto udp --runtime 10s
    Net(NetArgs),
    /// Measure a Kafka-protocol broker (kafka-producer-perf-test and
    /// kafka-e2e-latency class): publish and end-to-end latency, open loop,
    /// producers and consumers on one clock, every record accounted for.
    ///
    /// Example: cauda broker --bootstrap 127.0.0.1:9092 --acks all --rate 1000 --runtime 30s
    Broker(BrokerArgs),
    /// Answer `cauda net`'s messages (TCP, or UDP with --udp), on loopback
    /// unless told otherwise; misbehaving clients are dropped.
    ///
    /// Example: cauda serve --listen 127.0.0.1:7470
    Serve(ServeArgs),
    /// Summarise runs and other tools' outputs (fio, sockperf, cyclictest,
    /// HdrHistogram, numbers): percentiles with confidence intervals, MAD,
    /// clusters, stalls, fan-out.
    ///
    /// Example: cauda analyze cauda-timer-20261122-153012.json --json
    Analyze(AnalyzeArgs),
    /// Compare two runs: change of each metric with a confidence interval and
    /// a verdict, and the host settings that differ.
    ///
    /// Example: cauda compare before.json after.json --fail-if-worse p99:10%,p99.9:20%
    Compare(CompareArgs),
    /// Convert inputs to an HdrHistogram log, a cauda run file, CSV, a
    /// percentile distribution (.hgrm), or Parquet tables for notebooks and
    /// SQL (a directory: intervals.parquet and buckets.parquet, from which
    /// any percentile of any grouping is exact).
    ///
    /// Example: cauda convert run.json --to hlog -o run.hlog
    ///
    /// Example: cauda convert runs/*.json --to parquet -o tables/
    Convert(ConvertArgs),
    /// Merge runs or logs exactly (threads, hosts, repetitions) into one run file.
    ///
    /// Example: cauda merge host1.json host2.json -o fleet.json
    Merge(MergeArgs),
    /// The host: audit its settings against a latency, throughput or
    /// balanced profile; tune it with a dry run, a journal and a way back.
    ///
    /// Example: cauda host audit --profile latency
    Host(HostArgs),
    /// Measure the host's own noise (jHiccup-style): a thread sleeps 1 ms
    /// and records how late it woke, on the chosen CPUs.
    ///
    /// Example: cauda hiccup --runtime 10s --cpus 0,1
    Hiccup(HiccupArgs),
    /// Measure inside the kernel while something else runs (biolatency
    /// and runqlat class): block-layer queue, device and total time per
    /// direction, and run-queue delay of the whole host, as per-interval
    /// histograms with cauda's precision. Needs root (BPF).
    ///
    /// Example: cauda kernel --device vda -- fio job.fio
    ///
    /// Example: cauda kernel --kernel runq --runtime 30s
    Kernel(KernelArgs),
    /// Write a self-contained HTML report with charts: summary with
    /// confidence intervals, percentile spectrum, histogram, timelines with
    /// stalls, host conditions, and a before/after table with --baseline.
    ///
    /// Example: cauda report run1.json run2.json -o report.html --baseline before.json
    Report(ReportArgs),
}

/// Value names of options whose value is a number with or without a unit.
const NUMERIC_VALUES: [&str; 10] = [
    "DURATION", "N", "LIST", "SIZE", "N/s", "LEVEL", "BYTES", "SEED", "PCT", "1-99",
];

impl Cli {
    /// The command line as clap sees it, with one rule the derive cannot
    /// state once: an option whose value is a number (a duration, rate,
    /// size, count or list of them) takes a value starting with `-`, so
    /// `--interval -1ms` reaches its parser, which says what is wrong,
    /// instead of clap's "unexpected argument '-1'".
    pub fn command_line() -> clap::Command {
        fn signed(command: clap::Command) -> clap::Command {
            command
                .mut_args(|arg| {
                    let numeric = !arg.is_positional()
                        && arg.get_value_names().is_some_and(|names| {
                            names.iter().any(|n| NUMERIC_VALUES.contains(&n.as_str()))
                        });
                    if numeric {
                        arg.allow_hyphen_values(true)
                    } else {
                        arg
                    }
                })
                .mut_subcommands(signed)
        }
        signed(<Cli as clap::CommandFactory>::command())
    }

    /// Parses the process's arguments with [`Cli::command_line`].
    pub fn from_env() -> Result<Cli, clap::Error> {
        let matches = Self::command_line().try_get_matches()?;
        <Cli as clap::FromArgMatches>::from_arg_matches(&matches)
    }
}

/// `cauda lab`.
#[derive(Debug, Args)]
pub struct LabArgs {
    /// Where to create cauda-lab-DATE-TIME/ (its filesystem also holds the
    /// disk steps' temporary file, sized to the free space and removed
    /// afterwards).
    #[arg(long, value_name = "PATH", default_value = ".")]
    pub dir: PathBuf,
    /// The short suite: about 20 s instead of about 60 s.
    #[arg(long)]
    pub quick: bool,
    /// Steps to leave out (comma-separated).
    #[arg(long, value_enum, value_delimiter = ',', value_name = "STEPS")]
    pub skip: Vec<crate::workflow::lab::steps::StepKind>,
    /// Record kernel series beside each probe step (block, runq; see
    /// `cauda timer --help`); skipped with the reason where BPF cannot load.
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_enum)]
    pub kernel: Vec<crate::model::kernel::KernelSource>,
}

impl LabArgs {
    /// The suite these flags ask for.
    pub fn config(&self) -> crate::workflow::lab::LabConfig {
        crate::workflow::lab::LabConfig {
            dir: self.dir.clone(),
            quick: self.quick,
            skip: self.skip.clone(),
            kernel: self.kernel.clone(),
        }
    }
}

/// `cauda hiccup`.
#[derive(Debug, Args)]
pub struct HiccupArgs {
    /// How long to measure.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = duration)]
    pub runtime: u64,
    /// The sleep each thread asks for.
    #[arg(long, value_name = "DURATION", default_value = "1ms", value_parser = duration)]
    pub sleep: u64,
    /// One measuring thread per CPU in this list, pinned (e.g. 0,1) [default: one unpinned thread].
    #[arg(long, value_name = "LIST", value_parser = cpu_list)]
    pub cpus: Option<CpuList>,
    /// Output options.
    #[command(flatten)]
    pub output: RunOutputArgs,
}

fn rate(text: &str) -> Result<Rate, String> {
    units::parse_rate(text)
}

fn duration(text: &str) -> Result<u64, String> {
    units::parse_duration(text)
}

/// A `--label` pair.
#[derive(Clone, Debug)]
pub struct Label(pub String, pub String);

fn label(text: &str) -> Result<Label, String> {
    let expected = "expected KEY=VALUE, e.g. host=a1 or zone=eu-1 (KEY: letters, digits \
                    and _, not starting with a digit; VALUE not empty)";
    let (key, value) = text
        .split_once('=')
        .ok_or_else(|| format!("'{text}': {expected}"))?;
    let key_ok = key.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !key_ok || value.is_empty() || value.contains(['\n', '\r']) {
        return Err(format!("'{text}': {expected}"));
    }
    Ok(Label(key.into(), value.into()))
}

/// Unix seconds with up to 9 decimals (`1795600800`, `1795600800.25`),
/// exactly, as ns.
fn unix_seconds_ns(text: &str) -> Option<u128> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(fraction) || fraction.len() > 9 {
        return None;
    }
    let nanos: u128 = format!("{fraction:0<9}").parse().ok()?;
    Some(whole.parse::<u128>().ok()?.checked_mul(1_000_000_000)? + nanos)
}

/// A `--start-at` time, ns since the Unix epoch: RFC 3339 in UTC
/// (`2026-11-25T10:00:00Z`, fractions allowed) or Unix seconds, from now
/// to a day ahead.
fn start_at(text: &str) -> Result<u128, String> {
    let unix_ns = match unix_seconds_ns(text) {
        Some(ns) => ns,
        None => humantime::parse_rfc3339_weak(text.trim_end_matches('Z'))
            .map_err(|e| {
                format!(
                    "'{text}': {e}; expected an RFC 3339 time in UTC such as \
                     2026-11-25T10:00:00Z, or Unix seconds such as 1795600800"
                )
            })?
            .duration_since(std::time::UNIX_EPOCH)
            .map_err(|_| format!("'{text}': before 1970"))?
            .as_nanos(),
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(|_| "the system clock is before 1970".to_string())?
        .as_nanos();
    const DAY_NS: u128 = 86_400 * 1_000_000_000;
    let show = |ns: u128| {
        humantime::format_rfc3339_millis(
            std::time::UNIX_EPOCH
                + std::time::Duration::from_nanos(ns.min(u64::MAX as u128) as u64),
        )
        .to_string()
    };
    if unix_ns < now {
        return Err(format!(
            "{} is in the past (it is now {}): give a time still to come on every host",
            show(unix_ns),
            show(now)
        ));
    }
    if unix_ns > now + DAY_NS {
        return Err(format!(
            "{} is more than a day ahead (it is now {}): is it in UTC?",
            show(unix_ns),
            show(now)
        ));
    }
    Ok(unix_ns)
}

/// A parsed CPU list (a newtype so clap treats it as one value).
#[derive(Clone, Debug)]
pub struct CpuList(pub Vec<usize>);

fn cpu_list(text: &str) -> Result<CpuList, String> {
    parse_cpu_list(text).map(CpuList)
}

/// A parsed list of durations in ns (a newtype so clap treats it as one value).
#[derive(Clone, Debug)]
pub struct DurationList(pub Vec<u64>);

fn duration_list(text: &str) -> Result<DurationList, String> {
    text.split(',')
        .map(units::parse_duration)
        .collect::<Result<_, _>>()
        .map(DurationList)
}

/// A parsed `--percentiles` list (a newtype so clap treats it as one value).
#[derive(Clone, Debug)]
pub struct PercentileList(pub Vec<Percentile>);

fn percentile_list(text: &str) -> Result<PercentileList, String> {
    Percentile::parse_list(text).map(PercentileList)
}

/// Where a probe's results go and how intervals are cut.
#[derive(Debug, Args)]
pub struct RunOutputArgs {
    /// The run file to write [default: cauda-PROBE-DATE-TIME.json in the
    /// current directory].
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also stream each interval, as it completes, to an HdrHistogram
    /// interval log (.hlog) that Java/Python HdrHistogram tools read.
    #[arg(long, value_name = "FILE")]
    pub hlog: Option<PathBuf>,
    /// Length of each interval histogram (e.g. 1s, 100ms).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = duration)]
    pub interval_length: u64,
    /// Overwrite output files that cauda did not write.
    #[arg(long)]
    pub force: bool,
    /// Print only the path of the run file, not the summary table.
    #[arg(short, long)]
    pub quiet: bool,
    /// Label the run, KEY=VALUE (repeatable): host, zone, shard, … They go
    /// into the run file, and `cauda merge` keeps those all inputs share.
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = label)]
    pub labels: Vec<Label>,
    /// Start measuring at this wall-clock time — RFC 3339 in UTC
    /// (2026-11-25T10:00:00Z) or Unix seconds — once everything is ready,
    /// so runs started on several hosts measure the same seconds (interval
    /// i is the same wall-clock second on each). At most a day ahead.
    #[arg(long, value_name = "TIME", value_parser = start_at)]
    pub start_at: Option<u128>,
    /// Run part I of N of a load spread over N hosts (I from 0 to N-1): a
    /// --rate is the whole load's, so this run sends 1/N of it with random
    /// arrivals of its own; labelled shard=I/N. Default: a Kubernetes
    /// Indexed Job's JOB_COMPLETION_INDEX and JOB_COMPLETIONS when both are set.
    #[arg(long, value_name = "I/N", value_parser = Shard::parse)]
    pub shard: Option<Shard>,
    /// Serve the run so far to Prometheus at http://ADDR/metrics: each
    /// series as a native histogram (buckets 0.27 % wide; the run file
    /// stays exact), updated as each interval completes. PORT alone
    /// listens on loopback; give 0.0.0.0:PORT to be scraped from elsewhere.
    #[arg(long, value_name = "ADDR", value_parser = crate::probe::endpoint::parse_listen)]
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// Also measure inside the kernel, during exactly this run, into series
    /// of the run file: `block` — the block layer's queue, device and total
    /// time of this process's requests on the probe's device, per
    /// direction; `runq` — run-queue delay of the probe's threads and of
    /// the whole host. Needs root (or CAP_BPF and CAP_PERFMON) and a
    /// kernel with BTF.
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_enum)]
    pub kernel: Vec<crate::model::kernel::KernelSource>,
    /// Do not sample host counters (PSI, vmstat, …) each interval; for
    /// measuring the sampling's own cost.
    #[arg(long, hide = true)]
    pub no_host_counters: bool,
    /// Do not record the `self` heartbeat; for measuring its own cost.
    #[arg(long, hide = true)]
    pub no_self_thread: bool,
}

impl RunOutputArgs {
    /// The shard this run is: `--shard`, or the Indexed Job's environment.
    pub fn shard(&self) -> anyhow::Result<Option<Shard>> {
        if self.shard.is_some() {
            return Ok(self.shard);
        }
        let var = |name: &str| std::env::var(name).ok();
        Shard::from_job(var("JOB_COMPLETION_INDEX"), var("JOB_COMPLETIONS"))
    }

    /// A whole load's `--rate` as this run's shard sends it.
    pub fn sharded_rate(&self, rate: Option<Rate>) -> anyhow::Result<Option<Rate>> {
        let shard = self.shard()?;
        Ok(rate.map(|r| shard.map_or(r, |s| s.rate(r))))
    }

    /// A seed for random arrivals as this run's shard uses it.
    pub fn sharded_seed(&self, seed: u64) -> anyhow::Result<u64> {
        Ok(self.shard()?.map_or(seed, |s| s.seed(seed)))
    }
}

/// `cauda timer`.
#[derive(Debug, Args)]
pub struct TimerArgs {
    /// Wake-up period (mean gap with --arrivals poisson).
    #[arg(long, value_name = "DURATION", default_value = "1ms", value_parser = duration)]
    pub interval: u64,
    /// Wake-ups per second instead of --interval (e.g. 1000/s, 10k/s).
    #[arg(long, value_name = "N/s", value_parser = rate, conflicts_with = "interval")]
    pub rate: Option<Rate>,
    /// How long to measure.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = duration)]
    pub runtime: u64,
    /// Number of measuring threads [default: one per --cpus entry, else 1].
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Pin threads to these CPUs (thread i on the i-th, round robin), e.g. 0 or 0-3,6.
    #[arg(long, value_name = "LIST", value_parser = cpu_list)]
    pub cpus: Option<CpuList>,
    /// Run the threads under SCHED_FIFO at this priority (needs root or CAP_SYS_NICE).
    #[arg(long, value_name = "1-99", value_parser = clap::value_parser!(i32).range(1..=99))]
    pub priority: Option<i32>,
    /// Spacing of intended wake-ups: a fixed period, or Poisson with that mean.
    #[arg(long, value_enum, default_value_t = Arrivals::Uniform)]
    pub arrivals: Arrivals,
    /// Seed for --arrivals poisson.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Hold this PM QoS CPU latency limit (/dev/cpu_dma_latency) during the run, as
    /// cyclictest does by default with 0us: keeps CPUs out of idle states that exit slower.
    #[arg(long, value_name = "DURATION", value_parser = duration)]
    pub cpu_dma_latency: Option<u64>,
    /// Do not lock memory with mlockall.
    #[arg(long)]
    pub no_mlock: bool,
    /// Measure wake-up latency against idle length instead (one series per
    /// length): exposes deep C-state exit cost. --runtime is shared among the lengths.
    #[arg(long, conflicts_with_all = ["interval", "rate", "arrivals"])]
    pub idle_sweep: bool,
    /// Idle lengths for --idle-sweep [default: 10us,20us,50us,…,10ms].
    #[arg(long, value_name = "LIST", value_parser = duration_list, requires = "idle_sweep")]
    pub idle_lengths: Option<DurationList>,
    /// Output options.
    #[command(flatten)]
    pub output: RunOutputArgs,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_definition_is_consistent() {
        Cli::command().debug_assert();
        Cli::command_line().debug_assert();
    }

    #[test]
    fn lists_parse_as_one_value() {
        let cli = Cli::try_parse_from([
            "cauda",
            "timer",
            "--cpus",
            "0-1",
            "--idle-sweep",
            "--idle-lengths",
            "10us,1ms",
        ])
        .unwrap();
        let Command::Timer(args) = cli.command else {
            panic!("not timer")
        };
        assert_eq!(args.cpus.unwrap().0, vec![0, 1]);
        assert_eq!(args.idle_lengths.unwrap().0, vec![10_000, 1_000_000]);
    }
}
