//! `cauda completions SHELL`: the shell's completion script, made from the
//! same clap definitions as `--help` (clap_complete), printed to stdout.
//! A shell clap_complete does not know (tcsh) is refused by clap with the
//! list of those it does, exit 2.

use std::io::Write;

use anyhow::Result;
use clap::Args;
use clap_complete::Shell;

use crate::error::Outcome;

/// `cauda completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: Shell,
}

impl CompletionsArgs {
    /// Prints the completion script for `command` (cauda's whole command
    /// line, which `lib.rs` hands in: this file is one of its commands).
    pub fn run(&self, command: clap::Command) -> Result<Outcome> {
        let script = script(self.shell, command);
        let mut out = std::io::stdout().lock();
        out.write_all(&script)?;
        out.flush()?;
        Ok(Outcome::Done)
    }
}

/// The completion script for `shell` (made in memory: clap_complete panics
/// on a failed write, and a closed pipe is no reason to).
pub fn script(shell: Shell, mut command: clap::Command) -> Vec<u8> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "cauda", &mut script);
    script
}
