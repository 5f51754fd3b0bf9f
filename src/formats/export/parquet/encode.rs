//! The value encodings cauda's Parquet tables use, written from the
//! format's specification (apache/parquet-format, `Encodings.md`):
//! ULEB128 and zigzag varints, the RLE / bit-packing hybrid (definition
//! levels and dictionary indices), and DELTA_BINARY_PACKED (a bucket's
//! `value_ns`, increasing within each interval). PLAIN needs no code of
//! its own beyond each type's bytes (`columns.rs`).

/// ULEB128: seven bits a byte, lowest first.
pub(super) fn uleb(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Zigzag: 0, -1, 1, -2 … as 0, 1, 2, 3 …
pub(super) fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Bits needed for `max` (0 for 0).
pub(super) fn bit_width(max: u64) -> u32 {
    64 - max.leading_zeros()
}

/// Packs values of `width` bits from the least significant bit of each
/// byte up (the hybrid's and the delta encoding's order).
struct Bits<'a> {
    out: &'a mut Vec<u8>,
    acc: u128,
    held: u32,
}

impl<'a> Bits<'a> {
    fn new(out: &'a mut Vec<u8>) -> Self {
        Bits {
            out,
            acc: 0,
            held: 0,
        }
    }

    fn push(&mut self, value: u64, width: u32) {
        if width == 0 {
            return;
        }
        let mask = if width == 64 {
            u64::MAX
        } else {
            (1 << width) - 1
        };
        self.acc |= u128::from(value & mask) << self.held;
        self.held += width;
        while self.held >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.held -= 8;
        }
    }

    /// Writes the last partial byte, zero-padded.
    fn finish(self) {
        if self.held > 0 {
            self.out.push(self.acc as u8);
        }
    }
}

/// Values per bit-packed run header at most (63 groups of 8: a one-byte
/// header, as every reader expects).
const PACKED_MAX: usize = 63 * 8;

/// The RLE / bit-packing hybrid of one fixed bit width, fed runs of equal
/// values: a run of 8 or more becomes an RLE run, shorter ones are
/// bit-packed in groups of 8 (the last group padded with zeros; a reader
/// stops at the page's value count).
pub(super) struct Hybrid {
    width: u32,
    out: Vec<u8>,
    pending: Vec<u64>,
}

impl Hybrid {
    pub(super) fn new(width: u32) -> Self {
        Hybrid {
            width,
            out: Vec::new(),
            pending: Vec::with_capacity(PACKED_MAX),
        }
    }

    /// Adds `n` values equal to `value`.
    pub(super) fn run(&mut self, value: u64, mut n: usize) {
        // Fill the pending values up to a whole group first.
        while n > 0 && (!self.pending.len().is_multiple_of(8) || n < 8) {
            self.literal(value);
            n -= 1;
        }
        if n == 0 {
            return;
        }
        self.flush_packed();
        while n > 0 {
            let len = n.min(i32::MAX as usize);
            uleb(&mut self.out, (len as u64) << 1);
            let bytes = self.width.div_ceil(8) as usize;
            self.out.extend_from_slice(&value.to_le_bytes()[..bytes]);
            n -= len;
        }
    }

    fn literal(&mut self, value: u64) {
        self.pending.push(value);
        if self.pending.len() == PACKED_MAX {
            self.flush_packed();
        }
    }

    fn flush_packed(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let groups = self.pending.len().div_ceil(8);
        uleb(&mut self.out, ((groups as u64) << 1) | 1);
        let mut bits = Bits::new(&mut self.out);
        for i in 0..groups * 8 {
            bits.push(self.pending.get(i).copied().unwrap_or(0), self.width);
        }
        bits.finish();
        self.pending.clear();
    }

    /// The encoded runs.
    pub(super) fn finish(mut self) -> Vec<u8> {
        self.flush_packed();
        self.out
    }
}

/// Values per block and per miniblock of DELTA_BINARY_PACKED.
const BLOCK: usize = 128;
const MINIBLOCK: usize = 32;

/// DELTA_BINARY_PACKED of int64 values: a header, then blocks of 128
/// deltas less the block's smallest, bit-packed in four miniblocks of 32,
/// each at its own width; arithmetic wraps, as the specification says.
pub(super) fn delta_binary_packed(values: &[i64], out: &mut Vec<u8>) {
    uleb(out, BLOCK as u64);
    uleb(out, (BLOCK / MINIBLOCK) as u64);
    uleb(out, values.len() as u64);
    uleb(out, zigzag(values.first().copied().unwrap_or(0)));
    let deltas: Vec<i64> = values.windows(2).map(|w| w[1].wrapping_sub(w[0])).collect();
    for block in deltas.chunks(BLOCK) {
        let min = block.iter().copied().min().unwrap_or(0);
        uleb(out, zigzag(min));
        let relative: Vec<u64> = block.iter().map(|d| d.wrapping_sub(min) as u64).collect();
        let minis: Vec<&[u64]> = relative.chunks(MINIBLOCK).collect();
        let widths: Vec<u32> = minis
            .iter()
            .map(|m| bit_width(m.iter().copied().max().unwrap_or(0)))
            .collect();
        for i in 0..BLOCK / MINIBLOCK {
            out.push(widths.get(i).copied().unwrap_or(0) as u8);
        }
        for (mini, &width) in minis.iter().zip(&widths) {
            let mut bits = Bits::new(out);
            for i in 0..MINIBLOCK {
                bits.push(mini.get(i).copied().unwrap_or(0), width);
            }
            bits.finish();
        }
    }
}

/// PLAIN booleans: one bit each, from the least significant bit up.
pub(super) fn plain_bools(values: impl Iterator<Item = bool>, out: &mut Vec<u8>) {
    let mut bits = Bits::new(out);
    for v in values {
        bits.push(u64::from(v), 1);
    }
    bits.finish();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_packing_follows_the_specifications_example() {
        // Encodings.md: 0..=7 at width 3 is 10001000 11000110 11111010.
        let mut h = Hybrid::new(3);
        for v in 0..8 {
            h.run(v, 1);
        }
        assert_eq!(h.finish(), [0b11, 0b1000_1000, 0b1100_0110, 0b1111_1010]);
    }

    #[test]
    fn long_runs_are_rle_and_short_ones_packed() {
        let mut h = Hybrid::new(1);
        h.run(1, 100);
        assert_eq!(h.finish(), [200, 1, 1]);
        let mut h = Hybrid::new(9);
        h.run(300, 3);
        h.run(2, 10);
        // 3 values, 5 more to fill a group, then 5 left (too few for a
        // run): all 13 packed, in 2 groups of 8 at 9 bits.
        let out = h.finish();
        assert_eq!(out[0], (2 << 1) | 1);
        assert_eq!(out.len(), 1 + 2 * 9);
    }

    #[test]
    fn delta_follows_the_specifications_example() {
        // Example 2 with block 128: 7 5 3 1 2 3 4 5, min delta -2, width 2.
        let mut out = Vec::new();
        delta_binary_packed(&[7, 5, 3, 1, 2, 3, 4, 5], &mut out);
        // Block 128 (ULEB128 0x80 0x01), 4 miniblocks, 8 values, first 7.
        assert_eq!(&out[..5], [0x80, 0x01, 4, 8, 14]);
        assert_eq!(out[5], 3, "min delta -2, zigzag");
        assert_eq!(&out[6..10], [2, 0, 0, 0], "one miniblock of width 2");
        // Seven deltas, 0 0 0 3 3 3 3, then zeros: two bits each, lowest first.
        assert_eq!(&out[10..13], [0b1100_0000, 0b0011_1111, 0]);
        assert_eq!(out.len(), 10 + 32 * 2 / 8);
    }

    #[test]
    fn varints() {
        let mut out = Vec::new();
        uleb(&mut out, 300);
        assert_eq!(out, [0xAC, 0x02]);
        assert_eq!([zigzag(0), zigzag(-1), zigzag(1), zigzag(-2)], [0, 1, 2, 3]);
        assert_eq!(zigzag(i64::MIN), u64::MAX);
    }
}
