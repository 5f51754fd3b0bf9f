//! `cauda merge`: its flags, and the merged run file.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use super::inputs::{InputArgs, load_all, print_warnings};
use crate::error::Outcome;
use crate::formats::export::{inputs as gathered, runfile};
use crate::formats::merge;
use crate::output::{self, Checked, OwnKind};

/// `cauda merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Inputs in any supported format.
    #[arg(required = true, num_args = 1.., value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The merged run file.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: PathBuf,
    /// Merge series with the same tag, or keep each input's apart.
    #[arg(long, value_enum, default_value_t = merge::TagBy::Tag)]
    pub tag_by: merge::TagBy,
    /// Overwrite an existing output file that cauda did not write.
    #[arg(long)]
    pub force: bool,
    /// Input options.
    #[command(flatten)]
    pub input: InputArgs,
}

impl MergeArgs {
    /// Loads the inputs, refuses to count one twice, and writes the merge.
    pub fn run(self) -> Result<Outcome> {
        let checked = output::check_writable(&self.output, OwnKind::RunFile, self.force, "-o")?;
        let inputs = load_all(&self.files, &self.input)?;
        let replaced = match checked {
            Checked::Replaces { dev, ino } => Some((dev, ino)),
            _ => None,
        };
        merge::refuse_double_counting(&self.files, replaced, &inputs)?;
        gathered::require_distributions(&inputs)?;
        let run = merge::merge(&inputs, self.tag_by)?;
        let bytes = runfile::to_bytes(&run)?;
        output::write_checked(&self.output, checked, &bytes)?;
        print_warnings(&run.warnings);
        eprintln!(
            "merged {} input(s) into {} series: {}",
            inputs.len(),
            run.series.len(),
            self.output.display()
        );
        // Freeing some 100,000 histograms takes a tenth of the merge; the
        // process ends next, so it is not waited for.
        std::thread::spawn(move || drop((inputs, run)));
        Ok(Outcome::Done)
    }
}
