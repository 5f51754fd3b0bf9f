//! Arbitrary bytes as a sockperf --full-log CSV: see `entry.rs`.
#![no_main]

#[path = "../entry.rs"]
mod entry;

libfuzzer_sys::fuzz_target!(|data: &[u8]| entry::feed("sockperf", data));
