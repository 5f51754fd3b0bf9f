//! `cauda broker --acks-matrix`: the same broker workload with acks 0, 1
//! and all, their percentiles side by side, and acks=1 compared with each
//! with confidence intervals — the table of the field report this project
//! answers (Redpanda: p99 763 ms with acks=all against 1.97 ms with acks=1).
//!
//! A matrix run in one fixed order measures the order too: the first run
//! meets colder broker JVMs, page cache and log segments than the last
//! (on this project's VM the acks=all run, always last, came out *faster*
//! than acks=1). So the settings run in rounds whose order alternates
//! (0, 1, all; then all, 1, 0; …), each run is kept in its own run file,
//! and each setting's rounds are pooled exactly — interval i of every
//! round merged, never percentiles averaged — before the comparison.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::error::{Outcome, input_error};
use crate::formats::import::{self, options::ReadOptions};
use crate::formats::merge::{self, TagBy};
use crate::model::Loaded;
use crate::probe::broker::{self, Acks, BrokerConfig};
use crate::probe::run::Destination;
use crate::record::StopFlag;
use crate::units::{self, TimeUnit};

const SETTINGS: [Acks; 3] = [Acks::None, Acks::Leader, Acks::All];

/// The order of the settings in round `round` (from 0): forwards in even
/// rounds, backwards in odd ones.
fn order(round: usize) -> [Acks; 3] {
    let mut settings = SETTINGS;
    if round % 2 == 1 {
        settings.reverse();
    }
    settings
}

/// The run file of one setting in one round: `-o`'s name with
/// `-acks{0,1,all}` (and `-r{k}` when there is more than one round).
fn run_path(base: &Path, acks: Acks, round: usize, rounds: usize) -> PathBuf {
    let stem = base
        .file_stem()
        .map_or("broker".into(), |s| s.to_string_lossy().into_owned());
    let round = if rounds > 1 {
        format!("-r{}", round + 1)
    } else {
        String::new()
    };
    base.with_file_name(format!("{stem}-acks{}{round}.json", acks.name()))
}

/// Runs the matrix: `rounds` rounds of the three settings, each run into
/// its own file named after `base` (`destination.run_file`, or a default
/// name), then prints the pooled table and comparisons.
pub fn run(config: &BrokerConfig, destination: &Destination, rounds: usize) -> Result<Outcome> {
    if destination.hlog.is_some() || destination.metrics.is_some() {
        return Err(input_error(
            "--acks-matrix writes a run per setting and round; --hlog and --metrics-listen \
             serve one: leave them out",
        ));
    }
    if rounds == 0 {
        return Err(input_error("--matrix-rounds: at least 1"));
    }
    let base = destination.run_file.clone().unwrap_or_else(default_base);
    let stop = StopFlag::on_signals()?;
    let mut paths: Vec<(Acks, PathBuf)> = Vec::new();
    for round in 0..rounds {
        for acks in order(round) {
            let mut run_config = config.clone();
            run_config.acks = acks;
            if run_config.topic_generated {
                run_config.topic = format!("cauda-{:08x}", broker::random_u64() as u32);
            }
            let mut one = destination.clone();
            one.run_file = Some(run_path(&base, acks, round, rounds));
            eprintln!(
                "cauda broker --acks-matrix: round {}/{rounds}, acks={} on {} for {}",
                round + 1,
                acks.name(),
                run_config.bootstrap,
                units::format_duration_compact(run_config.runtime_ns)
            );
            let finished = broker::run(&run_config, &one, &stop)?;
            for w in &finished.run.warnings {
                eprintln!("warning: {} — {}", w.message, w.advice);
            }
            eprintln!("saved {}", finished.path.display());
            let interrupted = finished.run.interrupted;
            paths.push((acks, finished.path));
            if interrupted {
                eprintln!("interrupted: the runs so far are saved");
                return Ok(Outcome::Interrupted);
            }
        }
    }
    let pooled: Vec<Loaded> = SETTINGS
        .iter()
        .map(|&acks| {
            let runs: Vec<&Path> = paths
                .iter()
                .filter(|(a, _)| *a == acks)
                .map(|(_, p)| p.as_path())
                .collect();
            pool(acks, &runs)
        })
        .collect::<Result<_>>()?;
    let mut out = std::io::stdout().lock();
    write!(out, "{}", table(&pooled, rounds))?;
    for (base, new) in [(1, 2), (1, 0)] {
        let comparison = crate::analyze::compare::compare(
            &pooled[base],
            &pooled[new],
            &crate::analyze::compare::CompareOptions::default(),
        )?;
        writeln!(
            out,
            "\nacks={} → acks={}:\n{}",
            SETTINGS[base].name(),
            SETTINGS[new].name(),
            crate::report::compare::render_text(&comparison)
        )?;
    }
    out.flush()?;
    Ok(Outcome::Done)
}

fn default_base() -> PathBuf {
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let stamp: String = now
        .chars()
        .filter(|c| c.is_ascii_digit())
        .take(14)
        .collect();
    PathBuf::from(format!(
        "cauda-broker-matrix-{}-{}.json",
        &stamp[..8],
        &stamp[8..]
    ))
}

/// One setting's rounds as one input: each round's interval i merged with
/// the others' (by offset from each run's start, since the rounds ran one
/// after another), so its percentiles are those of every value.
fn pool(acks: Acks, runs: &[&Path]) -> Result<Loaded> {
    let options = ReadOptions::new(TimeUnit::Ns);
    let mut loaded: Vec<Loaded> = runs
        .iter()
        .map(|p| import::load(p, &options))
        .collect::<Result<_>>()?;
    if loaded.len() == 1 {
        return Ok(loaded.remove(0));
    }
    // Offsets, not wall clocks: the rounds did not run at the same time.
    for input in &mut loaded {
        if let Some(run) = input.run.as_mut() {
            run.start_unix_ns = 0;
        }
    }
    let mut run = merge::merge(&loaded, TagBy::Tag)?;
    run.warnings.clear();
    let series = std::mem::take(&mut run.series);
    Ok(Loaded {
        source: format!("acks={} ({} rounds)", acks.name(), runs.len()),
        format: crate::model::Format::CaudaRun,
        series,
        run: Some(run),
        warnings: Vec::new(),
    })
}

/// p50, p99, p99.9 and max of `publish` and `e2e` per setting.
fn table(pooled: &[Loaded], rounds: usize) -> String {
    let mut out = format!(
        "acks   series   p50          p99          p99.9        max{}\n",
        if rounds > 1 {
            format!(
                "   ({rounds} rounds pooled, order alternating: counts and throughput below \
                 are the rounds' sum)"
            )
        } else {
            String::new()
        }
    );
    for (acks, input) in SETTINGS.iter().zip(pooled) {
        let Some(run) = &input.run else { continue };
        for s in &run.summary {
            if !["publish", "e2e"].contains(&s.tag.as_str()) {
                continue;
            }
            let p = |q: &str| {
                s.summary
                    .percentiles
                    .get(q)
                    .map_or("—".to_string(), |v| units::format_ns(v as f64))
            };
            out.push_str(&format!(
                "{:<6} {:<8} {:<12} {:<12} {:<12} {}\n",
                acks.name(),
                s.tag,
                p("50"),
                p("99"),
                p("99.9"),
                units::format_ns(s.summary.max as f64)
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_alternate_their_order() {
        assert_eq!(order(0), [Acks::None, Acks::Leader, Acks::All]);
        assert_eq!(order(1), [Acks::All, Acks::Leader, Acks::None]);
        assert_eq!(order(2), order(0));
    }

    #[test]
    fn each_run_has_a_file_of_its_own() {
        let base = Path::new("/tmp/m.json");
        assert_eq!(
            run_path(base, Acks::All, 1, 2),
            PathBuf::from("/tmp/m-acksall-r2.json")
        );
        assert_eq!(
            run_path(base, Acks::None, 0, 1),
            PathBuf::from("/tmp/m-acks0.json")
        );
    }
}
