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

/// A 1 s timer run saved in `dir` as `name`, and its JSON.
fn timer_file(dir: &std::path::Path, name: &str) -> (PathBuf, serde_json::Value) {
    let path = dir.join(name);
    let run = common::timer_run(&path, &["--runtime", "1s"]);
    (path, run)
}

/// `doc` written to `dir/name`.
fn written(dir: &std::path::Path, name: &str, doc: &serde_json::Value) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_vec(doc).unwrap()).unwrap();
    path
}

/// `cauda ARGS`, which must end with exit 2 and say every needle: its stderr.
fn refused_saying(args: &[&std::ffi::OsStr], needles: &[&str]) -> String {
    let out = common::cauda().args(args).output().unwrap();
    common::ended(&out, 2, needles)
}

/// Issue 32: tags and labels are bounded (1 KiB) and one line of text
/// wherever they come in — a run file, an .hlog's Tag=, a `--label` —
/// and the message names the file, the field and the limit; no .hlog is
/// written that cauda cannot read back.
#[test]
fn tags_and_labels_are_bounded_and_one_line_wherever_they_come_in() {
    use std::ffi::OsStr;
    let dir = tempfile::tempdir().unwrap();
    let (_, run) = timer_file(dir.path(), "run.json");
    let os = |s: &'static str| OsStr::new(s);
    let long = "x".repeat(2048);

    let mut labelled = run.clone();
    labelled["labels"] = serde_json::json!({ "host": long });
    let file = written(dir.path(), "long-label.json", &labelled);
    refused_saying(
        &[
            os("convert"),
            file.as_os_str(),
            os("--to"),
            os("parquet"),
            os("-o"),
            dir.path().join("pq").as_os_str(),
        ],
        &[
            "long-label.json:",
            "label 'host'",
            "2048 bytes long",
            "at most 1024 bytes",
        ],
    );
    let mut newline = run.clone();
    newline["series"][0]["tag"] = "wake\nup".into();
    let file = written(dir.path(), "newline-tag.json", &newline);
    let hlog = dir.path().join("out.hlog");
    refused_saying(
        &[
            os("convert"),
            file.as_os_str(),
            os("--to"),
            os("hlog"),
            os("-o"),
            hlog.as_os_str(),
        ],
        &[
            "newline-tag.json:",
            "series tag 'wake\\nup'",
            "control character (U+000A",
        ],
    );
    assert!(!hlog.exists());
    // A tag an .hlog cannot carry is refused there, not written.
    let mut comma = run.clone();
    comma["series"][1]["tag"] = "a,b".into();
    let file = written(dir.path(), "comma-tag.json", &comma);
    refused_saying(
        &[
            os("convert"),
            file.as_os_str(),
            os("--to"),
            os("hlog"),
            os("-o"),
            hlog.as_os_str(),
        ],
        &["series tag 'a,b' cannot be written to an .hlog"],
    );
    assert!(!hlog.exists());
    // An .hlog's Tag= is held to the same rule.
    let line = std::fs::read_to_string(common::fixture("hdr/java.hlog")).unwrap();
    let first = line.lines().find(|l| l.contains("HIST")).unwrap();
    let untagged = first
        .split_once("Tag=")
        .map_or(first, |(_, t)| t.split_once(',').unwrap().1);
    let tagged = dir.path().join("long-tag.hlog");
    std::fs::write(&tagged, format!("Tag={long},{untagged}\n")).unwrap();
    refused_saying(
        &[os("analyze"), tagged.as_os_str()],
        &["long-tag.hlog: series tag 'xxxx", "at most 1024 bytes"],
    );
    // And a --label.
    let flag = format!("host={long}");
    refused_saying(
        &[
            os("timer"),
            os("--runtime"),
            os("1s"),
            os("--label"),
            OsStr::new(&flag),
        ],
        &["the value of host", "at most 1024 bytes"],
    );
    refused_saying(
        &[
            os("timer"),
            os("--runtime"),
            os("1s"),
            os("--label"),
            os("host=a\tb"),
        ],
        &["control character (U+0009"],
    );
}

/// Issue 32: `convert --to omb` is sized by the intervals present, not by
/// the run's `duration_ns`: u64::MAX was 132 GB; an interval placed beyond
/// the windows OMB's document can list is refused.
#[test]
fn the_omb_export_is_sized_by_the_intervals_present() {
    use std::ffi::OsStr;
    let dir = tempfile::tempdir().unwrap();
    let (_, mut run) = timer_file(dir.path(), "run.json");
    run["probe"] = "broker".into();
    run["series"][0]["tag"] = "e2e".into();
    run["summary"][0]["tag"] = "e2e".into();
    run["duration_ns"] = u64::MAX.into();
    let file = written(dir.path(), "huge-duration.json", &run);
    let out = dir.path().join("omb.json");
    common::succeeded(
        common::cauda()
            .arg("convert")
            .arg(&file)
            .args(["--to", "omb", "-o"])
            .arg(&out)
            .output()
            .unwrap(),
    );
    let doc = common::read_json(&out);
    assert_eq!(
        doc["consumeRate"].as_array().unwrap().len(),
        1,
        "one window"
    );
    assert_eq!(doc["endToEndLatency99pct"].as_array().unwrap().len(), 1);
    let intervals = run["series"][0]["intervals"].as_array_mut().unwrap();
    let last = intervals.last_mut().unwrap();
    last["start_ns"] = 1_000_000_000_000_000u64.into();
    let file = written(dir.path(), "far-interval.json", &run);
    refused_saying(
        &[
            OsStr::new("convert"),
            file.as_os_str(),
            OsStr::new("--to"),
            OsStr::new("omb"),
            OsStr::new("-o"),
            dir.path().join("far.json").as_os_str(),
        ],
        &[
            "far-interval.json: its intervals reach 100000",
            "at most 100000",
        ],
    );
}

/// Issue 32 (the review's class 6): a histogram no HdrHistogram decoder
/// reads is refused when the run file is read, naming the series and the
/// interval — an empty interval's too, which no analysis decodes, and
/// one whose deflated length disagrees with its header.
#[test]
fn a_run_file_with_an_undecodable_histogram_is_refused_naming_where() {
    use std::ffi::OsStr;
    let dir = tempfile::tempdir().unwrap();
    let (_, run) = timer_file(dir.path(), "run.json");
    let self_at = run["series"]
        .as_array()
        .unwrap()
        .iter()
        .position(|s| s["tag"] == "self")
        .unwrap();
    let empty = run["series"][self_at]["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .position(|i| i["count"] == 0);
    let mut cases = Vec::new();
    if let Some(k) = empty {
        let mut d = run.clone();
        let h = d["series"][self_at]["intervals"][k]["histogram"]
            .as_str()
            .unwrap();
        d["series"][self_at]["intervals"][k]["histogram"] = h.replacen("HIST", "HIRT", 1).into();
        cases.push((d, format!("series 'self', interval {k}: histogram is not")));
    }
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut d = run.clone();
    let h = d["series"][0]["intervals"][0]["histogram"]
        .as_str()
        .unwrap();
    let mut bytes = b64.decode(h).unwrap();
    bytes[7] = bytes[7].wrapping_sub(16);
    d["series"][0]["intervals"][0]["histogram"] = b64.encode(&bytes).into();
    let tag = run["series"][0]["tag"].as_str().unwrap();
    cases.push((
        d,
        format!("series '{tag}', interval 0: histogram is not a valid"),
    ));
    for (n, (doc, needle)) in cases.iter().enumerate() {
        let file = written(dir.path(), &format!("damaged{n}.json"), doc);
        let stderr = refused_saying(
            &[OsStr::new("analyze"), file.as_os_str()],
            &[needle.as_str()],
        );
        assert!(stderr.contains(&format!("damaged{n}.json")), "{stderr}");
    }
    assert!(!cases.is_empty());
}
