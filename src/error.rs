//! Error kinds that decide the exit code.
//!
//! Everything that is the user's to fix (a flag, an input file, a permission
//! the user chose to need) is an [`InputError`] and exits 2; every other
//! error is a failure of the measurement or operation and exits 1. A run
//! stopped by Ctrl-C or SIGTERM exits 130 after saving what it measured.

use std::fmt;

/// Exit code for success.
pub const EXIT_OK: i32 = 0;
/// Exit code when the measurement or operation failed.
pub const EXIT_FAILURE: i32 = 1;
/// Exit code for bad usage or bad input.
pub const EXIT_USAGE: i32 = 2;
/// Exit code for a run stopped by SIGINT/SIGTERM (the shell's convention).
pub const EXIT_INTERRUPTED: i32 = 130;

/// How a successful command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Everything asked for was done.
    Done,
    /// A run was stopped by a signal; what it measured was saved.
    Interrupted,
    /// A child command ran; exit with its code (`host hold-latency`).
    Exit(i32),
}

/// A problem with what the user asked for or gave us: exits 2.
///
/// The message names the flag, file (with line or byte offset) or device,
/// and says what was expected or how to fix it.
#[derive(Debug)]
pub struct InputError(pub String);

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InputError {}

/// Work stopped by Ctrl-C or SIGTERM before anything was measured (a file
/// being created, a device being preconditioned): exits 130.
#[derive(Debug)]
pub struct Interrupted(pub String);

impl fmt::Display for Interrupted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Interrupted {}

/// Builds an `anyhow::Error` that exits 130.
pub fn interrupted(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Interrupted(message.into()))
}

/// Builds an `anyhow::Error` that exits 2.
pub fn input_error(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(InputError(message.into()))
}

/// The exit code an error chain maps to.
pub fn exit_code_for(err: &anyhow::Error) -> i32 {
    if err
        .chain()
        .any(|cause| cause.downcast_ref::<Interrupted>().is_some())
    {
        return EXIT_INTERRUPTED;
    }
    if err
        .chain()
        .any(|cause| cause.downcast_ref::<InputError>().is_some())
    {
        EXIT_USAGE
    } else {
        EXIT_FAILURE
    }
}

/// True when the error is a broken pipe on output, which counts as success
/// (`cauda analyze run.json | head`).
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
