//! Arbitrary bytes as fio JSON (json and json+) output: see `entry.rs`.
#![no_main]

#[path = "../entry.rs"]
mod entry;

libfuzzer_sys::fuzz_target!(|data: &[u8]| entry::feed("fio_json", data));
