//! The `"broker"` section of a run file: what `cauda broker` knew of the
//! cluster and the topic, the client settings in effect, and the record
//! accounting. Readers that do not know it ignore it (an additive key of
//! `cauda.run/1`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One broker of the cluster, as the metadata response named it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokerNode {
    /// `node.id`.
    pub id: i32,
    /// Host clients connect to.
    pub host: String,
    /// Port clients connect to.
    pub port: i32,
    /// `broker.rack`, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rack: Option<String>,
}

/// One partition of the topic: its leader and replicas when the run began.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionLayout {
    /// The partition index.
    pub partition: i32,
    /// The leader's node id.
    pub leader: i32,
    /// Every replica's node id.
    pub replicas: Vec<i32>,
    /// The in-sync replicas' node ids.
    pub isr: Vec<i32>,
}

/// The cluster as the bootstrap broker described it. The Kafka protocol
/// carries no release string: the versions are the API version ranges and
/// finalized feature levels the broker announced (`metadata.version`'s
/// level names the release line, e.g. 27 for 4.1).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterInfo {
    /// The bootstrap address given.
    pub bootstrap: String,
    /// The cluster id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_id: Option<String>,
    /// The controller's node id (-1 when not told).
    pub controller_id: i32,
    /// The brokers.
    pub brokers: Vec<BrokerNode>,
    /// Version range the broker supports for each API cauda uses, `"min-max"`.
    pub api_versions: BTreeMap<String, String>,
    /// The version cauda chose for each API it used.
    pub api_versions_used: BTreeMap<String, i16>,
    /// Finalized feature levels (`metadata.version`, `kraft.version`, …).
    pub features: BTreeMap<String, i16>,
}

/// The topic written and read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicInfo {
    /// Its name.
    pub name: String,
    /// Created by this run (and deleted after it unless `--keep-topic`).
    pub created: bool,
    /// Deleted after the run.
    pub deleted: bool,
    /// Replicas per partition.
    pub replication_factor: usize,
    /// Partitions, leaders and replicas.
    pub partitions: Vec<PartitionLayout>,
    /// The topic configuration that decides latency (`min.insync.replicas`,
    /// `flush.messages`, `max.message.bytes`, `message.timestamp.type`, …).
    pub config: BTreeMap<String, String>,
}

impl TopicInfo {
    /// The partitions with a replica out of sync (a broker stopped or
    /// lagging): acks=all waits on fewer replicas there, or is refused
    /// below `min.insync.replicas`.
    pub fn under_replicated(&self) -> impl Iterator<Item = &PartitionLayout> {
        self.partitions
            .iter()
            .filter(|p| p.replicas.iter().any(|r| !p.isr.contains(r)))
    }
}

/// The client settings in effect (every one, defaults included: a default
/// such as `linger.ms` decides low-latency results).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientSettings {
    /// `acks`: 0, 1 or -1 (all).
    pub acks: i16,
    /// Record value size in bytes.
    pub record_bytes: usize,
    /// `linger.ms`, in ns: how long a batch waits for more records.
    pub linger_ns: u64,
    /// `batch.size`: a batch is sent once it holds this many bytes.
    pub batch_bytes: usize,
    /// `max.in.flight.requests.per.connection`.
    pub max_in_flight: usize,
    /// The broker's wait for acknowledgements (`timeout_ms` of Produce).
    pub request_timeout_ms: i32,
    /// A record not acknowledged this long after it was sent is given up.
    pub delivery_timeout_ns: u64,
    /// `fetch.max.wait.ms`, in ns.
    pub fetch_max_wait_ns: u64,
    /// `fetch.min.bytes`.
    pub fetch_min_bytes: i32,
    /// `max.partition.fetch.bytes`.
    pub fetch_partition_max_bytes: i32,
    /// Compression (cauda sends uncompressed batches).
    pub compression: String,
    /// Producers (connections to each leader), one thread each.
    pub producers: usize,
    /// Consumers, one thread each; partitions are assigned round robin.
    pub consumers: usize,
    /// How records are spread over partitions.
    pub partitioner: String,
}

/// Every record's fate. Sent records end in exactly one of `acked`,
/// `failed` or `in_flight` (with `acks=0` nothing is acknowledged: sent
/// records are `unacknowledged`); consumed records are counted once each,
/// and `lost` are records acknowledged (with `acks=0`: sent) that no
/// consumer saw before the run ended.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordAccounting {
    /// Records due to be sent (warm-up excluded): written to the socket,
    /// or — when the run stopped first — failed as `NOT_SENT`.
    pub sent: u64,
    /// Acknowledged without error.
    pub acked: u64,
    /// Refused by the broker or given up after the delivery timeout.
    pub failed: u64,
    /// Still awaiting an acknowledgement when the run stopped.
    pub in_flight: u64,
    /// Sent with `acks=0`: no acknowledgement exists.
    pub unacknowledged: u64,
    /// Distinct records consumed.
    pub consumed: u64,
    /// Records consumed again.
    pub duplicates: u64,
    /// Acknowledged (or, with acks=0, sent) and never consumed.
    pub lost: u64,
    /// Consumed after a later record of the same producer in the same partition.
    pub out_of_order: u64,
    /// Consumed though their send failed or was still in flight.
    pub consumed_unacked: u64,
    /// Consumed before the producer saw their acknowledgement (`e2e.fetch`
    /// records 0 for them).
    pub consumed_before_ack: u64,
    /// Records on the topic that this run did not write (another writer).
    pub foreign: u64,
    /// This run's warm-up records that a consumer saw and skipped.
    pub warmup: u64,
    /// Failed sends, by the broker's error name.
    pub errors: BTreeMap<String, u64>,
}

impl RecordAccounting {
    /// Counts `n` records failed for `why` (the broker's error name, or
    /// cauda's: `SEND_FAILED`, `NOT_SENT`, `BAD_RESPONSE`, `DELIVERY_TIMEOUT`).
    pub fn fail(&mut self, why: &str, n: u64) {
        if n == 0 {
            return;
        }
        self.failed += n;
        *self.errors.entry(why.to_string()).or_insert(0) += n;
    }
}

/// The `"broker"` section.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BrokerReport {
    /// The cluster.
    pub cluster: ClusterInfo,
    /// The topic.
    pub topic: TopicInfo,
    /// The client settings in effect.
    pub client: ClientSettings,
    /// Every record's fate.
    pub records: RecordAccounting,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn partition(partition: i32, replicas: &[i32], isr: &[i32]) -> PartitionLayout {
        PartitionLayout {
            partition,
            leader: isr.first().copied().unwrap_or(-1),
            replicas: replicas.to_vec(),
            isr: isr.to_vec(),
        }
    }

    #[test]
    fn a_partition_is_under_replicated_when_a_replica_is_out_of_sync() {
        let topic = TopicInfo {
            partitions: vec![
                partition(0, &[1, 2, 3], &[1, 2, 3]),
                partition(1, &[2, 3, 1], &[2, 1]),
                partition(2, &[3], &[3]),
                // The ISR's order is not the replicas' order.
                partition(3, &[1, 2], &[2, 1]),
            ],
            ..TopicInfo::default()
        };
        let degraded: Vec<i32> = topic.under_replicated().map(|p| p.partition).collect();
        assert_eq!(degraded, [1]);
    }
}
