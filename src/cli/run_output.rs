//! The flags every probe command shares (`-o`, `--hlog`, `--label`,
//! `--shard`, `--start-at`, `--metrics-listen`, `--kernel`, …), and the
//! run [`Destination`] they make.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::Args;

use super::parse::{Label, duration, label, start_at};
use super::shard::Shard;
use crate::error::input_error;
use crate::probe::run::Destination;
use crate::probe::run::live::RESERVED_LABELS;
use crate::units::Rate;

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
    #[arg(long, value_name = "ADDR", value_parser = crate::probe::run::endpoint::parse_listen)]
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// Also measure inside the kernel, during exactly this run, into series
    /// of the run file: `block` — the block layer's queue, device and total
    /// time of this process's requests on the probe's device, per
    /// direction; `runq` — run-queue delay of the probe's threads and of
    /// the whole host. Needs root (or CAP_BPF and CAP_PERFMON) and a
    /// kernel with BTF. `blame` — for each slow operation, where its
    /// latency went: run-queue wait (and the tasks that held the CPU), hard
    /// IRQs, softirqs, the CPU's idle exit, its own I/O's block queue and
    /// device time, steal, time on CPU, blocked and unexplained (timer,
    /// hiccup, disk with --iodepth 1, net, broker with --max-in-flight 1).
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_enum)]
    pub kernel: Vec<crate::model::kernel::KernelSource>,
    /// With --kernel blame: an operation is slow above this latency
    /// (default: above the p99 of the series' operations so far, about
    /// 1 % of them).
    #[arg(long, value_name = "DURATION", value_parser = super::parse::duration)]
    pub blame_above: Option<u64>,
    /// With --kernel blame: how many of the run's slowest operations keep
    /// their whole blame vector in the run file [default: 100].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub blame_keep: Option<u64>,
    /// Do not sample host counters (PSI, vmstat, …) each interval; for
    /// measuring the sampling's own cost.
    #[arg(long, hide = true)]
    pub no_host_counters: bool,
    /// Do not record the `self` heartbeat; for measuring its own cost.
    #[arg(long, hide = true)]
    pub no_self_thread: bool,
}

/// An Indexed Job's variable: `None` when unset, refused when not UTF-8
/// (ignoring it would make every pod run the whole load, unlabelled).
fn job_var(name: &str) -> anyhow::Result<Option<String>> {
    match std::env::var(name) {
        Ok(value) => Ok(Some(value)),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(raw)) => Err(input_error(format!(
            "{name} is not UTF-8 text ({raw:?}): expected a number, as Kubernetes sets it; \
             fix the pod's env, or give --shard I/N"
        ))),
    }
}

impl RunOutputArgs {
    /// The shard this run is: `--shard`, or the Indexed Job's environment
    /// (a value that is not UTF-8 text is refused, not ignored).
    pub fn shard(&self) -> anyhow::Result<Option<Shard>> {
        if self.shard.is_some() {
            return Ok(self.shard);
        }
        Shard::from_job(
            job_var("JOB_COMPLETION_INDEX")?,
            job_var("JOB_COMPLETIONS")?,
        )
    }

    /// Where this run's shard comes from, for messages.
    fn shard_origin(&self) -> &'static str {
        if self.shard.is_some() {
            "--shard"
        } else {
            "JOB_COMPLETION_INDEX and JOB_COMPLETIONS"
        }
    }

    /// A whole load's `--rate` as this run's shard sends it. A shard
    /// without a rate is refused: only a rate is split, so it would run
    /// the whole load labelled as a part of it.
    pub fn sharded_rate(&self, rate: Option<Rate>) -> anyhow::Result<Option<Rate>> {
        let Some(shard) = self.shard()? else {
            return Ok(rate);
        };
        match rate {
            Some(rate) => Ok(Some(shard.rate(rate))),
            None => Err(input_error(format!(
                "{} makes this run shard {}, but without --rate there is no load to split: \
                 it would run the whole load labelled as a part of it; give --rate, the \
                 whole load's (each shard sends 1/{} of it)",
                self.shard_origin(),
                shard.label(),
                shard.count
            ))),
        }
    }

    /// Refuses a shard for `probe`, which has no rate to split.
    pub fn unsharded(&self, probe: &str) -> anyhow::Result<()> {
        match self.shard()? {
            Some(shard) => Err(input_error(format!(
                "{} makes this run shard {}, but {probe} has no --rate to split: every shard \
                 would run the whole of it; run it without a shard (mark runs with --label \
                 instead)",
                self.shard_origin(),
                shard.label()
            ))),
            None => Ok(()),
        }
    }

    /// A seed for random arrivals as this run's shard uses it.
    pub fn sharded_seed(&self, seed: u64) -> anyhow::Result<u64> {
        Ok(self.shard()?.map_or(seed, |s| s.seed(seed)))
    }

    /// Where the run's results go and what is observed beside it; a label
    /// given twice, or one that clashes with cauda's own, is refused.
    pub fn destination(&self) -> anyhow::Result<Destination> {
        let mut labels = BTreeMap::new();
        for Label(key, value) in &self.labels {
            if let Some(first) = labels.insert(key.clone(), value.clone()) {
                return Err(input_error(format!(
                    "--label {key}: given twice ({first}, {value}); give each key once"
                )));
            }
        }
        if self.metrics_listen.is_some()
            && let Some(key) = labels
                .keys()
                .find(|k| k.starts_with("__") || RESERVED_LABELS.contains(&k.as_str()))
        {
            return Err(input_error(format!(
                "--label {key}: with --metrics-listen this name is cauda's own Prometheus label \
                 (or reserved by Prometheus); choose another key"
            )));
        }
        if let Some(shard) = self.shard()? {
            let given = labels.insert("shard".to_string(), shard.label());
            if given.is_some_and(|g| g != shard.label()) {
                return Err(input_error(format!(
                    "--label shard: the run is shard {} (--shard or JOB_COMPLETION_INDEX); drop the label",
                    shard.label()
                )));
            }
        }
        let mut kernel = self.kernel.clone();
        kernel.sort();
        kernel.dedup();
        let blame = kernel.contains(&crate::model::kernel::KernelSource::Blame);
        if !blame && (self.blame_above.is_some() || self.blame_keep.is_some()) {
            return Err(input_error(
                "--blame-above and --blame-keep choose what --kernel blame keeps: add --kernel blame",
            ));
        }
        Ok(Destination {
            run_file: self.output.clone(),
            hlog: self.hlog.clone(),
            force: self.force,
            labels,
            start_at_unix_ns: self.start_at,
            metrics: self.metrics_listen,
            kernel,
            blame_above_ns: self.blame_above,
            blame_keep: self.blame_keep.unwrap_or(100) as usize,
            host_counters: !self.no_host_counters,
            self_heartbeat: !self.no_self_thread,
        })
    }
}
