//! An interval's histogram as a run holds it: the stored text (HdrHistogram
//! V2 deflate base64, as in run files and `.hlog` lines) or, while it lives
//! only in memory, packed sparse bucket counts.

use serde::{Deserialize, Serialize};

use super::encoding;

/// An interval's histogram: as stored (HdrHistogram V2 deflate base64), or
/// as sparse bucket counts while it lives only in memory. Both serialize to
/// the base64 string; the sparse form spares analysis a decode and importers
/// an encode.
#[derive(Clone, Debug, PartialEq)]
pub enum HistogramData {
    /// V2 deflate base64, as in run files and `.hlog` lines.
    Encoded(String),
    /// (bucket value, count) pairs in increasing value, in cauda's own
    /// precision, packed as LEB128 (value delta, count): ~3 bytes a bucket.
    Sparse(Vec<u8>),
}

/// An HdrHistogram (cauda's precision) holding packed pairs.
pub(super) fn hdr_from_packed(packed: &[u8]) -> hdrhistogram::Histogram<u64> {
    let mut hdr = crate::record::histogram::empty_hdr();
    for (v, c) in unpack_entries(packed) {
        let _ = hdr.record_n(v.min(crate::record::histogram::HIGHEST_NS), c);
    }
    hdr
}

/// Packs increasing (bucket value, count) pairs of cauda's histogram shape
/// as LEB128 deltas of the bucket index and the count: neighbouring
/// buckets are a few indexes apart, so most pairs take two bytes.
pub fn pack_entries(entries: impl IntoIterator<Item = (u64, u64)>) -> Vec<u8> {
    use crate::record::histogram::{bucket_index, bucket_top};
    let mut out = Vec::new();
    let pairs = entries.into_iter().map(|(value, count)| {
        let index = bucket_index(value);
        debug_assert_eq!(bucket_top(index), value, "a bucket's own value");
        (index, count)
    });
    crate::record::buckets::pack_pairs(pairs, &mut out);
    out.shrink_to_fit();
    out
}

/// A histogram's occupied buckets as increasing (bucket value, count) pairs.
pub(super) fn recorded(hdr: &hdrhistogram::Histogram<u64>) -> Vec<(u64, u64)> {
    hdr.iter_recorded()
        .map(|b| (b.value_iterated_to(), b.count_at_value()))
        .collect()
}

/// Unpacks what [`pack_entries`] wrote (a cut pair is dropped).
pub fn unpack_entries(bytes: &[u8]) -> Vec<(u64, u64)> {
    let mut out = Vec::with_capacity(bytes.len() / 2);
    out.extend(
        crate::record::buckets::PackedPairs::new(bytes)
            .map(|(index, count)| (crate::record::histogram::bucket_top(index), count)),
    );
    out
}

impl HistogramData {
    /// The base64 string.
    pub fn encoded(&self) -> std::borrow::Cow<'_, str> {
        match self {
            HistogramData::Encoded(text) => std::borrow::Cow::Borrowed(text),
            HistogramData::Sparse(packed) => std::borrow::Cow::Owned(encoding::encode_buckets(
                crate::record::buckets::PackedPairs::new(packed),
                encoding::Effort::Small,
            )),
        }
    }

    /// The (bucket value, count) pairs in increasing value.
    pub fn entries(&self) -> Result<std::borrow::Cow<'_, [(u64, u64)]>, String> {
        match self {
            HistogramData::Sparse(packed) => Ok(std::borrow::Cow::Owned(unpack_entries(packed))),
            HistogramData::Encoded(text) => {
                Ok(std::borrow::Cow::Owned(match encoding::buckets(text)? {
                    encoding::Buckets::Sparse(entries) => entries,
                    encoding::Buckets::Full(hdr) => recorded(&hdr),
                }))
            }
        }
    }
}

impl Serialize for HistogramData {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.encoded())
    }
}

impl<'de> Deserialize<'de> for HistogramData {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(HistogramData::Encoded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_entries_round_trip() {
        let top = crate::record::histogram::empty_hdr().highest_equivalent(3_600_000_000_000);
        let entries = vec![(0, 1), (127, 300), (128, 1), (2049, 7), (top, u64::MAX)];
        assert_eq!(unpack_entries(&pack_entries(entries.clone())), entries);
        assert!(
            unpack_entries(&[0xff]).is_empty(),
            "a cut varint is dropped, not a panic"
        );
    }
}
