//! Arbitrary bytes as a cauda run file (JSON), with its integrity checks: see `entry.rs`.
#![no_main]

#[path = "../entry.rs"]
mod entry;

libfuzzer_sys::fuzz_target!(|data: &[u8]| entry::feed("runfile", data));
