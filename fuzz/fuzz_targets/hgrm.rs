//! Arbitrary bytes as an HdrHistogram percentile distribution (.hgrm): see `entry.rs`.
#![no_main]

#[path = "../entry.rs"]
mod entry;

libfuzzer_sys::fuzz_target!(|data: &[u8]| entry::feed("hgrm", data));
