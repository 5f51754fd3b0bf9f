//! `cauda compare`: its flags, the comparison it prints, and the
//! `--fail-if-worse` gate.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use super::inputs::{InputArgs, load};
use crate::analyze::compare::{self, CompareOptions};
use crate::error::{Outcome, input_error};
use crate::model::sweep::SweepFile;
use crate::report;
use crate::report::color::ColorChoice;

fn budgets(text: &str) -> Result<BudgetList, String> {
    crate::analyze::compare::parse_budgets(text).map(BudgetList)
}

/// A parsed `--fail-if-worse` list (a newtype so clap treats it as one value).
#[derive(Clone, Debug)]
pub struct BudgetList(pub Vec<crate::analyze::compare::Budget>);

/// `cauda compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The baseline (a run file or any supported input).
    #[arg(value_name = "BASE")]
    pub base: PathBuf,
    /// The run to judge against it.
    #[arg(value_name = "NEW")]
    pub new: PathBuf,
    /// Print JSON (schema cauda.compare/1).
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    /// Print a Markdown table, as before/after results are published.
    #[arg(long)]
    pub markdown: bool,
    /// Exit 1 when a metric got significantly worse by more than its budget,
    /// e.g. p99:10%,p99.9:20% (metrics: count, mean, max, throughput, pNN).
    #[arg(long, value_name = "SPEC", value_parser = budgets)]
    pub fail_if_worse: Option<BudgetList>,
    /// Confidence level of the change intervals, between 0 and 1.
    #[arg(
        long,
        value_name = "LEVEL",
        default_value_t = 0.95,
        allow_negative_numbers = true
    )]
    pub confidence: f64,
    /// Bootstrap resamples over intervals.
    #[arg(long, value_name = "N", default_value_t = 400, value_parser = clap::value_parser!(u32).range(50..=100_000))]
    pub resamples: u32,
    /// Seed of the bootstrap.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Colour the verdicts of the table (better green, worse red): auto
    /// when stdout is a terminal and NO_COLOR is unset or empty.
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// Input options.
    #[command(flatten)]
    pub input: InputArgs,
}

impl CompareArgs {
    /// Compares the two inputs, prints the comparison, and fails when a
    /// budget is broken.
    pub fn run(&self) -> Result<Outcome> {
        if let Some(outcome) = self.compare_sweeps()? {
            return Ok(outcome);
        }
        let options = self.input.read_options();
        let base = load(&self.base, &options)?;
        let new = load(&self.new, &options)?;
        let budgets = self.fail_if_worse.clone().map(|b| b.0).unwrap_or_default();
        let compare_options = CompareOptions {
            confidence: self.confidence,
            resamples: self.resamples as usize,
            seed: self.seed,
            extra: budgets.iter().map(|b| b.metric.clone()).collect(),
        };
        let comparison = compare::compare(&base, &new, &compare_options)?;
        let mut out = std::io::stdout().lock();
        if self.json {
            serde_json::to_writer(&mut out, &comparison)?;
            writeln!(out)?;
        } else if self.markdown {
            write!(out, "{}", report::compare::render_markdown(&comparison))?;
        } else {
            let color = self.color.for_stdout();
            write!(
                out,
                "{}",
                report::compare::render_styled(&comparison, color)
            )?;
        }
        out.flush()?;
        if let Some(budget) = budgets
            .iter()
            .find(|b| !comparison.rows.iter().any(|r| r.metric == b.metric.name()))
        {
            return Err(input_error(format!(
                "--fail-if-worse {}: these inputs have no such metric (throughput needs timed intervals \
                 on both sides), so the gate could never fail",
                budget.metric.name()
            )));
        }
        let broken = compare::over_budget(&comparison, &budgets);
        if broken.is_empty() {
            return Ok(Outcome::Done);
        }
        let list: Vec<String> = broken
            .iter()
            .map(|(row, budget)| {
                format!(
                    "{} {} {:+.1} % (budget {budget} %)",
                    row.series,
                    row.metric,
                    row.change_pct.unwrap_or(0.0)
                )
            })
            .collect();
        Err(anyhow::anyhow!("worse than allowed: {}", list.join("; ")))
    }
}

impl CompareArgs {
    /// Two sweep files: the change of capacity at their objective (`None`
    /// when neither is a sweep; a sweep beside a run is refused).
    fn compare_sweeps(&self) -> Result<Option<Outcome>> {
        let read = |path: &PathBuf| SweepFile::read(path).map_err(input_error);
        match (read(&self.base)?, read(&self.new)?) {
            (None, None) => Ok(None),
            (Some(base), Some(new)) => {
                let change = crate::analyze::capacity::compare(&base, &new).map_err(input_error)?;
                let mut out = std::io::stdout().lock();
                if self.json {
                    serde_json::to_writer(&mut out, &change)?;
                    writeln!(out)?;
                } else {
                    write!(out, "{}", report::sweep::render_change(&change))?;
                }
                Ok(Some(Outcome::Done))
            }
            _ => Err(input_error(
                "compare takes two sweep files or two runs, not one of each".to_string(),
            )),
        }
    }
}
