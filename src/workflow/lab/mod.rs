//! `cauda lab`: the default suite on this host, from one command.
//!
//! host audit → timer → hiccup → disk (4k random reads at QD1, random
//! writes at QD32, on a cauda-owned file removed afterwards) → net (TCP
//! ping-pong on loopback, back to back and after 500 µs idle) → one
//! directory `cauda-lab-<timestamp>/` with every run file, each step's
//! log, `report.html` and `summary.txt`; the summary and the three most
//! important findings are printed.
//!
//! Steps run as child `cauda` processes ([`steps`]); Ctrl-C is passed on
//! to the running step, which saves what it measured, and the lab still
//! writes the summary and the report of everything finished.

pub mod findings;
pub mod kernel;
mod progress;
pub mod steps;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Instant;

use anyhow::{Context, Result, anyhow};

use super::child::{self, Ended};
use crate::error::{Outcome, input_error};
use crate::formats::import::{self, options::ReadOptions};
use crate::model::{Loaded, Role};
use crate::record::StopFlag;
use crate::units::format_ns;
use progress::Progress;
use steps::{Step, StepKind};

/// What `cauda lab` is asked to do.
#[derive(Clone, Debug)]
pub struct LabConfig {
    /// Where to create `cauda-lab-DATE-TIME/` (and the disk steps' file).
    pub dir: PathBuf,
    /// The short suite.
    pub quick: bool,
    /// Steps to leave out.
    pub skip: Vec<StepKind>,
    /// Kernel series to record beside each probe step (`--kernel`).
    pub kernel: Vec<crate::model::kernel::KernelSource>,
    /// Capacity sweeps to add after the suite (`--sweep`).
    pub sweep: Vec<steps::SweepKind>,
    /// Their objective (`--sweep-objective`).
    pub sweep_objective: String,
}

/// Runs the suite.
pub fn run(args: &LabConfig, stop: &StopFlag) -> Result<Outcome> {
    let started = Instant::now();
    let (lab_dir, free) = prepare_dir(&args.dir, !args.skip.contains(&StepKind::Disk))?;
    let disk_file = lab_dir.join("disk.data");
    let disk_size = steps::disk_size(free, args.quick);
    let mut steps = steps::plan(&lab_dir, args.quick, &disk_file, disk_size, &args.skip);
    let mut kernel = kernel::loadable(&args.kernel);
    kernel::apply(&mut kernel, &mut steps);
    let sweep_kinds: Vec<_> = args
        .sweep
        .iter()
        .copied()
        .filter(|k| !(*k == steps::SweepKind::Disk && args.skip.contains(&StepKind::Disk)))
        .collect();
    for kind in &sweep_kinds {
        let name = format!("sweep-{kind:?}").to_lowercase();
        std::fs::create_dir(lab_dir.join(&name))
            .with_context(|| format!("cannot create {}", lab_dir.join(&name).display()))?;
    }
    let budget = if args.quick { 20 } else { 60 };
    steps.extend(steps::sweeps(
        &lab_dir,
        &sweep_kinds,
        &args.sweep_objective,
        budget,
        &disk_file,
        disk_size,
    ));
    let exe = std::env::current_exe().context("cannot find the cauda executable to run steps")?;
    eprintln!(
        "cauda lab: {} steps{}, results in {}",
        steps.len(),
        if args.quick { " (quick)" } else { "" },
        lab_dir.display()
    );

    let mut ended: Vec<(&Step, Ended)> = Vec::new();
    let mut progress = Progress::new();
    {
        let _disk_file = RemoveOnDrop(&disk_file);
        for (i, step) in steps.iter().enumerate() {
            if stop.is_raised() {
                break;
            }
            let position = format!("[{}/{}]", i + 1, steps.len());
            if !progress.live() {
                eprintln!("{position} {}", step.title);
            }
            let end = run_step(&exe, step, &lab_dir, stop, &mut progress, &position)?;
            progress.clear();
            match &end {
                Ended::Done => eprintln!("{position} {}: done", step.title),
                Ended::Interrupted => eprintln!("{position} {}: interrupted, saved", step.title),
                Ended::Failed { words: why, .. } => {
                    eprintln!("{position} {}: FAILED — {why}", step.title)
                }
            }
            ended.push((step, end));
        }
    }

    // Every finished run is read once, for the summary and the report.
    let (measured, inputs): (Vec<&Step>, Vec<Loaded>) = ended
        .iter()
        .filter(|(s, e)| s.is_run && !matches!(e, Ended::Failed { .. }) && s.output.exists())
        .map(|(s, _)| {
            import::load(&s.output, &ReadOptions::new(crate::units::TimeUnit::Ns)).map(|l| (*s, l))
        })
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .unzip();
    let mut summary = summarise(&steps, &ended, &measured, &inputs)?;
    summary += &kernel_notes(&kernel, &measured, &inputs);
    summary += &sweep_findings(&lab_dir, &ended);
    print!("{summary}");
    std::fs::write(lab_dir.join("summary.txt"), &summary)
        .with_context(|| format!("cannot write {}", lab_dir.join("summary.txt").display()))?;
    if !inputs.is_empty() {
        write_report(&lab_dir, &inputs)?;
    }
    let interrupted =
        stop.is_raised() || ended.iter().any(|(_, e)| matches!(e, Ended::Interrupted));
    eprintln!(
        "cauda lab: {} after {:.0} s; {} in {}",
        if interrupted {
            "interrupted"
        } else {
            "finished"
        },
        started.elapsed().as_secs_f64(),
        if interrupted {
            "what was measured is"
        } else {
            "everything is"
        },
        lab_dir.display()
    );
    let failed: Vec<&str> = ended
        .iter()
        .filter(|(_, e)| matches!(e, Ended::Failed { .. }))
        .map(|(s, _)| s.name)
        .collect();
    if interrupted {
        return Ok(Outcome::Interrupted);
    }
    if !failed.is_empty() {
        return Err(anyhow!(
            "{} of {} steps failed ({}); their logs are in {}",
            failed.len(),
            steps.len(),
            failed.join(", "),
            lab_dir.display()
        ));
    }
    Ok(Outcome::Done)
}

/// With `--kernel`: each blamed step's top cause of its tail (`== Why the
/// tail`), then what ran without a group and why.
fn kernel_notes(kernel: &kernel::KernelPlan, measured: &[&Step], inputs: &[Loaded]) -> String {
    let mut out = String::new();
    // The importer keeps the run's series beside its run file, not in it.
    let blamed: Vec<(&Step, &Loaded, &crate::model::RunFile)> = measured
        .iter()
        .zip(inputs)
        .filter_map(|(step, input)| Some((*step, input, input.run.as_ref()?)))
        .filter(|(_, _, run)| run.blame.is_some())
        .collect();
    if !blamed.is_empty() {
        out += "\n== Why the tail (--kernel blame: the top cause of each step's slow operations)\n";
    }
    for (step, input, run) in blamed {
        let causes: Vec<String> = input
            .series
            .iter()
            .filter(|s| s.role() != Role::Control)
            .filter_map(|s| {
                let cause = findings::tail_cause(run, &s.tag)?;
                Some(format!("{} ({}): {cause}", step.title, s.tag))
            })
            .collect();
        if causes.is_empty() {
            out += &format!("  {}: no slow operation was kept\n", step.title);
        }
        for line in causes {
            out += &format!("  {line}\n");
        }
    }
    for note in &kernel.notes {
        out += &format!("! {note}\n");
    }
    out
}

/// Each finished sweep's finding (its table is in `sweep-PROBE.txt`, its
/// files in `sweep-PROBE/`).
fn sweep_findings(lab_dir: &Path, ended: &[(&Step, Ended)]) -> String {
    let mut out = String::new();
    for (step, _) in ended
        .iter()
        .filter(|(s, e)| s.name.starts_with("sweep-") && *e == Ended::Done)
    {
        let found = std::fs::read_dir(lab_dir.join(step.name))
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| entry.path().join("sweep.json"))
            .find_map(|path| crate::model::sweep::SweepFile::read(&path).ok().flatten());
        if let Some(sweep) = found {
            out += &format!("capacity, {}: {}\n", step.title, sweep.capacity.finding);
        }
    }
    out
}

/// Checks `--dir` and its free space, then creates the lab directory;
/// returns it and the free space found.
fn prepare_dir(dir: &Path, disk: bool) -> Result<(PathBuf, u64)> {
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => {
            return Err(input_error(format!(
                "--dir {}: is not a directory",
                dir.display()
            )));
        }
        Err(e) => {
            return Err(input_error(format!(
                "--dir {}: cannot use it ({e}); give an existing directory",
                dir.display()
            )));
        }
    }
    let free = crate::sys::filesystem_space(dir)
        .map(|(_, free)| free)
        .map_err(|e| {
            input_error(format!(
                "--dir {}: cannot read its free space ({e})",
                dir.display()
            ))
        })?;
    let file = if disk { steps::disk_size(0, true) } else { 0 };
    let needed = file + steps::HEADROOM;
    if free < needed {
        return Err(input_error(format!(
            "--dir {}: the lab needs {} MiB free ({}room for the runs) but the filesystem has {} \
             MiB; free some space or point --dir at another filesystem{}",
            dir.display(),
            needed >> 20,
            if disk {
                "a 64 MiB test file for the disk steps and "
            } else {
                ""
            },
            free >> 20,
            if disk { ", or --skip disk" } else { "" }
        )));
    }
    Ok((child::new_dir(dir, "cauda-lab", "--dir")?, free))
}

/// Runs one step as a child process, forwarding Ctrl-C, drawing progress.
fn run_step(
    exe: &Path,
    step: &Step,
    lab_dir: &Path,
    stop: &StopFlag,
    progress: &mut Progress,
    position: &str,
) -> Result<Ended> {
    let log = lab_dir.join(format!("{}.log", step.name));
    let hlog = step.hlog(lab_dir);
    let mut args = step.args.clone();
    let stdout = if step.is_run {
        args.extend(["--hlog".into(), hlog.display().to_string()]);
        Stdio::null()
    } else {
        File::create(&step.output)
            .with_context(|| format!("cannot create {}", step.output.display()))?
            .into()
    };
    let ended = child::run(exe, &args, &log, stdout, stop, |seconds| {
        progress.update(position, step.title, seconds, step.seconds, &hlog)
    })
    .with_context(|| format!("for {}", step.title))?;
    let _ = std::fs::remove_file(&hlog);
    Ok(ended)
}

/// The summary: a table of the measured runs, the findings, and failed
/// steps.
fn summarise(
    planned: &[Step],
    ended: &[(&Step, Ended)],
    measured: &[&Step],
    inputs: &[Loaded],
) -> Result<String> {
    let mut out = String::new();
    let mut analysed = Vec::new();
    for (step, input) in measured.iter().zip(inputs) {
        let analysis = crate::analyze::analyze(
            std::slice::from_ref(input),
            &crate::analyze::Options::default(),
        )?;
        analysed.push((*step, analysis));
    }
    let cut: Vec<&str> = ended
        .iter()
        .filter(|(_, e)| matches!(e, Ended::Interrupted))
        .map(|(s, _)| s.name)
        .collect();
    out += &table(&analysed, &cut);
    let audit: Option<serde_json::Value> = ended
        .iter()
        .find(|(s, e)| s.kind == StepKind::Audit && matches!(e, Ended::Done))
        .and_then(|(s, _)| std::fs::read(&s.output).ok())
        .and_then(|bytes| serde_json::from_slice(&bytes).ok());
    let measured: Vec<findings::Measured> = analysed
        .iter()
        .zip(inputs)
        .map(|((step, analysis), input)| findings::Measured {
            name: step.name,
            title: step.title,
            analysis: &analysis.inputs[0],
            run: input.run.as_ref(),
        })
        .collect();
    let found = findings::rank(&measured, audit.as_ref());
    out += "\n== Findings (most important first)\n";
    if found.is_empty() {
        out += "  nothing measured\n";
    }
    for (i, finding) in found.iter().take(3).enumerate() {
        out += &format!("{}. {}\n", i + 1, finding.text);
    }
    for (step, end) in ended {
        match end {
            Ended::Failed { words: why, .. } => out += &format!("! {} failed: {why}\n", step.title),
            Ended::Interrupted => {
                out += &format!(
                    "! {} was interrupted (marked *): its figures cover only what was measured \
                     before Ctrl-C\n",
                    step.title
                )
            }
            Ended::Done => {}
        }
    }
    let not_run: Vec<&str> = planned[ended.len()..].iter().map(|s| s.title).collect();
    if !not_run.is_empty() {
        out += &format!(
            "! not run (stopped before they began): {}\n",
            not_run.join(", ")
        );
    }
    Ok(out)
}

/// One line per measured series: the figures a reader compares first.
/// `≈` marks a percentile with under 100 samples above it, `—` one the
/// sample cannot bound (as in `cauda analyze`).
fn table(analysed: &[(&Step, crate::analyze::Analysis)], interrupted: &[&str]) -> String {
    use crate::analyze::ci::Support;
    let mut rows = vec![
        [
            "step", "series", "samples", "p50", "p99", "p99.9", "max", "stalls",
        ]
        .map(String::from),
    ];
    for (step, analysis) in analysed {
        for series in analysis.inputs.iter().flat_map(|i| &i.series) {
            if Role::of_tag(&series.tag) == Role::Control {
                continue;
            }
            let at = |key: &str| {
                let value = series.summary.percentiles.get(key);
                match (value, series.support.get(key)) {
                    (_, Some(Support::Insufficient)) | (None, _) => "—".to_string(),
                    (Some(v), Some(Support::Rough)) => format!("≈{}", format_ns(v as f64)),
                    (Some(v), _) => format_ns(v as f64),
                }
            };
            let mark = if interrupted.contains(&step.name) {
                "*"
            } else {
                ""
            };
            rows.push([
                format!("{}{mark}", step.title),
                series.tag.clone(),
                crate::report::table::thousands(series.summary.count),
                at("50"),
                at("99"),
                at("99.9"),
                format_ns(series.summary.max as f64),
                series.stalls.len().to_string(),
            ]);
        }
    }
    let widths: Vec<usize> = (0..8)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::from("\n");
    for row in &rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(c, (cell, w))| {
                let pad = w - cell.chars().count();
                if c < 2 {
                    format!("{cell}{}", " ".repeat(pad))
                } else {
                    format!("{}{cell}", " ".repeat(pad))
                }
            })
            .collect();
        out += cells.join("  ").trim_end();
        out += "\n";
    }
    out += "\nEvery run in full: cauda analyze FILE, and report.html beside them.\n";
    out
}

/// Renders `report.html` from the runs, as `cauda report` does.
fn write_report(lab_dir: &Path, inputs: &[Loaded]) -> Result<()> {
    let output = lab_dir.join("report.html");
    let host = inputs
        .iter()
        .find_map(|i| i.run.as_ref()?.host.hostname.clone())
        .unwrap_or_else(|| "this host".into());
    let options = crate::report::html::Options {
        title: format!("cauda lab on {host}"),
        ..Default::default()
    };
    let html = crate::report::html::render(inputs, None, &options)
        .context("the report could not be written")?;
    crate::output::write_atomic(&output, html.as_bytes())?;
    eprintln!("report: {}", output.display());
    Ok(())
}

/// Removes the disk steps' file however the lab ends.
struct RemoveOnDrop<'a>(&'a Path);

impl Drop for RemoveOnDrop<'_> {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(self.0);
    }
}
