//! What each fuzz target does with its bytes, in one place: the targets in
//! `fuzz_targets/` and the corpus replay test (`tests/fuzz_corpus.rs`)
//! include this file, so CI replays every committed input through exactly
//! the code libFuzzer ran.
//!
//! An importer target loads the bytes as one format (or lets detection
//! choose) and analyses what loaded; the journal target checks the bytes as
//! a `host tune` journal. Each must return Ok or an error — never panic.

use std::path::Path;

use cauda::formats::{self, ReadOptions};
use cauda::host::tuning::journal;
use cauda::model::Format;
use cauda::units::TimeUnit;

/// The reader a target feeds.
#[derive(Clone, Copy, Debug)]
pub enum Reader {
    /// `formats::load_bytes` with this format (`None`: detected), then
    /// `analyze::analyze`.
    Import(Option<Format>),
    /// `journal::parse_bytes`, the check before a rollback.
    Journal,
}

/// Every target, by the name `cargo fuzz run` takes (its file in
/// `fuzz_targets/` and its corpus folder in `corpus/`).
pub const TARGETS: [(&str, Reader); 12] = [
    ("runfile", Reader::Import(Some(Format::CaudaRun))),
    ("hlog", Reader::Import(Some(Format::Hlog))),
    ("hgrm", Reader::Import(Some(Format::Hgrm))),
    ("fio_json", Reader::Import(Some(Format::FioJson))),
    ("fio_lat", Reader::Import(Some(Format::FioLatLog))),
    ("fio_hist", Reader::Import(Some(Format::FioHistLog))),
    ("sockperf", Reader::Import(Some(Format::Sockperf))),
    (
        "cyclictest_hist",
        Reader::Import(Some(Format::CyclictestHist)),
    ),
    (
        "cyclictest_json",
        Reader::Import(Some(Format::CyclictestJson)),
    ),
    ("numbers", Reader::Import(Some(Format::Numbers))),
    ("detect", Reader::Import(None)),
    ("journal", Reader::Journal),
];

/// Feeds `data` to the reader of the target named `target`.
pub fn feed(target: &str, data: &[u8]) {
    let Some(&(_, reader)) = TARGETS.iter().find(|(name, _)| *name == target) else {
        panic!("no fuzz target named {target}");
    };
    match reader {
        Reader::Import(format) => {
            let mut options = ReadOptions::new(TimeUnit::Ns);
            options.format = format;
            if let Ok(loaded) = formats::load_bytes("fuzz", data, &options) {
                let options = cauda::analyze::Options::default();
                let _ = cauda::analyze::analyze(std::slice::from_ref(&loaded), &options);
            }
        }
        Reader::Journal => {
            let _ = journal::parse_bytes(Path::new("fuzz"), data);
        }
    }
}
