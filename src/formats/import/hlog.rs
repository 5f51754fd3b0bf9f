//! Reading HdrHistogram interval logs (`.hlog`): any writer's — Java
//! HdrHistogram's `HistogramLogWriter`, jHiccup, HdrHistogram_py, Rust,
//! cauda's own ([`crate::formats::export::hlog`]) — with histograms in the
//! V2, V1 or V0 encoding, into one series per tag.

use anyhow::Result;

use super::head::Head;
use super::options::{Imported, ReadOptions};
use super::reader::Input;
use crate::formats::hlog_comments::main_tag_in;
use crate::model::IntervalRecord;

/// Whether the first lines are an interval log's: one of its headers
/// (`#[StartTime`, `#[BaseTime`, its format version, the CSV legend), a
/// `Tag=`, or a histogram (`HIST…`) as a line's last field.
pub(super) fn detect(head: &Head) -> bool {
    let hlog_line = |l: &&str| {
        l.starts_with("#[StartTime")
            || l.starts_with("#[BaseTime")
            || l.starts_with("#[Histogram log format")
            || l.starts_with("\"StartTimestamp\"")
            || l.starts_with("Tag=")
            || l.rsplit(',')
                .next()
                .is_some_and(|last| last.starts_with("HIST"))
    };
    head.lines.iter().any(hlog_line)
}

/// The table's reader: values in the unit the user gave (`--unit`).
pub(super) fn import(source: &str, input: Input, options: &ReadOptions) -> Result<Imported> {
    let (series, warnings) = read(source, input.with_line_limit(), options.unit.nanos())?;
    Ok(Imported {
        warnings,
        ..Imported::of(series)
    })
}

/// Reads an interval log into one series per tag. Untagged lines form the
/// series a `#[cauda main series: TAG]` comment names, or `default`.
/// Values are multiplied by `scale` (1 for nanoseconds). Histograms in the
/// V1 and V0 encodings of older logs are kept re-encoded as V2.
///
/// A last line with no line end that does not parse is a torn write (a
/// full disk while streaming, a copy taken mid-write): it is passed over
/// with a warning and every complete interval kept. Anywhere else, a bad
/// line is refused with its number.
///
/// Interval start times become offsets from the log's `StartTime`: lines
/// are relative to `BaseTime` when one is given, absolute (seconds since
/// the epoch) when they are that large, and relative otherwise.
pub fn read(
    source: &str,
    mut reader: impl std::io::BufRead,
    scale: u64,
) -> anyhow::Result<(Vec<crate::model::Series>, Vec<crate::model::Warning>)> {
    use crate::error::input_error;
    use crate::model::{MeasuredFrom, Series, Warning};

    let mut state = LogState::default();
    let mut series: Vec<Series> = Vec::new();
    let mut warnings = Vec::new();
    let mut raw = Vec::new();
    for line_no in 1.. {
        raw.clear();
        let read = reader
            .read_until(b'\n', &mut raw)
            .map_err(|e| input_error(format!("{source}:{line_no}: cannot read ({e})")))?;
        if read == 0 {
            break;
        }
        let torn = raw.last() != Some(&b'\n');
        let text = String::from_utf8_lossy(&raw);
        let parsed = read_line(source, line_no, text.trim(), scale, &mut state);
        let (tag, record) = match parsed {
            Ok(Some(found)) => found,
            Ok(None) => continue,
            Err(e) if torn => {
                warnings.push(Warning {
                    message: format!(
                        "{source}:{line_no}: the last line is cut short and was left out ({e:#})"
                    ),
                    advice: "the log was still being written or the disk filled; every \
                             complete interval before it is kept"
                        .into(),
                });
                break;
            }
            Err(e) => return Err(e),
        };
        match series.iter_mut().find(|s| s.tag == tag) {
            Some(s) => s.intervals.push(record),
            None => {
                let mut s = Series::new(tag, MeasuredFrom::Unknown);
                s.intervals.push(record);
                series.push(s);
            }
        }
    }
    if series.is_empty() {
        return Err(input_error(format!(
            "{source}: no interval lines; expected an HdrHistogram log with lines like \
             Tag=read,0.000,1.000,2.312,HISTFAAA…"
        )));
    }
    Ok((series, warnings))
}

/// What the header and comment lines have said so far.
#[derive(Debug, Default)]
struct LogState {
    start_time: Option<f64>,
    base_time: Option<f64>,
    /// The series of untagged lines, when a comment names it.
    main: Option<String>,
}

/// One line of an interval log: its tag and interval, or `None` for a
/// blank line, a header or a comment (which may set the start or base time,
/// or name the main series).
fn read_line(
    source: &str,
    line_no: usize,
    line: &str,
    scale: u64,
    state: &mut LogState,
) -> anyhow::Result<Option<(String, crate::model::IntervalRecord)>> {
    use crate::error::input_error;
    if line.is_empty() || line.starts_with("\"StartTimestamp\"") {
        return Ok(None);
    }
    if let Some(comment) = line.strip_prefix('#') {
        if let Some(rest) = comment.strip_prefix("[StartTime: ") {
            state.start_time = leading_seconds(rest);
        } else if let Some(rest) = comment.strip_prefix("[BaseTime: ") {
            state.base_time = leading_seconds(rest);
        } else if let Some(tag) = main_tag_in(line).filter(|t| !t.is_empty()) {
            state.main = Some(tag.to_string());
        }
        return Ok(None);
    }
    let expected = "expected [Tag=NAME,]START_S,LENGTH_S,MAX,BASE64_HISTOGRAM";
    let (tag, rest) = match line.strip_prefix("Tag=") {
        Some(tagged) => {
            let (tag, rest) = tagged.split_once(',').ok_or_else(|| {
                input_error(format!(
                    "{source}:{line_no}: a Tag= line with nothing after the tag; {expected}"
                ))
            })?;
            (tag.to_string(), rest)
        }
        None => (state.main.as_deref().unwrap_or("default").to_string(), line),
    };
    let fields: Vec<&str> = rest.split(',').collect();
    if fields.len() != 4 {
        return Err(input_error(format!(
            "{source}:{line_no}: {} fields; {expected}",
            fields.len() + usize::from(line.starts_with("Tag="))
        )));
    }
    let number = |i: usize, what: &str| -> anyhow::Result<f64> {
        fields[i]
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| {
                input_error(format!(
                    "{source}:{line_no}: {what} '{}' is not a non-negative number; {expected}",
                    fields[i]
                ))
            })
    };
    let timestamp = number(0, "the start time")?;
    let length = number(1, "the interval length")?;
    number(2, "the interval max")?;
    let (mut hdr, version) = crate::model::encoding::decode_with_version(fields[3])
        .map_err(|e| input_error(format!("{source}:{line_no}: {e}")))?;
    // (base − start) + ts, not (base + ts) − start: subtracting two
    // epoch-sized floats first keeps the nanoseconds.
    let offset = match (state.start_time, state.base_time) {
        (Some(start), Some(base)) if base + timestamp >= start => (base - start) + timestamp,
        (Some(start), None) if timestamp > 1e9 && timestamp >= start => timestamp - start,
        _ => timestamp,
    };
    // Nanoseconds in a u64 reach 584 years; a century bounds what a log
    // can mean, and keeps every sum of starts and lengths in range.
    const CENTURY_S: f64 = 100.0 * 365.25 * 86_400.0;
    if offset > CENTURY_S || length > CENTURY_S {
        return Err(input_error(format!(
            "{source}:{line_no}: an interval {} s from the log's start and {length} s long is \
             beyond a century; is the start time in seconds (with #[StartTime] or \
             #[BaseTime])?",
            offset
        )));
    }
    if scale != 1 {
        let mut scaled = crate::record::histogram::empty_hdr();
        scaled.auto(true);
        for b in hdr.iter_recorded() {
            let _ = scaled.record_n(
                b.value_iterated_to().saturating_mul(scale),
                b.count_at_value(),
            );
        }
        hdr = scaled;
    }
    // The line's own text is kept when it is what cauda would store: V2.
    let keep = scale == 1 && version == crate::model::encoding::Version::V2;
    let record = interval_from_hdr(offset, length, &hdr, keep.then_some(fields[3]));
    Ok(Some((tag, record)))
}

/// `1441812279.474 (seconds since epoch), …` → 1441812279.474.
fn leading_seconds(text: &str) -> Option<f64> {
    text.split_whitespace()
        .next()?
        .trim_end_matches(']')
        .parse()
        .ok()
}

/// An interval record from a histogram whose exact statistics are unknown:
/// count is exact, min and max are bucket bounds, the sum is from bucket
/// midpoints. Keeps the original encoding when given.
pub fn interval_from_hdr(
    start_s: f64,
    length_s: f64,
    hdr: &hdrhistogram::Histogram<u64>,
    encoded: Option<&str>,
) -> IntervalRecord {
    let count = hdr.len();
    let sum: u128 = hdr
        .iter_recorded()
        .map(|b| hdr.median_equivalent(b.value_iterated_to()) as u128 * b.count_at_value() as u128)
        .sum();
    IntervalRecord {
        start_ns: (start_s * 1e9).round() as u64,
        length_ns: (length_s * 1e9).round() as u64,
        count,
        min: if count == 0 { 0 } else { hdr.min() },
        max: if count == 0 { 0 } else { hdr.max() },
        sum,
        clamped: 0,
        histogram: crate::model::histogram_data::HistogramData::Encoded(encoded.map_or_else(
            || crate::model::encoding::encode(hdr),
            |e| e.trim().to_string(),
        )),
    }
}

#[cfg(test)]
mod read_tests {
    use super::*;
    use crate::formats::export::hlog::{header, header_without_start, interval_line};
    use crate::record::LatencyHistogram;

    #[test]
    fn reads_what_it_writes() {
        let mut h = LatencyHistogram::new();
        (1..=1000u64).for_each(|v| h.record(v * 1000));
        let a = IntervalRecord::from_histogram(0, 1_000_000_000, &h);
        let b = IntervalRecord::from_histogram(1_000_000_000, 500_000_000, &h);
        let text = format!(
            "{}{}{}{}",
            header(
                1_700_000_000_000_000_000,
                "2023-11-14T22:13:20Z",
                Some("wakeup")
            ),
            interval_line(None, &a),
            interval_line(None, &b),
            interval_line(Some("self"), &a)
        );
        assert!(
            text.contains("\n0.000,1.000,"),
            "the main series is untagged"
        );
        let (series, _) = read("t", text.as_bytes(), 1).unwrap();
        assert_eq!(series.len(), 2);
        assert_eq!(series[0].tag, "wakeup");
        assert_eq!(series[1].tag, "self");
        assert_eq!(series[0].intervals.len(), 2);
        assert_eq!(series[0].intervals[1].start_ns, 1_000_000_000);
        assert_eq!(series[0].intervals[1].length_ns, 500_000_000);
        let merged = series[0].merged().unwrap();
        assert_eq!(merged.count(), 2000);
        assert_eq!(
            merged.hdr(),
            {
                let mut both = h.clone();
                both.add(&h);
                both
            }
            .hdr()
        );
    }

    #[test]
    fn a_start_beyond_a_century_is_refused_not_wrapped() {
        let mut h = LatencyHistogram::new();
        h.record(1_000);
        let line = interval_line(None, &IntervalRecord::from_histogram(0, 1_000_000_000, &h));
        // Milliseconds since the epoch where seconds were meant.
        let far = line.replacen("0.000,", "1700000000000.000,", 1);
        let err = read("t", far.as_bytes(), 1).unwrap_err().to_string();
        assert!(err.contains("t:1: an interval"), "{err}");
        assert!(err.contains("beyond a century"), "{err}");
        assert!(read("t", line.as_bytes(), 1).is_ok());
    }

    #[test]
    fn older_encodings_are_kept_as_v2() {
        // A log written by Java HdrHistogram 2.1.6: V1 histograms (HISTIg…).
        let old = include_str!("../../../tests/fixtures/hdr/java-2.1.6.hlog");
        assert!(old.contains(",HISTIg"));
        let (series, _) = read("t", old.as_bytes(), 1).unwrap();
        assert_eq!(series[0].tag, "default");
        for interval in &series[0].intervals {
            let text = interval.histogram.encoded();
            assert!(text.starts_with("HISTF"), "stored as V2 deflate: {text}");
            assert_eq!(interval.count, 1000);
        }
    }

    #[test]
    fn absolute_timestamps_become_offsets() {
        let mut h = LatencyHistogram::new();
        h.record(5);
        let enc = crate::model::encoding::encode(h.hdr());
        let text = format!(
            "#[StartTime: 1700000000.000 (seconds since epoch), x]\n1700000002.500,1.000,0.000,{enc}\n"
        );
        let (s, _) = read("t", text.as_bytes(), 1).unwrap();
        assert_eq!(s[0].tag, "default");
        assert_eq!(s[0].intervals[0].start_ns, 2_500_000_000);
    }

    #[test]
    fn bad_lines_name_the_line() {
        for (text, needle) in [
            ("#[StartTime: 1 x]\n0.0,1.0,0.0\n", "t:2: 3 fields"),
            ("0.0,1.0,0.0,HISTnotbase64!!\n", "t:1: histogram"),
            ("abc,1.0,0.0,HISTFAAAA\n", "t:1: the start time 'abc'"),
            ("#[comment]\n", "no interval lines"),
            ("Tag=x\n", "nothing after the tag"),
        ] {
            let err = read("t", text.as_bytes(), 1).unwrap_err().to_string();
            assert!(err.contains(needle), "{text:?}: {err}");
        }
    }

    #[test]
    fn a_torn_last_line_is_left_out_with_a_warning_and_the_rest_kept() {
        let interval = |start: u64| {
            let mut h = crate::record::LatencyHistogram::new();
            for v in [1_000, 2_000, 3_000] {
                h.record(v);
            }
            IntervalRecord::from_histogram(start, 1_000_000_000, &h)
        };
        let mut text = header_without_start(Some("rtt"));
        text += &interval_line(None, &interval(0));
        text += &interval_line(None, &interval(1_000_000_000));
        let whole = text.clone() + &interval_line(None, &interval(2_000_000_000));
        let torn = &whole[..whole.len() - 20];
        let (series, warnings) = read("t", torn.as_bytes(), 1).unwrap();
        assert_eq!(series[0].intervals.len(), 2);
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].message.contains("t:"), "{:?}", warnings[0]);
        assert!(
            warnings[0].message.contains("cut short"),
            "{:?}",
            warnings[0]
        );
        // The same damage with a line end, or before the last line, is refused.
        let ended = format!("{torn}\n");
        assert!(read("t", ended.as_bytes(), 1).is_err());
        let inside = format!("{torn}\n{}", interval_line(None, &interval(3_000_000_000)));
        assert!(read("t", inside.as_bytes(), 1).is_err());
        let (_, none) = read("t", whole.as_bytes(), 1).unwrap();
        assert!(none.is_empty());
    }
}
