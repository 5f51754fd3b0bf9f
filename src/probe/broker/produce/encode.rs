//! A produce request's encoding: the records of each batch stamped (run,
//! producer, sequence, intended time) in a v2 record batch per partition.

use anyhow::{Result, anyhow};
use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::ProduceRequest;
use kafka_protocol::messages::TopicName;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

use super::state::{Pending, Producer};
use crate::probe::broker::ledger::Ledger;
use crate::probe::broker::stamp::Stamp;

impl Producer {
    pub(super) fn request_for(
        &mut self,
        batches: &[(usize, Vec<Pending>)],
        ledger: &Ledger,
    ) -> Result<ProduceRequest> {
        let stamps: Vec<(usize, Vec<Stamp>)> = batches
            .iter()
            .map(|(slot, records)| {
                (
                    *slot,
                    records
                        .iter()
                        .map(|r| Stamp {
                            run: ledger.run,
                            producer: self.index as u32,
                            warmup: false,
                            seq: r.seq,
                            intended_ns: r.intended,
                        })
                        .collect(),
                )
            })
            .collect();
        self.encode(&stamps)
    }

    /// A request of one warm-up record for `batches[0]`'s slot.
    pub(super) fn request(
        &mut self,
        batches: &[(usize, Vec<Pending>)],
        warmup: Option<Stamp>,
    ) -> Result<ProduceRequest> {
        let stamps: Vec<(usize, Vec<Stamp>)> = batches
            .iter()
            .map(|(slot, _)| (*slot, warmup.into_iter().collect()))
            .collect();
        self.encode(&stamps)
    }

    fn encode(&mut self, batches: &[(usize, Vec<Stamp>)]) -> Result<ProduceRequest> {
        let wall_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        let mut topic = TopicProduceData::default();
        topic.name = TopicName(StrBytes::from_string(self.settings.topic.clone()));
        for (slot, stamps) in batches {
            let records: Vec<Record> = stamps
                .iter()
                .enumerate()
                .map(|(i, stamp)| {
                    stamp.write(&mut self.payload);
                    Record {
                        transactional: false,
                        control: false,
                        delete_horizon: false,
                        partition_leader_epoch: -1,
                        producer_id: -1,
                        producer_epoch: -1,
                        timestamp_type: TimestampType::Creation,
                        offset: i as i64,
                        // One batch per partition: the encoder starts a new
                        // batch where offset − sequence changes, and the
                        // base sequence stays -1 (no idempotence).
                        sequence: i as i32 - 1,
                        timestamp: wall_ms,
                        key: None,
                        value: Some(Bytes::copy_from_slice(&self.payload)),
                        headers: Default::default(),
                    }
                })
                .collect();
            let mut buf = BytesMut::with_capacity(records.len() * (self.payload.len() + 24) + 64);
            RecordBatchEncoder::encode(
                &mut buf,
                &records,
                &RecordEncodeOptions {
                    version: 2,
                    compression: Compression::None,
                },
            )
            .map_err(|e| anyhow!("encoding a record batch: {e}"))?;
            let mut data = PartitionProduceData::default();
            data.index = self.slots[*slot].0;
            data.records = Some(buf.freeze());
            topic.partition_data.push(data);
        }
        let mut request = ProduceRequest::default();
        request.acks = self.settings.client.acks;
        request.timeout_ms = self.settings.client.request_timeout_ms;
        request.topic_data = vec![topic];
        Ok(request)
    }
}
