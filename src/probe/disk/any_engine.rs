//! Either I/O engine as one type, so a job is one type whichever runs
//! ([`AnyEngine`]); making one on the target; and the choice between them
//! (io_uring unless it is unavailable).

use anyhow::{Context, Result, anyhow};

use super::config::DiskConfig;
use super::engine::{self, Completion, Engine, IoBuffers, Op};
use super::target::Target;
use crate::error::input_error;
use crate::model::Warning;
use crate::model::disk::EngineKind;

/// Either engine, so jobs are one type. (One per job, built once and never
/// moved in the measured loop, so the size difference does not matter.)
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum AnyEngine {
    /// psync.
    Psync(engine::psync::Psync),
    /// io_uring.
    Uring(engine::uring::Uring),
}

impl Engine for AnyEngine {
    fn depth(&self) -> usize {
        match self {
            AnyEngine::Psync(e) => e.depth(),
            AnyEngine::Uring(e) => e.depth(),
        }
    }
    fn buffer_mut(&mut self, slot: usize) -> &mut [u8] {
        match self {
            AnyEngine::Psync(e) => e.buffer_mut(slot),
            AnyEngine::Uring(e) => e.buffer_mut(slot),
        }
    }
    #[inline]
    fn queue(&mut self, op: Op) -> std::io::Result<()> {
        match self {
            AnyEngine::Psync(e) => e.queue(op),
            AnyEngine::Uring(e) => e.queue(op),
        }
    }
    #[inline]
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            AnyEngine::Psync(e) => e.flush(),
            AnyEngine::Uring(e) => e.flush(),
        }
    }
    #[inline]
    fn submit(
        &mut self,
        min_complete: usize,
        timeout_ns: Option<u64>,
        out: &mut Vec<Completion>,
    ) -> std::io::Result<()> {
        match self {
            AnyEngine::Psync(e) => e.submit(min_complete, timeout_ns, out),
            AnyEngine::Uring(e) => e.submit(min_complete, timeout_ns, out),
        }
    }
}

/// Creates an engine of `kind` on a duplicate of the target's file.
pub fn make_engine(
    kind: EngineKind,
    target: &Target,
    depth: usize,
    block: usize,
    seed: u64,
) -> Result<AnyEngine> {
    let file = target.file.try_clone().with_context(|| {
        format!(
            "cannot duplicate the descriptor of {}",
            target.path.display()
        )
    })?;
    let align = target.logical_block.max(4096) as usize;
    let buffers = IoBuffers::new(depth, block, align, seed);
    Ok(match kind {
        EngineKind::Psync => AnyEngine::Psync(engine::psync::Psync::new(file, buffers)),
        EngineKind::IoUring => AnyEngine::Uring(
            engine::uring::Uring::new(file, buffers)
                .map_err(|u| anyhow!("io_uring is not available: {}", u.why))?,
        ),
    })
}

/// Picks the engine: io_uring unless unavailable (then psync, with a
/// warning, when the user did not ask for io_uring).
pub(super) fn choose_engine(
    config: &DiskConfig,
    target: &Target,
    warnings: &mut Vec<Warning>,
) -> Result<EngineKind> {
    if config.engine == Some(EngineKind::Psync) {
        return Ok(EngineKind::Psync);
    }
    match make_engine(
        EngineKind::IoUring,
        target,
        1,
        target.logical_block as usize,
        0,
    ) {
        Ok(_) => Ok(EngineKind::IoUring),
        Err(e) if config.engine.is_none() && config.iodepth == 1 => {
            warnings.push(Warning {
                message: format!("{e}; measuring with psync instead"),
                advice: "psync costs more CPU per I/O; enable io_uring (sysctl \
                         kernel.io_uring_disabled=0) to compare with fio's io_uring"
                    .into(),
            });
            Ok(EngineKind::Psync)
        }
        Err(e) => Err(input_error(format!(
            "{e}; {}",
            if config.iodepth > 1 {
                "--iodepth above 1 needs io_uring: lower it to 1 to measure with --engine psync"
            } else {
                "use --engine psync"
            }
        ))),
    }
}
