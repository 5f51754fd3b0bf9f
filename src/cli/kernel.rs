//! `cauda kernel`: its flags, its configuration and its banner; cauda
//! exits with the code of the command it watched.

use anyhow::Result;
use clap::Args;

use super::measure::{ProbeCommand, Ran};
use super::parse::duration;
use super::run_output::RunOutputArgs;
use crate::model::kernel::KernelSource;
use crate::probe::kernel::{KernelConfig, device_name};
use crate::probe::run::Destination;
use crate::record::StopFlag;

/// `cauda kernel`.
#[derive(Debug, Args)]
pub struct KernelArgs {
    /// Count only this block device's requests: a name (vda, nvme0n1p2) or
    /// a path (/dev/vda) [default: every device, mixed].
    #[arg(long, value_name = "DEV")]
    pub device: Option<String>,
    /// How long to watch [default: until COMMAND exits]. A command still
    /// running then (or at Ctrl-C/SIGTERM) gets SIGTERM — its process
    /// group, with all it started — once the run file is saved, and SIGKILL
    /// 5 s later.
    #[arg(long, value_name = "DURATION", value_parser = duration)]
    pub runtime: Option<u64>,
    /// Output options; --kernel chooses the groups [default: block,runq].
    #[command(flatten)]
    pub output: RunOutputArgs,
    /// The command to run while watching, after --, in a process group of
    /// its own (not the terminal's foreground: redirect its input). cauda exits with its
    /// code when it exits by itself (128+N if signal N ended it); 0 when
    /// cauda stopped it at --runtime; 137 when it ignored SIGTERM and was
    /// killed; 130 after Ctrl-C or SIGTERM (a second one exits at once and
    /// kills the command).
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

impl ProbeCommand for KernelArgs {
    type Config = KernelConfig;

    fn output(&self) -> &RunOutputArgs {
        &self.output
    }

    fn config(&self) -> Result<KernelConfig> {
        if self.output.hlog.is_some() || self.output.metrics_listen.is_some() {
            return Err(crate::error::input_error(
                "cauda kernel: --hlog and --metrics-listen stream a probe's series as they \
                 complete; the kernel series are read into the run file (convert it with \
                 cauda convert --to hlog afterwards)",
            ));
        }
        self.output.unsharded("cauda kernel")?;
        let mut sources = self.output.kernel.clone();
        if sources.is_empty() {
            sources = vec![KernelSource::Block, KernelSource::Runq];
        }
        sources.sort();
        sources.dedup();
        if sources.contains(&KernelSource::Blame) {
            return Err(crate::error::input_error(
                "cauda kernel --kernel blame: blame explains a probe's own operations, and cauda \
                 kernel has none; give --kernel blame to timer, hiccup, disk or net",
            ));
        }
        let config = KernelConfig {
            sources,
            device: self.device.as_deref().map(device_name).transpose()?,
            runtime_ns: self.runtime,
            command: self.command.clone(),
            interval_length_ns: self.output.interval_length,
        };
        config.validate()?;
        Ok(config)
    }

    fn banner(config: &KernelConfig) -> String {
        let what: Vec<&str> = config.sources.iter().map(|s| s.name()).collect();
        format!(
            "cauda kernel: {} on {} — Ctrl-C stops and saves",
            what.join(", "),
            config.device.as_deref().unwrap_or("every device")
        )
    }

    fn run(config: &KernelConfig, destination: &Destination, stop: &StopFlag) -> Result<Ran> {
        let (finished, ended) = crate::probe::kernel::run(config, destination, stop)?;
        Ok(Ran {
            finished,
            exit_code: ended.map(|e| e.exit_code()),
        })
    }
}
