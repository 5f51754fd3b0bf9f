//! The `disk` probe's jobs as the run engine runs them: each is prepared (its
//! engine made on the target, its workload seeded, the `--ramp` warm-up
//! run unrecorded) and then measured; each finished job's counts are kept
//! for the completion.

use std::sync::Mutex;

use anyhow::{Context, Result, anyhow};

use super::any_engine::{AnyEngine, make_engine};
use super::config::DiskConfig;
use super::measure::{Discard, Job, JobStats, SeriesMap};
use super::target::Target;
use super::workload::{Workload, WorkloadSpec};
use crate::model::disk::EngineKind;
use crate::record::{Clock, MonotonicClock, Recorder, Sink, StopFlag};

/// What every job of a run shares, and each one's engine and workload
/// between preparing and measuring.
pub(super) struct Jobs<'a> {
    config: &'a DiskConfig,
    target: &'a Target,
    kind: EngineKind,
    spec: WorkloadSpec,
    map: SeriesMap,
    engines: Mutex<Vec<Option<(AnyEngine, Workload)>>>,
    stats: Mutex<Vec<JobStats>>,
    stop: &'a StopFlag,
}

impl<'a> Jobs<'a> {
    /// The jobs of a run on `target` with engines of `kind`, recording
    /// into the series of `map`.
    pub(super) fn new(
        config: &'a DiskConfig,
        target: &'a Target,
        kind: EngineKind,
        map: SeriesMap,
        stop: &'a StopFlag,
    ) -> Jobs<'a> {
        let spec = WorkloadSpec {
            rw: config.rw,
            read_pct: config.read_pct,
            distribution: config.random,
            region_start: config.offset,
            region_len: target.region_len,
            block: config.bs,
            fsync_every: config.fsync_every.unwrap_or(0),
        };
        Jobs {
            config,
            target,
            kind,
            spec,
            map,
            engines: Mutex::new((0..config.jobs).map(|_| None).collect()),
            stats: Mutex::new(Vec::new()),
            stop,
        }
    }

    fn seed(&self, job: usize) -> u64 {
        self.config.job_seed(job)
    }

    /// Runs `state` from `start` until `end`: closed loop, or open loop
    /// from job `job`'s schedule. Uniform schedules of the jobs are spread
    /// over one period, not in step.
    fn run_loop<S: Sink>(
        &self,
        job: usize,
        state: &mut Job<'_, AnyEngine, S>,
        start: u64,
        end: u64,
    ) -> std::io::Result<u64> {
        let clock = MonotonicClock;
        match self.config.job_schedule(job, start) {
            None => state.closed_loop(&clock, end),
            Some(mut schedule) => state.open_loop(&clock, &mut schedule, end),
        }
    }

    /// Makes job `job`'s engine and workload, and runs the warm-up.
    pub(super) fn prepare(&self, job: usize) -> Result<()> {
        let config = self.config;
        let mut engine = make_engine(
            self.kind,
            self.target,
            config.iodepth,
            config.bs as usize,
            self.seed(job),
        )?;
        let mut workload = Workload::new(&self.spec, job, config.jobs, self.seed(job));
        if config.ramp_ns > 0 {
            let mut ignored = JobStats::default();
            // Ctrl-C during the warm-up ends it; the run that follows stops
            // at once and is saved as interrupted.
            let mut job_state = Job {
                engine: &mut engine,
                workload: &mut workload,
                sink: &mut Discard,
                series: self.map,
                stats: &mut ignored,
                verify: config.verify,
                submit_batch: config.submit_batch,
                stop: self.stop,
            };
            let start = MonotonicClock.now();
            self.run_loop(job, &mut job_state, start, start + config.ramp_ns)
                .context("--ramp: the warm-up failed")?;
        }
        self.engines.lock().map_err(|_| anyhow!("poisoned"))?[job] = Some((engine, workload));
        Ok(())
    }

    /// Measures job `job` from `start` for `--runtime`; its counts are
    /// kept whatever the outcome.
    pub(super) fn body(
        &self,
        job: usize,
        start: u64,
        recorder: &mut Recorder,
        stop: &StopFlag,
    ) -> Result<u64> {
        let config = self.config;
        let (mut engine, mut workload) = self.engines.lock().map_err(|_| anyhow!("poisoned"))?[job]
            .take()
            .ok_or_else(|| anyhow!("job {job} was not prepared"))?;
        let mut job_stats = JobStats::default();
        let mut job_state = Job {
            engine: &mut engine,
            workload: &mut workload,
            sink: recorder,
            series: self.map,
            stats: &mut job_stats,
            verify: config.verify,
            submit_batch: config.submit_batch,
            stop,
        };
        let outcome = self.run_loop(job, &mut job_state, start, start + config.runtime_ns);
        self.stats
            .lock()
            .map_err(|_| anyhow!("poisoned"))?
            .push(job_stats);
        outcome.with_context(|| {
            format!(
                "job {job}: the I/O engine failed on {}",
                self.target.path.display()
            )
        })
    }

    /// The counts of every job that finished, added up.
    pub(super) fn total(&self) -> Result<JobStats> {
        let mut total = JobStats::default();
        for s in self.stats.lock().map_err(|_| anyhow!("poisoned"))?.iter() {
            total.merge(s);
        }
        Ok(total)
    }
}
