//! Arbitrary bytes as a broker's reply to a request `cauda broker` sends: see `entry.rs`.
#![no_main]

#[path = "../entry.rs"]
mod entry;

libfuzzer_sys::fuzz_target!(|data: &[u8]| entry::feed("broker_reply", data));
