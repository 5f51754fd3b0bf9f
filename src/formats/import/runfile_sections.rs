//! A run file's optional sections (`disk`, `broker`, `kernel`, `offered`,
//! `blame`) that do not parse are left out of the run (`model::run`'s
//! `section`: a file from another version still reads) — never without
//! saying so: a warning names the section, where in the file and why.
//! Otherwise a damaged blame section read as a run measured without
//! `--kernel blame`, and `convert --to trace` told the user to measure
//! again.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use crate::model::{RunFile, Warning};

/// Why a section's text does not parse (its type's reader).
type Check = fn(&RawValue) -> Option<serde_json::Error>;

/// Whether `name` is a key of `text` with a value (not `null`). The host
/// snapshot's `"kernel"` (the release, a string) is not the kernel
/// section: every run has it, and would be read twice. Searched with
/// memchr's vectorised `memmem`: every run file read goes through this
/// for each section it lacks, and `str::match_indices` took 8 % of a
/// ten-host merge.
fn named(text: &str, name: &str) -> bool {
    let key = format!("\"{name}\":");
    memchr::memmem::find_iter(text.as_bytes(), key.as_bytes()).any(|at| {
        let value = text[at + key.len()..].trim_start();
        !value.starts_with("null") && (name != "kernel" || !value.starts_with('"'))
    })
}

/// Why a section's text does not parse as `T`.
fn why<T: DeserializeOwned>(raw: &RawValue) -> Option<serde_json::Error> {
    serde_json::from_str::<T>(raw.get()).err()
}

/// A warning for each section `text` holds that `run` left out since it
/// does not parse. The file is read again only when a section the run
/// lacks is named in it as a key.
pub fn left_out(source: &str, text: &str, run: &RunFile) -> Vec<Warning> {
    use crate::model::{blame, broker, disk, kernel, load};
    let lacking: [(&str, bool, Check); 5] = [
        ("disk", run.disk.is_none(), why::<disk::DiskReport>),
        ("broker", run.broker.is_none(), why::<broker::BrokerReport>),
        ("kernel", run.kernel.is_none(), why::<kernel::KernelReport>),
        ("offered", run.offered.is_none(), why::<load::OfferedLoad>),
        ("blame", run.blame.is_none(), why::<blame::BlameReport>),
    ];
    let lacking: Vec<_> = lacking
        .into_iter()
        .filter(|&(name, none, _)| none && named(text, name))
        .collect();
    if lacking.is_empty() {
        return Vec::new();
    }
    // Just the top level's text, each value unparsed.
    let Ok(sections) = serde_json::from_str::<BTreeMap<String, &RawValue>>(text) else {
        return Vec::new();
    };
    lacking
        .into_iter()
        .filter_map(|(name, _, check)| {
            let raw = *sections.get(name)?;
            let why = (raw.get() != "null").then(|| check(raw))??;
            Some(warning(source, text, name, raw, &why))
        })
        .collect()
}

/// The warning for section `name`, its error placed in the file.
fn warning(
    source: &str,
    text: &str,
    name: &str,
    raw: &RawValue,
    why: &serde_json::Error,
) -> Warning {
    let start = raw.get().as_ptr() as usize - text.as_ptr() as usize;
    let before = &text[..start];
    let line = before.matches('\n').count() + why.line();
    let column = match why.line() {
        1 => start - before.rfind('\n').map_or(0, |n| n + 1) + why.column(),
        _ => why.column(),
    };
    let what = why.to_string();
    let what = what.split(" at line ").next().unwrap_or(&what);
    let without = match name {
        "blame" => "the run reads as one without --kernel blame",
        "kernel" => "the run reads as one without its kernel section",
        _ => "the run reads without it",
    };
    Warning {
        message: format!(
            "{source}:{line}:{column}: its {name} section cannot be read ({what}) and is left \
             out: {without}"
        ),
        advice: "the file is damaged, was edited or comes from another version of cauda: \
                 re-export it from the original"
            .into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_text(blame: &str) -> String {
        let run = crate::formats::export::json::run_around(&[], Vec::new()).unwrap();
        let text = serde_json::to_string_pretty(&run).unwrap();
        let body = text.trim_end().strip_suffix('}').unwrap();
        format!("{body},\n  \"blame\": {blame}\n}}")
    }

    #[test]
    fn the_host_kernel_release_is_no_kernel_section() {
        let text = run_text("null");
        assert!(
            text.contains("\"kernel\":"),
            "the host's release is in every run"
        );
        assert!(!named(&text, "kernel"));
        assert!(named("{\"kernel\": {}}", "kernel"));
        assert!(named("{\"blame\": \"yes\"}", "blame"));
    }

    #[test]
    fn any_section_left_out_is_named() {
        let text =
            run_text("null").replace("\"blame\": null", "\"offered\": {\"rate_per_s\": \"fast\"}");
        let run: RunFile = serde_json::from_str(&text).unwrap();
        assert!(run.offered.is_none());
        let w = left_out("x.json", &text, &run);
        assert_eq!(w.len(), 1);
        assert!(
            w[0].message.contains("its offered section cannot be read"),
            "{}",
            w[0].message
        );
    }

    #[test]
    fn a_section_left_out_is_named_with_its_place() {
        let text = run_text(
            "{\"threshold\": {\"rule\": \"previous_p99\"}, \"series\": [],\n \"slowest\": [], \"kept\": -1}",
        );
        let run: RunFile = serde_json::from_str(&text).unwrap();
        assert!(run.blame.is_none());
        let w = left_out("x.json", &text, &run).pop().expect("a warning");
        let line = text.lines().count() - 1; // the section's second line
        assert!(
            w.message.starts_with(&format!("x.json:{line}:")),
            "{}",
            w.message
        );
        assert!(
            w.message
                .contains("invalid value: integer `-1`, expected u64"),
            "{}",
            w.message
        );
        let at: usize = w.message.split(':').nth(2).unwrap().parse().unwrap();
        // serde places it at the value's last character.
        let place = text.lines().nth(line - 1).unwrap();
        assert_eq!(&place[at - 2..at], "-1", "{}", w.message);
        for not_one in ["[]", "\"yes\"", "{}"] {
            let text = run_text(not_one);
            let run: RunFile = serde_json::from_str(&text).unwrap();
            assert_eq!(left_out("x.json", &text, &run).len(), 1, "{not_one}");
        }
        let absent = run_text("null");
        let run: RunFile = serde_json::from_str(&absent).unwrap();
        assert!(left_out("x.json", &absent, &run).is_empty());
    }
}
