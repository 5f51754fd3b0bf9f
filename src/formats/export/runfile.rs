//! Writing cauda run files (`cauda.run/1`): compact JSON sealed with its
//! checksum ([`crate::model::RunFile::integrity`], [`crate::formats::seal`]).
//! Every run file cauda writes — a probe's, a merge's, a conversion's —
//! comes from [`to_bytes`]; reading them back is
//! [`crate::formats::import::runfile`]'s.

use anyhow::{Context, Result};

use crate::formats::seal::seal_of;
use crate::model::RunFile;

/// The run file as written: compact JSON, sealed with its checksum, and a
/// final newline.
pub fn to_bytes(run: &RunFile) -> Result<Vec<u8>> {
    let mut bytes = unsealed(run)?;
    let seal = seal_of(&bytes);
    // The object's closing brace makes way for the last field.
    bytes.pop();
    bytes.extend_from_slice(seal.as_bytes());
    Ok(bytes)
}

/// The compact JSON of `run` without its checksum: what the checksum covers.
fn unsealed(run: &RunFile) -> Result<Vec<u8>> {
    if run.integrity.is_none() {
        return serde_json::to_vec(run).context("cannot serialize the run");
    }
    let mut open = run.clone();
    open.integrity = None;
    serde_json::to_vec(&open).context("cannot serialize the run")
}
