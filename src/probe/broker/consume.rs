//! A consumer: one thread fetching its share of the partitions (assigned
//! round robin, no consumer group) from their leaders, one fetch in flight
//! per leader, from the log's end as the run begins.
//!
//! Each record's stamp gives its producer, sequence number and intended
//! send time: `e2e` is intended → the fetch response that carried it was
//! read, and `e2e.fetch` is the producer's acknowledgement → that moment
//! (0 when the record arrived before its acknowledgement; counted). After
//! the producers finish, consumers go on until every delivered record is
//! seen or the drain time passes.

use std::collections::HashMap;
use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use bytes::Bytes;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{FetchRequest, FetchResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::RecordBatchDecoder;

use super::admin::Versions;
use super::ledger::{Acked, Consumed, Ledger, SeqSet};
use super::stamp::Stamp;
use super::wire::{self, Conn, error_name};
use crate::model::broker::ClientSettings;
use crate::record::{Clock, Sink, StopFlag};

/// What every consumer of a run shares.
#[derive(Clone, Debug)]
pub struct FetchSettings {
    /// The topic.
    pub topic: String,
    /// fetch.max.wait, fetch.min.bytes and max.partition.fetch.bytes: the
    /// settings the run file records, read from there.
    pub client: ClientSettings,
    /// Protocol versions.
    pub versions: Versions,
    /// Socket timeout for blocking reads and writes.
    pub io_timeout: Duration,
    /// How long consumers go on after the producers finish.
    pub drain_ns: u64,
    /// The largest fetch response taken ([`fetch_frame`]).
    pub max_frame: usize,
}

/// What a fetch asks for at most (`fetch.max.bytes`; Kafka's consumer
/// asks 50 MiB): a consumer fetches again as soon as a response is in,
/// and a bound on the response is a bound on decoding's memory.
const FETCH_MAX_BYTES: i32 = 8 << 20;

/// The largest fetch response taken: what a fetch asks for, and past it
/// the largest record batch the topic can hold (Kafka sends a first batch
/// whole, however large), and a MiB for the framing.
pub fn fetch_frame(largest_batch: usize) -> usize {
    FETCH_MAX_BYTES as usize + largest_batch + (1 << 20)
}

/// Where a consumer's measurements go.
#[derive(Clone, Copy, Debug)]
pub struct ConsumeSeries {
    /// Intended send → consumed.
    pub e2e: usize,
    /// Acknowledged → consumed (`None` with acks=0).
    pub fetch: Option<usize>,
}

/// Where a partition's records are taken from.
#[derive(Clone, Copy, Debug)]
struct Cut {
    partition: i32,
    /// The offset asked for: records before it were seen already.
    from: i64,
}

#[derive(Debug)]
struct Source {
    conn: Conn,
    /// (partition, next offset).
    partitions: Vec<(i32, i64)>,
    pending: Option<i32>,
}

/// One consumer thread's state.
#[derive(Debug)]
pub struct Consumer {
    settings: FetchSettings,
    sources: Vec<Source>,
    consumed: Consumed,
    /// (partition, producer) → last sequence number seen.
    last: HashMap<(i32, u32), u64>,
    frames: Vec<Bytes>,
    ready: Vec<bool>,
}

impl Consumer {
    /// Connects to the leaders of `partitions` — (partition, leader
    /// address) — and starts each at its log's end.
    pub fn connect(
        settings: &FetchSettings,
        partitions: &[(i32, String)],
        producers: usize,
        stop: &StopFlag,
    ) -> Result<Consumer> {
        let mut sources: Vec<(String, Source)> = Vec::new();
        for (partition, address) in partitions {
            match sources.iter_mut().find(|(a, _)| a == address) {
                Some((_, s)) => s.partitions.push((*partition, -1)),
                None => sources.push((
                    address.clone(),
                    Source {
                        conn: {
                            let mut conn = Conn::connect(address, settings.io_timeout, stop)?;
                            conn.set_max_frame(settings.max_frame);
                            conn
                        },
                        partitions: vec![(*partition, -1)],
                        pending: None,
                    },
                )),
            }
        }
        for (_, s) in &mut sources {
            let ids: Vec<i32> = s.partitions.iter().map(|p| p.0).collect();
            let ends =
                super::admin::log_ends(&mut s.conn, settings.versions, &settings.topic, &ids)?;
            for (partition, offset) in &mut s.partitions {
                if let Some(&end) = ends.get(partition) {
                    *offset = end;
                }
            }
        }
        Ok(Consumer {
            settings: settings.clone(),
            sources: sources.into_iter().map(|(_, s)| s).collect(),
            consumed: Consumed {
                seen: vec![SeqSet::default(); producers],
                ..Consumed::default()
            },
            last: HashMap::new(),
            frames: Vec::new(),
            ready: Vec::new(),
        })
    }

    /// Consumes until the producers are done and every delivered record
    /// was seen (or the drain time passed), or `stop` rises. What it saw
    /// goes to `ledger` on every path.
    pub fn run(
        mut self,
        clock: &impl Clock,
        sink: &mut impl Sink,
        stop: &StopFlag,
        series: ConsumeSeries,
        ledger: &Ledger,
    ) -> Result<u64> {
        let result = self
            .consume(clock, sink, stop, series, ledger)
            // A wait ended by a stop is the run stopping, not failing.
            .or_else(|e| if wire::stopped(&e) { Ok(()) } else { Err(e) });
        ledger.consumer_done(std::mem::take(&mut self.consumed));
        result.map(|()| clock.now())
    }

    fn consume(
        &mut self,
        clock: &impl Clock,
        sink: &mut impl Sink,
        stop: &StopFlag,
        series: ConsumeSeries,
        ledger: &Ledger,
    ) -> Result<()> {
        if self.sources.is_empty() {
            return Ok(());
        }
        loop {
            if stop.is_raised() {
                return Ok(());
            }
            if let Some(done) = ledger.producers_done_at()
                && (ledger.all_consumed() || clock.now() > done + self.settings.drain_ns)
            {
                return Ok(());
            }
            for source in 0..self.sources.len() {
                if self.sources[source].pending.is_none() {
                    let request = self.request(source);
                    let s = &mut self.sources[source];
                    s.pending = Some(s.conn.send(&request, self.settings.versions.fetch)?);
                }
            }
            let deadline = clock.now() + 100_000_000;
            let mut ready = std::mem::take(&mut self.ready);
            let conns = self.sources.iter().map(|s| &s.conn);
            if let Some(at) = wire::wait_readable(conns, deadline, &mut ready, clock)? {
                for (source, &is_ready) in ready.iter().enumerate() {
                    if is_ready {
                        self.read(source, at, sink, series, ledger)?;
                    }
                }
            }
            self.ready = ready;
        }
    }

    fn request(&self, source: usize) -> FetchRequest {
        let s = &self.sources[source];
        let mut topic = FetchTopic::default();
        topic.topic = TopicName(StrBytes::from_string(self.settings.topic.clone()));
        topic.partitions = s
            .partitions
            .iter()
            .map(|&(partition, offset)| {
                let mut p = FetchPartition::default();
                p.partition = partition;
                p.current_leader_epoch = -1;
                p.fetch_offset = offset;
                p.last_fetched_epoch = -1;
                p.log_start_offset = -1;
                p.partition_max_bytes = self.settings.client.fetch_partition_max_bytes;
                p
            })
            .collect();
        let mut request = FetchRequest::default();
        request.replica_id = (-1).into();
        request.max_wait_ms = (self.settings.client.fetch_max_wait_ns / 1_000_000) as i32;
        request.min_bytes = self.settings.client.fetch_min_bytes;
        request.max_bytes = FETCH_MAX_BYTES;
        request.isolation_level = 0;
        request.session_id = 0;
        request.session_epoch = -1;
        request.topics = vec![topic];
        request
    }

    fn read(
        &mut self,
        source: usize,
        at: u64,
        sink: &mut impl Sink,
        series: ConsumeSeries,
        ledger: &Ledger,
    ) -> Result<()> {
        let mut frames = std::mem::take(&mut self.frames);
        // The responses that came before a failure are taken first.
        let read = self.sources[source].conn.read_ready(&mut frames);
        for frame in frames.drain(..) {
            let s = &mut self.sources[source];
            let corr = s
                .pending
                .take()
                .ok_or_else(|| anyhow!("the broker answered a fetch cauda did not send"))?;
            let response = wire::decode::<FetchRequest>(
                frame,
                self.settings.versions.fetch,
                corr,
                &s.conn.peer,
            )?;
            self.take(source, &response, at, sink, series, ledger)?;
        }
        self.frames = frames;
        read
    }

    fn take(
        &mut self,
        source: usize,
        response: &FetchResponse,
        at: u64,
        sink: &mut impl Sink,
        series: ConsumeSeries,
        ledger: &Ledger,
    ) -> Result<()> {
        if response.error_code != 0 {
            bail!(
                "fetch: the broker answered {}",
                error_name(response.error_code)
            );
        }
        for part in response.responses.iter().flat_map(|t| t.partitions.iter()) {
            if part.error_code != 0 {
                bail!(
                    "fetching partition {}: the broker answered {}",
                    part.partition_index,
                    error_name(part.error_code)
                );
            }
            let Some(records) = &part.records else {
                continue;
            };
            let Some(at_offset) = self.sources[source]
                .partitions
                .iter()
                .position(|(p, _)| *p == part.partition_index)
            else {
                continue;
            };
            let from = self.sources[source].partitions[at_offset].1;
            let cut = Cut {
                partition: part.partition_index,
                from,
            };
            if let Some(next) = self.records(cut, records.clone(), at, sink, series, ledger)? {
                let slot = &mut self.sources[source].partitions[at_offset].1;
                *slot = (*slot).max(next);
            }
        }
        Ok(())
    }

    /// Handles one partition's record batches; returns the offset after
    /// the last whole batch.
    fn records(
        &mut self,
        cut: Cut,
        mut buf: Bytes,
        at: u64,
        sink: &mut impl Sink,
        series: ConsumeSeries,
        ledger: &Ledger,
    ) -> Result<Option<i64>> {
        let mut next = None;
        while let Some(mut batch) = next_batch(&mut buf) {
            // The next fetch starts past the batch's last offset, also when
            // its records are gone (compaction keeps empty batches).
            if let Some(last) = last_offset(&batch)
                && last >= cut.from
            {
                next = next.max(Some(last.saturating_add(1)));
            }
            let set = RecordBatchDecoder::decode(&mut batch)
                .map_err(|e| anyhow!("a record batch of partition {}: {e}", cut.partition))?;
            for record in &set.records {
                // A batch may begin before the offset asked for.
                if record.offset < cut.from {
                    continue;
                }
                next = next.max(Some(record.offset.saturating_add(1)));
                if record.control {
                    continue;
                }
                let stamp = record
                    .value
                    .as_ref()
                    .and_then(|v| Stamp::read(v))
                    .filter(|s| s.run == ledger.run);
                if stamp.is_some_and(|s| s.warmup) {
                    self.consumed.counts.warmup += 1;
                    continue;
                }
                let Some(stamp) = stamp else {
                    self.consumed.counts.foreign += 1;
                    continue;
                };
                let producer = stamp.producer as usize;
                let Some(seen) = self.consumed.seen.get_mut(producer) else {
                    self.consumed.counts.foreign += 1;
                    continue;
                };
                if seen.insert(stamp.seq) {
                    self.consumed.counts.duplicates += 1;
                    continue;
                }
                sink.record(at, series.e2e, at.saturating_sub(stamp.intended_ns));
                if let Some(id) = series.fetch {
                    match ledger.ack_time(producer, stamp.seq) {
                        Acked::At(acked) if acked <= at => sink.record(at, id, at - acked),
                        Acked::At(_) | Acked::NotYet => {
                            self.consumed.counts.consumed_before_ack += 1;
                            sink.record(at, id, 0);
                        }
                        // The consumer is a ring's length behind: no figure.
                        Acked::Forgotten => {}
                    }
                }
                let last = self
                    .last
                    .entry((cut.partition, stamp.producer))
                    .or_insert(0);
                if stamp.seq < *last {
                    self.consumed.counts.out_of_order += 1;
                }
                *last = (*last).max(stamp.seq);
                ledger.consumed(producer, stamp.seq, 1);
            }
        }
        Ok(next)
    }
}

/// The next whole record batch of a partition's records in a fetch
/// response; `None` at their end (a fetch may end with part of a batch).
pub fn next_batch(buf: &mut Bytes) -> Option<Bytes> {
    if buf.len() < 12 {
        return None;
    }
    let length = i32::from_be_bytes([buf[8], buf[9], buf[10], buf[11]]);
    let whole = 12 + length.max(0) as usize;
    (buf.len() >= whole).then(|| buf.split_to(whole))
}

/// The last offset of a v2 record batch (`baseOffset + lastOffsetDelta`,
/// from its header), or `None` for an older format or a cut header.
fn last_offset(batch: &[u8]) -> Option<i64> {
    let base = i64::from_be_bytes(batch.get(..8)?.try_into().ok()?);
    let magic = *batch.get(16)?;
    let delta = i32::from_be_bytes(batch.get(23..27)?.try_into().ok()?);
    (magic == 2 && delta >= 0).then(|| base.saturating_add(i64::from(delta)))
}

#[cfg(test)]
mod tests {
    use super::last_offset;

    #[test]
    fn a_batch_header_names_its_last_offset() {
        // baseOffset 1000, length, leader epoch, magic 2, CRC, attributes,
        // lastOffsetDelta 4: offsets 1000..=1004.
        let mut header = Vec::new();
        header.extend(1_000i64.to_be_bytes());
        header.extend(49i32.to_be_bytes());
        header.extend(0i32.to_be_bytes());
        header.push(2);
        header.extend(0u32.to_be_bytes());
        header.extend(0i16.to_be_bytes());
        header.extend(4i32.to_be_bytes());
        assert_eq!(last_offset(&header), Some(1_004));
        // An older message format, or a header cut short: unknown.
        let mut old = header.clone();
        old[16] = 1;
        assert_eq!(last_offset(&old), None);
        assert_eq!(last_offset(&header[..26]), None);
    }
}
