//! What each job does next: the direction (by `--rw` and `--mix`), the
//! offset (sequential, uniform or Zipf-distributed over the region) and an
//! fsync after every `--fsync N` writes.
//!
//! Zipf offsets follow Gray et al., "Quickly generating billion-record
//! synthetic databases" (SIGMOD 1994), the method fio uses: rank `k` of `n`
//! is drawn with probability ∝ 1/k^θ, then ranks are scattered over the
//! region by a fixed permutation so the hot blocks are not all at its start.

use serde::Serialize;

use super::engine::Dir;
use crate::record::schedule::SplitMix64;

/// The access pattern (`--rw`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Rw {
    /// Sequential reads.
    Read,
    /// Sequential writes.
    Write,
    /// Random reads.
    Randread,
    /// Random writes.
    Randwrite,
    /// Random reads and writes, `--mix` percent reads.
    Randrw,
}

impl Rw {
    /// Whether the workload writes.
    pub fn writes(self) -> bool {
        matches!(self, Rw::Write | Rw::Randwrite | Rw::Randrw)
    }

    /// Whether the workload reads.
    pub fn reads(self) -> bool {
        matches!(self, Rw::Read | Rw::Randread | Rw::Randrw)
    }

    /// Whether offsets are random.
    pub fn random(self) -> bool {
        matches!(self, Rw::Randread | Rw::Randwrite | Rw::Randrw)
    }
}

/// How random offsets are distributed (`--random`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Distribution {
    /// Every block equally likely.
    Uniform,
    /// Zipf with exponent `theta` (hot blocks).
    Zipf {
        /// The exponent θ > 0, θ ≠ 1.
        theta: f64,
    },
}

/// Parses `uniform` or `zipf:THETA`.
pub fn parse_distribution(text: &str) -> Result<Distribution, String> {
    const SYNTAX: &str = "expected uniform or zipf:THETA (e.g. zipf:1.2; THETA > 0, not 1)";
    match text.split_once(':') {
        None if text == "uniform" => Ok(Distribution::Uniform),
        Some(("zipf", theta)) => match theta.parse::<f64>() {
            Ok(t) if t > 0.0 && t.is_finite() && (t - 1.0).abs() > 1e-9 => {
                Ok(Distribution::Zipf { theta: t })
            }
            _ => Err(format!("'{text}': {SYNTAX}")),
        },
        _ => Err(format!("'{text}': {SYNTAX}")),
    }
}

/// Gray's Zipf generator over ranks `0..n`.
#[derive(Clone, Debug)]
pub struct Zipf {
    n: f64,
    theta: f64,
    alpha: f64,
    eta: f64,
    zetan: f64,
}

/// ζ(n, θ) = Σ 1/i^θ for i in 1..=n; past a million terms the tail is
/// approximated by its integral (relative error below 1e-6 there).
fn zeta(n: u64, theta: f64) -> f64 {
    const EXACT: u64 = 1_000_000;
    let exact = n.min(EXACT);
    let mut sum: f64 = (1..=exact).map(|i| (i as f64).powf(-theta)).sum();
    if n > exact {
        let a = exact as f64 + 0.5;
        let b = n as f64 + 0.5;
        sum += (b.powf(1.0 - theta) - a.powf(1.0 - theta)) / (1.0 - theta);
    }
    sum
}

impl Zipf {
    /// A generator over `n` ranks with exponent `theta`.
    pub fn new(n: u64, theta: f64) -> Self {
        let zeta2 = zeta(2, theta);
        let zetan = zeta(n, theta);
        let nf = n as f64;
        Zipf {
            n: nf,
            theta,
            alpha: 1.0 / (1.0 - theta),
            eta: (1.0 - (2.0 / nf).powf(1.0 - theta)) / (1.0 - zeta2 / zetan),
            zetan,
        }
    }

    /// The rank (0 is the hottest) for a uniform `u` in (0, 1].
    pub fn rank(&self, u: f64) -> u64 {
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1;
        }
        let r = self.n * (self.eta * u - self.eta + 1.0).powf(self.alpha);
        (r as u64).min(self.n as u64 - 1)
    }
}

/// A uniform value in `0..n` from 64 random bits (Lemire's multiply-shift).
#[inline]
fn below(bits: u64, n: u64) -> u64 {
    ((u128::from(bits) * u128::from(n)) >> 64) as u64
}

/// A multiplier coprime with `n`: multiplying by it modulo `n` permutes `0..n`.
fn scatter_multiplier(n: u64) -> u64 {
    const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;
    let n = n.max(1);
    let mut m = GOLDEN % n;
    while gcd(m, n) != 1 {
        m += 1;
    }
    m
}

/// Scatters Zipf rank `rank` over `0..n` (a bijection for a coprime `m`).
#[inline]
fn scatter(rank: u64, n: u64, m: u64) -> u64 {
    ((u128::from(rank) * u128::from(m)) % u128::from(n.max(1))) as u64
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// One job's stream of operations.
#[derive(Clone, Debug)]
pub struct Workload {
    rw: Rw,
    read_pct: u8,
    zipf: Option<Zipf>,
    scatter_by: u64,
    region_start: u64,
    block: u64,
    blocks: u64,
    next_seq: u64,
    fsync_every: u64,
    writes_since_fsync: u64,
    rng: SplitMix64,
}

/// The parameters of a [`Workload`].
#[derive(Clone, Debug)]
pub struct WorkloadSpec {
    /// `--rw`.
    pub rw: Rw,
    /// `--mix`: percent of reads for `randrw`.
    pub read_pct: u8,
    /// `--random`.
    pub distribution: Distribution,
    /// First byte of the region.
    pub region_start: u64,
    /// Bytes in the region (a multiple of `block` is used).
    pub region_len: u64,
    /// `--bs`.
    pub block: u64,
    /// `--fsync N`: 0 for never.
    pub fsync_every: u64,
}

impl Workload {
    /// Job `job` of `jobs`: sequential jobs start at evenly spread offsets.
    pub fn new(spec: &WorkloadSpec, job: usize, jobs: usize, seed: u64) -> Self {
        let blocks = (spec.region_len / spec.block).max(1);
        let zipf = match spec.distribution {
            Distribution::Zipf { theta } if spec.rw.random() => Some(Zipf::new(blocks, theta)),
            _ => None,
        };
        Workload {
            rw: spec.rw,
            read_pct: spec.read_pct,
            zipf,
            scatter_by: scatter_multiplier(blocks),
            region_start: spec.region_start,
            block: spec.block,
            blocks,
            next_seq: blocks * job as u64 / jobs.max(1) as u64,
            fsync_every: spec.fsync_every,
            writes_since_fsync: 0,
            rng: SplitMix64::new(seed),
        }
    }

    /// The next operation: its direction and byte offset.
    #[inline]
    pub fn next_op(&mut self) -> (Dir, u64) {
        if self.fsync_every > 0 && self.writes_since_fsync >= self.fsync_every {
            self.writes_since_fsync = 0;
            return (Dir::Fsync, 0);
        }
        let dir = match self.rw {
            Rw::Read | Rw::Randread => Dir::Read,
            Rw::Write | Rw::Randwrite => Dir::Write,
            Rw::Randrw => {
                if below(self.rng.next_u64(), 100) < u64::from(self.read_pct) {
                    Dir::Read
                } else {
                    Dir::Write
                }
            }
        };
        if dir == Dir::Write {
            self.writes_since_fsync += 1;
        }
        let index = if self.rw.random() {
            match &self.zipf {
                Some(z) => scatter(z.rank(self.rng.next_unit()), self.blocks, self.scatter_by),
                None => below(self.rng.next_u64(), self.blocks),
            }
        } else {
            let i = self.next_seq;
            self.next_seq = (self.next_seq + 1) % self.blocks;
            i
        };
        (dir, self.region_start + index * self.block)
    }

    /// The block size.
    pub fn block(&self) -> u64 {
        self.block
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(rw: Rw, distribution: Distribution) -> WorkloadSpec {
        WorkloadSpec {
            rw,
            read_pct: 70,
            distribution,
            region_start: 8192,
            region_len: 1 << 20,
            block: 4096,
            fsync_every: 0,
        }
    }

    #[test]
    fn sequential_wraps_and_stays_aligned_in_the_region() {
        let mut w = Workload::new(&spec(Rw::Read, Distribution::Uniform), 0, 1, 1);
        let offsets: Vec<u64> = (0..300).map(|_| w.next_op().1).collect();
        assert_eq!(offsets[0], 8192);
        assert_eq!(offsets[1], 8192 + 4096);
        assert_eq!(offsets[256], 8192, "wraps after 256 blocks");
        let mut second = Workload::new(&spec(Rw::Read, Distribution::Uniform), 1, 2, 1);
        assert_eq!(
            second.next_op().1,
            8192 + 128 * 4096,
            "job 1 of 2 starts halfway"
        );
    }

    #[test]
    fn uniform_covers_every_block_and_mix_holds() {
        let mut w = Workload::new(&spec(Rw::Randrw, Distribution::Uniform), 0, 1, 7);
        let mut seen = vec![0u32; 256];
        let mut reads = 0;
        for _ in 0..100_000 {
            let (dir, off) = w.next_op();
            assert!((8192..8192 + (1 << 20)).contains(&off) && off % 4096 == 0);
            seen[((off - 8192) / 4096) as usize] += 1;
            reads += u32::from(dir == Dir::Read);
        }
        assert!(seen.iter().all(|&c| c > 250), "every block drawn");
        assert!((69_000..71_000).contains(&reads), "70 % reads: {reads}");
    }

    #[test]
    fn zipf_is_skewed_as_its_exponent_says() {
        // θ = 1.2 over 256 blocks: the hottest rank has probability 1/ζ(256, 1.2).
        let mut w = Workload::new(
            &spec(Rw::Randread, Distribution::Zipf { theta: 1.2 }),
            0,
            1,
            3,
        );
        let mut seen = vec![0u32; 256];
        let n = 200_000;
        for _ in 0..n {
            seen[((w.next_op().1 - 8192) / 4096) as usize] += 1;
        }
        let hottest = *seen.iter().max().unwrap() as f64 / n as f64;
        let expected = 1.0 / zeta(256, 1.2);
        assert!((hottest - expected).abs() < 0.01, "{hottest} vs {expected}");
        assert!(
            seen.iter().filter(|&&c| c == 0).count() < 64,
            "the tail is drawn too"
        );
    }

    #[test]
    fn fsync_follows_every_n_writes() {
        let mut s = spec(Rw::Randwrite, Distribution::Uniform);
        s.fsync_every = 3;
        let mut w = Workload::new(&s, 0, 1, 1);
        let dirs: Vec<Dir> = (0..8).map(|_| w.next_op().0).collect();
        use Dir::*;
        assert_eq!(
            dirs,
            [Write, Write, Write, Fsync, Write, Write, Write, Fsync]
        );
    }

    #[test]
    fn distributions_parse_with_their_syntax() {
        assert_eq!(parse_distribution("uniform"), Ok(Distribution::Uniform));
        assert_eq!(
            parse_distribution("zipf:1.2"),
            Ok(Distribution::Zipf { theta: 1.2 })
        );
        for bad in ["zipf:1", "zipf:-2", "zipf", "pareto:0.5"] {
            assert!(parse_distribution(bad).unwrap_err().contains("zipf:THETA"));
        }
    }

    #[test]
    fn scatter_is_a_permutation() {
        for n in [1u64, 2, 7, 256, 1000] {
            let mut hit = vec![false; n as usize];
            for r in 0..n {
                hit[scatter(r, n, scatter_multiplier(n)) as usize] = true;
            }
            assert!(hit.iter().all(|&h| h), "n = {n}");
        }
    }
}
