//! Arbitrary bytes as any input, the format detected from content: see `entry.rs`.
#![no_main]

#[path = "../entry.rs"]
mod entry;

libfuzzer_sys::fuzz_target!(|data: &[u8]| entry::feed("detect", data));
