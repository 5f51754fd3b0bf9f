//! Arbitrary bytes as a host tune journal, checked before a rollback: see `entry.rs`.
#![no_main]

#[path = "../entry.rs"]
mod entry;

libfuzzer_sys::fuzz_target!(|data: &[u8]| entry::feed("journal", data));
