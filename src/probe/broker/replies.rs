//! Every response cauda decodes, by the request it answers, for the fuzz
//! target `broker_reply` (`fuzz/entry.rs`): a hostile broker's bytes go
//! through the decoders a run uses — the response header and body at
//! each version cauda may speak, and a fetch's record batches as a
//! consumer splits and decodes them — and must be read or refused,
//! never panic or allocate beyond what was received.

use anyhow::Result;
use bytes::Bytes;
use kafka_protocol::messages::{
    ApiVersionsRequest, CreateTopicsRequest, DeleteTopicsRequest, DescribeConfigsRequest,
    FetchRequest, ListOffsetsRequest, MetadataRequest, ProduceRequest,
};
use kafka_protocol::records::RecordBatchDecoder;

use super::admin::VERSIONS_SPOKEN;
use super::consume::next_batch;
use super::stamp::Stamp;
use super::wire::{Call, correlation_id, decode};

/// Decodes `data` as a broker's reply: its first byte picks the request
/// (one of the eight cauda sends), its second the version (within those
/// cauda speaks), and the rest is the response frame after its length —
/// correlation id first, taken as the one expected.
pub fn decode_reply(data: &[u8]) -> Result<()> {
    let [which, version, frame @ ..] = data else {
        return Ok(());
    };
    let (api, lowest, highest) = VERSIONS_SPOKEN[*which as usize % VERSIONS_SPOKEN.len()];
    let version = lowest + (*version as i16) % (highest - lowest + 1);
    let frame = Bytes::copy_from_slice(frame);
    let id = correlation_id(&frame).unwrap_or(0);
    use kafka_protocol::messages::ApiKey as K;
    match api {
        K::ApiVersions => reply::<ApiVersionsRequest>(frame, version, id),
        K::Metadata => reply::<MetadataRequest>(frame, version, id),
        K::CreateTopics => reply::<CreateTopicsRequest>(frame, version, id),
        K::DeleteTopics => reply::<DeleteTopicsRequest>(frame, version, id),
        K::DescribeConfigs => reply::<DescribeConfigsRequest>(frame, version, id),
        K::ListOffsets => reply::<ListOffsetsRequest>(frame, version, id),
        K::Produce => reply::<ProduceRequest>(frame, version, id),
        _ => {
            let response = decode::<FetchRequest>(frame, version, id, "fuzz")?;
            for part in response.responses.iter().flat_map(|t| &t.partitions) {
                let mut records = part.records.clone().unwrap_or_default();
                while let Some(mut batch) = next_batch(&mut records) {
                    let set = RecordBatchDecoder::decode(&mut batch)?;
                    for record in &set.records {
                        let _ = record.value.as_ref().and_then(|v| Stamp::read(v));
                    }
                }
            }
            Ok(())
        }
    }
}

fn reply<R: Call>(frame: Bytes, version: i16, id: i32) -> Result<()> {
    decode::<R>(frame, version, id, "fuzz").map(drop)
}

#[cfg(test)]
mod tests {
    use super::decode_reply;

    /// The fuzz target's crashes and the hostile replies, kept.
    fn regression(name: &str) -> Vec<u8> {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fuzz/regressions/broker_reply/"
        );
        std::fs::read(format!("{dir}{name}")).unwrap()
    }

    /// Each claims 2^31 elements in a few bytes: the codec as released
    /// allocated for them first and aborted the process.
    #[test]
    fn a_count_larger_than_the_frame_is_refused_before_allocating() {
        for name in [
            "huge-apiversions-18",
            "huge-metadata-3",
            "huge-produce-0",
            "huge-fetch-1",
        ] {
            let e = decode_reply(&regression(name)).unwrap_err();
            assert!(format!("{e:#}").contains("bytes left"), "{name}: {e:#}");
        }
    }

    /// A record whose timestamp delta overflows the batch's first
    /// timestamp (i64::MAX + 1; the fuzz target found the overflow): read,
    /// not a panic.
    #[test]
    fn a_timestamp_delta_that_overflows_is_no_panic() {
        decode_reply(&regression("timestamp-overflow")).unwrap();
        let _ = decode_reply(&regression(
            "crash-e7faefb5dd96642fb06b247d894c34a994a36ca6",
        ));
    }
}
