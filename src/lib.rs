//! cauda: a tail-latency lab for Linux.
//!
//! The data flows one way: probe → recorder → run file → analysis → output.
//! [`run`] is the program's outline: each command's own file in [`cli`]
//! turns its flags into a configuration and runs it (every probe command
//! through [`cli::measure`]); `main` only maps the result to an exit code,
//! so tests can call it in-process.

pub mod analyze;
pub mod cli;
pub mod error;
pub mod formats;
pub mod host;
pub mod input;
pub mod model;
pub mod output;
pub mod probe;
pub mod record;
pub mod report;
pub mod sys;
pub mod units;
pub mod workflow;

use anyhow::Result;

use cli::{Cli, Command, measure::measure};
use error::Outcome;

/// Runs a parsed command line.
pub fn run(cli: Cli) -> Result<Outcome> {
    match cli.command {
        Command::Lab(args) => args.run(),
        Command::Timer(args) => measure(&args),
        Command::Hiccup(args) => measure(&args),
        Command::Disk(args) => measure(&args),
        Command::Net(args) => measure(&args),
        Command::Kernel(args) => measure(&args),
        Command::Broker(args) if args.acks_matrix => args.run_matrix(),
        Command::Broker(args) => measure(&args),
        Command::Serve(args) => args.run(),
        Command::Analyze(args) => args.run(),
        Command::Compare(args) => args.run(),
        Command::Convert(args) => args.run(),
        Command::Merge(args) => args.run(),
        Command::Report(args) => args.run(),
        Command::Sweep(args) => args.run(),
        Command::Host(args) => args.run(),
        Command::Completions(args) => args.run(Cli::command_line()),
        Command::Man(args) => args.run(Cli::command_line()),
    }
}
