//! fio per-I/O latency logs (`write_lat_log` with `log_avg_msec=0`).
//!
//! A line is `time_ms, value_ns, ddir, bs[, offset][, prio]`; values are cut
//! into intervals by their time, one series per direction. An averaged log
//! (`log_avg_msec>0`, recognisable by `bs` = 0) is refused: averaging
//! destroyed the tail it would be read for.
//!
//! These logs run to hundreds of megabytes, so a plain file is cut at line
//! boundaries into one chunk per CPU, each chunk parsed on its own thread,
//! and the chunks joined in file order with exactly the result of one
//! sequential pass (see [`Cutter::append`]). Gzip and in-memory input take
//! the sequential path.
//!
//! The reading and the cutting are here; turning a line's bytes into
//! numbers, the hot loop, is in `scan.rs`.

use std::fs::File;
use std::io::{BufRead, Read};
use std::os::unix::fs::FileExt;
use std::path::Path;

use anyhow::Result;

use super::cutter::Cutter;
use super::fio::{direction_name, fields, metric_from_name, numeric_fields, tag};
use super::head::Head;
use super::open::GZIP_MAGIC;
use super::options::{Imported, ReadOptions};
use super::reader::{Input, MAX_LINE};
use crate::error::input_error;
use crate::model::Series;

mod scan;

use scan::{LineError, bits_from, non_digit_bits, scan_fast, scan_lat_line, scan_masked};

/// Below this size a file is read on one thread (threads cost more).
const PARALLEL_MIN_BYTES: u64 = 8 << 20;

/// What the lines must look like, quoted in every refusal.
const EXPECTED: &str = "expected 'time_ms, latency_ns, ddir, bs[, offset][, prio]' (a fio log \
                        written with log_avg_msec=0)";

/// Whether the first bytes are a latency log's: numeric lines of 4 to 6
/// fields (a histogram log's, with more, is detected before).
pub(in crate::formats::import) fn detect(head: &Head) -> bool {
    numeric_fields(head).is_some_and(|n| (4..=6).contains(&n))
}

/// The table's reader of a stream.
pub(in crate::formats::import) fn import(
    source: &str,
    input: Input,
    options: &ReadOptions,
) -> Result<Imported> {
    let series = read_lat_log(source, input.with_line_limit(), options.interval_ns)?;
    Ok(Imported::of(series))
}

/// The table's reader of a plain file, in parallel chunks.
pub(in crate::formats::import) fn import_file(
    source: &str,
    path: &Path,
    options: &ReadOptions,
) -> Result<Option<Imported>> {
    Ok(read_lat_log_file(source, path, options.interval_ns)?.map(Imported::of))
}

/// Reads a latency log from a stream, on this thread.
pub fn read_lat_log(
    source: &str,
    mut reader: impl BufRead,
    interval_ns: u64,
) -> Result<Vec<Series>> {
    let chunk = parse_chunk(&mut reader, interval_ns, metric_from_name(source))
        .map_err(|fault| fault.into_error(source, 0))?;
    finish(source, vec![chunk])
}

/// Reads a latency log file in parallel chunks; `None` when the file is
/// better read as a stream (gzip, small, not a regular file, one CPU).
pub fn read_lat_log_file(
    source: &str,
    path: &Path,
    interval_ns: u64,
) -> Result<Option<Vec<Series>>> {
    let Ok(file) = File::open(path) else {
        return Ok(None);
    };
    let len = match file.metadata() {
        Ok(meta) if meta.is_file() && meta.len() >= PARALLEL_MIN_BYTES => meta.len(),
        _ => return Ok(None),
    };
    let mut magic = [0u8; 2];
    if file.read_exact_at(&mut magic, 0).is_err() || magic == GZIP_MAGIC {
        return Ok(None);
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    if threads < 2 {
        return Ok(None);
    }
    let bounds = split_at_lines(&file, len, threads)
        .map_err(|e| input_error(format!("{source}: cannot read ({e})")))?;
    let metric = metric_from_name(source);
    let results: Vec<Result<Chunk, LineFault>> = std::thread::scope(|scope| {
        let handles: Vec<_> = bounds
            .windows(2)
            .map(|range| {
                let (file, (pos, end)) = (&file, (range[0], range[1]));
                scope.spawn(move || {
                    parse_chunk(&mut RangeReader { file, pos, end }, interval_ns, metric)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a chunk parser does not panic"))
            .collect()
    });
    // The first fault in file order is the one reported, numbered from
    // the file's first line.
    let mut chunks = Vec::with_capacity(results.len());
    let mut lines_before = 0;
    for result in results {
        let chunk = result.map_err(|fault| fault.into_error(source, lines_before))?;
        lines_before += chunk.lines;
        chunks.push(chunk);
    }
    finish(source, chunks).map(Some)
}

/// Offsets that cut `len` bytes into about `parts` ranges, each starting a
/// line: `[0, …, len]`.
fn split_at_lines(file: &File, len: u64, parts: usize) -> std::io::Result<Vec<u64>> {
    let mut bounds = vec![0u64];
    let mut probe = vec![0u8; 1 << 16];
    for part in 1..parts as u64 {
        let mut at = (len * part / parts as u64).max(*bounds.last().expect("starts with 0"));
        // The cut goes just after the next newline.
        let cut = loop {
            let n = file.read_at(&mut probe, at)?;
            if n == 0 {
                break None;
            }
            if let Some(pos) = memchr::memchr(b'\n', &probe[..n]) {
                break Some(at + pos as u64 + 1);
            }
            at += n as u64;
        };
        match cut {
            Some(cut) if cut < len && cut > *bounds.last().expect("starts with 0") => {
                bounds.push(cut)
            }
            _ => break,
        }
    }
    bounds.push(len);
    Ok(bounds)
}

/// Reads `[pos, end)` of a file, without moving any shared file offset.
struct RangeReader<'a> {
    file: &'a File,
    pos: u64,
    end: u64,
}

impl Read for RangeReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let want = buf.len().min((self.end - self.pos) as usize);
        if want == 0 {
            return Ok(0);
        }
        let n = self.file.read_at(&mut buf[..want], self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// One chunk's directions, and how many lines it held.
struct Chunk {
    directions: Vec<(u64, Cutter)>,
    lines: usize,
}

/// Why a line was refused; turned into a message once its number in the
/// whole file is known.
enum Fault {
    Truncated,
    Fields(usize),
    Number(usize, String),
    Averaged,
    Cutter(String),
    TooLong,
    Read(std::io::Error),
}

/// A fault at a line of its chunk (1-based).
struct LineFault {
    line: usize,
    fault: Fault,
}

impl From<std::io::Error> for LineFault {
    fn from(e: std::io::Error) -> Self {
        LineFault {
            line: 0,
            fault: Fault::Read(e),
        }
    }
}

impl LineFault {
    fn into_error(self, source: &str, lines_before: usize) -> anyhow::Error {
        let at = format!("{source}:{}", lines_before + self.line);
        input_error(match self.fault {
            Fault::Truncated => format!(
                "{at}: the last line is cut short (fio ends every line with a newline): the file \
                 looks truncated"
            ),
            Fault::Fields(n) => format!("{at}: {n} fields; {EXPECTED}"),
            Fault::Number(i, text) => {
                let what = ["the time", "the latency", "the direction", "the block size"][i.min(3)];
                format!("{at}: {what} '{text}' is not a non-negative integer; {EXPECTED}")
            }
            Fault::Averaged => format!(
                "{at}: this is an averaged log (block size 0: fio wrote it with log_avg_msec > \
                 0); averaging erased the tail — re-run fio with log_avg_msec=0"
            ),
            Fault::Cutter(why) => format!("{at}: {why}"),
            Fault::TooLong => format!(
                "{at}: the line is longer than {} MiB: not a line of a fio log",
                MAX_LINE >> 20
            ),
            Fault::Read(e) => format!("{source}: cannot read ({e})"),
        })
    }
}

/// How much of a chunk is read at once.
const BLOCK: usize = 64 << 10;

/// Parses the lines of one chunk. Each block read gets a bitmap of its
/// non-digit bytes; well-formed lines (`D, D, D, D[, D][, D]` and a
/// newline, as fio writes them) are scanned against it ([`scan_masked`]),
/// or byte by byte when a field is long or the block ends ([`scan_fast`]);
/// any other line goes through the careful per-line path, which accepts
/// the same lines with the same values and names what is wrong with the
/// rest.
fn parse_chunk(
    reader: &mut impl Read,
    interval_ns: u64,
    metric: Option<&str>,
) -> Result<Chunk, LineFault> {
    let mut state = ChunkState {
        directions: Vec::new(),
        current: usize::MAX,
        interval_ns,
        metric,
    };
    let mut buf = vec![0u8; BLOCK];
    let mut delimiters = Vec::with_capacity(BLOCK / 64 + 2);
    let mut filled = 0;
    let mut line_no = 0;
    loop {
        if filled == buf.len() {
            // A line longer than the buffer, up to the one bound on lines.
            if buf.len() as u64 > MAX_LINE {
                return Err(LineFault {
                    line: line_no + 1,
                    fault: Fault::TooLong,
                });
            }
            buf.resize(buf.len() * 2, 0);
        }
        let read = reader.read(&mut buf[filled..])?;
        filled += read;
        let eof = read == 0;
        let end = if eof {
            filled
        } else {
            match memchr::memrchr(b'\n', &buf[..filled]) {
                Some(last) => last + 1,
                None => continue,
            }
        };
        non_digit_bits(&buf[..end], &mut delimiters);
        let mut pos = 0;
        while pos < end {
            line_no += 1;
            let rest = &buf[pos..end];
            let scanned =
                scan_masked(rest, bits_from(&delimiters, pos)).or_else(|| scan_fast(rest));
            if let Some((fields, used)) = scanned {
                state.record(line_no, fields)?;
                pos += used;
                continue;
            }
            let (line, newline, next) = match memchr::memchr(b'\n', &buf[pos..end]) {
                Some(k) => (&buf[pos..pos + k], true, pos + k + 1),
                None => (&buf[pos..end], false, end),
            };
            state.careful_line(line_no, line, newline)?;
            pos = next;
        }
        buf.copy_within(end..filled, 0);
        filled -= end;
        if eof {
            break;
        }
    }
    Ok(Chunk {
        directions: state.directions,
        lines: line_no,
    })
}

/// What a chunk has cut so far.
struct ChunkState<'a> {
    directions: Vec<(u64, Cutter)>,
    /// Logs hold one direction for long stretches: the last one used.
    current: usize,
    interval_ns: u64,
    metric: Option<&'a str>,
}

impl ChunkState<'_> {
    #[inline(always)]
    fn record(
        &mut self,
        line: usize,
        [time_ms, value, ddir, bs]: [u64; 4],
    ) -> Result<(), LineFault> {
        let fault = |fault| LineFault { line, fault };
        if bs == 0 {
            return Err(fault(Fault::Averaged));
        }
        if self
            .directions
            .get(self.current)
            .is_none_or(|(d, _)| *d != ddir)
        {
            self.current = match self.directions.iter().position(|(d, _)| *d == ddir) {
                Some(i) => i,
                None => {
                    let name = tag(&direction_name(ddir), self.metric);
                    self.directions
                        .push((ddir, Cutter::new(name, self.interval_ns)));
                    self.directions.len() - 1
                }
            };
        }
        self.directions[self.current]
            .1
            .record(time_ms.saturating_mul(1_000_000), value)
            .map_err(|why| fault(Fault::Cutter(why)))
    }

    fn careful_line(
        &mut self,
        line_no: usize,
        line: &[u8],
        newline: bool,
    ) -> Result<(), LineFault> {
        let fault = |fault| LineFault {
            line: line_no,
            fault,
        };
        if !newline {
            return Err(fault(Fault::Truncated));
        }
        let text = line.trim_ascii();
        if text.is_empty() {
            return Ok(());
        }
        let fields = scan_lat_line(text).map_err(|e| {
            fault(match e {
                LineError::Fields(n) => Fault::Fields(n),
                LineError::Number(i) => Fault::Number(
                    i,
                    String::from_utf8_lossy(fields(text).nth(i).unwrap_or_default()).into_owned(),
                ),
            })
        })?;
        self.record(line_no, fields)
    }
}

/// Joins chunks in file order into one series per direction.
fn finish(source: &str, chunks: Vec<Chunk>) -> Result<Vec<Series>> {
    let mut joined: Vec<(u64, Cutter)> = Vec::new();
    for chunk in chunks {
        for (ddir, cutter) in chunk.directions {
            match joined.iter_mut().find(|(d, _)| *d == ddir) {
                Some((_, earlier)) => earlier
                    .append(cutter)
                    .map_err(|why| anyhow::anyhow!("{source}: joining chunks: {why}"))?,
                None => joined.push((ddir, cutter)),
            }
        }
    }
    if joined.is_empty() {
        return Err(input_error(format!("{source}: no log lines; {EXPECTED}")));
    }
    joined.sort_by_key(|(d, _)| *d);
    Ok(joined.into_iter().map(|(_, c)| c.finish()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn averaged_logs_are_refused() {
        let err = read_lat_log(
            "avg_clat.1.log",
            "100, 23164, 0, 0, 0\n".as_bytes(),
            1_000_000_000,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("log_avg_msec=0"), "{err}");
    }

    #[test]
    fn lat_logs_cut_into_intervals_per_direction() {
        let text = "0, 100, 0, 4096, 0\n5, 200, 1, 4096, 0\n2500, 300, 0, 4096, 0\n";
        let s = read_lat_log("x_clat.1.log", text.as_bytes(), 1_000_000_000).unwrap();
        assert!(
            read_lat_log("t", "0, 100, 0, 4096".as_bytes(), 1).is_err(),
            "cut short"
        );
        assert_eq!(s[0].tag, "read.clat");
        assert_eq!(s[1].tag, "write.clat");
        let counts: Vec<u64> = s[0].intervals.iter().map(|i| i.count).collect();
        assert_eq!(counts, vec![1, 0, 1]);
        for bad in [
            "0, x, 0, 4096\n",
            "1, 2\n",
            "1,2,3,4,5,6,7\n",
            "-1, 2, 0, 4096\n",
        ] {
            assert!(
                read_lat_log("t", bad.as_bytes(), 1_000_000_000).is_err(),
                "{bad}"
            );
        }
    }

    /// A log of `lines` lines: two directions, times that sometimes step
    /// back a little (completions logged out of order), gaps of empty
    /// intervals.
    fn awkward_log(lines: u64) -> String {
        let mut rng = crate::record::schedule::SplitMix64::new(7);
        let mut out = String::new();
        let mut time = 0u64;
        for _ in 0..lines {
            time += rng.next_u64() % 40;
            if rng.next_u64().is_multiple_of(500) {
                time += 5_000; // a gap of several intervals
            }
            let logged = time.saturating_sub(rng.next_u64() % 700);
            let value = 1_000 + rng.next_u64() % 5_000_000;
            let ddir = u64::from(rng.next_u64().is_multiple_of(3));
            // Now and then a line fio would not write but that reads the
            // same (other spacing, CRLF, a blank line): the careful path.
            out.push_str(&match rng.next_u64() % 50 {
                0 => format!("  {logged},{value}, {ddir} ,4096\r\n"),
                1 => format!("{logged}, {value}, {ddir}, 4096, 0, 1\n\n"),
                _ => format!("{logged}, {value}, {ddir}, 4096, 0\n"),
            });
        }
        out
    }

    /// What analysis takes from a series' digest is what it would decode
    /// from its intervals.
    fn assert_digest_is_the_decoded_analysis(series: &Series) {
        use crate::analyze::merge_with_points;
        assert!(series.digest().is_some(), "{}", series.tag);
        let mut undigested = Series::new(series.tag.clone(), series.measured_from);
        undigested.intervals = series.intervals.clone();
        assert!(undigested.digest().is_none());
        let (hist, points) = merge_with_points(series).unwrap();
        let (decoded_hist, decoded_points) = merge_with_points(&undigested).unwrap();
        assert_eq!(hist.stats(), decoded_hist.stats(), "{}", series.tag);
        assert!(hist.hdr() == decoded_hist.hdr(), "{}", series.tag);
        assert_eq!(points, decoded_points, "{}", series.tag);
        // Changed intervals lose the digest.
        let mut changed = series.clone();
        let busy = changed
            .intervals
            .iter()
            .position(|iv| iv.count > 0)
            .unwrap();
        changed.intervals.remove(busy);
        assert!(changed.digest().is_none(), "{}", series.tag);
    }

    #[test]
    fn parallel_chunks_equal_one_pass_and_number_lines_in_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("job_clat.1.log");
        let mut text = awkward_log(450_000);
        assert!(text.len() as u64 >= PARALLEL_MIN_BYTES, "{}", text.len());
        std::fs::write(&path, &text).unwrap();
        let source = path.display().to_string();
        let one = read_lat_log(&source, text.as_bytes(), 1_000_000_000).unwrap();
        // On a one-CPU machine the file is read as a stream; cut it by hand.
        let file = File::open(&path).unwrap();
        for parts in [2, 3, 7] {
            let bounds = split_at_lines(&file, text.len() as u64, parts).unwrap();
            assert_eq!(bounds.len(), parts + 1);
            let chunks: Vec<Chunk> = bounds
                .windows(2)
                .map(|r| {
                    let mut reader = RangeReader {
                        file: &file,
                        pos: r[0],
                        end: r[1],
                    };
                    parse_chunk(&mut reader, 1_000_000_000, Some("clat"))
                        .unwrap_or_else(|_| panic!("chunk {r:?}"))
                })
                .collect();
            assert_eq!(
                chunks.iter().map(|c| c.lines).sum::<usize>(),
                text.matches('\n').count(),
                "{parts} parts"
            );
            let joined = finish(&source, chunks).unwrap();
            assert_eq!(joined, one, "{parts} parts");
            for series in &joined {
                assert_digest_is_the_decoded_analysis(series);
            }
        }
        if let Some(parallel) = read_lat_log_file(&source, &path, 1_000_000_000).unwrap() {
            assert_eq!(parallel, one);
        }
        one.iter().for_each(assert_digest_is_the_decoded_analysis);
        // A bad line deep in the file is named by its line in the file.
        let at = text.len() * 3 / 4;
        let line_start = text[..at].rfind('\n').unwrap() + 1;
        let line_no = text[..line_start].matches('\n').count() + 1;
        text.replace_range(line_start..line_start + 1, "x");
        std::fs::write(&path, &text).unwrap();
        if let Some(threads) = std::thread::available_parallelism()
            .ok()
            .filter(|n| n.get() > 1)
        {
            let err = read_lat_log_file(&source, &path, 1_000_000_000).unwrap_err();
            assert!(
                err.to_string()
                    .contains(&format!("{source}:{line_no}: the time")),
                "{threads} threads: {err}"
            );
        }
    }
}
