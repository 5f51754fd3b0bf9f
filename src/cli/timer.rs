//! `cauda timer`: its flags, its configuration, and its banner.

use anyhow::Result;
use clap::Args;

use super::measure::{ProbeCommand, Ran};
use super::parse::{CpuList, DurationList, cpu_list, duration, duration_list, rate};
use super::run_output::RunOutputArgs;
use super::shard::Shard;
use crate::error::input_error;
use crate::probe::run::Destination;
use crate::probe::timer::{self, DEFAULT_IDLE_LENGTHS_NS, TimerConfig};
use crate::record::{Arrivals, StopFlag};
use crate::units::{Rate, format_duration_compact};

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

/// Checks the period a `--rate` (split over a shard) gives, naming the
/// flags the user gave: the timer's own checks speak of `--interval`.
fn check_rate(whole: Rate, own: Rate, shard: Option<Shard>, runtime_ns: u64) -> Result<()> {
    let period = own.period_ns();
    let what = match shard {
        Some(s) => format!(
            "--rate {}/s over --shard {} ({}/s for this shard)",
            whole.per_second,
            s.label(),
            own.per_second
        ),
        None => format!("--rate {}/s", whole.per_second),
    };
    let every = format_duration_compact(period.min(u64::MAX as f64) as u64);
    let fewer = if shard.is_some() {
        "a higher --rate or fewer shards"
    } else {
        "a higher --rate"
    };
    if period < 1_000.0 {
        return Err(input_error(format!(
            "{what}: more than one wake-up per µs per thread, which a timer cannot keep; \
             give a lower --rate"
        )));
    }
    if period > 3_600e9 {
        return Err(input_error(format!(
            "{what}: one wake-up every {every}, less than one an hour; give {fewer}"
        )));
    }
    if period > runtime_ns as f64 {
        return Err(input_error(format!(
            "{what}: one wake-up every {every}, longer than --runtime {}: none would be \
             measured; give {fewer}, or a longer --runtime",
            format_duration_compact(runtime_ns)
        )));
    }
    Ok(())
}

impl ProbeCommand for TimerArgs {
    type Config = TimerConfig;

    fn output(&self) -> &RunOutputArgs {
        &self.output
    }

    fn config(&self) -> Result<TimerConfig> {
        let threads = self
            .threads
            .unwrap_or_else(|| self.cpus.as_ref().map_or(1, |c| c.0.len().max(1)));
        let rate = self.output.sharded_rate(self.rate)?;
        if let (Some(whole), Some(own)) = (self.rate, rate) {
            check_rate(whole, own, self.output.shard()?, self.runtime)?;
        }
        let config = TimerConfig {
            interval_ns: rate.map_or(self.interval, |rate| rate.period_ns().round() as u64),
            runtime_ns: self.runtime,
            threads,
            cpus: self.cpus.clone().map(|c| c.0).unwrap_or_default(),
            priority: self.priority,
            arrivals: self.arrivals,
            seed: self.output.sharded_seed(self.seed)?,
            lock_memory: !self.no_mlock,
            cpu_dma_latency_us: self
                .cpu_dma_latency
                .map(|ns| i32::try_from(ns / 1_000).unwrap_or(i32::MAX)),
            timer_slack_ns: 1,
            idle_sweep_ns: self.idle_sweep.then(|| {
                self.idle_lengths
                    .clone()
                    .map(|l| l.0)
                    .unwrap_or_else(|| DEFAULT_IDLE_LENGTHS_NS.to_vec())
            }),
            interval_length_ns: self.output.interval_length,
        };
        config.validate()?;
        Ok(config)
    }

    fn banner(config: &TimerConfig) -> String {
        format!(
            "cauda timer: {} thread(s), {} for {} — Ctrl-C stops and saves",
            config.threads,
            match &config.idle_sweep_ns {
                None => format!("every {}", format_duration_compact(config.interval_ns)),
                Some(l) => format!("idle sweep over {} lengths", l.len()),
            },
            format_duration_compact(config.runtime_ns),
        )
    }

    fn run(config: &TimerConfig, destination: &Destination, stop: &StopFlag) -> Result<Ran> {
        Ok(timer::run(config, destination, stop)?.into())
    }
}
