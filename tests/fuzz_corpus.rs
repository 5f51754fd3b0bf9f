//! The fuzz corpus, replayed without libFuzzer: every committed input
//! (`fuzz/corpus/TARGET/`, minimised by `bench/fuzz.sh`) and every crash
//! found so far (`fuzz/regressions/TARGET/`) goes through the code the fuzz
//! targets run (`fuzz/entry.rs`, included here), and each must be read or
//! refused — never panic.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

#[path = "../fuzz/entry.rs"]
mod entry;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

/// The names of the entries of `dir` (none when it does not exist).
fn names(dir: &Path) -> BTreeSet<String> {
    let Ok(entries) = fs::read_dir(dir) else {
        return BTreeSet::new();
    };
    entries
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn every_corpus_and_regression_input_is_read_or_refused_without_a_panic() {
    let mut fed = 0;
    let mut panicked = Vec::new();
    for (target, _) in entry::TARGETS {
        for folder in ["corpus", "regressions"] {
            let dir = fuzz_dir().join(folder).join(target);
            for name in names(&dir) {
                let path = dir.join(name);
                let data = fs::read(&path).unwrap();
                if std::panic::catch_unwind(|| entry::feed(target, &data)).is_err() {
                    panicked.push(format!("{} (fuzz target {target})", path.display()));
                }
                fed += 1;
            }
        }
    }
    assert!(
        panicked.is_empty(),
        "these inputs panic:\n{}",
        panicked.join("\n")
    );
    assert!(fed > 0, "no corpus under {}", fuzz_dir().display());
}

#[test]
fn the_targets_their_files_and_their_folders_agree() {
    let targets: BTreeSet<String> = entry::TARGETS.iter().map(|(t, _)| t.to_string()).collect();
    let files: BTreeSet<String> = names(&fuzz_dir().join("fuzz_targets"))
        .into_iter()
        .filter_map(|f| f.strip_suffix(".rs").map(str::to_string))
        .collect();
    assert_eq!(
        files, targets,
        "fuzz/fuzz_targets/*.rs against entry::TARGETS"
    );
    let manifest = fs::read_to_string(fuzz_dir().join("Cargo.toml")).unwrap();
    for target in &targets {
        assert!(
            manifest.contains(&format!("name = \"{target}\"")),
            "fuzz/Cargo.toml has no [[bin]] {target}"
        );
    }
    for folder in ["corpus", "regressions"] {
        let unknown: Vec<String> = names(&fuzz_dir().join(folder))
            .difference(&targets)
            .cloned()
            .collect();
        assert!(
            unknown.is_empty(),
            "fuzz/{folder}/ has folders of no target: {unknown:?}"
        );
    }
}
