//! Importers never panic: every fixture, mutated thousands of ways
//! (truncated, bytes flipped, lines duplicated or dropped, garbage
//! inserted), either loads or fails with an input error naming the file.
//! What loads is analysed too. Seeded, so a failure reproduces. Longer
//! runs: `CAUDA_MUTATIONS=20000 cargo test --release --test robustness`.

mod common;

use std::path::PathBuf;

use cauda::formats::import::{self, options::ReadOptions};
use cauda::units::TimeUnit;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(rng: &mut Rng, input: &[u8]) -> Vec<u8> {
    let mut bytes = input.to_vec();
    for _ in 0..1 + rng.below(3) {
        let len = bytes.len().max(1);
        match rng.below(7) {
            0 => bytes.truncate(rng.below(len)),
            1 => {
                let at = rng.below(len).min(bytes.len().saturating_sub(1));
                if let Some(b) = bytes.get_mut(at) {
                    *b ^= 1 << rng.below(8);
                }
            }
            2 => {
                let at = rng.below(len).min(bytes.len());
                let garbage: Vec<u8> = (0..rng.below(16)).map(|_| rng.next() as u8).collect();
                bytes.splice(at..at, garbage);
            }
            3 => {
                let at = rng.below(len).min(bytes.len());
                let end = (at + rng.below(64)).min(bytes.len());
                bytes.drain(at..end);
            }
            4 => {
                let at = rng.below(len).min(bytes.len());
                let end = (at + rng.below(200)).min(bytes.len());
                let copy = bytes[at..end].to_vec();
                bytes.splice(at..at, copy);
            }
            5 => {
                let at = rng.below(len).min(bytes.len());
                let digits = [
                    "-1",
                    "NaN",
                    "1e309",
                    "99999999999999999999999",
                    "0x",
                    ",",
                    "\n",
                    "\0",
                ];
                bytes.splice(at..at, digits[rng.below(digits.len())].bytes());
            }
            _ => {
                let at = rng.below(len).min(bytes.len());
                if let Some(b) = bytes.get_mut(at) {
                    *b = b"0123456789,.-\n \t"[rng.below(16)];
                }
            }
        }
    }
    bytes
}

#[test]
fn mutated_fixtures_never_panic_the_importers() {
    let per_fixture: usize = std::env::var("CAUDA_MUTATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut fixtures = Vec::new();
    for dir in ["fio", "sockperf", "cyclictest", "hdr"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if !name.ends_with(".expected.json") && !name.ends_with(".stdout.txt") {
                fixtures.push(path);
            }
        }
    }
    fixtures.sort();
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("mutant");
    let mut rng = Rng(2026);
    let (mut loaded, mut refused) = (0, 0);
    for fixture in &fixtures {
        let original = std::fs::read(fixture).unwrap();
        for i in 0..per_fixture {
            let bytes = mutate(&mut rng, &original);
            std::fs::write(&target, &bytes).unwrap();
            let options = ReadOptions::new(TimeUnit::Ns);
            let result = std::panic::catch_unwind(|| {
                let loaded = import::load(&target, &options)?;
                // What loads must also analyse without a panic (errors are fine).
                let _ = cauda::analyze::analyze(
                    std::slice::from_ref(&loaded),
                    &cauda::analyze::Options::default(),
                );
                Ok::<_, anyhow::Error>(loaded)
            });
            match result {
                Ok(Ok(_)) => loaded += 1,
                Ok(Err(e)) => {
                    assert_eq!(
                        cauda::error::exit_code_for(&e),
                        2,
                        "{}: not an input error: {e:#}",
                        fixture.display()
                    );
                    assert!(
                        e.to_string().contains("mutant"),
                        "the error names the file: {e}"
                    );
                    refused += 1;
                }
                Err(_) => {
                    let keep = dir.path().join("panicked");
                    std::fs::write(&keep, &bytes).unwrap();
                    panic!("{} mutation {i} panicked the importer", fixture.display());
                }
            }
        }
    }
    eprintln!(
        "{} fixtures × {per_fixture}: {loaded} loaded, {refused} refused",
        fixtures.len()
    );
    assert!(refused > 0 && loaded > 0);
}

#[test]
fn inputs_that_would_take_memory_of_their_size_are_refused_at_their_bound() {
    let dir = tempfile::tempdir().unwrap();
    // One line of 17 MiB of digits (the review used 1 GiB: 1 GB of memory).
    let long = dir.path().join("long.txt");
    let mut text = b"12\n".to_vec();
    text.resize(text.len() + (17 << 20), b'7');
    std::fs::write(&long, &text).unwrap();
    let out = common::cauda().arg("analyze").arg(&long).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("line starting at byte 3 is longer than 16 MiB"),
        "{stderr}"
    );

    // An .hlog line whose histogram claims a 2 GiB payload.
    let hlog = dir.path().join("claims.hlog");
    let mut plain = Vec::new();
    hdrhistogram::serialization::Serializer::serialize(
        &mut hdrhistogram::serialization::V2Serializer::new(),
        &hdrhistogram::Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).unwrap(),
        &mut plain,
    )
    .unwrap();
    plain[4..8].copy_from_slice(&(2u32 << 30).to_be_bytes());
    use base64::Engine;
    let line = format!(
        "0.000,1.000,0.0,{}\n",
        base64::engine::general_purpose::STANDARD.encode(&plain)
    );
    std::fs::write(&hlog, line).unwrap();
    let out = common::cauda().arg("analyze").arg(&hlog).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("a payload of 2147483648 bytes"), "{stderr}");
}
