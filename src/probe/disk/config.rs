//! The `disk` probe's parameters as resolved (stored in the run file),
//! the checks made before the target is touched, and the series they ask for.

use anyhow::Result;
use serde::Serialize;

use super::engine::Dir;
use super::measure::SeriesMap;
use super::target::TargetSpec;
use super::workload::{Distribution, Rw};
use crate::error::input_error;
use crate::model::MeasuredFrom;
use crate::model::disk::EngineKind;
use crate::probe::run::{Blamed, OfferedPlan, SeriesSpec};
use crate::record::{Arrivals, Schedule};
use crate::units::format_duration_compact;

/// The disk probe's parameters as resolved; stored in the run file.
#[derive(Clone, Debug, Serialize)]
pub struct DiskConfig {
    /// The file or device.
    pub target: TargetSpec,
    /// Access pattern.
    pub rw: Rw,
    /// Percent reads (randrw).
    pub read_pct: u8,
    /// Block size in bytes.
    pub bs: u64,
    /// Region size in bytes, if given.
    pub size: Option<u64>,
    /// Region start in bytes.
    pub offset: u64,
    /// In-flight operations per job.
    pub iodepth: usize,
    /// Operations queued before they are submitted together.
    pub submit_batch: usize,
    /// Record fio's slat and clat beside the latency (closed loop).
    pub slat_clat: bool,
    /// Jobs.
    pub jobs: usize,
    /// Measured time in ns.
    pub runtime_ns: u64,
    /// Unrecorded warm-up in ns.
    pub ramp_ns: u64,
    /// Offset distribution of random workloads.
    pub random: Distribution,
    /// The engine asked for (`None`: io_uring if available).
    pub engine: Option<EngineKind>,
    /// O_DIRECT.
    pub direct: bool,
    /// Total operations per second (open loop), if any.
    pub rate_per_s: Option<f64>,
    /// Spacing of intended starts.
    pub arrivals: Arrivals,
    /// fdatasync every N writes.
    pub fsync_every: Option<u64>,
    /// Sequential passes over the region before measuring.
    pub precondition: u32,
    /// Write to an existing file cauda did not create.
    pub force: bool,
    /// Write to a device that holds data.
    pub force_destroy_data: bool,
    /// Verify pattern seed.
    pub verify: Option<u64>,
    /// Seed of offsets, mix and data.
    pub seed: u64,
    /// Histogram interval length in ns.
    pub interval_length_ns: u64,
}

impl DiskConfig {
    /// Whether the run writes to the target (preconditioning counts).
    pub fn writes(&self) -> bool {
        self.rw.writes() || self.precondition > 0
    }

    /// Checks what can be checked before touching the target.
    pub fn validate(&self) -> Result<()> {
        if self.bs == 0 || self.bs > 64 << 20 {
            return Err(input_error("--bs: must be between 1 byte and 64M"));
        }
        if self.runtime_ns < 1_000_000 || self.runtime_ns > 30 * 24 * 3_600_000_000_000 {
            return Err(input_error(format!(
                "--runtime {}: must be between 1ms and 30 days",
                format_duration_compact(self.runtime_ns)
            )));
        }
        crate::probe::check_interval_length(self.interval_length_ns)?;
        if self.fsync_every.is_some() && !self.rw.writes() {
            return Err(input_error(format!(
                "--fsync needs a workload that writes; --rw {:?} only reads (use write, randwrite or randrw)",
                self.rw
            ).to_lowercase()));
        }
        if self.engine == Some(EngineKind::Psync) && self.iodepth > 1 {
            return Err(input_error(
                "--engine psync runs one I/O at a time per job: drop --iodepth, use --jobs N for \
                 parallelism, or --engine io_uring",
            ));
        }
        if self.submit_batch > self.iodepth {
            return Err(input_error(format!(
                "--submit-batch {} is above --iodepth {}: a batch cannot hold more than the queue \
                 (lower --submit-batch or raise --iodepth)",
                self.submit_batch, self.iodepth
            )));
        }
        if let Some(rate) = self.rate_per_s
            && rate < self.jobs as f64 / 3600.0
        {
            return Err(input_error("--rate: below one operation per job per hour"));
        }
        if let (Some(size), true) = (self.size, self.size.is_some_and(|s| s < self.bs)) {
            return Err(input_error(format!(
                "--size {size} is smaller than --bs {}: not one block fits",
                self.bs
            )));
        }
        Ok(())
    }

    /// Job `job`'s seed (its workload, its engine's fill and its arrivals).
    pub(super) fn job_seed(&self, job: usize) -> u64 {
        self.seed
            .wrapping_add(job as u64)
            .wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Open loop: job `job`'s schedule from `start` (uniform schedules of
    /// the jobs are spread over one period, not in step).
    pub(super) fn job_schedule(&self, job: usize, start: u64) -> Option<Schedule> {
        let rate = self.rate_per_s?;
        let period = 1e9 * self.jobs as f64 / rate;
        let phase = (period * job as f64 / self.jobs as f64) as u64;
        Some(Schedule::new(
            start + phase,
            period,
            self.arrivals,
            self.job_seed(job),
        ))
    }

    /// Open loop: what the engine needs to count the offered load and
    /// judge whether the generator kept up.
    pub(super) fn offered(&self) -> Option<OfferedPlan> {
        let (specs, _) = self.series();
        let tags = |from: MeasuredFrom| -> Vec<String> {
            specs
                .iter()
                .filter(|s| s.tag != "lag" && s.measured_from == from)
                .map(|s| s.tag.clone())
                .collect()
        };
        Some(OfferedPlan {
            rate_per_s: self.rate_per_s?,
            schedules: (0..self.jobs)
                .filter_map(|job| self.job_schedule(job, 0))
                .collect(),
            runtime_ns: self.runtime_ns,
            in_flight_limit: Some((self.jobs * self.iodepth) as u64),
            lag: "lag".into(),
            completed: tags(MeasuredFrom::IntendedStart),
            service: tags(MeasuredFrom::ActualStart),
            advice: "each job is one thread with --iodepth operations in flight: raise \
                     --iodepth or --jobs, or give the jobs CPUs away from busy tasks; then \
                     lower --rate if it still lags",
        })
    }

    /// The series recorded, and where each direction's values go.
    pub(super) fn series(&self) -> (Vec<SeriesSpec>, SeriesMap) {
        let mut specs = Vec::new();
        let mut map = SeriesMap::default();
        let open = self.rate_per_s.is_some();
        for dir in Dir::ALL {
            let used = match dir {
                Dir::Read => self.rw.reads() && !(self.rw == Rw::Randrw && self.read_pct == 0),
                Dir::Write => self.rw.writes() && !(self.rw == Rw::Randrw && self.read_pct == 100),
                Dir::Fsync => self.fsync_every.is_some(),
            };
            if !used {
                continue;
            }
            map.latency[dir as usize] = Some(specs.len());
            specs.push(SeriesSpec {
                blamed: Blamed::Yes,
                tag: dir.tag().into(),
                measured_from: if open {
                    MeasuredFrom::IntendedStart
                } else {
                    MeasuredFrom::ActualStart
                },
            });
            if open {
                map.service[dir as usize] = Some(specs.len());
                specs.push(SeriesSpec {
                    blamed: Blamed::No,
                    tag: format!("{}.service", dir.tag()),
                    measured_from: MeasuredFrom::ActualStart,
                });
            } else if self.slat_clat {
                for (part, slot) in [("slat", &mut map.slat), ("clat", &mut map.clat)] {
                    slot[dir as usize] = Some(specs.len());
                    specs.push(SeriesSpec {
                        blamed: Blamed::No,
                        tag: format!("{}.{part}", dir.tag()),
                        measured_from: MeasuredFrom::ActualStart,
                    });
                }
            }
        }
        if open {
            map.lag = Some(specs.len());
            specs.push(SeriesSpec {
                blamed: Blamed::No,
                tag: "lag".into(),
                measured_from: MeasuredFrom::IntendedStart,
            });
        }
        (specs, map)
    }
}
