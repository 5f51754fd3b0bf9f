//! Reading cauda run files (`cauda.run/1`).
//!
//! Every run file is written by [`crate::formats::export::runfile::to_bytes`],
//! which seals it with a checksum ([`RunFile::integrity`]); [`parse`] refuses what is internally
//! inconsistent and warns when a consistent file was changed after cauda
//! wrote it. Users edit run files with jq, so a changed file is read (and
//! analysed as it is now), never refused for the checksum alone.

use anyhow::{Context, Result};

use super::options::{Imported, ReadOptions};
use super::reader::{Input, whole_text};
use crate::error::input_error;
use crate::formats::seal::{as_sealed, checksum, checksum_parts};
use crate::model::{RUN_SCHEMA, RunFile, Series, Warning};

/// Whether the first bytes are a run file's: a JSON object (fio's and
/// cyclictest's, detected before, are not).
pub(super) fn detect(head: &super::head::Head) -> bool {
    head.trimmed.starts_with('{')
}

/// The table's reader: the whole run, its series moved out of it.
pub(super) fn import(source: &str, input: Input, _: &ReadOptions) -> Result<Imported> {
    let text = whole_text(source, input)?;
    let (mut run, changed) = parse(source, &text)?;
    drop(text);
    // The series move out of the run rather than being copied
    // (a one-hour run holds some 7,000 stored histograms).
    let series = std::mem::take(&mut run.series);
    Ok(Imported {
        series,
        run: Some(run),
        warnings: changed,
    })
}

/// Whether `run` is as cauda wrote it; a warning when its checksum says it
/// was changed since (a file without one, written before checksums or by
/// hand, passes).
fn changed_since_written(source: &str, text: &str, run: &mut RunFile) -> Result<Option<Warning>> {
    let Some(claimed) = run.integrity.take() else {
        return Ok(None);
    };
    // Fast path: the text is byte for byte what cauda sealed.
    if as_sealed(text).is_some_and(|unsealed| checksum_parts(unsealed, b"}") == claimed) {
        run.integrity = Some(claimed);
        return Ok(None);
    }
    // Otherwise (reformatted by jq, say) the content decides.
    let actual = checksum(&serde_json::to_vec(&*run).context("cannot serialize the run")?);
    let warning = (actual != claimed).then(|| Warning {
        message: format!(
            "{source} was changed after cauda wrote it (its checksum is {claimed}, its content \
             {actual}); it is analysed as it is now"
        ),
        advice: "if you did not edit it, it is damaged: re-copy it from the original".into(),
    });
    run.integrity = Some(claimed);
    Ok(warning)
}

/// Just the schema, read when a document is not a run file of this schema
/// (or not one at all), so that a file of another schema gets that answer
/// rather than a list of missing fields.
#[derive(serde::Deserialize)]
struct Head {
    #[serde(default)]
    schema: Option<serde_json::Value>,
}

/// Why a document with another `schema` is refused, and what to do.
fn other_schema(source: &str, schema: Option<&str>) -> String {
    let kind = schema
        .and_then(|s| s.strip_prefix("cauda."))
        .and_then(|s| s.split_once('/'))
        .map(|(kind, _)| kind);
    match (schema, kind) {
        (Some(schema), Some("run")) => format!(
            "{source}: schema '{schema}' is not one this cauda reads (it reads {RUN_SCHEMA}); \
             upgrade cauda or re-export the file"
        ),
        (Some(schema), Some(kind)) => format!(
            "{source}: a cauda {kind} document ({schema}), not a run file; give run files \
             ({RUN_SCHEMA}) only, e.g. leave audit.json out of a lab directory's *.json"
        ),
        (schema, _) => format!(
            "{source}: schema '{}' is not a cauda run file's ({RUN_SCHEMA})",
            schema.unwrap_or("(not a string)")
        ),
    }
}

/// Parses a run file; `source` names it in errors, with line and column.
/// Also returns warnings: a section left out since it does not parse, a
/// file changed since cauda wrote it.
pub fn parse(source: &str, text: &str) -> Result<(RunFile, Vec<Warning>)> {
    let located = |e: &serde_json::Error| format!("{source}:{}:{}", e.line(), e.column());
    // The whole file is parsed once; only a file that is not a run file
    // of this schema is read again, for its schema, to say what it is.
    let mut run = match serde_json::from_str::<RunFile>(text) {
        Ok(run) if run.schema == RUN_SCHEMA => run,
        parsed => {
            let head: Head = serde_json::from_str(text).map_err(|e| {
                input_error(format!(
                    "{}: not valid JSON ({e}); expected a cauda run file",
                    located(&e)
                ))
            })?;
            match head.schema.as_ref().map(|s| s.as_str()) {
                Some(Some(RUN_SCHEMA)) => {}
                Some(other) => return Err(input_error(other_schema(source, other))),
                None => {
                    return Err(input_error(format!(
                        "{source}: a JSON document without a \"schema\" field; expected a cauda \
                         run file ({RUN_SCHEMA})"
                    )));
                }
            }
            // Its schema is this one, so the whole parse failed: say why.
            parsed.map_err(|e| {
                input_error(format!(
                    "{}: not a valid {RUN_SCHEMA} run file: {e}",
                    located(&e)
                ))
            })?
        }
    };
    for (i, series) in run.series.iter().enumerate() {
        if series.unit != "ns" {
            return Err(input_error(format!(
                "{source}: series '{}' has unit '{}'; run files hold nanoseconds",
                series.tag, series.unit
            )));
        }
        if run.series[..i].iter().any(|s| s.tag == series.tag) {
            return Err(input_error(format!(
                "{source}: two series are tagged '{}'; a run file's tags are unique",
                series.tag
            )));
        }
        check_intervals(series).map_err(|why| {
            input_error(format!(
                "{source}: series '{}', {why}; the file is damaged or was edited — re-export it \
                 from the original",
                series.tag
            ))
        })?;
    }
    if let Some(offered) = &run.offered {
        let tags: Vec<&str> = run.series.iter().map(|s| s.tag.as_str()).collect();
        let intervals = run.series.iter().map(|s| s.intervals.len()).max();
        offered
            .check(&tags, intervals.unwrap_or(0), run.interval_ns)
            .map_err(|why| {
                input_error(format!(
                    "{source}: offered: {why}; the file is damaged or was edited — re-export it \
                     from the original"
                ))
            })?;
    }
    super::runfile_blame::check(&run).map_err(|why| {
        input_error(format!(
            "{source}: blame: {why}; the file is damaged or was edited — re-export it from the \
             original"
        ))
    })?;
    let left_out = super::runfile_sections::left_out(source, text, &run);
    let changed = changed_since_written(source, text, &mut run)?;
    Ok((run, left_out.into_iter().chain(changed).collect()))
}

/// Each interval's statistics agree with each other, and the intervals
/// follow each other in time without overlapping. An empty interval's
/// histogram is decoded here, since nothing that uses the run reads it (a
/// damaged one was accepted); every other histogram is checked where it is
/// decoded, by whatever reads it — decoding them all here too would read a
/// merge's 72,000 histograms twice.
fn check_intervals(series: &Series) -> Result<(), String> {
    let mut end = 0u64;
    let mut pairs = Vec::new();
    for (i, interval) in series.intervals.iter().enumerate() {
        let checked = match interval.count {
            0 => interval.bucket_indexes_into(&mut pairs),
            _ => interval.check_stats(),
        };
        checked.map_err(|why| format!("interval {i}: {why}"))?;
        if interval.start_ns < end {
            return Err(format!(
                "interval {i} starts at {} ns, before the previous one ends ({end} ns)",
                interval.start_ns
            ));
        }
        end = interval.start_ns.saturating_add(interval.length_ns);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::other_schema;

    #[test]
    fn another_schema_is_refused_with_what_to_do() {
        let newer = other_schema("a.json", Some("cauda.run/2"));
        assert!(newer.contains("upgrade cauda"), "{newer}");
        let audit = other_schema("lab/audit.json", Some("cauda.audit/1"));
        assert!(
            audit.starts_with("lab/audit.json: a cauda audit document"),
            "{audit}"
        );
        assert!(audit.contains("run files (cauda.run/1) only"), "{audit}");
        let foreign = other_schema("x.json", Some("https://json-schema.org/draft/2020-12"));
        assert!(foreign.contains("is not a cauda run file's"), "{foreign}");
        assert!(!foreign.contains("upgrade"), "{foreign}");
        let odd = other_schema("y.json", None);
        assert!(odd.contains("'(not a string)'"), "{odd}");
    }

    /// A run file is parsed once; what is not one of this schema is named
    /// from its schema, what is one but damaged by its own error.
    #[test]
    fn parse_says_what_a_document_is() {
        let run = crate::formats::export::json::run_around(&[], Vec::new()).unwrap();
        let text =
            String::from_utf8(crate::formats::export::runfile::to_bytes(&run).unwrap()).unwrap();
        assert!(super::parse("ok.json", &text).unwrap().1.is_empty());
        let err = |text: &str| super::parse("x.json", text).unwrap_err().to_string();
        let newer = text.replace("\"cauda.run/1\"", "\"cauda.run/2\"");
        assert!(err(&newer).contains("upgrade cauda"), "{}", err(&newer));
        let damaged = text.replace("\"probe\":\"import\",", "");
        assert!(
            err(&damaged).contains("not a valid cauda.run/1 run file: missing field `probe`"),
            "{}",
            err(&damaged)
        );
        assert!(err("{\"a\":1}").contains("without a \"schema\" field"));
        assert!(err("{\"schema\":5}").contains("'(not a string)'"));
        assert!(err("{\"schema\":").contains("x.json:1:10: not valid JSON"));
    }

    /// Values a disk run wrote whose default (fast) parse by serde_json is
    /// one ulp off, so re-serialising an untouched file changed its
    /// checksum and it was read as "changed after cauda wrote it"; the
    /// `float_roundtrip` feature parses them exactly.
    #[test]
    fn floats_read_back_exactly_so_an_untouched_file_keeps_its_checksum() {
        for text in [
            "92852187.83205253",
            "1887.6935593783446",
            "20908.249195361757",
        ] {
            let value: f64 = serde_json::from_str(text).unwrap();
            assert_eq!(serde_json::to_string(&value).unwrap(), text);
        }
    }
}
