//! Arbitrary bytes as a fio per-I/O latency log: see `entry.rs`.
#![no_main]

#[path = "../entry.rs"]
mod entry;

libfuzzer_sys::fuzz_target!(|data: &[u8]| entry::feed("fio_lat", data));
