//! What each record carries so its consumer can time it: the run it
//! belongs to, its producer and sequence number, and when it was meant to
//! be sent on the monotonic clock all of cauda's threads share.

/// Bytes of the stamp at the start of each record's value.
pub const STAMP_BYTES: usize = 36;
const MAGIC: [u8; 4] = *b"cda1";
/// Set in `producer` for a warm-up record (not measured).
const WARMUP: u32 = 1 << 31;

/// A record's identity and intended send time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    /// The run (random per run): records of other runs are foreign.
    pub run: u64,
    /// The producer that sent it.
    pub producer: u32,
    /// A warm-up record, not measured.
    pub warmup: bool,
    /// Its producer's sequence number, from 0.
    pub seq: u64,
    /// When it was meant to be sent, monotonic ns.
    pub intended_ns: u64,
}

impl Stamp {
    /// Writes the stamp at the start of `value` (at least [`STAMP_BYTES`] long).
    pub fn write(&self, value: &mut [u8]) {
        let producer = self.producer | if self.warmup { WARMUP } else { 0 };
        value[..4].copy_from_slice(&MAGIC);
        value[4..12].copy_from_slice(&self.run.to_le_bytes());
        value[12..16].copy_from_slice(&producer.to_le_bytes());
        value[16..24].copy_from_slice(&self.seq.to_le_bytes());
        value[24..32].copy_from_slice(&self.intended_ns.to_le_bytes());
        let sum = checksum(&value[..32]);
        value[32..36].copy_from_slice(&sum.to_le_bytes());
    }

    /// Reads a stamp; `None` when `value` does not start with one.
    pub fn read(value: &[u8]) -> Option<Stamp> {
        let v = value.get(..STAMP_BYTES)?;
        if v[..4] != MAGIC || v[32..36] != checksum(&v[..32]).to_le_bytes() {
            return None;
        }
        let u64_at = |i: usize| u64::from_le_bytes(v[i..i + 8].try_into().unwrap_or([0; 8]));
        let producer = u32::from_le_bytes([v[12], v[13], v[14], v[15]]);
        Some(Stamp {
            run: u64_at(4),
            producer: producer & !WARMUP,
            warmup: producer & WARMUP != 0,
            seq: u64_at(16),
            intended_ns: u64_at(24),
        })
    }
}

/// FNV-1a over the stamp, so that a value which merely starts with the
/// magic bytes is not taken for one.
fn checksum(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5u32, |h, &b| {
        (h ^ b as u32).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_reads_back_and_damage_is_refused() {
        let stamp = Stamp {
            run: 0xDEAD_BEEF_0123_4567,
            producer: 3,
            warmup: true,
            seq: 1 << 40,
            intended_ns: 987_654_321_012,
        };
        let mut value = vec![0u8; 64];
        stamp.write(&mut value);
        assert_eq!(Stamp::read(&value), Some(stamp));
        assert_eq!(Stamp::read(&value[..35]), None);
        value[20] ^= 1;
        assert_eq!(Stamp::read(&value), None);
        assert_eq!(Stamp::read(b"cda1 and some other bytes, long enough"), None);
    }
}
