//! `cauda hiccup`: its flags, its configuration, and its banner.

use anyhow::Result;
use clap::Args;

use super::measure::{ProbeCommand, Ran};
use super::parse::{CpuList, cpu_list, duration};
use super::run_output::RunOutputArgs;
use crate::probe::hiccup::{self, HiccupConfig};
use crate::probe::run::Destination;
use crate::record::StopFlag;
use crate::units::format_duration_compact;

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

impl ProbeCommand for HiccupArgs {
    type Config = HiccupConfig;

    fn output(&self) -> &RunOutputArgs {
        &self.output
    }

    fn config(&self) -> Result<HiccupConfig> {
        self.output.unsharded("cauda hiccup")?;
        let config = HiccupConfig {
            runtime_ns: self.runtime,
            sleep_ns: self.sleep,
            cpus: self.cpus.clone().map(|c| c.0).unwrap_or_default(),
            interval_length_ns: self.output.interval_length,
        };
        config.validate()?;
        Ok(config)
    }

    fn banner(config: &HiccupConfig) -> String {
        format!(
            "cauda hiccup: {} thread(s) sleeping {} for {} — Ctrl-C stops and saves",
            config.cpus.len().max(1),
            format_duration_compact(config.sleep_ns),
            format_duration_compact(config.runtime_ns),
        )
    }

    fn run(config: &HiccupConfig, destination: &Destination, stop: &StopFlag) -> Result<Ran> {
        Ok(hiccup::run(config, destination, stop)?.into())
    }
}
