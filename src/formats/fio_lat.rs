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

use std::fs::File;
use std::io::{BufRead, Read};
use std::os::unix::fs::FileExt;
use std::path::Path;

use anyhow::Result;

use super::cutter::Cutter;
use super::fio::{direction_name, fields, metric_from_name, tag};
use crate::error::input_error;
use crate::model::Series;

/// Below this size a file is read on one thread (threads cost more).
const PARALLEL_MIN_BYTES: u64 = 8 << 20;

/// What the lines must look like, quoted in every refusal.
const EXPECTED: &str = "expected 'time_ms, latency_ns, ddir, bs[, offset][, prio]' (a fio log \
                        written with log_avg_msec=0)";

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
    if file.read_exact_at(&mut magic, 0).is_err() || magic == super::GZIP_MAGIC {
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
            buf.resize(buf.len() * 2, 0); // a line longer than the buffer
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

/// Up to 19 digits from `i` (more could overflow a u64): the value and
/// where the digits end. Runs of under 8 digits are read 8 bytes at a time
/// (SWAR), longer ones digit by digit.
#[inline(always)]
fn digits(bytes: &[u8], i: usize) -> Option<(u64, usize)> {
    if let Some(word) = bytes.get(i..i + 8) {
        let word = u64::from_le_bytes(word.try_into().expect("8 bytes"));
        let len = leading_digits(word);
        if len == 0 {
            return None;
        }
        if len < 8 {
            return Some((swar_value(word, len), i + len));
        }
    }
    digits_one_by_one(bytes, i)
}

const ASCII_ZEROS: u64 = 0x3030_3030_3030_3030;
const HIGH_NIBBLES: u64 = 0xF0F0_F0F0_F0F0_F0F0;

/// How many of the word's bytes, from its first (lowest), are ASCII
/// digits. A byte is a digit when its high nibble is 3 both as it is and
/// after adding 6; a carry out of a non-digit byte only disturbs the bytes
/// after it.
#[inline(always)]
fn leading_digits(word: u64) -> usize {
    let high = word & HIGH_NIBBLES;
    let high_plus_6 = word.wrapping_add(0x0606_0606_0606_0606) & HIGH_NIBBLES;
    let not_digit = (high ^ ASCII_ZEROS) | (high_plus_6 ^ ASCII_ZEROS);
    (not_digit.trailing_zeros() / 8) as usize
}

/// The value of the first `len` (1 to 7) digits of a word: they are moved
/// to the top as the last digits of an 8-digit number with leading zeros,
/// then combined pairwise (two digits, four, eight) with three multiplies.
#[inline(always)]
fn swar_value(word: u64, len: usize) -> u64 {
    let shift = 8 * (8 - len) as u32;
    let mut v = (word << shift).wrapping_sub(ASCII_ZEROS << shift);
    v = v.wrapping_mul(10).wrapping_add(v >> 8);
    ((v & 0x0000_00FF_0000_00FF)
        .wrapping_mul(100 + (1_000_000 << 32))
        .wrapping_add(((v >> 16) & 0x0000_00FF_0000_00FF).wrapping_mul(1 + (10_000 << 32))))
        >> 32
}

fn digits_one_by_one(bytes: &[u8], mut i: usize) -> Option<(u64, usize)> {
    let start = i;
    let mut value = 0u64;
    while let Some(&c) = bytes.get(i) {
        let digit = c.wrapping_sub(b'0');
        if digit > 9 {
            break;
        }
        value = value.wrapping_mul(10).wrapping_add(u64::from(digit));
        i += 1;
    }
    (i > start && i - start <= 19).then_some((value, i))
}

/// Where a run of 1 to 19 digits from `i` ends (its value is not needed).
#[inline(always)]
fn digit_run(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start;
    while let Some(word) = bytes.get(i..i + 8) {
        let run = leading_digits(u64::from_le_bytes(word.try_into().expect("8 bytes")));
        i += run;
        if run < 8 {
            return (i > start && i - start <= 19).then_some(i);
        }
    }
    while bytes.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    (i > start && i - start <= 19).then_some(i)
}

/// The bytes of a word that are not ASCII digits, as 8 bits (bit k: byte
/// k), exact per byte: after `^ '0'` a digit byte is 0 to 9, and adding
/// 0x76 to its low 7 bits carries into the high bit only from 10 up,
/// never into the next byte; the high bits are then gathered by one
/// multiply.
#[cfg(any(test, not(target_arch = "x86_64")))]
#[inline(always)]
fn non_digits(word: u64) -> u64 {
    let t = word ^ ASCII_ZEROS;
    let high = ((t & 0x7F7F_7F7F_7F7F_7F7F).wrapping_add(0x7676_7676_7676_7676) | t)
        & 0x8080_8080_8080_8080;
    (high >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56
}

/// Bit k of `out[w]` set when byte `64 w + k` of `bytes` is not a digit;
/// bytes past the end count as non-digits, and a last word of them lets
/// [`bits_from`] read past any position. One pass over the block, word by
/// word, with no dependency between words.
fn non_digit_bits(bytes: &[u8], out: &mut Vec<u64>) {
    out.clear();
    let mut blocks = bytes.chunks_exact(64);
    out.extend(blocks.by_ref().map(block_bits));
    let rest = blocks.remainder();
    if !rest.is_empty() {
        let mut padded = [b'\n'; 64];
        padded[..rest.len()].copy_from_slice(rest);
        out.push(block_bits(&padded));
    }
    out.push(u64::MAX);
}

/// The non-digit bytes of 64 as bits, with SSE2 (see [`crate::sys`]).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn block_bits(block: &[u8]) -> u64 {
    crate::sys::non_digit_bits_64(block.try_into().expect("64 bytes"))
}

/// The non-digit bytes of 64 as bits, 8 at a time ([`non_digits`]).
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn block_bits(block: &[u8]) -> u64 {
    block_bits_portable(block)
}

/// The non-digit bytes of 64 as bits, 8 at a time ([`non_digits`]), on any
/// CPU.
#[cfg(any(test, not(target_arch = "x86_64")))]
#[inline(always)]
fn block_bits_portable(block: &[u8]) -> u64 {
    block
        .chunks_exact(8)
        .enumerate()
        .fold(0u64, |bits, (k, word)| {
            let word = u64::from_le_bytes(word.try_into().expect("8 bytes"));
            bits | non_digits(word) << (8 * k)
        })
}

/// The 64 bits of [`non_digit_bits`] from byte `pos` on.
#[inline(always)]
fn bits_from(bits: &[u64], pos: usize) -> u64 {
    let (word, bit) = (pos / 64, pos % 64);
    let low = bits.get(word).map_or(u64::MAX, |&w| w >> bit);
    // Two shifts, so that bit 0 moves the next word out entirely.
    let high = bits
        .get(word + 1)
        .map_or(u64::MAX, |&w| (w << 1) << (63 - bit));
    low | high
}

/// [`scan_fast`] for a line that fits in the next 64 bytes with fields of
/// at most 7 digits (nearly every line fio writes), given the bits of the
/// bytes from the line's start that are not digits ([`bits_from`]): each
/// field's end is a bit scan rather than a load and test that waits on the
/// field before it. `None` leaves the line to [`scan_fast`], which accepts
/// the same lines with the same values.
#[inline(always)]
fn scan_masked(window: &[u8], delimiters: u64) -> Option<([u64; 4], usize)> {
    let window = window.get(..64)?;
    let field_end = |start: usize| -> Option<usize> {
        Some(start + delimiters.checked_shr(start as u32)?.trailing_zeros() as usize)
    };
    let mut out = [0u64; 4];
    let mut start = 0;
    for (field, slot) in out.iter_mut().enumerate() {
        let end = field_end(start)?;
        let len = end - start;
        if len == 0 || len > 7 {
            return None;
        }
        let word = window.get(start..start + 8)?;
        *slot = swar_value(u64::from_le_bytes(word.try_into().expect("8 bytes")), len);
        start = end;
        if field < 3 {
            if window.get(end..end + 2)? != b", " {
                return None;
            }
            start = end + 2;
        }
    }
    // The offset and priority columns, when logged.
    let mut i = start;
    for _ in 0..2 {
        if window.get(i) != Some(&b',') {
            break;
        }
        if window.get(i + 1) != Some(&b' ') {
            return None;
        }
        let end = field_end(i + 2)?;
        if end == i + 2 || end - (i + 2) > 19 {
            return None;
        }
        i = end;
    }
    (window.get(i) == Some(&b'\n')).then_some((out, i + 1))
}

/// Scans a line exactly as fio writes it at the start of `bytes`: the four
/// first fields and how many bytes the line took with its newline. `None`
/// sends the line to the careful path.
#[inline(always)]
fn scan_fast(bytes: &[u8]) -> Option<([u64; 4], usize)> {
    let mut out = [0u64; 4];
    let mut i = 0;
    for (field, slot) in out.iter_mut().enumerate() {
        let (value, next) = digits(bytes, i)?;
        *slot = value;
        i = next;
        if field < 3 {
            if bytes.get(i..i + 2)? != b", " {
                return None;
            }
            i += 2;
        }
    }
    // The offset and priority columns, when logged.
    for _ in 0..2 {
        if bytes.get(i) != Some(&b',') {
            break;
        }
        if bytes.get(i + 1) != Some(&b' ') {
            return None;
        }
        i = digit_run(bytes, i + 2)?;
    }
    (bytes.get(i) == Some(&b'\n')).then_some((out, i + 1))
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

/// Why a latency-log line did not scan.
enum LineError {
    /// The line has this many fields (4 to 6 expected).
    Fields(usize),
    /// Field i (0-based, among the first four) is not a u64.
    Number(usize),
}

/// Scans `time, value, ddir, bs[, offset][, prio]` in one pass: the first
/// four as integers, the rest only counted. The hot loop of log import.
#[inline]
fn scan_lat_line(line: &[u8]) -> Result<[u64; 4], LineError> {
    let mut out = [0u64; 4];
    let mut field = 0usize;
    let mut i = 0usize;
    let n = line.len();
    while field < 4 {
        while i < n && line[i] == b' ' {
            i += 1;
        }
        let start = i;
        let mut v: u64 = 0;
        // Up to 19 digits cannot overflow a u64; more is refused below.
        while i < n && line[i].is_ascii_digit() {
            v = v.wrapping_mul(10).wrapping_add((line[i] - b'0') as u64);
            i += 1;
        }
        if i - start > 19 {
            return Err(LineError::Number(field));
        }
        while i < n && line[i] == b' ' {
            i += 1;
        }
        if i == start || (i < n && line[i] != b',') {
            return Err(if i >= n && field < 3 {
                LineError::Fields(field + 1)
            } else {
                LineError::Number(field)
            });
        }
        out[field] = v;
        field += 1;
        if i >= n {
            break;
        }
        i += 1; // the comma
    }
    if field < 4 {
        return Err(LineError::Fields(field));
    }
    let rest = if i >= n {
        0
    } else {
        1 + line[i..].iter().filter(|&&b| b == b',').count()
    };
    if rest > 2 {
        return Err(LineError::Fields(4 + rest));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_masked_scan_takes_what_the_fast_scan_takes_with_the_same_values() {
        let mut rng = crate::record::schedule::SplitMix64::new(21);
        let mut pick = |n: u64| (rng.next_u64() % n) as usize;
        let mut taken = 0;
        for _ in 0..200_000 {
            let mut line = Vec::new();
            let fields = 1 + pick(7);
            for f in 0..fields {
                if f > 0 {
                    let odd = [",", " ,", ",  ", "; "];
                    let separator = if pick(10) > 0 { ", " } else { odd[pick(4)] };
                    line.extend_from_slice(separator.as_bytes());
                }
                let digits = if pick(4) > 0 {
                    1 + pick(7)
                } else {
                    [0, 8, 12, 19, 20][pick(5)]
                };
                for _ in 0..digits {
                    line.push(b"0123456789"[pick(10)]);
                }
                if pick(40) == 0 {
                    line.push([b'x', b' ', b'-', 0xFF, b'/', b':'][pick(6)]);
                }
            }
            if pick(20) > 0 {
                line.push(b'\n');
            }
            // What follows the line: the next one, or anything.
            while line.len() < 70 + pick(30) {
                line.push(b"0123456789, \n"[pick(13)]);
            }
            let fast = scan_fast(&line);
            let mut bits = Vec::new();
            non_digit_bits(&line, &mut bits);
            if let Some(masked) = scan_masked(&line, bits_from(&bits, 0)) {
                assert_eq!(Some(masked), fast, "{:?}", String::from_utf8_lossy(&line));
                taken += 1;
            }
        }
        assert!(taken > 1_000, "only {taken} lines took the masked scan");
        // A line as fio writes it, and one with an 8-digit field, which
        // only the fast scan reads.
        let mut fio = b"1234, 56789, 1, 4096, 32325632, 0\n".to_vec();
        fio.resize(80, b'7');
        let bits_of = |bytes: &[u8]| {
            let mut bits = Vec::new();
            non_digit_bits(bytes, &mut bits);
            bits_from(&bits, 0)
        };
        assert_eq!(
            scan_masked(&fio, bits_of(&fio)),
            Some(([1234, 56789, 1, 4096], 34))
        );
        let mut long = b"12345678, 5, 0, 4096\n".to_vec();
        long.resize(80, b'7');
        assert_eq!(scan_masked(&long, bits_of(&long)), None);
        assert_eq!(scan_fast(&long), Some(([12_345_678, 5, 0, 4096], 21)));
    }

    #[test]
    fn the_vector_and_the_portable_bitmaps_agree() {
        let mut rng = crate::record::schedule::SplitMix64::new(8);
        for _ in 0..20_000 {
            let block: Vec<u8> = (0..64)
                .map(|_| match rng.next_u64() % 3 {
                    0 => b"0123456789"[(rng.next_u64() % 10) as usize],
                    1 => b"/:, \n"[(rng.next_u64() % 5) as usize],
                    _ => rng.next_u64() as u8,
                })
                .collect();
            let expected = (0..64).fold(0u64, |acc, k| {
                acc | u64::from(!block[k].is_ascii_digit()) << k
            });
            assert_eq!(block_bits_portable(&block), expected, "{block:?}");
            assert_eq!(block_bits(&block), expected, "{block:?}");
        }
    }

    #[test]
    fn non_digit_bits_read_from_any_position() {
        let bytes: Vec<u8> = (0..300u32)
            .map(|i| b"12, 3\n4567x"[(i * 7 % 11) as usize])
            .collect();
        let mut bits = Vec::new();
        non_digit_bits(&bytes, &mut bits);
        for pos in 0..bytes.len() {
            let expected = (0..64).fold(0u64, |acc, k| {
                let digit = bytes.get(pos + k).is_some_and(u8::is_ascii_digit);
                acc | u64::from(!digit) << k
            });
            assert_eq!(bits_from(&bits, pos), expected, "from byte {pos}");
        }
    }

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

    #[test]
    fn word_at_a_time_digits_agree_with_one_by_one() {
        let mut rng = crate::record::schedule::SplitMix64::new(3);
        let alphabet = b"0123456789, /:\n\xff\xfa";
        for _ in 0..200_000 {
            let len = (rng.next_u64() % 24) as usize;
            let text: Vec<u8> = (0..len)
                .map(|_| {
                    if rng.next_u64().is_multiple_of(4) {
                        alphabet[(rng.next_u64() % alphabet.len() as u64) as usize]
                    } else {
                        b'0' + (rng.next_u64() % 10) as u8
                    }
                })
                .collect();
            for at in 0..text.len() {
                assert_eq!(
                    digits(&text, at),
                    digits_one_by_one(&text, at),
                    "{:?} at {at}",
                    String::from_utf8_lossy(&text)
                );
            }
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
