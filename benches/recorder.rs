//! Cost of recording one value on the hot path, in ns per value.
//!
//! Compares the raw `hdrhistogram` crate, cauda's `LatencyHistogram`
//! (histogram + exact count/min/max/sum + clamping) and the full
//! `Recorder` (the above plus the interval check and rotation). Run with
//! `cargo bench --bench recorder`; prints one line per variant.

use std::hint::black_box;
use std::time::Instant;

use cauda::model::MeasuredFrom;
use cauda::probe::run::collector;
use cauda::probe::run::{Blamed, SeriesSpec};
use cauda::record::LatencyHistogram;
use cauda::record::histogram::empty_hdr;

const N: u64 = 50_000_000;

/// A table of values shaped like wake-up latencies (20–80 µs with a
/// sprinkle of ms), precomputed so generating them is not what we time.
fn values() -> Vec<u64> {
    (0..1u64 << 16)
        .map(|i| {
            let x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40;
            if x % 1000 == 0 {
                1_000_000 + x
            } else {
                20_000 + x % 60_000
            }
        })
        .collect()
}

/// Times `$body` per value of `$i`: a warm-up, then the best of five
/// passes. A macro, not a function taking a closure, so the body sits in
/// the timed loop as it sits in a probe's loop, whatever the compiler
/// decides about inlining a closure.
macro_rules! time {
    ($label:expr, |$i:ident| $body:expr) => {{
        for $i in 0..N / 10 {
            $body;
        }
        let best = (0..5)
            .map(|_| {
                let start = Instant::now();
                for $i in 0..N {
                    let $i = black_box($i);
                    $body;
                }
                start.elapsed().as_nanos() as f64 / N as f64
            })
            .fold(f64::INFINITY, f64::min);
        println!("{:<44} {best:>6.2} ns/value", $label);
    }};
}

fn main() {
    let table = values();
    let value = |i: u64| table[(i & 0xFFFF) as usize];
    let mut hdr = empty_hdr();
    time!("hdrhistogram crate record()", |i| {
        let _ = hdr.record(value(i));
    });
    black_box(&hdr);

    let mut hist = LatencyHistogram::new();
    time!("cauda LatencyHistogram::record", |i| hist.record(value(i)));
    black_box(&hist);

    let spec = SeriesSpec {
        blamed: Blamed::No,
        tag: "x".into(),
        measured_from: MeasuredFrom::IntendedStart,
    };
    let (mut recorders, handle) = collector::start(
        vec![spec],
        1,
        0,
        1_000_000_000,
        None,
        None,
        &Default::default(),
    )
    .expect("collector");
    let mut recorder = recorders.pop().expect("one recorder");
    // 1 value per µs of fake time: rotates every 1,000,000 values.
    let mut now = 0u64;
    time!("cauda Recorder::record (1 s intervals)", |i| {
        now += 1_000;
        recorder.record(now, 0, value(i));
    });
    recorder.finish(now);
    let collected = handle.join().expect("collector thread");
    black_box(collected.series.len());
}
