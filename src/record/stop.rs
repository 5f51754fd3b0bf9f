//! Stopping a run: Ctrl-C or SIGTERM set a flag the probe loops poll (one
//! relaxed load per operation); a second Ctrl-C exits at once with 130.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context;
use signal_hook::consts::{SIGINT, SIGTERM};

/// A shared flag that says "stop now".
#[derive(Clone, Debug, Default)]
pub struct StopFlag(Arc<AtomicBool>);

impl StopFlag {
    /// A flag nobody has raised.
    pub fn new() -> Self {
        StopFlag::default()
    }

    /// A flag raised by SIGINT or SIGTERM. A second signal while the flag is
    /// up terminates the process with 130 (the user insisted).
    pub fn on_signals() -> anyhow::Result<Self> {
        let flag = StopFlag::new();
        for signal in [SIGINT, SIGTERM] {
            signal_hook::flag::register_conditional_shutdown(signal, 130, flag.0.clone())
                .context("cannot install the signal handler")?;
            signal_hook::flag::register(signal, flag.0.clone())
                .context("cannot install the signal handler")?;
        }
        Ok(flag)
    }

    /// Raises the flag.
    pub fn raise(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// True once raised.
    #[inline]
    pub fn is_raised(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}
