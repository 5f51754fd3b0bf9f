//! What each fuzz target does with its bytes, in one place: the targets in
//! `fuzz_targets/` and the corpus replay test (`tests/fuzz_corpus.rs`)
//! include this file, so CI replays every committed input through exactly
//! the code libFuzzer ran.
//!
//! An importer target loads the bytes as one format (or lets detection
//! choose) and analyses what loaded; the journal target checks the bytes as
//! a `host tune` journal; the broker target decodes the bytes as a
//! broker's reply to one of the requests `cauda broker` sends. Each must
//! return Ok or an error — never panic, never abort.
//!
//! The importer targets are the rows of the importers' table
//! (`cauda::formats::import::IMPORTERS`), each by its
//! `fuzz_target`: a new format is fuzzed once it has a row, and
//! `tests/fuzz_corpus.rs` asks for its `fuzz_targets/` file and its
//! `[[bin]]` in `Cargo.toml` by name.

use std::path::Path;

use cauda::formats::import::options::ReadOptions;
use cauda::formats::import::{self, IMPORTERS};
use cauda::host::tuning::journal;
use cauda::model::Format;
use cauda::units::TimeUnit;

/// The reader a target feeds.
#[derive(Clone, Copy, Debug)]
pub enum Reader {
    /// `formats::import::load_bytes` with this format (`None`: detected), then
    /// `analyze::analyze`.
    Import(Option<Format>),
    /// `journal::parse_bytes`, the check before a rollback.
    Journal,
    /// `probe::broker::replies::decode_reply`: a hostile broker's frame.
    Broker,
}

/// How many targets there are: one per importable format, `detect`,
/// `journal` and `broker_reply`.
const COUNT: usize = IMPORTERS.len() + 3;

/// Every target, by the name `cargo fuzz run` takes (its file in
/// `fuzz_targets/` and its corpus folder in `corpus/`): each row of the
/// importers' table by its `fuzz_target`, then `detect`, `journal` and
/// `broker_reply`.
pub const TARGETS: [(&str, Reader); COUNT] = targets();

const fn targets() -> [(&'static str, Reader); COUNT] {
    let mut out = [("detect", Reader::Import(None)); COUNT];
    let mut i = 0;
    while i < IMPORTERS.len() {
        let row = &IMPORTERS[i];
        out[i] = (row.fuzz_target, Reader::Import(Some(row.format)));
        i += 1;
    }
    out[COUNT - 2] = ("journal", Reader::Journal);
    out[COUNT - 1] = ("broker_reply", Reader::Broker);
    out
}

/// Feeds `data` to the reader of the target named `target`.
pub fn feed(target: &str, data: &[u8]) {
    let Some(&(_, reader)) = TARGETS.iter().find(|(name, _)| *name == target) else {
        panic!("no fuzz target named {target}");
    };
    match reader {
        Reader::Import(format) => {
            let mut options = ReadOptions::new(TimeUnit::Ns);
            options.format = format;
            if let Ok(loaded) = import::load_bytes("fuzz", data, &options) {
                let options = cauda::analyze::Options::default();
                let _ = cauda::analyze::analyze(std::slice::from_ref(&loaded), &options);
            }
        }
        Reader::Journal => {
            let _ = journal::parse_bytes(Path::new("fuzz"), data);
        }
        Reader::Broker => {
            let _ = cauda::probe::broker::replies::decode_reply(data);
        }
    }
}
