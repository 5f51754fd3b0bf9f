//! The fio latency-log line scanner: the bytes of `time_ms, value_ns,
//! ddir, bs[, offset][, prio]` lines turned into their first four
//! numbers.
//!
//! Scanning is the hot loop of importing a log of millions of lines, so
//! the lines fio writes take fast paths: digits read 8 at a time (SWAR),
//! and a bitmap of each block's non-digit bytes (SSE2 on x86_64 via
//! [`crate::sys`], portable elsewhere) that finds every field's end with
//! a bit scan. Any other line takes [`scan_lat_line`], which accepts the
//! same lines with the same values and says what is wrong with the rest.

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
pub(super) fn non_digit_bits(bytes: &[u8], out: &mut Vec<u64>) {
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
pub(super) fn bits_from(bits: &[u64], pos: usize) -> u64 {
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
pub(super) fn scan_masked(window: &[u8], delimiters: u64) -> Option<([u64; 4], usize)> {
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
pub(super) fn scan_fast(bytes: &[u8]) -> Option<([u64; 4], usize)> {
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
/// Why a latency-log line did not scan.
pub(super) enum LineError {
    /// The line has this many fields (4 to 6 expected).
    Fields(usize),
    /// Field i (0-based, among the first four) is not a u64.
    Number(usize),
}

/// Scans `time, value, ddir, bs[, offset][, prio]` in one pass: the first
/// four as integers, the rest only counted. The hot loop of log import.
#[inline]
pub(super) fn scan_lat_line(line: &[u8]) -> Result<[u64; 4], LineError> {
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
}
