//! The `cauda` binary: parse, run, map the result to an exit code
//! (0 ok, 1 failure, 2 bad usage or input, 130 interrupted).

use cauda::cli::Cli;
use cauda::error::{EXIT_INTERRUPTED, EXIT_OK, Outcome, exit_code_for, is_broken_pipe};

fn main() {
    let cli = match Cli::from_env() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            std::process::exit(e.exit_code());
        }
    };
    let code = match cauda::run(cli) {
        Ok(Outcome::Done) => EXIT_OK,
        Ok(Outcome::Interrupted) => EXIT_INTERRUPTED,
        Ok(Outcome::Exit(code)) => code,
        Err(e) if is_broken_pipe(&e) => EXIT_OK,
        Err(e) => {
            eprintln!("cauda: error: {e}");
            for cause in e.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            exit_code_for(&e)
        }
    };
    std::process::exit(code);
}
