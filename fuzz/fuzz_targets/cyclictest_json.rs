//! Arbitrary bytes as cyclictest --json output: see `entry.rs`.
#![no_main]

#[path = "../entry.rs"]
mod entry;

libfuzzer_sys::fuzz_target!(|data: &[u8]| entry::feed("cyclictest_json", data));
