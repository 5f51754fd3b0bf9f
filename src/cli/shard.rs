//! `--shard I/N`: this run is part I of N of one load spread over N hosts.
//!
//! A rate (`--rate`) is the whole load's: each shard runs 1/N of it, and
//! its Poisson arrivals get a seed of their own so the shards do not send
//! in lockstep. Without the flag the shard comes from a Kubernetes Indexed
//! Job's `JOB_COMPLETION_INDEX` and `JOB_COMPLETIONS` when both are set.
//! I counts from 0, as `JOB_COMPLETION_INDEX` does. The run is labelled
//! `shard=I/N`.

use anyhow::Result;

use crate::error::input_error;
use crate::units::Rate;

/// Part `index` of `count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// From 0 to `count` − 1.
    pub index: u64,
    /// How many shards share the load, at least 1.
    pub count: u64,
}

const EXPECTED: &str = "expected I/N with 0 ≤ I < N, e.g. 0/4 … 3/4 (I counts from 0, as \
                        Kubernetes' JOB_COMPLETION_INDEX does)";

impl Shard {
    /// Parses `I/N`.
    pub fn parse(text: &str) -> Result<Shard, String> {
        let (index, count) = text
            .split_once('/')
            .ok_or_else(|| format!("'{text}': {EXPECTED}"))?;
        let number = |s: &str| s.trim().parse::<u64>().ok();
        match (number(index), number(count)) {
            (Some(index), Some(count)) if index < count => Ok(Shard { index, count }),
            _ => Err(format!("'{text}': {EXPECTED}")),
        }
    }

    /// The shard of a Kubernetes Indexed Job's pod, when `index` and
    /// `count` (the two variables' values) are both given.
    pub fn from_job(index: Option<String>, count: Option<String>) -> Result<Option<Shard>> {
        match (index, count) {
            (Some(index), Some(count)) => Shard::parse(&format!("{index}/{count}"))
                .map(Some)
                .map_err(|e| {
                    input_error(format!(
                        "JOB_COMPLETION_INDEX/JOB_COMPLETIONS: {e}; or give --shard I/N"
                    ))
                }),
            // Kubernetes sets the index in an Indexed Job, never the count:
            // without it every pod would run the whole load.
            (Some(index), None) => Err(input_error(format!(
                "JOB_COMPLETION_INDEX is {index} but JOB_COMPLETIONS is not set, so the shard \
                 count is unknown and every pod would run the whole load; set JOB_COMPLETIONS \
                 to the Job's completions (env in the pod spec), or give --shard I/N"
            ))),
            _ => Ok(None),
        }
    }

    /// This shard's part of the whole load's rate.
    pub fn rate(&self, whole: Rate) -> Rate {
        Rate {
            per_second: whole.per_second / self.count as f64,
        }
    }

    /// This shard's seed for random arrivals: the given seed for shard 0,
    /// a different one for each other shard.
    pub fn seed(&self, seed: u64) -> u64 {
        seed.wrapping_add(self.index.wrapping_mul(0x9e37_79b9_7f4a_7c15))
    }

    /// The run's label value.
    pub fn label(&self) -> String {
        format!("{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_i_of_n_from_zero_and_refuses_the_rest() {
        assert_eq!(Shard::parse("0/4"), Ok(Shard { index: 0, count: 4 }));
        assert_eq!(Shard::parse("3/4").unwrap().label(), "3/4");
        for bad in ["3/2", "4/4", "1/0", "x/4", "1", "-1/4", "1/4/2"] {
            let err = Shard::parse(bad).unwrap_err();
            assert!(err.contains("expected I/N"), "{bad}: {err}");
        }
    }

    #[test]
    fn each_shard_runs_its_part_of_the_rate_with_its_own_seed() {
        let shards: Vec<Shard> = (0..4).map(|index| Shard { index, count: 4 }).collect();
        let total: f64 = shards
            .iter()
            .map(|s| {
                s.rate(Rate {
                    per_second: 10_000.0,
                })
                .per_second
            })
            .sum();
        assert_eq!(total, 10_000.0);
        assert_eq!(shards[0].seed(7), 7);
        let seeds: std::collections::BTreeSet<u64> = shards.iter().map(|s| s.seed(7)).collect();
        assert_eq!(seeds.len(), 4);
    }

    #[test]
    fn a_kubernetes_indexed_job_gives_the_shard() {
        let job = |i: &str, n: &str| Shard::from_job(Some(i.into()), Some(n.into()));
        assert_eq!(job("2", "5").unwrap(), Some(Shard { index: 2, count: 5 }));
        let half = Shard::from_job(Some("2".into()), None)
            .unwrap_err()
            .to_string();
        assert!(half.contains("JOB_COMPLETIONS is not set"), "{half}");
        assert_eq!(Shard::from_job(None, Some("5".into())).unwrap(), None);
        assert_eq!(Shard::from_job(None, None).unwrap(), None);
        let err = job("5", "5").unwrap_err().to_string();
        assert!(err.contains("JOB_COMPLETION_INDEX"), "{err}");
    }
}
