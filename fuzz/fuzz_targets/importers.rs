//! Every importer, fed arbitrary bytes: detection picks one (or the first
//! byte forces one), and loading then analysing must return Ok or an input
//! error — never panic.
#![no_main]

use cauda::formats::{self, ReadOptions};
use cauda::model::Format;
use cauda::units::TimeUnit;
use libfuzzer_sys::fuzz_target;

const FORMATS: [Option<Format>; 11] = [
    None,
    Some(Format::CaudaRun),
    Some(Format::Hlog),
    Some(Format::Hgrm),
    Some(Format::FioJson),
    Some(Format::FioLatLog),
    Some(Format::FioHistLog),
    Some(Format::Sockperf),
    Some(Format::CyclictestHist),
    Some(Format::CyclictestJson),
    Some(Format::Numbers),
];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, bytes)) = data.split_first() else { return };
    let mut options = ReadOptions::new(TimeUnit::Ns);
    options.format = FORMATS[selector as usize % FORMATS.len()];
    if let Ok(loaded) = formats::load_bytes("fuzz", bytes, &options) {
        let _ = cauda::analyze::analyze(std::slice::from_ref(&loaded), &cauda::analyze::Options::default());
    }
});
