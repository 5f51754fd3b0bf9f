//! Aligning the inputs' intervals: where each input's intervals sit on
//! the merged run's time line — by wall-clock start when every input is a
//! run file, by offset from each input's own start otherwise — and what
//! the merge warns of (runs off the interval grid, unsynchronised clocks).

use std::collections::BTreeMap;

use super::name::stem;
use crate::model::{Loaded, Warning};

/// Where each input's intervals sit on the merged run's time line.
pub(super) struct Grid {
    /// Per input (by source), ns after the earliest start.
    pub offsets: BTreeMap<String, u64>,
    /// True when every input knew its wall-clock start.
    pub wall_clock: bool,
    /// The input that started first.
    pub earliest: Option<usize>,
}

impl Grid {
    pub fn of(inputs: &[Loaded]) -> Grid {
        let starts: Option<Vec<u128>> = inputs
            .iter()
            .map(|i| i.run.as_ref().map(|r| r.start_unix_ns).filter(|&s| s > 0))
            .collect();
        let Some(starts) = starts.filter(|s| !s.is_empty()) else {
            return Grid {
                offsets: BTreeMap::new(),
                wall_clock: false,
                earliest: None,
            };
        };
        let min = starts.iter().copied().min().unwrap_or(0);
        Grid {
            offsets: inputs
                .iter()
                .zip(&starts)
                .map(|(i, &s)| (i.source.clone(), (s - min).min(u64::MAX as u128) as u64))
                .collect(),
            wall_clock: true,
            earliest: starts.iter().position(|&s| s == min),
        }
    }

    /// The merged interval (its start) an interval of `source` starting
    /// at `start_ns` of its own run belongs to: the nearest on the grid.
    pub fn slot(&self, source: &str, start_ns: u64, length_ns: u64) -> u64 {
        let at = self
            .offsets
            .get(source)
            .copied()
            .unwrap_or(0)
            .saturating_add(start_ns);
        if length_ns == 0 {
            return at;
        }
        at.saturating_add(length_ns / 2) / length_ns * length_ns
    }

    /// What the merge should say: inputs off the grid by more than 1 % of
    /// an interval, clocks not known to be synchronised.
    pub fn warnings(&self, inputs: &[Loaded], interval_ns: u64) -> Vec<Warning> {
        let mut out = Vec::new();
        let fmt = crate::units::format_ns;
        if self.wall_clock && interval_ns > 0 {
            let off: Vec<String> = self
                .offsets
                .iter()
                .filter_map(|(source, &offset)| {
                    let r = offset % interval_ns;
                    let miss = r.min(interval_ns - r);
                    (miss * 100 > interval_ns).then(|| {
                        format!(
                            "{} started {} after the first ({} off the interval grid)",
                            stem(source),
                            fmt(offset as f64),
                            fmt(miss as f64)
                        )
                    })
                })
                .collect();
            if !off.is_empty() {
                out.push(Warning {
                    message: format!(
                        "intervals do not line up: {}; each of their intervals was merged into the \
                         nearest interval of the first, so values up to that far apart share an interval",
                        off.join("; ")
                    ),
                    advice: "start the runs with --start-at TIME (the same on every host) so \
                             their intervals are the same wall-clock seconds"
                        .into(),
                });
            }
            // One host's runs share one clock, however far off it is.
            let hosts: std::collections::BTreeSet<_> = inputs
                .iter()
                .filter_map(|i| i.run.as_ref()?.host.hostname.as_deref())
                .collect();
            for input in inputs.iter().filter(|_| hosts.len() > 1) {
                if let Some(sync) = input.run.as_ref().and_then(|r| r.host.clock_sync.as_ref())
                    && !sync.synchronized
                {
                    out.push(Warning {
                        message: format!(
                            "{}: the host's clock was not synchronised (maximum error {}): its \
                             intervals are placed by a wall clock that may be off by that much",
                            stem(&input.source),
                            fmt(sync.maximum_error_us as f64 * 1e3)
                        ),
                        advice: "run chrony, ntpd or ptp4l on every host of a coordinated run"
                            .into(),
                    });
                }
            }
        } else if !self.wall_clock && inputs.len() > 1 {
            out.push(Warning {
                message: "an input has no wall-clock start (not a cauda run file): intervals \
                          were matched by their offset from each input's own start"
                    .into(),
                advice: "merge run files to align by wall clock".into(),
            });
        }
        out
    }
}
