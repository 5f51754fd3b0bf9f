//! The command line: one file per command, holding its clap flags (whose
//! doc comments are the help text), the configuration they turn into, and
//! what the command does with it. Every probe command takes the one path
//! of [`measure`]; this file holds only the list of commands.

pub mod analyze;
pub mod broker;
pub mod compare;
pub mod completions;
pub mod convert;
pub mod disk;
pub mod hiccup;
pub mod host;
pub mod inputs;
pub mod kernel;
pub mod lab;
pub mod man;
pub mod measure;
pub mod merge;
pub mod net;
pub mod parse;
pub mod report;
pub mod run_output;
pub mod serve;
pub mod shard;
pub mod sweep;
pub mod timer;

use clap::{Parser, Subcommand};

pub use analyze::AnalyzeArgs;
pub use broker::BrokerArgs;
pub use compare::{BudgetList, CompareArgs};
pub use completions::CompletionsArgs;
pub use convert::ConvertArgs;
pub use disk::DiskArgs;
pub use hiccup::HiccupArgs;
pub use host::{HoldArgs, HostArgs, HostAuditArgs, HostCommand, RollbackArgs, TuneArgs};
pub use inputs::InputArgs;
pub use kernel::KernelArgs;
pub use lab::LabArgs;
pub use man::ManArgs;
pub use merge::MergeArgs;
pub use net::NetArgs;
pub use parse::{CpuList, DurationList, Label, PercentileList};
pub use report::ReportArgs;
pub use run_output::RunOutputArgs;
pub use serve::ServeArgs;
pub use shard::Shard;
pub use sweep::SweepArgs;
pub use timer::TimerArgs;

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
    /// Find how much load a target takes within a latency objective: steps
    /// the offered rate (or disk's queue depth), brackets the knee with
    /// confidence intervals, and stops within ±5 % or at its budget;
    /// writes cauda-sweep-DATE-TIME/ with sweep.json and a run per step.
    ///
    /// Example: cauda sweep --objective 'p99.9<=1ms' -- net --connect 10.0.0.2:7470
    Sweep(SweepArgs),
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
    /// Print the completion script for a shell (bash, zsh, fish, elvish or
    /// powershell) to stdout, made from the same definitions as --help.
    ///
    /// Example: cauda completions bash > ~/.local/share/bash-completion/completions/cauda
    Completions(CompletionsArgs),
    /// Print the manual page cauda(1) to stdout, or a command's page (cauda
    /// man host audit), or write every page into a directory with --dir.
    ///
    /// Example: cauda man --dir ~/.local/share/man/man1
    Man(ManArgs),
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
